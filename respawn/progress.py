"""Progress signals read from job output: training steps, saved and resumed checkpoints.

The patterns are data (`runbooks/progress/*.yaml`) so a site adds its trainer's
format without touching code.
"""

import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator

from respawn import yamlfile
from respawn.runbook import DEFAULT_DIR, RunbookError


class StepPattern(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    regex: str

    @field_validator("regex")
    @classmethod
    def _has_step_group(cls, value: str) -> str:
        if "step" not in re.compile(value).groupindex:
            raise ValueError("regex needs a named group 'step'")
        return value


class LinePattern(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    regex: str


class TimePattern(BaseModel):
    """A rank's own compute time for a step, excluding its waits in collectives."""

    model_config = ConfigDict(extra="forbid")
    id: str
    regex: str

    @field_validator("regex")
    @classmethod
    def _has_seconds_group(cls, value: str) -> str:
        if "seconds" not in re.compile(value).groupindex:
            raise ValueError("regex needs a named group 'seconds'")
        return value


class ProgressPatterns(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: list[StepPattern] = Field(default_factory=list)
    checkpoint: list[StepPattern] = Field(default_factory=list)
    resumed: list[StepPattern] = Field(default_factory=list)
    saving: list[LinePattern] = Field(default_factory=list)  # a checkpoint save began: expect a pause
    compute: list[TimePattern] = Field(default_factory=list)  # per-rank timers: how stragglers are told apart

    @classmethod
    def load(cls, runbooks: Path = DEFAULT_DIR) -> "ProgressPatterns":
        merged = cls()
        for path in sorted((runbooks / "progress").glob("*.yaml")):
            try:
                part = cls.model_validate(yamlfile.load(path.read_text()) or {})
            except Exception as exc:  # one line, naming the file, whatever went wrong
                raise RunbookError(f"{path}: {' '.join(str(exc).split())[:300]}") from None
            merged.step += part.step
            merged.checkpoint += part.checkpoint
            merged.resumed += part.resumed
            merged.saving += part.saving
            merged.compute += part.compute
        return merged


class ProgressReader:
    """Compiled progress patterns; each method answers the step a line reports, or None."""

    def __init__(self, patterns: ProgressPatterns) -> None:
        self._step = [re.compile(p.regex) for p in patterns.step]
        self._checkpoint = [re.compile(p.regex) for p in patterns.checkpoint]
        self._resumed = [re.compile(p.regex) for p in patterns.resumed]
        self._saving = [re.compile(p.regex) for p in patterns.saving]
        self._compute = [re.compile(p.regex) for p in patterns.compute]

    def step(self, line: str) -> int | None:
        return _first(self._step, line)

    def checkpoint(self, line: str) -> int | None:
        return _first(self._checkpoint, line)

    def resumed(self, line: str) -> int | None:
        return _first(self._resumed, line)

    def saving(self, line: str) -> bool:
        return any(p.search(line[:4096]) for p in self._saving)

    def compute(self, line: str) -> float | None:
        """The seconds a rank's timer line reports, if it is one."""
        for pattern in self._compute:
            match = pattern.search(line[:4096])
            if match:
                try:
                    return float(match.group("seconds")[:32])
                except ValueError:  # a site's loose pattern caught something else
                    return None
        return None


def _first(patterns: list[re.Pattern[str]], line: str) -> int | None:
    for pattern in patterns:
        match = pattern.search(line[:4096])  # user text: bound the work per line
        if match:
            return int(match.group("step"))
    return None
