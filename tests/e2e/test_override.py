"""Manual override from the CLI against a real incident that waits for approval."""

import subprocess
import sys
from pathlib import Path

import pytest

from respawn.audit.trail import EventType
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running, until

GATED = '{"respawn":{"environment":"gated","mode":"action"}}'
RESPAWN = str(Path(sys.executable).parent / "respawn")


@pytest.fixture(scope="module")
def cluster(sandbox):
    with respawn_running(sandbox, "override") as config:
        yield Cluster(sandbox, config)


def override(cluster: Cluster, *args: str) -> subprocess.CompletedProcess:
    config = cluster.lab.root / "override.yaml"
    return subprocess.run(
        [RESPAWN, "override", *args, "--config", str(config)], capture_output=True, text=True, timeout=60, check=False
    )


async def gated_incident(cluster: Cluster) -> int:
    job_id = submit(cluster.lab, nodes=3, steps=30, checkpoint_every=10, step_seconds=0.3, comment=GATED, name="gated")
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)
    await until(lambda: EventType.DECIDED in cluster.types(job_id), 60, "the decision awaiting approval")
    return job_id


async def test_deny_leaves_the_job_alone_and_records_who_and_why(cluster):
    job_id = await gated_incident(cluster)
    done = override(cluster, str(job_id), "--deny", "--reason", "node2 under maintenance", "--who", "alice")
    assert done.returncode == 0, done.stderr
    await until(lambda: EventType.INCIDENT_CLOSED in cluster.types(job_id), 30, "the incident to close")
    job = await cluster.wait_state(job_id, {"FAILED"}, timeout=30)
    assert job.restart_count == 0 and job.excluded_nodes == []
    row = next(r for r in cluster.events(job_id) if r.event_type is EventType.OVERRIDE)
    assert row.details == {"who": "alice", "reason": "node2 under maintenance"} and row.action == "deny"

    closed = override(cluster, str(job_id), "--approve", "--reason", "too late")
    assert closed.returncode == 1 and "is closed" in closed.stderr


async def test_restart_with_exclusions_from_the_operator(cluster):
    job_id = await gated_incident(cluster)
    too_many = override(cluster, str(job_id), "--restart", "--exclude", "node2,node3", "--reason", "both")
    assert too_many.returncode == 1 and "would leave 2 nodes for a 3-node job" in too_many.stderr
    done = override(cluster, str(job_id), "--restart", "--exclude", "node3", "--reason", "node3 is flaky")
    assert done.returncode == 0, done.stderr
    job = await cluster.wait_state(job_id, {"COMPLETED"}, min_restarts=1)
    assert job.excluded_nodes == ["node3"] and "node3" not in job.nodes


def test_unknown_job_and_bad_input_get_clear_errors(cluster):
    unknown = override(cluster, "999999", "--stop", "--reason", "x")
    assert unknown.returncode == 1 and "has no incident" in unknown.stderr
    bad = override(cluster, "1", "--restart", "--exclude", "node1;reboot", "--reason", "x")
    assert bad.returncode == 2 and "exclude" in bad.stderr
    wrong = override(cluster, "1", "--stop", "--exclude", "node1", "--reason", "x")
    assert wrong.returncode == 2 and "only be excluded with a restart" in wrong.stderr
