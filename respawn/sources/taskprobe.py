"""Which ranks of a job have stopped running: a node-side check behind a small interface.

A rank whose process is stopped (state T: SIGSTOP, a debugger, a frozen
cgroup) while its peers wait for it is the clearest suspect of a hang. Seeing
that needs the node's process table, so it is a check that belongs on the
nodes. Two ways to read it:

- `SlurmStep` asks the nodes through Slurm itself: one `srun --overlap` task per
  node of the job's allocation reads that node's /proc. It works on a real
  cluster wherever Respawn may run srun (through either scheduler transport) and
  needs nothing installed on the nodes but sh and GNU grep.
- `LocalProc` reads the /proc of the machine the detector runs on, which is
  right only where the detector shares the nodes' process table: the sandbox
  (every node is a namespace on one host) or a one-node cluster.

Without either, the hang detector names the suspect from the job's output alone.
"""

import logging
import os
from pathlib import Path
from typing import Protocol

import re2

from respawn.config.cluster import ProgressSettings, StoppedTaskCheck
from respawn.scheduler import hostlist
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.transport import Transport

log = logging.getLogger("respawn.sources.taskprobe")


class StoppedTasks(Protocol):
    async def stopped(self, job_id: int, nodes: list[str]) -> dict[int, str]:
        """Rank -> node of the job's tasks on `nodes` whose processes are stopped."""
        ...


# Run by sh on each node, as the job id's only argument. Constant text: nothing of the
# job's reaches a shell. A task is the job's and this node's by its Slurm environment;
# its state is the letter after the command name in /proc/PID/stat.
NODE_SCRIPT = r"""
for d in /proc/[0-9]*; do
  read -r stat 2>/dev/null < "$d/stat" || continue
  state=${stat##*) }; state=${state%% *}
  case $state in T|t) ;; *) continue ;; esac
  grep -qzx "SLURM_JOB_ID=$1" "$d/environ" 2>/dev/null || continue
  grep -qzx "SLURMD_NODENAME=$SLURMD_NODENAME" "$d/environ" 2>/dev/null || continue
  rank=$(grep -zx 'SLURM_PROCID=[0-9]*' "$d/environ" | tr -d '\0')
  [ -n "$rank" ] && echo "stopped ${rank#SLURM_PROCID=} $SLURMD_NODENAME"
done
exit 0
"""
# The rank is the task's SLURM_PROCID, which the job can set to anything: bounded digits.
_REPORT = re2.compile(r"^stopped (\d{1,9}) (\S{1,253})$")
_RANK_DIGITS = 9


class SlurmStep:
    """The nodes' own /proc, read by a step of the job's allocation that overlaps its tasks."""

    def __init__(self, transport: Transport, timeout: float = 20.0) -> None:
        self._transport, self._timeout = transport, timeout

    async def stopped(self, job_id: int, nodes: list[str]) -> dict[int, str]:
        if not nodes:
            return {}
        argv = [
            "srun",
            f"--jobid={int(job_id)}",
            "--overlap",
            "--quiet",
            f"--nodes={len(nodes)}",
            f"--ntasks={len(nodes)}",
            "--ntasks-per-node=1",
            f"--nodelist={hostlist.compress(nodes)}",
            "--time=1",
            "sh",
            "-c",
            NODE_SCRIPT,
            "respawn-probe",
            str(int(job_id)),
        ]
        try:
            result = await self._transport.run(argv, timeout=self._timeout)
        except SchedulerError as exc:
            log.warning("job %s: stopped-task probe failed: %s", job_id, exc)
            return {}
        if result.rc != 0:
            log.warning("job %s: stopped-task probe exited %s: %s", job_id, result.rc, result.stderr.strip()[-300:])
        found = {}
        for line in result.stdout.splitlines():
            match = _REPORT.match(line.strip())
            # Only what names a node of the job counts: the output is the nodes', not ours.
            if match and match[2] in nodes:
                found[int(match[1])] = match[2]
        return found


class LocalProc:
    """Tasks of the job in this machine's /proc, known by their Slurm environment."""

    def __init__(self, slurm_conf: Path | None) -> None:
        # Two sandboxes on one host number their jobs alike; SLURM_CONF tells them apart.
        self._conf = str(slurm_conf) if slurm_conf is not None else None

    async def stopped(self, job_id: int, nodes: list[str]) -> dict[int, str]:
        found: dict[int, str] = {}
        for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
            if _state(pid) not in ("T", "t"):
                continue
            env = _environ(pid)
            if env.get("SLURM_JOB_ID") != str(job_id) or (self._conf and env.get("SLURM_CONF") != self._conf):
                continue
            rank, node = env.get("SLURM_PROCID", ""), env.get("SLURMD_NODENAME")
            if rank.isascii() and rank.isdigit() and len(rank) <= _RANK_DIGITS and node in nodes:
                found[int(rank)] = node
        return found


def stopped_tasks(settings: ProgressSettings, transport: Transport, slurm_conf: Path | None) -> StoppedTasks | None:
    if settings.stopped_task_check is StoppedTaskCheck.SLURM_STEP:
        return SlurmStep(transport)
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
