"""Budgets end to end: a job that keeps failing is stopped, not retried forever."""

import pytest

from respawn.audit.trail import EventType
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'


@pytest.fixture(scope="module")
def cluster(sandbox):
    # Every attempt fails on another node: that is the point here, not a drain or a systemic failure.
    with respawn_running(sandbox, "budgets", node_incidents_to_drain=100, systemic_node_share=1.0) as config:
        yield Cluster(sandbox, config)


async def fail_attempt(cluster: Cluster, job_id: int, attempt: int, progress: str) -> None:
    """Wait for `attempt` to train (its output shows `progress`), then give its node an Xid."""

    async def running_node() -> str | None:
        job = await cluster.job(job_id)
        text = cluster.output(job_id)
        started = text.rfind(f"restart_count {attempt} ")  # this attempt's own output begins there
        ready = job.state == "RUNNING" and job.restart_count == attempt and started >= 0 and progress in text[started:]
        return job.nodes[0] if ready and job.nodes else None

    node = await until(running_node, 120, f"attempt {attempt} of job {job_id} to train")
    inject(cluster.lab, job_id, node, FaultKind.XID)


def decisions(cluster: Cluster, job_id: int) -> list:
    return [r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED]


@pytest.mark.slow
async def test_a_job_failing_four_times_stops_after_the_third_restart(cluster):
    # One node per attempt, so three exclusions still leave it a node to run on.
    job_id = submit(
        cluster.lab, nodes=1, steps=400, checkpoint_every=2, step_seconds=0.3, comment=ACTION, name="budget"
    )
    for attempt in range(4):
        # each attempt saves a new checkpoint first, so only the retry budget can stop it
        await fail_attempt(cluster, job_id, attempt, "saved checkpoint")
        await until(lambda: len(decisions(cluster, job_id)) > attempt, 60, f"incident {attempt} decided")
    rows = decisions(cluster, job_id)
    assert [r.action for r in rows] == ["restart_excluding"] * 3 + ["stop"]
    assert "retry budget spent: 3 of 3" in rows[-1].details["reason"]
    job = await cluster.wait_state(job_id, {"FAILED"}, timeout=30)
    assert job.restart_count == 3


@pytest.mark.slow
async def test_a_job_that_never_saves_a_checkpoint_stops_after_n_attempts(cluster):
    job_id = submit(
        cluster.lab, nodes=1, steps=400, checkpoint_every=1000, step_seconds=0.3, comment=ACTION, name="no-ckpt"
    )
    for attempt in range(3):
        await fail_attempt(cluster, job_id, attempt, "step 3/")
        await until(lambda: len(decisions(cluster, job_id)) > attempt, 60, f"incident {attempt} decided")
    rows = decisions(cluster, job_id)
    assert [r.action for r in rows] == ["restart_excluding", "restart_excluding", "stop"]
    assert "no new checkpoint across 2 attempts" in rows[-1].details["reason"]
