"""What a runbook's source lines must read as: the checks the catalogue's tests share, and their line makers.

A test module of this folder lists its cases in module-level lists and makes each list's test with
one of the makers below: `test_source_lines_are_decided = excerpts_decided(DECIDED)` is a test
parametrized over DECIDED, one test per case, named by the pattern the case names and its place.
"""

import re
from collections.abc import Callable, Sequence

import pytest

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass

# An Xid as the driver logs it for no process (nverror.h / gpu.c), with a made-up bus id.
XID = "[ 812.4] NVRM: Xid (PCI:0000:3b:00): {code}, pid='<unknown>', name=<unknown>, {text}"


def xid(code: int, text: str, bus: str = "0000:4e:00") -> str:
    """An Xid as the driver logs it for a process (kernel_rc.c), with a made-up bus id and pid."""
    return f"[ 7321.004] NVRM: Xid (PCI:{bus}): {code}, pid=5150, name=pt_main_thread, {text}"


def assert_decided(
    catalogue: Catalogue,
    matcher: Matcher,
    text: str,
    cls: FailureClass,
    layer: CauseLayer,
    pattern: str,
    *,
    implicated: bool | None = None,
    nodes: list[str] | None = None,
) -> None:
    """The whole excerpt reads as this class, layer and pattern; and, where the case says, blames these nodes."""
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer, got.pattern) == (cls, layer, pattern)
    if implicated is not None:
        assert got.node_implicated is implicated
    if nodes is not None:
        assert got.nodes == nodes


def assert_reason_outranks_the_requeue(
    catalogue: Catalogue, matcher: Matcher, reason: str, cls: FailureClass, pattern: str
) -> None:
    """slurmctld's log of a cloud node its resume program never brought up: the node's reason,
    then the requeue "due to failure of node" that node_failure reads on its own line. The
    excerpt reads as the reason, and blames no node."""
    text = (
        f"[2024-11-06T11:23:46.199] update_node: node cloud-node-1 reason set to: {reason}\n"
        "[2024-11-06T11:23:46.199] requeue job JobId=2 due to failure of node cloud-node-1\n"
        "[2024-11-06T11:23:46.199] update_node: node cloud-node-1 state set to DOWN"
    )
    assert matcher.failure(text.splitlines()[1]).failure_class is FailureClass.NODE_FAILURE
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.pattern, got.node_implicated) == (cls, pattern, False)


def assert_benign(catalogue: Catalogue, matcher: Matcher, text: str) -> None:
    """A benign look-alike: the excerpt reads as no failure (the pattern that took it, if not)."""
    got = classify_text(catalogue, matcher, text)
    assert got.failure_class is FailureClass.BENIGN, (got.failure_class, got.pattern)


def assert_line_decides(
    matcher: Matcher,
    line: str,
    cls: FailureClass,
    layer: CauseLayer,
    pattern: str,
    *,
    onset: Onset | None = None,
) -> None:
    """The one line's deciding match (not the excerpt's reading) is this pattern, class and layer, and onset."""
    hit = matcher.failure(line)
    assert hit is not None, line
    assert (hit.pattern, hit.failure_class, hit.cause_layer) == (pattern, cls, layer)
    if onset is not None:
        assert hit.onset is onset


def assert_no_failure(matcher: Matcher, line: str) -> None:
    """A look-alike no failure pattern decides (the patterns that matched it, if one does)."""
    assert matcher.failure(line) is None, [h.pattern for h in matcher.match(line)]


_PATTERN_ID = re.compile(r"[a-z0-9]+(-[a-z0-9]+)+")


def ids(cases: Sequence[object]) -> list[str]:
    """Parametrize ids: the first pattern id a case names after its text (else the text's first 40
    characters), then the case's place in its list."""
    out = []
    for i, case in enumerate(cases):
        fields = case if isinstance(case, tuple) else (case,)
        named = [f for f in fields[1:] if isinstance(f, str) and _PATTERN_ID.fullmatch(f)]
        out.append(f"{named[0] if named else str(fields[0])[:40]}-{i}")
    return out


Test = Callable[..., None]


def excerpts_decided(cases: Sequence[tuple]) -> Test:
    """A test per (excerpt, class, layer, pattern[, node implicated[, nodes named]]): how the whole excerpt reads."""

    @pytest.mark.parametrize("case", cases, ids=ids(cases))
    def test(catalogue: Catalogue, matcher: Matcher, case: tuple) -> None:
        text, cls, layer, pattern, *blame = case
        implicated, nodes = (*blame, None, None)[:2]
        assert_decided(catalogue, matcher, text, cls, layer, pattern, implicated=implicated, nodes=nodes)

    return test


def excerpts_decided_whatever_the_layer(cases: Sequence[tuple[str, FailureClass, str]]) -> Test:
    """A test per (excerpt, class, pattern): how the whole excerpt reads, its layer left unchecked."""

    @pytest.mark.parametrize(("text", "cls", "pattern"), cases, ids=ids(cases))
    def test(catalogue: Catalogue, matcher: Matcher, text: str, cls: FailureClass, pattern: str) -> None:
        got = classify_text(catalogue, matcher, text)
        assert got.failure_class is cls
        assert got.pattern == pattern

    return test


def lines_decided(cases: Sequence[tuple]) -> Test:
    """A test per (line, class, layer, pattern[, onset]): the one line's deciding match."""

    @pytest.mark.parametrize("case", cases, ids=ids(cases))
    def test(matcher: Matcher, case: tuple) -> None:
        line, cls, layer, pattern, *onset = case
        assert_line_decides(matcher, line, cls, layer, pattern, onset=onset[0] if onset else None)

    return test


def lines_decided_by_the_pattern(cases: Sequence[tuple[str, str]]) -> Test:
    """A test per (line, pattern): the one line's deciding match is the pattern, whatever its class."""

    @pytest.mark.parametrize(("line", "pattern"), cases, ids=ids(cases))
    def test(matcher: Matcher, line: str, pattern: str) -> None:
        hit = matcher.failure(line)
        assert hit is not None and hit.pattern == pattern

    return test


def lines_not_for_the_pattern(cases: Sequence[tuple[str, str]]) -> Test:
    """A test per (line, pattern): the pattern must not decide the line (another may, or none)."""

    @pytest.mark.parametrize(("line", "pattern"), cases, ids=ids(cases))
    def test(matcher: Matcher, line: str, pattern: str) -> None:
        hit = matcher.failure(line)
        assert hit is None or hit.pattern != pattern

    return test


def excerpts_blaming_the_named_node(cases: Sequence[tuple[str, str]]) -> Test:
    """A test per (excerpt, node): the node the text names is the one blamed."""

    @pytest.mark.parametrize(("text", "node"), cases, ids=ids(cases))
    def test(catalogue: Catalogue, matcher: Matcher, text: str, node: str) -> None:
        a = classify_text(catalogue, matcher, text)
        assert a.node_implicated and a.nodes == [node]

    return test


def excerpts_blaming_no_node(cases: Sequence[str]) -> Test:
    """A test per excerpt: echoes and peers' reports blame nobody's node."""

    @pytest.mark.parametrize("text", cases, ids=ids(cases))
    def test(catalogue: Catalogue, matcher: Matcher, text: str) -> None:
        a = classify_text(catalogue, matcher, text)
        assert not a.node_implicated and a.nodes == []

    return test


def look_alikes_staying_benign(cases: Sequence[str]) -> Test:
    """A test per look-alike: the whole excerpt reads benign."""

    @pytest.mark.parametrize("text", cases, ids=ids(cases))
    def test(catalogue: Catalogue, matcher: Matcher, text: str) -> None:
        assert_benign(catalogue, matcher, text)

    return test


def look_alikes_matching_no_failure(cases: Sequence[str]) -> Test:
    """A test per look-alike line: no failure pattern decides it."""

    @pytest.mark.parametrize("line", cases, ids=ids(cases))
    def test(matcher: Matcher, line: str) -> None:
        assert_no_failure(matcher, line)

    return test
