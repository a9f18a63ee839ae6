"""The Slurm adapter: read jobs and nodes, and the few changes recovery makes.

State is read from `squeue --json` / `sinfo --json` (openapi v0.0.38 in 22.05),
never from `scontrol show` text, where a comment holding spaces or `=` breaks
key=value splitting. In 22.05 those commands ignore filters (-j, -t, ...) and
return every job, so filtering is done here.

Methods do one operation and raise typed errors; reading state first to make a
change idempotent is the caller's business.
"""

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from respawn import hostlist
from respawn.scheduler.errors import (
    InvalidJobId,
    InvalidNodeName,
    JobNotFound,
    SchedulerUnavailable,
    SlurmCommandError,
    error_from,
)
from respawn.scheduler.transport import CommandResult, Transport

MAX_JOB_ID = 2**32 - 1
MAX_REASON = 200
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]+")


class JobInfo(BaseModel):
    job_id: int
    name: str = ""
    user: str = ""
    user_id: int | None = None  # None when Slurm did not say
    account: str = ""  # empty without Slurm accounting
    state: str  # RUNNING, PENDING, COMPLETING, FAILED, NODE_FAIL, CANCELLED, ...
    state_reason: str = ""  # "None", "JobHeldUser", "BeginTime", "NonZeroExitCode", ...
    state_description: str = ""  # e.g. "job requeued in held state"
    restart_count: int = 0
    nodes: list[str] = Field(default_factory=list)  # the allocation; empty while pending (even after a requeue)
    batch_host: str | None = None
    excluded_nodes: list[str] = Field(default_factory=list)
    comment: str = ""  # set by the job's owner: untrusted, opaque, never parsed here
    exit_code: int | None = None  # the batch script's exit status, once finished
    exit_signal: int | None = None  # the signal that ended it, if any
    workdir: str = ""
    requeue: bool = False  # whether Slurm may requeue it (--requeue)
    partition: str = ""
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None  # for an unfinished job, Slurm's projection from the time limit
    tasks: int | None = None  # the job's task count: its ranks, when it runs one per task
    array_job_id: int | None = None
    array_task_id: int | None = None


class NodeInfo(BaseModel):
    name: str
    state: str  # base state, lower case: idle, mixed, allocated, down, ...
    flags: list[str] = Field(default_factory=list)  # DRAIN, NOT_RESPONDING, COMPLETING, ...
    reason: str = ""


def parse_squeue_json(text: str) -> list[JobInfo]:
    data = _load(text, "squeue --json", "jobs")
    return [_job(raw) for raw in data.get("jobs") or [] if isinstance(raw, dict) and _int(raw.get("job_id"))]


def parse_sinfo_json(text: str) -> list[NodeInfo]:
    data = _load(text, "sinfo --json", "nodes")
    nodes = []
    for raw in data.get("nodes") or []:
        if not isinstance(raw, dict) or not raw.get("name"):
            continue
        nodes.append(
            NodeInfo(
                name=str(raw["name"]),
                state=_first(raw.get("state")).lower(),
                flags=[str(f).upper() for f in raw.get("state_flags") or []],
                reason=_str(raw.get("reason")),
            )
        )
    return nodes


class Slurm:
    """The operations recovery needs, over any transport (local or ssh)."""

    def __init__(self, transport: Transport, timeout: float = 30.0) -> None:
        self.transport = transport
        self.timeout = timeout

    async def jobs(self) -> list[JobInfo]:
        """Every job the controller knows, including those that ended in the last MinJobAge seconds."""
        return parse_squeue_json((await self._run(["squeue", "--json"])).stdout)

    async def job(self, job_id: int) -> JobInfo:
        wanted = int(_job_id(job_id))
        for job in await self.jobs():
            if job.job_id == wanted:
                return job
        raise JobNotFound(f"squeue: no job {wanted}")

    async def requeue_hold(self, job_id: int) -> None:
        """Stop the running job and put it back in the queue, held (restart_count + 1)."""
        await self._run(["scontrol", "requeuehold", _job_id(job_id)])

    async def requeue(self, job_id: int) -> None:
        await self._run(["scontrol", "requeue", _job_id(job_id)])

    async def set_excluded_nodes(self, job_id: int, nodes: Sequence[str]) -> None:
        """Replace the job's excluded nodes (only while it is pending); an empty list clears them."""
        await self._run(["scontrol", "update", f"JobId={_job_id(job_id)}", f"ExcNodeList={_hostlist(nodes)}"])

    async def start_now(self, job_id: int) -> None:
        """Skip the BeginTime wait (cred_expire + 1 s) that follows every requeue, but not
        into the second the requeue happened in: slurmd refuses a launch credential no newer
        than its revocation of the previous attempt's ("Job credential revoked"), and the
        job would end FAILED without ever running."""
        await self._run(["scontrol", "update", f"JobId={_job_id(job_id)}", "StartTime=now+1"])

    async def release(self, job_id: int) -> None:
        await self._run(["scontrol", "release", _job_id(job_id)])

    async def cancel(self, job_id: int) -> None:
        """scancel; note that Slurm answers success for an unknown or finished job too."""
        await self._run(["scancel", _job_id(job_id)])

    async def nodes(self) -> list[NodeInfo]:
        return parse_sinfo_json((await self._run(["sinfo", "--json"])).stdout)

    async def node(self, name: str) -> NodeInfo:
        wanted = _node_name(name)
        for node in await self.nodes():
            if node.name == wanted:
                return node
        raise InvalidNodeName(f"sinfo: no node {wanted!r}")

    async def drain(self, node: str, reason: str) -> None:
        """Keep new jobs off `node`; a job running there carries on."""
        update = ["scontrol", "update", f"NodeName={_node_name(node)}", "State=DRAIN", f"Reason={_reason(reason)}"]
        await self._run(update)

    async def resume(self, node: str) -> None:
        await self._run(["scontrol", "update", f"NodeName={_node_name(node)}", "State=RESUME"])

    async def _run(self, argv: list[str]) -> CommandResult:
        result = await self.transport.run(argv, timeout=self.timeout)
        if result.rc != 0:
            raise error_from(result, argv)
        return result


def _job_id(job_id: int) -> str:
    # bool is an int subclass; a string id could smuggle "5_1" or worse into argv.
    if isinstance(job_id, bool) or not isinstance(job_id, int) or not 0 < job_id <= MAX_JOB_ID:
        raise InvalidJobId(f"invalid job id: {job_id!r}")
    return str(job_id)


def _node_name(name: str) -> str:
    if not isinstance(name, str) or not hostlist.valid_node_name(name):
        raise InvalidNodeName(f"invalid node name: {name!r}"[:200])
    return name


def _hostlist(nodes: Sequence[str]) -> str:
    if isinstance(nodes, str):
        raise InvalidNodeName("nodes must be a list of names, not a string")
    return hostlist.compress([_node_name(n) for n in nodes])


def _reason(reason: str) -> str:
    """One line of printable text: the reason is shown by sinfo and kept in the controller's state."""
    text = " ".join(_CONTROL_CHARS.sub(" ", reason).split())[:MAX_REASON]
    if not text:
        raise ValueError("a drain needs a non-empty reason")
    return text


def _load(text: str, what: str, key: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SlurmCommandError(f"{what}: unreadable output ({exc.msg} at {exc.pos})") from None
    if not isinstance(data, dict) or not isinstance(data.get(key, []), list):
        raise SlurmCommandError(f"{what}: unexpected output (no {key} list)")
    # With the controller down these commands exit 0 with an empty list and an
    # "errors" entry; reading that as "no jobs" would make every job look gone.
    errors = data.get("errors") or []
    if errors:
        first = errors[0] if isinstance(errors[0], dict) else {"error": str(errors[0])}
        detail = " / ".join(_str(first.get(k)) for k in ("source", "description", "error") if first.get(k))
        raise SchedulerUnavailable(f"{what}: {detail or 'error without text'}")
    return data


def _job(raw: dict[str, Any]) -> JobInfo:
    exit_code, exit_signal = _exit_status(raw.get("exit_code"))
    array_job = _int(raw.get("array_job_id"))
    return JobInfo(
        job_id=_int(raw.get("job_id")) or 0,
        name=_str(raw.get("name")),
        user=_str(raw.get("user_name")),
        user_id=_int(raw.get("user_id")),
        account=_str(raw.get("account")),
        state=_first(raw.get("job_state")).upper(),
        state_reason=_str(raw.get("state_reason")),
        state_description=_str(raw.get("state_description")),
        restart_count=_int(raw.get("restart_cnt")) or 0,
        nodes=_allocation(raw),
        batch_host=_str(raw.get("batch_host")) or None,
        excluded_nodes=_expand(raw.get("excluded_nodes")),
        comment=_str(raw.get("comment")),
        exit_code=exit_code,
        exit_signal=exit_signal,
        workdir=_str(raw.get("current_working_directory")),
        requeue=bool(raw.get("requeue")),
        partition=_str(raw.get("partition")),
        submit_time=_time(raw.get("submit_time")),
        start_time=_time(raw.get("start_time")),
        end_time=_time(raw.get("end_time")),
        array_job_id=array_job or None,
        array_task_id=_int(raw.get("array_task_id")) if array_job else None,
    )


def _allocation(raw: dict[str, Any]) -> list[str]:
    nodes = _expand(raw.get("nodes"))
    if nodes:
        return nodes
    resources = raw.get("job_resources") or {}
    allocated = resources.get("allocated_nodes") if isinstance(resources, dict) else None
    if isinstance(allocated, list):
        return [str(n["nodename"]) for n in allocated if isinstance(n, dict) and n.get("nodename")]
    return []


def _exit_status(value: Any) -> tuple[int | None, int | None]:
    """v0.0.38 gives the raw wait status (exit 3 -> 768); later versions a return_code object."""
    if isinstance(value, dict):
        return _int(value.get("return_code")), _int((value.get("signal") or {}).get("id"))
    status = _int(value)
    if status is None:
        return None, None
    return (status >> 8) & 0xFF, (status & 0x7F) or None


def _expand(value: Any) -> list[str]:
    text = _str(value).strip()
    if not text or text in ("(null)", "None"):
        return []
    try:
        return hostlist.expand(text)
    except ValueError:
        return [n for n in text.split(",") if n]


def _time(value: Any) -> datetime | None:
    seconds = _int(value)
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None


def _int(value: Any) -> int | None:
    # Later openapi versions wrap numbers as {"set": true, "infinite": false, "number": N}.
    if isinstance(value, dict):
        value = value.get("number") if value.get("set", True) and not value.get("infinite") else None
    if isinstance(value, bool) or value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _str(value: Any) -> str:
    return "" if value is None else str(value)


def _first(value: Any) -> str:
    # job_state is a string in v0.0.38 and a list of states in later versions.
    if isinstance(value, list):
        return _str(value[0]) if value else ""
    return _str(value)
