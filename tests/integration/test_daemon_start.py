"""A daemon's start against the sandbox's real Temporal (respawn/services.py, wait_for_temporal):
a namespace that does not exist is a configuration mistake, not a server to wait for."""

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from respawn.config.cluster import ClusterConfig, ConfigError
from respawn.services import wait_for_temporal
from tests.recovery_stack import write_config

RESPAWN = Path(sys.executable).with_name("respawn")


def _config(sandbox, tmp_path: Path) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "absent-ns",
            "environments": {"demo": {}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
            "temporal": {"address": sandbox.temporal_address, "namespace": "respawn-absent"},
        }
    )


async def test_a_namespace_that_does_not_exist_is_said_in_one_line(sandbox, tmp_path):
    with pytest.raises(ConfigError, match=r"^temporal\.namespace: no namespace 'respawn-absent' at "):
        await asyncio.wait_for(wait_for_temporal(_config(sandbox, tmp_path), asyncio.Event()), timeout=30)


def test_the_worker_exits_2_without_a_traceback_so_its_unit_does_not_restart(sandbox, tmp_path):
    config = write_config(_config(sandbox, tmp_path), tmp_path / "c.yaml")
    done = subprocess.run([str(RESPAWN), "worker", "--config", str(config)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("respawn: temporal.namespace: no namespace")
    assert "Traceback" not in done.stderr
