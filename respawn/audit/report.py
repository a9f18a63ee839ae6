"""Summaries of the audit trail for people and scripts: `respawn jobs`, `respawn incidents`, the console.

The audit trail is folded one event at a time into job and incident summaries,
so a long-running reader (the console) keeps up by folding only what is new.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from respawn.audit.details import (
    DecidedDetails,
    DetectedDetails,
    EnrolledDetails,
    IncidentClosedDetails,
    JobEndDetails,
    NotEnrolledDetails,
    NotInterruptedDetails,
    OverrideDetails,
    ResumedDetails,
    WatchErrorDetails,
    reason_or_detail,
)
from respawn.audit.trail import AuditEvent, AuditRow, AuditTrail
from respawn.config.cluster import ClusterConfig


@dataclass
class IncidentSummary:
    incident_id: str
    job_id: int
    attempt: int | None
    opened: datetime
    first_event_id: int  # orders incidents by when they opened, and pages them
    kind: str | None = None  # what was detected first: log_line, kernel, hang, slowdown, ...
    environment: str | None = None
    mode: str | None = None
    failure_class: str | None = None
    nodes: list[str] = field(default_factory=list)  # blamed
    exclude: list[str] = field(default_factory=list)  # the nodes the decision keeps the job off
    action: str | None = None
    acted: bool | None = None
    reason: str = ""
    override: dict[str, Any] | None = None  # who overrode it, how and why
    phase: str = "open"  # "open" until closed, then the phase it closed in
    closed: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.closed is None

    def row(self) -> dict[str, Any]:
        """The row `respawn incidents` prints."""
        return {
            "incident_id": self.incident_id,
            "job_id": self.job_id,
            "attempt": self.attempt,
            "opened": self.opened.isoformat(),
            "failure_class": self.failure_class,
            "nodes": ",".join(self.nodes),
            "action": self.action,
            "acted": None if self.acted is None else "acted" if self.acted else "recommended",
            "phase": self.phase,
            "reason": self.reason,
        }


@dataclass
class JobSummary:
    job_id: int
    enrolled: bool
    environment: str | None
    mode: str | None
    reason: str  # why not enrolled, or a note on the enrolment
    attempt: int | None = None  # the newest attempt the audit trail knows of
    ended: str | None = None  # the state it ended in, when the detector saw it end
    incidents: list[str] = field(default_factory=list)  # oldest first

    def row(self) -> dict[str, Any]:
        """The row `respawn jobs` prints."""
        return {
            "job_id": self.job_id,
            "enrolled": "yes" if self.enrolled else "no",
            "environment": self.environment,
            "mode": self.mode,
            "reason": self.reason,
        }


class AuditSummary:
    """Jobs (those the detector enrolled or turned away) and incidents, folded from the audit trail."""

    def __init__(self) -> None:
        self.jobs: dict[int, JobSummary] = {}
        self.incidents: dict[str, IncidentSummary] = {}
        self.last_id = 0  # the newest event folded in: read on after it

    def read(self, audit: AuditTrail, cluster: str, job_id: int | None = None, batch: int = 10_000) -> None:
        """Fold in every event of `cluster` written since the last read."""
        while rows := audit.query(cluster=cluster, job_id=job_id, after_id=self.last_id, limit=batch):
            for row in rows:
                self.fold(row)

    def fold(self, row: AuditRow) -> None:
        self.last_id = max(self.last_id, row.id)
        d = row.typed_details
        if isinstance(d, EnrolledDetails | NotEnrolledDetails):
            if isinstance(d, EnrolledDetails):
                enrolment = JobSummary(row.job_id, True, d.environment, d.mode, d.note or "")
            else:
                enrolment = JobSummary(row.job_id, False, None, None, d.reason or "")
            if (known := self.jobs.get(row.job_id)) is not None:  # the comment changed: the newest word counts
                enrolment.attempt, enrolment.ended, enrolment.incidents = known.attempt, known.ended, known.incidents
            self.jobs[row.job_id] = enrolment
            return
        job = self.jobs.get(row.job_id)
        if job is not None and row.attempt is not None:
            job.attempt = max(job.attempt or 0, row.attempt)
        if isinstance(d, JobEndDetails) and job is not None:
            job.ended = d.state
        if row.incident_id is None:
            return
        incident = self.incidents.get(row.incident_id)
        if incident is None:
            incident = self.incidents[row.incident_id] = IncidentSummary(
                row.incident_id, row.job_id, row.attempt, row.at, row.id
            )
            if job is not None:
                job.incidents.append(row.incident_id)
        if isinstance(d, DetectedDetails):
            incident.kind, incident.environment, incident.mode = d.kind, d.environment, d.mode
        elif isinstance(d, DecidedDetails):
            incident.failure_class, incident.nodes, incident.action = row.failure_class, row.nodes, row.action
            incident.acted, incident.reason, incident.exclude = row.acted, d.reason, d.exclude
        elif isinstance(d, OverrideDetails):
            incident.override = {"action": row.action, "who": d.who, "reason": d.reason, "exclude": row.nodes}
        elif isinstance(d, IncidentClosedDetails):
            incident.phase, incident.closed = d.phase, row.at
            incident.failure_class = incident.failure_class or row.failure_class


def summarise(config: ClusterConfig, job_id: int | None = None) -> AuditSummary:
    summary = AuditSummary()
    audit = AuditTrail(config.audit_db)
    try:
        summary.read(audit, config.cluster, job_id)
    finally:
        audit.close()
    return summary


def incidents(config: ClusterConfig, job_id: int | None = None) -> list[dict[str, Any]]:
    """One row per incident: what was detected, what it was, what was decided, where it stands."""
    return [i.row() for i in summarise(config, job_id).incidents.values()]


def jobs(config: ClusterConfig) -> list[dict[str, Any]]:
    """One row per job the detector has seen: enrolled or not, and why."""
    return [j.row() for j in summarise(config).jobs.values()]


def timeline_entry(nodes: list[str], pattern: str | None, action: str | None, detail: str) -> str:
    """An event's nodes, pattern, action and what it says, on one line: a timeline's entry (the
    demo's, the Temporal UI's details of an incident)."""
    return " ".join(x for x in (",".join(nodes), pattern or "", action or "", detail) if x)


def describe(row: AuditRow | AuditEvent) -> str:
    """One line on what an event says, for a timeline."""
    d = row.typed_details
    if isinstance(d, DetectedDetails):
        return f"{d.kind}: {d.line or d.node or ''}"[:100]
    if isinstance(d, ResumedDetails):
        return f"step {d.step}, resumed from checkpoint step {d.resumed_from}"
    if isinstance(d, JobEndDetails):
        return str(d.state)
    if isinstance(d, OverrideDetails):
        return f"{d.who}: {d.reason}"
    if isinstance(d, NotInterruptedDetails):
        # A suspicion, not an interruption: recommended nothing, nobody acted.
        return f"not interrupted: {d.why} ({row.pattern or 'no pattern'})"[:160]
    if isinstance(d, WatchErrorDetails):
        return f"output not watched: {d.detail}"[:160]
    return reason_or_detail(d) or (d.note if isinstance(d, EnrolledDetails) else None) or ""
