"""The local stack for development and tests: a real Slurm cluster of N nodes on this
host, the Temporal dev server and sshd, with all state in one lab folder."""

from respawn.sandbox.lab import Lab, lab
from respawn.sandbox.stack import (
    down,
    kill_node,
    reset,
    start_node,
    start_slurmctld,
    start_temporal,
    status,
    stop_slurmctld,
    stop_temporal,
    up,
)

__all__ = [
    "Lab",
    "down",
    "kill_node",
    "lab",
    "reset",
    "start_node",
    "start_slurmctld",
    "start_temporal",
    "status",
    "stop_slurmctld",
    "stop_temporal",
    "up",
]
