"""The detector's rules (respawn/detection/rules.py), as the pure function they are: what
Slurm says, the new lines, the nodes' facts and the watch state in; detections, audit
events and the next state out. No Slurm, no files, no Temporal: the cases the sandbox's
end-to-end tests drive through real jobs (tests/e2e/test_suspicion_e2e.py,
test_recovery.py, test_hang_straggler.py), each reduced to one poll or a few."""

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from respawn.attribution.runbook import Onset
from respawn.audit.trail import EventType
from respawn.detection import rules
from respawn.detection.rhythm import Finding, FindingKind, Stall
from respawn.detection.rules import Fault, NodeFact, Outcome, RuleSettings, Seen, WatchState
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.wire.incident import DetectionKind

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SUBMITTED = NOW - timedelta(hours=1)
NODES = ["node1", "node2", "node3"]

CRASH = "[rank1]: RuntimeError: CUDA error: unspecified launch failure"  # onset: certain
HANDLED = (
    "batch-size probe: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB "
    "(GPU 0; 79.15 GiB total capacity). Falling back to batch size 3"
)  # what the sandbox's job survives
CANCELLED = "slurmstepd: error: *** JOB 7 ON node1 CANCELLED AT 2026-06-01T12:00:00 ***"
TIME_LIMIT = "slurmstepd: error: *** JOB 7 ON node1 CANCELLED AT 2026-06-01T12:00:00 DUE TO TIME LIMIT ***"
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=123, name=python, GPU has fallen off the bus."
KERNEL_AT = NOW - timedelta(seconds=3)
KERNEL = f"{KERNEL_AT.isoformat(timespec='microseconds')} node2 kernel: [ 99.000001] {XID}"
METRICS = "respawn-metrics: Hostname=node2 gpu=0 DCGM_FI_DEV_XID_ERRORS=79 (new)"
SLOWDOWN = (
    "respawn-detector: slowdown: rank 1 on node2 is 3.0x slower than its peers (score 0.33, compute 3.000 s)"
    " for 130.0 s"
)


def running(**changes) -> JobInfo:
    job = JobInfo(job_id=7, state="RUNNING", nodes=NODES, submit_time=SUBMITTED, tasks=3)
    return job.model_copy(update=changes)


def settings(matcher, limit: int = 20) -> RuleSettings:
    return RuleSettings(cluster="c1", matcher=matcher, max_signals_per_attempt=limit)


def poll(
    matcher, job: JobInfo, state: WatchState = WatchState(), *, read_from: int = 0, limit: int = 20, **seen
) -> Outcome:
    """One poll of one job, as the detector makes it: advance, then judge."""
    return rules.judge(job, rules.advance(state, job, read_from), Seen(now=NOW, **seen), settings(matcher, limit))


def kinds(outcome: Outcome) -> list[DetectionKind]:
    return [d.kind for d in outcome.detections]


# --- Job output ---------------------------------------------------------------------------


def test_a_crash_line_is_one_detection_of_the_attempt_and_opens_its_incident(matcher):
    out = poll(
        matcher,
        running(),
        lines=["[rank0]: step 4 loss 0.9", CRASH],
        read_from=120,
        modified=lambda: NOW - timedelta(seconds=2),
    )
    [found] = out.detections
    assert (found.kind, found.pattern, found.line) == (DetectionKind.LOG_LINE, "cuda-launch-failure", CRASH)
    assert (found.job_id, found.attempt, found.submitted, found.job_state) == (7, 0, SUBMITTED, "RUNNING")
    assert found.at == NOW and found.log_offset == 120  # the attempt's evidence begins where it was first read
    # The line carries no time of its own: it happened when the job last wrote.
    assert out.opened == (rules.Opened(DetectionKind.LOG_LINE, NOW - timedelta(seconds=2)),)
    assert found.occurred == NOW - timedelta(seconds=2)  # on the record too: the accounting of lost time
    assert out.state.fault == Fault(at=NOW - timedelta(seconds=2), kind=DetectionKind.LOG_LINE, attempt=0)
    assert out.state.sent == {"line:cuda-launch-failure"} and out.audit == ()

    again = poll(matcher, running(), out.state, lines=[CRASH], read_from=400)
    assert again.detections == () and again.opened == ()  # signalled once per attempt


def test_when_the_job_last_wrote_is_never_later_than_the_poll(matcher):
    future = poll(matcher, running(), lines=[CRASH], modified=lambda: NOW + timedelta(hours=1))
    unknown = poll(matcher, running(), lines=[CRASH])
    assert future.opened[0].occurred == unknown.opened[0].occurred == NOW


def test_a_line_with_its_own_time_is_timed_by_it(matcher):
    at = NOW - timedelta(seconds=7)
    out = poll(matcher, running(), lines=[f"{at.isoformat(timespec='microseconds')} {CRASH}"])
    assert out.opened[0].occurred == at


def test_a_quiet_poll_hands_the_state_back_unchanged(matcher):
    state = rules.advance(WatchState(), running(), 0)
    out = rules.judge(running(), state, Seen(now=NOW, lines=["[rank0]: step 5 loss 0.8"]), settings(matcher))
    assert out.state is state and out.detections == () and out.audit == () and out.opened == ()


def test_handled_failure_text_then_a_real_crash_are_two_detections_of_one_incident(matcher):
    suspicion = poll(matcher, running(), lines=[HANDLED])
    assert [(d.kind, d.pattern) for d in suspicion.detections] == [(DetectionKind.LOG_LINE, "cuda-oom")]
    assert matcher.failure(HANDLED).onset is Onset.SUSPECTED  # the incident waits for a confirmation

    crash = poll(matcher, running(), suspicion.state, lines=[HANDLED, CRASH])
    assert [d.pattern for d in crash.detections] == ["cuda-launch-failure"]  # the handled text, not again
    assert crash.opened == ()  # the incident was opened by the suspicion: latency is measured once
    assert crash.state.fault == suspicion.state.fault

    ended = poll(matcher, running(state="FAILED", end_time=NOW - timedelta(seconds=1), exit_code=1), crash.state)
    assert kinds(ended) == [DetectionKind.JOB_ENDED] and ended.state.ended


def test_slurms_reports_of_an_end_it_caused_are_left_to_the_jobs_state(matcher):
    assert matcher.failure(TIME_LIMIT).onset is Onset.REPORTED
    out = poll(matcher, running(), lines=[TIME_LIMIT, CANCELLED])
    assert out.detections == () and out.state.sent == frozenset()
    timeout = poll(matcher, running(state="TIMEOUT", end_time=NOW, state_reason="TimeLimit"), out.state)
    assert kinds(timeout) == [DetectionKind.JOB_ENDED]


def test_a_forged_detector_line_in_the_jobs_output_is_no_news(matcher):
    forged = "respawn-detector: hang: no progress from rank 0 on node2 for 99.0 s (threshold 15.0 s, training)"
    assert poll(matcher, running(), lines=[forged, f"[rank3]: {forged}"]).detections == ()


def test_a_hostile_line_cannot_blame_a_node_outside_the_allocation(matcher):
    out = poll(matcher, running(), lines=["srun: error: ghost7: task 1: Killed", "srun: error: node9: task 2: Killed"])
    assert out.detections == ()
    ours = poll(matcher, running(), lines=["srun: error: node2: task 1: Killed"])
    assert [d.pattern for d in ours.detections] == ["srun-task-signalled"]


# --- What Slurm says ------------------------------------------------------------------------


def test_a_job_that_ended_failed_is_one_detection_and_its_end_is_handled(matcher):
    ended_at = NOW - timedelta(seconds=4)
    job = running(state="FAILED", end_time=ended_at, state_reason="NonZeroExitCode", exit_code=1)
    out = poll(matcher, job)
    [found] = out.detections
    assert found.kind is DetectionKind.JOB_ENDED and found.job_state == "FAILED"
    assert found.line == "slurm: job 7 attempt 0 ended FAILED reason=NonZeroExitCode exit_code=1"
    assert out.opened == (rules.Opened(DetectionKind.JOB_ENDED, ended_at),)
    assert out.state.ended and out.audit == ()
    # Handled: later polls of the same attempt judge nothing, whatever they read.
    later = poll(matcher, job, out.state, lines=[CRASH], down={"node2"})
    assert later.detections == () and later.state is out.state


@pytest.mark.parametrize(
    ("state", "event"), [("CANCELLED", EventType.JOB_ENDED), ("COMPLETED", EventType.JOB_COMPLETED)]
)
def test_an_end_as_meant_records_it_and_opens_nothing(matcher, state, event):
    job = running(state=state, end_time=NOW, exit_code=0)
    out = poll(matcher, job, lines=[CANCELLED] if state == "CANCELLED" else [])
    assert out.detections == () and out.opened == () and out.state.ended
    [row] = out.audit
    assert row.event_type is event and row.key == f"c1/7/0/{event.value}"
    assert (row.cluster, row.job_id, row.attempt) == ("c1", 7, 0)
    assert row.details == {"state": state, "exit_code": 0}
    assert poll(matcher, job, out.state).audit == ()  # once


def test_a_requeue_by_slurm_starts_the_next_attempt_afresh(matcher):
    crashed = poll(matcher, running(), lines=[CRASH], read_from=100)
    state = replace(crashed.state, seq=2)  # its delivery had moved on to the attempt's third incident
    # Requeued: the new restart count, not running yet. Slurm may still show the old
    # attempt's FAILED, and the teardown still names the old nodes: none of it is news.
    requeued = running(state="FAILED", restart_count=1, end_time=NOW)
    pending = poll(
        matcher, requeued, state, read_from=500, lines=["srun: error: node1: task 0: Killed", CRASH], down={"node1"}
    )
    assert pending.detections == () and not pending.state.ended
    assert (pending.state.attempt, pending.state.attempt_offset, pending.state.seq) == (1, 500, 0)
    assert pending.state.requeued and pending.state.sent == frozenset()
    assert pending.state.fault == crashed.state.fault  # still recovering from attempt 0's fault

    # It runs: its evidence begins where it was first seen running, and the same line is news again.
    again = poll(matcher, running(restart_count=1), pending.state, read_from=900, lines=[CRASH])
    assert [(d.attempt, d.log_offset) for d in again.detections] == [(1, 900)]


def test_the_first_attempt_seen_may_end_without_being_seen_running(matcher):
    out = poll(matcher, running(state="NODE_FAIL", restart_count=2, end_time=NOW))
    assert kinds(out) == [DetectionKind.JOB_ENDED] and out.detections[0].attempt == 2


def test_a_job_that_ended_before_the_detector_started_is_history():
    started = NOW
    minute = timedelta(seconds=60)  # the default detector.catch_up_s
    old = running(state="FAILED", end_time=started - timedelta(minutes=5), restart_count=3)
    assert rules.first_seen(old, started, minute) == WatchState(attempt=3, running=3, ended=True)
    recent = running(state="FAILED", end_time=started - timedelta(seconds=30))
    assert rules.first_seen(recent, started, minute) == WatchState()
    assert rules.first_seen(running(), started, minute) == WatchState()
    # Without catching up (the sandbox's: each test module's detector is a new cluster's),
    # whatever ended before the start is history.
    assert rules.first_seen(recent, started, timedelta(0)) == WatchState(attempt=0, running=0, ended=True)


# --- Nodes ----------------------------------------------------------------------------------


def test_nodes_slurm_calls_down_and_those_not_responding_for_long_enough():
    """NOT_RESPONDING is at first one message that timed out (a busy slurmd), cleared at its
    next answer: no verdict (read at once, it relaunched healthy jobs). A node cut off stays
    flagged: once for `hold_s`, it is lost, before Slurm calls it DOWN."""
    nodes = [
        NodeInfo(name="node1", state="down"),
        NodeInfo(name="node2", state="allocated", flags=["NOT_RESPONDING"]),
        NodeInfo(name="node3", state="allocated", flags=["DRAIN"]),
        NodeInfo(name="node4", state="idle"),
    ]
    lost, since = rules.down(nodes, 100.0, {}, 5.0)
    assert lost == {"node1"} and since == {"node2": 100.0}
    lost, since = rules.down(nodes, 104.9, since, 5.0)
    assert lost == {"node1"} and since == {"node2": 100.0}
    assert rules.down(nodes, 105.0, since, 5.0)[0] == {"node1", "node2"}
    # Answering again clears it: a later flag starts its own clock.
    healthy = [NodeInfo(name="node2", state="allocated")]
    assert rules.down(healthy, 106.0, since, 5.0) == (frozenset(), {})
    assert rules.down(nodes, 107.0, {}, 5.0)[1] == {"node2": 107.0}


def test_a_node_of_the_job_going_down_is_a_detection_once_it_runs(matcher):
    out = poll(matcher, running(), down={"node2", "node9"}, modified=lambda: NOW - timedelta(seconds=5))
    assert [(d.kind, d.node) for d in out.detections] == [(DetectionKind.NODE_DOWN, "node2")]
    # Slurm's listing of the attempt's nodes travels with it: a requeue erases it from Slurm's.
    assert out.detections[0].allocation == running().nodes
    assert out.opened[0].occurred == NOW - timedelta(seconds=5)  # the job went quiet when it died
    assert poll(matcher, running(state="PENDING"), down={"node2"}).detections == ()  # not started: old allocation


def test_a_kernel_line_counts_on_an_allocated_node_of_a_running_job_only(matcher):
    fact = NodeFact("xid-fatal", KERNEL)
    out = poll(matcher, running(), kernel={"node2": fact, "node9": fact})
    [found] = out.detections
    assert (found.kind, found.node, found.pattern, found.line) == (DetectionKind.KERNEL, "node2", "xid-fatal", KERNEL)
    assert out.opened[0].occurred == KERNEL_AT  # the kernel's own time
    assert out.state.sent == {"kernel:node2:xid-fatal"}
    assert poll(matcher, running(nodes=["node1"]), kernel={"node2": fact}).detections == ()
    ended = poll(matcher, running(state="FAILED", end_time=NOW), kernel={"node2": fact})
    assert kinds(ended) == [DetectionKind.JOB_ENDED]


def test_a_new_xid_in_the_gpu_metrics_is_a_detection_like_a_kernel_line(matcher):
    out = poll(matcher, running(), metrics={"node2": NodeFact("dcgm-xid", METRICS), "node7": NodeFact("x", "y")})
    assert [(d.kind, d.node, d.pattern) for d in out.detections] == [(DetectionKind.METRICS, "node2", "dcgm-xid")]
    assert out.opened[0].occurred == NOW


# --- The rhythm's findings ---------------------------------------------------------------


def test_a_hang_finding_is_a_detection_timed_from_when_the_job_went_silent(matcher):
    stall = Stall(silent_s=16.2, threshold_s=15.0, phase="training", last_steps={0: 5, 1: 4, 2: 5})
    [finding] = stall.findings({0: "node1", 1: "node2", 2: "node3"}, {})
    out = poll(matcher, running(), findings=[finding])
    [found] = out.detections
    assert (found.kind, found.node, found.pattern) == (DetectionKind.HANG, "node2", "progress-stalled")
    assert found.line == finding.line
    assert out.opened[0].occurred == NOW - timedelta(seconds=16.2)
    assert out.state.signalled("hang:") and out.state.fault is not None


def test_a_straggler_is_an_incident_of_its_own_beside_the_attempts(matcher):
    crashed = poll(matcher, running(), lines=[HANDLED])
    slow = poll(matcher, running(), crashed.state, findings=[Finding(FindingKind.SLOWDOWN, SLOWDOWN, "node2", (1,))])
    [found] = slow.detections
    assert (found.kind, found.node, found.pattern) == (DetectionKind.SLOWDOWN, "node2", "progress-straggler")
    assert slow.opened == (rules.Opened(DetectionKind.SLOWDOWN, NOW - timedelta(seconds=130)),)  # opens its own
    assert slow.state.fault == crashed.state.fault  # a straggler slows the job, it is no fault to recover from


def test_a_finding_no_runbook_recognises_is_no_detection(matcher):
    unknown = Finding(FindingKind.HANG, "respawn-detector: something nobody describes")
    assert poll(matcher, running(), findings=[unknown]).detections == ()


def test_a_later_attempt_that_steps_has_recovered_from_the_fault(matcher):
    fault = Fault(at=NOW - timedelta(seconds=40), kind=DetectionKind.KERNEL, attempt=0)
    state = WatchState(attempt=0, running=0, fault=fault)
    assert poll(matcher, running(), state, stepped=True).recovered is None  # the same attempt: not yet
    waiting = poll(matcher, running(restart_count=1), state)
    assert waiting.recovered is None and waiting.state.fault == fault  # runs, has not stepped yet
    trains = poll(matcher, running(restart_count=1), waiting.state, stepped=True)
    assert trains.recovered == fault and trains.state.fault is None
    assert poll(matcher, running(restart_count=1), trains.state, stepped=True).recovered is None  # once per fault


def test_a_failure_like_line_before_the_new_attempts_first_step_keeps_the_fault_it_recovers_from(matcher):
    fault = Fault(at=NOW - timedelta(seconds=40), kind=DetectionKind.KERNEL, attempt=0)
    state = rules.advance(WatchState(attempt=0, running=0, fault=fault), running(restart_count=1), 0)
    suspected = poll(matcher, running(restart_count=1), state, lines=[HANDLED])
    assert kinds(suspected) == [DetectionKind.LOG_LINE] and suspected.opened  # the new attempt's own suspicion
    assert suspected.state.fault == fault
    trains = poll(matcher, running(restart_count=1), suspected.state, stepped=True)
    assert trains.recovered == fault


def test_progress_is_followed_while_the_attempt_runs_and_its_end_is_not_handled():
    state = rules.advance(WatchState(), running(), 0)
    assert rules.follows_progress(state, running())
    assert not rules.follows_progress(replace(state, ended=True), running())
    pending = running(state="PENDING", restart_count=1)
    assert not rules.follows_progress(rules.advance(state, pending, 0), pending)


# --- Bounds ---------------------------------------------------------------------------------


def test_an_attempt_signals_at_most_its_cap_and_a_new_attempt_starts_a_new_count(matcher):
    lines = [CRASH, HANDLED, "srun: error: node2: task 1: Killed"]
    capped = poll(matcher, running(), lines=lines, down={"node1", "node2"}, limit=2)
    assert len(capped.detections) == 2 and len(capped.state.sent) == 2
    assert poll(matcher, running(), capped.state, lines=[TIME_LIMIT], down={"node3"}, limit=2).detections == ()
    ended = poll(matcher, running(state="FAILED", end_time=NOW), capped.state, limit=2)
    assert ended.detections == () and ended.state.ended  # the cap holds for the end too; the end is handled
    next_attempt = poll(matcher, running(restart_count=1), ended.state, lines=lines, limit=2)
    assert len(next_attempt.detections) == 2


# --- The step relaunched in the job (issue 14) ----------------------------------------------


def test_after_the_launcher_relaunched_the_step_the_attempts_next_failure_is_news(matcher):
    first = poll(matcher, running(), lines=[CRASH])
    assert kinds(first) == [DetectionKind.LOG_LINE]
    # The relaunch is counted while old lines are still unread: they are judged as before (no news).
    relaunched = poll(matcher, running(), first.state, lines=[CRASH], relaunches=1)
    assert relaunched.detections == () and relaunched.state.relaunches == 1 and relaunched.state.sent == frozenset()
    # The relaunched step trains: the job recovered from the fault, within the same attempt.
    trained = poll(matcher, running(), relaunched.state, lines=["[rank0]: step 11 loss 0.8"], stepped=True)
    assert trained.recovered == first.state.fault and trained.state.fault is None
    # It crashes the same way later: a detection again, opening the attempt's next incident.
    again = poll(matcher, running(), trained.state, lines=[CRASH], relaunches=1)
    assert kinds(again) == [DetectionKind.LOG_LINE] and again.opened
    assert again.state.fault is not None and again.state.fault.relaunches == 1


def test_a_relaunch_count_unchanged_or_unread_changes_nothing(matcher):
    first = poll(matcher, running(), lines=[CRASH])
    for relaunches in (None, 0):
        out = poll(matcher, running(), first.state, lines=[CRASH], relaunches=relaunches)
        assert out.detections == () and out.state is first.state
    # A requeue starts the count afresh: the launcher of the next attempt is a new process.
    requeued = poll(matcher, running(restart_count=1), replace(first.state, relaunches=2))
    assert requeued.state.relaunches == 0


def test_quiet_jobs_are_those_whose_rules_can_find_nothing_in_an_unchanged_poll(matcher):
    """What the detector skips when Slurm lists a job unchanged (rules.quiet): and for each,
    a poll with lines, down nodes and kernel facts indeed finds nothing."""
    rule_settings = settings(matcher)
    noisy = Seen(
        now=NOW,
        lines=["srun: error: node1: task 0: Killed", "NCCL WARN NET/IB : Got completion with status=12"],
        down=frozenset({"node1"}),
        kernel={"node1": NodeFact("xid79", "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus")},
    )
    never_ran = JobInfo(job_id=1, state="PENDING")
    ended = JobInfo(job_id=2, state="FAILED", nodes=["node1"], end_time=NOW)
    ended_state = rules.judge(ended, rules.advance(WatchState(), ended, 0), Seen(now=NOW), rule_settings).state
    for job, state in ((never_ran, rules.advance(WatchState(), never_ran, 0)), (ended, ended_state)):
        assert rules.quiet(state, job)
        outcome = rules.judge(job, rules.advance(state, job, 0), noisy, rule_settings)
        assert outcome.detections == () and outcome.audit == () and outcome.state == state
    running = JobInfo(job_id=3, state="RUNNING", nodes=["node1"])
    requeued = JobInfo(job_id=4, state="PENDING", restart_count=1)  # its last attempt's teardown is still read
    assert not rules.quiet(rules.advance(WatchState(), running, 0), running)
    assert not rules.quiet(rules.advance(WatchState(), requeued, 0), requeued)
