"""The Advisor API without the sandbox: a real uvicorn server on a free port over a
temporary audit trail, and a property-based run of its OpenAPI description."""

import logging
import socket
import tempfile
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, settings
from pydantic import ValidationError
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from respawn.advisor.advice import AdviceRequest, AdviceStore, Desired
from respawn.audit.trail import AuditEvent, AuditTrail, EventType
from respawn.config.cluster import ClusterConfig, ConfigError, ServerSettings
from respawn.sandbox.polling import until
from respawn.surfaces.server.app import create_app
from respawn.surfaces.server.ingest import Accepted, DetectionReport, IngestError

READ = "reader-token-0123456789"
WRITE = "writer-token-0123456789"


def make_config(tmp_path) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "server": {
                "tokens": [
                    {"name": "reader", "token": READ, "scopes": ["read"]},
                    {"name": "writer", "token": WRITE, "scopes": ["read", "write"]},
                ]
            },
        }
    )


class FakeIngest:
    """Slurm and Temporal stand-in: job 1 is enrolled, every other job is unknown."""

    def __init__(self) -> None:
        self.delivered: list[tuple[DetectionReport, str]] = []

    async def deliver(self, report: DetectionReport, who: str) -> Accepted:
        if report.job_id != 1:
            raise IngestError(404, f"Slurm knows no job {report.job_id}")
        self.delivered.append((report, who))
        return Accepted(incident_id="incident-c1-1-0", attempt=0, pattern=None)

    async def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app on a real uvicorn server, on a port the kernel picked."""
    tmp = tmp_path_factory.mktemp("advisor-api")
    config = make_config(tmp)
    app = create_app(config)
    app.state.ingest = FakeIngest()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    yield config, app, f"http://127.0.0.1:{sock.getsockname()[1]}", server
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


@pytest.fixture
async def api(served):
    _, _, base, server = served
    await until(lambda: server.started, 10, "the server to start")
    async with httpx.AsyncClient(base_url=base) as client:
        yield client


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


def publish(config: ClusterConfig, job_id: int, incident: str, desired=Desired.RESTART, exclude=("node2",)):
    """What the worker's publish_advice activity does."""
    store = AdviceStore(config.audit_db)
    try:
        return store.publish(
            AdviceRequest(
                incident_id=incident,
                cluster=config.cluster,
                job_id=job_id,
                attempt=0,
                desired=desired,
                exclude=list(exclude),
                reason="xid on node2",
            )
        )
    finally:
        store.close()


async def test_a_request_without_a_token_or_with_an_unknown_one_is_refused_401_and_logged(api, caplog):
    caplog.set_level(logging.WARNING, "respawn.surfaces.server.auth")
    answer = await api.get("/api/v1/advice")
    assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
    assert (await api.get("/api/v1/advice", headers=bearer("not-a-known-token"))).status_code == 401
    assert (await api.get("/api/v1/advice", headers={"Authorization": f"Basic {READ}"})).status_code == 401
    refusals = [r.getMessage() for r in caplog.records if r.name == "respawn.surfaces.server.auth"]
    assert len(refusals) == 3 and all("/api/v1/advice" in m for m in refusals)
    assert not any("not-a-known-token" in m or READ in m for m in refusals)


async def test_a_read_token_on_a_write_endpoint_gets_403_logged_with_its_name_never_the_token(api, caplog, served):
    config = served[0]
    advice = publish(config, 40, "incident-c1-40-0")
    caplog.set_level(logging.WARNING, "respawn.surfaces.server.auth")
    answer = await api.post(
        f"/api/v1/jobs/40/advice/{advice.generation}/status", headers=bearer(READ), json={"status": "converged"}
    )
    assert answer.status_code == 403 and "write" in answer.json()["detail"]
    assert (
        await api.post(
            "/api/v1/detections", headers=bearer(READ), json={"job_id": 1, "kind": "node_down", "node": "node2"}
        )
    ).status_code == 403
    refusals = [r.getMessage() for r in caplog.records if r.name == "respawn.surfaces.server.auth"]
    assert len(refusals) == 2 and all("reader" in m and READ not in m for m in refusals)
    assert (await api.get("/api/v1/jobs/40/advice", headers=bearer(READ))).json()["status"] == "published"


async def test_generations_rise_per_job_and_a_stale_one_is_refused_409(api, served):
    config = served[0]
    first = publish(config, 41, "incident-c1-41-0")
    assert publish(config, 41, "incident-c1-41-0").generation == first.generation == 1  # a retried publish
    assert publish(config, 42, "incident-c1-42-0").generation == 1  # per job
    url = "/api/v1/jobs/41/advice/1/status"
    pending = await api.post(url, headers=bearer(WRITE), json={"status": "pending", "detail": "holding"})
    assert pending.status_code == 200
    assert pending.json()["status"] == "pending" and pending.json()["controller"] == "writer"

    second = publish(config, 41, "incident-c1-41-1", Desired.STOP, exclude=())
    assert second.generation == 2
    current = (await api.get("/api/v1/jobs/41/advice", headers=bearer(READ))).json()
    assert current["generation"] == 2 and current["desired"] == "stop"
    stale = await api.post(url, headers=bearer(WRITE), json={"status": "converged"})
    assert stale.status_code == 409 and "stale" in stale.json()["detail"]
    unknown = await api.post("/api/v1/jobs/41/advice/3/status", headers=bearer(WRITE), json={"status": "pending"})
    assert unknown.status_code == 404


async def test_a_final_status_stays_final_and_open_advice_is_what_a_controller_lists(api, served):
    config = served[0]
    publish(config, 43, "incident-c1-43-0")
    publish(config, 44, "incident-c1-44-0")
    url = "/api/v1/jobs/43/advice/1/status"
    assert (await api.post(url, headers=bearer(WRITE), json={"status": "converged"})).status_code == 200
    assert (await api.post(url, headers=bearer(WRITE), json={"status": "converged"})).status_code == 200
    assert (await api.post(url, headers=bearer(WRITE), json={"status": "abandoned"})).status_code == 409
    assert (await api.post(url, headers=bearer(WRITE), json={"status": "published"})).status_code == 422

    listed = (await api.get("/api/v1/advice", headers=bearer(READ), params={"open": "true"})).json()
    jobs = [a["job_id"] for a in listed["advice"]]
    assert 44 in jobs and 43 not in jobs
    paged, cursor = [], 0
    while cursor is not None:
        page = (await api.get("/api/v1/advice", headers=bearer(READ), params={"after_job": cursor, "limit": 1})).json()
        paged += [a["job_id"] for a in page["advice"]]
        cursor = page["next_cursor"]
    assert paged == sorted(paged) and {43, 44} <= set(paged)


async def test_audit_queries_by_job_type_and_time_with_cursor_paging(api, served):
    config = served[0]
    audit = AuditTrail(config.audit_db)
    t0 = datetime(2026, 3, 1, tzinfo=UTC)
    for i in range(7):
        # Numbered rows: `i` is no field of their types' details, so they are stored unvalidated
        # (model_construct), as a row from another release would be; the API lists them as stored.
        audit.record(
            AuditEvent.model_construct(
                key=f"incident-c1-50-0/{i}",
                cluster=config.cluster,
                job_id=50 + i % 2,
                event_type=EventType.DECIDED if i % 3 == 0 else EventType.DETECTED,
                at=t0 + timedelta(minutes=i),
                details={"i": i},
            )
        )
    audit.close()

    async def events(**params) -> list[int]:
        found, cursor = [], 0
        while cursor is not None:
            page = (
                await api.get("/api/v1/audit", headers=bearer(READ), params={**params, "after": cursor, "limit": 2})
            ).json()
            found += [e["details"]["i"] for e in page["events"]]
            cursor = page["next_cursor"]
        return found

    assert await events(job_id=50) == [0, 2, 4, 6]
    assert await events(event_type="decided") == [0, 3, 6]
    assert await events(job_id=51, event_type=["detected", "decided"]) == [1, 3, 5]
    assert await events(
        since=(t0 + timedelta(minutes=2)).isoformat(), until=(t0 + timedelta(minutes=5)).isoformat()
    ) == [2, 3, 4]
    bad = await api.get("/api/v1/audit", headers=bearer(READ), params={"event_type": "nonsense"})
    assert bad.status_code == 422


@pytest.mark.parametrize(
    "body, field",
    [
        ({"job_id": 1, "kind": "job_ended", "line": "x"}, "kind"),  # Slurm's to say, not an outsider's
        ({"job_id": 0, "kind": "node_down", "node": "node2"}, "job_id"),
        ({"job_id": 1, "kind": "node_down", "node": "node2; scontrol update State=DRAIN"}, "node"),
        ({"job_id": 1, "kind": "log_line", "line": "Xid 79\n[rank0]: forged second line"}, "line"),
        ({"job_id": 1, "kind": "log_line", "line": "x" * 2001}, "line"),
        ({"job_id": 1, "kind": "kernel", "line": "NVRM: Xid (PCI:0000:3b:00): 79"}, "body"),  # which node?
        ({"job_id": 1, "kind": "node_down", "node": "node2", "shell": "rm -rf /"}, "shell"),
        ({"job_id": 1, "kind": "node_down", "node": "node2", "log_offset": -1}, "log_offset"),
        ({"job_id": 1, "kind": "node_down", "node": "node2", "occurred_at": "2026-11-30T05:00:00"}, "occurred_at"),
        ({"job_id": 1, "kind": "node_down", "node": "node2", "occurred_at": "2999-01-01T00:00:00Z"}, "body"),
    ],
)
async def test_hostile_detections_get_422_with_a_clear_message(api, body, field):
    answer = await api.post("/api/v1/detections", headers=bearer(WRITE), json=body)
    assert answer.status_code == 422
    problem = answer.json()["detail"][0]
    assert problem["loc"][-1] == field and problem["msg"]


async def test_a_detection_reaches_ingestion_with_the_callers_name(api, served):
    app = served[1]
    answer = await api.post(
        "/api/v1/detections", headers=bearer(WRITE), json={"job_id": 1, "kind": "node_down", "node": "node2"}
    )
    assert answer.status_code == 202 and answer.json()["incident_id"] == "incident-c1-1-0"
    report, who = app.state.ingest.delivered[-1]
    assert (report.kind.value, report.node, who) == ("node_down", "node2", "writer")
    missing = await api.post(
        "/api/v1/detections", headers=bearer(WRITE), json={"job_id": 9, "kind": "node_down", "node": "node2"}
    )
    assert missing.status_code == 404


def test_tokens_come_from_the_config_or_a_file_and_bad_ones_stop_start_up(tmp_path):
    secret = tmp_path / "controller.token"
    secret.write_text("from-a-file-0123456789\n")
    config = make_config(tmp_path)
    tokens = [{"name": "ctl", "token_file": str(secret), "scopes": ["read", "write"]}]
    app = create_app(config.model_copy(update={"server": ServerSettings(tokens=tokens)}))
    assert app.state.tokens.caller("from-a-file-0123456789").name == "ctl"
    assert app.state.tokens.caller("from-a-file-0123456789\n") is None

    secret.unlink()
    with pytest.raises(ConfigError, match="ctl: cannot read"):
        create_app(config.model_copy(update={"server": ServerSettings(tokens=tokens)}))
    for bad in (
        [{"name": "a", "token": "x" * 16, "token_file": "/f", "scopes": ["read"]}],  # which one?
        [{"name": "a", "token": "short", "scopes": ["read"]}],
        [{"name": "a", "token": "x" * 16, "scopes": ["admin"]}],
        [{"name": "a", "token": "x" * 16, "scopes": ["read"]}] * 2,
    ):
        with pytest.raises(ValidationError):
            ServerSettings(tokens=bad)


# --- The OpenAPI description, property-based: no server errors, every answer as described. ---


def _openapi_app():
    # Built at import: schemathesis reads the description when the tests are collected.
    config = make_config(Path(_OPENAPI_DIR.name))
    publish(config, 1, "incident-c1-1-0")  # so small job ids find advice, and reports reach the store
    app = create_app(config)
    app.state.ingest = FakeIngest()
    return app


_OPENAPI_DIR = tempfile.TemporaryDirectory(prefix="respawn-openapi-")
schema = schemathesis.openapi.from_asgi("/openapi.json", _openapi_app())


@schema.parametrize()
@settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
def test_openapi_property_based(case):
    case.call_and_validate(
        headers=bearer(WRITE),
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
