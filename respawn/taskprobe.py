"""Which ranks of a job have stopped running: a node-side check behind a small interface.

A rank whose process is stopped (state T: SIGSTOP, a debugger, a frozen
cgroup) while its peers wait for it is the clearest suspect of a hang. Seeing
that needs the node's process table, so it is a check that belongs on the
nodes. `LocalProc` reads the /proc of the machine the detector runs on, which is
right only where the detector shares the nodes' process table: the sandbox
(every node is a namespace on one host) or a one-node cluster. On a real cluster
the same check would run on each node (an agent, or `scontrol listpids` and
/proc over the scheduler's ssh transport); that is not built, and without it the
hang detector names the suspect from the job's output alone.
"""

import os
from pathlib import Path
from typing import Protocol

from respawn.rhythm import ProgressSettings, StoppedTaskCheck


class StoppedTasks(Protocol):
    def stopped(self, job_id: int) -> dict[int, str]:
        """Rank -> node of the job's tasks whose processes are stopped."""
        ...


class LocalProc:
    """Tasks of the job in this machine's /proc, known by their Slurm environment."""

    def __init__(self, slurm_conf: Path | None) -> None:
        # Two sandboxes on one host number their jobs alike; SLURM_CONF tells them apart.
        self._conf = str(slurm_conf) if slurm_conf is not None else None

    def stopped(self, job_id: int) -> dict[int, str]:
        found: dict[int, str] = {}
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            if _state(pid) not in ("T", "t"):
                continue
            env = _environ(pid)
            if env.get("SLURM_JOB_ID") != str(job_id) or (self._conf and env.get("SLURM_CONF") != self._conf):
                continue
            rank, node = env.get("SLURM_PROCID", ""), env.get("SLURMD_NODENAME")
            if rank.isdigit() and node:
                found[int(rank)] = node
        return found


def stopped_tasks(settings: ProgressSettings, slurm_conf: Path | None) -> StoppedTasks | None:
    if settings.stopped_task_check is StoppedTaskCheck.LOCAL_PROC:
        return LocalProc(slurm_conf)
    return None


def _state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # gone, or not ours to read
        return ""
    # The state letter follows the command name, which may itself contain ") ".
    return stat[stat.rindex(")") + 2]


def _environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}
