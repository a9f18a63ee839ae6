"""The cluster configuration for the local sandbox, written next to it."""

from pathlib import Path

import yaml

from respawn.config.cluster import ClusterConfig, SchedulerAccess
from respawn.sandbox import prometheus
from respawn.sandbox.containers.lab import ContainerLab
from respawn.sandbox.lab import Lab

SSH_PORT = 22022
SERVER_PORT = prometheus.RESPAWN_PORTS["server"]  # the sandbox's Prometheus scrapes its /metrics
# The sandbox server's bearer tokens. Sandbox only: fixed and public, never for a real cluster.
READ_TOKEN = "sandbox-read-token-not-a-secret"
WRITE_TOKEN = "sandbox-write-token-not-a-secret"


def lab_config(lab: Lab, transport: SchedulerAccess = SchedulerAccess.LOCAL) -> ClusterConfig:
    if isinstance(lab, ContainerLab):
        return container_lab_config(lab, transport)
    from respawn.sandbox.chroot import ChrootLab

    if isinstance(lab, ChrootLab):
        return chroot_lab_config(lab)
    scheduler: dict = {"transport": transport.value, "slurm_conf": str(lab.slurm_conf)}
    if transport is SchedulerAccess.SSH:
        scheduler["ssh"] = {
            "host": "127.0.0.1",
            "port": SSH_PORT,
            "username": "root",
            "client_key": str(lab.ssh_key),
            "known_hosts": str(lab.known_hosts),
        }
    return ClusterConfig.model_validate(
        {
            "cluster": "sandbox",
            "scheduler": scheduler,
            "temporal": {"address": lab.temporal_address, "ui_url": "http://127.0.0.1:8233"},
            # The demo environment may act; anything else only watches.
            # demo acts; prod only watches; gated acts once an operator approves.
            "environments": {
                "demo": {"max_mode": "action"},
                "prod": {"max_mode": "observe"},
                "gated": {"max_mode": "action", "approval": {"timeout_s": 600, "default": "deny"}},
            },
            "logs": {
                "job_output": str(lab.out_dir / "slurm-{job_id}.out"),
                "kernel_log": str(lab.kernel_dir / "{node}.log"),
            },
            "audit_db": str(lab.audit_db),
            # Four nodes: the production default (a quarter of the cluster) would call
            # two faulty nodes in a row a systemic failure.
            "budgets": {"systemic_node_share": 0.75},
            # Jobs here step in about a second: a hang shows within 15 s, after Slurm has
            # seen a dead node as not responding (8-10 s), so that cause is told first.
            # The detector shares the nodes' /proc here, so it can see a stopped rank.
            # A suspicion waits 8 s for its confirmation here: sandbox jobs step in under a second.
            # No catching up: each test module starts a detector of its own cluster on this one
            # Slurm, and the jobs the module before it left ended are not its to recover.
            "detector": {
                "catch_up_s": 0,
                "confirm_window_s": 8,
                "progress": {
                    "hang_factor": 4,
                    "hang_floor_s": 15,
                    "startup_s": 120,
                    "checkpoint_s": 40,
                    "sustain_s": 10,
                    "recent": 6,
                    "stopped_task_check": "slurm_step",
                },
            },
            "metrics": {"prometheus_url": prometheus.URL, "timeout_s": 2, "poll_interval_s": 1},
            # Respawn's own metrics, where the sandbox's Prometheus scrapes them.
            "telemetry": {role: {"port": prometheus.RESPAWN_PORTS[role]} for role in ("detector", "worker")},
            "server": {
                "port": SERVER_PORT,
                "tokens": [
                    {"name": "sandbox-reader", "token": READ_TOKEN, "scopes": ["read"]},
                    {"name": "sandbox-writer", "token": WRITE_TOKEN, "scopes": ["read", "write"]},
                ],
            },
        }
    )


def write_lab_config(lab: Lab, transport: SchedulerAccess = SchedulerAccess.LOCAL, audit_db: str | None = None) -> Path:
    """The lab's configuration file; `audit_db`: another store than the lab's SQLite file (a URL)."""
    path = lab.root / ("respawn.yaml" if transport is SchedulerAccess.LOCAL else f"respawn-{transport.value}.yaml")
    config = lab_config(lab, transport)
    if audit_db is not None:
        config = ClusterConfig.model_validate({**config.model_dump(), "audit_db": audit_db})
    path.write_text(yaml.safe_dump(config.model_dump(mode="json", exclude_defaults=True), sort_keys=False))
    return path


# The container lab's own ports for its Respawn's metrics (beside the sandbox's and the chroot lab's).
CONTAINER_RESPAWN_PORTS = {"detector": 26201, "worker": 26202}


def container_lab_config(lab: ContainerLab, transport: SchedulerAccess = SchedulerAccess.LOCAL) -> ClusterConfig:
    """The container lab's: the sandbox's settings, with Respawn outside the cluster as in
    production (no view of the nodes' processes), on the container lab's own ports, and
    without what the container lab does not run (Prometheus, simulated DCGM) or what would
    take the multi-slurmd sandbox's host ports (the server). Its detector and worker serve
    metrics on ports of their own: the tests wait for the detector's first poll by them (a
    job that ends before it is history to the detector; seen in CI under the SSH transport,
    whose detector starts slower)."""
    from respawn.sandbox.containers import lab as ports

    data = lab_config(Lab(root=lab.root), transport).model_dump(mode="json", exclude_defaults=True)
    data["cluster"] = "containers"
    data["temporal"] = {"address": lab.temporal_address, "ui_url": f"http://{ports.HOST}:{ports.TEMPORAL_UI_PORT}"}
    if transport is SchedulerAccess.SSH:
        data["scheduler"]["ssh"] |= {"host": ports.HOST, "port": ports.SSH_PORT}
    for absent in ("metrics", "server"):
        data.pop(absent, None)
    data["telemetry"] = {role: {"port": CONTAINER_RESPAWN_PORTS[role]} for role in ("detector", "worker")}
    data["detector"]["progress"]["stopped_task_check"] = "none"
    return ClusterConfig.model_validate(data)


# The 24.11 chroot lab's own ports for Respawn's processes (the sandbox's are 18080, 19201, 19202).
# Below Linux's ephemeral range (32768-60999), like the lab's Slurm ports: an outgoing connection
# could hold one of those when the process comes to bind it.
CHROOT_RESPAWN_PORTS = {"server": 25080, "detector": 25201, "worker": 25202}


def chroot_lab_config(lab: Lab) -> ClusterConfig:
    """The Slurm 24.11 chroot lab's: the sandbox's settings, its Slurm through the lab's
    wrapper scripts (`scheduler.slurm_bin_dir`), its own Temporal and ports, and without
    what it does not run (Prometheus, simulated DCGM, sshd)."""
    data = lab_config(Lab(root=lab.root), SchedulerAccess.LOCAL).model_dump(mode="json", exclude_defaults=True)
    data["cluster"] = "slurm-24.11"
    data["scheduler"] = {"transport": "local", "slurm_conf": str(lab.slurm_conf), "slurm_bin_dir": str(lab.bin_dir)}
    data["temporal"] = {"address": lab.temporal_address, "ui_url": f"http://127.0.0.1:{lab.temporal_ui_port}"}
    data.pop("metrics", None)
    data["telemetry"] = {role: {"port": CHROOT_RESPAWN_PORTS[role]} for role in ("detector", "worker")}
    data["server"]["port"] = CHROOT_RESPAWN_PORTS["server"]
    return ClusterConfig.model_validate(data)
