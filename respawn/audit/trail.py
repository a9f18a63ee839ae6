"""The audit trail: one row per event, durable and queryable (SQLite).

Every write carries a key that names the event exactly once (the incident id
and the step), so a replayed or retried activity adds no rows. WAL mode lets the
detector and the workers write from separate processes.
"""

import json
import sqlite3
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


class EventType(StrEnum):
    NOT_ENROLLED = "not_enrolled"
    ENROLLED = "enrolled"
    DETECTED = "detected"
    NOT_INTERRUPTED = "not_interrupted"  # a suspicion the attempt outlived, or an end its owner meant
    ATTRIBUTED = "attributed"
    DECIDED = "decided"  # the recommendation, recorded before anything is done
    HELD = "held"
    EXCLUDED = "excluded"
    RELEASED = "released"
    STOPPED = "stopped"
    ATTEMPT_STARTED = "attempt_started"
    RESUMED = "resumed"
    JOB_COMPLETED = "job_completed"
    JOB_ENDED = "job_ended"
    WATCH_ERROR = "watch_error"  # the detector could not read or match a job's output (once per kind of error)
    INCIDENT_CLOSED = "incident_closed"
    OVERRIDE = "override"  # an operator's command, with who and why
    DRAINED = "drained"
    SYSTEMIC = "systemic"  # the circuit breaker opened: too many nodes at once
    WATCHDOG_RELEASED = "watchdog_released"  # a hold that outlived its timeout, released unchanged
    ADVISED = "advised"  # advisor transport: advice published for the cluster's controller (respawn/advisor/advice.py)
    RECONCILED = "reconciled"  # advisor transport: a controller converged or abandoned it (or none did in time)


class AuditEvent(BaseModel):
    key: str  # names the event exactly once; a second write with it is ignored
    event_type: EventType
    cluster: str
    job_id: int
    attempt: int | None = None
    incident_id: str | None = None
    failure_class: str | None = None
    pattern: str | None = None
    cause_layer: str | None = None
    nodes: list[str] = Field(default_factory=list)
    action: str | None = None
    acted: bool | None = None  # True: done on the scheduler; False: recommended only
    details: dict[str, Any] = Field(default_factory=dict)
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))


class AuditRow(AuditEvent):
    id: int


def incident_event(event_type: EventType, *, incident_id: str, cluster: str, job_id: int, attempt: int | None,
                   **fields: Any) -> AuditEvent:
    """An incident's event, keyed by the incident and the step: written once, however often retried."""
    return AuditEvent(key=f"{incident_id}/{event_type.value}", event_type=event_type, cluster=cluster,
                      job_id=job_id, attempt=attempt, incident_id=incident_id, **fields)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL UNIQUE,
    at TEXT NOT NULL,
    cluster TEXT NOT NULL,
    job_id INTEGER NOT NULL,
    attempt INTEGER,
    incident_id TEXT,
    event_type TEXT NOT NULL,
    failure_class TEXT,
    pattern TEXT,
    cause_layer TEXT,
    nodes TEXT NOT NULL,
    action TEXT,
    acted INTEGER,
    details TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_job ON events (cluster, job_id, id);
CREATE INDEX IF NOT EXISTS events_type ON events (event_type, id);
CREATE INDEX IF NOT EXISTS events_incident ON events (incident_id, id);
"""

_COLUMNS = (
    "id, key, at, cluster, job_id, attempt, incident_id, event_type, failure_class,"
    " pattern, cause_layer, nodes, action, acted, details"
)


class AuditTrail:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def record(self, event: AuditEvent) -> bool:
        """Write the event; False when an event with its key was already there."""
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO events (key, at, cluster, job_id, attempt, incident_id, event_type,"
            " failure_class, pattern, cause_layer, nodes, action, acted, details)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                event.key,
                event.at.astimezone(UTC).isoformat(),
                event.cluster,
                event.job_id,
                event.attempt,
                event.incident_id,
                event.event_type.value,
                event.failure_class,
                event.pattern,
                event.cause_layer,
                ",".join(event.nodes),
                event.action,
                None if event.acted is None else int(event.acted),
                json.dumps(event.details, default=str, sort_keys=True),
            ),
        )
        return cursor.rowcount == 1

    def query(
        self,
        *,
        cluster: str | None = None,
        job_id: int | None = None,
        incident_id: str | None = None,
        event_types: list[EventType] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        after_id: int = 0,
        limit: int = 1000,
    ) -> list[AuditRow]:
        """Events in the order they were written; page with `after_id` (a cursor)."""
        where, args = ["id > ?"], [after_id]
        if cluster is not None:
            where.append("cluster = ?")
            args.append(cluster)
        if job_id is not None:
            where.append("job_id = ?")
            args.append(job_id)
        if incident_id is not None:
            where.append("incident_id = ?")
            args.append(incident_id)
        if event_types:
            where.append(f"event_type IN ({','.join('?' * len(event_types))})")
            args.extend(t.value for t in event_types)
        if since is not None:
            where.append("at >= ?")
            args.append(since.astimezone(UTC).isoformat())
        if until is not None:
            where.append("at < ?")
            args.append(until.astimezone(UTC).isoformat())
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM events WHERE {' AND '.join(where)} ORDER BY id LIMIT ?",
            (*args, limit),
        ).fetchall()
        return [_row(r) for r in rows]


def _row(r: tuple) -> AuditRow:
    return AuditRow(
        id=r[0],
        key=r[1],
        at=datetime.fromisoformat(r[2]),
        cluster=r[3],
        job_id=r[4],
        attempt=r[5],
        incident_id=r[6],
        event_type=EventType(r[7]),
        failure_class=r[8],
        pattern=r[9],
        cause_layer=r[10],
        nodes=[n for n in r[11].split(",") if n],
        action=r[12],
        acted=None if r[13] is None else bool(r[13]),
        details=json.loads(r[14]),
    )
