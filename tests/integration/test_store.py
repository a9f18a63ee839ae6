"""The audit trail and the advice store on both databases (respawn/store): SQLite files and
Debian's PostgreSQL (the session's own server, tests/conftest.py), with several writers at
once, and SQLite files of the release before the migrations."""

import asyncio
import logging
import shutil
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from respawn.advisor.advice import (
    AdviceRequest,
    AdviceStore,
    AlreadyFinal,
    Desired,
    StaleGeneration,
    Status,
    UnknownAdvice,
)
from respawn.audit.trail import AuditEvent, AuditTrail, EventType
from respawn.config.cluster import ClusterConfig
from respawn.sandbox import postgres
from respawn.services import wait_for_services
from respawn.store import engine, schema
from respawn.store.engine import VERSION_TABLE, Location, NewerSchema, open_engine, read_only_engine, version
from respawn.store.engine import _migrated as migrated
from respawn.surfaces.check import audit_verdict

OLD_FILES = Path(__file__).parent.parent / "data" / "store"
T = TypeVar("T")


def event(key: str, event_type=EventType.DETECTED, job_id=7, **kw) -> AuditEvent:
    return AuditEvent(key=key, event_type=event_type, cluster="c1", job_id=job_id, **kw)


def request(incident: str, job_id: int = 7, desired: Desired = Desired.RESTART, **kw) -> AdviceRequest:
    return AdviceRequest(incident_id=incident, cluster="c1", job_id=job_id, attempt=0, desired=desired, **kw)


# --- The trail --------------------------------------------------------------------------------------


def test_writes_are_idempotent_by_key(store_location):
    audit = AuditTrail(store_location)
    assert audit.record(event("i1/detected", nodes=["n2"], details={"line": "x"}))
    assert not audit.record(event("i1/detected", nodes=["n3"]))
    rows = audit.query(job_id=7)
    assert len(rows) == 1 and rows[0].nodes == ["n2"] and rows[0].details == {"line": "x"}
    audit.close()


def test_query_filters_and_pages_in_write_order(store_location):
    audit = AuditTrail(store_location)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for i in range(5):
        audit.record(
            event(
                f"k{i}",
                EventType.DECIDED if i % 2 else EventType.DETECTED,
                job_id=7 + (i == 4),
                at=t0 + timedelta(seconds=i),
                acted=bool(i % 2),
            )
        )
    assert [r.key for r in audit.query(job_id=7)] == ["k0", "k1", "k2", "k3"]
    assert [r.key for r in audit.query(event_types=[EventType.DECIDED])] == ["k1", "k3"]
    page = audit.query(limit=2)
    assert [r.key for r in audit.query(after_id=page[-1].id, limit=2)] == ["k2", "k3"]
    assert [r.key for r in audit.query(since=t0 + timedelta(seconds=1), until=t0 + timedelta(seconds=3))] == [
        "k1",
        "k2",
    ]
    assert audit.query(event_types=[EventType.DECIDED])[0].acted is True
    # Times come back as written, in UTC, whatever the zone they were given in.
    assert audit.query(limit=1)[0].at == t0
    audit.close()


def test_the_decisions_that_named_nodes_are_read_lean_and_an_arrays_events_by_its_id(store_location):
    audit = AuditTrail(store_location)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    decided = [("i1", ["n1", "n2"], 3), ("i2", [], 3), ("i3", ["n3"], None), ("i4", ["n4"], 4)]
    for second, (incident, nodes, array) in enumerate(decided):
        details = {} if array is None else {"array_job_id": array}
        audit.record(
            event(
                f"{incident}/decided",
                EventType.DECIDED,
                incident_id=incident,
                at=t0 + timedelta(seconds=second),
                nodes=nodes,
                details=details,
            )
        )
    audit.record(event("i5/enrolled", EventType.ENROLLED, at=t0, nodes=["n5"], details={"array_job_id": 3}))
    audit.record(
        AuditEvent(key="i6/decided", event_type=EventType.DECIDED, cluster="c2", job_id=7, at=t0, nodes=["n6"])
    )

    assert audit.implicated(cluster="c1", since=t0 + timedelta(seconds=1)) == [
        ("i3", t0 + timedelta(seconds=2), ["n3"]),
        ("i4", t0 + timedelta(seconds=3), ["n4"]),
    ]
    assert [r.incident_id for r in audit.implicated(cluster="c1", since=t0)] == ["i1", "i3", "i4"]
    assert [r.key for r in audit.query(array_job_id=3)] == ["i1/decided", "i2/decided", "i5/enrolled"]
    assert [r.key for r in audit.query(array_job_id=3, event_types=[EventType.DECIDED], limit=1)] == ["i1/decided"]
    audit.close()


def test_survives_reopen(store_location):
    AuditTrail(store_location).record(event("k"))
    assert len(AuditTrail(store_location).query()) == 1


# --- The advice -------------------------------------------------------------------------------------


def test_generations_rise_per_job_and_a_publish_again_returns_the_first(store_location):
    with closing(AdviceStore(store_location)) as store:
        first = store.publish(request("i1", exclude=["n1"], drain=["n1"], reason="xid 79"))
        assert (first.generation, first.exclude, first.drain, first.status) == (1, ["n1"], ["n1"], Status.PUBLISHED)
        assert store.publish(request("i1", desired=Desired.STOP)) == first
        assert store.publish(request("i2", desired=Desired.STOP)).generation == 2
        assert store.publish(request("i3", job_id=8)).generation == 1
        assert store.current("c1", 7).incident_id == "i2"
        assert store.get("c1", 7, 1) == first
        assert store.get("c1", 7, 3) is None


def test_reports_only_on_the_current_generation_and_a_final_one_stays(store_location):
    with closing(AdviceStore(store_location)) as store:
        store.publish(request("i1"))
        store.publish(request("i2"))
        with pytest.raises(StaleGeneration):
            store.report("c1", 7, 1, Status.PENDING, "", "ctl")
        with pytest.raises(UnknownAdvice):
            store.report("c1", 7, 3, Status.PENDING, "", "ctl")
        pending = store.report("c1", 7, 2, Status.PENDING, "requeued", "ctl")
        assert store.current("c1", 7) == pending and pending.controller == "ctl" and pending.status_at is not None
        done = store.report("c1", 7, 2, Status.CONVERGED, "released", "ctl")
        assert store.report("c1", 7, 2, Status.CONVERGED, "again", "other") == done
        with pytest.raises(AlreadyFinal):
            store.report("c1", 7, 2, Status.ABANDONED, "", "ctl")


def test_the_listing_is_each_jobs_current_advice_paged_by_job(store_location):
    with closing(AdviceStore(store_location)) as store:
        for job in (9, 7, 8):
            store.publish(request(f"i{job}", job_id=job))
        store.publish(request("i7b", job_id=7))
        store.report("c1", 8, 1, Status.CONVERGED, "", "ctl")
        assert [(a.job_id, a.generation) for a in store.listing("c1")] == [(7, 2), (8, 1), (9, 1)]
        assert [a.job_id for a in store.listing("c1", open_only=True)] == [7, 9]
        assert [a.job_id for a in store.listing("c1", after_job=7, limit=1)] == [8]
        assert store.listing("c2") == []


# --- Several writers: hosts sharing one store ---------------------------------------------------------


def _together(writers: int, work: Callable[[int], T]) -> list[T]:
    """`work(i)` for each writer at once, each released by the same barrier."""
    barrier = threading.Barrier(writers)
    results: list[T | None] = [None] * writers
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    return [r for r in results if r is not None]


def test_two_writers_record_each_action_once_and_ids_follow_the_write_order(store_location):
    # Each writer is a host of its own: its own engine and connections.
    trails = [AuditTrail(store_location) for _ in range(2)]
    keys = [f"incident-c1-{job}-s1-0/held" for job in range(200)]
    written = _together(2, lambda i: [trails[i].record(event(k, EventType.HELD, acted=True)) for k in keys])
    # Every key written by exactly one of them, whichever won.
    assert [a + b for a, b in zip(*written, strict=True)] == [1] * len(keys)
    rows = trails[0].query(limit=1000)
    assert sorted(r.key for r in rows) == sorted(keys)
    # A reader that follows by id, polling as they write, misses none of them.
    for t in trails:
        t.close()


def test_a_reader_following_by_id_misses_no_row_of_concurrent_writers(store_location):
    trails = [AuditTrail(store_location) for _ in range(3)]
    per_writer = 150
    seen: list[str] = []
    done = threading.Event()

    def follow() -> None:
        cursor = 0
        while True:
            finished = done.is_set()  # read before the query: a row written before it is then seen
            rows = trails[2].query(after_id=cursor, limit=50)
            seen.extend(r.key for r in rows)
            cursor = rows[-1].id if rows else cursor
            if finished and not rows:
                return

    reader = threading.Thread(target=follow)
    reader.start()
    _together(2, lambda i: [trails[i].record(event(f"w{i}/{n}")) for n in range(per_writer)])
    done.set()
    reader.join(timeout=120)
    assert sorted(seen) == sorted(f"w{i}/{n}" for i in range(2) for n in range(per_writer))
    for t in trails:
        t.close()


def test_two_publishers_of_one_incident_get_one_generation_and_of_two_incidents_two(store_location):
    stores = [AdviceStore(store_location) for _ in range(2)]
    same = _together(2, lambda i: stores[i].publish(request("i1")))
    assert same[0] == same[1] and same[0].generation == 1
    rounds = 20
    mine = _together(2, lambda i: [stores[i].publish(request(f"w{i}-{n}")).generation for n in range(rounds)])
    assert sorted(mine[0] + mine[1]) == list(range(2, 2 + 2 * rounds))
    for s in stores:
        s.close()


# --- One schema, migrated ---------------------------------------------------------------------------


def test_head_names_the_newest_migration():
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(Path(schema.__file__).parent / "migrations"))
    assert ScriptDirectory.from_config(config).get_heads() == [schema.HEAD]


def test_the_migrations_build_exactly_the_schema_the_code_uses(store_location):
    engine = open_engine(store_location)
    try:
        with engine.connect() as conn:
            assert version(conn) == schema.HEAD
            differences = compare_metadata(MigrationContext.configure(conn), schema.metadata)
    finally:
        engine.dispose()
    # alembic's own version table is not ours to describe
    assert [d for d in differences if not (d[0] == "remove_table" and d[1].name == "respawn_version")] == []


def test_a_new_file_opens_once_another_process_ends_its_write_and_the_open_retries(tmp_path, monkeypatch):
    """Processes starting together on a new SQLite file: one of them writing while another set
    the file's journal mode failed the second at once, "database is locked" (CI: the detector
    exited 2 while the worker migrated). The writer here ends its write at the open's first pause."""
    path = tmp_path / "new.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("CREATE TABLE theirs (x)")
    writer.execute("BEGIN IMMEDIATE")
    pauses: list[float] = []

    def write_ends(seconds: float) -> None:
        pauses.append(seconds)
        if writer.in_transaction:
            writer.execute("COMMIT")

    monkeypatch.setattr(engine, "sleep", write_ends)
    trail = AuditTrail(path)
    try:
        assert len(pauses) == 1
        with closing(sqlite3.connect(path)) as reader:
            assert reader.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert trail.record(event("i1/detected"))
    finally:
        trail.close()
        writer.close()


def test_a_write_that_outlasts_the_busy_timeout_is_said_as_locked(tmp_path, monkeypatch):
    path = tmp_path / "new.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("CREATE TABLE theirs (x)")
    writer.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(engine, "_BUSY_TIMEOUT_S", 0.0)
    try:
        with pytest.raises(sa.exc.OperationalError, match="database is locked"):
            open_engine(path)
    finally:
        writer.close()


@pytest.mark.parametrize("old", ["trail-and-advice.db", "trail-only.db"])
def test_a_file_of_the_release_before_the_migrations_opens_keeps_its_rows_and_is_migrated(tmp_path, old):
    path = tmp_path / old
    shutil.copy(OLD_FILES / old, path)
    before = audit_verdict(path)
    assert before.status.value == "pass" and "of an earlier release migrated at the first start" in before.why
    audit = AuditTrail(path)
    rows = audit.query()
    assert [(r.key, r.nodes, r.acted) for r in rows] == [
        ("enrol/7", [], None),
        ("incident-c1-7-s1-0/detected", ["node2", "node3"], None),
        ("incident-c1-7-s1-0/held", ["node2"], True),
    ]
    assert rows[1].details == {"kind": "crash", "line": "NCCL error"}
    assert rows[0].at == datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    # New rows go on after the old ones, and compare with them in time.
    assert audit.record(event("new", at=datetime(2026, 12, 1, tzinfo=UTC)))
    assert [r.key for r in audit.query(since=datetime(2026, 11, 30, 12, 0, 1, tzinfo=UTC))] == [
        "incident-c1-7-s1-0/detected",
        "incident-c1-7-s1-0/held",
        "new",
    ]
    assert audit.query(after_id=rows[-1].id)[0].key == "new"
    audit.close()
    with closing(AdviceStore(path)) as store:
        if old == "trail-and-advice.db":
            kept = store.current("c1", 8)
            assert kept is not None and (kept.status, kept.exclude, kept.controller) == (
                Status.CONVERGED,
                ["node4"],
                "ctl",
            )
            assert store.publish(request("i9", job_id=8)).generation == 2
        else:  # the table no release before had created is there now
            assert store.publish(request("i9", job_id=8)).generation == 1
    engine = read_only_engine(path)
    with engine.connect() as conn:
        assert version(conn) == schema.HEAD
    engine.dispose()
    assert "migrated" not in audit_verdict(path).why


def test_a_database_of_a_newer_release_is_refused_by_check(store_location: Location):
    engine = open_engine(store_location)
    with engine.begin() as conn:
        conn.execute(sa.update(sa.table(VERSION_TABLE, sa.column("version_num"))).values(version_num="9999"))
    engine.dispose()
    verdict = audit_verdict(store_location)
    assert verdict.status.value == "fail" and "schema 9999 is a newer release's" in verdict.why
    migrated.discard(engine.url.render_as_string(hide_password=False))  # as a process started now would
    with pytest.raises(NewerSchema, match="schema 9999 is a newer release's"):
        AuditTrail(store_location)


def test_check_reads_a_postgresql_store_without_showing_its_password(postgres_server):
    from pydantic import PostgresDsn

    from respawn.sandbox import postgres

    url = PostgresDsn(postgres.create_database(postgres_server, "test_check_password"))
    AuditTrail(url).record(event("k"))
    verdict = audit_verdict(url)
    password = postgres_server.password_file.read_text().strip()
    assert verdict.status.value == "pass" and "1 events" in verdict.why and password not in verdict.why
    assert "***" in verdict.why
    wrong = PostgresDsn(str(url).replace(password, "wrong"))
    refused = audit_verdict(wrong)
    assert refused.status.value == "fail" and "cannot be read" in refused.why and "wrong" not in refused.why


# --- The server itself (respawn/sandbox/postgres.py) --------------------------------------------------


def test_a_trail_open_across_a_database_restart_goes_on_and_the_rows_stay(postgres_server):
    from pydantic import PostgresDsn

    from respawn.sandbox import postgres

    trail = AuditTrail(PostgresDsn(postgres.create_database(postgres_server, "test_restart")))
    assert trail.record(event("before"))
    postgres.stop(postgres_server)
    assert not postgres.running(postgres_server)
    postgres.start(postgres_server)
    postgres.start(postgres_server)  # idempotent
    # The pooled connection died with the server: checked before use, replaced, nothing raised.
    assert trail.record(event("after"))
    assert [r.key for r in trail.query()] == ["before", "after"]
    trail.close()


def test_the_sandbox_configuration_names_the_labs_postgresql(tmp_path):
    from respawn.config.cluster import load_config
    from respawn.sandbox import postgres
    from respawn.sandbox.lab import Lab
    from respawn.sandbox.labconfig import write_lab_config

    lab = Lab(root=tmp_path)
    server = postgres.of_lab(lab)
    assert (server.folder, server.port) == (tmp_path / "postgres", 25432)
    url = "postgresql://respawn:pw@127.0.0.1:25432/respawn"
    assert str(load_config(write_lab_config(lab, audit_db=url)).audit_db) == url
    assert load_config(write_lab_config(lab)).audit_db == lab.audit_db


async def test_a_daemon_started_before_its_database_exists_opens_it_once_created(postgres_server, tmp_path, caplog):
    """A control plane brought up before its database is provisioned (or while PostgreSQL
    restarts) waits for it at the start, instead of exiting into a restart loop that gives up."""
    name = f"late_{uuid.uuid4().hex[:12]}"
    config = ClusterConfig.model_validate(
        {
            "cluster": "late",
            "environments": {"demo": {"max_mode": "observe"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": postgres_server.url(name),
        }
    )
    caplog.set_level(logging.WARNING, logger="respawn.services")
    waiting = asyncio.create_task(wait_for_services(config, asyncio.Event()))
    deadline = time.monotonic() + 20
    while f'database "{name}" does not exist' not in caplog.text:
        assert time.monotonic() < deadline and not waiting.done(), caplog.text
        await asyncio.sleep(0.05)
    postgres.create_database(postgres_server, name)
    services = await asyncio.wait_for(waiting, timeout=30)
    assert services is not None
    try:
        services.audit.record(event("late-1"))
        assert [e.key for e in services.audit.query(cluster="c1")] == ["late-1"]
    finally:
        await services.close()
