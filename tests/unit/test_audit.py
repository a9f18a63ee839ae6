from datetime import UTC, datetime, timedelta

from respawn.audit.trail import AuditEvent, AuditTrail, EventType


def event(key: str, event_type=EventType.DETECTED, job_id=7, **kw) -> AuditEvent:
    return AuditEvent(key=key, event_type=event_type, cluster="c1", job_id=job_id, **kw)


def test_writes_are_idempotent_by_key(tmp_path):
    audit = AuditTrail(tmp_path / "a.db")
    assert audit.record(event("i1/detected", nodes=["n2"], details={"line": "x"}))
    assert not audit.record(event("i1/detected", nodes=["n3"]))
    rows = audit.query(job_id=7)
    assert len(rows) == 1 and rows[0].nodes == ["n2"] and rows[0].details == {"line": "x"}


def test_query_filters_and_pages_in_write_order(tmp_path):
    audit = AuditTrail(tmp_path / "a.db")
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


def test_survives_reopen(tmp_path):
    AuditTrail(tmp_path / "a.db").record(event("k"))
    assert len(AuditTrail(tmp_path / "a.db").query()) == 1
