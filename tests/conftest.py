"""Shared fixtures: the lab, and the sandbox stack running in it for the whole session.

Nothing is skipped when Slurm, munge or sshd are missing: `up` fails loudly.
"""

import fcntl
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from pydantic import PostgresDsn
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.sandbox import Lab, down, postgres, reset, status, up
from respawn.sandbox import lab as make_lab
from respawn.workflows.search import CLUSTER, FAILURE_CLASS, JOB_ID, PHASE
from tests.ports import unused_port

# The fixtures of this host's Slurm labs: the sandbox, and the 24.11 chroot lab's
# (tests/integration/test_slurm_2411.py). Their nodes are processes of this host, with the same
# job ids and node names, so their cases run one after another (Makefile).
LAB_FIXTURES = {"sandbox", "lab_2411"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark what runs jobs on a lab, so that `make test` can run everything else beside it."""
    for item in items:
        if LAB_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.lab)


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
def postgres_server() -> Iterator[postgres.Postgres]:
    """Debian's PostgreSQL, this session's own (a new cluster in /tmp on a free port, so
    sessions and xdist workers never share one); stopped and removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="respawn-pg-"))
    server = postgres.Postgres(folder, port=unused_port())
    try:
        postgres.start(server)
        yield server
    finally:
        postgres.stop(server)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path) -> Path | PostgresDsn:
    """An empty audit store (`audit_db`): a new SQLite file, or a new database on the session's PostgreSQL."""
    if request.param == "sqlite":
        return tmp_path / "audit.db"
    server = request.getfixturevalue("postgres_server")
    return PostgresDsn(postgres.create_database(server, f"test_{uuid.uuid4().hex[:12]}"))


@pytest.fixture(scope="module")
async def env() -> AsyncIterator[WorkflowEnvironment]:
    """Temporal's time-skipping test server, with Respawn's search attributes."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(Path(sys.executable).parent / "temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    await env.client.operator_service.add_search_attributes(
        AddSearchAttributesRequest(
            namespace=env.client.namespace,
            search_attributes={
                key.name: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD for key in (JOB_ID, CLUSTER, FAILURE_CLASS, PHASE)
            },
        )
    )
    yield env
    await env.shutdown()


@pytest.fixture(scope="session")
def catalogue() -> Catalogue:
    """The built-in runbooks."""
    return Catalogue.load()


@pytest.fixture(scope="session")
def matcher(catalogue: Catalogue) -> Matcher:
    return Matcher.from_catalogue(catalogue)


@pytest.fixture(scope="module", autouse=True)
def idle_after_module(request: pytest.FixtureRequest, lab: Lab) -> Iterator[None]:
    """After a module that used the sandbox: back to idle nodes and no jobs, so what one
    module drained or left running is not the next one's start.

    Autouse, so it is set up before the module's own fixtures and torn down after them:
    the module's Respawn has stopped by then, and cannot requeue what this cancels (a job
    it held while the cancel landed once started again and took a node from the next module).
    """
    yield
    used = any("sandbox" in item.fixturenames for item in request.session.items if item.module is request.module)
    if used and status(lab)["slurmctld"] == "running":
        reset(lab)
