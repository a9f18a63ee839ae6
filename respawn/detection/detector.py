"""The detector: watches every job of one cluster and turns trouble into incidents.

Once per poll it reads all jobs from Slurm (one listing: `squeue`, shared with
the hold watchdog), the node states (one `sinfo --json`), and the new output of
each enrolled job. A job Slurm lists as the poll before did, and whose rules can
find nothing in it (its attempt's end handled, or not run yet), costs nothing
more: its output is not read again. Jobs that left Slurm are forgotten. What of
that is news is the rules' to say (respawn/detection/rules.py, pure): a failure
line, a job that ended badly or a node of the job going down becomes a
Detection, sent to the incident workflow of that job attempt with
signal-with-start, so everything about one interruption lands in one incident.
This loop reads, calls the rules, and delivers what they decide: detections,
audit rows and telemetry. Detections are delivered beside the polls, not in
them: a start that Temporal answers slowly delays that job's later detections
(each job's go in order), never the next poll and with it every other job.

Hangs and stragglers announce nothing: each running job's progress lines feed
its rhythm (respawn/detection/rhythm.py), whose findings are written as trusted lines for
the runbooks to read. A new Xid in the nodes' GPU metrics (respawn/sources/gpu_metrics.py)
is read like a fatal kernel-log line.
"""

import asyncio
import hashlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path

from temporalio.client import Client, WorkflowFailureError
from temporalio.common import SearchAttributePair, TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.service import RPCError

from respawn.audit.trail import AuditEvent, EventType
from respawn.config.cluster import ClusterConfig, Mode, SchedulerAccess
from respawn.detection import rules
from respawn.detection.enrolment import Enrolment, NotEnrolled, enrol
from respawn.detection.logfollow import JobLines, StreamFollower
from respawn.detection.rhythm import Finding, Rhythm, SignalKind, placement, read_signals
from respawn.detection.rules import NodeFact, RuleSettings, WatchState
from respawn.detection.watchdog import Watchdog
from respawn.launcher import channel
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.scheduler.states import ENDED, JobState
from respawn.services import Services
from respawn.sources.gpu_metrics import GpuMetrics, XidWatch
from respawn.sources.joblog import UnsafeOutput, kernel_message, output_size, read_lines, reads_any_file
from respawn.sources.logstream import Cursor, open_stream
from respawn.sources.taskprobe import stopped_tasks
from respawn.surfaces import telemetry
from respawn.wire.incident import Acting, Detection, DetectionKind, IncidentInput, IncidentResult, Phase, incident_id
from respawn.workflows.search import CLUSTER, JOB_ID

log = logging.getLogger("respawn.detection.detector")

# The watchdog checks holds this often, with the poll's listing when it is fresh,
# else with its own: a poll that stalls must not keep a hold from being released.
_WATCHDOG_INTERVAL_S = 1.0
_FORGET_AFTER_S = 60.0  # a job Slurm has not listed for this long is gone (module _forget)
_DRAIN_S = 5.0  # a stopping detector's wait for the detections it has not delivered yet


_READS_ANY_FILE = reads_any_file()  # root, or a user given CAP_DAC_READ_SEARCH


@dataclass
class _Watch:
    """What the detector remembers about one job: which job it is, how far its output is read,
    its rhythm, and the rules' state (`state`, replaced whole each poll)."""

    enrolment: Enrolment | NotEnrolled
    # With the job id, which job this is: Slurm reuses ids. Slurm moves a job's submit
    # time to the requeue at each requeue, so this is the current attempt's.
    submitted: datetime | None
    restarts: int  # Slurm's restart count when last seen: a requeue moves it, a new job does not
    enrolled_as: str  # what the enrolment was decided from (comment, partition, account, user)
    state: WatchState
    log_offset: int = 0  # logs.source files: how far its output file is read
    cursor: Cursor | None = None  # a log server: how far its stream is read (respawn/detection/logfollow.py)
    wrote_at: datetime | None = None  # a log server: its newest line's time stamp
    rhythm: Rhythm | None = None  # its progress, for hangs and stragglers
    stopped: dict[int, str] | None = None  # the node-side check's answer for the current stall
    probe_wanted: bool = False  # the current stall awaits that answer
    errors: set[str] = field(default_factory=set)  # kinds of error already recorded for this job
    seen: JobInfo | None = None  # Slurm's record of the job when last observed
    missing_since: float | None = None  # monotonic time of the first listing without it, since it was last listed


class Detector:
    def __init__(self, services: Services, client: Client) -> None:
        self._s = services
        self._client = client
        self._jobs: dict[int, _Watch] = {}
        self._kernel_offsets: dict[str, int] = {}
        self._started = datetime.now(UTC)
        self._unsent: list[tuple[JobInfo, Enrolment, Detection]] = []  # not delivered yet: Temporal was down
        self._delivering: dict[int, asyncio.Task[None]] = {}  # each job's latest delivery; its earlier ones before it
        self._gate = asyncio.Semaphore(services.config.detector.max_concurrent_deliveries)
        # Incidents that handed an attempt on to its next one, while a poll may be reading the job's
        # state in its thread: applied to the state between polls (_hand_on), on the loop.
        self._handed_on: dict[int, tuple[int, Delivery]] = {}  # job -> (attempt, where its detection went)
        self._listing: tuple[float, list[JobInfo]] | None = None  # the last poll's jobs, and when it read them
        self._not_responding: dict[str, float] = {}  # node -> since when Slurm has flagged it (monotonic)
        self._watchdog = Watchdog(services.config, services.slurm, services.audit)
        config = services.config
        self._rules = RuleSettings(
            cluster=config.cluster,
            matcher=services.matcher,
            max_signals_per_attempt=config.detector.max_signals_per_attempt,
        )
        self._stopped = stopped_tasks(config.detector.progress, services.slurm.transport, config.scheduler.slurm_conf)
        stream = open_stream(config.logs)
        self._streams = StreamFollower(stream, services.matcher, self._started) if stream is not None else None
        self._xids = XidWatch(GpuMetrics(config.metrics), config.metrics.poll_interval_s) if config.metrics else None
        # Whatever was written after the last complete poll began is still unread: the lag grows
        # while polls fail or stall.
        self._caught_up = time.monotonic()
        telemetry.DETECTOR_LAG.set_function(lambda: time.monotonic() - self._caught_up)
        telemetry.UNDELIVERED.set_function(lambda: len(self._delivering) + len(self._unsent))

    @property
    def watches(self) -> dict[int, _Watch]:
        return self._jobs

    async def run(self, stop: asyncio.Event) -> None:
        watchdog = asyncio.create_task(self._watch_holds(stop))
        try:
            await self._poll_until(stop)
        finally:
            watchdog.cancel()
            # What was detected goes out before the detector does, within a bound: a detection
            # lost here is found again by the next detector's catch-up (detector.catch_up_s).
            if self._delivering:
                await asyncio.wait(list(self._delivering.values()), timeout=_DRAIN_S)
            left = list(self._delivering.values())
            for task in left:
                task.cancel()
            await asyncio.gather(*left, return_exceptions=True)

    async def _poll_until(self, stop: asyncio.Event) -> None:
        interval = self._s.config.detector.poll_interval_s
        while not stop.is_set():
            began = time.monotonic()
            try:
                await self.poll()
            except SchedulerError as exc:
                log.warning("poll failed, will retry: %s", exc)
            except Exception:  # one bad poll must not stop detection for the cluster
                log.exception("poll failed")
            try:
                await asyncio.wait_for(stop.wait(), timeout=max(0.0, interval - (time.monotonic() - began)))
            except TimeoutError:
                pass

    async def _watch_holds(self, stop: asyncio.Event) -> None:
        """The hold watchdog, on its own timer: it fails open even while a poll is stuck."""
        while not stop.is_set():
            try:
                await self.check_holds()
            except SchedulerError as exc:
                log.warning("watchdog could not read Slurm, will retry: %s", exc)
            except Exception:  # the watchdog must outlive any one failure
                log.exception("watchdog check failed")
            try:
                await asyncio.wait_for(stop.wait(), timeout=_WATCHDOG_INTERVAL_S)
            except TimeoutError:
                pass

    async def check_holds(self) -> None:
        """Release holds past their timeout, reading Slurm only when the poll's listing is stale."""
        fresh = 2 * self._s.config.detector.poll_interval_s + _WATCHDOG_INTERVAL_S
        if self._listing is not None and time.monotonic() - self._listing[0] <= fresh:
            jobs = self._listing[1]
        else:
            jobs = await self._s.slurm.jobs()
        telemetry.WATCHDOG_RELEASES.inc(len(await self._watchdog.check(jobs)))

    async def poll_once(self) -> list[Detection]:
        """One poll, and the deliveries of what it found (and of what waited): done when they are."""
        found = await self.poll()
        await self.delivered()
        return found

    async def delivered(self) -> None:
        """Wait for every delivery begun so far."""
        while self._delivering:
            await asyncio.gather(*self._delivering.values(), return_exceptions=True)

    async def poll(self) -> list[Detection]:
        """Read Slurm and the jobs' output, and begin delivering what the rules found: the next
        poll does not wait for Temporal to take it."""
        began = time.monotonic()
        self._resend()
        self._hand_on()
        jobs, nodes = await asyncio.gather(self._s.slurm.jobs(), self._s.slurm.nodes())
        self._listing = (time.monotonic(), jobs)
        self._forget(jobs)
        down, self._not_responding = rules.down(
            nodes, time.monotonic(), self._not_responding, self._s.config.detector.not_responding_s
        )
        kernel_hits, streamed = await self._read_logs(jobs, nodes)
        metric_hits = await self._metric_hits()
        # Every job's reading in one hand-off to a thread: file reads and audit rows, not the loop's.
        observed = await asyncio.to_thread(self._observe_all, jobs, down, kernel_hits, metric_hits, streamed)
        detections: list[Detection] = []
        outbox: list[tuple[JobInfo, Enrolment, list[Detection]]] = []
        for job, watch, found in observed:
            if watch.probe_wanted and self._stopped is not None:
                watch.probe_wanted = False
                try:
                    watch.stopped = await self._stopped.stopped(job.job_id, job.nodes)
                except Exception as exc:  # one job's probe must not stop the poll for the others
                    await asyncio.to_thread(self._job_error, job, watch, exc)  # an audit row: off the loop
            if found and isinstance(watch.enrolment, Enrolment):
                outbox.append((job, watch.enrolment, found))
                detections += found
        self._deliver(outbox)
        live = [self._jobs[j.job_id] for j in jobs if j.state not in ENDED]
        enrolled = sum(isinstance(w.enrolment, Enrolment) for w in live)
        telemetry.JOBS_MONITORED.labels(enrolled="true").set(enrolled)
        telemetry.JOBS_MONITORED.labels(enrolled="false").set(len(live) - enrolled)
        self._caught_up = began
        return detections

    async def _read_logs(
        self, jobs: list[JobInfo], nodes: list[NodeInfo]
    ) -> tuple[dict[str, NodeFact], dict[int, JobLines]]:
        """The nodes' fatal kernel lines, and under a log server every enrolled job's new lines
        (one bounded poll of the server for all streams); with files each job's output is read in
        `_observe`."""
        if self._streams is None:
            return await asyncio.to_thread(self._scan_kernel_logs, nodes), {}
        enrolled = [(job, w) for job in jobs if isinstance((w := self._watch(job)).enrolment, Enrolment)]
        polled = await asyncio.to_thread(self._streams.poll, [(job, w.cursor) for job, w in enrolled], nodes)
        for job, watch in enrolled:
            watch.cursor = polled.jobs[job.job_id].cursor
        return polled.kernel, polled.jobs

    def _forget(self, jobs: list[JobInfo]) -> None:
        """Jobs Slurm no longer lists (purged MinJobAge after their end): nothing of them is kept,
        once they have been missing for _FORGET_AFTER_S. Not at the first listing without them: a
        listing caught in a requeue lacked a job once (22.05), and forgetting it then lost what the
        rules knew of its fault (its recovery went uncounted) and enrolled it a second time."""
        listed = {job.job_id for job in jobs}
        now = time.monotonic()
        for job_id, watch in list(self._jobs.items()):
            if job_id in listed:
                watch.missing_since = None
            elif watch.missing_since is None:
                watch.missing_since = now
            elif now - watch.missing_since > _FORGET_AFTER_S:
                del self._jobs[job_id]

    def _observe_all(
        self,
        jobs: list[JobInfo],
        down: frozenset[str],
        kernel_hits: dict[str, NodeFact],
        metric_hits: dict[str, NodeFact],
        streamed: dict[int, JobLines],
    ) -> list[tuple[JobInfo, _Watch, list[Detection]]]:
        """This poll's reading of every job that may have news (blocking: run in a thread)."""
        observed = []
        for job in jobs:
            watch = self._jobs.get(job.job_id)
            if watch is not None and watch.seen == job:
                if not isinstance(watch.enrolment, Enrolment) or rules.quiet(watch.state, job):
                    continue  # as the last poll found it, and nothing in it can be news
            try:
                watch = self._watch(job)
                watch.seen = job
                if not isinstance(watch.enrolment, Enrolment):
                    continue
                found = self._observe(job, watch, down, kernel_hits, metric_hits, streamed.get(job.job_id))
            except Exception as exc:  # one job's output must not stop the poll for the others
                if watch is not None:
                    self._job_error(job, watch, exc)
                continue
            observed.append((job, watch, found))
        return observed

    def _job_error(self, job: JobInfo, watch: _Watch, exc: Exception) -> None:
        """A job whose output could not be read or matched this poll: on record once per kind of error."""
        kind = type(exc).__name__
        if kind in watch.errors:
            return
        watch.errors.add(kind)
        log.warning("job %s: its output could not be watched this poll (%s: %s)", job.job_id, kind, exc)
        cluster = self._s.config.cluster
        self._s.audit.record(
            AuditEvent(
                key=f"{cluster}/{job.job_id}/watch_error/{kind}",
                event_type=EventType.WATCH_ERROR,
                cluster=cluster,
                job_id=job.job_id,
                attempt=job.restart_count,
                details={"error": kind, "detail": str(exc)[:300]},
            )
        )

    async def _send(self, job: JobInfo, enrolment: Enrolment, detection: Detection) -> None:
        """Signal a detection; while Temporal is unreachable, keep it for the next poll."""
        seq, attempt_offset = self._current(job.job_id, detection.attempt)
        if attempt_offset > detection.log_offset:
            # Made before the attempt moved on to its next incident: read what that one reads.
            detection = detection.model_copy(update={"log_offset": attempt_offset})
        try:
            delivery = await signal_detection(self._client, self._s.config, enrolment, detection, seq=seq)
        except RPCError as exc:
            log.warning("Temporal unreachable, detection kept for the next poll: %s", exc.message)
            self._unsent.append((job, enrolment, detection))
            return
        if delivery is not None and delivery.seq > seq:
            # The attempt outlived its earlier incident's suspicion: its next one is current now.
            self._handed_on[job.job_id] = (detection.attempt, delivery)

    def _current(self, job_id: int, attempt: int) -> tuple[int, int]:
        """The attempt's current incident (its seq) and where its evidence begins; (0, 0) for an
        attempt the detector has moved past or never saw."""
        watch = self._jobs.get(job_id)
        if watch is None or watch.state.attempt != attempt:
            return 0, 0
        seq, offset = watch.state.seq, watch.state.attempt_offset
        handed = self._handed_on.get(job_id)
        if handed is not None and handed[0] == attempt and handed[1].seq > seq:
            seq, offset = handed[1].seq, max(offset, handed[1].log_offset)
        return seq, offset

    def _hand_on(self) -> None:
        """Move each attempt whose incident handed it on to that next incident (between polls:
        no thread is reading the states)."""
        handed, self._handed_on = self._handed_on, {}
        for job_id, (attempt, delivery) in handed.items():
            watch = self._jobs.get(job_id)
            if watch is not None and watch.state.attempt == attempt and delivery.seq > watch.state.seq:
                watch.state = replace(
                    watch.state,
                    seq=delivery.seq,
                    attempt_offset=max(watch.state.attempt_offset, delivery.log_offset),
                )

    def _deliver(self, outbox: list[tuple[JobInfo, Enrolment, list[Detection]]]) -> None:
        """Begin delivering detections to Temporal: jobs side by side (bounded: a storm of failures
        reaches Temporal at once, not one signal after another), each job's in its order, after
        any of that job's still on their way."""
        for job, enrolment, found in outbox:
            earlier = self._delivering.get(job.job_id)
            task = asyncio.create_task(self._deliver_job(earlier, job, enrolment, found))
            self._delivering[job.job_id] = task
            task.add_done_callback(partial(self._delivered_job, job.job_id))

    async def _deliver_job(
        self, earlier: asyncio.Task[None] | None, job: JobInfo, enrolment: Enrolment, found: list[Detection]
    ) -> None:
        if earlier is not None:
            await asyncio.wait([earlier])  # in order; however the earlier delivery ended
        async with self._gate:
            for detection in found:
                await self._send(job, enrolment, detection)

    def _delivered_job(self, job_id: int, task: asyncio.Task[None]) -> None:
        if self._delivering.get(job_id) is task:
            del self._delivering[job_id]
        if not task.cancelled() and task.exception() is not None:
            log.error("job %s: detections not delivered", job_id, exc_info=task.exception())

    def _resend(self) -> None:
        unsent, self._unsent = self._unsent, []
        by_job: dict[int, tuple[JobInfo, Enrolment, list[Detection]]] = {}
        for job, enrolment, detection in unsent:
            by_job.setdefault(job.job_id, (job, enrolment, []))[2].append(detection)
        self._deliver(list(by_job.values()))

    def _watch(self, job: JobInfo) -> _Watch:
        watch = self._jobs.get(job.job_id)
        basis = _enrolment_basis(job)
        # The same job: its submit time, or none printed (a listing caught between a requeue's steps
        # prints none; a new job under a reused id always has its own), or one Slurm moved at a
        # requeue. A requeue moves it twice: the restart count moves at the requeue, the submit
        # time once the old attempt's steps have all ended (job_mgr.c batch_requeue_fini, "so that
        # subsequent jobs appear in a separate accounting record"), and a listing can fall between.
        # A new job under a reused id starts at restart count 0.
        if watch is not None and (
            job.submit_time in (watch.submitted, None) or job.restart_count >= max(watch.restarts, 1)
        ):
            watch.submitted, watch.restarts = job.submit_time or watch.submitted, job.restart_count
            if watch.enrolled_as != basis:
                # Its comment (or partition, account, user) changed while it runs: a new enrolment, on record.
                watch.enrolment, watch.enrolled_as = enrol(job, self._s.config), basis
                self._record_enrolment(job, watch)
            return watch
        # A job new to us, or a new job under an id Slurm reused: it starts clean.
        watch = _Watch(
            enrolment=enrol(job, self._s.config),
            submitted=job.submit_time,
            restarts=job.restart_count,
            enrolled_as=basis,
            state=rules.first_seen(job, self._started, timedelta(seconds=self._s.config.detector.catch_up_s)),
        )
        started_before = job.start_time is not None and job.start_time < self._started
        if self._streams is None and job.state == "RUNNING" and started_before:
            # Running before we started: what it printed then is history, not news (a log server's
            # cursor starts the same way: respawn/detection/logfollow.py).
            watch.log_offset = output_size(self._s.config.job_output(job.job_id)) or 0
        self._jobs[job.job_id] = watch
        self._record_enrolment(job, watch)
        return watch

    def _record_enrolment(self, job: JobInfo, watch: _Watch) -> None:
        """Each enrolment once: keyed by what it was decided from. Seen before its first requeue,
        the job's own submit time goes on record: it tells this job's history from that of an
        older job under the same id (activities/assessment.py)."""
        cluster, enrolment = self._s.config.cluster, watch.enrolment
        first = job.submit_time.astimezone(UTC).isoformat() if job.submit_time and not job.restart_count else None
        key = f"{watch.enrolled_as}/{first or ''}"
        if isinstance(enrolment, NotEnrolled):
            self._s.audit.record(
                AuditEvent(
                    key=f"{cluster}/{job.job_id}/not_enrolled/{key}",
                    event_type=EventType.NOT_ENROLLED,
                    cluster=cluster,
                    job_id=job.job_id,
                    details={"reason": enrolment.reason, "submitted": first},
                )
            )
        else:
            self._s.audit.record(
                AuditEvent(
                    key=f"{cluster}/{job.job_id}/enrolled/{key}",
                    event_type=EventType.ENROLLED,
                    cluster=cluster,
                    job_id=job.job_id,
                    details={
                        "environment": enrolment.environment,
                        "mode": enrolment.mode.value,
                        "note": enrolment.note,
                        "refused": enrolment.refused,
                        "submitted": first,
                        "array_job_id": job.array_job_id,
                    },
                )
            )

    def _observe(
        self,
        job: JobInfo,
        watch: _Watch,
        down: frozenset[str],
        kernel_hits: dict[str, NodeFact],
        metric_hits: dict[str, NodeFact],
        streamed: JobLines | None = None,
    ) -> list[Detection]:
        """Detections for one job in this poll (blocking file reads and audit rows: run in a thread).
        `streamed`: its lines from a log server, read before; None: read its output file here."""
        # The attempt's evidence begins where this poll's read does: the state moves on before the read.
        read_from = watch.log_offset if streamed is None else streamed.read_from
        watch.state = rules.advance(watch.state, job, read_from=read_from)
        relaunches = self._relaunches(job, watch.state)  # before the lines: see rules.Seen.relaunches
        modified: Callable[[], datetime | None]
        if streamed is None:
            path = self._s.config.job_output(job.job_id)
            # Able to read any file, the detector reads only what the job's own user owns: a job cannot point it elsewhere.
            owner = job.user_id if _READS_ANY_FILE else None
            lines, watch.log_offset = read_lines(path, watch.log_offset, owner_uid=owner)
            modified = partial(_modified, path)
        else:
            if streamed.trouble is not None:  # its stream is not read this poll: Slurm's word still counts
                self._job_error(job, watch, streamed.trouble)
            lines, watch.wrote_at = streamed.lines, streamed.newest or watch.wrote_at
            modified = partial(_known, watch.wrote_at)  # the newest line's time stamp: no file to ask
        findings: list[Finding] = []
        stepped = False
        if rules.follows_progress(watch.state, job):
            findings, stepped = self._progress(job, watch, lines)
        now = datetime.now(UTC)
        seen = rules.Seen(
            now=now,
            lines=lines,
            down=down,
            kernel=kernel_hits,
            metrics=metric_hits,
            findings=findings,
            stepped=stepped,
            modified=modified,
            relaunches=relaunches,
            step_seconds=watch.rhythm.step_seconds() if watch.rhythm is not None else None,
            checkpoint_interval_s=watch.rhythm.checkpoint_interval_s() if watch.rhythm is not None else None,
            checkpoint_save_s=watch.rhythm.checkpoint_save_s() if watch.rhythm is not None else None,
        )
        outcome = rules.judge(job, watch.state, seen, self._rules)
        if outcome.state.relaunches != watch.state.relaunches and watch.rhythm is not None:
            watch.rhythm.new_attempt(job.restart_count)  # the relaunched step's rhythm is its own
        watch.state = outcome.state
        for event in outcome.audit:
            self._s.audit.record(event)
        for opened in outcome.opened:
            telemetry.DETECTION_LATENCY.labels(kind=telemetry.kind(opened.kind)).observe(
                telemetry.seconds(opened.occurred, now)
            )
        if outcome.recovered is not None:
            telemetry.RECOVERY_DURATION.labels(kind=telemetry.kind(outcome.recovered.kind)).observe(
                telemetry.seconds(outcome.recovered.at, now)
            )
        detections = list(outcome.detections)
        if detections and self._launched(job):
            detections = [d.model_copy(update={"launched": True}) for d in detections]
        return detections

    def _launched(self, job: JobInfo) -> bool:
        """Whether the job's launcher runs its step: its channel has a status. Read only for a
        job with news this poll (a small file, for few jobs)."""
        try:
            return channel.read_status(self._s.config.launcher_channel(job.job_id)) is not None
        except channel.ChannelError:
            return False  # the job's own channel: its trouble costs it only the shorter settle

    def _relaunches(self, job: JobInfo, state: WatchState) -> int | None:
        """The job's launcher's relaunch count, read only while the running job recovers from a
        fault of this attempt (a small file, for few jobs): None otherwise, or when unreadable."""
        fault = state.fault
        if fault is None or fault.attempt != job.restart_count or job.state != JobState.RUNNING:
            return None
        try:
            status = channel.read_status(self._s.config.launcher_channel(job.job_id))
        except channel.ChannelError:
            return None  # the job's own channel: its trouble is its own, the attempt's end still shows
        return status.restarts if status is not None else None

    def _progress(self, job: JobInfo, watch: _Watch, lines: list[str]) -> tuple[list[Finding], bool]:
        """Feed this poll's lines to the job's rhythm: what it finds wrong, not yet signalled, and
        whether a training step finished (a later attempt that steps has recovered)."""
        rhythm = watch.rhythm = watch.rhythm or Rhythm(self._s.config.detector.progress)
        if job.tasks:
            rhythm.max_ranks = job.tasks  # rank tags beyond the job's tasks are made up
        if rhythm.attempt != job.restart_count:
            rhythm.new_attempt(job.restart_count)
        now = time.monotonic()
        signals = read_signals(self._s.progress, lines)
        rhythm.observe(now, signals)
        where = placement(job.nodes, rhythm.world)
        findings = rhythm.slowdowns(now, where)  # every poll: it keeps time of how long a rank has been slow
        stall = rhythm.stall(now)
        if stall is None:
            watch.stopped = None  # a later stall is asked about afresh
        elif not watch.state.signalled("hang:"):
            if self._stopped is not None and watch.stopped is None:
                # Asked once per stall, after this poll (the node-side check reads
                # every process); the hang is reported with the answer, one poll on.
                watch.probe_wanted = True
            else:
                findings += stall.findings(where, watch.stopped or {})
        return findings, any(s.kind is SignalKind.STEP for s in signals)

    async def _metric_hits(self) -> dict[str, NodeFact]:
        """Nodes whose GPU metrics report a new fault a runbook recognises (a fatal Xid)."""
        if self._xids is None:
            return {}
        hits = {}
        for change in await self._xids.changes(time.monotonic()):
            hit = self._s.matcher.failure(change.line)
            if hit is not None:
                hits[change.gpu.node] = NodeFact(hit.pattern, change.line)
        return hits

    def _scan_kernel_logs(self, nodes: list[NodeInfo]) -> dict[str, NodeFact]:
        """New fatal lines in each node's kernel log: trusted, node-level evidence."""
        hits: dict[str, NodeFact] = {}
        for node in nodes:
            path = self._s.config.kernel_log(node.name)
            if path is None:
                continue
            if node.name not in self._kernel_offsets:
                self._kernel_offsets[node.name] = output_size(path) or 0  # history is not news
            try:
                lines, self._kernel_offsets[node.name] = read_lines(path, self._kernel_offsets[node.name])
            except UnsafeOutput as exc:  # one node's log must not stop the others' (logged once a poll)
                log.warning("kernel log of %s not read: %s", node.name, exc.reason)
                continue
            for text in lines:
                if kernel_message(text) is None:
                    continue  # a userspace program's line in the same file is not the kernel's
                hit = self._s.matcher.failure(text)
                if hit is not None:
                    hits[node.name] = NodeFact(hit.pattern, text[:2000])
        return hits


@dataclass(frozen=True)
class Delivery:
    """Where a detection went: the attempt's current incident."""

    incident_id: str
    seq: int  # how many incidents of this attempt the attempt went on past (not interrupted, relaunched)
    log_offset: int  # where that incident's evidence begins in the job's output


async def signal_detection(
    client: Client, config: ClusterConfig, enrolment: Enrolment, detection: Detection, seq: int = 0
) -> Delivery | None:
    """Start the attempt's current incident with this detection, or signal it when it runs.

    The one way a detection reaches an incident: the detector's and the Advisor
    API's (external detectors). An incident that closed finding the attempt not
    interrupted, or after the job's launcher relaunched its step, hands on to the
    attempt's next one (`seq`, which a caller that remembers it passes to skip the
    walk); any other closed incident is final:
    None, the interruption it handled is not handled twice. Raises RPCError
    while Temporal is unreachable.
    """
    for _ in range(config.detector.max_signals_per_attempt + 1):  # each incident took at least one detection
        iid = incident_id(config.cluster, detection.job_id, detection.attempt, detection.kind, seq, detection.submitted)
        if await _start_or_signal(client, config, enrolment, detection, iid):
            return Delivery(incident_id=iid, seq=seq, log_offset=detection.log_offset)
        closed = await _closed_as(client, iid)
        # An attempt goes on past an incident that found it not interrupted, or that had the
        # job's launcher relaunch its step in the allocation: its next interruption is news.
        goes_on = closed is not None and (closed.phase is Phase.NOT_INTERRUPTED or closed.relaunched)
        if closed is None or not goes_on or detection.kind is DetectionKind.SLOWDOWN:
            log.debug("incident %s already closed; %s not signalled", iid, detection.kind.value)
            return None
        seq += 1
        if closed.log_end is not None and closed.log_end > detection.log_offset:
            # What that incident read was judged; the next one reads what came after.
            detection = detection.model_copy(update={"log_offset": closed.log_end})
    return None


async def _closed_as(client: Client, iid: str) -> IncidentResult | None:
    """How a closed incident ended; None when it did not complete (failed, terminated)."""
    try:
        result: IncidentResult = await client.get_workflow_handle(iid, result_type=IncidentResult).result(
            follow_runs=False, rpc_timeout=timedelta(seconds=10)
        )
        return result
    except WorkflowFailureError:
        return None


async def _start_or_signal(
    client: Client, config: ClusterConfig, enrolment: Enrolment, detection: Detection, iid: str
) -> bool:
    """False when the incident `iid` has closed: it is not reopened."""
    mode = enrolment.mode
    if detection.kind is DetectionKind.SLOWDOWN and not config.detector.progress.act_on_stragglers:
        mode = Mode.OBSERVE  # a straggler slows the job without stopping it: recommend only, unless told
    advisor = config.scheduler.transport is SchedulerAccess.ADVISOR
    start = IncidentInput(
        cluster=config.cluster,
        job_id=detection.job_id,
        attempt=detection.attempt,
        submitted=detection.submitted,
        environment=enrolment.environment,
        mode=mode,
        settle_s=config.detector.settle_s,
        cascade_wait_s=config.detector.cascade_wait_s,
        follow_timeout_s=config.detector.follow_timeout_s,
        confirm_window_s=config.detector.confirm_window_s,
        approval=config.environments[enrolment.environment].approval,
        acting=Acting.CONTROLLER if advisor else Acting.RESPAWN,
        reconcile_timeout_s=config.scheduler.reconcile_timeout_s,
        relaunch_timeout_s=config.detector.relaunch_timeout_s,
        probe_timeout_s=config.detector.probe_timeout_s,
        mark_silent_down=config.detector.mark_silent_down,
    )
    try:
        await client.start_workflow(
            "Incident",
            start,
            id=iid,
            task_queue=config.task_queue,
            start_signal="detect",
            start_signal_args=[detection],
            # One incident per attempt: a closed incident is not reopened by a
            # late detection (only a crashed one may be retried).
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            # Findable by job from the first moment (the Web UI, `respawn override`).
            search_attributes=TypedSearchAttributes(
                [SearchAttributePair(JOB_ID, str(detection.job_id)), SearchAttributePair(CLUSTER, config.cluster)]
            ),
            static_summary=_summary(config.cluster, detection, mode),
        )
        log.info("detection %s for %s: %s", detection.kind.value, iid, detection.pattern or detection.node or "")
        return True
    except WorkflowAlreadyStartedError:
        return False


def _summary(cluster: str, detection: Detection, mode: Mode) -> str:
    """The incident's one line in the Temporal Web UI, kept in its history: it reads without a
    worker (the story under "Current Details" is asked of one). Only what Respawn and Slurm
    said, nothing the job printed: the kind of signal, the runbook pattern, Slurm's state."""
    first = " ".join(filter(None, (detection.kind.value, detection.pattern)))
    slurm = f" (Slurm: {detection.job_state})" if detection.job_state else ""
    return f"job {detection.job_id}, attempt {detection.attempt} on {cluster} ({mode.value}): {first}{slurm}"


def _enrolment_basis(job: JobInfo) -> str:
    """What a job's enrolment is decided from, as a short key."""
    basis = "\0".join((job.comment, job.partition, job.account, job.user))
    return hashlib.sha256(basis.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _known(at: datetime | None) -> datetime | None:
    return at


def _modified(path: Path) -> datetime | None:
    """When the job last wrote its output. The file's own time, never a link's target's:
    the path is the job owner's to make anything of; what it cannot tell is unknown."""
    try:
        return datetime.fromtimestamp(os.lstat(path).st_mtime, UTC)
    except (OSError, ValueError, OverflowError):
        return None
