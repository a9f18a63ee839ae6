"""Each task of the launcher's step runs under this wrapper, as a script of its own
(`python -S task.py CMD...`: no imports beyond the standard library, started once per task).

It leaves a mark when its task exits 93 (NVRx's "do not requeue"): with
--kill-on-bad-exit the other tasks are killed, and srun reports the highest exit
code (143), not the one that ended the step. The mark's path is in
RESPAWN_NO_REQUEUE_MARK, in the channel directory, which every node must reach.

Otherwise it is invisible: the task's own output goes where it would, the wrapper
prints nothing, and it ends the way its task ended, with the same exit code or killed
by the same signal, so srun reports the task exactly as without the launcher ("task 1:
Killed", not "Exited with exit code 137" after a shell's "Killed": what Respawn reads
to attribute the failure must not change under the launcher). A signal the step sends
reaches the task directly (Slurm signals every process of the step), so the wrapper
ignores those it would otherwise die of, and never forwards any.
"""

import os
import resource
import signal
import sys

EXIT_NO_REQUEUE = 93
# What Slurm and srun deliver to a step's processes; the wrapper outlives them so that it
# can report how its task ended.
_DELIVERED = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
# Python's own dispositions, which an exec'd program would otherwise inherit.
_PYTHON_SETS = (signal.SIGPIPE, signal.SIGXFSZ)


def main(argv: list[str]) -> None:
    for sig in _DELIVERED:
        signal.signal(sig, signal.SIG_IGN)  # before the fork: no moment where the wrapper dies of one
    pid = os.fork()
    if pid == 0:
        for sig in _DELIVERED + _PYTHON_SETS:
            signal.signal(sig, signal.SIG_DFL)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(2, f"respawn-task: {argv[0]}: {exc.strerror}\n".encode())
            os._exit(127)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        if code == EXIT_NO_REQUEUE and (mark := os.environ.get("RESPAWN_NO_REQUEUE_MARK")):
            try:
                os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
            except OSError:
                pass  # the launcher then sees srun's code only
        os._exit(code)
    # Killed by a signal: die of the same one, without a core of the wrapper's own.
    killed = os.WTERMSIG(status)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if killed not in (signal.SIGKILL, signal.SIGSTOP):  # those two are never caught nor ignored
        signal.signal(killed, signal.SIG_DFL)
    os.kill(os.getpid(), killed)
    os._exit(128 + killed)  # a signal that cannot end a process (none that kills a task)


if __name__ == "__main__":
    main(sys.argv[1:])
