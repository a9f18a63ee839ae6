"""A failure-like line is a suspicion until the interruption is confirmed: the pure
judgement, the incident workflow's wait for confirmation on the time-skipping
server, and the detector handing an attempt on to its next incident."""

import uuid
from datetime import UTC, datetime

from temporalio.worker import Worker

from respawn.attribution.runbook import Action, Onset
from respawn.config.cluster import ClusterConfig, Mode
from respawn.decision.decide import Decision
from respawn.detection.detector import signal_detection
from respawn.detection.enrolment import Enrolment
from respawn.detection.interruption import Interruption, Verdict, judge
from respawn.wire.incident import Detection, DetectionKind, Phase, incident_id
from respawn.workflows.incident import IncidentWorkflow
from tests.workflow.test_incident_workflow import RESTART, XID, Fakes, incident_result, run_incident

SUSPECTED = Interruption(verdict=Verdict.SUSPECTED, why="failure-like output while the attempt is RUNNING")
ENDED = Interruption(verdict=Verdict.CONFIRMED, why="the attempt ended FAILED", ended=True)
RUNNING_CONFIRMED = Interruption(verdict=Verdict.CONFIRMED, why="its ranks stopped making progress")
STOP = Decision(action=Action.STOP, reason="app_error is not recoverable by restart")


def _detection(kind: DetectionKind = DetectionKind.LOG_LINE, pattern: str | None = "cuda-oom", **fields) -> Detection:
    return Detection(kind=kind, at=datetime.now(UTC), job_id=5, attempt=0, pattern=pattern, **fields)


# -- the judgement, pure ------------------------------------------------------------------------


def test_a_handled_line_in_a_running_attempt_is_only_suspected(catalogue):
    verdict = judge("RUNNING", 0, 0, [_detection(pattern="cuda-oom")], catalogue.onset)
    assert verdict.verdict is Verdict.SUSPECTED and not verdict.ended


def test_the_attempt_ending_badly_confirms_it(catalogue):
    verdict = judge("FAILED", 0, 0, [_detection()], catalogue.onset)
    assert verdict.verdict is Verdict.CONFIRMED and verdict.ended
    # Slurm's state can lag its report: the detector's job-ended detection confirms as well.
    lagging = judge(
        "RUNNING", 0, 0, [_detection(), _detection(DetectionKind.JOB_ENDED, None, job_state="FAILED")], catalogue.onset
    )
    assert lagging.verdict is Verdict.CONFIRMED and lagging.ended


def test_slurm_requeueing_the_attempt_itself_confirms_it(catalogue):
    verdict = judge("PENDING", 1, 0, [_detection()], catalogue.onset)
    assert verdict.verdict is Verdict.CONFIRMED and verdict.ended


def test_a_stall_or_a_dead_node_confirms_a_running_attempt(catalogue):
    for kind in (DetectionKind.HANG, DetectionKind.NODE_DOWN):
        verdict = judge("RUNNING", 0, 0, [_detection(), _detection(kind, None, node="n2")], catalogue.onset)
        assert verdict.verdict is Verdict.CONFIRMED and not verdict.ended, kind


def test_a_line_the_process_cannot_survive_confirms_by_itself(catalogue):
    assert catalogue.onset("xid-fatal") is Onset.CERTAIN
    verdict = judge("RUNNING", 0, 0, [_detection(pattern="xid-fatal")], catalogue.onset)
    assert verdict.verdict is Verdict.CONFIRMED


def test_an_end_the_owner_meant_is_not_an_interruption(catalogue):
    for state in ("CANCELLED", "CANCELLED by 1000", "COMPLETED"):
        verdict = judge(
            state, 0, 0, [_detection(), _detection(DetectionKind.NODE_DOWN, None, node="n1")], catalogue.onset
        )
        assert verdict.verdict is Verdict.NOT_INTERRUPTED, state


def test_slurms_own_cancel_line_is_a_report_not_a_suspicion(catalogue, matcher):
    hit = matcher.failure("slurmstepd: error: *** JOB 12 ON node1 CANCELLED AT 2026-12-01T10:00:00 ***")
    assert hit is not None and hit.onset is Onset.REPORTED


# -- the workflow ---------------------------------------------------------------------------------


async def test_a_suspicion_the_attempt_outlives_closes_as_not_interrupted_and_acts_on_nothing(env):
    fakes = Fakes([XID], RESTART, interruptions=[SUSPECTED])
    result = await run_incident(env, fakes)
    assert result.phase is Phase.NOT_INTERRUPTED and result.acted is False
    assert result.log_end == 100  # where the attempt's next incident reads on from
    assert not {"hold_job", "exclude_nodes", "release_job"} & set(fakes.calls)
    types = [e.event_type.value for e in fakes.events]
    assert types == ["detected", "not_interrupted", "incident_closed"]  # no decision, no stop
    row = fakes.events[1]
    assert row.acted is False and "still ran" in row.details["why"] and row.failure_class == "gpu_hardware"


async def test_a_suspicion_confirmed_within_the_window_is_recovered(env):
    fakes = Fakes([XID], RESTART, interruptions=[SUSPECTED, ENDED])
    ended = _detection(DetectionKind.JOB_ENDED, None, job_state="FAILED")
    result = await run_incident(env, fakes, signals=[ended])
    assert result.phase is Phase.RESUMED
    assert fakes.calls.count("assess") == 2 and "hold_job" in fakes.calls
    decided = next(e for e in fakes.events if e.event_type.value == "decided")
    assert decided.acted is True and decided.details["interruption"] == "the attempt ended FAILED"


async def test_an_owner_cancel_records_no_stop(env):
    cancelled = Interruption(
        verdict=Verdict.NOT_INTERRUPTED, why="the attempt ended CANCELLED, as its owner meant", ended=True
    )
    fakes = Fakes([XID], STOP, interruptions=[cancelled])
    result = await run_incident(env, fakes)
    assert result.phase is Phase.NOT_INTERRUPTED
    assert "stopped" not in [e.event_type.value for e in fakes.events]


async def test_a_stop_on_an_attempt_that_still_runs_is_a_recommendation_nobody_acted_on(env):
    fakes = Fakes([XID], STOP, interruptions=[RUNNING_CONFIRMED])
    result = await run_incident(env, fakes)
    assert result.phase is Phase.RECOMMENDED and result.acted is False
    types = [e.event_type.value for e in fakes.events]
    assert "stopped" not in types
    decided = next(e for e in fakes.events if e.event_type.value == "decided")
    assert decided.acted is False and decided.action == "stop"


async def test_a_stop_on_an_ended_attempt_withholds_its_requeue(env):
    fakes = Fakes([XID], STOP, interruptions=[ENDED])
    result = await run_incident(env, fakes)
    assert result.phase is Phase.STOPPED and result.acted is True
    assert "stopped" in [e.event_type.value for e in fakes.events]


# -- the detector hands the attempt on ------------------------------------------------------------


async def test_a_crash_after_a_not_interrupted_incident_opens_the_attempts_next_incident(env, tmp_path):
    config = ClusterConfig.model_validate(
        {
            "cluster": f"c{uuid.uuid4().hex[:8]}",
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "detector": {"settle_s": 1, "confirm_window_s": 2},
        }
    )
    enrolment = Enrolment(environment="demo", mode=Mode.ACTION)
    first = incident_id(config.cluster, 5, 0)
    fakes = Fakes([XID], RESTART, interruptions=[SUSPECTED, SUSPECTED, ENDED])
    async with Worker(
        env.client,
        task_queue=config.task_queue,
        workflows=[IncidentWorkflow],
        activities=fakes.activities(),
        workflow_failure_exception_types=[Exception],
    ):
        delivered = await signal_detection(env.client, config, enrolment, _detection(log_offset=40))
        assert delivered is not None and delivered.incident_id == first and delivered.seq == 0
        closed = await incident_result(env, first)
        assert closed.phase is Phase.NOT_INTERRUPTED

        # The same attempt crashes later: the closed incident hands on to the next one, which reads
        # the output from where the first stopped, and recovers the attempt.
        crash = _detection(DetectionKind.JOB_ENDED, None, job_state="FAILED", log_offset=40)
        delivered = await signal_detection(env.client, config, enrolment, crash)
        assert delivered is not None and delivered.seq == 1 and delivered.incident_id == f"{first}.1"
        assert delivered.log_offset == 100
        second = await incident_result(env, delivered.incident_id)
        assert second.phase is Phase.RESUMED

        # That interruption was handled: a late detection of it acts on nothing twice.
        late = _detection(DetectionKind.NODE_DOWN, None, node="n2")
        assert await signal_detection(env.client, config, enrolment, late, seq=1) is None
        assert await signal_detection(env.client, config, enrolment, late) is None  # nor after a restart
    assert fakes.calls.count("hold_job") == 1
