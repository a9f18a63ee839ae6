"""Progress signals read from job output: training steps, saved and resumed checkpoints.

The patterns are data (`runbooks/progress/*.yaml`) so a site adds its trainer's
format without touching code. They are RE2, linear in the line whatever the
job prints, and the numbers they catch are bounded before they are believed: a
400-digit step or an `inf` of seconds is no progress signal.
"""

import math
from pathlib import Path

import re2
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from respawn.attribution.runbook import DEFAULT_DIR, RunbookError, quiet_options
from respawn.config import problems, yamlfile

_LINE = 4096  # characters of a line the patterns see: user text, bound the work per line
_STEP_DIGITS = 12  # a step number longer than this is not one (and would overflow a float)
_MAX_SECONDS = 1e6  # a compute time longer than this (11 days a step) is not one


def _compile(regex: str) -> "re2._Regexp":
    try:
        return re2.compile(regex, options=quiet_options())
    except re2.error as exc:
        raise ValueError(f"not an RE2 regex: {exc}") from None


def _group(regex: str, name: str) -> str:
    if name not in _compile(regex).groupindex:
        raise ValueError(f"regex needs a named group '{name}'")
    return regex


class StepPattern(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    regex: str

    @field_validator("regex")
    @classmethod
    def _has_step_group(cls, value: str) -> str:
        return _group(value, "step")


class LinePattern(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    regex: str

    @field_validator("regex")
    @classmethod
    def _is_re2(cls, value: str) -> str:
        _compile(value)
        return value


class TimePattern(BaseModel):
    """A rank's own compute time for a step, excluding its waits in collectives."""

    model_config = ConfigDict(extra="forbid")
    id: str
    regex: str

    @field_validator("regex")
    @classmethod
    def _has_seconds_group(cls, value: str) -> str:
        return _group(value, "seconds")


class ProgressPatterns(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: list[StepPattern] = Field(default_factory=list)
    checkpoint: list[StepPattern] = Field(default_factory=list)
    resumed: list[StepPattern] = Field(default_factory=list)
    saving: list[LinePattern] = Field(default_factory=list)  # a checkpoint save began: expect a pause
    compute: list[TimePattern] = Field(default_factory=list)  # per-rank timers: how stragglers are told apart
    # The job's own launcher restarting its workers (torchrun --max-restarts, NVRx's ft_launcher):
    # the failure before it is the job's to recover, not Respawn's.
    restarting: list[LinePattern] = Field(default_factory=list)
    # That launcher saw its workers fail: it restarts them or gives up, its word follows.
    worker_failed: list[LinePattern] = Field(default_factory=list)
    # That launcher gave up: the failure is the job's end, Respawn's to recover.
    gave_up: list[LinePattern] = Field(default_factory=list)

    @classmethod
    def load(cls, runbooks: Path = DEFAULT_DIR) -> "ProgressPatterns":
        merged = cls()
        for path in sorted((runbooks / "progress").glob("*.yaml")):
            try:
                part = cls.model_validate(yamlfile.load(path.read_text()) or {})
            except ValidationError as exc:
                raise RunbookError(problems.describe(path, exc, cls)) from None
            except Exception as exc:  # one line, naming the file, whatever else went wrong
                raise RunbookError(f"{path}: {' '.join(str(exc).split())[:300]}") from None
            merged.step += part.step
            merged.checkpoint += part.checkpoint
            merged.resumed += part.resumed
            merged.saving += part.saving
            merged.compute += part.compute
            merged.restarting += part.restarting
            merged.worker_failed += part.worker_failed
            merged.gave_up += part.gave_up
        return merged


class ProgressReader:
    """Compiled progress patterns; each method answers the step a line reports, or None."""

    def __init__(self, patterns: ProgressPatterns) -> None:
        kinds: tuple[list[StepPattern] | list[LinePattern] | list[TimePattern], ...] = (
            patterns.step,
            patterns.checkpoint,
            patterns.resumed,
            patterns.saving,
            patterns.compute,
            patterns.restarting,
            patterns.worker_failed,
            patterns.gave_up,
        )
        regexes = [p.regex for kind in kinds for p in kind]
        self._compiled = [_compile(r) for r in regexes]
        # One RE2 set of every pattern: one scan of a line tells which match, so a
        # line no pattern matches costs one scan whichever signals are asked of it.
        self._set: re2.Set | None = None
        if regexes:
            self._set = re2.Set.SearchSet(quiet_options())
            for regex in regexes:
                self._set.Add(regex)
            self._set.Compile()
        ranges, at = [], 0
        self._group: list[int] = []  # the group each pattern's number is in (re2 rebuilds groupindex per lookup)
        for kind, name in zip(kinds, ("step", "step", "step", "", "seconds", "", "", ""), strict=True):
            ranges.append(range(at, at + len(kind)))
            at += len(kind)
            self._group += [self._compiled[i].groupindex.get(name, 0) for i in ranges[-1]]
        (
            self._steps,
            self._checkpoints,
            self._resumes,
            self._savings,
            self._computes,
            self._restarts,
            self._worker_failures,
            self._give_ups,
        ) = ranges
        self._last: tuple[str | None, bytes, frozenset[int]] = (None, b"", frozenset())

    def step(self, line: str) -> int | None:
        return _step(self._first(line, self._steps))

    def checkpoint(self, line: str) -> int | None:
        return _step(self._first(line, self._checkpoints))

    def resumed(self, line: str) -> int | None:
        return _step(self._first(line, self._resumes))

    def saving(self, line: str) -> bool:
        return self._any(line, self._savings)

    def restarting(self, line: str) -> bool:
        """Whether the line is the job's own launcher restarting its workers."""
        return self._any(line, self._restarts)

    def worker_failed(self, line: str) -> bool:
        """Whether the line is the job's own launcher seeing its workers fail (its word follows)."""
        return self._any(line, self._worker_failures)

    def gave_up(self, line: str) -> bool:
        """Whether the line is the job's own launcher giving up on its workers."""
        return self._any(line, self._give_ups)

    def compute(self, line: str) -> float | None:
        """The seconds a rank's timer line reports, if it is one: a finite, non-negative
        number of at most _MAX_SECONDS."""
        return _seconds(self._first(line, self._computes))

    def _any(self, line: str, kind: range) -> bool:
        _, hits = self._hits(line)
        return any(i in hits for i in kind)

    def _hits(self, line: str) -> tuple[bytes, frozenset[int]]:
        """The line's first _LINE characters as UTF-8 (RE2's wrapper searches bytes
        without decoding offsets), and the patterns that match them. The last line's
        answer is kept: each signal of one line is asked in turn."""
        last = self._last
        if last[0] is line:
            return last[1], last[2]
        text = line[:_LINE].encode("utf-8", "replace")
        hits = frozenset(self._set.Match(text) or ()) if self._set is not None else frozenset()
        self._last = (line, text, hits)
        return text, hits

    def _first(self, line: str, kind: range) -> str | None:
        """The number (group `step` or `seconds`) of the first pattern of `kind` that matches."""
        text, hits = self._hits(line)
        if not hits:
            return None
        index = next((i for i in kind if i in hits), None)
        if index is None:
            return None
        match = self._compiled[index].search(text)
        found = match.group(self._group[index]) if match is not None else None
        return found.decode("utf-8", "replace") if found is not None else None


def _step(text: str | None) -> int | None:
    """A step number: ASCII digits, at most _STEP_DIGITS of them (a 400-digit one is none)."""
    if not text or len(text) > _STEP_DIGITS or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def _seconds(text: str | None) -> float | None:
    if not text or len(text) > 32:
        return None
    try:
        value = float(text)
    except ValueError:  # a site's loose pattern caught something else
        return None
    return value if math.isfinite(value) and 0 <= value <= _MAX_SECONDS else None
