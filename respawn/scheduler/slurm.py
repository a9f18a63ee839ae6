"""The Slurm adapter: read jobs and nodes, and the few changes recovery makes.

State is read from Slurm's JSON (`squeue --json`, `sinfo --json`, and where the
version has them `scontrol show job|node --json`), or from squeue's text read
strictly (respawn/scheduler/squeue_text.py: fields chosen with `-O`, each ended
by a marker drawn per call), never from `scontrol show` text, where a comment
holding spaces or `=` breaks key=value splitting. Each JSON output names its
format version in `meta`, which picks the reader (respawn/scheduler/slurm_json/):
22.05's openapi v0.0.38 or 23.11-24.11's data parser v0.0.40-42; any other
version is an error naming it.

Jobs are read from squeue's text on every version, the listing each poll and
one job's read alike: the JSON prints 3-27 KB for every job. Versions differ in
what the commands do: 22.05's `squeue --json` ignores filters (-j, -t, ...) and
its scontrol has no `--json`, so there a job whose state the text hides stays as
the text says; 23.02 and later read those few again as JSON (`scontrol show job
--json J`, `squeue --json --jobs`), and 24.11 omits finished jobs unless asked
(`-t all`). The adapter learns which from the first JSON output it reads, or
from `scontrol --version` (local, no controller call) before that. Either way
one job's read reads that job, never the whole cluster.

Methods do one operation and raise typed errors; reading state first to make a
change idempotent is the caller's business.
"""

import asyncio
import json
import re
import weakref
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field, field_validator

from respawn.scheduler import hostlist, slurm_json, squeue_text
from respawn.scheduler.batched import BatchedReads
from respawn.scheduler.errors import (
    InvalidJobId,
    InvalidNodeName,
    SchedulerUnavailable,
    SlurmCommandError,
    error_from,
)
from respawn.scheduler.states import JobFlag, JobState, NodeFlag, NodeState, job_state, node_state
from respawn.scheduler.transport import CommandResult, Transport

MAX_JOB_ID = 2**32 - 1
_JSON_READS_FROM = (23, 2)  # scontrol --json, and squeue --json that honours -j
# What squeue's text prints for a job whose base state a flag hides (states.py).
_VEILED = frozenset({JobState.COMPLETING, JobState.UNKNOWN})
MAX_REASON = 200
_CLUSTER = "cluster"  # the one key of the reads of the whole cluster's nodes and partitions
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]+")


class JobInfo(BaseModel):
    job_id: int
    name: str = ""
    user: str = ""
    user_id: int | None = None  # None when Slurm did not say
    account: str = ""  # empty without Slurm accounting
    # The base state: RUNNING, PENDING, FAILED, NODE_FAIL, CANCELLED, ... (COMPLETING where
    # 22.05 printed the flag in place of the base). Flags apart: use `completing`, not the state.
    state: JobState
    flags: list[JobFlag] = Field(default_factory=list)  # COMPLETING, REQUEUED, ... (as Slurm listed them)
    state_reason: str = ""  # "None", "JobHeldUser", "BeginTime", "NonZeroExitCode", ...
    state_description: str = ""  # e.g. "job requeued in held state"
    restart_count: int = 0
    nodes: list[str] = Field(default_factory=list)  # the allocation; empty while pending (even after a requeue)
    batch_host: str | None = None
    # None where the reading did not say: 22.05's listing (squeue's text has no such field
    # for many jobs). A job's own read (`Slurm.job`) always says.
    excluded_nodes: list[str] | None = Field(default_factory=list)
    comment: str = ""  # set by the job's owner: untrusted, opaque, never parsed here
    exit_code: int | None = None  # the batch script's exit status, once finished
    exit_signal: int | None = None  # the signal that ended it, if any
    workdir: str = ""
    requeue: bool = False  # whether Slurm may requeue it (--requeue)
    partition: str = ""
    submit_time: datetime | None = None
    start_time: datetime | None = None
    end_time: datetime | None = None  # once ended; None while unfinished (Slurm prints a projection then)
    tasks: int | None = None  # the job's task count: its ranks, when it runs one per task
    # The allocation's GPUs (its TRES: gres/gpu); None where Slurm names none (or before it is allocated).
    gpus: int | None = None
    array_job_id: int | None = None
    array_task_id: int | None = None

    @field_validator("state", mode="before")
    @classmethod
    def _state_name(cls, value: object) -> object:
        return value if isinstance(value, JobState) else job_state([str(value)])[0]

    @property
    def completing(self) -> bool:
        """Some node still holds the job: 22.05's COMPLETING, or the flag on any base state
        (24.11's `["PENDING", "COMPLETING"]` right after a requeue)."""
        return self.state is JobState.COMPLETING or JobFlag.COMPLETING in self.flags


class NodeInfo(BaseModel):
    name: str
    state: NodeState  # base state, lower case: idle, mixed, allocated, down, ...
    flags: list[NodeFlag] = Field(default_factory=list)  # DRAIN, NOT_RESPONDING, COMPLETING, ...
    reason: str = ""
    address: str | None = None  # where its slurmd listens (NodeAddr); None where Slurm did not say
    port: int | None = None

    @field_validator("port", mode="before")
    @classmethod
    def _a_port(cls, value: object) -> object:
        return value if isinstance(value, int) and 0 < value < 65536 else None

    @field_validator("state", mode="before")
    @classmethod
    def _state_name(cls, value: object) -> object:
        return value if isinstance(value, NodeState) else node_state([str(value)])[0]

    @property
    def drained(self) -> bool:
        """DRAIN is set: drained, or draining while a job still runs there."""
        return NodeFlag.DRAIN in self.flags

    @property
    def unreachable(self) -> bool:
        return self.state is NodeState.DOWN or NodeFlag.NOT_RESPONDING in self.flags


def parse_squeue_json(text: str) -> list[JobInfo]:
    """`squeue --json` or `scontrol show job --json`, of any version with a reader."""
    return [JobInfo(**fields) for fields in slurm_json.jobs(_load(text, "squeue --json", "jobs"), "squeue --json")]


def parse_sinfo_json(text: str) -> list[NodeInfo]:
    """`sinfo [-N] --json` or `scontrol show node --json`, of any version with a reader."""
    return [NodeInfo(**fields) for fields in slurm_json.nodes(_load(text, "sinfo --json", "nodes"), "sinfo --json")]


def parse_config(text: str) -> dict[str, str]:
    """`scontrol show config` text: `Key = Value` lines (the same in 22.05 and 24.11)."""
    settings: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            settings.setdefault(key.strip(), value.strip())
    return settings


def partition_members(partitions: dict[str, dict[str, str]], partition: str, cluster: Sequence[str]) -> set[str] | None:
    """The nodes of a job's partitions (`partition` as squeue prints it: one name or a comma-separated
    list), from `parse_partitions`' settings; `cluster`, every node, for `Nodes=ALL`. None where
    Slurm does not say: a partition not listed, no nodes at all, a list that is not a hostlist."""
    members: set[str] = set()
    for name in filter(None, partition.split(",")):
        listed = partitions.get(name, {}).get("Nodes")
        if listed is None:
            return None
        if listed == "ALL":
            members |= set(cluster)
        elif listed != "(null)":
            try:
                members |= set(hostlist.expand(listed))
            except ValueError:
                return None
    return members or None


def parse_partitions(text: str) -> dict[str, dict[str, str]]:
    """`scontrol show partition -o` text: one partition a line, `Key=Value` words (no value holds a space)."""
    partitions: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        settings = dict(word.partition("=")[::2] for word in line.split() if "=" in word)
        if settings.get("PartitionName"):
            partitions.setdefault(settings["PartitionName"], settings)
    return partitions


class Slurm:
    """The operations recovery needs, over any transport (local or ssh)."""

    def __init__(self, transport: Transport, timeout: float = 30.0, concurrency: int = 16) -> None:
        self.transport = transport
        self.timeout = timeout
        # At most `concurrency` commands at once (scheduler.max_concurrent_commands), per event
        # loop: a semaphore belongs to the loop that first waits on it.
        self._concurrency = concurrency
        self._turns: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        # The output format the cluster printed last ("v0.0.38", "v0.0.42"); None until the first read.
        self.format: str | None = None
        self._release: tuple[int, int] | None = None  # from `scontrol --version`, asked only before any output
        # The last text listing's jobs, by job id: the record as printed, and what it read as.
        # A record printed alike again is not read again.
        self._listed: dict[str, tuple[str, JobInfo]] = {}
        # Jobs' states wanted at once (a storm's incidents following, holding, releasing), read in one
        # call; likewise their exclusions, and the nodes and partitions every evidence reads whole.
        self._states: BatchedReads[int, JobInfo] = BatchedReads(self._read_states)
        self._exclusions: BatchedReads[int, list[str]] = BatchedReads(self._read_exclusions)
        self._nodes: BatchedReads[str, list[NodeInfo]] = BatchedReads(self._read_nodes)
        self._partitions: BatchedReads[str, dict[str, dict[str, str]]] = BatchedReads(self._read_partitions)

    async def jobs(self) -> list[JobInfo]:
        """Every job the controller knows, including those that ended in the last MinJobAge seconds
        (`-t all`), from squeue's text on every version, whose `-O` prints the fields wanted and
        no more (squeue_text.py): a few hundred bytes a job where the JSON prints 3-6 KB (on 24.11,
        28 MB a poll at 5,000 jobs, half a second of a core to parse).

        A job whose record is as the last listing printed it is the same JobInfo as then.
        The text prints one name for a job's state, a flag in place of the base state while one
        is set (COMPLETING while an ended job's steps and epilog finish; REQUEUED); where the
        JSON honours filters (23.02 on) those few jobs are read again there, in one call, so
        that a job that FAILED is known as such while it completes, not once it has."""
        jobs = await self._text_listing()
        exact = await self._unveiled(jobs)
        return [exact.get(job.job_id, job) for job in jobs]

    async def _text_listing(self) -> list[JobInfo]:
        marker = squeue_text.new_marker()
        result = await self._run(squeue_text.command(marker), env=squeue_text.ENV)
        previous, self._listed = self._listed, {}
        jobs = []
        for record in squeue_text.records(result.stdout, marker):
            key = squeue_text.job_id(record)
            known = previous.get(key)
            if known is not None and known[0] == record:
                job = known[1]
            else:
                job = JobInfo(**squeue_text.job_fields(record), excluded_nodes=None)
            self._listed[key] = record, job
            jobs.append(job)
        return jobs

    async def jobs_output(self) -> tuple[str, dict[str, Any]]:
        """Every job as `squeue --json` prints it (a version a reader knows), and what printed it:
        what `respawn check` reads the fields of. The detector's listing is `jobs()`, from the text."""
        return "squeue --json", await self._json(["squeue", "--json", "--states=all"], "squeue --json", "jobs")

    async def job(self, job_id: int, exclusions: bool = True) -> JobInfo:
        """One job, finished ones included, read by itself, never through a listing: squeue's
        text naming it, among the other jobs asked for at the same moment in one call
        (respawn/scheduler/batched.py: a storm's follows, holds and releases), and beside it
        its excluded nodes (`--format=%A|%x`: ids and node names, no job-owner text; squeue's
        `-O` has no such field on 22.05), batched alike (a storm's excludes and evidence). A
        caller that does not look at them says `exclusions=False`, and then they are None."""
        wanted = int(_job_id(job_id))
        if not exclusions:
            return await self._states.read(wanted)
        job, excluded = await asyncio.gather(self._states.read(wanted), self._exclusions.read(wanted))
        return job.model_copy(update={"excluded_nodes": excluded})

    async def _read_exclusions(self, job_ids: Sequence[int]) -> dict[int, list[str]]:
        """The excluded nodes of the jobs named that the controller knows, by id, in one call."""
        return squeue_text.parse_excluded((await self._run(squeue_text.excluded_command(job_ids))).stdout)

    async def _read_states(self, job_ids: Sequence[int]) -> dict[int, JobInfo]:
        """The jobs named that the controller knows, finished ones included, by id, without their
        excluded nodes: squeue's text naming them, as the listing reads (one job is asked for
        alone; several, squeue prints those it knows), and where the version allows, the few
        whose state a flag hides read again as JSON. A storm's 500 followed jobs are some 450 KB
        a read, where 24.11's JSON printed 7.5 MB of them (BENCHMARKS.md, "The follows' reads")."""
        marker = squeue_text.new_marker()
        listed = await self._run(squeue_text.command(marker, job_ids), env=squeue_text.ENV)
        jobs = _text_jobs(listed.stdout, marker)
        exact = await self._unveiled(jobs)
        return {job.job_id: exact.get(job.job_id, job) for job in jobs}

    async def _unveiled(self, jobs: Sequence[JobInfo]) -> dict[int, JobInfo]:
        """Those of `jobs` read from the text whose state a flag hides (COMPLETING printed for
        a job that FAILED), read again as JSON in one call where the version honours filters
        (23.02 on); none on 22.05, whose JSON would read the whole cluster."""
        veiled = sorted(job.job_id for job in jobs if job.state in _VEILED)
        if not veiled or not await self._json_reads():
            return {}
        return await self._json_states(veiled)

    async def _json_states(self, job_ids: Sequence[int]) -> dict[int, JobInfo]:
        """The jobs named, as the JSON of 23.02 and later prints them (their exclusions
        included), by id, in one call."""
        if len(job_ids) == 1:  # an unknown id answers rc 0 and no job
            argv, what = ["scontrol", "show", "job", "--json", str(job_ids[0])], "scontrol show job --json"
        else:  # 23.11+ honours squeue's filters
            argv, what = ["squeue", "--json", "--states=all", "--jobs", ",".join(map(str, job_ids))], "squeue --json"
        data = await self._json(argv, what, "jobs")
        return {job.job_id: job for job in (JobInfo(**fields) for fields in slurm_json.jobs(data, what))}

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

    async def hold(self, job_id: int) -> None:
        """Keep a pending job from starting (priority 0) until it is released."""
        await self._run(["scontrol", "hold", _job_id(job_id)])

    async def release(self, job_id: int) -> None:
        await self._run(["scontrol", "release", _job_id(job_id)])

    async def cancel(self, job_id: int) -> None:
        """scancel; note that Slurm answers success for an unknown or finished job too."""
        await self._run(["scancel", _job_id(job_id)])

    async def nodes(self) -> list[NodeInfo]:
        """Every node with its own state, flags and reason (24.11's `sinfo --json` groups nodes,
        merging reasons, so there it is `scontrol show node --json`), read by a call made after
        this request, with any others asked for at the same moment (batched.py). Read-only:
        those callers share the list."""
        return await self._nodes.read(_CLUSTER)

    async def _read_nodes(self, _: Sequence[str]) -> dict[str, list[NodeInfo]]:
        what, data = await self.nodes_output()
        return {_CLUSTER: [NodeInfo(**fields) for fields in slurm_json.nodes(data, what)]}

    async def nodes_output(self) -> tuple[str, dict[str, Any]]:
        """The output `nodes()` reads, as printed (a version a reader knows), and what printed it."""
        if not self._has_scontrol_json():
            data = await self._json(["sinfo", "--json"], "sinfo --json", "nodes")
            if not self._has_scontrol_json():
                return "sinfo --json", data
        data = await self._json(["scontrol", "show", "node", "--json"], "scontrol show node", "nodes")
        return "scontrol show node --json", data

    async def node(self, name: str) -> NodeInfo:
        wanted = _node_name(name)
        for node in await self.nodes():
            if node.name == wanted:
                return node
        raise InvalidNodeName(f"sinfo: no node {wanted!r}")

    async def config(self) -> dict[str, str]:
        """The controller's running configuration (`scontrol show config`), key -> value as printed."""
        return parse_config((await self._run(["scontrol", "show", "config"])).stdout)

    async def partitions(self) -> dict[str, dict[str, str]]:
        """Each partition's settings (`scontrol show partition -o`), name -> key -> value as printed,
        read as `nodes` is (read-only: shared)."""
        return await self._partitions.read(_CLUSTER)

    async def _read_partitions(self, _: Sequence[str]) -> dict[str, dict[str, dict[str, str]]]:
        return {_CLUSTER: parse_partitions((await self._run(["scontrol", "show", "partition", "-o"])).stdout)}

    async def drain(self, node: str, reason: str) -> None:
        """Keep new jobs off `node`; a job running there carries on."""
        update = ["scontrol", "update", f"NodeName={_node_name(node)}", "State=DRAIN", f"Reason={_reason(reason)}"]
        await self._run(update)

    async def mark_down(self, node: str, reason: str) -> None:
        """Call `node` DOWN now, as Slurm itself does once SlurmdTimeout passes without an answer:
        Slurm requeues or ends its jobs, and the node stays out until it registers again
        (ReturnToService) or an operator resumes it."""
        update = ["scontrol", "update", f"NodeName={_node_name(node)}", "State=DOWN", f"Reason={_reason(reason)}"]
        await self._run(update)

    async def resume(self, node: str) -> None:
        await self._run(["scontrol", "update", f"NodeName={_node_name(node)}", "State=RESUME"])

    def _has_scontrol_json(self) -> bool:
        return self.format is not None and self.format != slurm_json.LEGACY

    async def _json_reads(self) -> bool:
        """Whether jobs are read as JSON (23.02 on: filters honoured, `scontrol --json`) or as
        squeue's text (22.05). Known from the last JSON output, else from the release."""
        if self.format is not None:
            return self.format != slurm_json.LEGACY
        if self._release is None:
            printed = (await self._run(["scontrol", "--version"])).stdout
            found = re.search(r"(\d+)\.(\d+)", printed)
            if found is None:
                raise SlurmCommandError(f"scontrol --version: no release in {printed.strip()[:80]!r}")
            self._release = (int(found[1]), int(found[2]))
        return self._release >= _JSON_READS_FROM

    async def _json(self, argv: list[str], what: str, key: str) -> dict[str, Any]:
        data = _load((await self._run(argv)).stdout, what, key)
        slurm_json.reader(data, what)  # an unknown version fails here, naming it
        self.format = slurm_json.version(data) or slurm_json.LEGACY
        return data

    async def _run(self, argv: list[str], env: dict[str, str] | None = None) -> CommandResult:
        loop = asyncio.get_running_loop()
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = asyncio.Semaphore(self._concurrency)
        async with turns:  # the command's own timeout starts with its turn
            result = await self.transport.run(argv, timeout=self.timeout, env=env)
        if result.rc != 0:
            raise error_from(result, argv)
        return result


def _text_jobs(text: str, marker: str) -> list[JobInfo]:
    """The jobs of a text read, their excluded nodes unknown (the text's `-O` has no such field)."""
    return [
        JobInfo(**squeue_text.job_fields(record), excluded_nodes=None) for record in squeue_text.records(text, marker)
    ]


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
        raise ValueError("a drain or a down needs a non-empty reason")
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


def _str(value: Any) -> str:
    return "" if value is None else str(value)
