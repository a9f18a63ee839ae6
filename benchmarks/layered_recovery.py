"""Fault to the first training step again, per rung of the ladder (issue 14).

On the sandbox (Slurm, Temporal, Respawn's detector and worker as real processes), the
demo trainer on node1..node3 is interrupted once its first checkpoint is saved, and the
time from the fault to the first training step after it is measured, for each rung:

- in place: the job under `respawn launch --spares 1`, its rank on node2 killed (a crash
  with no node to blame): the launcher relaunches the step on the same nodes, from the
  step it prepared ahead (`--prepare torch`, docs/launcher.md "A prepared step");
- in place, cold: the same without a prepared step (RESPAWN_PREPARE empty): a new srun;
- on a spare: the same job, an Xid 79 on node2: the step relaunched on node3 without node2;
- requeue: the plain job (no launcher), the same crash: held, requeued, released;
- requeue excluding: the plain job, the same Xid: requeued without node2.

The end is the RESUMED row of the incident (Respawn's follow activity saw the step, within
its 0.25 s poll); the fault is when it was injected. Each run is its own cluster name (its
own audit trail), so the node record of earlier runs drains nothing. The sandbox's queue is
empty, so the requeue rungs show their floor: on a busy cluster a requeued job waits for
nodes, the in-job rungs do not.

Usage: .venv/bin/python benchmarks/layered_recovery.py --runs 5 [--rungs in_place,spare,requeue,requeue_excluding]
"""

import argparse
import asyncio
import itertools
import signal
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from respawn.audit.trail import EventType
from respawn.sandbox import lab, up
from respawn.sandbox.workload import faults, submit
from respawn.sandbox.workload.faults import FaultKind
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
LAUNCHED = submit.BATCH_SCRIPT.with_name("train_launched.sbatch")
RUNGS = {  # rung -> (under the launcher, the modules it prepares, fault on node2)
    "in_place": (True, "torch", FaultKind.CRASH),
    "in_place_cold": (True, "", FaultKind.CRASH),
    "spare": (True, "torch", FaultKind.XID),
    "requeue": (False, "", FaultKind.CRASH),
    "requeue_excluding": (False, "", FaultKind.XID),
}
ACTED = (EventType.RELAUNCHED, EventType.RELEASED)


async def one_run(cluster: Cluster, launched: bool, prepare: str, fault: FaultKind) -> tuple[list[float], str]:
    """Seconds from the fault to the first training step after it, then its parts (fault ->
    detected -> relaunched or released -> the first step), and the action taken."""
    original = submit.BATCH_SCRIPT
    submit.BATCH_SCRIPT = LAUNCHED if launched else original
    try:
        job_id = submit.submit(
            cluster.lab,
            nodes=3,
            steps=400,
            checkpoint_every=5,
            step_seconds=0.2,
            comment=ACTION,
            name="bench-layered",
            # The launched job pinned to node1..3 (node3 its spare); the plain one free to move off node2.
            extra_sbatch_args=[
                "--nodelist=node[1-3]",
                f"--export=ALL,RESPAWN_SPARES=1,RESPAWN_WAIT_S=60,RESPAWN_PREPARE={prepare}",
            ]
            if launched
            else [],
        )
    finally:
        submit.BATCH_SCRIPT = original
    try:
        await cluster.wait_checkpoint(job_id, step=5)
        faulted = datetime.now(UTC)
        faults.inject(cluster.lab, job_id, "node2", fault)
        await until(lambda: EventType.RESUMED in cluster.types(job_id), 180, "the job to train again")
        rows = cluster.events(job_id)
        at = {r.event_type: r.at for r in rows}
        decided = next(r for r in rows if r.event_type is EventType.DECIDED)
        acted = next(at[t] for t in ACTED if t in at)
        marks = [faulted, at[EventType.DETECTED], acted, at[EventType.RESUMED]]
        parts = [(b - a).total_seconds() for a, b in itertools.pairwise(marks)]
        return [(at[EventType.RESUMED] - faulted).total_seconds(), *parts], decided.action or "?"
    finally:
        await cluster.slurm.cancel(job_id)


async def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rungs", default=",".join(RUNGS))
    args = parser.parse_args()
    the_lab = lab()
    up(the_lab)  # idempotent; the sandbox stays up (`respawn sandbox down` takes it down)
    results: dict[str, list[list[float]]] = {}
    for i in range(args.runs):
        for rung in args.rungs.split(","):
            launched, prepare, fault = RUNGS[rung]
            with respawn_running(the_lab, f"bench-{rung}-{i}-{int(time.time())}") as config:
                seconds, action = await one_run(Cluster(the_lab, config), launched, prepare, fault)
            results.setdefault(rung, []).append(seconds)
            print(f"run {i + 1} {rung}: {seconds[0]:.2f} s ({action})", flush=True)
    print(f"\nfault -> first training step again, median of {args.runs} runs (then the parts' medians:")
    print("fault -> detected, -> relaunched or released, -> the first step):")
    for rung, runs in results.items():
        total, *parts = (statistics.median(column) for column in zip(*runs, strict=True))
        print(
            f"  {rung:18} {total:6.2f} s   (runs: {', '.join(f'{r[0]:.1f}' for r in runs)})"
            f"   parts {' / '.join(f'{p:.2f}' for p in parts)}"
        )
    return 0


if __name__ == "__main__":
    # Killed with SIGTERM, it still stops the detector and worker it started (a stray detector
    # would go on acting on the sandbox's jobs).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sys.exit(asyncio.run(main()))
