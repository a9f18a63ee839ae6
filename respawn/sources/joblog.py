"""Reading job output and kernel logs: bounded, line-complete, rank-aware.

Everything in a job's output is the job owner's to choose, the file itself
included: it may be a FIFO that blocks a reader forever, a symbolic link to a
file only root may read, a directory, a device, a hard link to someone else's
file, or millions of empty lines. Files are opened without following a link
and without blocking, and read only when they are regular files (owned by the
job's user, when that is known); what is read is bounded in bytes, in lines
and in line length, so one poll of one job costs bounded time and memory.
"""

import errno
import os
import stat
from datetime import datetime, timedelta
from pathlib import Path

import re2

# rsyslog's kern.log line: RFC 3339 time, host, "kernel:", message. RE2, and
# every repetition bounded: the line may be anything a user wrote to syslog.
_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?(?:Z|[+-]\d\d:\d\d)"
_SYSLOG_TIME = re2.compile(rf"^({_TIME})\s")
# The same line as the kernel wrote it (rsyslog's RFC 3339 format, or the
# traditional `Jan  3 04:05:06 host kernel: ...`): anything else in the file
# (`host myprog[123]: NVRM: Xid ...`) is a userspace program's, not the kernel's.
_KERNEL = re2.compile(
    rf"^(?:{_TIME}|[A-Z][a-z]{{2}} [ \d]\d \d\d:\d\d:\d\d) [A-Za-z0-9][A-Za-z0-9_.-]{{0,252}} kernel: (.*)$"
)
MAX_LINE = 8192  # longer lines are cut: user output must not cost unbounded memory
MAX_LINES = 20_000  # lines one read returns: a flood of empty lines costs bounded CPU per poll
MAX_BYTES = 1 << 20  # bytes one read looks at: the detector reads every job's output every poll
_RANK_DIGITS = 6  # a rank tag's number: `[rank123456]:` at most
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_KINDS = (
    (stat.S_ISDIR, "directory"),
    (stat.S_ISFIFO, "fifo"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISLNK, "symbolic link"),
)


# CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2): either reads files their modes refuse.
_READ_ANY_CAPS = (1 << 1) | (1 << 2)


def reads_any_file(euid: int | None = None, proc_status: str | None = None) -> bool:
    """Whether this process may read files whose modes refuse it: root, or a user holding
    CAP_DAC_READ_SEARCH or CAP_DAC_OVERRIDE (the service user of deploy/systemd/). Such a
    reader takes a job's output only from the job's own user (`owner_uid`): a job cannot
    point it at another's file. When its capabilities cannot be read it checks the owner
    too, which refuses nothing Slurm wrote."""
    if (os.geteuid() if euid is None else euid) == 0:
        return True
    if proc_status is None:
        try:
            proc_status = Path("/proc/self/status").read_text()
        except OSError:
            return True
    for line in proc_status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) & _READ_ANY_CAPS)
    return True


class UnsafeOutput(OSError):
    """A job output or kernel log that is not read: not a regular file, a link,
    another user's file, or one that cannot be opened. `reason` says which, in
    a few words ("not a regular file (fifo)", "a symbolic link", ...)."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


def read_lines(
    path: Path,
    offset: int,
    max_bytes: int = MAX_BYTES,
    *,
    max_lines: int | None = MAX_LINES,
    owner_uid: int | None = None,
) -> tuple[list[str], int]:
    """Complete lines written after `offset`, and the offset after the last one.

    Reads at most the last `max_bytes` of what is new; a partial last line is
    left for the next read. When more than `max_lines` lines are new, the first
    `max_lines` are returned with the offset after them: the rest is read next
    time (None: no bound but `max_bytes`). A missing file reads as nothing.

    Raises UnsafeOutput for a path that is not a regular file (a FIFO, a
    directory, a device, a socket), a symbolic link, a file not owned by
    `owner_uid` (when given), or a file that cannot be read.
    """
    found = _read_tail(path, offset, max_bytes, owner_uid)
    if found is None:
        return [], offset
    data, start, offset = found
    end = data.rfind(b"\n")
    if end < 0:
        return [], offset
    skip = data.find(b"\n") + 1 if start > offset else 0  # we skipped ahead: drop the partial first line
    body = data[skip : end + 1]
    raws, used = _first_lines(body, max_lines)
    return [_decode(raw) for raw in raws], start + skip + used


def output_size(path: Path) -> int | None:
    """How far a job's output (or a kernel log) goes now, without following a link the job
    planted: None when it is missing or not a regular file."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def tail_lines(path: Path, count: int, max_bytes: int = MAX_BYTES, *, owner_uid: int | None = None) -> list[str]:
    """The last `count` complete lines of a file (within its last `max_bytes`).

    Raises UnsafeOutput as read_lines does; a missing file has no lines.
    """
    found = _read_tail(path, 0, max_bytes, owner_uid)
    if found is None or count <= 0:
        return []
    data, start, _ = found
    end = data.rfind(b"\n")
    if end < 0:
        return []
    skip = data.find(b"\n") + 1 if start > 0 else 0  # a line cut by the byte bound is not a line
    # Only the last `count` "\n" lines are split further; "\r" may end lines too.
    body = data[skip : end + 1]
    cut = body.rsplit(b"\n", count + 1)
    tail = b"\n".join(cut[1:]) if len(cut) > count + 1 else body
    return [_decode(raw) for raw in tail.splitlines()[-count:]]


def _read_tail(path: Path, offset: int, max_bytes: int, owner_uid: int | None) -> tuple[bytes, int, int] | None:
    """What is new after `offset`, at most its last `max_bytes`: (data, where it
    starts, the offset, reset to 0 when the file shrank). None when there is no file."""
    fd = _open(path, owner_uid)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        if size < offset:  # truncated or replaced: start over
            offset = 0
        start = max(offset, size - max(0, max_bytes))
        chunks, at = [], start
        while at < size:  # the file may shrink under us: stop at its end
            chunk = os.pread(fd, size - at, at)
            if not chunk:
                break
            chunks.append(chunk)
            at += len(chunk)
    except OSError as exc:
        raise UnsafeOutput(path, _why(exc)) from None
    finally:
        os.close(fd)
    return b"".join(chunks), start, offset


def _open(path: Path, owner_uid: int | None) -> int | None:
    """A descriptor of `path` open for reading, if it is a regular file it is safe
    to read; None when it does not exist."""
    try:
        # Look before opening: opening a device or a FIFO can have effects of its own.
        _check(path, os.lstat(path), owner_uid)
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except UnsafeOutput:
        raise
    except OSError as exc:
        raise UnsafeOutput(path, _why(exc)) from None
    try:
        _check(path, os.fstat(fd), owner_uid)  # what was opened, not what was looked at: it may have been swapped
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check(path: Path, info: os.stat_result, owner_uid: int | None) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeOutput(path, "a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _KINDS if test(info.st_mode)), "unknown type")
        raise UnsafeOutput(path, f"not a regular file ({kind})")
    if owner_uid is not None and info.st_uid != owner_uid:
        raise UnsafeOutput(path, f"owned by uid {info.st_uid}, not the job's {owner_uid}")


def _why(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symbolic link"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.ENXIO:
        return "not a regular file"
    return f"cannot be read ({os.strerror(exc.errno) if exc.errno else exc})"


def _first_lines(body: bytes, max_lines: int | None) -> tuple[list[bytes], int]:
    """The first `max_lines` lines of `body` (which ends with "\\n"), split as
    bytes.splitlines does, and how many bytes they take."""
    if max_lines is None:
        return body.splitlines(), len(body)
    max_lines = max(1, max_lines)
    # Cut by "\n" first, in C: a flood of empty lines costs no Python loop.
    pieces = body.split(b"\n", max_lines)
    rest = pieces[-1] if len(pieces) > max_lines else b""
    head = body[: len(body) - len(rest)]
    lines = head.splitlines()
    if len(lines) <= max_lines:
        return lines, len(head)
    kept = head.splitlines(keepends=True)[:max_lines]  # "\r" ends lines too
    return [raw.rstrip(b"\r\n") for raw in kept], sum(map(len, kept))


def _decode(raw: bytes) -> str:
    return raw[:MAX_LINE].decode("utf-8", "replace")


def rank_tag(line: str) -> tuple[int | None, int]:
    """The rank a line's tag names, as PyTorch (`[rank3]:`) or `srun --label`
    (`3: `) print it after optional whitespace, and where the tag ends (0: no tag).

    Plain string code, linear in the line: it may be 8 KB of whitespace.
    """
    first = line[:1]
    if not first or not (first == "[" or first.isdecimal() or first.isspace()):
        return None, 0  # most lines: no tag, and nothing to strip
    body = line.lstrip() if first.isspace() else line
    at = len(line) - len(body)
    if body.startswith("[rank"):
        end = body.find("]:", 5, 5 + _RANK_DIGITS + 2)
        if end > 5 and body[5:end].isdecimal():
            return int(body[5:end]), at + end + 2
        return None, 0
    end = body.find(": ", 0, _RANK_DIGITS + 2)
    if end > 0 and body[:end].isdecimal():
        return int(body[:end]), at + end + 2
    return None, 0


def rank_of(line: str) -> int | None:
    return rank_tag(line)[0]


def untagged(line: str) -> str:
    """The line without its rank tag, as the runbooks' patterns read it."""
    return line[rank_tag(line)[1] :]


# Every tag rank_tag strips, as an RE2 fragment, for a scan that reads lines with
# their tags on (attribution.matcher). A superset: any Unicode space, any decimal
# digit (the unit tests check it against str.isspace and str.isdecimal).
_TAG_DIGITS = rf"\p{{Nd}}{{1,{_RANK_DIGITS}}}"
RANK_TAG_RE2 = rf"(?:[\s\p{{Z}}\x0b\x1c-\x1f\x85]*(?:\[rank{_TAG_DIGITS}\]:|{_TAG_DIGITS}: ))"


def logged_at(line: str) -> datetime | None:
    """When a kernel-log line was written, from its syslog time stamp."""
    match = _SYSLOG_TIME.match(line)
    if not match:
        return None
    try:
        return datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
    except ValueError:
        return None


# Slurm's StartTime is in whole seconds, so a line within the second it names may come
# before the attempt (CI once saw an earlier job's Xid, written 0.5 s before this attempt
# started on the node, blamed for it).
_START_RESOLUTION = timedelta(seconds=1)


def in_attempt(at: datetime, start: datetime) -> bool:
    """Whether a kernel line written at `at` belongs to the attempt Slurm says started at
    `start`: the attempt's own lines begin after the second its StartTime names."""
    return at >= start + _START_RESOLUTION


def kernel_message(line: str) -> str | None:
    """The message of a kernel-log line when the kernel wrote it (`<time> <host>
    kernel: <message>`), else None: a userspace program's line in the same file
    (`<time> <host> myprog[123]: ...`) is not node-level evidence."""
    match = _KERNEL.match(line[: MAX_LINE + 512])
    return match.group(1) if match else None
