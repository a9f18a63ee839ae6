"""The channel between an incident and the launcher inside its job: a few JSON files
in one directory per job (docs/launcher.md).

    instruction.json   written by Respawn: the newest instruction (incident, generation, action)
    ack-<generation>.json   written by the launcher once it carried that generation out (or could not)
    status.json        written by the launcher on every change of its step
    .go-<n>.json       written by the launcher before it starts prepared step n: its ranks

Every file is written whole or not at all (a temporary file in the same directory,
then a rename), so a reader never sees half of one, and a crash of either side
leaves the channel as it was. Nothing is acted on twice: the launcher carries out
an instruction only when no ack exists for its generation and the generation is
newer than the last one it acted on; `post_instruction` returns the existing ack
instead of writing a generation that has one. So a worker that crashed between
posting and reading the ack posts the same instruction again, and gets the ack.

The directory lies beside the job's output, where its owner may put anything:
links, FIFOs, huge or malformed files. Files are opened relative to the directory
(itself opened without following a link), without following links, without
blocking, and read only when regular and at most MAX_FILE bytes; what is read is
validated strictly (unknown fields, wrong types, out-of-range values are errors).
Writes create a fresh temporary name exclusively (O_EXCL, no link followed) and
rename it over the target, which replaces a planted link rather than writing
through it. These are pure file operations: the activity calls them, the
launcher calls them, neither through Temporal.
"""

import errno
import os
import re
import secrets
import stat
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from respawn.scheduler.hostlist import NODE_NAME_RE

# One definition each, in the wire: Respawn reads what the launcher writes (channel_dir re-exported).
from respawn.wire.launcher import StepState
from respawn.wire.launcher import channel_dir as channel_dir

MAX_FILE = 64 * 1024  # bytes: every message is far smaller
MAX_NODES = 4096  # nodes one message may name
MAX_TEXT = 2000  # characters of a reason or detail
MAX_ACK_SCAN = 10_000  # directory entries looked at when finding the newest ack
INSTRUCTION = "instruction.json"
STATUS = "status.json"
_ACK_NAME = re.compile(r"ack-([1-9][0-9]{0,17})\.json")
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

NodeName = Annotated[str, StringConstraints(pattern=f"^{NODE_NAME_RE.pattern}$")]
IncidentId = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,254}$")]
Generation = Annotated[int, Field(ge=1, le=10**18)]
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT)]
Nodes = Annotated[list[NodeName], Field(max_length=MAX_NODES)]


class ChannelError(OSError):
    """A channel file that is not read or written: a link, not a regular file, too
    large, malformed, or refused by the channel's rules. `reason` says which."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = str(path)
        self.reason = reason


class MalformedMessage(ChannelError):
    """A channel file that is not a valid message (JSON, fields, types, ranges)."""


class StaleGeneration(ChannelError):
    """An instruction older than one already posted or acted on: it would never be carried out."""


class Action(StrEnum):
    RELAUNCH = "relaunch"  # the same nodes, from the last checkpoint
    RELAUNCH_EXCLUDING = "relaunch_excluding"  # without `exclude`, on spares the job holds
    GIVE_UP = "give_up"  # end the job with the step's exit code: the scheduler-level rungs take over


class _Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class Instruction(_Message):
    incident_id: IncidentId
    generation: Generation  # increasing per job, across incidents
    action: Action
    exclude: Nodes = Field(default_factory=list)  # only with relaunch_excluding, and then at least one
    reason: Text = ""

    @model_validator(mode="after")
    def _exclude_matches_action(self) -> Self:
        if (self.action == Action.RELAUNCH_EXCLUDING) != bool(self.exclude):
            raise ValueError("exclude names nodes exactly when the action is relaunch_excluding")
        return self


class Ack(_Message):
    incident_id: IncidentId
    generation: Generation
    done: bool  # carried out; false: could not be (the launcher then gives up)
    detail: Text = ""
    nodes: Nodes = Field(default_factory=list)  # where the new step runs (empty when none started)
    at: datetime


class Status(_Message):
    job_id: int | None = Field(default=None, ge=1)
    state: StepState
    step_nodes: Nodes = Field(default_factory=list)
    spares: Nodes = Field(default_factory=list)  # nodes of the allocation held for a relaunch
    excluded: Nodes = Field(default_factory=list)  # nodes of the allocation an instruction took out of use
    exit_code: int | None = Field(default=None, ge=0, le=255)  # of the last step that ended
    restarts: int = Field(default=0, ge=0)  # in-job relaunches so far
    min_nodes: int | None = Field(default=None, ge=1)  # the fewest its step runs on (--min-nodes); None: all
    generation: int = Field(default=0, ge=0)  # the last instruction acted on
    no_requeue: bool = False  # the step asked not to be requeued (NVRx's exit code 93)
    detail: Text = ""
    waiting_until: datetime | None = None  # while failed: when the launcher gives up without an instruction
    updated_at: datetime


class GoPlan(_Message):
    """What a prepared step's tasks read at the go (task.py reads it with the standard library):
    the new step's nodes, rank 0's first, and its tasks per node."""

    nodes: Annotated[list[NodeName], Field(min_length=1, max_length=MAX_NODES)]
    tasks_per_node: int = Field(ge=1)


M = TypeVar("M", bound=_Message)


def now() -> datetime:
    return datetime.now(UTC)


def ack_name(generation: int) -> str:
    return f"ack-{generation}.json"


# --- what Respawn calls (from an activity) ---


def post_instruction(directory: Path, instruction: Instruction) -> Ack | None:
    """Post `instruction` for the launcher; None when it is posted (or was already).

    When its generation has an ack, nothing is written and that ack is returned:
    the instruction was carried out (or refused) already. Posting the same
    instruction again is harmless. Raises StaleGeneration for a generation older
    than the newest posted or acknowledged one, ChannelError when another
    instruction holds this generation, when the job has no channel (no launcher
    runs in it) or a file is unsafe.
    """
    if (ack := read_ack(directory, instruction.generation)) is not None:
        return ack
    if not _dir_exists(directory):
        raise ChannelError(directory, "no channel: the job runs no launcher")
    newest = last_acked_generation(directory)
    if instruction.generation < newest:
        raise StaleGeneration(directory, f"generation {instruction.generation} is older than acknowledged {newest}")
    try:
        pending = read_instruction(directory)
    except MalformedMessage:
        pending = None  # a damaged instruction is replaced: only Respawn writes this file
    if pending is not None:
        if pending.generation > instruction.generation:
            raise StaleGeneration(
                directory, f"generation {instruction.generation} is older than posted {pending.generation}"
            )
        if pending.generation == instruction.generation and pending != instruction:
            raise ChannelError(
                directory,
                f"generation {instruction.generation} is posted for another instruction "
                f"({pending.incident_id}: {pending.action})",
            )
    _write(directory, INSTRUCTION, instruction)
    return None


def read_ack(directory: Path, generation: int) -> Ack | None:
    """The launcher's ack of `generation`, if it wrote one."""
    return _read(directory, ack_name(generation), Ack)


def read_status(directory: Path) -> Status | None:
    """The launcher's status, if it wrote one (no channel: no launcher, None)."""
    return _read(directory, STATUS, Status)


# --- what the launcher calls ---


def create_channel(directory: Path) -> None:
    """Make the channel directory (its parent must exist); an existing one is kept
    when it is a real directory, and refused when it is a link or anything else."""
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise ChannelError(directory, exc.strerror or str(exc)) from None
    os.close(_open_dir(directory))


def read_instruction(directory: Path) -> Instruction | None:
    return _read(directory, INSTRUCTION, Instruction)


def write_ack(directory: Path, ack: Ack) -> None:
    _write(directory, ack_name(ack.generation), ack)


def write_status(directory: Path, status: Status) -> None:
    _write(directory, STATUS, status)


def write_go_plan(directory: Path, name: str, plan: GoPlan) -> None:
    _write(directory, name, plan)


def last_acked_generation(directory: Path) -> int:
    """The newest generation with an ack file (0: none), from the directory's names alone."""
    try:
        dfd = _open_dir(directory)
    except FileNotFoundError:
        return 0
    newest = 0
    try:
        with os.scandir(dfd) as entries:
            for seen, entry in enumerate(entries):
                if seen >= MAX_ACK_SCAN:
                    raise ChannelError(directory, f"more than {MAX_ACK_SCAN} entries")
                if m := _ACK_NAME.fullmatch(entry.name):
                    newest = max(newest, int(m[1]))
    finally:
        os.close(dfd)
    return newest


def pending_instruction(directory: Path, last_acted: int) -> Instruction | None:
    """The instruction to carry out now, if any: newer than `last_acted` and not acknowledged."""
    instruction = read_instruction(directory)
    if instruction is None or instruction.generation <= last_acted:
        return None
    if read_ack(directory, instruction.generation) is not None:
        return None
    return instruction


# --- files ---


def _dir_exists(directory: Path) -> bool:
    try:
        os.close(_open_dir(directory))
    except FileNotFoundError:
        return False
    return True


def _open_dir(directory: Path) -> int:
    """A descriptor of the channel directory; FileNotFoundError when there is none."""
    try:
        return os.open(directory, _DIR_FLAGS)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ChannelError(directory, "not a directory (or a symbolic link)") from None
        raise ChannelError(directory, exc.strerror or str(exc)) from None


def _read(directory: Path, name: str, model: type[M]) -> M | None:
    path = Path(directory) / name
    try:
        dfd = _open_dir(directory)
    except FileNotFoundError:
        return None
    try:
        try:
            _check(path, os.stat(name, dir_fd=dfd, follow_symlinks=False))  # look first: opening a FIFO has effects
            fd = os.open(name, _READ_FLAGS, dir_fd=dfd)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if isinstance(exc, ChannelError):
                raise
            raise ChannelError(path, exc.strerror or str(exc)) from None
        try:
            _check(path, os.fstat(fd))  # what was opened: it may have been swapped since the look
            data = os.read(fd, MAX_FILE + 1)
        finally:
            os.close(fd)
    finally:
        os.close(dfd)
    if len(data) > MAX_FILE:
        raise ChannelError(path, f"larger than {MAX_FILE} bytes")
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        raise MalformedMessage(path, f"malformed {model.__name__}: {where}: {first['msg']}"[:300]) from None


def _check(path: Path, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise ChannelError(path, "a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise ChannelError(path, "not a regular file")
    if info.st_size > MAX_FILE:
        raise ChannelError(path, f"larger than {MAX_FILE} bytes")


def _write(directory: Path, name: str, message: _Message) -> None:
    data = message.model_dump_json().encode()
    path = Path(directory) / name
    try:
        dfd = _open_dir(directory)
    except FileNotFoundError:
        raise ChannelError(directory, "no channel directory") from None
    tmp = f".{name}.{os.getpid()}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, _WRITE_FLAGS, 0o644, dir_fd=dfd)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # replaces a planted link, never writes through it
    except OSError as exc:
        try:
            os.unlink(tmp, dir_fd=dfd)
        except OSError:
            pass
        raise ChannelError(path, exc.strerror or str(exc)) from None
    finally:
        os.close(dfd)
