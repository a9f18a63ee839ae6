"""The in-job launcher (respawn/launcher/, docs/launcher.md) on the sandbox cluster: a
3-node job holding 1 spare under it, the tests playing the incident's side of the
channel: what the launcher does when no instruction comes, a task exits 93, or the job
is cancelled. Relaunches driven by Respawn itself (in place, on the spare, exactly once
across a worker's death) are tests/e2e/test_layered_recovery.py and test_crash_safety.py;
their helpers here are shared."""

from pathlib import Path

import pytest

from respawn.launcher import channel
from respawn.launcher.channel import Status, StepState
from respawn.sandbox import Lab
from respawn.sandbox.workload import submit as submit_module
from respawn.sandbox.workload.submit import output_path, submit
from respawn.scheduler.slurm import JobInfo, Slurm
from respawn.scheduler.transport import LocalTransport
from tests.integration.test_workload import PROGRESS, RESUMED, SAVED, cancel_after, lines  # noqa: F401
from tests.recovery_stack import until

LAUNCHED_SCRIPT = submit_module.BATCH_SCRIPT.with_name("train_launched.sbatch")
INCIDENT = "incident-sandbox-launcher"
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "NODE_FAIL", "TIMEOUT"}


@pytest.fixture
def jobs(request: pytest.FixtureRequest) -> list[int]:
    """The jobs a test submitted, cancelled after it (test_workload's `cancel_after`)."""
    jobs: list[int] = request.getfixturevalue("cancel_after")
    return jobs


@pytest.fixture
def slurm(sandbox: Lab) -> Slurm:
    return Slurm(LocalTransport(env=sandbox.env()))


def submit_launched(
    lab: Lab,
    monkeypatch: pytest.MonkeyPatch,
    jobs: list[int],
    *,
    wait_s: float,
    program: Path | None = None,
    comment: str | None = None,
    spares: int = 1,
    min_nodes: int | None = None,
    **trainer: float,
) -> tuple[int, Path]:
    """The demo job's submission (3 nodes, `spares` of them held, its step shrinking down to
    `min_nodes` where given) with the launcher's batch script; `program` in place of the
    trainer, `comment` its enrolment. Returns the job id and its channel directory."""
    monkeypatch.setattr(submit_module, "BATCH_SCRIPT", LAUNCHED_SCRIPT)
    if program is not None:
        monkeypatch.setattr(submit_module, "TRAINER", program)
    settings = {"steps": 400, "checkpoint_every": 2, "step_seconds": 0.2} | trainer
    job_id = submit(
        lab,
        nodes=3,
        name="launched",
        comment=comment,
        extra_sbatch_args=[
            # node1..node3 even while an earlier test's job still completes: the tests name nodes.
            "--nodelist=node[1-3]",
            f"--export=ALL,RESPAWN_SPARES={spares},RESPAWN_WAIT_S={wait_s:g}"
            + (f",RESPAWN_MIN_NODES={min_nodes}" if min_nodes is not None else ""),
        ],
        **settings,
    )  # type: ignore[arg-type]
    jobs.append(job_id)
    return job_id, channel.channel_dir(output_path(lab, job_id), job_id)


async def status_is(ch: Path, state: StepState, timeout: float, what: str, restarts: int = 0) -> Status:
    def probe() -> Status | None:
        status = channel.read_status(ch)
        return status if status is not None and status.state == state and status.restarts == restarts else None

    return await until(probe, timeout, what)


async def ended(slurm: Slurm, job_id: int, timeout: float) -> JobInfo:
    async def probe() -> JobInfo | None:
        job = await slurm.job(job_id)
        return job if job.state in FINAL and not job.completing else None

    return await until(probe, timeout, f"job {job_id} to end")


def saved_steps(out: Path) -> list[int]:
    return [int(m["step"]) for line in lines(out) if (m := SAVED.match(line))]


async def resumed_after(out: Path, marker: str, timeout: float = 120) -> dict[int, int]:
    """Each rank's checkpoint step resumed from after the launcher's line `marker`, once
    both ranks trained a step past it."""

    def probe() -> dict[int, int] | None:
        text = lines(out)
        after = text[next((i for i, line in enumerate(text) if marker in line), len(text)) :]
        resumed = {int(m["rank"]): int(m["step"]) for line in after if (m := RESUMED.match(line))}
        stepped = {
            int(m["rank"])
            for line in after
            if (m := PROGRESS.match(line)) and int(m["step"]) > max(resumed.values(), default=0)
        }
        return resumed if len(resumed) == 2 and stepped == {0, 1} else None

    return await until(probe, timeout, "both ranks to resume and train")


def exits_with(tmp_path: Path, code: int) -> Path:
    """A step program whose rank 1 fails at once with `code` while rank 0 waits to be
    killed (it ignores the trainer's arguments): srun itself then reports 143."""
    program = tmp_path / f"exit{code}.py"
    program.write_text(
        f"import os, time\nif os.environ['SLURM_PROCID'] == '1':\n    raise SystemExit({code})\ntime.sleep(120)\n"
    )
    return program


async def test_no_instruction_in_time_gives_up_with_the_steps_code(
    sandbox: Lab, monkeypatch: pytest.MonkeyPatch, jobs: list[int], slurm: Slurm, tmp_path: Path
) -> None:
    job_id, ch = submit_launched(sandbox, monkeypatch, jobs, wait_s=3, program=exits_with(tmp_path, 3))
    failed = await status_is(ch, StepState.FAILED, 60, "the step to fail")
    assert failed.exit_code == 143  # srun's: the highest of its tasks', rank 0 terminated
    job = await ended(slurm, job_id, 30)
    assert (job.state, job.exit_code, job.restart_count) == ("FAILED", 143, 0)
    status = channel.read_status(ch)
    assert status is not None and status.state == StepState.GIVING_UP and "no instruction within 3 s" in status.detail
    # The launcher waited its full time, no longer than needed.
    assert 3 <= (status.updated_at - failed.updated_at).total_seconds() < 6


async def test_exit_93_gives_up_at_once(
    sandbox: Lab, monkeypatch: pytest.MonkeyPatch, jobs: list[int], slurm: Slurm, tmp_path: Path
) -> None:
    job_id, ch = submit_launched(sandbox, monkeypatch, jobs, wait_s=60, program=exits_with(tmp_path, 93))
    job = await ended(slurm, job_id, 30)  # well inside wait_s: no wait for an instruction
    # srun reports 143 (rank 0 terminated): the launcher learns of rank 1's 93 from its task's mark.
    assert "task 1: Exited with exit code 93" in output_path(sandbox, job_id).read_text()
    assert (job.state, job.exit_code) == ("FAILED", 93)
    status = channel.read_status(ch)
    assert status is not None
    assert (status.state, status.no_requeue, status.exit_code) == (StepState.GIVING_UP, True, 93)
    assert "asks not to be requeued" in status.detail


async def test_scancel_is_forwarded_to_the_step(
    sandbox: Lab, monkeypatch: pytest.MonkeyPatch, jobs: list[int], slurm: Slurm, tmp_path: Path
) -> None:
    program = tmp_path / "sleeps.py"
    program.write_text("import time\ntime.sleep(120)\n")
    job_id, ch = submit_launched(sandbox, monkeypatch, jobs, wait_s=60, program=program)
    await status_is(ch, StepState.RUNNING, 60, "the step to run")
    await slurm.cancel(job_id)
    job = await ended(slurm, job_id, 30)
    assert job.state == "CANCELLED"
    status = await status_is(ch, StepState.GIVING_UP, 10, "the launcher to stop")
    assert status.detail == "stopped by signal 15"
