"""The incident workflow on Temporal's time-skipping test server, with fake activities:
its order of steps, its timers and its modes, without Slurm."""

import asyncio
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from temporalio import activity
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowUpdateFailedError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from respawn.attribution.runbook import Action
from respawn.audit.trail import AuditEvent
from respawn.config.cluster import Approval, Mode
from respawn.decision.decide import Decision
from respawn.decision.ledger import NodeVerdict
from respawn.detection.interruption import Interruption
from respawn.wire.attribution import Attribution
from respawn.wire.evidence import Evidence
from respawn.wire.incident import (
    Acting,
    ActionRequest,
    ActionResult,
    AssessAttemptRequest,
    Assessed,
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
    Override,
    OverrideAction,
    Phase,
    Probed,
    ProbeRequest,
    ProbeVerdict,
    Resumed,
)
from respawn.wire.launcher import LauncherView
from respawn.wire.taxonomy import CauseLayer, FailureClass
from respawn.workflows.incident import IncidentWorkflow


class Fakes:
    """Activities that answer from a script and remember what was called, in order."""

    def __init__(
        self,
        attributions: list[Attribution],
        decision: Decision,
        gone_at: str | None = None,
        nodes: NodeVerdict | None = None,
        interruptions: list[Interruption] | None = None,
        cascade: bool | None = None,
        probed: Probed | None = None,
        launcher: LauncherView | None = None,
    ) -> None:
        self.launcher = launcher  # the job's in-job launcher as the evidence reads it
        self.gone_at = gone_at  # an action (or gather_evidence) that finds the job gone
        self.nodes = nodes or NodeVerdict()
        self._interruptions = interruptions  # the verdict of each assessment in turn (the last one repeats)
        self._cascade = cascade  # what the runbook says (None: as recorded before runbooks said it)
        # What probing the nodes finds (activities/probe.py); by default it cannot tell, so a cascade waits.
        self.probed = probed or Probed(verdict=ProbeVerdict.UNKNOWN, unknown=["n1", "n2", "n3"])
        self.requests: dict[str, ActionRequest] = {}
        self.gathers: list[GatherRequest] = []
        self.calls: list[str] = []
        self.events: list[AuditEvent] = []
        self._attributions = attributions
        self._decision = decision

    def activities(self):
        @activity.defn(name="gather_evidence")
        async def gather(req: GatherRequest) -> Gathered:
            self.calls.append("gather_evidence")
            self.gathers.append(req)
            if self.gone_at == "gather_evidence":
                raise ApplicationError("job 5 not found", type="JobNotFound", non_retryable=True)
            return Gathered(
                evidence=Evidence(cluster="c", job_id=req.job_id, attempt=req.attempt),
                log_end=100,
                checkpoint_step=10,
                cluster_nodes=["n1", "n2", "n3"],
                excluded_nodes=[],
                job_state="FAILED",
                launcher=self.launcher,
            )

        @activity.defn(name="assess")
        async def assess(req: AssessRequest) -> Assessment:
            self.calls.append("assess")
            attribution = self._attributions[min(self.calls.count("assess"), len(self._attributions)) - 1]
            assessment = Assessment(
                attribution=attribution, decision=self._decision, nodes=self.nodes, cascade=self._cascade
            )
            if self._interruptions:
                assessment.interruption = self._interruptions[
                    min(self.calls.count("assess"), len(self._interruptions)) - 1
                ]
            return assessment

        def action(name: str):
            @activity.defn(name=name)
            async def act(req: ActionRequest) -> ActionResult:
                self.calls.append(name)
                self.requests[name] = req
                if name == self.gone_at:
                    raise ApplicationError("job is CANCELLED", type="JobGone", non_retryable=True)
                return ActionResult(done=True, detail=name)

            return act

        @activity.defn(name="await_next_attempt")
        async def next_attempt(req: FollowRequest) -> AttemptStarted | None:
            self.calls.append("await_next_attempt")
            return AttemptStarted(attempt=req.attempt + 1, nodes=["n1", "n3"], at=datetime.now(UTC))

        @activity.defn(name="await_progress")
        async def progress(req: FollowRequest) -> Resumed | None:
            self.calls.append("await_progress")
            return Resumed(step=11, resumed_from=10, at=datetime.now(UTC))

        @activity.defn(name="probe_nodes")
        async def probe(req: ProbeRequest) -> Probed:
            self.calls.append("probe_nodes")
            return self.probed

        @activity.defn(name="record_event")
        async def record(event: AuditEvent) -> bool:
            self.calls.append(f"record:{event.event_type.value}")
            self.events.append(event)
            return True

        @activity.defn(name="assess_attempt")
        async def assess_attempt(req: AssessAttemptRequest) -> Assessed:
            # The two fakes in turn, as the real activity runs the two steps (calls: both names).
            gathered = await gather(req.gather)
            judged = AssessRequest(
                incident=req.incident,
                incident_id=req.gather.incident_id,
                gathered=gathered,
                detections=req.gather.detections,
            )
            return Assessed(gathered=gathered, assessment=await assess(judged))

        return [
            gather,
            assess,
            assess_attempt,
            action("hold_job"),
            action("exclude_nodes"),
            action("release_job"),
            action("drain_nodes"),
            action("mark_nodes_down"),
            next_attempt,
            progress,
            probe,
            record,
        ]


XID = Attribution(
    failure_class=FailureClass.GPU_HARDWARE,
    cause_layer=CauseLayer.HARDWARE,
    node_implicated=True,
    nodes=["n2"],
    recoverable_by_restart=True,
    pattern="xid-fatal",
)
COMM = Attribution(
    failure_class=FailureClass.COMM_ERROR,
    cause_layer=CauseLayer.AMBIGUOUS,
    recoverable_by_restart=True,
    pattern="gloo-connection-reset",
)
NODE = Attribution(
    failure_class=FailureClass.NODE_FAILURE,
    cause_layer=CauseLayer.HARDWARE,
    node_implicated=True,
    nodes=["n3"],
    recoverable_by_restart=True,
    pattern=None,
)
RESTART = Decision(action=Action.RESTART_EXCLUDING, exclude=["n2"], newly_excluded=["n2"], reason="xid on n2")


async def run_incident(
    env,
    fakes: Fakes,
    mode: Mode = Mode.ACTION,
    signals: list[Detection] = (),
    cascade_wait_s: float = 20.0,
    approval: Approval | None = None,
    operator=None,
    acting: Acting = Acting.RESPAWN,
    mark_silent_down: bool = False,
    launched: bool = False,
    after=None,
    detection: Detection | None = None,
) -> IncidentResult:
    queue = f"q-{uuid.uuid4()}"
    detection = detection or Detection(
        kind=DetectionKind.LOG_LINE, at=datetime.now(UTC), job_id=5, attempt=0, line="Xid 79", launched=launched
    )
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[IncidentWorkflow],
        activities=fakes.activities(),
        workflow_failure_exception_types=[Exception],
    ):
        handle = await env.client.start_workflow(
            IncidentWorkflow.run,
            IncidentInput(
                cluster="c",
                job_id=5,
                attempt=0,
                environment="demo",
                mode=mode,
                settle_s=1.0,
                cascade_wait_s=cascade_wait_s,
                follow_timeout_s=60,
                approval=approval,
                acting=acting,
                mark_silent_down=mark_silent_down,
            ),
            id=f"incident-c-5-0-{uuid.uuid4()}",
            task_queue=queue,
            start_signal="detect",
            start_signal_args=[detection],
            execution_timeout=timedelta(hours=1),
        )
        for extra in signals:
            await handle.signal("detect", extra)
        if operator is not None:
            await operator(handle)
        result = await handle.result()
        if after is not None:  # while the worker still answers queries
            await after(handle)
        return result


async def test_action_mode_records_the_decision_before_acting_and_follows_the_next_attempt(env):
    fakes = Fakes([XID], RESTART)
    result = await run_incident(env, fakes)
    assert result.phase is Phase.RESUMED and result.excluded_nodes == ["n2"]
    assert result.resumed.resumed_from == 10
    assert fakes.calls == [
        "record:detected",
        "gather_evidence",
        "assess",
        "record:attributed",
        "record:decided",
        "hold_job",
        "exclude_nodes",
        "release_job",
        "await_next_attempt",
        "await_progress",
        "record:incident_closed",
    ]
    decided = next(e for e in fakes.events if e.event_type.value == "decided")
    assert decided.acted is True and decided.details["exclude"] == ["n2"]
    assert len({e.key for e in fakes.events}) == len(fakes.events)  # one key per step


async def test_the_temporal_ui_shows_the_incident_as_its_audit_trail_tells_it(env):
    fakes = Fakes([XID], RESTART)
    shown: list[str] = []

    async def details(handle):
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        shown.extend(metadata.current_details.splitlines())

    result = await run_incident(env, fakes, after=details)
    assert result.phase is Phase.RESUMED
    assert shown[:2] == ["job 5 on c, attempt 0 (times UTC)", ""]
    assert [line.split("**")[1] for line in shown[2:]] == [
        "detected",
        "attributed",
        "decided",
        "acted",
        "acted",
        "acted",
        "incident_closed",
    ]
    decided = next(line for line in shown if "**decided**" in line)
    assert "n2" in decided and "restart_excluding" in decided
    assert [line.split("** ")[1] for line in shown if "**acted**" in line] == [
        "`hold_job`",
        "`exclude_nodes`",
        "`release_job`",
    ]


async def test_a_jobs_own_text_in_the_ui_details_is_literal_never_markup(env):
    """The detection's line is what the job printed: in the Temporal UI it is a code span, with no
    backtick of the job's to close it, so no link or image the job wrote is rendered."""
    fakes = Fakes([XID], RESTART)
    shown: list[str] = []

    async def details(handle):
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        shown.extend(metadata.current_details.splitlines())

    hostile = Detection(
        kind=DetectionKind.LOG_LINE,
        at=datetime.now(UTC),
        job_id=5,
        attempt=0,
        line="Xid 79 `![x](http://evil/p.png)` [ok](javascript:alert(1))",
    )
    await run_incident(env, fakes, detection=hostile, after=details)
    detected = next(line for line in shown if "**detected**" in line)
    assert detected.endswith("`") and detected.count("`") == 4  # the time's span and the text's, nothing else
    assert "![x](http://evil/p.png)" in detected and "[ok](javascript:alert(1))" in detected


async def test_observe_mode_recommends_and_never_touches_the_scheduler(env):
    fakes = Fakes([XID], RESTART)
    result = await run_incident(env, fakes, mode=Mode.OBSERVE)
    assert result.phase is Phase.RECOMMENDED and result.acted is False
    assert not {"hold_job", "exclude_nodes", "release_job"} & set(fakes.calls)
    decided = next(e for e in fakes.events if e.event_type.value == "decided")
    assert decided.acted is False and decided.action == "restart_excluding"


async def test_stop_decision_does_nothing_on_the_scheduler(env):
    fakes = Fakes([XID], Decision(action=Action.STOP, reason="app bug"))
    result = await run_incident(env, fakes)
    assert result.phase is Phase.STOPPED
    assert "hold_job" not in fakes.calls and "record:stopped" in fakes.calls


async def test_communication_error_waits_for_a_dead_node_then_blames_it(env):
    fakes = Fakes([COMM, NODE], RESTART)
    down = Detection(kind=DetectionKind.NODE_DOWN, at=datetime.now(UTC), job_id=5, attempt=0, node="n3")
    result = await run_incident(env, fakes, signals=[down])
    assert fakes.calls.count("gather_evidence") == 2
    assert result.failure_class == "node_failure"


async def test_communication_error_with_no_dead_node_goes_on_after_the_wait(env):
    fakes = Fakes([COMM], RESTART)
    result = await run_incident(env, fakes, cascade_wait_s=300)  # time skipping: no real wait
    assert fakes.calls.count("gather_evidence") == 1
    assert result.failure_class == "comm_error" and result.phase is Phase.RESUMED


async def test_the_runbook_decides_what_waits_for_a_dead_node(env):
    """`cascade: true` in a runbook, not a set in the workflow, makes an incident wait."""
    down = Detection(kind=DetectionKind.NODE_DOWN, at=datetime.now(UTC), job_id=5, attempt=0, node="n3")
    told = Fakes([XID, NODE], RESTART, cascade=True)
    await run_incident(env, told, signals=[down])
    assert told.calls.count("gather_evidence") == 2
    not_told = Fakes([COMM, NODE], RESTART, cascade=False)
    result = await run_incident(env, not_told, signals=[down])
    assert not_told.calls.count("gather_evidence") == 1 and result.failure_class == "comm_error"


async def test_job_cancelled_by_its_owner_mid_incident_closes_it_and_does_nothing_more(env):
    fakes = Fakes([XID], RESTART, gone_at="hold_job")
    result = await run_incident(env, fakes)
    assert result.phase is Phase.CLOSED and "CANCELLED" in result.reason
    assert "exclude_nodes" not in fakes.calls and "release_job" not in fakes.calls
    assert fakes.calls[-1] == "record:incident_closed"


async def incident_result(env: WorkflowEnvironment, incident_id: str) -> IncidentResult:
    """The result of an incident the detector started (signal-with-start). Only a handle the test
    client started unlocks the time-skipping server while its result is awaited; unlocked here, the
    incident's timers (settle, confirmation window) pass at once instead of in real time."""
    async with env.time_skipping_unlocked():
        handle = env.client.get_workflow_handle(incident_id, result_type=IncidentResult)
        return await handle.result(rpc_timeout=timedelta(seconds=30))


async def wait_phase(handle, phase: Phase, timeout: float = 30.0) -> None:
    """Poll the incident's phase (time is not skipped while nobody awaits the result)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while asyncio.get_running_loop().time() < deadline:
        if await handle.query("phase") == phase.value:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"incident never reached {phase}")


async def test_operator_stop_replaces_the_decision_and_is_recorded_with_who_and_why(env):
    fakes = Fakes([XID], RESTART)

    async def stop(handle):
        answer = await handle.execute_update(
            "apply_override", Override(action=OverrideAction.STOP, reason="bad data shard", who="alice")
        )
        assert "stop accepted" in answer

    result = await run_incident(env, fakes, operator=stop)
    assert result.phase is Phase.STOPPED and "alice" in result.reason
    assert "hold_job" not in fakes.calls
    override = next(e for e in fakes.events if e.event_type.value == "override")
    assert override.details == {"who": "alice", "reason": "bad data shard"}
    # Respawn's own recommendation is on record too, before the operator's
    order = [e.event_type.value for e in fakes.events]
    assert order.index("decided") < order.index("override")


async def test_operator_restart_excludes_the_nodes_given(env):
    fakes = Fakes([XID], Decision(action=Action.STOP, reason="app bug"))

    async def restart(handle):
        await handle.execute_update(
            "apply_override",
            Override(action=OverrideAction.RESTART, exclude=["n3"], reason="n3 looked flaky", who="bob"),
        )

    result = await run_incident(env, fakes, operator=restart)
    assert result.phase is Phase.RESUMED
    assert fakes.requests["exclude_nodes"].exclude == ["n3"]


async def test_approve_is_refused_when_nothing_awaits_approval(env):
    fakes = Fakes([XID], RESTART)

    async def approve(handle):
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update("apply_override", Override(action=OverrideAction.APPROVE, reason="ok"))
        assert "nothing awaits approval" in str(err.value.cause)

    result = await run_incident(env, fakes, operator=approve)
    assert result.phase is Phase.RESUMED and "record:override" not in fakes.calls


async def test_approval_environment_waits_and_acts_when_approved(env):
    fakes = Fakes([XID], RESTART)

    async def approve(handle):
        await wait_phase(handle, Phase.AWAITING_APPROVAL)
        assert "hold_job" not in fakes.calls
        await handle.execute_update("apply_override", Override(action=OverrideAction.APPROVE, reason="go", who="carol"))

    result = await run_incident(env, fakes, approval=Approval(timeout_s=600), operator=approve)
    assert result.phase is Phase.RESUMED and "hold_job" in fakes.calls


async def test_denied_incident_does_nothing(env):
    fakes = Fakes([XID], RESTART)

    async def deny(handle):
        await wait_phase(handle, Phase.AWAITING_APPROVAL)
        await handle.signal("override", Override(action=OverrideAction.DENY, reason="maintenance", who="dan"))

    result = await run_incident(env, fakes, approval=Approval(timeout_s=600), operator=deny)
    assert result.phase is Phase.DENIED and "hold_job" not in fakes.calls


async def test_unanswered_approval_follows_the_default(env):
    denied = await run_incident(env, Fakes([XID], RESTART), approval=Approval(timeout_s=600, default="deny"))
    assert denied.phase is Phase.DENIED
    fakes = Fakes([XID], RESTART)
    approved = await run_incident(env, fakes, approval=Approval(timeout_s=600, default="approve"))
    assert approved.phase is Phase.RESUMED and "hold_job" in fakes.calls
    override = next(e for e in fakes.events if e.event_type.value == "override")
    assert override.details["who"] == "approval-timeout"


async def test_node_with_backed_record_is_drained_after_the_release(env):
    fakes = Fakes([XID], RESTART, nodes=NodeVerdict(drain=["n2"], drain_backed=["n2"]))
    await run_incident(env, fakes)
    assert fakes.calls.index("drain_nodes") > fakes.calls.index("release_job")
    assert fakes.requests["drain_nodes"].drain == ["n2"]


async def test_unbacked_drain_is_only_recommended(env):
    fakes = Fakes([XID], RESTART, nodes=NodeVerdict(drain=["n2"], drain_backed=[]))
    await run_incident(env, fakes)
    assert "drain_nodes" not in fakes.calls
    decided = next(e for e in fakes.events if e.event_type.value == "decided")
    assert decided.details["drain"] == ["n2"] and decided.details["drain_backed"] == []
