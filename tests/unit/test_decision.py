from respawn.activities.assessment import past_incidents
from respawn.attribution.runbook import Action, NodeRule, Runbook, Rung
from respawn.audit.trail import AuditRow, EventType
from respawn.config.cluster import Budgets
from respawn.decision.decide import JobHistory, JobShape, PastIncident, decide
from respawn.decision.operator import operator_decision
from respawn.wire.attribution import Attribution
from respawn.wire.incident import Override, OverrideAction
from respawn.wire.taxonomy import CauseLayer, FailureClass

HW = Runbook(
    failure_class=FailureClass.GPU_HARDWARE,
    cause_layer=CauseLayer.HARDWARE,
    recoverable_by_restart=True,
    node_rule=NodeRule.RANK,
    ladder=[Rung(action=Action.RESTART_EXCLUDING, times=3)],
)
APP = Runbook(
    failure_class=FailureClass.APP_ERROR,
    cause_layer=CauseLayer.APPLICATION,
    recoverable_by_restart=False,
    ladder=[Rung(action=Action.STOP)],
)
FAULT = Runbook(
    failure_class=FailureClass.GPU_FAULT,
    cause_layer=CauseLayer.AMBIGUOUS,
    recoverable_by_restart=True,
    node_rule=NodeRule.RECURRENCE,
    ladder=[Rung(action=Action.RESTART), Rung(action=Action.RESTART_EXCLUDING, times=2)],
)
SHAPE = JobShape(job_nodes=["n2", "n3"], cluster_nodes=["n1", "n2", "n3", "n4"])
BUDGETS = Budgets(max_restarts=3, no_checkpoint_attempts=2)


def hw(nodes=("n2",)) -> Attribution:
    return Attribution(
        failure_class=FailureClass.GPU_HARDWARE,
        cause_layer=CauseLayer.HARDWARE,
        node_implicated=bool(nodes),
        nodes=list(nodes),
        recoverable_by_restart=True,
        pattern="xid-fatal",
    )


def test_hardware_fault_restarts_without_the_node():
    d = decide(hw(), HW, JobHistory(), BUDGETS, SHAPE, checkpoint_step=10)
    assert d.action is Action.RESTART_EXCLUDING
    assert d.exclude == ["n2"] and d.newly_excluded == ["n2"]


def test_exclusions_accumulate_across_attempts():
    history = JobHistory(
        restarts=1,
        excluded_nodes=["n2"],
        incidents=[PastIncident(attempt=0, failure_class=FailureClass.GPU_HARDWARE, nodes=["n2"], checkpoint_step=10)],
    )
    d = decide(hw(["n3"]), HW, history, BUDGETS, SHAPE, checkpoint_step=20)
    assert d.exclude == ["n2", "n3"] and d.newly_excluded == ["n3"]


def test_application_error_stops():
    attribution = Attribution(
        failure_class=FailureClass.APP_ERROR,
        cause_layer=CauseLayer.APPLICATION,
        recoverable_by_restart=False,
        pattern="python-exception",
    )
    d = decide(attribution, APP, JobHistory(), BUDGETS, SHAPE, checkpoint_step=10)
    assert d.action is Action.STOP and "not recoverable" in d.reason and d.exclude == []


def test_retry_budget_stops_after_the_third_restart():
    incidents = [
        PastIncident(attempt=i, failure_class=FailureClass.GPU_HARDWARE, checkpoint_step=10 * (i + 1)) for i in range(3)
    ]
    d = decide(hw(), HW, JobHistory(restarts=3, incidents=incidents), BUDGETS, SHAPE, checkpoint_step=40)
    assert d.action is Action.STOP and "retry budget" in d.reason
    d = decide(hw(), HW, JobHistory(restarts=2, incidents=incidents[:2]), BUDGETS, SHAPE, checkpoint_step=30)
    assert d.action is Action.RESTART_EXCLUDING


def test_runbook_budget_overrides_the_cluster_budget():
    strict = HW.model_copy(update={"max_restarts": 1})
    history = JobHistory(
        restarts=1, incidents=[PastIncident(attempt=0, failure_class=FailureClass.GPU_HARDWARE, checkpoint_step=10)]
    )
    assert decide(hw(), strict, history, BUDGETS, SHAPE, checkpoint_step=20).action is Action.STOP


def test_no_new_checkpoint_across_attempts_stops():
    incidents = [
        PastIncident(attempt=0, failure_class=FailureClass.GPU_HARDWARE, checkpoint_step=10),
        PastIncident(attempt=1, failure_class=FailureClass.GPU_HARDWARE, checkpoint_step=10),
    ]
    d = decide(hw(), HW, JobHistory(restarts=2, incidents=incidents), BUDGETS, SHAPE, checkpoint_step=10)
    assert d.action is Action.STOP and "no new checkpoint" in d.reason
    # one attempt without progress is not yet futile
    d = decide(hw(), HW, JobHistory(restarts=1, incidents=incidents[:1]), BUDGETS, SHAPE, checkpoint_step=10)
    assert d.action is Action.RESTART_EXCLUDING


def test_recurrence_rule_blames_a_node_only_the_second_time():
    fault = Attribution(
        failure_class=FailureClass.GPU_FAULT,
        cause_layer=CauseLayer.AMBIGUOUS,
        node_implicated=True,
        nodes=["n3"],
        recoverable_by_restart=True,
    )
    first = decide(fault, FAULT, JobHistory(), BUDGETS, SHAPE, checkpoint_step=10)
    assert first.action is Action.RESTART and first.exclude == []
    history = JobHistory(
        restarts=1,
        incidents=[PastIncident(attempt=0, failure_class=FailureClass.GPU_FAULT, nodes=["n3"], checkpoint_step=10)],
    )
    second = decide(fault, FAULT, history, BUDGETS, SHAPE, checkpoint_step=20)
    assert second.action is Action.RESTART_EXCLUDING and second.exclude == ["n3"]


def test_never_excludes_so_many_nodes_the_job_cannot_run():
    history = JobHistory(restarts=1, excluded_nodes=["n1", "n2"])
    d = decide(hw(["n3"]), HW, history, BUDGETS, SHAPE, checkpoint_step=10)
    assert d.action is Action.RESTART and d.exclude == ["n1", "n2"] and "would leave 1" in d.reason


def test_ladder_end_stops():
    short = HW.model_copy(update={"ladder": [Rung(action=Action.RESTART_EXCLUDING, times=1)]})
    history = JobHistory(
        restarts=1, incidents=[PastIncident(attempt=0, failure_class=FailureClass.GPU_HARDWARE, checkpoint_step=10)]
    )
    d = decide(hw(), short, history, BUDGETS, SHAPE, checkpoint_step=20)
    assert d.action is Action.STOP and "ladder ends" in d.reason


def test_a_job_cannot_blame_a_node_it_did_not_run_on():
    d = decide(hw(["n2", "n4"]), HW, JobHistory(), BUDGETS, SHAPE, checkpoint_step=10)
    assert d.exclude == ["n2"]
    d = decide(hw(["n4"]), HW, JobHistory(), BUDGETS, SHAPE, checkpoint_step=10)
    assert d.action is Action.RESTART and d.exclude == []


def test_systemic_failure_restarts_without_excluding():
    d = decide(hw(), HW, JobHistory(), BUDGETS, SHAPE, checkpoint_step=10, systemic=True)
    assert d.action is Action.RESTART and d.exclude == [] and "systemic" in d.reason


def decided_row(row_id: int, attempt: int, failure_class: str, acted: bool, step: int) -> AuditRow:
    return AuditRow(
        id=row_id,
        key=f"k{row_id}",
        event_type=EventType.DECIDED,
        cluster="c",
        job_id=1,
        attempt=attempt,
        failure_class=failure_class,
        nodes=["n2"],
        acted=acted,
        details={"checkpoint_step": step},
    )


def test_the_incident_that_ended_an_attempt_is_the_one_on_its_record():
    # Attempt 0: a slowdown recommendation, then the crash that ended it.
    rows = [
        decided_row(1, 0, "slowdown", False, 10),
        decided_row(2, 0, "gpu_hardware", True, 10),
        # Attempt 1: the crash first, a late recommendation after it.
        decided_row(3, 1, "gpu_hardware", True, 20),
        decided_row(4, 1, "slowdown", False, 20),
        decided_row(5, 2, "gpu_hardware", True, 30),
    ]  # the current attempt: not history yet
    incidents = past_incidents(rows, attempt=2)
    assert [(i.attempt, i.failure_class, i.checkpoint_step) for i in incidents] == [
        (0, FailureClass.GPU_HARDWARE, 10),
        (1, FailureClass.GPU_HARDWARE, 20),
    ]


def test_an_operator_restart_excludes_what_the_job_excluded_and_what_the_operator_names():
    restart = operator_decision(
        Override(action=OverrideAction.RESTART, reason="bad fan", who="ana", exclude=["n3"]), excluded=["n1"]
    )
    assert (restart.action, restart.exclude, restart.newly_excluded) == (Action.RESTART_EXCLUDING, ["n1", "n3"], ["n3"])
    assert restart.reason == "operator ana: bad fan"
    stop = operator_decision(Override(action=OverrideAction.STOP, reason="done", who="ana"), excluded=["n1"])
    assert (stop.action, stop.exclude) == (Action.STOP, ["n1"])
