"""The detector's reading of a log server (`logs.source: loki | victorialogs`): every
enrolled job's output stream and every node's kernel stream, in one bounded poll.

The file reader's counterpart (respawn/sources/joblog.py, read per job in the
detector's loop). Here all streams are asked at once, before the per-job loop,
because the client (respawn/sources/logstream/) shares requests between streams
and bounds each stream on its own: one job printing a flood moves only its own
stream behind, never another's lines (docs/log-sources.md). A job's position is
its stream's `Cursor`; the number an incident carries (`Detection.log_offset`,
`Gathered.log_end`) is the cursor's `at_ns`: nanoseconds since the epoch, where
the attempt's evidence begins in its stream (docs/log-sources.md, "Positions").

What a stream's poll did not deliver stays behind its cursor: a server down,
slow or rate limiting loses nothing, the next good poll reads on from there.
"""

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from respawn.attribution.matcher import Matcher
from respawn.detection.rules import NodeFact
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.scheduler.states import JobState
from respawn.sources.joblog import kernel_message
from respawn.sources.logstream import Cursor, LogStream, Poll, Selector, Status

log = logging.getLogger("respawn.detection.logfollow")


class LogStreamMissing(Exception):
    """The server has no stream with the job's labels (a label mapping that does not fit)."""


class LogServerUnavailable(Exception):
    """The server did not answer usefully for the job's stream this poll (down, slow, 5xx)."""


@dataclass
class JobLines:
    """One job's share of a poll."""

    read_from: int  # where this poll's read began: the cursor's at_ns before it
    lines: list[str]
    cursor: Cursor  # the stream's after this poll: the watch keeps it
    newest: datetime | None  # the newest line's time stamp: when the job last wrote
    trouble: Exception | None = None  # to record once per kind, as a file that cannot be read is


@dataclass
class Polled:
    jobs: dict[int, JobLines] = field(default_factory=dict)
    kernel: dict[str, NodeFact] = field(default_factory=dict)  # fatal kernel lines, per node


class StreamFollower:
    """Cursors per job and per node, and one `LogStream.poll` for all of them (blocking)."""

    def __init__(self, stream: LogStream, matcher: Matcher, started: datetime) -> None:
        self._stream = stream
        self._matcher = matcher
        self._started = started
        self._nodes: dict[str, Cursor] = {}
        self._missing_nodes: set[str] = set()  # logged once each, until found
        self._backing_off = False

    def close(self) -> None:
        self._stream.close()

    def poll(self, jobs: list[tuple[JobInfo, Cursor | None]], nodes: list[NodeInfo]) -> Polled:
        """New lines of these (enrolled) jobs, each from its cursor (None: a job new to the
        detector), and fatal kernel lines of these nodes."""
        now = datetime.now(UTC)
        cursors: dict[Selector, Cursor] = {}
        for job, cursor in jobs:
            cursors[Selector.job(job.job_id)] = cursor or self._first_cursor(job, now)
        kernel: dict[str, Selector] = {}
        for node in nodes:
            try:
                kernel[node.name] = Selector.kernel(node.name)
            except ValueError:
                continue  # Slurm's own node names; one that is no host name has no stream to ask for
            cursors[kernel[node.name]] = self._nodes.get(node.name) or Cursor.now()  # history is not news
        answers = self._stream.poll(cursors)
        self._note_back_off([a for a in answers.values() if a.status is Status.RATE_LIMITED])
        out = Polled()
        for job, _ in jobs:
            selector = Selector.job(job.job_id)
            answer = answers[selector]
            newest = max((line.at_ns for line in answer.lines), default=None)
            out.jobs[job.job_id] = JobLines(
                read_from=cursors[selector].at_ns,
                lines=[line.text for line in answer.lines],
                cursor=answer.cursor,
                newest=None if newest is None else datetime.fromtimestamp(newest / 1e9, UTC),
                trouble=self._trouble(job, answer.status, answer.detail, now),
            )
        self._nodes = {}
        for name, selector in kernel.items():
            answer = answers[selector]
            self._nodes[name] = answer.cursor
            self._note_kernel(name, answer.status, answer.detail)
            for line in answer.lines:
                if kernel_message(line.text) is None:
                    continue  # a userspace program's line shipped with the kernel's is not node-level evidence
                hit = self._matcher.failure(line.text)
                if hit is not None:
                    out.kernel[name] = NodeFact(hit.pattern, line.text[:2000])
        return out

    def _first_cursor(self, job: JobInfo, now: datetime) -> Cursor:
        """From the attempt's start when it started since the detector did; else from now: what a job
        printed before the detector watched it is history, not news (as with a file's size)."""
        start = job.start_time
        if job.state is not JobState.PENDING and start is not None and self._started <= start <= now:
            return Cursor.starting(int(start.timestamp()) * 1_000_000_000)
        return Cursor.now()

    def _trouble(self, job: JobInfo, status: Status, detail: str, now: datetime) -> Exception | None:
        if status is Status.UNAVAILABLE:
            return LogServerUnavailable(detail)
        # A job's first lines take a moment to be shipped: missing is news once the stream had time to appear.
        settled = job.start_time is not None and (now - job.start_time).total_seconds() >= (
            self._stream.bounds.missing_check_s
        )
        if status is Status.MISSING and settled:
            return LogStreamMissing(detail)
        return None

    def _note_back_off(self, limited: list[Poll]) -> None:
        if limited and not self._backing_off:
            log.warning("the log server rate limits the detector: %s", limited[0].detail)
        self._backing_off = bool(limited)

    def _note_kernel(self, node: str, status: Status, detail: str) -> None:
        if status is Status.MISSING and node not in self._missing_nodes:
            self._missing_nodes.add(node)
            log.warning("kernel log of %s not found on the log server: %s", node, detail)
        elif status in (Status.OK, Status.BEHIND):
            self._missing_nodes.discard(node)


def position_now() -> int:
    """Where a job's stream goes now, as an incident's position under a log server."""
    return time.time_ns()
