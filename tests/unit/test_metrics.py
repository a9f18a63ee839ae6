"""Respawn's own metrics: each is updated where its event happens, once, with bounded labels.

The code paths run for real (activities in Temporal's activity environment, the
detector's poll against a fake Slurm) and the numbers are read back from
prometheus_client's registry. Metrics are process-global, so every check is a
difference between before and after.
"""

import logging
import os
import subprocess
import time
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client import REGISTRY
from temporalio.testing import ActivityEnvironment

from respawn.activities.audit import AuditActivities
from respawn.activities.follow import FollowActivities
from respawn.activities.scheduler import SchedulerActivities
from respawn.audit.trail import AuditTrail, EventType, incident_event
from respawn.config.cluster import ClusterConfig, ConfigError, Listen, load_config
from respawn.detection.detector import Detector
from respawn.detection.rhythm import Stall
from respawn.detection.rules import _LASTED
from respawn.detection.watchdog import REQUEUE_HELD
from respawn.sandbox import lab as make_lab
from respawn.sandbox import prometheus
from respawn.scheduler.errors import SchedulerUnavailable, TransportError
from respawn.scheduler.slurm import JobInfo, NodeInfo, Slurm
from respawn.scheduler.transport import CommandResult
from respawn.services import build_services
from respawn.surfaces import telemetry
from respawn.surfaces.server.app import create_app
from respawn.wire.incident import ActionRequest, FollowRequest
from tests.ports import unused_port

ENROLLED = '{"respawn":{"environment":"demo","mode":"action"}}'
IID = "incident-m1-7-0"


def value(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _config(tmp_path: Path, **extra) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "m1",
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            **extra,
        }
    )


class FakeSlurm:
    """Slurm as the activities and the detector see it: a job, its nodes, and the changes they make."""

    def __init__(self, jobs: list[JobInfo]) -> None:
        self.jobs_ = {j.job_id: j for j in jobs}
        self.nodes_ = {n: NodeInfo(name=n, state="idle") for n in ("node1", "node2", "node3")}
        self.released: list[int] = []

    async def jobs(self) -> list[JobInfo]:
        return list(self.jobs_.values())

    async def nodes(self) -> list[NodeInfo]:
        return list(self.nodes_.values())

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        return self.jobs_[job_id]

    async def node(self, name: str) -> NodeInfo:
        return self.nodes_[name]

    def _update(self, job_id: int, **fields) -> None:
        self.jobs_[job_id] = self.jobs_[job_id].model_copy(update=fields)

    async def requeue_hold(self, job_id: int) -> None:
        job = self.jobs_[job_id]
        self._update(job_id, state="PENDING", state_reason="JobHeldAdmin", restart_count=job.restart_count + 1)

    async def set_excluded_nodes(self, job_id: int, nodes: list[str]) -> None:
        self._update(job_id, excluded_nodes=list(nodes))

    async def release(self, job_id: int) -> None:
        self.released.append(job_id)
        self._update(job_id, state_reason="None")

    async def start_now(self, job_id: int) -> None:
        self._update(job_id, state="RUNNING")

    async def drain(self, node: str, reason: str) -> None:
        self.nodes_[node] = self.nodes_[node].model_copy(update={"flags": ["DRAIN"]})


@pytest.fixture
def services(tmp_path: Path):
    s = build_services(_config(tmp_path))
    s.slurm = FakeSlurm([JobInfo(job_id=7, state="RUNNING", nodes=["node1", "node2"])])
    yield s
    s.audit.close()


async def test_scheduler_actions_are_counted_once_however_often_an_activity_is_retried(services, caplog):
    caplog.set_level(logging.INFO, logger="respawn.activities.scheduler")
    env = ActivityEnvironment()
    scheduler, audit = SchedulerActivities(services), AuditActivities(services)
    detected_at = datetime.now(UTC) - timedelta(seconds=3)
    await env.run(
        audit.record_event,
        incident_event(
            EventType.DETECTED,
            incident_id=IID,
            cluster="m1",
            job_id=7,
            attempt=0,
            at=detected_at,
            details={"kind": "kernel"},
        ),
    )
    request = ActionRequest(incident_id=IID, cluster="m1", job_id=7, attempt=0, exclude=["node2"], drain=["node2"])
    before = {
        name: value(name) for name in ("respawn_restarts_total", "respawn_exclusions_total", "respawn_drains_total")
    }
    latency_count = value("respawn_action_latency_seconds_count", kind="crash")
    latency_sum = value("respawn_action_latency_seconds_sum", kind="crash")

    for _ in range(2):  # the second run is a retry after a crash: the state holds, the rows exist
        await env.run(scheduler.hold_job, request)
        await env.run(scheduler.exclude_nodes, request)
        await env.run(scheduler.release_job, request)
        await env.run(scheduler.drain_nodes, request)

    assert value("respawn_restarts_total") - before["respawn_restarts_total"] == 1
    assert value("respawn_exclusions_total") - before["respawn_exclusions_total"] == 1
    assert value("respawn_drains_total") - before["respawn_drains_total"] == 1
    assert value("respawn_action_latency_seconds_count", kind="crash") - latency_count == 1
    assert value("respawn_action_latency_seconds_sum", kind="crash") - latency_sum >= 3  # from the detection
    assert services.slurm.released == [7]
    # And the worker's log says each, done once, then found so on the retry.
    said = [r.getMessage().split(" (")[0] for r in caplog.records if r.name == "respawn.activities.scheduler"]
    assert said == [
        "job 7: requeue_hold: done",
        "job 7: update_excluded_nodes node2: done",
        "job 7: release: done",
        "job 7: drain node2: done",
        "job 7: requeue_hold: already so",
        "job 7: update_excluded_nodes node2: already so",
        "job 7: release: already so",
        "job 7: drain node2: already so",
    ]


async def test_closed_incidents_stops_and_resumed_restarts_are_counted_from_new_audit_rows(services, tmp_path):
    env = ActivityEnvironment()
    audit = AuditActivities(services)
    closed = incident_event(
        EventType.INCIDENT_CLOSED,
        incident_id=IID,
        cluster="m1",
        job_id=7,
        attempt=0,
        failure_class="gpu_hardware",
        details={"phase": "resumed"},
    )
    odd = incident_event(
        EventType.INCIDENT_CLOSED,
        incident_id="incident-m1-8-0",
        cluster="m1",
        job_id=8,
        attempt=0,
        failure_class="job 8's own words",
        details={"phase": "free text"},
    )
    stopped = incident_event(EventType.STOPPED, incident_id=IID, cluster="m1", job_id=7, attempt=0)
    incidents = value("respawn_incidents_total", failure_class="gpu_hardware", outcome="resumed")
    bounded = value("respawn_incidents_total", failure_class="unknown", outcome="closed")
    stops = value("respawn_stops_total")
    for _ in range(2):
        assert await env.run(audit.record_event, closed) is (_ == 0)
        await env.run(audit.record_event, odd)
        await env.run(audit.record_event, stopped)
    assert value("respawn_incidents_total", failure_class="gpu_hardware", outcome="resumed") - incidents == 1
    assert value("respawn_incidents_total", failure_class="unknown", outcome="closed") - bounded == 1  # no free text
    assert value("respawn_stops_total") - stops == 1

    (tmp_path / "slurm-7.out").write_text("[rank0]: resumed from checkpoint step 10\n[rank0]: step 11 loss 0.5\n")
    follow = FollowActivities(services)
    request = FollowRequest(incident_id=IID, cluster="m1", job_id=7, attempt=0, log_offset=0, timeout_s=5)
    resumed = value("respawn_restarts_resumed_total")
    for _ in range(2):
        assert (await env.run(follow.await_progress, request)).step == 11
    assert value("respawn_restarts_resumed_total") - resumed == 1


def test_with_the_advisor_transport_a_controller_s_restart_counts_once(tmp_path):
    """The controller carries out the advice; the worker counts the restart it advised and when it converged."""
    audit = AuditTrail(tmp_path / "audit.db")
    at = datetime.now(UTC)
    rows = [
        incident_event(
            EventType.DETECTED,
            incident_id=IID,
            cluster="m1",
            job_id=7,
            attempt=0,
            at=at - timedelta(seconds=4),
            details={"kind": "hang"},
        ),
        incident_event(EventType.ADVISED, incident_id=IID, cluster="m1", job_id=7, attempt=0, action="restart"),
        incident_event(
            EventType.RECONCILED,
            incident_id=IID,
            cluster="m1",
            job_id=7,
            attempt=0,
            action="restart",
            acted=True,
            at=at,
        ),
    ]
    restarts = value("respawn_restarts_total")
    latency = value("respawn_action_latency_seconds_count", kind="hang")
    for row in rows * 2:
        if audit.record(row):  # as the activities do: only a new row counts
            telemetry.recorded(row, audit)
    assert value("respawn_restarts_total") - restarts == 1
    assert value("respawn_action_latency_seconds_count", kind="hang") - latency == 1
    audit.close()


class FakeTransport:
    def __init__(self, result: CommandResult | Exception) -> None:
        self.result = result

    async def run(self, argv, timeout: float = 30.0, env=None) -> CommandResult:
        if isinstance(self.result, Exception):
            raise self.result
        return self.result

    async def close(self) -> None:
        return None


async def test_failed_scheduler_calls_are_counted_by_command_and_error_without_ids():
    down = CommandResult(1, "", "scontrol: error: Unable to contact slurm controller (connect failure)\n")
    slurm = Slurm(telemetry.ErrorCountingTransport(FakeTransport(down)))
    labels = {"command": "scontrol requeuehold", "error": "SchedulerUnavailable"}
    before = value("respawn_scheduler_errors_total", **labels)
    with pytest.raises(SchedulerUnavailable):
        await slurm.requeue_hold(1234)
    assert value("respawn_scheduler_errors_total", **labels) - before == 1

    gone = Slurm(telemetry.ErrorCountingTransport(FakeTransport(TransportError("ssh root@h:22: cannot connect"))))
    cancel = value("respawn_scheduler_errors_total", command="scancel", error="TransportError")
    with pytest.raises(TransportError):
        await gone.cancel(1234)  # the job id is no label
    assert value("respawn_scheduler_errors_total", command="scancel", error="TransportError") - cancel == 1

    fine = Slurm(telemetry.ErrorCountingTransport(FakeTransport(CommandResult(0, "", ""))))
    await fine.release(1234)
    assert value("respawn_scheduler_errors_total", command="scontrol release", error="SchedulerUnavailable") == 0


class FakeTemporal:
    def __init__(self) -> None:
        self.started: list[str] = []

    async def start_workflow(self, *args, id: str, **kwargs) -> None:
        self.started.append(id)


async def test_detector_measures_detection_latency_once_per_incident_and_the_time_to_training_again(tmp_path):
    services = build_services(_config(tmp_path, watchdog={"hold_timeout_s": 5}))
    temporal = FakeTemporal()
    detector = Detector(services, temporal)
    now = datetime.now(UTC)
    crashed = JobInfo(job_id=7, state="RUNNING", nodes=["node1", "node2"], comment=ENROLLED, start_time=now)
    stranger = JobInfo(job_id=8, state="PENDING", comment="")
    # Job 9's incident decided to act and held it; no decision released it for 10 s: the watchdog does.
    held = JobInfo(
        job_id=9,
        state="PENDING",
        state_reason="JobHeldAdmin",
        state_description=REQUEUE_HELD,
        restart_count=1,
        comment=ENROLLED,
    )
    for event, at in ((EventType.DECIDED, now - timedelta(seconds=11)), (EventType.HELD, now - timedelta(seconds=10))):
        services.audit.record(
            incident_event(event, incident_id="incident-m1-9-0", cluster="m1", job_id=9, attempt=0, acted=True, at=at)
        )
    services.slurm = FakeSlurm([crashed, stranger, held])
    detector._watchdog._slurm = services.slurm
    output = tmp_path / "slurm-7.out"
    output.write_text("[rank0]: step 1 loss 0.9\n")
    releases = value("respawn_watchdog_releases_total")
    await detector.poll_once()
    await detector.check_holds()  # the watchdog's own timer, with the poll's listing
    assert value("respawn_watchdog_releases_total") - releases == 1
    assert services.slurm.released == [9]

    output.write_text(
        output.read_text() + "[rank1]: RuntimeError: CUDA error: unspecified launch failure\n"
        "[rank1]: torch.cuda.OutOfMemoryError: CUDA out of memory\n"
    )
    failed_at = time.time() - 2
    os.utime(output, (failed_at, failed_at))  # the job wrote its last line 2 s before the detector looked
    count = value("respawn_detection_latency_seconds_count", kind="crash")
    total = value("respawn_detection_latency_seconds_sum", kind="crash")
    found = await detector.poll_once()

    assert len(found) == 2 and temporal.started == ["incident-m1-7-0"] * 2
    assert value("respawn_detection_latency_seconds_count", kind="crash") - count == 1  # two lines, one incident
    assert 1.5 <= value("respawn_detection_latency_seconds_sum", kind="crash") - total < 10
    assert value("respawn_jobs_monitored", enrolled="true") == 2  # jobs 7 and 9
    assert value("respawn_jobs_monitored", enrolled="false") == 1
    assert 0 <= value("respawn_detector_lag_seconds") < 5

    # Requeued: the next attempt runs, and its first step means the job trains again.
    services.slurm.jobs_[7] = crashed.model_copy(update={"restart_count": 1})
    await detector.poll_once()
    recovered = value("respawn_recovery_duration_seconds_count", kind="crash")
    recovered_s = value("respawn_recovery_duration_seconds_sum", kind="crash")
    output.write_text(output.read_text() + "[rank0]: resumed from checkpoint step 1\n[rank0]: step 2 loss 0.8\n")
    await detector.poll_once()
    assert value("respawn_recovery_duration_seconds_count", kind="crash") - recovered == 1
    assert value("respawn_recovery_duration_seconds_sum", kind="crash") - recovered_s >= 2
    output.write_text(output.read_text() + "[rank0]: step 3 loss 0.7\n")
    await detector.poll_once()
    assert value("respawn_recovery_duration_seconds_count", kind="crash") - recovered == 1  # once per fault
    services.audit.close()


def test_a_hang_is_timed_from_when_the_job_went_silent():
    finding = Stall(silent_s=16.2, threshold_s=15.0, phase="training", last_steps={0: 4, 1: 4}).findings({}, {})[0]
    assert float(_LASTED.search(finding.line).group(1)) == 16.2
    assert [telemetry.kind(k) for k in ("hang", "slowdown", "log_line", "node_down", "kernel", "metrics")] == [
        "hang",
        "straggler",
        "crash",
        "crash",
        "crash",
        "crash",
    ]


def test_metrics_are_served_where_the_config_says_and_a_busy_port_is_not_fatal(tmp_path, caplog):
    services = build_services(_config(tmp_path))
    port = unused_port()
    telemetry.expose(Listen(port=port))
    telemetry.count_scheduler_errors(services)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    assert "# TYPE respawn_detection_latency_seconds histogram" in text
    assert "# TYPE respawn_incidents_total counter" in text
    assert isinstance(services.slurm.transport, telemetry.ErrorCountingTransport)

    telemetry.expose(Listen(port=port))  # taken: said, and carried on
    assert "cannot serve metrics" in caplog.text
    services.audit.close()


def test_telemetry_config_is_validated_with_a_one_line_error(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        'cluster: c\nenvironments: {e: {}}\nlogs: {job_output: "/x/{job_id}"}\naudit_db: /tmp/a.db\n'
        "telemetry: {detector: {port: 70000}}\n"
    )
    with pytest.raises(ConfigError, match=r"telemetry\.detector\.port"):
        load_config(path)
    path.write_text(path.read_text().replace("70000", "9201"))
    config = load_config(path)
    assert config.telemetry.detector == Listen(host="127.0.0.1", port=9201) and config.telemetry.worker is None


def test_the_sandbox_prometheus_scrapes_respawn_s_own_processes(tmp_path):
    text = prometheus.config(make_lab())
    for port in prometheus.RESPAWN_PORTS.values():
        assert f"'127.0.0.1:{port}'" in text
    path = tmp_path / "prometheus.yml"
    path.write_text(text)
    checked = subprocess.run(["promtool", "check", "config", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


async def test_the_server_serves_its_metrics_without_a_token(tmp_path):
    transport = httpx.ASGITransport(app=create_app(_config(tmp_path)))
    async with httpx.AsyncClient(transport=transport, base_url="http://respawn") as client:
        reply = await client.get("/metrics")
    assert reply.status_code == 200
    assert "# TYPE respawn_detection_latency_seconds histogram" in reply.text
