"""The result of reading evidence with the runbooks."""

from enum import StrEnum

from pydantic import BaseModel, Field

from respawn.wire.taxonomy import CauseLayer, FailureClass


class AttributionSource(StrEnum):
    RUNBOOKS = "runbooks"  # Respawn's own reading, alone
    HOOK = "hook"  # the attribution hook's judgement, merged over Respawn's reading


class Attribution(BaseModel):
    failure_class: FailureClass
    cause_layer: CauseLayer
    node_implicated: bool = False
    nodes: list[str] = Field(default_factory=list)  # nodes to blame, possibly empty
    recoverable_by_restart: bool | None = None
    pattern: str | None = None  # id of the runbook pattern that decided
    line: str | None = None  # the line that decided, for the audit trail
    # No runbook pattern knew the failure: reported as unknown with the attempt's last lines,
    # never as a pattern's verdict (the class only picks the ladder).
    unknown: bool = False
    last_lines: list[str] = Field(default_factory=list)
    source: AttributionSource = AttributionSource.RUNBOOKS
    # Set when a configured hook was asked and its judgement could not be used
    # (timeout, connection, HTTP status, invalid body): the runbooks' reading stands.
    hook_error: str | None = None
    hook_rationale: str | None = None  # the service's own words, bounded
    hook_refused_nodes: list[str] = Field(default_factory=list)  # named by the service, not in the allocation
