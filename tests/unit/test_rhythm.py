"""The job's rhythm, without Slurm: hang thresholds, suspects and stragglers, poll by poll."""

import random

import pytest

from respawn.attribution.attribute import attribute
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.detection.rhythm import (
    FindingKind,
    ProgressSettings,
    Rhythm,
    Signal,
    SignalKind,
    placement,
    read_signals,
)
from respawn.sources.progress import ProgressPatterns, ProgressReader
from respawn.wire.evidence import Evidence, LineSource, LogLine
from respawn.wire.taxonomy import FailureClass

NODES = ["node1", "node2", "node3"]
WHERE = placement(NODES, 3)
SETTINGS = ProgressSettings(
    hang_factor=4,
    hang_floor_s=10,
    startup_s=60,
    checkpoint_s=30,
    window=50,
    straggler_factor=1.5,
    slowdown_factor=1.5,
    sustain_s=10,
    recent=6,
)
POLL = 0.5


@pytest.fixture(scope="module")
def reader() -> ProgressReader:
    return ProgressReader(ProgressPatterns.load())


class Job:
    """A DDP job printing like respawn/sandbox/workload/train.py, read by a detector polling every 0.5 s."""

    def __init__(self, reader: ProgressReader, settings: ProgressSettings = SETTINGS, ranks: int = 3) -> None:
        self.reader, self.ranks = reader, ranks
        self.rhythm = Rhythm(settings)
        self.now, self.step = 0.0, 0
        self.pending: list[str] = []
        self.next_step_at = 0.0

    def train(self, seconds: float, step_s=lambda step: 1.0, compute=lambda rank, step: 1.0) -> None:
        """Steps every `step_s(step)` seconds for `seconds`, polled every 0.5 s."""
        end = self.now + seconds
        while self.now < end:
            self.now = round(self.now + POLL, 6)
            while self.next_step_at <= self.now:
                self.step += 1
                for rank in range(self.ranks):
                    self.pending.append(f"[rank{rank}]: step {self.step}/1000 loss 0.5 samples/s 64.0 step_time 1.000s")
                    self.pending.append(f"[rank{rank}]: step {self.step} compute_time {compute(rank, self.step):.3f}s")
                self.next_step_at += step_s(self.step)
            self.poll()

    def say(self, *lines: str) -> None:
        self.pending += lines

    def silent(self, seconds: float) -> None:
        end = self.now + seconds
        while self.now < end:
            self.now = round(self.now + POLL, 6)
            self.poll()
        self.next_step_at = self.now

    def poll(self) -> None:
        self.rhythm.observe(self.now, read_signals(self.reader, self.pending))
        self.pending = []


def test_signals_are_read_per_rank(reader):
    signals = read_signals(
        reader,
        [
            "[rank2]: step 7/60 loss 0.4321 samples/s 64.0 step_time 1.002s",
            "[rank2]: step 7 compute_time 0.998s",
            "[rank0]: saving checkpoint step 10",
            "[rank0]: saved checkpoint step 10 to /ckpt/step-10.pt",
            "iteration      100/    1000 | consumed samples: 12800 | elapsed time per iteration (ms): 980.1 |",
            "just talking about a step",
        ],
    )
    assert signals == [
        Signal(SignalKind.STEP, 2, 7),
        Signal(SignalKind.COMPUTE, 2, 0.998),
        Signal(SignalKind.SAVING, 0),
        Signal(SignalKind.SAVED, 0, 10),
        Signal(SignalKind.STEP, None, 100),
    ]


def test_placement_is_slurms_block_distribution():
    assert placement(NODES, 3) == {0: "node1", 1: "node2", 2: "node3"}
    assert placement(["a", "b"], 16) == {**{r: "a" for r in range(8)}, **{r: "b" for r in range(8, 16)}}
    assert placement([], 4) == {}


def test_threshold_is_the_floor_for_a_fast_job_and_its_rhythm_for_a_slow_one(reader):
    fast = Job(reader)
    fast.train(30)
    assert fast.rhythm.threshold() == 10.0
    slow = Job(reader)
    slow.train(120, step_s=lambda step: 5.0)
    assert slow.rhythm.threshold() == pytest.approx(20.0)  # 4 x 5 s


def test_a_silent_job_stalls_just_after_its_threshold(reader):
    job = Job(reader)
    job.train(30)
    job.silent(10)
    assert job.rhythm.stall(job.now) is None
    job.silent(0.5)
    stall = job.rhythm.stall(job.now)
    assert stall is not None and stall.phase == "training"
    assert stall.threshold_s == 10.0 and 10.0 < stall.silent_s <= 10.5
    assert stall.last_steps == {0: job.step, 1: job.step, 2: job.step}


def test_noisy_steps_never_stall(reader):
    noise = random.Random(7)
    job = Job(reader)
    for _ in range(300):
        job.train(1, step_s=lambda step: noise.uniform(0.7, 1.3))
        assert job.rhythm.stall(job.now) is None


def test_checkpoint_save_gets_its_own_allowance_and_does_not_teach_the_rhythm(reader):
    job = Job(reader)
    job.train(30)
    before = job.rhythm.threshold()
    job.say("[rank0]: saving checkpoint step 30")
    job.silent(25)  # longer than the training threshold, within the checkpoint allowance
    assert job.rhythm.stall(job.now) is None
    job.say("[rank0]: saved checkpoint step 30 to /ckpt/step-30.pt")
    job.poll()
    job.silent(1)
    assert job.rhythm.stall(job.now) is None  # the save's end is activity: the clock restarts
    job.train(10)
    assert job.rhythm.threshold() == before  # the 26 s interval holding the save is not rhythm
    job.say("[rank0]: saving checkpoint step 40")
    job.silent(31)  # seen at the first poll, 0.5 s in
    stall = job.rhythm.stall(job.now)
    assert stall is not None and stall.phase == "checkpoint save" and stall.threshold_s == 30


def test_start_up_gets_its_allowance_once_the_job_is_known_to_progress(reader):
    first = Job(reader)
    first.silent(600)
    assert first.rhythm.stall(first.now) is None  # never progressed: not a job we can read
    job = Job(reader)
    job.train(20)
    job.rhythm.new_attempt(1)
    job.silent(60.5)  # the attempt is seen running at the first poll, 0.5 s in
    assert job.rhythm.stall(job.now) is None
    job.silent(0.5)
    stall = job.rhythm.stall(job.now)
    assert stall is not None and stall.phase == "start-up" and stall.threshold_s == 60


def test_the_stopped_process_names_the_suspect(reader):
    job = Job(reader)
    job.train(20)
    job.silent(11)
    stall = job.rhythm.stall(job.now)
    (finding,) = stall.findings(WHERE, stopped={2: "node3"})
    assert finding.kind is FindingKind.HANG and finding.node == "node3" and finding.ranks == (2,)
    assert finding.line.startswith("respawn-detector: hang: no progress from rank 2 on node3 for ")
    assert finding.line.endswith("(threshold 10.0 s, training); its process is stopped")


def test_the_rank_whose_output_stopped_first_is_the_suspect(reader):
    job = Job(reader)
    job.train(20)
    last = job.step
    job.say(f"[rank0]: step {last + 1}/1000 loss 0.5", f"[rank2]: step {last + 1}/1000 loss 0.5")  # not rank 1
    job.poll()
    job.silent(11)
    (finding,) = job.rhythm.stall(job.now).findings(WHERE, stopped={})
    assert finding.node == "node2"
    assert f"its output stopped first (step {last}, its peers at {last + 1})" in finding.line


def test_lockstep_ranks_name_no_one(reader):
    job = Job(reader)
    job.train(20)
    job.silent(11)
    (finding,) = job.rhythm.stall(job.now).findings(WHERE, stopped={})
    assert finding.node is None and "from any rank" in finding.line and "no rank stands out" in finding.line


def test_a_rank_three_times_slower_is_a_straggler_once_it_lasts(reader):
    job = Job(reader)
    job.train(30)
    slow = dict(step_s=lambda step: 3.0, compute=lambda rank, step: 3.0 if rank == 2 else 1.0)
    job.train(15, **slow)
    assert job.rhythm.slowdowns(job.now, WHERE) == []  # slow, not yet for sustain_s
    assert job.rhythm.scores()[2] == pytest.approx(1 / 3)
    for _ in range(40):
        job.train(0.5, **slow)
        found = job.rhythm.slowdowns(job.now, WHERE)
        if found:
            break
    (finding,) = found
    assert finding.kind is FindingKind.SLOWDOWN and finding.node == "node3" and finding.ranks == (2,)
    assert finding.line.startswith("respawn-detector: slowdown: rank 2 on node3 is 3.0x slower than its peers")
    assert job.now - 30 < 15 + 12  # a few slow samples to move the median, then sustain_s


def test_noisy_ranks_are_no_stragglers(reader):
    noise = random.Random(11)
    job = Job(reader)
    for _ in range(600):
        job.train(0.5, step_s=lambda step: noise.uniform(0.7, 1.3), compute=lambda rank, step: noise.uniform(0.7, 1.3))
        assert job.rhythm.slowdowns(job.now, WHERE) == []


def test_a_job_slower_than_its_baseline_with_no_rank_standing_out(reader):
    job = Job(reader)
    job.train(60)
    found = []
    for _ in range(120):
        job.train(0.5, step_s=lambda step: 2.0, compute=lambda rank, step: 2.0)
        found = job.rhythm.slowdowns(job.now, WHERE)
        if found:
            break
    (finding,) = found
    assert finding.node is None
    assert finding.line.startswith("respawn-detector: slowdown: job step time is 2.0x its baseline")


@pytest.fixture(scope="module")
def runbooks() -> tuple[Catalogue, Matcher]:
    catalogue = Catalogue.load()
    return catalogue, Matcher.from_catalogue(catalogue)


def _evidence(*lines: LogLine) -> Evidence:
    return Evidence(
        cluster="c",
        job_id=1,
        attempt=0,
        job_state="RUNNING",
        nodes=NODES,
        placement=WHERE,
        lines=[LogLine(text="[rank0]: step 20/1000 loss 0.5"), *lines],
    )


def test_findings_are_attributed_by_the_runbooks(reader, runbooks):
    job = Job(reader)
    job.train(20)
    job.silent(11)
    stall = job.rhythm.stall(job.now)
    (named,) = stall.findings(WHERE, stopped={2: "node3"})
    (anyone,) = stall.findings(WHERE, stopped={})
    got = attribute(*runbooks, _evidence(LogLine(text=named.line, source=LineSource.DETECTOR, node=named.node)))
    assert (got.failure_class, got.nodes, got.pattern) == (FailureClass.HANG, ["node3"], "progress-stalled")
    got = attribute(*runbooks, _evidence(LogLine(text=anyone.line, source=LineSource.DETECTOR)))
    assert (got.failure_class, got.nodes) == (FailureClass.HANG, [])


def test_a_job_posing_as_the_detector_is_not_believed(runbooks):
    forged = "respawn-detector: hang: no progress from rank 0 on node1 for 99.0 s (threshold 10.0 s, training)"
    for text in (forged, f"[rank1]: {forged}", f"1: {forged}"):
        got = attribute(*runbooks, _evidence(LogLine(text=text)))
        assert got.failure_class is FailureClass.BENIGN, text
    metrics = "respawn-metrics: Hostname=node1 gpu=0 DCGM_FI_DEV_XID_ERRORS=79 (was 0)"
    assert attribute(*runbooks, _evidence(LogLine(text=metrics))).failure_class is FailureClass.BENIGN
    got = attribute(*runbooks, _evidence(LogLine(text=metrics, source=LineSource.METRICS, node="node1")))
    assert (got.failure_class, got.nodes) == (FailureClass.GPU_HARDWARE, ["node1"])


def test_throttling_on_the_slow_node_decides_the_straggler(runbooks):
    straggler = (
        "respawn-detector: slowdown: rank 2 on node3 is 3.0x slower than its peers (score 0.33,"
        " compute 2.990 s) for 20.1 s"
    )
    throttled = (
        "respawn-metrics: Hostname=node3 gpu=0 DCGM_FI_DEV_CLOCK_THROTTLE_REASONS=8 (hw_slowdown)"
        " DCGM_FI_DEV_SM_CLOCK=1005 MHz"
    )
    got = attribute(
        *runbooks,
        _evidence(
            LogLine(text=straggler, source=LineSource.DETECTOR, node="node3"),
            LogLine(text=throttled, source=LineSource.METRICS, node="node3"),
        ),
    )
    assert (got.failure_class, got.nodes, got.pattern) == (FailureClass.SLOWDOWN, ["node3"], "dcgm-clocks-throttled")
    assert got.line == throttled


def test_the_checkpoint_interval_and_save_time_are_measured_from_the_saves(reader):
    job = Job(reader)
    assert job.rhythm.checkpoint_interval_s() is None and job.rhythm.checkpoint_save_s() is None
    for step in (10, 20, 30):
        job.train(10)
        job.say(f"[rank0]: saving checkpoint step {step}")
        job.silent(4)
        job.say(f"[rank0]: saved checkpoint step {step} to /ckpt/step-{step}.pt")
        job.poll()
    assert job.rhythm.checkpoint_save_s() == pytest.approx(4, abs=0.6)  # as the 0.5 s polls saw it
    assert job.rhythm.checkpoint_interval_s() == pytest.approx(14.5, abs=1.0)  # 10 s training + the save
