"""Shared by the end-to-end tests: Respawn's own processes against the sandbox,
and polling helpers with deadlines (no sleeps as synchronisation)."""

import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from respawn.audit.trail import AuditRow, AuditTrail, EventType
from respawn.config.cluster import ClusterConfig, Environment, LogSettings, SchedulerAccess, load_config
from respawn.sandbox.demo import RespawnProcesses, wait_for_first_poll
from respawn.sandbox.lab import Lab
from respawn.sandbox.labconfig import lab_config
from respawn.sandbox.polling import Timeout, until
from respawn.sandbox.workload.submit import output_path
from respawn.scheduler.slurm import JobInfo, Slurm
from respawn.scheduler.transport import LocalTransport
from respawn.wire.incident import incident_id

# What one recovery by requeue writes, from the failure to the job's completion. RESUMED is the
# follow activity reading the next attempt's first step (from the job's file or a log server).
REQUEUED_WITHOUT_A_NODE = [
    EventType.DETECTED,
    EventType.ATTRIBUTED,
    EventType.DECIDED,
    EventType.HELD,
    EventType.EXCLUDED,
    EventType.RELEASED,
    EventType.ATTEMPT_STARTED,
    EventType.RESUMED,
    EventType.INCIDENT_CLOSED,
    EventType.JOB_COMPLETED,
]


def sbatch(lab: Lab, *args: str) -> int:
    """Submit a job to the lab's Slurm, its output where the detector reads it; its id."""
    argv = ["sbatch", "--parsable", f"--output={lab.out_dir}/slurm-%j.out", *args]
    result = subprocess.run(argv, env=lab.env(), capture_output=True, text=True, timeout=30, check=True)
    return int(result.stdout.strip().split(";")[0])


@contextmanager
def respawn_running(
    lab: Lab,
    name: str,
    transport: SchedulerAccess = SchedulerAccess.LOCAL,
    environments: dict[str, Environment] | None = None,
    logs: dict[str, Any] | None = None,
    **budgets,
):
    """A detector and a worker for the sandbox, as real child processes.

    Each test module runs as its own cluster `name` (own task queue, own audit
    trail), so one module's incidents never count in another's node record.
    `environments` are added to the sandbox's; `logs` replaces settings of its `logs`
    (a log server instead of files, tests/e2e/test_logserver_recovery.py).
    """
    base = lab_config(lab, transport)
    for stale in lab.root.glob(f"audit-{name}.db*"):  # a module's record starts empty every run
        stale.unlink()
    config = base.model_copy(
        update={
            "cluster": name,
            "audit_db": lab.root / f"audit-{name}.db",
            "environments": base.environments | (environments or {}),
            "budgets": base.budgets.model_copy(update=budgets),
            "logs": LogSettings.model_validate(base.logs.model_dump() | (logs or {})),
        }
    )
    path = write_config(config, lab.root / f"{name}.yaml")
    with RespawnProcesses(lab, path):
        yield load_config(path)


def write_config(config: ClusterConfig, path: Path) -> Path:
    """`config` as a YAML file that the Respawn processes load."""
    path.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True), sort_keys=False))
    return path


class RespawnProcess:
    """One Respawn process (`worker` or `detector`) that a test can kill -9 and start again."""

    def __init__(self, lab: Lab, config_path: Path, role: str) -> None:
        self._argv = [sys.executable, "-m", "respawn.surfaces.cli", role, "--config", str(config_path)]
        self._role, self._config_path = role, config_path
        self._log = lab.log_dir / f"respawn-{config_path.stem}-{role}.log"
        self._proc: subprocess.Popen | None = None

    def start(self) -> "RespawnProcess":
        with open(self._log, "ab") as log:
            self._proc = subprocess.Popen(self._argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        if self._role == "detector":
            wait_for_first_poll(self._config_path, self._proc, self._log)
        return self

    def kill(self) -> None:
        """A crash: SIGKILL, no graceful shutdown, nothing handed over."""
        if self._proc is not None:
            self._proc.send_signal(signal.SIGKILL)
            self._proc.wait()

    def stop(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            return
        self._proc.terminate()
        try:
            self._proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()


class Cluster:
    """Test-side view of the sandbox: Slurm through the local transport and the audit trail."""

    def __init__(self, lab: Lab, config: ClusterConfig) -> None:
        self.lab, self.config = lab, config
        self.slurm = Slurm(LocalTransport(env=lab.env()))
        self.audit = AuditTrail(config.audit_db)
        # Where each Respawn log ends now: a timeout reports what was logged after (the logs
        # are appended to across tests and runs).
        self._log_starts = {log: log.stat().st_size for log in lab.log_dir.glob("respawn-*.log")}

    async def job(self, job_id: int) -> JobInfo:
        return await self.slurm.job(job_id)

    async def incident_of(self, job_id: int) -> str:
        """The id of the incident of the job's current attempt (its first, not after a not-interrupted one).
        Ask before the attempt is requeued: the id carries the attempt's submit time, which a requeue moves."""
        job = await self.job(job_id)
        return incident_id(self.config.cluster, job_id, job.restart_count, submitted=job.submit_time)

    def events(self, job_id: int) -> list[AuditRow]:
        return self.audit.query(cluster=self.config.cluster, job_id=job_id)

    def types(self, job_id: int) -> list[EventType]:
        return [r.event_type for r in self.events(job_id)]

    def output(self, job_id: int) -> str:
        path = output_path(self.lab, job_id)  # the job's file, whatever Respawn reads (logs.source)
        return path.read_text(errors="replace") if path.exists() else ""

    async def wait_checkpoint(self, job_id: int, step: int = 10, timeout: float = 120) -> None:
        await until(
            lambda: f"saved checkpoint step {step}" in self.output(job_id),
            timeout,
            f"job {job_id} to save checkpoint {step}",
        )

    async def wait_state(self, job_id: int, states: set[str], timeout: float = 180, min_restarts: int = 0) -> JobInfo:
        seen: list[JobInfo] = []

        async def probe():
            job = await self.job(job_id)
            seen[:] = [job]
            return job if job.state in states and job.restart_count >= min_restarts else None

        try:
            return await until(probe, timeout, f"job {job_id} to reach {states}")
        except Timeout as timeout_:
            # Where the job was and what Respawn recorded: a CI run leaves nothing else to read.
            job = seen[0] if seen else None
            where = (
                f"{job.state} {job.state_reason} restarts={job.restart_count} nodes={job.nodes}"
                if job
                else "never read"
            )
            audit = [t.value for t in self.types(job_id)]
            raise Timeout(f"{timeout_}; job: {where}; audit: {audit}{self._complaints()}") from None

    async def wait_requeued_without(self, job_id: int, node: str) -> list[AuditRow]:
        """The job completed after one requeue without `node`, and the audit trail tells that
        story in order, every row once; returns its rows."""
        job = await self.wait_state(job_id, {"COMPLETED"}, min_restarts=1)
        assert job.restart_count == 1
        assert node in job.excluded_nodes and node not in job.nodes
        await until(lambda: EventType.JOB_COMPLETED in self.types(job_id), 30, "the completion in the audit trail")
        rows = self.events(job_id)
        assert [r.event_type for r in rows if r.event_type is not EventType.ENROLLED] == REQUEUED_WITHOUT_A_NODE
        return rows

    def _complaints(self, last: int = 8) -> str:
        """The last warnings and errors the Respawn processes logged since this view was made, one block per log."""
        blocks = []
        for log in sorted(self.lab.log_dir.glob("respawn-*.log")):
            with open(log, "rb") as f:
                f.seek(self._log_starts.get(log, 0))
                text = f.read().decode(errors="replace")
            lines = [ln for ln in text.splitlines() if " WARNING " in ln or " ERROR " in ln]
            if lines:
                blocks.append(f"\n{log.name}:\n  " + "\n  ".join(lines[-last:]))
        return "".join(blocks)
