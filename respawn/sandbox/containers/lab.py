"""The container lab: its folder, its host ports, and what jobs need to find each other.

Its ports differ from the multi-slurmd sandbox's (16817, 17001+, 7233/8233, 22022,
19090, 19401+), so both sandboxes can run on one host at the same time.
"""

import os
from dataclasses import dataclass
from pathlib import Path

from respawn.sandbox.lab import Lab

DEFAULT_ROOT = Path("/tmp/respawn-lab-containers")
HOST = "127.0.0.1"  # published ports listen on loopback only
SLURMCTLD_PORT = 26817  # inside the head container and published on the host alike
SSH_PORT = 22122  # published; the head's sshd listens on 22
TEMPORAL_PORT = 27233
TEMPORAL_UI_PORT = 28233


@dataclass(frozen=True)
class ContainerLab(Lab):
    """Every path of the multi-slurmd Lab, in another folder, plus the cluster's own config.

    `slurm_conf` is the host's view (the controller at its published port, the
    host's munged); `cluster_conf` is mounted at the same path inside every
    container (the controller by name on the cluster network). One path means
    a job's SLURM_CONF, which sbatch copies from the host, is right on both sides.
    """

    @property
    def cluster_conf(self) -> Path:
        return self.etc_dir / "cluster" / "slurm.conf"

    @property
    def temporal_address(self) -> str:
        return f"{HOST}:{TEMPORAL_PORT}"

    @property
    def ssh_host_key(self) -> Path:
        return self.ssh_dir / "ssh_host_ed25519_key"

    def env(self) -> dict[str, str]:
        return {
            **super().env(),
            # Exported by sbatch into the job: the nodes are separate hosts, so rank 0's
            # address is srun's launch node, reached on the cluster network's interface.
            "RESPAWN_MASTER": "launch-node",
            "GLOO_SOCKET_IFNAME": "eth0",
        }


def container_lab(root: Path | None = None) -> ContainerLab:
    """The lab at `root`, else at $RESPAWN_CONTAINER_LAB, else at /tmp/respawn-lab-containers."""
    if root is None:
        root = Path(os.environ.get("RESPAWN_CONTAINER_LAB") or DEFAULT_ROOT)
    return ContainerLab(root=root.resolve())
