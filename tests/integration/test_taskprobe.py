"""The stopped-task probes against real Slurm jobs: a SIGSTOPped task is found on its
node, through an overlapping srun step (a real cluster's way) and through /proc."""

import os
import signal
import subprocess
from collections.abc import Iterator

import pytest

from respawn.sandbox import Lab, procs
from respawn.sandbox.polling import until
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import LocalTransport
from respawn.sources.taskprobe import LocalProc, SlurmStep


@pytest.fixture
def job(sandbox: Lab) -> Iterator[int]:
    argv = [
        "sbatch",
        "--parsable",
        "-N2",
        "--ntasks-per-node=1",
        f"--output={sandbox.out_dir}/slurm-%j.out",
        "--wrap",
        "exec srun sleep 300",
    ]
    job_id = int(
        subprocess.run(argv, env=sandbox.env(), capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    )
    yield job_id
    subprocess.run(["scancel", str(job_id)], env=sandbox.env(), capture_output=True, timeout=30, check=False)


def task_pid(lab: Lab, job_id: int, node: str) -> int | None:
    """The job's `sleep` task on `node`."""
    for pid in procs.all_pids():
        env = procs.environ(pid)
        if (env.get("SLURM_JOB_ID"), env.get("SLURMD_NODENAME"), env.get("SLURM_CONF")) == (
            str(job_id),
            node,
            str(lab.slurm_conf),
        ) and procs.comm(pid) == "sleep":
            return pid
    return None


async def test_a_stopped_task_is_found_on_its_node(sandbox: Lab, job: int) -> None:
    slurm = Slurm(LocalTransport(sandbox.env()))
    running = await until(lambda: _running(slurm, job), 60, f"job {job} to run")
    pid = await until(lambda: task_pid(sandbox, job, running[1]), 30, "the task on the second node")
    step, local = SlurmStep(slurm.transport), LocalProc(sandbox.slurm_conf)
    assert await step.stopped(job, running) == {}

    os.kill(pid, signal.SIGSTOP)
    try:
        assert await step.stopped(job, running) == {1: running[1]}
        assert await local.stopped(job, running) == {1: running[1]}
        # Only the nodes asked about answer.
        assert await step.stopped(job, running[:1]) == {}
    finally:
        os.kill(pid, signal.SIGCONT)


async def _running(slurm: Slurm, job_id: int) -> list[str] | None:
    info = await slurm.job(job_id)
    return info.nodes if info.state == "RUNNING" and len(info.nodes) == 2 else None
