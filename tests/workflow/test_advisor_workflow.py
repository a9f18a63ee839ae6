"""The incident workflow with the advisor transport, on Temporal's time-skipping test
server with fake activities: it publishes advice and waits for its reconciliation
instead of holding, excluding and releasing the job itself."""

from datetime import UTC, datetime

from temporalio import activity

from respawn.advisor.advice import Advice, AdviceRef, AdviceRequest, Desired, Outcome
from respawn.attribution.runbook import Action
from respawn.config.cluster import Mode
from respawn.decision.decide import Decision
from respawn.wire.incident import Acting, IncidentResult, Phase
from tests.workflow.test_incident_workflow import RESTART, XID, Fakes, run_incident


class AdvisorFakes(Fakes):
    """The scripted activities, plus advice that a controller converges (or abandons)."""

    def __init__(self, decision: Decision, converged: bool = True) -> None:
        super().__init__([XID], decision)
        self.published: list[AdviceRequest] = []
        self.converged = converged

    def activities(self):
        @activity.defn(name="publish_advice")
        async def publish(req: AdviceRequest) -> Advice:
            self.calls.append("publish_advice")
            self.published.append(req)
            return Advice(**req.model_dump(), generation=len(self.published), published_at=datetime.now(UTC))

        @activity.defn(name="await_reconciliation")
        async def reconcile(ref: AdviceRef) -> Outcome:
            self.calls.append("await_reconciliation")
            return Outcome(
                generation=ref.generation,
                converged=self.converged,
                detail="ctl: converged" if self.converged else "ctl: abandoned: job is CANCELLED",
            )

        return [*super().activities(), publish, reconcile]


async def run_advised(env, fakes: AdvisorFakes, mode: Mode = Mode.ACTION) -> IncidentResult:
    return await run_incident(env, fakes, mode, acting=Acting.CONTROLLER)


def scheduler_calls(fakes: Fakes) -> list[str]:
    return [c for c in fakes.calls if c in ("hold_job", "exclude_nodes", "release_job", "drain_nodes")]


async def test_restart_is_published_as_advice_reconciled_then_followed(env):
    fakes = AdvisorFakes(RESTART)
    result = await run_advised(env, fakes)
    assert result.phase is Phase.RESUMED and result.excluded_nodes == ["n2"]
    assert scheduler_calls(fakes) == []
    assert [(a.desired, a.exclude, a.attempt) for a in fakes.published] == [(Desired.RESTART, ["n2"], 0)]
    steps = [c for c in fakes.calls if not c.startswith("record:") or c == "record:decided"]
    assert steps[steps.index("record:decided") :] == [
        "record:decided",
        "publish_advice",
        "await_reconciliation",
        "await_next_attempt",
        "await_progress",
    ]


async def test_abandoned_advice_closes_the_incident_without_following(env):
    fakes = AdvisorFakes(RESTART, converged=False)
    result = await run_advised(env, fakes)
    assert result.phase is Phase.CLOSED and "abandoned: job is CANCELLED" in result.reason and not result.acted
    assert "await_next_attempt" not in fakes.calls and scheduler_calls(fakes) == []


async def test_stop_is_advised_too_and_recorded_once_carried_out(env):
    fakes = AdvisorFakes(Decision(action=Action.STOP, reason="app bug"))
    result = await run_advised(env, fakes)
    assert result.phase is Phase.STOPPED
    assert [a.desired for a in fakes.published] == [Desired.STOP]
    assert fakes.calls.index("await_reconciliation") < fakes.calls.index("record:stopped")


async def test_observe_mode_publishes_no_advice(env):
    fakes = AdvisorFakes(RESTART)
    result = await run_advised(env, fakes, Mode.OBSERVE)
    assert result.phase is Phase.RECOMMENDED and fakes.published == [] and scheduler_calls(fakes) == []
