"""In-job restarts count (issue 14): the real assessment activity over a real audit trail.
Respawn's own relaunches (RELAUNCHED) and the job's own launcher's restarts (torchrun,
ft_launcher: on the NOT_INTERRUPTED row of the incident that left the job to it) are
restarts of the job's budget, and relaunched incidents move the ladder on."""

from datetime import UTC, datetime

from respawn.activities.assessment import AssessmentActivities
from respawn.audit.details import DecidedDetails, NotInterruptedDetails, RelaunchedDetails
from respawn.audit.trail import EventType, incident_event
from respawn.detection.interruption import Verdict, judge, own_launcher_word
from respawn.wire.incident import Detection, DetectionKind
from respawn.wire.launcher import LauncherView, StepState
from tests.unit.test_job_identity import _request, _services

XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
TORCHRUN = (
    "[2026-12-01 10:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group FAILED. "
    "2/3 attempts left; will restart worker group"
)


def _row(services, event: EventType, iid: str, details, **kw) -> None:
    services.audit.record(
        incident_event(event, incident_id=iid, cluster="ids", job_id=5, attempt=0, details=details, **kw)
    )


async def test_relaunches_and_the_jobs_own_restarts_spend_the_budget(tmp_path):
    services = _services(tmp_path)  # budgets.max_restarts: 3
    for i in (1, 2):  # two Xids on node1 relaunched in the job
        iid = f"incident-ids-5-0.{i}"
        _row(services, EventType.DECIDED, iid, DecidedDetails(checkpoint_step=10 * i), acted=True,
             failure_class="gpu_hardware", nodes=["node1"], action="replace_node")  # fmt: skip
        _row(services, EventType.RELAUNCHED, iid, RelaunchedDetails(rung="replace_node"), acted=True)
    request = _request(5, [XID], ["node1", "node2"])
    request.gathered.evidence.job_state = "RUNNING"
    request.gathered.launcher = LauncherView(state=StepState.FAILED, step_nodes=["node1"], spares=["node2"])
    assessment = await AssessmentActivities(services).assess(request)
    # Occurrence 3 of gpu_hardware (past its replace_node rung: a requeue), 2 of 3 restarts spent.
    assert assessment.decision.action.value == "restart" and "occurrence 3" in assessment.decision.reason

    # The job's own launcher restarted its workers once, on record: the budget is spent.
    _row(services, EventType.NOT_INTERRUPTED, "incident-ids-5-0.3", NotInterruptedDetails(job_restarts=1))
    assessment = await AssessmentActivities(services).assess(request)
    assert assessment.decision.action.value == "stop" and "retry budget spent: 3 of 3" in assessment.decision.reason


async def test_a_job_that_exits_93_is_not_restarted(tmp_path):
    request = _request(5, [XID], ["node1", "node2"])
    request.gathered.evidence.exit_code = 93
    assessment = await AssessmentActivities(_services(tmp_path)).assess(request)
    assert assessment.decision.action.value == "stop" and "exited 93" in assessment.decision.reason


def test_the_jobs_own_launcher_restarting_its_workers_is_not_respawns_interruption(catalogue):
    crash = Detection(
        kind=DetectionKind.LOG_LINE, at=datetime(2026, 12, 1, tzinfo=UTC), job_id=5, attempt=0, pattern="xid-fatal"
    )
    verdict = judge("RUNNING", 0, 0, [crash], catalogue.onset, job_restarts=[TORCHRUN])
    assert verdict.verdict is Verdict.NOT_INTERRUPTED and verdict.job_restarts == 1
    assert "the job's own launcher restarted its workers" in verdict.why
    # When it gives up the job ends: that is Respawn's to recover.
    assert judge("FAILED", 0, 0, [crash], catalogue.onset, job_restarts=[TORCHRUN]).verdict is Verdict.CONFIRMED


def test_the_elastic_agents_restart_lines_are_read_as_such(tmp_path):
    progress = _services(tmp_path).progress
    assert progress.restarting(TORCHRUN)
    # DLRover's form of the same line, and NVRx ft_launcher's (its agent is torchrun's).
    assert progress.restarting(
        "[default] Worker group FAILED, is failure node: False,2/3 attempts left; will restart worker group."
    )
    assert progress.restarting(
        "[INFO] [ft_launcher@n1] [default] Worker group FAILED. 3/5 attempts left; will restart worker group"
    )
    assert not progress.restarting("[default] Worker group SUCCEEDED. Waiting 300 seconds for other agents to finish")
    assert not progress.restarting("Worker group FAILED. 0/3 attempts left")  # it gives up: the job ends


# What torchrun prints by default (torch's elastic logger at WARNING): the worker's traceback, the
# agent's ERROR line, and then either training again (a restart) or ChildFailedError (it gave up).
TRACEBACK = "RuntimeError: CUDA error: an illegal memory access was encountered"
AGENT_FAILED = (
    "E1203 09:40:02.281000 4272 torch/distributed/elastic/multiprocessing/api.py:1002] "
    "failed (exitcode: 1) local_rank: 1 (pid: 4278) of binary: /usr/bin/python3"
)
GAVE_UP = "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: "
STEP = "[rank0] step 12 loss 0.41"


def test_the_elastic_agents_word_is_read_in_order(tmp_path):
    progress = _services(tmp_path).progress
    word = own_launcher_word([STEP, TRACEBACK, AGENT_FAILED], progress)
    assert word.deciding and not word.restarts  # the agent has not said yet
    # Training again after the agent's failure line: it restarted its workers (one restart).
    word = own_launcher_word([STEP, TRACEBACK, AGENT_FAILED, "[rank0] resumed from checkpoint step 10", STEP], progress)
    assert word.restarts == [AGENT_FAILED] and not word.deciding
    # Its INFO restart line (LOGLEVEL=INFO) is the same restart, counted once.
    word = own_launcher_word([TRACEBACK, AGENT_FAILED, TORCHRUN, STEP], progress)
    assert word.restarts == [TORCHRUN] and not word.deciding
    # It gave up: nothing to wait for and no restart.
    word = own_launcher_word([TRACEBACK, AGENT_FAILED, GAVE_UP, STEP], progress)
    assert word.restarts == [] and not word.deciding
    # A step before the agent's line is no restart (peers still training when a rank died).
    assert own_launcher_word([AGENT_FAILED, TRACEBACK], progress).deciding


def test_a_certain_line_waits_while_the_jobs_own_launcher_decides(catalogue):
    crash = Detection(
        kind=DetectionKind.LOG_LINE, at=datetime(2026, 12, 1, tzinfo=UTC), job_id=5, attempt=0, pattern="xid-fatal"
    )
    assert judge("RUNNING", 0, 0, [crash], catalogue.onset).verdict is Verdict.CONFIRMED
    deciding = judge("RUNNING", 0, 0, [crash], catalogue.onset, own_launcher_deciding=True)
    assert deciding.verdict is Verdict.SUSPECTED and "has not said whether it restarts" in deciding.why
    # What the agent cannot undo still confirms: the job ended, a node down, a hang.
    assert judge("FAILED", 0, 0, [crash], catalogue.onset, own_launcher_deciding=True).verdict is Verdict.CONFIRMED
    down = crash.model_copy(update={"kind": DetectionKind.NODE_DOWN, "node": "node2", "pattern": None})
    assert judge("RUNNING", 0, 0, [down], catalogue.onset, own_launcher_deciding=True).verdict is Verdict.CONFIRMED


def test_the_agents_word_is_read_from_the_jobs_output_bounded(tmp_path):
    """The output is the job owner's: a line is read to its first 4096 characters only, so a
    megabyte of padding hides a forged agent line rather than costing a megabyte of matching;
    what the owner forges there speaks for its own job alone (an incident reads one job's output)."""
    progress = _services(tmp_path).progress
    padded = "x" * 1_000_000 + AGENT_FAILED
    assert not own_launcher_word([STEP, padded], progress).deciding
    assert own_launcher_word([STEP, AGENT_FAILED + "x" * 1_000_000], progress).deciding  # its head is read
