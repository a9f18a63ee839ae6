"""Recorder of incident workflow histories, the fixtures that tests/workflow/test_replay.py replays.

A pytest plugin, loaded only on purpose (`-p tests.workflow.workflow_histories`) with
RESPAWN_RECORD_HISTORIES set to a folder: every workflow a test starts gets a fixed id,
and when the test is over the history of each one that completed is written to
FOLDER/<path>.json, named from CATALOGUE below. How and when to re-record:
tests/data/histories/README.md.

    RESPAWN_RECORD_HISTORIES=/tmp/histories .venv/bin/python -m pytest -q -p tests.workflow.workflow_histories \
        tests/workflow/test_incident_workflow.py tests/workflow/test_advisor_workflow.py tests/workflow/test_workflow_paths.py \
        tests/workflow/test_interruption.py tests/workflow/test_in_job.py tests/workflow/test_cascade_probe.py \
        tests/workflow/test_settle.py -k "not detector and not crash_after"
"""

import os
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowExecutionStatus

# test function -> the path each workflow it runs covers, in the order it starts them
CATALOGUE: dict[str, list[str]] = {
    # tests/workflow/test_incident_workflow.py
    "test_action_mode_records_the_decision_before_acting_and_follows_the_next_attempt": ["restart_excluding"],
    "test_observe_mode_recommends_and_never_touches_the_scheduler": ["observe_recommended"],
    "test_stop_decision_does_nothing_on_the_scheduler": ["stop"],
    "test_communication_error_waits_for_a_dead_node_then_blames_it": ["cascade_node_down"],
    "test_communication_error_with_no_dead_node_goes_on_after_the_wait": ["cascade_wait_timeout"],
    "test_the_runbook_decides_what_waits_for_a_dead_node": ["cascade_from_runbook", "cascade_not_in_runbook"],
    "test_job_cancelled_by_its_owner_mid_incident_closes_it_and_does_nothing_more": ["job_gone_at_hold"],
    "test_operator_stop_replaces_the_decision_and_is_recorded_with_who_and_why": ["override_stop"],
    "test_operator_restart_excludes_the_nodes_given": ["override_restart_excluding"],
    "test_approve_is_refused_when_nothing_awaits_approval": ["override_approve_refused"],
    "test_approval_environment_waits_and_acts_when_approved": ["approval_approved"],
    "test_denied_incident_does_nothing": ["approval_denied"],
    "test_unanswered_approval_follows_the_default": ["approval_timeout_deny", "approval_timeout_approve"],
    "test_node_with_backed_record_is_drained_after_the_release": ["restart_drain"],
    "test_unbacked_drain_is_only_recommended": ["restart_drain_unbacked"],
    # tests/workflow/test_advisor_workflow.py
    "test_restart_is_published_as_advice_reconciled_then_followed": ["advisor_restart_converged"],
    "test_abandoned_advice_closes_the_incident_without_following": ["advisor_restart_abandoned"],
    "test_stop_is_advised_too_and_recorded_once_carried_out": ["advisor_stop"],
    "test_observe_mode_publishes_no_advice": ["advisor_observe"],
    # tests/workflow/test_workflow_paths.py
    "test_plain_restart_excludes_nothing": ["restart"],
    "test_systemic_failure_is_recorded_before_the_decision": ["restart_systemic"],
    "test_no_next_attempt_closes_the_incident": ["restart_no_next_attempt"],
    "test_job_gone_while_following_closes_the_incident": ["job_gone_while_following"],
    "test_operator_release_lets_the_job_go_unchanged": ["override_release"],
    "test_operator_signal_stop_from_the_web_ui": ["override_signal_stop"],
    "test_advisor_release_is_advised": ["advisor_override_release"],
    "test_advisor_stop_not_carried_out_closes": ["advisor_stop_abandoned"],
    "test_slowdown_is_recommended_beside_the_attempt": ["slowdown_recommended"],
    "test_slowdown_acted_on_excludes_the_slow_node": ["slowdown_restart_excluding"],
    # tests/workflow/test_interruption.py (recorded with the patch "confirm-interruption")
    "test_a_suspicion_the_attempt_outlives_closes_as_not_interrupted_and_acts_on_nothing": [
        "suspected_not_interrupted"
    ],
    "test_a_suspicion_confirmed_within_the_window_is_recovered": ["suspected_confirmed_restart"],
    "test_an_owner_cancel_records_no_stop": ["owner_ended_not_interrupted"],
    "test_a_stop_on_an_attempt_that_still_runs_is_a_recommendation_nobody_acted_on": ["stop_running_recommended"],
    "test_a_stop_on_an_ended_attempt_withholds_its_requeue": ["stop_confirmed"],
    # tests/workflow/test_in_job.py (recorded with the patch "in-job-rungs")
    "test_a_replaced_node_is_relaunched_in_the_allocation_and_followed_without_a_requeue": ["in_job_relaunched"],
    "test_a_relaunch_not_done_falls_back_to_the_requeue_without_the_node": ["in_job_fell_back"],
    # ... (recorded with the patch "settle-on-step-end")
    "test_under_its_launcher_the_settle_ends_once_the_launcher_reports_the_step_ended": ["in_job_settled_on_step_end"],
    # ... (recorded with the patch "stop-tells-launcher")
    "test_a_stop_tells_the_launcher_waiting_after_its_step_failed_to_give_up": ["in_job_stop_gave_up"],
    # tests/workflow/test_cascade_probe.py (recorded with the patch "probe-cascade")
    "test_every_node_answering_decides_at_once_without_waiting_for_slurm": ["cascade_probed_all_answered"],
    "test_a_silent_node_is_blamed_as_if_slurm_had_called_it_down": ["cascade_probed_silent"],
    "test_a_probe_that_cannot_tell_waits_for_slurm_as_before": ["cascade_probed_unknown"],
    # ... (recorded with the patch "probe-suspected-cascade")
    "test_a_suspected_cascade_probes_at_once_and_a_silent_node_confirms_it": ["suspected_cascade_probed_silent"],
    "test_a_suspected_cascade_whose_nodes_all_answer_waits_for_its_confirmation_and_probes_again": [
        "suspected_cascade_probed_all_answered"
    ],
    # ... (recorded with the patch "mark-silent-down")
    "test_a_silent_node_the_decision_excludes_is_marked_down_before_the_hold": ["cascade_probed_silent_marked_down"],
    # tests/workflow/test_settle.py (recorded with the patch "settle-until-slurm-ends-it")
    "test_slurms_verdict_with_the_first_detection_leaves_nothing_to_settle": ["settle_none_after_slurms_verdict"],
    "test_slurms_verdict_during_the_settle_ends_it": ["settle_ended_by_slurms_verdict"],
    "test_without_slurms_verdict_the_settle_runs_its_course": ["settle_ran_its_course"],
    # tests/workflow/test_workflow_paths.py (recorded with the patch "local-assessment"; its
    # one_assessment_restart_excluding with "one-assessment-activity", by the test before it)
    "test_the_evidence_is_gathered_judged_and_decided_on_in_one_workflow_task": ["local_assessment_restart_excluding"],
    "test_a_job_gone_during_the_assessment_closes_the_incident_with_nothing_done": ["job_gone_in_local_assessment"],
}


def workflow_id(path: str) -> str:
    """The id a recorded workflow ran under; tests/workflow/test_replay.py replays it under the same."""
    return f"incident-c-5-0-{path}"


def _paths(test: str) -> list[str]:
    if test in CATALOGUE:
        return CATALOGUE[test]
    return [test.removeprefix("test_")]  # not catalogued yet: named after its test


@pytest.fixture(autouse=True)
async def _record_histories(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    folder = os.environ.get("RESPAWN_RECORD_HISTORIES")
    if not folder:
        yield
        return
    paths = _paths(request.node.originalname)
    handles: list[tuple[str, object]] = []
    start = Client.start_workflow

    async def recorded_start(self, *args, **kwargs):
        n = len(handles)
        path = paths[n] if n < len(paths) else f"{paths[-1]}-{n + 1}"
        kwargs["id"] = workflow_id(path)
        handle = await start(self, *args, **kwargs)
        handles.append((path, handle))
        return handle

    monkeypatch.setattr(Client, "start_workflow", recorded_start)
    yield
    Path(folder).mkdir(parents=True, exist_ok=True)
    for path, handle in handles:
        if (await handle.describe()).status is not WorkflowExecutionStatus.COMPLETED:
            continue  # only a history that ran to its end is a fixture
        history = await handle.fetch_history()
        (Path(folder) / f"{path}.json").write_text(history.to_json() + "\n")
