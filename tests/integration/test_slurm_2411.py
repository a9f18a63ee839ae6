"""The core end-to-end cases on a second real Slurm: Debian 13's Slurm 24.11.5 in a chroot
(respawn/sandbox/chroot.py), beside the default sandbox (own lab folder, ports and Temporal).

Respawn runs on the host, as a detector and a worker, reaching this Slurm through the
lab's wrapper scripts (scheduler.slurm_bin_dir). The root filesystem is built with
debootstrap when missing (about 40-70 s, once) and reused after.
"""

import asyncio
import fcntl
from collections.abc import Iterator, Mapping, Sequence

import pytest

from respawn.audit.trail import EventType
from respawn.sandbox import chroot, procs
from respawn.sandbox.chroot import ChrootLab
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from respawn.scheduler import actions
from respawn.scheduler.errors import JobCompleting, JobNotFound
from respawn.scheduler.slurm import JobInfo, Slurm
from respawn.scheduler.states import JobFlag, JobState, NodeFlag
from respawn.scheduler.transport import LocalTransport
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
OBSERVE_ONLY_ENV = '{"respawn":{"environment":"prod","mode":"action"}}'


@pytest.fixture(scope="module")
def lab_2411() -> Iterator[ChrootLab]:
    """The 24.11 lab, up for the module (built if need be); taken down only if this module started it."""
    lab = chroot.chroot_lab()
    lab.root.mkdir(parents=True, exist_ok=True)
    with open(lab.root / "tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        was_running = chroot.status(lab)["slurmctld"] == "running"
        chroot.up(lab)
        try:
            yield lab
        finally:
            if was_running:
                chroot.reset(lab)
            else:
                chroot.down(lab)


@pytest.fixture(scope="module")
def cluster(lab_2411: ChrootLab) -> Iterator[Cluster]:
    with respawn_running(lab_2411, "slurm-2411") as config:
        assert config.scheduler.slurm_bin_dir == lab_2411.bin_dir
        yield Cluster(lab_2411, config)


def _submit(cluster: Cluster, comment: str, nodes: int = 2, steps: int = 30, step_seconds: float = 0.3) -> int:
    return submit(
        cluster.lab,
        nodes=nodes,
        steps=steps,
        checkpoint_every=10,
        step_seconds=step_seconds,
        comment=comment,
        name="e2e-2411",
    )


def _cancel(cluster: Cluster, job_id: int) -> None:
    procs.run(["scancel", str(job_id)], env=cluster.lab.env())


async def test_it_is_slurm_2411(cluster: Cluster) -> None:
    result = procs.run(["sinfo", "--version"], env=cluster.lab.env())
    assert result.stdout.strip() == "slurm-wlm 24.11.5"
    nodes = await cluster.slurm.nodes()
    assert cluster.slurm.format == "v0.0.42" and [n.name for n in nodes] == cluster.lab.nodes


async def test_xid_on_node2_requeues_without_node2_and_completes_from_checkpoint(cluster: Cluster) -> None:
    job_id = _submit(cluster, ACTION)
    await cluster.wait_checkpoint(job_id)
    assert "node2" in (await cluster.job(job_id)).nodes
    inject(cluster.lab, job_id, "node2", FaultKind.XID)

    rows = await cluster.wait_requeued_without(job_id, "node2")
    decided = next(r for r in rows if r.event_type is EventType.DECIDED)
    assert (decided.failure_class, decided.nodes, decided.acted) == ("gpu_hardware", ["node2"], True)
    assert next(r for r in rows if r.event_type is EventType.RESUMED).details["resumed_from"] >= 10


async def test_environment_that_only_observes_recommends_and_leaves_the_job_alone(cluster: Cluster) -> None:
    job_id = _submit(cluster, OBSERVE_ONLY_ENV)
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)

    await until(lambda: EventType.INCIDENT_CLOSED in cluster.types(job_id), 60, "the recommendation")
    job = await cluster.wait_state(job_id, {"FAILED"}, timeout=30)
    assert job.restart_count == 0 and job.excluded_nodes == []
    decided = next(r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED)
    assert decided.acted is False and decided.action == "restart_excluding" and decided.nodes == ["node2"]
    assert not {EventType.HELD, EventType.EXCLUDED, EventType.RELEASED} & set(cluster.types(job_id))


async def test_a_stopped_rank_is_a_hang_and_the_job_restarts_without_its_node(cluster: Cluster) -> None:
    job_id = submit(
        cluster.lab, nodes=2, steps=400, checkpoint_every=10, step_seconds=1.0, comment=ACTION, name="e2e-2411-hang"
    )
    try:
        await cluster.wait_checkpoint(job_id)
        node = (await cluster.job(job_id)).nodes[1]
        inject(cluster.lab, job_id, node, FaultKind.HANG)
        await until(lambda: EventType.DECIDED in cluster.types(job_id), 90, "the hang to be decided")
        rows = cluster.events(job_id)
        detected = next(r for r in rows if r.event_type is EventType.DETECTED)
        decided = next(r for r in rows if r.event_type is EventType.DECIDED)
        # The stopped-task probe is an `srun --overlap` step: it runs through the chroot too.
        assert detected.details["kind"] == "hang" and "its process is stopped" in detected.details["line"]
        assert (decided.failure_class, decided.nodes, decided.acted) == ("hang", [node], True)
        job = await cluster.wait_state(job_id, {"RUNNING"}, timeout=90, min_restarts=1)
        assert node in job.excluded_nodes and node not in job.nodes
    finally:
        _cancel(cluster, job_id)


async def test_a_killed_node_is_excluded_and_the_job_completes_on_the_others(cluster: Cluster) -> None:
    job_id = _submit(cluster, ACTION)
    await cluster.wait_checkpoint(job_id)
    node = (await cluster.job(job_id)).nodes[1]
    try:
        inject(cluster.lab, job_id, node, FaultKind.KILL_NODE)
        seen = await until(lambda: _unreachable(cluster, node), 40, f"Slurm to see {node} gone")
        assert NodeFlag.NOT_RESPONDING in seen.flags or seen.state == "down"
        job = await cluster.wait_state(job_id, {"COMPLETED"}, timeout=240, min_restarts=1)
    finally:
        chroot.start_node(cluster.lab, node)
    assert node in job.excluded_nodes and node not in job.nodes
    decided = next(r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED)
    assert decided.nodes == [node]
    # 24.11's scontrol takes the same DOWN: Respawn called the silent node DOWN itself.
    marked = [r for r in cluster.events(job_id) if r.event_type is EventType.MARKED_DOWN]
    assert [r.nodes for r in marked] == [[node]]


async def _unreachable(cluster: Cluster, node: str):
    info = await cluster.slurm.node(node)
    return info if info.unreachable else None


async def test_requeue_while_completing_is_waited_out(cluster: Cluster) -> None:
    """24.11 prints ["PENDING", "COMPLETING"] right after a requeue: the guard of every step
    after the hold must see it as completing, and let it pass once no node holds the job."""
    stubborn = 'trap "" TERM; exec srun sh -c \'trap "" TERM; exec sleep 300\''
    argv = [
        "sbatch",
        "--parsable",
        "-N1",
        "-wnode4",
        "--requeue",
        f"--output={cluster.lab.out_dir}/slurm-%j.out",
        "--wrap",
        stubborn,
    ]
    job_id = int(procs.run(argv, env=cluster.lab.env()).stdout.strip().split(";")[0])
    try:
        await cluster.wait_state(job_id, {"RUNNING"}, timeout=30)
        # Its step's tasks run (they hold the node through KillWait): a job RUNNING to slurmctld
        # whose launch has not reached its node yet has nothing to kill, and completes at once
        # (a CI run under load requeued it so, and read it without the flag).
        await until(lambda: _step_runs(cluster, job_id), 30, "the job's step to run")
        await cluster.slurm.requeue_hold(job_id)
        job = await cluster.job(job_id)
        assert (job.state, job.flags, job.completing) == (JobState.PENDING, [JobFlag.COMPLETING], True)
        with pytest.raises(JobCompleting, match="still completing"):  # the actions retry until it is not
            actions.not_completing(job)
        # KillWait (2 s) later SIGKILL ends the tasks that ignored SIGTERM, and the node lets go.
        done = await until(lambda: _not_completing(cluster, job_id), 30, "the requeued job to finish completing")
        actions.not_completing(done)
        assert (done.state, done.state_reason, done.restart_count) == ("PENDING", "JobHeldUser", 1)
        await cluster.slurm.set_excluded_nodes(job_id, ["node4"])
        assert (await cluster.job(job_id)).excluded_nodes == ["node4"]
    finally:
        _cancel(cluster, job_id)


async def test_jobs_followed_at_once_are_read_in_one_call(cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> None:
    """One squeue naming them all, its text (0.9 KB a job where the JSON prints 6-27 KB), an ended
    job included; the ended job read again as JSON only while its text says COMPLETING."""
    transport = LocalTransport(env=cluster.lab.env())
    calls: list[list[str]] = []
    run = transport.run

    async def recorded(argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None):
        calls.append(list(argv))
        return await run(argv, timeout, env)

    monkeypatch.setattr(transport, "run", recorded)
    slurm = Slurm(transport)
    sbatch = ["sbatch", "--parsable", f"--output={cluster.lab.out_dir}/slurm-%j.out", "--wrap"]
    running = int(procs.run([*sbatch, "exec sleep 300"], env=cluster.lab.env()).stdout.strip())
    ended = int(procs.run([*sbatch, "exit 3"], env=cluster.lab.env()).stdout.strip())
    try:
        await until(lambda: _state(slurm, running, "RUNNING"), 30, "the job to run")
        await until(lambda: _state(slurm, ended, "FAILED"), 30, "the other job to fail")
        before = len(calls)
        followed = await asyncio.gather(
            slurm.job(running, exclusions=False), slurm.job(ended, exclusions=False), slurm.job(999_999, exclusions=False),
            return_exceptions=True,
        )  # fmt: skip
        assert [(j.job_id, j.state) for j in followed[:2] if isinstance(j, JobInfo)] == [
            (running, JobState.RUNNING), (ended, JobState.FAILED)
        ]  # fmt: skip
        assert isinstance(followed[2], JobNotFound)
        listed, *again = calls[before:]
        assert listed[:2] == ["squeue", "--noheader"] and f"{running},{ended},999999" in listed
        assert "--json" not in listed and again in ([], [["scontrol", "show", "job", "--json", str(ended)]])
    finally:
        _cancel(cluster, running)


async def _state(slurm: Slurm, job_id: int, state: str) -> JobInfo | None:
    job = await slurm.job(job_id)
    return job if job.state == state else None


async def _step_runs(cluster: Cluster, job_id: int) -> bool:
    steps = procs.run(["squeue", "--steps", "--noheader", "--format=%i", f"--jobs={job_id}"], env=cluster.lab.env())
    return f"{job_id}.0" in steps.stdout.split()


async def _not_completing(cluster: Cluster, job_id: int):
    job = await cluster.job(job_id)
    return None if job.completing else job


async def test_drain_and_resume(cluster: Cluster) -> None:
    reason = "xid79 'gpu' fell off; bus $(id)\nsecond line"
    await cluster.slurm.drain("node4", reason)
    try:
        node = await cluster.slurm.node("node4")
        assert node.drained and node.reason == "xid79 'gpu' fell off; bus $(id) second line"
    finally:
        await cluster.slurm.resume("node4")
    assert not (await cluster.slurm.node("node4")).drained
