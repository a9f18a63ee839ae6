"""What-if replay (`respawn replay`): the decision stage run again, with other runbooks or
budgets, over the evidence the audit trail recorded (issue 15).

Each acted-on or recommended incident's DECIDED row, with its ATTRIBUTED row, holds what
deciding again needs: the attribution (class, layer, nodes, whether a restart helps, the
deciding line), the newest checkpoint, whether the failure was systemic, the allocation,
the cluster's size and the job's launcher as the decision saw them. The job's history is
rebuilt from the rows before the incident, as it happened (a replay does not chain its
own changed decisions into later ones: each incident is judged against the real past).

With changed patterns the deciding line is read again: an incident whose line the new
runbooks put in another class is decided as that class ("re-read"). The other lines of
the evidence are not on record, so a new pattern for a line that did not decide cannot
be replayed; nor can incidents recorded before the allocation was (`not replayable`).

Pure over the rows it is given, apart from reading them: tested without Temporal or Slurm.
"""

import statistics
from dataclasses import dataclass, replace
from datetime import datetime

from respawn.activities.assessment import past_incidents
from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.audit.cost import IncidentCost, Part
from respawn.audit.details import AttributedDetails, DecidedDetails
from respawn.audit.trail import AuditRow, AuditTrail, EventType
from respawn.config.cluster import Budgets
from respawn.decision.decide import Decision, JobHistory, JobShape, decide
from respawn.wire.attribution import Attribution
from respawn.wire.taxonomy import CauseLayer, FailureClass


@dataclass(frozen=True)
class Replayed:
    incident_id: str
    job_id: int
    failure_class: str | None
    before: str | None  # the action recorded
    after: str | None  # the action the changed runbooks decide; None: not replayable
    before_exclude: list[str]
    after_exclude: list[str]
    why: str  # the new decision's reason, or why it could not be replayed
    reread: bool = False  # the deciding line was put in another class by the new patterns
    # What the recorded decision cost (respawn/audit/cost.py), and the change's estimated effect
    # on it (negative: less lost); None where the rows cannot tell (`effect_note` says why).
    lost_seconds: float | None = None
    lost_gpu_hours: float | None = None
    effect_seconds: float | None = None
    effect_gpu_hours: float | None = None
    effect_note: str = ""

    @property
    def replayable(self) -> bool:
        return self.after is not None

    @property
    def changed(self) -> bool:
        return self.replayable and (self.before, sorted(self.before_exclude)) != (
            self.after,
            sorted(self.after_exclude),
        )

    def row(self) -> dict[str, object]:
        return {
            "incident_id": self.incident_id,
            "job_id": self.job_id,
            "failure_class": self.failure_class,
            "before": self.before,
            "after": self.after,
            "before_exclude": self.before_exclude,
            "after_exclude": self.after_exclude,
            "changed": self.changed,
            "replayable": self.replayable,
            "reread": self.reread,
            "why": self.why,
            "lost_seconds": self.lost_seconds,
            "lost_gpu_hours": self.lost_gpu_hours,
            "effect_seconds": self.effect_seconds,
            "effect_gpu_hours": self.effect_gpu_hours,
            "effect_note": self.effect_note,
        }


def replay(
    rows: list[AuditRow],
    catalogue: Catalogue,
    budgets: Budgets,
    since: datetime | None = None,
    costs: list[IncidentCost] | None = None,
) -> list[Replayed]:
    """Every incident decided since `since`, decided again with `catalogue` and `budgets`; with
    the incidents' `costs` (the accounting of the same trail), each change's estimated effect."""
    matcher = Matcher.from_catalogue(catalogue)
    attributed = {r.incident_id: r for r in rows if r.event_type is EventType.ATTRIBUTED}
    decided = [r for r in rows if r.event_type is EventType.DECIDED and r.incident_id]
    relaunched = {r.incident_id for r in rows if r.event_type is EventType.RELAUNCHED and r.incident_id}
    out = []
    for row in decided:
        if since is not None and row.at < since:
            continue
        earlier = [r for r in decided if r.job_id == row.job_id and r.id < row.id]
        out.append(_again(row, attributed.get(row.incident_id), earlier, relaunched, catalogue, matcher, budgets))
    return [_effect(r, costs) for r in out] if costs is not None else out


def _effect(r: Replayed, costs: list[IncidentCost]) -> Replayed:
    """The change's effect on lost time, estimated from what the trail measured. The recovery an
    incident went through is its time from detection to training again; a rung's typical
    recovery is the median of the incidents in the trail that took it."""
    by_id = {c.incident_id: c for c in costs}
    cost = by_id.get(r.incident_id)
    if cost is None:
        return replace(r, effect_note="no accounting for the incident in the range")
    recorded = replace(r, lost_seconds=cost.lost_seconds, lost_gpu_hours=cost.lost_gpu_hours)
    if not r.changed:
        return recorded
    if r.before == r.after:
        return replace(recorded, effect_seconds=0.0, effect_gpu_hours=0.0 if cost.gpus else None,
                       effect_note="the same rung, other exclusions: the same recovery")  # fmt: skip
    spent = _recovery(cost)
    typical: dict[str, list[float]] = {}
    for c in costs:
        if c.action and c.interrupted and (seconds := _recovery(c)) is not None:
            typical.setdefault(c.action, []).append(seconds)
    if r.after == "stop":
        if spent is None:
            return replace(recorded, effect_note="its recovery's parts are not all on record")
        effect, note = -spent, "its recovery not spent; the job's remaining training is forgone instead (not counted)"
    elif r.after in typical and (spent is not None or r.before == "stop"):
        effect = statistics.median(typical[r.after]) - (spent or 0.0)
        note = (
            f"the median recovery of the trail's {len(typical[r.after])} {r.after} incident(s) in place of this one's"
        )
    else:
        return replace(recorded, effect_note=f"no {r.after} incident in the range to estimate its recovery from")
    gpu_hours = effect * cost.gpus / 3600 if cost.gpus else None
    return replace(recorded, effect_seconds=round(effect, 3), effect_gpu_hours=gpu_hours, effect_note=note)


def _recovery(cost: IncidentCost) -> float | None:
    """Detection to training again: what a rung costs besides the fault and the work redone."""
    parts = [cost.part(Part.DETECTION_TO_ACTION).seconds, cost.part(Part.ACTION_TO_TRAINING).seconds]
    return None if any(p is None for p in parts) else sum(p for p in parts if p is not None)


def read_rows(trail: AuditTrail, cluster: str) -> list[AuditRow]:
    """The rows a replay reads: decisions, their attributions, relaunches (all of them: the
    history of an incident since may begin before it)."""
    types = [EventType.DECIDED, EventType.ATTRIBUTED, EventType.RELAUNCHED]
    return trail.query(cluster=cluster, event_types=types, limit=1_000_000)


def _again(
    row: AuditRow,
    attributed: AuditRow | None,
    earlier: list[AuditRow],
    relaunched: set[str],
    catalogue: Catalogue,
    matcher: Matcher,
    budgets: Budgets,
) -> Replayed:
    details = row.detail(DecidedDetails)
    recorded = Replayed(
        incident_id=row.incident_id or "",
        job_id=row.job_id,
        failure_class=row.failure_class,
        before=row.action,
        after=None,
        before_exclude=details.exclude,
        after_exclude=[],
        why="",
    )
    if not details.job_nodes or details.cluster_size is None or attributed is None or not row.failure_class:
        why = "not replayable: recorded before decisions kept the allocation and the cluster's size"
        return replace(recorded, why=why)
    attribution = _attribution(row, attributed)
    reread = False
    if attribution.line:
        again = classify_text(catalogue, matcher, attribution.line)
        if again.failure_class is not attribution.failure_class and again.pattern is not None:
            attribution, reread = _reread(attribution, again), True
    history = JobHistory(
        restarts=(row.attempt or 0) + sum(1 for r in earlier if r.incident_id in relaunched),
        incidents=past_incidents(earlier, row.attempt or 0, relaunched),
        excluded_nodes=sorted(set(details.exclude) - set(details.newly_excluded)),
    )
    # The cluster as the decision saw it: the allocation and as many other nodes as it had.
    others = [f"(node {i})" for i in range(max(0, details.cluster_size - len(details.job_nodes)))]
    shape = JobShape(job_nodes=details.job_nodes, cluster_nodes=[*details.job_nodes, *others])
    decision: Decision = decide(
        attribution,
        catalogue.runbook(attribution.failure_class),
        history,
        budgets,
        shape,
        details.checkpoint_step,
        systemic=bool(details.systemic),
        launcher=details.launcher,
    )
    return replace(
        recorded,
        failure_class=attribution.failure_class.value,
        after=decision.action.value,
        after_exclude=decision.exclude,
        why=decision.reason,
        reread=reread,
    )


def _attribution(row: AuditRow, attributed: AuditRow) -> Attribution:
    a = attributed.detail(AttributedDetails)
    return Attribution(
        failure_class=FailureClass(row.failure_class or ""),
        cause_layer=CauseLayer(row.cause_layer or CauseLayer.AMBIGUOUS.value),
        node_implicated=bool(a.node_implicated),
        nodes=row.nodes,
        recoverable_by_restart=a.recoverable_by_restart,
        pattern=row.pattern,
        line=a.line,
        unknown=bool(a.unknown),
    )


def _reread(recorded: Attribution, again: Attribution) -> Attribution:
    """The recorded incident as the new patterns read its deciding line: their class, layer and
    verdict on a restart; the nodes as recorded (only the allocation's were ever kept)."""
    return again.model_copy(update={"nodes": recorded.nodes if again.node_implicated else [], "line": recorded.line})
