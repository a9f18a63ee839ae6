"""A detection made while Temporal is unreachable is delivered once it is back."""

import asyncio
from datetime import UTC, datetime

from temporalio.service import RPCError, RPCStatusCode

from respawn.config.cluster import ClusterConfig, Mode
from respawn.detection.detector import Detector
from respawn.detection.enrolment import Enrolment
from respawn.scheduler.slurm import JobInfo
from respawn.services import build_services
from respawn.wire.incident import Detection, DetectionKind


def _detector(tmp_path, temporal, **settings) -> Detector:
    """A detector of cluster c1 whose Temporal client is `temporal`."""
    config = ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            **settings,
        }
    )
    return Detector(build_services(config), temporal)


class FlakyTemporal:
    """Refuses the first `failures` calls as an unreachable server would."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.started: list[str] = []

    async def start_workflow(self, *args, id: str, **kwargs):
        if self.failures:
            self.failures -= 1
            raise RPCError("connection refused", RPCStatusCode.UNAVAILABLE, b"")
        self.started.append(id)


async def test_detection_made_while_temporal_is_down_is_sent_at_the_next_poll(tmp_path):
    temporal = FlakyTemporal(failures=2)
    detector = _detector(tmp_path, temporal)
    job = JobInfo(job_id=7, state="FAILED")
    ended = Detection(kind=DetectionKind.JOB_ENDED, at=datetime.now(UTC), job_id=7, attempt=0, job_state="FAILED")

    await detector._send(job, Enrolment(environment="demo", mode=Mode.ACTION), ended)
    assert temporal.started == []
    detector._resend()  # still down
    await detector.delivered()
    assert temporal.started == []
    detector._resend()
    await detector.delivered()
    assert temporal.started == ["incident-c1-7-0"]
    detector._resend()  # delivered once, not again
    await detector.delivered()
    assert temporal.started == ["incident-c1-7-0"]


class SlowTemporal:
    """Answers each start after `delay` seconds, counting how many are in flight at once."""

    def __init__(self, delay: float) -> None:
        self.delay, self.in_flight, self.most = delay, 0, 0
        self.started: list[str] = []

    async def start_workflow(self, *args, id: str, **kwargs):
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        await asyncio.sleep(self.delay)  # the server's latency, not a synchronisation
        self.in_flight -= 1
        self.started.append(id)


async def test_a_storm_of_failures_reaches_temporal_side_by_side_each_job_in_its_order(tmp_path):
    temporal = SlowTemporal(delay=0.05)
    detector = _detector(tmp_path, temporal, detector={"max_concurrent_deliveries": 8})
    enrolment = Enrolment(environment="demo", mode=Mode.ACTION)
    outbox = []
    for job_id in range(1, 41):
        job = JobInfo(job_id=job_id, state="FAILED")
        found = [
            Detection(kind=kind, at=datetime.now(UTC), job_id=job_id, attempt=0, job_state="FAILED")
            for kind in (DetectionKind.LOG_LINE, DetectionKind.JOB_ENDED)
        ]
        outbox.append((job, enrolment, found))
    detector._deliver(outbox)
    await detector.delivered()
    assert len(temporal.started) == 80 and temporal.most == 8  # bounded, and side by side
    # Within a job, the detections went in the order they were made (one after the other).
    assert all(temporal.started.count(f"incident-c1-{j}-0") == 2 for j in range(1, 41))


class RecordingTemporal:
    def __init__(self) -> None:
        self.summaries: list[str] = []

    async def start_workflow(self, *args, id: str, static_summary: str, **kwargs):
        self.summaries.append(static_summary)


async def test_an_incident_starts_with_a_summary_in_respawns_words_not_the_jobs(tmp_path):
    temporal = RecordingTemporal()
    detector = _detector(tmp_path, temporal)
    line = "NCCL WARN NET/IB : Got completion [see](http://example.invalid) `node9` **now**"
    seen = Detection(
        kind=DetectionKind.LOG_LINE,
        at=datetime.now(UTC),
        job_id=7,
        attempt=2,
        line=line,
        pattern="nccl-ib-completion-error",
    )

    await detector._send(JobInfo(job_id=7, state="RUNNING"), Enrolment(environment="demo", mode=Mode.OBSERVE), seen)
    ended = Detection(kind=DetectionKind.JOB_ENDED, at=datetime.now(UTC), job_id=8, attempt=0, job_state="NODE_FAIL")
    await detector._send(JobInfo(job_id=8, state="NODE_FAIL"), Enrolment(environment="demo", mode=Mode.ACTION), ended)
    assert temporal.summaries == [
        "job 7, attempt 2 on c1 (observe): log_line nccl-ib-completion-error",
        "job 8, attempt 0 on c1 (action): job_ended (Slurm: NODE_FAIL)",
    ]
