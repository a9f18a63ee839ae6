"""How fast the sandbox's Temporal dev server takes a burst of workflows, by its SQLite settings.

The sandbox runs `temporal server start-dev` on a SQLite file (respawn/sandbox/temporal.py).
This starts such a server of its own (port 27333, a fresh file each run), once with SQLite's
defaults (a rollback journal synced at every commit) and once with the sandbox's pragmas
(`journal_mode=wal`, `synchronous=normal`), alternated, and starts N workflows at once, each
seven trivial activities and a short timer (about an incident's count of tasks), on one worker
in this process. It prints when every workflow had started and when every one had completed,
per run and the medians. Nothing of Respawn runs: the figure is the store's.

Usage: .venv/bin/python benchmarks/temporal_store.py [--workflows 300] [--runs 3]
"""

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from temporalio import activity, workflow
from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from respawn.sandbox import temporal as temporal_server

PORT = 27333
SETTINGS = {"defaults": [], "wal+normal": ["journal_mode=wal", "synchronous=normal"]}


@activity.defn
async def step(n: int) -> int:
    return n + 1


@workflow.defn
class Burst:
    @workflow.run
    async def run(self) -> int:
        n = 0
        for _ in range(7):
            n = await workflow.execute_activity(step, n, start_to_close_timeout=timedelta(seconds=60))
        await workflow.sleep(0.2)
        return n


async def _connect() -> Client:
    deadline = time.monotonic() + 30
    while True:
        try:
            return await Client.connect(f"127.0.0.1:{PORT}")
        except RuntimeError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.1)


async def burst(pragmas: list[str], count: int) -> tuple[float, float]:
    """(all started, all completed) seconds after the first start."""
    with tempfile.TemporaryDirectory() as folder:
        argv = [
            temporal_server.binary(), "server", "start-dev", "--db-filename", f"{folder}/temporal.db",
            "--ip", "127.0.0.1", "--port", str(PORT), "--headless", "--log-level", "error",
        ]  # fmt: skip
        for pragma in pragmas:
            argv += ["--sqlite-pragma", pragma]
        server = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = await _connect()
            # Unsandboxed: this module's workflow is trivial, and the figure is the store's.
            runner = UnsandboxedWorkflowRunner()
            async with Worker(client, task_queue="burst", workflows=[Burst], activities=[step], workflow_runner=runner):
                began = time.monotonic()
                handles = await asyncio.gather(
                    *(client.start_workflow(Burst.run, id=str(uuid.uuid4()), task_queue="burst") for _ in range(count))
                )
                started = time.monotonic() - began
                await asyncio.gather(*(handle.result() for handle in handles))
                return started, time.monotonic() - began
        finally:
            server.terminate()
            server.wait()


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workflows", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    done: dict[str, list[float]] = {name: [] for name in SETTINGS}
    for run in range(args.runs):
        for name, pragmas in SETTINGS.items():
            started, completed = await burst(pragmas, args.workflows)
            done[name].append(completed)
            print(
                f"run {run + 1} {name:10s}: {args.workflows} started in {started:.1f} s, completed in {completed:.1f} s"
            )
    for name, times in done.items():
        print(f"median {name:10s}: all {args.workflows} completed in {statistics.median(times):.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
