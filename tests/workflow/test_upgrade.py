"""A new worker version deployed while incidents are open (issue 13): an incident
started by the workflow as it was before the `confirm-interruption` patch, and left
waiting for an operator, is finished by a worker running the workflow in this tree.

The old workflow is the file as committed before the patch (read from git), loaded
as a module of its own; both register under the workflow type `Incident`, on one
task queue, one worker after the other, as a rolling deployment would.
"""

import importlib
import re
import shutil
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from temporalio.worker import Worker

from respawn.config.cluster import Approval, Mode
from respawn.wire.incident import (
    Detection,
    DetectionKind,
    IncidentInput,
    IncidentResult,
    Override,
    OverrideAction,
    Phase,
)
from respawn.workflows.incident import IncidentWorkflow
from tests.workflow.test_incident_workflow import RESTART, XID, Fakes, wait_phase

ROOT = Path(__file__).resolve().parents[2]
# The last commit of workflows/incident.py before the patch "confirm-interruption".
BEFORE_PATCH = "243a1774e815"
# Where the modules that file imports live now (issue 13 moved modules into a package per
# stage, keeping every type and name): the old steps, run against today's types.
MOVED = {
    "respawn.advice": "respawn.advisor.advice",
    "respawn.audit": "respawn.audit.trail",
    "respawn.config": "respawn.config.cluster",
    "respawn.incident": "respawn.wire.incident",
    "respawn.decision": "respawn.decision.decide",
    "respawn.runbook": "respawn.attribution.runbook",
    "respawn.taxonomy": "respawn.wire.taxonomy",
    "workflows.search": "respawn.workflows.search",
}


def _with_moved_imports(source: str) -> str:
    return re.sub(r"^(\s*from )([\w.]+)( import)", lambda m: m[1] + MOVED.get(m[2], m[2]) + m[3], source, flags=re.M)


@pytest.fixture(scope="module")
def old_workflow(tmp_path_factory):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("needs the git history of this checkout (a fresh clone has it)")
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{BEFORE_PATCH}:workflows/incident.py"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    folder = tmp_path_factory.mktemp("old_worker")
    (folder / "incident_before_patch.py").write_text(_with_moved_imports(source))
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("incident_before_patch").IncidentWorkflow
    finally:
        sys.path.remove(str(folder))


async def test_an_incident_open_on_the_old_worker_completes_on_the_new_one(env, old_workflow):
    assert old_workflow is not IncidentWorkflow
    queue = f"upgrade-{uuid.uuid4()}"
    fakes = Fakes([XID], RESTART)
    detection = Detection(kind=DetectionKind.LOG_LINE, at=datetime.now(UTC), job_id=5, attempt=0, line="Xid 79")
    start = IncidentInput(
        cluster="c",
        job_id=5,
        attempt=0,
        environment="demo",
        mode=Mode.ACTION,
        settle_s=1,
        cascade_wait_s=0,
        follow_timeout_s=60,
        approval=Approval(timeout_s=3600),
    )
    # No sticky cache on the old worker: its incidents' next tasks go to the task queue, where the
    # new worker takes them (a real deployment hands over the same way once the old one is gone).
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[old_workflow],
        activities=fakes.activities(),
        workflow_failure_exception_types=[Exception],
        max_cached_workflows=0,
    ):
        handle = await env.client.start_workflow(
            "Incident",
            start,
            id=f"incident-c-5-0-upgrade-{uuid.uuid4()}",
            task_queue=queue,
            start_signal="detect",
            start_signal_args=[detection],
            execution_timeout=timedelta(hours=2),
            result_type=IncidentResult,
        )
        await wait_phase(handle, Phase.AWAITING_APPROVAL)
    calls_on_old = list(fakes.calls)
    assert "hold_job" not in calls_on_old

    # The old worker is gone; the new one replays the history the old one wrote, then goes on.
    async with Worker(
        env.client,
        task_queue=queue,
        workflows=[IncidentWorkflow],
        activities=fakes.activities(),
        workflow_failure_exception_types=[Exception],
    ):
        await handle.execute_update("apply_override", Override(action=OverrideAction.APPROVE, reason="go", who="carol"))
        result = await handle.result()
    assert result.phase is Phase.RESUMED
    assert fakes.calls[len(calls_on_old) :] == [
        "record:override",
        "hold_job",
        "exclude_nodes",
        "release_job",
        "await_next_attempt",
        "await_progress",
        "record:incident_closed",
    ]
    # Nothing the old worker did was done again.
    assert fakes.calls.count("assess") == 1 and fakes.calls.count("record:decided") == 1
