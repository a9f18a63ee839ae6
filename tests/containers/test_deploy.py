"""The deployment artefacts of deploy/, tested for real: the image built here with Podman,
the Kubernetes manifests started with `podman kube play` (Temporal, the worker, the server),
and torn down with `podman kube down`.

What `podman kube play` does not do is done here, and only that: it ignores Services, so the
pods reach Temporal by its Service's name through a hostAliases entry this test adds (the
Service's DNS name in Kubernetes), on a network of their own with fixed addresses; and it
publishes every containerPort on the host, so the test gives each a host port of its own,
on loopback (25400-25419). Podman 4.3 (Debian 12's) mounts a Secret's `data` without
base64-decoding it and ignores `stringData` (containers/podman#16625, fixed in 4.4): the
test writes its Secret for the Podman it runs on.
"""

import base64
import fcntl
import json
import os
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from respawn.sandbox import temporal
from respawn.sandbox.containers import images
from respawn.sandbox.containers.cluster import REPO

WORK = Path(os.environ.get("RESPAWN_DEPLOY_TEST_DIR", "/tmp/respawn-deploy"))
MANIFESTS = REPO / "deploy" / "kubernetes"
NETWORK = "respawn-deploy-test"
SUBNET = "10.217.49.0/24"
TEMPORAL_IP, WORKER_IP, SERVER_IP = "10.217.49.10", "10.217.49.11", "10.217.49.12"
# Host ports, in the order the manifests list their containers' ports.
HOST_PORTS = {"temporal.yaml": [25400, 25401], "respawn.yaml": [25402, 25403]}
TEMPORAL, SERVER = "127.0.0.1:25400", "http://127.0.0.1:25403"
TASK_QUEUE = "respawn-gpu-a"  # the ConfigMap's cluster
# What kube play creates beside the pods: the claims' volumes, the ConfigMap's and the
# Secret's, and each pod's emptyDir (a named volume in Podman 4.3).
VOLUMES = (
    "respawn-state", "respawn-job-output", "respawn-config", "respawn-secrets",
    "respawn-temporal-tmp", "respawn-worker-tmp", "respawn-server-tmp",
)  # fmt: skip
PODS = ("respawn-temporal-pod-0", "respawn-worker-pod-0", "respawn-server-pod-0")
SECRET = "respawn-secrets"
DEADLINE_S = 90.0


@dataclass(frozen=True)
class ControlPlane:
    operators_token: str
    dashboards_token: str


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done


def until(check, what: str, deadline_s: float = DEADLINE_S):
    """Poll `check` until it returns something truthy; fail saying `what` past the deadline."""
    end, last = time.monotonic() + deadline_s, None
    while time.monotonic() < end:
        try:
            found = check()
        except (OSError, httpx.HTTPError, subprocess.SubprocessError, ValueError) as exc:
            found, last = None, exc
        if found:
            return found
        time.sleep(0.5)
    raise AssertionError(f"timed out after {deadline_s:.0f} s waiting for {what} (last error: {last})")


def _podman_version() -> tuple[int, int]:
    found = re.search(r"(\d+)\.(\d+)", podman("--version").stdout)
    assert found, "podman --version names no version"
    return int(found[1]), int(found[2])


def _secret_manifest(values: dict[str, str]) -> str:
    if _podman_version() < (4, 4):
        # It decodes `data`, stores it encoded again, and mounts what it stored: the file holds
        # the value as written, which must be canonical base64 (hex tokens are).
        data = values
    else:
        data = {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}
    return yaml.safe_dump({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET}, "data": data})


def _deployments() -> list[dict]:
    docs = [doc for name in HOST_PORTS for doc in yaml.safe_load_all((MANIFESTS / name).read_text())]
    return [doc for doc in docs if doc["kind"] == "Deployment"]


def _for_podman(manifest: Path) -> Path:
    """The manifest as Podman can play it: each pod resolving the Temporal Service's name to its
    pod's address, each containerPort published on a loopback port of its own."""
    docs = list(yaml.safe_load_all(manifest.read_text()))
    host_ports = iter(HOST_PORTS[manifest.name])
    for doc in docs:
        if doc["kind"] == "Deployment":
            spec = doc["spec"]["template"]["spec"]
            spec["hostAliases"] = [{"ip": TEMPORAL_IP, "hostnames": ["respawn-temporal"]}]
            for container in spec["containers"]:
                for port in container.get("ports", []):
                    port.update(hostIP="127.0.0.1", hostPort=next(host_ports))
    played = WORK / manifest.name
    played.write_text(yaml.safe_dump_all(docs))
    return played


def _down(played: list[Path]) -> None:
    for manifest in played:
        podman("kube", "down", str(manifest), check=False)
    podman("secret", "rm", SECRET, check=False)
    podman("volume", "rm", "--force", *VOLUMES, check=False)
    podman("network", "rm", "--force", NETWORK, check=False)


@pytest.fixture(scope="module")
def image() -> str:
    """The Respawn image, built unless its recipe and sources are unchanged (images.py)."""
    WORK.mkdir(parents=True, exist_ok=True)
    tag = images.respawn_image(WORK / "image", WORK / "image.log")
    named = {doc["spec"]["template"]["spec"]["containers"][0]["image"] for doc in _deployments()}
    assert named == {images.release_tag()}  # the image the build tags is the one the manifests run
    return tag


@pytest.fixture(scope="module")
def control_plane(image: str) -> Iterator[ControlPlane]:
    """Temporal, the worker and the server as deploy/kubernetes/ describes them, and nothing
    of them left afterwards."""
    with open(WORK / "tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # fixed names and addresses: one session at a time
        plane = ControlPlane(operators_token=secrets.token_hex(16), dashboards_token=secrets.token_hex(16))
        secret = WORK / "secret.yaml"
        secret.write_text(
            _secret_manifest(
                # No SSH key: no incident reaches Slurm here, and the worker connects only then.
                {"operators.token": plane.operators_token, "dashboards.token": plane.dashboards_token}
            )
        )
        temporal_pod, respawn = _for_podman(MANIFESTS / "temporal.yaml"), _for_podman(MANIFESTS / "respawn.yaml")
        played = [secret, temporal_pod, respawn]
        _down(played)  # what an interrupted session left
        try:
            podman("network", "create", "--subnet", SUBNET, NETWORK)
            podman("kube", "play", str(secret))
            podman("kube", "play", "--network", NETWORK, "--ip", TEMPORAL_IP, str(temporal_pod))
            podman("kube", "play", "--network", NETWORK, "--ip", WORKER_IP, "--ip", SERVER_IP, str(respawn))
            yield plane
        finally:
            _down(played)


def _running(pod: str) -> bool:
    info = json.loads(podman("pod", "inspect", pod).stdout)
    info = info[0] if isinstance(info, list) else info
    states = [c["State"] for c in info["Containers"]]
    return info["State"] == "Running" and all(s == "running" for s in states)


def test_the_pods_run_as_the_dedicated_user_on_a_read_only_root(control_plane: ControlPlane):
    for pod in PODS:
        until(lambda: _running(pod), f"pod {pod} running")
    worker = "respawn-worker-pod-0-worker"
    assert podman("exec", worker, "id", "-u").stdout.strip() == "900"
    denied = podman("exec", worker, "touch", "/opt/respawn/x", check=False)
    assert denied.returncode != 0 and "Read-only file system" in denied.stderr
    # The state volume is the respawn user's, and the worker's and the server's alike: the
    # audit trail one of them created there is the other's too.
    for container in (worker, "respawn-server-pod-0-server"):
        owned = ["exec", container, "test", "-O", "/var/lib/respawn/audit.db"]
        until(lambda: podman(*owned, check=False).returncode == 0, f"{container}'s own audit trail")


def test_the_server_answers_with_the_secrets_tokens(control_plane: ControlPlane):
    base = SERVER
    health = until(lambda: httpx.get(f"{base}/healthz", timeout=2).json(), "the server's /healthz")
    assert health == {"status": "ok", "cluster": "gpu-a"}  # the ConfigMap's cluster
    assert httpx.get(f"{base}/api/v1/audit", timeout=5).status_code == 401
    wrong = httpx.get(f"{base}/api/v1/audit", headers={"Authorization": "Bearer " + "0" * 32}, timeout=5)
    assert wrong.status_code == 401
    for token in (control_plane.operators_token, control_plane.dashboards_token):
        page = httpx.get(f"{base}/api/v1/audit", headers={"Authorization": f"Bearer {token}"}, timeout=5)
        assert page.status_code == 200, page.text


def test_the_worker_polls_the_clusters_task_queue_on_temporal(control_plane: ControlPlane):
    def pollers() -> set[tuple[str, str]]:
        described = subprocess.run(
            [temporal.binary(), "task-queue", "describe", "--task-queue", TASK_QUEUE,
             "--address", TEMPORAL, "--output", "json"],
            capture_output=True, text=True, timeout=20, check=False,
        )  # fmt: skip
        if described.returncode != 0:
            return set()
        found = {(p["taskQueueType"], p["identity"]) for p in json.loads(described.stdout).get("pollers") or []}
        return found if len(found) >= 2 else set()  # both kinds of task, polled at once

    # The worker pod's process (pid 1 in its container): workflow tasks and activities alike.
    found = until(pollers, f"the worker polling task queue {TASK_QUEUE}")
    assert found == {("workflow", "1@respawn-worker-pod-0"), ("activity", "1@respawn-worker-pod-0")}


def test_kube_down_leaves_no_pod_volume_or_secret(control_plane: ControlPlane):
    _down([WORK / "secret.yaml", WORK / "temporal.yaml", WORK / "respawn.yaml"])
    pods = podman("pod", "ps", "--format", "{{.Name}}").stdout.split()
    volumes = podman("volume", "ls", "--format", "{{.Name}}").stdout.split()
    secrets_left = podman("secret", "ls", "--format", "{{.Name}}").stdout.split()
    assert not set(PODS) & set(pods) and not set(VOLUMES) & set(volumes) and SECRET not in secrets_left
