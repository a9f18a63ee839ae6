"""How scheduler errors reach Temporal's retry machinery."""

from temporalio.exceptions import ApplicationError

from respawn.scheduler.errors import SchedulerError


def as_activity_error(exc: SchedulerError) -> ApplicationError:
    """Retryable scheduler trouble (controller down, SSH hiccup) is retried with
    backoff; anything else (the job vanished, a refused operation) is final."""
    return ApplicationError(
        f"{type(exc).__name__}: {exc}",
        type=type(exc).__name__,
        non_retryable=not getattr(exc, "retryable", False),
    )
