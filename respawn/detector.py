"""The detector: watches every job of one cluster and turns trouble into incidents.

Once per poll it reads all jobs from Slurm (one `squeue --json`), the node
states (one `sinfo --json`), and the new output of each enrolled job. A failure
line, a job that ended badly or a node of the job going down becomes a
Detection, sent to the incident workflow of that job attempt with
signal-with-start, so everything about one interruption lands in one incident.
"""

import asyncio
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from respawn.audit import AuditEvent, EventType
from respawn.enrolment import Enrolment, NotEnrolled, enrol
from respawn.incident import Detection, DetectionKind, IncidentInput, incident_id
from respawn.joblog import read_lines
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.services import Services

log = logging.getLogger("respawn.detector")

# Attempts that ended in one of these states need recovery; COMPLETED and
# CANCELLED (the owner's decision) do not.
FAILED_STATES = {"FAILED", "NODE_FAIL", "OUT_OF_MEMORY", "TIMEOUT", "BOOT_FAIL", "DEADLINE", "PREEMPTED"}
_QUIET_STATES = {"PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SUSPENDED"}


@dataclass
class _Watch:
    """What the detector remembers about one job."""

    enrolment: Enrolment | NotEnrolled
    comment: str
    attempt: int = -1
    log_offset: int = 0
    attempt_offset: int = 0  # where the current attempt's output began
    sent: set[str] = field(default_factory=set)  # detections already signalled this attempt
    ended: bool = False  # the current attempt's end is handled


class Detector:
    def __init__(self, services: Services, client: Client) -> None:
        self._s = services
        self._client = client
        self._jobs: dict[int, _Watch] = {}
        self._kernel_offsets: dict[str, int] = {}
        self._started = datetime.now(UTC)

    @property
    def watches(self) -> dict[int, _Watch]:
        return self._jobs

    async def run(self, stop: asyncio.Event) -> None:
        interval = self._s.config.detector.poll_interval_s
        while not stop.is_set():
            began = time.monotonic()
            try:
                await self.poll_once()
            except SchedulerError as exc:
                log.warning("poll failed, will retry: %s", exc)
            except Exception:  # one bad poll must not stop detection for the cluster
                log.exception("poll failed")
            try:
                await asyncio.wait_for(stop.wait(), timeout=max(0.0, interval - (time.monotonic() - began)))
            except TimeoutError:
                pass

    async def poll_once(self) -> list[Detection]:
        jobs, nodes = await asyncio.gather(self._s.slurm.jobs(), self._s.slurm.nodes())
        unreachable = {n.name for n in nodes if _unreachable(n)}
        detections: list[Detection] = []
        kernel_hits = await asyncio.to_thread(self._scan_kernel_logs, nodes)
        for job in jobs:
            watch = self._watch(job)
            if not isinstance(watch.enrolment, Enrolment):
                continue
            found = await asyncio.to_thread(self._observe, job, watch, unreachable, kernel_hits)
            for detection in found:
                await self._signal(job, watch.enrolment, detection)
            detections += found
        return detections

    def _watch(self, job: JobInfo) -> _Watch:
        watch = self._jobs.get(job.job_id)
        if watch is not None and watch.comment == job.comment:
            return watch
        enrolment = enrol(job.comment, self._s.config)
        watch = _Watch(enrolment=enrolment, comment=job.comment)
        if job.state == "RUNNING" and job.start_time is not None and job.start_time < self._started:
            # Running before we started: what it printed then is history, not news.
            watch.log_offset = _size(self._s.config.job_output(job.job_id))
        self._jobs[job.job_id] = watch
        cluster = self._s.config.cluster
        if isinstance(enrolment, NotEnrolled):
            self._s.audit.record(AuditEvent(
                key=f"{cluster}/{job.job_id}/not_enrolled", event_type=EventType.NOT_ENROLLED,
                cluster=cluster, job_id=job.job_id, details={"reason": enrolment.reason}))
        else:
            self._s.audit.record(AuditEvent(
                key=f"{cluster}/{job.job_id}/enrolled", event_type=EventType.ENROLLED, cluster=cluster,
                job_id=job.job_id, details={"environment": enrolment.environment, "mode": enrolment.mode.value,
                                            "note": enrolment.note}))
        return watch

    def _observe(self, job: JobInfo, watch: _Watch, unreachable: set[str],
                 kernel_hits: dict[str, tuple[str, str]]) -> list[Detection]:
        """Detections for one job in this poll (blocking file reads: run in a thread)."""
        if job.restart_count != watch.attempt:
            watch.attempt, watch.attempt_offset = job.restart_count, watch.log_offset
            watch.sent.clear()
            watch.ended = False
        path = self._s.config.job_output(job.job_id)
        lines, watch.log_offset = read_lines(path, watch.log_offset)
        if job.state in _QUIET_STATES or watch.ended:
            # Between attempts Slurm appends its own teardown lines ("CANCELLED
            # ... DUE TO JOB REQUEUE"): they belong to no running attempt.
            return []
        now = datetime.now(UTC)
        found: list[Detection] = []

        def detect(key: str, kind: DetectionKind, **fields) -> None:
            limit = self._s.config.detector.max_signals_per_attempt
            if key in watch.sent or len(watch.sent) >= limit:
                return
            watch.sent.add(key)
            found.append(Detection(kind=kind, at=now, job_id=job.job_id, attempt=job.restart_count,
                                   job_state=job.state, log_offset=watch.attempt_offset, **fields))

        for text in lines:
            hit = self._s.matcher.failure(text)
            if hit is not None:
                detect(f"line:{hit.pattern}", DetectionKind.LOG_LINE, line=text[:2000], pattern=hit.pattern)
        for node in job.nodes:
            if node in unreachable:
                detect(f"node:{node}", DetectionKind.NODE_DOWN, node=node)
            if node in kernel_hits and job.state == "RUNNING":
                pattern, text = kernel_hits[node]
                detect(f"kernel:{node}:{pattern}", DetectionKind.KERNEL, node=node, line=text, pattern=pattern)
        if job.state in FAILED_STATES:
            watch.ended = True
            detect(f"ended:{job.state}", DetectionKind.JOB_ENDED,
                   line=f"slurm: job {job.job_id} attempt {job.restart_count} ended {job.state}"
                        f" reason={job.state_reason} exit_code={job.exit_code}")
        elif job.state in ("COMPLETED", "CANCELLED"):
            watch.ended = True
            event = EventType.JOB_COMPLETED if job.state == "COMPLETED" else EventType.JOB_ENDED
            self._s.audit.record(AuditEvent(
                key=f"{self._s.config.cluster}/{job.job_id}/{job.restart_count}/{event.value}", event_type=event,
                cluster=self._s.config.cluster, job_id=job.job_id, attempt=job.restart_count,
                details={"state": job.state, "exit_code": job.exit_code}))
        return found

    def _scan_kernel_logs(self, nodes: list[NodeInfo]) -> dict[str, tuple[str, str]]:
        """New fatal lines in each node's kernel log: trusted, node-level evidence."""
        hits: dict[str, tuple[str, str]] = {}
        for node in nodes:
            path = self._s.config.kernel_log(node.name)
            if path is None:
                continue
            if node.name not in self._kernel_offsets:
                self._kernel_offsets[node.name] = _size(path)  # history is not news
            lines, self._kernel_offsets[node.name] = read_lines(path, self._kernel_offsets[node.name])
            for text in lines:
                hit = self._s.matcher.failure(text)
                if hit is not None:
                    hits[node.name] = (hit.pattern, text[:2000])
        return hits

    async def _signal(self, job: JobInfo, enrolment: Enrolment, detection: Detection) -> None:
        config = self._s.config
        iid = incident_id(config.cluster, job.job_id, detection.attempt)
        start = IncidentInput(
            cluster=config.cluster, job_id=job.job_id, attempt=detection.attempt,
            environment=enrolment.environment, mode=enrolment.mode,
            settle_s=config.detector.settle_s, cascade_wait_s=config.detector.cascade_wait_s,
            follow_timeout_s=config.detector.follow_timeout_s,
        )
        try:
            await self._client.start_workflow(
                "Incident", start, id=iid, task_queue=config.task_queue,
                start_signal="detect", start_signal_args=[detection],
                # One incident per attempt: a closed incident is not reopened by a
                # late detection (only a crashed one may be retried).
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            )
            log.info("detection %s for %s: %s", detection.kind.value, iid, detection.pattern or detection.node or "")
        except WorkflowAlreadyStartedError:
            log.debug("incident %s already closed; %s not signalled", iid, detection.kind.value)


def _unreachable(node: NodeInfo) -> bool:
    return node.state.lower().startswith("down") or "not_responding" in {f.lower() for f in node.flags}


def _size(path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0
