"""Field decoding shared by the readers: numbers, strings, times, hostlists."""

from datetime import UTC, datetime
from typing import Any

from respawn import hostlist
from respawn.scheduler.states import JobState

# Base states after which a job has ended: its end_time is its end, not a projection.
ENDED = frozenset({JobState.COMPLETED, JobState.CANCELLED, JobState.FAILED, JobState.TIMEOUT, JobState.NODE_FAIL,
                   JobState.PREEMPTED, JobState.BOOT_FAIL, JobState.DEADLINE, JobState.OUT_OF_MEMORY})


def integer(value: Any) -> int | None:
    # 23.11+ wrap numbers as {"set": true, "infinite": false, "number": N}.
    if isinstance(value, dict):
        value = value.get("number") if value.get("set", True) and not value.get("infinite") else None
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def text(value: Any) -> str:
    return "" if value is None else str(value)


def time(value: Any) -> datetime | None:
    seconds = integer(value)
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None


def expand(value: Any) -> list[str]:
    """A hostlist string ("node[1-2]") or a list of names; malformed text is split on commas."""
    if isinstance(value, list):
        return [str(n) for n in value if n]
    raw = text(value).strip()
    if not raw or raw in ("(null)", "None"):
        return []
    try:
        return hostlist.expand(raw)
    except ValueError:
        return [n for n in raw.split(",") if n]


def names(value: Any) -> list[str]:
    """A state as printed: one string (22.05) or a list of names (23.11+)."""
    if isinstance(value, list):
        return [text(v) for v in value]
    return [text(value)] if value is not None else []
