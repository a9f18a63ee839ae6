"""The settle before the evidence is gathered (patch `settle-until-slurm-ends-it`): Slurm's
verdict on the attempt ends it, on the time-skipping server with the fake activities of
tests/workflow/test_incident_workflow.py. Recorded as a history (tests/data/histories/) that
tests/workflow/test_replay.py replays."""

from datetime import UTC, datetime

from temporalio.api.enums.v1 import EventType as HistoryEvent

from respawn.wire.incident import Detection, DetectionKind, Phase
from tests.workflow.test_cascade_probe import JOB_ENDED, Recorded
from tests.workflow.test_incident_workflow import RESTART, XID, Fakes, run_incident

XID_LINE = Detection(kind=DetectionKind.LOG_LINE, at=datetime.now(UTC), job_id=5, attempt=0, line="Xid 79")


async def _timer_events(recorded: Recorded) -> list[int]:
    history = await recorded.handle.fetch_history()
    timers = (HistoryEvent.EVENT_TYPE_TIMER_STARTED, HistoryEvent.EVENT_TYPE_TIMER_FIRED)
    return [e.event_type for e in history.events if e.event_type in timers]


async def test_slurms_verdict_with_the_first_detection_leaves_nothing_to_settle(env):
    fakes, recorded = Fakes([XID], RESTART), Recorded()
    result = await run_incident(env, fakes, detection=JOB_ENDED, operator=recorded)
    assert result.phase is Phase.RESUMED and result.excluded_nodes == ["n2"]
    assert fakes.calls[:2] == ["record:detected", "gather_evidence"]
    assert await _timer_events(recorded) == []  # no settle timer: the evidence is gathered at once


async def test_slurms_verdict_during_the_settle_ends_it(env):
    fakes, recorded = Fakes([XID], RESTART), Recorded()
    result = await run_incident(env, fakes, detection=XID_LINE, signals=[JOB_ENDED], operator=recorded)
    assert result.phase is Phase.RESUMED
    # Both detections gathered together, and the settle's second never ran out.
    assert fakes.calls[:2] == ["record:detected", "gather_evidence"]
    assert [d.kind for d in fakes.gathers[0].detections] == [DetectionKind.LOG_LINE, DetectionKind.JOB_ENDED]
    assert HistoryEvent.EVENT_TYPE_TIMER_FIRED not in await _timer_events(recorded)


async def test_without_slurms_verdict_the_settle_runs_its_course(env):
    fakes, recorded = Fakes([XID], RESTART), Recorded()
    assert (await run_incident(env, fakes, detection=XID_LINE, operator=recorded)).phase is Phase.RESUMED
    assert await _timer_events(recorded) == [HistoryEvent.EVENT_TYPE_TIMER_STARTED, HistoryEvent.EVENT_TYPE_TIMER_FIRED]
