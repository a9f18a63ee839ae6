"""Recovery actions on Slurm. Each one reads the job first and acts only when
the desired state does not hold yet, then records what it found or did."""

import asyncio
import logging
from collections.abc import Awaitable, Callable

from temporalio import activity
from temporalio.exceptions import ApplicationError

from respawn.activities.audit import record
from respawn.activities.errors import as_activity_error
from respawn.activities.heartbeat import beating
from respawn.activities.probe import silent
from respawn.audit.details import SchedulerActDetails
from respawn.audit.trail import EventType, incident_event
from respawn.scheduler import actions
from respawn.scheduler.errors import SchedulerError
from respawn.services import Services
from respawn.surfaces import telemetry
from respawn.wire.incident import ActionRequest, ActionResult

log = logging.getLogger(__name__)

# How long marking a node DOWN waits for the job to let go of its nodes (Slurm's own requeue
# off a DOWN node completes within a second); the hold and exclusion go on after it either way.
_REQUEUE_COMPLETES_S = 15.0


class SchedulerActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="hold_job")
    async def hold_job(self, req: ActionRequest) -> ActionResult:
        """Requeue the attempt in held state, exactly once per incident (actions.hold)."""

        async def act() -> ActionResult:
            return _result(await actions.hold(self._s.slurm, req.job_id, req.attempt))

        return await self._run(req, EventType.HELD, "requeue_hold", act)

    @activity.defn(name="exclude_nodes")
    async def exclude_nodes(self, req: ActionRequest) -> ActionResult:
        async def act() -> ActionResult:
            outcome = await actions.exclude(self._s.slurm, req.job_id, req.exclude)
            # Counted where it changes: a retry finds the exclusions in place and counts nothing.
            telemetry.EXCLUSIONS.inc(len(outcome.added))
            return _result(outcome)

        return await self._run(req, EventType.EXCLUDED, "update_excluded_nodes", act)

    @activity.defn(name="release_job")
    async def release_job(self, req: ActionRequest) -> ActionResult:
        """Release the held job and ask for an immediate start (no requeue back-off)."""

        async def act() -> ActionResult:
            return _result(await actions.release(self._s.slurm, req.job_id))

        return await self._run(req, EventType.RELEASED, "release", act)

    @activity.defn(name="drain_nodes")
    async def drain_nodes(self, req: ActionRequest) -> ActionResult:
        """Take nodes with a record of failing out of the pool, with the reason on them."""

        async def act() -> ActionResult:
            drained = await actions.drain(self._s.slurm, req.drain, f"respawn {req.incident_id}: {req.reason}")
            telemetry.DRAINS.inc(len(drained))  # a retry finds the nodes drained and counts nothing
            return ActionResult(done=bool(drained), detail=f"drained {','.join(drained) or 'none (already)'}")

        return await self._run(req, EventType.DRAINED, "drain", act, nodes=req.drain)

    @activity.defn(name="mark_nodes_down")
    async def mark_nodes_down(self, req: ActionRequest) -> ActionResult:
        """Call DOWN the nodes whose slurmd was silent to the incident's probe and still is to a
        second one, before the hold: Slurm requeues the job off them at once (a job it may not
        requeue it ends, as it would at SlurmdTimeout; Respawn could not requeue that one either)."""

        async def act() -> ActionResult:
            timeout = self._s.config.detector.probe_timeout_s
            marked, answered = await actions.mark_down(
                self._s.slurm,
                req.down,
                f"respawn {req.incident_id}: slurmd silent to two probes",
                lambda node: silent(node, timeout),
            )
            telemetry.MARKED_DOWN.inc(len(marked))  # a retry finds them DOWN and counts nothing
            detail = f"marked down {','.join(marked) or 'none (already down or answering)'}"
            if answered:
                detail += f"; answered the second probe, left up: {','.join(answered)}"
            if marked and not await actions.until_not_completing(self._s.slurm, req.job_id, _REQUEUE_COMPLETES_S):
                detail += f"; the job still completing after {_REQUEUE_COMPLETES_S:g} s"
            return ActionResult(done=bool(marked), detail=detail)

        return await self._run(req, EventType.MARKED_DOWN, "mark_down", act, nodes=req.down)

    async def _run(
        self,
        req: ActionRequest,
        event: EventType,
        action: str,
        act: Callable[[], Awaitable[ActionResult]],
        nodes: list[str] | None = None,
    ) -> ActionResult:
        released = await asyncio.to_thread(
            self._s.audit.query, incident_id=req.incident_id, event_types=[EventType.WATCHDOG_RELEASED], limit=1
        )
        if released:
            # The watchdog handed the job back to normal scheduling: this incident acts no more.
            raise ApplicationError(
                "the watchdog released the job after its hold timed out", type="WatchdogReleased", non_retryable=True
            )
        try:
            async with beating():
                result = await act()
        except SchedulerError as exc:
            raise as_activity_error(exc) from exc
        named = nodes if nodes is not None else req.exclude if event is EventType.EXCLUDED else []
        # The worker's log says what it did to Slurm, as the audit trail does: what an operator
        # reads first (journalctl -u respawn-worker) when a job moved at 3 a.m.
        log.info(
            "job %s: %s%s: %s (%s, %s)",
            req.job_id,
            action,
            f" {','.join(named)}" if named else "",
            "done" if result.done else "already so",
            result.detail,
            req.incident_id,
        )
        row = incident_event(
            event,
            incident_id=req.incident_id,
            cluster=req.cluster,
            job_id=req.job_id,
            attempt=req.attempt,
            nodes=named,
            action=action,
            acted=True,
            details=SchedulerActDetails(changed=result.done, detail=result.detail, reason=req.reason),
        )
        await record(self._s.audit, row)
        return result


def _result(outcome: actions.Outcome) -> ActionResult:
    return ActionResult(done=outcome.changed, detail=outcome.detail)
