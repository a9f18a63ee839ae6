"""Loki as a log source, through its documented HTTP API (grafana.com/docs/loki/latest/reference/loki-http-api/):

- `GET /loki/api/v1/query_range`: `query` (a LogQL stream selector), `start`
  and `end` (nanoseconds since the epoch; start inclusive, end exclusive),
  `limit` (entries in the whole answer), `direction` (`forward`: oldest first,
  so a cut answer is complete up to its last time stamp; `backward` for the
  newest lines, the evidence). Answer: `{"status": "success", "data":
  {"resultType": "streams", "result": [{"stream": {labels}, "values": [["<ns>",
  "<line>"], ...]}]}}` (a third element per value, structured metadata, is
  ignored);
- `GET /loki/api/v1/series`: `match[]`, `start`, `end`; answer `{"status":
  "success", "data": [{labels}, ...]}`: which streams exist, for selectors that
  find no line;
- `X-Scope-OrgID` names the tenant of a multi-tenant Loki;
- `GET /loki/api/v1/tail` (a WebSocket) is not used: see the package docstring.

Loki's `limit` bounds a whole query, not a stream: one job printing faster than
a poll takes could fill the answer shared with other jobs. The limit is the
streams' bounds summed (at most `max_entries_per_query`); an answer that hit it
is complete up to its last time stamp for every stream in it (forward order),
so no line is lost; the streams that took their share or more are behind, and
asked for on their own from the next poll on; the others are asked for again, together
and without them, in the same poll (LogStream.poll), so a flood delays no other
job's line.
"""

import json
import re
from collections.abc import Sequence
from typing import Any

from respawn.sources.logstream import Answer, Line, LogSourceError, LogStream, Selector, Status, StreamKind

_QUERY_RANGE = "/loki/api/v1/query_range"
_SERIES = "/loki/api/v1/series"


class LokiStream(LogStream):
    def _headers(self) -> dict[str, str]:
        return {"X-Scope-OrgID": self.server.tenant} if self.server.tenant else {}

    def selector(self, kind: StreamKind, keys: Sequence[str]) -> str:
        """The LogQL stream selector of some streams of one kind: `{stream="kernel", node=~"a|b"}`."""
        parts = []
        pairs = self._matchers(kind, keys)
        for name, value in pairs[:-1]:
            parts.append(f"{name}={_quote(value)}")
        name = pairs[-1][0]
        if len(keys) == 1:
            parts.append(f"{name}={_quote(keys[0])}")
        else:
            parts.append(f"{name}=~{_quote('|'.join(re.escape(k) for k in keys))}")
        return "{" + ", ".join(parts) + "}"

    def _query(self, kind: StreamKind, keys: list[str], start_ns: int, end_ns: int, per_stream: int) -> Answer:
        limit = min(per_stream * len(keys), self.bounds.max_entries_per_query)
        streams = self._range(self.selector(kind, keys), start_ns, end_ns, limit, "forward")
        answer, newest = Answer(), start_ns
        label = self.key_label(kind)
        counts: dict[str, int] = {}
        for labels, lines in streams:
            key = labels.get(label)
            if key not in keys:
                continue  # not a stream asked for: a label value is compared, never trusted
            answer.lines.setdefault(key, []).extend(lines)
            counts[key] = counts.get(key, 0) + len(lines)
            newest = max([newest, *(line.at_ns for line in lines)])
        if sum(len(lines) for _, lines in streams) >= limit:
            # Forward: complete before its newest line, for every stream asked for. The streams
            # that took their share or more are asked for alone from the next poll on.
            answer.cut_at = dict.fromkeys(keys, newest)
            answer.full = {k for k, n in counts.items() if n * len(keys) >= limit}
        return answer

    def _newest(self, selector: Selector, start_ns: int, end_ns: int, limit: int) -> list[Line]:
        limit = min(limit, self.bounds.max_entries_per_query)
        streams = self._range(self.selector(selector.kind, [selector.key]), start_ns, end_ns, limit, "backward")
        label = self.key_label(selector.kind)
        return [line for labels, lines in streams if labels.get(label) == selector.key for line in lines]

    def _existing(self, kind: StreamKind, keys: list[str], start_ns: int, end_ns: int) -> set[str]:
        params = [("match[]", self.selector(kind, keys)), ("start", str(start_ns)), ("end", str(end_ns))]
        data = _success(self._get(_SERIES, params), _SERIES)
        if not isinstance(data, list):
            raise LogSourceError(Status.UNAVAILABLE, f"{_SERIES}: not a list of series")
        label = self.key_label(kind)
        return {s[label] for s in data if isinstance(s, dict) and isinstance(s.get(label), str)} & set(keys)

    def _range(
        self, query: str, start_ns: int, end_ns: int, limit: int, direction: str
    ) -> list[tuple[dict[str, str], list[Line]]]:
        params = [
            ("query", query),
            ("start", str(start_ns)),
            ("end", str(end_ns)),
            ("limit", str(max(1, limit))),
            ("direction", direction),
        ]
        data = _success(self._get(_QUERY_RANGE, params), _QUERY_RANGE)
        if (
            not isinstance(data, dict)
            or data.get("resultType") != "streams"
            or not isinstance(data.get("result"), list)
        ):
            raise LogSourceError(Status.UNAVAILABLE, f"{_QUERY_RANGE}: not a streams result")
        out = []
        for stream in data["result"]:
            if not isinstance(stream, dict) or not isinstance(stream.get("stream"), dict):
                continue
            labels = {k: v for k, v in stream["stream"].items() if isinstance(k, str) and isinstance(v, str)}
            lines = []
            for value in stream.get("values") or ():
                if not (isinstance(value, list) and len(value) >= 2):
                    continue
                at, text = value[0], value[1]
                if isinstance(at, str) and at.isdecimal() and len(at) <= 20 and isinstance(text, str):
                    lines.append(Line(int(at), self._cut(text)))
            out.append((labels, lines))
        return out


def _success(body: bytes, path: str) -> Any:
    try:
        doc = json.loads(body)
    except ValueError:
        raise LogSourceError(Status.UNAVAILABLE, f"{path}: not JSON") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        raise LogSourceError(
            Status.UNAVAILABLE, f"{path}: status {str(doc.get('status'))[:40] if isinstance(doc, dict) else '?'}"
        )
    return doc.get("data")


def _quote(value: str) -> str:
    """A LogQL string literal (Go's double-quoted form): the value is data, never syntax."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
