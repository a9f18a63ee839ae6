"""An operator's override as a decision: what "stop" or "restart, excluding these" means (pure)."""

from respawn.attribution.runbook import Action
from respawn.decision.decide import Decision
from respawn.wire.incident import Override, OverrideAction


def operator_decision(override: Override, excluded: list[str]) -> Decision:
    """The decision an override stands for, given the nodes the job already excludes."""
    reason = f"operator {override.who}: {override.reason}"
    if override.action is OverrideAction.STOP:
        return Decision(action=Action.STOP, exclude=sorted(excluded), reason=reason)
    wanted = sorted(set(excluded) | set(override.exclude))
    return Decision(
        action=Action.RESTART_EXCLUDING if override.exclude else Action.RESTART,
        exclude=wanted,
        newly_excluded=sorted(set(override.exclude) - set(excluded)),
        reason=reason,
    )
