"""The recovery loop end to end: real Slurm sandbox, real Temporal, real DDP job,
Respawn's detector and worker as real processes."""

import re
import urllib.request
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families

from respawn.audit.cost import Basis, Part, report_from_trail
from respawn.audit.trail import EventType
from respawn.config.cluster import Listen
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, respawn_running, until

ACTION = '{"respawn":{"environment":"demo","mode":"action"}}'
OBSERVE_ONLY_ENV = '{"respawn":{"environment":"prod","mode":"action"}}'


@pytest.fixture(scope="module")
def cluster(sandbox):
    with respawn_running(sandbox, "recovery") as config:
        yield Cluster(sandbox, config)


def _submit(cluster: Cluster, comment: str, steps: int = 20) -> int:
    return submit(cluster.lab, nodes=3, steps=steps, checkpoint_every=10, step_seconds=0.3, comment=comment, name="e2e")


async def test_xid_on_node2_requeues_without_node2_and_completes_from_checkpoint(cluster):
    job_id = _submit(cluster, ACTION)
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)

    rows = await cluster.wait_requeued_without(job_id, "node2")
    decided = next(r for r in rows if r.event_type is EventType.DECIDED)
    assert decided.failure_class == "gpu_hardware" and decided.nodes == ["node2"]
    assert decided.pattern and decided.acted is True
    assert decided.details["exclude"] == ["node2"]
    resumed = next(r for r in rows if r.event_type is EventType.RESUMED)
    assert resumed.details["resumed_from"] >= 10

    # What it cost (issue 15, respawn/audit/cost.py): the work redone since the checkpoint at the
    # job's 0.3 s steps, and the three latencies measured between the recorded times.
    first_attempt = cluster.output(job_id).split("resumed from checkpoint", 1)[0]
    last_step = max(int(m) for m in re.findall(r"\bstep (\d+)/\d+ loss", first_attempt))
    report = report_from_trail(
        cluster.audit,
        cluster.config.cluster,
        cluster.config.accounting,
        decided.at - timedelta(hours=1),
        datetime.now(UTC),
    )
    [cost] = [c for c in report.incidents if c.job_id == job_id]
    assert cost.interrupted and cost.complete
    redone = cost.part(Part.WORK_REDONE)
    assert redone.basis is Basis.ESTIMATED
    assert redone.seconds == pytest.approx((last_step - resumed.details["resumed_from"]) * 0.3, rel=0.5, abs=0.6)
    # Sanity bounds, not speed (BENCHMARKS.md measures that): a wrong clock or unit would be far out.
    bounds = {Part.FAULT_TO_DETECTION: 30, Part.DETECTION_TO_ACTION: 60, Part.ACTION_TO_TRAINING: 180}
    for part, most in bounds.items():
        measured = cost.part(part)
        assert measured.basis is Basis.MEASURED and measured.seconds is not None and 0 <= measured.seconds < most, part

    # Respawn's own metrics counted it, each in the process where it happened (the first incident of the module).
    detector, worker = _scrape(cluster.config.telemetry.detector), _scrape(cluster.config.telemetry.worker)
    assert detector[("respawn_detection_latency_seconds_count", (("kind", "crash"),))] >= 1
    assert detector[("respawn_recovery_duration_seconds_count", (("kind", "crash"),))] >= 1
    assert worker[("respawn_action_latency_seconds_count", (("kind", "crash"),))] >= 1
    assert worker[("respawn_incidents_total", (("failure_class", "gpu_hardware"), ("outcome", "resumed")))] >= 1
    assert worker[("respawn_exclusions_total", ())] >= 1


def _scrape(listen: Listen) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(f"http://{listen.host}:{listen.port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


async def test_keyerror_in_rank0_stops_without_requeue_or_exclusion(cluster):
    job_id = _submit(cluster, ACTION)
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node1", FaultKind.KEYERROR)

    await until(lambda: EventType.INCIDENT_CLOSED in cluster.types(job_id), 60, "the incident to close")
    job = await cluster.wait_state(job_id, {"FAILED"}, timeout=30)
    assert job.restart_count == 0 and job.excluded_nodes == []
    rows = cluster.events(job_id)
    decided = next(r for r in rows if r.event_type is EventType.DECIDED)
    assert decided.failure_class == "app_error" and decided.action == "stop" and decided.nodes == []
    assert "not recoverable" in decided.details["reason"]
    assert EventType.STOPPED in cluster.types(job_id) and EventType.HELD not in cluster.types(job_id)


async def test_environment_that_only_observes_recommends_and_leaves_the_job_alone(cluster):
    job_id = _submit(cluster, OBSERVE_ONLY_ENV)
    await cluster.wait_checkpoint(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)

    await until(lambda: EventType.INCIDENT_CLOSED in cluster.types(job_id), 60, "the recommendation")
    job = await cluster.wait_state(job_id, {"FAILED"}, timeout=30)
    assert job.restart_count == 0 and job.excluded_nodes == []
    decided = next(r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED)
    assert decided.acted is False and decided.action == "restart_excluding" and decided.nodes == ["node2"]
    assert not {EventType.HELD, EventType.EXCLUDED, EventType.RELEASED} & set(cluster.types(job_id))


async def test_job_with_hostile_comment_is_not_enrolled_and_detection_carries_on(cluster):
    hostile = '{"respawn":{"environment":"demo; scontrol update NodeName=node1 State=DRAIN $(id)"}}'
    job_id = _submit(cluster, hostile, steps=5)
    await until(lambda: EventType.NOT_ENROLLED in cluster.types(job_id), 30, "the job to be listed as not enrolled")
    row = cluster.events(job_id)[0]
    assert "environment" in row.details["reason"]
    node1 = await cluster.slurm.node("node1")
    assert "DRAIN" not in [f.upper() for f in node1.flags]


@pytest.mark.slow
async def test_node3_killed_is_excluded_and_the_job_completes_on_the_others(cluster):
    from respawn.sandbox import start_node

    job_id = _submit(cluster, ACTION)
    await cluster.wait_checkpoint(job_id)
    try:
        inject(cluster.lab, job_id, "node3", FaultKind.KILL_NODE)
        job = await cluster.wait_state(job_id, {"COMPLETED"}, timeout=240, min_restarts=1)
    finally:
        start_node(cluster.lab, "node3")
    assert "node3" in job.excluded_nodes and "node3" not in job.nodes
    decided = next(r for r in cluster.events(job_id) if r.event_type is EventType.DECIDED)
    assert decided.nodes == ["node3"]
    # Its slurmd silent to the probe and again to the second: called DOWN by Respawn, not after SlurmdTimeout.
    [marked] = [r for r in cluster.events(job_id) if r.event_type is EventType.MARKED_DOWN]
    assert marked.nodes == ["node3"] and marked.details["changed"] is True
