"""Field decoding shared by the readers: numbers, strings, times, hostlists."""

from datetime import UTC, datetime
from typing import Any

from respawn.scheduler import hostlist
from respawn.scheduler.states import ENDED, JobFlag, JobState


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


def mapping(value: Any) -> dict[str, Any]:
    """An object as printed, or an empty one where the output holds something else."""
    return value if isinstance(value, dict) else {}


def text(value: Any) -> str:
    return "" if value is None else str(value)


def time(value: Any) -> datetime | None:
    seconds = integer(value)
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None


_MOST_GPUS = 10_000_000  # more than any allocation: a larger count is not believed


def gpus(value: Any) -> int | None:
    """The GPUs of an allocation from its TRES string ("cpu=64,node=8,billing=64,gres/gpu=64",
    or typed: "gres/gpu:a100=64"): the untyped total where printed, else the typed counts
    summed; None where no GPU is named (or a count does not read as one)."""
    total, typed, seen = None, 0, False
    for item in text(value).split(","):
        key, _, count = item.strip().partition("=")
        if key != "gres/gpu" and not key.startswith("gres/gpu:"):
            continue
        number = integer(count.strip())
        if number is None or not 0 <= number <= _MOST_GPUS:
            return None
        if key == "gres/gpu":
            total = number
        else:
            typed, seen = typed + number, True
    if total is not None:
        return total
    return typed if seen and typed <= _MOST_GPUS else None


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


def job_fields(
    raw: dict[str, Any],
    *,
    job_id: int,
    state: JobState,
    flags: list[JobFlag],
    exit_code: int | None,
    exit_signal: int | None,
    nodes: list[str],
    array_task_id: int | None,
) -> dict[str, Any]:
    """A job's fields that every version prints alike; the caller reads the ones that differ."""
    array_job = integer(raw.get("array_job_id"))
    return {
        "job_id": job_id,
        "name": text(raw.get("name")),
        "user": text(raw.get("user_name")),
        "user_id": integer(raw.get("user_id")),
        "account": text(raw.get("account")),
        "state": state,
        "flags": flags,
        "state_reason": text(raw.get("state_reason")),
        "state_description": text(raw.get("state_description")),
        "restart_count": integer(raw.get("restart_cnt")) or 0,
        "tasks": integer(raw.get("tasks")),
        "gpus": gpus(raw.get("tres_alloc_str")),
        "nodes": nodes,
        "batch_host": text(raw.get("batch_host")) or None,
        "excluded_nodes": expand(raw.get("excluded_nodes")),
        "comment": text(raw.get("comment")),
        "exit_code": exit_code,
        "exit_signal": exit_signal,
        "workdir": text(raw.get("current_working_directory")),
        "requeue": bool(raw.get("requeue")),
        "partition": text(raw.get("partition")),
        "submit_time": time(raw.get("submit_time")),
        "start_time": time(raw.get("start_time")),
        # For an unfinished job Slurm prints a projection (start + time limit), not an end.
        "end_time": time(raw.get("end_time")) if state in ENDED else None,
        "array_job_id": array_job or None,
        "array_task_id": array_task_id if array_job else None,
    }
