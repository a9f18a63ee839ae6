"""Summaries of the audit trail for people and scripts: `respawn jobs`, `respawn incidents`, the console.

The audit trail is folded one event at a time into job and incident summaries,
so a long-running reader (the console) keeps up by folding only what is new.
"""

from dataclasses import dataclass, field
from datetime import datetime

from respawn.audit.trail import AuditRow, AuditTrail, EventType
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
    override: dict | None = None  # who overrode it, how and why
    phase: str = "open"  # "open" until closed, then the phase it closed in
    closed: datetime | None = None

    @property
    def is_open(self) -> bool:
        return self.closed is None

    def row(self) -> dict:
        """The row `respawn incidents` prints."""
        return {
            "incident_id": self.incident_id, "job_id": self.job_id, "attempt": self.attempt,
            "opened": self.opened.isoformat(), "failure_class": self.failure_class, "nodes": ",".join(self.nodes),
            "action": self.action, "acted": None if self.acted is None else "acted" if self.acted else "recommended",
            "phase": self.phase, "reason": self.reason,
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

    def row(self) -> dict:
        """The row `respawn jobs` prints."""
        return {"job_id": self.job_id, "enrolled": "yes" if self.enrolled else "no",
                "environment": self.environment, "mode": self.mode, "reason": self.reason}


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
        d = row.details
        if row.event_type in (EventType.ENROLLED, EventType.NOT_ENROLLED):
            enrolled = row.event_type is EventType.ENROLLED
            job = JobSummary(row.job_id, enrolled, d.get("environment"), d.get("mode"),
                             (d.get("note") if enrolled else d.get("reason")) or "")
            if (known := self.jobs.get(row.job_id)) is not None:  # the comment changed: the newest word counts
                job.attempt, job.ended, job.incidents = known.attempt, known.ended, known.incidents
            self.jobs[row.job_id] = job
            return
        job = self.jobs.get(row.job_id)
        if job is not None and row.attempt is not None:
            job.attempt = max(job.attempt or 0, row.attempt)
        if row.event_type in (EventType.JOB_COMPLETED, EventType.JOB_ENDED) and job is not None:
            job.ended = d.get("state")
        if row.incident_id is None:
            return
        incident = self.incidents.get(row.incident_id)
        if incident is None:
            incident = self.incidents[row.incident_id] = IncidentSummary(
                row.incident_id, row.job_id, row.attempt, row.at, row.id)
            if job is not None:
                job.incidents.append(row.incident_id)
        if row.event_type is EventType.DETECTED:
            incident.kind, incident.environment, incident.mode = d.get("kind"), d.get("environment"), d.get("mode")
        elif row.event_type is EventType.DECIDED:
            incident.failure_class, incident.nodes, incident.action = row.failure_class, row.nodes, row.action
            incident.acted, incident.reason, incident.exclude = row.acted, d.get("reason", ""), d.get("exclude", [])
        elif row.event_type is EventType.OVERRIDE:
            incident.override = {"action": row.action, "who": d.get("who"), "reason": d.get("reason"),
                                 "exclude": row.nodes}
        elif row.event_type is EventType.INCIDENT_CLOSED:
            incident.phase, incident.closed = d.get("phase", "closed"), row.at
            incident.failure_class = incident.failure_class or row.failure_class


def summarise(config: ClusterConfig, job_id: int | None = None) -> AuditSummary:
    summary = AuditSummary()
    audit = AuditTrail(config.audit_db)
    try:
        summary.read(audit, config.cluster, job_id)
    finally:
        audit.close()
    return summary


def incidents(config: ClusterConfig, job_id: int | None = None) -> list[dict]:
    """One row per incident: what was detected, what it was, what was decided, where it stands."""
    return [i.row() for i in summarise(config, job_id).incidents.values()]


def jobs(config: ClusterConfig) -> list[dict]:
    """One row per job the detector has seen: enrolled or not, and why."""
    return [j.row() for j in summarise(config).jobs.values()]


def describe(row: AuditRow) -> str:
    """One line on what an event says, for a timeline."""
    d = row.details
    if row.event_type is EventType.DETECTED:
        return f"{d.get('kind')}: {d.get('line') or d.get('node') or ''}"[:100]
    if row.event_type is EventType.RESUMED:
        return f"step {d.get('step')}, resumed from checkpoint step {d.get('resumed_from')}"
    if row.event_type in (EventType.JOB_COMPLETED, EventType.JOB_ENDED):
        return str(d.get("state"))
    if row.event_type is EventType.OVERRIDE:
        return f"{d.get('who')}: {d.get('reason')}"
    if row.event_type is EventType.NOT_INTERRUPTED:
        # A suspicion, not an interruption: recommended nothing, nobody acted.
        return f"not interrupted: {d.get('why')} ({row.pattern or 'no pattern'})"[:160]
    if row.event_type is EventType.WATCH_ERROR:
        return f"output not watched: {d.get('detail')}"[:160]
    return d.get("reason") or d.get("detail") or d.get("note") or ""
