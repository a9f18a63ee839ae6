"""Jobs from squeue's text output, read strictly: every version's listing and one-job reads.

`squeue --json` prints 3 KB per job on 22.05 and 6 KB on 24.11, every field Slurm has; 22.05's
also ignores every filter, so reading one job through it reads the whole cluster. The text
output honours `-j` and prints only the fields asked for.
Text is where job-owner text (names, comments, folders) could pass for
structure; it cannot here: every field ends with a marker drawn at random for
this one call (`-O field:0<marker>`: width 0 prints the whole value), so a value
cannot hold one, and a record whose fields do not split exactly is an error,
never a guess. Times are printed as epoch seconds (SLURM_TIME_FORMAT=%s), not in
the Slurm host's local time.

What the text gives differs from the JSON in three ways. A job's state is one
name, a flag in place of the base state while one is set (states.py); the adapter
reads such jobs again as JSON where the version's filters allow it (slurm.py).
squeue prints a job's state description in place of its reason when it has one:
the one description Respawn asks about, `scontrol requeuehold`'s "job requeued in
held state", is always set with the reason JobHeldUser (job_mgr.c), so that reason
is restored; any other description is kept as the description with the reason
unknown (""). And 22.05's `-O` has no field for a job's excluded nodes: a listing
leaves them unknown (None), and `excluded_command` reads them with `-o %A|%x` (ids
and node names only, no job-owner text), for the jobs named.
"""

import secrets
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from respawn.scheduler.errors import SlurmCommandError
from respawn.scheduler.slurm_json.common import expand, gpus
from respawn.scheduler.states import ENDED, job_state

ENV = {"SLURM_TIME_FORMAT": "%s"}
# Between a record's fields once read: no value holds a NUL (Slurm prints C strings), and
# unlike the marker it is the same in every call's records.
SEP = "\0"
REQUEUE_HELD = "job requeued in held state"  # requeuehold's description, with the reason JobHeldUser
_UNSET = frozenset({"", "(null)", "N/A", "n/a", "None", "NONE", "Unknown"})


def _str(value: str) -> str:
    return "" if value == "(null)" else value


def _int(value: str) -> int | None:
    value = value.strip()
    return int(value) if value.isdigit() else None


def _time(value: str) -> datetime | None:
    seconds = _int(value)
    return datetime.fromtimestamp(seconds, tz=UTC) if seconds else None


def _exit_status(value: str) -> tuple[int | None, int | None]:
    """(exit code, signal) of an ended job. 22.05 prints the raw wait status (the code in bits
    8-15, the signal in 0-6, as its JSON does); 24.11 prints "code:signal"."""
    code, colon, signal = value.strip().partition(":")
    if colon:
        return _int(code), _int(signal) or None
    status = _int(code)
    if status is None:
        return None, None
    return (status >> 8) & 0xFF, (status & 0x7F) or None


# squeue -O field -> how its text reads; the order is the output's.
_FIELDS: tuple[tuple[str, Callable[[str], Any]], ...] = (
    ("jobid", _int),
    ("arrayjobid", _int),
    ("arraytaskid", _int),
    ("state", str),
    ("reason", str),
    ("restartcnt", _int),
    ("exit_code", _exit_status),
    ("nodelist", expand),
    ("batchhost", lambda v: None if v in _UNSET else v),
    ("userid", _int),
    ("username", _str),
    ("account", _str),
    ("partition", _str),
    ("requeue", lambda v: v.strip() == "1"),
    ("numtasks", _int),
    ("tres-alloc", gpus),
    ("submittime", _time),
    ("starttime", _time),
    ("endtime", _time),
    # Job-owner text last: what it holds cannot matter to the fields above, markers apart.
    ("name", _str),
    ("workdir", _str),
    ("comment", _str),
)


def new_marker() -> str:
    """A field marker no job can have written: 128 random bits, after a letter (a digit
    right after `:0` would be read as part of the field width)."""
    return "Z" + secrets.token_hex(16)


def command(marker: str, job_ids: int | Sequence[int] | None = None) -> list[str]:
    """squeue argv for every job the controller knows (finished ones within MinJobAge
    included), or for the jobs named (one: the controller is asked for that job alone, and
    an unknown one fails "Invalid job id specified"; several: those listed are printed)."""
    fields = ",".join(f"{name}:0{marker}" for name, _ in _FIELDS)
    wanted = [job_ids] if isinstance(job_ids, int) else list(job_ids or [])
    some = ["--jobs", ",".join(map(str, wanted))] if wanted else []
    return ["squeue", "--noheader", "--states=all", *some, f"--Format={fields}"]


def records(text: str, marker: str) -> list[str]:
    """Each job's record as printed by `command(marker)`: its field values joined by SEP
    (in place of this call's marker, so that a record reads alike from one call to the
    next). SlurmCommandError when the output does not split into records of exactly its
    fields (a truncated or foreign output).

    A record ends with its last field's marker and a newline. Split there first (one string
    per job: a listing's unchanged records are compared, not split into fields); a value that
    begins with a newline (a job's name can) splits a record in two there, which the count
    of separators in each part always shows, and then the output is split field by field."""
    if SEP in text:
        raise SlurmCommandError("squeue: a NUL in the output")  # never in a C string: not squeue's
    text = text.replace(marker, SEP)
    width = len(_FIELDS)
    found = text.split(SEP + "\n")
    if found.pop().strip():
        raise SlurmCommandError("squeue: the output does not end with a record")
    if all(record.count(SEP) == width - 1 for record in found):
        return found
    values = text.split(SEP)
    tail = values.pop()  # after the last record's last marker: its newline
    if tail.strip() or len(values) % width:
        raise SlurmCommandError(f"squeue: {len(values)} fields do not make records of {width}")
    rows = list(zip(*[iter(values)] * width, strict=True))
    if any(not row[0].startswith("\n") for row in rows[1:]):
        raise SlurmCommandError("squeue: a record does not begin on a new line")
    return [SEP.join((row[0].removeprefix("\n"), *row[1:])) if i else SEP.join(row) for i, row in enumerate(rows)]


def job_id(record: str) -> str:
    """The record's job id as printed: what tells one job's record from another's."""
    return record.partition(SEP)[0]


def job_fields(record: str) -> dict[str, Any]:
    """JobInfo fields of one record (excluded nodes apart: see `excluded_command`)."""
    return _job(dict(zip((name for name, _ in _FIELDS), record.split(SEP), strict=True)))


def _job(raw: dict[str, str]) -> dict[str, Any]:
    read = {name: decode(raw[name]) for name, decode in _FIELDS}
    job_id = read["jobid"]
    if not job_id:
        raise SlurmCommandError(f"squeue: a record without a job id ({raw['jobid'][:40]!r})")
    state, flags = job_state([raw["state"]])
    reason, description = _reason(raw["reason"])
    exit_code, exit_signal = read["exit_code"]
    array_task = read["arraytaskid"]
    array_job = read["arrayjobid"] if raw["arraytaskid"] not in _UNSET else None
    return {
        "job_id": job_id,
        "name": read["name"],
        "user": read["username"],
        "user_id": read["userid"],
        "account": read["account"],
        "state": state,
        "flags": flags,
        "state_reason": reason,
        "state_description": description,
        "restart_count": read["restartcnt"] or 0,
        "tasks": read["numtasks"],
        "gpus": read["tres-alloc"],
        "nodes": read["nodelist"],
        "batch_host": read["batchhost"],
        "comment": read["comment"],
        "exit_code": exit_code,
        "exit_signal": exit_signal,
        "workdir": read["workdir"],
        "requeue": read["requeue"],
        "partition": read["partition"],
        "submit_time": read["submittime"],
        "start_time": read["starttime"],
        "end_time": read["endtime"] if state in ENDED else None,
        "array_job_id": array_job or None,
        "array_task_id": array_task if array_job else None,
    }


def _reason(text: str) -> tuple[str, str]:
    """(reason, description) from squeue's one column: a description where the job has one."""
    if text == REQUEUE_HELD:
        return "JobHeldUser", text
    if " " in text or "," in text or ":" in text:
        return "", text
    return _str(text), ""


def excluded_command(job_ids: Sequence[int]) -> list[str]:
    """The excluded nodes of the jobs named, a line each: the job's id (`%A`: an array's task by
    its own id, as `-O jobid` prints it) and its hostlist (`%x`: empty for none). One job named
    alone that the controller does not know fails "Invalid job id specified"; of several, those
    it knows are printed."""
    return ["squeue", "--noheader", "--states=all", "--jobs", ",".join(map(str, job_ids)), "--format=%A|%x"]


def parse_excluded(text: str) -> dict[int, list[str]]:
    """`excluded_command`'s output: job id -> its excluded nodes (names from slurm.conf, no
    job-owner text). SlurmCommandError for a line that is not an id and a hostlist."""
    excluded: dict[int, list[str]] = {}
    for line in text.splitlines():
        job_id, sep, nodes = line.strip().partition("|")
        if not sep or not job_id.isdigit() or " " in nodes:
            raise SlurmCommandError(f"squeue: not a job's excluded nodes: {line[:80]!r}")
        excluded[int(job_id)] = expand(nodes)
    return excluded
