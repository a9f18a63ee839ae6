"""The advisor transport end to end: real Slurm sandbox, real Temporal, real DDP job;
Respawn's worker, detector and server as real processes publish advice, and the
reference controller (`respawn controller`, a real process too) carries it out."""

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from respawn.audit.trail import EventType
from respawn.config.cluster import SchedulerAccess
from respawn.sandbox.labconfig import READ_TOKEN, SERVER_PORT, WRITE_TOKEN
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
SERVER = f"http://127.0.0.1:{SERVER_PORT}"


@pytest.fixture(scope="module")
def cluster(sandbox):
    with respawn_running(sandbox, "advisor", SchedulerAccess.ADVISOR) as config:
        assert config.scheduler.transport is SchedulerAccess.ADVISOR
        yield Cluster(sandbox, config)


@pytest.fixture
async def api(cluster):
    async with httpx.AsyncClient(base_url=SERVER, timeout=10) as client:

        async def healthy():
            try:
                return (await client.get("/healthz")).status_code == 200
            except httpx.TransportError:
                return False

        await until(healthy, 60, "the Respawn server to answer")
        yield client


def controller(cluster: Cluster) -> subprocess.Popen:
    config_path = cluster.lab.root / f"{cluster.config.cluster}.yaml"
    token = cluster.lab.root / "advisor-controller.token"  # from a file: never on the command line
    token.touch(mode=0o600)
    token.chmod(0o600)
    token.write_text(WRITE_TOKEN + "\n")
    with open(cluster.lab.log_dir / "respawn-advisor-controller.log", "ab") as log:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "respawn.surfaces.cli",
                "controller",
                "--config",
                str(config_path),
                "--server",
                SERVER,
                "--token-file",
                str(token),
                "--interval",
                "0.5",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def read(token: str = READ_TOKEN) -> dict:
    return {"Authorization": f"Bearer {token}"}


async def test_requests_without_a_token_or_the_scope_are_refused(api):
    assert (await api.get("/api/v1/advice")).status_code == 401
    assert (await api.get("/api/v1/audit")).status_code == 401
    refused = await api.post(
        "/api/v1/detections", headers=read(), json={"job_id": 1, "kind": "node_down", "node": "node2"}
    )
    assert refused.status_code == 403


async def test_xid_on_node2_yields_advice_that_the_reference_controller_applies(cluster, api):
    job_id = submit(
        cluster.lab, nodes=3, steps=20, checkpoint_every=10, step_seconds=0.3, comment=ACTION, name="advisor"
    )
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)

    async def published():
        answer = await api.get(f"/api/v1/jobs/{job_id}/advice", headers=read())
        return answer.json() if answer.status_code == 200 else None

    advice = await until(published, 90, "advice for the job")
    assert (advice["generation"], advice["desired"], advice["exclude"]) == (1, "restart", ["node2"])
    assert advice["status"] == "published" and advice["attempt"] == 0

    # Respawn itself changes nothing on Slurm: until a controller acts, the job is not requeued.
    job = await cluster.job(job_id)
    assert job.restart_count == 0 and "node2" not in job.excluded_nodes

    # An external detector's report joins the open incident; one about a node not the job's is refused.
    seen = datetime.now(UTC) - timedelta(seconds=2)
    joined = await api.post(
        "/api/v1/detections",
        headers=read(WRITE_TOKEN),
        json={"job_id": job_id, "kind": "node_down", "node": "node2", "attempt": 0, "occurred_at": seen.isoformat()},
    )
    assert joined.status_code == 202, joined.text
    assert joined.json()["incident_id"] == await cluster.incident_of(job_id)
    # Timed from when the external detector saw it: at least the 2 s it waited.
    scraped = (await api.get("/metrics")).text
    assert 'respawn_detection_latency_seconds_count{kind="external"} 1.0' in scraped
    assert 'respawn_detection_latency_seconds_bucket{kind="external",le="1.0"} 0.0' in scraped
    stranger = next(n for n in cluster.lab.nodes if n not in job.nodes)
    refused = await api.post(
        "/api/v1/detections", headers=read(WRITE_TOKEN), json={"job_id": job_id, "kind": "node_down", "node": stranger}
    )
    assert refused.status_code == 422 and stranger in refused.json()["detail"][0]["msg"]

    proc = controller(cluster)
    try:
        job = await cluster.wait_state(job_id, {"COMPLETED"}, min_restarts=1)
    finally:
        proc.terminate()
        proc.wait(timeout=15)
    assert job.restart_count == 1
    assert "node2" in job.excluded_nodes and "node2" not in job.nodes

    advice = (await api.get(f"/api/v1/jobs/{job_id}/advice", headers=read())).json()
    assert (advice["generation"], advice["status"], advice["controller"]) == (1, "converged", "sandbox-writer")
    await until(lambda: EventType.JOB_COMPLETED in cluster.types(job_id), 30, "the completion in the audit trail")
    types = [t for t in cluster.types(job_id) if t is not EventType.ENROLLED]
    assert types[:5] == [
        EventType.DETECTED,
        EventType.ATTRIBUTED,
        EventType.DECIDED,
        EventType.ADVISED,
        EventType.RECONCILED,
    ]
    assert EventType.RESUMED in types and EventType.INCIDENT_CLOSED in types
    assert not {EventType.HELD, EventType.EXCLUDED, EventType.RELEASED} & set(types)  # the controller's doing
    reconciled = next(r for r in cluster.events(job_id) if r.event_type is EventType.RECONCILED)
    assert reconciled.acted is True and reconciled.details["generation"] == 1

    page = (
        await api.get(
            "/api/v1/audit", headers=read(), params={"job_id": job_id, "event_type": ["advised", "reconciled"]}
        )
    ).json()
    assert [e["event_type"] for e in page["events"]] == ["advised", "reconciled"]
