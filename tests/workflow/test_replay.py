"""Upgrade safety: the recorded histories of incidents (tests/data/histories/, one per
path through the workflow) replay against the workflow code in this tree.

A failure here means a worker with this code would break an incident that is open
while it is deployed: the change needs `workflow.patched` (or a new workflow type),
not a re-recording. See tests/data/histories/README.md.
"""

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from respawn.config.cluster import TemporalSettings
from respawn.workers.worker import workflow_runner
from respawn.workflows.incident import IncidentWorkflow
from tests.workflow.workflow_histories import CATALOGUE, workflow_id

HISTORIES = Path(__file__).parents[1] / "data" / "histories"
RECORDED = sorted(HISTORIES.glob("*.json"))


def test_every_catalogued_path_has_a_recorded_history():
    catalogued = {path for paths in CATALOGUE.values() for path in paths}
    assert catalogued <= {p.stem for p in RECORDED}, "re-record: tests/data/histories/README.md"


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "worker-default"])
@pytest.mark.parametrize("recorded", RECORDED, ids=[p.stem for p in RECORDED])
async def test_recorded_incident_replays_on_this_code(recorded: Path, sandboxed: bool):
    """In the SDK's sandbox, which refuses a call that would break replay on every path
    recorded, and as a worker runs it by default (temporal.workflow_sandbox: false)."""
    history = WorkflowHistory.from_json(workflow_id(recorded.stem), recorded.read_text())
    runner = workflow_runner(TemporalSettings(workflow_sandbox=sandboxed))
    assert isinstance(runner, SandboxedWorkflowRunner) is sandboxed
    replayer = Replayer(workflows=[IncidentWorkflow], data_converter=pydantic_data_converter, workflow_runner=runner)
    await replayer.replay_workflow(history)


def test_a_worker_runs_without_the_sandbox_unless_its_configuration_asks() -> None:
    assert not TemporalSettings().workflow_sandbox
    assert TemporalSettings.model_validate({"workflow_sandbox": True}).workflow_sandbox
