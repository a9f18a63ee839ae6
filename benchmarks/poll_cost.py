"""What one detector poll costs at 100, 1,000 and 5,000 listed jobs, and what one job's read costs
an activity at each, on the sandbox's real Slurm (issue 17).

The sandbox's nodes are given 64 CPUs each for the run (cluster.resize), so that 200 jobs run at
once; the rest are held. Every job is enrolled. Each size is measured after two polls that enrol
and first read the new jobs: the median of 5 polls of the detector's own CPU (process time, its
threads included), its wall time, and squeue's CPU (the detector's child, on the Slurm host);
the Slurm calls per poll; the detector's RSS. For comparison, what the listing cost before
(22.05's `squeue --json`, parsed) and a one-job read the old way (that same listing, filtered).
Then the worker's side of a storm: one read of up to 500 followed jobs' states (the incidents'
follows, batched into one call: respawn/scheduler/batched.py), and 500 follows at their first
pace (four reads a second each) for 10 s: the calls they made, and the CPU of the worker's
process and of squeue, a second. Both also as the reads were made before (`_Before`: on 24.11
every followed job's JSON, the calls back to back).

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

from respawn.activities.follow import pause
from respawn.detection.detector import Detector
from respawn.sandbox import procs
from respawn.sandbox.labconfig import lab_config
from respawn.scheduler import slurm_json
from respawn.scheduler.batched import MIN_INTERVAL_S, BatchedReads
from respawn.scheduler.slurm import JobInfo, Slurm, parse_squeue_json
from respawn.scheduler.transport import CommandResult, LocalTransport, Transport
from respawn.services import build_services

NAME = "poll-cost"
CPUS = 64
FOLLOWED = 500  # a storm's incidents following their jobs: one batched read (batched.MAX_BATCH)
FOLLOWING_S = 10.0  # the follows' first pace lasts 10 s (activities/follow.py)
ENROLLED = '{"respawn":{"environment":"demo","mode":"action"}}'
SUBMITTERS = 6  # sbatch calls at once


class Counting:
    """The detector's transport, counting the Slurm commands it runs by program and verb."""

    def __init__(self, inner: LocalTransport) -> None:
        self.inner = inner
        self.calls: Counter[str] = Counter()
        self.printed = 0  # bytes of stdout

    async def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        self.calls[" ".join(argv[:1])] += 1
        result = await self.inner.run(argv, timeout, env)
        self.printed += len(result.stdout)
        return result

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
    parser.add_argument("--followed", default="", help=argparse.SUPPRESS)  # the child's: job ids
    args = parser.parse_args()
    if args.old_way:
        followed = [int(j) for j in args.followed.split(",") if j]
        print(json.dumps(asyncio.run(_old_way(dict(os.environ), args.old_way, followed, args.runs))))
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
            before = _children_cpu()
            began, began_cpu = time.perf_counter(), time.process_time()
            await detector.poll_once()
            cpu.append(time.process_time() - began_cpu)
            wall.append(time.perf_counter() - began)
            child.append(_children_cpu() - before)
            calls.append(dict(transport.calls))
            await asyncio.sleep(0.5)  # the detector's poll interval
        listed = len(await services.slurm.jobs())
        followed = (submitted["running"] + submitted["held"])[:FOLLOWED]
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
                **await _followed_read(lab.env(), followed, runs, old=False),
                **await _following(lab.env(), followed, old=False),
                # In a process of its own: 22.05's JSON listing parsed would swell this one's RSS.
                **await _in_child(lab.env(), submitted["running"][0], followed, runs),
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


async def _in_child(env: dict[str, str], job_id: int, followed: list[int], runs: int) -> dict:
    argv = [sys.executable, __file__, "--old-way", str(job_id), "--runs", str(runs)]
    argv += ["--followed", ",".join(map(str, followed))]
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, env=env)
    out, _ = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"the old way's measurement failed (rc {proc.returncode})")
    return json.loads(out)


async def _old_way(env: dict[str, str], job_id: int, followed: list[int], runs: int) -> dict:
    return {
        "json_listing_cpu_s": await _json_listing_cpu(env, runs),
        "job_read_old_s": await _job_read(env, job_id, runs, old=True),
        **await _followed_read(env, followed, runs, old=True),
        **await _following(env, followed, old=True),
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


async def _followed_read(env: dict[str, str], job_ids: list[int], runs: int, old: bool) -> dict:
    """One read of the followed jobs' states, as the worker makes it for its incidents' follows
    (`Slurm.job(J, exclusions=False)` each, batched into one call): its CPU in this process and
    squeue's, its wall time, the bytes Slurm printed; `old`, as it was made before (`_Before`)."""
    slurm, transport = await _reader(env, job_ids[0], old)
    cpu, wall, child, printed = [], [], [], []
    for _ in range(runs):
        await asyncio.sleep(MIN_INTERVAL_S)  # one read's cost, not its wait for the calls' pace
        transport.printed = 0
        before = _children_cpu()
        began, began_cpu = time.perf_counter(), time.process_time()
        found = await asyncio.gather(*(slurm.job(job_id, exclusions=False) for job_id in job_ids))
        cpu.append(time.process_time() - began_cpu)
        wall.append(time.perf_counter() - began)
        child.append(_children_cpu() - before)
        printed.append(transport.printed)
        assert sorted(j.job_id for j in found) == sorted(job_ids)
    way = "followed_old" if old else "followed"
    return {
        f"{way}_jobs": len(job_ids),
        f"{way}_cpu_s": round(statistics.median(cpu), 4),
        f"{way}_wall_s": round(statistics.median(wall), 4),
        f"{way}_squeue_cpu_s": round(statistics.median(child), 4),
        f"{way}_kb": round(statistics.median(printed) / 1024, 1),
    }


class _Before(Slurm):
    """The follows' reads as made before `7b9f58c`: on 23.02 and later every followed job's JSON,
    on 22.05 the text (as now); the calls back to back."""

    def __init__(self, transport: Transport) -> None:
        super().__init__(transport)
        self._states = BatchedReads(self._read_states, min_interval_s=0.0)

    async def _read_states(self, job_ids: Sequence[int]) -> dict[int, JobInfo]:
        if await self._json_reads():
            return await self._json_states(job_ids)
        return await super()._read_states(job_ids)


async def _following(env: dict[str, str], job_ids: list[int], old: bool, seconds: float = FOLLOWING_S) -> dict:
    """`job_ids` followed as a storm's incidents follow them at first (each a read, then
    `follow.pause`, again) for `seconds`: Slurm calls, reads answered, the CPU of this process
    and of squeue, each a second."""
    slurm, transport = await _reader(env, job_ids[0], old)
    transport.calls.clear()
    stop = time.monotonic() + seconds

    async def follow(job_id: int) -> int:
        reads = 0
        while time.monotonic() < stop:
            await slurm.job(job_id, exclusions=False)
            reads += 1
            await asyncio.sleep(pause(0.0))
        return reads

    before = _children_cpu()
    began, began_cpu = time.perf_counter(), time.process_time()
    reads = sum(await asyncio.gather(*(follow(job_id) for job_id in job_ids)))
    cpu, wall = time.process_time() - began_cpu, time.perf_counter() - began
    child = _children_cpu() - before
    way = "following_old" if old else "following"
    return {
        f"{way}_calls_per_s": round(sum(transport.calls.values()) / wall, 1),
        f"{way}_reads_per_s": round(reads / wall, 1),
        f"{way}_cpu_per_s": round(cpu / wall, 3),
        f"{way}_squeue_cpu_per_s": round(child / wall, 3),
    }


async def _reader(env: dict[str, str], first: int, old: bool) -> tuple[Slurm, Counting]:
    """A Slurm adapter reading as now, or as before (`_Before`), over a counting transport, its
    release known (asked once per process) by a read of `first`."""
    transport = Counting(LocalTransport(env=env))
    slurm = (_Before if old else Slurm)(transport)
    await slurm.job(first)
    return slurm, transport


def _children_cpu() -> float:
    """CPU seconds of this process's ended children (squeue), user and system."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


if __name__ == "__main__":
    sys.exit(main())
