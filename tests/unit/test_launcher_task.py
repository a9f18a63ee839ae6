"""The launcher's task wrapper (respawn/launcher/task.py): invisible but for the mark of a 93.
What srun reports of a task is what Respawn attributes, so the wrapper must end the way its
task ended and print nothing of its own."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from respawn.launcher.runner import TASK_WRAPPER
from respawn.launcher.task import rank_environment, read_plan


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
    """Slurm signals every process of a step: the task dies of it, the wrapper outlives it to tell.
    The signal is sent the moment the task is forked, before it has its own dispositions back
    (found in CI: a signal in that window was lost to the ignore it inherits, and the task ran on)."""
    proc = subprocess.Popen([sys.executable, "-S", str(TASK_WRAPPER), "sleep", "30"], start_new_session=True)
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not children.read_text().strip():
        pass  # no sleep: the point is to signal within the fork's first moments
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


def prepared(
    tmp_path: Path, *program: str, plan: object = ("node1",), node: str = "node1"
) -> tuple[subprocess.Popen[str], Path]:
    """A prepared task on `node` (json imported ahead) in a process group of its own, as a
    step's, working in `tmp_path`, its go plan the step on `plan`'s nodes (one task each, or
    the JSON given; None: no plan); its ready mark."""
    mark, plan_path = tmp_path / ".prepared-1", tmp_path / ".go-1.json"
    if isinstance(plan, tuple):
        plan_path.write_text(json.dumps({"nodes": list(plan), "tasks_per_node": 1}))
    elif plan is not None:
        plan_path.write_text(json.dumps(plan))
    env = {
        **os.environ,
        "RESPAWN_PREPARED_MARK": str(mark),
        "RESPAWN_GO_PLAN": str(plan_path),
        "SLURM_PROCID": "0",  # its place in the prepared step; the plan gives its rank
        "SLURM_LOCALID": "0",
        "SLURMD_NODENAME": node,
    }
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


RANK_PROGRAM = """\
import os
print(*(os.environ[v] for v in ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_NODEID", "SLURM_STEP_NODELIST")), flush=True)
"""


def go_printing_rank(tmp_path: Path, **kw) -> tuple[str, str, int]:
    """A prepared task of a program printing its rank, world, node id and step nodes, told to go:
    its output, errors and exit code."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_PROGRAM)
    proc, _ = prepared(tmp_path, str(script), **kw)
    os.killpg(proc.pid, signal.SIGUSR1)
    out, err = proc.communicate(timeout=20)
    return out, err, proc.returncode


def test_at_the_go_a_prepared_task_takes_the_rank_its_node_has_in_the_plan(tmp_path):
    """A prepared step spans the spares: the spare node4 takes the place of the excluded node2."""
    ran = go_printing_rank(tmp_path, plan=("node1", "node4", "node3"), node="node4")
    assert ran == ("1 3 1 node1,node4,node3\n", "", 0)


def test_at_the_go_a_task_on_a_node_the_plan_leaves_out_stands_down_silently(tmp_path):
    assert go_printing_rank(tmp_path, plan=("node1", "node4", "node3"), node="node2") == ("", "", 0)


@pytest.mark.parametrize("plan", [None, {"nodes": [], "tasks_per_node": 1}, {"nodes": ["node1"]}, ["node1"]])
def test_at_the_go_without_a_plan_to_trust_the_task_fails_rather_than_guess_a_rank(tmp_path, plan):
    out, err, code = go_printing_rank(tmp_path, plan=plan)
    assert code == 1 and out == "" and err.startswith("respawn-task: no go plan to run by:")


def test_a_rank_is_its_nodes_place_in_the_plan_times_the_tasks_per_node_plus_its_local_id():
    plan = (["node1", "node4", "node3"], 2)
    rank = rank_environment(plan, {"SLURMD_NODENAME": "node4", "SLURM_LOCALID": "1"})
    assert rank is not None
    assert (rank["SLURM_PROCID"], rank["SLURM_NODEID"], rank["SLURM_GTIDS"]) == ("3", "1", "2,3")
    assert rank["SLURM_NTASKS"] == rank["SLURM_NPROCS"] == rank["SLURM_STEP_NUM_TASKS"] == "6"
    assert rank["SLURM_NNODES"] == rank["SLURM_STEP_NUM_NODES"] == "3"
    assert rank["SLURM_NODELIST"] == rank["SLURM_STEP_NODELIST"] == "node1,node4,node3"  # rank 0's node first
    assert rank["SLURM_TASKS_PER_NODE"] == rank["SLURM_STEP_TASKS_PER_NODE"] == "2(x3)"
    assert rank_environment((["node1"], 1), {"SLURMD_NODENAME": "node1"})["SLURM_TASKS_PER_NODE"] == "1"  # type: ignore[index]
    assert rank_environment(plan, {"SLURMD_NODENAME": "node2", "SLURM_LOCALID": "0"}) is None  # excluded
    assert rank_environment(plan, {"SLURMD_NODENAME": "node1", "SLURM_LOCALID": "2"}) is None  # a task too many


def test_a_go_plan_is_read_only_from_a_small_regular_file_never_through_a_link(tmp_path):
    good = tmp_path / "plan.json"
    good.write_text(json.dumps({"nodes": ["node1", "node3"], "tasks_per_node": 4}))
    assert read_plan(str(good)) == (["node1", "node3"], 4)
    link = tmp_path / "link.json"
    link.symlink_to(good)
    with pytest.raises(OSError):
        read_plan(str(link))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match="not a regular file"):
        read_plan(str(fifo))
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({"nodes": ["n"] * 20_000, "tasks_per_node": 1}))
    with pytest.raises(ValueError, match="not a regular file of at most"):
        read_plan(str(huge))
    for bad in ({"nodes": ["a", "a"], "tasks_per_node": 1}, {"nodes": ["a"], "tasks_per_node": True}, [1]):
        good.write_text(json.dumps(bad))
        with pytest.raises(ValueError):
            read_plan(str(good))


def cold_printing_rank(tmp_path: Path, plan: object, node: str) -> subprocess.CompletedProcess[str]:
    """A task of a relaunch started cold (no prepared step), with the launcher's plan: its run."""
    script = tmp_path / "rank.py"
    script.write_text(RANK_PROGRAM)
    path = tmp_path / "cold.json"
    path.write_text(json.dumps(plan))
    # srun ranked this task by Slurm's node order: node4 after node3, so rank 2.
    slurm = {"SLURMD_NODENAME": node, "SLURM_LOCALID": "0", "SLURM_PROCID": "2", "SLURM_NTASKS": "3"}
    env = {**os.environ, **slurm, "SLURM_NODEID": "2", "SLURM_STEP_NODELIST": "node[1,3-4]"}
    return subprocess.run(
        [sys.executable, "-S", str(TASK_WRAPPER), sys.executable, str(script)],
        capture_output=True,
        text=True,
        env={**env, "RESPAWN_GO_PLAN": str(path)},
        timeout=30,
    )


def test_a_task_of_a_step_started_cold_takes_its_rank_from_the_plan_as_a_prepared_one_would(tmp_path):
    """After node2's replacement by the spare node4, srun ranks node4 last; the plan puts it in
    node2's place, as a prepared step's go does, so the ranks are the same whichever started."""
    plan = {"nodes": ["node1", "node4", "node3"], "tasks_per_node": 1}
    ran = cold_printing_rank(tmp_path, plan, "node4")
    assert (ran.stdout, ran.stderr, ran.returncode) == ("1 3 1 node1,node4,node3\n", "", 0)
    # A plan that cannot be trusted fails the task rather than guess.
    ran = cold_printing_rank(tmp_path, {"nodes": "node1"}, "node4")
    assert ran.returncode == 1 and ran.stderr.startswith("respawn-task: no go plan to run by:")
