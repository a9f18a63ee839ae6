"""The in-job rungs: tell the job's launcher to relaunch its step, and wait for its word.

The channel (respawn/launcher/channel.py) makes this safe to retry: the instruction
carries the incident and a generation, the launcher acts on a generation once and
acknowledges it, and posting an instruction whose generation has an acknowledgement
returns that acknowledgement instead of writing. So an activity retried after a worker
died posts the same instruction again and reads what the launcher did: nothing twice.
"""

import asyncio
import time
from pathlib import Path

from temporalio import activity

from respawn.config.cluster import LogSource
from respawn.detection.logfollow import position_now
from respawn.launcher import channel
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.states import JobState
from respawn.services import Services
from respawn.sources.joblog import output_size
from respawn.wire.incident import Relaunched, RelaunchRequest, StepEndRequest

_POLL_S = 0.05  # the launcher acknowledges within a moment; an incident's few reads of a small file
# The launcher's states once its step ended: it has nothing more to say about this step.
_ENDED = {channel.StepState.FAILED, channel.StepState.GIVING_UP, channel.StepState.SUCCEEDED}


class InJobActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="relaunch_step")
    async def relaunch_step(self, req: RelaunchRequest) -> Relaunched:
        """Post the instruction (once per incident: the generation it took is reused on a retry)
        and await the launcher's acknowledgement, bounded by `timeout_s`. Never raises for
        what the job's launcher does or does not do: a relaunch not done is the ladder's
        cue to fall back, with the reason."""
        action = channel.Action.RELAUNCH_EXCLUDING if req.exclude else channel.Action.RELAUNCH
        return await self._instruct(req, action)

    @activity.defn(name="give_up_step")
    async def give_up_step(self, req: RelaunchRequest) -> Relaunched:
        """A stop of a job whose launcher waits for its word after the step failed: tell it to
        give up now, so that the job ends and its allocation is freed, not after `--wait-s`.
        Once per incident, as a relaunch; not done (no launcher, the job ended) changes nothing."""
        return await self._instruct(req, channel.Action.GIVE_UP)

    async def _instruct(self, req: RelaunchRequest, action: channel.Action) -> Relaunched:
        ch = self._s.config.launcher_channel(req.job_id)
        try:
            job = await self._s.slurm.job(req.job_id)
        except SchedulerError as exc:
            if getattr(exc, "retryable", False):
                raise  # the controller is away: Temporal retries with backoff
            return Relaunched(done=False, detail=f"the job is not readable: {exc}")
        if job.state != JobState.RUNNING or job.restart_count != req.attempt:
            return Relaunched(done=False, detail=f"the job is {job.state} (restart count {job.restart_count})")
        try:
            generation = await asyncio.to_thread(_generation_for, ch, req.incident_id)
            instruction = channel.Instruction(
                incident_id=req.incident_id,
                generation=generation,
                action=action,
                exclude=req.exclude,
                reason=req.reason[: channel.MAX_TEXT],
            )
            ack = await asyncio.to_thread(channel.post_instruction, ch, instruction)
            deadline = time.monotonic() + req.timeout_s
            while ack is None and time.monotonic() < deadline:
                activity.heartbeat()
                await asyncio.sleep(_POLL_S)
                ack = await asyncio.to_thread(channel.read_ack, ch, generation)
        except channel.ChannelError as exc:
            return Relaunched(done=False, detail=f"the job's channel: {exc.reason}")
        if ack is None:
            return Relaunched(
                done=False, detail=f"no acknowledgement within {req.timeout_s:g} s", generation=generation
            )
        if ack.incident_id != req.incident_id:
            return Relaunched(
                done=False, detail=f"generation {generation} is {ack.incident_id}'s", generation=generation
            )
        return Relaunched(
            done=ack.done,
            detail=ack.detail,
            generation=generation,
            nodes=list(ack.nodes),
            log_end=self._output_end(req.job_id),
        )

    @activity.defn(name="await_step_end")
    async def await_step_end(self, req: StepEndRequest) -> bool:
        """Whether the job's launcher reported its step ended within `within_s` (returning as soon
        as it does). The channel is the job's: whatever is wrong with it is a full settle, no error."""
        ch = self._s.config.launcher_channel(req.job_id)
        deadline = time.monotonic() + req.within_s
        while True:
            try:
                status = await asyncio.to_thread(channel.read_status, ch)
            except channel.ChannelError:
                status = None
            if status is not None and status.state in _ENDED:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            activity.heartbeat()
            await asyncio.sleep(min(_POLL_S, left))

    def _output_end(self, job_id: int) -> int | None:
        """Where the job's output goes now: its file's size, or under a log server now (a stream's
        position is a time stamp, respawn/detection/logfollow.py)."""
        if self._s.config.logs.source is not LogSource.FILES:
            return position_now()
        return output_size(self._s.config.job_output(job_id))


def _generation_for(ch: Path, incident_id: str) -> int:
    """The generation of this incident's instruction: the one it posted already (a retry),
    else the next after everything posted or acknowledged in the job's channel."""
    posted = channel.read_instruction(ch)
    if posted is not None and posted.incident_id == incident_id:
        return posted.generation
    status = channel.read_status(ch)
    newest = max(
        channel.last_acked_generation(ch),
        posted.generation if posted is not None else 0,
        status.generation if status is not None else 0,
    )
    return newest + 1
