"""What interruptions cost: lost time and GPU-hours per incident, ETTR and failure rates
per job and per cluster, folded from the audit trail (docs/cost.md). Pure: rows in,
typed results out; the only clock is the `until` the caller passes.

An incident's lost time, in four parts, each flagged measured, estimated or unknown:

- work redone: (the attempt's last step − the checkpoint it trains again from) × the
  job's seconds per step (the detector's median of recent step intervals). Estimated:
  the step count is the job's own word, its duration a median. The checkpoint is the one
  RESUMED says was loaded, else the newest DECIDED knew of.
- fault → detection: DETECTED's `at` − its `occurred` (when the failure happened, as
  well as the signal tells: the line's time, the output's last write, Slurm's end).
- detection → action: DETECTED → the first action row (HELD: the requeue; RELAUNCHED:
  an in-job rung; ADVISED: the advisor transport; STOPPED).
- action → training again: that row → RESUMED (the first step of the next attempt or
  of the relaunched step, as the follower saw it: within its 0.25 s poll).

Each part × the job's GPUs is its GPU-hours. The trail does not record GPUs: a job's
are the nodes of its allocation (ATTEMPT_STARTED, RELAUNCHED name them) × the
configured `accounting.gpus_per_node`, else `accounting.job_gpus` (assumed), else unknown.

A part that is unknown counts as nothing in a total: totals are what is known, and say
how many incidents they are missing parts of.

How often to checkpoint (issue 15, item 3), per job and per job-size bucket: the checkpoint
interval and save time the job's progress rhythm measured (the medians of its DETECTED rows'
`checkpoint_interval_s` and `checkpoint_save_s`), the MTBF of the jobs of its size in the range,
and the restart time measured (fault → training again, the mean of its incidents', else of its
size's), through Young/Daly (respawn/decision/checkpointing.py). A figure not measured: no
advice, and the report says which.
"""

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from respawn.audit.details import (
    DecidedDetails,
    DetectedDetails,
    EnrolledDetails,
    IncidentClosedDetails,
    ResumedDetails,
)
from respawn.audit.trail import AuditRow, AuditTrail, EventType
from respawn.config.cluster import AccountingSettings
from respawn.decision.checkpointing import CheckpointAdvice, advise, phrase


class Part(StrEnum):
    WORK_REDONE = "work_redone"
    FAULT_TO_DETECTION = "fault_to_detection"
    DETECTION_TO_ACTION = "detection_to_action"
    ACTION_TO_TRAINING = "action_to_training"


PARTS = tuple(Part)


class Basis(StrEnum):
    MEASURED = "measured"  # the difference of two recorded times
    ESTIMATED = "estimated"  # from a count and a rate (steps × seconds per step)
    UNKNOWN = "unknown"  # a row or a field it needs is missing


class GpuBasis(StrEnum):
    REPORTED = "reported"  # Slurm's allocation, as the incident's decision recorded it (DECIDED.gpus)
    ASSUMED = "assumed"  # from the configuration: nodes × gpus_per_node, or job_gpus
    UNKNOWN = "unknown"  # no allocation on record and nothing configured


class PartCost(BaseModel):
    part: Part
    seconds: float | None  # None: unknown
    gpu_hours: float | None  # None: the seconds or the GPUs unknown
    basis: Basis
    note: str = ""  # how it was had, or what it lacks


class IncidentCost(BaseModel):
    incident_id: str
    job_id: int
    attempt: int | None
    detected_at: datetime
    kind: str | None
    failure_class: str | None
    action: str | None
    phase: str  # the phase it closed in; "open" until then
    # False: a suspicion the attempt outlived or not yet confirmed, or a slowdown nobody acted on: it costs nothing
    interrupted: bool
    gpus: int | None
    gpus_basis: GpuBasis
    parts: list[PartCost]
    lost_seconds: float  # the sum of the parts known
    lost_gpu_hours: float | None  # the same × GPUs; None when the GPUs are unknown
    complete: bool  # every part known

    def part(self, part: Part) -> PartCost:
        return next(p for p in self.parts if p.part is part)


class JobCost(BaseModel):
    job_id: int
    gpus: int | None
    gpus_basis: GpuBasis
    start: datetime  # submission (from the rows), or the job's first row
    start_basis: Basis  # measured: the submit time on record; estimated: its first row's
    end: datetime | None  # None: running at the end of the range, as far as the trail knows
    wall_seconds: float  # within the range
    lost_seconds: float  # of its incidents in the range, the parts known
    productive_seconds: float  # wall − lost, at least 0
    ettr: float | None  # productive / wall; None for no wall time in the range
    interruptions: int
    lost_gpu_hours: float | None
    wall_gpu_hours: float | None


class PartTotal(BaseModel):
    part: Part
    seconds: float
    gpu_hours: float
    share: float | None  # of the lost GPU-hours (of the lost seconds, where no GPUs are known)
    incidents_unknown: int  # interrupted incidents in which this part is unknown


class SizeBucket(BaseModel):
    """Mean time between failures of the jobs of one size (their GPUs)."""

    gpus: str  # "1-8", "9-64", ..., "unknown"
    jobs: int
    interruptions: int
    wall_hours: float
    mtbf_hours: float | None  # wall hours / interruptions; None without interruptions


class IntervalAdvice(BaseModel):
    """How often a job (or the jobs of one size) should checkpoint: Young/Daly from measured figures
    (respawn/decision/checkpointing.py, docs/cost.md). `advice` None: a figure was not measured
    (`missing` says which); `sentence` says it either way."""

    job_id: int | None  # None: the advice for the jobs of a size bucket
    gpus: str  # the size bucket: "9-64", ..., "unknown"
    interval_s: float | None  # the checkpoint interval: median of the DETECTED rows' measures
    save_s: float | None  # a save's duration: the same
    measures: int  # DETECTED rows that carried a checkpoint interval or a save time
    mtbf_s: float | None  # of the jobs of this size in the range (the bucket's MTBF)
    mtbf_from: str  # what it pools: "3 jobs of 9-64 GPUs: 2 interruptions in 41.0 h"
    restart_s: float  # failure → training again, mean of the incidents that have all three latencies; 0: none
    restart_from: str
    advice: CheckpointAdvice | None
    missing: list[str] = Field(default_factory=list)
    sentence: str


class TimeBin(BaseModel):
    """The lost time of the interruptions detected in [start, start + the series' bin)."""

    start: datetime
    interruptions: int
    seconds: dict[Part, float]  # by part, the known parts
    gpu_hours: dict[Part, float]


class CostReport(BaseModel):
    cluster: str
    since: datetime
    until: datetime
    incidents: list[IncidentCost]
    jobs: list[JobCost]
    parts: list[PartTotal]
    interruptions: int
    lost_seconds: float
    lost_gpu_hours: float
    wall_gpu_hours: float  # of the jobs whose GPUs are known (assumed)
    ettr: float | None  # Σ productive / Σ wall over the jobs (GPU-weighted where every job's GPUs are known)
    ettr_weighting: str  # "gpu_hours" or "job_hours"
    interruptions_per_1k_gpu_hours: float | None
    mtbf: list[SizeBucket]
    gpus_basis: GpuBasis  # unknown when any job's GPUs are, else assumed (the trail records none)
    notes: list[str] = Field(default_factory=list)
    bin_seconds: int = 86_400  # the width of `series`' bins: 5 min, an hour, a day or a week, by the range
    series: list[TimeBin] = Field(default_factory=list)  # lost time over the range, oldest bin first, gaps as 0
    advice: list[IntervalAdvice] = Field(default_factory=list)  # per job in `jobs`, in its order
    size_advice: list[IntervalAdvice] = Field(default_factory=list)  # per size bucket in `mtbf`, in its order


# ---- parsing a range ----

_DURATION = re.compile(r"^\s*(\d{1,6})\s*([smhdw])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_LONGEST_S = 3660 * 86400


def parse_since(text: str) -> timedelta:
    """`30m`, `12h`, `7d` (also `s` and `w`) as a duration; ValueError otherwise."""
    found = _DURATION.match(text)
    if found is None:
        raise ValueError(f"not a duration: {text[:40]!r} (say e.g. 30m, 12h, 7d)")
    seconds = int(found.group(1)) * _UNIT[found.group(2)]
    if seconds == 0:
        raise ValueError("a duration of zero covers nothing")
    if seconds > _LONGEST_S:
        raise ValueError(f"{text.strip()} is longer than the audit trail can be: at most 3660d")
    return timedelta(seconds=seconds)


# ---- reading ----

# The rows the accounting reads; the rest (watch errors, overrides, ...) it need not load.
READS = [
    EventType.ENROLLED,
    EventType.DETECTED,
    EventType.NOT_INTERRUPTED,
    EventType.DECIDED,
    EventType.HELD,
    EventType.RELAUNCHED,
    EventType.ADVISED,
    EventType.STOPPED,
    EventType.ATTEMPT_STARTED,
    EventType.RESUMED,
    EventType.INCIDENT_CLOSED,
    EventType.JOB_COMPLETED,
    EventType.JOB_ENDED,
]
_ACTIONS = (EventType.HELD, EventType.RELAUNCHED, EventType.ADVISED, EventType.STOPPED)
_NO_INTERRUPTION_KINDS = {"slowdown"}  # a slow job trains on: an interruption only when acted on


def read_rows(audit: AuditTrail, cluster: str, batch: int = 10_000) -> Iterator[AuditRow]:
    """Every row of `cluster` the accounting reads, oldest first."""
    after = 0
    while rows := audit.query(cluster=cluster, event_types=READS, after_id=after, limit=batch):
        yield from rows
        after = rows[-1].id


def report_from_trail(
    audit: AuditTrail, cluster: str, accounting: AccountingSettings, since: datetime, until: datetime
) -> "CostReport":
    return cost_report(read_rows(audit, cluster), cluster=cluster, since=since, until=until, accounting=accounting)


# ---- folding ----


def _iso(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None  # a time without its zone is not compared


def _seconds(start: datetime, end: datetime) -> float:
    return max(0.0, (end - start).total_seconds())  # other hosts' clocks may run ahead


def _gpu_hours(seconds: float | None, gpus: int | None) -> float | None:
    return None if seconds is None or gpus is None else seconds * gpus / 3600


def _job_gpus(nodes: int, accounting: AccountingSettings) -> tuple[int | None, GpuBasis]:
    if nodes and accounting.gpus_per_node is not None:
        return nodes * accounting.gpus_per_node, GpuBasis.ASSUMED
    if accounting.job_gpus is not None:
        return accounting.job_gpus, GpuBasis.ASSUMED
    return None, GpuBasis.UNKNOWN


def _first(rows: list[AuditRow], *types: EventType) -> AuditRow | None:
    found = [r for r in rows if r.event_type in types]
    return min(found, key=lambda r: (r.at, r.id)) if found else None


def _incident(
    rows: list[AuditRow], gpus: int | None, gpus_basis: GpuBasis
) -> IncidentCost | None:  # None: no DETECTED row
    detected = _first(rows, EventType.DETECTED)
    if detected is None:
        return None
    det = detected.detail(DetectedDetails)
    decided = _first(rows, EventType.DECIDED)
    dec = decided.detail(DecidedDetails) if decided else None
    acted = _first(rows, *_ACTIONS)
    resumed = _first(rows, EventType.RESUMED)
    res = resumed.detail(ResumedDetails) if resumed else None
    closed = _first(rows, EventType.INCIDENT_CLOSED)
    phase = closed.detail(IncidentClosedDetails).phase if closed else "open"
    not_interrupted = _first(rows, EventType.NOT_INTERRUPTED) is not None or phase == "not_interrupted"
    # DECIDED is recorded once the interruption is confirmed (a suspicion waits for it, and may close
    # not_interrupted): an incident with neither it nor an action awaits confirmation, and counts nothing yet.
    pending = not not_interrupted and decided is None and acted is None
    interrupted = not not_interrupted and not pending and (det.kind not in _NO_INTERRUPTION_KINDS or acted is not None)
    common: dict[str, Any] = dict(
        incident_id=detected.incident_id or "",
        job_id=detected.job_id,
        attempt=detected.attempt,
        detected_at=detected.at,
        kind=det.kind,
        failure_class=(decided.failure_class if decided else None) or (closed.failure_class if closed else None),
        action=(decided.action if decided else None),
        phase=phase,
        interrupted=interrupted,
        gpus=gpus,
        gpus_basis=gpus_basis,
    )
    if pending:
        why = f"not confirmed an interruption (incident {phase})"
        return IncidentCost(
            **common, parts=[_unknown(p, why) for p in PARTS], lost_seconds=0.0, lost_gpu_hours=0.0, complete=False
        )
    if not interrupted:
        why = "not interrupted" if not_interrupted else f"a {det.kind} nobody acted on: the job trained on"
        parts = [PartCost(part=p, seconds=0.0, gpu_hours=0.0, basis=Basis.MEASURED, note=why) for p in PARTS]
        return IncidentCost(**common, parts=parts, lost_seconds=0.0, lost_gpu_hours=0.0, complete=True)

    parts = [
        _work_redone(dec, res, det),
        _fault_to_detection(detected, det),
        _detection_to_action(detected, acted, phase),
        _action_to_training(acted, resumed, phase),
    ]
    for p in parts:
        p.gpu_hours = _gpu_hours(p.seconds, gpus)
    lost = sum(p.seconds for p in parts if p.seconds is not None)
    return IncidentCost(
        **common,
        parts=parts,
        lost_seconds=lost,
        lost_gpu_hours=_gpu_hours(lost, gpus),
        complete=all(p.basis is not Basis.UNKNOWN for p in parts),
    )


def _unknown(part: Part, note: str) -> PartCost:
    return PartCost(part=part, seconds=None, gpu_hours=None, basis=Basis.UNKNOWN, note=note)


def _work_redone(dec: DecidedDetails | None, res: ResumedDetails | None, det: DetectedDetails) -> PartCost:
    part = Part.WORK_REDONE
    last = dec.last_step if dec else None
    checkpoint, source = None, ""
    if res is not None and res.resumed_from is not None:
        checkpoint, source = res.resumed_from, "the checkpoint resumed from"
    elif dec is not None:
        checkpoint, source = dec.checkpoint_step, "the newest checkpoint at the decision"
    lacking = [
        name
        for name, value in (
            ("the attempt's last step", last),
            ("a checkpoint step", checkpoint),
            ("the job's seconds per step", det.step_seconds),
        )
        if value is None
    ]
    if lacking:
        return _unknown(part, f"not recorded: {', '.join(lacking)}")
    assert last is not None and checkpoint is not None and det.step_seconds is not None
    steps = max(0, last - checkpoint)
    return PartCost(
        part=part,
        seconds=steps * det.step_seconds,
        gpu_hours=None,
        basis=Basis.ESTIMATED,
        note=f"{steps} steps (step {last} − {source}, step {checkpoint}) × {det.step_seconds:.3g} s per step",
    )


def _fault_to_detection(detected: AuditRow, det: DetectedDetails) -> PartCost:
    occurred = _iso(det.occurred)
    if occurred is None:
        return _unknown(Part.FAULT_TO_DETECTION, "not recorded: when the failure occurred")
    return PartCost(
        part=Part.FAULT_TO_DETECTION,
        seconds=_seconds(occurred, detected.at),
        gpu_hours=None,
        basis=Basis.MEASURED,
        note=f"{det.kind or 'detection'}: from the failure as the signal dates it",
    )


def _detection_to_action(detected: AuditRow, acted: AuditRow | None, phase: str) -> PartCost:
    if acted is None:
        return _unknown(Part.DETECTION_TO_ACTION, f"no action on record (incident {phase})")
    return PartCost(
        part=Part.DETECTION_TO_ACTION,
        seconds=_seconds(detected.at, acted.at),
        gpu_hours=None,
        basis=Basis.MEASURED,
        note=f"to {acted.event_type.value}",
    )


def _action_to_training(acted: AuditRow | None, resumed: AuditRow | None, phase: str) -> PartCost:
    part = Part.ACTION_TO_TRAINING
    if acted is None:
        return _unknown(part, f"no action on record (incident {phase})")
    if resumed is None:
        if acted.event_type is EventType.STOPPED:
            return _unknown(part, "stopped: the job did not train again")
        return _unknown(part, f"no first step again on record (incident {phase})")
    return PartCost(
        part=part,
        seconds=_seconds(acted.at, resumed.at),
        gpu_hours=None,
        basis=Basis.MEASURED,
        note=f"{acted.event_type.value} to the first step again (seen within the follower's poll)",
    )


_BUCKETS = ((8, "1-8"), (64, "9-64"), (512, "65-512"), (4096, "513-4096"))


def _bucket(gpus: int | None) -> str:
    if gpus is None:
        return "unknown"
    return next((name for top, name in _BUCKETS if gpus <= top), "4097+")


def cost_report(
    rows: Iterable[AuditRow],
    *,
    cluster: str,
    since: datetime,
    until: datetime,
    accounting: AccountingSettings,
) -> CostReport:
    """The cost of the incidents detected in [since, until), and ETTR and failure rates of
    the jobs that ran in it. `rows`: the cluster's, oldest first (`read_rows`)."""
    by_job: dict[int, list[AuditRow]] = defaultdict(list)
    by_incident: dict[str, list[AuditRow]] = defaultdict(list)
    for row in rows:
        if row.cluster != cluster or row.at >= until:
            continue
        by_job[row.job_id].append(row)
        if row.incident_id is not None:
            by_incident[row.incident_id].append(row)

    incidents: list[IncidentCost] = []
    jobs: list[JobCost] = []
    measures: dict[int, list[DetectedDetails]] = {}
    for job_id, job_rows in sorted(by_job.items()):
        measures[job_id] = [
            det
            for r in job_rows
            if r.event_type is EventType.DETECTED
            and (
                (det := r.detail(DetectedDetails)).checkpoint_interval_s is not None
                or det.checkpoint_save_s is not None
            )
        ]
        allocation = max(
            (len(r.nodes) for r in job_rows if r.event_type in (EventType.ATTEMPT_STARTED, EventType.RELAUNCHED)),
            default=0,
        )
        reported = [g for r in job_rows if r.event_type is EventType.DECIDED and (g := r.detail(DecidedDetails).gpus)]
        gpus, gpus_basis = (max(reported), GpuBasis.REPORTED) if reported else _job_gpus(allocation, accounting)
        ids = list(dict.fromkeys(r.incident_id for r in job_rows if r.incident_id is not None))
        costs = [c for iid in ids if (c := _incident(by_incident[iid], gpus, gpus_basis)) is not None]
        in_range = [c for c in costs if since <= c.detected_at < until]
        incidents.extend(in_range)
        job = _job(job_id, job_rows, costs, in_range, gpus, gpus_basis, since, until)
        if job is not None:
            jobs.append(job)
    incidents.sort(key=lambda c: c.detected_at)
    report = _totals(cluster, since, until, incidents, jobs)
    report.bin_seconds, report.series = _series(incidents, since, until)
    report.advice, report.size_advice = _advice(report, measures)
    return report


# ---- lost time over the range ----

_BIN_WIDTHS = ((6 * 3600, 300), (2 * 86400, 3600), (180 * 86400, 86400))  # range up to → bin width


def _series(incidents: list[IncidentCost], since: datetime, until: datetime) -> tuple[int, list[TimeBin]]:
    """The interruptions' lost time in bins over [since, until): 5-minute bins up to a 6 h range,
    hourly up to 2 days, daily up to 180 days, weekly beyond. Bins are aligned to the epoch (UTC),
    so the first and last may reach outside the range; an incident counts in its detection's bin."""
    span = (until - since).total_seconds()
    width = next((w for top, w in _BIN_WIDTHS if span <= top), 7 * 86400)
    epoch = datetime(1970, 1, 1, tzinfo=since.tzinfo)

    def index(at: datetime) -> int:
        return int((at - epoch).total_seconds() // width)

    first, last = index(since), index(until - timedelta(microseconds=1))
    bins = [
        TimeBin(
            start=epoch + timedelta(seconds=i * width),
            interruptions=0,
            seconds={p: 0.0 for p in PARTS},
            gpu_hours={p: 0.0 for p in PARTS},
        )
        for i in range(first, last + 1)
    ]
    for c in incidents:
        if not c.interrupted:
            continue
        b = bins[min(max(index(c.detected_at) - first, 0), len(bins) - 1)]
        b.interruptions += 1
        for p in c.parts:
            b.seconds[p.part] += p.seconds or 0.0
            b.gpu_hours[p.part] += p.gpu_hours or 0.0
    return width, bins


# ---- how often to checkpoint ----


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _advised(
    job_id: int | None,
    bucket: SizeBucket,
    dets: list[DetectedDetails],
    restarts: list[float],
) -> IntervalAdvice:
    interval = _median([d.checkpoint_interval_s for d in dets if d.checkpoint_interval_s is not None])
    save = _median([d.checkpoint_save_s for d in dets if d.checkpoint_save_s is not None])
    mtbf = None if bucket.mtbf_hours is None else bucket.mtbf_hours * 3600
    jobs = "1 job" if bucket.jobs == 1 else f"{bucket.jobs} jobs"
    mtbf_from = (
        f"{jobs} of {bucket.gpus} GPUs: {bucket.interruptions} interruption{'s' * (bucket.interruptions != 1)}"
        f" in {bucket.wall_hours:.1f} h"
    )
    restart = sum(restarts) / len(restarts) if restarts else 0.0
    restart_from = (
        f"mean of {len(restarts)} incident{'s' * (len(restarts) != 1)}: fault → detection → action → training"
        if restarts
        else "not measured (no incident with all three latencies): counted as 0"
    )
    missing = [
        name if value is None else f"{name} (measured as {value:g} s: too short for the detector's polls to tell)"
        for name, value in (
            ("the checkpoint interval", interval),
            ("a checkpoint's save time", save),
            (f"a failure rate (no interruption of a job of {bucket.gpus} GPUs in the range)", mtbf),
        )
        if value is None or value <= 0
    ]
    advice = None if missing else advise(interval, save, mtbf, restart)
    if advice is None and not missing:
        missing = ["figures the formula can use"]
    return IntervalAdvice(
        job_id=job_id,
        gpus=bucket.gpus,
        interval_s=interval,
        save_s=save,
        measures=len(dets),
        mtbf_s=mtbf,
        mtbf_from=mtbf_from,
        restart_s=restart,
        restart_from=restart_from,
        advice=advice,
        missing=missing,
        sentence=phrase(advice) if advice is not None else f"not measured: {', '.join(missing)}",
    )


def _restart_s(c: IncidentCost) -> float | None:
    """Failure → training again: the three measured latencies, when all three are known."""
    parts = [c.part(p).seconds for p in (Part.FAULT_TO_DETECTION, Part.DETECTION_TO_ACTION, Part.ACTION_TO_TRAINING)]
    return sum(s for s in parts if s is not None) if c.interrupted and None not in parts else None


def _advice(
    report: "CostReport", measures: dict[int, list[DetectedDetails]]
) -> tuple[list[IntervalAdvice], list[IntervalAdvice]]:
    """Per job and per size bucket: the checkpoint interval and save time the job's rhythm
    measured (medians of its DETECTED rows), the failure rate of the jobs of its size (their
    MTBF in the range) and their measured restart time, through Young/Daly."""
    buckets = {b.gpus: b for b in report.mtbf}
    restarts: dict[int, list[float]] = defaultdict(list)
    for c in report.incidents:
        if (r := _restart_s(c)) is not None:
            restarts[c.job_id].append(r)
    members: dict[str, list[int]] = defaultdict(list)
    for j in report.jobs:
        members[_bucket(j.gpus)].append(j.job_id)
    per_job = []
    for j in report.jobs:
        name = _bucket(j.gpus)
        # Its own incidents' restart time where it had one, else that of the jobs of its size.
        own = restarts[j.job_id] or [r for job_id in members[name] for r in restarts[job_id]]
        per_job.append(_advised(j.job_id, buckets[name], measures.get(j.job_id, []), own))
    per_size = [
        _advised(
            None,
            b,
            [d for job_id in members[b.gpus] for d in measures.get(job_id, [])],
            [r for job_id in members[b.gpus] for r in restarts[job_id]],
        )
        for b in report.mtbf
    ]
    return per_job, per_size


def _job(
    job_id: int,
    rows: list[AuditRow],
    costs: list[IncidentCost],
    in_range: list[IncidentCost],
    gpus: int | None,
    gpus_basis: GpuBasis,
    since: datetime,
    until: datetime,
) -> JobCost | None:
    """The job's wall time in the range and how much of it trained. None: not enrolled (the
    detector turned it away) or not running in the range."""
    enrolled = [r for r in rows if r.event_type is EventType.ENROLLED]
    if not enrolled and not costs:
        return None
    submitted = [t for r in rows if (t := _submitted(r)) is not None]
    start, start_basis = (min(submitted), Basis.MEASURED) if submitted else (min(r.at for r in rows), Basis.ESTIMATED)
    end = _end(rows, costs)
    lo, hi = max(start, since), min(end or until, until)
    if hi <= lo:
        return None
    wall = _seconds(lo, hi)
    lost = min(wall, sum(c.lost_seconds for c in in_range))
    productive = wall - lost
    return JobCost(
        job_id=job_id,
        gpus=gpus,
        gpus_basis=gpus_basis,
        start=start,
        start_basis=start_basis,
        end=end,
        wall_seconds=wall,
        lost_seconds=lost,
        productive_seconds=productive,
        ettr=productive / wall if wall > 0 else None,
        interruptions=sum(c.interrupted for c in in_range),
        lost_gpu_hours=_gpu_hours(lost, gpus),
        wall_gpu_hours=_gpu_hours(wall, gpus),
    )


def _submitted(row: AuditRow) -> datetime | None:
    """The job's submit time, where the row says it (ENROLLED, DECIDED)."""
    if row.event_type is EventType.ENROLLED:
        return _iso(row.detail(EnrolledDetails).submitted)
    if row.event_type is EventType.DECIDED:
        return _iso(row.detail(DecidedDetails).submitted)
    return None


def _end(rows: list[AuditRow], costs: list[IncidentCost]) -> datetime | None:
    """When the job stopped running, as far as the trail knows: it ended as meant (the
    detector saw it), Respawn stopped it, or its last incident closed without it training
    again. None: running still."""
    ended = _first(rows, EventType.JOB_COMPLETED, EventType.JOB_ENDED, EventType.STOPPED)
    if ended is not None:
        return ended.at
    if costs:
        last = costs[-1]
        closing = [r for r in rows if r.incident_id == last.incident_id and r.event_type is EventType.INCIDENT_CLOSED]
        trained_again = any(r.incident_id == last.incident_id and r.event_type is EventType.RESUMED for r in rows)
        if last.interrupted and closing and not trained_again:
            return closing[0].at
    return None


def _totals(
    cluster: str, since: datetime, until: datetime, incidents: list[IncidentCost], jobs: list[JobCost]
) -> CostReport:
    interrupted = [c for c in incidents if c.interrupted]
    seconds = {p: 0.0 for p in PARTS}
    gpu_hours = {p: 0.0 for p in PARTS}
    unknown = {p: 0 for p in PARTS}
    for c in interrupted:
        for p in c.parts:
            if p.seconds is None:
                unknown[p.part] += 1
                continue
            seconds[p.part] += p.seconds
            gpu_hours[p.part] += p.gpu_hours or 0.0
    lost_gpu_hours, lost_seconds = sum(gpu_hours.values()), sum(seconds.values())
    shared, whole = (gpu_hours, lost_gpu_hours) if lost_gpu_hours > 0 else (seconds, lost_seconds)
    parts = [
        PartTotal(
            part=p,
            seconds=seconds[p],
            gpu_hours=gpu_hours[p],
            share=shared[p] / whole if whole > 0 else None,
            incidents_unknown=unknown[p],
        )
        for p in PARTS
    ]

    sized = [j for j in jobs if j.gpus is not None]
    wall_gpu_hours = sum(j.wall_gpu_hours or 0.0 for j in sized)
    if jobs and len(sized) == len(jobs) and wall_gpu_hours > 0:
        weighting = "gpu_hours"
        wall_w = wall_gpu_hours
        productive_w = sum(j.productive_seconds * (j.gpus or 0) / 3600 for j in jobs)
    else:
        weighting = "job_hours"
        wall_w = sum(j.wall_seconds for j in jobs)
        productive_w = sum(j.productive_seconds for j in jobs)
    per_1k = None
    if wall_gpu_hours > 0:
        per_1k = sum(j.interruptions for j in sized) / wall_gpu_hours * 1000

    buckets: dict[str, list[JobCost]] = defaultdict(list)
    for j in jobs:
        buckets[_bucket(j.gpus)].append(j)
    order = [name for _, name in _BUCKETS] + ["4097+", "unknown"]
    mtbf = []
    for name in order:
        if name not in buckets:
            continue
        members = buckets[name]
        failures = sum(j.interruptions for j in members)
        hours = sum(j.wall_seconds for j in members) / 3600
        mtbf.append(
            SizeBucket(
                gpus=name,
                jobs=len(members),
                interruptions=failures,
                wall_hours=hours,
                mtbf_hours=hours / failures if failures else None,
            )
        )

    bases = {j.gpus_basis for j in jobs} | {c.gpus_basis for c in incidents}
    if not bases or GpuBasis.UNKNOWN in bases:
        gpus_basis = GpuBasis.UNKNOWN
    else:
        gpus_basis = GpuBasis.ASSUMED if GpuBasis.ASSUMED in bases else GpuBasis.REPORTED
    said = {
        GpuBasis.REPORTED: "GPUs as Slurm reported each job's allocation (its incidents' DECIDED rows)",
        GpuBasis.ASSUMED: "GPUs assumed for some jobs (Slurm reported none for them): accounting.gpus_per_node"
        " × the allocation's nodes, or accounting.job_gpus",
        GpuBasis.UNKNOWN: "GPUs are not recorded, and unknown for some jobs (no allocation on record, nothing"
        " configured): set accounting.gpus_per_node (or job_gpus) to have their GPU-hours",
    }
    notes = [
        said[gpus_basis],
        "work redone is estimated (steps since the checkpoint × the job's median seconds per step);"
        " the latencies are measured between recorded times",
        "ETTR: productive = wall time since submission (within the range) − the known lost time of its"
        " incidents; time before the first step (queueing, start-up) is not recorded and counts as productive,"
        " so ETTR is an upper bound",
    ]
    missing = sum(1 for c in interrupted if not c.complete)
    if missing:
        notes.append(f"{missing} of {len(interrupted)} interruptions have a part unknown: it counts as nothing")
    return CostReport(
        cluster=cluster,
        since=since,
        until=until,
        incidents=incidents,
        jobs=jobs,
        parts=parts,
        interruptions=len(interrupted),
        lost_seconds=lost_seconds,
        lost_gpu_hours=lost_gpu_hours,
        wall_gpu_hours=wall_gpu_hours,
        ettr=productive_w / wall_w if wall_w > 0 else None,
        ettr_weighting=weighting,
        interruptions_per_1k_gpu_hours=per_1k,
        mtbf=mtbf,
        gpus_basis=gpus_basis,
        notes=notes,
    )
