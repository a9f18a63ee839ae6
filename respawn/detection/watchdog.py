"""The hold watchdog: recovery fails open.

When Respawn has requeued a job in held state and no decision releases it in
time (the worker is down, attribution is stuck, the workflow or Temporal is
gone), the job is released unchanged, back to normal scheduling, and
`watchdog_released` is recorded. It runs in the detector process, beside the
detection loop, and depends only on Slurm and the audit trail, so it keeps
working when the workers, the incident workflow or Temporal do not.

What it watches is read from the audit trail, and what it releases must also
be witnessed by Slurm:
- an incident whose `decided` row (or an operator's `override`) says it is
  to act, and that no `released`, `stopped`, `incident_closed` or
  `watchdog_released` row has closed yet (a worker killed inside the hold
  leaves no `held` row, so the decision, always recorded first, is the anchor);
- its job pending in the state `scontrol requeuehold` leaves ("job requeued in
  held state"), at the restart count of that incident's requeue. A job its
  owner or an admin held (`scontrol hold`/`uhold`) reads differently and is
  never touched; nor is the hold of any other attempt.

The timeout runs from the `held` row, or from when the watchdog first saw the
hold if that is earlier or the row is missing.
"""

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from respawn.audit.details import WatchdogReleasedDetails
from respawn.audit.trail import AuditRow, AuditTrail, EventType, incident_event
from respawn.config.cluster import ClusterConfig
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.slurm import JobInfo, Slurm

log = logging.getLogger("respawn.detection.watchdog")

REQUEUE_HELD = "job requeued in held state"  # Slurm's state_description after requeuehold
_HELD_REASONS = {"jobhelduser", "jobheldadmin"}
_ANCHORS = {EventType.DECIDED, EventType.OVERRIDE}  # rows that say the incident is to act
_CLOSING = {EventType.RELEASED, EventType.STOPPED, EventType.INCIDENT_CLOSED, EventType.WATCHDOG_RELEASED}
_PAGE = 1000


@dataclass
class _OpenIncident:
    incident_id: str
    job_id: int
    attempt: int
    held_since: datetime | None = None


@dataclass(frozen=True)
class WatchdogRelease:
    incident_id: str
    job_id: int
    held_for_s: float


class Watchdog:
    def __init__(self, config: ClusterConfig, slurm: Slurm, audit: AuditTrail) -> None:
        self._config, self._slurm, self._audit = config, slurm, audit
        self._open: dict[str, _OpenIncident] = {}
        self._cursor = 0  # audit rows up to this id are folded into _open

    async def check(self, jobs: list[JobInfo]) -> list[WatchdogRelease]:
        """Release every job held past the timeout; call once per poll with all of Slurm's jobs.

        Scheduler errors are logged, not raised, and the release is tried again at
        the next poll: the watchdog must never stop the detection loop.
        """
        # The audit trail off the event loop: in a storm it grows by thousands of rows a minute,
        # and the detector's poll and its deliveries share this loop.
        await asyncio.to_thread(self._read_audit)
        by_id = {job.job_id: job for job in jobs}
        timeout = self._config.watchdog.hold_timeout_s
        now = datetime.now(UTC)
        released = []
        for iid, incident in list(self._open.items()):
            job = by_id.get(incident.job_id)
            if job is None:
                # Purged from the controller (cancelled or finished long ago): nothing left to release.
                del self._open[iid]
                continue
            if not _held_by_requeue(job, incident.attempt):
                continue
            if incident.held_since is None:
                incident.held_since = now
            held_for = (now - incident.held_since).total_seconds()
            if held_for < timeout:
                continue
            if await self._release(incident, job, held_for):
                del self._open[iid]
                released.append(WatchdogRelease(incident_id=iid, job_id=job.job_id, held_for_s=held_for))
        return released

    def _read_audit(self) -> None:
        """Fold new audit rows into the open incidents, oldest first: a decision
        always precedes the row that closes its incident."""
        types = [*_ANCHORS, EventType.HELD, *_CLOSING]
        while True:
            rows = self._audit.query(
                cluster=self._config.cluster, event_types=types, after_id=self._cursor, limit=_PAGE
            )
            for row in rows:
                self._fold(row)
            if rows:
                self._cursor = rows[-1].id
            if len(rows) < _PAGE:
                return

    def _fold(self, row: AuditRow) -> None:
        iid = row.incident_id
        if iid is None or row.attempt is None:
            return
        if row.event_type in _ANCHORS:
            if row.acted:
                self._open.setdefault(iid, _OpenIncident(incident_id=iid, job_id=row.job_id, attempt=row.attempt))
        elif row.event_type is EventType.HELD:
            incident = self._open.get(iid)
            if incident is not None and (incident.held_since is None or row.at < incident.held_since):
                incident.held_since = row.at
        else:
            self._open.pop(iid, None)

    async def _release(self, incident: _OpenIncident, listed: JobInfo, held_for: float) -> bool:
        try:
            # The job itself, read now: the listing may be a poll old, and need not carry its exclusions.
            job = await self._slurm.job(listed.job_id)
            if not _held_by_requeue(job, incident.attempt):
                return False  # released meanwhile (the incident acted): its closing row follows
            await self._slurm.release(job.job_id)
        except SchedulerError as exc:
            log.warning("watchdog: cannot release job %s of %s yet: %s", listed.job_id, incident.incident_id, exc)
            return False
        timeout = self._config.watchdog.hold_timeout_s
        event = incident_event(
            EventType.WATCHDOG_RELEASED,
            incident_id=incident.incident_id,
            cluster=self._config.cluster,
            job_id=job.job_id,
            attempt=incident.attempt,
            action="release",
            acted=True,
            details=WatchdogReleasedDetails(
                held_for_s=round(held_for, 3),
                hold_timeout_s=timeout,
                restart_count=job.restart_count,
                excluded_nodes=job.excluded_nodes or [],
                reason=f"held {held_for:.0f} s without a decision (timeout {timeout:g} s): "
                "released unchanged to normal scheduling",
            ),
        )
        await asyncio.to_thread(self._audit.record, event)
        log.warning("watchdog: released job %s, held %.0f s by %s", job.job_id, held_for, incident.incident_id)
        try:
            # Released, the job would still wait out the requeue back-off (cred_expire + 1 s).
            await self._slurm.start_now(job.job_id)
        except SchedulerError as exc:
            log.warning("watchdog: job %s released, but not started at once: %s", job.job_id, exc)
        return True


def _held_by_requeue(job: JobInfo, attempt: int) -> bool:
    """Pending in the state Respawn's requeuehold of `attempt` leaves, and in no other."""
    return (
        job.state == "PENDING"
        and job.state_reason.lower() in _HELD_REASONS
        and REQUEUE_HELD in job.state_description
        and job.restart_count == attempt + 1
    )
