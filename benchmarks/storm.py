"""A failure storm (issue 17, item 2): 500 jobs failing within one second, on the sandbox.

Respawn's detector and worker run as real processes against the sandbox's Slurm and
Temporal (tests/recovery_stack.respawn_running: a cluster name of its own, so its own audit
trail). The nodes are given 128 CPUs each so that every job runs at once. Each job, on its
first attempt, sleeps until the same second and exits 3 (a failure no runbook names: the
ladder's one restart); a later attempt sleeps on. Measured from the audit trail, from that
second: when each incident was decided, that each job was held and released exactly once
(the `changed` of its rows, and its restart count in Slurm at the end), how many were not
decided by the deadline, and how many incidents closed failed. The storm's incidents still
open at the end are terminated.

It borrows the sandbox as poll_cost.py does (benchmarks/sandbox_lease.py: the lock, the
size, every job cancelled and purged on the way out), the host's Slurm or the 24.11 lab's.

Usage: .venv/bin/python benchmarks/storm.py [--jobs 500] [--deadline 180] [--slurm 24.11]
"""

import argparse
import asyncio
import json
import random
import statistics
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import histories
import sandbox_lease
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from respawn.audit.details import DetectedDetails
from respawn.audit.trail import AuditTrail, EventType
from respawn.sandbox import procs
from tests.recovery_stack import respawn_running

NAME = "storm"
CPUS = 128
ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
SUBMITTERS = 6
SAMPLE = 100  # incidents whose Temporal history is read for where the time went
LEAD_S = 150.0  # from the submission to the failure: the jobs' submission and start


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--deadline", type=float, default=180.0, help="seconds after the failure to wait")
    parser.add_argument(
        "--slurm",
        choices=list(sandbox_lease.SANDBOXES),
        default="host",
        help="whose sandbox (default: the host's Slurm)",
    )
    args = parser.parse_args()
    with sandbox_lease.leased(CPUS, NAME, args.slurm) as lab:
        # A sandbox left running keeps every earlier run's incidents in the Temporal server's
        # SQLite store, which slows as it fills (BENCHMARKS.md, runs 20-23): said beside the figures.
        held = sum(f.stat().st_size for f in lab.temporal_db.parent.glob(lab.temporal_db.name + "*"))
        with respawn_running(lab, f"storm-{int(time.time())}") as config:
            result = asyncio.run(_storm(lab, config, args.jobs, args.deadline))
        result["temporal_db_mib_at_start"] = round(held / 2**20, 1)
    print(json.dumps(result))
    return 0


async def _storm(lab, config, count: int, deadline_s: float) -> dict:
    sandbox_lease.cancel_on_signals()
    try:
        return await _measure(lab, config, count, deadline_s)
    finally:
        await _terminate(config)


async def _terminate(config) -> None:
    """The storm's incidents still open (following their job, or not decided yet): terminated,
    so that the sandbox's Temporal does not keep them, with no worker on their task queue."""
    client = await Client.connect(config.temporal.address, namespace=config.temporal.namespace)
    query = f'ExecutionStatus="Running" AND WorkflowId STARTS_WITH "incident-{config.cluster}-"'
    async for found in client.list_workflows(query):
        try:
            await client.get_workflow_handle(found.id, run_id=found.run_id).terminate("the storm benchmark is over")
        except RPCError as exc:
            if exc.status is not RPCStatusCode.NOT_FOUND:  # it completed since it was listed
                raise


async def _measure(lab, config, count: int, deadline_s: float) -> dict:
    # The failure second is fixed at submission, far enough on for every job to start by then:
    # a job that polled for it would be 500 shells forking on the sandbox's two cores.
    fail_at = int(time.time() + LEAD_S)
    script = lab.shared / "storm.sh"
    script.write_text(
        "#!/bin/sh\n"
        'if [ "${SLURM_RESTART_COUNT:-0}" = 0 ]; then\n'
        f"  sleep $(({fail_at} - $(date +%s)))\n"
        "  echo failing; exit 3\n"
        "fi\n"
        "echo again; exec sleep 3600\n"
    )
    script.chmod(0o755)
    jobs = await _submit(lab, script, count)
    while _running(lab) < count and time.time() < fail_at - 2:
        await asyncio.sleep(2.0)
    running = _running(lab)
    print(f"{running} of {count} jobs running; they fail at {fail_at}", file=sys.stderr, flush=True)
    audit = AuditTrail(config.audit_db)
    fault = datetime.fromtimestamp(fail_at, UTC)
    deadline = fail_at + deadline_s
    decided: dict[int, datetime] = {}
    while time.time() < deadline:
        await asyncio.sleep(2.0)
        decided = _first(audit, config.cluster, EventType.DECIDED)
        released = _first(audit, config.cluster, EventType.RELEASED)
        if len(decided) >= count and len(released) >= count:
            break
    await asyncio.sleep(5.0)  # a doubled action would land after its first
    rows = _rows(audit, config.cluster)
    released = _first(audit, config.cluster, EventType.RELEASED)
    changed = Counter(
        (r.job_id, r.event_type)
        for r in rows
        if r.event_type in (EventType.HELD, EventType.RELEASED) and r.details.get("changed")
    )
    restarts = _restarts(lab)
    latencies = sorted((at - fault).total_seconds() for job, at in decided.items() if job in jobs)
    # When Slurm recorded each job's end (the detection's `occurred`): on a busy sandbox 500 batch
    # scripts exiting at one second end in Slurm over seconds, once over half a minute (run 18).
    ended = {
        r.job_id: datetime.fromisoformat(occurred)
        for r in rows
        if r.event_type is EventType.DETECTED and (occurred := r.detail(DetectedDetails).occurred)
    }
    since_end = sorted((at - ended[job]).total_seconds() for job, at in decided.items() if job in ended)
    closed_failed = sum(
        1 for r in rows if r.event_type is EventType.INCIDENT_CLOSED and r.details.get("phase") == "failed"
    )
    client = await Client.connect(config.temporal.address, namespace=config.temporal.namespace)
    listed = client.list_workflows(f'WorkflowId STARTS_WITH "incident-{config.cluster}-"')
    incidents = [w.id async for w in listed]
    sample = random.Random(0).sample(incidents, min(SAMPLE, len(incidents)))
    return {
        "where_the_time_went": await histories.breakdown(client, sample, origin=fail_at),
        "jobs": count,
        "running_at_fault": running,
        "decided": len(latencies),
        "decided_p50_s": round(statistics.median(latencies), 2) if latencies else None,
        "decided_max_s": round(latencies[-1], 2) if latencies else None,
        "within_30_s": sum(1 for s in latencies if s <= 30),
        "slurm_end_p50_s": round(statistics.median((e - fault).total_seconds() for e in ended.values()), 2)
        if ended
        else None,
        "decided_after_slurm_end_p50_s": round(statistics.median(since_end), 2) if since_end else None,
        "decided_within_30_s_of_slurm_end": sum(1 for s in since_end if s <= 30),
        "decided_per_s": round(len(latencies) / latencies[-1], 1) if latencies else None,
        "released": len([j for j in released if j in jobs]),
        "released_max_s": round(max((released[j] - fault).total_seconds() for j in jobs if j in released), 2)
        if released
        else None,
        # Not decided by the deadline: slow or lost, this cannot tell (the incidents are terminated after).
        "undecided_at_deadline": len([j for j in jobs if j not in decided]),
        "held_twice": sum(1 for j in jobs if changed[(j, EventType.HELD)] > 1),
        "restarted_twice": sum(1 for j in jobs if restarts.get(j, 0) > 1),
        "closed_failed": closed_failed,
    }


def _first(audit: AuditTrail, cluster: str, event: EventType) -> dict[int, datetime]:
    first: dict[int, datetime] = {}
    for row in _rows(audit, cluster, [event]):
        first.setdefault(row.job_id, row.at)
    return first


def _rows(audit: AuditTrail, cluster: str, events: list[EventType] | None = None) -> list:
    rows, cursor = [], 0
    while True:
        page = audit.query(cluster=cluster, event_types=events, after_id=cursor, limit=1000)
        rows += page
        if len(page) < 1000:
            return rows
        cursor = page[-1].id


async def _submit(lab, script: Path, count: int) -> set[int]:
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={NAME}",
        "-N1",
        "-c1",
        "--requeue",
        "--open-mode=append",
        f"--output={lab.out_dir}/slurm-%j.out",
        f"--chdir={lab.shared}",
        f"--comment={ACTION}",
        str(script),
    ]
    return set(await sandbox_lease.sbatch_many(lab, argv, count, SUBMITTERS))


def _running(lab) -> int:
    result = procs.run(["squeue", "--noheader", "--states=running", "--format=%i"], env=lab.env(), timeout=60)
    return len(result.stdout.split())


def _restarts(lab) -> dict[int, int]:
    found = {}
    listed = procs.run(
        ["squeue", "--noheader", "--states=all", "--Format=jobid:0|,restartcnt:0"], env=lab.env(), timeout=60
    )
    for line in listed.stdout.splitlines():
        job, _, count = line.partition("|")
        if job.strip().isdigit() and count.strip().isdigit():
            found[int(job)] = int(count)
    return found


if __name__ == "__main__":
    sys.exit(main())
