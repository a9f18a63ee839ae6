"""Processes seen through /proc: pid files, liveness, environments, namespaces, waiting.

The daemons are reparented to PID 1, which reaps them only lazily, so a dead
daemon can linger as a zombie: `kill -0` succeeds on it, /proc/PID/stat says `Z`.
"""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

# Runs `argv` in a new session with output appended to a log, writes its pid and
# exits, so the daemon is reparented to PID 1 like the ones that fork themselves.
_DETACH = """
import subprocess, sys
pid_file, log, *argv = sys.argv[1:]
with open(log, "ab") as out:
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
with open(pid_file, "w") as f:
    f.write(f"{child.pid}\\n")
"""


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (FileNotFoundError, IndexError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # The state letter follows the command name, which may itself contain ") ".
    return stat[stat.rindex(")") + 2] not in "ZX"


def lineage(pid: int) -> set[int]:
    """The process and all its ancestors."""
    chain: set[int] = set()
    while pid > 0 and pid not in chain:
        chain.add(pid)
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            break
        pid = int(stat[stat.rindex(")") + 2 :].split()[1])
    return chain


def comm(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return None


def running_pid(pid_file: Path, name: str) -> int | None:
    """The live process recorded in `pid_file`, if its command is `name`.

    Checking the name keeps a stale pid file, whose pid was reused, from
    pointing at an unrelated process.
    """
    pid = read_pid(pid_file)
    if pid is None or not alive(pid) or comm(pid) != name:
        return None
    return pid


def environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, v in pairs}


def namespace(pid: int, kind: str) -> str | None:
    """An identity of the process's namespace of `kind` (uts, mnt, ...), e.g. 'uts:[4026532201]'."""
    try:
        return os.readlink(f"/proc/{pid}/ns/{kind}")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def signal_all(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def terminate(pids: Sequence[int], timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL whatever is still alive at the deadline; returns once all are gone."""
    signal_all(pids, signal.SIGTERM)
    # A frozen (SIGSTOPped) process only acts on SIGTERM once it runs again.
    signal_all(pids, signal.SIGCONT)
    if wait_until(lambda: not any(alive(p) for p in pids), timeout):
        return
    kill(pids)


def kill(pids: Sequence[int], timeout: float = 10.0) -> None:
    signal_all(pids, signal.SIGKILL)
    if not wait_until(lambda: not any(alive(p) for p in pids), timeout):
        left = [p for p in pids if alive(p)]
        raise RuntimeError(f"processes survived SIGKILL for {timeout:.0f} s: {left}")


def run(
    argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 30.0
) -> subprocess.CompletedProcess[str]:
    """Run to completion; a command past its timeout is killed and reported as rc -1."""
    try:
        return subprocess.run(list(argv), env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(list(argv), -1, "", f"timed out after {timeout:g} s")


# A sandbox lives for weeks of runs, its daemons appending all the while (a Temporal log of
# 70 MB after a few benchmark sessions): at each `up`, a log past the limit keeps its tail.
LOG_LIMIT_BYTES = 32 << 20
LOG_KEPT_BYTES = 4 << 20


def trim_logs(folder: Path, limit: int = LOG_LIMIT_BYTES, kept: int = LOG_KEPT_BYTES) -> None:
    """Cut each `*.log` in `folder` larger than `limit` to its last `kept` bytes, from its first
    whole line, in place: a daemon still writing to it appends (every log here is opened for
    appending), so it goes on at the new end, where a renamed file would keep growing unseen."""
    for log in folder.glob("*.log"):
        with open(log, "r+b") as f:
            size = f.seek(0, os.SEEK_END)
            if size <= limit:
                continue
            f.seek(size - kept - 1)  # one byte before: whether the kept part starts a line
            tail = f.read()
            tail = tail[tail.find(b"\n") + 1 :]
            f.seek(0)
            f.write(tail)
            f.truncate()


def check(result: subprocess.CompletedProcess[str], what: str) -> None:
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed (rc {result.returncode}): {(result.stderr or result.stdout).strip()}")


def spawn_detached(argv: Sequence[str], log: Path, pid_file: Path, env: Mapping[str, str] | None = None) -> int:
    subprocess.run([sys.executable, "-c", _DETACH, str(pid_file), str(log), *argv], env=env, check=True, timeout=30)
    pid = read_pid(pid_file)
    if pid is None:
        raise RuntimeError(f"no pid in {pid_file} after starting {argv[0]}")
    return pid


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except FileNotFoundError:
        return f"({path} does not exist)"
