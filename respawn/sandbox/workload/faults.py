"""Fault injection into a running demo job (respawn/sandbox/workload/train.py) on the sandbox cluster.

Three kinds act from outside, as the fault would: `crash` SIGKILLs the rank,
`hang` SIGSTOPs it, `kill_node` takes the whole node down. The others are
played by the rank itself, which prints what production prints and dies (or,
for `slow`, stretches its steps): the injector leaves a control file
`<faults_dir>/<job>/<node>` (JSON: kind, factor) that the rank polls once per
step and consumes on sight, so the job's next attempt after a requeue runs
clean. GPU faults also get their line in the node's kernel log, as rsyslog's
kern.log would have it: that log is trusted node-level evidence, the job's output is not.

Two kinds act on the node's simulated GPU metrics (respawn/sandbox/dcgm.py,
scraped by the sandbox's Prometheus): `xid_metric` makes the GPU report Xid 79
while the rank prints nothing, and `slow` also throttles the GPU's clocks, as a
GPU in thermal slowdown would. They stay until `heal_gpu` (or a fresh sandbox).

Whoever acted records `<faults_dir>/<job>/<node>.fired` (JSON: kind, at) with
the moment the fault happened, the zero of every detection-latency measure.
"""

import json
import os
import signal
import time
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

from respawn.sandbox import Lab, dcgm, kill_node, procs

PCI_BUS = "0000:3b:00"  # the one GPU of every sandbox node; train.py prints the same


class FaultKind(StrEnum):
    CRASH = "crash"  # SIGKILL of the rank process
    XID = "xid"  # Xid 79, GPU fallen off the bus: kernel log + CUDA error in the job
    ECC = "ecc"  # uncorrectable ECC (Xid 48): kernel log + CUDA error in the job
    IB = "ib"  # InfiniBand port error: NCCL WARN lines + DistBackendError
    # An NCCL error that names no culprit (ncclSystemError from a collective): the failure
    # operators see most, whose cause the incident must find by asking the nodes.
    NCCL_ERROR = "nccl_error"
    KEYERROR = "keyerror"  # an application bug: traceback ending in KeyError: 'labels'
    KILL_NODE = "kill_node"  # the node's slurmd and everything on it die
    HANG = "hang"  # SIGSTOP of the rank: no more progress, nothing printed
    SLOW = "slow"  # the rank's steps take `factor` times as long, its GPU throttled: a straggler
    XID_METRIC = "xid_metric"  # the node's GPU reports Xid 79 through DCGM; the job prints nothing
    # A user's program printing an Xid 79 line and dying: the job's output looks like XID's,
    # but the kernel log and the GPU metrics say nothing (any user can print "Xid 79").
    FORGED_XID = "forged_xid"
    # Failure-looking text the rank handles itself (an OOM in a batch-size probe, a retried
    # read, a caught exception's traceback) before it trains on: no interruption at all.
    HANDLED = "handled"


class FaultError(RuntimeError):
    """The fault could not be injected; the message says why."""


KERNEL_LINES = {
    FaultKind.XID: "NVRM: Xid (PCI:{bus}): 79, pid={pid}, name={name}, GPU has fallen off the bus.",
    FaultKind.ECC: (
        "NVRM: Xid (PCI:{bus}): 48, pid={pid}, name={name}, An uncorrectable double bit error (DBE) "
        "has been detected on GPU in the framebuffer at partition 0, subpartition 0."
    ),
}


# HW slowdown + HW thermal slowdown (NVML's 0x8 | 0x40), hot, busy.
THROTTLED = {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": 0x48, "DCGM_FI_DEV_GPU_TEMP": 92, "DCGM_FI_DEV_GPU_UTIL": 100}
HEALTHY_SM_CLOCK = dcgm.METRICS["DCGM_FI_DEV_SM_CLOCK"][1]


def heal_gpu(lab: Lab, node: str) -> None:
    """Undo the metric faults on `node`: its simulated GPU is healthy again."""
    dcgm.heal(lab, node)


def control_path(lab: Lab, job_id: int, node: str) -> Path:
    return lab.faults_dir / str(job_id) / node


def fired_path(lab: Lab, job_id: int, node: str) -> Path:
    return lab.faults_dir / str(job_id) / f"{node}.fired"


def inject(lab: Lab, job_id: int, node: str, kind: FaultKind, *, factor: float = 4.0) -> None:
    """Inject `kind` into job `job_id` on `node`; `factor` is the slowdown for SLOW.

    Returns once the fault is armed (in-rank kinds) or done (the others); it does
    not wait for the job to react. Raises FaultError when no rank of the job runs
    on `node`.
    """
    fired = fired_path(lab, job_id, node)
    fired.parent.mkdir(parents=True, exist_ok=True)
    fired.unlink(missing_ok=True)  # a fault injected earlier in this job must not answer for this one

    if kind == FaultKind.KILL_NODE:
        _record_fired(fired, kind)
        kill_node(lab, node)
        return
    # Every other kind needs the rank to be there: a fault armed for a node the job does
    # not run on would sit unseen, then fire in some later attempt.
    pids = rank_pids(lab, job_id, node)
    if kind in (FaultKind.CRASH, FaultKind.HANG):
        _record_fired(fired, kind)
        procs.signal_all(pids, signal.SIGKILL if kind == FaultKind.CRASH else signal.SIGSTOP)
        return
    if kind == FaultKind.XID_METRIC:
        _record_fired(fired, kind)
        dcgm.set_gpu(lab, node, {"DCGM_FI_DEV_XID_ERRORS": 79})
        return
    if kind in KERNEL_LINES:
        # The driver logs the Xid before the application sees its CUDA error:
        # that is when the fault happened. The line is in rsyslog's kern.log
        # format (RFC 3339 time, host, uptime), so evidence can be dated.
        line = KERNEL_LINES[kind].format(bus=PCI_BUS, pid=pids[0], name=procs.comm(pids[0]))
        lab.kernel_dir.mkdir(parents=True, exist_ok=True)
        _record_fired(fired, kind)
        now = datetime.now(UTC).astimezone().isoformat(timespec="microseconds")
        uptime = time.clock_gettime(time.CLOCK_MONOTONIC)
        with open(lab.kernel_dir / f"{node}.log", "a") as log:
            log.write(f"{now} {node} kernel: [{uptime:12.6f}] {line}\n")
    spec: dict[str, object] = {"kind": str(kind)}
    if kind == FaultKind.SLOW:
        spec["factor"] = factor
        dcgm.set_gpu(lab, node, THROTTLED | {"DCGM_FI_DEV_SM_CLOCK": round(HEALTHY_SM_CLOCK / factor)})
    _write_atomic(control_path(lab, job_id, node), json.dumps(spec))


def fired_at(lab: Lab, job_id: int, node: str) -> float | None:
    """When the last fault injected into `job_id` on `node` happened (Unix time), if it has."""
    try:
        return float(json.loads(fired_path(lab, job_id, node).read_text())["at"])
    except FileNotFoundError:
        return None


def rank_pids(lab: Lab, job_id: int, node: str) -> list[int]:
    """The training process(es) of `job_id` on `node` of this lab's cluster.

    Only python processes count: slurmstepd and the batch script's srun carry the
    same job environment, and killing them is a different fault. Nor do the tasks of a
    prepared step (respawn/launcher/task.py): no rank yet, they are named `respawn-prepare`
    until told to run. Under torchrun (`python -m torch.distributed.run`) its agent is a python
    process too: only its workers (TORCHELASTIC_RUN_ID in their environment) are ranks.
    SLURM_CONF tells this lab's jobs from another lab's, whose job ids start at 1 as well.
    """
    want = {"SLURM_CONF": str(lab.slurm_conf), "SLURM_JOB_ID": str(job_id), "SLURMD_NODENAME": node}
    pids, workers = [], []
    for pid in procs.all_pids():
        env = procs.environ(pid)
        if any(env.get(k) != v for k, v in want.items()):
            continue
        if (procs.comm(pid) or "").startswith("python") and procs.alive(pid):
            pids.append(pid)
            if "TORCHELASTIC_RUN_ID" in env:
                workers.append(pid)
    if not pids:
        raise FaultError(f"no rank of job {job_id} is running on {node}")
    return sorted(workers or pids)


def _record_fired(path: Path, kind: FaultKind) -> None:
    _write_atomic(path, json.dumps({"kind": str(kind), "at": time.time()}))


def _write_atomic(path: Path, text: str) -> None:
    # The rank polls these files while they are written: it must see all or nothing.
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
