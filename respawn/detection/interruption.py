"""Is the attempt interrupted? A failure-like line is a suspicion until it is confirmed.

Training jobs print failure-looking text they handle themselves all the time: a
batch-size finder's CUDA out-of-memory, a data loader retrying an I/O error, a
caught exception's traceback. Acting on such a line ends an attempt that was
training. So an incident decides only once the interruption is confirmed: Slurm
says the attempt ended badly, its ranks stopped making progress, a node under it
is down, or a line whose nature is to be followed by the process dying or
hanging (runbooks: `onset: certain`). An attempt that ends as its owner or Slurm
meant (COMPLETED, CANCELLED) was not interrupted.

A pure function of what Slurm says and what was detected, tested without Temporal.
"""

from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel

from respawn.attribution.runbook import Onset
from respawn.scheduler.states import ENDED_AS_MEANT, ENDED_BADLY
from respawn.wire.launcher import LauncherView, StepState

if TYPE_CHECKING:
    from respawn.wire.incident import Detection


class Verdict(StrEnum):
    CONFIRMED = "confirmed"  # decide and, in action mode, act
    SUSPECTED = "suspected"  # failure-like text while the attempt still runs: wait for confirmation
    NOT_INTERRUPTED = "not_interrupted"  # the attempt ended as meant, or kept running past the window


class Interruption(BaseModel):
    verdict: Verdict
    why: str
    ended: bool = False  # Slurm says the attempt is over: a stop withholds its requeue
    job_restarts: int = 0  # the job's own launcher restarted its workers so often: its budget counts them


# What an incident opened before this judgement existed was treated as.
ASSUMED = Interruption(verdict=Verdict.CONFIRMED, why="judged before confirmation existed", ended=True)


def judge(
    job_state: str,
    restart_count: int | None,
    attempt: int,
    detections: Sequence["Detection"],
    onset: Callable[[str], Onset | None],
    launcher: LauncherView | None = None,
    job_restarts: Sequence[str] = (),
) -> Interruption:
    """The verdict on one attempt: `onset(pattern)` is what the runbooks say of a pattern's lines;
    `launcher`, the job's in-job launcher, whose step may end while the job runs on;
    `job_restarts`, the job's own launcher's lines restarting its workers since the suspicion's
    evidence began (torchrun --max-restarts, NVRx's ft_launcher)."""
    from respawn.wire.incident import DetectionKind  # the incident's types import this module

    words = job_state.split()
    state = words[0].upper() if words else ""
    if state in ENDED_BADLY:
        return Interruption(verdict=Verdict.CONFIRMED, why=f"the attempt ended {state}", ended=True)
    if restart_count is not None and restart_count > attempt:
        return Interruption(
            verdict=Verdict.CONFIRMED, why=f"Slurm requeued the attempt (restart count {restart_count})", ended=True
        )
    if state in ENDED_AS_MEANT:
        return Interruption(
            verdict=Verdict.NOT_INTERRUPTED, why=f"the attempt ended {state}, as its owner or Slurm meant", ended=True
        )
    if job_restarts:
        # Its own launcher recovers it inside the job: requeueing on top would undo that. If it
        # gives up, the job ends, and that is the interruption Respawn recovers.
        return Interruption(
            verdict=Verdict.NOT_INTERRUPTED,
            why=f"the job's own launcher restarted its workers ({len(job_restarts)}x): {job_restarts[-1][:200]}",
            job_restarts=len(job_restarts),
        )
    if launcher is not None and launcher.state in (StepState.FAILED, StepState.GIVING_UP):
        # The allocation outlives the step: the launcher saw it end badly and waits (or gives up).
        code = "" if launcher.exit_code is None else f" (exit code {launcher.exit_code})"
        return Interruption(
            verdict=Verdict.CONFIRMED, why=f"the job's launcher reports its step failed{code}", ended=True
        )
    for d in detections:
        if d.kind is DetectionKind.JOB_ENDED:
            return Interruption(
                verdict=Verdict.CONFIRMED, why=f"Slurm reported the attempt ended ({d.job_state})", ended=True
            )
        if d.kind is DetectionKind.NODE_DOWN:
            return Interruption(verdict=Verdict.CONFIRMED, why=f"node {d.node} of the attempt is down")
        if d.kind is DetectionKind.HANG:
            return Interruption(verdict=Verdict.CONFIRMED, why="its ranks stopped making progress")
        if d.kind is DetectionKind.SLOWDOWN:
            # Not an interruption but a finding of its own: a rank slower than its peers, sustained.
            return Interruption(verdict=Verdict.CONFIRMED, why="a sustained slowdown")
        if d.pattern and onset(d.pattern) is Onset.CERTAIN:
            return Interruption(
                verdict=Verdict.CONFIRMED, why=f"{d.pattern}: the process dies or hangs after such a line"
            )
    return Interruption(verdict=Verdict.SUSPECTED, why=f"failure-like output while the attempt is {state or 'unknown'}")
