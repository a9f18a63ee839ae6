"""Runbooks are data: one YAML file per failure class, validated here.

An operator changes what Respawn does by editing `runbooks/*.yaml`, never code.
Each runbook says how to recognise its failure class (patterns), which layer
usually causes it, how to find the node to blame, and the recovery ladder: what
to do on the first, second, ... incident of that class in one job.
"""

from enum import StrEnum
from pathlib import Path

import re2
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from respawn.config import problems, yamlfile
from respawn.wire.taxonomy import CauseLayer, FailureClass

DEFAULT_DIR = Path(__file__).resolve().parents[1] / "runbooks"  # the link to ../runbooks here; in the wheel, its files


def quiet_options() -> re2.Options:
    """RE2 options for runbook regexes: errors are raised, not also logged to stderr."""
    options = re2.Options()
    options.log_errors = False
    return options


class RunbookError(ValueError):
    """A runbook file that cannot be used; the message is one line."""


class NodeRule(StrEnum):
    NAMED = "named"  # the host the line itself names (NCCL WARN prefix, "srun: error: node7", ...)
    RANK = "rank"  # the node where the rank that printed the line runs (placement)
    RECURRENCE = "recurrence"  # only once the same class recurs on the same node
    NONE = "none"  # never blame a node for this class


class Action(StrEnum):
    """The rungs of the recovery ladder, finest first.

    The in-job rungs keep the allocation: the job's launcher (docs/launcher.md) relaunches
    its step. A job without a launcher waiting, or a relaunch that fails, falls back one
    layer, to the job-level requeue (`Action.fallback`).
    """

    RESTART_IN_PLACE = "restart_in_place"  # relaunch the step on the same nodes, in the allocation
    REPLACE_NODE = "replace_node"  # relaunch it without the implicated nodes, on spares the job holds
    RESTART = "restart"  # requeue on any nodes, keeping earlier exclusions
    RESTART_EXCLUDING = "restart_excluding"  # requeue without the implicated nodes
    STOP = "stop"  # retrying is futile: leave the job ended, say why

    @property
    def in_job(self) -> bool:
        return self in (Action.RESTART_IN_PLACE, Action.REPLACE_NODE)

    @property
    def fallback(self) -> "Action":
        """The job-level rung an in-job rung falls back to; a job-level rung is its own."""
        return {Action.RESTART_IN_PLACE: Action.RESTART, Action.REPLACE_NODE: Action.RESTART_EXCLUDING}.get(self, self)


class Onset(StrEnum):
    """What a line says about whether the attempt is interrupted.

    A failure-like line in an attempt that still runs is a suspicion: jobs print
    and handle such text all the time (batch-size finders, retrying loaders,
    caught exceptions). Only some lines are known to be followed by the process
    dying or hanging; only Slurm's state says how an attempt ended.
    """

    SUSPECTED = "suspected"  # confirmed only by the attempt's end, its ranks stalling, or a certain line
    CERTAIN = "certain"  # the process dies or hangs after it by its nature: it confirms the interruption
    REPORTED = "reported"  # Slurm's report of an end it caused: opens no incident, the job's state decides


class Veto(StrEnum):
    """What a benign pattern's match vetoes."""

    LINE = "line"  # the line itself
    # and the Python traceback printed right after it, or the exception line alone where
    # no Python frame raised it: the line is Python's own notice that it printed an
    # exception and ignored it (a finalizer's, an atexit callback's)
    TRACEBACK = "traceback"


class Rung(BaseModel):
    model_config = ConfigDict(extra="forbid")
    action: Action
    times: int = Field(default=1, ge=1, le=100)  # incidents of this class this rung covers


class Pattern(BaseModel):
    """One way a failure shows in a log line.

    The regex is RE2 syntax (linear time on hostile input: no backreferences, no
    look-around). Named groups are kept on the hit: `host` names the node to
    blame, `xid` the Xid code, `pci` the GPU's bus id.
    """

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9_.-]{0,63}$")
    regex: str = Field(min_length=1, max_length=4000)
    # Overrides of the runbook's defaults for lines this pattern matches.
    cause_layer: CauseLayer | None = None
    node_rule: NodeRule | None = None
    # Written as `null` in the YAML it overrides the runbook's value with "unknown";
    # left out, the runbook's value holds (see `recoverable`).
    recoverable_by_restart: bool | None = None
    # Root cause over symptoms: among matches in one incident the highest priority
    # decides. On a benign pattern: the line is vetoed for every failure pattern of
    # lower priority.
    priority: int | None = Field(default=None, ge=0, le=1000)
    # Optional sub-classification: the pattern matches only when its `xid` group is
    # one of these codes (fatal Xids here, NVLink Xids there).
    xid_codes: list[int] | None = None
    # What the line says about the interruption; left out, the runbook's value holds.
    onset: Onset | None = None
    # On a benign pattern: what its match vetoes besides lines of lower priority.
    vetoes: Veto = Veto.LINE
    description: str = ""

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, regex: str) -> str:
        try:
            re2.compile(regex, options=quiet_options())
        except re2.error as exc:
            reason = exc.args[0] if exc.args else exc
            text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
            raise ValueError(f"not an RE2 regex: {text}") from None
        return regex

    @model_validator(mode="after")
    def _xid_group(self) -> "Pattern":
        if self.xid_codes is not None and "(?P<xid>" not in self.regex:
            raise ValueError(f"pattern {self.id}: xid_codes needs a (?P<xid>...) group in the regex")
        return self

    def recoverable(self, default: bool | None) -> bool | None:
        """The pattern's verdict on restarting, or the runbook's when it has none."""
        if "recoverable_by_restart" in self.model_fields_set:
            return self.recoverable_by_restart
        return default


class Runbook(BaseModel):
    model_config = ConfigDict(extra="forbid")
    failure_class: FailureClass
    cause_layer: CauseLayer
    description: str = ""
    recoverable_by_restart: bool | None
    node_rule: NodeRule = NodeRule.NONE
    priority: int = Field(default=50, ge=0, le=1000)
    # What this class's lines say about the interruption (`Onset`), unless a pattern says otherwise.
    onset: Onset = Onset.SUSPECTED
    # Usually the echo of another failure: a node that died shows first as its peers'
    # communication errors, and Slurm notices the node seconds later. An incident of this
    # class that names no node waits (`detector.cascade_wait_s`) for a dead node before it decides.
    cascade: bool = False
    patterns: list[Pattern] = Field(default_factory=list)
    ladder: list[Rung]
    # Restarts allowed for this class in one job; None means the cluster's budget.
    max_restarts: int | None = Field(default=None, ge=0)

    @field_validator("ladder")
    @classmethod
    def _ladder_not_empty(cls, ladder: list[Rung]) -> list[Rung]:
        if not ladder:
            raise ValueError("ladder must have at least one rung")
        return ladder

    @model_validator(mode="after")
    def _patterns_unique(self) -> "Runbook":
        ids = [p.id for p in self.patterns]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate pattern ids: {', '.join(dupes)}")
        return self

    @model_validator(mode="after")
    def _vetoes_benign(self) -> "Runbook":
        vetoing = [p.id for p in self.patterns if p.vetoes is not Veto.LINE]
        if vetoing and self.failure_class is not FailureClass.BENIGN:
            raise ValueError(f"only a benign pattern vetoes a traceback: {', '.join(vetoing)}")
        return self

    def node_rule_of(self, pattern: str | None) -> NodeRule:
        """The rule of the pattern that decided (a local disk's error in a runbook that blames
        no node), or the runbook's where the pattern sets none or no pattern decided."""
        own = next((p.node_rule for p in self.patterns if p.id == pattern), None)
        return own or self.node_rule

    def rung_for(self, occurrence: int) -> Action:
        """The action for the `occurrence`-th incident (1-based) of this class in a job."""
        seen = 0
        for rung in self.ladder:
            seen += rung.times
            if occurrence <= seen:
                return rung.action
        return Action.STOP


class Catalogue(BaseModel):
    """Every runbook, by failure class."""

    runbooks: dict[FailureClass, Runbook]

    @classmethod
    def load(cls, directory: Path = DEFAULT_DIR) -> "Catalogue":
        runbooks: dict[FailureClass, Runbook] = {}
        files = sorted(directory.glob("*.yaml"))
        if not files:
            raise RunbookError(f"{directory}: no runbook files (*.yaml)")
        for path in files:
            book = _load_file(path)
            if book.failure_class in runbooks:
                raise RunbookError(f"{path}: second runbook for {book.failure_class}")
            runbooks[book.failure_class] = book
        all_ids = [p.id for b in runbooks.values() for p in b.patterns]
        dupes = sorted({i for i in all_ids if all_ids.count(i) > 1})
        if dupes:
            raise RunbookError(f"{directory}: pattern ids used twice: {', '.join(dupes)}")
        return cls(runbooks=runbooks)

    def runbook(self, failure_class: FailureClass) -> Runbook:
        return self.runbooks[failure_class]

    def onset(self, pattern_id: str) -> Onset | None:
        """What a pattern's lines say about the interruption; None for an unknown id."""
        for book in self.runbooks.values():
            for pattern in book.patterns:
                if pattern.id == pattern_id:
                    return pattern.onset or book.onset
        return None


def _load_file(path: Path) -> Runbook:
    try:
        data = yamlfile.load(path.read_text())  # a duplicate key is an error, naming its line
        return Runbook.model_validate(data)
    except (OSError, yaml.YAMLError) as exc:
        raise RunbookError(f"{path}: {' '.join(str(exc).split())}") from None
    except ValidationError as exc:
        raise RunbookError(problems.describe(path, exc, Runbook)) from None
