"""A detection made while Temporal is unreachable is delivered once it is back."""

from datetime import UTC, datetime

from temporalio.service import RPCError, RPCStatusCode

from respawn.config.cluster import ClusterConfig, Mode
from respawn.detection.detector import Detector
from respawn.detection.enrolment import Enrolment
from respawn.scheduler.slurm import JobInfo
from respawn.services import build_services
from respawn.wire.incident import Detection, DetectionKind


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
    config = ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
        }
    )
    temporal = FlakyTemporal(failures=2)
    detector = Detector(build_services(config), temporal)
    job = JobInfo(job_id=7, state="FAILED")
    ended = Detection(kind=DetectionKind.JOB_ENDED, at=datetime.now(UTC), job_id=7, attempt=0, job_state="FAILED")

    await detector._send(job, Enrolment(environment="demo", mode=Mode.ACTION), ended)
    assert temporal.started == []
    await detector._resend()  # still down
    assert temporal.started == []
    await detector._resend()
    assert temporal.started == ["incident-c1-7-0"]
    await detector._resend()  # delivered once, not again
    assert temporal.started == ["incident-c1-7-0"]
