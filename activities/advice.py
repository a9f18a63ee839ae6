"""The advisor transport's side of an incident: publish advice, then wait for a
controller to reconcile it. Respawn changes nothing on the scheduler here."""

import asyncio
from contextlib import closing
from datetime import UTC, datetime, timedelta

from temporalio import activity

from respawn.activities.audit import record
from respawn.advisor.advice import TERMINAL, Advice, AdviceRef, AdviceRequest, AdviceStore, Outcome, Status
from respawn.audit.details import AdvisedDetails, ReconciledDetails
from respawn.audit.trail import EventType, incident_event
from respawn.services import Services
from respawn.store.engine import Location

_POLL_S = 0.25


class AdviceActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="publish_advice")
    async def publish_advice(self, req: AdviceRequest) -> Advice:
        """Once per incident: a retry finds the advice already there and returns it, same generation."""
        advice = await asyncio.to_thread(_publish, self._s.config.audit_db, req)
        row = incident_event(
            EventType.ADVISED,
            incident_id=req.incident_id,
            cluster=req.cluster,
            job_id=req.job_id,
            attempt=req.attempt,
            nodes=req.exclude,
            action=req.desired.value,
            details=AdvisedDetails(
                generation=advice.generation, exclude=req.exclude, drain=req.drain, reason=req.reason
            ),
        )
        await record(self._s.audit, row)
        return advice

    @activity.defn(name="await_reconciliation")
    async def await_reconciliation(self, ref: AdviceRef) -> Outcome:
        """Until a controller says converged or abandoned, the advice is superseded, or time runs out
        (counted from the publication, so a retry on another worker does not start the clock again)."""
        with closing(AdviceStore(self._s.config.audit_db)) as store:
            while True:
                activity.heartbeat()
                advice, current = await asyncio.to_thread(_read, store, ref)
                assert advice is not None and current is not None  # published before this was scheduled
                if advice.status in TERMINAL:
                    outcome = Outcome(
                        generation=ref.generation,
                        converged=advice.status is Status.CONVERGED,
                        detail=f"{advice.controller}: {advice.status.value}: {advice.detail}",
                    )
                    break
                if current.generation != ref.generation:
                    outcome = Outcome(
                        generation=ref.generation,
                        converged=False,
                        detail=f"superseded by generation {current.generation}",
                    )
                    break
                if datetime.now(UTC) >= advice.published_at + timedelta(seconds=ref.timeout_s):
                    outcome = Outcome(
                        generation=ref.generation,
                        converged=False,
                        detail=f"no controller reconciled it within {ref.timeout_s:.0f} s"
                        f" (last status: {advice.status.value})",
                    )
                    break
                await asyncio.sleep(_POLL_S)
        row = incident_event(
            EventType.RECONCILED,
            incident_id=ref.incident_id,
            cluster=ref.cluster,
            job_id=ref.job_id,
            attempt=ref.attempt,
            nodes=advice.exclude,
            action=advice.desired.value,
            acted=outcome.converged,
            details=ReconciledDetails(
                generation=ref.generation,
                status=advice.status.value,
                controller=advice.controller,
                detail=outcome.detail,
            ),
        )
        await record(self._s.audit, row)
        return outcome


# The advice store's calls block (SQLite or PostgreSQL): each runs in a thread, off the worker's event loop.
def _publish(db: Location, req: AdviceRequest) -> Advice:
    with closing(AdviceStore(db)) as store:
        return store.publish(req)


def _read(store: AdviceStore, ref: AdviceRef) -> tuple[Advice | None, Advice | None]:
    return store.get(ref.cluster, ref.job_id, ref.generation), store.current(ref.cluster, ref.job_id)
