"""Following the next attempt until it trains again. Long polls that heartbeat,
so a dead worker is noticed in seconds and the poll resumes elsewhere."""

import asyncio
import time
from datetime import UTC, datetime
from pathlib import Path

from temporalio import activity

from respawn.activities import logserver
from respawn.activities.audit import record
from respawn.audit.details import AttemptStartedDetails, EventDetails, ResumedDetails
from respawn.audit.trail import EventType, incident_event
from respawn.scheduler.errors import SchedulerError
from respawn.services import Services
from respawn.sources.joblog import UnsafeOutput, read_lines
from respawn.sources.logstream import Cursor, LogStream, Selector, open_stream
from respawn.wire.incident import AttemptStarted, FollowRequest, Resumed

_FAST_POLL_S, _SLOW_POLL_S, _FAST_FOR_S = 0.25, 1.0, 10.0


def pause(elapsed_s: float) -> float:
    """How long a follow waits before its next read, `elapsed_s` into it: four times a second
    for its first 10 s (a requeued job mostly starts within them, and the audit trail's times
    are read to that), then once a second (a job pending for nodes, or loading its checkpoint
    for minutes): a storm's 500 followed jobs are 500 reads and heartbeats a second, not 2,000."""
    return _FAST_POLL_S if elapsed_s < _FAST_FOR_S else _SLOW_POLL_S


class FollowActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="await_next_attempt")
    async def await_next_attempt(self, req: FollowRequest) -> AttemptStarted | None:
        began = time.monotonic()
        while time.monotonic() < began + req.timeout_s:
            activity.heartbeat()
            try:
                job = await self._s.slurm.job(req.job_id, exclusions=False)
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
            await asyncio.sleep(pause(time.monotonic() - began))
        return None

    @activity.defn(name="await_progress")
    async def await_progress(self, req: FollowRequest) -> Resumed | None:
        """The first progress line of the new attempt (or of the step relaunched in the job), and
        the checkpoint it resumed from."""
        began = time.monotonic()
        read = self._reader(req)
        resumed_from = None
        try:
            while time.monotonic() < began + req.timeout_s:
                activity.heartbeat()
                resumed, resumed_from = await self._resumed(req, await asyncio.to_thread(read), resumed_from)
                if resumed is not None:
                    return resumed
                await asyncio.sleep(pause(time.monotonic() - began))
        finally:
            read.close()
        return None

    def _reader(self, req: FollowRequest) -> "_Lines":
        stream = open_stream(self._s.config.logs)
        if stream is None:
            return _FileLines(self._s.config.job_output(req.job_id), req.log_offset)
        return _StreamLines(stream, req)

    async def _resumed(
        self, req: FollowRequest, lines: list[str], resumed_from: int | None
    ) -> tuple[Resumed | None, int | None]:
        """The first step line among `lines`, recorded; and the checkpoint resumed from, so far."""
        for text in lines:
            step = self._s.progress.resumed(text)
            if step is not None:
                resumed_from = step
                continue
            step = self._s.progress.step(text)
            if step is not None:
                resumed = Resumed(step=step, resumed_from=resumed_from, at=datetime.now(UTC))
                since = None if req.fault_at is None else round((resumed.at - req.fault_at).total_seconds(), 3)
                await self._record(
                    req,
                    EventType.RESUMED,
                    req.attempt if req.in_job else req.attempt + 1,
                    [],
                    ResumedDetails(step=step, resumed_from=resumed_from, line=text[:500], since_fault_s=since),
                )
                return resumed, resumed_from
        return None, resumed_from

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


class _Lines:
    """The job's new lines at each call, from where the incident's evidence ended."""

    def __call__(self) -> list[str]:
        raise NotImplementedError

    def close(self) -> None:
        pass


class _FileLines(_Lines):
    def __init__(self, path: Path, offset: int) -> None:
        self._path, self._offset = path, offset

    def __call__(self) -> list[str]:
        try:
            lines, self._offset = read_lines(self._path, self._offset)
        except UnsafeOutput:
            return []  # the job made its output unreadable: its progress is not seen, until the timeout
        return lines


class _StreamLines(_Lines):
    """Under a log server: the job's stream followed with a cursor from the evidence's end,
    as the detector follows it (nothing lost, nothing read twice; a failed poll reads on next time)."""

    def __init__(self, stream: LogStream, req: FollowRequest) -> None:
        self._stream, self._selector = stream, Selector.job(req.job_id)
        self._cursor = Cursor.starting(logserver.earliest(stream, req.log_offset, time.time_ns()))

    def __call__(self) -> list[str]:
        answer = self._stream.poll({self._selector: self._cursor})[self._selector]
        self._cursor = answer.cursor
        return [line.text for line in answer.lines]

    def close(self) -> None:
        self._stream.close()
