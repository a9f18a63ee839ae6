"""The incident workflow: one per interrupted job attempt.

It holds state and timers and nothing else; every side effect is an activity.
Temporal persists each step, so when a worker dies the incident resumes where
it was on another worker, without repeating an action that completed.
"""

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from respawn.activities.advice import AdviceActivities
    from respawn.activities.assessment import AssessmentActivities
    from respawn.activities.audit import AuditActivities
    from respawn.activities.evidence import EvidenceActivities
    from respawn.activities.follow import FollowActivities
    from respawn.activities.in_job import InJobActivities
    from respawn.activities.probe import ProbeActivities
    from respawn.activities.scheduler import SchedulerActivities
    from respawn.advisor.advice import AdviceRef, AdviceRequest, Desired, Outcome
    from respawn.attribution.runbook import Action
    from respawn.audit.details import (
        AttributedDetails,
        DecidedDetails,
        DetectedDetails,
        IncidentClosedDetails,
        NotInterruptedDetails,
        OverrideDetails,
        RelaunchedDetails,
        RungFailedDetails,
        StoppedDetails,
        SystemicDetails,
    )
    from respawn.audit.report import describe, timeline_entry
    from respawn.audit.trail import AuditEvent, EventType, incident_event
    from respawn.config.cluster import Mode
    from respawn.decision.decide import Decision
    from respawn.decision.ledger import to_mark_down
    from respawn.decision.operator import operator_decision
    from respawn.detection.interruption import Verdict
    from respawn.wire.incident import (
        Acting,
        ActionRequest,
        ActionResult,
        AssessAttemptRequest,
        Assessment,
        AssessRequest,
        Detection,
        DetectionKind,
        FollowRequest,
        Gathered,
        GatherRequest,
        IncidentInput,
        IncidentResult,
        Override,
        OverrideAction,
        Phase,
        Probed,
        ProbeRequest,
        ProbeVerdict,
        Relaunched,
        RelaunchRequest,
        StepEndRequest,
    )
    from respawn.wire.launcher import StepState
    from respawn.wire.taxonomy import FailureClass
    from respawn.workflows.search import CLUSTER, FAILURE_CLASS, JOB_ID, PHASE


_TIMELINE_SHOWN = 40  # audit rows shown in the UI's current details (an incident writes about a dozen)

# Scheduler calls are retried with backoff for as long as a controller restart
# plausibly takes; errors that retrying cannot fix are raised non-retryable.
_SCHEDULER_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=500),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=5),
)


class _Options(TypedDict, total=False):
    """The options of an activity call, typed so that each call's keywords are checked."""

    start_to_close_timeout: timedelta
    schedule_to_close_timeout: timedelta
    heartbeat_timeout: timedelta
    retry_policy: RetryPolicy


_QUICK = _Options(
    start_to_close_timeout=timedelta(seconds=30),
    schedule_to_close_timeout=timedelta(minutes=5),
    retry_policy=_SCHEDULER_RETRY,
)
# The evidence gathered and assessed in one activity: the 30 s each of the two had, and a
# heartbeat, so that a worker killed in it is replaced within 20 s, not 60 (run as a local
# activity since patch `local-assessment`, the same timeouts without the heartbeat).
_ASSESSMENT = _Options(
    start_to_close_timeout=timedelta(seconds=60),
    schedule_to_close_timeout=timedelta(minutes=5),
    heartbeat_timeout=timedelta(seconds=20),
    retry_policy=_SCHEDULER_RETRY,
)
# Scheduler actions heartbeat: a worker killed mid-action is replaced within 20 s. Not 5 s:
# in a storm a worker busy with hundreds of incidents let its actions' heartbeats slip past
# 5 s, each was retried while it still ran, and the retries kept it busy (BENCHMARKS.md,
# "A failure storm"). The timeout is the schedule's, not a step: histories replay alike.
_ACTION = _Options(**_QUICK, heartbeat_timeout=timedelta(seconds=20))


class _LocalOptions(TypedDict, total=False):
    """A local activity's options: those of an activity but its heartbeat, which a local activity
    has none of (its workflow task's timeout notices a worker that died in it)."""

    start_to_close_timeout: timedelta
    schedule_to_close_timeout: timedelta
    retry_policy: RetryPolicy


def _local(options: _Options) -> _LocalOptions:
    return _LocalOptions(
        start_to_close_timeout=options["start_to_close_timeout"],
        schedule_to_close_timeout=options["schedule_to_close_timeout"],
        retry_policy=options["retry_policy"],
    )


def _long_poll(timeout_s: float) -> _Options:
    """A long poll (follow, reconciliation, relaunch): it heartbeats, so a dead worker is noticed
    in seconds, and it may run its own timeout plus a margin."""
    return _Options(
        start_to_close_timeout=timedelta(seconds=timeout_s + 30),
        heartbeat_timeout=timedelta(seconds=5),
        retry_policy=_SCHEDULER_RETRY,
    )


# Activity error types that mean the job is no longer ours to recover.
JOB_GONE = {"JobGone", "JobNotFound", "JobFinished", "WatchdogReleased"}
# Once the incident acts (or has closed) an override can no longer change it.
_TOO_LATE = {
    Phase.ACTING,
    Phase.FOLLOWING,
    Phase.RESUMED,
    Phase.STOPPED,
    Phase.CLOSED,
    Phase.RECOMMENDED,
    Phase.DENIED,
    Phase.RELEASED,
    Phase.NOT_INTERRUPTED,
}
# Which classes were cascades before the runbooks said so (`cascade: true`): read only for
# assessments recorded without `Assessment.cascade`, so an incident opened before keeps its steps.
_CASCADES_BEFORE_RUNBOOKS = {FailureClass.COMM_ERROR, FailureClass.COMM_TIMEOUT}
# Patch: a suspicion waits for the interruption to be confirmed, and a stop on an
# attempt that still runs is a recommendation (respawn/detection/interruption.py).
_CONFIRM_INTERRUPTION = "confirm-interruption"
# Patch: the in-job rungs (restart_in_place, replace_node) relaunch the step through the
# job's launcher, and fall back to the requeue when it is not done (docs/launcher.md).
_IN_JOB_RUNGS = "in-job-rungs"
# Patch: a cascade (an error naming no culprit) probes the nodes' slurmd before it waits for Slurm.
_PROBE_CASCADE = "probe-cascade"
# Patch: a cascade still suspected probes before it waits for its confirmation (a silent node confirms it).
_PROBE_SUSPECTED_CASCADE = "probe-suspected-cascade"
# Patch: a node silent to the probe that the decision excludes is called DOWN before the hold:
# Slurm requeues the job off it at once (the hold then holds that requeue), where a hold first
# would wait for the dead node's answer (MessageTimeout) and the DOWN for SlurmdTimeout.
_MARK_SILENT_DOWN = "mark-silent-down"
# Patch: under the job's launcher the settle ends once the launcher reports the step ended
# (all of srun's output is written then), not after the whole settle window.
_SETTLE_ON_STEP_END = "settle-on-step-end"
# Patch: Slurm's verdict on the attempt (a JOB_ENDED detection) ends the settle, and one that
# came with the first detection leaves none to wait for.
_SETTLE_UNTIL_SLURM_ENDS_IT = "settle-until-slurm-ends-it"
# Patch: the evidence is gathered and assessed in one activity (`assess_attempt`), not two:
# one workflow task fewer per assessment, which a storm's incidents each queue for.
_ONE_ASSESSMENT_ACTIVITY = "one-assessment-activity"
# Patch: the assessment is a local activity, run by the worker in the workflow task that asks for
# it: the incident decides in that task, not in a second one queued behind a storm's others.
# It reads and judges, acting on nothing, so a task retried after its worker died runs it again
# (within the task's 10 s timeout, where the activity's heartbeat took 20 s).
_LOCAL_ASSESSMENT = "local-assessment"
# Patch: a stop of a job whose launcher waits for its word after the step failed tells it to
# give up, so that the job ends now and not after the launcher's `--wait-s`.
_STOP_TELLS_LAUNCHER = "stop-tells-launcher"
# Patch: the audit rows are written by local activities, in the workflow task that asks for
# them: no task-queue round trip nor workflow task of their own (a third of an incident's),
# which a storm's incidents wait on. Still written before the workflow goes on; a workflow
# task retried after a worker died writes the row again, and its key makes that a no-op.
_LOCAL_AUDIT = "local-audit"
_GIVE_UP_ACK_S = 10.0  # the launcher acknowledges within a moment: it polls its channel while it waits


def _cascade(assessment: Assessment) -> bool:
    """Whether the failure is an error naming no culprit: most often the echo of a peer's death."""
    if assessment.cascade is not None:
        return assessment.cascade
    attribution = assessment.attribution
    return attribution.failure_class in _CASCADES_BEFORE_RUNBOOKS and not attribution.nodes


def _probes(inp: IncidentInput, assessment: Assessment) -> bool:
    """Whether the incident asks the nodes before it waits: a cascade, with the wait and the probe on."""
    return _cascade(assessment) and inp.cascade_wait_s > 0 and inp.probe_timeout_s > 0


@workflow.defn(name="Incident")
class IncidentWorkflow:
    def __init__(self) -> None:
        self._detections: list[Detection] = []
        self._phase = Phase.DETECTED
        self._input: IncidentInput | None = None
        self._override: Override | None = None
        self._gathered: Gathered | None = None  # what the last evidence said, for validating overrides
        self._timeline: list[str] = []  # the rows and actions the Temporal UI's current details show, the last ones

    @workflow.signal(name="detect")
    def detect(self, detection: Detection) -> None:
        self._detections.append(detection)

    @workflow.query(name="phase")
    def phase(self) -> str:
        return self._phase.value

    @workflow.signal(name="override")
    def override(self, override: Override) -> None:
        """For the Temporal Web UI: an invalid override is logged and ignored."""
        problem = self._override_problem(override)
        if problem:
            workflow.logger.warning("override ignored: %s", problem)
            return
        self._override = override

    @workflow.update(name="apply_override")
    def apply_override(self, override: Override) -> str:
        """For the CLI: validated first, so the operator hears why it was refused."""
        self._override = override
        return f"{override.action.value} accepted while the incident was {self._phase.value}"

    @apply_override.validator
    def _validate_override(self, override: Override) -> None:
        problem = self._override_problem(override)
        if problem:
            raise ValueError(problem)

    def _override_problem(self, override: Override) -> str | None:
        if self._override is not None:
            return f"already overridden: {self._override.action.value} by {self._override.who}"
        if self._phase in _TOO_LATE:
            return f"too late: the incident is {self._phase.value}; act on Slurm directly"
        awaiting = self._phase is Phase.AWAITING_APPROVAL
        if override.action in (OverrideAction.APPROVE, OverrideAction.DENY) and not awaiting:
            return f"nothing awaits approval (the incident is {self._phase.value})"
        if override.exclude and self._gathered is not None:
            g = self._gathered
            pool = g.cluster_nodes if g.eligible_nodes is None else g.eligible_nodes  # those it may run on
            free = set(pool) - set(g.excluded_nodes) - set(override.exclude)
            if len(free) < len(g.evidence.nodes):
                return (
                    f"excluding {', '.join(override.exclude)} would leave {len(free)} nodes "
                    f"for a {len(g.evidence.nodes)}-node job"
                )
        return None

    @workflow.run
    async def run(self, inp: IncidentInput) -> IncidentResult:
        self._input = inp
        try:
            return await self._handle(inp)
        except (ActivityError, ApplicationError) as err:
            # The owner cancelled the job, it finished, or it vanished while we
            # worked on it: there is nothing left to recover, say so and stop.
            # An activity's error comes wrapped in an ActivityError; a local activity's
            # (the assessment, the audit rows) as it was raised.
            cause = err.cause if isinstance(err, ActivityError) else err
            if isinstance(cause, ApplicationError) and cause.type in JOB_GONE:
                result = IncidentResult(
                    incident_id=workflow.info().workflow_id,
                    phase=Phase.CLOSED,
                    reason=f"job left recovery: {cause.message}",
                )
                return await self._close(result, Phase.CLOSED)
            raise

    async def _handle(self, inp: IncidentInput) -> IncidentResult:
        iid = workflow.info().workflow_id
        # Signal-with-start delivers the first detection with the start.
        await workflow.wait_condition(lambda: bool(self._detections))
        workflow.upsert_search_attributes(
            [JOB_ID.value_set(str(inp.job_id)), CLUSTER.value_set(inp.cluster), PHASE.value_set(self._phase.value)]
        )
        first = self._detections[0]
        await self._record(
            EventType.DETECTED,
            at=first.at,
            pattern=first.pattern,
            details=DetectedDetails(
                kind=first.kind.value,
                line=(first.line or "")[:500],
                pattern=first.pattern,
                node=first.node,
                job_state=first.job_state,
                mode=inp.mode.value,
                environment=inp.environment,
                occurred=first.occurred.astimezone(UTC).isoformat() if first.occurred else None,
                step_seconds=first.step_seconds,
                checkpoint_interval_s=first.checkpoint_interval_s,
                checkpoint_save_s=first.checkpoint_save_s,
            ),
        )

        await self._settle(inp, first)
        gathered, assessment = await self._assess(iid, inp)
        confirming = workflow.patched(_CONFIRM_INTERRUPTION)
        probed = None
        if confirming:
            suspected_at = gathered.last_step
            if (
                assessment.interruption.verdict is Verdict.SUSPECTED
                and _probes(inp, assessment)
                and workflow.patched(_PROBE_SUSPECTED_CASCADE)
            ):
                # The peer's death that such a line echoes is found now, not once Slurm notices
                # (SlurmdTimeout: seconds to minutes): a silent node confirms the interruption.
                probed = await self._probe(inp, gathered)
                if probed.verdict is ProbeVerdict.SILENT:
                    gathered, assessment = await self._assess(iid, inp)
            gathered, assessment = await self._await_confirmation(iid, inp, gathered, assessment)
            if assessment.interruption.verdict is not Verdict.CONFIRMED and self._override is None:
                return await self._not_interrupted(iid, inp, gathered, assessment, suspected_at)
        attribution = assessment.attribution
        cascade = _cascade(assessment)
        if (
            _probes(inp, assessment)
            and (probed is None or probed.verdict is not ProbeVerdict.SILENT)
            and workflow.patched(_PROBE_CASCADE)
        ):
            # Ask the nodes first: a node whose slurmd does not answer is the dead peer, and
            # every node answering refutes one; only a probe that cannot tell waits for Slurm.
            probed = await self._probe(inp, gathered)
            if probed.verdict is ProbeVerdict.SILENT:
                gathered, assessment = await self._assess(iid, inp)
                attribution = assessment.attribution
        if cascade and inp.cascade_wait_s > 0 and (probed is None or probed.verdict is ProbeVerdict.UNKNOWN):
            # A dead node shows first as its peers' communication errors; Slurm
            # notices the node a few seconds later. Wait for that, bounded.
            try:
                await workflow.wait_condition(
                    lambda: self._node_down_seen() or self._override is not None,
                    timeout=timedelta(seconds=inp.cascade_wait_s),
                )
                gathered, assessment = await self._assess(iid, inp)
                attribution = assessment.attribution
            except TimeoutError:
                pass
        decision = assessment.decision
        workflow.upsert_search_attributes([FAILURE_CLASS.value_set(attribution.failure_class.value)])
        self._set_phase(Phase.ATTRIBUTED)
        common: dict[str, Any] = dict(
            failure_class=attribution.failure_class.value,
            pattern=attribution.pattern,
            cause_layer=attribution.cause_layer.value,
        )
        await self._record(
            EventType.ATTRIBUTED,
            nodes=attribution.nodes,
            **common,
            details=AttributedDetails(
                node_implicated=attribution.node_implicated,
                line=(attribution.line or "")[:500],
                recoverable_by_restart=attribution.recoverable_by_restart,
                job_state=gathered.job_state,
                down_nodes=gathered.evidence.down_nodes,
                source=attribution.source.value,
                hook_error=attribution.hook_error,
                hook_rationale=attribution.hook_rationale,
                hook_refused_nodes=attribution.hook_refused_nodes,
                unknown=attribution.unknown,
                last_lines=attribution.last_lines,
            ),
        )
        nodes = assessment.nodes
        # Respawn's own scheduler actions only: a rung in the job, or a controller, leaves the node to Slurm.
        silent = probed.silent if probed is not None and inp.mark_silent_down else []
        ours = inp.acting is Acting.RESPAWN and not decision.action.in_job
        down = to_mark_down(silent, decision.exclude, nodes) if ours else []
        if nodes.systemic:
            await self._record(
                EventType.SYSTEMIC, nodes=attribution.nodes, **common, details=SystemicDetails(reason=nodes.reason)
            )
        acting = inp.mode is Mode.ACTION
        # A stop withholds the requeue of an attempt that ended; of one that still runs, it withholds nothing.
        withholds_nothing = confirming and not assessment.interruption.ended
        # The recommendation is on record before anything is done about it.
        await self._record(
            EventType.DECIDED,
            nodes=attribution.nodes,
            action=decision.action.value,
            acted=acting and not (decision.action is Action.STOP and withholds_nothing),
            **common,
            details=DecidedDetails(
                reason=decision.reason,
                exclude=decision.exclude,
                newly_excluded=decision.newly_excluded,
                drain=nodes.drain,
                drain_backed=nodes.drain_backed,
                down=down,
                systemic=nodes.systemic,
                checkpoint_step=gathered.checkpoint_step,
                mode=inp.mode.value,
                interruption=assessment.interruption.why if confirming else None,
                submitted=inp.submitted.astimezone(UTC).isoformat() if inp.submitted else None,
                fallback=decision.fallback.value if decision.fallback else None,
                last_step=gathered.last_step,
                job_nodes=gathered.evidence.nodes,
                cluster_size=len(gathered.cluster_nodes),
                launcher=gathered.launcher,
                array_job_id=gathered.array_job_id,
                gpus=gathered.gpus,
            ),
        )
        result = IncidentResult(
            incident_id=iid,
            phase=self._phase,
            failure_class=attribution.failure_class.value,
            action=decision.action.value,
            acted=acting,
            reason=decision.reason,
            excluded_nodes=decision.newly_excluded if decision.action.in_job else decision.exclude,
        )
        drain = nodes.drain_backed
        if acting and inp.approval is not None and self._override is None:
            await self._await_approval(inp)
        if self._override is not None:
            # The operator's word replaces Respawn's, in observe mode too: it is a
            # person's explicit command, on record with who and why.
            override = self._override
            await self._record(
                EventType.OVERRIDE,
                action=override.action.value,
                nodes=override.exclude,
                acted=override.action not in (OverrideAction.DENY,),
                details=OverrideDetails(who=override.who, reason=override.reason),
            )
            drain = down = []  # an operator decides about nodes himself
            if override.action is OverrideAction.DENY:
                result.acted, result.reason = False, f"denied by {override.who}: {override.reason}"
                return await self._close(result, Phase.DENIED)
            if override.action is OverrideAction.RELEASE:
                await self._release_unchanged(iid, inp, f"{override.who}: {override.reason}")
                result.action, result.reason = "release", f"released by {override.who}: {override.reason}"
                return await self._close(result, Phase.RELEASED)
            if override.action is not OverrideAction.APPROVE:
                decision = operator_decision(override, gathered.excluded_nodes)
            acting = True
            result.action, result.acted, result.reason = decision.action.value, True, decision.reason
            result.excluded_nodes = decision.exclude
        if not acting:
            return await self._close(result, Phase.RECOMMENDED)
        if decision.action is Action.STOP:
            if withholds_nothing:
                result.acted = False
                result.reason = f"{decision.reason}; the attempt still runs, so stopping withholds nothing"
                return await self._close(result, Phase.RECOMMENDED)
            if inp.acting is Acting.CONTROLLER:
                outcome = await self._advise(iid, inp, Desired.STOP, decision.exclude, [], decision.reason)
                if not outcome.converged:
                    result.acted, result.reason = False, f"{decision.reason}; advice not carried out: {outcome.detail}"
                    return await self._close(result, Phase.CLOSED)
            launcher = None
            if (
                inp.acting is Acting.RESPAWN  # a cluster's controller acts there: its jobs' channels are not ours
                and gathered.launcher is not None
                and gathered.launcher.state is StepState.FAILED
                and workflow.patched(_STOP_TELLS_LAUNCHER)
            ):
                told = await self._tell_launcher(
                    InJobActivities.give_up_step, iid, inp, [], decision.reason, _GIVE_UP_ACK_S
                )
                launcher = told.detail[:500] if told.done else f"not told to give up: {told.detail[:500]}"
            await self._record(
                EventType.STOPPED,
                action="stop",
                acted=True,
                **common,
                details=StoppedDetails(reason=decision.reason, launcher=launcher),
            )
            return await self._close(result, Phase.STOPPED)

        if decision.action.in_job:
            # Finest first: the step relaunched in the allocation; the requeue only when that fails.
            if workflow.patched(_IN_JOB_RUNGS):
                relaunched = await self._relaunch(iid, inp, gathered, decision, common, result)
                if relaunched is not None:
                    return relaunched
            decision = Decision(
                action=decision.fallback or decision.action.fallback,
                exclude=decision.exclude,
                reason=f"{decision.reason}; fell back to the requeue",
            )
            result.action, result.reason, result.excluded_nodes = (
                decision.action.value,
                decision.reason,
                decision.exclude,
            )

        self._set_phase(Phase.ACTING)
        if inp.acting is Acting.CONTROLLER:
            # The cluster's controller holds, excludes, releases (and drains) in our place.
            outcome = await self._advise(iid, inp, Desired.RESTART, decision.exclude, drain, decision.reason)
            if not outcome.converged:
                result.acted, result.reason = False, f"{decision.reason}; advice not carried out: {outcome.detail}"
                return await self._close(result, Phase.CLOSED)
        else:
            request = ActionRequest(
                incident_id=iid,
                cluster=inp.cluster,
                job_id=inp.job_id,
                attempt=inp.attempt,
                exclude=decision.exclude,
                drain=drain,
                down=down,
                reason=decision.reason,
            )
            if down and workflow.patched(_MARK_SILENT_DOWN):
                self._acted(
                    await workflow.execute_activity_method(SchedulerActivities.mark_nodes_down, request, **_ACTION)
                )
            self._acted(await workflow.execute_activity_method(SchedulerActivities.hold_job, request, **_ACTION))
            self._acted(await workflow.execute_activity_method(SchedulerActivities.exclude_nodes, request, **_ACTION))
            self._acted(await workflow.execute_activity_method(SchedulerActivities.release_job, request, **_ACTION))
            if drain:
                # After the release, so the job is not kept waiting for it.
                self._acted(await workflow.execute_activity_method(SchedulerActivities.drain_nodes, request, **_ACTION))

        self._set_phase(Phase.FOLLOWING)
        follow, long_poll = self._following(iid, inp, gathered.log_end, in_job=False)
        result.next_attempt = await workflow.execute_activity_method(
            FollowActivities.await_next_attempt, follow, **long_poll
        )
        if result.next_attempt is not None:
            result.resumed = await workflow.execute_activity_method(
                FollowActivities.await_progress, follow, **long_poll
            )
        return await self._close(result, Phase.RESUMED if result.resumed else Phase.CLOSED)

    def _following(self, iid: str, inp: IncidentInput, log_offset: int, in_job: bool) -> tuple[FollowRequest, _Options]:
        """What following the job until it trains again asks, and the long polls' options."""
        follow = FollowRequest(
            incident_id=iid,
            cluster=inp.cluster,
            job_id=inp.job_id,
            attempt=inp.attempt,
            log_offset=log_offset,
            timeout_s=inp.follow_timeout_s,
            in_job=in_job,
            fault_at=self._detections[0].occurred or self._detections[0].at,
        )
        return follow, _long_poll(inp.follow_timeout_s)

    async def _tell_launcher(
        self,
        instruct: Callable[[InJobActivities, RelaunchRequest], Awaitable[Relaunched]],
        iid: str,
        inp: IncidentInput,
        exclude: list[str],
        reason: str,
        timeout_s: float,
    ) -> Relaunched:
        """An instruction for the job's launcher (relaunch, or give up), and its acknowledgement."""
        request = RelaunchRequest(
            incident_id=iid,
            cluster=inp.cluster,
            job_id=inp.job_id,
            attempt=inp.attempt,
            exclude=exclude,
            reason=reason,
            timeout_s=timeout_s,
        )
        return await workflow.execute_activity_method(instruct, request, **_long_poll(timeout_s))

    async def _relaunch(
        self,
        iid: str,
        inp: IncidentInput,
        gathered: Gathered,
        decision: Decision,
        common: dict[str, Any],
        result: IncidentResult,
    ) -> IncidentResult | None:
        """An in-job rung: the job's launcher relaunches the step in the allocation, then the
        incident follows it training again. None when it was not done: on record, with why."""
        self._set_phase(Phase.ACTING)
        relaunched = await self._tell_launcher(
            InJobActivities.relaunch_step, iid, inp, decision.newly_excluded, decision.reason, inp.relaunch_timeout_s
        )
        if not relaunched.done:
            fallback = decision.fallback or decision.action.fallback
            await self._record(
                EventType.RUNG_FAILED,
                action=fallback.value,
                nodes=decision.newly_excluded,
                **common,
                details=RungFailedDetails(rung=decision.action.value, why=relaunched.detail, fallback=fallback.value),
            )
            return None
        await self._record(
            EventType.RELAUNCHED,
            action=decision.action.value,
            nodes=relaunched.nodes,
            acted=True,
            **common,
            details=RelaunchedDetails(
                rung=decision.action.value,
                generation=relaunched.generation,
                excluded=decision.newly_excluded,
                detail=relaunched.detail[:500],
                reason=decision.reason,
            ),
        )
        result.relaunched = True
        result.log_end = relaunched.log_end if relaunched.log_end is not None else gathered.log_end
        self._set_phase(Phase.FOLLOWING)
        follow, long_poll = self._following(iid, inp, gathered.log_end, in_job=True)
        result.resumed = await workflow.execute_activity_method(FollowActivities.await_progress, follow, **long_poll)
        return await self._close(result, Phase.RESUMED if result.resumed else Phase.CLOSED)

    async def _await_confirmation(
        self, iid: str, inp: IncidentInput, gathered: Gathered, assessment: Assessment
    ) -> tuple[Gathered, Assessment]:
        """While the attempt still runs, a failure-like line is a suspicion: wait, bounded by the
        confirmation window, for what confirms it (the attempt's end, a stall, a node down, a
        certain line), judging again at each new detection and once the window has passed."""
        deadline = workflow.now() + timedelta(seconds=inp.confirm_window_s)
        while assessment.interruption.verdict is Verdict.SUSPECTED and self._override is None:
            remaining = (deadline - workflow.now()).total_seconds()
            if remaining <= 0:
                break
            self._set_phase(Phase.SUSPECTED)
            seen = len(self._detections)
            try:
                await workflow.wait_condition(
                    lambda: len(self._detections) > seen or self._override is not None,  # noqa: B023 (awaited here)
                    timeout=timedelta(seconds=remaining),
                )
            except TimeoutError:
                pass
            gathered, assessment = await self._assess(iid, inp)
        return gathered, assessment

    async def _not_interrupted(
        self, iid: str, inp: IncidentInput, gathered: Gathered, assessment: Assessment, suspected_at: int | None
    ) -> IncidentResult:
        """Nothing to recover: the attempt trained on past the window, or ended as meant. The
        suspicion is on record with its line and why; the attempt stays watched."""
        attribution, verdict = assessment.attribution, assessment.interruption
        why = verdict.why
        if verdict.verdict is Verdict.SUSPECTED:
            why = f"the attempt still ran {inp.confirm_window_s:g} s after the suspicion"
            if gathered.last_step is not None and gathered.last_step != suspected_at:
                why += f" and trained on (step {suspected_at} to {gathered.last_step})"
        await self._record(
            EventType.NOT_INTERRUPTED,
            failure_class=attribution.failure_class.value,
            pattern=attribution.pattern,
            cause_layer=attribution.cause_layer.value,
            acted=False,
            details=NotInterruptedDetails(
                why=why,
                line=(attribution.line or "")[:500],
                job_state=gathered.job_state,
                suspected_at_step=suspected_at,
                last_step=gathered.last_step,
                job_restarts=verdict.job_restarts or None,
            ),
        )
        result = IncidentResult(
            incident_id=iid,
            phase=Phase.NOT_INTERRUPTED,
            failure_class=attribution.failure_class.value,
            reason=why,
            log_end=gathered.log_end,
        )
        return await self._close(result, Phase.NOT_INTERRUPTED)

    async def _await_approval(self, inp: IncidentInput) -> None:
        """Wait for an operator's word; when none comes in time, the environment's default speaks."""
        assert inp.approval is not None
        self._set_phase(Phase.AWAITING_APPROVAL)
        try:
            await workflow.wait_condition(
                lambda: self._override is not None, timeout=timedelta(seconds=inp.approval.timeout_s)
            )
        except TimeoutError:
            self._override = Override(
                action=OverrideAction(inp.approval.default),
                who="approval-timeout",
                reason=f"no answer within {inp.approval.timeout_s:.0f} s: the environment's default",
            )

    async def _release_unchanged(self, iid: str, inp: IncidentInput, reason: str) -> None:
        if inp.acting is Acting.CONTROLLER:
            await self._advise(iid, inp, Desired.RELEASE, [], [], reason)  # its outcome is on record
            return
        request = ActionRequest(
            incident_id=iid, cluster=inp.cluster, job_id=inp.job_id, attempt=inp.attempt, reason=reason
        )
        self._acted(await workflow.execute_activity_method(SchedulerActivities.release_job, request, **_ACTION))

    async def _advise(
        self, iid: str, inp: IncidentInput, desired: Desired, exclude: list[str], drain: list[str], reason: str
    ) -> Outcome:
        """advisor transport: publish what is to be done and wait for the cluster's controller to do it."""
        advice = await workflow.execute_activity_method(
            AdviceActivities.publish_advice,
            AdviceRequest(
                incident_id=iid,
                cluster=inp.cluster,
                job_id=inp.job_id,
                attempt=inp.attempt,
                desired=desired,
                exclude=exclude,
                drain=drain,
                reason=reason,
            ),
            **_QUICK,
        )
        ref = AdviceRef(
            incident_id=iid,
            cluster=inp.cluster,
            job_id=inp.job_id,
            attempt=inp.attempt,
            generation=advice.generation,
            timeout_s=inp.reconcile_timeout_s,
        )
        return await workflow.execute_activity_method(
            AdviceActivities.await_reconciliation,
            ref,
            **_long_poll(inp.reconcile_timeout_s),
        )

    async def _assess(self, iid: str, inp: IncidentInput) -> tuple[Gathered, Assessment]:
        request = GatherRequest(
            incident_id=iid,
            job_id=inp.job_id,
            attempt=inp.attempt,
            log_offset=min(d.log_offset for d in self._detections),
            detections=list(self._detections),
        )
        if workflow.patched(_ONE_ASSESSMENT_ACTIVITY):
            attempt = AssessAttemptRequest(incident=inp, gather=request)
            if workflow.patched(_LOCAL_ASSESSMENT):
                assessed = await workflow.execute_local_activity_method(
                    AssessmentActivities.assess_attempt, attempt, **_local(_ASSESSMENT)
                )
            else:
                assessed = await workflow.execute_activity_method(
                    AssessmentActivities.assess_attempt, attempt, **_ASSESSMENT
                )
            self._gathered = assessed.gathered
            return assessed.gathered, assessed.assessment
        gathered = await workflow.execute_activity_method(EvidenceActivities.gather_evidence, request, **_QUICK)
        self._gathered = gathered
        assessment = await workflow.execute_activity_method(
            AssessmentActivities.assess,
            AssessRequest(incident=inp, incident_id=iid, gathered=gathered, detections=list(self._detections)),
            **_QUICK,
        )
        return gathered, assessment

    async def _probe(self, inp: IncidentInput, gathered: Gathered) -> Probed:
        """Probe the allocation's nodes; each silent one joins the incident as a node down, as if
        Slurm had said so (the evidence then names it: respawn/attribution/attribute.py)."""
        probed = await workflow.execute_activity_method(
            ProbeActivities.probe_nodes,
            ProbeRequest(nodes=gathered.evidence.nodes, timeout_s=inp.probe_timeout_s),
            **_QUICK,
        )
        for node in probed.silent:
            self._detections.append(
                Detection(
                    kind=DetectionKind.NODE_DOWN,
                    at=workflow.now(),
                    job_id=inp.job_id,
                    attempt=inp.attempt,
                    submitted=inp.submitted,
                    node=node,
                    line=f"respawn-probe: slurmd on {node} did not answer within {inp.probe_timeout_s:g} s"
                    f" (answered: {', '.join(probed.answered)})",
                    log_offset=min(d.log_offset for d in self._detections),
                )
            )
        return probed

    def _node_down_seen(self) -> bool:
        return any(d.kind is DetectionKind.NODE_DOWN for d in self._detections)

    def _slurm_ended_it(self) -> bool:
        return any(d.kind is DetectionKind.JOB_ENDED for d in self._detections)

    async def _settle(self, inp: IncidentInput, first: Detection) -> None:
        """Coalesce: the other ranks' lines and Slurm's verdict arrive within a second.

        Slurm's verdict ends the settle (patch `settle-until-slurm-ends-it`): the evidence is then
        whole, as gather_evidence reads the ended attempt's output, its nodes' kernel logs and
        their GPU metrics itself. The verdict came with the first detection in a storm, where the
        settle's timer was one more workflow task per incident waiting for the worker."""
        if self._slurm_ended_it() and workflow.patched(_SETTLE_UNTIL_SLURM_ENDS_IT):
            return
        if first.launched and inp.settle_s > 0 and workflow.patched(_SETTLE_ON_STEP_END):
            await workflow.execute_activity_method(
                InJobActivities.await_step_end,
                StepEndRequest(cluster=inp.cluster, job_id=inp.job_id, within_s=inp.settle_s),
                **_long_poll(inp.settle_s),
            )
        elif workflow.patched(_SETTLE_UNTIL_SLURM_ENDS_IT):
            try:
                await workflow.wait_condition(self._slurm_ended_it, timeout=timedelta(seconds=inp.settle_s))
            except TimeoutError:
                pass
        else:
            await workflow.sleep(timedelta(seconds=inp.settle_s))

    async def _close(self, result: IncidentResult, phase: Phase) -> IncidentResult:
        self._set_phase(phase)
        result.phase = phase
        await self._record(
            EventType.INCIDENT_CLOSED,
            failure_class=result.failure_class,
            action=result.action,
            acted=result.acted,
            details=IncidentClosedDetails(phase=phase.value, reason=result.reason),
        )
        return result

    def _set_phase(self, phase: Phase) -> None:
        self._phase = phase
        workflow.upsert_search_attributes([PHASE.value_set(phase.value)])

    async def _record(self, event_type: EventType, *, at: datetime | None = None, **fields: Any) -> None:
        assert self._input is not None
        event = incident_event(
            event_type,
            incident_id=workflow.info().workflow_id,
            cluster=self._input.cluster,
            job_id=self._input.job_id,
            attempt=self._input.attempt,
            at=at or workflow.now(),
            **fields,
        )
        if workflow.patched(_LOCAL_AUDIT):
            await workflow.execute_local_activity_method(AuditActivities.record_event, event, **_local(_QUICK))
        else:
            await workflow.execute_activity_method(AuditActivities.record_event, event, **_QUICK)
        self._show(event)

    def _show(self, event: AuditEvent) -> None:
        """The incident's story so far in the Temporal Web UI (its "Current Details"), one line
        per audit row written, as `respawn demo` prints its timeline: whoever opens the incident
        there reads what happened without the trail. Metadata the UI asks the worker for, no
        command in the history: replay is untouched."""
        what = timeline_entry(event.nodes, event.pattern, event.action, describe(event))
        self._show_line(event.at, event.event_type.value, what)

    def _acted(self, result: ActionResult) -> None:
        """A scheduler action's outcome in the UI's story (its audit row is the activity's own)."""
        self._show_line(workflow.now(), "acted", result.detail if result.done else f"{result.detail} (already so)")

    def _show_line(self, at: datetime, label: str, what: str) -> None:
        assert self._input is not None
        # `what` carries a job's own text (the line it printed): a code span, backticks out, so
        # the UI renders no link, image or markup of the job's making.
        text = what.replace("`", "'")
        self._timeline.append(f"- `{at:%H:%M:%S}` **{label}**" + (f" `{text}`" if text else ""))
        del self._timeline[:-_TIMELINE_SHOWN]  # an incident that relaunches in the job for days writes on
        head = f"job {self._input.job_id} on {self._input.cluster}, attempt {self._input.attempt} (times UTC)"
        workflow.set_current_details("\n".join([head, "", *self._timeline]))
