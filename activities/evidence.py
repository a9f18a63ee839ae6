import asyncio
import logging
from datetime import UTC, datetime

from temporalio import activity

from respawn.activities import logserver
from respawn.activities.errors import as_activity_error
from respawn.config.cluster import SchedulerAccess
from respawn.detection.interruption import own_launcher_word
from respawn.launcher import channel
from respawn.scheduler import actions
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.slurm import JobInfo, NodeInfo, partition_members
from respawn.scheduler.states import JobState
from respawn.services import Services
from respawn.sources.gpu_metrics import GpuMetrics, MetricsError, unavailable_line
from respawn.sources.joblog import (
    UnsafeOutput,
    in_attempt,
    kernel_message,
    logged_at,
    rank_of,
    read_lines,
    reads_any_file,
    tail_lines,
)
from respawn.sources.logstream import open_stream
from respawn.wire.evidence import Evidence, LineSource, LogLine
from respawn.wire.incident import Detection, DetectionKind, Gathered, GatherRequest
from respawn.wire.launcher import LauncherView

log = logging.getLogger("respawn.wire.evidence")
_KERNEL_TAIL_LINES = 200
_OUTPUT_BYTES = 4 << 20  # of the attempt's output read for its evidence
_JOB_RESTARTS = 20  # lines of the job's own launcher restarting its workers kept
# How long the evidence waits for an ended job to finish completing (its nodes' epilogs), so
# that Slurm lists all of its nodes again (actions.settled).
_COMPLETING_WAIT_S = 3.0
_READS_ANY_FILE = reads_any_file()  # once: the process keeps its capabilities
# Respawn's own findings, by the kind of detection that carried them.
_FINDINGS = {
    DetectionKind.HANG: LineSource.DETECTOR,
    DetectionKind.SLOWDOWN: LineSource.DETECTOR,
    DetectionKind.METRICS: LineSource.METRICS,
}


class EvidenceActivities:
    def __init__(self, services: Services) -> None:
        self._s = services

    @activity.defn(name="gather_evidence")
    async def gather_evidence(self, req: GatherRequest) -> Gathered:
        """The attempt's output, the kernel logs of its nodes, and what Slurm says."""
        config = self._s.config
        try:
            job = as_attempt_ran(await actions.settled(self._s.slurm, req.job_id, _COMPLETING_WAIT_S), req)
            nodes = await self._s.slurm.nodes()
        except SchedulerError as exc:
            raise as_activity_error(exc) from exc
        stream = open_stream(config.logs)
        try:
            if stream is None:
                raw, end = await self._output(req, job)
                kernel = {n: await self._kernel(req, n, job) for n in job.nodes if config.kernel_log(n) is not None}
            else:
                raw, end = await asyncio.to_thread(logserver.output, stream, req, self._output_limit())
                kernel = {
                    n: await asyncio.to_thread(logserver.kernel, stream, req, n, job, _KERNEL_TAIL_LINES)
                    for n in job.nodes
                }
        finally:
            if stream is not None:
                stream.close()
        recent = raw[-config.logs.evidence_lines :]
        placement = dict(enumerate(job.nodes))  # one task per node, block distribution
        lines = []
        for seq, text in enumerate(recent):
            rank = rank_of(text)
            lines.append(LogLine(text=text, rank=rank, node=None if rank is None else placement.get(rank), seq=seq))
        for node, texts in kernel.items():
            lines += [LogLine(text=t, source=LineSource.KERNEL, node=node, seq=i) for i, t in enumerate(texts)]
        for d in req.detections:
            if d.kind is DetectionKind.JOB_ENDED and d.line:
                lines.append(LogLine(text=d.line, source=LineSource.SCHEDULER))
            elif d.kind in _FINDINGS and d.line:
                lines.append(LogLine(text=d.line, source=_FINDINGS[d.kind], node=d.node))
        lines += await self._gpu_metrics(job.nodes, job.start_time, req.detections)
        own = own_launcher_word(raw, self._s.progress)
        down = {n.name for n in nodes if n.name in job.nodes and n.unreachable}
        down |= {d.node for d in req.detections if d.kind is DetectionKind.NODE_DOWN and d.node}
        return Gathered(
            evidence=Evidence(
                cluster=config.cluster,
                job_id=req.job_id,
                attempt=req.attempt,
                job_state=job.state,
                exit_code=job.exit_code,
                nodes=job.nodes,
                placement=placement,
                lines=lines,
                down_nodes=sorted(down),
                gathered_at=datetime.now(UTC),
            ),
            log_end=end,
            checkpoint_step=self._newest_checkpoint(raw),
            cluster_nodes=sorted(n.name for n in nodes),
            eligible_nodes=await self._eligible(job, nodes),
            excluded_nodes=job.excluded_nodes or [],  # a job's own read always says
            job_state=job.state,
            restart_count=job.restart_count,
            last_step=self._last_step(raw),
            launcher=await self._launcher(req, job),
            job_restarts=[t[:500] for t in own.restarts][-_JOB_RESTARTS:],
            own_launcher_deciding=own.deciding,
            array_job_id=job.array_job_id,
            gpus=job.gpus,
        )

    async def _eligible(self, job: JobInfo, nodes: list[NodeInfo]) -> list[str] | None:
        """The nodes the job could run on: its partitions' nodes that are up and not drained, the
        room an exclusion must leave it. None where Slurm does not say (the decision then counts
        every node of the cluster)."""
        try:
            partitions = await self._s.slurm.partitions()
        except SchedulerError as exc:
            log.warning("job %s: its partitions are not readable: %s", job.job_id, exc)
            return None
        members = partition_members(partitions, job.partition, [n.name for n in nodes])
        if members is None:
            return None
        return sorted(n.name for n in nodes if n.name in members and not n.unreachable and not n.drained)

    async def _output(self, req: GatherRequest, job: JobInfo) -> tuple[list[str], int]:
        """The attempt's output file from its offset, once per incident, not every poll: the
        last 4 MiB, every line of them; and the offset after them."""
        try:
            return await asyncio.to_thread(
                read_lines,
                self._s.config.job_output(req.job_id),
                req.log_offset,
                _OUTPUT_BYTES,
                max_lines=None,
                owner_uid=_owner(job),
            )
        except UnsafeOutput as exc:
            # The job made its output something Respawn does not read: Slurm's and the nodes' word only.
            log.warning("incident %s: the job's output is not read: %s", req.incident_id, exc.reason)
            return [], req.log_offset

    def _output_limit(self) -> int:
        """Lines of the attempt's stream read for its evidence: the server's bound on one query
        (the file's counterpart is its last 4 MiB); the newest `evidence_lines` are the evidence."""
        logs = self._s.config.logs
        return max(logs.evidence_lines, logs.bounds.max_entries_per_query)

    async def _kernel(self, req: GatherRequest, node: str, job: JobInfo) -> list[str]:
        """The kernel's lines of the node's log file since the attempt started."""
        path = self._s.config.kernel_log(node)
        if path is None:
            return []
        try:
            kernel = await asyncio.to_thread(tail_lines, path, _KERNEL_TAIL_LINES)
        except UnsafeOutput as exc:
            log.warning("incident %s: kernel log of %s not read: %s", req.incident_id, node, exc.reason)
            return []
        return _during(kernel, job.start_time)

    async def _launcher(self, req: GatherRequest, job: JobInfo) -> LauncherView | None:
        """The job's in-job launcher, while the job runs: a status a finished run left behind
        offers no rung. Under the advisor transport Respawn writes nothing of the job's, so none."""
        if job.state != JobState.RUNNING or self._s.config.scheduler.transport is SchedulerAccess.ADVISOR:
            return None
        try:
            status = await asyncio.to_thread(channel.read_status, self._s.config.launcher_channel(req.job_id))
        except channel.ChannelError as exc:
            log.warning("incident %s: the launcher's status is not read: %s", req.incident_id, exc.reason)
            return None
        if status is None or (status.job_id is not None and status.job_id != req.job_id):
            return None
        return LauncherView(
            state=status.state,
            step_nodes=[n for n in status.step_nodes if n in job.nodes],
            spares=[n for n in status.spares if n in job.nodes],
            excluded=[n for n in status.excluded if n in job.nodes],
            exit_code=status.exit_code,
            restarts=status.restarts,
            min_nodes=status.min_nodes,
            generation=status.generation,
            no_requeue=status.no_requeue,
        )

    async def _gpu_metrics(
        self, nodes: list[str], start: datetime | None, detections: list[Detection]
    ) -> list[LogLine]:
        """What DCGM says about the attempt's nodes: Xids that changed since it started
        (they back a hardware attribution), and the clocks of the nodes a straggler
        finding names (throttling backs it). Prometheus down or slow: log-only, said so."""
        settings = self._s.config.metrics
        if settings is None:
            return []
        since = (datetime.now(UTC) - start).total_seconds() if start is not None else 0.0
        slow = {d.node for d in detections if d.kind is DetectionKind.SLOWDOWN and d.node}
        try:
            found = await asyncio.to_thread(GpuMetrics(settings).corroborate, nodes, since, slow)
        except MetricsError as exc:
            log.warning("GPU metrics not available for the evidence, it is log-only: %s", exc)
            return [LogLine(text=unavailable_line(str(exc)), source=LineSource.METRICS)]
        return [LogLine(text=text, source=LineSource.METRICS, node=node, seq=i) for i, (node, text) in enumerate(found)]

    def _last_step(self, lines: list[str]) -> int | None:
        """The newest training step the attempt reported: whether it kept training past a suspicion."""
        for text in reversed(lines):
            step = self._s.progress.step(text)
            if step is not None:
                return step
        return None

    def _newest_checkpoint(self, lines: list[str]) -> int | None:
        """The newest checkpoint the attempt saved, else the one it resumed from."""
        newest = None
        for text in lines:
            step = self._s.progress.checkpoint(text)
            if step is None:
                step = self._s.progress.resumed(text)
            if step is not None:
                newest = step if newest is None else max(newest, step)
        return newest


def as_attempt_ran(job: JobInfo, req: GatherRequest) -> JobInfo:
    """The job on the nodes the attempt ran on. Slurm lists a job it has requeued with none
    (PENDING again), or, once it runs again, with the next attempt's: a node it called DOWN can
    requeue the job before the detector's incident reads it, and the attempt's nodes are then the
    ones the detector saw it on (Slurm's listing)."""
    if job.nodes and job.restart_count == req.attempt:
        return job
    seen = next((d.allocation for d in req.detections if d.attempt == req.attempt and d.allocation), [])
    return job.model_copy(update={"nodes": list(seen)}) if seen else job


def _owner(job: JobInfo) -> int | None:
    """Able to read any file (root, CAP_DAC_READ_SEARCH), only the job's own user's file is its output."""
    return job.user_id if _READS_ANY_FILE else None


def _during(kernel: list[str], start: datetime | None) -> list[str]:
    """Kernel lines written since the attempt started. An Xid from an earlier
    job on the node is history, and must not be blamed for this attempt; an
    undated line cannot be placed, so it is left out (`in_attempt`: after the
    second Slurm's StartTime names). Only the kernel's own lines are kernel
    evidence: a userspace program's line in the same file
    (`<time> <host> myprog[123]: NVRM: Xid ...`) is not."""
    if start is None:
        return []
    dated = ((logged_at(t), t) for t in kernel if kernel_message(t) is not None)
    return [t for at, t in dated if at is not None and in_attempt(at, start)]
