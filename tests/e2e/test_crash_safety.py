"""Crash safety end to end: real Slurm, real Temporal, a real DDP job, and
Respawn's worker and detector as real processes that these tests kill -9.

Each test runs its own detector and worker for a cluster named "crash" (its own
task queue and audit trail) and enrols its jobs in the "crash" environment,
which the other end-to-end tests' Respawn does not know: neither acts on the
other's jobs. The fault is an InfiniBand error on node2 (blamed from the job's
own output, so no kernel log that other tests read is touched): recovery
requeues the job held, excludes node2 and releases it.

Slurm commands go through shims (`scheduler.slurm_bin_dir`): the real
commands, except that an armed `scontrol requeuehold` blocks after Slurm has
acted, until the test opens the gate, so the worker dies inside the requeue;
and an armed read of a job's excluded nodes by the worker (squeue's `%A|%x`,
which the evidence reads) blocks alike, so the worker dies inside the assessment.
"""

import asyncio
import os
import shlex
import shutil
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle

from respawn.audit.trail import AuditRow, EventType
from respawn.config.cluster import ClusterConfig
from respawn.launcher import channel
from respawn.launcher.channel import StepState
from respawn.sandbox import start_slurmctld, start_temporal, stop_slurmctld, stop_temporal
from respawn.sandbox.lab import Lab
from respawn.sandbox.labconfig import lab_config
from respawn.sandbox.workload import submit as submit_module
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import output_path, submit
from respawn.scheduler import squeue_text
from respawn.services import connect_temporal
from tests.recovery_stack import Cluster, RespawnProcess, until, write_config

CLUSTER = "crash"
COMMENT = '{"respawn":{"environment":"crash","mode":"action"}}'
OUTAGE_S = 30.0
RETRYABLE = {"SchedulerUnavailable", "TransportError", "CommandTimeout"}  # as_activity_error's types

# A gated shim: the real command, then, when the call matches an armed gate, a wait until the
# test opens it. Only one call blocks per arming: `mv` claims the gate atomically.
_GATED = """#!/bin/sh
# Test shim (tests/e2e/test_crash_safety.py): the real {name}; an armed call matching
# {what} then waits, after it ran, until the test opens the gate (at most 60 s).
{real} "$@"
rc=$?
if {matches} && mv {gate}/armed {gate}/claimed 2>/dev/null; then
  touch {gate}/inside
  i=0
  while [ ! -e {gate}/open ] && [ "$i" -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
fi
exit $rc
"""
# scontrol requeuehold; the worker's (its parent's command line names the role) read of
# excluded nodes, which the evidence makes first (respawn/scheduler/slurm.py, `job`), known by
# the format the adapter asks squeue for.
_REQUEUEHOLD = '[ "$1" = requeuehold ]'
_EXCLUSIONS_FORMAT = squeue_text.excluded_command([1])[-1]
_WORKERS_EXCLUSIONS = (
    """tr '\\0' ' ' < /proc/$PPID/cmdline | grep -q ' worker ' && """
    f"""case "$*" in *{shlex.quote(_EXCLUSIONS_FORMAT)}*) true ;; *) false ;; esac"""
)


class Gate:
    """Where a shim stops inside its command (a requeuehold, an evidence read), and the test lets it go."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def arm(self) -> None:
        (self.folder / "armed").touch()

    def inside(self) -> bool:
        return (self.folder / "inside").exists()

    def open(self) -> None:
        (self.folder / "open").touch()


def _write_shims(folder: Path, requeue: Gate, evidence: Gate) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("sinfo", "scancel"):
        (folder / name).symlink_to(_which(name))
    for name, gate, matches, what in (
        ("scontrol", requeue, _REQUEUEHOLD, "requeuehold"),
        ("squeue", evidence, _WORKERS_EXCLUSIONS, "the worker's read of excluded nodes"),
    ):
        shim = folder / name
        shim.write_text(
            _GATED.format(
                name=name,
                what=what,
                real=shlex.quote(_which(name)),
                matches=matches,
                gate=shlex.quote(str(gate.folder)),
            )
        )
        shim.chmod(0o755)
    return folder


def _which(name: str) -> str:
    path = shutil.which(name)
    assert path is not None, f"{name} is not on PATH"
    return path


class CrashStack:
    """A detector and a worker for the "crash" cluster, the gates of their Slurm commands, and the test's jobs."""

    def __init__(
        self,
        lab: Lab,
        folder: Path,
        settle_s: float = 1.0,
        hold_timeout_s: float = 120.0,
        approval_timeout_s: float | None = None,
    ) -> None:
        self.lab = lab
        self.gate = Gate(folder / "gate")  # inside the requeue
        self.evidence_gate = Gate(folder / "evidence-gate")  # inside the assessment
        base = lab_config(lab).model_dump(mode="json")
        environment: dict = {"max_mode": "action"}
        if approval_timeout_s is not None:  # its actions wait for an operator; nobody answers, so approved
            environment["approval"] = {"timeout_s": approval_timeout_s, "default": "approve"}
        self.config = ClusterConfig.model_validate(
            {
                **base,
                "cluster": CLUSTER,
                "environments": {"crash": environment},
                "audit_db": str(folder / "audit.db"),
                "scheduler": {
                    **base["scheduler"],
                    "slurm_bin_dir": str(_write_shims(folder / "bin", self.gate, self.evidence_gate)),
                },
                "detector": {**base["detector"], "settle_s": settle_s, "follow_timeout_s": 120.0},
                "watchdog": {"hold_timeout_s": hold_timeout_s},
            }
        )
        path = write_config(self.config, folder / f"{CLUSTER}.yaml")
        self.cluster = Cluster(lab, self.config)
        self.worker = RespawnProcess(lab, path, "worker")
        self.detector = RespawnProcess(lab, path, "detector")
        self.jobs: list[int] = []

    def start(self) -> None:
        self.worker.start()
        self.detector.start()

    def submit(self) -> int:
        job_id = submit(
            self.lab, nodes=3, steps=200, checkpoint_every=10, step_seconds=0.3, comment=COMMENT, name="crash"
        )
        self.jobs.append(job_id)
        return job_id

    def submit_launched(self, monkeypatch: pytest.MonkeyPatch) -> tuple[int, Path]:
        """The job under the in-job launcher (node3 its spare): its id and channel directory."""
        monkeypatch.setattr(
            submit_module, "BATCH_SCRIPT", submit_module.BATCH_SCRIPT.with_name("train_launched.sbatch")
        )
        job_id = submit(
            self.lab,
            nodes=3,
            steps=200,
            checkpoint_every=10,
            step_seconds=0.3,
            comment=COMMENT,
            name="crash-launched",
            extra_sbatch_args=["--nodelist=node[1-3]", "--export=ALL,RESPAWN_SPARES=1,RESPAWN_WAIT_S=120"],
        )
        self.jobs.append(job_id)
        return job_id, channel.channel_dir(output_path(self.lab, job_id), job_id)

    async def fail(self, job_id: int) -> str:
        """Wait for a checkpoint, inject the fault; returns the incident's id."""
        # Generous: other tests share the four nodes, and the job may queue behind theirs.
        await self.cluster.wait_checkpoint(job_id, timeout=300)
        iid = await self.cluster.incident_of(job_id)  # before the fault: a requeue moves the submit time
        inject(self.lab, job_id, "node2", FaultKind.IB)
        return iid

    def rows(self, iid: str) -> list[AuditRow]:
        return self.cluster.audit.query(incident_id=iid)

    def row(self, iid: str, event: EventType) -> AuditRow | None:
        return next((r for r in self.rows(iid) if r.event_type is event), None)

    async def wait_row(self, iid: str, event: EventType, timeout: float) -> AuditRow:
        return await until(lambda: self.row(iid, event), timeout, f"{event.value} of {iid}")

    async def close(self) -> None:
        self.gate.open()  # a shim left waiting would linger
        self.evidence_gate.open()
        self.worker.stop()
        self.detector.stop()
        for job_id in self.jobs:
            await self.cluster.slurm.cancel(job_id)
        self.cluster.audit.close()


@pytest.fixture
async def make_stack(sandbox: Lab, tmp_path: Path) -> AsyncIterator[Callable[..., CrashStack]]:
    stacks: list[CrashStack] = []

    def make(**settings: float) -> CrashStack:
        stacks.append(CrashStack(sandbox, tmp_path / str(len(stacks)), **settings))
        return stacks[-1]

    yield make
    for stack in stacks:
        await stack.close()


@pytest.fixture
async def temporal(sandbox: Lab) -> Client:
    return await connect_temporal(lab_config(sandbox))


async def timer_pending(handle: WorkflowHandle) -> bool:
    """Whether the incident waits on a durable timer now: one started, neither fired nor cancelled."""
    events = (await handle.fetch_history()).events
    started = {
        e.timer_started_event_attributes.timer_id for e in events if e.HasField("timer_started_event_attributes")
    }
    fired = {e.timer_fired_event_attributes.timer_id for e in events if e.HasField("timer_fired_event_attributes")}
    cancelled = {
        e.timer_canceled_event_attributes.timer_id for e in events if e.HasField("timer_canceled_event_attributes")
    }
    return bool(started - fired - cancelled)


def assert_no_duplicates(rows: list[AuditRow]) -> None:
    counts = Counter(r.event_type for r in rows)
    assert all(n == 1 for n in counts.values()), counts


async def assert_recovered_once(stack: CrashStack, iid: str, job_id: int) -> None:
    """The incident closed after the new attempt trained, one requeue, node2 excluded, no row twice."""
    closed = await stack.wait_row(iid, EventType.INCIDENT_CLOSED, 120)
    assert closed.details["phase"] == "resumed", closed.details
    job = await stack.cluster.job(job_id)
    assert job.restart_count == 1, "requeued more than once"
    assert "node2" in job.excluded_nodes and "node2" not in job.nodes
    assert_no_duplicates(stack.rows(iid))


@pytest.mark.slow
async def test_worker_killed_inside_the_requeue_requeues_exactly_once(make_stack):
    stack = make_stack()
    stack.gate.arm()
    stack.start()
    job_id = stack.submit()
    iid = await stack.fail(job_id)

    await until(stack.gate.inside, 90, "the worker to be inside scontrol requeuehold")
    assert (await stack.cluster.job(job_id)).restart_count == 1  # Slurm acted...
    assert stack.row(iid, EventType.HELD) is None  # ...and the activity has not returned
    stack.worker.kill()
    killed = time.monotonic()
    stack.gate.open()
    stack.worker.start()

    held = await stack.wait_row(iid, EventType.HELD, 90)
    print(f"\ntakeover after kill -9 inside the requeue: {time.monotonic() - killed:.1f} s")
    # The retry read Slurm's restart count and did not requeue again.
    assert held.details["changed"] is False and "already requeued" in held.details["detail"]
    await assert_recovered_once(stack, iid, job_id)


@pytest.mark.slow
async def test_worker_killed_inside_the_assessment_decides_and_requeues_once(make_stack):
    """The assessment is a local activity (patch `local-assessment`): a worker killed in it never
    completes its workflow task, which times out; the next worker runs the task again, its audit
    row of the detection included, which that row's key makes a no-op."""
    stack = make_stack()
    stack.start()
    job_id = stack.submit()
    stack.evidence_gate.arm()
    iid = await stack.fail(job_id)

    await until(stack.evidence_gate.inside, 90, "the worker to be inside the assessment's read of Slurm")
    assert stack.row(iid, EventType.DETECTED) is not None and stack.row(iid, EventType.DECIDED) is None
    stack.worker.kill()
    killed = time.monotonic()
    stack.evidence_gate.open()
    stack.worker.start()

    await stack.wait_row(iid, EventType.DECIDED, 90)
    print(f"\ndecided {time.monotonic() - killed:.1f} s after kill -9 inside the assessment")
    await assert_recovered_once(stack, iid, job_id)


async def test_worker_killed_while_the_incident_waits_on_a_timer(make_stack, temporal):
    # The approval's timer: the settle's ends as soon as Slurm says the job ended, as this one does.
    stack = make_stack(approval_timeout_s=6.0)
    stack.start()
    job_id = stack.submit()
    iid = await stack.fail(job_id)

    await stack.wait_row(iid, EventType.DECIDED, 60)  # recorded just before the approval's timer
    await until(lambda: timer_pending(temporal.get_workflow_handle(iid)), 10, "the approval's timer to start")
    stack.worker.kill()
    killed = time.monotonic()
    assert stack.row(iid, EventType.HELD) is None, "the timer had already fired"
    # With no worker to ask, the Web UI still says what the incident is (its start's summary).
    summary = await (await temporal.get_workflow_handle(iid).describe()).static_summary()
    assert summary is not None and summary.startswith(f"job {job_id}, attempt 0 on {stack.config.cluster} (action): ")
    stack.worker.start()

    await stack.wait_row(iid, EventType.HELD, 60)
    print(f"\nheld {time.monotonic() - killed:.1f} s after kill -9 during a 6 s timer")
    await assert_recovered_once(stack, iid, job_id)


async def test_temporal_server_killed_and_restarted_mid_incident(make_stack, sandbox, temporal):
    stack = make_stack(approval_timeout_s=6.0)
    stack.start()
    job_id = stack.submit()
    iid = await stack.fail(job_id)

    await stack.wait_row(iid, EventType.DECIDED, 60)
    await until(lambda: timer_pending(temporal.get_workflow_handle(iid)), 10, "the approval's timer to start")
    try:
        stop_temporal(sandbox, kill=True)
        assert stack.row(iid, EventType.HELD) is None, "the timer had already fired"
    finally:
        began = time.monotonic()
        start_temporal(sandbox)  # from its database file
    print(f"\ntemporal back in {time.monotonic() - began:.1f} s")
    await assert_recovered_once(stack, iid, job_id)


async def test_watchdog_releases_a_hold_whose_worker_died(make_stack, temporal):
    timeout = 10.0
    stack = make_stack(hold_timeout_s=timeout)
    stack.gate.arm()
    stack.start()
    job_id = stack.submit()
    iid = await stack.fail(job_id)

    await until(stack.gate.inside, 90, "the worker to be inside scontrol requeuehold")
    held = time.monotonic()
    stack.worker.kill()  # and no worker comes back: only the detector runs
    stack.gate.open()

    released = await stack.wait_row(iid, EventType.WATCHDOG_RELEASED, timeout + 15)
    print(f"\nwatchdog released the job {time.monotonic() - held:.1f} s after the hold (timeout {timeout:g} s)")
    assert released.details["held_for_s"] >= timeout
    job = await stack.cluster.wait_state(job_id, {"RUNNING"}, timeout=60)
    # Released unchanged: the requeue stands, no exclusion was added.
    assert job.restart_count == 1 and job.excluded_nodes == []

    # A worker that comes back late must not act on a job that was handed back.
    stack.worker.start()
    handle = temporal.get_workflow_handle(iid)

    async def closed() -> WorkflowExecutionStatus | None:
        status = (await handle.describe()).status
        return None if status is WorkflowExecutionStatus.RUNNING else status

    status = await until(closed, 120, f"{iid} to close")
    job = await stack.cluster.job(job_id)
    assert job.restart_count == 1 and job.excluded_nodes == [] and "held" not in job.state_reason.lower()
    rows = stack.rows(iid)
    assert_no_duplicates(rows)
    after = rows[[r.event_type for r in rows].index(EventType.WATCHDOG_RELEASED) + 1 :]
    assert not [r for r in after if r.details.get("changed")], "acted after the watchdog released the job"
    assert status is WorkflowExecutionStatus.COMPLETED
    closing = next(r for r in rows if r.event_type is EventType.INCIDENT_CLOSED)
    assert "watchdog released" in closing.details["reason"]


@pytest.mark.slow
async def test_slurmctld_down_for_30_s_mid_incident_is_retried_until_it_returns(make_stack, sandbox, temporal):
    # Decided, then an approval's 5 s (nobody answers: approved) before the hold, which slurmctld
    # is then down for. The settle cannot be that wait: it ends once Slurm says the job ended.
    stack = make_stack(approval_timeout_s=5.0)
    stack.start()
    job_id = stack.submit()
    iid = await stack.fail(job_id)

    await stack.wait_row(iid, EventType.DECIDED, 60)
    handle = temporal.get_workflow_handle(iid)

    async def retrying() -> bool:
        pending = (await handle.describe()).raw_description.pending_activities
        return bool(pending) and pending[0].attempt >= 3

    try:
        stop_slurmctld(sandbox)
        down = time.monotonic()
        await until(retrying, OUTAGE_S, "a scheduler activity to retry with backoff")
        await asyncio.sleep(max(0.0, OUTAGE_S - (time.monotonic() - down)))  # the outage, not a sync
        failure = (await handle.describe()).raw_description.pending_activities[0].last_failure
        assert failure.application_failure_info.type in RETRYABLE, failure.message
        assert stack.row(iid, EventType.HELD) is None
    finally:
        start_slurmctld(sandbox)
    back = time.monotonic()
    await stack.wait_row(iid, EventType.HELD, 90)  # slurmctld's own recovery, then the next retry (5 s apart)
    held = time.monotonic() - back
    await stack.wait_row(iid, EventType.RELEASED, 90)
    print(
        f"\nslurmctld down {back - down:.0f} s; after it returned: held in {held:.1f} s,"
        f" released in {time.monotonic() - back:.1f} s"
    )
    await assert_recovered_once(stack, iid, job_id)


def launcher_pid(job_id: int) -> int:
    """The in-job launcher of `job_id` (the sandbox's nodes are local processes)."""
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"respawn.workers.launcher" in cmdline and f"SLURM_JOB_ID={job_id}".encode() in environ:
            return int(entry.name)
    raise AssertionError(f"no launcher process for job {job_id}")


async def test_worker_killed_between_the_instruction_and_its_ack_relaunches_exactly_once(make_stack, monkeypatch):
    """The launcher is paused once its step failed, so the worker posts its instruction and waits
    for the ack: killed there, its successor's retry posts the same generation and reads the ack."""
    stack = make_stack(settle_s=3.0)
    stack.start()
    job_id, ch = stack.submit_launched(monkeypatch)
    iid = await stack.fail(job_id)
    await until(
        lambda: (s := channel.read_status(ch)) is not None and s.state == StepState.FAILED, 60, "the step to fail"
    )
    launcher = launcher_pid(job_id)
    os.kill(launcher, signal.SIGSTOP)
    try:
        await until(lambda: channel.read_instruction(ch), 60, "the instruction")
        stack.worker.kill()
    finally:
        os.kill(launcher, signal.SIGCONT)
    assert stack.row(iid, EventType.RELAUNCHED) is None
    stack.worker.start()

    relaunched = await stack.wait_row(iid, EventType.RELAUNCHED, 90)
    assert relaunched.details["rung"] == "replace_node" and relaunched.details["generation"] == 1
    closed = await stack.wait_row(iid, EventType.INCIDENT_CLOSED, 120)
    assert closed.details["phase"] == "resumed", closed.details
    status = channel.read_status(ch)
    assert status is not None and (status.restarts, status.generation) == (1, 1), "relaunched more than once"
    assert [p.name for p in ch.glob("ack-*.json")] == ["ack-1.json"]
    job = await stack.cluster.job(job_id)
    assert (job.state, job.restart_count) == ("RUNNING", 0)
    assert_no_duplicates(stack.rows(iid))
