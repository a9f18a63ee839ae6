"""What an incident knows of the in-job launcher (docs/launcher.md): the step it runs.

Read from the job's channel by the evidence activity (respawn/launcher/channel.py's
`Status`, which the job's owner writes: validated there) and only while Slurm says
the job runs, so a status file a finished job left behind never offers a rung.
"""

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field


def channel_dir(job_output: Path, job_id: int) -> Path:
    """The default channel of a job: `.respawn-<job id>/` beside its output file."""
    return Path(job_output).parent / f".respawn-{job_id}"


class StepState(StrEnum):
    """The launcher's step, as its status says (channel.StepState)."""

    STARTING = "starting"
    RUNNING = "running"
    FAILED = "failed"  # the step ended badly; the launcher waits for an instruction
    SUCCEEDED = "succeeded"
    GIVING_UP = "giving_up"


class LauncherView(BaseModel):
    state: StepState
    step_nodes: list[str] = Field(default_factory=list)
    spares: list[str] = Field(default_factory=list)  # nodes of the allocation held for a relaunch
    excluded: list[str] = Field(default_factory=list)  # nodes of the allocation taken out of use in the job
    exit_code: int | None = None  # of the last step that ended
    restarts: int = 0  # in-job relaunches so far in this run of the job
    min_nodes: int | None = None  # the fewest nodes its step can run on (it can shrink); None: as many as now
    generation: int = 0  # the last instruction it acted on
    no_requeue: bool = False  # the step exited 93: NVRx's "do not requeue"

    @property
    def relaunchable(self) -> bool:
        """Whether an instruction would be carried out: the launcher waits after a failed step,
        or stops a step that still runs (a hang, ranks still tearing down) and then acts."""
        return self.state in (StepState.RUNNING, StepState.FAILED) and not self.no_requeue
