"""The result of reading evidence with the runbooks."""

from pydantic import BaseModel, Field

from respawn.taxonomy import CauseLayer, FailureClass


class Attribution(BaseModel):
    failure_class: FailureClass
    cause_layer: CauseLayer
    node_implicated: bool = False
    nodes: list[str] = Field(default_factory=list)  # nodes to blame, possibly empty
    recoverable_by_restart: bool | None = None
    pattern: str | None = None  # id of the runbook pattern that decided
    line: str | None = None  # the line that decided, for the audit trail
