"""The control plane of deploy/kubernetes/ started with `podman kube play`, for
tests/containers/test_deploy.py and benchmarks/control_plane_footprint.py.

What `podman kube play` does not do is done here, and only that: it ignores Services, so the
pods reach Temporal by its Service's name through a hostAliases entry added here (the
Service's DNS name in Kubernetes), on a network of their own with fixed addresses; and it
publishes every containerPort on the host, so each gets a host port of its own, on loopback
(25400-25419). Podman 4.3 (Debian 12's) mounts a Secret's `data` without base64-decoding it
and ignores `stringData` (containers/podman#16625, fixed in 4.4): the Secret is written for
the Podman it runs on.
"""

import base64
import fcntl
import json
import re
import secrets
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import yaml

from respawn.sandbox import temporal
from respawn.sandbox.containers import images
from respawn.sandbox.containers.cluster import REPO

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
    played: list[Path]  # the manifests as played, in order
    image: str  # the built image's own tag, localhost/respawn:<hash of its inputs>


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


def deployments() -> list[dict]:
    docs = [doc for name in HOST_PORTS for doc in yaml.safe_load_all((MANIFESTS / name).read_text())]
    return [doc for doc in docs if doc["kind"] == "Deployment"]


def _for_podman(manifest: Path, work: Path) -> Path:
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
    played = work / manifest.name
    played.write_text(yaml.safe_dump_all(docs))
    return played


def down(played: list[Path]) -> None:
    for manifest in played:
        podman("kube", "down", str(manifest), check=False)
    podman("secret", "rm", SECRET, check=False)
    podman("volume", "rm", "--force", *VOLUMES, check=False)
    podman("network", "rm", "--force", NETWORK, check=False)


def built_image(work: Path) -> str:
    """The Respawn image, built unless its recipe and sources are unchanged (images.py)."""
    work.mkdir(parents=True, exist_ok=True)
    return images.respawn_image(work / "image", work / "image.log")


@contextmanager
def played(work: Path, image: str) -> Iterator[ControlPlane]:
    """Temporal, the worker and the server as deploy/kubernetes/ describes them, and nothing
    of them left afterwards. Holds `work`/tests.lock: fixed names and addresses."""
    with open(work / "tests.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        tokens = {"operators.token": secrets.token_hex(16), "dashboards.token": secrets.token_hex(16)}
        secret = work / "secret.yaml"
        # No SSH key: no incident reaches Slurm here, and the worker connects only then.
        secret.write_text(_secret_manifest(tokens))
        played = [secret, *(_for_podman(MANIFESTS / name, work) for name in ("temporal.yaml", "respawn.yaml"))]
        down(played)  # what an interrupted session left
        try:
            podman("network", "create", "--subnet", SUBNET, NETWORK)
            podman("kube", "play", str(secret))
            podman("kube", "play", "--network", NETWORK, "--ip", TEMPORAL_IP, str(played[1]))
            podman("kube", "play", "--network", NETWORK, "--ip", WORKER_IP, "--ip", SERVER_IP, str(played[2]))
            yield ControlPlane(tokens["operators.token"], tokens["dashboards.token"], played, image)
        finally:
            down(played)


def running(pod: str) -> bool:
    """The pod and every container of it running."""
    info = json.loads(podman("pod", "inspect", pod).stdout)
    info = info[0] if isinstance(info, list) else info
    states = [c["State"] for c in info["Containers"]]
    return info["State"] == "Running" and all(s == "running" for s in states)


def pollers() -> set[tuple[str, str]]:
    """(task queue type, identity) of every poller of the cluster's task queue, as Temporal sees them."""
    described = subprocess.run(
        [temporal.binary(), "task-queue", "describe", "--task-queue", TASK_QUEUE,
         "--address", TEMPORAL, "--output", "json"],
        capture_output=True, text=True, timeout=20, check=False,
    )  # fmt: skip
    if described.returncode != 0:
        return set()
    return {(p["taskQueueType"], p["identity"]) for p in json.loads(described.stdout).get("pollers") or []}
