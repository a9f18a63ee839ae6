"""Slurm 23.11 to 24.11 (data_parser v0.0.40, v0.0.41, v0.0.42; captured from 24.11.5).

Jobs (`squeue --json`, `scontrol show job --json`): `job_state` a list holding the
base state and its flags (`["PENDING", "COMPLETING"]` right after a requeue);
numbers wrapped as `{"set", "infinite", "number"}`; `exit_code` an object
`{status, return_code: {set, number}, signal: {id: {set, number}, name}}` whose
return code is unset for a job a signal ended (that is exit code 0, as
`scontrol` prints `ExitCode=0:9`); `end_time` of an unfinished job is a projection.
squeue lists finished jobs only when asked (`-t all`), and honours -j/-t/-u/-w.

Nodes: `scontrol show node --json` has `nodes[]` whose `state` list carries the
base state AND the flags (`["IDLE", "DRAIN"]`, no `state_flags`), `reason` a
string; `sinfo --json` has no `nodes` but `sinfo[]`, one entry per group of nodes
sharing a state (`-N`: one per node and partition): `node.state` the list,
`nodes.nodes` the names, `reason` an object `{description, time, user}`.
"""

from typing import Any

from respawn.scheduler.slurm_json.common import expand, integer, job_fields, mapping, names, text
from respawn.scheduler.states import ENDED, JobState, job_state, node_state


def jobs(data: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for raw in data.get("jobs") or []:
        if isinstance(raw, dict) and _job_id(raw.get("job_id"))[0]:
            found.append(_job(raw))
    return found


def nodes(data: dict[str, Any]) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for raw in data.get("nodes") or []:  # scontrol show node --json
        if isinstance(raw, dict) and raw.get("name") and str(raw["name"]) not in found:
            state, flags = node_state([*names(raw.get("state")), *names(raw.get("state_flags"))])
            found[str(raw["name"])] = {
                "name": str(raw["name"]),
                "state": state,
                "flags": flags,
                "reason": _reason(raw.get("reason")),
                # Where its slurmd listens: what a probe of the node asks (activities/probe.py).
                "address": text(raw.get("address")) or None,
                "port": integer(raw.get("port")),
            }
    for group in data.get("sinfo") or []:  # sinfo [-N] --json
        if not isinstance(group, dict):
            continue
        node = mapping(group.get("node"))
        members = mapping(group.get("nodes"))
        state, flags = node_state(names(node.get("state")))
        for name in expand(members.get("nodes")):
            # A group can merge nodes whose reasons differ; -N gives each node its own entry.
            found.setdefault(
                name, {"name": name, "state": state, "flags": flags, "reason": _reason(group.get("reason"))}
            )
    return list(found.values())


def _job(raw: dict[str, Any]) -> dict[str, Any]:
    state, flags = job_state(names(raw.get("job_state")))
    job_id, task_in_id = _job_id(raw.get("job_id"))
    exit_code, exit_signal = _exit_code(raw.get("exit_code"), state)
    task = integer(raw.get("array_task_id"))
    return job_fields(
        raw,
        job_id=job_id,
        state=state,
        flags=flags,
        exit_code=exit_code,
        exit_signal=exit_signal,
        nodes=_allocation(raw),
        array_task_id=task if task is not None else task_in_id,
    )


def _job_id(value: Any) -> tuple[int, int | None]:
    """A number, or text "10_0" (an array task, as --only-job-state prints it): the id and the task."""
    if isinstance(value, str) and "_" in value:
        head, _, tail = value.partition("_")
        return integer(head) or 0, integer(tail)
    return integer(value) or 0, None


def _allocation(raw: dict[str, Any]) -> list[str]:
    nodes = expand(raw.get("nodes"))
    if nodes:
        return nodes
    resources = mapping(raw.get("job_resources"))
    placed = mapping(resources.get("nodes"))
    listed = expand(placed.get("list"))
    if listed:
        return listed
    allocation = placed.get("allocation")
    if isinstance(allocation, list):
        return [str(n["name"]) for n in allocation if isinstance(n, dict) and n.get("name")]
    return []


def _exit_code(value: Any, state: JobState) -> tuple[int | None, int | None]:
    if not isinstance(value, dict):
        return None, None
    signal = mapping(value.get("signal"))
    number = integer(signal.get("id"))
    signalled = bool(number)
    code = integer(value.get("return_code"))
    if code is None and (signalled or state in ENDED):
        code = 0  # ended by a signal: Slurm's ExitCode=0:<signal>
    return code, number or None


def _reason(value: Any) -> str:
    if isinstance(value, dict):
        return text(value.get("description"))
    return text(value)
