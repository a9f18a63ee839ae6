"""The detector, the evidence activity and the follow activity reading a log server
(`logs.source: loki | victorialogs`) instead of files: against the fakes (tests/fakes/),
the same cases for both servers. Slurm and Temporal are stand-ins here: what is under
test is where the lines come from and what becomes of them."""

import functools
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from temporalio.testing import ActivityEnvironment

from respawn.activities.evidence import EvidenceActivities
from respawn.activities.follow import FollowActivities
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.audit.trail import AuditTrail, EventType
from respawn.config.cluster import DEFAULT_RUNBOOKS, ClusterConfig
from respawn.detection.detector import Detector
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.scheduler.slurm import Slurm as RealSlurm
from respawn.scheduler.transport import LocalTransport
from respawn.services import Services
from respawn.sources.progress import ProgressPatterns, ProgressReader
from respawn.wire.evidence import LineSource
from respawn.wire.incident import Detection, DetectionKind, FollowRequest, GatherRequest
from tests.fakes._http import FakeServer, Fault
from tests.fakes.loki import FakeLoki
from tests.fakes.victorialogs import FakeVictoriaLogs
from tests.recovery_stack import until

S = 1_000_000_000
ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
FAILURE = "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered"
XID = "{at} node2 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus."


@pytest.fixture(params=["loki", "victorialogs"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    server: FakeServer = FakeLoki() if request.param == "loki" else FakeVictoriaLogs()
    server.source = request.param  # type: ignore[attr-defined]
    server.start()
    yield server
    server.down()


def _config(tmp_path, fake: FakeServer, timeout_s: float = 0.5, **bounds: Any) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {
                "job_output": str(tmp_path / "slurm-{job_id}.out"),
                "source": fake.source,  # type: ignore[attr-defined]
                "server": {"url": fake.url, "timeout_s": timeout_s},
                "bounds": {"late_window_s": 2.0, "backoff_s": 0.2, **bounds},
            },
            "audit_db": str(tmp_path / "audit.db"),
        }
    )


class Recorder:
    """Temporal as the detector sees it: every detection started or signalled, in order."""

    def __init__(self) -> None:
        self.detections: list[Detection] = []

    async def start_workflow(self, *args: Any, start_signal_args: list[Detection], **kwargs: Any) -> None:
        self.detections.extend(start_signal_args)


class Slurm:
    """The jobs and nodes a test says Slurm lists."""

    def __init__(self, services: Services) -> None:
        self.jobs: list[JobInfo] = []
        self.node_list = [NodeInfo(name=n, state="allocated") for n in ("node1", "node2", "node3")]
        services.slurm.jobs = self._jobs  # type: ignore[method-assign]
        services.slurm.nodes = self._nodes  # type: ignore[method-assign]
        services.slurm.job = self._job  # type: ignore[method-assign]

    async def _jobs(self) -> list[JobInfo]:
        return list(self.jobs)

    async def _nodes(self) -> list[NodeInfo]:
        return list(self.node_list)

    async def _job(self, job_id: int) -> JobInfo:
        return next(j for j in self.jobs if j.job_id == job_id)


def _job(job_id: int, state: str = "RUNNING", started: datetime | None = None, **kw: Any) -> JobInfo:
    started = started or datetime.now(UTC)
    return JobInfo(
        job_id=job_id,
        state=state,
        comment=ACTION,
        nodes=["node1", "node2", "node3"],
        submit_time=started - timedelta(seconds=1),
        start_time=started,
        **kw,
    )


def _job_line(fake: FakeServer, job_id: int, text: str, at: int | None = None) -> int:
    at = time.time_ns() if at is None else at
    fake.push({"job_id": str(job_id), "stream": "stdout"}, text, at)  # type: ignore[attr-defined]
    return at


def _kernel_line(fake: FakeServer, node: str, at: int | None = None) -> None:
    at = time.time_ns() if at is None else at
    stamp = datetime.fromtimestamp(at / S, UTC).isoformat()
    fake.push({"node": node, "stream": "kernel"}, XID.format(at=stamp), at)  # type: ignore[attr-defined]


@functools.cache
def _runbooks() -> tuple[Catalogue, Matcher, ProgressReader]:
    """The built-in runbooks, compiled once for the module (as build_services does)."""
    catalogue = Catalogue.load(DEFAULT_RUNBOOKS)
    return catalogue, Matcher.from_catalogue(catalogue), ProgressReader(ProgressPatterns.load(DEFAULT_RUNBOOKS))


def _services(config: ClusterConfig) -> Services:
    catalogue, matcher, progress = _runbooks()
    slurm = RealSlurm(LocalTransport())  # its reads are replaced by the test's (`Slurm`)
    return Services(config, slurm, AuditTrail(config.audit_db), catalogue, matcher, progress)


def _detector(
    tmp_path, fake: FakeServer, timeout_s: float = 0.5, **bounds: Any
) -> tuple[Detector, Slurm, Recorder, Services]:
    services = _services(_config(tmp_path, fake, timeout_s, **bounds))
    slurm, temporal = Slurm(services), Recorder()
    return Detector(services, temporal), slurm, temporal, services  # type: ignore[arg-type]


def _lines(temporal: Recorder) -> list[str]:
    return [d.line for d in temporal.detections if d.kind is DetectionKind.LOG_LINE and d.line]


async def test_a_failure_line_in_the_jobs_stream_is_detected_with_the_attempts_position(tmp_path, fake):
    detector, slurm, temporal, _ = _detector(tmp_path, fake)
    job = _job(7)
    slurm.jobs = [job]
    await detector.poll_once()
    _job_line(fake, 7, "step 1/30 loss 2.1")
    _job_line(fake, 7, FAILURE)
    await detector.poll_once()
    [detection] = [d for d in temporal.detections if d.kind is DetectionKind.LOG_LINE]
    assert detection.line == FAILURE
    # The attempt's evidence begins at its start, as the stream's time stamp in nanoseconds.
    assert detection.log_offset == int(job.start_time.timestamp()) * S  # type: ignore[union-attr]
    await detector.poll_once()
    assert len(_lines(temporal)) == 1  # read once


async def test_an_xid_in_a_nodes_kernel_stream_is_node_level_evidence_a_userspace_line_is_not(tmp_path, fake):
    detector, slurm, temporal, _ = _detector(tmp_path, fake)
    slurm.jobs = [_job(7)]
    await detector.poll_once()
    stamp = datetime.now(UTC).isoformat()
    forged = XID.format(at=stamp).replace(" kernel: ", " myprog[99]: ")
    fake.push({"node": "node1", "stream": "kernel"}, forged, time.time_ns())  # type: ignore[attr-defined]
    await detector.poll_once()
    assert temporal.detections == []
    _kernel_line(fake, "node2")
    await detector.poll_once()
    [detection] = temporal.detections
    assert detection.node == "node2" and "Xid" in (detection.line or "")


async def test_kernel_history_before_the_detector_started_is_not_news(tmp_path, fake):
    _kernel_line(fake, "node2", at=time.time_ns() - 60 * S)
    detector, slurm, temporal, _ = _detector(tmp_path, fake)
    slurm.jobs = [_job(7)]
    await detector.poll_once()
    await detector.poll_once()
    assert temporal.detections == []


async def test_server_down_blinds_no_slurm_signal_and_loses_no_line(tmp_path, fake):
    detector, slurm, temporal, services = _detector(tmp_path, fake)
    slurm.jobs = [_job(7), _job(8)]
    await detector.poll_once()
    fake.down()
    _job_line(fake, 7, FAILURE)  # shipped while Respawn cannot read the server
    slurm.jobs = [_job(7), _job(8, state="FAILED", exit_code=1, end_time=datetime.now(UTC))]
    await detector.poll_once()
    await detector.poll_once()
    # Slurm's word still counts: job 8's end is detected while its stream is unreadable.
    assert [d.kind for d in temporal.detections] == [DetectionKind.JOB_ENDED]
    errors = [r for r in services.audit.query(cluster="c1") if r.event_type is EventType.WATCH_ERROR]
    assert sorted((r.job_id, r.details["error"]) for r in errors) == [
        (7, "LogServerUnavailable"),
        (8, "LogServerUnavailable"),
    ]  # once per job and kind, not once per poll
    fake.up()
    await detector.poll_once()
    await detector.poll_once()
    assert _lines(temporal) == [FAILURE]


async def test_slow_server_and_429_lose_nothing_and_read_nothing_twice(tmp_path, fake):
    detector, slurm, temporal, _ = _detector(tmp_path, fake)
    slurm.jobs = [_job(7)]
    await detector.poll_once()
    _job_line(fake, 7, FAILURE)
    fake.fail_next(Fault(delay_s=1.0), Fault(status=429, retry_after="0"))
    began = time.monotonic()
    await detector.poll_once()  # slower than timeout_s: the poll goes on without the lines
    assert time.monotonic() - began < 3.0
    await detector.poll_once()  # 429: backs off
    assert _lines(temporal) == []

    async def read() -> bool:
        await detector.poll_once()
        return bool(_lines(temporal))

    await until(read, 5, "the line after the back-off")
    await detector.poll_once()
    assert _lines(temporal) == [FAILURE]


async def test_a_reconnect_mid_answer_loses_nothing_and_late_out_of_order_lines_come_once(tmp_path, fake):
    detector, slurm, temporal, _ = _detector(tmp_path, fake)
    slurm.jobs = [_job(7)]
    await detector.poll_once()
    now = time.time_ns()
    _job_line(fake, 7, "step 1/30 loss 2.1", now)
    fake.fail_next(Fault(drop=True))  # the connection drops halfway through the answer
    await detector.poll_once()
    await detector.poll_once()  # reconnected: reads the step line, from where it was
    fake.out_of_order = True  # type: ignore[attr-defined]
    _job_line(fake, 7, FAILURE, now - 1000)  # shipped late: older than a line already read
    await detector.poll_once()
    await detector.poll_once()
    assert _lines(temporal) == [FAILURE]


async def test_one_jobs_flood_does_not_delay_anothers_failure_line(tmp_path, fake):
    # The fake scans its 3,000 lines in Python: on a loaded CI core that outlasts 0.5 s, and a
    # slow server is another test's case (this one is about the poll's order, not its speed).
    detector, slurm, temporal, _ = _detector(tmp_path, fake, timeout_s=10.0, max_lines=200)
    slurm.jobs = [_job(7), _job(8)]
    await detector.poll_once()
    now = time.time_ns()
    for n in range(3000):
        _job_line(fake, 8, f"noise {n}", now - 1000 * n)
    _job_line(fake, 7, FAILURE, now)
    await detector.poll_once()  # under Loki job 8 fills the shared answer; job 7 is asked again at once
    assert _lines(temporal) == [FAILURE]
    assert detector.watches[8].cursor is not None and detector.watches[8].cursor.behind


async def test_a_label_mapping_that_finds_no_stream_is_on_record_for_the_job(tmp_path, fake):
    detector, slurm, temporal, services = _detector(tmp_path, fake, missing_check_s=0.1)
    slurm.jobs = [_job(7, started=datetime.now(UTC) - timedelta(minutes=5))]
    fake.push({"jobid": "7", "stream": "stdout"}, FAILURE, time.time_ns())  # type: ignore[attr-defined]
    await detector.poll_once()
    await detector.poll_once()
    assert temporal.detections == []
    [error] = [r for r in services.audit.query(cluster="c1") if r.event_type is EventType.WATCH_ERROR]
    assert error.details["error"] == "LogStreamMissing"
    assert 'job_id="7"' in error.details["detail"]


async def test_evidence_and_follow_read_the_attempt_from_the_server(tmp_path, fake):
    services = _services(_config(tmp_path, fake))
    slurm = Slurm(services)
    start = (datetime.now(UTC) - timedelta(seconds=30)).replace(microsecond=0)  # Slurm's: whole seconds
    slurm.jobs = [_job(7, state="FAILED", started=start, exit_code=1)]
    offset = int(start.timestamp()) * S
    _job_line(fake, 7, "an earlier attempt's line", offset - 5 * S)
    _job_line(fake, 7, "saved checkpoint step 10", offset + S)
    _job_line(fake, 7, FAILURE, offset + 2 * S)
    _kernel_line(fake, "node2", offset + 2 * S)
    _kernel_line(fake, "node3", offset - 60 * S)  # an earlier job's Xid on node3: history
    _kernel_line(fake, "node1", offset + S // 2)  # within the second StartTime names: may be before it
    req = GatherRequest(incident_id="i", job_id=7, attempt=0, log_offset=offset, detections=[])
    gathered = await EvidenceActivities(services).gather_evidence(req)
    output = [line.text for line in gathered.evidence.lines if line.source is LineSource.JOB]
    assert output == ["saved checkpoint step 10", FAILURE]
    kernel = [line.node for line in gathered.evidence.lines if line.source is LineSource.KERNEL]
    assert kernel == ["node2"]
    assert gathered.checkpoint_step == 10 and gathered.log_end > offset + 2 * S

    # The next attempt's first step, after where the evidence ended.
    follow = FollowRequest(incident_id="i", cluster="c1", job_id=7, attempt=0, log_offset=gathered.log_end, timeout_s=5)
    _job_line(fake, 7, "resumed from checkpoint step 10")
    _job_line(fake, 7, "step 11/30 loss 1.9")
    resumed = await ActivityEnvironment().run(FollowActivities(services).await_progress, follow)
    assert resumed is not None and resumed.step == 11 and resumed.resumed_from == 10


async def test_evidence_with_the_server_down_is_slurms_word_only(tmp_path, fake):
    services = _services(_config(tmp_path, fake))
    Slurm(services).jobs = [_job(7, state="FAILED", exit_code=1)]
    fake.down()
    req = GatherRequest(incident_id="i", job_id=7, attempt=0, log_offset=time.time_ns(), detections=[])
    gathered = await EvidenceActivities(services).gather_evidence(req)
    assert gathered.evidence.lines == [] and gathered.log_end == req.log_offset
