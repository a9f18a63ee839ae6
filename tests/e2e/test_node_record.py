"""The node record across jobs, end to end: drain only on node-level evidence, and the
circuit breaker when too much of the cluster is implicated at once.

One Respawn cluster for the module, whose record the tests build on in order: a node
twice implicated with kernel-log evidence is drained; one twice implicated by a job's
output alone is not; a third node implicated then opens the circuit breaker (more
than half of the four nodes within the window).
"""

import pytest

from respawn.audit.trail import AuditRow, EventType
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
NODES = ["node1", "node2", "node3", "node4"]


@pytest.fixture(scope="module")
def cluster(sandbox):
    with respawn_running(sandbox, "node-record", node_incidents_to_drain=2, systemic_node_share=0.5) as config:
        yield Cluster(sandbox, config)


async def fail_on(cluster: Cluster, node: str, kind: FaultKind) -> int:
    """A one-node job on `node` (the lowest-numbered free node once the lower ones are
    excluded: Slurm fills nodes in order), given fault `kind` once it trains."""
    lower = [n for n in NODES if n < node]
    extra = [f"--exclude={','.join(lower)}"] if lower else []
    job_id = submit(
        cluster.lab,
        nodes=1,
        steps=400,
        checkpoint_every=1000,
        step_seconds=0.3,
        comment=ACTION,
        name=f"{kind.value}-{node}",
        extra_sbatch_args=extra,
    )
    job = await cluster.wait_state(job_id, {"RUNNING"}, timeout=60)
    assert job.nodes == [node], f"job {job_id} placed on {job.nodes}, wanted {node}"
    await until(lambda: "step 2/" in cluster.output(job_id), 120, f"job {job_id} to train on {node}")
    inject(cluster.lab, job_id, node, kind)
    return job_id


async def decided(cluster: Cluster, job_id: int) -> AuditRow:
    def row() -> AuditRow | None:
        return next((r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED), None)

    return await until(row, 60, f"job {job_id}'s incident to be decided")


async def cancelled(cluster: Cluster, job_id: int) -> None:
    """Cancel once Respawn has released the job (a requeue in progress would swallow the scancel)."""
    await until(lambda: EventType.RELEASED in cluster.types(job_id), 60, f"job {job_id} released")

    async def gone() -> bool:
        await cluster.slurm.cancel(job_id)
        return (await cluster.job(job_id)).state == "CANCELLED"

    await until(gone, 60, f"job {job_id} cancelled")


async def drained(cluster: Cluster, node: str) -> bool:
    info = await cluster.slurm.node(node)
    return "DRAIN" in info.flags or info.state.startswith("drain")


@pytest.mark.slow
async def test_drain_needs_node_level_evidence(cluster):
    # Two rounds, each with a real Xid on node2 (kernel log) and a forged one on node3 (job output only).
    for round_ in (1, 2):
        real = await fail_on(cluster, "node2", FaultKind.XID)
        forged = await fail_on(cluster, "node3", FaultKind.FORGED_XID)
        real_row, forged_row = await decided(cluster, real), await decided(cluster, forged)
        assert (real_row.action, real_row.nodes) == ("restart_excluding", ["node2"]), round_
        assert (forged_row.action, forged_row.nodes) == ("restart_excluding", ["node3"]), round_
        if round_ == 1:
            # Their next attempts are not the point: the record is. Both nodes are free again for round 2.
            for job_id in (real, forged):
                await cancelled(cluster, job_id)

    # The second round reaches the drain threshold for both nodes; only node2's is backed.
    assert (real_row.details["drain"], real_row.details["drain_backed"]) == (["node2"], ["node2"])
    assert (forged_row.details["drain"], forged_row.details["drain_backed"]) == (["node3"], [])
    row = await until(
        lambda: next((r for r in cluster.events(real) if r.event_type is EventType.DRAINED), None), 60, "node2's drain"
    )
    assert row.nodes == ["node2"]
    assert await until(lambda: drained(cluster, "node2"), 30, "Slurm to show node2 drained")
    assert (await cluster.slurm.node("node2")).reason.startswith(f"respawn {real_row.incident_id}")
    assert not await drained(cluster, "node3")
    assert not [r for r in cluster.events(forged) if r.event_type is EventType.DRAINED]


@pytest.mark.slow
async def test_circuit_breaker_opens_when_most_nodes_are_implicated(cluster):
    # node2 and node3 are on record from the test above: node1 makes three of four.
    job_id = await fail_on(cluster, "node1", FaultKind.XID)
    row = await decided(cluster, job_id)
    assert row.action == "restart" and row.details["systemic"] is True
    assert "systemic" in row.details["reason"] and row.details["exclude"] == []
    systemic = next(r for r in cluster.events(job_id) if r.event_type is EventType.SYSTEMIC)
    assert "3 of 4 nodes implicated" in systemic.details["reason"]
    # Restarted, nothing excluded, nothing drained: a switch or a filesystem is not fixed by draining.
    job = await cluster.wait_state(job_id, {"RUNNING"}, timeout=60, min_restarts=1)
    assert job.excluded_nodes == []
    assert not await drained(cluster, "node1")
