"""Only real interruptions become incidents, and no job's output blinds Respawn to the
others: real Slurm sandbox, real Temporal, the real DDP job, Respawn's detector and
worker as processes (issue 10)."""

import subprocess
from datetime import UTC, datetime

import pytest

from respawn.audit.trail import EventType
from respawn.config.cluster import Environment, EnvironmentBinding, Mode
from respawn.sandbox.workload.faults import FaultKind, fired_at, inject
from respawn.sandbox.workload.hostile import NODE, Hostility, submit_hostile
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
NOT_ACTED = {EventType.HELD, EventType.EXCLUDED, EventType.RELEASED, EventType.STOPPED}


# An environment that acts, bound to a partition the sandbox's jobs are not in (theirs is `debug`).
GPU_ONLY = '{"respawn":{"environment":"gpu-only","mode":"action"}}'


@pytest.fixture(scope="module")
def cluster(sandbox):
    bound = Environment(max_mode=Mode.ACTION, allow=EnvironmentBinding(partitions=["gpu"]))
    with respawn_running(sandbox, "suspicion", environments={"gpu-only": bound}) as config:
        yield Cluster(sandbox, config)


def _submit(cluster: Cluster, steps: int) -> int:
    return submit(
        cluster.lab, nodes=3, steps=steps, checkpoint_every=10, step_seconds=0.3, comment=ACTION, name="suspicion"
    )


async def _not_interrupted(cluster: Cluster, job_id: int):
    return await until(
        lambda: [r for r in cluster.events(job_id) if r.event_type is EventType.NOT_INTERRUPTED],
        90,
        f"job {job_id}'s suspicion to be judged not an interruption",
    )


async def test_failure_text_a_training_job_handles_ends_nothing_and_the_job_completes(cluster):
    # 110 steps of 0.3 s: the job still trains well past the lab's 8 s confirmation window
    # after the fault, on a loaded two-core runner too (at 70 a slow judge met the job's end).
    job_id = _submit(cluster, steps=110)
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.HANDLED)

    judged = (await _not_interrupted(cluster, job_id))[0]
    assert "trained on" in judged.details["why"] and judged.acted is False
    job = await cluster.wait_state(job_id, {"COMPLETED"})
    assert job.restart_count == 0 and job.excluded_nodes == []
    await until(lambda: EventType.JOB_COMPLETED in cluster.types(job_id), 30, "the completion in the audit trail")
    rows = cluster.events(job_id)
    assert not NOT_ACTED & {r.event_type for r in rows}
    assert not [r for r in rows if r.acted], "a row says Respawn acted on a job it left alone"
    closed = [r for r in rows if r.event_type is EventType.INCIDENT_CLOSED]
    assert [r.details["phase"] for r in closed] == ["not_interrupted"]


async def test_a_real_crash_after_handled_text_in_the_same_attempt_is_recovered(cluster):
    job_id = _submit(cluster, steps=100)
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.HANDLED)
    first = (await _not_interrupted(cluster, job_id))[0]

    inject(cluster.lab, job_id, "node2", FaultKind.CRASH)
    job = await cluster.wait_state(job_id, {"COMPLETED"}, min_restarts=1)
    assert job.restart_count == 1
    await until(lambda: EventType.RESUMED in cluster.types(job_id), 60, "the recovered attempt to train")
    decided = [r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED]
    # The attempt's second incident decided, once; the first one's suspicion stayed one.
    assert [r.incident_id for r in decided] == [f"{first.incident_id}.1"]
    assert decided[0].acted is True and decided[0].action in ("restart", "restart_excluding")
    resumed = next(r for r in cluster.events(job_id) if r.event_type is EventType.RESUMED)
    assert resumed.details["resumed_from"] >= 10


async def test_an_owner_cancel_opens_no_incident_and_records_no_stop(cluster):
    job_id = _submit(cluster, steps=200)
    await cluster.wait_checkpoint(job_id)
    subprocess.run(["scancel", str(job_id)], env=cluster.lab.env(), check=True)
    await until(lambda: EventType.JOB_ENDED in cluster.types(job_id), 60, "the cancel in the audit trail")
    rows = cluster.events(job_id)
    ended = next(r for r in rows if r.event_type is EventType.JOB_ENDED)
    assert ended.details["state"] == "CANCELLED"
    assert "CANCELLED AT" in cluster.output(job_id)  # Slurm's own line is there, and opened nothing
    assert not {EventType.DETECTED, EventType.DECIDED, EventType.STOPPED} & {r.event_type for r in rows}


async def test_hostile_neighbours_neither_stall_nor_blind_detection_of_a_victim(cluster):
    hostile = {kind: submit_hostile(cluster.lab, kind, ACTION) for kind in Hostility}
    try:
        for job_id in hostile.values():
            await cluster.wait_state(job_id, {"RUNNING"}, timeout=60)
        await until(
            lambda: "[rank4999]" in cluster.output(hostile[Hostility.NOISY])[-4096:], 60, "the noisy job to print"
        )
        # The victim keeps off the hostile jobs' node, so there is room for it without its faulty one.
        victim = submit(
            cluster.lab,
            nodes=2,
            steps=60,
            checkpoint_every=10,
            step_seconds=0.3,
            comment=ACTION,
            name="victim",
            extra_sbatch_args=[f"--exclude={NODE}"],
        )
        await cluster.wait_checkpoint(victim)
        faulty = (await cluster.job(victim)).nodes[0]
        inject(cluster.lab, victim, faulty, FaultKind.XID)

        detected = await until(
            lambda: [r for r in cluster.events(victim) if r.event_type is EventType.DETECTED],
            60,
            "the victim's Xid to be detected",
        )
        fault = datetime.fromtimestamp(fired_at(cluster.lab, victim, faulty), UTC)
        latency = (detected[0].at - fault).total_seconds()
        print(f"\nvictim detected {latency:.2f} s after its Xid, beside {len(hostile)} hostile jobs")
        assert latency < 10, f"detection took {latency:.1f} s beside hostile jobs"
        job = await cluster.wait_state(victim, {"COMPLETED"}, min_restarts=1)
        assert faulty in job.excluded_nodes and faulty not in job.nodes

        errors = [r for r in cluster.events(hostile[Hostility.FIFO]) if r.event_type is EventType.WATCH_ERROR]
        assert len(errors) == 1 and "fifo" in errors[0].details["detail"]  # once, not once per poll
        noisy = [r for r in cluster.events(hostile[Hostility.NOISY]) if r.event_type is EventType.WATCH_ERROR]
        assert len(noisy) <= 1
        # Its forged finding is no news (it may still be found hung: it stops progressing on purpose).
        forged = [
            r
            for r in cluster.events(hostile[Hostility.NOISY])
            if r.event_type is EventType.DETECTED and r.details["kind"] == "log_line"
        ]
        assert forged == []
    finally:
        subprocess.run(["scancel", *map(str, hostile.values())], env=cluster.lab.env(), check=False)


async def test_a_job_naming_an_acting_environment_its_partition_is_not_bound_to_is_only_observed(cluster):
    job_id = submit(
        cluster.lab, nodes=3, steps=60, checkpoint_every=10, step_seconds=0.3, comment=GPU_ONLY, name="unbound"
    )
    await cluster.wait_checkpoint(job_id)
    enrolled = next(r for r in cluster.events(job_id) if r.event_type is EventType.ENROLLED)
    assert enrolled.details["mode"] == "observe" and "partitions gpu" in enrolled.details["refused"]
    inject(cluster.lab, job_id, "node2", FaultKind.XID)

    await until(lambda: EventType.INCIDENT_CLOSED in cluster.types(job_id), 60, "the recommendation")
    decided = next(r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED)
    assert decided.acted is False and decided.action == "restart_excluding"
    assert not NOT_ACTED & set(cluster.types(job_id))
    job = await cluster.wait_state(job_id, {"FAILED"}, timeout=30)
    assert job.restart_count == 0
