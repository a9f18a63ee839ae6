"""Following the next attempt until it trains again. Long polls that heartbeat,
so a dead worker is noticed in seconds and the poll resumes elsewhere."""

import asyncio
import time
from datetime import UTC, datetime

from temporalio import activity

from respawn.activities.audit import record
from respawn.audit.details import AttemptStartedDetails, EventDetails, ResumedDetails
from respawn.audit.trail import EventType, incident_event
from respawn.scheduler.errors import SchedulerError
from respawn.services import Services
from respawn.sources.joblog import UnsafeOutput, read_lines
from respawn.wire.incident import AttemptStarted, FollowRequest, Resumed

_POLL_S = 0.25


class FollowActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="await_next_attempt")
    async def await_next_attempt(self, req: FollowRequest) -> AttemptStarted | None:
        deadline = time.monotonic() + req.timeout_s
        while time.monotonic() < deadline:
            activity.heartbeat()
            try:
                job = await self._s.slurm.job(req.job_id, exclusions=False)  # 4 times a second
            except SchedulerError as exc:
                if not getattr(exc, "retryable", False):
                    return None  # the job vanished: nothing left to follow
                job = None
            if job is not None and job.restart_count > req.attempt and job.state == "RUNNING":
                started = AttemptStarted(attempt=job.restart_count, nodes=job.nodes, at=datetime.now(UTC))
                await self._record(
                    req, EventType.ATTEMPT_STARTED, started.attempt, started.nodes, AttemptStartedDetails()
                )
                return started
            await asyncio.sleep(_POLL_S)
        return None

    @activity.defn(name="await_progress")
    async def await_progress(self, req: FollowRequest) -> Resumed | None:
        """The first progress line of the new attempt (or of the step relaunched in the job), and
        the checkpoint it resumed from."""
        deadline = time.monotonic() + req.timeout_s
        path = self._s.config.job_output(req.job_id)
        offset, resumed_from = req.log_offset, None
        while time.monotonic() < deadline:
            activity.heartbeat()
            try:
                lines, offset = await asyncio.to_thread(read_lines, path, offset)
            except UnsafeOutput:
                lines = []  # the job made its output unreadable: its progress is not seen, until the timeout
            for text in lines:
                step = self._s.progress.resumed(text)
                if step is not None:
                    resumed_from = step
                    continue
                step = self._s.progress.step(text)
                if step is not None:
                    resumed = Resumed(step=step, resumed_from=resumed_from, at=datetime.now(UTC))
                    await self._record(
                        req,
                        EventType.RESUMED,
                        req.attempt if req.in_job else req.attempt + 1,
                        [],
                        ResumedDetails(step=step, resumed_from=resumed_from, line=text[:500]),
                    )
                    return resumed
            await asyncio.sleep(_POLL_S)
        return None

    async def _record(
        self, req: FollowRequest, event: EventType, attempt: int, nodes: list[str], details: EventDetails
    ) -> None:
        row = incident_event(
            event,
            incident_id=req.incident_id,
            cluster=req.cluster,
            job_id=req.job_id,
            attempt=attempt,
            nodes=nodes,
            details=details,
        )
        await record(self._s.audit, row)
