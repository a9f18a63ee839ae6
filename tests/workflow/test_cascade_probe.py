"""A cascade probes the nodes before it waits for Slurm (issue 17, patch "probe-cascade"): a
communication error naming no culprit is decided at once when every node answers, blames the
node whose slurmd is silent, and waits for Slurm's verdict only when the probe cannot tell."""

from datetime import UTC, datetime

from temporalio.api.enums.v1 import EventType as HistoryEvent

from respawn.attribution.runbook import Action
from respawn.config.cluster import Mode
from respawn.decision.decide import Decision
from respawn.decision.ledger import NodeVerdict
from respawn.wire.incident import Detection, DetectionKind, Probed, ProbeVerdict
from tests.workflow.test_incident_workflow import COMM, NODE, RESTART, Fakes, run_incident
from tests.workflow.test_interruption import ENDED, RUNNING_CONFIRMED, SUSPECTED

JOB_ENDED = Detection(kind=DetectionKind.JOB_ENDED, at=datetime.now(UTC), job_id=5, attempt=0, job_state="FAILED")


class Recorded:
    """Keeps the incident's handle (run_incident hands it to an operator), to read its history."""

    handle = None

    async def __call__(self, handle) -> None:
        self.handle = handle

    async def timers(self) -> int:
        history = await self.handle.fetch_history()
        return sum(e.event_type == HistoryEvent.EVENT_TYPE_TIMER_STARTED for e in history.events)


async def test_every_node_answering_decides_at_once_without_waiting_for_slurm(env):
    fakes = Fakes([COMM], RESTART, probed=Probed(verdict=ProbeVerdict.ALL_ANSWERED, answered=["n1", "n2", "n3"]))
    recorded = Recorded()
    result = await run_incident(env, fakes, cascade_wait_s=300, operator=recorded)
    assert result.failure_class == "comm_error" and fakes.calls.count("gather_evidence") == 1
    assert fakes.calls.index("probe_nodes") < fakes.calls.index("record:decided")
    assert await recorded.timers() == 1  # the settle timer only: no cascade wait


async def test_a_silent_node_is_blamed_as_if_slurm_had_called_it_down(env):
    fakes = Fakes(
        [COMM, NODE], RESTART, probed=Probed(verdict=ProbeVerdict.SILENT, silent=["n3"], answered=["n1", "n2"])
    )
    recorded = Recorded()
    result = await run_incident(env, fakes, cascade_wait_s=300, operator=recorded)
    assert result.failure_class == "node_failure" and fakes.calls.count("gather_evidence") == 2
    [down] = [d for d in fakes.gathers[1].detections if d.kind is DetectionKind.NODE_DOWN]
    assert down.node == "n3" and "slurmd on n3 did not answer" in (down.line or "")
    assert await recorded.timers() == 1


async def test_a_probe_that_cannot_tell_waits_for_slurm_as_before(env):
    fakes = Fakes([COMM], RESTART)  # the default: nobody answered
    recorded = Recorded()
    result = await run_incident(env, fakes, cascade_wait_s=300, operator=recorded)
    assert result.failure_class == "comm_error" and fakes.calls.count("probe_nodes") == 1
    assert await recorded.timers() == 2  # the settle timer and the cascade wait


async def test_a_suspected_cascade_probes_at_once_and_a_silent_node_confirms_it(env):
    """Patch "probe-suspected-cascade": the running attempt's error naming no culprit is not left
    to wait out the confirmation window while Slurm has yet to notice the dead node."""
    fakes = Fakes(
        [COMM, NODE],
        RESTART,
        interruptions=[SUSPECTED, RUNNING_CONFIRMED],
        probed=Probed(verdict=ProbeVerdict.SILENT, silent=["n3"], answered=["n1", "n2"]),
    )
    recorded = Recorded()
    result = await run_incident(env, fakes, cascade_wait_s=300, operator=recorded)
    assert result.failure_class == "node_failure"
    # Probed once, before any wait: judged again at once with the silent node as a node down.
    assert fakes.calls.count("probe_nodes") == 1 and fakes.calls.count("assess") == 2
    assert fakes.calls.index("probe_nodes") < fakes.calls.index("record:attributed")
    assert await recorded.timers() == 1  # the settle timer only: no confirmation window, no cascade wait


async def test_a_suspected_cascade_whose_nodes_all_answer_waits_for_its_confirmation_and_probes_again(env):
    fakes = Fakes(
        [COMM],
        RESTART,
        interruptions=[SUSPECTED, ENDED],
        probed=Probed(verdict=ProbeVerdict.ALL_ANSWERED, answered=["n1", "n2", "n3"]),
    )
    result = await run_incident(env, fakes, cascade_wait_s=300, signals=[JOB_ENDED])
    assert result.failure_class == "comm_error"
    # Once while suspected, once confirmed: a node that died in between is still found.
    assert fakes.calls.count("probe_nodes") == 2


# Patch "mark-silent-down": the decision excludes the node whose slurmd was silent to the probe.
WITHOUT_N3 = Decision(action=Action.RESTART_EXCLUDING, exclude=["n3"], newly_excluded=["n3"], reason="n3 lost")
SILENT_N3 = Probed(verdict=ProbeVerdict.SILENT, silent=["n3"], answered=["n1", "n2"])


def _decided(fakes: Fakes):
    return next(e for e in fakes.events if e.event_type.value == "decided")


async def test_a_silent_node_the_decision_excludes_is_marked_down_before_the_hold(env):
    """Slurm requeues a job off a DOWN node at once; a job held first on a dead node stays
    completing while Slurm waits for the node (MessageTimeout, then SlurmdTimeout)."""
    fakes = Fakes([COMM, NODE], WITHOUT_N3, probed=SILENT_N3)
    result = await run_incident(env, fakes, cascade_wait_s=300, mark_silent_down=True)
    assert result.excluded_nodes == ["n3"]
    calls = fakes.calls
    assert calls.index("record:decided") < calls.index("mark_nodes_down") < calls.index("hold_job")
    assert calls.index("hold_job") < calls.index("exclude_nodes")
    assert fakes.requests["mark_nodes_down"].down == ["n3"] and _decided(fakes).details["down"] == ["n3"]


async def test_observe_mode_records_the_down_as_a_recommendation_and_does_nothing(env):
    fakes = Fakes([COMM, NODE], WITHOUT_N3, probed=SILENT_N3)
    await run_incident(env, fakes, mode=Mode.OBSERVE, cascade_wait_s=300, mark_silent_down=True)
    assert "mark_nodes_down" not in fakes.calls and _decided(fakes).details["down"] == ["n3"]


async def test_no_down_when_turned_off_when_the_node_is_kept_or_when_the_breaker_is_open(env):
    for fakes, setting in (
        (Fakes([COMM, NODE], WITHOUT_N3, probed=SILENT_N3), False),
        (Fakes([COMM, NODE], RESTART, probed=SILENT_N3), True),  # the decision excludes n2, not n3
        (Fakes([COMM, NODE], WITHOUT_N3, probed=SILENT_N3, nodes=NodeVerdict(systemic=True)), True),
    ):
        await run_incident(env, fakes, cascade_wait_s=300, mark_silent_down=setting)
        assert "mark_nodes_down" not in fakes.calls and _decided(fakes).details["down"] == []
