"""The incident workflow: one per interrupted job attempt.

It holds state and timers and nothing else; every side effect is an activity.
Temporal persists each step, so when a worker dies the incident resumes where
it was on another worker, without repeating an action that completed.
"""

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributeKey
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from respawn.audit import AuditEvent, EventType
    from respawn.config import Mode
    from respawn.incident import (
        ActionRequest,
        ActionResult,
        Assessment,
        AssessRequest,
        AttemptStarted,
        Detection,
        DetectionKind,
        FollowRequest,
        Gathered,
        GatherRequest,
        IncidentInput,
        IncidentResult,
        Phase,
        Resumed,
    )
    from respawn.runbook import Action
    from respawn.taxonomy import FailureClass

JOB_ID = SearchAttributeKey.for_keyword("RespawnJobId")
CLUSTER = SearchAttributeKey.for_keyword("RespawnCluster")
FAILURE_CLASS = SearchAttributeKey.for_keyword("RespawnFailureClass")
PHASE = SearchAttributeKey.for_keyword("RespawnPhase")

# Scheduler calls are retried with backoff for as long as a controller restart
# plausibly takes; errors that retrying cannot fix are raised non-retryable.
_SCHEDULER_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=5),
)
_QUICK = dict(start_to_close_timeout=timedelta(seconds=30), schedule_to_close_timeout=timedelta(minutes=5),
              retry_policy=_SCHEDULER_RETRY)
# Activity error types that mean the job is no longer ours to recover.
JOB_GONE = {"JobGone", "JobNotFound", "JobFinished"}
# Cascades: errors that are usually the echo of another rank or node failing.
_CASCADES = {FailureClass.COMM_ERROR, FailureClass.COMM_TIMEOUT}


@workflow.defn(name="Incident")
class IncidentWorkflow:
    def __init__(self) -> None:
        self._detections: list[Detection] = []
        self._phase = Phase.DETECTED
        self._input: IncidentInput | None = None

    @workflow.signal(name="detect")
    def detect(self, detection: Detection) -> None:
        self._detections.append(detection)

    @workflow.query(name="phase")
    def phase(self) -> str:
        return self._phase.value

    @workflow.run
    async def run(self, inp: IncidentInput) -> IncidentResult:
        self._input = inp
        try:
            return await self._handle(inp)
        except ActivityError as err:
            # The owner cancelled the job, it finished, or it vanished while we
            # worked on it: there is nothing left to recover, say so and stop.
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type in JOB_GONE:
                result = IncidentResult(incident_id=workflow.info().workflow_id, phase=Phase.CLOSED,
                                        reason=f"job left recovery: {cause.message}")
                return await self._close(result, Phase.CLOSED)
            raise

    async def _handle(self, inp: IncidentInput) -> IncidentResult:
        iid = workflow.info().workflow_id
        # Signal-with-start delivers the first detection with the start.
        await workflow.wait_condition(lambda: bool(self._detections))
        workflow.upsert_search_attributes([
            JOB_ID.value_set(str(inp.job_id)), CLUSTER.value_set(inp.cluster), PHASE.value_set(self._phase.value)
        ])
        first = self._detections[0]
        await self._record(EventType.DETECTED, at=first.at, pattern=first.pattern, details={
            "kind": first.kind.value, "line": (first.line or "")[:500], "pattern": first.pattern,
            "node": first.node, "job_state": first.job_state, "mode": inp.mode.value,
            "environment": inp.environment,
        })

        # Coalesce: the other ranks' lines and Slurm's verdict arrive within a second.
        await workflow.sleep(timedelta(seconds=inp.settle_s))
        gathered, assessment = await self._assess(iid, inp)
        attribution = assessment.attribution
        if attribution.failure_class in _CASCADES and not attribution.nodes and inp.cascade_wait_s > 0:
            # A dead node shows first as its peers' communication errors; Slurm
            # notices the node a few seconds later. Wait for that, bounded.
            try:
                await workflow.wait_condition(self._node_down_seen, timeout=timedelta(seconds=inp.cascade_wait_s))
                gathered, assessment = await self._assess(iid, inp)
                attribution = assessment.attribution
            except asyncio.TimeoutError:
                pass
        decision = assessment.decision
        workflow.upsert_search_attributes([FAILURE_CLASS.value_set(attribution.failure_class.value)])
        self._set_phase(Phase.ATTRIBUTED)
        common = dict(failure_class=attribution.failure_class.value, pattern=attribution.pattern,
                      cause_layer=attribution.cause_layer.value)
        await self._record(EventType.ATTRIBUTED, nodes=attribution.nodes, **common, details={
            "node_implicated": attribution.node_implicated, "line": (attribution.line or "")[:500],
            "recoverable_by_restart": attribution.recoverable_by_restart, "job_state": gathered.job_state,
            "down_nodes": gathered.evidence.down_nodes,
        })
        acting = inp.mode is Mode.ACTION
        # The recommendation is on record before anything is done about it.
        await self._record(EventType.DECIDED, nodes=attribution.nodes, action=decision.action.value,
                           acted=acting, **common, details={
                               "reason": decision.reason, "exclude": decision.exclude,
                               "newly_excluded": decision.newly_excluded,
                               "checkpoint_step": gathered.checkpoint_step, "mode": inp.mode.value,
                           })
        result = IncidentResult(incident_id=iid, phase=self._phase, failure_class=attribution.failure_class.value,
                                action=decision.action.value, acted=acting, reason=decision.reason,
                                excluded_nodes=decision.exclude)
        if not acting:
            return await self._close(result, Phase.RECOMMENDED)
        if decision.action is Action.STOP:
            await self._record(EventType.STOPPED, action="stop", acted=True, **common,
                               details={"reason": decision.reason})
            return await self._close(result, Phase.STOPPED)

        self._set_phase(Phase.ACTING)
        request = ActionRequest(incident_id=iid, cluster=inp.cluster, job_id=inp.job_id, attempt=inp.attempt,
                                exclude=decision.exclude, reason=decision.reason)
        await workflow.execute_activity("hold_job", request, result_type=ActionResult, **_QUICK)
        await workflow.execute_activity("exclude_nodes", request, result_type=ActionResult, **_QUICK)
        await workflow.execute_activity("release_job", request, result_type=ActionResult, **_QUICK)

        self._set_phase(Phase.FOLLOWING)
        follow = FollowRequest(incident_id=iid, cluster=inp.cluster, job_id=inp.job_id, attempt=inp.attempt,
                               log_offset=gathered.log_end, timeout_s=inp.follow_timeout_s)
        long_poll = dict(start_to_close_timeout=timedelta(seconds=inp.follow_timeout_s + 30),
                         heartbeat_timeout=timedelta(seconds=5), retry_policy=_SCHEDULER_RETRY)
        result.next_attempt = await workflow.execute_activity(
            "await_next_attempt", follow, result_type=AttemptStarted | None, **long_poll)
        if result.next_attempt is not None:
            result.resumed = await workflow.execute_activity(
                "await_progress", follow, result_type=Resumed | None, **long_poll)
        return await self._close(result, Phase.RESUMED if result.resumed else Phase.CLOSED)

    async def _assess(self, iid: str, inp: IncidentInput) -> tuple[Gathered, Assessment]:
        gathered = await workflow.execute_activity(
            "gather_evidence",
            GatherRequest(incident_id=iid, job_id=inp.job_id, attempt=inp.attempt,
                          log_offset=min(d.log_offset for d in self._detections),
                          detections=list(self._detections)),
            result_type=Gathered, **_QUICK)
        assessment = await workflow.execute_activity(
            "assess", AssessRequest(incident=inp, incident_id=iid, gathered=gathered),
            result_type=Assessment, **_QUICK)
        return gathered, assessment

    def _node_down_seen(self) -> bool:
        return any(d.kind is DetectionKind.NODE_DOWN for d in self._detections)

    async def _close(self, result: IncidentResult, phase: Phase) -> IncidentResult:
        self._set_phase(phase)
        result.phase = phase
        await self._record(EventType.INCIDENT_CLOSED, failure_class=result.failure_class, action=result.action,
                           acted=result.acted, details={"phase": phase.value, "reason": result.reason})
        return result

    def _set_phase(self, phase: Phase) -> None:
        self._phase = phase
        workflow.upsert_search_attributes([PHASE.value_set(phase.value)])

    async def _record(self, event_type: EventType, *, at=None, **fields) -> None:
        assert self._input is not None
        iid = workflow.info().workflow_id
        event = AuditEvent(key=f"{iid}/{event_type.value}", event_type=event_type, cluster=self._input.cluster,
                           job_id=self._input.job_id, attempt=self._input.attempt, incident_id=iid,
                           at=at or workflow.now(), **fields)
        await workflow.execute_activity("record_event", event, result_type=bool, **_QUICK)
