"""The worker and the detector wait for Temporal at their start (respawn/services.py,
wait_for_temporal): a daemon started before the server connects once it answers, and one told
to stop while it waits stops."""

import asyncio
import logging
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from respawn.config.cluster import ClusterConfig
from respawn.services import wait_for_temporal

TEST_SERVER = Path(sys.executable).parent / "temporal-test-server"


def _config(tmp_path: Path) -> ClusterConfig:
    with socket.socket() as s:  # a port nothing listens on, yet
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return ClusterConfig.model_validate(
        {
            "cluster": "wait",
            "environments": {"demo": {"max_mode": "observe"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "temporal": {"address": f"127.0.0.1:{port}"},
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
