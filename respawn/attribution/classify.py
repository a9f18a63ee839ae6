"""`respawn classify`: log excerpts in, attributions out, as JSON Lines.

The contract (../shared/taxonomy.md): each input line is an object with `id` and
`text`; each output line answers the input line at the same position. A line
that is not such an object gets `{"id": ..., "error": ...}` and the run goes on;
only input that cannot be read at all makes the exit status non-zero.
"""

import json
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue

_ERROR_INPUT = 400  # characters of a bad input line echoed back at most, in messages


def run(inp: TextIO, out: TextIO, catalogue: Catalogue | None = None) -> int:
    catalogue = catalogue if catalogue is not None else Catalogue.load()
    matcher = Matcher.from_catalogue(catalogue)
    lines = _lines(inp)
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return 0
        except (OSError, UnicodeDecodeError) as exc:  # reading only: a failed write is not bad input
            print(f"respawn classify: cannot read input: {exc}", file=sys.stderr)
            return 1
        out.write(json.dumps(_answer(catalogue, matcher, raw)) + "\n")


def _lines(inp: TextIO) -> Iterator[str]:
    """The input's lines. From a byte stream (standard input) each line is decoded
    on its own, so one line of bad UTF-8 is one malformed line, not a dead run."""
    buffer = getattr(inp, "buffer", None)
    if buffer is None:
        yield from inp
        return
    for raw in buffer:
        yield raw.decode("utf-8", "replace")


def _answer(catalogue: Catalogue, matcher: Matcher, raw: str) -> dict[str, Any]:
    try:
        item = json.loads(raw)
    except ValueError as exc:
        return {"id": None, "error": f"not JSON: {exc}"}
    if not isinstance(item, dict):
        return {"id": None, "error": f"not a JSON object: {raw.strip()[:_ERROR_INPUT]}"}
    ident = item.get("id")
    if ident is None or isinstance(ident, (dict, list)):
        return {"id": None, "error": "missing or non-scalar id"}
    text = item.get("text")
    if not isinstance(text, str):
        return {"id": ident, "error": "missing or non-string text"}
    a = classify_text(catalogue, matcher, text)
    return {
        "id": ident,
        "failure_class": a.failure_class.value,
        "cause_layer": a.cause_layer.value,
        "node_implicated": a.node_implicated,
        "nodes": a.nodes,
        "recoverable_by_restart": a.recoverable_by_restart,
        "pattern": a.pattern,
    }
