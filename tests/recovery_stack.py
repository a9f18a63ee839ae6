"""Shared by the end-to-end tests: Respawn's own processes against the sandbox,
and polling helpers with deadlines (no sleeps as synchronisation)."""

import asyncio
import inspect
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from respawn.audit import AuditRow, AuditTrail, EventType
from respawn.config import ClusterConfig, Transport, load_config
from respawn.demo import RespawnProcesses
from respawn.labconfig import write_lab_config
from respawn.sandbox.lab import Lab
from respawn.scheduler.slurm import JobInfo, Slurm
from respawn.scheduler.transport import LocalTransport


async def until(probe: Callable[[], object], timeout: float, what: str, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = probe()
        if inspect.isawaitable(last):
            last = await last
        if last:
            return last
        await asyncio.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")


@contextmanager
def respawn_running(lab: Lab, transport: Transport = Transport.LOCAL):
    """A detector and a worker for the sandbox cluster, as real child processes."""
    path: Path = write_lab_config(lab, transport)
    with RespawnProcesses(lab, path):
        yield load_config(path)


class Cluster:
    """Test-side view of the sandbox: Slurm through the local transport and the audit trail."""

    def __init__(self, lab: Lab, config: ClusterConfig) -> None:
        self.lab, self.config = lab, config
        self.slurm = Slurm(LocalTransport(env=lab.env()))
        self.audit = AuditTrail(config.audit_db)

    async def job(self, job_id: int) -> JobInfo:
        return await self.slurm.job(job_id)

    def events(self, job_id: int) -> list[AuditRow]:
        return self.audit.query(cluster=self.config.cluster, job_id=job_id)

    def types(self, job_id: int) -> list[EventType]:
        return [r.event_type for r in self.events(job_id)]

    def output(self, job_id: int) -> str:
        path = self.config.job_output(job_id)
        return path.read_text(errors="replace") if path.exists() else ""

    async def wait_checkpoint(self, job_id: int, step: int = 10, timeout: float = 120) -> None:
        await until(lambda: f"saved checkpoint step {step}" in self.output(job_id), timeout,
                    f"job {job_id} to save checkpoint {step}")

    async def wait_state(self, job_id: int, states: set[str], timeout: float = 180,
                         min_restarts: int = 0) -> JobInfo:
        async def probe():
            job = await self.job(job_id)
            return job if job.state in states and job.restart_count >= min_restarts else None
        return await until(probe, timeout, f"job {job_id} to reach {states}")
