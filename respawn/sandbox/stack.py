"""The whole local stack: bring it up, take it down, see what runs, inject node loss."""

import shutil

from respawn.sandbox import cluster, dcgm, postgres, procs, prometheus, sshd
from respawn.sandbox import temporal as temporal_server  # `up` has a parameter named temporal
from respawn.sandbox.lab import Lab

NODES_TIMEOUT = 30.0


def up(lab: Lab, nodes: int = 4, ssh: bool = True, temporal: bool = True) -> None:
    """Start whatever is not running; returns when every node is up, Temporal is healthy,
    sshd accepts connections and Prometheus has scraped every node's (simulated)
    DCGM exporter. A second `up` is harmless.

    When no Slurm daemon runs, the cluster starts fresh: new config, no state
    (job ids start at 1), empty kernel logs. Otherwise the running cluster must
    have `nodes` nodes.
    """
    if not cluster.any_slurm_daemon(lab):
        # A fresh cluster numbers jobs from 1 again, so everything keyed by job
        # id (output, checkpoints, faults, audit trail, incident histories in
        # Temporal) starts over with it, or a new job 1 would inherit the old one's.
        temporal_server.stop(lab)
        # Nor do its GPUs remember an earlier cluster's faults.
        prometheus.stop(lab)
        dcgm.stop(lab)
        prometheus.reset(lab)
        dcgm.reset(lab)
        _clear_job_state(lab)
        _make_dirs(lab)
        cluster.configure(lab, nodes)
    _make_dirs(lab)
    procs.trim_logs(lab.log_dir)
    cluster.start_munged(lab)
    if len(lab.nodes) != nodes:
        raise RuntimeError(f"the lab at {lab.root} runs {len(lab.nodes)} nodes, not {nodes}: take it down first")
    for node in lab.nodes:
        lab.kernel_log(node).touch()
    # The slurmds register with the controller while sshd and Temporal start; wait for them last.
    if cluster.slurmctld_pid(lab) is None:
        cluster.start_slurmctld(lab)
    for node in lab.nodes:
        cluster.start_slurmd(lab, node)
    # A benchmark killed before it could put the nodes back to their normal size (poll_cost.py).
    cluster.resize(lab, cluster.NORMAL_CPUS)
    if ssh:
        sshd.start(lab)
    if temporal:
        temporal_server.start(lab)
    dcgm.start(lab)
    prometheus.start(lab)
    _wait_nodes(lab)


def down(lab: Lab) -> None:
    """Stop everything of this lab, job processes included; nothing of it runs afterwards."""
    sshd.stop(lab)
    temporal_server.stop(lab)
    prometheus.stop(lab)
    dcgm.stop(lab)
    cluster.stop(lab)
    postgres.stop(postgres.of_lab(lab))  # started only with `--store postgresql`
    for pid_file in lab.run_dir.glob("*.pid"):
        pid = procs.read_pid(pid_file)
        if pid is None or not procs.alive(pid):
            pid_file.unlink(missing_ok=True)


def reset(lab: Lab) -> None:
    """Back to an idle cluster without restarting it: every job cancelled, every slurmd
    running, every node resumed (drained or down), every simulated GPU healthy.

    Between test modules: one module's drained node or lingering job must not
    become the next module's starting state.
    """
    for node in lab.nodes:
        cluster.start_slurmd(lab, node)
        dcgm.heal(lab, node)
    cluster.idle(lab)


def status(lab: Lab) -> dict[str, str]:
    """component -> "running" or "stopped": munged, slurmctld, slurmd-<node>..., temporal, sshd,
    prometheus, dcgm-<node>..."""
    pids: dict[str, int | None] = {
        "munged": cluster.munged_pid(lab),
        "slurmctld": cluster.slurmctld_pid(lab),
        **{cluster.slurmd_component(n): cluster.slurmd_pid(lab, n) for n in lab.nodes},
        "temporal": temporal_server.pid(lab),
        "sshd": sshd.pid(lab),
        "prometheus": prometheus.pid(lab),
        **{dcgm.component(n): dcgm.pid(lab, n) for n in lab.nodes},
    }
    return {name: "stopped" if pid is None else "running" for name, pid in pids.items()}


def kill_node(lab: Lab, node: str) -> None:
    """Node loss: SIGKILL the node's slurmd and every process on it (tasks, slurmstepd).

    Slurm marks the node NOT_RESPONDING after about 10 s and DOWN after about 15-20 s.
    """
    cluster.kill_node(lab, node)


def start_node(lab: Lab, node: str) -> None:
    """Bring the node's slurmd back; returns once the controller sees it up (ReturnToService=2)."""
    cluster.start_slurmd(lab, node)
    _wait_nodes(lab, [node])


def stop_temporal(lab: Lab, kill: bool = False) -> None:
    """SIGTERM, or SIGKILL with `kill` (a crash); workflows persist in the lab's SQLite file."""
    temporal_server.stop(lab, kill=kill)


def start_temporal(lab: Lab) -> None:
    temporal_server.start(lab)


def stop_slurmctld(lab: Lab) -> None:
    """Stop only the controller: slurmds and running jobs carry on, clients fail to connect."""
    cluster.stop_slurmctld(lab)


def start_slurmctld(lab: Lab) -> None:
    """Restart the controller from its saved state and wait until the running slurmds are up again."""
    cluster.start_slurmctld(lab)
    _wait_nodes(lab, [n for n in lab.nodes if cluster.slurmd_pid(lab, n) is not None])


def _clear_job_state(lab: Lab) -> None:
    for folder in (lab.out_dir, lab.ckpt_dir, lab.faults_dir):
        shutil.rmtree(folder, ignore_errors=True)
    for db in (lab.audit_db, lab.temporal_db):
        for path in db.parent.glob(db.name + "*"):  # the database and its -wal / -shm files
            path.unlink()


def _make_dirs(lab: Lab) -> None:
    for folder in (
        lab.etc_dir, lab.run_dir / "munge", lab.log_dir, lab.state_dir, lab.out_dir, lab.ckpt_dir,
        lab.kernel_dir, lab.faults_dir, lab.ssh_dir, lab.temporal_db.parent,
    ):  # fmt: skip
        folder.mkdir(parents=True, exist_ok=True)
    # munged refuses a key directory that others can read.
    lab.munge_key.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    lab.munge_key.parent.chmod(0o700)


def _wait_nodes(lab: Lab, nodes: list[str] | None = None) -> None:
    wanted = lab.nodes if nodes is None else nodes
    if not procs.wait_until(lambda: cluster.nodes_up(lab, wanted), NODES_TIMEOUT, interval=0.1):
        raise RuntimeError(f"nodes not up after {NODES_TIMEOUT:.0f} s: {cluster.why_not_up(lab)}")
