"""The lab folder: every file the local stack reads or writes lives under one root."""

import os
import re
from dataclasses import dataclass
from pathlib import Path

from respawn.scheduler import hostlist

DEFAULT_ROOT = Path("/tmp/respawn-lab")
SLURMCTLD_PORT = 16817
SLURMD_BASE_PORT = 17001  # node i (1-based) listens on SLURMD_BASE_PORT + i - 1
TEMPORAL_HOST = "127.0.0.1"
TEMPORAL_PORT = 7233
TEMPORAL_UI_PORT = 8233
SSH_HOST = "127.0.0.1"
SSH_PORT = 22022
SSH_USER = "root"

_NODENAME_LINE = re.compile(r"^NodeName=(\S+)", re.MULTILINE)


@dataclass(frozen=True)
class Lab:
    root: Path
    # Ports: the defaults are the sandbox's; another lab on this host (the Slurm 24.11
    # chroot lab, a capture lab) takes its own.
    slurmctld_port: int = SLURMCTLD_PORT
    slurmd_base_port: int = SLURMD_BASE_PORT  # node i (1-based) listens on slurmd_base_port + i - 1
    temporal_port: int = TEMPORAL_PORT
    temporal_ui_port: int = TEMPORAL_UI_PORT

    @property
    def etc_dir(self) -> Path:
        return self.root / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc_dir / "slurm.conf"

    @property
    def munge_key(self) -> Path:
        return self.etc_dir / "munge" / "munge.key"

    @property
    def run_dir(self) -> Path:
        return self.root / "run"

    @property
    def munge_socket(self) -> Path:
        return self.run_dir / "munge" / "munge.socket.2"

    @property
    def log_dir(self) -> Path:
        return self.root / "log"

    @property
    def state_dir(self) -> Path:
        return self.root / "state"

    @property
    def shared(self) -> Path:
        return self.root / "shared"

    @property
    def out_dir(self) -> Path:
        return self.shared / "out"

    @property
    def ckpt_dir(self) -> Path:
        return self.shared / "ckpt"

    @property
    def kernel_dir(self) -> Path:
        return self.root / "kernel"

    @property
    def faults_dir(self) -> Path:
        return self.root / "faults"

    @property
    def ssh_dir(self) -> Path:
        return self.root / "ssh"

    @property
    def ssh_key(self) -> Path:
        return self.ssh_dir / "id_ed25519"

    @property
    def known_hosts(self) -> Path:
        return self.ssh_dir / "known_hosts"

    @property
    def temporal_db(self) -> Path:
        return self.root / "temporal" / "temporal.db"

    @property
    def audit_db(self) -> Path:
        return self.root / "audit.db"

    @property
    def temporal_address(self) -> str:
        return f"{TEMPORAL_HOST}:{self.temporal_port}"

    @property
    def hosts_file(self) -> Path:
        """The /etc/hosts the controller resolves node names with (24.11 needs them to resolve)."""
        return Path("/etc/hosts")

    @property
    def bin_dir(self) -> Path | None:
        """Where this lab's Slurm and munge commands are taken from; None: PATH (the host's Slurm)."""
        return None

    def pid_file(self, component: str) -> Path:
        """run/<component>.pid; components are munged, slurmctld, slurmd-<node>, temporal, sshd."""
        return self.run_dir / f"{component}.pid"

    def kernel_log(self, node: str) -> Path:
        return self.kernel_dir / f"{node}.log"

    @property
    def nodes(self) -> list[str]:
        """The nodes of the configured cluster, read from slurm.conf; empty before the first up."""
        try:
            text = self.slurm_conf.read_text()
        except FileNotFoundError:
            return []
        match = _NODENAME_LINE.search(text)
        return hostlist.expand(match.group(1)) if match else []

    def env(self) -> dict[str, str]:
        """The environment for Slurm clients: without SLURM_CONF they try a DNS SRV lookup and fail."""
        return {**os.environ, "SLURM_CONF": str(self.slurm_conf)}


def lab(root: Path | None = None) -> Lab:
    """The lab at `root`, else at $RESPAWN_LAB, else at /tmp/respawn-lab."""
    if root is None:
        root = Path(os.environ.get("RESPAWN_LAB") or DEFAULT_ROOT)
    return Lab(root=root.resolve())
