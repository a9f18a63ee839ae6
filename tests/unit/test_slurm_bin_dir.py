"""`scheduler.slurm_bin_dir`: Slurm's commands come from that folder, not from PATH."""

from pathlib import Path

import pytest

from respawn.config.cluster import ClusterConfig
from respawn.scheduler.errors import TransportError
from respawn.scheduler.transport import LocalTransport
from respawn.services import build_services


def _config(tmp_path: Path, bin_dir: Path) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {},
            "audit_db": str(tmp_path / "audit.db"),
            "logs": {"job_output": str(tmp_path / "{job_id}.out")},
            "scheduler": {"slurm_bin_dir": str(bin_dir)},
        }
    )


async def test_the_configured_folder_provides_the_commands(tmp_path):
    bin_dir = tmp_path / "slurm-bin"
    bin_dir.mkdir()
    squeue = bin_dir / "squeue"
    squeue.write_text('#!/bin/sh\necho "from slurm_bin_dir: $*"\n')
    squeue.chmod(0o755)
    services = build_services(_config(tmp_path, bin_dir))
    try:
        result = await services.slurm.transport.run(["squeue", "--json"])
    finally:
        await services.close()
    assert (result.rc, result.stdout) == (0, "from slurm_bin_dir: --json\n")


async def test_a_command_missing_from_the_folder_names_the_path_tried(tmp_path):
    with pytest.raises(TransportError, match=f"{tmp_path}/scontrol: cannot run"):
        await LocalTransport(bin_dir=tmp_path).run(["scontrol", "ping"])
