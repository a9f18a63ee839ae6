"""Job output and kernel logs from a log server (Loki, VictoriaLogs) instead of files.

The detector follows each enrolled job's stream and each node's kernel stream
with `LogStream.poll`, one call per poll for all of them; the evidence activity
reads an attempt's lines back with `LogStream.range`. Both are blocking (httpx's
synchronous client): call them from a thread, as the file reads are.

Near real time, by short polls. Loki's live tail is a WebSocket
(`GET /loki/api/v1/tail`); the project ships no WebSocket client (httpx speaks
plain HTTP only), and a tail per stream would hold one connection and one
thread per enrolled job. VictoriaLogs' `/select/logsql/tail` is a streamed
HTTP response, but again one per query, unbounded in time. Both are replaced
by the range query each server documents, asked once per detector poll (0.5 s
by default) from each stream's cursor: a poll is a bounded catch-up by
construction, so a reconnect, a server restart or a failed poll needs nothing
special: the next poll reads from the cursor, bounded like every poll.

Nothing lost, nothing read twice. A `Cursor` is not an offset: several lines
share a nanosecond, and servers accept lines out of order within a stream
(Loki's unordered writes; a shipper's batches arrive late). It holds:

- `at_ns`: the stream is read up to there (the end of the last query, or,
  when a bound cut the answer, the time stamp it was cut at);
- `floor_ns`: `late_window_s` before `at_ns` (never moving back): no line
  older than the floor is ever delivered (history, or a line later than the
  window);
- `seen`: a digest of every line delivered at or after the floor (time stamp,
  text, and the how-many-th identical line it is), so a query that starts at
  the floor, looking back over the late window, delivers only lines not seen;
- `behind`: the last answer filled the stream's bound; the next query starts
  at `at_ns` rather than the floor, on its own, so a stream with more lines
  than a poll takes moves forward every poll.

Late lines, deliberately: a line that becomes queryable within `late_window_s`
of its time stamp (a shipper's batch, an ingester's flush, a node's clock a
little behind) is delivered once, in the poll that sees it, whatever was read
after it; one later than that is not delivered (it is under the floor). Loki's
own tail waits at most 5 s for slow loggers (`delay_for`); the window is the
same idea, without holding the news back. A stream whose window holds half a
poll's lines or more ("chatty") is read from `at_ns` without the look back, on
its own: its late lines are not looked for while it is that busy.

Bounds, per stream and per poll: `max_lines` new lines, each cut to
`max_line_chars`; per request: `max_response_bytes` read at most, and
`timeout_s` for connecting and for each read, and for the whole body, checked
between reads (a server that drips bytes is cut off within about twice it);
per poll: at most `requests_per_poll` requests and `poll_budget_s` seconds,
streams beyond either rotating through later polls.

Isolation: streams caught up are asked for together (`job_id=~"1|2|3"`), so
the cost of a poll does not grow with the number of jobs, and one job's stream
cannot stall the others: VictoriaLogs bounds each stream in the query itself
(`sort ... limit N partition by (job_id)`); Loki bounds only a whole query, so
its limit is the streams' bounds summed, and a stream that took more than its
share of a cut answer is behind; the other streams of that answer are asked for
again at once, in the same poll, without it. A stream behind or chatty is asked
for on its own, after the shared requests, until it caught up; so the cost of a poll grows
only with the number of streams that print faster than a poll takes, and is
bounded by `requests_per_poll` and `poll_budget_s` (the rest rotate).

Failures are the caller's to see, per stream, in `Poll.status`: the cursor of a
stream that was not read is returned unchanged. A 429 backs the client off
(Retry-After, else `backoff_s` doubling to `max_backoff_s`) and polls in the
back-off make no request; a refused connection or a timeout ends the poll's
requests (one timeout per poll at most); a 5xx, a malformed or oversized answer
fails its request only (an oversized one halves what the next asks for). A
selector that finds no stream is asked after (series / field values) every
`missing_check_s`, and reported MISSING rather than an empty success forever.

Hostile input: line text and label values are data, never evaluated; a line is
mapped to its job or node by comparing the label's value with the selector's,
exactly; values written into a query are quoted (job ids are numbers, node
names are checked against a host name's characters).
"""

import hashlib
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import httpx

from respawn.config.cluster import LogBounds, LogLabels, LogServer, LogSettings, LogSource

_NODE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$")
_MAX_SEEN = 50_000  # digests one cursor keeps at most: past it the floor moves up
_MAX_KEYS_IN_ERROR = 300  # characters of a server's error kept


class StreamKind(StrEnum):
    JOB = "job"  # a job's output: labelled with its job id
    KERNEL = "kernel"  # a node's kernel log: labelled with the node's name


@dataclass(frozen=True, slots=True)
class Selector:
    """A job's output stream or a node's kernel stream, by what the site labels it with."""

    kind: StreamKind
    key: str  # the job id, or the node's name

    @classmethod
    def job(cls, job_id: int) -> "Selector":
        return cls(StreamKind.JOB, str(int(job_id)))

    @classmethod
    def kernel(cls, node: str) -> "Selector":
        if not _NODE.match(node):
            raise ValueError(f"not a node name: {node[:80]!r}")
        return cls(StreamKind.KERNEL, node)


@dataclass(frozen=True, slots=True)
class Line:
    at_ns: int  # the server's time stamp, nanoseconds since the epoch
    text: str  # cut to max_line_chars; data, never evaluated


class Status(StrEnum):
    OK = "ok"  # every new line up to now (within the late window)
    BEHIND = "behind"  # a bound was hit: more lines wait, the next poll reads on
    MISSING = "missing"  # no stream carries the selector's labels (in missing_lookback_s)
    UNAVAILABLE = "unavailable"  # down, slow, 5xx, cut off, malformed: cursor unchanged
    RATE_LIMITED = "rate_limited"  # 429: backing off, cursor unchanged


@dataclass(frozen=True, slots=True)
class Cursor:
    """How far a stream is read (module docstring): opaque to callers, kept per stream."""

    at_ns: int
    floor_ns: int
    seen: frozenset[tuple[int, str]] = frozenset()  # (time stamp, digest) of lines at or after the floor
    found: bool = False  # a line or the stream itself was seen
    behind: bool = False

    @classmethod
    def starting(cls, at_ns: int) -> "Cursor":
        """A stream read from `at_ns` on: what is older is history, not news."""
        return cls(at_ns=at_ns, floor_ns=at_ns)

    @classmethod
    def now(cls) -> "Cursor":
        return cls.starting(time.time_ns())


@dataclass(frozen=True, slots=True)
class Poll:
    """One stream's answer to one poll."""

    lines: list[Line]  # new lines, oldest first, each delivered once
    cursor: Cursor  # pass it to the next poll
    status: Status = Status.OK
    detail: str = ""  # why, when not OK: one line for a log or an audit row
    retry_in_s: float | None = None  # RATE_LIMITED: when the client asks again


@dataclass(frozen=True, slots=True)
class Range:
    lines: list[Line]  # oldest first
    truncated: bool  # more lines matched than `limit`: these are the newest


class LogSourceError(RuntimeError):
    """A request that did not answer usefully; `status` says how (UNAVAILABLE, RATE_LIMITED)."""

    def __init__(self, status: Status, detail: str, retry_in_s: float | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.retry_in_s = retry_in_s


class _Oversized(LogSourceError):
    pass


class _Stop(LogSourceError):
    """The server cannot be reached: no further request this poll."""


@dataclass
class Answer:
    """What one query over several streams returned: lines per key, and for each key whose
    lines were cut by a bound, the time stamp up to which they are complete (exclusive: lines
    at that time stamp may be missing)."""

    lines: dict[str, list[Line]] = field(default_factory=dict)
    cut_at: dict[str, int] = field(default_factory=dict)
    full: set[str] = field(default_factory=set)  # keys that filled their own bound: asked for alone next


class LogStream:
    """The interface, and what both servers share: cursors, bounds, back-off, the poll's plan.
    One poll at a time per instance (the detector's); `range` may run beside it.

    A server's client implements `_query` (lines of several streams of one kind, bounded),
    `_newest` (the newest lines of one stream) and `_existing` (which keys have a stream)."""

    def __init__(
        self,
        settings: LogSettings,
        *,
        clock_ns: Callable[[], int] = time.time_ns,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        if settings.server is None:
            raise ValueError("a log stream needs logs.server")
        self.server: LogServer = settings.server
        self.labels: LogLabels = settings.labels
        self.bounds: LogBounds = settings.bounds
        self._clock_ns = clock_ns
        self._monotonic = monotonic
        self._http = httpx.Client(
            base_url=self.server.url,
            timeout=httpx.Timeout(self.server.timeout_s),
            headers=self._headers(),
            follow_redirects=False,
            trust_env=False,
        )
        self._not_before = 0.0  # back-off after a 429
        self._backoff = self.bounds.backoff_s
        self._scale = 1.0  # of the per-stream limit: halved after an oversized answer
        self._turn = 0  # rotates the order requests are made in, for fairness under the bounds
        self._checked: dict[Selector, float] = {}  # when each unfound selector was last asked after
        self._absent: set[Selector] = set()  # those the server said it has no stream of

    def _headers(self) -> dict[str, str]:
        return {}

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "LogStream":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # The interface.

    def poll(self, cursors: Mapping[Selector, Cursor]) -> dict[Selector, Poll]:
        """The new lines of each stream since its cursor, bounded; one entry per selector."""
        began, now = time.monotonic(), self._monotonic()
        out: dict[Selector, Poll] = {}
        if now < self._not_before:
            wait = self._not_before - now
            return {s: Poll([], c, Status.RATE_LIMITED, "backing off after a 429", wait) for s, c in cursors.items()}
        self._checked = {s: t for s, t in self._checked.items() if s in cursors}
        self._absent &= set(cursors)
        groups = deque(self._plan(cursors))
        self._turn += 1
        stopped: LogSourceError | None = None
        n = -1
        while groups:
            kind, keys = groups.popleft()
            n += 1
            group = {Selector(kind, k): cursors[Selector(kind, k)] for k in keys}
            if stopped is None and n >= self.bounds.requests_per_poll:
                stopped = LogSourceError(Status.BEHIND, "not asked this poll: requests_per_poll reached")
            elif stopped is None and time.monotonic() - began > self.bounds.poll_budget_s:
                stopped = LogSourceError(Status.BEHIND, "not asked this poll: poll_budget_s spent")
            if stopped is not None:
                _merge(out, self._failed(group, stopped))
                continue
            try:
                taken = {k: len(out[Selector(kind, k)].lines) for k in keys if Selector(kind, k) in out}
                polled, quiet = self._poll_group(kind, group, taken)
                _merge(out, polled)
                if quiet:
                    cursors = {**cursors, **{Selector(kind, k): polled[Selector(kind, k)].cursor for k in quiet}}
                    groups.appendleft((kind, quiet))
            except _Oversized as exc:
                self._scale = max(self._scale / 2, 1 / 1024)
                _merge(out, self._failed(group, exc))
            except _Stop as exc:
                stopped = exc
                _merge(out, self._failed(group, exc))
            except LogSourceError as exc:
                if exc.status is Status.RATE_LIMITED:
                    stopped = exc
                _merge(out, self._failed(group, exc))
        return out

    def range(self, selector: Selector, start_ns: int, end_ns: int, limit: int) -> Range:
        """The newest `limit` lines of one stream in [start_ns, end_ns), oldest first: an
        incident's evidence. Raises LogSourceError when the server does not answer usefully."""
        limit = max(1, limit)
        lines = self._newest(selector, start_ns, end_ns, limit + 1)
        lines.sort(key=lambda line: line.at_ns)
        return Range(lines=lines[-limit:], truncated=len(lines) > limit)

    # What both servers share.

    def _plan(self, cursors: Mapping[Selector, Cursor]) -> list[tuple[StreamKind, list[str]]]:
        """The requests of one poll. Streams caught up are asked for together, a kind at a time,
        `streams_per_request` at most in one: their queries all start about `late_window_s` ago.
        A stream that is behind or chatty (its late window holds half a poll's lines) is asked
        for alone, from where it is: in a shared query it would fill the answer. Both rotate,
        so that streams past the bounds are asked first next time; the shared ones go first."""
        shared: list[tuple[StreamKind, list[str]]] = []
        alone: list[tuple[StreamKind, list[str]]] = []
        for kind in StreamKind:
            mine = sorted((s for s in cursors if s.kind is kind), key=lambda s: s.key)
            alone += [(kind, [s.key]) for s in mine if self._apart(cursors[s])]
            keys = [s.key for s in mine if not self._apart(cursors[s])]
            per = self.bounds.streams_per_request
            shared += [(kind, keys[i : i + per]) for i in range(0, len(keys), per)]
        return _rotate(shared, self._turn) + _rotate(alone, self._turn)

    def _apart(self, cursor: Cursor) -> bool:
        return cursor.behind or len(cursor.seen) >= max(1, self._per_stream() // 2)

    def _per_stream(self) -> int:
        return max(1, int(self.bounds.max_lines * self._scale))

    def _poll_group(
        self, kind: StreamKind, group: dict[Selector, Cursor], taken: Mapping[str, int]
    ) -> tuple[dict[Selector, Poll], list[str]]:
        """One request for a group of streams (`taken`: lines each already delivered this poll),
        and the streams to ask for again at once: a shared answer that other streams filled (Loki
        bounds a whole answer) left the quiet ones complete only up to where it was cut; asked
        again without the streams that filled it, one job's flood does not hold another job's
        line back to the next poll."""
        end = self._clock_ns()
        # From the floor: lines that arrived late within the window; a stream apart from where it is.
        start = min(c.at_ns if self._apart(c) else c.floor_ns for c in group.values())
        answer = self._query(kind, [s.key for s in group], start, end, self._per_stream())
        self._succeeded()
        out = {}
        for selector, cursor in group.items():
            lines = answer.lines.get(selector.key, [])
            cut = answer.cut_at.get(selector.key)
            room = self.bounds.max_lines - taken.get(selector.key, 0)
            out[selector] = self._advance(cursor, lines, end, cut, selector.key in answer.full, room)
        self._report_missing(kind, out, end)
        quiet = []
        for key in answer.cut_at if len(group) > 1 else ():
            poll = out[Selector(kind, key)]
            room_left = taken.get(key, 0) + len(poll.lines) < self.bounds.max_lines
            if key not in answer.full and not poll.cursor.behind and room_left:
                quiet.append(key)
        return out, quiet

    def _advance(
        self, cursor: Cursor, lines: Iterable[Line], end: int, cut_at: int | None, full: bool, room: int
    ) -> Poll:
        """The lines not delivered before, at most `room`, and the cursor after them: complete
        up to `end`, or, when the answer was cut, up to `cut_at` (lines at it may remain)."""
        ordered = sorted(lines, key=lambda line: line.at_ns)  # servers may answer out of order
        seen = set(cursor.seen)
        fresh: list[tuple[Line, tuple[int, str]]] = []
        repeats: Counter[tuple[int, str]] = Counter()
        for line in ordered:
            if line.at_ns < cursor.floor_ns:
                continue  # history, or later than the late window
            repeats[(line.at_ns, line.text)] += 1
            mark = (line.at_ns, _digest(line, repeats[(line.at_ns, line.text)]))
            if mark not in seen:
                fresh.append((line, mark))
        if len(fresh) > room:
            fresh = fresh[:room]
            cut_at, full = fresh[-1][0].at_ns, True
        delivered = [line for line, _ in fresh]
        seen.update(mark for _, mark in fresh)
        at = max(cursor.at_ns, end if cut_at is None else cut_at)
        floor = max(cursor.floor_ns, at - int(self.bounds.late_window_s * 1e9))
        detail = "more lines wait: read on next poll" if cut_at is not None else ""
        if full and cursor.behind and not delivered and ordered and ordered[0].at_ns == ordered[-1].at_ns:
            # A whole answer of lines already seen, all at one time stamp: step past it.
            at = floor = ordered[0].at_ns + 1
            detail = "more lines at one time stamp than a poll takes: the rest of them skipped"
        kept = {m for m in seen if m[0] >= floor}
        if len(kept) > _MAX_SEEN:  # keep whole time stamps, the newest: the floor moves up to them
            counts = Counter(m[0] for m in kept)
            total, cut = 0, max(counts)
            for t in sorted(counts, reverse=True):
                if total + counts[t] > _MAX_SEEN:
                    break
                total, cut = total + counts[t], t
            floor = max(floor, cut)
            kept = {m for m in kept if m[0] >= floor}
        new = Cursor(at_ns=at, floor_ns=floor, seen=frozenset(kept), found=cursor.found or bool(ordered), behind=full)
        return Poll(delivered, new, Status.BEHIND if cut_at is not None else Status.OK, detail)

    def _report_missing(self, kind: StreamKind, out: dict[Selector, Poll], end: int) -> None:
        """Selectors never seen: asked after, at most every missing_check_s; MISSING when absent."""
        now = self._monotonic()
        for s, p in out.items():
            if p.cursor.found:
                self._checked.pop(s, None)
                self._absent.discard(s)
        unseen = [s for s, p in out.items() if not p.cursor.found]
        due = [s for s in unseen if now - self._checked.get(s, -1e18) >= self.bounds.missing_check_s]
        if due:
            start = end - int(self.bounds.missing_lookback_s * 1e9)
            try:
                present = self._existing(kind, [s.key for s in due], start, end)
            except LogSourceError:
                due = []  # asked again next poll; the lines themselves were read
                present = set()
            for s in due:
                self._checked[s] = now
                if s.key in present:
                    self._absent.discard(s)
                    out[s] = replace(out[s], cursor=replace(out[s].cursor, found=True))
                else:
                    self._absent.add(s)
        for s in unseen:
            if s in self._absent:
                out[s] = replace(out[s], status=Status.MISSING, detail=self._missing_detail(s))

    def _missing_detail(self, selector: Selector) -> str:
        return f"no stream labelled {self.describe(selector)} on {self.server.url}"

    def describe(self, selector: Selector) -> str:
        """The labels a selector matches, for people (`{job_id="12", stream="job"}`)."""
        labels = self._matchers(selector.kind, [selector.key])
        return "{" + ", ".join(f'{k}="{v}"' for k, v in labels) + "}"

    def _matchers(self, kind: StreamKind, keys: Sequence[str]) -> list[tuple[str, str]]:
        """(label, value) pairs every stream of the query carries; the key's own comes last."""
        pairs = list(self.labels.match.items())
        if kind is StreamKind.JOB:
            if self.labels.job_stream is not None:
                pairs.append((self.labels.stream, self.labels.job_stream))
            pairs.append((self.labels.job_id, "|".join(keys)))
        else:
            pairs.append((self.labels.stream, self.labels.kernel_stream))
            pairs.append((self.labels.node, "|".join(keys)))
        return pairs

    def key_label(self, kind: StreamKind) -> str:
        return self.labels.job_id if kind is StreamKind.JOB else self.labels.node

    def _failed(self, group: Mapping[Selector, Cursor], exc: LogSourceError) -> dict[Selector, Poll]:
        return {s: Poll([], c, exc.status, exc.detail, exc.retry_in_s) for s, c in group.items()}

    def _succeeded(self) -> None:
        self._backoff = self.bounds.backoff_s
        self._scale = min(1.0, self._scale * 2)

    def _get(self, path: str, params: Sequence[tuple[str, str]]) -> bytes:
        """One request: its whole body, bounded in bytes and in time (connect to last byte)."""
        deadline = time.monotonic() + self.server.timeout_s
        cap = self.bounds.max_response_bytes
        try:
            with self._http.stream("GET", path, params=list(params)) as response:
                if response.status_code == 429:
                    self._rate_limited(response.headers.get("retry-after"))
                if response.status_code >= 400:
                    body = response.read()[:_MAX_KEYS_IN_ERROR].decode("utf-8", "replace")
                    kind = "server error" if response.status_code >= 500 else "refused"
                    raise LogSourceError(
                        Status.UNAVAILABLE, f"{path}: {kind} {response.status_code}: {_one_line(body)}"
                    )
                chunks, size = [], 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > cap:
                        raise _Oversized(Status.UNAVAILABLE, f"{path}: answer over {cap} bytes: asking for less")
                    if time.monotonic() > deadline:
                        raise _Stop(Status.UNAVAILABLE, f"{path}: slower than {self.server.timeout_s} s")
                    chunks.append(chunk)
                return b"".join(chunks)
        except httpx.TimeoutException:
            raise _Stop(Status.UNAVAILABLE, f"{path}: no answer within {self.server.timeout_s} s") from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise _Stop(Status.UNAVAILABLE, f"{path}: {type(exc).__name__}: {_one_line(str(exc))}") from None
        except httpx.HTTPError as exc:
            raise LogSourceError(Status.UNAVAILABLE, f"{path}: {type(exc).__name__}") from None

    def _rate_limited(self, retry_after: str | None) -> None:
        wait = self._backoff
        if retry_after is not None and retry_after.strip().isdecimal():
            wait = max(wait, min(float(retry_after.strip()), self.bounds.max_backoff_s))
        self._backoff = min(self._backoff * 2, self.bounds.max_backoff_s)
        self._not_before = self._monotonic() + wait
        raise LogSourceError(Status.RATE_LIMITED, f"429 from {self.server.url}: backing off {wait:g} s", wait)

    def _cut(self, text: str) -> str:
        return text[: self.bounds.max_line_chars]

    # What each server implements.

    def _query(self, kind: StreamKind, keys: list[str], start_ns: int, end_ns: int, per_stream: int) -> Answer:
        raise NotImplementedError

    def _newest(self, selector: Selector, start_ns: int, end_ns: int, limit: int) -> list[Line]:
        raise NotImplementedError

    def _existing(self, kind: StreamKind, keys: list[str], start_ns: int, end_ns: int) -> set[str]:
        raise NotImplementedError


def _merge(out: dict[Selector, Poll], polled: Mapping[Selector, Poll]) -> None:
    """A stream asked for again in the same poll keeps the lines its first answer delivered;
    its cursor and status are the last answer's."""
    for selector, poll in polled.items():
        first = out.get(selector)
        out[selector] = poll if first is None else replace(poll, lines=first.lines + poll.lines)


def _rotate(items: list[tuple[StreamKind, list[str]]], turn: int) -> list[tuple[StreamKind, list[str]]]:
    if not items:
        return items
    at = turn % len(items)
    return items[at:] + items[:at]


def _digest(line: Line, nth: int) -> str:
    return hashlib.blake2b(f"{line.at_ns}\0{nth}\0{line.text}".encode(), digest_size=12).hexdigest()


def _one_line(text: str) -> str:
    return " ".join(text.split())[:_MAX_KEYS_IN_ERROR]


def open_stream(settings: LogSettings, **kwargs: Any) -> LogStream | None:
    """The client for `logs.source`; None for files (respawn/sources/joblog.py reads those)."""
    if settings.source is LogSource.LOKI:
        from respawn.sources.logstream.loki import LokiStream

        return LokiStream(settings, **kwargs)
    if settings.source is LogSource.VICTORIALOGS:
        from respawn.sources.logstream.victorialogs import VictoriaLogsStream

        return VictoriaLogsStream(settings, **kwargs)
    return None


__all__ = [
    "Cursor",
    "Line",
    "LogSourceError",
    "LogStream",
    "Poll",
    "Range",
    "Selector",
    "Status",
    "StreamKind",
    "open_stream",
]
