"""What one detector poll costs at 100, 1,000 and 5,000 listed jobs, and what one job's read costs
an activity at each, on the sandbox's real Slurm (issue 17).

The sandbox's nodes are given 64 CPUs each for the run (cluster.resize), so that 200 jobs run at
once; the rest are held. Every job is enrolled. Each size is measured after two polls that enrol
and first read the new jobs: the median of 5 polls of the detector's own CPU (process time, its
threads included), its wall time, and squeue's CPU (the detector's child, on the Slurm host);
the Slurm calls per poll; the detector's RSS. For comparison, what the listing cost before
(22.05's `squeue --json`, parsed) and a one-job read the old way (that same listing, filtered).

It holds the sandbox's lock throughout and hands the sandbox back as it was, also when
interrupted (benchmarks/sandbox_lease.py).

Usage: .venv/bin/python benchmarks/poll_cost.py [--sizes 100,1000,5000] [--running 200] [--runs 5] [--slurm 24.11]
"""

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

import sandbox_lease

from respawn.detection.detector import Detector
from respawn.sandbox import procs
from respawn.sandbox.labconfig import lab_config
from respawn.scheduler import slurm_json
from respawn.scheduler.slurm import JobInfo, Slurm, parse_squeue_json
from respawn.scheduler.transport import CommandResult, LocalTransport
from respawn.services import build_services

NAME = "poll-cost"
CPUS = 64
ENROLLED = '{"respawn":{"environment":"demo","mode":"action"}}'
SUBMITTERS = 6  # sbatch calls at once


class Counting:
    """The detector's transport, counting the Slurm commands it runs by program and verb."""

    def __init__(self, inner: LocalTransport) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()

    async def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        self.calls[" ".join(argv[:1])] += 1
        return await self.inner.run(argv, timeout, env)

    async def close(self) -> None:
        await self.inner.close()


class Temporal:
    """No incident is expected (no job fails): any detection is counted, not delivered."""

    def __init__(self) -> None:
        self.started: list[str] = []

    async def start_workflow(self, *args, id: str, **kwargs):
        self.started.append(id)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,1000,5000")
    parser.add_argument("--running", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--slurm",
        choices=list(sandbox_lease.SANDBOXES),
        default="host",
        help="whose sandbox (default: the host's Slurm)",
    )
    parser.add_argument("--old-way", type=int, metavar="JOB", help=argparse.SUPPRESS)  # the child's part
    args = parser.parse_args()
    if args.old_way:
        print(json.dumps(asyncio.run(_old_way(dict(os.environ), args.old_way, args.runs))))
        return 0
    sizes = [int(s) for s in args.sizes.split(",")]
    with sandbox_lease.leased(CPUS, NAME, args.slurm) as lab:
        results = asyncio.run(_measure(lab, sizes, args.running, args.runs))
    print(json.dumps(results))
    return 0


async def _measure(lab, sizes: list[int], running: int, runs: int) -> list[dict]:
    sandbox_lease.cancel_on_signals()
    config = lab_config(lab)
    audit = Path(tempfile.mkdtemp(prefix="poll-cost-")) / "audit.db"
    config = config.model_copy(update={"audit_db": audit, "metrics": None})
    services = build_services(config)
    transport = Counting(LocalTransport(env=lab.env()))
    services.slurm = Slurm(transport)
    detector = Detector(services, Temporal())  # type: ignore[arg-type]
    submitted: dict[str, list[int]] = {"running": [], "held": []}
    baseline = _rss_mb()
    results = []
    for size in sizes:
        wanted_running = min(running, size)
        await _submit(lab, wanted_running - len(submitted["running"]), held=False, into=submitted["running"])
        await _submit(lab, size - wanted_running - len(submitted["held"]), held=True, into=submitted["held"])
        deadline = time.monotonic() + 300
        while _running(lab) < wanted_running:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fewer than {wanted_running} jobs running after 300 s")
            await asyncio.sleep(1.0)
        for _ in range(2):  # enrol and first read every new job
            await detector.poll_once()
        cpu, wall, child, calls = [], [], [], []
        for _ in range(runs):
            transport.calls.clear()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            began, began_cpu = time.perf_counter(), time.process_time()
            await detector.poll_once()
            cpu.append(time.process_time() - began_cpu)
            wall.append(time.perf_counter() - began)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            child.append((after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime))
            calls.append(dict(transport.calls))
            await asyncio.sleep(0.5)  # the detector's poll interval
        listed = len(await services.slurm.jobs())
        results.append(
            {
                "listed": listed,
                "running": _running(lab),
                "poll_cpu_s": round(statistics.median(cpu), 4),
                "poll_wall_s": round(statistics.median(wall), 4),
                "squeue_cpu_s": round(statistics.median(child), 4),
                "calls_per_poll": calls[-1],
                "rss_mb": round(_rss_mb(), 1),
                "rss_growth_mb": round(_rss_mb() - baseline, 1),
                "job_read_s": await _job_read(lab.env(), submitted["running"][0], runs, old=False),
                # In a process of its own: 22.05's JSON listing parsed would swell this one's RSS.
                **await _in_child(lab.env(), submitted["running"][0], runs),
                "detections": len(detector._client.started),  # type: ignore[attr-defined]
            }
        )
        print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    return results


async def _submit(lab, count: int, held: bool, into: list[int]) -> None:
    if count <= 0:
        return
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={NAME}",
        "-N1",
        "-c1",
        f"--output={lab.out_dir}/slurm-%j.out",
        f"--chdir={lab.shared}",
        f"--comment={ENROLLED}",
        *(["-H"] if held else []),
        "--wrap",
        "echo start; exec sleep 3600",
    ]

    began = time.monotonic()
    into += await sandbox_lease.sbatch_many(lab, argv, count, SUBMITTERS)
    kind = "held" if held else "running"
    print(f"submitted {count} {kind} jobs in {time.monotonic() - began:.0f} s", file=sys.stderr, flush=True)


def _running(lab) -> int:
    result = procs.run(["squeue", "--noheader", "--states=running", "--format=%i"], env=lab.env(), timeout=60)
    return len(result.stdout.split())


async def _in_child(env: dict[str, str], job_id: int, runs: int) -> dict:
    argv = [sys.executable, __file__, "--old-way", str(job_id), "--runs", str(runs)]
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, env=env)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the old way's measurement failed (rc {proc.returncode})")
    return json.loads(out)


async def _old_way(env: dict[str, str], job_id: int, runs: int) -> dict:
    return {
        "json_listing_cpu_s": await _json_listing_cpu(env, runs),
        "job_read_old_s": await _job_read(env, job_id, runs, old=True),
    }


async def _json_listing_cpu(env: dict[str, str], runs: int) -> float:
    """Before: the detector's listing was `squeue --json` (22.05's until 2026-12-01, 24.11's until
    2026-12-06), parsed whole (its per-job work apart)."""
    transport = LocalTransport(env=env)
    spent = []
    for _ in range(runs):
        result = await transport.run(["squeue", "--json", "--states=all"], timeout=120)
        began = time.process_time()
        parse_squeue_json(result.stdout)
        spent.append(time.process_time() - began)
    return round(statistics.median(spent), 4)


async def _job_read(env: dict[str, str], job_id: int, runs: int, old: bool) -> float:
    """One job's read as an activity makes it (wall): by itself now; before, the JSON listing filtered."""
    slurm = Slurm(LocalTransport(env=env))
    await slurm.job(job_id)  # the release, known once per process
    spent = []
    for _ in range(runs):
        began = time.perf_counter()
        if old:
            what, data = await slurm.jobs_output()
            listing = [JobInfo(**fields) for fields in slurm_json.jobs(data, what)]
            found: JobInfo | None = next((j for j in listing if j.job_id == job_id), None)
        else:
            found = await slurm.job(job_id)
        spent.append(time.perf_counter() - began)
        assert found is not None and found.job_id == job_id
    return round(statistics.median(spent), 4)


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


if __name__ == "__main__":
    sys.exit(main())
