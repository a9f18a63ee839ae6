"""VictoriaLogs as a log source, through its documented HTTP API
(docs.victoriametrics.com/victorialogs/querying/, LogsQL: .../victorialogs/logsql/):

- `GET /select/logsql/query`: `query` (LogsQL), `start` and `end` (RFC 3339,
  nanoseconds kept). The answer is JSON lines, one object per log entry, its
  fields as strings: `_time` (RFC 3339), `_msg`, `_stream` and the others.
  Entries come in no particular order unless the query sorts them; here it
  does, and bounds each stream on its own: `| sort by (_time) limit N partition
  by (job_id)` (the sort pipe's per-group limit, VictoriaLogs v1.1.0 on), then
  `| fields _time, job_id, _msg` keeps the answer to what is read. The newest
  lines of one stream, for evidence: `| sort by (_time desc) limit N`;
- `GET /select/logsql/field_values`: `query`, `field`, `start`, `end`; answer
  `{"values": [{"value": "...", "hits": N}]}`: which streams exist, for
  selectors that find no line;
- `AccountID` names the tenant of a multi-tenant VictoriaLogs;
- `/select/logsql/tail` (live tailing, a response that never ends) is not used:
  see the package docstring.

Filters are exact (`field:="value"`, `field:in("1", "2")`), every value a
quoted string: nothing a job controls becomes LogsQL syntax.
"""

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

from respawn.sources.logstream import Answer, Line, LogSourceError, LogStream, Selector, Status, StreamKind

_QUERY = "/select/logsql/query"
_FIELD_VALUES = "/select/logsql/field_values"
_RFC3339 = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")


class VictoriaLogsStream(LogStream):
    def _headers(self) -> dict[str, str]:
        return {"AccountID": self.server.tenant} if self.server.tenant else {}

    def filters(self, kind: StreamKind, keys: list[str]) -> str:
        """The LogsQL filters of some streams of one kind: `stream:="kernel" node:in("a", "b")`."""
        pairs = self._matchers(kind, keys)
        parts = [f"{name}:={_quote(value)}" for name, value in pairs[:-1]]
        name = pairs[-1][0]
        if len(keys) == 1:
            parts.append(f"{name}:={_quote(keys[0])}")
        else:
            parts.append(f"{name}:in({', '.join(_quote(k) for k in keys)})")
        return " ".join(parts)

    def _query(self, kind: StreamKind, keys: list[str], start_ns: int, end_ns: int, per_stream: int) -> Answer:
        label = self.key_label(kind)
        query = (
            f"{self.filters(kind, keys)} | sort by (_time) limit {per_stream} partition by ({label})"
            f" | fields _time, {label}, _msg"
        )
        answer = Answer()
        for key, line in self._entries(query, label, start_ns, end_ns):
            if key in keys:  # a label value is compared, never trusted
                answer.lines.setdefault(key, []).append(line)
        for key, lines in answer.lines.items():
            if len(lines) >= per_stream:  # its first `per_stream` by time: complete before the last
                answer.cut_at[key] = max(line.at_ns for line in lines)
                answer.full.add(key)
        return answer

    def _newest(self, selector: Selector, start_ns: int, end_ns: int, limit: int) -> list[Line]:
        label = self.key_label(selector.kind)
        query = (
            f"{self.filters(selector.kind, [selector.key])} | sort by (_time desc) limit {limit}"
            f" | fields _time, {label}, _msg"
        )
        return [line for key, line in self._entries(query, label, start_ns, end_ns) if key == selector.key]

    def _existing(self, kind: StreamKind, keys: list[str], start_ns: int, end_ns: int) -> set[str]:
        label = self.key_label(kind)
        params = [
            ("query", self.filters(kind, keys)),
            ("field", label),
            ("start", format_ns(start_ns)),
            ("end", format_ns(end_ns)),
        ]
        try:
            doc = json.loads(self._get(_FIELD_VALUES, params))
        except ValueError:
            raise LogSourceError(Status.UNAVAILABLE, f"{_FIELD_VALUES}: not JSON") from None
        values = doc.get("values") if isinstance(doc, dict) else None
        if not isinstance(values, list):
            raise LogSourceError(Status.UNAVAILABLE, f"{_FIELD_VALUES}: no values")
        return {v["value"] for v in values if isinstance(v, dict) and isinstance(v.get("value"), str)} & set(keys)

    def _entries(self, query: str, label: str, start_ns: int, end_ns: int) -> list[tuple[str, Line]]:
        params = [("query", query), ("start", format_ns(start_ns)), ("end", format_ns(end_ns))]
        body = self._get(_QUERY, params)
        out = []
        for raw in body.splitlines():
            if not raw.strip():
                continue
            try:
                entry: Any = json.loads(raw)
            except ValueError:
                raise LogSourceError(Status.UNAVAILABLE, f"{_QUERY}: a line of the answer is not JSON") from None
            if not isinstance(entry, dict):
                continue
            key, text, at = entry.get(label), entry.get("_msg", ""), entry.get("_time")
            if not (isinstance(key, str) and isinstance(text, str) and isinstance(at, str)):
                continue
            at_ns = parse_ns(at)
            if at_ns is not None:
                out.append((key, Line(at_ns, self._cut(text))))
        return out


def format_ns(ns: int) -> str:
    """RFC 3339 in UTC with all nine digits: `2026-12-01T17:25:04.123456789Z`."""

    seconds, frac = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"


def parse_ns(text: str) -> int | None:
    """Nanoseconds since the epoch of an RFC 3339 time stamp (datetime keeps only microseconds)."""

    match = _RFC3339.match(text[:40])
    if not match:
        return None
    year, month, day, hour, minute, second, frac, zone = match.groups()
    try:
        at = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second), tzinfo=UTC)
    except ValueError:
        return None
    if zone != "Z":
        sign = 1 if zone[0] == "+" else -1
        at -= sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return int(at.timestamp()) * 1_000_000_000 + int((frac or "0").ljust(9, "0"))


def _quote(value: str) -> str:
    """A LogsQL quoted string: the value is data, never syntax."""
    return json.dumps(value)
