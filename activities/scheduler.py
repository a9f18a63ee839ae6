"""Recovery actions on Slurm. Each one reads the job first and acts only when
the desired state does not hold yet, then records what it found or did."""

import asyncio

from temporalio import activity
from temporalio.exceptions import ApplicationError

from respawn.activities.errors import as_activity_error
from respawn.audit.details import SchedulerActDetails
from respawn.audit.trail import EventType, incident_event
from respawn.scheduler.errors import JobPending, SchedulerError
from respawn.scheduler.slurm import JobInfo
from respawn.services import Services
from respawn.surfaces import telemetry
from respawn.wire.incident import ActionRequest, ActionResult

_HELD_REASONS = {"jobhelduser", "jobheldadmin"}
_GONE = {"COMPLETED", "CANCELLED"}


class SchedulerActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="hold_job")
    async def hold_job(self, req: ActionRequest) -> ActionResult:
        """Requeue the attempt in held state, exactly once per incident.

        Slurm's restart count is the durable witness: once it is past the failed
        attempt, the requeue happened (by us before a crash, or by Slurm itself
        after a node failure) and must not happen again.
        """
        async def act() -> ActionResult:
            job = await self._s.slurm.job(req.job_id)
            if job.restart_count > req.attempt:
                return ActionResult(done=False, detail=f"already requeued (restart count {job.restart_count})")
            if job.state in _GONE:
                # The owner cancelled it, or it finished: recovery has nothing left to do.
                raise ApplicationError(f"job is {job.state}", type="JobGone", non_retryable=True)
            if job.state == "PENDING":
                return ActionResult(done=False, detail=f"already pending ({job.state_reason})")
            try:
                await self._s.slurm.requeue_hold(req.job_id)
            except JobPending:
                # Slurm requeued it between our read and our call (node failure).
                return ActionResult(done=False, detail="requeued by Slurm meanwhile")
            return ActionResult(done=True, detail=f"requeued held from {job.state}")

        return await self._run(req, EventType.HELD, "requeue_hold", act)

    @activity.defn(name="exclude_nodes")
    async def exclude_nodes(self, req: ActionRequest) -> ActionResult:
        async def act() -> ActionResult:
            job = await self._s.slurm.job(req.job_id)
            _wait_while_completing(job)
            if sorted(job.excluded_nodes) == sorted(req.exclude):
                return ActionResult(done=False, detail="exclusions already in place")
            await self._s.slurm.set_excluded_nodes(req.job_id, req.exclude)
            # Counted where it changes: a retry finds the exclusions in place and counts nothing.
            telemetry.EXCLUSIONS.inc(len(set(req.exclude) - set(job.excluded_nodes)))
            return ActionResult(done=True, detail=f"excluded {','.join(req.exclude) or 'none'}")

        return await self._run(req, EventType.EXCLUDED, "update_excluded_nodes", act)

    @activity.defn(name="release_job")
    async def release_job(self, req: ActionRequest) -> ActionResult:
        """Release the held job and ask for an immediate start (no requeue back-off)."""
        async def act() -> ActionResult:
            job = await self._s.slurm.job(req.job_id)
            _wait_while_completing(job)
            if job.state != "PENDING":
                return ActionResult(done=False, detail=f"already {job.state}")
            if job.state_reason.lower() in _HELD_REASONS:
                await self._s.slurm.release(req.job_id)
            await self._s.slurm.start_now(req.job_id)
            return ActionResult(done=True, detail="released")

        return await self._run(req, EventType.RELEASED, "release", act)

    @activity.defn(name="drain_nodes")
    async def drain_nodes(self, req: ActionRequest) -> ActionResult:
        """Take nodes with a record of failing out of the pool, with the reason on them."""
        async def act() -> ActionResult:
            drained = []
            for name in req.drain:
                node = await self._s.slurm.node(name)
                if "DRAIN" in {f.upper() for f in node.flags} or node.state.lower().startswith("drain"):
                    continue
                await self._s.slurm.drain(name, f"respawn {req.incident_id}: {req.reason}")
                telemetry.DRAINS.inc()  # a retry finds the node drained and counts nothing
                drained.append(name)
            return ActionResult(done=bool(drained), detail=f"drained {','.join(drained) or 'none (already)'}")

        return await self._run(req, EventType.DRAINED, "drain", act, nodes=req.drain)

    async def _run(self, req: ActionRequest, event: EventType, action: str, act,
                   nodes: list[str] | None = None) -> ActionResult:
        if self._s.audit.query(incident_id=req.incident_id, event_types=[EventType.WATCHDOG_RELEASED], limit=1):
            # The watchdog handed the job back to normal scheduling: this incident acts no more.
            raise ApplicationError("the watchdog released the job after its hold timed out",
                                   type="WatchdogReleased", non_retryable=True)
        heartbeat = asyncio.create_task(_heartbeat())
        try:
            result = await act()
        except SchedulerError as exc:
            raise as_activity_error(exc) from exc
        finally:
            heartbeat.cancel()
        row = incident_event(
            event, incident_id=req.incident_id, cluster=req.cluster, job_id=req.job_id, attempt=req.attempt,
            nodes=nodes if nodes is not None else req.exclude if event is EventType.EXCLUDED else [],
            action=action, acted=True,
            details=SchedulerActDetails(changed=result.done, detail=result.detail, reason=req.reason))
        if self._s.audit.record(row):
            telemetry.recorded(row, self._s.audit)
        return result


def _wait_while_completing(job: JobInfo) -> None:
    """A requeued job stays completing until every node let go of it (a dead
    node: until Slurm declares it DOWN): 22.05 prints it COMPLETING, 24.11
    PENDING with the COMPLETING flag. Retry, with backoff, until no node holds it."""
    if job.completing:
        raise ApplicationError(f"job {job.job_id} is still completing", type="JobCompleting")


async def _heartbeat() -> None:
    """Beat while a Slurm call runs, so a worker that dies mid-action is replaced
    within the heartbeat timeout instead of the whole start-to-close timeout."""
    while True:
        activity.heartbeat()
        await asyncio.sleep(1.0)
