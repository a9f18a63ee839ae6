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

from collections.abc import Callable, Iterable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from respawn.attribution.runbook import Onset
from respawn.scheduler.states import ENDED_AS_MEANT, ENDED_BADLY
from respawn.sources.progress import ProgressReader
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


class OwnLauncherWord(BaseModel):
    """What the job's own launcher (torchrun's elastic agent, NVRx's ft_launcher) said of its
    workers in the attempt's output."""

    # Its restarts of its workers: its restart line, or a failure of them followed by training.
    restarts: list[str] = Field(default_factory=list)
    # It saw its workers fail and has said nothing since: it restarts them or gives up.
    deciding: bool = False


def own_launcher_word(lines: Iterable[str], progress: ProgressReader) -> OwnLauncherWord:
    """Read the output in order. torchrun logs every failure of its workers at ERROR, then
    restarts them (its INFO restart line, unseen at the default log level) or gives up
    (ChildFailedError): a failure followed by training again was a restart."""
    word = OwnLauncherWord()
    pending: str | None = None
    for line in lines:
        if progress.restarting(line):
            word.restarts.append(line)
            pending = None
        elif progress.worker_failed(line):
            pending = line
        elif progress.gave_up(line):
            pending = None
        elif pending is not None and (progress.step(line) is not None or progress.resumed(line) is not None):
            word.restarts.append(pending)
            pending = None
    word.deciding = pending is not None
    return word


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
    own_launcher_deciding: bool = False,
) -> Interruption:
    """The verdict on one attempt: `onset(pattern)` is what the runbooks say of a pattern's lines;
    `launcher`, the job's in-job launcher, whose step may end while the job runs on;
    `job_restarts`, the job's own launcher's restarts of its workers in the attempt (torchrun
    --max-restarts, NVRx's ft_launcher); `own_launcher_deciding`, that launcher saw its workers
    fail and has not said yet whether it restarts them."""
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
        if d.pattern and onset(d.pattern) is Onset.CERTAIN and not own_launcher_deciding:
            return Interruption(
                verdict=Verdict.CONFIRMED, why=f"{d.pattern}: the process dies or hangs after such a line"
            )
    if own_launcher_deciding:
        # The worker died, but the job's own launcher may restart it: wait for its word, as
        # for any suspicion (the job ending, training again, the confirmation window).
        return Interruption(
            verdict=Verdict.SUSPECTED,
            why="the job's own launcher saw its workers fail and has not said whether it restarts them",
        )
    return Interruption(verdict=Verdict.SUSPECTED, why=f"failure-like output while the attempt is {state or 'unknown'}")
