from temporalio import activity

from respawn.attribute import attribute
from respawn.audit import EventType
from respawn.decision import JobHistory, JobShape, PastIncident, decide
from respawn.hook import consult
from respawn.incident import Assessment, AssessRequest
from respawn.services import Services
from respawn.taxonomy import FailureClass


class AssessmentActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="assess")
    async def assess(self, req: AssessRequest) -> Assessment:
        """Attribute with the runbooks, then decide from the job's history.

        Both steps are pure functions; this activity only feeds them the
        runbooks and the history, which live outside the workflow. A configured
        attribution hook is asked in between; it falls back, never fails.
        """
        gathered = req.gathered
        attribution = attribute(self._s.catalogue, self._s.matcher, gathered.evidence)
        hook = self._s.config.attribution_hook
        if hook is not None:
            attribution = await consult(hook, self._s.catalogue, gathered.evidence, attribution)
        runbook = self._s.catalogue.runbook(attribution.failure_class)
        decision = decide(
            attribution,
            runbook,
            self._history(req.incident.job_id, req.incident.attempt, gathered.excluded_nodes),
            self._s.config.budgets,
            JobShape(job_nodes=gathered.evidence.nodes, cluster_nodes=gathered.cluster_nodes),
            gathered.checkpoint_step,
        )
        return Assessment(attribution=attribution, decision=decision)

    def _history(self, job_id: int, attempt: int, excluded: list[str]) -> JobHistory:
        rows = self._s.audit.query(
            cluster=self._s.config.cluster, job_id=job_id, event_types=[EventType.DECIDED]
        )
        earlier = {r.attempt: r for r in rows if r.attempt is not None and r.attempt < attempt}
        return JobHistory(
            restarts=attempt,  # Slurm's restart count is the attempt number
            incidents=[
                PastIncident(
                    attempt=a,
                    failure_class=FailureClass(r.failure_class),
                    nodes=r.nodes,
                    checkpoint_step=r.details.get("checkpoint_step"),
                )
                for a, r in sorted(earlier.items())
                if r.failure_class
            ],
            excluded_nodes=excluded,
        )
