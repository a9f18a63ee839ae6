"""The control plane on several hosts (issue 17, item 4): each a network namespace of its own.

    root namespace (the Slurm head, 10.77.0.1): the sandbox's Slurm, its sshd, the detector
    rsp-pg       10.77.0.2  PostgreSQL (the audit trail and advice of every process)
    rsp-temporal 10.77.0.3  a Temporal dev server of this module's own
    rsp-w1, -w2  10.77.0.4-5  two workers on the same task queue, reaching Slurm by SSH
    rsp-srv      10.77.0.6  the HTTP server

linked by one bridge. Nothing but their addresses joins them: the workers see
Slurm only through SSH to the head (the sandbox's sshd listens on 127.0.0.1, so a
forwarder on the head's bridge address carries it there), and every process
reaches the store over TCP. The file system is shared, as a cluster's is (job
output, kernel logs). An incident waits for an operator's approval; the worker
that runs its workflow is killed; after the approval the other one acts, and
every step is recorded once.
"""

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import PostgresDsn
from temporalio.client import Client

from respawn.audit.trail import EventType
from respawn.config.cluster import SchedulerAccess
from respawn.sandbox import postgres
from respawn.sandbox import temporal as temporal_server
from respawn.sandbox.demo import wait_for_first_poll
from respawn.sandbox.lab import Lab
from respawn.sandbox.labconfig import READ_TOKEN, lab_config
from respawn.sandbox.workload.faults import FaultKind, inject
from respawn.sandbox.workload.submit import submit
from tests.recovery_stack import Cluster, until, write_config

BRIDGE = "rsp-br0"
HEAD = "10.77.0.1"
HOSTS = {"rsp-pg": "10.77.0.2", "rsp-temporal": "10.77.0.3", "rsp-w1": "10.77.0.4", "rsp-w2": "10.77.0.5"}
HOSTS["rsp-srv"] = "10.77.0.6"
TEMPORAL = f"{HOSTS['rsp-temporal']}:7233"
SSH_PORT = 22022
SERVER_PORT = 18080
GATED = '{"respawn":{"environment":"gated","mode":"action"}}'
RESPAWN = str(Path(sys.executable).parent / "respawn")


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


def in_host(host: str, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", host, *argv]


@pytest.fixture(scope="module")
def network() -> Iterator[None]:
    """The bridge and a namespace per host; removed at the end, whatever happened."""
    teardown_network()
    try:
        ip("link", "add", BRIDGE, "type", "bridge")
        ip("addr", "add", f"{HEAD}/24", "dev", BRIDGE)
        ip("link", "set", BRIDGE, "up")
        for i, (host, address) in enumerate(HOSTS.items()):
            outside, inside = f"rsp-v{i}", f"rsp-v{i}p"
            ip("netns", "add", host)
            ip("link", "add", outside, "type", "veth", "peer", "name", inside)
            ip("link", "set", inside, "netns", host)
            ip("link", "set", outside, "master", BRIDGE)
            ip("link", "set", outside, "up")
            ip("-n", host, "addr", "add", f"{address}/24", "dev", inside)
            ip("-n", host, "link", "set", inside, "up")
            ip("-n", host, "link", "set", "lo", "up")
        yield
    finally:
        teardown_network()


def teardown_network() -> None:
    for host in HOSTS:
        subprocess.run(["ip", "netns", "del", host], capture_output=True, timeout=30)  # its veths go with it
    subprocess.run(["ip", "link", "del", BRIDGE], capture_output=True, timeout=30)


class Forwarder:
    """TCP from the head's bridge address to the sandbox's sshd on 127.0.0.1 (a Slurm head's
    sshd would listen on the cluster network itself)."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._port)
        await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))

    def __enter__(self) -> "Forwarder":
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, HEAD, self._port))
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=30)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _shutdown(self) -> None:
        self._server.close()
        pipes = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pipes:
            task.cancel()
        await asyncio.gather(*pipes, return_exceptions=True)


class Process:
    """A Respawn process on a host; its pid is the Python process's (`ip netns exec` execs it)."""

    def __init__(self, lab: Lab, host: str | None, role: str, config: Path, *args: str) -> None:
        argv = [sys.executable, "-m", "respawn.surfaces.cli", role, "--config", str(config), *args]
        self.log = lab.log_dir / f"respawn-hosts-{host or 'head'}-{role}.log"
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                in_host(host, argv) if host else argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def control_plane(sandbox, network) -> Iterator[tuple[Cluster, dict[str, Process], Path]]:
    folder = Path(tempfile.mkdtemp(prefix="respawn-hosts-"))
    os.chmod(folder, 0o755)
    pg = postgres.Postgres(folder / "pg", host=HOSTS["rsp-pg"], allow=("10.77.0.0/24",))
    temporal_log = open(sandbox.log_dir / "temporal-hosts.log", "ab")
    temporal_argv = [
        temporal_server.binary(), "server", "start-dev", "--db-filename", str(folder / "temporal.db"),
        # Every address of its host: its services also reach each other on 127.0.0.1.
        "--ip", "0.0.0.0", "--port", "7233", "--ui-port", "8234", "--log-level", "warn",
    ]  # fmt: skip
    for name in temporal_server.SEARCH_ATTRIBUTES:
        temporal_argv += ["--search-attribute", f"{name}=Keyword"]
    temporal = subprocess.Popen(in_host("rsp-temporal", temporal_argv), stdout=temporal_log, stderr=subprocess.STDOUT)
    processes: dict[str, Process] = {}
    try:
        # PostgreSQL started in its host: the server it forks listens there.
        start = (
            "from pathlib import Path; from respawn.sandbox import postgres;"
            f" postgres.start(postgres.Postgres(Path({str(pg.folder)!r}), host={pg.host!r}, allow={pg.allow!r}))"
        )
        subprocess.run(in_host("rsp-pg", [sys.executable, "-c", start]), check=True, timeout=120, cwd=Path.cwd())
        known_hosts = folder / "known_hosts"
        known_hosts.write_text(sandbox.known_hosts.read_text().replace("[127.0.0.1]", f"[{HEAD}]"))
        base = lab_config(sandbox, SchedulerAccess.LOCAL)
        common = {
            "cluster": "hosts",
            "audit_db": PostgresDsn(pg.url()),
            "temporal": base.temporal.model_copy(update={"address": TEMPORAL}),
            "metrics": None,  # the sandbox's Prometheus is the head's alone
        }
        head = base.model_copy(update=common)
        ssh = lab_config(sandbox, SchedulerAccess.SSH).scheduler
        assert ssh.ssh is not None
        remote = ssh.model_copy(update={"ssh": ssh.ssh.model_copy(update={"host": HEAD, "known_hosts": known_hosts})})
        server = base.server.model_copy(update={"host": HOSTS["rsp-srv"], "port": SERVER_PORT})
        elsewhere = base.model_copy(update={**common, "scheduler": remote, "server": server})
        head_path = write_config(head, folder / "head.yaml")
        elsewhere_path = write_config(elsewhere, folder / "elsewhere.yaml")
        asyncio.run(_wait_temporal())
        with Forwarder(SSH_PORT):
            try:
                processes["w1"] = Process(sandbox, "rsp-w1", "worker", elsewhere_path)
                processes["w2"] = Process(sandbox, "rsp-w2", "worker", elsewhere_path)
                processes["server"] = Process(sandbox, "rsp-srv", "serve", elsewhere_path)
                processes["detector"] = Process(sandbox, None, "detector", head_path)
                # A job that failed before the detector's first poll is history to it, never
                # recovered: under CI's load the detector took long enough to start for this
                # module's job to checkpoint and fail before it (both workers then idle throughout).
                wait_for_first_poll(head_path, processes["detector"].proc, processes["detector"].log)
                yield Cluster(sandbox, head), processes, head_path
            finally:  # before the forwarder goes: the workers' SSH connections run through it
                for p in processes.values():
                    p.stop()
    finally:
        temporal.terminate()
        temporal.wait(timeout=30)
        temporal_log.close()
        postgres.stop(pg)
        shutil.rmtree(folder, ignore_errors=True)


async def _wait_temporal() -> None:
    async def connected() -> bool:
        try:
            await Client.connect(TEMPORAL)
        except RuntimeError:
            return False
        return True

    await until(connected, 60, f"Temporal on {TEMPORAL}")


async def _worker_of(incident: str) -> int:
    """The pid of the worker that completed the incident's last workflow task (its identity is pid@host)."""
    client = await Client.connect(TEMPORAL)
    identities = [
        e.workflow_task_completed_event_attributes.identity
        async for e in client.get_workflow_handle(incident).fetch_history_events()
        if e.HasField("workflow_task_completed_event_attributes")
    ]
    return int(identities[-1].split("@")[0])


async def test_a_worker_killed_mid_incident_leaves_it_to_the_other_every_step_once(control_plane):
    cluster, processes, head_config = control_plane
    job_id = submit(cluster.lab, nodes=3, steps=40, checkpoint_every=10, step_seconds=0.3, comment=GATED, name="hosts")
    await cluster.wait_checkpoint(job_id)
    incident = await cluster.incident_of(job_id)
    inject(cluster.lab, job_id, "node2", FaultKind.XID)
    await until(lambda: EventType.DECIDED in cluster.types(job_id), 60, "the decision awaiting approval")

    holder = await _worker_of(incident)
    [killed] = [name for name in ("w1", "w2") if processes[name].proc.pid == holder]
    processes[killed].proc.send_signal(signal.SIGKILL)
    processes[killed].proc.wait()
    approve = [RESPAWN, "override", str(job_id), "--approve", "--reason", "go", "--config", str(head_config)]
    approved = subprocess.run(approve, capture_output=True, text=True, timeout=60, check=False)
    assert approved.returncode == 0, approved.stderr
    job = await cluster.wait_state(job_id, {"COMPLETED"}, timeout=240, min_restarts=1)
    assert "node2" not in job.nodes

    await until(lambda: EventType.INCIDENT_CLOSED in cluster.types(job_id), 60, "the incident to close")
    types = cluster.types(job_id)
    for step in (EventType.DECIDED, EventType.HELD, EventType.EXCLUDED, EventType.RELEASED, EventType.INCIDENT_CLOSED):
        assert types.count(step) == 1, (step, types)
    survivor = processes["w2" if killed == "w1" else "w1"].proc.pid
    assert await _worker_of(incident) == survivor

    # The server, on a host of its own, reads the same trail.
    async with httpx.AsyncClient(base_url=f"http://{HOSTS['rsp-srv']}:{SERVER_PORT}") as http:
        got = await http.get(
            "/api/v1/audit", params={"job_id": job_id}, headers={"Authorization": f"Bearer {READ_TOKEN}"}
        )
    assert got.status_code == 200, got.text
    assert [e["event_type"] for e in got.json()["events"]].count("released") == 1
