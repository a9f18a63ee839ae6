"""What-if replay (respawn/surfaces/replay.py, `respawn replay`): the recorded incidents decided
again. Rows are written as the workflow writes them, from decisions made by the real decision
stage over the built-in runbooks; then replayed with the same runbooks (nothing changes) and with
an edited copy (exactly the incidents of the edited class change)."""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from respawn.attribution.runbook import DEFAULT_DIR, Catalogue
from respawn.audit.cost import Basis, GpuBasis, IncidentCost, Part, PartCost
from respawn.audit.details import AttributedDetails, DecidedDetails
from respawn.audit.trail import AuditTrail, EventType, incident_event
from respawn.config.cluster import Budgets
from respawn.decision.decide import JobHistory, JobShape, decide
from respawn.surfaces import cli
from respawn.surfaces.replay import read_rows, replay
from respawn.wire.attribution import Attribution
from respawn.wire.taxonomy import CauseLayer, FailureClass

CLUSTER_NODES = ["n1", "n2", "n3", "n4"]
XID = Attribution(
    failure_class=FailureClass.GPU_HARDWARE,
    cause_layer=CauseLayer.HARDWARE,
    node_implicated=True,
    nodes=["n2"],
    recoverable_by_restart=True,
    pattern="xid-fatal",
    line="NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.",
)
TIMEOUT = Attribution(
    failure_class=FailureClass.COMM_TIMEOUT,
    cause_layer=CauseLayer.AMBIGUOUS,
    recoverable_by_restart=True,
    pattern="nccl-watchdog-timeout",
    line="[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.",
)


def record(trail: AuditTrail, job_id: int, attribution: Attribution, catalogue: Catalogue) -> None:
    """One incident of its own job, decided by the decision stage and recorded as the workflow does."""
    iid = f"incident-c-{job_id}-0"
    shape = JobShape(job_nodes=["n1", "n2", "n3"], cluster_nodes=CLUSTER_NODES)
    decision = decide(
        attribution, catalogue.runbook(attribution.failure_class), JobHistory(), Budgets(), shape, checkpoint_step=10
    )
    common = dict(
        incident_id=iid, cluster="c", job_id=job_id, attempt=0, failure_class=attribution.failure_class.value,
        pattern=attribution.pattern, cause_layer=attribution.cause_layer.value, nodes=attribution.nodes,
    )  # fmt: skip
    trail.record(
        incident_event(
            EventType.ATTRIBUTED,
            **common,
            details=AttributedDetails(
                node_implicated=attribution.node_implicated,
                line=attribution.line,
                recoverable_by_restart=attribution.recoverable_by_restart,
            ),
        )
    )
    trail.record(
        incident_event(
            EventType.DECIDED,
            **common,
            action=decision.action.value,
            acted=True,
            details=DecidedDetails(
                reason=decision.reason,
                exclude=decision.exclude,
                newly_excluded=decision.newly_excluded,
                checkpoint_step=10,
                systemic=False,
                job_nodes=shape.job_nodes,
                cluster_size=len(CLUSTER_NODES),
            ),
        )
    )


def trail_with_incidents(tmp_path: Path) -> AuditTrail:
    trail = AuditTrail(tmp_path / "audit.db")
    catalogue = Catalogue.load()
    for job_id, attribution in [(1, XID), (2, TIMEOUT), (3, XID)]:
        record(trail, job_id, attribution, catalogue)
    # An incident recorded before decisions kept the allocation: said, not guessed.
    trail.record(
        incident_event(
            EventType.DECIDED, incident_id="incident-c-9-0", cluster="c", job_id=9, attempt=0,
            failure_class="gpu_hardware", action="restart_excluding", details=DecidedDetails(exclude=["n2"]),
        )
    )  # fmt: skip
    return trail


def test_the_same_runbooks_change_no_decision(tmp_path):
    results = replay(read_rows(trail_with_incidents(tmp_path), "c"), Catalogue.load(), Budgets())
    assert [r.changed for r in results] == [False, False, False, False]
    assert [r.replayable for r in results] == [True, True, True, False]
    assert "not replayable" in results[3].why


def test_an_edited_ladder_changes_exactly_its_classes_incidents(tmp_path):
    edited = tmp_path / "runbooks"
    shutil.copytree(DEFAULT_DIR, edited)
    book = yaml.safe_load((edited / "gpu_hardware.yaml").read_text())
    book["ladder"] = [{"action": "stop"}]
    (edited / "gpu_hardware.yaml").write_text(yaml.safe_dump(book, sort_keys=False))
    results = replay(read_rows(trail_with_incidents(tmp_path), "c"), Catalogue.load(edited), Budgets())
    changed = {r.incident_id: (r.before, r.after) for r in results if r.changed}
    assert changed == {
        "incident-c-1-0": ("restart_excluding", "stop"),
        "incident-c-3-0": ("restart_excluding", "stop"),
    }


def test_a_changed_budget_and_a_pattern_that_reads_the_deciding_line_otherwise(tmp_path):
    trail = trail_with_incidents(tmp_path)
    # No restarts allowed: every replayable incident would have stopped.
    none = replay(read_rows(trail, "c"), Catalogue.load(), Budgets(max_restarts=0))
    assert [r.after for r in none if r.replayable] == ["stop", "stop", "stop"]
    # A new pattern puts the watchdog line in app_error (priority above the NCCL timeout's).
    edited = tmp_path / "reread"
    shutil.copytree(DEFAULT_DIR, edited)
    book = yaml.safe_load((edited / "app_error.yaml").read_text())
    book["patterns"].append({"id": "site-watchdog-is-ours", "regex": "Watchdog caught collective", "priority": 999})
    (edited / "app_error.yaml").write_text(yaml.safe_dump(book, sort_keys=False))
    reread = [r for r in replay(read_rows(trail, "c"), Catalogue.load(edited), Budgets()) if r.reread]
    assert [(r.incident_id, r.failure_class, r.after) for r in reread] == [("incident-c-2-0", "app_error", "stop")]


def test_the_command_prints_the_changes_and_json_for_scripts(tmp_path, capsys, monkeypatch):
    trail_with_incidents(tmp_path)
    config = tmp_path / "respawn.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "cluster": "c",
                "environments": {"demo": {"max_mode": "action"}},
                "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
                "audit_db": str(tmp_path / "audit.db"),
            }
        )
    )
    assert cli.main(["replay", "--config", str(config), "--budget", "max_restarts=0", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["incident_id"] for r in rows if r["changed"]} == {"incident-c-1-0", "incident-c-2-0", "incident-c-3-0"}
    assert cli.main(["replay", "--config", str(config)]) == 0
    assert "0 would be decided otherwise, 1 not replayable" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # argparse's usage error
        cli.main(["replay", "--config", str(config), "--since", "7 days"])


def _cost(iid: str, job_id: int, action: str, act_s: float, train_s: float) -> IncidentCost:
    seconds = {Part.WORK_REDONE: 3.0, Part.FAULT_TO_DETECTION: 0.2, Part.DETECTION_TO_ACTION: act_s,
               Part.ACTION_TO_TRAINING: train_s}  # fmt: skip
    return IncidentCost(
        incident_id=iid, job_id=job_id, attempt=0, detected_at=datetime.now(UTC), kind="log_line",
        failure_class="gpu_hardware", action=action, phase="resumed", interrupted=True, gpus=16,
        gpus_basis=GpuBasis.REPORTED,
        parts=[PartCost(part=p, seconds=s, gpu_hours=s * 16 / 3600, basis=Basis.MEASURED) for p, s in seconds.items()],
        lost_seconds=sum(seconds.values()), lost_gpu_hours=sum(seconds.values()) * 16 / 3600, complete=True,
    )  # fmt: skip


def test_the_effect_of_a_change_is_estimated_from_what_the_trail_measured(tmp_path):
    trail = trail_with_incidents(tmp_path)
    # The two Xid incidents were requeued without n2 (1.8 s to act, 8.5 s to train again); the
    # watchdog timeout was a plain requeue (1.7 s, 9.0 s).
    costs = [
        _cost("incident-c-1-0", 1, "restart_excluding", 1.8, 8.5),
        _cost("incident-c-2-0", 2, "restart", 1.7, 9.0),
        _cost("incident-c-3-0", 3, "restart_excluding", 1.9, 8.3),
    ]
    edited = tmp_path / "runbooks"
    shutil.copytree(DEFAULT_DIR, edited)
    book = yaml.safe_load((edited / "gpu_hardware.yaml").read_text())
    book["ladder"] = [{"action": "stop"}]
    (edited / "gpu_hardware.yaml").write_text(yaml.safe_dump(book, sort_keys=False))
    results = {r.incident_id: r for r in replay(read_rows(trail, "c"), Catalogue.load(edited), Budgets(), None, costs)}
    stopped = results["incident-c-1-0"]
    assert stopped.lost_seconds == pytest.approx(13.5)
    assert stopped.effect_seconds == pytest.approx(-10.3)  # its recovery not spent ...
    assert stopped.effect_gpu_hours == pytest.approx(-10.3 * 16 / 3600)
    assert "remaining training is forgone" in stopped.effect_note  # ... and what that leaves out
    unchanged = results["incident-c-2-0"]
    assert not unchanged.changed and unchanged.effect_seconds is None and unchanged.lost_seconds == pytest.approx(13.9)
    # A rung the range never took cannot be estimated: said, not guessed.
    none = {
        r.incident_id: r for r in replay(read_rows(trail, "c"), Catalogue.load(), Budgets(max_restarts=0), None, [])
    }
    assert none["incident-c-1-0"].effect_note == "no accounting for the incident in the range"
