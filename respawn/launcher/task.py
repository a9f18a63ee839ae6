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

A prepared step (`PY -S task.py --prepared MODULES -- PY [-u] SCRIPT|-m MODULE ARGS...`,
docs/launcher.md "A prepared step") is the next relaunch started ahead: its task imports
MODULES (the framework: what every start of a Python trainer spends its first seconds
on), leaves a ready mark (RESPAWN_PREPARED_MARK, suffixed with the task's rank) and waits.
SIGUSR1 (srun forwards it to every task) makes it run the program in the interpreter
that imported them, as `python` would; any other signal Slurm or srun delivers stands it
down: it exits 0 without a word, so srun prints nothing about a step that never ran.

A prepared step spans the step's nodes and the spares, so that a relaunch on a spare can
use it too. At the go, the launcher's plan (RESPAWN_GO_PLAN: the new step's nodes in rank
order and the tasks per node) says which task is which rank: the Slurm variables a program
reads for its rank and world are rewritten to the new step's (`rank_environment`), and a
task on a node the plan does not name stands down as above. A relaunch started cold has a
plan too, read before the program starts, so that its ranks sit where a prepared one's
would (srun alone ranks by Slurm's node order, whatever order it is given).
"""

import os
import resource
import signal
import stat
import sys
from collections.abc import Callable, Mapping

EXIT_NO_REQUEUE = 93
PREPARED = "--prepared"
# What Slurm and srun deliver to a step's processes; the wrapper outlives them so that it
# can report how its task ended.
_DELIVERED = (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2)
# Python's own dispositions, which an exec'd program would otherwise inherit.
_PYTHON_SETS = (signal.SIGPIPE, signal.SIGXFSZ)
GO = signal.SIGUSR1
# What a prepared step's processes are called until the go (ps, top; /proc/PID/comm).
PREPARED_NAME = "respawn-prepare"  # 15 bytes: the most a name holds
MAX_PLAN = 64 * 1024  # bytes: a plan naming thousands of nodes is far smaller


def main(argv: list[str]) -> None:
    if argv[:1] == [PREPARED]:
        modules, program = prepared_program(argv[1:])
        # Blocked before the fork, so that a signal sent while the task still imports stays
        # pending for it (a blocked signal is kept even while its action is to ignore it).
        signal.pthread_sigmask(signal.SIG_BLOCK, _DELIVERED)
        name = _name(PREPARED_NAME)  # the forked task inherits it
        supervise(lambda: _prepared(modules, program, name))
    else:
        supervise(lambda: _exec(argv))


def prepared_program(argv: list[str]) -> tuple[list[str], list[str]]:
    """`MODULES -- PY [-u] SCRIPT|-m MODULE ARGS...`: the modules to import and the program
    (`-m MODULE` or SCRIPT first, then its arguments, `-u` kept first where given)."""
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit("respawn-task: --prepared MODULES -- PYTHON [-u] SCRIPT|-m MODULE ARGS...")
    modules = [m for m in argv[0].split(",") if m]
    program = argv[3:]  # argv[2] is the interpreter: this one
    if not preparable(argv[2:]):
        raise SystemExit(f"respawn-task: cannot run {' '.join(argv[2:4])!r} prepared")
    return modules, program


def preparable(command: list[str]) -> bool:
    """Whether a prepared step can run `command`: a Python interpreter with at most -u, then a
    script or -m MODULE (anything else runs only as a step of its own)."""
    if not command or not os.path.basename(command[0]).startswith("python"):
        return False
    rest = command[1:]
    if rest[:1] == ["-u"]:
        rest = rest[1:]
    if rest[:1] == ["-m"]:
        return len(rest) >= 2
    return bool(rest) and not rest[0].startswith("-")


def supervise(child: Callable[[], None]) -> None:
    """Run `child` in a forked process and end as it ended."""
    # Blocked across the fork as well: one sent before the task has its dispositions back
    # stays pending for it (blocked, it is kept though ignored) instead of being lost to the
    # inherited SIG_IGN. Each child unblocks them when it is ready: `_exec` before the exec,
    # a prepared task at the go.
    signal.pthread_sigmask(signal.SIG_BLOCK, _DELIVERED)
    for sig in _DELIVERED:
        signal.signal(sig, signal.SIG_IGN)  # before the fork: no moment where the wrapper dies of one
    pid = os.fork()
    if pid == 0:
        for sig in _DELIVERED + _PYTHON_SETS:
            signal.signal(sig, signal.SIG_DFL)
        child()
        sys.exit(0)  # the program returned: exit as Python does, flushing and running atexit
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFEXITED(status):
        code = os.WEXITSTATUS(status)
        if code == EXIT_NO_REQUEUE and (mark := os.environ.get("RESPAWN_NO_REQUEUE_MARK")):
            _touch(mark)  # else the launcher sees srun's code only
        os._exit(code)
    # Killed by a signal: die of the same one, without a core of the wrapper's own.
    killed = os.WTERMSIG(status)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if killed not in (signal.SIGKILL, signal.SIGSTOP):  # those two are never caught nor ignored
        signal.signal(killed, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [killed])
    os.kill(os.getpid(), killed)
    os._exit(128 + killed)  # a signal that cannot end a process (none that kills a task)


def _exec(argv: list[str]) -> None:
    if plan := os.environ.get("RESPAWN_GO_PLAN"):
        # A step started cold after a replacement is ranked as a prepared one would be (srun
        # ranks by Slurm's node order, the plan puts a spare in the replaced node's place).
        _take_rank(plan)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _DELIVERED)  # a signal held since the fork ends the task here
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"respawn-task: {argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)


def _prepared(modules: list[str], program: list[str], name: str) -> None:
    import importlib
    import runpy
    import site

    site.main()  # the wrapper ran with -S; the program gets site-packages as `python` gives them
    for module in modules:
        importlib.import_module(module)
    if mark := os.environ.get("RESPAWN_PREPARED_MARK"):
        _touch(f"{mark}-{os.environ.get('SLURM_PROCID', '0')}")
    if signal.sigwait(_DELIVERED) != GO:
        os._exit(0)  # stood down: the step never ran, and says nothing
    _take_rank(os.environ.get("RESPAWN_GO_PLAN", ""))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _DELIVERED)
    _name(name)  # the rank is called as it would be (its wrapper keeps the prepared name)
    if program[:1] == ["-u"]:
        program = program[1:]
        sys.stdout.reconfigure(write_through=True)  # type: ignore[union-attr]
        sys.stderr.reconfigure(write_through=True)  # type: ignore[union-attr]
    if program[0] == "-m":
        sys.argv = ["-m", *program[2:]]  # run_module puts the module's path first
        sys.path[0] = os.getcwd()  # as `python -m` does
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
    else:
        script = os.path.abspath(program[0])
        sys.argv = program
        sys.path[0] = os.path.dirname(script)  # as `python SCRIPT` does, in place of the wrapper's
        runpy.run_path(script, run_name="__main__")


def _take_rank(path: str) -> None:
    """This task's rank in the plan at `path`, into its environment; a task on a node the plan
    leaves out (excluded, or a spare kept) stands down: it exits 0 and says nothing."""
    try:
        rank = rank_environment(read_plan(path), os.environ)
    except (KeyError, OSError, ValueError) as exc:
        # No rank can be trusted: fail the step (the launcher's ladder goes on) rather than guess.
        os.write(2, f"respawn-task: no go plan to run by: {exc}\n".encode())
        os._exit(1)
    if rank is None:
        os._exit(0)
    os.environ.update(rank)


def read_plan(path: str) -> tuple[list[str], int]:
    """The go plan the launcher wrote: the new step's nodes in rank order, and its tasks per
    node. The channel directory is the job owner's: no link followed, a regular file, small."""
    import json

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_PLAN:
            raise ValueError(f"{path}: not a regular file of at most {MAX_PLAN} bytes")
        plan = json.loads(os.read(fd, MAX_PLAN + 1))
    finally:
        os.close(fd)
    if not isinstance(plan, dict):
        raise ValueError(f"{path}: not a JSON object")
    nodes, per_node = plan.get("nodes"), plan.get("tasks_per_node")
    if not (isinstance(nodes, list) and nodes and all(isinstance(n, str) and n for n in nodes)):
        raise ValueError(f"{path}: nodes must be a list of node names")
    if len(set(nodes)) != len(nodes) or type(per_node) is not int or per_node < 1:
        raise ValueError(f"{path}: nodes must be distinct and tasks_per_node a positive integer")
    return nodes, per_node


def rank_environment(plan: tuple[list[str], int], environ: Mapping[str, str]) -> dict[str, str] | None:
    """The Slurm variables of this task's rank in the step `plan` describes, as srun would have
    set them for a step launched on those nodes (rank = the node's place in the plan times the
    tasks per node, plus the task's local id); None where this task has no rank there."""
    nodes, per_node = plan
    node, local = environ["SLURMD_NODENAME"], int(environ.get("SLURM_LOCALID", "0"))
    if node not in nodes or local >= per_node:
        return None
    index, tasks = nodes.index(node), len(nodes) * per_node
    per_node_text = f"{per_node}(x{len(nodes)})" if len(nodes) > 1 else str(per_node)
    return {
        "SLURM_PROCID": str(index * per_node + local),
        "SLURM_NODEID": str(index),
        "SLURM_GTIDS": ",".join(str(index * per_node + i) for i in range(per_node)),
        **dict.fromkeys(("SLURM_NTASKS", "SLURM_NPROCS", "SLURM_STEP_NUM_TASKS"), str(tasks)),
        **dict.fromkeys(("SLURM_NNODES", "SLURM_STEP_NUM_NODES"), str(len(nodes))),
        # In rank order, rank 0's node first (what a program takes its master address from).
        **dict.fromkeys(("SLURM_NODELIST", "SLURM_STEP_NODELIST"), ",".join(nodes)),
        **dict.fromkeys(("SLURM_TASKS_PER_NODE", "SLURM_STEP_TASKS_PER_NODE"), per_node_text),
    }


def _name(name: str) -> str:
    """Call this process `name` (at most 15 bytes: the kernel's limit); its name before."""
    try:
        with open("/proc/self/comm", "r+") as comm:
            before = comm.read().strip()
            comm.seek(0)
            comm.write(name[:15])
        return before
    except OSError:  # not Linux, or no /proc: only the name is lost
        return name


def _touch(path: str) -> None:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, 0o600))
    except OSError:
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
