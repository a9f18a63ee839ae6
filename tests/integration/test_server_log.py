"""What `respawn serve` logs: the real command, scraped as Prometheus scrapes it."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from respawn.config.cluster import ClusterConfig
from tests.ports import unused_port
from tests.recovery_stack import write_config

RESPAWN = Path(sys.executable).with_name("respawn")


def test_the_access_log_leaves_out_successful_scrapes_and_keeps_the_rest(tmp_path):
    port = unused_port()
    config = ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {"demo": {}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "server": {"port": port},
        }
    )
    path = write_config(config, tmp_path / "serve.yaml")
    server = subprocess.Popen(
        [str(RESPAWN), "serve", "--config", str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            assert server.poll() is None, "the server exited"
            try:
                if httpx.get(f"{base}/metrics").status_code == 200:
                    break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the server did not answer"
                time.sleep(0.1)
        for _ in range(5):
            assert httpx.get(f"{base}/metrics").status_code == 200
        assert httpx.get(f"{base}/no-such-page").status_code == 404
    finally:
        server.send_signal(signal.SIGINT)
        log, _ = server.communicate(timeout=30)
    requests = [line for line in log.splitlines() if '" 200' in line or '" 404' in line]
    assert requests == [line for line in requests if "/no-such-page" in line] != [], log
