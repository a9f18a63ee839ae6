"""The Slurm adapter against the real sandbox, over both transports."""

import asyncio
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from respawn.sandbox import Lab, procs, start_slurmctld, stop_slurmctld
from respawn.sandbox.lab import SSH_HOST, SSH_PORT, SSH_USER
from respawn.sandbox.polling import until
from respawn.scheduler.errors import (
    CommandTimeout,
    InvalidJobId,
    InvalidNodeName,
    JobNotFound,
    JobNotPending,
    JobPending,
    SchedulerUnavailable,
    TransportError,
)
from respawn.scheduler.slurm import JobInfo, Slurm
from respawn.scheduler.transport import CommandResult, LocalTransport, SshTransport, Transport
from tests.recovery_stack import sbatch

T = TypeVar("T")
HOSTILE = """{"a": "b c"}; $(touch /tmp/pwned) `id` 'q' "dq" x=y"""


class Recording:
    """A transport that remembers every argv it was asked to run."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.calls: list[list[str]] = []

    async def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        self.calls.append(list(argv))
        return await self.inner.run(argv, timeout, env)

    async def close(self) -> None:
        await self.inner.close()


def ssh_transport(lab: Lab, known_hosts: Path | None = None) -> SshTransport:
    return SshTransport(SSH_HOST, SSH_PORT, SSH_USER, [lab.ssh_key], known_hosts or lab.known_hosts)


@pytest.fixture(params=["local", "ssh"])
async def transport(request: pytest.FixtureRequest, sandbox: Lab) -> AsyncIterator[Recording]:
    inner: Transport = LocalTransport(sandbox.env()) if request.param == "local" else ssh_transport(sandbox)
    recording = Recording(inner)
    yield recording
    await recording.close()


@pytest.fixture
def slurm(transport: Recording) -> Slurm:
    return Slurm(transport)


def job_in(slurm: Slurm, job_id: int, state: str, reason: str | None = None) -> Callable[[], Awaitable[JobInfo | None]]:
    async def probe() -> JobInfo | None:
        job = await slurm.job(job_id)
        return job if job.state == state and reason in (None, job.state_reason) else None

    return probe


async def test_jobs_followed_at_once_are_read_in_one_call(sandbox: Lab, slurm: Slurm, transport: Recording) -> None:
    """A running job, an ended one and an id Slurm never had, followed at the same moment: one squeue."""
    running = sbatch(sandbox, "--wrap", "exec sleep 300")
    ended = sbatch(sandbox, "--wrap", "exit 3")
    try:
        await until(job_in(slurm, running, "RUNNING"), 30, "the job to run")
        await until(job_in(slurm, ended, "FAILED"), 30, "the other job to fail")
        before = len(transport.calls)
        found = await asyncio.gather(
            slurm.job(running, exclusions=False),
            slurm.job(ended, exclusions=False),
            slurm.job(999_999, exclusions=False),
            return_exceptions=True,
        )
        assert [(j.job_id, j.state) for j in found[:2] if isinstance(j, JobInfo)] == [
            (running, "RUNNING"), (ended, "FAILED")
        ]  # fmt: skip
        assert isinstance(found[2], JobNotFound)
        (call,) = transport.calls[before:]
        assert call[0] == "squeue" and f"{running},{ended},999999" in call
    finally:
        await slurm.cancel(running)


async def test_recovery_sequence(sandbox: Lab, slurm: Slurm) -> None:
    job_id = sbatch(
        sandbox, "-N2", "--ntasks-per-node=1", "--requeue", "--open-mode=append", f"--comment={HOSTILE}",
        "--wrap", "exec srun sleep 300",
    )  # fmt: skip
    try:
        first = await until(job_in(slurm, job_id, "RUNNING"), 30, "the job to run")
        assert len(first.nodes) == 2 and first.comment == HOSTILE and first.requeue

        with pytest.raises(JobNotPending):
            await slurm.set_excluded_nodes(job_id, first.nodes)

        await slurm.requeue_hold(job_id)
        held = await until(job_in(slurm, job_id, "PENDING", "JobHeldUser"), 15, "the job to be held")
        assert held.restart_count == 1

        with pytest.raises(JobPending):
            await slurm.requeue_hold(job_id)

        await slurm.set_excluded_nodes(job_id, first.nodes)
        assert (await slurm.job(job_id)).excluded_nodes == first.nodes

        await slurm.release(job_id)
        await slurm.start_now(job_id)
        rerun = await until(job_in(slurm, job_id, "RUNNING"), 20, "the job to run again")
        assert not set(rerun.nodes) & set(first.nodes)
        assert rerun.restart_count == 1 and rerun.excluded_nodes == first.nodes
    finally:
        await slurm.cancel(job_id)
    await until(job_in(slurm, job_id, "CANCELLED"), 15, "the job to be cancelled")


async def test_clearing_excluded_nodes(sandbox: Lab, slurm: Slurm) -> None:
    job_id = sbatch(sandbox, "-H", "--exclude=node3", "--wrap", "true")
    try:
        assert (await slurm.job(job_id)).excluded_nodes == ["node3"]
        await slurm.set_excluded_nodes(job_id, ["node1", "node2", "node4"])
        assert (await slurm.job(job_id)).excluded_nodes == ["node1", "node2", "node4"]
        await slurm.set_excluded_nodes(job_id, [])
        assert (await slurm.job(job_id)).excluded_nodes == []
    finally:
        await slurm.cancel(job_id)


async def test_unknown_job(slurm: Slurm) -> None:
    with pytest.raises(JobNotFound):
        await slurm.job(999999)
    with pytest.raises(JobNotFound):
        await slurm.requeue_hold(999999)


@pytest.mark.parametrize("name", ["node1;touch /tmp/pwned", "$(id)", "-w", "node[1-2]", "node1,node2", "a b", ""])
async def test_hostile_node_names_never_reach_a_command(slurm: Slurm, transport: Recording, name: str) -> None:
    with pytest.raises(InvalidNodeName):
        await slurm.set_excluded_nodes(1, ["node1", name])
    with pytest.raises(InvalidNodeName):
        await slurm.drain(name, "reason")
    with pytest.raises(InvalidNodeName):
        await slurm.node(name)
    assert transport.calls == []


@pytest.mark.parametrize("job_id", [0, -1, True, "5", "5; id", 2**32, 1.0])
async def test_bad_job_ids_never_reach_a_command(slurm: Slurm, transport: Recording, job_id: object) -> None:
    with pytest.raises(InvalidJobId):
        await slurm.requeue(job_id)  # type: ignore[arg-type]
    assert transport.calls == []


async def test_drain_and_resume(slurm: Slurm) -> None:
    reason = "xid79 'gpu' fell off; bus $(id)\nsecond line"
    await slurm.drain("node4", reason)
    try:
        node = await slurm.node("node4")
        assert "DRAIN" in node.flags and node.reason == "xid79 'gpu' fell off; bus $(id) second line"
    finally:
        await slurm.resume("node4")
    assert "DRAIN" not in (await slurm.node("node4")).flags
    assert [n.name for n in await slurm.nodes()] == ["node1", "node2", "node3", "node4"]
    with pytest.raises(InvalidNodeName):
        await slurm.node("node99")


@pytest.mark.slow
async def test_controller_down_is_retryable(sandbox: Lab) -> None:
    slurm = Slurm(LocalTransport(sandbox.env()), timeout=20)
    stop_slurmctld(sandbox)
    try:
        # squeue exits 0 with an empty list here: it must not read as "no jobs".
        with pytest.raises(SchedulerUnavailable) as listing:
            await slurm.jobs()
        with pytest.raises(SchedulerUnavailable) as change:
            await slurm.requeue(1)
        assert listing.value.retryable and change.value.retryable
    finally:
        start_slurmctld(sandbox)
    assert len(await slurm.nodes()) == 4


async def test_arguments_arrive_verbatim(transport: Recording) -> None:
    args = ["a b", "$(id)", "'q'", '"dq"', "x;y", "`id`", "\\", ""]
    result = await transport.run(["printf", "%s|", *args])
    assert result == CommandResult(0, "|".join(args) + "|", "")


async def test_timeout_kills_and_the_transport_still_works(transport: Recording) -> None:
    started = time.monotonic()
    with pytest.raises(CommandTimeout):
        await transport.run(["sleep", "30.0417"], timeout=0.5)
    assert time.monotonic() - started < 5

    async def gone() -> bool:
        return not _running(b"30.0417")

    await until(gone, 5, "the timed-out command to be killed")
    assert (await transport.run(["true"])).rc == 0


async def test_ssh_checks_the_host_key(sandbox: Lab, tmp_path: Path) -> None:
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[{SSH_HOST}]:{SSH_PORT} {other.with_suffix('.pub').read_text()}")
    transport = ssh_transport(sandbox, wrong)
    with pytest.raises(TransportError, match="cannot connect"):
        await transport.run(["true"])
    await transport.close()


def _running(marker: bytes) -> bool:
    """Whether any process has `marker` in its command line (the ssh side runs on this host too)."""
    for pid in procs.all_pids():
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False
