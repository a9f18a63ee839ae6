"""The cases both log servers' clients must pass, against their fakes (tests/fakes/):
`test_logstream_loki.py` and `test_logstream_victorialogs.py` each give a `backend`."""

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from respawn.config.cluster import LogSettings
from respawn.sources.logstream import Cursor, LogStream, Poll, Selector, Status, open_stream
from tests.fakes._http import FakeServer, Fault

S = 1_000_000_000
XID = "2026-12-01T17:25:04.000000+00:00 node1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus."
FAILURE = "[rank3]: RuntimeError: CUDA error: an illegal memory access was encountered"


@dataclass
class Backend:
    source: str
    fake: FakeServer
    query_path: str
    probe_path: str
    push: Callable[[dict[str, str], str, int], None]
    t0: int = field(default_factory=lambda: time.time_ns() - 300 * S)
    now: list[float] = field(default_factory=lambda: [1000.0])  # the client's monotonic clock
    # The client's wall clock: a line pushed is queryable 0.1 s after its time stamp, and the
    # clock is past that (a test that sets it makes lines late).
    clock: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.clock.append(self.t0)

    def line(self, labels: dict[str, str], text: str, at: int) -> None:
        self.push(labels, text, self.t0 + at)
        self.clock[0] = max(self.clock[0], self.t0 + at + S // 10)

    def push_job(self, job: int, text: str, at: int, **labels: str) -> None:
        self.line({"job_id": str(job), "stream": "job", **labels}, text, at)

    def push_kernel(self, node: str, text: str, at: int) -> None:
        self.line({"node": node, "stream": "kernel"}, text, at)

    def stream(self, **overrides: Any) -> LogStream:
        server = {"url": self.fake.url, "timeout_s": overrides.pop("timeout_s", 1.0)}
        if "tenant" in overrides:
            server["tenant"] = overrides.pop("tenant")
        labels = overrides.pop("labels", {})
        settings = LogSettings(
            job_output="/nowhere/{job_id}.out",
            source=self.source,  # type: ignore[arg-type]
            server=server,  # type: ignore[arg-type]
            labels=labels,  # type: ignore[arg-type]
            bounds=overrides,  # type: ignore[arg-type]
        )
        made = open_stream(settings, monotonic=lambda: self.now[0], clock_ns=lambda: self.clock[0])
        assert made is not None
        return made

    def start(self) -> Cursor:
        return Cursor.starting(self.t0)

    def queries(self) -> list[Any]:
        return [r for r in self.fake.requests if r.path == self.query_path]


class Follower:
    """What the detector will do: keep each stream's cursor, poll them all at once."""

    def __init__(self, stream: LogStream, selectors: list[Selector], start: Cursor) -> None:
        self.stream = stream
        self.cursors = dict.fromkeys(selectors, start)
        self.read: dict[Selector, list[str]] = {s: [] for s in selectors}

    def poll(self) -> dict[Selector, Poll]:
        polls = self.stream.poll(self.cursors)
        assert set(polls) == set(self.cursors)
        for selector, poll in polls.items():
            self.cursors[selector] = poll.cursor
            self.read[selector] += [line.text for line in poll.lines]
        return polls


JOB7, NODE1 = Selector.job(7), Selector.kernel("node1")


def test_an_xid_line_and_a_failure_line_are_read_back_once_each(backend: Backend) -> None:
    backend.push_kernel("node1", XID, 1 * S)
    backend.push_kernel("node2", "2026-12-01T17:25:05+00:00 node2 kernel: other node", 2 * S)
    backend.push_job(7, "step 10 loss 1.2", 1 * S)
    backend.push_job(7, FAILURE, 2 * S)
    backend.push_job(8, "another job's line", 2 * S)
    follow = Follower(backend.stream(), [JOB7, NODE1], backend.start())
    polls = follow.poll()
    assert [line.text for line in polls[NODE1].lines] == [XID]
    assert [line.text for line in polls[JOB7].lines] == ["step 10 loss 1.2", FAILURE]
    assert [line.at_ns for line in polls[JOB7].lines] == [backend.t0 + 1 * S, backend.t0 + 2 * S]
    assert {p.status for p in polls.values()} == {Status.OK}
    assert len(backend.queries()) == 2  # one per kind of stream
    again = follow.poll()
    assert all(not p.lines and p.status is Status.OK for p in again.values())
    assert follow.read == {JOB7: ["step 10 loss 1.2", FAILURE], NODE1: [XID]}


def test_lines_sharing_a_nanosecond_across_polls_are_each_read_once(backend: Backend) -> None:
    follow = Follower(backend.stream(), [JOB7], backend.start())
    for n in range(3):
        backend.push_job(7, f"same time {n}", 5 * S)
    follow.poll()
    backend.push_job(7, "same time 3", 5 * S)
    backend.push_job(7, "same time 0", 5 * S)  # the same text again at the same time: a second line
    follow.poll()
    follow.poll()
    assert sorted(follow.read[JOB7]) == sorted(
        ["same time 0", "same time 1", "same time 2", "same time 3", "same time 0"]
    )


def test_an_answer_out_of_order_is_delivered_in_time_order(backend: Backend) -> None:
    backend.fake.out_of_order = True  # type: ignore[attr-defined]
    for n in range(5):
        backend.push_job(7, f"line {n}", (n + 1) * S)
    polls = Follower(backend.stream(), [JOB7], backend.start()).poll()
    assert [line.text for line in polls[JOB7].lines] == [f"line {n}" for n in range(5)]


def test_a_late_line_is_delivered_once_within_the_window_and_not_after(backend: Backend) -> None:
    follow = Follower(backend.stream(late_window_s=10), [JOB7], backend.start())
    backend.push_job(7, "newest", 100 * S)
    follow.poll()
    backend.push_job(7, "late by 5 s", 95 * S)  # shipped late: older than what was read
    backend.push_job(7, "late by 30 s", 70 * S)  # later than the window
    backend.clock[0] = backend.t0 + 102 * S
    follow.poll()
    follow.poll()
    assert follow.read[JOB7] == ["newest", "late by 5 s"]


def test_a_server_down_reports_unavailable_and_the_catch_up_reads_exactly_what_was_missed(backend: Backend) -> None:
    follow = Follower(backend.stream(), [JOB7], backend.start())
    backend.push_job(7, "before", 1 * S)
    follow.poll()
    backend.fake.down()
    for n in range(4):
        backend.push_job(7, f"while down {n}", (2 + n) * S)
    before = follow.cursors[JOB7]
    polls = follow.poll()
    assert polls[JOB7].status is Status.UNAVAILABLE and "ConnectError" in polls[JOB7].detail
    assert polls[JOB7].cursor == before and not polls[JOB7].lines
    backend.fake.up()
    follow.poll()
    assert follow.read[JOB7] == ["before", *(f"while down {n}" for n in range(4))]


def test_a_slow_server_costs_one_timeout_per_poll(backend: Backend) -> None:
    backend.push_job(7, "a line", 1 * S)
    backend.push_kernel("node1", XID, 1 * S)
    follow = Follower(backend.stream(timeout_s=0.3), [JOB7, NODE1], backend.start())
    backend.fake.delay_s = 2.0
    began = time.monotonic()
    polls = follow.poll()
    assert time.monotonic() - began < 1.0
    assert {p.status for p in polls.values()} == {Status.UNAVAILABLE}
    assert len(backend.queries()) == 1  # the second request is not made after a timeout
    backend.fake.delay_s = 0.0
    follow.poll()
    assert follow.read == {JOB7: ["a line"], NODE1: [XID]}


def test_an_answer_dripped_slower_than_the_timeout_is_cut_off(backend: Backend) -> None:
    for n in range(20):
        backend.push_job(7, f"line {n} " + "x" * 100, (n + 1) * S)
    follow = Follower(backend.stream(timeout_s=0.4), [JOB7], backend.start())
    backend.fake.fail_next(Fault(drip_s=0.1))
    began = time.monotonic()
    polls = follow.poll()
    assert time.monotonic() - began < 1.5
    assert polls[JOB7].status is Status.UNAVAILABLE and not polls[JOB7].lines
    follow.poll()
    assert len(follow.read[JOB7]) == 20


def test_a_429_backs_off_without_asking_again_and_says_when(backend: Backend) -> None:
    backend.push_job(7, "a line", 1 * S)
    follow = Follower(backend.stream(backoff_s=1, max_backoff_s=30), [JOB7], backend.start())
    backend.fake.fail_next(Fault(status=429, retry_after="5"))
    polls = follow.poll()
    assert polls[JOB7].status is Status.RATE_LIMITED and polls[JOB7].retry_in_s == 5
    asked = len(backend.fake.requests)
    backend.now[0] += 2
    polls = follow.poll()
    assert polls[JOB7].status is Status.RATE_LIMITED and polls[JOB7].retry_in_s == pytest.approx(3)
    assert len(backend.fake.requests) == asked  # not hammered
    backend.now[0] += 4
    follow.poll()
    assert follow.read[JOB7] == ["a line"]


def test_a_5xx_fails_the_poll_and_the_next_reads_on(backend: Backend) -> None:
    backend.push_job(7, "a line", 1 * S)
    follow = Follower(backend.stream(), [JOB7], backend.start())
    backend.fake.fail_next(Fault(status=503))
    polls = follow.poll()
    assert polls[JOB7].status is Status.UNAVAILABLE and "503" in polls[JOB7].detail
    follow.poll()
    assert follow.read[JOB7] == ["a line"]


def test_a_connection_dropped_mid_answer_loses_nothing(backend: Backend) -> None:
    follow = Follower(backend.stream(), [JOB7], backend.start())
    for n in range(3):
        backend.push_job(7, f"first {n}", (n + 1) * S)
    follow.poll()
    for n in range(5):
        backend.push_job(7, f"second {n}", (10 + n) * S)
    backend.fake.fail_next(Fault(drop=True))
    polls = follow.poll()
    assert polls[JOB7].status is Status.UNAVAILABLE and not polls[JOB7].lines
    polls = follow.poll()
    assert [line.text for line in polls[JOB7].lines] == [f"second {n}" for n in range(5)]
    assert follow.read[JOB7] == [*(f"first {n}" for n in range(3)), *(f"second {n}" for n in range(5))]


def test_a_selector_that_finds_no_stream_is_reported_missing(backend: Backend) -> None:
    backend.line({"jobid": "7", "stream": "job"}, "labelled jobid, not job_id", S)
    follow = Follower(backend.stream(missing_check_s=30), [JOB7], backend.start())
    polls = follow.poll()
    assert polls[JOB7].status is Status.MISSING
    assert 'job_id="7"' in polls[JOB7].detail and backend.fake.url in polls[JOB7].detail
    probes = [r for r in backend.fake.requests if r.path == backend.probe_path]
    assert len(probes) == 1
    backend.now[0] += 1
    assert follow.poll()[JOB7].status is Status.MISSING
    assert len([r for r in backend.fake.requests if r.path == backend.probe_path]) == 1  # not asked every poll


def test_a_quiet_stream_that_exists_is_not_missing(backend: Backend) -> None:
    backend.push_kernel("node1", "old kernel line", 1 * S)
    follow = Follower(backend.stream(), [NODE1], Cursor.starting(backend.t0 + 10 * S))  # history is not news
    polls = follow.poll()
    assert polls[NODE1].status is Status.OK and not polls[NODE1].lines
    assert polls[NODE1].cursor.found
    follow.poll()
    assert len([r for r in backend.fake.requests if r.path == backend.probe_path]) == 1


def test_an_oversized_line_is_cut(backend: Backend) -> None:
    backend.push_job(7, "E" * 100_000, 1 * S)
    polls = Follower(backend.stream(max_line_chars=1000), [JOB7], backend.start()).poll()
    assert [line.text for line in polls[JOB7].lines] == ["E" * 1000]


def test_an_oversized_answer_is_refused_and_the_client_asks_for_less(backend: Backend) -> None:
    for n in range(200):
        backend.push_job(7, f"{n:04d} " + "y" * 1000, (n + 1) * S)
    follow = Follower(backend.stream(max_lines=200, max_response_bytes=65536), [JOB7], backend.start())
    statuses = [follow.poll()[JOB7].status for _ in range(30)]
    assert statuses[0] is Status.UNAVAILABLE
    assert [t[:4] for t in follow.read[JOB7]] == [f"{n:04d}" for n in range(200)]  # all, once, in order


def test_one_flooding_job_does_not_stall_the_others(backend: Backend) -> None:
    for n in range(500):
        backend.push_job(1, f"flood {n}", n * S // 1000)
    backend.push_job(2, "quiet job's failure", 1 * S)
    two = Selector.job(2)
    follow = Follower(backend.stream(max_lines=50), [Selector.job(1), two], backend.start())
    follow.poll()
    assert follow.read[two] == ["quiet job's failure"]  # in the first poll, whatever job 1 prints
    for n in range(12):
        backend.push_job(2, f"quiet {n}", (2 + n) * S)
        polls = follow.poll()
        assert [line.text for line in polls[two].lines] == [f"quiet {n}"]  # every poll, while job 1 catches up
        assert len(polls[Selector.job(1)].lines) <= 50
    assert follow.read[Selector.job(1)] == [f"flood {n}" for n in range(500)]


def test_line_text_and_label_values_are_data(backend: Backend) -> None:
    hostile = ['{job_id="8"} |= "x"', '"}', "{{ .Secret }}", "$(reboot)", "\x00\x1b[2J", "| sort by (_time)"]
    for n, text in enumerate(hostile):
        backend.push_job(7, text, (n + 1) * S)
    backend.line({"job_id": "7|8", "stream": "job"}, "a stream labelled to look like two jobs", S)
    backend.line({"job_id": '7", stream="x', "stream": "job"}, "a label value with a quote", S)
    follow = Follower(backend.stream(), [JOB7, Selector.job(8)], backend.start())
    follow.poll()
    assert follow.read[JOB7] == hostile
    assert follow.read[Selector.job(8)] == []


def test_many_jobs_are_read_with_one_request_and_the_rest_rotate_past_the_bounds(backend: Backend) -> None:
    jobs = [Selector.job(n) for n in range(1, 31)]
    for n in range(1, 31):
        backend.push_job(n, f"job {n}", S)
    follow = Follower(backend.stream(), jobs, backend.start())
    follow.poll()
    assert len(backend.queries()) == 1
    assert all(follow.read[s] == [f"job {s.key}"] for s in jobs)
    bounded = Follower(backend.stream(streams_per_request=10, requests_per_poll=2), jobs, backend.start())
    polls = bounded.poll()
    assert sum(p.status is Status.BEHIND for p in polls.values()) == 10
    bounded.poll()
    assert all(bounded.read[s] == [f"job {s.key}"] for s in jobs)  # the ones left out went first


def test_a_range_reads_the_newest_lines_oldest_first(backend: Backend) -> None:
    for n in range(30):
        backend.push_job(7, f"line {n}", (n + 1) * S)
    backend.push_job(7, "after the range", 100 * S)
    found = backend.stream().range(JOB7, backend.t0, backend.t0 + 50 * S, 10)
    assert [line.text for line in found.lines] == [f"line {n}" for n in range(20, 30)]
    assert found.truncated
    everything = backend.stream().range(JOB7, backend.t0, backend.t0 + 50 * S, 100)
    assert len(everything.lines) == 30 and not everything.truncated


def test_more_lines_at_one_time_stamp_than_a_poll_takes_are_skipped_and_said(backend: Backend) -> None:
    for n in range(120):
        backend.push_job(7, f"same {n}", 5 * S)
    backend.push_job(7, "after", 6 * S)
    follow = Follower(backend.stream(max_lines=50), [JOB7], backend.start())
    details = [follow.poll()[JOB7].detail for _ in range(4)]
    assert any("one time stamp" in d for d in details)
    assert follow.read[JOB7][-1] == "after" and len(follow.read[JOB7]) == len(set(follow.read[JOB7]))
