"""The demo workload: the trainer as local processes posing as Slurm tasks, then on the sandbox."""

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from respawn.sandbox import Lab
from respawn.sandbox.workload import faults
from respawn.sandbox.workload.faults import FaultKind
from respawn.sandbox.workload.submit import TRAINER, checkpoint_dir, output_path, submit
from tests.ports import unused_port

STARTED = re.compile(r"^\[rank(?P<rank>\d+)\]: starting rank (?P=rank) world_size (?P<world>\d+) node (?P<node>\S+) ")
PROGRESS = re.compile(
    r"^\[rank(?P<rank>\d+)\]: step (?P<step>\d+)/(?P<steps>\d+) loss \d+\.\d{4} "
    r"samples/s \d+\.\d step_time (?P<took>\d+\.\d{3})s$"
)
SAVED = re.compile(r"^\[rank0\]: saved checkpoint step (?P<step>\d+) to (?P<path>\S+)$")
RESUMED = re.compile(r"^\[rank(?P<rank>\d+)\]: resumed from checkpoint step (?P<step>\d+) \((?P<path>\S+)\)$")
COMPLETE = "[rank0]: training complete: "


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.05)


def lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def steps_by_rank(text: list[str]) -> dict[int, list[int]]:
    seen: dict[int, list[int]] = {}
    for line in text:
        if m := PROGRESS.match(line):
            seen.setdefault(int(m["rank"]), []).append(int(m["step"]))
    return seen


# --- the trainer on its own: local processes with the environment srun would give them ---

# Job ids apart from the sandbox's small ones (the checkpoint folders are per job id).
_local_job_ids = itertools.count(300 + os.getpid() % 20 * 10)


class LocalJob:
    """`world` ranks of train.py for Slurm job `job_id`, rank r posing as node r+1."""

    def __init__(self, tmp: Path, job_id: int, world: int, *args: str, restart: int = 0) -> None:
        local = Lab(root=tmp)
        self.logs = [tmp / f"job{job_id}-attempt{restart}-rank{r}.log" for r in range(world)]
        self.procs: list[subprocess.Popen[bytes]] = []
        # A port free now, not the job id's: these run beside the labs' jobs (make test), whose
        # job ids would give the same port.
        port = unused_port()
        for rank, log in enumerate(self.logs):
            env = {
                **local.env(),  # SLURM_CONF marks the processes as this lab's, as sbatch's export does
                "SLURM_JOB_ID": str(job_id),
                "SLURM_PROCID": str(rank),
                "SLURM_NTASKS": str(world),
                "SLURMD_NODENAME": f"node{rank + 1}",
                "SLURM_RESTART_COUNT": str(restart),
            }
            with open(log, "w") as out:
                dirs = [f"--ckpt-dir={local.ckpt_dir}/%j", f"--faults-dir={local.faults_dir}"]
                argv = [sys.executable, str(TRAINER), *dirs, f"--master-port={port}", *args]
                self.procs.append(subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT))

    def wait(self, timeout: float = 60) -> list[int]:
        return [p.wait(timeout) for p in self.procs]

    def lines(self, rank: int) -> list[str]:
        return lines(self.logs[rank])

    def kill(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)  # a hung (stopped) rank must be able to die
                p.kill()
                p.wait(10)


@pytest.fixture
def job_id() -> int:
    return next(_local_job_ids)


@pytest.fixture
def local_jobs() -> Iterator[list[LocalJob]]:
    started: list[LocalJob] = []
    yield started
    for job in started:
        job.kill()


def test_trainer_checkpoints_then_resumes_from_newest(tmp_path: Path, local_jobs: list[LocalJob], job_id: int) -> None:
    first = LocalJob(tmp_path, job_id, 2, "--steps=4", "--checkpoint-every=2", "--step-seconds=0.05")
    local_jobs.append(first)
    assert first.wait() == [0, 0], first.lines(0) + first.lines(1)

    out = first.lines(0) + first.lines(1)
    assert {int(m["node"][4:]) for line in out if (m := STARTED.match(line))} == {1, 2}
    assert steps_by_rank(out) == {0: [1, 2, 3, 4], 1: [1, 2, 3, 4]}
    saved = [m for line in out if (m := SAVED.match(line))]
    assert [int(m["step"]) for m in saved] == [2, 4]
    assert all(Path(m["path"]).is_file() for m in saved)
    assert sorted(p.name for p in (Lab(root=tmp_path).ckpt_dir / str(job_id)).iterdir()) == ["step-2.pt", "step-4.pt"]
    assert COMPLETE + f"4/4 steps, job {job_id}" in out

    second = LocalJob(tmp_path, job_id, 2, "--steps=6", "--checkpoint-every=2", "--step-seconds=0.05", restart=1)
    local_jobs.append(second)
    assert second.wait() == [0, 0], second.lines(0) + second.lines(1)
    out = second.lines(0) + second.lines(1)
    resumed = {int(m["rank"]): int(m["step"]) for line in out if (m := RESUMED.match(line))}
    assert resumed == {0: 4, 1: 4}
    assert steps_by_rank(out) == {0: [5, 6], 1: [5, 6]}


# What each in-rank fault makes the rank on node2 (rank 1) print, in order.
FAULT_LINES = {
    FaultKind.XID: [
        r"^\[rank1\]: NVRM: Xid \(PCI:0000:3b:00\): 79, pid=(?P<pid>\d+), name=python\S*, "
        r"GPU has fallen off the bus\.$",
        r"^\[rank1\]: Traceback \(most recent call last\):$",
        r"^\[rank1\]: RuntimeError: CUDA error: unspecified launch failure$",
    ],
    # The same text as XID's, printed by the job alone.
    FaultKind.FORGED_XID: [
        r"^\[rank1\]: NVRM: Xid \(PCI:0000:3b:00\): 79, pid=(?P<pid>\d+), name=python\S*, "
        r"GPU has fallen off the bus\.$",
        r"^\[rank1\]: RuntimeError: CUDA error: unspecified launch failure$",
    ],
    FaultKind.ECC: [
        r"^\[rank1\]: Traceback \(most recent call last\):$",
        r"^\[rank1\]: RuntimeError: CUDA error: uncorrectable ECC error encountered$",
    ],
    FaultKind.IB: [
        r"^\[rank1\]: node2:(?P<pid>\d+):\d+ \[0\] transport/net_ib\.cc:\d+ NCCL WARN NET/IB : mlx5_0:1 "
        r"Got async event : port error$",
        r"^\[rank1\]: node2:\d+:\d+ \[0\] transport/net_ib\.cc:\d+ NCCL WARN NET/IB : Got completion from peer "
        r"\S+<\d+> with status=12 opcode=0 len=0 vendor err 129 \(Recv\)$",
        r"^\[rank1\]: torch\.distributed\.DistBackendError: NCCL error in: .*remote process exited or there was "
        r"a network error, NCCL version \S+$",
        r"^\[rank1\]: ncclRemoteError: ",
    ],
    FaultKind.NCCL_ERROR: [
        r"^\[rank1\]: torch\.distributed\.DistBackendError: NCCL error in: .*unhandled system error \(run with "
        r"NCCL_DEBUG=INFO for details\), NCCL version \S+$",
        r"^\[rank1\]: ncclSystemError: System call \(e\.g\. socket, malloc\) or external library call failed",
    ],
    FaultKind.KEYERROR: [
        r"^\[rank1\]: Traceback \(most recent call last\):$",
        r"^\[rank1\]: KeyError: 'labels'$",
    ],
}
KERNEL_LINE = {
    FaultKind.XID: r"NVRM: Xid \(PCI:0000:3b:00\): 79, pid={pid}, name=python\S*, GPU has fallen off the bus\.",
    FaultKind.ECC: r"NVRM: Xid \(PCI:0000:3b:00\): 48, pid={pid}, name=python\S*, An uncorrectable double bit error",
}


def start_and_reach_step(tmp_path: Path, local_jobs: list[LocalJob], job_id: int) -> LocalJob:
    job = LocalJob(tmp_path, job_id, 2, "--steps=2000", "--step-seconds=0.05")
    local_jobs.append(job)
    wait_for(lambda: 1 in steps_by_rank(job.lines(1)), 60, "rank 1's first step")
    return job


@pytest.mark.parametrize("kind", list(FAULT_LINES))
def test_in_rank_fault_prints_real_failure_and_is_consumed(
    tmp_path: Path, local_jobs: list[LocalJob], job_id: int, kind: FaultKind
) -> None:
    local = Lab(root=tmp_path)
    job = start_and_reach_step(tmp_path, local_jobs, job_id)
    before = time.time()
    faults.inject(local, job_id, "node2", kind)

    assert job.procs[1].wait(30) == 1
    out = job.lines(1)
    found = [next((m for line in out if (m := re.match(p, line))), None) for p in FAULT_LINES[kind]]
    assert all(found), (
        f"missing {[p for p, m in zip(FAULT_LINES[kind], found, strict=True) if not m]} in:\n" + "\n".join(out)
    )
    order = [next(i for i, line in enumerate(out) if re.match(p, line)) for p in FAULT_LINES[kind]]
    assert order == sorted(order)
    # Only the targeted rank fails this way; its peer dies of the broken connection.
    assert job.procs[0].wait(30) != 0
    assert not any("NVRM" in line or "NCCL WARN" in line for line in job.lines(0))

    assert not faults.control_path(local, job_id, "node2").exists()  # a requeued attempt runs clean
    at = faults.fired_at(local, job_id, "node2")
    assert at is not None and before <= at <= time.time()
    if kind in KERNEL_LINE:
        pid = job.procs[1].pid
        kernel = lines(local.kernel_dir / "node2.log")
        assert len(kernel) == 1
        assert re.fullmatch(
            r"\d{4}-\d\d-\d\dT[\d:.]+[+-]\d\d:\d\d node2 kernel: \[ *\d+\.\d{6}\] "
            + KERNEL_LINE[kind].format(pid=pid)
            + ".*",
            kernel[0],
        )
    else:
        assert not (local.kernel_dir / "node2.log").exists()  # nothing the node itself says


def proc_state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat[stat.rindex(")") + 2]


@pytest.mark.parametrize("kind", [FaultKind.CRASH, FaultKind.HANG])
def test_crash_and_hang_signal_the_rank_process(
    tmp_path: Path, local_jobs: list[LocalJob], job_id: int, kind: FaultKind
) -> None:
    local = Lab(root=tmp_path)
    job = start_and_reach_step(tmp_path, local_jobs, job_id)
    assert faults.rank_pids(local, job_id, "node2") == [job.procs[1].pid]
    before = time.time()
    faults.inject(local, job_id, "node2", kind)
    at = faults.fired_at(local, job_id, "node2")
    assert at is not None and before <= at <= time.time()
    if kind == FaultKind.CRASH:
        assert job.procs[1].wait(10) == -signal.SIGKILL
    else:
        wait_for(lambda: proc_state(job.procs[1].pid) == "T", 10, "rank 1 to stop")
    with pytest.raises(faults.FaultError, match=f"no rank of job {job_id} is running on node3"):
        faults.inject(local, job_id, "node3", kind)


def test_slow_stretches_the_ranks_steps(tmp_path: Path, local_jobs: list[LocalJob], job_id: int) -> None:
    local = Lab(root=tmp_path)
    job = start_and_reach_step(tmp_path, local_jobs, job_id)
    faults.inject(local, job_id, "node2", FaultKind.SLOW, factor=4.0)
    wait_for(lambda: faults.fired_at(local, job_id, "node2") is not None, 10, "the slowdown to start")
    seen = len(job.lines(1))
    wait_for(lambda: len(steps_by_rank(job.lines(1)[seen:]).get(1, [])) >= 2, 10, "two slow steps")
    took = [float(m["took"]) for line in job.lines(1)[seen:] if (m := PROGRESS.match(line))]
    assert all(t >= 0.19 for t in took), took
    assert job.procs[1].poll() is None


# --- on the sandbox cluster (tests/conftest.py's session-wide `sandbox`) ---


def job_state(lab: Lab, job_id: int) -> str | None:
    # squeue --json ignores its filters in Slurm 22.05: filter here.
    result = subprocess.run(["squeue", "--json"], env=lab.env(), capture_output=True, text=True, timeout=30, check=True)
    return next((j["job_state"] for j in json.loads(result.stdout)["jobs"] if j["job_id"] == job_id), None)


def wait_for_state(lab: Lab, job_id: int, wanted: str, timeout: float) -> None:
    final = {"COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY"}

    def reached() -> bool:
        state = job_state(lab, job_id)
        if state in final and state != wanted:
            pytest.fail(f"job {job_id} ended {state}, not {wanted}:\n{output_path(lab, job_id).read_text()}")
        return state == wanted

    wait_for(reached, timeout, f"job {job_id} to be {wanted}")


@pytest.fixture
def cancel_after(sandbox: Lab) -> Iterator[list[int]]:
    jobs: list[int] = []
    yield jobs
    for job_id in jobs:
        subprocess.run(["scancel", str(job_id)], env=sandbox.env(), capture_output=True, timeout=30, check=False)


@pytest.mark.slow
def test_job_completes_on_four_nodes(sandbox: Lab, cancel_after: list[int]) -> None:
    job_id = submit(sandbox, nodes=4, steps=8, checkpoint_every=4, step_seconds=0.3, name="wl-complete")
    cancel_after.append(job_id)
    wait_for_state(sandbox, job_id, "COMPLETED", 120)

    out = lines(output_path(sandbox, job_id))
    nodes = {int(m["rank"]): m["node"] for line in out if (m := STARTED.match(line))}
    assert sorted(nodes.values()) == ["node1", "node2", "node3", "node4"]
    assert steps_by_rank(out) == {r: list(range(1, 9)) for r in range(4)}
    saved = [SAVED.match(line) for line in out]
    assert [int(m["step"]) for m in saved if m] == [4, 8]
    assert sorted(p.name for p in checkpoint_dir(sandbox, job_id).iterdir()) == ["step-4.pt", "step-8.pt"]
    assert any(line.startswith(COMPLETE) for line in out)


@pytest.mark.slow
@pytest.mark.parametrize("kind", [FaultKind.CRASH, FaultKind.XID])
def test_fault_on_one_node_fails_the_job_quickly(sandbox: Lab, cancel_after: list[int], kind: FaultKind) -> None:
    job_id = submit(sandbox, nodes=4, steps=1000, step_seconds=0.3, name=f"wl-{kind}")
    cancel_after.append(job_id)
    out = output_path(sandbox, job_id)

    def rank_on_node2() -> int | None:
        started = (m for line in lines(out) if (m := STARTED.match(line)))
        return next((int(m["rank"]) for m in started if m["node"] == "node2"), None)

    def node2_stepping() -> bool:
        rank = rank_on_node2()
        return rank is not None and rank in steps_by_rank(lines(out))

    wait_for(node2_stepping, 120, "a step on node2")
    faults.inject(sandbox, job_id, "node2", kind)
    wait_for_state(sandbox, job_id, "FAILED", 30)
    fired = faults.fired_at(sandbox, job_id, "node2")
    assert fired is not None and time.time() - fired < 5  # srun --kill-on-bad-exit ends the step at once
    text = out.read_text()
    rank = rank_on_node2()
    if kind == FaultKind.CRASH:
        assert f"srun: error: node2: task {rank}: Killed" in text
    else:
        assert f"[rank{rank}]: NVRM: Xid (PCI:0000:3b:00): 79, pid=" in text
        assert f"[rank{rank}]: RuntimeError: CUDA error: unspecified launch failure" in text
        assert f"srun: error: node2: task {rank}: Exited with exit code 1" in text
        assert "GPU has fallen off the bus." in (sandbox.kernel_dir / "node2.log").read_text()
    assert not faults.control_path(sandbox, job_id, "node2").exists()
