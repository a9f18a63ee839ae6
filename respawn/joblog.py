"""Reading job output and kernel logs: bounded, line-complete, rank-aware."""

import os
import re
from datetime import datetime
from pathlib import Path

# A rank tag as PyTorch prints it (`[rank3]:`) or as `srun --label` does (`3: `).
_RANK_TAG = re.compile(r"^\s*(?:\[rank(?P<torch>\d{1,6})\]:|(?P<srun>\d{1,6}): )")
# rsyslog's kern.log line: RFC 3339 time, host, "kernel:", message.
_SYSLOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d))\s")
MAX_LINE = 8192  # longer lines are cut: user output must not cost unbounded memory


def read_lines(path: Path, offset: int, max_bytes: int = 4 << 20) -> tuple[list[str], int]:
    """Complete lines written after `offset`, and the offset after the last one.

    Reads at most the last `max_bytes` of what is new; a partial last line is
    left for the next read. A missing file reads as nothing.
    """
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return [], offset
    if size < offset:  # truncated or replaced: start over
        offset = 0
    start = max(offset, size - max_bytes)
    with open(path, "rb") as handle:
        handle.seek(start)
        data = handle.read(size - start)
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    chunk = data[: end + 1]
    if start > offset:  # we skipped ahead: drop the partial first line
        chunk = chunk[chunk.find(b"\n") + 1 :]
    lines = [raw[:MAX_LINE].decode("utf-8", "replace") for raw in chunk.splitlines()]
    return lines, start + end + 1


def tail_lines(path: Path, count: int, max_bytes: int = 1 << 20) -> list[str]:
    """The last `count` complete lines of a file."""
    try:
        size = os.stat(path).st_size
    except FileNotFoundError:
        return []
    lines, _ = read_lines(path, max(0, size - max_bytes), max_bytes)
    return lines[-count:]


def rank_of(line: str) -> int | None:
    match = _RANK_TAG.match(line)
    if not match:
        return None
    return int(match.group("torch") or match.group("srun"))


def logged_at(line: str) -> datetime | None:
    """When a kernel-log line was written, from its syslog time stamp."""
    match = _SYSLOG_TIME.match(line)
    if not match:
        return None
    try:
        return datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
    except ValueError:
        return None
