"""The accounting of lost time (respawn/audit/cost.py, issue 15 item 1): audit rows with known
times written into a real audit trail, read back and folded; the CLI's `respawn report`, the
console's /console/api/cost and the server's cost gauges over the same rows."""

import json
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa
import yaml
from prometheus_client import REGISTRY

from respawn.audit.cost import Basis, GpuBasis, Part, cost_report, parse_since, read_rows, report_from_trail
from respawn.audit.trail import AuditEvent, AuditTrail, EventType, incident_event
from respawn.config.cluster import AccountingSettings, ClusterConfig
from respawn.store.schema import events
from respawn.surfaces import console, telemetry
from respawn.surfaces.cli import main
from respawn.surfaces.console.view import ConsoleView
from respawn.surfaces.server.app import create_app

CLUSTER = "acct"
T0 = datetime(2026, 11, 2, 8, 0, tzinfo=UTC)  # job 7's submission
FAULT = T0 + timedelta(hours=2)  # the Xid, at step 130; the newest checkpoint is step 100
READ = "cost-test-read-token"
EIGHT = AccountingSettings(gpus_per_node=8, job_gpus=8)


def _enrol(audit: AuditTrail, job_id: int, at: datetime, submitted: datetime | None) -> None:
    audit.record(
        AuditEvent(
            key=f"{CLUSTER}/{job_id}/enrolled",
            event_type=EventType.ENROLLED,
            cluster=CLUSTER,
            job_id=job_id,
            at=at,
            details={
                "environment": "demo",
                "mode": "action",
                **({"submitted": submitted.isoformat()} if submitted else {}),
            },
        )
    )


def _row(audit: AuditTrail, iid: str, job_id: int, event: EventType, at: datetime, **fields) -> None:
    attempt = fields.pop("attempt", 0)
    audit.record(
        incident_event(event, incident_id=iid, cluster=CLUSTER, job_id=job_id, attempt=attempt, at=at, **fields)
    )


def _xid_requeued(audit: AuditTrail, *, job_id: int = 7, fault: datetime = FAULT, submitted: datetime = T0) -> str:
    """An Xid at step 130 (checkpoint at step 100, 2 s per step), the requeue excluding the node,
    the next attempt on two nodes training again from step 100."""
    iid = f"incident-{CLUSTER}-{job_id}-0"
    _row(
        audit,
        iid,
        job_id,
        EventType.DETECTED,
        fault + timedelta(seconds=1.5),
        details={
            "kind": "log_line",
            "line": "NVRM: Xid 79",
            "mode": "action",
            "occurred": fault.isoformat(),
            "step_seconds": 2.0,
        },
    )
    _row(audit, iid, job_id, EventType.ATTRIBUTED, fault + timedelta(seconds=2.8), failure_class="gpu_hardware")
    _row(
        audit,
        iid,
        job_id,
        EventType.DECIDED,
        fault + timedelta(seconds=3),
        failure_class="gpu_hardware",
        nodes=["node2"],
        action="restart_excluding",
        acted=True,
        details={
            "reason": "GPU fell off the bus",
            "exclude": ["node2"],
            "checkpoint_step": 100,
            "last_step": 130,
            "mode": "action",
            "submitted": submitted.isoformat(),
        },
    )
    _row(audit, iid, job_id, EventType.HELD, fault + timedelta(seconds=4), action="requeue_hold", acted=True)
    _row(audit, iid, job_id, EventType.EXCLUDED, fault + timedelta(seconds=4.5), nodes=["node2"], acted=True)
    _row(audit, iid, job_id, EventType.RELEASED, fault + timedelta(seconds=5), action="release", acted=True)
    _row(
        audit,
        iid,
        job_id,
        EventType.ATTEMPT_STARTED,
        fault + timedelta(seconds=20),
        attempt=1,
        nodes=["node1", "node3"],
    )
    _row(
        audit,
        iid,
        job_id,
        EventType.RESUMED,
        fault + timedelta(seconds=50),
        attempt=1,
        details={"step": 101, "resumed_from": 100, "line": "step 101 loss 2.1"},
    )
    _row(
        audit,
        iid,
        job_id,
        EventType.INCIDENT_CLOSED,
        fault + timedelta(seconds=50.2),
        failure_class="gpu_hardware",
        details={"phase": "resumed"},
    )
    return iid


def _not_interrupted(audit: AuditTrail, job_id: int, at: datetime) -> None:
    iid = f"incident-{CLUSTER}-{job_id}-0"
    _row(
        audit,
        iid,
        job_id,
        EventType.DETECTED,
        at,
        details={"kind": "log_line", "occurred": (at - timedelta(seconds=1)).isoformat(), "step_seconds": 1.0},
    )
    _row(audit, iid, job_id, EventType.NOT_INTERRUPTED, at + timedelta(seconds=30), details={"why": "trained on"})
    _row(
        audit, iid, job_id, EventType.INCIDENT_CLOSED, at + timedelta(seconds=30), details={"phase": "not_interrupted"}
    )


@pytest.fixture
def audit(tmp_path):
    trail = AuditTrail(tmp_path / "audit.db")
    yield trail
    trail.close()


def _report(audit: AuditTrail, since: datetime, until: datetime, accounting: AccountingSettings = EIGHT):
    return report_from_trail(audit, CLUSTER, accounting, since, until)


def test_an_xid_at_a_known_step_costs_the_redone_work_and_the_measured_latencies(audit):
    _enrol(audit, 7, T0 + timedelta(seconds=10), T0)
    iid = _xid_requeued(audit)
    report = _report(audit, T0, T0 + timedelta(hours=10))
    [incident] = report.incidents
    assert incident.incident_id == iid and incident.interrupted and incident.complete
    assert incident.gpus == 16 and incident.gpus_basis is GpuBasis.ASSUMED  # two nodes × 8
    expected = {
        Part.WORK_REDONE: (60.0, Basis.ESTIMATED),  # (130 − 100) steps × 2 s
        Part.FAULT_TO_DETECTION: (1.5, Basis.MEASURED),
        Part.DETECTION_TO_ACTION: (2.5, Basis.MEASURED),  # DETECTED → HELD
        Part.ACTION_TO_TRAINING: (46.0, Basis.MEASURED),  # HELD → RESUMED
    }
    for part, (seconds, basis) in expected.items():
        got = incident.part(part)
        assert got.seconds == pytest.approx(seconds) and got.basis is basis, part
        assert got.gpu_hours == pytest.approx(seconds * 16 / 3600)
    assert incident.lost_seconds == pytest.approx(110.0)
    assert incident.lost_gpu_hours == pytest.approx(110.0 * 16 / 3600)
    assert "30 steps" in incident.part(Part.WORK_REDONE).note


def test_the_checkpoint_resumed_from_counts_over_the_newest_one_the_decision_knew(audit):
    iid = _xid_requeued(audit)
    # The next attempt said it loaded an older checkpoint than DECIDED knew of: more work is redone.
    with audit._engine.begin() as conn:
        conn.execute(
            sa.update(events).where(events.c.key == f"{iid}/resumed").values(details={"step": 91, "resumed_from": 90})
        )
    [incident] = _report(audit, T0, T0 + timedelta(hours=10)).incidents
    assert incident.part(Part.WORK_REDONE).seconds == pytest.approx(80.0)  # (130 − 90) × 2 s


def test_ettr_interruptions_per_1k_gpu_hours_and_mtbf_against_worked_numbers(audit):
    _enrol(audit, 7, T0 + timedelta(seconds=10), T0)
    _xid_requeued(audit)
    # Job 8: one node's worth (job_gpus: 8), two hours, a suspicion it outlived, then it completed.
    _enrol(audit, 8, T0 + timedelta(hours=1), T0 + timedelta(hours=1))
    _not_interrupted(audit, 8, T0 + timedelta(hours=1, minutes=30))
    audit.record(
        AuditEvent(
            key=f"{CLUSTER}/8/0/job_completed",
            event_type=EventType.JOB_COMPLETED,
            cluster=CLUSTER,
            job_id=8,
            attempt=0,
            at=T0 + timedelta(hours=3),
            details={"state": "COMPLETED", "exit_code": 0},
        )
    )
    report = _report(audit, T0, T0 + timedelta(hours=10))
    jobs = {j.job_id: j for j in report.jobs}
    assert jobs[7].wall_seconds == pytest.approx(36_000) and jobs[7].start_basis is Basis.MEASURED
    assert jobs[7].ettr == pytest.approx((36_000 - 110) / 36_000)
    assert jobs[8].wall_seconds == pytest.approx(7200) and jobs[8].ettr == 1.0 and jobs[8].interruptions == 0
    # GPU-weighted: (35,890 s × 16 + 7,200 s × 8) / (36,000 s × 16 + 7,200 s × 8)
    assert report.ettr_weighting == "gpu_hours"
    assert report.ettr == pytest.approx((35_890 * 16 + 7200 * 8) / (36_000 * 16 + 7200 * 8))
    assert report.wall_gpu_hours == pytest.approx(160 + 16)
    assert report.interruptions == 1
    assert report.interruptions_per_1k_gpu_hours == pytest.approx(1000 / 176)
    mtbf = {b.gpus: b for b in report.mtbf}
    assert mtbf["9-64"].mtbf_hours == pytest.approx(10.0) and mtbf["9-64"].interruptions == 1
    assert mtbf["1-8"].mtbf_hours is None and mtbf["1-8"].wall_hours == pytest.approx(2.0)
    shares = {p.part: p.share for p in report.parts}
    assert shares[Part.WORK_REDONE] == pytest.approx(60 / 110)
    assert sum(s for s in shares.values() if s is not None) == pytest.approx(1.0)
    assert report.lost_gpu_hours == pytest.approx(110 * 16 / 3600)


def test_a_range_counts_only_its_incidents_and_its_share_of_each_jobs_wall_time(audit):
    _enrol(audit, 7, T0 + timedelta(seconds=10), T0)
    _xid_requeued(audit)
    later = _report(audit, FAULT + timedelta(hours=1), FAULT + timedelta(hours=3))
    assert later.incidents == [] and later.interruptions == 0
    [job] = later.jobs
    assert job.wall_seconds == pytest.approx(7200) and job.ettr == 1.0
    # A range ending before the fault: no incident, and the rows after it are not read.
    before = _report(audit, T0, FAULT - timedelta(minutes=1))
    assert before.incidents == [] and before.jobs[0].gpus == 8  # no allocation on record yet: job_gpus


def test_not_interrupted_incidents_cost_nothing(audit):
    _enrol(audit, 8, T0, T0)
    _not_interrupted(audit, 8, T0 + timedelta(minutes=5))
    report = _report(audit, T0, T0 + timedelta(hours=1))
    [incident] = report.incidents
    assert not incident.interrupted and incident.lost_seconds == 0 and incident.lost_gpu_hours == 0
    assert all(p.seconds == 0 for p in incident.parts)
    assert report.interruptions == 0 and report.lost_gpu_hours == 0 and report.ettr == 1.0
    assert report.interruptions_per_1k_gpu_hours == 0.0
    assert all(p.share is None for p in report.parts)


def test_older_rows_without_the_new_fields_are_unknown_never_a_crash(audit):
    """Rows written before DETECTED had `occurred` and `step_seconds` and DECIDED `last_step`."""
    iid = f"incident-{CLUSTER}-9-0"
    _enrol(audit, 9, T0, None)
    _row(audit, iid, 9, EventType.DETECTED, FAULT, details={"kind": "log_line", "line": "NVRM: Xid 79"})
    _row(
        audit,
        iid,
        9,
        EventType.DECIDED,
        FAULT + timedelta(seconds=2),
        action="restart",
        acted=True,
        details={"reason": "old", "checkpoint_step": 100},
    )
    _row(audit, iid, 9, EventType.HELD, FAULT + timedelta(seconds=3), acted=True)
    _row(audit, iid, 9, EventType.RESUMED, FAULT + timedelta(seconds=33), attempt=1, details={"step": 101})
    _row(audit, iid, 9, EventType.INCIDENT_CLOSED, FAULT + timedelta(seconds=33), details={"phase": "resumed"})
    report = _report(audit, T0, T0 + timedelta(hours=4), AccountingSettings())  # nothing configured
    [incident] = report.incidents
    assert incident.part(Part.WORK_REDONE).basis is Basis.UNKNOWN
    assert (
        "last step" in incident.part(Part.WORK_REDONE).note
        and "seconds per step" in incident.part(Part.WORK_REDONE).note
    )
    assert incident.part(Part.FAULT_TO_DETECTION).basis is Basis.UNKNOWN
    assert incident.part(Part.DETECTION_TO_ACTION).seconds == pytest.approx(3.0)
    assert incident.part(Part.ACTION_TO_TRAINING).seconds == pytest.approx(30.0)
    assert not incident.complete and incident.lost_seconds == pytest.approx(33.0)
    assert incident.gpus is None and incident.lost_gpu_hours is None and report.gpus_basis is GpuBasis.UNKNOWN
    assert report.ettr_weighting == "job_hours" and report.interruptions_per_1k_gpu_hours is None
    assert report.jobs[0].start_basis is Basis.ESTIMATED  # no submit time on record: its first row's
    assert {p.part: p.incidents_unknown for p in report.parts}[Part.WORK_REDONE] == 1
    assert any("1 of 1 interruptions have a part unknown" in n for n in report.notes)
    shares = {p.part: p.share for p in report.parts}  # no GPUs: shares of the lost seconds
    assert shares[Part.ACTION_TO_TRAINING] == pytest.approx(30 / 33)


def test_an_in_job_relaunch_an_observed_fault_and_a_stop(audit):
    # In-job: relaunched on 4 nodes 3 s after detection, training again 10 s later.
    relaunched = f"incident-{CLUSTER}-11-0"
    _enrol(audit, 11, T0, T0)
    _row(audit, relaunched, 11, EventType.DETECTED, FAULT, details={"kind": "kernel", "occurred": FAULT.isoformat()})
    _row(
        audit,
        relaunched,
        11,
        EventType.RELAUNCHED,
        FAULT + timedelta(seconds=3),
        action="replace_node",
        acted=True,
        nodes=["n1", "n2", "n3", "n5"],
    )
    _row(audit, relaunched, 11, EventType.RESUMED, FAULT + timedelta(seconds=13), details={"step": 50})
    _row(audit, relaunched, 11, EventType.INCIDENT_CLOSED, FAULT + timedelta(seconds=13), details={"phase": "resumed"})
    # Observe mode: recommended, nothing done; the job ended with the incident.
    observed = f"incident-{CLUSTER}-12-0"
    _enrol(audit, 12, T0, T0)
    _row(audit, observed, 12, EventType.DETECTED, FAULT, details={"kind": "job_ended", "occurred": FAULT.isoformat()})
    _row(audit, observed, 12, EventType.DECIDED, FAULT + timedelta(seconds=2), action="restart", acted=False)
    _row(audit, observed, 12, EventType.INCIDENT_CLOSED, FAULT + timedelta(seconds=2), details={"phase": "recommended"})
    # Stopped: retrying was futile.
    stopped = f"incident-{CLUSTER}-13-0"
    _enrol(audit, 13, T0, T0)
    _row(audit, stopped, 13, EventType.DETECTED, FAULT, details={"kind": "log_line", "occurred": FAULT.isoformat()})
    _row(audit, stopped, 13, EventType.STOPPED, FAULT + timedelta(seconds=5), action="stop", acted=True)
    _row(audit, stopped, 13, EventType.INCIDENT_CLOSED, FAULT + timedelta(seconds=5), details={"phase": "stopped"})

    report = _report(audit, T0, T0 + timedelta(hours=4))
    costs = {c.job_id: c for c in report.incidents}
    assert costs[11].gpus == 32 and costs[11].part(Part.DETECTION_TO_ACTION).seconds == pytest.approx(3.0)
    assert costs[11].part(Part.ACTION_TO_TRAINING).seconds == pytest.approx(10.0)
    assert costs[12].part(Part.DETECTION_TO_ACTION).basis is Basis.UNKNOWN
    assert "recommended" in costs[12].part(Part.DETECTION_TO_ACTION).note
    assert costs[13].part(Part.DETECTION_TO_ACTION).seconds == pytest.approx(5.0)
    assert "stopped" in costs[13].part(Part.ACTION_TO_TRAINING).note
    jobs = {j.job_id: j for j in report.jobs}
    assert jobs[11].end is None and jobs[11].wall_seconds == pytest.approx(4 * 3600)
    assert jobs[12].end == FAULT + timedelta(seconds=2)  # it did not train again
    assert jobs[13].end == FAULT + timedelta(seconds=5)
    assert report.interruptions == 3


def test_a_slowdown_nobody_acted_on_is_no_interruption(audit):
    iid = f"incident-{CLUSTER}-14-0-slowdown"
    _enrol(audit, 14, T0, T0)
    _row(audit, iid, 14, EventType.DETECTED, FAULT, details={"kind": "slowdown", "occurred": FAULT.isoformat()})
    _row(audit, iid, 14, EventType.DECIDED, FAULT + timedelta(seconds=1), action="restart_excluding", acted=False)
    _row(audit, iid, 14, EventType.INCIDENT_CLOSED, FAULT + timedelta(seconds=1), details={"phase": "recommended"})
    report = _report(audit, T0, T0 + timedelta(hours=4))
    assert not report.incidents[0].interrupted and report.interruptions == 0
    assert report.jobs[0].end is None  # a slow job trains on


def test_other_clusters_rows_are_not_counted(audit):
    _xid_requeued(audit)
    rows = list(read_rows(audit, CLUSTER))
    assert cost_report(rows, cluster="other", since=T0, until=T0 + timedelta(days=1), accounting=EIGHT).incidents == []


@pytest.mark.parametrize(("text", "seconds"), [("30m", 1800), ("12h", 43_200), ("7d", 604_800), (" 2w ", 1_209_600)])
def test_since_parses_minutes_hours_days(text, seconds):
    assert parse_since(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "7", "d", "-1d", "1.5h", "0d", "7 days", "999999w"])
def test_since_refuses_anything_else(text):
    with pytest.raises(ValueError):
        parse_since(text)


# ---- the surfaces ----


def _config(tmp_path: Path) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": CLUSTER,
            "environments": {"demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "accounting": {"gpus_per_node": 8, "job_gpus": 8},
            "server": {"tokens": [{"name": "reader", "token": READ, "scopes": ["read"]}]},
        }
    )


def _recent(audit: AuditTrail) -> None:
    """Job 7's incident an hour ago, submitted three hours ago: inside `--since 7d`."""
    now = datetime.now(UTC)
    _enrol(audit, 7, now - timedelta(hours=3), now - timedelta(hours=3))
    _xid_requeued(audit, fault=now - timedelta(hours=1), submitted=now - timedelta(hours=3))


def _config_file(tmp_path: Path) -> Path:
    path = tmp_path / "respawn.yaml"
    path.write_text(yaml.safe_dump(_config(tmp_path).model_dump(mode="json", exclude_unset=True)))
    return path


def test_the_cli_prints_json_for_scripts_and_a_table_for_people(tmp_path, audit, capsys):
    _recent(audit)
    path = _config_file(tmp_path)
    assert main(["report", "--since", "7d", "--json", "--config", str(path)]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["interruptions"] == 1 and got["gpus_basis"] == "assumed"
    [incident] = got["incidents"]
    assert {p["part"]: p["seconds"] for p in incident["parts"]} == pytest.approx(
        {"work_redone": 60.0, "fault_to_detection": 1.5, "detection_to_action": 2.5, "action_to_training": 46.0}
    )
    assert main(["report", "--since", "12h", "--config", str(path)]) == 0
    table = capsys.readouterr().out
    assert "interruptions: 1" in table and "ETTR:" in table and "WORK_REDONE" in table
    assert "~60.0s" in table and "46.0s" in table and "note: " in table
    assert "9-64" in table  # MTBF of 16-GPU jobs
    assert "job 7 (9-64 GPUs): not measured: the checkpoint interval, a checkpoint's save time" in table


def test_the_cli_refuses_a_bad_since(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["report", "--since", "seven days", "--config", str(_config_file(tmp_path))])
    assert exited.value.code == 2
    assert "not a duration" in capsys.readouterr().err


async def test_the_console_api_serves_the_report_behind_the_read_token(tmp_path, audit):
    _recent(audit)
    config = _config(tmp_path)
    app = create_app(config)
    view = ConsoleView(config, slurm=None, audit=audit)  # type: ignore[arg-type]  # the cost reads no Slurm
    app.dependency_overrides[console.api.console_view] = lambda: view
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console.test") as client:
        assert (await client.get("/console/api/cost")).status_code == 401
        auth = {"Authorization": f"Bearer {READ}"}
        got = await client.get("/console/api/cost", params={"since": "7d"}, headers=auth)
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["interruptions"] == 1 and body["lost_gpu_hours"] == pytest.approx(110 * 16 / 3600)
        # What the console's plots read: the lost time binned by part, and the advice per job and size.
        assert body["bin_seconds"] == 86_400 and 7 <= len(body["series"]) <= 8
        assert sum(b["seconds"]["work_redone"] for b in body["series"]) == pytest.approx(60.0)
        assert [a["job_id"] for a in body["advice"]] == [7] and body["advice"][0]["sentence"].startswith("not measured")
        assert [a["gpus"] for a in body["size_advice"]] == ["9-64"]
        assert (await client.get("/console/api/cost", params={"since": "30m"}, headers=auth)).json()[
            "interruptions"
        ] == 0
        bad = await client.get("/console/api/cost", params={"since": "forever"}, headers=auth)
        assert bad.status_code == 422 and "not a duration" in bad.text


def test_the_server_sets_the_cost_gauges_when_scraped(tmp_path, audit):
    _recent(audit)
    gauges = telemetry.CostGauges(_config(tmp_path), every_s=3600)
    gauges.refresh()
    lost = {p.value: REGISTRY.get_sample_value("respawn_lost_seconds", {"part": p.value}) for p in Part}
    assert lost == pytest.approx(
        {"work_redone": 60.0, "fault_to_detection": 1.5, "detection_to_action": 2.5, "action_to_training": 46.0}
    )
    assert REGISTRY.get_sample_value("respawn_lost_gpu_hours", {"part": "work_redone"}) == pytest.approx(60 * 16 / 3600)
    ettr = REGISTRY.get_sample_value("respawn_ettr_ratio", {})
    assert ettr is not None and not math.isnan(ettr) and 0.98 < ettr < 1.0
    # Throttled: a second scrape within the interval reads nothing new.
    _not_interrupted(audit, 8, datetime.now(UTC) - timedelta(minutes=5))
    _row(audit, "incident-acct-7-1", 7, EventType.DETECTED, datetime.now(UTC), details={"kind": "hang"})
    gauges.refresh()
    assert REGISTRY.get_sample_value("respawn_lost_seconds", {"part": "work_redone"}) == pytest.approx(60.0)


def test_the_accounting_setting_is_optional_and_bounded(tmp_path):
    assert (
        ClusterConfig.model_validate(
            {"cluster": CLUSTER, "environments": {}, "logs": {"job_output": "x"}, "audit_db": "a.db"}
        ).accounting
        == AccountingSettings()
    )
    with pytest.raises(ValueError, match="gpus_per_node"):
        AccountingSettings.model_validate({"gpus_per_node": 0})
    with pytest.raises(ValueError, match="gpu_per_node"):
        AccountingSettings.model_validate({"gpu_per_node": 8})  # a misspelt key is refused


def test_a_suspicion_awaiting_confirmation_counts_nothing_yet(audit):
    iid = f"incident-{CLUSTER}-15-0"
    _enrol(audit, 15, T0, T0)
    _row(audit, iid, 15, EventType.DETECTED, FAULT, details={"kind": "log_line", "occurred": FAULT.isoformat()})
    report = _report(audit, T0, T0 + timedelta(hours=4))
    [incident] = report.incidents
    assert not incident.interrupted and incident.phase == "open" and incident.lost_seconds == 0
    assert all(p.basis is Basis.UNKNOWN and "not confirmed" in p.note for p in incident.parts)
    assert report.interruptions == 0 and report.jobs[0].end is None


def test_gpus_slurm_reported_for_the_allocation_win_over_the_configured_assumption(audit):
    iid = _xid_requeued(audit)
    decided = next(r for r in audit.query(incident_id=iid) if r.event_type is EventType.DECIDED)
    audit.record(decided.model_copy(update={"key": f"{iid}/decided-gpus", "details": {**decided.details, "gpus": 24}}))
    [incident] = _report(audit, T0, T0 + timedelta(hours=10)).incidents
    assert (incident.gpus, incident.gpus_basis) == (24, GpuBasis.REPORTED)


# ---- how often to checkpoint (issue 15, item 3) ----


def _detected(audit: AuditTrail, iid: str, job_id: int, at: datetime, **measures) -> None:
    _row(
        audit,
        iid,
        job_id,
        EventType.DETECTED,
        at,
        details={
            "kind": "log_line",
            "occurred": (at - timedelta(seconds=1)).isoformat(),
            "step_seconds": 1.0,
            **measures,
        },
    )


def _suspicion(audit: AuditTrail, job_id: int, n: int, at: datetime, **measures) -> None:
    """A suspicion the attempt outlived: no interruption, but its DETECTED row carries the job's rhythm."""
    iid = f"incident-{CLUSTER}-{job_id}-s{n}"
    _detected(audit, iid, job_id, at, **measures)
    _row(audit, iid, job_id, EventType.NOT_INTERRUPTED, at + timedelta(seconds=30), details={"why": "trained on"})
    _row(
        audit, iid, job_id, EventType.INCIDENT_CLOSED, at + timedelta(seconds=30), details={"phase": "not_interrupted"}
    )


def _restarted(audit: AuditTrail, job_id: int, fault: datetime, **measures) -> None:
    """An Xid: detected 10 s after it, held 20 s later, training again 90 s after that (R = 120 s)."""
    iid = f"incident-{CLUSTER}-{job_id}-0"
    _row(
        audit,
        iid,
        job_id,
        EventType.DETECTED,
        fault + timedelta(seconds=10),
        details={"kind": "log_line", "occurred": fault.isoformat(), "step_seconds": 1.0, **measures},
    )
    _row(
        audit,
        iid,
        job_id,
        EventType.DECIDED,
        fault + timedelta(seconds=12),
        action="restart",
        acted=True,
        details={"reason": "Xid", "checkpoint_step": 100, "last_step": 130},
    )
    _row(audit, iid, job_id, EventType.HELD, fault + timedelta(seconds=30), acted=True)
    _row(audit, iid, job_id, EventType.RESUMED, fault + timedelta(seconds=120), attempt=1, details={"step": 101})
    _row(audit, iid, job_id, EventType.INCIDENT_CLOSED, fault + timedelta(seconds=120), details={"phase": "resumed"})


def test_the_advice_from_the_measured_interval_save_time_and_failure_rate_against_worked_numbers(audit):
    """checkpointing.py's worked example (test_checkpointing.py): τ = 30 min, C = 38 s, M = 4.1 h, R = 120 s
    gives Daly's 1,033.95 s and 11.7% of lost time saved. Here every figure is measured from rows: the
    medians of three DETECTED rows' measures, one interruption in the job's 4.1 h, its 120 s restart."""
    _enrol(audit, 21, T0, T0)
    _suspicion(audit, 21, 1, T0 + timedelta(hours=1), checkpoint_interval_s=1700.0, checkpoint_save_s=30.0)
    _restarted(audit, 21, FAULT, checkpoint_interval_s=1800.0, checkpoint_save_s=38.0)
    _suspicion(audit, 21, 2, T0 + timedelta(hours=3), checkpoint_interval_s=1900.0, checkpoint_save_s=45.0)
    report = _report(audit, T0, T0 + timedelta(hours=4.1))
    [advice] = report.advice
    assert (advice.job_id, advice.gpus, advice.measures) == (21, "1-8", 3)  # job_gpus: 8
    assert (advice.interval_s, advice.save_s) == (1800.0, 38.0)
    assert advice.mtbf_s == pytest.approx(4.1 * 3600) and "1 interruption in 4.1 h" in advice.mtbf_from
    assert advice.restart_s == pytest.approx(120.0)
    assert advice.advice is not None and advice.missing == []
    assert advice.advice.optimal_interval_s == pytest.approx(1033.95, abs=0.01)
    assert advice.advice.lost_share_saved == pytest.approx(0.117, abs=0.001)
    assert advice.sentence == (
        "checkpointing every 30 min; at the measured 1 failure per 4.1 h and 38 s saves, "
        "every 17 min would save about 12% of lost time"
    )
    [size] = report.size_advice
    assert size.job_id is None and size.gpus == "1-8" and size.sentence == advice.sentence


def test_a_job_without_the_measures_is_not_advised_and_says_what_is_missing(audit):
    _enrol(audit, 22, T0, T0)
    _xid_requeued(audit, job_id=22)  # interrupted, but its rows carry no checkpoint measures
    _enrol(audit, 23, T0, T0)  # measured, but no job of its size (1-8) failed in the range
    _suspicion(audit, 23, 1, T0 + timedelta(hours=1), checkpoint_interval_s=600.0, checkpoint_save_s=20.0)
    report = _report(audit, T0, T0 + timedelta(hours=10))
    advice = {a.job_id: a for a in report.advice}
    assert advice[22].advice is None and advice[22].measures == 0
    assert advice[22].sentence == "not measured: the checkpoint interval, a checkpoint's save time"
    assert advice[22].mtbf_s == pytest.approx(10 * 3600)  # the failure rate is there
    assert advice[23].advice is None and advice[23].interval_s == 600.0
    assert advice[23].sentence.startswith("not measured: a failure rate (no interruption of a job of 1-8 GPUs")
    assert advice[23].restart_s == 0.0 and "not measured" in advice[23].restart_from


def test_a_save_quicker_than_the_polls_is_no_save_time_to_advise_from(audit):
    """The sandbox's saves take less than a poll: 'saving' and 'saved' seen at once, 0 s."""
    _enrol(audit, 26, T0, T0)
    _restarted(audit, 26, FAULT, checkpoint_interval_s=3.0, checkpoint_save_s=0.0)
    [advice] = _report(audit, T0, T0 + timedelta(hours=4)).advice
    assert advice.advice is None and advice.save_s == 0.0
    assert advice.sentence == (
        "not measured: a checkpoint's save time (measured as 0 s: too short for the detector's polls to tell)"
    )


def test_jobs_of_one_size_pool_their_failure_rate_and_restart_time(audit):
    # Two 8-GPU jobs, 10 h each: job 24 failed once (R = 120 s), job 25 never, but its rhythm is measured.
    _enrol(audit, 24, T0, T0)
    _restarted(audit, 24, FAULT)
    _enrol(audit, 25, T0, T0)
    _suspicion(audit, 25, 1, T0 + timedelta(hours=1), checkpoint_interval_s=3600.0, checkpoint_save_s=60.0)
    report = _report(audit, T0, T0 + timedelta(hours=10))
    advice = {a.job_id: a for a in report.advice}
    got = advice[25]
    assert got.mtbf_s == pytest.approx(20 * 3600) and "2 jobs of 1-8 GPUs: 1 interruption in 20.0 h" in got.mtbf_from
    assert got.restart_s == pytest.approx(120.0)  # its size's: it had no incident of its own
    assert got.advice is not None
    assert got.advice.optimal_interval_s == pytest.approx(
        math.sqrt(2 * 60 * 72_000) * (1 + math.sqrt(60 / 144_000) / 3 + 60 / 144_000 / 9) - 60
    )
    assert got.sentence.startswith("checkpointing every 60 min; at the measured 1 failure per 20.0 h and 60 s saves")
    [size] = report.size_advice
    assert size.measures == 1 and size.advice == got.advice


def test_the_series_bins_the_lost_time_by_part_over_the_range(audit):
    _xid_requeued(audit)
    report = _report(audit, T0, T0 + timedelta(hours=10))
    assert report.bin_seconds == 3600 and len(report.series) == 10  # a 10 h range: hourly
    assert report.series[0].start == T0
    [hit] = [b for b in report.series if b.interruptions]
    assert hit.start == FAULT and hit.seconds[Part.WORK_REDONE] == pytest.approx(60.0)
    for p in report.parts:
        assert sum(b.gpu_hours[p.part] for b in report.series) == pytest.approx(p.gpu_hours)
    assert _report(audit, T0, T0 + timedelta(hours=3)).bin_seconds == 300
    week = _report(audit, T0, T0 + timedelta(days=7))
    # 7 days from 08:00 UTC touch 8 UTC days: the bins are aligned to midnight
    assert week.bin_seconds == 86_400 and len(week.series) == 8 and week.series[0].start == T0 - timedelta(hours=8)


async def test_the_console_serves_the_cost_page_and_draws_it_itself(tmp_path):
    """The cost page is part of the static console: its figures, drawn as SVG by console.js,
    which loads nothing from anywhere else (the console works offline)."""
    app = create_app(_config(tmp_path))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://console.test") as client:
        html = (await client.get("/console")).text
        script = (await client.get("/console/console.js")).text
    for needed in ('id="cost-panel"', 'href="#cost"', 'id="plot-lost"', 'id="plot-ettr"', 'id="plot-mtbf"'):
        assert needed in html, needed
    assert 'id="cost-advice"' in html and 'id="cost-incidents"' in html
    assert "/console/api/cost?" in script and "createElementNS(SVG_NS" in script
    assert set(re.findall(r"https?://[^\s\"'`]+", script)) == {"http://www.w3.org/2000/svg"}
