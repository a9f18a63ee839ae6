"""The in-job rungs on the time-skipping server (issue 14): the step relaunched through the
job's launcher, in the allocation, and the requeue when that is not done. The scripted
activities of tests/workflow/test_incident_workflow.py, with the launcher's answer."""

import uuid

from temporalio import activity
from temporalio.worker import Worker

from respawn.attribution.runbook import Action
from respawn.audit.trail import EventType
from respawn.config.cluster import ClusterConfig, Mode
from respawn.decision.decide import Decision
from respawn.detection.detector import signal_detection
from respawn.detection.enrolment import Enrolment
from respawn.detection.interruption import Interruption, Verdict
from respawn.wire.incident import (
    DetectionKind,
    FollowRequest,
    Phase,
    Relaunched,
    RelaunchRequest,
    StepEndRequest,
    incident_id,
)
from respawn.wire.launcher import LauncherView, StepState
from respawn.workflows.incident import IncidentWorkflow
from tests.workflow.test_incident_workflow import XID, Fakes, incident_result, run_incident
from tests.workflow.test_interruption import _detection

REPLACE = Decision(
    action=Action.REPLACE_NODE,
    exclude=["n2"],
    newly_excluded=["n2"],
    fallback=Action.RESTART_EXCLUDING,
    reason="gpu_hardware on n2: relaunch without it on a spare, in the allocation",
)
FAILED_STEP = Interruption(verdict=Verdict.CONFIRMED, why="the job's launcher reports its step failed", ended=True)


class InJobFakes(Fakes):
    """The scripted activities, and a launcher that relaunches (or not) when told."""

    def __init__(self, *args, done: bool = True, **kwargs) -> None:
        kwargs.setdefault("interruptions", [FAILED_STEP])
        super().__init__(*args, **kwargs)
        self.done = done
        self.relaunches: list[RelaunchRequest] = []
        self.follows: list[FollowRequest] = []
        self.step_ends: list[StepEndRequest] = []
        self.give_ups: list[RelaunchRequest] = []

    def activities(self):
        @activity.defn(name="relaunch_step")
        async def relaunch(req: RelaunchRequest) -> Relaunched:
            self.calls.append("relaunch_step")
            self.relaunches.append(req)
            if not self.done:
                return Relaunched(done=False, detail="no acknowledgement within 60 s", generation=1)
            return Relaunched(done=True, detail="relaunched on n1,n3,n4", generation=1, nodes=["n1", "n3"], log_end=150)

        @activity.defn(name="give_up_step")
        async def give_up(req: RelaunchRequest) -> Relaunched:
            self.calls.append("give_up_step")
            self.give_ups.append(req)
            return Relaunched(done=True, detail="gave up (exit code 1)", generation=2)

        @activity.defn(name="await_step_end")
        async def step_end(req: StepEndRequest) -> bool:
            self.calls.append("await_step_end")
            self.step_ends.append(req)
            return True  # the launcher already reports the step failed

        @activity.defn(name="await_progress")
        async def progress(req: FollowRequest):
            self.follows.append(req)
            return await original(req)

        base = super().activities()
        original = next(a for a in base if a.__name__ == "progress")
        return [a for a in base if a.__name__ != "progress"] + [relaunch, give_up, step_end, progress]


async def test_a_replaced_node_is_relaunched_in_the_allocation_and_followed_without_a_requeue(env):
    fakes = InJobFakes([XID], REPLACE)
    result = await run_incident(env, fakes)
    assert result.phase is Phase.RESUMED and result.relaunched and result.action == "replace_node"
    assert result.excluded_nodes == ["n2"] and result.log_end == 150
    # The decision is on record before the launcher is told; nothing is done on Slurm.
    assert fakes.calls.index("record:decided") < fakes.calls.index("relaunch_step")
    assert fakes.calls.index("relaunch_step") < fakes.calls.index("record:relaunched")
    assert not {"hold_job", "exclude_nodes", "release_job", "await_next_attempt"} & set(fakes.calls)
    assert "await_step_end" not in fakes.calls  # a detection that does not say the job is launched: the timer
    assert fakes.relaunches[0].exclude == ["n2"] and fakes.relaunches[0].attempt == 0
    # The same attempt trains again: followed from where the evidence ended.
    assert fakes.follows[0].in_job and fakes.follows[0].log_offset == 100
    relaunched = next(e for e in fakes.events if e.event_type is EventType.RELAUNCHED)
    assert relaunched.details["rung"] == "replace_node" and relaunched.details["excluded"] == ["n2"]
    assert relaunched.nodes == ["n1", "n3"] and relaunched.acted


async def test_under_its_launcher_the_settle_ends_once_the_launcher_reports_the_step_ended(env):
    fakes = InJobFakes([XID], REPLACE)
    result = await run_incident(env, fakes, launched=True)
    assert result.phase is Phase.RESUMED and result.relaunched
    # Asked before the evidence is gathered, for no longer than the settle window.
    assert fakes.calls.index("await_step_end") < fakes.calls.index("gather_evidence")
    assert fakes.step_ends == [StepEndRequest(cluster="c", job_id=5, within_s=1.0)]


async def test_a_relaunch_not_done_falls_back_to_the_requeue_without_the_node(env):
    fakes = InJobFakes([XID], REPLACE, done=False)
    result = await run_incident(env, fakes)
    assert result.phase is Phase.RESUMED and not result.relaunched and result.action == "restart_excluding"
    failed = next(e for e in fakes.events if e.event_type is EventType.RUNG_FAILED)
    assert failed.details == {
        "rung": "replace_node",
        "why": "no acknowledgement within 60 s",
        "fallback": "restart_excluding",
    }
    order = [c for c in fakes.calls if c in ("relaunch_step", "record:rung_failed", "hold_job", "release_job")]
    assert order == ["relaunch_step", "record:rung_failed", "hold_job", "release_job"]
    assert fakes.requests["exclude_nodes"].exclude == ["n2"]


async def test_observe_mode_tells_the_launcher_nothing(env):
    fakes = InJobFakes([XID], REPLACE)
    result = await run_incident(env, fakes, mode=Mode.OBSERVE)
    assert result.phase is Phase.RECOMMENDED and result.action == "replace_node" and not result.acted
    assert "relaunch_step" not in fakes.calls


STOP = Decision(action=Action.STOP, reason="app_error: stop")
WAITING = LauncherView(state=StepState.FAILED, step_nodes=["n1", "n2"], exit_code=1)


async def test_a_stop_tells_the_launcher_waiting_after_its_step_failed_to_give_up(env):
    fakes = InJobFakes([XID], STOP, launcher=WAITING)
    result = await run_incident(env, fakes)
    assert result.phase is Phase.STOPPED
    # Recommended first, then the launcher told, then the stop on record with its word.
    order = [c for c in fakes.calls if c in ("record:decided", "give_up_step", "record:stopped")]
    assert order == ["record:decided", "give_up_step", "record:stopped"]
    assert fakes.give_ups[0].exclude == [] and fakes.give_ups[0].reason == "app_error: stop"
    stopped = next(e for e in fakes.events if e.event_type is EventType.STOPPED)
    assert stopped.details == {"reason": "app_error: stop", "launcher": "gave up (exit code 1)"}
    assert not {"relaunch_step", "hold_job", "release_job"} & set(fakes.calls)


async def test_a_stop_tells_no_launcher_that_is_not_waiting(env):
    for launcher in (None, WAITING.model_copy(update={"state": StepState.GIVING_UP})):
        fakes = InJobFakes([XID], STOP, launcher=launcher)
        assert (await run_incident(env, fakes)).phase is Phase.STOPPED
        assert "give_up_step" not in fakes.calls
    # Observe mode: the stop is recommended, the launcher told nothing.
    fakes = InJobFakes([XID], STOP, launcher=WAITING)
    assert (await run_incident(env, fakes, mode=Mode.OBSERVE)).phase is Phase.RECOMMENDED
    assert "give_up_step" not in fakes.calls


async def test_a_crash_after_an_in_job_relaunch_opens_the_attempts_next_incident(env, tmp_path):
    config = ClusterConfig.model_validate(
        {
            "cluster": f"c{uuid.uuid4().hex[:8]}",
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "detector": {"settle_s": 1},
        }
    )
    enrolment = Enrolment(environment="demo", mode=Mode.ACTION)
    first = incident_id(config.cluster, 5, 0)
    fakes = InJobFakes([XID], REPLACE)
    async with Worker(
        env.client,
        task_queue=config.task_queue,
        workflows=[IncidentWorkflow],
        activities=fakes.activities(),
        workflow_failure_exception_types=[Exception],
    ):
        delivered = await signal_detection(env.client, config, enrolment, _detection(log_offset=40))
        assert delivered is not None and delivered.incident_id == first
        closed = await incident_result(env, first)
        assert closed.relaunched and closed.phase is Phase.RESUMED

        # The relaunched step fails too, in the same attempt: the attempt's next incident,
        # reading the output from after the relaunch.
        again = _detection(DetectionKind.LOG_LINE, "srun-task-exited", log_offset=40)
        delivered = await signal_detection(env.client, config, enrolment, again)
        assert delivered is not None and delivered.seq == 1 and delivered.incident_id == f"{first}.1"
        assert delivered.log_offset == 150
        second = await incident_result(env, delivered.incident_id)
        assert second.relaunched
    assert fakes.calls.count("relaunch_step") == 2
