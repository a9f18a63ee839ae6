"""The container sandbox: every Slurm node its own container (own hostname, address and
processes), driven by testcontainers through Podman or Docker. See docs/containers.md."""

from respawn.sandbox.containers.lab import ContainerLab, container_lab
from respawn.sandbox.containers.stack import (
    disconnect_node,
    down,
    kill_node,
    pause_node,
    reset,
    start_node,
    status,
    up,
    write_kernel_log,
)

__all__ = [
    "ContainerLab",
    "container_lab",
    "disconnect_node",
    "down",
    "kill_node",
    "pause_node",
    "reset",
    "start_node",
    "status",
    "up",
    "write_kernel_log",
]
