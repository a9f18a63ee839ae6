"""Respawn's own metrics, for Prometheus: how fast and how well recovery works.

Every metric is defined here, once (docs/metrics.md lists them, with the
queries). Each is updated in the process where its event happens: detections
in the detector, scheduler actions and what follows them in the worker's
activities, never in workflow code, which replays. What the audit trail
records is counted only when `AuditTrail.record` says the row is new, so an
activity retried after a crash counts nothing twice.

Labels are small closed sets (detection kinds, failure classes, outcomes,
Slurm commands, error types): never a job id, a node or free text.

The cost gauges (lost GPU-hours by part, ETTR) are the one exception to "where the event
happens": they are a figure over a window, not an event, so the server (`respawn serve`)
folds them from the audit trail when it is scraped, at most once a minute (`CostGauges`).
"""

import logging
import math
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import sqlalchemy as sa
from prometheus_client import Counter, Gauge, Histogram, start_http_server

from respawn.audit.details import DetectedDetails, IncidentClosedDetails
from respawn.audit.trail import AuditEvent, AuditTrail, EventType
from respawn.scheduler.errors import SchedulerError, error_from
from respawn.scheduler.transport import CommandResult, Transport
from respawn.wire.incident import Phase
from respawn.wire.taxonomy import FailureClass

if TYPE_CHECKING:
    from respawn.config.cluster import ClusterConfig, Listen
    from respawn.services import Services

log = logging.getLogger("respawn.surfaces.telemetry")

# Detection kinds as operators graph them: a failure that happened (a fatal
# line, an ended job, a lost node, a GPU fault), a hang, a straggler, or a
# detection an external detector reported through the Advisor API, timed by
# the server that took it in (respawn/surfaces/server/ingest.py).
CRASH, HANG, STRAGGLER, EXTERNAL = "crash", "hang", "straggler", "external"
_KIND_OF = {"hang": HANG, "slowdown": STRAGGLER}  # DetectionKind values; the rest: crash

_LATENCY_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)
_RECOVERY_BUCKETS = (5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)

DETECTION_LATENCY = Histogram(
    "respawn_detection_latency_seconds",
    "From a failure to the detector seeing it, one per incident",
    ["kind"],
    buckets=_LATENCY_BUCKETS,
)
ACTION_LATENCY = Histogram(
    "respawn_action_latency_seconds",
    "From detection to the job released back to the scheduler",
    ["kind"],
    buckets=_LATENCY_BUCKETS,
)
RECOVERY_DURATION = Histogram(
    "respawn_recovery_duration_seconds",
    "From a failure to the job's next attempt training again (a step)",
    ["kind"],
    buckets=_RECOVERY_BUCKETS,
)
INCIDENTS = Counter("respawn_incidents_total", "Incidents closed", ["failure_class", "outcome"])
RESTARTS = Counter("respawn_restarts_total", "Jobs Respawn requeued to run again (recoveries begun)")
RESTARTS_RESUMED = Counter(
    "respawn_restarts_resumed_total", "Restarts whose next attempt trained again (recoveries that succeeded)"
)
STOPS = Counter("respawn_stops_total", "Jobs Respawn stopped because retrying was futile")
EXCLUSIONS = Counter("respawn_exclusions_total", "Nodes newly excluded from a job")
DRAINS = Counter("respawn_drains_total", "Nodes drained")
MARKED_DOWN = Counter("respawn_nodes_marked_down_total", "Nodes Respawn called DOWN: their slurmd silent to two probes")
WATCHDOG_RELEASES = Counter(
    "respawn_watchdog_releases_total", "Held jobs the watchdog released unchanged after the hold timed out"
)
JOBS_MONITORED = Gauge("respawn_jobs_monitored", "Pending and running jobs the detector watches", ["enrolled"])
DETECTOR_LAG = Gauge(
    "respawn_detector_lag_seconds",
    "How far behind the logs the detector reads: the time since its last complete poll began",
)
UNDELIVERED = Gauge(
    "respawn_detections_undelivered",
    "Jobs whose detections Temporal has not taken yet: on their way, or kept while it is unreachable",
)
SCHEDULER_ERRORS = Counter(
    "respawn_scheduler_errors_total", "Scheduler (Slurm) calls that failed", ["command", "error"]
)

# Folded from the audit trail over COST_WINDOW by the server's /metrics (CostGauges, docs/cost.md).
COST_WINDOW = timedelta(days=7)
LOST_GPU_HOURS = Gauge(
    "respawn_lost_gpu_hours",
    "GPU-hours lost to interruptions over the last 7 days, by part (GPUs assumed from the configuration)",
    ["part"],
)
LOST_SECONDS = Gauge(
    "respawn_lost_seconds", "Job-seconds lost to interruptions over the last 7 days, by part", ["part"]
)
ETTR = Gauge(
    "respawn_ettr_ratio",
    "The cluster's effective training time ratio over the last 7 days: productive / wall time (an upper bound)",
)

ALL = (
    DETECTION_LATENCY,
    ACTION_LATENCY,
    RECOVERY_DURATION,
    INCIDENTS,
    RESTARTS,
    RESTARTS_RESUMED,
    STOPS,
    EXCLUSIONS,
    DRAINS,
    MARKED_DOWN,
    WATCHDOG_RELEASES,
    JOBS_MONITORED,
    DETECTOR_LAG,
    UNDELIVERED,
    SCHEDULER_ERRORS,
    LOST_GPU_HOURS,
    LOST_SECONDS,
    ETTR,
)

_CLASSES = {c.value for c in FailureClass}
_OUTCOMES = {p.value for p in Phase}


def kind(detection_kind: str) -> str:
    """The `kind` label of a DetectionKind (or its value, as the audit trail keeps it)."""
    return _KIND_OF.get(str(detection_kind), CRASH)


def seconds(start: datetime, end: datetime) -> float:
    """Elapsed time for a histogram; never negative (clocks of other hosts may run ahead)."""
    return max(0.0, (end - start).total_seconds())


def recorded(event: AuditEvent, audit: AuditTrail) -> None:
    """Count what a newly written audit row says happened (call it only when
    `record` returned True). Runs in the worker, where the activities write them."""
    match event.event_type:
        case EventType.INCIDENT_CLOSED:
            failure_class = event.failure_class if event.failure_class in _CLASSES else "unknown"
            phase = event.detail(IncidentClosedDetails).phase
            INCIDENTS.labels(failure_class=failure_class, outcome=phase if phase in _OUTCOMES else "closed").inc()
        case EventType.HELD:  # only an acting restart holds, once per incident
            RESTARTS.inc()
        case EventType.ADVISED if event.action == "restart":  # advisor transport: the controller restarts it
            RESTARTS.inc()
        case EventType.RESUMED:  # only a restart is followed to its next attempt's first step
            RESTARTS_RESUMED.inc()
        case EventType.STOPPED:
            STOPS.inc()
        case EventType.RELEASED:
            _acted(event, audit)
        case EventType.RECONCILED if event.acted and event.action == "restart":  # the controller released it
            _acted(event, audit)


def _acted(event: AuditEvent, audit: AuditTrail) -> None:
    """The action latency of the incident whose job `event` handed back to the scheduler."""
    detected = audit.query(incident_id=event.incident_id, event_types=[EventType.DETECTED], limit=1)
    if detected:  # its time is the first detection's, as the detector saw it
        detected_kind = detected[0].detail(DetectedDetails).kind or ""
        ACTION_LATENCY.labels(kind=kind(detected_kind)).observe(seconds(detected[0].at, event.at))


class CostGauges:
    """Sets the cost gauges from the audit trail, at most every `every_s` (the server calls
    `refresh` when it is scraped). A trail that cannot be read leaves them as they were."""

    def __init__(self, config: "ClusterConfig", every_s: float = 60.0) -> None:
        self._config, self._every_s = config, every_s
        self._lock = threading.Lock()
        self._last = float("-inf")

    def refresh(self, now: datetime | None = None) -> None:
        from respawn.audit.cost import report_from_trail

        with self._lock:
            if time.monotonic() - self._last < self._every_s:
                return
            self._last = time.monotonic()
            until = now or datetime.now(UTC)
            try:
                audit = AuditTrail(self._config.audit_db)
                try:
                    report = report_from_trail(
                        audit, self._config.cluster, self._config.accounting, until - COST_WINDOW, until
                    )
                finally:
                    audit.close()
            except (sa.exc.SQLAlchemyError, OSError) as exc:
                log.warning("cost gauges not refreshed: cannot read the audit trail: %s", exc)
                return
            for part in report.parts:
                LOST_GPU_HOURS.labels(part=part.part.value).set(part.gpu_hours)
                LOST_SECONDS.labels(part=part.part.value).set(part.seconds)
            ETTR.set(math.nan if report.ettr is None else report.ettr)


class ErrorCountingTransport:
    """A scheduler transport that counts failed Slurm calls by command and error type."""

    def __init__(self, inner: Transport) -> None:
        self._inner = inner

    async def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        try:
            result = await self._inner.run(argv, timeout=timeout, env=env)
        except SchedulerError as exc:  # not run, or no answer in time
            _scheduler_error(argv, exc)
            raise
        if result.rc != 0:
            _scheduler_error(argv, error_from(result, argv))
        return result

    async def close(self) -> None:
        await self._inner.close()


def _scheduler_error(argv: Sequence[str], exc: SchedulerError) -> None:
    # The program and, for scontrol, its verb: the rest names jobs, nodes and reasons.
    program = Path(argv[0]).name
    verb = argv[1] if program == "scontrol" and len(argv) > 1 and argv[1].isalpha() else ""
    SCHEDULER_ERRORS.labels(command=f"{program} {verb}".strip(), error=type(exc).__name__).inc()


def count_scheduler_errors(services: "Services") -> None:
    """Count the process's failed scheduler calls (respawn_scheduler_errors_total)."""
    services.slurm.transport = ErrorCountingTransport(services.slurm.transport)


def expose(listen: "Listen | None") -> None:
    """Serve this process's metrics on `listen` (none: not served). A port that cannot be
    bound is logged, not fatal: recovery matters more than its metrics."""
    if listen is None:
        return
    try:
        start_http_server(listen.port, addr=listen.host)
    except OSError as exc:
        log.error(
            "cannot serve metrics on %s:%s: %s; carrying on without", listen.host, listen.port, exc.strerror or exc
        )
        return
    log.info("metrics on http://%s:%s/metrics", listen.host, listen.port)
