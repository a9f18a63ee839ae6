"""One combined matcher over every runbook pattern.

Almost every line a training job prints is healthy, so the cost that matters is
the cost of a line that matches nothing: one scan by an RE2 set holding every
failure pattern at once. Only the patterns the set reports are then run alone,
to pick up their groups (host, Xid code, PCI bus id). Benign patterns sit in a
second set, consulted only for a line that hit a failure pattern, since all
they do is veto. A whole log goes faster still (`scan`): a third set scans blocks
of lines joined by newlines, as printed, and only a block with a hit is read line
by line. Its patterns let a rank tag (`[rank3]:`, `3: `) stand after each `^`, so
no line has to be stripped of its tag before the blocks are scanned. A whole text
(`regions`) is cut at newlines into blocks of about 16 KB first, and only the
blocks with a hit are split into lines at all: most of a log's lines are never
touched by Python code.

RE2 runs in time linear in the line, whatever the patterns and the input: a
user printing a 100 KB line cannot stall detection.
"""

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import re2

from respawn.attribution.runbook import Catalogue, NodeRule, Onset, Veto, quiet_options
from respawn.sources.joblog import RANK_TAG_RE2, untagged
from respawn.wire.taxonomy import CauseLayer, FailureClass

# The DFA a set builds over ~100 patterns can outgrow RE2's default 8 MiB on long,
# varied lines; RE2 then reports "no match" instead of failing loudly. 64 MiB per
# set keeps the DFA in memory for any line the log reader lets through.
_SET_MEMORY = 64 << 20
# Lines per block in `scan`: few, so that a log dense with failure-looking lines (one in
# a hundred) still reads most of its lines only in blocks; a whole text is first cut by
# `regions`, in blocks of about 128 lines.
_BLOCK = 16
_BLOCK_CHARS = 16_384
# Where str.splitlines cuts a line besides "\n" (and "\r\n"): a block that holds one is
# cut into lines, as the attribution reads them, before its hits are believed.
_OTHER_BREAKS = r"[\r\x0b\x0c\x1c-\x1e\x85\x{2028}\x{2029}]"
_POSIX_CLASS = re2.compile(r"\[:\^?[a-z]+:\]")  # inside a character class: [[:^space:]]


@dataclass(frozen=True, slots=True)
class Hit:
    """A pattern that matched a line, with the runbook's defaults already applied."""

    pattern: str  # the runbook pattern id
    failure_class: FailureClass
    cause_layer: CauseLayer
    node_rule: NodeRule
    recoverable_by_restart: bool | None
    priority: int
    groups: Mapping[str, str]  # named groups that took part in the match
    onset: Onset = Onset.SUSPECTED  # whether the line alone confirms an interruption

    @property
    def benign(self) -> bool:
        return self.failure_class is FailureClass.BENIGN


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: str
    failure_class: FailureClass
    cause_layer: CauseLayer
    node_rule: NodeRule
    recoverable_by_restart: bool | None
    priority: int
    regex: str
    compiled: re2._Regexp
    xid_codes: frozenset[int] | None
    onset: Onset
    vetoes: Veto

    def hit(self, line: str) -> Hit | None:
        found = self.compiled.search(line)
        if found is None:
            return None
        groups = {k: v for k, v in found.groupdict().items() if v is not None}
        if self.xid_codes is not None and _xid(groups) not in self.xid_codes:
            return None
        return Hit(
            self.pattern,
            self.failure_class,
            self.cause_layer,
            self.node_rule,
            self.recoverable_by_restart,
            self.priority,
            MappingProxyType(groups),
            self.onset,
        )


@functools.lru_cache(maxsize=4096)
def _compiled(regex: str) -> re2._Regexp:
    return re2.compile(regex, options=quiet_options())


def _xid(groups: Mapping[str, str]) -> int | None:
    # Bounded before int(): a hostile line may carry a 100 KB run of digits.
    xid = groups.get("xid", "")
    return int(xid) if xid.isdigit() and len(xid) <= 9 else None


# Compiled once per process and reused by every matcher built over the same patterns (a
# configuration reload, the what-if command's catalogues, the tests' services): compiling the
# three sets and their patterns is most of the cost of a matcher. RE2 objects are immutable once
# compiled and safe to share between threads. Three kept: one matcher's sets, so a process holds
# no DFA memory (up to _SET_MEMORY a set) for a catalogue it has moved on from.
@functools.lru_cache(maxsize=3)
def _search_set(regexes: tuple[str, ...]) -> re2.Set | None:
    if not regexes:
        return None
    options = quiet_options()
    options.max_mem = _SET_MEMORY
    found = re2.Set.SearchSet(options)
    for regex in regexes:
        # Multi-line mode changes nothing within one line, and lets `^` and `$`
        # still find a line's edges inside a block of lines.
        found.Add(f"(?m){regex}")
    found.Compile()
    return found


@functools.lru_cache(maxsize=4096)
def _tag_tolerant(regex: str) -> str:
    """`regex` with a rank tag allowed after each `^` that anchors it (not one that
    negates a character class, nor an escaped one): where `regex` matches a line
    stripped of its tag, this matches the line as printed. Elsewhere nothing of the
    line's start counts: a tag ends in `:` or a space, a non-word character, like
    the start of a line to `\\b`.
    """
    out: list[str] = []
    i, in_class = 0, False
    while i < len(regex):
        c = regex[i]
        end = i + 1
        if c == "\\":
            if regex.startswith("Q", i + 1):  # \Q...\E: literal text
                closing = regex.find("\\E", i + 2)
                end = len(regex) if closing < 0 else closing + 2
            elif regex[i + 1 : i + 2] in ("p", "P", "x") and regex.startswith("{", i + 2):  # \p{^Greek}
                end = regex.find("}", i + 2) + 1 or len(regex)
            else:
                end = i + 2
        elif in_class:
            posix = _POSIX_CLASS.match(regex, i)  # [:alpha:]
            if posix is not None:
                end = posix.end()
            elif c == "]":
                in_class = False
        elif c == "[":
            in_class = True
            end += regex.startswith("^", end)  # [^...]
            end += regex.startswith("]", end)  # []...] and [^]...]: a literal ]
        elif c == "^":
            out.append(f"(?:^{RANK_TAG_RE2}?)")
            i = end
            continue
        out.append(regex[i:end])
        i = end
    return "".join(out)


class _RuleSet:
    """Rules ordered by priority (highest first) behind one RE2 set."""

    def __init__(self, rules: Sequence[_Rule]) -> None:
        # sorted() is stable: equal priorities keep catalogue order.
        self.rules = sorted(rules, key=lambda r: -r.priority)
        self._set = _search_set(tuple(r.regex for r in self.rules))

    def candidates(self, line: str) -> list[int]:
        """Indices of the rules whose regex occurs in `line`, best first."""
        if self._set is None:
            return []
        found = self._set.Match(line)
        return sorted(found) if found else []

    def hits(self, line: str) -> list[Hit]:
        return [h for i in self.candidates(line) if (h := self.rules[i].hit(line)) is not None]

    def best(self, line: str) -> Hit | None:
        for i in self.candidates(line):
            hit = self.rules[i].hit(line)
            if hit is not None:
                return hit
        return None


class Matcher:
    def __init__(self, rules: Sequence[_Rule]) -> None:
        self._failures = _RuleSet([r for r in rules if r.failure_class is not FailureClass.BENIGN])
        self._benign = _RuleSet([r for r in rules if r.failure_class is FailureClass.BENIGN])
        # The prefilter of a block of lines as printed: given lines joined by
        # newlines, a superset of the failure rules that match one of them untagged;
        # and last, whether the block holds another line break.
        tolerant = [_tag_tolerant(r.regex) for r in self._failures.rules]
        self._blocks = _search_set((*tolerant, _OTHER_BREAKS)) if tolerant else None
        self._other_break = len(tolerant)

    @classmethod
    def from_catalogue(cls, catalogue: Catalogue) -> "Matcher":
        rules = []
        for book in catalogue.runbooks.values():
            for p in book.patterns:
                rules.append(
                    _Rule(
                        pattern=p.id,
                        failure_class=book.failure_class,
                        cause_layer=p.cause_layer or book.cause_layer,
                        node_rule=book.node_rule_of(p.id),
                        recoverable_by_restart=p.recoverable(book.recoverable_by_restart),
                        priority=p.priority if p.priority is not None else book.priority,
                        regex=p.regex,
                        compiled=_compiled(p.regex),
                        xid_codes=frozenset(p.xid_codes) if p.xid_codes is not None else None,
                        onset=p.onset or book.onset,
                        vetoes=p.vetoes,
                    )
                )
        return cls(rules)

    @property
    def regexes(self) -> list[str]:
        """Every pattern's regex, failure patterns first: what a naive matcher would loop over."""
        return [r.regex for r in self._failures.rules + self._benign.rules]

    def match(self, line: str) -> list[Hit]:
        """Every pattern, failure or benign, that matches `line`: highest priority first."""
        hits = self._failures.hits(line) + self._benign.hits(line)
        return sorted(hits, key=lambda h: -h.priority)

    def scan(self, lines: Sequence[str]) -> Iterator[tuple[int, Hit]]:
        """The failure lines among `lines`, read as printed: (index, what `failure` says
        of the line without its rank tag), in order."""
        for start in range(0, len(lines), _BLOCK):
            if not self._may_fail("\n".join(lines[start : start + _BLOCK])):
                continue
            for i in range(start, min(start + _BLOCK, len(lines))):
                hit = self.failure(untagged(lines[i]))
                if hit is not None:
                    yield i, hit

    def regions(self, text: str, lead: int) -> Iterator[str]:
        """The parts of `text` where `scan` may find a failure among its lines (as
        str.splitlines cuts them), in order: each from the start of the line `lead`
        lines before the first that may fail (for a reader that looks back), to a
        line's end. Lines outside them are no failure; they are never split.
        """
        begin = end = 0  # the region being gathered, empty so far
        at = 0
        while at < len(text):
            cut = text.find("\n", at + _BLOCK_CHARS)
            stop = len(text) if cut < 0 else cut + 1
            if self._block_may_fail(text[at:stop]):
                first = at
                for _ in range(lead):
                    if first <= end:
                        break
                    first = text.rfind("\n", 0, first - 1) + 1
                if first > end:  # not touching the region before: that one is complete
                    if end > begin:
                        yield text[begin:end]
                    begin = first
                end = stop
            at = stop
        if end > begin:
            yield text[begin:end]

    def _block_may_fail(self, block: str) -> bool:
        """Whether a block of a text, cut at newlines, may hold a failure line."""
        if self._blocks is None:
            return False
        found = self._blocks.Match(block)
        if found and self._other_break in found:
            return self._may_fail("\n".join(block.splitlines()))
        return bool(found)

    def _may_fail(self, lines: str) -> bool:
        """Whether one of these lines, joined by newlines, may be a failure line once untagged."""
        if self._blocks is None:
            return False
        found = self._blocks.Match(lines)
        return bool(found) and any(i != self._other_break for i in found)

    def failure(self, line: str) -> Hit | None:
        """The failure `line` shows, if any: its highest-priority failure hit, unless a
        benign pattern of at least that priority vetoes the line."""
        hit = self._failures.best(line)
        if hit is None or self.vetoes(line, hit.priority):
            return None
        return hit

    def vetoes(self, line: str, priority: int) -> bool:
        """Whether a benign pattern of at least `priority` matches `line`."""
        veto = self._benign.best(line)
        return veto is not None and veto.priority >= priority

    def traceback_veto(self, line: str) -> int | None:
        """The priority up to which a benign pattern matching `line` vetoes the traceback
        printed after it (`Veto.TRACEBACK`), if one does."""
        rules = (self._benign.rules[i] for i in self._benign.candidates(line))
        return max((r.priority for r in rules if r.vetoes is Veto.TRACEBACK and r.hit(line)), default=None)
