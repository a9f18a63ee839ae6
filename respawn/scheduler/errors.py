"""Typed scheduler errors, mapped from the texts Slurm's clients print.

Recovery decides on the type: a retryable error (controller or transport away)
is worth another attempt later; the others say something about the job or the
request that retrying will not change.
"""

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from respawn.scheduler.transport import CommandResult

MAX_MESSAGE = 300  # the first line of stderr is enough; Slurm can be wordy


class SchedulerError(Exception):
    retryable: ClassVar[bool] = False

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class JobNotFound(SchedulerError):
    """The controller does not know the job id (never existed, or purged after MinJobAge)."""


class JobPending(SchedulerError):
    """Refused because the job is pending (requeue of a pending job)."""


class JobNotPending(SchedulerError):
    """Refused because the job is no longer pending (ExcNodeList of a running job)."""


class OperationDisabled(SchedulerError):
    """Refused by the job's settings, e.g. requeue of a --no-requeue job."""


class JobFinished(SchedulerError):
    """The job has finished for good and cannot be changed (e.g. requeue after NODE_FAIL of a --no-requeue job)."""


class JobGone(SchedulerError):
    """The job completed or its owner cancelled it: recovery has nothing left to do."""


class JobCompleting(SchedulerError):
    """A requeued job that some node still holds: the action is retried until none does."""

    retryable = True


class InvalidJobId(SchedulerError):
    """Not a job id (not a positive int); refused before any command runs."""


class InvalidNodeName(SchedulerError):
    """A node name that is malformed (refused before any command runs) or unknown to Slurm."""


class SchedulerUnavailable(SchedulerError):
    """The controller did not answer; the operation may succeed later."""

    retryable = True


class TransportError(SchedulerError):
    """The command could not be run or did not finish: ssh failure, timeout."""

    retryable = True


class CommandTimeout(TransportError):
    """The command ran past its timeout and was abandoned; it may or may not have taken effect."""


class SlurmCommandError(SchedulerError):
    """Any other failure of a Slurm command; the message holds Slurm's text."""


# Substrings of Slurm's stderr, most specific first.
_PATTERNS: tuple[tuple[str, type[SchedulerError]], ...] = (
    ("Invalid job id specified", JobNotFound),
    ("Job is no longer pending execution", JobNotPending),
    ("Job is pending execution", JobPending),
    ("Requested operation is presently disabled", OperationDisabled),
    ("Job has already finished", JobFinished),
    ("Invalid node name specified", InvalidNodeName),
    ("Unable to contact slurm controller", SchedulerUnavailable),
    ("Connection refused", SchedulerUnavailable),
    ("Socket timed out", SchedulerUnavailable),
    ("Communication connection failure", SchedulerUnavailable),
    ("Zero Bytes were transmitted or received", SchedulerUnavailable),
    # What `scontrol requeue` prints in 22.05 when the controller is down.
    ("Unexpected message received", SchedulerUnavailable),
    ("Slurm backup controller in standby mode", SchedulerUnavailable),
)


def error_from(result: "CommandResult", argv: Sequence[str]) -> SchedulerError:
    """The typed error for a failed command (rc != 0), with the line of Slurm's text that decided."""
    text = result.stderr.strip() or result.stdout.strip() or f"exit status {result.rc}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for needle, kind in _PATTERNS:
        for line in lines:
            if needle in line:
                return kind(_message(argv, line))
    return SlurmCommandError(_message(argv, lines[0]))


def _message(argv: Sequence[str], line: str) -> str:
    # The command and its verb only: later arguments may carry user text (a drain reason).
    return f"{' '.join(argv[:2])}: {line[:MAX_MESSAGE]}"
