"""The detector's rules for one job: what of a poll's reading is news.

The detector (respawn/detection/detector.py) reads; these rules judge. Given
what Slurm says about a job and its nodes, the new lines of the job's output,
the facts of its nodes' kernel logs and GPU metrics, the findings of its rhythm
and the job's watch state, they say which detections to signal, which audit
events to record, and what the watch state is now. Pure: no I/O and no clock
(the poll's time comes in), so every rule is tested without Slurm
(tests/unit/test_detection_rules.py) and the loop around them stays thin.

Two steps, because the job's output is read between them: `advance` moves the
attempt's state machine on from Slurm's restart count and state, which fixes
where the attempt's evidence begins before this poll's lines are read; `judge`
then turns what was read into detections.
"""

from collections.abc import Callable, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, NamedTuple

import re2

from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Onset
from respawn.audit.trail import AuditEvent, EventType
from respawn.detection.rhythm import Finding
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.scheduler.states import ENDED, ENDED_AS_MEANT, ENDED_BADLY, JobState
from respawn.sources.joblog import logged_at
from respawn.wire.evidence import claims_trust
from respawn.wire.incident import Detection, DetectionKind

# How long a hang or a slowdown had lasted when the rhythm reported it ("... for 16.2 s").
_LASTED = re2.compile(r" for (\d{1,9}(?:\.\d{1,9})?) s\b")  # RE2, bounded: at most 31 years


@dataclass(frozen=True, slots=True)
class Fault:
    """The failure a job is being recovered from, until its next attempt trains again."""

    at: datetime
    kind: DetectionKind
    attempt: int
    relaunches: int = 0  # the job's launcher's relaunches of the attempt's step when it struck


@dataclass(frozen=True, slots=True)
class WatchState:
    """What the rules remember about one job from poll to poll: its current attempt.

    Frozen, and handed back unchanged when a poll changes nothing (most jobs, most polls).
    `seq` and `attempt_offset` are also moved on by the delivery, when the attempt's
    incident hands it on to its next one (`Detector._send`); a new attempt resets both.
    """

    attempt: int = -1
    attempt_offset: int = 0  # where the current attempt's (or its current incident's) evidence begins
    seq: int = 0  # the attempt's current incident: how many before it found the attempt not interrupted
    running: int = -1  # the last attempt seen RUNNING
    requeued: bool = False  # the restart count moved under our eyes
    sent: frozenset[str] = frozenset()  # detections already signalled this attempt
    ended: bool = False  # the current attempt's end is handled
    fault: Fault | None = None  # what the job is recovering from (respawn_recovery_duration_seconds)
    relaunches: int = 0  # how often the job's launcher relaunched the attempt's step (docs/launcher.md)

    def signalled(self, prefix: str) -> bool:
        """Whether a detection whose key starts with `prefix` ("hang:") was signalled this attempt."""
        return any(key.startswith(prefix) for key in self.sent)


class NodeFact(NamedTuple):
    """A line a runbook recognises as a failure, from a node's kernel log or GPU metrics."""

    pattern: str
    line: str


@dataclass(frozen=True, slots=True)
class RuleSettings:
    """What the rules take from the cluster's configuration, fixed for the detector's life."""

    cluster: str
    matcher: Matcher  # built once: every line of every job goes through it
    max_signals_per_attempt: int


@dataclass(frozen=True, slots=True)
class Seen:
    """What one poll read about one job, besides what Slurm says of it."""

    now: datetime  # when the poll looked
    lines: Sequence[str] = ()  # the job's new output
    down: AbstractSet[str] = frozenset()  # nodes Slurm calls DOWN, or flagged NOT_RESPONDING long enough (`down`)
    kernel: Mapping[str, NodeFact] = field(default_factory=dict)  # node -> its newest fatal kernel-log line
    metrics: Mapping[str, NodeFact] = field(default_factory=dict)  # node -> its new fault in the GPU metrics
    findings: Sequence[Finding] = ()  # what the job's rhythm finds wrong (hangs, stragglers)
    stepped: bool = False  # the new lines report a finished training step
    step_seconds: float | None = None  # the job's seconds per step lately, from its rhythm
    checkpoint_interval_s: float | None = None  # ... between its checkpoints, and the save's own
    checkpoint_save_s: float | None = None
    # The job's launcher's relaunch count, read before the lines while the job recovers from
    # a fault (None: not read). Every line of a step it relaunched is then among these lines
    # or earlier ones: the step had exited before the launcher counted the relaunch.
    relaunches: int | None = None
    # When the job last wrote its output, if that can be told: asked only of a detection that
    # carries no time of its own, since it costs a stat of the file and most polls need none.
    modified: Callable[[], datetime | None] = lambda: None


class Opened(NamedTuple):
    """A detection that opens its incident: detection latency is measured from when its failure occurred."""

    kind: DetectionKind
    occurred: datetime


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the detector does with one job's poll: signal, record, measure, and remember."""

    state: WatchState
    detections: tuple[Detection, ...] = ()
    audit: tuple[AuditEvent, ...] = ()  # to record (each keyed: recording twice is harmless)
    opened: tuple[Opened, ...] = ()
    recovered: Fault | None = None  # the fault a later attempt recovered from in this poll


def down(
    nodes: Iterable[NodeInfo], now: float, flagged: Mapping[str, float], hold_s: float
) -> tuple[frozenset[str], dict[str, float]]:
    """The nodes Slurm calls DOWN, or has flagged NOT_RESPONDING for `hold_s` or longer (once
    per poll, for every job); and, for the next poll, since when each flagged node has been.

    A flag alone is no verdict: slurmctld sets it as soon as one message to the node's slurmd
    times out (a slurmd busy with a step's kill does, for a second or two) and clears it at
    the next answer; read at once as a node lost, it relaunched a healthy job elsewhere. A
    node cut off stays flagged until Slurm calls it DOWN (SlurmdTimeout later), so one
    flagged for `hold_s` (detector.not_responding_s) is taken as lost before that. `now` and
    `flagged` are monotonic seconds."""
    lost: set[str] = set()
    since: dict[str, float] = {}
    for n in nodes:
        if n.state.lower().startswith("down"):
            lost.add(n.name)
        elif "not_responding" in {f.lower() for f in n.flags}:
            since[n.name] = flagged.get(n.name, now)
            if now - since[n.name] >= hold_s:
                lost.add(n.name)
    return frozenset(lost), since


def first_seen(job: JobInfo, since: datetime, catch_up: timedelta) -> WatchState:
    """The watch state of a job new to the detector, which started at `since` and catches up
    on what ended within `catch_up` before (detector.catch_up_s)."""
    if job.end_time is not None and job.state in ENDED and job.end_time < since - catch_up:
        # It ended well before we started (Slurm lists finished jobs for
        # MinJobAge): someone else dealt with it; a restart of ours only
        # catches up on what ended while it was down.
        return WatchState(attempt=job.restart_count, running=job.restart_count, ended=True)
    return WatchState()


def advance(state: WatchState, job: JobInfo, read_from: int) -> WatchState:
    """The attempt's state machine, before this poll's lines are read from offset `read_from`."""
    if job.restart_count != state.attempt:
        state = replace(
            state,
            requeued=state.attempt != -1,
            attempt=job.restart_count,
            attempt_offset=read_from,
            sent=frozenset(),
            ended=False,
            seq=0,
            relaunches=0,
        )
    if job.state == JobState.RUNNING and state.running != job.restart_count:
        state = replace(state, running=job.restart_count, attempt_offset=read_from)
    return state


def quiet(state: WatchState, job: JobInfo) -> bool:
    """Whether a poll that finds the job as the poll before did can find nothing in it: its
    attempt's end is handled (`judge` looks no further), or it is pending and has never run
    (no output is news before it runs, and it has no nodes). Such a job's output is not read
    again until Slurm's record of it changes (a requeue, a start); its lines then are judged
    as they would have been (a pending job's are not news, an ended attempt's neither)."""
    return state.ended or (job.state == JobState.PENDING and job.restart_count == 0 and state.running == -1)


def follows_progress(state: WatchState, job: JobInfo) -> bool:
    """After `advance`: whether this poll's lines feed the job's rhythm (the attempt runs, its end not handled)."""
    return not state.ended and job.state == JobState.RUNNING and state.running == job.restart_count


def judge(job: JobInfo, state: WatchState, seen: Seen, settings: RuleSettings) -> Outcome:
    """Detections for one job in this poll, from the state `advance` left."""
    if state.ended:
        return Outcome(state=state)
    # Until the new attempt runs, what is written is the previous attempt's
    # teardown (Slurm's "CANCELLED ... DUE TO JOB REQUEUE", srun's late
    # reports) and the allocation still lists the old nodes: none of it is news.
    started = state.running == job.restart_count
    lines = seen.lines if started else ()
    now = seen.now
    sent = set(state.sent)
    fault = state.fault
    detections: list[Detection] = []
    opened: list[Opened] = []
    audit: list[AuditEvent] = []

    def written() -> datetime:
        """When the job last wrote output: the time of a failure that carries none of its own."""
        return min(now, seen.modified() or now)

    def detect(key: str, kind: DetectionKind, occurred: datetime, **fields: Any) -> None:
        """`occurred`: when the failure happened, as well as the signal tells."""
        nonlocal fault
        if key in sent or len(sent) >= settings.max_signals_per_attempt:
            return
        slowdown = kind is DetectionKind.SLOWDOWN  # an incident of its own beside the attempt's
        if not any(k.startswith("slowdown:") == slowdown for k in sent):  # it opens its incident
            opened.append(Opened(kind, occurred))
            # A fault an earlier attempt (or step) was restarted from stays what the job recovers
            # from until it trains again: a failure-like line before its first step is a
            # suspicion of its own, and if it is real, the job has not trained since the first.
            recovering = fault is not None and (fault.attempt, fault.relaunches) < (job.restart_count, state.relaunches)
            if not slowdown and not recovering:
                fault = Fault(at=occurred, kind=kind, attempt=job.restart_count, relaunches=state.relaunches)
        sent.add(key)
        detections.append(
            Detection(
                kind=kind,
                at=now,
                job_id=job.job_id,
                attempt=job.restart_count,
                submitted=job.submit_time,
                job_state=job.state,
                allocation=list(job.nodes),
                log_offset=state.attempt_offset,
                occurred=occurred,
                step_seconds=seen.step_seconds,
                checkpoint_interval_s=seen.checkpoint_interval_s,
                checkpoint_save_s=seen.checkpoint_save_s,
                **fields,
            )
        )

    for text in lines:
        hit = None if claims_trust(text) else settings.matcher.failure(text)  # a forged finding is no news
        if hit is None or hit.onset is Onset.REPORTED:
            # Slurm's report of an end it caused (a cancel, a time limit): its state says the rest.
            continue
        host = hit.groups.get("host")
        if host and job.nodes and host not in job.nodes:
            # It names a node this attempt does not run on: the previous
            # attempt's srun reporting late, or text the job made up.
            continue
        detect(
            f"line:{hit.pattern}",
            DetectionKind.LOG_LINE,
            logged_at(text) or written(),
            line=text[:2000],
            pattern=hit.pattern,
        )
    for node in job.nodes if started else []:
        if node in seen.down:
            # Slurm's own delay in noticing the node is not visible; the job went quiet when it died.
            detect(f"node:{node}", DetectionKind.NODE_DOWN, written(), node=node)
        if node in seen.kernel and job.state == JobState.RUNNING:
            pattern, text = seen.kernel[node]
            detect(
                f"kernel:{node}:{pattern}",
                DetectionKind.KERNEL,
                logged_at(text) or now,
                node=node,
                line=text,
                pattern=pattern,
            )
        if node in seen.metrics and job.state == JobState.RUNNING:
            pattern, text = seen.metrics[node]
            detect(f"metrics:{node}:{pattern}", DetectionKind.METRICS, now, node=node, line=text, pattern=pattern)
    recovered = None
    if started and job.state == JobState.RUNNING:
        relaunched = fault is not None and fault.attempt == job.restart_count and state.relaunches > fault.relaunches
        if fault is not None and (job.restart_count > fault.attempt or relaunched) and seen.stepped:
            # A later attempt (or the step relaunched in the job) trains again: the job has recovered.
            recovered, fault = fault, None
        for finding in seen.findings:
            # What a finding means is the runbooks' to say (runbooks/hang.yaml, slowdown.yaml).
            hit = settings.matcher.failure(finding.line)
            if hit is not None:
                lasted = _LASTED.search(finding.line)
                began = now - timedelta(seconds=float(lasted.group(1))) if lasted else now
                detect(
                    f"{finding.kind.value}:{finding.node}",
                    DetectionKind(finding.kind.value),
                    began,
                    line=finding.line,
                    node=finding.node,
                    pattern=hit.pattern,
                )
    ended = False
    # Right after a requeue Slurm can show the new restart count with a
    # FAILED state left by the old attempt's batch script: only an attempt
    # seen running (or the first one we see) can end.
    if job.state in ENDED_BADLY and (started or not state.requeued):
        ended = True
        detect(
            f"ended:{job.state}",
            DetectionKind.JOB_ENDED,
            job.end_time or written(),
            line=f"slurm: job {job.job_id} attempt {job.restart_count} ended {job.state}"
            f" reason={job.state_reason} exit_code={job.exit_code}",
        )
    elif job.state in ENDED_AS_MEANT:
        ended = True
        event = EventType.JOB_COMPLETED if job.state == JobState.COMPLETED else EventType.JOB_ENDED
        audit.append(
            AuditEvent(
                key=f"{settings.cluster}/{job.job_id}/{job.restart_count}/{event.value}",
                event_type=event,
                cluster=settings.cluster,
                job_id=job.job_id,
                attempt=job.restart_count,
                details={"state": job.state, "exit_code": job.exit_code},
            )
        )
    if ended or fault is not state.fault or len(sent) != len(state.sent):
        # Unchanged, the state is handed back as it came: most jobs, most polls.
        state = replace(state, sent=frozenset(sent), ended=ended, fault=fault)
    if seen.relaunches is not None and seen.relaunches > state.relaunches:
        # The launcher relaunched the step in the allocation: the attempt goes on, and its next
        # failure is news (the next incident of the attempt). Judged with the old keys above:
        # this poll's lines may still be the old step's.
        state = replace(state, sent=frozenset(), relaunches=seen.relaunches)
    return Outcome(
        state=state, detections=tuple(detections), audit=tuple(audit), opened=tuple(opened), recovered=recovered
    )
