"""The local stack against itself: real munge, slurmctld, slurmds, Temporal and sshd.

The last test takes the stack down and brings it back, so it stays last.
"""

import asyncio
import os
import sqlite3
import time
from typing import TypeVar

import pytest

from respawn.sandbox import Lab, cluster, down, kill_node, procs, reset, start_node, status, up
from respawn.sandbox.polling import until
from respawn.scheduler.slurm import JobInfo, Slurm
from respawn.scheduler.transport import LocalTransport
from tests.ports import unused_port
from tests.recovery_stack import sbatch

T = TypeVar("T")
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY"}


@pytest.fixture
def slurm(sandbox: Lab) -> Slurm:
    return Slurm(LocalTransport(sandbox.env()))


async def job_in(slurm: Slurm, job_id: int, states: set[str]) -> JobInfo | None:
    job = await slurm.job(job_id)
    return job if job.state in states else None


def test_nodes_that_do_not_come_up_are_explained_by_sinfo_and_the_controllers_log(tmp_path) -> None:
    """What `up` raises when the nodes never come up, since a CI log keeps only the error: here a
    lab configured, its controller never started."""
    lab = Lab(root=tmp_path, slurmctld_port=unused_port())
    lab.log_dir.mkdir(parents=True)
    lab.slurm_conf.parent.mkdir(parents=True)
    lab.slurm_conf.write_text(cluster.slurm_conf(lab, ["node1"]))  # not configure(): /etc/hosts is shared
    (lab.log_dir / "slurmctld.log").write_text("error: Incompatible versions of client and server code\n")
    said = cluster.why_not_up(lab)
    assert said.startswith("sinfo") and "node1 idle" not in said
    assert said.endswith("slurmctld.log:\nerror: Incompatible versions of client and server code")


def test_up_is_idempotent(sandbox: Lab) -> None:
    started = time.monotonic()
    up(sandbox)
    assert time.monotonic() - started < 5
    assert set(status(sandbox).values()) == {"running"}


def test_status_names_every_component(sandbox: Lab) -> None:
    assert list(status(sandbox)) == [
        "munged", "slurmctld", "slurmd-node1", "slurmd-node2", "slurmd-node3", "slurmd-node4", "temporal", "sshd",
        "prometheus", "dcgm-node1", "dcgm-node2", "dcgm-node3", "dcgm-node4",
    ]  # fmt: skip


def test_lab_layout(sandbox: Lab) -> None:
    assert sandbox.nodes == ["node1", "node2", "node3", "node4"]
    for path in (sandbox.slurm_conf, sandbox.munge_key, sandbox.munge_socket, sandbox.temporal_db, sandbox.known_hosts):
        assert path.exists(), path
    for folder in (sandbox.out_dir, sandbox.ckpt_dir, sandbox.faults_dir, sandbox.log_dir):
        assert folder.is_dir(), folder
    assert all(sandbox.kernel_log(n).is_file() for n in sandbox.nodes)
    assert sandbox.env()["SLURM_CONF"] == str(sandbox.slurm_conf)


def test_temporal_keeps_its_store_in_sqlites_write_ahead_log(sandbox: Lab) -> None:
    """The pragma is the server's (a burst of workflows completes 2.4x sooner: BENCHMARKS.md);
    the journal mode is the file's, so a reader of it sees what the server set."""
    with sqlite3.connect(f"file:{sandbox.temporal_db}?mode=ro", uri=True) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


async def test_reset_leaves_four_idle_nodes(sandbox: Lab, slurm: Slurm) -> None:
    job_id = sbatch(sandbox, "-w", "node1", "--wrap", "exec srun sleep 300")
    await until(lambda: job_in(slurm, job_id, {"RUNNING"}), 30, f"job {job_id} to run")
    await slurm.drain("node4", "left behind by an earlier test")

    reset(sandbox)

    nodes = await slurm.nodes()
    assert [(n.name, n.state, n.flags) for n in nodes] == [(f"node{i}", "idle", []) for i in range(1, 5)]
    assert (await slurm.job(job_id)).state == "CANCELLED"


async def test_job_sees_its_node_as_hostname(sandbox: Lab, slurm: Slurm) -> None:
    job_id = sbatch(sandbox, "-N2", "--ntasks-per-node=1", "--wrap", "srun hostname")
    job = await until(lambda: job_in(slurm, job_id, FINAL), 30, f"job {job_id} to end")
    assert job.state == "COMPLETED"
    output = (sandbox.out_dir / f"slurm-{job_id}.out").read_text().split()
    assert sorted(output) == job.nodes and len(job.nodes) == 2


@pytest.mark.slow
async def test_kill_node(sandbox: Lab, slurm: Slurm) -> None:
    job_id = sbatch(sandbox, "-w", "node4", "--no-requeue", "--wrap", "exec srun sleep 300")
    await until(lambda: job_in(slurm, job_id, {"RUNNING"}), 30, f"job {job_id} to run")
    await until(lambda: asyncio.to_thread(_job_processes, job_id), 10, "the job's processes")

    kill_node(sandbox, "node4")
    assert status(sandbox)["slurmd-node4"] == "stopped"
    assert _job_processes(job_id) == []

    async def lost() -> str | None:
        node = await slurm.node("node4")
        return node.state if node.state == "down" or "NOT_RESPONDING" in node.flags else None

    await until(lost, 40, "node4 to stop responding")
    start_node(sandbox, "node4")
    node = await slurm.node("node4")
    assert node.state != "down" and "NOT_RESPONDING" not in node.flags
    await slurm.cancel(job_id)


def test_down_leaves_nothing_running(sandbox: Lab) -> None:
    job_id = sbatch(sandbox, "-N2", "--ntasks-per-node=1", "--wrap", "exec srun sleep 300")
    assert procs.wait_until(lambda: bool(_job_processes(job_id)), 30)
    pids = {f.name: procs.read_pid(f) for f in sandbox.run_dir.glob("*.pid")}

    down(sandbox)

    assert set(status(sandbox).values()) == {"stopped"}
    assert [name for name, pid in pids.items() if pid is not None and procs.alive(pid)] == []
    assert list(sandbox.run_dir.glob("*.pid")) == []
    conf = str(sandbox.slurm_conf)
    mine = procs.lineage(os.getpid())
    left = [p for p in set(procs.all_pids()) - mine if procs.alive(p) and procs.environ(p).get("SLURM_CONF") == conf]
    assert left == [], [(p, procs.comm(p)) for p in left]
    # The session's sandbox is needed by later tests.
    up(sandbox)


def _job_processes(job_id: int) -> list[int]:
    return [p for p in procs.all_pids() if procs.environ(p).get("SLURM_JOB_ID") == str(job_id) and procs.alive(p)]
