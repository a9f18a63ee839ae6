"""What to do about an incident: a pure function of the runbook and the job's history.

No I/O and no clock here, so every rule is tested without Slurm or Temporal.
"""

from pydantic import BaseModel, Field

from respawn.attribution.runbook import Action, NodeRule, Runbook
from respawn.config.cluster import Budgets
from respawn.decision.ledger import ArrayRecord, array_systemic
from respawn.wire.attribution import Attribution
from respawn.wire.launcher import LauncherView
from respawn.wire.taxonomy import FailureClass


class PastIncident(BaseModel):
    attempt: int
    failure_class: FailureClass
    nodes: list[str] = Field(default_factory=list)
    checkpoint_step: int | None = None  # newest checkpoint when that attempt failed


class JobHistory(BaseModel):
    """What earlier incidents of the same job left behind."""

    restarts: int = 0  # restarts already done: Slurm's requeues and the launcher's relaunches
    incidents: list[PastIncident] = Field(default_factory=list)
    excluded_nodes: list[str] = Field(default_factory=list)


class JobShape(BaseModel):
    """The attempt's allocation and the cluster: whom a job may blame, and whether
    exclusions still leave room for it."""

    job_nodes: list[str]
    cluster_nodes: list[str]
    # The nodes the job could run on: its partitions' nodes that are up and not drained. An
    # exclusion must leave it enough of them, or it would pend forever. None: not read (every
    # node of the cluster counts, as before it was read).
    eligible_nodes: list[str] | None = None


class Decision(BaseModel):
    action: Action
    exclude: list[str] = Field(default_factory=list)  # the full exclusion list for the next attempt
    newly_excluded: list[str] = Field(default_factory=list)  # in-job: the nodes the relaunch leaves out
    reason: str
    # An in-job rung: the job-level rung to take when the relaunch fails (`exclude` is its list).
    fallback: Action | None = None


def decide(
    attribution: Attribution,
    runbook: Runbook,
    history: JobHistory,
    budgets: Budgets,
    shape: JobShape,
    checkpoint_step: int | None,
    systemic: bool = False,
    launcher: LauncherView | None = None,
    no_requeue: bool = False,
    array: ArrayRecord | None = None,
) -> Decision:
    """`launcher`: the job's in-job launcher while the job runs (None: it has none, or it ended);
    `no_requeue`: the job asked not to be restarted (NVRx's exit code 93); `array`: the job is
    a task of an array, and how its tasks have failed."""
    same_class = [i for i in history.incidents if i.failure_class == attribution.failure_class]
    occurrence = len(same_class) + 1
    keep = sorted(set(history.excluded_nodes))

    def stop(reason: str) -> Decision:
        return Decision(action=Action.STOP, exclude=keep, reason=reason)

    if (why := array_systemic(array, budgets)) is not None:
        return stop(why)
    if no_requeue:
        return stop('the job exited 93, NVRx\'s "do not requeue": it asked not to be restarted')
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
    if action.in_job:
        return _in_job(action, attribution, suspects, keep, shape, occurrence, systemic, launcher)
    return _requeue(action, attribution, suspects, keep, shape, occurrence, systemic)


def _requeue(
    action: Action,
    attribution: Attribution,
    suspects: list[str],
    keep: list[str],
    shape: JobShape,
    occurrence: int,
    systemic: bool,
) -> Decision:
    """The job-level rungs: requeue, with or without the suspects."""
    if action is Action.RESTART_EXCLUDING and suspects and systemic:
        return Decision(
            action=Action.RESTART,
            exclude=keep,
            reason=f"{attribution.failure_class} on {', '.join(suspects)}, but the failure is systemic: "
            "restarting without new exclusions",
        )
    if action is Action.RESTART_EXCLUDING and suspects:
        wanted = sorted(set(keep) | set(suspects))
        pool = shape.cluster_nodes if shape.eligible_nodes is None else shape.eligible_nodes
        free = [n for n in pool if n not in wanted]
        if len(free) < len(shape.job_nodes):
            where = "" if shape.eligible_nodes is None else " it may run on (its partitions', up, not drained)"
            return Decision(
                action=Action.RESTART,
                exclude=keep,
                reason=f"excluding {', '.join(suspects)} would leave {len(free)} nodes{where} for a "
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


def _in_job(
    action: Action,
    attribution: Attribution,
    suspects: list[str],
    keep: list[str],
    shape: JobShape,
    occurrence: int,
    systemic: bool,
    launcher: LauncherView | None,
) -> Decision:
    """The in-job rungs: the allocation is kept and the launcher relaunches the step, on the
    same nodes or without the suspects on spares. Each falls back one layer, to the requeue,
    when the job cannot do it; the fallback travels with the decision for when the relaunch fails."""
    # The requeue the runbook's rung stands for: exactly the decision a job without the launcher gets.
    fallback = _requeue(action.fallback, attribution, suspects, keep, shape, occurrence, systemic)
    if suspects and not systemic:
        action = Action.REPLACE_NODE  # the same nodes would meet the same fault: the finest rung without it
    elif action is Action.REPLACE_NODE:
        action = Action.RESTART_IN_PLACE  # nobody to replace (or systemic: no new exclusions)
    if launcher is None or not launcher.relaunchable:
        why = "no launcher in the job" if launcher is None else f"the job's launcher is {launcher.state.value}"
        return fallback.model_copy(update={"reason": f"{fallback.reason} ({why}: the ladder goes on at the requeue)"})
    cls = attribution.failure_class
    if action is Action.RESTART_IN_PLACE:
        why = f"occurrence {occurrence}, no node to blame" if not suspects else "systemic: no new exclusions"
        return Decision(
            action=action,
            exclude=fallback.exclude,
            fallback=fallback.action,
            reason=f"{cls}: relaunch in place, in the allocation ({why})",
        )
    spares = [n for n in launcher.spares if n not in suspects]
    needed = [n for n in suspects if n in launcher.step_nodes]
    # Without the suspects the step runs on spares in their place, or on fewer nodes down to
    # the fewest its launcher says it can run on (--min-nodes).
    width = len(launcher.step_nodes) - len(needed) + len(spares)
    floor = min(launcher.min_nodes or len(launcher.step_nodes), len(launcher.step_nodes))
    if width < floor:
        held = f"holds {len(spares)} spare{'s' * (len(spares) != 1)}"
        can = f" and runs on {floor} at the fewest" if floor < len(launcher.step_nodes) else ""
        return fallback.model_copy(
            update={
                "reason": f"{fallback.reason} (replacing {', '.join(needed)} needs {len(needed)}, the job {held}{can})"
            }
        )
    where = "on a spare" if len(spares) >= len(needed) else f"on {width} node(s)"
    return Decision(
        action=action,
        exclude=fallback.exclude,
        newly_excluded=suspects,
        fallback=fallback.action,
        reason=f"{cls} on {', '.join(suspects)}: relaunch without it {where}, in the allocation",
    )


def _suspects(attribution: Attribution, runbook: Runbook, same_class: list[PastIncident]) -> list[str]:
    if not attribution.node_implicated:
        return []
    rule = runbook.node_rule_of(attribution.pattern)
    if rule is NodeRule.RECURRENCE:
        # Blame a node only when the same failure already struck it once.
        before = {n for incident in same_class for n in incident.nodes}
        return sorted(n for n in attribution.nodes if n in before)
    if rule is NodeRule.NONE:
        return []
    return sorted(set(attribution.nodes))


def _no_checkpoint_progress(history: JobHistory, step: int | None, attempts: int) -> bool:
    """True when the last `attempts` attempts, this one included, saved nothing new."""
    steps = [i.checkpoint_step for i in sorted(history.incidents, key=lambda i: i.attempt)] + [step]
    if len(steps) < attempts + 1:
        return False
    window = steps[-(attempts + 1) :]
    return all(s == window[0] for s in window)
