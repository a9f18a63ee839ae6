"""Hangs, stragglers and GPU metrics end to end: the real sandbox (Slurm, and
Prometheus scraping the simulated DCGM exporters), real Temporal, real DDP jobs
stepping about once a second, Respawn's detector and worker as processes.

The five-minute healthy soak is in tests/containers/test_containers.py: it runs
beside this suite on the container cluster instead of holding these nodes.
"""

import re
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from respawn.audit.trail import AuditRow, EventType
from respawn.config.cluster import Environment, Mode, load_config
from respawn.sandbox import Lab
from respawn.sandbox.demo import RespawnProcesses
from respawn.sandbox.labconfig import lab_config
from respawn.sandbox.workload.faults import FaultKind, fired_at, heal_gpu, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, until, write_config

ACTION = '{"respawn":{"environment":"progress","mode":"action"}}'
OBSERVE = '{"respawn":{"environment":"progress","mode":"observe"}}'


@pytest.fixture(scope="module")
def cluster(sandbox: Lab, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """Respawn as the sandbox runs it, as a cluster of its own (name, environment, audit
    trail): its incidents count in no other module's node record, nor theirs in its."""
    here = tmp_path_factory.mktemp("progress")
    config = lab_config(sandbox)
    config = config.model_copy(
        update={
            "cluster": "progress",
            "audit_db": here / "audit.db",
            "environments": {"progress": Environment(max_mode=Mode.ACTION)},
            # These cases implicate several of the 4 nodes within minutes, which the circuit
            # breaker for systemic failures would take for one; it is not under test here.
            "budgets": config.budgets.model_copy(update={"systemic_node_share": 1.0}),
        }
    )
    path = write_config(config, here / "progress.yaml")
    with RespawnProcesses(sandbox, path):
        yield Cluster(sandbox, load_config(path))


def _cancel(lab: Lab, job_id: int, timeout: float = 60) -> None:
    """Cancel the job and see it gone: a cancel that lands while Slurm requeues it is lost."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        subprocess.run(["scancel", str(job_id)], env=lab.env(), capture_output=True, timeout=30, check=False)
        shown = subprocess.run(
            ["squeue", "-h", "-j", str(job_id), "-o", "%T"],
            env=lab.env(),
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        # squeue lists an ended job for a while, or nothing; it fails while the controller is away.
        gone = shown.returncode == 0 and shown.stdout.strip() in ("", "CANCELLED", "COMPLETED", "FAILED")
        if gone or "Invalid job id" in shown.stderr:
            return
        time.sleep(1)  # cleanup after a test, not synchronisation: the next scancel retries


def _first(rows: list[AuditRow], event: EventType) -> AuditRow:
    return next(r for r in rows if r.event_type is event)


def _since(at: float, row: AuditRow) -> float:
    return (row.at - datetime.fromtimestamp(at, UTC)).total_seconds()


def _training(cluster: Cluster, name: str, comment: str = ACTION, *sbatch_args: str) -> int:
    """A 3-node job stepping once a second."""
    return submit(
        cluster.lab,
        nodes=3,
        steps=400,
        checkpoint_every=10,
        step_seconds=1.0,
        comment=comment,
        name=name,
        extra_sbatch_args=sbatch_args,
    )


async def test_a_stopped_rank_is_a_hang_on_its_node_and_the_job_restarts_without_it(cluster: Cluster):
    job_id = _training(cluster, "e2e-hang")
    try:
        await cluster.wait_checkpoint(job_id)
        node = (await cluster.job(job_id)).nodes[1]
        inject(cluster.lab, job_id, node, FaultKind.HANG)
        stopped = fired_at(cluster.lab, job_id, node)

        await until(lambda: EventType.DECIDED in cluster.types(job_id), 60, "the hang to be decided")
        rows = cluster.events(job_id)
        detected, decided = _first(rows, EventType.DETECTED), _first(rows, EventType.DECIDED)
        assert detected.details["kind"] == "hang" and detected.details["node"] == node
        assert f"on {node} for " in detected.details["line"] and "its process is stopped" in detected.details["line"]
        # The threshold is the job's own rhythm, never under the sandbox's 15 s floor.
        threshold = float(re.search(r"\(threshold ([\d.]+) s, training\)", detected.details["line"])[1])
        assert 15 <= threshold <= 20
        # The job stepped about once a second until the stop, so its last progress was at
        # most ~1.3 s before it: detected once the threshold passed, within a poll or two.
        assert threshold - 2 < _since(stopped, detected) <= threshold + 1.5
        assert (decided.failure_class, decided.nodes, decided.pattern) == ("hang", [node], "progress-stalled")
        assert decided.action == "restart_excluding" and decided.acted is True

        job = await cluster.wait_state(job_id, {"RUNNING"}, timeout=90, min_restarts=1)
        assert node in job.excluded_nodes and node not in job.nodes
        await until(lambda: EventType.RESUMED in cluster.types(job_id), 120, "the job to train again")
    finally:
        _cancel(cluster.lab, job_id)


async def test_a_rank_three_times_slower_is_a_straggler_with_its_throttled_gpu_in_the_evidence(cluster: Cluster):
    job_id, node = _training(cluster, "e2e-straggler"), None
    try:
        await cluster.wait_checkpoint(job_id)
        node = (await cluster.job(job_id)).nodes[2]
        inject(cluster.lab, job_id, node, FaultKind.SLOW, factor=3.0)

        await until(lambda: EventType.INCIDENT_CLOSED in cluster.types(job_id), 120, "the straggler incident")
        slowed = fired_at(cluster.lab, job_id, node)
        rows = cluster.events(job_id)
        detected, attributed, decided = (
            _first(rows, e) for e in (EventType.DETECTED, EventType.ATTRIBUTED, EventType.DECIDED)
        )
        assert detected.details["kind"] == "slowdown" and detected.details["node"] == node
        assert f"on {node} is 3.0x slower than its peers" in detected.details["line"]
        assert slowed is not None and _since(slowed, detected) < 45
        # The throttled GPU on that node is in the evidence, and decides: it is why the rank is slow.
        assert attributed.pattern == "dcgm-clocks-throttled" and attributed.nodes == [node]
        assert (
            f"Hostname={node} gpu=0 DCGM_FI_DEV_CLOCK_THROTTLE_REASONS=72 (hw_slowdown,hw_thermal_slowdown)"
            in (attributed.details["line"])
        )
        # Stragglers are recommended by default: nothing is done to the job.
        assert decided.failure_class == "slowdown" and decided.nodes == [node] and decided.acted is False
        assert decided.action == "restart_excluding" and decided.incident_id.endswith("-slowdown")
        job = await cluster.job(job_id)
        assert job.state == "RUNNING" and job.restart_count == 0
        assert EventType.HELD not in cluster.types(job_id)
    finally:
        _cancel(cluster.lab, job_id)
        if node is not None:
            heal_gpu(cluster.lab, node)


async def test_an_xid_in_node2s_gpu_metrics_is_a_hardware_incident_for_node2(cluster: Cluster):
    # Observed, not acted on: the job must hold node2, so it could not run without it.
    job_id = _training(cluster, "e2e-xid-metric", OBSERVE, "--nodelist=node2")
    try:
        await cluster.wait_checkpoint(job_id)
        inject(cluster.lab, job_id, "node2", FaultKind.XID_METRIC)
        raised = fired_at(cluster.lab, job_id, "node2")

        await until(lambda: EventType.DECIDED in cluster.types(job_id), 60, "the Xid to be decided")
        rows = cluster.events(job_id)
        detected, decided = _first(rows, EventType.DETECTED), _first(rows, EventType.DECIDED)
        assert detected.details["kind"] == "metrics" and detected.details["node"] == "node2"
        assert detected.details["line"] == "respawn-metrics: Hostname=node2 gpu=0 DCGM_FI_DEV_XID_ERRORS=79 (was 0)"
        assert _since(raised, detected) < 10
        assert (decided.failure_class, decided.nodes, decided.pattern) == ("gpu_hardware", ["node2"], "dcgm-xid")
        assert decided.action == "restart_excluding" and decided.details["exclude"] == ["node2"]
        assert "Xid" not in cluster.output(job_id)  # the rank printed nothing about it
    finally:
        _cancel(cluster.lab, job_id)
        heal_gpu(cluster.lab, "node2")
