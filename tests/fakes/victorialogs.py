"""A fake of VictoriaLogs' HTTP query API, written from its documentation
(docs.victoriametrics.com/victorialogs/querying/ and .../victorialogs/logsql/),
not from its code.

Implemented:

- `GET /select/logsql/query` with `query`, `start`, `end` (RFC 3339, up to
  nanoseconds; both ends inclusive). The LogsQL taken is the part the client
  writes: exact filters `field:="value"` and `field:in("a", "b")` joined by
  spaces (AND), then the pipes `sort by (_time) limit N partition by (field)`,
  `sort by (_time desc) limit N` and `fields a, b, c`; anything else is a 400.
  The answer is JSON lines, one object per entry, every value a string, `_time`
  in RFC 3339 with nanoseconds, `_stream` as `{a="b",...}`; without a sort pipe
  in no particular order, as the documentation warns;
- `GET /select/logsql/field_values` with `query`, `field`, `start`, `end`:
  `{"values": [{"value": "...", "hits": N}]}`.

- `POST /insert/jsonline` (docs.victoriametrics.com/victorialogs/data-ingestion/):
  one JSON object per line, every field a string; `_msg_field` and
  `_time_field` name the message and time fields (default `_msg`, `_time`;
  the time RFC 3339, or absent for the time of ingestion), `_stream_fields`
  is recorded; the entries stored, `200` (tests may also call `push` to store
  an entry directly).

Not implemented: the other ingestion formats, word and phrase filters, the rest of LogsQL's pipes and stats, `/select/logsql/tail`
(the client does not use it), tenants (`AccountID` is recorded, not enforced),
stream fields as such (every field is filterable; `stream_fields` names the
ones `_stream` shows).

For the failure modes, `tests/fakes/_http.py`; `out_of_order` reverses the
sorted answer's order within each partition (a client must sort).
"""

import json
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime

from tests.fakes._http import Answer, FakeServer, Request

_QUOTED = r'"(?:[^"\\]|\\.)*"'
_EXACT = re.compile(rf"([A-Za-z_][A-Za-z0-9_.]*):=({_QUOTED})")
_IN = re.compile(rf"([A-Za-z_][A-Za-z0-9_.]*):in\(((?:{_QUOTED})(?:\s*,\s*{_QUOTED})*)\)")
_SORT = re.compile(r"sort by \(_time( desc)?\) limit (\d+)(?: partition by \(([A-Za-z_][A-Za-z0-9_.]*)\))?")
_FIELDS = re.compile(r"fields ([A-Za-z_][A-Za-z0-9_.]*(?:\s*,\s*[A-Za-z_][A-Za-z0-9_.]*)*)")
_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$")


class FakeVictoriaLogs(FakeServer):
    def __init__(self, stream_fields: tuple[str, ...] = ("job_id", "node", "stream")) -> None:
        super().__init__()
        self.stream_fields = stream_fields
        self.out_of_order = False
        self.entries: list[tuple[dict[str, str], int, str]] = []

    def push(self, fields: Mapping[str, str], msg: str, at_ns: int) -> None:
        self.entries.append((dict(fields), at_ns, msg))

    def answer(self, request: Request) -> Answer:
        if request.path == "/select/logsql/query":
            return self._query(request)
        if request.path == "/select/logsql/field_values":
            return self._field_values(request)
        if request.path == "/insert/jsonline" and request.method == "POST":
            return self._ingest(request)
        return Answer(404, b"unsupported path\n", "text/plain")

    def _select(self, request: Request, filters: str) -> list[tuple[int, dict[str, str], int, str]]:
        start = _ns(request.param("start") or "1970-01-01T00:00:00Z")
        end = _ns(request.param("end") or "2262-01-01T00:00:00Z")
        matchers = _filters(filters)
        return [
            (n, fields, at, msg)
            for n, (fields, at, msg) in enumerate(self.entries)
            if start <= at <= end and all(fields.get(name, "") in values for name, values in matchers)
        ]

    def _query(self, request: Request) -> Answer:
        filters, *pipes = [p.strip() for p in (request.param("query") or "").split(" | ")]
        hits = self._select(request, filters)
        keep: list[str] | None = None
        for pipe in pipes:
            if sort := _SORT.fullmatch(pipe):
                desc, limit, partition = sort.group(1) is not None, int(sort.group(2)), sort.group(3)
                hits.sort(key=lambda h: (h[2], h[0]), reverse=desc)
                groups: dict[str, list[tuple[int, dict[str, str], int, str]]] = {}
                for hit in hits:
                    groups.setdefault(hit[1].get(partition, "") if partition else "", []).append(hit)
                hits = []
                for group in groups.values():
                    group = group[:limit]
                    hits += reversed(group) if self.out_of_order else group
            elif fields := _FIELDS.fullmatch(pipe):
                keep = [f.strip() for f in fields.group(1).split(",")]
            else:
                raise ValueError(f"cannot parse pipe: {pipe[:80]}")
        lines = []
        for _, fields, at, msg in hits:
            entry = {
                "_msg": msg,
                "_stream": "{" + ",".join(f'{k}="{fields[k]}"' for k in self.stream_fields if k in fields) + "}",
                "_time": _rfc3339(at),
                **fields,
            }
            if keep is not None:
                entry = {k: entry[k] for k in keep if k in entry}
            lines.append(json.dumps(entry))
        return Answer(200, "".join(line + "\n" for line in lines).encode(), "application/stream+json")

    def _ingest(self, request: Request) -> Answer:
        msg_field, time_field = request.param("_msg_field") or "_msg", request.param("_time_field") or "_time"
        entries = []
        for raw in request.body.decode().splitlines():
            if not raw.strip():
                continue
            doc = json.loads(raw)
            if not isinstance(doc, dict):
                raise ValueError("cannot parse JSON line: not an object")
            at = _ns(doc.pop(time_field)) if time_field in doc else time.time_ns()
            msg = str(doc.pop(msg_field, ""))
            entries.append(({str(k): str(v) for k, v in doc.items()}, msg, at))
        for fields, msg, at in entries:
            self.push(fields, msg, at)
        return Answer(200, b"")

    def _field_values(self, request: Request) -> Answer:
        name = request.param("field") or ""
        counts: dict[str, int] = {}
        for _, fields, _, _ in self._select(request, request.param("query") or ""):
            if name in fields:
                counts[fields[name]] = counts.get(fields[name], 0) + 1
        body = {"values": [{"value": v, "hits": n} for v, n in sorted(counts.items())]}
        return Answer(200, json.dumps(body).encode())


def _filters(text: str) -> list[tuple[str, set[str]]]:
    out, at, text = [], 0, text.strip()
    while at < len(text):
        if match := _EXACT.match(text, at):
            out.append((match.group(1), {json.loads(match.group(2))}))
        elif match := _IN.match(text, at):
            out.append((match.group(1), set(json.loads(f"[{match.group(2)}]"))))
        else:
            raise ValueError(f"cannot parse filter at {at}: {text[at : at + 40]}")
        at = match.end()
        while at < len(text) and text[at] == " ":
            at += 1
    if not out:
        raise ValueError("the fake needs at least one filter")
    return out


def _ns(text: str) -> int:
    match = _TIME.match(text)
    if not match:
        raise ValueError(f"cannot parse time: {text[:40]}")
    at = datetime.fromisoformat(match.group(1)).replace(tzinfo=UTC)
    return int(at.timestamp()) * 1_000_000_000 + int((match.group(2) or "0").ljust(9, "0"))


def _rfc3339(ns: int) -> str:
    seconds, frac = divmod(ns, 1_000_000_000)
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S") + f".{frac:09d}Z"
