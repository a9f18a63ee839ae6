"""Capture Slurm's real outputs for the parser tests (tests/data/slurm-<version>/).

Against a running lab of any version (the native sandbox's Slurm or the 24.11
chroot's), this makes the job and node situations recovery reads, and saves what
Slurm prints about them: running (a 2-node job whose JSON comment holds spaces
and `=`), pending held, requeued (PENDING and COMPLETING right after the
requeue), requeued held with an excluded node, failed (exit 3; SIGKILL),
cancelled, completed, node-failed, array tasks, a drained node and a down node,
and the controller down. It changes the lab it runs on (a drained node, a killed
node, a restarted controller): run it on a lab of its own.

    python -m respawn.sandbox.capture --version 22.05 --out tests/data/slurm-22.05
    python -m respawn.sandbox.capture --version 24.11 --out tests/data/slurm-24.11

`situations.json` in the output folder says which job id is which situation.
"""

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from respawn.sandbox import cluster, procs
from respawn.sandbox.lab import Lab

COMMENT = '{"respawn": {"environment": "prod", "mode": "observe"}, "note": "a=b c=d", "x": "k=v  two"}'
DRAIN_REASON = "xid79 gpu fell off bus"
# A task that ignores SIGTERM: after a requeue or cancel it holds the job COMPLETING
# until KillWait (2 s) has passed and SIGKILL comes.
STUBBORN = 'trap "" TERM; exec sleep 3000'
# The text reads (respawn/scheduler/squeue_text.py) are saved with this marker in place of a random one.
TEXT_MARKER = "Zcapturedmarker"
# Job-owner text that tries to pass for squeue's structure: lines, separators, `key=value`.
HOSTILE_NAME = "a b|c=d"
HOSTILE_COMMENT = '{"respawn": {"environment": "prod"}}\nZfake:0 1|2 x=y'
CAPTURE_LAB_2205 = Path("/tmp/respawn-lab-2205-capture")
CAPTURE_PORTS_2205 = {
    "slurmctld_port": 36817,
    "slurmd_base_port": 37001,
    "temporal_port": 7253,
    "temporal_ui_port": 8253,
}


class Capture:
    def __init__(self, lab: Lab, out: Path) -> None:
        self.lab, self.out = lab, out
        self.jobs: dict[str, int] = {}
        out.mkdir(parents=True, exist_ok=True)
        self.script = lab.shared / "capture-srun.sh"
        lab.shared.mkdir(parents=True, exist_ok=True)
        self.script.write_text("#!/bin/sh\necho start $SLURM_JOB_ID\nexec srun sleep 3000\n")
        self.script.chmod(0o755)

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = procs.run(argv, env=self.lab.env(), timeout=60)
        if check:
            procs.check(result, " ".join(argv[:2]))
        return result

    def sbatch(self, label: str, *args: str) -> int:
        result = self.run(
            "sbatch",
            "--parsable",
            f"--output={self.lab.out_dir}/slurm-%j.out",
            f"--chdir={self.lab.shared}",
            f"--job-name={label}",
            *args,
        )
        job_id = int(result.stdout.strip().split(";")[0])
        self.jobs[label] = job_id
        return job_id

    def state(self, job_id: int) -> str:
        line = self.run("squeue", "-h", "-t", "all", "-j", str(job_id), "-o", "%T", check=False).stdout
        return line.strip().splitlines()[0] if line.strip() else ""

    def wait(self, what: str, predicate, timeout: float = 60.0) -> None:
        if not procs.wait_until(predicate, timeout, interval=0.1):
            raise RuntimeError(f"capture: {what} not within {timeout:.0f} s")

    def save(self, name: str, *argv: str) -> None:
        result = self.run(*argv, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"capture: {' '.join(argv)} failed: {result.stderr.strip()}")
        (self.out / name).write_text(result.stdout)

    def save_text(self, name: str, job_id: int | list[int] | None = None) -> None:
        """The text read of every job (the listing), or of the jobs named (one, or several as
        a storm's reads name them) with their exclusions (`<name>-excluded.txt`)."""
        from respawn.scheduler import squeue_text

        env = {**self.lab.env(), **squeue_text.ENV}
        argv = squeue_text.command(TEXT_MARKER, job_id)
        listed = procs.run(argv, env=env, timeout=60)
        procs.check(listed, "squeue")
        (self.out / name).write_text(listed.stdout)
        if job_id is not None:
            named = [job_id] if isinstance(job_id, int) else job_id
            excluded = procs.run(squeue_text.excluded_command(named), env=self.lab.env(), timeout=60)
            procs.check(excluded, "squeue")
            (self.out / name.replace(".txt", "-excluded.txt")).write_text(excluded.stdout)

    def save_result(self, name: str, *argv: str) -> None:
        """rc, stdout and stderr of a command expected to fail."""
        result = self.run(*argv, check=False)
        (self.out / name).write_text(
            json.dumps(
                {"argv": list(argv), "rc": result.returncode, "stdout": result.stdout, "stderr": result.stderr},
                indent=1,
            )
            + "\n"
        )


def capture(lab: Lab, out: Path, version: str) -> dict:
    newer = version != "22.05"
    c = Capture(lab, out)
    nodes = lab.nodes
    if len(nodes) < 4:
        raise RuntimeError("capture needs a lab of 4 nodes")
    n1, n2, n3, n4 = nodes[:4]

    running = c.sbatch(
        "train2",
        "-N2",
        f"-w{n1},{n2}",
        "--ntasks-per-node=1",
        "--requeue",
        "--open-mode=append",
        f"--comment={COMMENT}",
        str(c.script),
    )
    c.sbatch("held", "-H", "--wrap", "exec sleep 3000")
    requeued = c.sbatch("requeued", "-N1", f"-w{n3}", "--requeue", "--wrap", STUBBORN)
    rqhold = c.sbatch("requeue_held", "-N1", f"-w{n4}", "--requeue", "--open-mode=append", str(c.script))
    c.sbatch("failed_exit3", "-N1", "--wrap", "exit 3")
    c.sbatch("failed_sigkill", "-N1", "--wrap", "kill -9 $$")
    cancelled = c.sbatch("cancelled", "-N1", "--wrap", "exec sleep 3000")
    c.sbatch("completed", "-N1", "--wrap", "true")
    array = c.sbatch("array", "-N1", "--array=0-2", "--wrap", 'test "$SLURM_ARRAY_TASK_ID" != 1 || exit 4')
    c.sbatch("excluded_begin", "-N1", f"--exclude={n2}", "--begin=now+3600", "--wrap", "exec sleep 3000")
    for label in ("train2", "requeued", "requeue_held", "cancelled"):
        c.wait(f"{label} running", lambda j=c.jobs[label]: c.state(j) == "RUNNING")
    c.run("scancel", str(cancelled))
    c.wait(
        "array and short jobs ended",
        lambda: all(
            c.state(c.jobs[k]) in ("FAILED", "COMPLETED", "CANCELLED")
            for k in ("failed_exit3", "failed_sigkill", "completed", "cancelled")
        ),
        60,
    )
    # Array tasks end in their own time; wait on the array as a whole.
    c.wait("array ended", lambda: not c.run("squeue", "-h", "-j", str(array), "-o", "%T").stdout.strip(), 60)

    # Requeued: PENDING + COMPLETING until KillWait ends the task that ignores SIGTERM.
    c.run("scontrol", "requeue", str(requeued))
    c.save("squeue-requeued-completing.json", "squeue", "--json", "--states=all")
    c.save("squeue-requeued-completing.txt", "squeue", "-t", "all", "-o", "%i|%T|%r|%N")
    if newer:
        c.save("scontrol-job-requeued-completing.json", "scontrol", "show", "job", "--json", str(requeued))
        c.save_text("squeue-text-requeued-completing.txt")
    # As the follows read their jobs: several named at once, one of them unknown.
    c.save_text("squeue-text-followed-requeued-completing.txt", [requeued, running, 999999])
    # Requeued held, then an excluded node: what recovery does.
    c.run("scontrol", "requeuehold", str(rqhold))
    c.wait("requeue_held pending", lambda: c.state(rqhold) == "PENDING", 30)
    c.wait(
        "requeue_held no longer completing",
        lambda: "COMPLETING"
        not in c.run("scontrol", "show", "job", str(rqhold)).stdout.split("JobState=")[1].split()[0],
        30,
    )
    c.run("scontrol", "update", f"JobId={rqhold}", f"ExcNodeList={n2}")
    # A drained node while the 2-node job runs on it, and a node-failed job on a node that dies.
    c.run("scontrol", "update", f"NodeName={n1}", "State=DRAIN", f"Reason={DRAIN_REASON}")
    c.wait("requeued job done completing", lambda: c.state(requeued) == "PENDING", 30)
    node_fail = c.sbatch("node_fail", "-N1", f"-w{n3}", "--no-requeue", "--wrap", "exec sleep 3000")
    c.wait("node_fail running", lambda: c.state(node_fail) == "RUNNING", 60)
    c.run("scontrol", "update", f"NodeName={n4}", "State=DRAIN", "Reason=maintenance")

    c.save("squeue.json", "squeue", "--json", "--states=all")
    c.save("squeue-default.json", "squeue", "--json")
    c.save("sinfo.json", "sinfo", "--json")
    c.save("sinfo-N.json", "sinfo", "-N", "--json")
    c.save("squeue.txt", "squeue", "-t", "all", "-o", "%i|%T|%r|%N|%k")
    c.save("scontrol-jobs.txt", "scontrol", "show", "job")
    c.save("sinfo.txt", "sinfo", "-N", "-o", "%N|%T|%E")
    c.save("scontrol-config.txt", "scontrol", "show", "config")
    if newer:
        c.save("scontrol-job.json", "scontrol", "show", "job", "--json")
        c.save(f"scontrol-job-{running}.json", "scontrol", "show", "job", "--json", str(running))
        c.save("scontrol-job-unknown.json", "scontrol", "show", "job", "--json", "999999")
        c.save("scontrol-node.json", "scontrol", "show", "node", "--json")
        c.save(f"squeue-j{running}.json", "squeue", "--json", "-j", str(running))
        for parser in ("v0.0.40", "v0.0.41"):
            c.save(f"squeue-{parser}.json", "squeue", f"--json={parser}", "--states=all")
            c.save(f"scontrol-node-{parser}.json", "scontrol", "show", "node", f"--json={parser}")
    c.save_result("squeue-unknown-job.json", "squeue", "--json", "-j", "999999")
    c.save_text("squeue-text.txt")
    # One job read by itself, and its exclusions beside it (%A|%x), as the adapter reads it on both versions.
    c.save_text(f"squeue-text-j{rqhold}.txt", rqhold)
    c.save_text(f"squeue-text-j{running}.txt", running)
    # Several read at once, an array's task by its own id among them, as a storm's incidents read theirs.
    tasks = c.run("squeue", "-h", "-t", "all", "-j", str(array), "-o", "%A").stdout.split()
    task = next(int(i) for i in tasks if int(i) != array)
    c.save_text("squeue-text-several.txt", [rqhold, running, task, 999999])
    c.save_result("squeue-text-unknown-job.json", *squeue_text_command(999999))

    # Node loss: node3 dies with the --no-requeue job on it (NODE_FAIL), and stays down.
    cluster.kill_node(lab, n3)
    c.wait(
        f"{n3} not responding", lambda: "NOT_RESPONDING" in getattr(cluster.node_states(lab).get(n3), "flags", ()), 40
    )
    c.save("sinfo-not-responding.json", "sinfo", "--json")
    if newer:
        c.save("scontrol-node-not-responding.json", "scontrol", "show", "node", "--json")
    c.wait(f"{n3} down", lambda: cluster.node_states(lab)[n3].state == "down", 40)
    c.wait("node_fail ended", lambda: c.state(node_fail) == "NODE_FAIL", 40)
    c.save("squeue-node-down.json", "squeue", "--json", "--states=all")
    c.save("sinfo-node-down.json", "sinfo", "--json")
    c.save("sinfo-N-node-down.json", "sinfo", "-N", "--json")
    if newer:
        c.save("scontrol-node-down.json", "scontrol", "show", "node", "--json")
        c.save(f"scontrol-job-{node_fail}.json", "scontrol", "show", "job", "--json", str(node_fail))
    c.save("squeue-node-down.txt", "squeue", "-t", "all", "-o", "%i|%T|%r|%N")
    c.save_text("squeue-text-node-down.txt")
    c.save("sinfo-node-down.txt", "sinfo", "-N", "-o", "%N|%T|%E")

    # The controller away: what the clients print, and their exit status.
    cluster.stop_slurmctld(lab)
    c.save_result("squeue-controller-down.json", "squeue", "--json", "--states=all")
    c.save_result("sinfo-controller-down.json", "sinfo", "--json")
    if newer:
        c.save_result("scontrol-node-controller-down.json", "scontrol", "show", "node", "--json")
    c.save_result("scontrol-requeue-controller-down.json", "scontrol", "requeue", str(running))
    cluster.start_slurmctld(lab)
    # Last, so that every job id above stays as it was.
    hostile = c.sbatch("hostile_text", "-H", f"--comment={HOSTILE_COMMENT}", "--wrap", "exec sleep 3000")
    del c.jobs["hostile_text"]  # in no other capture: it is situations["hostile_text"]
    c.run("scontrol", "update", f"JobId={hostile}", f"JobName={HOSTILE_NAME}")
    c.save_text(f"squeue-text-j{hostile}.txt", hostile)
    c.save("scontrol-version.txt", "scontrol", "--version")

    release = c.run("sinfo", "--version").stdout.strip()
    situations: dict[str, Any] = {
        "slurm": release,
        "version": version,
        "nodes": nodes[:4],
        "comment": COMMENT,
        "drain_reason": DRAIN_REASON,
        "drained": [n1, n4],
        "killed": n3,
        "jobs": c.jobs,
    }
    situations["hostile_text"] = hostile
    situations["array_task"] = task  # an array's task by its own id (not the array's)
    (out / "situations.json").write_text(json.dumps(situations, indent=1) + "\n")
    return situations


def squeue_text_command(job_id: int) -> list[str]:
    from respawn.scheduler import squeue_text

    return squeue_text.command(TEXT_MARKER, job_id)


def capture_lab_2205(root: Path = CAPTURE_LAB_2205) -> Lab:
    """A 4-node 22.05 lab of the host's Slurm, on its own ports (not the sandbox's)."""
    return Lab(root=root, **CAPTURE_PORTS_2205)


def _up(lab: Lab) -> None:
    from respawn.sandbox import stack

    stack._make_dirs(lab)
    if not cluster.any_slurm_daemon(lab):
        stack._clear_job_state(lab)
        stack._make_dirs(lab)
        cluster.configure(lab, 4)
    cluster.start_munged(lab)
    cluster.start_slurmctld(lab)
    for node in lab.nodes:
        cluster.start_slurmd(lab, node)
    stack._wait_nodes(lab)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--version",
        choices=["22.05", "24.11"],
        required=True,
        help="22.05: the host's Slurm in a lab of its own; 24.11: the chroot lab's",
    )
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--keep", action="store_true", help="leave the lab running afterwards")
    args = parser.parse_args(argv)
    down: Callable[[Lab], None]
    if args.version == "24.11":
        from respawn.sandbox import chroot

        chrooted = chroot.chroot_lab(Path("/tmp/respawn-lab-2411-capture"))  # the chroot lab's ports: not both at once
        chroot.down(chrooted)  # fresh: job ids from 1
        chroot.up(chrooted, temporal=False)
        lab: Lab = chrooted

        down = chroot.down  # type: ignore[assignment]  # the lab it is given is this ChrootLab
    else:
        lab = capture_lab_2205()
        down = cluster.stop
        cluster.stop(lab)
        _up(lab)
    started = time.monotonic()
    try:
        situations = capture(lab, args.out, args.version)
    finally:
        if not args.keep:
            down(lab)
    print(f"captured {situations['slurm']} into {args.out} in {time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
