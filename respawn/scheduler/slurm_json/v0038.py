"""Slurm 22.05 (openapi v0.0.38): `squeue --json`, `sinfo --json`.

Jobs: `job_state` one string, which is the flag instead of the base state while a
flag is set ("COMPLETING"); `exit_code` the raw wait status (exit 3 -> 768, SIGTERM
-> 15); numbers plain. Nodes: `nodes[]`, `state` the base state in lower case,
flags in `state_flags`, `reason` a string. These versions ignore squeue's and
sinfo's filters (-j, -t, -N ...), so the adapter filters.
"""

from typing import Any

from respawn.scheduler.slurm_json.common import expand, integer, job_fields, names, text
from respawn.scheduler.states import job_state, node_state


def jobs(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [_job(raw) for raw in data.get("jobs") or [] if isinstance(raw, dict) and integer(raw.get("job_id"))]


def nodes(data: dict[str, Any]) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for raw in data.get("nodes") or []:
        if not isinstance(raw, dict) or not raw.get("name") or str(raw["name"]) in found:
            continue
        state, flags = node_state([*names(raw.get("state")), *names(raw.get("state_flags"))])
        found[str(raw["name"])] = {
            "name": str(raw["name"]),
            "state": state,
            "flags": flags,
            "reason": text(raw.get("reason")),
            # Where its slurmd listens: what a probe of the node asks (activities/probe.py).
            "address": text(raw.get("address")) or None,
            "port": integer(raw.get("port")),
        }
    return list(found.values())


def _job(raw: dict[str, Any]) -> dict[str, Any]:
    state, flags = job_state(names(raw.get("job_state")))
    exit_code, exit_signal = _wait_status(raw.get("exit_code"))
    return job_fields(
        raw,
        job_id=integer(raw.get("job_id")) or 0,
        state=state,
        flags=flags,
        exit_code=exit_code,
        exit_signal=exit_signal,
        nodes=_allocation(raw),
        array_task_id=integer(raw.get("array_task_id")),
    )


def _allocation(raw: dict[str, Any]) -> list[str]:
    nodes = expand(raw.get("nodes"))
    if nodes:
        return nodes
    resources = raw.get("job_resources") or {}
    allocated = resources.get("allocated_nodes") if isinstance(resources, dict) else None
    if isinstance(allocated, list):
        return [str(n["nodename"]) for n in allocated if isinstance(n, dict) and n.get("nodename")]
    return []


def _wait_status(value: Any) -> tuple[int | None, int | None]:
    """The raw wait status: exit code in bits 8-15, the signal in bits 0-6."""
    status = integer(value)
    if status is None:
        return None, None
    return (status >> 8) & 0xFF, (status & 0x7F) or None
