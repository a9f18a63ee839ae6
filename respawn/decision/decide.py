"""What to do about an incident: a pure function of the runbook and the job's history.

No I/O and no clock here, so every rule is tested without Slurm or Temporal.
"""

from pydantic import BaseModel, Field

from respawn.attribution.runbook import Action, NodeRule, Runbook
from respawn.config.cluster import Budgets
from respawn.wire.attribution import Attribution
from respawn.wire.taxonomy import FailureClass


class PastIncident(BaseModel):
    attempt: int
    failure_class: FailureClass
    nodes: list[str] = Field(default_factory=list)
    checkpoint_step: int | None = None  # newest checkpoint when that attempt failed


class JobHistory(BaseModel):
    """What earlier incidents of the same job left behind."""

    restarts: int = 0  # restarts already done (Slurm's restart count)
    incidents: list[PastIncident] = Field(default_factory=list)
    excluded_nodes: list[str] = Field(default_factory=list)


class JobShape(BaseModel):
    """The attempt's allocation and the cluster: whom a job may blame, and whether
    exclusions still leave room for it."""

    job_nodes: list[str]
    cluster_nodes: list[str]


class Decision(BaseModel):
    action: Action
    exclude: list[str] = Field(default_factory=list)  # the full exclusion list for the next attempt
    newly_excluded: list[str] = Field(default_factory=list)
    reason: str


def decide(
    attribution: Attribution,
    runbook: Runbook,
    history: JobHistory,
    budgets: Budgets,
    shape: JobShape,
    checkpoint_step: int | None,
    systemic: bool = False,
) -> Decision:
    same_class = [i for i in history.incidents if i.failure_class == attribution.failure_class]
    occurrence = len(same_class) + 1
    keep = sorted(set(history.excluded_nodes))

    def stop(reason: str) -> Decision:
        return Decision(action=Action.STOP, exclude=keep, reason=reason)

    if attribution.recoverable_by_restart is False:
        return stop(f"{attribution.failure_class} is not recoverable by restart (pattern {attribution.pattern})")
    max_restarts = runbook.max_restarts if runbook.max_restarts is not None else budgets.max_restarts
    if history.restarts >= max_restarts:
        return stop(f"retry budget spent: {history.restarts} of {max_restarts} restarts used")
    action = runbook.rung_for(occurrence)
    if action is Action.STOP:
        return stop(f"runbook {attribution.failure_class}: ladder ends at occurrence {occurrence}")
    if _no_checkpoint_progress(history, checkpoint_step, budgets.no_checkpoint_attempts):
        return stop(
            f"no new checkpoint across {budgets.no_checkpoint_attempts} attempts (newest step {checkpoint_step})"
        )

    # A job's output can only ever blame nodes the job ran on: a user printing
    # another node's name must not push it out of anyone's way.
    suspects = [n for n in _suspects(attribution, runbook, same_class) if n in shape.job_nodes]
    if action is Action.RESTART_EXCLUDING and suspects and systemic:
        return Decision(
            action=Action.RESTART,
            exclude=keep,
            reason=f"{attribution.failure_class} on {', '.join(suspects)}, but the failure is systemic: "
            "restarting without new exclusions",
        )
    if action is Action.RESTART_EXCLUDING and suspects:
        wanted = sorted(set(keep) | set(suspects))
        free = [n for n in shape.cluster_nodes if n not in wanted]
        if len(free) < len(shape.job_nodes):
            return Decision(
                action=Action.RESTART,
                exclude=keep,
                reason=f"excluding {', '.join(suspects)} would leave {len(free)} nodes for a "
                f"{len(shape.job_nodes)}-node job: restarting without new exclusions",
            )
        new = [n for n in wanted if n not in keep]
        return Decision(
            action=Action.RESTART_EXCLUDING,
            exclude=wanted,
            newly_excluded=new,
            reason=f"{attribution.failure_class} on {', '.join(suspects)}: restart without it",
        )
    return Decision(
        action=Action.RESTART,
        exclude=keep,
        reason=f"{attribution.failure_class}: restart (occurrence {occurrence}, no node to blame)"
        if not suspects
        else f"{attribution.failure_class}: restart (occurrence {occurrence})",
    )


def _suspects(attribution: Attribution, runbook: Runbook, same_class: list[PastIncident]) -> list[str]:
    if not attribution.node_implicated:
        return []
    if runbook.node_rule is NodeRule.RECURRENCE:
        # Blame a node only when the same failure already struck it once.
        before = {n for incident in same_class for n in incident.nodes}
        return sorted(n for n in attribution.nodes if n in before)
    if runbook.node_rule is NodeRule.NONE:
        return []
    return sorted(set(attribution.nodes))


def _no_checkpoint_progress(history: JobHistory, step: int | None, attempts: int) -> bool:
    """True when the last `attempts` attempts, this one included, saved nothing new."""
    steps = [i.checkpoint_step for i in sorted(history.incidents, key=lambda i: i.attempt)] + [step]
    if len(steps) < attempts + 1:
        return False
    window = steps[-(attempts + 1) :]
    return all(s == window[0] for s in window)
