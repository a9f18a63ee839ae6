"""A job's rhythm: per-rank progress, the hang threshold it implies, and stragglers.

Crashes announce themselves; hangs and stragglers do not. Both are read here
from the job's own progress lines, against the job's own rhythm:

- **Hang**: the job has been silent for longer than its rhythm allows. Once
  training, that is `max(floor, factor × p95 of recent step intervals)`; before
  the attempt's first step it is a start-up allowance, and after a "saving
  checkpoint" line a checkpoint allowance (both longer, both configurable).
- **Straggler**: each rank's own compute time per step (excluding its waits in
  collectives, which a trainer's per-rank timers report) against its peers',
  as a relative score (1 = as fast as its peers, 0.33 = three times slower). In
  data-parallel training every rank waits for the slowest in each all-reduce,
  so step times alone cannot tell which rank is slow; compute times can.
- **Slowdown**: the job's step time against its own earlier baseline, for
  when no rank stands out (storage, network, every GPU throttled).

The job prints the rank tags it likes: a rank above the job's task count
(`max_ranks`) is none of its ranks, and its lines are ignored, so thousands of
made-up tags cost no memory and no time here.

Pure: the detector feeds it the lines of each poll and the poll's time (any
monotonic clock, in seconds); it holds no I/O and reads no clock. What stopped
a hung rank (its process state) is asked by the detector of a node-side probe
and passed in.
"""

import itertools
import math
import statistics
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from respawn.config.cluster import ProgressSettings
from respawn.sources.joblog import rank_of
from respawn.sources.progress import ProgressReader
from respawn.wire.evidence import DETECTOR_PREFIX

# Ranks followed when the job's task count is not known: tags above are ignored.
DEFAULT_MAX_RANKS = 1024


_SAVES = 8  # checkpoints remembered for their interval and save time


class SignalKind(StrEnum):
    STEP = "step"  # a training step finished (value: its number)
    COMPUTE = "compute"  # a rank's own compute time for a step (value: seconds)
    SAVING = "saving"  # a checkpoint save began
    SAVED = "saved"  # a checkpoint save finished (value: its step)


@dataclass(frozen=True, slots=True)
class Signal:
    kind: SignalKind
    rank: int | None  # None: the line carried no rank tag
    value: float = 0.0


def read_signals(reader: ProgressReader, lines: Iterable[str]) -> list[Signal]:
    """The progress signals in `lines`, in order, each with the rank that printed it."""
    found: list[Signal] = []
    for line in lines:
        rank = rank_of(line)
        if (step := reader.step(line)) is not None:
            found.append(Signal(SignalKind.STEP, rank, step))
        if (seconds := reader.compute(line)) is not None:
            found.append(Signal(SignalKind.COMPUTE, rank, seconds))
        if reader.saving(line):
            found.append(Signal(SignalKind.SAVING, rank))
        if (step := reader.checkpoint(line)) is not None:
            found.append(Signal(SignalKind.SAVED, rank, step))
    return found


def placement(nodes: Sequence[str], world: int) -> dict[int, str]:
    """Rank -> node under Slurm's default block distribution: the first ranks on
    the first node. With one task per node it is rank i on node i."""
    if not nodes or world <= 0:
        return {}
    per_node = math.ceil(world / len(nodes))
    return {rank: nodes[rank // per_node] for rank in range(world) if rank // per_node < len(nodes)}


class FindingKind(StrEnum):
    HANG = "hang"
    SLOWDOWN = "slowdown"


@dataclass(frozen=True, slots=True)
class Finding:
    """What the rhythm says is wrong, as the trusted line the runbooks read."""

    kind: FindingKind
    line: str  # `respawn-detector: ...`, matched by runbooks/hang.yaml and slowdown.yaml
    node: str | None = None  # the suspect, when the evidence names one
    ranks: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class Stall:
    """The job has been silent for longer than allowed."""

    silent_s: float
    threshold_s: float
    phase: str  # "training", "start-up" or "checkpoint save"
    last_steps: Mapping[int, int]  # rank -> last step it reported this attempt

    def findings(self, where: Mapping[int, str], stopped: Mapping[int, str]) -> list[Finding]:
        """One finding per suspect node, or one naming nobody.

        `stopped` (rank -> node) are the ranks whose processes a node-side check
        found stopped: the clearest evidence there is. Without it, the suspects
        are the ranks whose output stopped first: an earlier last step than
        their peers'. In lockstep data-parallel training every rank usually
        stops at the same step, and then no rank stands out.
        """
        head = f"{DETECTOR_PREFIX}hang: no progress from"
        tail = f"for {self.silent_s:.1f} s (threshold {self.threshold_s:.1f} s, {self.phase})"
        if stopped:
            return _per_node(
                FindingKind.HANG,
                stopped,
                lambda ranks, node: (f"{head} {_ranks(ranks)} on {node} {tail}; its process is stopped"),
            )
        if self.last_steps:
            newest = max(self.last_steps.values())
            behind = {r: s for r, s in self.last_steps.items() if s < newest}
            placed = {r: where[r] for r in behind if r in where}
            if behind and len(behind) < len(self.last_steps) and len(placed) == len(behind):
                return _per_node(
                    FindingKind.HANG,
                    placed,
                    lambda ranks, node: (
                        f"{head} {_ranks(ranks)} on {node} {tail}; its output stopped first"
                        f" (step {min(behind[r] for r in ranks)}, its peers at {newest})"
                    ),
                )
        return [Finding(FindingKind.HANG, f"{head} any rank {tail}; no rank stands out")]


def _ranks(ranks: Sequence[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {','.join(map(str, ranks))}"


def _per_node(kind: FindingKind, ranks: Mapping[int, str], say: Callable[[list[int], str], str]) -> list[Finding]:
    by_node: dict[str, list[int]] = {}
    for rank, node in sorted(ranks.items()):
        by_node.setdefault(node, []).append(rank)
    return [Finding(kind, say(rs, node), node, tuple(rs)) for node, rs in sorted(by_node.items())]


@dataclass
class _Rank:
    step: int | None = None
    compute: deque[float] = field(default_factory=deque)
    slow_since: float | None = None


class Rhythm:
    """One job's progress as the detector sees it, poll by poll, attempt by attempt."""

    def __init__(self, settings: ProgressSettings, max_ranks: int | None = None) -> None:
        """`max_ranks`: the job's task count (DEFAULT_MAX_RANKS when unknown): only
        ranks 0 .. max_ranks-1 are followed. It may be set again at any time."""
        self._s = settings
        self._max_ranks = _ranks_cap(max_ranks)
        # Whether any attempt of this job has shown progress: only then does
        # silence mean something (a job that never prints a step we can read
        # is not one this detector can judge).
        self.progressed = False
        self._ranks: dict[int | None, _Rank] = {}
        self.new_attempt(0)

    @property
    def max_ranks(self) -> int:
        return self._max_ranks

    @max_ranks.setter
    def max_ranks(self, value: int | None) -> None:
        self._max_ranks = _ranks_cap(value)
        self._ranks = {r: s for r, s in self._ranks.items() if r is None or r < self._max_ranks}

    def new_attempt(self, attempt: int) -> None:
        self.attempt = attempt
        self._started: float | None = None  # first observation of the running attempt
        self._ranks = {}
        self._step: int | None = None  # the newest step any rank reported
        self._step_at: float | None = None
        self._active_at: float | None = None  # last progress signal of any kind
        self._saving_since: float | None = None
        self._saved_after: int | None = None  # the step after which a save ran
        self._intervals: deque[float] = deque(maxlen=self._s.window)  # seconds per step
        # Checkpoints: when each save finished and how long it took (the accounting's and the
        # checkpoint advice's measures, respawn/decision/checkpointing.py).
        self._saved_at: deque[float] = deque(maxlen=_SAVES)
        self._save_seconds: deque[float] = deque(maxlen=_SAVES)
        self._baseline: float | None = None
        self._job_slow_since: float | None = None

    def observe(self, now: float, signals: Iterable[Signal]) -> None:
        """One poll's signals of the running attempt, seen at `now`."""
        if self._started is None:
            self._started = now
        newest = self._step
        for sig in signals:
            if sig.rank is not None and not 0 <= sig.rank < self._max_ranks:
                continue  # not one of the job's ranks: a made-up tag
            if not math.isfinite(sig.value):
                continue
            self._active_at = now
            rank = self._ranks.setdefault(sig.rank, _Rank(compute=deque(maxlen=self._s.recent)))
            if sig.kind is SignalKind.STEP:
                step = int(sig.value)
                rank.step = step if rank.step is None else max(rank.step, step)
                newest = step if newest is None else max(newest, step)
                if self._saved_after is not None and step > self._saved_after:
                    self._saving_since = None  # training again, whether or not "saved" was printed
            elif sig.kind is SignalKind.COMPUTE:
                rank.compute.append(sig.value)
            elif sig.kind is SignalKind.SAVING:
                self._saving_since = self._saving_since or now
                self._saved_after = newest
            else:  # SAVED: the pause is over; the interval that spans it is not rhythm
                if self._saving_since is not None:
                    self._save_seconds.append(now - self._saving_since)
                if not self._saved_at or now > self._saved_at[-1]:
                    self._saved_at.append(now)  # ranks saving together are one checkpoint
                self._saving_since = None
        if newest is not None and newest != self._step:
            self._advance(now, newest)

    def _advance(self, now: float, newest: int) -> None:
        before, before_at = self._step, self._step_at
        self._step, self._step_at = newest, now
        self.progressed = True
        if before is None or before_at is None or newest <= before:
            return
        if self._saved_after is not None and before <= self._saved_after < newest:
            self._saved_after = None  # this interval held a checkpoint save
            return
        self._intervals.append((now - before_at) / (newest - before))

    @property
    def world(self) -> int:
        """Ranks seen so far: the highest rank tag, plus one."""
        return max((r for r in self._ranks if r is not None), default=-1) + 1

    def threshold(self) -> float:
        """How long the training job may be silent: its rhythm, never under the floor."""
        if not self._intervals:
            return self._s.hang_floor_s
        return max(self._s.hang_floor_s, self._s.hang_factor * _p95(self._intervals))

    def stall(self, now: float) -> Stall | None:
        """The running attempt's silence, when it is longer than allowed."""
        if self._started is None or not self.progressed:
            return None
        if self._step is None:
            allowed, since, phase = self._s.startup_s, self._started, "start-up"
        elif self._saving_since is not None:
            allowed, since, phase = self._s.checkpoint_s, self._saving_since, "checkpoint save"
        else:
            allowed, since, phase = self.threshold(), self._active_at or self._started, "training"
        silent = now - since
        if silent <= allowed:
            return None
        steps = {r: s.step for r, s in self._ranks.items() if r is not None and s.step is not None}
        return Stall(silent_s=silent, threshold_s=allowed, phase=phase, last_steps=steps)

    def scores(self) -> dict[int, float]:
        """Each rank's relative score, 0-1: its peers' median compute time over its own."""
        medians = {
            r: statistics.median(s.compute)
            for r, s in self._ranks.items()
            if r is not None and len(s.compute) >= min(3, self._s.recent)
        }
        # Sorted once: each rank's peers' median is then read off, not recomputed (n log n, not n²).
        ordered = sorted(medians.values())
        index = {own: i for i, own in enumerate(ordered)}  # any copy of an equal value leaves the same peers
        scores = {}
        for rank, own in medians.items():
            peers = _median_without(ordered, index[own])
            if peers > 0 and own > 0:
                scores[rank] = min(1.0, peers / own)
        return scores

    def slowdowns(self, now: float, where: Mapping[int, str]) -> list[Finding]:
        """Stragglers and a slowed job, once they have lasted `sustain_s`."""
        found: list[Finding] = []
        scores = self.scores()
        for rank, state in self._ranks.items():
            slow = rank in scores and 1 / scores[rank] >= self._s.straggler_factor
            state.slow_since = (state.slow_since or now) if slow else None
        sustained = {
            r: s.slow_since
            for r, s in self._ranks.items()
            if r is not None and s.slow_since is not None and now - s.slow_since >= self._s.sustain_s and r in where
        }
        ratio = self._job_ratio()
        if ratio is not None and ratio >= self._s.slowdown_factor:
            self._job_slow_since = self._job_slow_since or now
        else:
            self._job_slow_since = None
            self._baseline = self._baseline_now()
        step = f"; job step time {ratio:.1f}x its baseline" if ratio is not None else ""
        for rank, since in sorted(sustained.items()):
            med = statistics.median(self._ranks[rank].compute)
            found.append(
                Finding(
                    FindingKind.SLOWDOWN,
                    (
                        f"{DETECTOR_PREFIX}slowdown: rank {rank} on {where[rank]} is {1 / scores[rank]:.1f}x slower than"
                        f" its peers (score {scores[rank]:.2f}, compute {med:.3f} s) for {now - since:.1f} s{step}"
                    ),
                    where[rank],
                    (rank,),
                )
            )
        job_since = self._job_slow_since
        # While some rank is slow but not yet for long enough, wait: it is the better answer.
        pending = any(r is not None and s.slow_since is not None for r, s in self._ranks.items())
        if (
            not found
            and not pending
            and job_since is not None
            and now - job_since >= self._s.sustain_s
            and ratio is not None
            and self._baseline is not None
        ):
            found.append(
                Finding(
                    FindingKind.SLOWDOWN,
                    (
                        f"{DETECTOR_PREFIX}slowdown: job step time is {ratio:.1f}x its baseline"
                        f" ({self._recent_step_time():.3f} s vs {self._baseline:.3f} s) for {now - job_since:.1f} s;"
                        " no rank stands out"
                    ),
                )
            )
        return found

    def checkpoint_interval_s(self) -> float | None:
        """Seconds between the job's checkpoints lately (median), as far as this run has seen two."""
        if len(self._saved_at) < 2:
            return None
        return statistics.median(b - a for a, b in itertools.pairwise(self._saved_at))

    def checkpoint_save_s(self) -> float | None:
        """How long a checkpoint save takes (median, from 'saving' to 'saved' as the polls saw them)."""
        return statistics.median(self._save_seconds) if self._save_seconds else None

    def step_seconds(self) -> float | None:
        """The job's seconds per training step lately (median of the recent intervals), if known:
        what a lost step costs, for the accounting of lost time."""
        return self._recent_step_time() if self._intervals else None

    def _recent_step_time(self) -> float:
        return statistics.median(list(self._intervals)[-self._s.recent :])

    def _baseline_now(self) -> float | None:
        """The job's usual step time: the median of the intervals before the recent ones."""
        older = list(self._intervals)[: -self._s.recent]
        return statistics.median(older) if len(older) >= self._s.recent else None

    def _job_ratio(self) -> float | None:
        if self._baseline is None or self._baseline <= 0 or len(self._intervals) < self._s.recent:
            return None
        return self._recent_step_time() / self._baseline


def _ranks_cap(value: int | None) -> int:
    return DEFAULT_MAX_RANKS if value is None or value <= 0 else value


def _median_without(ordered: Sequence[float], i: int) -> float:
    """The median of sorted `ordered` without its element i, as statistics.median
    would compute it; 0.0 when nothing is left."""
    n = len(ordered) - 1
    if n <= 0:
        return 0.0

    def at(j: int) -> float:
        return ordered[j if j < i else j + 1]

    return at(n // 2) if n % 2 else (at(n // 2 - 1) + at(n // 2)) / 2


def _p95(values: Iterable[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]
