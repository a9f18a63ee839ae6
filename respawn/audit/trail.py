"""The audit trail: one row per event, durable and queryable (SQLite or PostgreSQL).

Every write carries a key that names the event exactly once (the incident id
and the step), so a replayed or retried activity adds no rows, from however many
processes and hosts write it (respawn/store: one schema for both databases).
"""

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple, TypeVar

import sqlalchemy as sa
from pydantic import BaseModel, Field, model_validator

from respawn.audit.details import (
    AdvisedDetails,
    AttemptStartedDetails,
    AttributedDetails,
    DecidedDetails,
    DetectedDetails,
    EnrolledDetails,
    EventDetails,
    IncidentClosedDetails,
    JobEndDetails,
    NotEnrolledDetails,
    NotInterruptedDetails,
    OverrideDetails,
    ReconciledDetails,
    RelaunchedDetails,
    ResumedDetails,
    RungFailedDetails,
    SchedulerActDetails,
    StoppedDetails,
    SystemicDetails,
    WatchdogReleasedDetails,
    WatchErrorDetails,
)
from respawn.store.engine import Location, insert_ignoring, open_engine, serialise
from respawn.store.schema import events


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
    MARKED_DOWN = "marked_down"  # a node whose slurmd was silent to two probes, called DOWN by Respawn
    SYSTEMIC = "systemic"  # the circuit breaker opened: too many nodes at once
    WATCHDOG_RELEASED = "watchdog_released"  # a hold that outlived its timeout, released unchanged
    ADVISED = "advised"  # advisor transport: advice published for the cluster's controller (respawn/advisor/advice.py)
    RECONCILED = "reconciled"  # advisor transport: a controller converged or abandoned it (or none did in time)
    RELAUNCHED = "relaunched"  # an in-job rung: the job's launcher relaunched its step in the allocation
    RUNG_FAILED = "rung_failed"  # an in-job rung not carried out: the ladder falls back to the requeue


# The model of each event type's details (respawn/audit/details.py): the one place that says
# what a row of that type carries beyond its columns.
DETAILS: dict[EventType, type[EventDetails]] = {
    EventType.NOT_ENROLLED: NotEnrolledDetails,
    EventType.ENROLLED: EnrolledDetails,
    EventType.DETECTED: DetectedDetails,
    EventType.NOT_INTERRUPTED: NotInterruptedDetails,
    EventType.ATTRIBUTED: AttributedDetails,
    EventType.DECIDED: DecidedDetails,
    EventType.HELD: SchedulerActDetails,
    EventType.EXCLUDED: SchedulerActDetails,
    EventType.RELEASED: SchedulerActDetails,
    EventType.STOPPED: StoppedDetails,
    EventType.ATTEMPT_STARTED: AttemptStartedDetails,
    EventType.RESUMED: ResumedDetails,
    EventType.JOB_COMPLETED: JobEndDetails,
    EventType.JOB_ENDED: JobEndDetails,
    EventType.WATCH_ERROR: WatchErrorDetails,
    EventType.INCIDENT_CLOSED: IncidentClosedDetails,
    EventType.OVERRIDE: OverrideDetails,
    EventType.DRAINED: SchedulerActDetails,
    EventType.MARKED_DOWN: SchedulerActDetails,
    EventType.SYSTEMIC: SystemicDetails,
    EventType.WATCHDOG_RELEASED: WatchdogReleasedDetails,
    EventType.ADVISED: AdvisedDetails,
    EventType.RECONCILED: ReconciledDetails,
    EventType.RELAUNCHED: RelaunchedDetails,
    EventType.RUNG_FAILED: RungFailedDetails,
}

D = TypeVar("D", bound=EventDetails)


def details_of(event_type: EventType, details: dict[str, Any]) -> EventDetails:
    """A row's details as the model of its type. Tolerant of older and newer rows
    (respawn/audit/details.py): a missing field reads as its default, a key the model does
    not name is left out; a value of the wrong type fails."""
    model = DETAILS[event_type]
    return model.model_validate({k: v for k, v in details.items() if k in model.model_fields})


class _Event(BaseModel):
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
    # As stored: the JSON object of the event type's model (DETAILS). Read it typed.
    details: dict[str, Any] = Field(default_factory=dict)
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))

    @property
    def typed_details(self) -> EventDetails:
        """The details as the model of the event's type."""
        return details_of(self.event_type, self.details)

    def detail(self, model: type[D]) -> D:
        """The details as `model`, which must be the model of the event's type."""
        if DETAILS[self.event_type] is not model:
            raise TypeError(
                f"the details of {self.event_type.value!r} events are "
                f"{DETAILS[self.event_type].__name__}, not {model.__name__}"
            )
        details = self.typed_details
        assert isinstance(details, model)
        return details


class AuditEvent(_Event):
    """An event to write. Its details are checked against the model of its type (DETAILS):
    a key the model does not name, or a value of the wrong type, fails here. They may be
    given as that model; they are kept as the dict it dumps to."""

    @model_validator(mode="before")
    @classmethod
    def _dump_details(cls, data: Any) -> Any:
        if isinstance(data, dict) and "event_type" in data and isinstance(data.get("details"), EventDetails):
            event_type, details = EventType(data["event_type"]), data["details"]
            if not isinstance(details, DETAILS[event_type]):
                raise ValueError(
                    f"the details of {event_type.value!r} events are {DETAILS[event_type].__name__},"
                    f" not {type(details).__name__}"
                )
            data = {**data, "details": details.model_dump()}
        return data

    @model_validator(mode="after")
    def _check_details(self) -> "AuditEvent":
        DETAILS[self.event_type].model_validate(self.details)
        return self


class AuditRow(_Event):
    """An event as stored. Loaded as written, whatever its details say (an older or newer
    release's row lists like any other); `typed_details` reads them tolerantly."""

    id: int


def incident_event(
    event_type: EventType,
    *,
    incident_id: str,
    cluster: str,
    job_id: int,
    attempt: int | None,
    details: EventDetails | dict[str, Any] | None = None,
    **fields: Any,
) -> AuditEvent:
    """An incident's event, keyed by the incident and the step: written once, however often retried."""
    return AuditEvent.model_validate(
        {
            "key": f"{incident_id}/{event_type.value}",
            "event_type": event_type,
            "cluster": cluster,
            "job_id": job_id,
            "attempt": attempt,
            "incident_id": incident_id,
            "details": {} if details is None else details,
            **fields,
        }
    )


class Implicated(NamedTuple):
    """A decision that named nodes, as the node record counts it."""

    incident_id: str | None
    at: datetime
    nodes: list[str]


class AuditTrail:
    """The trail in the store `audit_db` names (respawn/store): a SQLite file, or PostgreSQL."""

    def __init__(self, location: Location) -> None:
        self._engine = open_engine(location)

    def close(self) -> None:
        self._engine.dispose()

    def record(self, event: AuditEvent) -> bool:
        """Write the event; False when an event with its key was already there."""
        with self._engine.begin() as conn:
            # Readers follow the trail by id (the watchdog, the console): two writers' transactions
            # committing out of id order would hide the earlier id from a reader already past the
            # later one. One writer at a time until commit keeps ids visible in order.
            serialise(conn, "events")
            row = event.model_dump(include=set(_Event.model_fields))  # a row read back is written without its id
            return insert_ignoring(conn, events, "key", {**row, "event_type": event.event_type.value})

    def query(
        self,
        *,
        cluster: str | None = None,
        job_id: int | None = None,
        incident_id: str | None = None,
        event_types: list[EventType] | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        array_job_id: int | None = None,
        after_id: int = 0,
        limit: int = 1000,
    ) -> list[AuditRow]:
        """Events in the order they were written; page with `after_id` (a cursor).
        `array_job_id`: the events whose details name that job array."""
        where = [events.c.id > after_id]
        if array_job_id is not None:
            where.append(events.c.details["array_job_id"].as_integer() == array_job_id)
        if cluster is not None:
            where.append(events.c.cluster == cluster)
        if job_id is not None:
            where.append(events.c.job_id == job_id)
        if incident_id is not None:
            where.append(events.c.incident_id == incident_id)
        if event_types:
            where.append(events.c.event_type.in_([t.value for t in event_types]))
        if since is not None:
            where.append(events.c.at >= since)
        if until is not None:
            where.append(events.c.at < until)
        with self._engine.connect() as conn:
            rows = conn.execute(sa.select(events).where(*where).order_by(events.c.id).limit(limit)).mappings()
            return [row_of(r) for r in rows]

    def implicated(self, *, cluster: str, since: datetime) -> list[Implicated]:
        """The cluster's decisions since `since` that named nodes: which incident, when, which nodes.
        Every assessment reads them (the node record), so only those rows' three columns: read
        whole, a storm's 500 decisions each read every decision before it (a quarter of the
        worker's CPU in benchmarks/storm.py)."""
        where = [
            events.c.event_type == EventType.DECIDED.value,
            events.c.cluster == cluster,
            events.c.at >= since,
            sa.func.length(events.c.nodes) > 0,
        ]
        columns = (events.c.incident_id, events.c.at, events.c.nodes)
        with self._engine.connect() as conn:
            rows = conn.execute(sa.select(*columns).where(*where).order_by(events.c.id))
            return [Implicated(*row) for row in rows]


def row_of(r: sa.RowMapping) -> AuditRow:
    """A row of the events table as the event it stores."""
    return AuditRow.model_validate(dict(r))
