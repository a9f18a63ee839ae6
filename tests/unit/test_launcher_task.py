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
