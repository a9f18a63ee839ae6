"""The worker and the detector wait for their servers at their start (respawn/services.py):
Temporal, and a PostgreSQL audit store. A daemon started before the server connects once it
answers, one told to stop while it waits stops, and what it logs never holds a password. (A
database created late: tests/integration/test_store.py; a namespace that does not exist:
tests/integration/test_daemon_start.py.)"""

import asyncio
import logging
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from respawn.config.cluster import ClusterConfig, ConfigError, Listen, TelemetrySettings
from respawn.services import wait_for_services, wait_for_temporal
from respawn.workers.detector import run_detector
from tests.ports import unused_port

TEST_SERVER = Path(sys.executable).parent / "temporal-test-server"


def _config(tmp_path: Path, audit_db: str | None = None) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "wait",
            "environments": {"demo": {"max_mode": "observe"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": audit_db or str(tmp_path / "audit.db"),
            "temporal": {"address": f"127.0.0.1:{unused_port()}"},
        }
    )


async def _until(predicate: Callable[[], bool], within_s: float = 10.0) -> None:
    deadline = time.monotonic() + within_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        await asyncio.sleep(0.02)


async def test_a_daemon_started_before_temporal_connects_once_it_answers(tmp_path, caplog):
    config = _config(tmp_path)
    caplog.set_level(logging.WARNING, logger="respawn.services")
    waiting = asyncio.create_task(wait_for_temporal(config, asyncio.Event()))
    await _until(lambda: f"cannot reach Temporal at {config.temporal.address} (Connection refused)" in caplog.text)
    assert not waiting.done()
    port = int(config.temporal.address.rsplit(":", 1)[1])
    env = await WorkflowEnvironment.start_time_skipping(port=port, test_server_existing_path=str(TEST_SERVER))
    try:
        client = await asyncio.wait_for(waiting, timeout=20)
        assert client is not None
        assert await client.service_client.check_health()
    finally:
        await env.shutdown()


async def test_a_daemon_told_to_stop_while_it_waits_stops_without_a_client(tmp_path, caplog):
    config = _config(tmp_path)
    caplog.set_level(logging.WARNING, logger="respawn.services")
    stop = asyncio.Event()
    waiting = asyncio.create_task(wait_for_temporal(config, stop))
    await _until(lambda: "cannot reach Temporal" in caplog.text)
    stop.set()
    assert await asyncio.wait_for(waiting, timeout=2) is None


async def test_a_daemon_waits_for_an_unreachable_audit_database_and_never_logs_its_password(tmp_path, caplog):
    config = _config(tmp_path, f"postgresql://respawn:s3cret-pw@127.0.0.1:{unused_port()}/respawn")
    caplog.set_level(logging.WARNING, logger="respawn.services")
    stop = asyncio.Event()
    waiting = asyncio.create_task(wait_for_services(config, stop))
    await _until(lambda: "cannot reach the audit store at postgresql://respawn:***@" in caplog.text)
    assert "s3cret-pw" not in caplog.text
    assert "Connection refused" in caplog.text
    stop.set()
    assert await asyncio.wait_for(waiting, timeout=5) is None


async def test_a_sqlite_audit_file_is_opened_at_once_without_waiting(tmp_path):
    services = await wait_for_services(_config(tmp_path), asyncio.Event())
    assert services is not None
    await services.close()


async def test_a_detector_waiting_for_its_database_serves_its_metrics_meanwhile(tmp_path):
    """What a pod's liveness probe asks (deploy/kubernetes): the process answers while it waits."""
    port = unused_port()
    config = _config(tmp_path, f"postgresql://respawn@127.0.0.1:{unused_port()}/respawn")
    config = config.model_copy(update={"telemetry": TelemetrySettings(detector=Listen(port=port))})
    stop = asyncio.Event()
    detector = asyncio.create_task(run_detector(config, stop))

    def scraped() -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as reply:
                return reply.status == 200
        except OSError:
            return False

    deadline = time.monotonic() + 10
    while not await asyncio.to_thread(scraped):
        assert time.monotonic() < deadline and not detector.done(), "no metrics while the detector waits"
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(detector, timeout=5)


async def test_a_sqlite_audit_file_that_cannot_be_opened_is_a_configuration_mistake(tmp_path):
    """Not waited for, not a traceback: ConfigError, which `respawn` says in one line with exit
    status 2, the status the systemd units do not restart for."""
    (tmp_path / "a-folder").mkdir()
    with pytest.raises(ConfigError, match=r"^audit_db: cannot open .*a-folder: unable to open database file$"):
        await wait_for_services(_config(tmp_path, str(tmp_path / "a-folder")), asyncio.Event())
