"""The container sandbox as a whole: the same operations as the multi-slurmd one
(up, down, reset, status, kill_node, start_node) plus the faults only separate
hosts can have (pause, network partition).

Respawn runs outside the cluster, on the host, as in production: its local
transport reaches slurmctld at the head's published port, signing with a munged
on the host that holds the cluster's key; its SSH transport reaches the head's
sshd, whose host key is pinned in the lab's known_hosts.
"""

import shutil

from respawn.sandbox import cluster as host_daemons
from respawn.sandbox import procs
from respawn.sandbox import temporal as temporal_server  # `up` has a parameter named temporal
from respawn.sandbox.containers import cluster, images
from respawn.sandbox.containers import engine as engines
from respawn.sandbox.containers.engine import Engine
from respawn.sandbox.containers.lab import HOST, SSH_PORT, TEMPORAL_PORT, TEMPORAL_UI_PORT, ContainerLab

NODES_TIMEOUT = 60.0
# The container lane of `make test` runs niced beside the main lane on two cores: a deadline,
# not a delay (the wait ends when sshd answers, or when the head has stopped).
SSH_TIMEOUT = 90.0


def engine(lab: ContainerLab) -> Engine:
    """The lab's container engine, started if needed."""
    return engines.start(lab.etc_dir, lab.run_dir, lab.log_dir)


def up(lab: ContainerLab, nodes: int = 4, ssh: bool = True, temporal: bool = True) -> None:
    """Start whatever is not running; returns when every node is up in Slurm, the
    head's sshd is pinned and Temporal is healthy. A second `up` is harmless.

    Without a running head the cluster starts fresh: new containers, config and
    known_hosts, no job state (job ids start at 1), empty kernel logs.
    The images are built on first use and reused (images.py).
    """
    if nodes < 1:
        raise ValueError(f"a cluster needs at least one node, not {nodes}")
    eng = engine(lab)
    if cluster.states(eng, lab).get(cluster.HEAD) != "running":
        image = images.node_image(eng, lab.log_dir / "images.log")
        temporal_server.stop(lab)
        cluster.remove_all(eng, lab)
        _fresh_lab(lab, [f"node{i}" for i in range(1, nodes + 1)])
        host_daemons.start_munged(lab)
        cluster.create_network(lab)
        for node in lab.nodes:
            cluster.start_node(lab, image, node)
        cluster.start_head(lab, image)
    elif len(lab.nodes) != nodes:
        raise RuntimeError(f"the lab at {lab.root} runs {len(lab.nodes)} nodes, not {nodes}: take it down first")
    procs.trim_logs(lab.log_dir)
    host_daemons.start_munged(lab)
    for node in lab.nodes:
        _ensure_running(eng, lab, node)
    if ssh:
        _pin_host_key(lab)
    if temporal:
        start_temporal(lab)
    _wait_nodes(lab, lab.nodes)


def down(lab: ContainerLab) -> None:
    """Remove every container and the network of this lab, stop its Temporal, munged
    and Podman service; nothing of it runs afterwards (the images stay)."""
    temporal_server.stop(lab)
    try:
        # Started if need be: Podman's containers outlive its API service.
        eng: Engine | None = engine(lab)
    except engines.EngineError:
        eng = None  # no engine, so no containers either
    if eng is not None:
        cluster.remove_all(eng, lab)
    munged = host_daemons.munged_pid(lab)
    if munged is not None:
        procs.terminate([munged])
    engines.stop(lab.run_dir)


def reset(lab: ContainerLab) -> None:
    """Back to an idle cluster without recreating it: every job cancelled, every node's
    container running and attached, every node resumed."""
    eng = engine(lab)
    for node in lab.nodes:
        _ensure_running(eng, lab, node)
    host_daemons.idle(lab)


def status(lab: ContainerLab) -> dict[str, str]:
    """component -> "running", "stopped", or the engine's word for a container (paused, exited...)."""
    engine_up = engines.running(lab.run_dir)
    result = {engines.chosen(): "running" if engine_up else "stopped"}
    containers = cluster.states(engine(lab), lab) if engine_up else {}
    result |= {host: containers.get(host, "stopped") for host in [cluster.HEAD, *lab.nodes]}
    result["munged"] = "stopped" if host_daemons.munged_pid(lab) is None else "running"
    result["temporal"] = "stopped" if temporal_server.pid(lab) is None else "running"
    return result


def kill_node(lab: ContainerLab, node: str) -> None:
    """Node loss: SIGKILL the node's container, everything in it dies at once; returns once it has.

    Slurm marks the node NOT_RESPONDING after about 10 s and DOWN after about 15-20 s.
    """
    _check_node(lab, node)
    with cluster.container(engine(lab), lab, node) as handle:
        handle.kill()
        handle.wait(timeout=30)  # returns once the container has stopped, not when the signal is sent


def start_node(lab: ContainerLab, node: str) -> None:
    """The node back from any fault (killed, paused, disconnected); returns once Slurm sees it up."""
    _check_node(lab, node)
    _ensure_running(engine(lab), lab, node)
    _wait_nodes(lab, [node])


def pause_node(lab: ContainerLab, node: str) -> None:
    """Node hang: freeze every process of the node (the cgroup freezer); nothing exits."""
    _check_node(lab, node)
    with cluster.container(engine(lab), lab, node) as handle:
        handle.pause()


def disconnect_node(lab: ContainerLab, node: str) -> None:
    """Network partition: the node keeps running, cut off from the controller and its peers."""
    _check_node(lab, node)
    cluster.disconnect(engine(lab), lab, node)


def write_kernel_log(lab: ContainerLab, node: str, line: str) -> None:
    """Append `line` to the node's kernel log from inside its container, as the node's
    kernel (via rsyslog) would; the host sees it at lab.kernel_log(node)."""
    _check_node(lab, node)
    with cluster.container(engine(lab), lab, node) as handle:
        result = handle.exec_run(["sh", "-c", f'printf "%s\\n" "$1" >> {cluster.KERNEL_LOG}', "sh", line])
    if result.exit_code != 0:
        raise RuntimeError(f"writing {node}'s kernel log failed: {result.output.decode(errors='replace')}")


def start_temporal(lab: ContainerLab) -> None:
    """This lab's own Temporal dev server (SQLite in the lab), on the container lab's ports."""
    log = lab.log_dir / "temporal.log"
    if temporal_server.pid(lab) is None:
        lab.temporal_db.parent.mkdir(parents=True, exist_ok=True)
        argv = [
            temporal_server.binary(), "server", "start-dev", "--db-filename", str(lab.temporal_db), "--ip", HOST,
            "--port", str(TEMPORAL_PORT), "--ui-port", str(TEMPORAL_UI_PORT), "--log-level", "warn",
        ]  # fmt: skip
        for name in temporal_server.SEARCH_ATTRIBUTES:
            argv += ["--search-attribute", f"{name}=Keyword"]
        procs.spawn_detached(argv, log, lab.pid_file("temporal"))
    if not procs.wait_until(
        lambda: temporal_server.pid(lab) is not None and temporal_server.healthy(lab),
        temporal_server.START_TIMEOUT,
        interval=0.2,
    ):
        raise RuntimeError(
            f"temporal not healthy on {lab.temporal_address}; last lines of {log}:\n{procs.log_tail(log)}"
        )


def _fresh_lab(lab: ContainerLab, nodes: list[str]) -> None:
    for folder in (lab.out_dir, lab.ckpt_dir, lab.faults_dir, lab.kernel_dir):
        shutil.rmtree(folder, ignore_errors=True)
    for db in (lab.audit_db, lab.temporal_db):
        for path in db.parent.glob(db.name + "*"):  # the database and its -wal / -shm files
            path.unlink()
    for folder in (
        lab.etc_dir,
        lab.cluster_conf.parent,
        lab.run_dir / "munge",
        lab.log_dir,
        lab.state_dir,
        lab.out_dir,
        lab.ckpt_dir,
        lab.kernel_dir,
        lab.faults_dir,
        lab.temporal_db.parent,
    ):
        folder.mkdir(parents=True, exist_ok=True)
    lab.munge_key.parent.mkdir(mode=0o700, exist_ok=True)
    lab.munge_key.parent.chmod(0o700)  # munged refuses a key directory that others can read
    for node in nodes:
        lab.kernel_log(node).write_text("")  # a fresh node boots with an empty kernel log
    lab.cluster_conf.write_text(cluster.slurm_conf(lab, nodes, host_side=False))
    lab.slurm_conf.write_text(cluster.slurm_conf(lab, nodes, host_side=True))
    _ssh_keys(lab)


def _ssh_keys(lab: ContainerLab) -> None:
    lab.ssh_dir.mkdir(parents=True, exist_ok=True)
    lab.ssh_dir.chmod(0o700)
    for key, comment in ((lab.ssh_key, "respawn-containers-client"), (lab.ssh_host_key, "respawn-containers-head")):
        if not key.exists():
            keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(key)]
            procs.check(procs.run(keygen), "ssh-keygen")
    (lab.ssh_dir / "authorized_keys").write_text(lab.ssh_key.with_suffix(".pub").read_text())
    (lab.ssh_dir / "sshd_config").write_text(cluster.sshd_config(lab))


def _pin_host_key(lab: ContainerLab) -> None:
    """known_hosts from ssh-keyscan of the published port, checked against the head's own
    host key, so that another sshd that happens to hold the port is never pinned."""
    expected = lab.ssh_host_key.with_suffix(".pub").read_text().split()[:2]
    where = f"{HOST}:{SSH_PORT}"

    answer: str | None = None  # ssh-keyscan's known_hosts line
    complaint = ""  # and its last words on stderr (refused, timed out...)

    def answered_or_gone() -> bool:
        nonlocal answer, complaint
        result = procs.run(["ssh-keyscan", "-p", str(SSH_PORT), "-t", "ed25519", HOST], timeout=15)
        complaint = result.stderr.strip()
        lines = [line for line in result.stdout.splitlines() if line and not line.startswith("#")]
        answer = lines[0] if len(lines) == 1 else None
        return answer is not None or _state(lab, cluster.HEAD) != "running"

    procs.wait_until(answered_or_gone, SSH_TIMEOUT, interval=0.5)
    if answer is None:
        raise RuntimeError(
            f"the head's sshd does not answer on {where} ({complaint or 'no answer'})\n{_head_said(lab)}"
        )
    # A known_hosts line is "host keytype base64"; the .pub file is "keytype base64 comment".
    if answer.split()[1:3] != expected:
        raise RuntimeError(f"ssh-keyscan of {where} did not return the head's host key: {answer!r}")
    lab.known_hosts.write_text(answer + "\n")


def _state(lab: ContainerLab, host: str) -> str:
    return cluster.states(engine(lab), lab).get(host, "missing")


def _head_said(lab: ContainerLab) -> str:
    """The head container's state and the last words of its programs, so that a failed start
    explains itself where only the error is kept (a CI log)."""
    if _state(lab, cluster.HEAD) == "missing":
        said = ["head container: missing (removed)"]
    else:
        with cluster.container(engine(lab), lab, cluster.HEAD) as handle:
            handle.reload()
            state = handle.attrs["State"]
            output = handle.logs(tail=15).decode(errors="replace").rstrip()
        error = f": {state['Error']}" if state.get("Error") else ""
        said = [f"head container: {state['Status']} (exit code {state.get('ExitCode')}){error}"]
        said.append(f"its output:\n{output or '(none)'}")
    for log in ("sshd.log", "munged-head.log"):
        said.append(f"{lab.log_dir / log}:\n{procs.log_tail(lab.log_dir / log, lines=8)}")
    return "\n".join(said)


def _ensure_running(eng: Engine, lab: ContainerLab, host: str) -> None:
    """Whatever a fault did to the container (killed, paused, cut off), undo it."""
    with cluster.container(eng, lab, host) as handle:
        if handle.status == "paused":
            handle.unpause()
        elif handle.status != "running":
            handle.start()
        handle.reload()
        attached = cluster.names(lab).network in handle.attrs["NetworkSettings"]["Networks"]
    if not attached:
        cluster.reconnect(eng, lab, host)
        if host != cluster.HEAD:
            # A DOWN node is asked to register only every ~60 s (20 pings). Its slurmd
            # (the container's PID 1) registers at once on SIGHUP, as on its own restart.
            with cluster.container(eng, lab, host) as handle:
                handle.exec_run(["kill", "-HUP", "1"])


def _wait_nodes(lab: ContainerLab, nodes: list[str]) -> None:
    if not procs.wait_until(lambda: host_daemons.nodes_up(lab, nodes), NODES_TIMEOUT, interval=0.5):
        raise RuntimeError(f"nodes not up after {NODES_TIMEOUT:.0f} s: {host_daemons.why_not_up(lab)}")


def _check_node(lab: ContainerLab, node: str) -> None:
    if node not in lab.nodes:
        raise ValueError(f"{node!r} is not a node of this lab ({', '.join(lab.nodes)})")
