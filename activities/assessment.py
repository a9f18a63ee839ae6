import asyncio
import logging
from collections.abc import Set as AbstractSet
from datetime import UTC, datetime, timedelta
from typing import cast

from temporalio import activity

from respawn.activities.evidence import EvidenceActivities
from respawn.activities.heartbeat import beating
from respawn.attribution.attribute import attribute
from respawn.attribution.hook import consult
from respawn.audit.details import DecidedDetails, EnrolledDetails, NotInterruptedDetails
from respawn.audit.trail import AuditRow, EventType
from respawn.decision.decide import JobHistory, JobShape, PastIncident, decide
from respawn.decision.ledger import ArrayRecord, NodeRecord, judge_nodes
from respawn.detection.interruption import judge
from respawn.launcher.task import EXIT_NO_REQUEUE
from respawn.services import Services
from respawn.wire.evidence import Evidence, LineSource
from respawn.wire.incident import AssessAttemptRequest, Assessed, Assessment, AssessRequest, IncidentInput
from respawn.wire.taxonomy import FailureClass

log = logging.getLogger("respawn.assessment")
# Sources that speak for a node itself, unlike a job's output (anyone's text).
_NODE_LEVEL = {LineSource.KERNEL, LineSource.METRICS, LineSource.SCHEDULER}


class AssessmentActivities:
    def __init__(self, services: Services) -> None:
        self._s = services
        self._evidence = EvidenceActivities(services)

    @activity.defn(name="assess_attempt")
    async def assess_attempt(self, req: AssessAttemptRequest) -> Assessed:
        """gather_evidence, then assess, in one activity: one task-queue round trip and one
        workflow task per assessment instead of two (what a storm's incidents queue for), and
        the evidence not sent back through the incident's history to be judged."""
        async with beating():  # a worker that dies in it is replaced within the heartbeat timeout
            gathered = await self._evidence.gather_evidence(req.gather)
            assessment = await self.assess(
                AssessRequest(
                    incident=req.incident,
                    incident_id=req.gather.incident_id,
                    gathered=gathered,
                    detections=req.gather.detections,
                )
            )
        return Assessed(gathered=gathered, assessment=assessment)

    @activity.defn(name="assess")
    async def assess(self, req: AssessRequest) -> Assessment:
        """Attribute with the runbooks, then decide from the job's history.

        Both steps are pure functions; this activity only feeds them the
        runbooks and the history, which live outside the workflow. A configured
        attribution hook is asked in between; it falls back, never fails.
        """
        gathered = req.gathered
        # Off the event loop: the job's text is read here, and the worker runs other incidents.
        attribution = await asyncio.to_thread(attribute, self._s.catalogue, self._s.matcher, gathered.evidence)
        hook = self._s.config.attribution_hook
        if hook is not None:
            attribution = await consult(hook, self._s.catalogue, gathered.evidence, attribution)
        runbook = self._s.catalogue.runbook(attribution.failure_class)
        evidence = gathered.evidence
        # Only a node of this attempt's allocation, and of the cluster, can be blamed, recorded
        # and counted in the node record: with no allocation known, nobody is.
        ours = set(evidence.nodes) & set(gathered.cluster_nodes)
        if any(n not in ours for n in attribution.nodes):
            attribution = attribution.model_copy(update={"nodes": [n for n in attribution.nodes if n in ours]})
        suspects = attribution.nodes if attribution.node_implicated else []
        record = await asyncio.to_thread(self._node_record, req.incident_id, set(gathered.cluster_nodes))
        array = await asyncio.to_thread(self._array, req, attribution.failure_class)
        # Nodes the launcher took out of use in the job stay out at a requeue.
        excluded = sorted(set(gathered.excluded_nodes) | set(gathered.launcher.excluded if gathered.launcher else []))
        history = await asyncio.to_thread(self._history, req.incident, excluded)
        nodes = judge_nodes(
            suspects, self._node_evidence(evidence), record, self._s.config.budgets, gathered.cluster_nodes
        )
        if nodes.systemic:
            log.error("incident %s: %s", req.incident_id, nodes.reason)
        decision = decide(
            attribution,
            runbook,
            history,
            self._s.config.budgets,
            JobShape(
                job_nodes=evidence.nodes,
                cluster_nodes=gathered.cluster_nodes,
                eligible_nodes=gathered.eligible_nodes,
            ),
            gathered.checkpoint_step,
            systemic=nodes.systemic,
            launcher=gathered.launcher,
            # NVRx's "do not requeue": the step under Respawn's launcher, or the job itself, exited 93.
            no_requeue=(gathered.launcher is not None and gathered.launcher.no_requeue)
            or evidence.exit_code == EXIT_NO_REQUEUE,
            array=array,
        )
        interruption = judge(
            gathered.job_state,
            gathered.restart_count,
            req.incident.attempt,
            req.detections,
            self._s.catalogue.onset,
            gathered.launcher,
            gathered.job_restarts,
            gathered.own_launcher_deciding,
        )
        return Assessment(
            attribution=attribution,
            decision=decision,
            nodes=nodes,
            interruption=interruption,
            cascade=runbook.cascade and not attribution.nodes,
        )

    def _node_evidence(self, evidence: Evidence) -> set[str]:
        """Nodes that node-level sources (kernel log, GPU metrics, Slurm) say are faulty."""
        backed = set(evidence.down_nodes)
        for line in evidence.lines:
            if line.source in _NODE_LEVEL and line.node and self._s.matcher.failure(line.text):
                backed.add(line.node)
        return backed

    def _node_record(self, incident_id: str, cluster_nodes: set[str]) -> NodeRecord:
        """Nodes implicated by other incidents within the windows: only the cluster's own count."""
        budgets = self._s.config.budgets
        now = datetime.now(UTC)
        since = now - timedelta(seconds=max(budgets.node_window_s, budgets.systemic_window_s))
        rows = self._s.audit.implicated(cluster=self._s.config.cluster, since=since)
        record = NodeRecord()
        for row in rows:
            if row.incident_id == incident_id:
                continue
            age = (now - row.at).total_seconds()
            for node in row.nodes:
                if node not in cluster_nodes:
                    continue
                if age <= budgets.node_window_s:
                    record.in_drain_window[node] = record.in_drain_window.get(node, 0) + 1
                if age <= budgets.systemic_window_s:
                    record.in_systemic_window.add(node)
        return record

    def _array(self, req: AssessRequest, failure_class: FailureClass) -> ArrayRecord | None:
        """For a task of a job array: how many tasks the detector has seen, and how many failed with
        this class within the systemic window (other incidents' decisions, and this one)."""
        array_id = req.gathered.array_job_id
        if array_id is None:
            return None
        cluster = self._s.config.cluster
        since = datetime.now(UTC) - timedelta(seconds=self._s.config.budgets.systemic_window_s)
        enrolled = self._s.audit.query(
            cluster=cluster, event_types=[EventType.ENROLLED], array_job_id=array_id, limit=100_000
        )
        tasks = {r.job_id for r in enrolled}
        decided = self._s.audit.query(
            cluster=cluster, event_types=[EventType.DECIDED], since=since, array_job_id=array_id, limit=100_000
        )
        alike = {
            r.job_id for r in decided if r.failure_class == failure_class.value and r.incident_id != req.incident_id
        }
        return ArrayRecord(
            array_job_id=array_id,
            tasks=max(len(tasks | {req.incident.job_id}), 1),
            failed_alike=len(alike | {req.incident.job_id}),
        )

    def _history(self, incident: IncidentInput, excluded: list[str]) -> JobHistory:
        rows = self._s.audit.query(
            cluster=self._s.config.cluster,
            job_id=incident.job_id,
            event_types=[EventType.DECIDED, EventType.ENROLLED, EventType.RELAUNCHED, EventType.NOT_INTERRUPTED],
        )
        # Slurm reuses job ids: an older job's decisions under this id are not this job's history.
        since = _first_submitted(rows, incident.submitted)
        ours = [
            r
            for r in rows
            if r.event_type is EventType.DECIDED
            and (since is None or (r.detail(DecidedDetails).submitted or since) >= since)
        ]
        decided = {r.incident_id for r in ours}
        relaunched = {
            r.incident_id
            for r in rows
            if r.event_type is EventType.RELAUNCHED and r.incident_id is not None and r.incident_id in decided
        }
        # The job's own launcher's restarts (torchrun, ft_launcher), as the incidents that left them to it saw.
        own = sum(
            r.detail(NotInterruptedDetails).job_restarts or 0
            for r in rows
            if r.event_type is EventType.NOT_INTERRUPTED and (since is None or r.at.isoformat() >= since)
        )
        return JobHistory(
            # Slurm's restart count is the attempt number; relaunches in the job count as well.
            restarts=incident.attempt + len(relaunched) + own,
            incidents=past_incidents(ours, incident.attempt, relaunched),
            excluded_nodes=excluded,
        )


def _first_submitted(rows: list[AuditRow], current: datetime | None) -> str | None:
    """When the job under this id was first submitted, as the detector saw it before its first
    requeue (Slurm moves the submit time at each requeue): the newest such time not after the
    current attempt's. None when unknown: every decision under the id counts."""
    if current is None:
        return None
    now = current.astimezone(UTC).isoformat()
    submitted = [r.detail(EnrolledDetails).submitted for r in rows if r.event_type is EventType.ENROLLED]
    return max((s for s in submitted if s and s <= now), default=None)


def past_incidents(
    decided: list[AuditRow], attempt: int, relaunched: AbstractSet[str] = frozenset()
) -> list[PastIncident]:
    """The job's earlier interruptions: each one the job's launcher relaunched in the
    allocation (`relaunched`: their incident ids), and one per earlier attempt, the one
    that ended it.

    An attempt can have two incidents (a straggler recommendation, then a crash):
    the one acted on ended the attempt, so it is the one that counts towards the
    ladder and the checkpoint budget; between equals, the later one.
    """
    in_job = {r.incident_id: r for r in decided if r.incident_id in relaunched and r.failure_class}
    ended: dict[int, AuditRow] = {}
    for row in decided:
        if row.incident_id in relaunched or row.attempt is None or row.attempt >= attempt or not row.failure_class:
            continue
        best = ended.get(row.attempt)
        if best is None or (bool(row.acted), row.id) > (bool(best.acted), best.id):
            ended[row.attempt] = row
    rows = sorted([*in_job.values(), *ended.values()], key=lambda r: (r.attempt or 0, r.id))
    return [
        PastIncident(
            attempt=r.attempt or 0,
            failure_class=FailureClass(cast(str, r.failure_class)),
            nodes=r.nodes,  # set: filtered above
            checkpoint_step=r.detail(DecidedDetails).checkpoint_step,
        )
        for r in rows
    ]
