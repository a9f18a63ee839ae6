from respawn.activities.assessment import past_incidents
from respawn.attribution.runbook import Action, Catalogue, NodeRule, Pattern, Runbook, Rung
from respawn.audit.trail import AuditRow, EventType
from respawn.config.cluster import Budgets
from respawn.decision.decide import JobHistory, JobShape, PastIncident, decide
from respawn.decision.operator import operator_decision
from respawn.wire.attribution import Attribution
from respawn.wire.incident import Override, OverrideAction
from respawn.wire.launcher import LauncherView, StepState
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


def test_never_excludes_so_many_nodes_that_too_few_it_may_run_on_are_left():
    """n1 and n4 are in another partition (or drained, or down): the cluster has room, the job has not."""
    shape = SHAPE.model_copy(update={"eligible_nodes": ["n2", "n3"]})
    d = decide(hw(["n3"]), HW, JobHistory(), BUDGETS, shape, checkpoint_step=10)
    assert d.action is Action.RESTART and d.exclude == []
    assert "would leave 1 nodes it may run on (its partitions', up, not drained) for a 2-node job" in d.reason
    roomy = SHAPE.model_copy(update={"eligible_nodes": ["n1", "n2", "n3", "n4"]})
    d = decide(hw(["n3"]), HW, JobHistory(), BUDGETS, roomy, checkpoint_step=10)
    assert d.action is Action.RESTART_EXCLUDING and d.exclude == ["n3"]


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


# --- the in-job rungs (issue 14): finest first, each falling back one layer ---

LADDERED = Runbook(
    failure_class=FailureClass.GPU_HARDWARE,
    cause_layer=CauseLayer.HARDWARE,
    recoverable_by_restart=True,
    node_rule=NodeRule.RANK,
    ladder=[Rung(action=Action.REPLACE_NODE), Rung(action=Action.RESTART_EXCLUDING, times=2)],
)
IN_PLACE = Runbook(
    failure_class=FailureClass.PROCESS_CRASH,
    cause_layer=CauseLayer.AMBIGUOUS,
    recoverable_by_restart=None,
    node_rule=NodeRule.RECURRENCE,
    ladder=[Rung(action=Action.RESTART_IN_PLACE), Rung(action=Action.STOP)],
)
# A 3-node allocation: the step on n2,n3, n4 held as a spare.
WIDE = JobShape(job_nodes=["n2", "n3", "n4"], cluster_nodes=["n1", "n2", "n3", "n4", "n5", "n6"])


def waiting(spares=("n4",), state=StepState.FAILED, **kw) -> LauncherView:
    return LauncherView(state=state, step_nodes=["n2", "n3"], spares=list(spares), **kw)


def crash() -> Attribution:
    return Attribution(
        failure_class=FailureClass.PROCESS_CRASH,
        cause_layer=CauseLayer.AMBIGUOUS,
        recoverable_by_restart=None,
        pattern="srun-task-exited",
    )


def test_a_crash_with_no_node_to_blame_is_relaunched_in_place_with_the_requeue_as_its_fallback():
    d = decide(crash(), IN_PLACE, JobHistory(), BUDGETS, WIDE, checkpoint_step=10, launcher=waiting())
    assert (d.action, d.fallback, d.newly_excluded) == (Action.RESTART_IN_PLACE, Action.RESTART, [])
    assert "relaunch in place, in the allocation" in d.reason


def test_without_a_launcher_the_ladder_starts_at_the_requeue():
    d = decide(crash(), IN_PLACE, JobHistory(), BUDGETS, WIDE, checkpoint_step=10)
    assert (d.action, d.fallback) == (Action.RESTART, None)
    assert "no launcher in the job: the ladder goes on at the requeue" in d.reason
    gone = decide(crash(), IN_PLACE, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting(state=StepState.SUCCEEDED))
    assert gone.action is Action.RESTART and "the job's launcher is succeeded" in gone.reason


def test_a_faulty_node_is_replaced_by_the_spare_in_the_allocation():
    d = decide(hw(), LADDERED, JobHistory(), BUDGETS, WIDE, checkpoint_step=10, launcher=waiting())
    assert (d.action, d.newly_excluded, d.fallback) == (Action.REPLACE_NODE, ["n2"], Action.RESTART_EXCLUDING)
    assert d.exclude == ["n2"]  # what the requeue excludes should the relaunch fail


def test_without_a_spare_the_faulty_node_is_left_out_by_a_requeue():
    d = decide(hw(), LADDERED, JobHistory(), BUDGETS, WIDE, checkpoint_step=10, launcher=waiting(spares=()))
    assert (d.action, d.exclude, d.fallback) == (Action.RESTART_EXCLUDING, ["n2"], None)
    assert "needs 1, the job holds 0 spares" in d.reason
    # The spare itself faulty: it cannot stand in for anyone.
    spare_bad = decide(hw(["n4"]), LADDERED, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting())
    assert spare_bad.action is Action.REPLACE_NODE and spare_bad.newly_excluded == ["n4"]
    two_bad = decide(hw(["n2", "n4"]), LADDERED, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting())
    assert two_bad.action is Action.RESTART_EXCLUDING


def test_a_job_that_can_shrink_is_relaunched_on_fewer_nodes_when_no_spare_is_left():
    shrinks = decide(hw(), LADDERED, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting(spares=(), min_nodes=1))
    assert (shrinks.action, shrinks.newly_excluded, shrinks.fallback) == (
        Action.REPLACE_NODE,
        ["n2"],
        Action.RESTART_EXCLUDING,
    )
    assert "relaunch without it on 1 node(s), in the allocation" in shrinks.reason
    # Not below the fewest it says it runs on: then the requeue, saying why.
    floor = decide(hw(["n2", "n3"]), LADDERED, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting((), min_nodes=1))
    assert floor.action is Action.RESTART_EXCLUDING and "holds 0 spares and runs on 1 at the fewest" in floor.reason
    # The status is the job owner's file: a floor above the step's width only makes it stricter.
    above = decide(hw(), LADDERED, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting((), min_nodes=99))
    assert above.action is Action.RESTART_EXCLUDING and "the job holds 0 spares)" in above.reason


def test_in_place_with_a_node_to_blame_replaces_it_and_replace_with_none_relaunches_in_place():
    blamed = decide(hw(), IN_PLACE.model_copy(update={"node_rule": NodeRule.RANK}), JobHistory(), BUDGETS, WIDE, 10,
                    launcher=waiting())  # fmt: skip
    assert blamed.action is Action.REPLACE_NODE and blamed.newly_excluded == ["n2"]
    nobody = decide(hw(()), LADDERED, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting())
    assert (nobody.action, nobody.fallback) == (Action.RESTART_IN_PLACE, Action.RESTART)


def test_systemic_failure_relaunches_in_place_without_new_exclusions():
    d = decide(hw(), LADDERED, JobHistory(), BUDGETS, WIDE, 10, systemic=True, launcher=waiting())
    assert (d.action, d.newly_excluded, d.exclude) == (Action.RESTART_IN_PLACE, [], [])
    assert "systemic" in d.reason


def test_a_hung_step_that_still_runs_can_be_relaunched():
    d = decide(crash(), IN_PLACE, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting(state=StepState.RUNNING))
    assert d.action is Action.RESTART_IN_PLACE


def test_the_do_not_requeue_exit_code_stops_whatever_the_ladder_says():
    d = decide(hw(), LADDERED, JobHistory(), BUDGETS, WIDE, 10, launcher=waiting(), no_requeue=True)
    assert d.action is Action.STOP and "exited 93" in d.reason


def test_in_job_relaunches_count_in_the_budget_and_the_ladder():
    """Two relaunches of this attempt already: the budget of 3 has one left, and the ladder moved on."""
    rows = [decided_row(1, 0, "gpu_hardware", True, 10), decided_row(2, 0, "gpu_hardware", True, 20)]
    rows = [r.model_copy(update={"incident_id": f"i{r.id}"}) for r in rows]
    incidents = past_incidents(rows, attempt=0, relaunched={"i1", "i2"})
    assert [(i.attempt, i.checkpoint_step) for i in incidents] == [(0, 10), (0, 20)]
    history = JobHistory(restarts=2, incidents=incidents)
    d = decide(hw(), LADDERED, history, BUDGETS, WIDE, checkpoint_step=30, launcher=waiting())
    assert d.action is Action.RESTART_EXCLUDING  # occurrence 3: past the replace_node rung
    spent = decide(hw(), LADDERED, history.model_copy(update={"restarts": 3}), BUDGETS, WIDE, 30, launcher=waiting())
    assert spent.action is Action.STOP and "retry budget spent" in spent.reason


def test_a_persisting_fault_climbs_the_built_in_ladder_from_the_allocation_to_the_requeue_to_a_stop():
    """gpu_fault's ladder with a launcher: in place, then (it recurred on n2) on the spare, then (no
    spare left) the requeue without n2, then the budget of 3 restarts is spent."""
    book = Catalogue.load().runbook(FailureClass.GPU_FAULT)
    fault = Attribution(
        failure_class=FailureClass.GPU_FAULT,
        cause_layer=CauseLayer.AMBIGUOUS,
        node_implicated=True,
        nodes=["n2"],
        recoverable_by_restart=None,
        pattern="cuda-launch-failure",
    )
    past: list[PastIncident] = []
    actions = []
    for restarts, launcher in enumerate([waiting(), waiting(), waiting(spares=()), waiting(spares=())]):
        history = JobHistory(restarts=restarts, incidents=past)
        d = decide(fault, book, history, BUDGETS, WIDE, checkpoint_step=10 * (restarts + 1), launcher=launcher)
        actions.append(d.action)
        past = [
            *past,
            PastIncident(
                attempt=0, failure_class=FailureClass.GPU_FAULT, nodes=["n2"], checkpoint_step=10 * (restarts + 1)
            ),
        ]
    assert actions == [Action.RESTART_IN_PLACE, Action.REPLACE_NODE, Action.RESTART_EXCLUDING, Action.STOP]


def test_without_a_launcher_every_built_in_ladder_decides_as_its_requeue_ladder_would():
    """A job without the launcher: behaviour unchanged. Every runbook, every occurrence, with and
    without a node to blame, systemic or not: the same action, exclusions and reason as the ladder
    with each in-job rung written as the requeue it stands for."""
    catalogue = Catalogue.load()
    for book in catalogue.runbooks.values():
        requeue = book.model_copy(
            update={"ladder": [r.model_copy(update={"action": r.action.fallback}) for r in book.ladder]}
        )
        for occurrence in range(1, 5):
            past = [
                PastIncident(attempt=i, failure_class=book.failure_class, nodes=["n2"]) for i in range(occurrence - 1)
            ]
            for nodes in ([], ["n2"]):
                attribution = Attribution(
                    failure_class=book.failure_class, cause_layer=book.cause_layer, node_implicated=bool(nodes),
                    nodes=nodes, recoverable_by_restart=True, pattern="p",
                )  # fmt: skip
                for systemic in (False, True):
                    history = JobHistory(restarts=0, incidents=past)
                    got = decide(attribution, book, history, BUDGETS, WIDE, 10 * occurrence, systemic=systemic)
                    want = decide(attribution, requeue, history, BUDGETS, WIDE, 10 * occurrence, systemic=systemic)
                    case = (book.failure_class, occurrence, nodes, systemic)
                    assert (got.action, got.exclude, got.fallback) == (want.action, want.exclude, None), case
                    assert got.reason.split(" (no launcher in the job")[0] == want.reason, case


def test_the_deciding_patterns_node_rule_outranks_its_runbooks():
    """A wedged Lustre client (`lustre-client-lbug`, named) in storage, whose runbook blames nobody."""
    storage = Runbook(
        failure_class=FailureClass.STORAGE,
        cause_layer=CauseLayer.STORAGE,
        recoverable_by_restart=True,
        patterns=[Pattern(id="lustre-client-lbug", regex="LBUG", node_rule=NodeRule.NAMED)],
        ladder=[Rung(action=Action.RESTART_EXCLUDING)],
    )
    lbug = hw(["n3"]).model_copy(update={"failure_class": FailureClass.STORAGE, "pattern": "lustre-client-lbug"})
    assert decide(lbug, storage, JobHistory(), BUDGETS, SHAPE, checkpoint_step=10).exclude == ["n3"]
    other = lbug.model_copy(update={"pattern": "io-error"})
    assert decide(other, storage, JobHistory(), BUDGETS, SHAPE, checkpoint_step=10).exclude == []
