"""The console's JSON API without the sandbox: a temporary audit trail with thousands of
synthetic jobs, Slurm faked, the real server app (auth included) over ASGI."""

import sqlite3
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from respawn.audit.trail import AuditEvent, AuditTrail, EventType, incident_event
from respawn.config.cluster import ClusterConfig
from respawn.scheduler.errors import SchedulerUnavailable
from respawn.scheduler.slurm import JobInfo
from respawn.surfaces import console
from respawn.surfaces.console.view import ConsoleView
from respawn.surfaces.override import OverrideError
from respawn.surfaces.server.app import create_app

READ = "console-test-read-token"
WRITE = "console-test-write-token"
CLUSTER = "c1"
FIRST, JOBS = 300_000, 3000  # jobs FIRST .. FIRST+JOBS-1 are in the audit trail (FIRST % 12 == 0)
UNSEEN = [900_001, 900_002]  # Slurm lists them; the detector has not seen them
T0 = datetime(2026, 11, 30, 3, 0, tzinfo=UTC)


def _enrolment(job_id: int) -> tuple[bool, str]:
    """Every third job is not enrolled; the others alternate between environments."""
    if job_id % 3 == 0:
        return False, "no comment"
    return True, "demo" if job_id % 2 == 0 else "prod"


def _incident(
    audit: AuditTrail,
    job_id: int,
    attempt: int,
    *,
    closed: bool,
    at: datetime,
    environment: str = "demo",
    kind: str = "log_line",
    failure_class: str = "gpu_hardware",
) -> str:
    iid = f"incident-{CLUSTER}-{job_id}-{attempt}" + ("-slowdown" if kind == "slowdown" else "")
    common = dict(incident_id=iid, cluster=CLUSTER, job_id=job_id, attempt=attempt)
    audit.record(
        incident_event(
            EventType.DETECTED,
            at=at,
            **common,
            details={"kind": kind, "line": "NVRM: Xid 79", "environment": environment, "mode": "action"},
        )
    )
    audit.record(
        incident_event(
            EventType.DECIDED,
            at=at + timedelta(seconds=1),
            failure_class=failure_class,
            nodes=["node2"],
            action="restart_excluding",
            acted=True,
            **common,
            details={"reason": "GPU fell off the bus", "exclude": ["node2"]},
        )
    )
    if closed:
        audit.record(
            incident_event(
                EventType.EXCLUDED,
                at=at + timedelta(seconds=2),
                nodes=["node2"],
                action="update_excluded_nodes",
                acted=True,
                **common,
                details={"reason": "GPU fell off the bus"},
            )
        )
        audit.record(
            incident_event(
                EventType.INCIDENT_CLOSED,
                at=at + timedelta(seconds=3),
                failure_class=failure_class,
                action="restart_excluding",
                acted=True,
                **common,
                details={"phase": "resumed", "reason": "GPU fell off the bus"},
            )
        )
    return iid


@pytest.fixture(scope="module")
def audit_db(tmp_path_factory) -> Path:
    """3000 jobs; every 10th enrolled one had an incident (closed), every 50th has one open."""
    path = tmp_path_factory.mktemp("console") / "audit.db"
    audit = AuditTrail(path)
    for n in range(JOBS):
        job_id, at = FIRST + n, T0 + timedelta(seconds=n)
        enrolled, what = _enrolment(job_id)
        if enrolled:
            audit.record(
                AuditEvent(
                    key=f"{CLUSTER}/{job_id}/enrolled",
                    event_type=EventType.ENROLLED,
                    cluster=CLUSTER,
                    job_id=job_id,
                    at=at,
                    details={"environment": what, "mode": "action", "note": ""},
                )
            )
        else:
            audit.record(
                AuditEvent(
                    key=f"{CLUSTER}/{job_id}/not_enrolled",
                    event_type=EventType.NOT_ENROLLED,
                    cluster=CLUSTER,
                    job_id=job_id,
                    at=at,
                    details={"reason": what},
                )
            )
        if enrolled and n % 10 == 0:
            _incident(audit, job_id, 0, closed=n % 50 != 0, at=at)
    # Another cluster's rows in the same file are not this console's business.
    audit.record(
        AuditEvent(
            key="other/1/enrolled",
            event_type=EventType.ENROLLED,
            cluster="other",
            job_id=1,
            details={"environment": "demo", "mode": "action"},
        )
    )
    audit.close()
    return path


class FakeSlurm:
    def __init__(self, jobs: list[JobInfo]) -> None:
        self.listing, self.calls, self.down = jobs, 0, False
        self.job_reads: list[int] = []

    async def jobs(self) -> list[JobInfo]:
        self.calls += 1
        if self.down:
            raise SchedulerUnavailable("squeue --json: Unable to contact slurm controller")
        return self.listing

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        self.job_reads.append(job_id)
        (job,) = [j for j in self.listing if j.job_id == job_id]
        return job.model_copy(update={"excluded_nodes": ["node2"]})


def _slurm_jobs() -> list[JobInfo]:
    """Jobs with an id divisible by 4 are gone from Slurm; of the others, even ones run."""
    jobs = [
        JobInfo(
            job_id=FIRST + n,
            name=f"llama-finetune-{n}" if n % 100 == 1 else f"train-{n}",
            user="alice",
            state="RUNNING" if (FIRST + n) % 2 == 0 else "PENDING",
            nodes=["node1", "node3"],
        )
        for n in range(JOBS)
        if (FIRST + n) % 4
    ]
    return jobs + [JobInfo(job_id=j, name="fresh", state="PENDING") for j in UNSEEN]


def _config(tmp_path: Path, audit_db: Path) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": CLUSTER,
            "environments": {
                "demo": {"max_mode": "action"},
                "prod": {},
                "gated": {"max_mode": "action", "approval": {"timeout_s": 600}},
            },
            "logs": {"job_output": str(tmp_path / "{job_id}.out")},
            "audit_db": str(audit_db),
            "temporal": {"address": "127.0.0.1:1", "ui_url": "http://temporal.example:8233/"},
            "server": {
                "tokens": [
                    {"name": "reader", "token": READ, "scopes": ["read"]},
                    {"name": "writer", "token": WRITE, "scopes": ["read", "write"]},
                ]
            },
        }
    )


@pytest.fixture
def setup(tmp_path, audit_db):
    """A fresh copy of the trail per test (some tests add rows), the app, its view and fake Slurm."""
    db = tmp_path / "audit.db"
    with closing(sqlite3.connect(audit_db)) as source:
        source.execute("VACUUM INTO ?", (str(db),))  # a consistent copy, WAL included
    config = _config(tmp_path, db)
    slurm = FakeSlurm(_slurm_jobs())
    audit = AuditTrail(db)
    view = ConsoleView(config, slurm, audit)
    app = create_app(config)
    app.dependency_overrides[console.api.console_view] = lambda: view
    yield app, view, slurm, audit
    audit.close()


@pytest.fixture
async def client(setup):
    app = setup[0]
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://console.test",
        headers={"Authorization": f"Bearer {READ}"},
    ) as c:
        yield c


async def _all_pages(client: httpx.AsyncClient, path: str, **params) -> list[dict]:
    items, cursor = [], None
    while True:
        got = await client.get(path, params={**params, **({"cursor": cursor} if cursor else {})})
        assert got.status_code == 200, got.text
        page = got.json()
        items += page["items"]
        cursor = page["next_cursor"]
        if cursor is None:
            return items


# --- paging and filtering ----------------------------------------------------------------------


async def test_jobs_page_through_thousands_newest_first_without_gaps_or_repeats(client):
    first = (await client.get("/console/api/jobs", params={"limit": 100})).json()
    assert first["total"] == JOBS + len(UNSEEN) and len(first["items"]) == 100
    everything = await _all_pages(client, "/console/api/jobs", limit=500)
    ids = [j["job_id"] for j in everything]
    assert ids == sorted(set(ids), reverse=True)
    assert set(ids) == set(range(FIRST, FIRST + JOBS)) | set(UNSEEN)


async def test_job_rows_join_slurm_and_the_audit_trail(client):
    rows = {j["job_id"]: j for j in await _all_pages(client, "/console/api/jobs", limit=500)}
    live = rows[FIRST + 2]  # enrolled (demo), running, no incident
    assert (live["state"], live["live"], live["enrolled"], live["environment"], live["name"]) == (
        "RUNNING",
        True,
        True,
        "demo",
        "train-2",
    )
    gone = rows[FIRST + 4]  # Slurm forgot it: state unknown, but still listed from the trail
    assert gone["live"] is False and gone["enrolled"] is True and gone["state"] is None
    turned_away = rows[FIRST + 3]
    assert turned_away["enrolled"] is False and turned_away["reason"] == "no comment"
    unseen = rows[UNSEEN[0]]
    assert unseen["enrolled"] is None and unseen["reason"] == "not seen by the detector yet"
    open_incident = rows[FIRST + 50]
    assert open_incident["flags"] == ["incident"]
    assert open_incident["open_incidents"] == [f"incident-{CLUSTER}-{FIRST + 50}-0"]
    assert rows[FIRST + 10]["flags"] == [] and rows[FIRST + 10]["incidents"] == 1  # closed


@pytest.mark.parametrize(
    "params, expected",
    [
        ({"state": "running"}, lambda j: j["state"] == "RUNNING"),
        ({"state": "RUNNING,PENDING"}, lambda j: j["state"] in ("RUNNING", "PENDING")),
        ({"enrolled": "false"}, lambda j: j["enrolled"] is False),
        ({"enrolled": "true", "environment": "prod"}, lambda j: j["enrolled"] and j["environment"] == "prod"),
        ({"q": "llama"}, lambda j: "llama" in j["name"]),
        ({"q": "1002"}, lambda j: "1002" in str(j["job_id"])),
        ({"attention": "true"}, lambda j: j["flags"] != []),
        ({"state": "RUNNING", "attention": "true"}, lambda j: j["state"] == "RUNNING" and j["flags"]),
    ],
)
async def test_job_filters_select_exactly_the_matching_jobs(client, params, expected):
    everything = await _all_pages(client, "/console/api/jobs", limit=500)
    wanted = [j["job_id"] for j in everything if expected(j)]
    got = await _all_pages(client, "/console/api/jobs", limit=137, **params)
    assert [j["job_id"] for j in got] == wanted and wanted
    page = (await client.get("/console/api/jobs", params={**params, "limit": 5})).json()
    assert page["total"] == len(wanted)


async def test_bad_paging_or_filter_parameters_are_refused_with_422(client):
    for params in ({"limit": 0}, {"limit": 501}, {"cursor": "abc"}, {"enrolled": "perhaps"}, {"q": "x" * 101}):
        got = await client.get("/console/api/jobs", params=params)
        assert got.status_code == 422, params


async def test_slurm_is_asked_once_however_many_viewers_poll(setup, client):
    _, _, slurm, _ = setup
    for _ in range(5):
        assert (await client.get("/console/api/jobs")).status_code == 200
    assert slurm.calls == 1


async def test_a_jobs_page_reads_its_exclusions_where_the_listing_does_not_say_them(setup, client):
    # 22.05's text listing has no excluded nodes (None): the job's page reads the job itself,
    # once for every viewer polling it within the listing's age.
    _, _, slurm, _ = setup
    job_id = FIRST + 10  # running, in the trail
    slurm.listing = [j.model_copy(update={"excluded_nodes": None}) if j.job_id == job_id else j for j in slurm.listing]
    for _ in range(3):
        got = (await client.get(f"/console/api/jobs/{job_id}/timeline")).json()
        assert got["job"]["excluded_nodes"] == ["node2"]
    assert slurm.job_reads == [job_id]
    listed = (await client.get("/console/api/jobs", params={"q": str(job_id)})).json()["items"]
    assert [j["excluded_nodes"] for j in listed if j["job_id"] == job_id] == [None]  # the list says what it knows


async def test_incidents_open_and_closed_newest_first_with_temporal_links(client):
    open_ = await _all_pages(client, "/console/api/incidents", open="true", limit=7)
    enrolled_every_50th = [FIRST + n for n in range(0, JOBS, 50) if _enrolment(FIRST + n)[0]]
    assert [i["job_id"] for i in open_] == sorted(enrolled_every_50th, reverse=True)
    assert all(i["open"] and i["phase"] == "open" for i in open_)
    closed = await _all_pages(client, "/console/api/incidents", open="false", limit=100)
    assert closed and all(not i["open"] and i["phase"] == "resumed" for i in closed)
    assert [i["opened"] for i in closed] == sorted((i["opened"] for i in closed), reverse=True)
    one = closed[0]
    assert one["temporal_url"] == f"http://temporal.example:8233/namespaces/default/workflows/{one['incident_id']}"
    assert one["exclude"] == ["node2"] and one["acted"] is True
    of_job = (await client.get("/console/api/incidents", params={"job": one["job_id"]})).json()
    assert [i["incident_id"] for i in of_job["items"]] == [one["incident_id"]]


# --- the timeline ------------------------------------------------------------------------------


async def test_timeline_lists_every_event_of_the_job_in_the_order_written(setup, client):
    _, _, _, audit = setup
    job_id = FIRST + 10  # enrolled; a closed incident at attempt 0
    later = _incident(audit, job_id, 1, closed=False, at=T0 + timedelta(hours=1))
    got = (await client.get(f"/console/api/jobs/{job_id}/timeline")).json()
    assert [e["event"] for e in got["events"]] == [
        "enrolled",
        "detected",
        "decided",
        "excluded",
        "incident_closed",
        "detected",
        "decided",
    ]
    ids = [e["id"] for e in got["events"]]
    assert ids == sorted(ids)
    excluded = next(e for e in got["events"] if e["event"] == "excluded")
    assert excluded["nodes"] == ["node2"] and excluded["summary"] == "GPU fell off the bus"
    assert [i["incident_id"] for i in got["incidents"]] == [later, f"incident-{CLUSTER}-{job_id}-0"]
    assert got["job"]["flags"] == ["incident"] and got["next_cursor"] is None

    first = (await client.get(f"/console/api/jobs/{job_id}/timeline", params={"limit": 3})).json()
    assert [e["id"] for e in first["events"]] == ids[:3] and first["next_cursor"] == str(ids[2])
    rest = (await client.get(f"/console/api/jobs/{job_id}/timeline", params={"after": ids[2]})).json()
    assert [e["id"] for e in rest["events"]] == ids[3:]


async def test_timeline_of_an_unknown_job_is_404_and_a_bad_job_id_422(client):
    assert (await client.get("/console/api/jobs/999/timeline")).status_code == 404
    assert (await client.get("/console/api/jobs/0/timeline")).status_code == 422
    assert (await client.get("/console/api/jobs/abc/timeline")).status_code == 422


async def test_new_events_show_on_the_next_poll(setup, client):
    _, _, _, audit = setup
    job_id = FIRST + 20
    before = (await client.get("/console/api/overview")).json()["open_incidents"]
    _incident(audit, job_id, 1, closed=False, at=T0 + timedelta(hours=2))
    after = (await client.get("/console/api/overview")).json()
    assert after["open_incidents"] == before + 1
    assert (await client.get("/console/api/jobs", params={"q": str(job_id)})).json()["items"][0]["flags"] == [
        "incident"
    ]


async def test_anomaly_flags_hang_slowdown_and_approval_follow_the_current_attempt(setup, client):
    _, _, slurm, audit = setup
    running = FIRST + 2  # enrolled (demo), RUNNING at restart count 0
    _incident(audit, running, 0, closed=True, kind="slowdown", failure_class="slowdown", at=T0)
    gated = FIRST + 8  # enrolled, Slurm has forgotten it; its incident waits for an operator
    audit.record(
        AuditEvent(
            key=f"{CLUSTER}/{gated}/enrolled-gated",
            event_type=EventType.ENROLLED,
            cluster=CLUSTER,
            job_id=gated,
            details={"environment": "gated", "mode": "action"},
        )
    )
    _incident(audit, gated, 0, closed=False, environment="gated", at=T0)
    rows = {j["job_id"]: j for j in await _all_pages(client, "/console/api/jobs", attention="true", limit=500)}
    assert rows[running]["flags"] == ["slowdown"]
    assert rows[gated]["flags"] == ["approval", "incident"]
    incident = (await client.get("/console/api/incidents", params={"job": gated})).json()["items"][0]
    assert incident["awaiting_approval"] is True

    # Restarted (attempt 1): the slowdown was the old attempt's.
    slurm.listing = [j.model_copy(update={"restart_count": 1}) if j.job_id == running else j for j in slurm.listing]
    view = setup[1]
    view._slurm_read = float("-inf")  # as if SLURM_MAX_AGE_S had passed
    row = (await client.get("/console/api/jobs", params={"q": str(running)})).json()["items"][0]
    assert row["attempt"] == 1 and row["flags"] == []


async def test_with_slurm_unreachable_jobs_are_still_listed_and_the_overview_says_why(setup, client):
    _, _, slurm, _ = setup
    slurm.down = True
    overview = (await client.get("/console/api/overview")).json()
    assert overview["slurm"]["ok"] is False and "slurm controller" in overview["slurm"]["error"]
    assert overview["jobs"] == JOBS and overview["cluster"] == CLUSTER
    assert overview["environments"] == ["demo", "gated", "prod"]


# --- auth -----------------------------------------------------------------------------------


async def test_the_api_wants_a_token_and_overrides_want_the_write_scope(setup):
    app = setup[0]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console.test") as c:
        for path in (
            "/console/api/overview",
            "/console/api/jobs",
            "/console/api/incidents",
            f"/console/api/jobs/{FIRST}/timeline",
        ):
            bare = await c.get(path)
            assert bare.status_code == 401 and bare.headers["www-authenticate"] == "Bearer", path
            assert (await c.get(path, headers={"Authorization": "Bearer not-a-known-token-at-all"})).status_code == 401
        body = {"action": "stop", "reason": "testing"}
        assert (await c.post(f"/console/api/jobs/{FIRST}/override", json=body)).status_code == 401
        read = await c.post(
            f"/console/api/jobs/{FIRST}/override", json=body, headers={"Authorization": f"Bearer {READ}"}
        )
        assert read.status_code == 403 and "write" in read.json()["detail"]


async def test_the_page_and_its_assets_load_without_a_token_and_nothing_external(setup):
    app = setup[0]
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console.test") as c:
        page = await c.get("/console")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        for asset, kind in (("console.js", "text/javascript"), ("console.css", "text/css")):
            got = await c.get(f"/console/{asset}")
            assert got.status_code == 200 and got.headers["content-type"].startswith(kind)
            # Nothing from elsewhere. The SVG namespace is a name the DOM needs to make SVG
            # elements (createElementNS), never fetched.
            text = got.text.replace('"http://www.w3.org/2000/svg"', "")
            assert "http://" not in text and "https://" not in text
        assert "http" not in page.text.replace('charset="utf-8"', "")
        assert (await c.get("/console/secrets.txt")).status_code == 404
        schema = (await c.get("/openapi.json")).json()
        assert not [p for p in schema["paths"] if p.startswith("/console")]


# --- overrides -----------------------------------------------------------------------------


@pytest.fixture
def sent(monkeypatch):
    """What reached the override path (respawn.surfaces.override.send_override), and what it answers."""
    calls = []

    async def fake(config, job_id, override, incident=None):
        calls.append((job_id, override, incident))
        if override.reason == "refuse":
            raise OverrideError(f"job {job_id}'s last incident incident-x is closed (completed)")
        return f"{override.action.value}: will do"

    monkeypatch.setattr(console.api, "send_override", fake)
    return calls


@pytest.mark.parametrize(
    "body, message",
    [
        ({"action": "stop", "reason": "x", "exclude": ["node2"]}, "nodes can only be excluded with a restart"),
        ({"action": "restart", "reason": "x", "exclude": ["node2; rm -rf /"]}, "exclude.0"),
        ({"action": "stop", "reason": "   "}, "reason"),
        ({"action": "reboot", "reason": "x"}, "action"),
        ({"action": "stop", "reason": "x", "who": "someone-else"}, "who"),
        ({"action": "stop", "reason": "x", "incident": f"incident-{CLUSTER}-{FIRST + 20}-0"}, "not an incident of job"),
        ({"action": "stop"}, "reason"),
    ],
)
async def test_override_validation_errors_are_422_with_the_reason(setup, client, sent, body, message):
    got = await client.post(
        f"/console/api/jobs/{FIRST + 10}/override", json=body, headers={"Authorization": f"Bearer {WRITE}"}
    )
    assert got.status_code == 422
    assert message in str(got.json()["detail"])
    assert sent == []


async def test_override_goes_down_the_cli_path_signed_with_the_token_name(client, sent):
    iid = f"incident-{CLUSTER}-{FIRST + 10}-0"
    got = await client.post(
        f"/console/api/jobs/{FIRST + 10}/override",
        json={"action": "restart", "reason": "node2 again", "exclude": ["node2"], "incident": iid},
        headers={"Authorization": f"Bearer {WRITE}"},
    )
    assert got.status_code == 200, got.text
    assert got.json() == {"job_id": FIRST + 10, "incident": iid, "who": "writer", "answer": "restart: will do"}
    [(job_id, override, incident)] = sent
    assert (job_id, incident, override.who, override.exclude) == (FIRST + 10, iid, "writer", ["node2"])


async def test_an_override_the_incident_refuses_is_409_with_its_words(client, sent):
    got = await client.post(
        f"/console/api/jobs/{FIRST + 10}/override",
        json={"action": "stop", "reason": "refuse"},
        headers={"Authorization": f"Bearer {WRITE}"},
    )
    assert got.status_code == 409 and "is closed" in got.json()["detail"]


async def test_override_with_temporal_unreachable_is_409_not_a_crash(client):
    # The real override path against a Temporal that is not there (127.0.0.1:1).
    got = await client.post(
        f"/console/api/jobs/{FIRST + 10}/override",
        json={"action": "stop", "reason": "x"},
        headers={"Authorization": f"Bearer {WRITE}"},
    )
    assert got.status_code == 409 and "cannot reach Temporal" in got.json()["detail"]
