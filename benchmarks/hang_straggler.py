"""Hang and straggler detection latency on the local stack, medians of several runs.

Each run submits a 3-node DDP job stepping once a second (enrolled in observe
mode: only detection is measured), waits for its first checkpoint, then:

- hang: SIGSTOPs the rank on the job's second node. Latency is measured from the
  job's last progress (the moment its last step line appeared in the output,
  watched here every 50 ms) to the incident (the detector's DETECTED record);
- straggler: makes the rank on the job's third node three times slower (and its
  simulated GPU throttled). Latency is measured from its first slow step to the
  incident.

Printed beside PyTorch's NCCL watchdog defaults (480-600 s before a hung
collective is noticed) and Holmes (irregular nodes localised in about 30 s).
Usage: .venv/bin/python benchmarks/hang_straggler.py --runs 5
"""

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime

from respawn import sandbox
from respawn.audit.trail import AuditTrail, EventType
from respawn.config.cluster import load_config
from respawn.sandbox.demo import RespawnProcesses
from respawn.sandbox.lab import Lab
from respawn.sandbox.labconfig import write_lab_config
from respawn.sandbox.polling import until
from respawn.sandbox.workload.faults import FaultKind, fired_at, heal_gpu, inject
from respawn.sandbox.workload.submit import output_path, submit
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import LocalTransport

OBSERVE = '{"respawn":{"environment":"demo","mode":"observe"}}'
STEP_LINE = " step_time "


class StepWatch:
    """When the job's newest step line appeared, read from its output every 50 ms."""

    def __init__(self, lab: Lab, job_id: int) -> None:
        self._path, self._offset, self._partial = output_path(lab, job_id), 0, b""
        self.last_step_at: float | None = None

    def read(self) -> None:
        try:
            with open(self._path, "rb") as out:
                out.seek(self._offset)
                data = out.read()
        except FileNotFoundError:
            return
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        if any(STEP_LINE.encode() in line for line in lines):
            self.last_step_at = time.time()


async def one_run(lab: Lab, audit: AuditTrail, slurm: Slurm, kind: FaultKind) -> float:
    job_id = submit(
        lab, nodes=3, steps=1000, checkpoint_every=10, step_seconds=1.0, comment=OBSERVE, name=f"bench-{kind}"
    )
    node = None
    try:
        steps = StepWatch(lab, job_id)
        out = output_path(lab, job_id)
        await until(
            lambda: out.exists() and "saved checkpoint step 10" in out.read_text(errors="replace"),
            180,
            "the first checkpoint",
        )
        node = (await slurm.job(job_id)).nodes[1 if kind is FaultKind.HANG else 2]
        inject(lab, job_id, node, kind, factor=3.0)

        def detected():
            steps.read()
            rows = audit.query(job_id=job_id, event_types=[EventType.DETECTED])
            return rows[0] if rows else None

        row = await until(detected, 180, f"the {kind} incident")
        line = row.details.get("line", "")
        start = steps.last_step_at if kind is FaultKind.HANG else fired_at(lab, job_id, node)
        assert start is not None and node in line, line
        return (row.at - datetime.fromtimestamp(start, UTC)).total_seconds()
    finally:
        subprocess.run(["scancel", str(job_id)], env=lab.env(), capture_output=True, timeout=30, check=False)
        if node is not None:
            heal_gpu(lab, node)


async def run(runs: int) -> dict[str, list[float]]:
    lab = sandbox.lab()
    sandbox.up(lab)
    path = write_lab_config(lab)
    config = load_config(path)
    audit = AuditTrail(config.audit_db)
    slurm = Slurm(LocalTransport(env=lab.env()))
    results: dict[str, list[float]] = {"hang": [], "slow": []}
    with RespawnProcesses(lab, path):
        for i in range(runs):
            for kind in (FaultKind.HANG, FaultKind.SLOW):
                latency = await one_run(lab, audit, slurm, kind)
                results[kind.value].append(latency)
                print(
                    f"run {i + 1}: {kind.value:4} detected {latency:6.2f} s after "
                    f"{'its last progress' if kind is FaultKind.HANG else 'its first slow step'}",
                    flush=True,
                )
    audit.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    results = asyncio.run(run(args.runs))
    hang, slow = statistics.median(results["hang"]), statistics.median(results["slow"])
    print(
        f"\nmedian of {args.runs} runs (3-node job, 1 s steps, sandbox settings: hang floor 15 s,"
        " straggler 1.5x sustained 10 s):"
    )
    print(f"  hang detection (last progress -> incident):        {hang:6.2f} s   (NCCL watchdog default: 480-600 s)")
    print(f"  straggler detection (first slow step -> incident): {slow:6.2f} s   (Holmes: about 30 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
