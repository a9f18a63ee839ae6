"""The sandbox as a benchmark borrows it: under its lock, resized, and handed back as it was.

`leased(cpus, name)` waits for /tmp/respawn-lab/tests.lock (the lock test sessions take),
brings the stack up if need be and gives every node `cpus` CPUs (`slurm="24.11"`: the 24.11
lab, /tmp/respawn-lab-2411, as `respawn sandbox up --slurm 24.11`, under its own lock). On
the way out, also when the benchmark is interrupted or sent SIGTERM or SIGHUP: a stack it
brought up it takes down (the next `up` starts afresh); one that ran before, it cancels the
jobs named `name` there, purges them from the controller (so the next session does not list
them for MinJobAge) and gives the nodes their normal size again. A SIGKILL leaves the size to
the sandbox's next `up`.

Inside an event loop, `cancel_on_signals()` turns those signals into the cancellation of
the running task, so the measurement stops at its next await, never in the middle of a call.
"""

import asyncio
import fcntl
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from respawn.sandbox import chroot, cluster, procs, stack
from respawn.sandbox import lab as make_lab
from respawn.sandbox.lab import Lab

_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _interrupted(signum: int, frame: object) -> None:
    raise SystemExit(f"interrupted by signal {signum}")


# Whose sandbox: the host's Slurm (respawn/sandbox/stack.py) or the 24.11 lab (chroot.py), each
# with its lab and its own up, down and status.
SANDBOXES = {
    "host": (make_lab, stack.up, stack.down, stack.status),
    "24.11": (chroot.chroot_lab, chroot.up, chroot.down, chroot.status),
}


@contextmanager
def leased(cpus: int, name: str, slurm: str = "host") -> Iterator[Lab]:
    make, up, down, status = SANDBOXES[slurm]
    lab = make()
    lab.root.mkdir(parents=True, exist_ok=True)
    for signum in _SIGNALS:
        signal.signal(signum, _interrupted)
    with open(lab.root / "tests.lock", "w") as lock:
        print("waiting for the sandbox's lock ...", file=sys.stderr, flush=True)
        fcntl.flock(lock, fcntl.LOCK_EX)
        was_running = status(lab)["slurmctld"] == "running"
        try:
            up(lab)
            cluster.resize(lab, cpus)
            yield lab
        finally:
            _restore(lab, name, was_running, down)


def cancel_on_signals() -> None:
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    assert task is not None
    for signum in _SIGNALS:
        loop.add_signal_handler(signum, task.cancel)


def _restore(lab: Lab, name: str, was_running: bool, down: Callable[[Lab], None]) -> None:
    for signum in _SIGNALS:
        signal.signal(signum, signal.SIG_IGN)  # the clean-up runs to its end
    try:
        # A lab this lease brought up goes down: its next `up` starts afresh, no job, normal size.
        if was_running and cluster.slurmctld_pid(lab) is not None:
            procs.run(["scancel", f"--name={name}"], env=lab.env(), timeout=120)
            procs.wait_until(lambda: not _active(lab), 180, interval=1.0)
            cluster.purge(lab)
            cluster.resize(lab, cluster.NORMAL_CPUS)
    finally:
        if not was_running:
            down(lab)
        print("sandbox restored", file=sys.stderr, flush=True)


def _active(lab: Lab) -> bool:
    result = procs.run(["squeue", "--noheader", "--format=%i"], env=lab.env(), timeout=60)
    return result.returncode != 0 or bool(result.stdout.strip())


async def sbatch_many(lab: Lab, argv: list[str], count: int, at_once: int = 6) -> list[int]:
    """`count` jobs submitted with `argv` (an `sbatch --parsable` command line), `at_once`
    sbatch calls at a time; their ids."""
    gate = asyncio.Semaphore(at_once)
    ids: list[int] = []

    async def one() -> None:
        async with gate:
            proc = await asyncio.create_subprocess_exec(
                *argv, env=lab.env(), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
            )
            out, err = await proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"sbatch failed: {err.decode().strip()}")
            ids.append(int(out.decode().split(";")[0]))

    await asyncio.gather(*(one() for _ in range(count)))
    return ids
