"""The Xid recovery case with Respawn reaching Slurm over SSH (asyncssh, pinned host key)."""

import pytest

from respawn.audit.trail import EventType
from respawn.config.cluster import SchedulerAccess
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running


@pytest.fixture(scope="module")
def cluster(sandbox):
    with respawn_running(sandbox, "recovery-ssh", SchedulerAccess.SSH) as config:
        assert config.scheduler.transport is SchedulerAccess.SSH
        yield Cluster(sandbox, config)


@pytest.mark.slow
async def test_xid_recovery_through_ssh(cluster):
    job_id = submit(
        cluster.lab,
        nodes=3,
        steps=20,
        checkpoint_every=10,
        step_seconds=0.3,
        comment='{"respawn":{"environment":"demo","mode":"action"}}',
        name="e2e-ssh",
    )
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)
    job = await cluster.wait_state(job_id, {"COMPLETED"}, min_restarts=1)
    assert job.restart_count == 1 and "node2" in job.excluded_nodes
    types = cluster.types(job_id)
    assert types.count(EventType.HELD) == 1 and EventType.RELEASED in types
