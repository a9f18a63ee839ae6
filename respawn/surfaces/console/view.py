"""What the console shows: every job with its live state, the incidents, each job's timeline.

Two sources: Slurm (state and restart count, one `squeue --json` shared by every
viewer and at most SLURM_MAX_AGE_S old) and the audit trail (enrolment,
incidents, every detection, decision and action), folded incrementally so a
poll reads only the events written since the last one. Both stay in memory:
thousands of jobs are filtered and paged in microseconds.
"""

import asyncio
import logging
import time
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, Field

from respawn.audit.cost import CostReport, report_from_trail
from respawn.audit.report import AuditSummary, IncidentSummary, JobSummary, describe
from respawn.audit.trail import AuditTrail
from respawn.config.cluster import ClusterConfig
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.slurm import JobInfo, Slurm

log = logging.getLogger("respawn.surfaces.console")

# Every viewer polls every few seconds; Slurm is asked at most this often.
SLURM_MAX_AGE_S = 2.0
# Failure classes that mark the job's current attempt as anomalous while it runs on.
_RUNNING_ANOMALIES = ("hang", "slowdown")


class JobRow(BaseModel):
    job_id: int
    name: str = ""
    user: str = ""
    state: str | None = None  # Slurm's now, else the last the audit trail recorded; None: unknown
    live: bool = False  # Slurm lists the job now
    attempt: int | None = None  # Slurm's restart count, else the newest attempt on record
    enrolled: bool | None = None  # None: the detector has not seen the job (yet)
    environment: str | None = None
    mode: str | None = None
    reason: str = ""
    nodes: list[str] = Field(default_factory=list)
    # None where Slurm's listing does not say (22.05's: squeue's text listing has no such field).
    excluded_nodes: list[str] | None = Field(default_factory=list)
    flags: list[str] = Field(default_factory=list)  # incident, approval, hang, slowdown
    open_incidents: list[str] = Field(default_factory=list)
    incidents: int = 0


class IncidentRow(BaseModel):
    incident_id: str
    job_id: int
    attempt: int | None
    opened: datetime
    closed: datetime | None
    open: bool
    phase: str
    kind: str | None
    environment: str | None
    mode: str | None
    failure_class: str | None
    nodes: list[str]
    exclude: list[str]
    action: str | None
    acted: bool | None
    reason: str
    override: dict | None
    awaiting_approval: bool
    temporal_url: str


class TimelineEvent(BaseModel):
    id: int
    at: datetime
    attempt: int | None
    incident_id: str | None
    event: str
    failure_class: str | None
    pattern: str | None
    nodes: list[str]
    action: str | None
    acted: bool | None
    summary: str
    details: dict[str, Any]


class JobFilter(BaseModel):
    state: list[str] = Field(default_factory=list)  # any of these Slurm states (upper case)
    enrolled: bool | None = None
    environment: str | None = None
    text: str = ""  # part of the job id or name
    attention: bool = False  # only jobs with a flag

    def admits(self, job: JobRow) -> bool:
        if self.state and (job.state or "").upper() not in self.state:
            return False
        if self.enrolled is not None and job.enrolled is not self.enrolled:
            return False
        if self.environment is not None and job.environment != self.environment:
            return False
        if self.text and self.text not in str(job.job_id) and self.text not in job.name.lower():
            return False
        return not self.attention or bool(job.flags)


T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    items: list[T]
    total: int  # how many match, over all pages
    next_cursor: str | None  # pass back as `cursor` for the next page; None on the last


class SlurmStatus(BaseModel):
    ok: bool
    as_of: datetime | None  # when the state shown was read
    error: str | None = None


class Overview(BaseModel):
    cluster: str
    environments: list[str]
    temporal_ui: str
    slurm: SlurmStatus
    jobs: int
    enrolled: int
    attention: int
    open_incidents: int


class Timeline(BaseModel):
    job: JobRow
    incidents: list[IncidentRow]  # newest first
    events: list[TimelineEvent]  # in the order they were written
    next_cursor: str | None  # more events after these: pass back as `after`


class ConsoleView:
    """The state the console serves, shared by all its requests."""

    def __init__(self, config: ClusterConfig, slurm: Slurm, audit: AuditTrail) -> None:
        self._config, self._slurm, self._audit = config, slurm, audit
        self._summary = AuditSummary()
        self._audit_lock = asyncio.Lock()  # one SQLite connection: one reader at a time
        self._slurm_lock = asyncio.Lock()  # viewers polling together share one squeue
        self._slurm_jobs: dict[int, JobInfo] = {}
        self._slurm_read = float("-inf")  # monotonic time of the last attempt
        self._slurm_status = SlurmStatus(ok=False, as_of=None, error="not read yet")
        self._slurm_version = 0  # counts the listings read, to know when the rows are stale
        self._rows: tuple[tuple[int, int], list[JobRow]] | None = None  # built for (last event, listing)
        self._exclusions: dict[int, tuple[float, list[str] | None]] = {}  # job -> (read at, its excluded nodes)

    @property
    def config(self) -> ClusterConfig:
        return self._config

    async def refresh(self) -> None:
        await asyncio.gather(self._read_audit(), self._read_slurm())

    async def overview(self) -> Overview:
        await self.refresh()
        rows = self._job_rows()
        return Overview(
            cluster=self._config.cluster,
            environments=sorted(self._config.environments),
            temporal_ui=self._config.temporal.ui_url,
            slurm=self._slurm_status,
            jobs=len(rows),
            enrolled=sum(1 for r in rows if r.enrolled),
            attention=sum(1 for r in rows if r.flags),
            open_incidents=sum(1 for i in self._summary.incidents.values() if i.is_open),
        )

    async def jobs(self, where: JobFilter, limit: int, cursor: int | None) -> Page[JobRow]:
        """Newest job first; the cursor is the last job id of the previous page."""
        await self.refresh()
        matching = [r for r in self._job_rows() if where.admits(r)]
        after = [r for r in matching if cursor is None or r.job_id < cursor]
        page = after[:limit]
        more = len(after) > limit
        return Page[JobRow](items=page, total=len(matching), next_cursor=str(page[-1].job_id) if more else None)

    async def incidents(
        self, *, open: bool | None, job_id: int | None, limit: int, cursor: int | None
    ) -> Page[IncidentRow]:
        """Newest incident first; the cursor is where the previous page's last incident begins in the trail."""
        await self._read_audit()
        matching = [
            i
            for i in self._summary.incidents.values()
            if (open is None or i.is_open is open) and (job_id is None or i.job_id == job_id)
        ]
        matching.sort(key=lambda i: i.first_event_id, reverse=True)
        after = [i for i in matching if cursor is None or i.first_event_id < cursor]
        page = after[:limit]
        more = len(after) > limit
        return Page[IncidentRow](
            items=[self._incident_row(i) for i in page],
            total=len(matching),
            next_cursor=str(page[-1].first_event_id) if more else None,
        )

    async def timeline(self, job_id: int, after: int, limit: int) -> Timeline | None:
        """The job, its incidents and its events after `after`; None for a job nobody knows."""
        await self.refresh()
        row = self._job_row(job_id)
        if row is None:
            return None
        if row.live and row.excluded_nodes is None:
            row.excluded_nodes = await self._excluded_nodes(job_id)
        async with self._audit_lock:
            events = await asyncio.to_thread(
                self._audit.query, cluster=self._config.cluster, job_id=job_id, after_id=after, limit=limit
            )
        summary = self._summary.jobs.get(job_id)
        incidents = (
            [self._incident_row(self._summary.incidents[i]) for i in reversed(summary.incidents)] if summary else []
        )
        return Timeline(
            job=row,
            incidents=incidents,
            events=[
                TimelineEvent(
                    id=e.id,
                    at=e.at,
                    attempt=e.attempt,
                    incident_id=e.incident_id,
                    event=e.event_type.value,
                    failure_class=e.failure_class,
                    pattern=e.pattern,
                    nodes=e.nodes,
                    action=e.action,
                    acted=e.acted,
                    summary=describe(e),
                    details=e.details,
                )
                for e in events
            ],
            next_cursor=str(events[-1].id) if len(events) == limit else None,
        )

    async def cost(self, since: timedelta, now: datetime | None = None) -> CostReport:
        """Lost GPU-hours, ETTR and failure rates over the last `since` (respawn/audit/cost.py)."""
        until = now or datetime.now(UTC)
        async with self._audit_lock:
            return await asyncio.to_thread(
                report_from_trail, self._audit, self._config.cluster, self._config.accounting, until - since, until
            )

    def incidents_of(self, job_id: int) -> list[str]:
        summary = self._summary.jobs.get(job_id)
        return list(summary.incidents) if summary else []

    async def _read_audit(self) -> None:
        async with self._audit_lock:
            await asyncio.to_thread(self._summary.read, self._audit, self._config.cluster)

    async def _read_slurm(self) -> None:
        async with self._slurm_lock:
            if time.monotonic() - self._slurm_read < SLURM_MAX_AGE_S:
                return
            self._slurm_read = time.monotonic()
            try:
                jobs = await self._slurm.jobs()
            except SchedulerError as exc:
                # Keep showing what was last read, and say how old it is.
                log.warning("console: cannot read Slurm: %s", exc)
                self._slurm_status = SlurmStatus(ok=False, as_of=self._slurm_status.as_of, error=str(exc)[:300])
                return
            self._slurm_jobs = {j.job_id: j for j in jobs}
            self._slurm_version += 1
            self._slurm_status = SlurmStatus(ok=True, as_of=datetime.now(UTC))

    async def _excluded_nodes(self, job_id: int) -> list[str] | None:
        """A job's excluded nodes where the listing does not say them (22.05's text listing): its
        own read, one job, at most once per SLURM_MAX_AGE_S however many viewers follow it."""
        now = time.monotonic()
        cached = self._exclusions.get(job_id)
        if cached is not None and now - cached[0] < SLURM_MAX_AGE_S:
            return cached[1]
        try:
            nodes = (await self._slurm.job(job_id)).excluded_nodes
        except SchedulerError as exc:
            log.warning("console: cannot read job %s: %s", job_id, exc)
            nodes = None
        # Only what is fresh is kept: a viewer at a time follows a job, not thousands.
        self._exclusions = {j: e for j, e in self._exclusions.items() if now - e[0] < SLURM_MAX_AGE_S}
        self._exclusions[job_id] = (now, nodes)
        return nodes

    def _job_rows(self) -> list[JobRow]:
        """Every job, newest first; rebuilt only when the trail or Slurm's listing has changed."""
        version = (self._summary.last_id, self._slurm_version)
        if self._rows is None or self._rows[0] != version:
            ids = sorted(self._summary.jobs.keys() | self._slurm_jobs.keys(), reverse=True)
            self._rows = version, [self._row(self._summary.jobs.get(i), self._slurm_jobs.get(i)) for i in ids]
        return self._rows[1]

    def _job_row(self, job_id: int) -> JobRow | None:
        summary, live = self._summary.jobs.get(job_id), self._slurm_jobs.get(job_id)
        return self._row(summary, live) if summary or live else None

    def _row(self, summary: JobSummary | None, live: JobInfo | None) -> JobRow:
        known = summary or live
        assert known is not None  # a row is made only for a job one of them knows
        row = JobRow(job_id=known.job_id)
        if live is not None:
            row.name, row.user, row.state, row.live, row.attempt = (
                live.name,
                live.user,
                live.state,
                True,
                live.restart_count,
            )
            row.nodes, row.excluded_nodes = live.nodes, live.excluded_nodes
        if summary is None:
            row.reason = "not seen by the detector yet"
            return row
        row.enrolled, row.environment, row.mode, row.reason = (
            summary.enrolled,
            summary.environment,
            summary.mode,
            summary.reason,
        )
        if live is None:
            row.state, row.attempt = summary.ended, summary.attempt
        incidents = [self._summary.incidents[i] for i in summary.incidents]
        row.incidents = len(incidents)
        row.open_incidents = [i.incident_id for i in incidents if i.is_open]
        flags = {"incident"} if row.open_incidents else set()
        for incident in incidents:
            if self._awaiting_approval(incident):
                flags.add("approval")
            if incident.attempt == row.attempt and row.state == "RUNNING":
                flags.update(c for c in (incident.kind, incident.failure_class) if c in _RUNNING_ANOMALIES)
        row.flags = sorted(flags)
        return row

    def _awaiting_approval(self, incident: IncidentSummary) -> bool:
        # The workflow waits for an operator once it decided to act in an environment
        # that wants approval, until an override (or the timeout's default) arrives.
        environment = self._config.environments.get(incident.environment or "")
        return (
            incident.is_open
            and incident.acted is True
            and incident.override is None
            and environment is not None
            and environment.approval is not None
        )

    def _incident_row(self, incident: IncidentSummary) -> IncidentRow:
        return IncidentRow(
            incident_id=incident.incident_id,
            job_id=incident.job_id,
            attempt=incident.attempt,
            opened=incident.opened,
            closed=incident.closed,
            open=incident.is_open,
            phase=incident.phase,
            kind=incident.kind,
            environment=incident.environment,
            mode=incident.mode,
            failure_class=incident.failure_class,
            nodes=incident.nodes,
            exclude=incident.exclude,
            action=incident.action,
            acted=incident.acted,
            reason=incident.reason,
            override=incident.override,
            awaiting_approval=self._awaiting_approval(incident),
            temporal_url=self._config.temporal.workflow_url(incident.incident_id),
        )
