"""The block prefilter reads lines as printed and long texts in parts: no answer may differ
from reading every line on its own, untagged (the way `classify_text` read them before)."""

import json
import sys
from pathlib import Path

import pytest
import re2

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import _BLOCK_CHARS, Matcher, _tag_tolerant
from respawn.attribution.runbook import Catalogue
from respawn.sources.joblog import RANK_TAG_RE2, rank_tag, untagged
from tests.unit.test_matcher import FAILURES, NEAR_MISSES

ROOT = Path(__file__).resolve().parents[2]
# Every labelled corpus there is, the held-back ones too: only equality is asserted, and a
# failure names the excerpt by its place, never by its text.
CORPORA = [*sorted((ROOT / "benchmarks" / "corpus").glob("*.jsonl")), ROOT.parent / "shared" / "corpus" / "dev.jsonl"]
TAGS = ("", "[rank3]:", "[rank0]: ", "12: ", "  [rank1]:", " 7: ", "\t[rank123456]:")
HEALTHY = "[rank{r}]: step {i} loss 1.2345 tokens/s 182133"


def corpus_lines(corpus: Path | None) -> list[tuple[str, str]]:
    """(where, line) for every line of `corpus` if it is there, or of the matcher tests' lines."""
    if corpus is None:
        return [(f"test_matcher line {k}", line) for k, line in enumerate([f for f, _ in FAILURES] + NEAR_MISSES)]
    if not corpus.exists():
        return []
    rows = (json.loads(raw) for raw in corpus.read_text().splitlines() if raw.strip())
    return [
        (f"{corpus.name} excerpt {n} line {k}", line)
        for n, row in enumerate(rows)
        for k, line in enumerate(row["text"].splitlines())
    ]


def whole(matcher: Matcher, monkeypatch: pytest.MonkeyPatch) -> Matcher:
    """`matcher` reading any text as one region: every line split and scanned, the reference."""
    monkeypatch.setattr(matcher, "regions", lambda text, lead: iter([text] if text else []))
    return matcher


def test_the_tag_fragment_takes_every_space_and_digit_python_does():
    tolerant = re2.compile(RANK_TAG_RE2)
    for code in range(sys.maxunicode + 1):
        c = chr(code)
        if c.isspace() and c != "\n":
            assert tolerant.match(f"{c}[rank1]:"), hex(code)
        if c.isdecimal():
            assert tolerant.match(f"[rank{c}]:") and tolerant.match(f"{c}: "), hex(code)


@pytest.mark.parametrize(
    "line", ["[rank3]:x", "  [rank12]: x", "7: x", "\u3000\u00a0 42: x", "[rank٣]:x", "[rank123456]:x"]
)
def test_the_tag_fragment_matches_every_tag_rank_tag_strips(line: str):
    _, end = rank_tag(line)
    assert end > 0 and re2.compile(RANK_TAG_RE2).fullmatch(line[:end])


@pytest.mark.parametrize(
    "regex", [r"[^a]x", r"\^x", r"[]^]x", r"[^]^]x", r"\p{^Greek}x", r"\Q^\Ex", r"[[:^space:]^]x", r"a\\[^^]"]
)
def test_tag_tolerance_leaves_what_is_no_anchor(regex: str):
    assert _tag_tolerant(regex) == regex


def test_tag_tolerance_lets_a_tag_stand_after_each_anchor():
    tolerant = re2.compile(_tag_tolerant(r"(?:^|x)\s*Killed$|[\]]^?y|^\^z"))
    assert tolerant.search("[rank3]: Killed") and tolerant.search(" 4: ^z") and tolerant.search("^z")
    assert not tolerant.search("[rank3]: Not Killed?")


# One case a corpus, so that the parallel runner spreads them. Every corpus line is read twice by
# a DFA that has not seen it (1-2 ms a line, growing with the patterns and the corpora): the
# corpora's cases are marked `corpus`, which `make test` runs and `make test-fast` leaves out.
@pytest.mark.parametrize(
    "corpus",
    [pytest.param(None, id="matcher tests"), *(pytest.param(c, id=c.name, marks=pytest.mark.corpus) for c in CORPORA)],
)
def test_scan_reads_each_tagged_line_as_failure_reads_it_untagged(matcher: Matcher, corpus: Path | None):
    for where, line in corpus_lines(corpus):
        for tag in TAGS:
            printed = tag + line
            hit = matcher.failure(untagged(printed))
            assert list(matcher.scan([printed])) == ([(0, hit)] if hit else []), f"{where}, tag {tag!r}"


def long_log(inserts: dict[int, str], count: int = 2000) -> str:
    lines = [HEALTHY.format(r=i % 8, i=i) for i in range(count)]
    for at, line in sorted(inserts.items(), reverse=True):
        lines[at:at] = line.splitlines()
    return "\n".join(lines)


def test_regions_hold_every_failure_line_with_the_lines_before_it(matcher: Matcher):
    inserts = {0: "Killed", 150: "[rank2]: KeyError: 'mask'", 151: "Killed", 5000: "MemoryError", 9999: "Killed"}
    text = long_log(inserts, count=10_000)
    lines = text.splitlines()
    failing = [i for i, line in enumerate(lines) if matcher.failure(untagged(line))]
    assert len(failing) == 5
    covered: dict[int, int] = {}  # line -> lines of its region before it
    at = first = 0
    for region in matcher.regions(text, lead=64):
        start = text.index(region, at)
        assert start >= at and (start == 0 or text[start - 1] == "\n")  # in order, apart, from a line's start
        first = text.count("\n", 0, start)
        covered |= {first + k: k for k in range(len(region.splitlines()))}
        at = start + len(region)
    assert all(i in covered and (covered[i] >= 64 or covered[i] == i) for i in failing)
    assert len(covered) < len(lines) / 4  # the healthy rest is never split


def test_a_frame_cut_by_a_block_edge_is_still_a_frame(catalogue: Catalogue, matcher: Matcher):
    header = '[rank1]:   File "/opt/train.py", line 7, in step'
    source = "[rank1]:     raise RuntimeError('CUDA error: an illegal memory access was encountered')"
    pad = "x" * (_BLOCK_CHARS - len(header) - 1)  # the header's newline ends the first block
    text = "\n".join([pad, header, "[rank0]: step 12 loss 0.3", source, "[rank1]: KeyError: 'mask'"])
    assert list(matcher.regions(text, lead=0)) == [text[text.index("[rank0]") :]]
    a = classify_text(catalogue, matcher, text)
    assert a.pattern == "python-keyerror"


def test_a_long_text_gets_the_answer_of_its_lines_read_as_one(
    catalogue: Catalogue, matcher: Matcher, monkeypatch: pytest.MonkeyPatch
):
    texts = [
        long_log({}),
        long_log({130: 'Traceback (most recent call last):\n  File "t.py", line 1\n    x()\nValueError: bad'}),
        long_log(
            {128: "[rank4]: torch.OutOfMemoryError: CUDA out of memory.", 1500: "NVRM: Xid (PCI:0000:3b:00): 79, x"}
        ),
        long_log({700: "gpu-003:1:1 [3] NCCL WARN NET/IB : Got completion from peer 10.0.0.1<4000> with error 12"}),
        # tqdm's redraws: "\r" cuts lines too (str.splitlines); and texts with no "\n" at all
        long_log({300: " 10%|█| 1/10\r 20%|██| 2/10\rKilled\r 30%|███| 3/10"}),
        "\r".join(long_log({1000: "Killed"}).splitlines()),
        "step 1\r\nKilled\r\n" * 3000,
        "\x85".join(["step 1"] * 5000 + ["Killed"]),
        "",
        "\n\n\n",
    ]
    found = [classify_text(catalogue, matcher, t) for t in texts]
    reference = whole(matcher, monkeypatch)
    assert found == [classify_text(catalogue, reference, t) for t in texts]
    assert [a.failure_class.value for a in found] == [
        "benign", "app_error", "gpu_hardware", "interconnect", "host_oom", "host_oom", "host_oom", "host_oom",
        "benign", "benign",
    ]  # fmt: skip
