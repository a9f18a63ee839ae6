"""Whom a job can blame, and which job it is: the real assessment activity and the
detector's watch, over a real audit trail, without Slurm or Temporal (issue 10)."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from respawn.activities.assessment import AssessmentActivities
from respawn.audit.trail import AuditEvent, EventType, incident_event
from respawn.config.cluster import ClusterConfig, Mode
from respawn.detection.detector import Detector
from respawn.scheduler.slurm import JobInfo
from respawn.services import build_services
from respawn.wire.evidence import Evidence, LineSource, LogLine
from respawn.wire.incident import AssessRequest, Gathered, IncidentInput, incident_id

ENROLLED = '{"respawn":{"environment":"demo","mode":"action"}}'
CLUSTER_NODES = [f"node{i}" for i in range(1, 101)]


def _services(tmp_path: Path):
    return build_services(
        ClusterConfig.model_validate(
            {
                "cluster": "ids",
                "environments": {"demo": {"max_mode": "action"}},
                "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
                "audit_db": str(tmp_path / "audit.db"),
                "budgets": {"systemic_node_share": 0.25},
            }
        )
    )


def _request(
    job_id: int, lines: list[str], nodes: list[str], *, attempt: int = 0, submitted: datetime | None = None
) -> AssessRequest:
    incident = IncidentInput(
        cluster="ids",
        job_id=job_id,
        attempt=attempt,
        submitted=submitted,
        environment="demo",
        mode=Mode.ACTION,
        settle_s=1,
        cascade_wait_s=0,
        follow_timeout_s=60,
    )
    evidence = Evidence(
        cluster="ids",
        job_id=job_id,
        attempt=attempt,
        job_state="FAILED",
        nodes=nodes,
        lines=[LogLine(text=t, seq=i) for i, t in enumerate(lines)],
    )
    gathered = Gathered(
        evidence=evidence,
        log_end=0,
        checkpoint_step=10,
        cluster_nodes=CLUSTER_NODES,
        excluded_nodes=[],
        job_state="FAILED",
    )
    return AssessRequest(
        incident=incident, incident_id=incident_id("ids", job_id, attempt, submitted=submitted), gathered=gathered
    )


async def test_with_no_allocation_known_invented_hosts_blame_nobody_and_move_no_breaker(tmp_path):
    services = _services(tmp_path)
    invented = [f"srun: error: fake{i}.example: task {i}: Killed" for i in range(300)]
    invented += [f"NCCL WARN NET/IB : Got completion from peer fake{i}<1234> with status=12" for i in range(300)]
    assessment = await AssessmentActivities(services).assess(_request(5, invented, nodes=[]))
    assert assessment.attribution.nodes == []
    assert not assessment.nodes.systemic and assessment.nodes.drain == []
    assert assessment.decision.exclude == []


async def test_a_name_outside_the_cluster_is_never_recorded_or_counted(tmp_path):
    services = _services(tmp_path)
    # An earlier decision (before this fix) recorded 300 invented names: they count for nothing.
    services.audit.record(
        incident_event(
            EventType.DECIDED,
            incident_id="incident-ids-4-0",
            cluster="ids",
            job_id=4,
            attempt=0,
            nodes=[f"fake{i}" for i in range(300)],
            acted=True,
            failure_class="gpu_hardware",
        )
    )
    lines = [
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.",
        "srun: error: ghost7: task 1: Killed",
    ]
    assessment = await AssessmentActivities(services).assess(_request(5, lines, nodes=["node1", "node2"]))
    assert set(assessment.attribution.nodes) <= {"node1", "node2"}
    assert not assessment.nodes.systemic, assessment.nodes.reason


async def test_a_new_job_under_a_reused_id_starts_with_no_history(tmp_path):
    services = _services(tmp_path)
    old_submit = datetime(2026, 1, 1, tzinfo=UTC)
    new_submit = old_submit + timedelta(days=30)

    def enrolled(submitted: datetime) -> None:
        services.audit.record(
            AuditEvent(
                key=f"ids/5/enrolled/x/{submitted.isoformat()}",
                event_type=EventType.ENROLLED,
                cluster="ids",
                job_id=5,
                details={"submitted": submitted.isoformat()},
            )
        )

    def decided(iid: str, attempt: int, submitted: datetime) -> None:
        services.audit.record(
            incident_event(
                EventType.DECIDED,
                incident_id=iid,
                cluster="ids",
                job_id=5,
                attempt=attempt,
                acted=True,
                failure_class="gpu_hardware",
                details={"submitted": submitted.isoformat(), "checkpoint_step": 10},
            )
        )

    enrolled(old_submit)
    decided("old-0", 0, old_submit)  # the old job under id 5 failed at checkpoint 10
    enrolled(new_submit)
    # The new job: Slurm requeued its attempt 0 itself (no incident), attempt 1 failed at checkpoint 10 too.
    decided("new-1", 1, new_submit + timedelta(minutes=2))
    xid = ["NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."]
    request = _request(5, xid, ["node1"], attempt=2, submitted=new_submit + timedelta(minutes=5))
    assessment = await AssessmentActivities(services).assess(request)
    # Counting the old job's attempt, three attempts in a row would have saved nothing new: a stop.
    assert assessment.decision.action.value != "stop", assessment.decision.reason
    assert "occurrence 2" in assessment.decision.reason


async def test_the_detector_starts_a_reused_job_id_clean_and_follows_a_requeue_as_the_same_job(tmp_path):
    services = _services(tmp_path)
    detector = Detector(services, client=None)
    submitted = datetime.now(UTC) - timedelta(minutes=5)
    first = JobInfo(job_id=9, state="RUNNING", comment=ENROLLED, submit_time=submitted)
    watch = detector._watch(first)
    requeued = first.model_copy(update={"submit_time": submitted + timedelta(minutes=2), "restart_count": 1})
    assert detector._watch(requeued) is watch  # Slurm moved the submit time at the requeue: the same job
    # ... and again once the old attempt's steps ended (batch_requeue_fini), the restart count unmoved.
    fini = requeued.model_copy(update={"submit_time": submitted + timedelta(minutes=2, seconds=1)})
    assert detector._watch(fini) is watch
    between = requeued.model_copy(update={"submit_time": None, "state": "PENDING"})
    assert detector._watch(between) is watch  # caught between a requeue's steps, no submit time: the same job
    reused = JobInfo(job_id=9, state="RUNNING", comment=ENROLLED, submit_time=submitted + timedelta(minutes=4))
    assert detector._watch(reused) is not watch  # restart count did not move: another job under the id
    enrolled = services.audit.query(cluster="ids", job_id=9, event_types=[EventType.ENROLLED])
    assert [r.details["submitted"] for r in enrolled] == [submitted.isoformat(), reused.submit_time.isoformat()]
    # Their incidents never share an id, so the new job's is never refused as the old one's.
    assert incident_id("ids", 9, 0, submitted=first.submit_time) != incident_id(
        "ids", 9, 0, submitted=reused.submit_time
    )


async def test_a_comment_changed_while_the_job_runs_is_a_new_enrolment(tmp_path):
    services = _services(tmp_path)
    detector = Detector(services, client=None)
    job = JobInfo(job_id=3, state="RUNNING", comment=ENROLLED, submit_time=datetime.now(UTC))
    watch = detector._watch(job)
    changed = job.model_copy(update={"comment": '{"respawn":{"environment":"demo","mode":"observe"}}'})
    assert detector._watch(changed) is watch and watch.enrolment.mode is Mode.OBSERVE
    modes = [
        r.details["mode"] for r in services.audit.query(cluster="ids", job_id=3) if r.event_type is EventType.ENROLLED
    ]
    assert modes == ["action", "observe"]


@pytest.mark.parametrize(("earlier", "drained"), [(2, ["node2"]), (1, [])])
async def test_the_clusters_earlier_decisions_naming_a_node_count_toward_draining_it(tmp_path, earlier, drained):
    services = _services(tmp_path)  # the third incident naming a node drains it (budgets' default)
    named = [("ids", f"incident-ids-{n}-0", ["node2"]) for n in range(earlier)]
    others = [("ids", "incident-ids-8-0", []), ("elsewhere", "incident-elsewhere-9-0", ["node2"])]
    for cluster, incident, nodes in named + others:
        services.audit.record(
            incident_event(
                EventType.DECIDED,
                incident_id=incident,
                cluster=cluster,
                job_id=int(incident.split("-")[2]),
                attempt=0,
                nodes=nodes,
                acted=True,
                failure_class="gpu_hardware",
            )
        )
    xid = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
    request = _request(5, [], nodes=["node1", "node2"])
    request.gathered.evidence.lines = [LogLine(text=xid, source=LineSource.KERNEL, node="node2")]
    assessment = await AssessmentActivities(services).assess(request)
    assert assessment.attribution.nodes == ["node2"]
    assert assessment.nodes.drain == drained
