"""Shared fixtures: the lab, and the sandbox stack running in it for the whole session.

Nothing is skipped when Slurm, munge or sshd are missing: `up` fails loudly.
"""

import fcntl
from collections.abc import Iterator

import pytest

from respawn.matcher import Matcher
from respawn.runbook import Catalogue
from respawn.sandbox import Lab, down, lab as make_lab, reset, status, up


@pytest.fixture(scope="session")
def lab() -> Lab:
    """The lab at $RESPAWN_LAB or /tmp/respawn-lab (the ports are fixed, so there is one per host)."""
    return make_lab()


@pytest.fixture(scope="session")
def sandbox(lab: Lab) -> Iterator[Lab]:
    """The whole stack (4 nodes, Temporal, sshd), up for the session.

    Taken down at the end only if this session started it: a stack someone
    already ran in this lab is theirs and stays up. Held under a lock, so
    test sessions that need the sandbox run one after the other.
    """
    lab.root.mkdir(parents=True, exist_ok=True)
    with open(lab.root / "tests.lock", "w") as lock:
        # The ports are fixed: a second test session on this host waits for the first.
        fcntl.flock(lock, fcntl.LOCK_EX)
        was_running = status(lab)["slurmctld"] == "running"
        up(lab)
        try:
            yield lab
        finally:
            if not was_running:
                down(lab)


@pytest.fixture(scope="session")
def catalogue() -> Catalogue:
    """The built-in runbooks."""
    return Catalogue.load()


@pytest.fixture(scope="session")
def matcher(catalogue: Catalogue) -> Matcher:
    return Matcher.from_catalogue(catalogue)


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """After the last test of a module that used the sandbox: back to idle nodes and no
    jobs, so what one module drained or left running is not the next one's start."""
    if "sandbox" not in getattr(item, "fixturenames", ()):
        return
    if nextitem is not None and nextitem.module is item.module:
        return
    lab = item.funcargs.get("sandbox") if hasattr(item, "funcargs") else None
    if lab is not None and status(lab)["slurmctld"] == "running":
        reset(lab)
