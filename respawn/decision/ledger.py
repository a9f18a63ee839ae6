"""Each node's record across jobs, and the circuit breaker: pure functions.

A node that fails job after job should leave the pool; but a job's output is
anyone's text, so only node-level evidence (its kernel log, its GPU metrics,
Slurm's own node state) may drain it. And when many nodes are implicated at
once, the fault is the fabric or the file system, not the nodes: excluding
them would only shrink the cluster, so Respawn stops isolating and says so.
"""

import math

from pydantic import BaseModel, Field

from respawn.config.cluster import Budgets


class NodeRecord(BaseModel):
    """Other incidents (any job) that implicated each node, from the audit trail."""

    in_drain_window: dict[str, int] = Field(default_factory=dict)
    in_systemic_window: set[str] = Field(default_factory=set)


class NodeVerdict(BaseModel):
    systemic: bool = False
    drain: list[str] = Field(default_factory=list)  # recommended for drain
    drain_backed: list[str] = Field(default_factory=list)  # ... and backed by node-level evidence
    reason: str = ""


def judge_nodes(
    suspects: list[str], backed: set[str], record: NodeRecord, budgets: Budgets, cluster_nodes: list[str]
) -> NodeVerdict:
    implicated = record.in_systemic_window | set(suspects)
    limit = budgets.systemic_node_share * len(cluster_nodes)
    if suspects and len(implicated) > limit:
        return NodeVerdict(
            systemic=True,
            reason=f"systemic: {len(implicated)} of {len(cluster_nodes)} nodes implicated within "
            f"{budgets.systemic_window_s:.0f} s (more than {budgets.systemic_node_share:.0%}): "
            "not excluding or draining",
        )
    drain = sorted(n for n in suspects if record.in_drain_window.get(n, 0) + 1 >= budgets.node_incidents_to_drain)
    return NodeVerdict(
        drain=drain,
        drain_backed=[n for n in drain if n in backed],
        reason=f"implicated in {budgets.node_incidents_to_drain}+ incidents: {', '.join(drain)}" if drain else "",
    )


def to_mark_down(silent: list[str], exclude: list[str], verdict: NodeVerdict) -> list[str]:
    """The nodes Respawn calls DOWN itself instead of waiting for Slurm's SlurmdTimeout (seconds
    in a sandbox, five minutes by default): its own probe found their slurmd silent (not a job's
    text: node-level evidence), and the decision excludes them. Never while the circuit breaker
    is open: many nodes at once is the fabric, or the worker's own network, not the nodes."""
    if verdict.systemic:
        return []
    return sorted(set(silent) & set(exclude))


class ArrayRecord(BaseModel):
    """A job array's tasks, as the audit trail knows them: how many the detector has seen,
    and how many failed with the incident's class within the systemic window (this one too)."""

    array_job_id: int
    tasks: int
    failed_alike: int


def array_systemic(record: ArrayRecord | None, budgets: Budgets) -> str | None:
    """Why recovery stops for the whole array, or None. A sweep's tasks failing the same way
    are one fault (the code, the data, the environment), not one per task: requeueing each
    would spend every task's budget on it."""
    if record is None:
        return None
    needed = max(2, math.ceil(budgets.array_systemic_share * record.tasks))
    if record.failed_alike < needed:
        return None
    return (
        f"systemic across array {record.array_job_id}: {record.failed_alike} of its {record.tasks} tasks failed "
        f"the same way within {budgets.systemic_window_s:.0f} s (at least {budgets.array_systemic_share:.0%}): "
        "recovery stops for the whole array"
    )
