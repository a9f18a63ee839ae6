"""What a workflow task of IncidentWorkflow costs the worker in CPU, without Slurm (issue 17, item 2).

A Temporal dev server of its own (port 27233, in memory) and a worker process configured as
respawn's (respawn/workers/worker.py) that runs IncidentWorkflow, under the runner asked for,
with the fake activities of the workflow tests (tests/workflow/test_incident_workflow.py,
`Fakes`), which answer at once: the worker process's CPU (user + system, all its threads, the
SDK's Rust core included) is then what the worker spends on an incident besides Slurm's and the
audit store's own work. With `--workflow-only` the activities run in this process instead, so
the figure is the workflow tasks' alone. N incidents take the restart path of the storm
(record, settle, the evidence gathered and assessed, record twice, hold, exclude, release,
follow twice, close),
their evidence as large as a real one (`--lines`, default 400: `logs.evidence_lines`), all
started at once as a storm starts them. The workflow tasks are counted from the histories
(benchmarks/histories.py), so the figure is CPU per workflow task and per incident.

Runners: `respawn` (the worker's own, as configured by default: respawn/workers/worker.py),
`sandbox` (the SDK's default sandbox), `passthrough` (the sandbox passing every module through,
`SandboxRestrictions.default.with_passthrough_all_modules()`), `unsandboxed`. `--no-cache`
runs the worker with no workflow cache, so every task replays the incident from its start
(what a task that missed its sticky queue costs). `--profile FILE` writes cProfile's stats of
the worker's event loop and workflow thread for each runner's last run to FILE.RUNNER (the
worker then runs workflow tasks on one thread, as the GIL does anyway).

Usage: .venv/bin/python benchmarks/workflow_task_cost.py [--incidents 100] [--runs 3]
           [--runners respawn,sandbox,passthrough,unsandboxed] [--lines 400] [--no-cache]
           [--workflow-only] [--sticky-timeout-s 2] [--profile FILE]
"""

import argparse
import asyncio
import contextlib
import cProfile
import json
import pstats
import statistics
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import histories
from temporalio import activity
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from respawn.config.cluster import Mode, TemporalSettings
from respawn.sandbox import temporal as temporal_server
from respawn.wire.evidence import LogLine
from respawn.wire.incident import AssessAttemptRequest, Assessed, Detection, DetectionKind, IncidentInput
from respawn.workers import worker as respawn_worker
from respawn.workflows.incident import IncidentWorkflow
from respawn.workflows.search import CLUSTER, FAILURE_CLASS, JOB_ID, PHASE
from tests.workflow.test_incident_workflow import RESTART, XID, Fakes

PORT = 27233
RUNNERS = ("respawn", "sandbox", "passthrough", "unsandboxed")


def _runner(name: str) -> WorkflowRunner:
    if name == "respawn":
        return respawn_worker.workflow_runner(TemporalSettings())
    if name == "sandbox":
        return SandboxedWorkflowRunner()
    if name == "passthrough":
        return SandboxedWorkflowRunner(restrictions=SandboxRestrictions.default.with_passthrough_all_modules())
    if name == "unsandboxed":
        return UnsandboxedWorkflowRunner()
    raise ValueError(f"unknown runner {name!r}: one of {', '.join(RUNNERS)}")


# The worker process, its CPU measured between "start" and "stop" on stdin.


async def _serve(args: argparse.Namespace) -> None:
    runner, queue, profile = args.serve, args.queue, args.profile
    client = await Client.connect(f"127.0.0.1:{PORT}", data_converter=pydantic_data_converter)
    # The event loop's thread (a run's sandbox is made there) and the one workflow thread.
    loop_profiler, task_profiler = (cProfile.Profile(), cProfile.Profile()) if profile else (None, None)
    executor = ThreadPoolExecutor(max_workers=1) if profile else None
    fakes = _activities(Fakes([XID], RESTART), args.lines)
    worker = Worker(
        client,
        task_queue=queue,
        workflows=[IncidentWorkflow],
        activities=_local(fakes) if args.workflow_only else fakes,
        no_remote_activities=args.workflow_only,
        workflow_runner=_runner(runner),
        max_cached_workflows=0 if args.no_cache else 1000,
        workflow_task_executor=executor,
        # As respawn's worker runs (respawn/workers/worker.py, TemporalSettings).
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=args.sticky_timeout_s),
        max_concurrent_workflow_tasks=TemporalSettings().max_concurrent_workflow_tasks,
    )
    async with worker:
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        if executor and loop_profiler and task_profiler:
            executor.submit(task_profiler.enable).result()
            loop_profiler.enable()
        began = time.process_time()
        await asyncio.to_thread(sys.stdin.readline)
        cpu = time.process_time() - began
        if executor and loop_profiler and task_profiler:
            loop_profiler.disable()
            executor.submit(task_profiler.disable).result()
            pstats.Stats(loop_profiler).add(task_profiler).dump_stats(profile)
        print(json.dumps({"cpu_s": cpu}), flush=True)


# The driver: the server and the incidents (and with --workflow-only, the activities).


def _activities(fakes: Fakes, lines: int) -> list:
    """The workflow tests' fakes, the evidence they gather carrying `lines` lines of output."""
    found = fakes.activities()
    plain = next(f for f in found if _name(f) == "assess_attempt")

    @activity.defn(name="assess_attempt")
    async def assess_attempt(req: AssessAttemptRequest) -> Assessed:
        assessed: Assessed = await plain(req)
        assessed.gathered.evidence.lines = [
            LogLine(
                text=f"[rank{i % 8}]: step {i} loss 2.{i:04d} lr 3.0e-4 tokens/s 48213.5 mem 61.2GiB", rank=i % 8, seq=i
            )
            for i in range(lines)
        ]
        return assessed

    return [assess_attempt if f is plain else f for f in found]


def _local(activities: list) -> list:
    """The audit row is a local activity (patch `local-audit`): it runs on the workflow's worker
    whatever the others do."""
    return [f for f in activities if _name(f) == "record_event"]


def _name(fn) -> str:
    return activity._Definition.must_from_callable(fn).name


async def _incident(client: Client, queue: str, n: int) -> str:
    job = 1000 + n
    detection = Detection(kind=DetectionKind.LOG_LINE, at=datetime.now(UTC), job_id=job, attempt=0, line="Xid 79")
    handle = await client.start_workflow(
        IncidentWorkflow.run,
        IncidentInput(
            cluster="c",
            job_id=job,
            attempt=0,
            environment="demo",
            mode=Mode.ACTION,
            settle_s=0.5,
            cascade_wait_s=20.0,
            follow_timeout_s=60,
        ),
        id=f"incident-c-{job}-0-{uuid.uuid4().hex[:8]}",
        task_queue=queue,
        start_signal="detect",
        start_signal_args=[detection],
        execution_timeout=timedelta(minutes=10),
    )
    await handle.result()
    return handle.id


async def _one_run(client: Client, runner: str, args: argparse.Namespace, profile: str | None) -> dict:
    queue = f"cost-{uuid.uuid4().hex[:8]}"
    argv = [sys.executable, __file__, "--serve", runner, "--queue", queue, "--lines", str(args.lines)]
    argv += ["--sticky-timeout-s", str(args.sticky_timeout_s)]
    argv += (["--profile", profile] if profile else []) + [
        f for f in ("--no-cache", "--workflow-only") if vars(args)[f[2:].replace("-", "_")]
    ]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as served:
        assert served.stdin and served.stdout
        assert served.stdout.readline().strip() == "ready"
        fakes = _activities(Fakes([XID], RESTART), args.lines)
        remote = [f for f in fakes if f not in _local(fakes)] if args.workflow_only else []
        async with Worker(client, task_queue=queue, activities=remote) if remote else contextlib.nullcontext():
            served.stdin.write("start\n")
            served.stdin.flush()
            began = time.monotonic()
            ids = await asyncio.gather(*(_incident(client, queue, n) for n in range(args.incidents)))
            wall = time.monotonic() - began
            served.stdin.write("stop\n")
            served.stdin.flush()
            cpu = json.loads(served.stdout.readline())["cpu_s"]
    tasks = timed_out = 0
    for workflow_id in ids:
        found = await histories.timings(client, workflow_id)
        tasks += len(found["workflow task"])
        timed_out += len(found["workflow task timed out"])
    return {
        "cpu_s": round(cpu, 3),
        "wall_s": round(wall, 2),
        "tasks": tasks,
        "timed_out": timed_out,
        "ms_per_task": round(1000 * cpu / tasks, 2),
        "ms_per_incident": round(1000 * cpu / args.incidents, 1),
    }


async def _drive(args: argparse.Namespace) -> dict:
    env = await WorkflowEnvironment.start_local(
        port=PORT,
        data_converter=pydantic_data_converter,
        dev_server_existing_path=temporal_server.binary(),
        search_attributes=[JOB_ID, CLUSTER, FAILURE_CLASS, PHASE],
    )
    try:
        result: dict = {
            "incidents": args.incidents,
            "lines": args.lines,
            "cache": not args.no_cache,
            "activities": "driver" if args.workflow_only else "worker",
            "sticky_timeout_s": args.sticky_timeout_s,
        }
        for runner in args.runners.split(","):
            runs = []
            for i in range(args.runs):
                profile = f"{args.profile}.{runner}" if args.profile and i == args.runs - 1 else None
                runs.append(await _one_run(env.client, runner, args, profile))
                print(runner, runs[-1], file=sys.stderr, flush=True)
            result[runner] = {
                "tasks_per_incident": round(statistics.median(r["tasks"] for r in runs) / args.incidents, 1),
                "ms_per_task": statistics.median(r["ms_per_task"] for r in runs),
                "ms_per_incident": statistics.median(r["ms_per_incident"] for r in runs),
                # One core's worth of this worker's workflow tasks, nothing else on it.
                "incidents_per_min_per_core": round(60_000 / statistics.median(r["ms_per_incident"] for r in runs)),
                "runs": runs,
            }
        return result
    finally:
        await env.shutdown()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--incidents", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--runners", default=",".join(RUNNERS))
    parser.add_argument("--lines", type=int, default=400, help="lines of output in each incident's evidence")
    parser.add_argument("--no-cache", action="store_true", help="no workflow cache: every task replays")
    parser.add_argument(
        "--sticky-timeout-s",
        type=float,
        default=TemporalSettings.model_fields["sticky_timeout_s"].default,
        help="how long a task waits on the worker's sticky queue before the server moves it (respawn's: 2 s)",
    )
    parser.add_argument("--workflow-only", action="store_true", help="the activities in another process")
    parser.add_argument("--profile", help="cProfile stats of each runner's last run, to FILE.RUNNER")
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the worker process, with its runner
    parser.add_argument("--queue", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args))
        return 0
    print(json.dumps(asyncio.run(_drive(args))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
