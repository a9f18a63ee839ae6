"""The launcher's task wrapper (respawn/launcher/task.py): invisible but for the mark of a 93.
What srun reports of a task is what Respawn attributes, so the wrapper must end the way its
task ended and print nothing of its own."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from respawn.launcher.runner import TASK_WRAPPER


def wrapped(*argv: str, mark: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RESPAWN_NO_REQUEUE_MARK": str(mark)} if mark else None
    return subprocess.run(
        [sys.executable, "-S", str(TASK_WRAPPER), *argv], capture_output=True, text=True, env=env, timeout=30
    )


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGSEGV, signal.SIGABRT])
def test_a_task_killed_by_a_signal_kills_the_wrapper_with_the_same_signal_silently(sig):
    done = wrapped("sh", "-c", f"kill -{int(sig)} $$")
    assert (done.returncode, done.stdout, done.stderr) == (-sig, "", "")


def test_exit_codes_and_output_pass_through_and_93_leaves_the_mark(tmp_path):
    mark = tmp_path / ".no-requeue-0"
    done = wrapped("sh", "-c", "echo out; echo err >&2; exit 3", mark=mark)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n") and not mark.exists()
    assert wrapped("sh", "-c", "exit 93", mark=mark).returncode == 93 and mark.exists()


def test_a_planted_link_is_not_followed_for_the_mark(tmp_path):
    target, mark = tmp_path / "elsewhere", tmp_path / ".no-requeue-0"
    mark.symlink_to(target)
    assert wrapped("sh", "-c", "exit 93", mark=mark).returncode == 93 and not target.exists()


def test_a_signal_to_the_whole_step_ends_the_task_and_the_wrapper_reports_it():
    """Slurm signals every process of a step: the task dies of it, the wrapper outlives it to tell."""
    proc = subprocess.Popen([sys.executable, "-S", str(TASK_WRAPPER), "sleep", "30"], start_new_session=True)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(os.popen(f"pgrep -g {proc.pid}").read().split()) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(10) == -signal.SIGTERM


def test_a_command_that_cannot_run_is_127_like_a_shell():
    done = wrapped("/nonexistent/program")
    assert done.returncode == 127 and "respawn-task: /nonexistent/program" in done.stderr


# --- a prepared step's task (docs/launcher.md "A prepared step") ---

PROGRAM = """\
import json, sys
comm = open("/proc/self/comm").read().strip()
print("ran", __name__, sys.argv, "json" in sys.modules, sys.path[0] == {here!r}, comm, flush=True)
sys.exit(int(sys.argv[1]))
"""


def prepared(tmp_path: Path, *program: str) -> tuple[subprocess.Popen[str], Path]:
    """A prepared task (json imported ahead) in a process group of its own, as a step's, working
    in `tmp_path`; its ready mark."""
    mark = tmp_path / ".prepared-1"
    env = {**os.environ, "RESPAWN_PREPARED_MARK": str(mark), "SLURM_PROCID": "0"}
    argv = [sys.executable, "-S", str(TASK_WRAPPER), "--prepared", "json", "--", sys.executable, *program]
    proc = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, start_new_session=True
    )
    ready = mark.with_name(mark.name + "-0")
    deadline = time.monotonic() + 20
    while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ready.exists(), proc.communicate(timeout=5)
    return proc, ready


def test_a_prepared_task_runs_its_program_at_the_go_as_python_would(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PROGRAM.format(here=str(tmp_path)))
    proc, _ = prepared(tmp_path, "-u", str(script), "3")
    # Until the go, none of its processes looks like a rank (ps, and the sandbox's faults).
    pids = os.popen(f"pgrep -g {proc.pid}").read().split()
    assert len(pids) == 2 and {Path(f"/proc/{p}/comm").read_text() for p in pids} == {"respawn-prepare\n"}
    os.killpg(proc.pid, signal.SIGUSR1)  # Slurm signals every process of the step
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 3, err
    name = Path(sys.executable).name[:15]  # as the kernel names an exec of it
    assert out == f"ran __main__ {[str(script), '3']} True True {name}\n" and err == ""


def test_a_prepared_task_stood_down_exits_0_silently_and_never_runs(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(PROGRAM.format(here=str(tmp_path)))
    for stand_down in (signal.SIGUSR2, signal.SIGTERM):
        proc, ready = prepared(tmp_path, str(script), "3")
        os.killpg(proc.pid, stand_down)
        assert proc.communicate(timeout=20) == ("", "") and proc.returncode == 0
        ready.unlink()


def test_a_prepared_module_runs_with_m_and_a_crash_ends_the_task_as_it_would(tmp_path):
    (tmp_path / "crashy.py").write_text("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    proc, _ = prepared(tmp_path, "-m", "crashy")
    os.killpg(proc.pid, signal.SIGUSR1)
    assert proc.wait(20) == -signal.SIGKILL


def test_only_python_scripts_and_modules_can_be_prepared():
    from respawn.launcher.task import preparable

    assert preparable(["python", "train.py"]) and preparable(["/v/bin/python3", "-u", "-m", "pkg.train", "--x"])
    assert not preparable(["torchrun", "train.py"]) and not preparable(["python", "-c", "pass"])
    assert not preparable(["python", "-X", "dev", "train.py"]) and not preparable(["python"])
