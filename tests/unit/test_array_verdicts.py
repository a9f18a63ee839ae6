"""Job arrays (issue 16): each task is recovered on its own, and an array whose tasks fail the
same way stops as a whole. The real assessment activity over a real audit trail."""

from respawn.activities.assessment import AssessmentActivities
from respawn.audit.details import DecidedDetails, EnrolledDetails
from respawn.audit.trail import AuditEvent, EventType, incident_event
from respawn.config.cluster import Budgets
from respawn.decision.ledger import ArrayRecord, array_systemic
from tests.unit.test_job_identity import _request, _services

TIMEOUT = "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out."


def test_the_share_of_an_arrays_tasks_failing_alike_that_stops_it():
    budgets = Budgets(array_systemic_share=0.5)
    assert array_systemic(None, budgets) is None
    assert array_systemic(ArrayRecord(array_job_id=8, tasks=4, failed_alike=1), budgets) is None
    why = array_systemic(ArrayRecord(array_job_id=8, tasks=4, failed_alike=2), budgets)
    assert why is not None and "2 of its 4 tasks failed the same way" in why and "whole array" in why
    # One task is never an array's pattern, however small the share.
    assert (
        array_systemic(ArrayRecord(array_job_id=8, tasks=1, failed_alike=1), Budgets(array_systemic_share=0.1)) is None
    )


def _enrol(services, job_id: int, array_job_id: int) -> None:
    services.audit.record(
        AuditEvent(
            key=f"ids/{job_id}/enrolled",
            event_type=EventType.ENROLLED,
            cluster="ids",
            job_id=job_id,
            details=EnrolledDetails(environment="demo", array_job_id=array_job_id).model_dump(),
        )
    )


async def test_the_second_task_failing_like_the_first_stops_the_array(tmp_path):
    services = _services(tmp_path)
    for task_job in (8, 9, 10, 11):
        _enrol(services, task_job, array_job_id=8)
    first = _request(9, [TIMEOUT], ["node1"])
    first.gathered.array_job_id = 8
    decided = await AssessmentActivities(services).assess(first)
    assert decided.decision.action.value == "restart"  # one task failing is that task's incident
    services.audit.record(
        incident_event(
            EventType.DECIDED, incident_id=first.incident_id, cluster="ids", job_id=9, attempt=0,
            failure_class=decided.attribution.failure_class.value, action="restart", acted=True,
            details=DecidedDetails(array_job_id=8),
        )
    )  # fmt: skip
    second = _request(10, [TIMEOUT], ["node2"])
    second.gathered.array_job_id = 8
    stopped = await AssessmentActivities(services).assess(second)
    assert stopped.decision.action.value == "stop"
    assert "systemic across array 8: 2 of its 4 tasks" in stopped.decision.reason
    # A job of no array, failing the same way at the same time, is its own incident.
    alone = await AssessmentActivities(services).assess(_request(20, [TIMEOUT], ["node3"]))
    assert alone.decision.action.value == "restart"
