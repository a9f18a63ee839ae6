"""Shared fixtures: the lab, and the sandbox stack running in it for the whole session.

Nothing is skipped when Slurm, munge or sshd are missing: `up` fails loudly.
"""

from collections.abc import Iterator

import pytest

from respawn.matcher import Matcher
from respawn.runbook import Catalogue
from respawn.sandbox import Lab, down, lab as make_lab, status, up


@pytest.fixture(scope="session")
def lab() -> Lab:
    """The lab at $RESPAWN_LAB or /tmp/respawn-lab (the ports are fixed, so there is one per host)."""
    return make_lab()


@pytest.fixture(scope="session")
def sandbox(lab: Lab) -> Iterator[Lab]:
    """The whole stack (4 nodes, Temporal, sshd), up for the session.

    Taken down at the end only if this session started it: a stack someone
    already ran in this lab is theirs and stays up.
    """
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
