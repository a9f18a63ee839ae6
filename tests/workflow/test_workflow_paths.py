"""The incident workflow's paths that tests/workflow/test_incident_workflow.py and
tests/workflow/test_advisor_workflow.py leave out, on the time-skipping server with the same fake
activities: a plain restart, a systemic failure, no next attempt, the job gone while
followed, the operator's release and the Web UI's signal, the advisor's release and an
unconverged stop, and slowdown incidents. Each is also a recorded history
(tests/data/histories/) that tests/workflow/test_replay.py replays."""

import json
import uuid
from datetime import UTC, datetime, timedelta

from temporalio import activity
from temporalio.api.enums.v1 import EventType as HistoryEvent
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker

from respawn.advisor.advice import Desired
from respawn.attribution.runbook import Action
from respawn.config.cluster import Mode
from respawn.decision.decide import Decision
from respawn.decision.ledger import NodeVerdict
from respawn.wire.attribution import Attribution
from respawn.wire.incident import (
    Acting,
    AttemptStarted,
    Detection,
    DetectionKind,
    FollowRequest,
    IncidentInput,
    IncidentResult,
    Override,
    OverrideAction,
    Phase,
)
from respawn.wire.taxonomy import CauseLayer, FailureClass
from respawn.workflows.incident import IncidentWorkflow
from tests.workflow.test_advisor_workflow import AdvisorFakes, run_advised, scheduler_calls
from tests.workflow.test_cascade_probe import Recorded
from tests.workflow.test_incident_workflow import RESTART, XID, Fakes, run_incident

SLOW = Attribution(
    failure_class=FailureClass.SLOWDOWN,
    cause_layer=CauseLayer.HARDWARE,
    node_implicated=True,
    nodes=["n2"],
    recoverable_by_restart=True,
    pattern="progress-straggler",
    line="respawn-detector: slowdown: rank 1 on n2 is 3.0x slower than its peers",
)


class FollowFakes(Fakes):
    """The scripted activities, with a next attempt that never comes or a job that ends while followed."""

    def __init__(self, *args, next_attempt: str = "none", **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.next_attempt = next_attempt

    def activities(self):
        @activity.defn(name="await_next_attempt")
        async def next_attempt(req: FollowRequest) -> AttemptStarted | None:
            self.calls.append("await_next_attempt")
            if self.next_attempt == "gone":
                raise ApplicationError("job is COMPLETED", type="JobFinished", non_retryable=True)
            return None

        return [a for a in super().activities() if a.__name__ != "next_attempt"] + [next_attempt]


def operator(override: Override, signal: bool = False):
    async def act(handle) -> None:
        if signal:
            await handle.signal("override", override)
        else:
            await handle.execute_update("apply_override", override)

    return act


async def run_slowdown(env, fakes: Fakes, mode: Mode) -> IncidentResult:
    """As run_incident, for the incident a straggler finding opens beside the attempt's."""
    queue = f"q-{uuid.uuid4()}"
    detection = Detection(
        kind=DetectionKind.SLOWDOWN, at=datetime.now(UTC), job_id=5, attempt=0, node="n2", line=SLOW.line
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
                cascade_wait_s=20.0,
                follow_timeout_s=60,
            ),
            id=f"incident-c-5-0-slowdown-{uuid.uuid4()}",
            task_queue=queue,
            start_signal="detect",
            start_signal_args=[detection],
            execution_timeout=timedelta(hours=1),
        )
        return await handle.result()


async def test_plain_restart_excludes_nothing(env):
    fakes = Fakes([XID], Decision(action=Action.RESTART, reason="transient"))
    result = await run_incident(env, fakes)
    assert result.phase is Phase.RESUMED and result.action == "restart" and result.excluded_nodes == []
    assert fakes.requests["exclude_nodes"].exclude == []


async def test_systemic_failure_is_recorded_before_the_decision(env):
    fakes = Fakes([XID], RESTART, nodes=NodeVerdict(systemic=True, reason="3 of 3 nodes implicated"))
    result = await run_incident(env, fakes)
    assert result.phase is Phase.RESUMED
    assert fakes.calls.index("record:systemic") < fakes.calls.index("record:decided")
    systemic = next(e for e in fakes.events if e.event_type.value == "systemic")
    assert systemic.details["reason"] == "3 of 3 nodes implicated"


async def test_no_next_attempt_closes_the_incident(env):
    fakes = FollowFakes([XID], RESTART)
    result = await run_incident(env, fakes)
    assert result.phase is Phase.CLOSED and result.acted and result.next_attempt is None
    assert "await_progress" not in fakes.calls and fakes.calls[-1] == "record:incident_closed"


async def test_job_gone_while_following_closes_the_incident(env):
    fakes = FollowFakes([XID], RESTART, next_attempt="gone")
    result = await run_incident(env, fakes)
    assert result.phase is Phase.CLOSED and "job left recovery: job is COMPLETED" in result.reason
    assert "release_job" in fakes.calls and "await_progress" not in fakes.calls


async def test_operator_release_lets_the_job_go_unchanged(env):
    fakes = Fakes([XID], RESTART)
    result = await run_incident(
        env,
        fakes,
        operator=operator(Override(action=OverrideAction.RELEASE, reason="the owner will see to it", who="erin")),
    )
    assert result.phase is Phase.RELEASED and result.action == "release" and "erin" in result.reason
    assert [c for c in fakes.calls if c in ("hold_job", "exclude_nodes", "release_job")] == ["release_job"]
    assert fakes.requests["release_job"].exclude == []


async def test_operator_signal_stop_from_the_web_ui(env):
    fakes = Fakes([XID], RESTART)
    result = await run_incident(
        env,
        fakes,
        operator=operator(Override(action=OverrideAction.STOP, reason="bad data shard", who="frank"), signal=True),
    )
    assert result.phase is Phase.STOPPED and "frank" in result.reason and "hold_job" not in fakes.calls


async def test_advisor_release_is_advised(env):
    fakes = AdvisorFakes(RESTART)
    result = await run_incident(
        env,
        fakes,
        acting=Acting.CONTROLLER,
        operator=operator(Override(action=OverrideAction.RELEASE, reason="the owner will see to it", who="erin")),
    )
    assert result.phase is Phase.RELEASED and scheduler_calls(fakes) == []
    assert [(a.desired, a.exclude) for a in fakes.published] == [(Desired.RELEASE, [])]


async def test_advisor_stop_not_carried_out_closes(env):
    fakes = AdvisorFakes(Decision(action=Action.STOP, reason="app bug"), converged=False)
    result = await run_advised(env, fakes)
    assert result.phase is Phase.CLOSED and not result.acted and "advice not carried out" in result.reason
    assert "record:stopped" not in fakes.calls


async def test_slowdown_is_recommended_beside_the_attempt(env):
    fakes = Fakes(
        [SLOW],
        Decision(action=Action.RESTART_EXCLUDING, exclude=["n2"], newly_excluded=["n2"], reason="straggler on n2"),
    )
    result = await run_slowdown(env, fakes, Mode.OBSERVE)
    assert result.phase is Phase.RECOMMENDED and result.failure_class == "slowdown" and not result.acted
    assert "hold_job" not in fakes.calls


async def test_slowdown_acted_on_excludes_the_slow_node(env):
    fakes = Fakes(
        [SLOW],
        Decision(action=Action.RESTART_EXCLUDING, exclude=["n2"], newly_excluded=["n2"], reason="straggler on n2"),
    )
    result = await run_slowdown(env, fakes, Mode.ACTION)
    assert result.phase is Phase.RESUMED and result.excluded_nodes == ["n2"]
    assert fakes.requests["exclude_nodes"].exclude == ["n2"]


async def test_the_evidence_is_gathered_judged_and_decided_on_in_one_workflow_task(env):
    """Patches `one-assessment-activity` and `local-assessment`: one local activity per assessment,
    run in the workflow task that then records the decision and schedules the hold."""
    fakes, recorded = Fakes([XID], RESTART), Recorded()
    result = await run_incident(env, fakes, operator=recorded)
    assert result.phase is Phase.RESUMED and result.excluded_nodes == ["n2"]
    history = await recorded.handle.fetch_history()
    steps = []  # (what, name): local activities by their marker, activity tasks as scheduled
    for e in history.events:
        if e.event_type == HistoryEvent.EVENT_TYPE_MARKER_RECORDED:
            marker = e.marker_recorded_event_attributes
            if marker.marker_name == "core_local_activity":
                steps.append(("local", json.loads(marker.details["data"].payloads[0].data)["activity_type"]))
        elif e.event_type == HistoryEvent.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            steps.append(("activity", e.activity_task_scheduled_event_attributes.activity_type.name))
        elif e.event_type == HistoryEvent.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            steps.append(("workflow task", ""))
    names = [name for _, name in steps]
    assert ("local", "assess_attempt") in steps and not {"gather_evidence", "assess"} & set(names)
    assert ("activity", "assess_attempt") not in steps
    # From the assessment to the hold no workflow task in between: the decision is in the same one.
    between = steps[steps.index(("local", "assess_attempt")) : steps.index(("activity", "hold_job"))]
    assert ("workflow task", "") not in between and ("local", "record_event") in between
    assert fakes.calls[:3] == ["record:detected", "gather_evidence", "assess"]  # both steps, in order


async def test_a_job_gone_during_the_assessment_closes_the_incident_with_nothing_done(env):
    """A local activity's error reaches the workflow unwrapped (an activity's comes in an
    ActivityError): the job left recovery all the same, the incident closes, no scheduler action.
    Before it was read so, such an incident failed."""
    fakes = Fakes([XID], RESTART, gone_at="gather_evidence")
    result = await run_incident(env, fakes)
    assert result.phase is Phase.CLOSED and result.reason == "job left recovery: job 5 not found"
    assert fakes.calls.count("gather_evidence") == 1  # final: not retried
    assert not {"hold_job", "exclude_nodes", "release_job"} & set(fakes.calls)
