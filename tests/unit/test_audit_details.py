"""Audit event details are a typed model per event type (respawn/audit/details.py, issue 13 item 4):
every type has one, a writer's misspelt key fails, rows as today's code writes them read back
typed, older and newer rows read by the rule the module states, and the checkpoint budget reads
its field from stored rows."""

import base64
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError

from respawn.activities.assessment import AssessmentActivities, past_incidents
from respawn.audit.details import (
    DecidedDetails,
    DetectedDetails,
    EnrolledDetails,
    EventDetails,
    IncidentClosedDetails,
    ResumedDetails,
    SchedulerActDetails,
    StoppedDetails,
    reason_or_detail,
)
from respawn.audit.report import AuditSummary, describe
from respawn.audit.trail import DETAILS, AuditEvent, AuditRow, AuditTrail, EventType, incident_event
from respawn.config.cluster import ClusterConfig, Mode
from respawn.services import build_services
from respawn.wire.evidence import Evidence, LogLine
from respawn.wire.incident import AssessRequest, Gathered, IncidentInput

HISTORIES = Path(__file__).parents[1] / "data" / "histories"
SUBMITTED = "2026-03-01T09:00:00+00:00"

# A row of each type as the code at this commit writes it: every key its writer writes, in its order.
# A key here that its model stops naming (a rename without a validation_alias for the old key)
# fails test_rows_as_written_today_read_back_typed: rows already stored would lose that field.
TODAY: dict[EventType, dict] = {
    # respawn/detection/detector.py (_record_enrolment, _job_error, _observe)
    EventType.NOT_ENROLLED: {"reason": "no respawn comment", "submitted": SUBMITTED},
    EventType.ENROLLED: {
        "environment": "demo",
        "mode": "action",
        "note": "",
        "refused": None,
        "submitted": SUBMITTED,
        "array_job_id": 8,
    },
    EventType.WATCH_ERROR: {"error": "UnsafeOutput", "detail": "the job's output is a fifo"},
    EventType.JOB_COMPLETED: {"state": "COMPLETED", "exit_code": 0},
    EventType.JOB_ENDED: {"state": "CANCELLED", "exit_code": None},
    # workflows/incident.py
    EventType.DETECTED: {
        "kind": "log_line",
        "line": "NVRM: Xid 79",
        "pattern": None,
        "node": "n2",
        "job_state": "RUNNING",
        "mode": "action",
        "environment": "demo",
        "occurred": "2026-06-01T11:59:59.500000+00:00",
        "step_seconds": 0.5,
        "checkpoint_interval_s": 300.0,
        "checkpoint_save_s": 12.5,
    },
    EventType.NOT_INTERRUPTED: {
        "why": "the attempt still ran 30 s after the suspicion",
        "line": "NCCL WARN",
        "job_state": "RUNNING",
        "suspected_at_step": 12,
        "last_step": 40,
        "job_restarts": 1,
    },
    EventType.ATTRIBUTED: {
        "node_implicated": True,
        "line": "NVRM: Xid 79",
        "recoverable_by_restart": True,
        "job_state": "FAILED",
        "down_nodes": [],
        "source": "runbooks",
        "hook_error": None,
        "hook_rationale": None,
        "hook_refused_nodes": [],
        "unknown": False,
        "last_lines": ["step 40/400"],
    },
    EventType.SYSTEMIC: {"reason": "3 of 3 nodes implicated"},
    EventType.DECIDED: {
        "reason": "GPU fell off the bus",
        "exclude": ["n2"],
        "newly_excluded": ["n2"],
        "drain": ["n2"],
        "drain_backed": ["n2"],
        "down": ["n2"],
        "systemic": False,
        "checkpoint_step": 30,
        "mode": "action",
        "interruption": "the attempt ended FAILED",
        "submitted": SUBMITTED,
        "fallback": "restart_excluding",
        "last_step": 37,
        "job_nodes": ["n1", "n2", "n3"],
        "cluster_size": 4,
        "launcher": {
            "state": "failed",
            "step_nodes": ["n1", "n2"],
            "spares": ["n3"],
            "excluded": [],
            "exit_code": 137,
            "restarts": 0,
            "min_nodes": None,
            "generation": 0,
            "no_requeue": False,
        },
        "array_job_id": 8,
        "gpus": 24,
    },
    EventType.RELAUNCHED: {
        "rung": "replace_node",
        "generation": 2,
        "excluded": ["n2"],
        "detail": "relaunched on n1,n3",
        "reason": "gpu_hardware on n2: relaunch without it on a spare, in the allocation",
    },
    EventType.RUNG_FAILED: {"rung": "restart_in_place", "why": "no acknowledgement within 60 s", "fallback": "restart"},
    EventType.OVERRIDE: {"who": "alice", "reason": "bad data shard"},
    EventType.STOPPED: {
        "reason": "not recoverable by a restart",
        "launcher": "giving up: the job ends with the step's exit code",
    },
    EventType.INCIDENT_CLOSED: {"phase": "resumed", "reason": "GPU fell off the bus"},
    # activities/scheduler.py
    EventType.HELD: {"changed": True, "detail": "held", "reason": "GPU fell off the bus"},
    EventType.EXCLUDED: {"changed": True, "detail": "excluded n2", "reason": "GPU fell off the bus"},
    EventType.RELEASED: {"changed": False, "detail": "already released", "reason": "GPU fell off the bus"},
    EventType.DRAINED: {"changed": True, "detail": "drained n2", "reason": "GPU fell off the bus"},
    EventType.MARKED_DOWN: {"changed": True, "detail": "marked down n3", "reason": "node3 lost"},
    # activities/follow.py
    EventType.ATTEMPT_STARTED: {},
    EventType.RESUMED: {"step": 31, "resumed_from": 30, "line": "step 31/400 loss 1.2", "since_fault_s": 7.04},
    # respawn/detection/watchdog.py
    EventType.WATCHDOG_RELEASED: {
        "held_for_s": 130.25,
        "hold_timeout_s": 120.0,
        "restart_count": 1,
        "excluded_nodes": ["n2"],
        "reason": "held 130 s without a decision",
    },
    # activities/advice.py
    EventType.ADVISED: {"generation": 1, "exclude": ["n2"], "drain": [], "reason": "GPU fell off the bus"},
    EventType.RECONCILED: {"generation": 1, "status": "converged", "controller": "ctl", "detail": "ctl: done"},
}


def event(event_type: EventType, details, **kw) -> AuditEvent:
    return incident_event(
        event_type, incident_id="incident-c-7-0", cluster="c", job_id=7, attempt=0, details=details, **kw
    )


def test_every_event_type_has_a_model_that_names_every_field():
    assert set(DETAILS) == set(EventType) == set(TODAY)
    for model in DETAILS.values():
        assert issubclass(model, EventDetails) and model.model_config["extra"] == "forbid"


@pytest.mark.parametrize("event_type", list(EventType))
def test_a_misspelt_key_fails_on_write(event_type):
    details = dict(TODAY[event_type])
    if details:
        key = next(iter(details))
        details[key + "s"] = details.pop(key)
    else:
        details["step"] = 1  # a model with no field takes none
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        event(event_type, details)
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        AuditEvent(key="k", event_type=event_type, cluster="c", job_id=7, details=details)


def test_a_value_of_the_wrong_type_fails_on_write():
    with pytest.raises(ValidationError, match="checkpoint_step"):
        event(EventType.DECIDED, {"checkpoint_step": "step ten"})


def test_details_given_as_a_model_must_be_the_model_of_the_event_type():
    assert event(EventType.DECIDED, DecidedDetails(checkpoint_step=3)).details["checkpoint_step"] == 3
    assert event(EventType.HELD, SchedulerActDetails(changed=True)).details["changed"] is True
    with pytest.raises(ValidationError, match="the details of 'decided' events are DecidedDetails, not StoppedDetails"):
        event(EventType.DECIDED, StoppedDetails(reason="x"))


@pytest.mark.parametrize("event_type", list(EventType))
def test_rows_as_written_today_read_back_typed(tmp_path, event_type):
    written = TODAY[event_type]
    model = DETAILS[event_type]
    assert list(written) == list(model.model_fields)  # every key named, in the writer's order
    # A payload built from the model is the dict the writer built before (the workflow's commands).
    assert model(**written).model_dump() == written
    audit = AuditTrail(tmp_path / "a.db")
    assert audit.record(event(event_type, written))
    assert audit.record(
        AuditEvent(key="as-model", event_type=event_type, cluster="c", job_id=7, details=model(**written))
    )
    for row in audit.query():
        assert row.details == written  # the stored JSON keeps its shape
        assert row.typed_details == model(**written) and row.detail(model) == model(**written)


def test_an_event_asked_for_another_types_model_is_a_bug():
    row = event(EventType.ENROLLED, TODAY[EventType.ENROLLED])
    with pytest.raises(TypeError, match="the details of 'enrolled' events are EnrolledDetails, not DecidedDetails"):
        row.detail(DecidedDetails)


def _recorded_events() -> list[dict]:
    events = []
    for path in sorted(HISTORIES.glob("*.json")):
        for e in json.loads(path.read_text())["events"]:
            scheduled = e.get("activityTaskScheduledEventAttributes")
            if scheduled and scheduled["activityType"]["name"] == "record_event":
                events += [json.loads(base64.b64decode(p["data"])) for p in scheduled["input"]["payloads"]]
    return events


def test_the_recorded_histories_events_still_validate_and_read_typed():
    """The histories (written by the code at 243a177) carry the audit events that older
    workflows sent: each still validates as an AuditEvent and reads typed; the fields added
    since (ATTRIBUTED's unknown and last_lines, DECIDED's interruption and submitted) read as
    their defaults."""
    events = _recorded_events()
    assert {e["event_type"] for e in events} >= {"detected", "attributed", "decided", "incident_closed"}
    for payload in events:
        recorded = AuditEvent.model_validate(payload)
        typed = recorded.typed_details
        assert typed.model_dump(include=set(payload["details"])) == payload["details"]
    older = [e for e in events if e["event_type"] == "decided" and "submitted" not in e["details"]]
    assert older and all(AuditEvent.model_validate(e).detail(DecidedDetails).submitted is None for e in older)


def test_an_older_row_reads_its_missing_fields_as_their_defaults():
    row = AuditRow(id=1, key="k", event_type=EventType.DECIDED, cluster="c", job_id=7, details={"reason": "x"})
    typed = row.detail(DecidedDetails)
    assert (typed.reason, typed.exclude, typed.checkpoint_step, typed.submitted) == ("x", [], None, None)
    closed = AuditRow(id=2, key="k2", event_type=EventType.INCIDENT_CLOSED, cluster="c", job_id=7, details={})
    assert closed.detail(IncidentClosedDetails).phase == "closed"  # what the summaries always read it as


def test_a_newer_rows_unknown_key_lists_raw_and_is_left_out_typed(tmp_path):
    """A row a newer release wrote (read after a rollback) loads, lists as stored, and reads
    the fields this release knows; writing such a key is refused (test_a_misspelt_key_fails_on_write)."""
    audit = AuditTrail(tmp_path / "a.db")
    newer = AuditEvent.model_construct(
        key="k",
        event_type=EventType.DECIDED,
        cluster="c",
        job_id=7,
        details={"checkpoint_step": 30, "added_later": [1]},
    )
    audit.record(newer)
    (row,) = audit.query()
    assert row.details == {"checkpoint_step": 30, "added_later": [1]}
    assert row.detail(DecidedDetails).checkpoint_step == 30


def test_a_stored_value_of_the_wrong_type_fails_the_read_loudly():
    row = AuditRow(
        id=1, key="k", event_type=EventType.RESUMED, cluster="c", job_id=7, details={"resumed_from": "latest"}
    )
    with pytest.raises(ValidationError, match="resumed_from"):
        row.detail(ResumedDetails)


def test_the_summaries_read_typed_details():
    def row(i: int, event_type: EventType, **kw) -> AuditRow:
        return AuditRow(id=i, key=str(i), event_type=event_type, cluster="c", job_id=7, details=TODAY[event_type], **kw)

    summary = AuditSummary()
    summary.fold(row(1, EventType.ENROLLED))
    for i, t in enumerate([EventType.DETECTED, EventType.DECIDED, EventType.OVERRIDE, EventType.INCIDENT_CLOSED]):
        summary.fold(row(2 + i, t, incident_id="i", attempt=0, action="deny"))
    summary.fold(row(9, EventType.JOB_ENDED, attempt=1))
    job, incident = summary.jobs[7], summary.incidents["i"]
    assert (job.environment, job.mode, job.ended, job.incidents) == ("demo", "action", "CANCELLED", ["i"])
    assert (incident.kind, incident.environment, incident.exclude, incident.phase) == (
        "log_line",
        "demo",
        ["n2"],
        "resumed",
    )
    assert incident.override == {"action": "deny", "who": "alice", "reason": "bad data shard", "exclude": []}
    assert describe(row(10, EventType.RESUMED)) == "step 31, resumed from checkpoint step 30"
    assert describe(row(11, EventType.RECONCILED)) == "ctl: done"
    assert describe(row(12, EventType.HELD)) == "GPU fell off the bus"
    assert reason_or_detail(EnrolledDetails(note="narrowed")) == ""
    assert (
        describe(
            AuditRow(
                id=13, key="13", event_type=EventType.ENROLLED, cluster="c", job_id=7, details={"note": "narrowed"}
            )
        )
        == "narrowed"
    )
    assert describe(row(14, EventType.DETECTED)) == "log_line: NVRM: Xid 79"
    assert DetectedDetails(**TODAY[EventType.DETECTED]).kind == "log_line"


# The checkpoint budget (activities/assessment.py) reads each earlier attempt's checkpoint step
# from its DECIDED row. Rows stored as the workflow writes them must keep feeding it: renaming
# the field, in the model, the writer or the reader, fails here.


def _decided(attempt: int, step: int | None) -> dict:
    return {**TODAY[EventType.DECIDED], "checkpoint_step": step}


def test_past_incidents_read_the_checkpoint_step_of_stored_rows(tmp_path):
    audit = AuditTrail(tmp_path / "a.db")
    for attempt, step in enumerate([10, 20, None]):
        audit.record(
            incident_event(
                EventType.DECIDED,
                incident_id=f"i{attempt}",
                cluster="c",
                job_id=7,
                attempt=attempt,
                acted=True,
                failure_class="gpu_hardware",
                details=_decided(attempt, step),
            )
        )
    incidents = past_incidents(audit.query(event_types=[EventType.DECIDED]), attempt=3)
    assert [(i.attempt, i.checkpoint_step) for i in incidents] == [(0, 10), (1, 20), (2, None)]


async def test_the_checkpoint_budget_stops_a_job_whose_stored_rows_show_no_new_checkpoint(tmp_path):
    services = build_services(
        ClusterConfig.model_validate(
            {
                "cluster": "c",
                "environments": {"demo": {"max_mode": "action"}},
                "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
                "audit_db": str(tmp_path / "audit.db"),
            }
        )
    )
    submitted = datetime.now(UTC) - timedelta(hours=1)
    services.audit.record(
        AuditEvent(
            key="c/7/enrolled",
            event_type=EventType.ENROLLED,
            cluster="c",
            job_id=7,
            details={**TODAY[EventType.ENROLLED], "submitted": submitted.isoformat()},
        )
    )
    for attempt in range(2):  # two attempts failed at the same checkpoint
        services.audit.record(
            incident_event(
                EventType.DECIDED,
                incident_id=f"i{attempt}",
                cluster="c",
                job_id=7,
                attempt=attempt,
                acted=True,
                failure_class="gpu_hardware",
                nodes=[],
                details={**_decided(attempt, 10), "submitted": submitted.isoformat(), "exclude": []},
            )
        )
    incident = IncidentInput(
        cluster="c",
        job_id=7,
        attempt=2,
        submitted=submitted,
        environment="demo",
        mode=Mode.ACTION,
        settle_s=1,
        cascade_wait_s=0,
        follow_timeout_s=60,
    )
    evidence = Evidence(
        cluster="c",
        job_id=7,
        attempt=2,
        job_state="FAILED",
        nodes=["n1", "n2"],
        lines=[LogLine(text="NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus.", seq=0)],
    )
    gathered = Gathered(
        evidence=evidence,
        log_end=0,
        checkpoint_step=10,
        cluster_nodes=["n1", "n2", "n3", "n4"],
        excluded_nodes=[],
        job_state="FAILED",
    )
    assessment = await AssessmentActivities(services).assess(
        AssessRequest(incident=incident, incident_id="i2", gathered=gathered)
    )
    assert assessment.decision.action.value == "stop", assessment.decision.reason
    assert "no new checkpoint across" in assessment.decision.reason
