"""A job Slurm has requeued lists no nodes (PENDING again). A node Slurm calls DOWN can requeue the
job before the incident reads it (seen in CI, the container sandbox's partition test under load:
the dead node went unblamed), so the evidence reads the attempt on the nodes the detector saw it
on, from Slurm's own listing (activities/evidence.py `as_attempt_ran`)."""

from datetime import UTC, datetime

from respawn.activities.evidence import as_attempt_ran
from respawn.scheduler.slurm import JobInfo
from respawn.wire.incident import Detection, DetectionKind, GatherRequest

NOW = datetime(2026, 12, 5, tzinfo=UTC)


def seen(attempt: int, allocation: list[str], kind: DetectionKind = DetectionKind.NODE_DOWN) -> Detection:
    return Detection(kind=kind, at=NOW, job_id=7, attempt=attempt, node="n4", allocation=allocation)


def request(*detections: Detection) -> GatherRequest:
    return GatherRequest(incident_id="i", job_id=7, attempt=0, log_offset=0, detections=list(detections))


def test_a_job_slurm_requeued_is_read_on_the_nodes_its_attempt_ran_on():
    requeued = JobInfo(job_id=7, state="PENDING", restart_count=1)
    req = request(seen(0, []), seen(0, ["n2", "n3", "n4"]))
    assert as_attempt_ran(requeued, req).nodes == ["n2", "n3", "n4"]


def test_slurms_listing_stands_while_it_has_the_nodes():
    running = JobInfo(job_id=7, state="RUNNING", nodes=["n2", "n3"])
    assert as_attempt_ran(running, request(seen(0, ["n2", "n3", "n4"]))).nodes == ["n2", "n3"]


def test_another_attempts_nodes_are_not_this_ones():
    requeued = JobInfo(job_id=7, state="PENDING", restart_count=2)
    assert as_attempt_ran(requeued, request(seen(1, ["n1", "n2"]))).nodes == []
    assert as_attempt_ran(requeued, request()).nodes == []


def test_a_job_slurm_started_again_is_read_on_the_attempts_nodes_not_the_next_ones():
    again = JobInfo(job_id=7, state="RUNNING", restart_count=1, nodes=["n1", "n2", "n3"])
    assert as_attempt_ran(again, request(seen(0, ["n2", "n3", "n4"]))).nodes == ["n2", "n3", "n4"]
