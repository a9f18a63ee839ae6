"""Job and node states as types: a base state, and flags kept apart from it.

Slurm keeps one base state per job (PENDING, RUNNING, FAILED, ...) and per node
(idle, allocated, down, ...) plus flags on top (COMPLETING, REQUEUED; DRAIN,
NOT_RESPONDING, ...). How a version prints them differs:

- 22.05 (openapi v0.0.38) prints a job's state as ONE string, and when a flag is
  set that string is the flag instead of the base state (`job_state_string()`
  returns "COMPLETING" for PENDING|COMPLETING). Such a job reads here as
  state COMPLETING (the base is not known) with the flag COMPLETING.
- 23.11 to 24.11 (data_parser v0.0.40-42) print a list holding the base state
  and the flags: `["PENDING", "COMPLETING"]` right after a requeue.

The states are StrEnums, so `job.state == "RUNNING"` and `"DRAIN" in node.flags`
keep working for callers that compare strings; `JobInfo.completing` is the one
question a recovery step asks before it touches a requeued job.
"""

from collections.abc import Iterable
from enum import StrEnum
from typing import TypeVar


class JobState(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    COMPLETED = "COMPLETED"
    CANCELLED = "CANCELLED"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    NODE_FAIL = "NODE_FAIL"
    PREEMPTED = "PREEMPTED"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    # Not a base state: what 22.05 prints in place of the base while the COMPLETING flag is set.
    COMPLETING = "COMPLETING"
    UNKNOWN = "UNKNOWN"  # a name this adapter does not know (a newer Slurm's)


# The base states a job ends in, each set named for the question it answers; every
# other module asks with these, so the answers cannot drift apart.
# An attempt that ended in one of these was interrupted: it needs recovery.
ENDED_BADLY = frozenset(
    {
        JobState.FAILED,
        JobState.NODE_FAIL,
        JobState.OUT_OF_MEMORY,
        JobState.TIMEOUT,
        JobState.BOOT_FAIL,
        JobState.DEADLINE,
        JobState.PREEMPTED,
    }
)
# An attempt that ended in one of these ended as its owner (or an admin) meant.
ENDED_AS_MEANT = frozenset({JobState.COMPLETED, JobState.CANCELLED})
# The job has ended: its end_time is its end, not a projection.
ENDED = ENDED_BADLY | ENDED_AS_MEANT
# Ends that Slurm itself may undo by requeueing the job (a node failure, a preemption,
# when the job allows requeue): a job in one of these may still leave it by itself.
REQUEUED_BY_SLURM = frozenset({JobState.NODE_FAIL, JobState.PREEMPTED})


class JobFlag(StrEnum):
    COMPLETING = "COMPLETING"
    CONFIGURING = "CONFIGURING"
    REQUEUED = "REQUEUED"
    REQUEUE_FED = "REQUEUE_FED"
    REQUEUE_HOLD = "REQUEUE_HOLD"
    RESIZING = "RESIZING"
    SPECIAL_EXIT = "SPECIAL_EXIT"
    STOPPED = "STOPPED"
    REVOKED = "REVOKED"
    RESV_DEL_HOLD = "RESV_DEL_HOLD"
    SIGNALING = "SIGNALING"
    STAGE_OUT = "STAGE_OUT"
    UPDATE_DB = "UPDATE_DB"
    POWER_UP_NODE = "POWER_UP_NODE"
    LAUNCH_FAILED = "LAUNCH_FAILED"
    RECONFIG_FAIL = "RECONFIG_FAIL"
    EXPEDITING = "EXPEDITING"


class NodeState(StrEnum):
    """Lower case, as sinfo prints base states (and as callers already compare them)."""

    IDLE = "idle"
    MIXED = "mixed"
    ALLOCATED = "allocated"
    DOWN = "down"
    ERROR = "error"
    FUTURE = "future"
    UNKNOWN = "unknown"


class NodeFlag(StrEnum):
    DRAIN = "DRAIN"
    NOT_RESPONDING = "NOT_RESPONDING"
    COMPLETING = "COMPLETING"
    FAIL = "FAIL"
    MAINTENANCE = "MAINTENANCE"
    REBOOT_REQUESTED = "REBOOT_REQUESTED"
    REBOOT_ISSUED = "REBOOT_ISSUED"
    RESERVED = "RESERVED"
    PLANNED = "PLANNED"
    CLOUD = "CLOUD"
    DYNAMIC_FUTURE = "DYNAMIC_FUTURE"
    DYNAMIC_NORM = "DYNAMIC_NORM"
    INVALID_REG = "INVALID_REG"
    POWER_DOWN = "POWER_DOWN"
    POWER_UP = "POWER_UP"
    POWERED_DOWN = "POWERED_DOWN"
    POWERING_DOWN = "POWERING_DOWN"
    POWERING_UP = "POWERING_UP"
    POWER_DRAIN = "POWER_DRAIN"
    UNDRAIN = "UNDRAIN"
    BLOCKED = "BLOCKED"
    EXTERNAL = "EXTERNAL"
    RES = "RES"


_JOB_STATES = {s.value for s in JobState}
_JOB_FLAGS = {f.value for f in JobFlag}
_NODE_STATES = {s.value for s in NodeState}
_NODE_FLAGS = {f.value for f in NodeFlag}


def job_state(names: Iterable[str]) -> tuple[JobState, list[JobFlag]]:
    """Base state and flags from the names a version printed (one string, or a list).

    A list with no base state in it (22.05's single flag name) gives COMPLETING when
    the flag is COMPLETING, else UNKNOWN; an unknown name is UNKNOWN, never dropped
    silently into another state.
    """
    upper = [str(n).strip().upper() for n in names if str(n).strip()]
    flags = [JobFlag(n) for n in upper if n in _JOB_FLAGS]
    bases = [n for n in upper if n in _JOB_STATES and n != JobState.COMPLETING]
    if bases:
        return JobState(bases[0]), _unique(flags)
    if JobFlag.COMPLETING in flags:
        return JobState.COMPLETING, _unique(flags)
    return JobState.UNKNOWN, _unique(flags)


def node_state(names: Iterable[str]) -> tuple[NodeState, list[NodeFlag]]:
    """Base state and flags, from a list holding both (24.11: `["IDLE", "DRAIN"]`) or
    the base state followed by the flags (22.05: `state` and `state_flags`).

    The first base-state name is the base; unknown names are ignored, and a list
    without a base state reads as UNKNOWN.
    """
    base: NodeState | None = None
    flags: list[NodeFlag] = []
    for raw in names:
        name = str(raw).strip()
        if base is None and name.lower() in _NODE_STATES:
            base = NodeState(name.lower())
        elif name.upper() in _NODE_FLAGS:
            flags.append(NodeFlag(name.upper()))
    return base or NodeState.UNKNOWN, _unique(flags)


_T = TypeVar("_T")


def _unique(items: list[_T]) -> list[_T]:
    return list(dict.fromkeys(items))
