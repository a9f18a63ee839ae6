"""A hostile job's output (issue 10): what its owner controls cannot blind, stall or fool Respawn.

The output file may be a FIFO, a directory, a link or someone else's file; its
lines may be kilobytes of whitespace, numbers of hundreds of digits, thousands
of made-up rank tags, or a userspace program's imitation of a kernel line.
"""

import os
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace

import pytest

from respawn.activities.evidence import _during
from respawn.attribution.attribute import classify_text
from respawn.config.cluster import ProgressSettings
from respawn.detection.detector import Detector
from respawn.detection.rhythm import DEFAULT_MAX_RANKS, Rhythm, Signal, SignalKind, read_signals
from respawn.scheduler.slurm import NodeInfo
from respawn.sources.joblog import (
    MAX_LINES,
    UnsafeOutput,
    kernel_message,
    logged_at,
    rank_of,
    read_lines,
    reads_any_file,
    tail_lines,
    untagged,
)
from respawn.sources.progress import ProgressPatterns, ProgressReader, TimePattern
from respawn.wire.evidence import claims_trust

WHITESPACE = " \t" * 4096  # 8 KB
SETTINGS = ProgressSettings(sustain_s=10, recent=6)


def finishes(fn, count: int, seconds: float) -> int:
    """How many of `count` calls of fn(i) finish within `seconds`: a regression stops early, not hangs."""
    deadline = time.perf_counter() + seconds
    for i in range(count):
        fn(i)
        if time.perf_counter() > deadline:
            return i + 1
    return count


def in_thread(fn, timeout: float = 5.0):
    """fn() on a daemon thread: (finished, result or exception)."""
    box: list = []

    def run() -> None:
        try:
            box.append(fn())
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    return not thread.is_alive(), box[0] if box else None


# --- The output file itself -------------------------------------------------------------


@pytest.mark.parametrize("read", [lambda p: read_lines(p, 0), lambda p: tail_lines(p, 10)], ids=["read", "tail"])
def test_a_fifo_is_refused_at_once_without_blocking(tmp_path: Path, read) -> None:
    fifo = tmp_path / "job.out"
    os.mkfifo(fifo)
    try:
        done, result = in_thread(lambda: read(fifo))
    finally:
        try:  # release a reader blocked in open(), should there be one
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
    assert done, "reading a FIFO blocked"
    assert isinstance(result, UnsafeOutput) and result.reason == "not a regular file (fifo)"


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafeOutput, match=r"not a regular file \(directory\)"):
        read_lines(tmp_path, 0)
    with pytest.raises(UnsafeOutput, match="directory"):
        tail_lines(tmp_path, 10)


def test_a_symlink_to_a_readable_file_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("root:$6$hash:19000:0:99999:7:::\n")
    link = tmp_path / "job.out"
    link.symlink_to(secret)
    with pytest.raises(UnsafeOutput) as caught:
        read_lines(link, 0)
    assert caught.value.reason == "a symbolic link"
    with pytest.raises(UnsafeOutput, match="symbolic link"):
        tail_lines(link, 10)
    assert read_lines(secret, 0) == (["root:$6$hash:19000:0:99999:7:::"], secret.stat().st_size)


def test_a_symlink_loop_is_refused(tmp_path: Path) -> None:
    loop = tmp_path / "job.out"
    loop.symlink_to(loop)
    with pytest.raises(UnsafeOutput, match="symbolic link"):
        read_lines(loop, 0)


def test_a_file_not_owned_by_the_jobs_user_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    out.write_text("step 1 loss 2.0\n")
    mine = out.stat().st_uid
    other = mine + 1000
    with pytest.raises(UnsafeOutput) as caught:
        read_lines(out, 0, owner_uid=other)
    assert caught.value.reason == f"owned by uid {mine}, not the job's {other}"
    assert isinstance(caught.value, OSError)
    with pytest.raises(UnsafeOutput, match="owned by uid"):
        tail_lines(out, 10, owner_uid=other)
    assert read_lines(out, 0, owner_uid=mine) == (["step 1 loss 2.0"], 16)


def test_an_unreadable_file_is_refused() -> None:
    """A detector that is not root (the deployed units run as their own user) meets a file of
    mode 000. Root reads any file, so as root the read is made by a child that gave root up;
    the file is in a folder others may enter (pytest's folders are root's alone)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as shared:
        Path(shared).chmod(0o755)
        out = Path(shared) / "job.out"
        out.write_text("x\n")
        out.chmod(0)

        def refusal() -> str:
            try:
                read_lines(out, 0)
            except UnsafeOutput as refused:
                return refused.reason
            return "read"

        assert (refusal() if os.geteuid() != 0 else _as_nobody(refusal)) == "permission denied"


NOBODY = 65534


def _as_nobody(call: Callable[[], str]) -> str:
    """`call()` in a forked child running as nobody; what it returns comes back through a pipe."""
    readable, writable = os.pipe()
    child = os.fork()
    if child == 0:  # the child leaves with os._exit, whatever happens
        try:
            os.close(readable)
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            os.write(writable, call().encode())
        finally:
            os._exit(0)
    os.close(writable)
    with os.fdopen(readable) as answer:
        said = answer.read()
    os.waitpid(child, 0)
    return said


def test_a_missing_file_still_reads_as_nothing(tmp_path: Path) -> None:
    assert read_lines(tmp_path / "nope", 42) == ([], 42)
    assert tail_lines(tmp_path / "nope", 10) == []


def test_a_flood_of_empty_lines_is_read_a_bounded_number_at_a_time(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    out.write_bytes(b"\n" * (2 * MAX_LINES + 5) + b"step 7 loss 1.0\n")
    lines, offset = read_lines(out, 0)
    assert len(lines) == MAX_LINES and offset == MAX_LINES
    lines, offset = read_lines(out, offset)
    assert len(lines) == MAX_LINES and offset == 2 * MAX_LINES
    lines, offset = read_lines(out, offset)
    assert lines == [""] * 5 + ["step 7 loss 1.0"] and offset == out.stat().st_size
    # "\r" ends lines too (progress bars), and is bounded the same way
    out.write_bytes(b"a\rb\r\nc\rd\n")
    assert read_lines(out, 0, max_lines=2) == (["a", "b"], 5)
    assert read_lines(out, 5, max_lines=2) == (["c", "d"], 9)


def test_one_read_looks_at_one_mib_at_most(tmp_path: Path) -> None:
    out = tmp_path / "job.out"
    line = b"x" * 1023 + b"\n"
    out.write_bytes(line * 2048)  # 2 MiB
    lines, offset = read_lines(out, 0, max_lines=None)
    assert offset == 2 << 20
    assert 1000 <= len(lines) < 1024  # the last MiB, its cut first line dropped


# --- Lines that make regexes work hard ---------------------------------------------------


def test_kilobytes_of_whitespace_cost_linear_time() -> None:
    assert claims_trust(WHITESPACE + "respawn-detector: hang: forged")
    assert claims_trust(WHITESPACE + "[rank3]:" + WHITESPACE + "respawn-metrics: forged")
    assert not claims_trust(WHITESPACE + "[rank3]:" + WHITESPACE + "x respawn-detector:")
    assert finishes(lambda i: claims_trust(WHITESPACE + "x"), 10_000, 2.0) == 10_000
    assert finishes(lambda i: rank_of(WHITESPACE + "[rank"), 10_000, 2.0) == 10_000
    assert finishes(lambda i: untagged(WHITESPACE + "12:x"), 10_000, 2.0) == 10_000
    assert rank_of(WHITESPACE + "[rank12]: step 3") == 12 and untagged("  7: hi") == "hi"


def test_kilobytes_of_whitespace_through_progress_patterns_cost_linear_time() -> None:
    reader = ProgressReader(ProgressPatterns.load())
    lines = [WHITESPACE + "iteration" + WHITESPACE + "Epoch 1:" + WHITESPACE] * 10_000
    assert finishes(lambda i: read_signals(reader, lines[i : i + 1]), 10_000, 2.0) == 10_000


def test_kilobytes_of_whitespace_through_the_matcher(catalogue, matcher) -> None:
    text = "\n".join([WHITESPACE + "[rank1]:" + WHITESPACE + "NCCL" + WHITESPACE] * 1000)
    began = time.perf_counter()
    assert classify_text(catalogue, matcher, text).failure_class == "benign"
    assert time.perf_counter() - began < 5.0


# --- Numbers ----------------------------------------------------------------------------


def test_a_400_digit_step_is_no_step() -> None:
    reader = ProgressReader(ProgressPatterns.load())
    huge = "9" * 400
    lines = [
        f"[rank0]: step {huge}/{huge} | loss 2.0",
        f"iteration {huge}/ 10 |",
        f"'global_step': {huge}",
        f"saved checkpoint at step {huge}",
        f"resumed from checkpoint at step {huge}",
        f"[rank0]: compute_time={huge} s",
    ]
    for line in lines:
        assert reader.step(line) is None
        assert reader.checkpoint(line) is None and reader.resumed(line) is None
    signals = read_signals(reader, lines)
    assert all(s.kind is not SignalKind.STEP for s in signals)
    rhythm = Rhythm(SETTINGS)
    rhythm.observe(0.0, signals)
    rhythm.observe(1.0, [Signal(SignalKind.STEP, 0, float("inf")), Signal(SignalKind.COMPUTE, 0, float("nan"))])
    assert rhythm.slowdowns(2.0, {0: "node1"}) == [] and rhythm.stall(2.0) is None
    assert reader.step("[rank0]: step 123456789012/999 | loss 2.0") == 123456789012


def test_loose_seconds_patterns_reject_infinite_and_huge_times() -> None:
    patterns = ProgressPatterns(compute=[TimePattern(id="loose", regex=r"took (?P<seconds>\S+) s")])
    reader = ProgressReader(patterns)
    for text in ("inf", "nan", "-1", "1e999", "1e300", "9" * 400):
        assert reader.compute(f"took {text} s") is None, text
    assert reader.compute("took 0.25 s") == 0.25


def test_a_400_digit_xid_attributes_without_error(catalogue, matcher) -> None:
    line = f"NVRM: Xid (PCI:0000:3b:00): {'9' * 400}, pid=1, name=python, bogus"
    classify_text(catalogue, matcher, line)  # no OverflowError, no ValueError


# --- Rank tags ---------------------------------------------------------------------------


def test_fake_rank_tags_are_capped_at_the_task_count() -> None:
    rhythm = Rhythm(SETTINGS, max_ranks=4)
    for t in range(6):
        rhythm.observe(float(t), [Signal(SignalKind.COMPUTE, r, 1.0) for r in range(5000)])
    assert rhythm.world == 4
    assert set(rhythm.scores()) == {0, 1, 2, 3}
    rhythm.max_ranks = 2  # told again, lower: the ranks above are forgotten
    assert rhythm.world == 2

    unknown = Rhythm(SETTINGS)
    unknown.observe(0.0, [Signal(SignalKind.STEP, r, 1) for r in range(5000)])
    assert unknown.max_ranks == DEFAULT_MAX_RANKS and unknown.world == DEFAULT_MAX_RANKS


def test_straggler_scores_of_a_thousand_ranks_are_not_quadratic() -> None:
    rhythm = Rhythm(SETTINGS, max_ranks=DEFAULT_MAX_RANKS)
    for t in range(6):
        rhythm.observe(
            float(t),
            [Signal(SignalKind.COMPUTE, r, 3.0 if r == 7 else 1.0 + r % 3 * 0.01) for r in range(DEFAULT_MAX_RANKS)],
        )
    began = time.perf_counter()
    scores = rhythm.scores()
    assert time.perf_counter() - began < 1.0
    assert scores[7] == pytest.approx(1.01 / 3) and min(scores, key=scores.get) == 7
    assert len(scores) == DEFAULT_MAX_RANKS


# --- Kernel logs -------------------------------------------------------------------------

NOW = datetime.now(UTC).astimezone()
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=123, name=python, GPU has fallen off the bus."


def stamp(at: datetime = NOW) -> str:
    return at.isoformat(timespec="microseconds")  # as the sandbox (respawn/sandbox/workload/faults.py) writes it


def test_only_lines_the_kernel_wrote_are_kernel_messages() -> None:
    kernel = f"{stamp()} node2 kernel: [ 1234.567890] {XID}"
    assert kernel_message(kernel) == f"[ 1234.567890] {XID}"
    assert kernel_message(f"Jan  3 04:05:06 gpu-a-17 kernel: [ 9.1] {XID}") == f"[ 9.1] {XID}"
    for forged in (
        f"{stamp()} node2 myprog[123]: {XID}",
        f"{stamp()} node2 python: kernel: {XID}",
        f"{stamp()} node2 kernel[1]: {XID}",
        f"{XID}",
        f"[rank0]: {stamp()} node2 kernel: {XID}",
        f"{stamp()}{WHITESPACE}node2 kernel: {XID}",
    ):
        assert kernel_message(forged) is None, forged
    assert logged_at(kernel) is not None


def test_a_userspace_xid_line_in_kern_log_is_not_kernel_evidence() -> None:
    start = NOW - timedelta(minutes=1)
    forged = f"{stamp()} node2 myprog[123]: {XID}"
    real = f"{stamp()} node2 kernel: [ 99.000001] {XID}"
    assert _during([forged, real], start) == [real]


def test_a_kernel_line_within_the_second_slurm_names_as_the_start_is_not_the_attempts() -> None:
    start = NOW.replace(microsecond=0) - timedelta(minutes=1)  # Slurm's StartTime: whole seconds
    earlier_job = f"{stamp(start + timedelta(seconds=0.14))} node2 kernel: [ 99.000001] {XID}"
    this_attempt = f"{stamp(start + timedelta(seconds=1.2))} node2 kernel: [ 100.200001] {XID}"
    assert _during([earlier_job, this_attempt], start) == [this_attempt]


def test_the_detector_reads_only_the_kernels_lines_of_a_kernel_log(tmp_path: Path, matcher) -> None:
    log = tmp_path / "node2.log"
    log.write_text("")
    owner = SimpleNamespace(
        _s=SimpleNamespace(config=SimpleNamespace(kernel_log=lambda node: log), matcher=matcher), _kernel_offsets={}
    )
    nodes = [NodeInfo(name="node2", state="allocated")]
    assert Detector._scan_kernel_logs(owner, nodes) == {}
    with log.open("a") as out:
        out.write(f"{stamp()} node2 myprog[123]: {XID}\n")
    assert Detector._scan_kernel_logs(owner, nodes) == {}
    with log.open("a") as out:
        out.write(f"{stamp()} node2 kernel: [ 99.000001] {XID}\n")
    hits = Detector._scan_kernel_logs(owner, nodes)
    assert set(hits) == {"node2"} and "node2 kernel:" in hits["node2"][1]


def test_the_outputs_size_is_its_own_never_a_planted_links_targets(tmp_path):
    from respawn.sources.joblog import output_size

    out = tmp_path / "slurm-7.out"
    out.write_text("step 1 loss 0.5\n")
    assert output_size(out) == 16
    target = tmp_path / "big"
    target.write_text("x" * 1000)
    link = tmp_path / "slurm-8.out"
    link.symlink_to(target)
    assert output_size(link) is None and output_size(tmp_path / "missing.out") is None and output_size(tmp_path) is None


def test_a_reader_able_to_read_any_file_checks_the_owner():
    # Root, or a service user given CAP_DAC_READ_SEARCH (bit 2) or CAP_DAC_OVERRIDE (bit 1)
    # as deploy/systemd/ does: a job's output is taken only from the job's own user.
    assert reads_any_file(euid=0, proc_status="CapEff:\t0000000000000000\n")
    assert reads_any_file(euid=900, proc_status="Name:\tpython\nCapEff:\t0000000000000004\n")
    assert reads_any_file(euid=900, proc_status="CapEff:\t0000000000000002\n")
    assert not reads_any_file(euid=900, proc_status="CapEff:\t0000000000000400\n")  # CAP_NET_BIND_SERVICE only
    assert reads_any_file(euid=900, proc_status="Name:\tpython\n")  # cannot tell: check the owner
