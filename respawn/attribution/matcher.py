"""One combined matcher over every runbook pattern.

Almost every line a training job prints is healthy, so the cost that matters is
the cost of a line that matches nothing: one scan by an RE2 set holding every
failure pattern at once. Only the patterns the set reports are then run alone,
to pick up their groups (host, Xid code, PCI bus id). Benign patterns sit in a
second set, consulted only for a line that hit a failure pattern, since all
they do is veto. A whole log goes faster still (`scan`): the set scans blocks of
lines joined by newlines, and only a block with a hit is read line by line.

RE2 runs in time linear in the line, whatever the patterns and the input: a
user printing a 100 KB line cannot stall detection.
"""

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import re2

from respawn.attribution.runbook import Catalogue, NodeRule, Onset, quiet_options
from respawn.wire.taxonomy import CauseLayer, FailureClass

# The DFA a set builds over ~100 patterns can outgrow RE2's default 8 MiB on long,
# varied lines; RE2 then reports "no match" instead of failing loudly. 64 MiB per
# set keeps the DFA in memory for any line the log reader lets through.
_SET_MEMORY = 64 << 20
_BLOCK = 128  # lines per block in `scan`: big enough to amortise, small enough to reread


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


def _xid(groups: Mapping[str, str]) -> int | None:
    # Bounded before int(): a hostile line may carry a 100 KB run of digits.
    xid = groups.get("xid", "")
    return int(xid) if xid.isdigit() and len(xid) <= 9 else None


class _RuleSet:
    """Rules ordered by priority (highest first) behind one RE2 set."""

    def __init__(self, rules: Sequence[_Rule]) -> None:
        # sorted() is stable: equal priorities keep catalogue order.
        self.rules = sorted(rules, key=lambda r: -r.priority)
        self._set: re2.Set | None = None
        if self.rules:
            options = quiet_options()
            options.max_mem = _SET_MEMORY
            self._set = re2.Set.SearchSet(options)
            for rule in self.rules:
                # Multi-line mode changes nothing within one line, and lets `^`
                # and `$` still find a line's edges inside a block of lines.
                self._set.Add(f"(?m){rule.regex}")
            self._set.Compile()

    def candidates(self, line: str) -> list[int]:
        """Indices of the rules whose regex occurs in `line`, best first.

        Given several lines joined by newlines, it is a superset of the rules
        that match one of them: the prefilter of a block.
        """
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
                        node_rule=p.node_rule or book.node_rule,
                        recoverable_by_restart=p.recoverable(book.recoverable_by_restart),
                        priority=p.priority if p.priority is not None else book.priority,
                        regex=p.regex,
                        compiled=re2.compile(p.regex, options=quiet_options()),
                        xid_codes=frozenset(p.xid_codes) if p.xid_codes is not None else None,
                        onset=p.onset or book.onset,
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
        """The failure lines among `lines`: (index, what `failure` says), in order."""
        for start in range(0, len(lines), _BLOCK):
            block = lines[start : start + _BLOCK]
            if not self._failures.candidates("\n".join(block)):
                continue
            for offset, line in enumerate(block):
                hit = self.failure(line)
                if hit is not None:
                    yield start + offset, hit

    def failure(self, line: str) -> Hit | None:
        """The failure `line` shows, if any: its highest-priority failure hit, unless a
        benign pattern of at least that priority vetoes the line."""
        hit = self._failures.best(line)
        if hit is None:
            return None
        veto = self._benign.best(line)
        if veto is not None and veto.priority >= hit.priority:
            return None
        return hit
