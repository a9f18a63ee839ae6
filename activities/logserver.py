"""An incident's reads of a log server (`logs.source: loki | victorialogs`): the
attempt's output and its nodes' kernel lines for the evidence, by range query.

Positions are the stream's nanosecond time stamps (respawn/detection/logfollow.py):
an incident's `log_offset` is where its attempt's lines begin, and the end of
what it read is the next incident's start. No read looks back further than
`logs.bounds.missing_lookback_s`: an offset from before (a byte offset carried
over from `logs.source: files`, an external detection's 0) reads that far, no
further. A server that does not answer usefully leaves the evidence without
those lines, and says so in the log, as an unreadable file does.
"""

import logging
import time
from datetime import UTC, datetime

from respawn.scheduler.slurm import JobInfo
from respawn.sources.joblog import in_attempt, kernel_message, logged_at
from respawn.sources.logstream import Line, LogSourceError, LogStream, Selector
from respawn.wire.incident import GatherRequest

log = logging.getLogger("respawn.wire.evidence")


def earliest(stream: LogStream, offset: int, now_ns: int) -> int:
    """Where a read from `offset` begins: the offset, bounded by the look back."""
    return max(offset, now_ns - int(stream.bounds.missing_lookback_s * 1e9))


def output(stream: LogStream, req: GatherRequest, limit: int) -> tuple[list[str], int]:
    """The attempt's newest `limit` lines since its offset, oldest first, and where they end."""
    end = time.time_ns()
    try:
        got = stream.range(Selector.job(req.job_id), earliest(stream, req.log_offset, end), end, limit)
    except LogSourceError as exc:
        log.warning("incident %s: the job's stream is not read: %s", req.incident_id, exc.detail)
        return [], req.log_offset
    return [line.text for line in got.lines], end


def kernel(stream: LogStream, req: GatherRequest, node: str, job: JobInfo, limit: int) -> list[str]:
    """The kernel's own lines in the node's stream since the attempt started (as `_during`
    in activities/evidence.py keeps them from a file), by their syslog stamp, or by the
    server's time stamp when the shipper stripped it."""
    if job.start_time is None:
        return []  # an attempt not known to have started: no kernel line can be placed in it
    end = time.time_ns()
    start = earliest(stream, int(job.start_time.timestamp()) * 1_000_000_000, end)
    try:
        got = stream.range(Selector.kernel(node), start, end, limit)
    except (LogSourceError, ValueError) as exc:
        log.warning("incident %s: kernel stream of %s not read: %s", req.incident_id, node, exc)
        return []
    return [
        line.text
        for line in got.lines
        if kernel_message(line.text) is not None and in_attempt(_at(line), job.start_time)
    ]


def _at(line: Line) -> datetime:
    return logged_at(line.text) or datetime.fromtimestamp(line.at_ns / 1e9, UTC)
