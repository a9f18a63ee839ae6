"""The scheduler actions (respawn/scheduler/actions.py) against a scripted Slurm: the races a
busy cluster runs into, where Slurm is faster than Respawn."""

from respawn.scheduler import actions
from respawn.scheduler.errors import JobNotPending
from respawn.scheduler.slurm import JobInfo


class StartedMeanwhile:
    """A held job that Slurm starts right after its release, before the start time is moved."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    async def job(self, job_id: int) -> JobInfo:
        return JobInfo(job_id=job_id, state="PENDING", state_reason="JobHeldUser", restart_count=1)

    async def release(self, job_id: int) -> None:
        self.calls.append("release")

    async def start_now(self, job_id: int) -> None:
        self.calls.append("start_now")
        raise JobNotPending("slurm_update error: Job is no longer pending execution")


async def test_a_job_slurm_started_before_its_start_time_was_moved_is_released_not_failed():
    slurm = StartedMeanwhile()
    outcome = await actions.release(slurm, 7)  # type: ignore[arg-type]
    assert slurm.calls == ["release", "start_now"]
    assert outcome.changed and "Slurm started it" in outcome.detail
