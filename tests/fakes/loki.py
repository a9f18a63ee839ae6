"""A fake of Grafana Loki's HTTP query API, written from its documentation
(grafana.com/docs/loki/latest/reference/loki-http-api/), not from its code.

Implemented:

- `GET /loki/api/v1/query_range` for log queries: `query` a stream selector of
  label matchers (`=`, `!=`, `=~`, `!~`; Go-quoted values; regexes anchored at
  both ends, as Loki's are) and nothing after it (no line filters, no pipeline:
  anything else is a 400, as a query Loki cannot parse is), `start` inclusive
  and `end` exclusive in nanoseconds, `limit` over the whole answer (more than
  `max_entries` is refused, like Loki's `max_entries_limit_per_query`),
  `direction` forward or backward. The answer is `{"status": "success",
  "data": {"resultType": "streams", "result": [{"stream": {...}, "values":
  [["<ns>", "<line>"], ...]}], "stats": {}}}`; the entries are the first (or
  last) `limit` of all matching streams in time order, grouped by stream;
- `GET /loki/api/v1/series` with `match[]`, `start`, `end`: the label sets of
  streams with entries in the range.

- `POST /loki/api/v1/push` with a JSON body `{"streams": [{"stream": {labels},
  "values": [["<ns>", "<line>"], ...]}]}` (Content-Type application/json): the
  entries stored, `204 No Content`; a body that is not that is a 400 (tests
  may also call `push` to store an entry directly).

Not implemented: the push endpoint's protobuf + snappy body, metric
queries, `/loki/api/v1/tail` (the WebSocket the client does not use), line
filters and parsers, tenants (the `X-Scope-OrgID` header is recorded, not
enforced), query splitting, caching, and Loki's own de-duplication of
identical entries (tests push what they mean).

For the failure modes, `tests/fakes/_http.py`; `out_of_order` answers each
stream's entries newest first, as a client must not assume they are sorted.
"""

import json
import re
from collections.abc import Mapping

from tests.fakes._http import Answer, FakeServer, Request

_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')


class FakeLoki(FakeServer):
    def __init__(self, max_entries: int = 5000) -> None:
        super().__init__()
        self.max_entries = max_entries
        self.out_of_order = False
        self.entries: list[tuple[dict[str, str], int, str]] = []

    def push(self, labels: Mapping[str, str], line: str, at_ns: int) -> None:
        self.entries.append((dict(labels), at_ns, line))

    def answer(self, request: Request) -> Answer:
        if request.path == "/loki/api/v1/query_range":
            return self._query_range(request)
        if request.path == "/loki/api/v1/series":
            return self._series(request)
        if request.path == "/loki/api/v1/push" and request.method == "POST":
            return self._ingest(request)
        return Answer(404, b"404 page not found\n", "text/plain")

    def _query_range(self, request: Request) -> Answer:
        matchers = _parse(request.param("query") or "")
        start, end = int(request.param("start") or 0), int(request.param("end") or 0)
        limit = int(request.param("limit") or 100)
        if limit > self.max_entries:
            raise ValueError(
                f"max entries limit per query exceeded, limit > max_entries_limit ({limit} > {self.max_entries})"
            )
        forward = (request.param("direction") or "backward") == "forward"
        hits = [(n, e) for n, e in enumerate(self.entries) if start <= e[1] < end and _matches(matchers, e[0])]
        hits.sort(key=lambda h: (h[1][1], h[0]), reverse=not forward)
        hits = hits[:limit]
        streams: dict[tuple[tuple[str, str], ...], list[list[str]]] = {}
        for _, (labels, at, line) in hits:
            streams.setdefault(tuple(sorted(labels.items())), []).append([str(at), line])
        result = []
        for labels, values in streams.items():
            if self.out_of_order:
                values = sorted(values, key=lambda v: int(v[0]), reverse=True)
            result.append({"stream": dict(labels), "values": values})
        body = {"status": "success", "data": {"resultType": "streams", "result": result, "stats": {}}}
        return Answer(200, json.dumps(body).encode())

    def _ingest(self, request: Request) -> Answer:
        try:
            streams = json.loads(request.body)["streams"]
            entries = [(dict(s["stream"]), int(at), line) for s in streams for at, line, *_ in s["values"]]
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"loghttp.PushRequest: {exc}") from None
        for labels, at, line in entries:
            self.push(labels, line, at)
        return Answer(204, b"")

    def _series(self, request: Request) -> Answer:
        start, end = int(request.param("start") or 0), int(request.param("end") or 0)
        found: dict[tuple[tuple[str, str], ...], None] = {}
        for selector in (v for k, v in request.params if k == "match[]"):
            matchers = _parse(selector)
            for labels, at, _ in self.entries:
                if start <= at <= end and _matches(matchers, labels):
                    found[tuple(sorted(labels.items()))] = None
        body = {"status": "success", "data": [dict(labels) for labels in found]}
        return Answer(200, json.dumps(body).encode())


def _parse(query: str) -> list[tuple[str, str, str]]:
    """The matchers of a stream selector `{a="b", c=~"d|e"}`; ValueError for anything else."""
    query = query.strip()
    if not (query.startswith("{") and query.endswith("}")):
        raise ValueError(f"parse error: the fake takes a stream selector only: {query[:80]}")
    body, matchers, at = query[1:-1], [], 0
    while at < len(body):
        match = _MATCHER.match(body, at)
        if not match:
            raise ValueError(f"parse error at {at}: {body[at : at + 40]}")
        name, op, raw, _ = match.groups()
        matchers.append((name, op, re.sub(r"\\(.)", lambda m: {"n": "\n"}.get(m.group(1), m.group(1)), raw)))
        at = match.end()
    if not matchers:
        raise ValueError("parse error: queries require at least one matcher")
    return matchers


def _matches(matchers: list[tuple[str, str, str]], labels: Mapping[str, str]) -> bool:
    for name, op, value in matchers:
        have = labels.get(name, "")
        ok = {
            "=": have == value,
            "!=": have != value,
            "=~": re.fullmatch(value, have) is not None,
            "!~": re.fullmatch(value, have) is None,
        }[op]
        if not ok:
            return False
    return True
