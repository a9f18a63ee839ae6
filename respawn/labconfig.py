"""The cluster configuration for the local sandbox, written next to it."""

from pathlib import Path

import yaml

from respawn.config import ClusterConfig, Transport
from respawn.sandbox.lab import Lab

SSH_PORT = 22022


def lab_config(lab: Lab, transport: Transport = Transport.LOCAL) -> ClusterConfig:
    scheduler: dict = {"transport": transport.value, "slurm_conf": str(lab.slurm_conf)}
    if transport is Transport.SSH:
        scheduler["ssh"] = {
            "host": "127.0.0.1", "port": SSH_PORT, "username": "root",
            "client_key": str(lab.ssh_key), "known_hosts": str(lab.known_hosts),
        }
    return ClusterConfig.model_validate({
        "cluster": "sandbox",
        "scheduler": scheduler,
        "temporal": {"address": lab.temporal_address, "ui_url": "http://127.0.0.1:8233"},
        # The demo environment may act; anything else only watches.
        "environments": {"demo": {"max_mode": "action"}, "prod": {"max_mode": "observe"}},
        "logs": {
            "job_output": str(lab.out_dir / "slurm-{job_id}.out"),
            "kernel_log": str(lab.kernel_dir / "{node}.log"),
        },
        "audit_db": str(lab.audit_db),
    })


def write_lab_config(lab: Lab, transport: Transport = Transport.LOCAL) -> Path:
    path = lab.root / ("respawn.yaml" if transport is Transport.LOCAL else f"respawn-{transport.value}.yaml")
    config = lab_config(lab, transport)
    path.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True), sort_keys=False))
    return path
