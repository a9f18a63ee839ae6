"""The Xid recovery case end to end with `logs.source` switched to a log server, once for
Loki and once for VictoriaLogs: real Slurm sandbox, real Temporal, real DDP job, Respawn's
detector and worker as real processes; the job's lines and the nodes' kernel lines reach
Respawn only through the server's fake (tests/fakes/), shipped there through the server's
ingestion API by a test-side shipper (tests/fakes/shipper.py). Respawn's configuration
names no kernel-log file and a job output path that does not exist, so whatever it knows
of either it read from the server."""

from collections.abc import Iterator

import pytest

from respawn.audit.trail import EventType
from respawn.sandbox.lab import Lab
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.fakes._http import FakeServer
from tests.fakes.loki import FakeLoki
from tests.fakes.shipper import Shipper
from tests.fakes.victorialogs import FakeVictoriaLogs
from tests.recovery_stack import Cluster, respawn_running

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
PORTS = {"loki": 25310, "victorialogs": 25311}


@pytest.fixture(scope="module", params=["loki", "victorialogs"])
def served(sandbox: Lab, request: pytest.FixtureRequest) -> Iterator[tuple[Cluster, FakeServer, Shipper]]:
    source: str = request.param
    fake: FakeServer = FakeLoki() if source == "loki" else FakeVictoriaLogs()
    fake.port = PORTS[source]
    fake.start()
    logs = {
        "source": source,
        "server": {"url": fake.url},
        "kernel_log": None,  # no file: node-level evidence comes from the server or not at all
        "job_output": str(sandbox.root / "not-read" / "slurm-{job_id}.out"),
    }
    try:
        with Shipper(source, fake.url, sandbox.out_dir, sandbox.kernel_dir) as shipper:
            with respawn_running(sandbox, f"logs-{source}", logs=logs) as config:
                yield Cluster(sandbox, config), fake, shipper
    finally:
        fake.down()


async def test_xid_on_node2_read_from_the_log_server_requeues_without_node2(served):
    cluster, fake, shipper = served
    job_id = submit(cluster.lab, nodes=3, steps=20, checkpoint_every=10, step_seconds=0.3, comment=ACTION, name="e2e")
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)

    rows = await cluster.wait_requeued_without(job_id, "node2")
    decided = next(r for r in rows if r.event_type is EventType.DECIDED)
    assert decided.failure_class == "gpu_hardware" and decided.nodes == ["node2"]
    assert decided.acted is True and decided.details["exclude"] == ["node2"]
    attributed = next(r for r in rows if r.event_type is EventType.ATTRIBUTED)
    # Attributed on node2's kernel line: node-level evidence, read from the server (no file is configured).
    assert attributed.details["node_implicated"] is True and "node2 kernel:" in attributed.details["line"]
    resumed = next(r for r in rows if r.event_type is EventType.RESUMED)
    assert resumed.details["resumed_from"] >= 10

    # What Respawn knew, it asked the server for: the job's stream, node2's kernel stream, and
    # the evidence's range query; the shipper put the Xid there through the ingestion API.
    queries = [r.param("query") or "" for r in fake.requests]
    assert any(str(job_id) in q for q in queries)
    assert any("node2" in q and "kernel" in q for q in queries)
    assert any("Xid" in line and "node2 kernel:" in line for _, _, line in fake.entries)  # type: ignore[attr-defined]
    assert fake.pushes and shipper.shipped > 0
