"""The launcher: runs the job's training step with `srun` inside the allocation,
keeps the channel's status current, and carries out the incident's instructions
(docs/launcher.md).

The step runs on the allocation's nodes minus the last `spares` of them. When
it ends:

- exit 0: the job succeeded, the launcher exits 0;
- exit 93 (NVRx's "do not requeue"): the launcher gives up at once;
- anything else: status `failed`, then up to `wait_s` for an instruction:
  `relaunch` (the same nodes: the trainer resumes from its last checkpoint),
  `relaunch_excluding` (the excluded nodes replaced by spares; too few spares:
  on fewer nodes down to `min_nodes` where the job says it can shrink, else ack
  done=false and give up) or `give_up`. No instruction in time: give up.

Giving up exits with the step's exit code, so the job ends as it would have
without the launcher and the scheduler-level rungs take over. With `prepare`
(modules to import, e.g. torch), the next relaunch is started ahead as a prepared step
on the step's nodes and the spares that has imported them and waits (task.py): a relaunch
in place, on a spare or on fewer nodes then starts it, its go plan handing each task its
rank in the new step, skipping srun's launch and the framework's import. An instruction
that arrives while the step still runs (a hang: no exit to wait for) stops the
step first. SIGTERM or SIGINT (scancel, a requeue) is forwarded to the step and
the launcher exits once it is gone. Each relaunch is acknowledged once its new
step has started.
"""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import TextIO

from respawn.launcher import channel, task
from respawn.launcher.channel import Ack, Action, ChannelError, GoPlan, Instruction, Status, StepState

EXIT_NO_REQUEUE = task.EXIT_NO_REQUEUE  # nvidia-resiliency-ext: the job asks not to be requeued
# Each task runs under this wrapper (its docstring says why): it marks a 93 and is otherwise invisible.
TASK_WRAPPER = Path(task.__file__)
STOP_GRACE_S = 10.0  # from SIGTERM to SIGKILL when the launcher stops its step
# A prepared step is started this long after a step starts, out of the way of its first
# seconds (its own imports), and given this long to stand down before it is killed.
PREPARE_AFTER_S = 1.0
STAND_DOWN_S = 5.0
# A relaunch waits this long for a prepared step still importing: it is further along than a
# step started now would be.
READY_WAIT_S = 30.0
# A failed step's launcher reads the channel this often for its instruction: the incident
# waits on it, and only for the few seconds of an incident (a running step's poll is poll_s).
INSTRUCTION_POLL_S = 0.05
SINFO_TIMEOUT_S = 5.0  # the state of the nodes a prepared step spans beyond the new step's


class _Prepared:
    """The next relaunch, started ahead on `nodes` (the step's and the spares): ready once
    every task marked itself; its tasks learn their ranks from the plan named `plan`."""

    def __init__(self, proc: "subprocess.Popen[bytes]", nodes: list[str], mark: Path, tasks: int, plan: str) -> None:
        self.proc, self.nodes, self.mark, self.tasks, self.plan = proc, nodes, mark, tasks, plan

    def ready(self) -> bool:
        return all(os.path.lexists(f"{self.mark}-{rank}") for rank in range(self.tasks))


class Launcher:
    def __init__(
        self,
        command: Sequence[str],
        *,
        nodes: Sequence[str],
        spares: int,
        channel_dir: Path,
        wait_s: float,
        job_id: int | None = None,
        tasks_per_node: int = 1,
        srun: str = "srun",
        poll_s: float = 0.2,
        log: TextIO = sys.stderr,
        clock: Callable[[], float] = time.monotonic,
        prepare: Sequence[str] = (),
        min_nodes: int | None = None,
    ) -> None:
        if not command:
            raise ValueError("no command to run")
        if not 0 <= spares < len(nodes):
            raise ValueError(f"{spares} spare(s) leave no node of {len(nodes)} for the step")
        self.command = list(command)
        self.step_nodes = list(nodes[: len(nodes) - spares])
        # The fewest nodes the job says its step can run on (it can shrink); None: exactly as many as it started on.
        self.min_nodes = len(self.step_nodes) if min_nodes is None else min_nodes
        if not 1 <= self.min_nodes <= len(self.step_nodes):
            raise ValueError(f"the step runs on {len(self.step_nodes)} node(s): it cannot need {self.min_nodes}")
        self.spares = list(nodes[len(nodes) - spares :])
        self.excluded: list[str] = []
        self.channel_dir = channel_dir
        self.wait_s = wait_s
        self.job_id = job_id
        self.tasks_per_node = tasks_per_node
        self.srun = srun
        self.poll_s = poll_s
        self._log = log
        self._clock = clock
        self.restarts = 0
        self.generation = 0  # the last instruction acted on
        self.exit_code: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._signal: int | None = None
        # A prepared step only for a command it can run (task.preparable): else every relaunch is cold.
        self.prepare = list(prepare) if prepare and task.preparable(self.command) else []
        if prepare and not self.prepare:
            self._say(f"cannot prepare {' '.join(self.command[:2])!r} ahead: relaunches start a step of their own")
        self._prepared: _Prepared | None = None
        self._leaving: list[subprocess.Popen[bytes]] = []  # prepared steps told to go, not yet reaped
        self._started_at = 0.0

    # --- the loop ---

    def run(self) -> int:
        """Run the step until it succeeds or the launcher gives up; the job's exit code."""
        channel.create_channel(self.channel_dir)
        self.generation = self._baseline()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, self._on_signal)
        try:
            self._start()
            return self._loop()
        finally:
            self._gone()  # whatever ends the launcher: a prepared step never outlives it

    def _loop(self) -> int:
        while True:
            code, instruction = self._wait_step()
            self.exit_code = code
            if self._signal is not None:
                return self._give_up(code, f"stopped by signal {self._signal}", 128 + self._signal)
            if instruction is None:
                if code == 0:
                    self._status(StepState.SUCCEEDED, "the step succeeded")
                    return 0
                if code == EXIT_NO_REQUEUE or os.path.lexists(self._no_requeue_mark()):
                    self.exit_code = code = EXIT_NO_REQUEUE
                    return self._give_up(code, "the step exited 93: it asks not to be requeued", no_requeue=True)
                instruction = self._await_instruction(code)
                if self._signal is not None:
                    return self._give_up(code, f"stopped by signal {self._signal}", 128 + self._signal)
                if instruction is None:
                    return self._give_up(code, f"no instruction within {self.wait_s:g} s")
            exit_now = self._carry_out(instruction, code)
            if exit_now is not None:
                return exit_now

    def _carry_out(self, instruction: Instruction, code: int) -> int | None:
        """Act on `instruction`; the exit code when the launcher gives up, None after a relaunch."""
        self.generation = instruction.generation  # before acting: never the same generation twice
        self._say(
            f"instruction {instruction.generation} from {instruction.incident_id}: {instruction.action}"
            + (f" {','.join(instruction.exclude)}" if instruction.exclude else "")
        )
        if instruction.action == Action.GIVE_UP:
            self._ack(instruction, True, "giving up: the job ends with the step's exit code")
            return self._give_up(code, f"told to give up by {instruction.incident_id}")
        if instruction.action == Action.RELAUNCH_EXCLUDING:
            refused = self._exclude(instruction.exclude)
            if refused:
                self._ack(instruction, False, f"{refused}; giving up")
                return self._give_up(code, refused)
        self.restarts += 1
        try:
            prepared = self._start()
        except OSError as exc:
            self._ack(instruction, False, f"could not start the step: {exc}; giving up")
            return self._give_up(code, f"could not start the step: {exc}")
        detail = f"relaunched on {','.join(self.step_nodes)}" + (" from the prepared step" if prepared else "")
        self._ack(instruction, True, detail, self.step_nodes)
        return None

    def _exclude(self, nodes: Sequence[str]) -> str | None:
        """Replace `nodes` of the step with spares; why not, when it cannot."""
        unknown = [n for n in nodes if n not in self.step_nodes and n not in self.spares]
        if unknown:
            return f"not in this job's allocation: {','.join(unknown)}"
        spares = [n for n in self.spares if n not in nodes]
        out = [n for n in self.step_nodes if n in nodes]
        if len(self.step_nodes) - len(out) + len(spares) < self.min_nodes:
            return f"{len(out)} node(s) to replace and {len(spares)} spare(s) left (the step needs {self.min_nodes})"
        # Each excluded node's ranks go to a spare while one is left, else the step shrinks.
        replaced = [spares.pop(0) if n in nodes and spares else n for n in self.step_nodes]
        self.step_nodes = [n for n in replaced if n not in nodes]
        self.spares = spares
        self.excluded += [n for n in nodes if n not in self.excluded]
        return None

    def _give_up(self, code: int, why: str, exit_code: int | None = None, *, no_requeue: bool = False) -> int:
        self._status(StepState.GIVING_UP, why, no_requeue=no_requeue)
        self._say(f"giving up: {why}")
        # A job whose launcher gives up must not end COMPLETED.
        return exit_code if exit_code is not None else (code or 1)

    # --- the step ---

    def srun_argv(self, nodes: Sequence[str], *, prepared: bool = False) -> list[str]:
        n = len(nodes)
        if prepared:
            # Beside the running step, on the same CPUs; in the command's own interpreter, the one
            # that imports the modules and then runs the program.
            wrapper = [
                "--overlap",
                self.command[0],
                "-S",
                str(TASK_WRAPPER),
                task.PREPARED,
                ",".join(self.prepare),
                "--",
            ]
        else:
            wrapper = [sys.executable, "-S", str(TASK_WRAPPER)]  # the standard library only: a quick start
        return [
            self.srun,
            f"--nodes={n}",
            f"--ntasks={n * self.tasks_per_node}",
            f"--ntasks-per-node={self.tasks_per_node}",
            f"--nodelist={','.join(nodes)}",
            # One rank dying ends the step at once instead of leaving its peers blocked in a collective.
            "--kill-on-bad-exit=1",
            *wrapper,
            *self.command,
        ]

    def _no_requeue_mark(self, restarts: int | None = None) -> Path:
        return self.channel_dir / f".no-requeue-{self.restarts if restarts is None else restarts}"

    def _start(self) -> bool:
        """Start the step: the prepared one where it is ready on these nodes (True), else one of its own."""
        self._status(StepState.STARTING, f"starting the step on {','.join(self.step_nodes)}")
        mark = self._no_requeue_mark()
        mark.unlink(missing_ok=True)
        prepared, self._prepared = self._prepared, None
        if prepared is not None and self._go(prepared):
            self._proc, how, warm = prepared.proc, "started from the prepared step", True
        else:
            warm = False
            if prepared is not None:
                self._stand_down(prepared)
            env = {**os.environ, "RESPAWN_NO_REQUEUE_MARK": str(mark)}
            if self.restarts and (plan := self._cold_plan()) is not None:
                env["RESPAWN_GO_PLAN"] = plan
            argv = self.srun_argv(self.step_nodes)
            self._proc, how = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env), "started"
        self._started_at = self._clock()
        self._say(f"step {how} on {','.join(self.step_nodes)} (in-job restarts {self.restarts})")
        self._status(StepState.RUNNING, f"running on {','.join(self.step_nodes)}")
        return warm

    def _go(self, prepared: _Prepared) -> bool:
        """Start the step from `prepared`, its plan written first; False where it cannot serve.

        It spans nodes the new step may not use (a spare kept, the excluded node): the step
        ends if one of those is lost, as every step of a node does, so none may be lost now.
        """
        if not set(self.step_nodes) <= set(prepared.nodes) or not self._until_ready(prepared):
            return False
        if (unusable := self._unusable([n for n in prepared.nodes if n not in self.step_nodes])) is not None:
            self._say(f"not starting the prepared step: {unusable}")
            return False
        try:
            channel.write_go_plan(
                self.channel_dir, prepared.plan, GoPlan(nodes=self.step_nodes, tasks_per_node=self.tasks_per_node)
            )
        except ChannelError as exc:
            self._say(f"channel: {exc}")
            return False
        prepared.proc.send_signal(task.GO)  # srun forwards it to every task
        return True

    def _cold_plan(self) -> str | None:
        """The plan of a relaunch started as a step of its own: its tasks take the ranks a
        prepared step's would (a spare in the replaced node's place, rank 0 where it was),
        not srun's, which follow Slurm's node order. Its path; None when it cannot be
        written (the tasks then keep srun's ranks: a valid layout, only not the same one)."""
        name = f".go-cold-{self.restarts}.json"
        try:
            channel.write_go_plan(
                self.channel_dir, name, GoPlan(nodes=self.step_nodes, tasks_per_node=self.tasks_per_node)
            )
        except ChannelError as exc:
            self._say(f"channel: {exc}; the step is ranked by Slurm's node order")
            return None
        return str(self.channel_dir / name)

    def _unusable(self, nodes: list[str]) -> str | None:
        """Why a step spanning `nodes` could be ended by one of them (lost, or Slurm cannot
        tell), from one `sinfo`; None when every one responds and is up."""
        if not nodes:
            return None
        sinfo = os.path.join(os.path.dirname(self.srun), "sinfo")  # beside the srun this launcher runs
        argv = [sinfo, "--noheader", "--Node", f"--nodes={','.join(nodes)}", "--format=%N %T"]
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=SINFO_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"sinfo: {exc}"
        if result.returncode != 0:
            return f"sinfo exited {result.returncode}: {result.stderr.strip()[:200]}"
        states = dict(line.split(None, 1) for line in result.stdout.splitlines() if len(line.split()) == 2)
        lost = [f"{n} {states.get(n, 'not listed')}" for n in nodes if _lost(states.get(n))]
        return f"nodes not up: {', '.join(lost)}" if lost else None

    def _until_ready(self, prepared: _Prepared) -> bool:
        deadline = self._clock() + READY_WAIT_S
        while not prepared.ready():
            if prepared.proc.poll() is not None or self._clock() >= deadline or self._signal is not None:
                return False
            time.sleep(0.02)  # its tasks' marks, written by other processes
        return True

    def _prepare(self) -> None:
        """Start the next relaunch ahead, for the restart after this one."""
        mark = self.channel_dir / f".prepared-{self.restarts + 1}"
        for stale in self.channel_dir.glob(f"{mark.name}-*"):
            stale.unlink(missing_ok=True)
        plan = f".go-{self.restarts + 1}.json"
        (self.channel_dir / plan).unlink(missing_ok=True)
        next_mark = self._no_requeue_mark(self.restarts + 1)
        next_mark.unlink(missing_ok=True)
        env = {
            **os.environ,
            "RESPAWN_NO_REQUEUE_MARK": str(next_mark),
            "RESPAWN_PREPARED_MARK": str(mark),
            "RESPAWN_GO_PLAN": str(self.channel_dir / plan),
        }
        nodes = self.step_nodes + self.spares  # wherever the next relaunch may run
        proc = subprocess.Popen(self.srun_argv(nodes, prepared=True), stdin=subprocess.DEVNULL, env=env)
        self._prepared = _Prepared(proc, nodes, mark, len(nodes) * self.tasks_per_node, plan)

    def _stand_down(self, prepared: _Prepared) -> None:
        """Tell a prepared step that will not run to go (its tasks exit 0 and say nothing),
        without waiting: it overlaps every step, so the next one need not wait for it."""
        if prepared is self._prepared:
            self._prepared = None
        if prepared.proc.poll() is None:
            prepared.proc.send_signal(signal.SIGUSR2)
        self._leaving.append(prepared.proc)

    def _gone(self) -> None:
        """Every prepared step ended: the one kept, and those told to go."""
        if self._prepared is not None:
            self._stand_down(self._prepared)
        deadline = self._clock() + STAND_DOWN_S
        for proc in self._leaving:
            try:
                proc.wait(timeout=max(0.0, deadline - self._clock()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._leaving.clear()

    def _wait_step(self) -> tuple[int, Instruction | None]:
        """The step's exit code, and the instruction that stopped it if one did."""
        assert self._proc is not None
        while True:
            try:
                return _exit_code(self._proc.wait(timeout=self.poll_s)), None
            except subprocess.TimeoutExpired:
                pass
            if self.prepare and self._prepared is None and self._clock() - self._started_at >= PREPARE_AFTER_S:
                self._prepare()
            self._leaving = [proc for proc in self._leaving if proc.poll() is None]
            if self._signal is not None:
                return self._stop_step(), None
            if (instruction := self._pending()) is not None:
                self._say(f"instruction {instruction.generation} while the step runs: stopping it")
                return self._stop_step(), instruction

    def _stop_step(self) -> int:
        assert self._proc is not None
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
        try:
            return _exit_code(self._proc.wait(timeout=STOP_GRACE_S))
        except subprocess.TimeoutExpired:
            self._proc.kill()
            return _exit_code(self._proc.wait())

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self._signal = signum
        if self._proc is not None and self._proc.poll() is None:
            self._proc.send_signal(signum)

    # --- the channel ---

    def _baseline(self) -> int:
        """The generation to act after. An instruction already there when the launcher
        starts was posted to an earlier run of this job: acknowledged as not done."""
        newest = channel.last_acked_generation(self.channel_dir)
        try:
            stale = channel.pending_instruction(self.channel_dir, newest)
        except ChannelError as exc:
            self._say(f"channel: {exc}")
            return newest
        if stale is None:
            return newest
        self._ack(stale, False, "posted before this run of the job started; not carried out")
        return stale.generation

    def _pending(self) -> Instruction | None:
        try:
            return channel.pending_instruction(self.channel_dir, self.generation)
        except ChannelError as exc:  # a damaged file is no instruction; the deadline still holds
            self._say(f"channel: {exc}")
            return None

    def _await_instruction(self, code: int) -> Instruction | None:
        deadline = self._clock() + self.wait_s
        waiting_until = channel.now().timestamp() + self.wait_s
        self._status(
            StepState.FAILED, f"the step exited {code}; waiting for an instruction", waiting_until=waiting_until
        )
        self._say(f"step exited {code}; waiting up to {self.wait_s:g} s for an instruction")
        while self._signal is None:
            if (instruction := self._pending()) is not None:
                return instruction
            if self._clock() >= deadline:
                return None
            time.sleep(min(self.poll_s, INSTRUCTION_POLL_S))  # the instruction comes from another process
        return None

    def _ack(self, instruction: Instruction, done: bool, detail: str, nodes: Sequence[str] = ()) -> None:
        ack = Ack(
            incident_id=instruction.incident_id,
            generation=instruction.generation,
            done=done,
            detail=detail,
            nodes=list(nodes),
            at=channel.now(),
        )
        try:
            channel.write_ack(self.channel_dir, ack)
        except ChannelError as exc:
            self._say(f"channel: {exc}")

    def _status(
        self, state: StepState, detail: str, *, waiting_until: float | None = None, no_requeue: bool = False
    ) -> None:
        status = Status(
            job_id=self.job_id,
            state=state,
            step_nodes=self.step_nodes,
            spares=self.spares,
            excluded=self.excluded,
            exit_code=self.exit_code,
            restarts=self.restarts,
            min_nodes=self.min_nodes,
            generation=self.generation,
            no_requeue=no_requeue,
            detail=detail,
            updated_at=channel.now(),
            waiting_until=datetime.fromtimestamp(waiting_until, UTC) if waiting_until is not None else None,
        )
        try:
            channel.write_status(self.channel_dir, status)
        except ChannelError as exc:
            self._say(f"channel: {exc}")

    def _say(self, message: str) -> None:
        print(f"respawn-launcher: {message}", file=self._log, flush=True)


def _lost(state: str | None) -> bool:
    """Whether a node in sinfo's state (%T) may end a step on it: not listed, not responding
    (the `*` suffix), or down, failing or powered off."""
    if state is None or state.endswith("*"):
        return True
    return state.lower().startswith(("down", "fail", "power", "unknown"))


def _exit_code(returncode: int) -> int:
    """A process's exit status as a shell reports it (killed by signal N: 128+N)."""
    return 128 - returncode if returncode < 0 else min(returncode, 255)


def default_channel_dir(job_id: int) -> Path:
    """Beside the job's output: the file the batch script's stdout is (Slurm opened it),
    else the working directory, where Slurm puts `slurm-<id>.out` by default."""
    try:
        out = Path(os.readlink("/proc/self/fd/1"))
        if out.is_absolute() and out.is_file():
            return channel.channel_dir(out, job_id)
    except OSError:
        pass
    return channel.channel_dir(Path.cwd() / f"slurm-{job_id}.out", job_id)
