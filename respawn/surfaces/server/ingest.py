"""Detections from external detectors, delivered to incidents the way the detector's are.

An external detector (a site's own log scanner, a health checker) posts what it
saw about a job; it reaches the job attempt's incident by the detector's own
signal-with-start (`respawn.detection.detector.signal_detection`), so it starts the
incident or joins the one already open. What it may claim is checked against
what Slurm and the runbooks say: the job must exist and be enrolled, a node
must be one of the job's, a line must be one a runbook recognises.
"""

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Annotated

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, StringConstraints, model_validator
from temporalio.client import Client
from temporalio.service import RPCError

from respawn.config.cluster import ClusterConfig
from respawn.detection.detector import signal_detection
from respawn.detection.enrolment import NotEnrolled, enrol
from respawn.scheduler.errors import JobNotFound, SchedulerError
from respawn.scheduler.slurm import MAX_JOB_ID
from respawn.services import Services, build_services, connect_temporal
from respawn.surfaces import telemetry
from respawn.wire.evidence import claims_trust
from respawn.wire.incident import Detection, DetectionKind, incident_id

log = logging.getLogger("respawn.surfaces.server.ingest")


class ExternalKind(StrEnum):
    """What an external detector may report (a job's end is Slurm's to say, through the detector)."""

    LOG_LINE = "log_line"
    KERNEL = "kernel"
    METRICS = "metrics"
    NODE_DOWN = "node_down"
    HANG = "hang"
    SLOWDOWN = "slowdown"


_CLOCK_SKEW = timedelta(seconds=60)  # between the external detector's clock and ours
_NEEDS_NODE = {ExternalKind.KERNEL, ExternalKind.METRICS, ExternalKind.NODE_DOWN}
_NEEDS_LINE = set(ExternalKind) - {ExternalKind.NODE_DOWN}


class DetectionReport(BaseModel):
    """A detection posted by an external detector."""

    model_config = ConfigDict(extra="forbid")
    job_id: int = Field(ge=1, le=MAX_JOB_ID)
    kind: ExternalKind
    # The evidence line, as the runbooks will read it: one line, no control characters.
    line: Annotated[str, StringConstraints(min_length=1, max_length=2000, pattern=r"^[^\x00-\x1f\x7f]*$")] | None = None
    node: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")] | None = None
    # The attempt the detector saw; when given and the job has moved on, the report is refused as stale.
    attempt: int | None = Field(default=None, ge=0, le=1_000_000)
    # Where the attempt began in the job's output, when the detector knows it: a byte offset
    # in its file, or under a log server the stream's time stamp in nanoseconds since the epoch
    # (docs/log-sources.md, "Positions"); 0: the evidence reads the tail of the whole output.
    log_offset: int = Field(default=0, ge=0, le=2**63 - 1)
    # When the failure happened, as the external detector saw it (with its time zone);
    # given, it times the detection (respawn_detection_latency_seconds{kind="external"}).
    occurred_at: AwareDatetime | None = None

    @model_validator(mode="after")
    def _complete(self) -> "DetectionReport":
        if self.occurred_at is not None and self.occurred_at > datetime.now(UTC) + _CLOCK_SKEW:
            raise ValueError("occurred_at is in the future")
        if self.kind in _NEEDS_NODE and self.node is None:
            raise ValueError(f"a {self.kind.value} detection names the node")
        if self.kind in _NEEDS_LINE and self.line is None:
            raise ValueError(f"a {self.kind.value} detection carries the line it saw")
        return self


class Accepted(BaseModel):
    incident_id: str
    attempt: int
    pattern: str | None  # the runbook pattern the line matched


class IngestError(Exception):
    """A report refused; 422s name the field that does not hold up, as validation errors do."""

    def __init__(self, status_code: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status_code, self.field = status_code, field

    @property
    def detail(self) -> str | list[dict]:
        if self.status_code != 422:
            return str(self)
        return [{"loc": ["body", self.field], "msg": str(self), "type": "value_error"}]


class Ingest:
    """Delivers reports; Slurm and Temporal are reached on the first report, not at start-up."""

    def __init__(self, config: ClusterConfig) -> None:
        self._config = config
        self._services: Services | None = None
        self._client: Client | None = None
        self._lock = asyncio.Lock()

    async def deliver(self, report: DetectionReport, who: str) -> Accepted:
        config = self._config
        services = self._services = self._services or build_services(config)
        try:
            job = await services.slurm.job(report.job_id)
        except JobNotFound:
            raise IngestError(404, f"Slurm knows no job {report.job_id}") from None
        except SchedulerError as exc:
            raise IngestError(503, f"Slurm cannot be read: {exc}") from None
        enrolment = enrol(job, config)
        if isinstance(enrolment, NotEnrolled):
            raise IngestError(409, f"job {job.job_id} is not enrolled: {enrolment.reason}")
        if report.attempt is not None and report.attempt != job.restart_count:
            raise IngestError(409, f"stale: job {job.job_id} is at attempt {job.restart_count}, not {report.attempt}")
        if report.node is not None and report.node not in job.nodes:
            raise IngestError(
                422,
                f"node {report.node} is not one of job {job.job_id}'s nodes ({', '.join(job.nodes) or 'none'})",
                "node",
            )
        pattern = None
        if report.line is not None:
            if claims_trust(report.line):
                raise IngestError(422, "the line poses as one of Respawn's own", "line")
            hit = services.matcher.failure(report.line)
            if hit is None:
                raise IngestError(422, "the line matches no runbook failure pattern", "line")
            pattern = hit.pattern
        now = datetime.now(UTC)
        detection = Detection(
            kind=DetectionKind(report.kind.value),
            at=min(report.occurred_at or now, now),
            job_id=job.job_id,
            attempt=job.restart_count,
            submitted=job.submit_time,
            line=report.line,
            pattern=pattern,
            node=report.node,
            job_state=job.state,
            log_offset=report.log_offset,
        )
        try:
            delivered = await signal_detection(await self._temporal(), config, enrolment, detection)
        except RPCError as exc:
            raise IngestError(503, f"Temporal unreachable: {exc.message}") from None
        if not delivered:
            iid = incident_id(config.cluster, job.job_id, job.restart_count, detection.kind, submitted=job.submit_time)
            raise IngestError(409, f"incident {iid} has closed and is not reopened")
        iid = delivered.incident_id
        if report.occurred_at is not None:
            telemetry.DETECTION_LATENCY.labels(kind=telemetry.EXTERNAL).observe(telemetry.seconds(detection.at, now))
        log.info("external detection %s from %s delivered to %s", report.kind.value, who, iid)
        return Accepted(incident_id=iid, attempt=job.restart_count, pattern=pattern)

    async def _temporal(self) -> Client:
        async with self._lock:
            if self._client is None:
                try:
                    self._client = await connect_temporal(self._config)
                except Exception as exc:  # the SDK raises a bare RuntimeError when it cannot connect
                    raise IngestError(503, f"Temporal unreachable: {exc}") from None
            return self._client

    async def close(self) -> None:
        if self._services is not None:
            await self._services.close()
