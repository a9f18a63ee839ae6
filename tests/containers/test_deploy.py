"""The deployment artefacts of deploy/, tested for real: the image built here with Podman,
the Kubernetes manifests started with `podman kube play` (Temporal, the worker, the server;
tests/containers/kube_play.py says what Podman needs beside them), and torn down with
`podman kube down`.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from respawn.sandbox.containers import images
from respawn.sandbox.containers.cluster import REPO
from tests.containers.kube_play import (
    PODS,
    SECRET,
    SERVER,
    TASK_QUEUE,
    VOLUMES,
    ControlPlane,
    built_image,
    deployments,
    down,
    played,
    podman,
    pollers,
    running,
    until,
)

WORK = Path(os.environ.get("RESPAWN_DEPLOY_TEST_DIR", "/tmp/respawn-deploy"))
WORKER = "respawn-worker-pod-0-worker"


@pytest.fixture(scope="module")
def control_plane() -> Iterator[ControlPlane]:
    image = built_image(WORK)
    named = {doc["spec"]["template"]["spec"]["containers"][0]["image"] for doc in deployments()}
    assert named == {images.release_tag()}  # the image the build tags is the one the manifests run
    with played(WORK, image) as plane:
        yield plane


def test_the_image_holds_this_trees_code(control_plane: ControlPlane):
    # Its tag is the hash of the tree's sources; the code installed in it is the tree's own.
    tag = control_plane.image
    holds = podman("run", "--rm", "--entrypoint", "cat", tag, "/opt/respawn/SOURCES").stdout.strip()
    assert tag == f"localhost/respawn:{holds}"
    installed = "/opt/respawn/lib/python3.11/site-packages/respawn/detection/detector.py"
    shown = podman("run", "--rm", "--entrypoint", "cat", tag, installed).stdout
    assert shown == (REPO / "respawn" / "detection" / "detector.py").read_text()
    # The built-in runbooks are in the wheel: an installed Respawn needs no copy of the tree.
    runbook = "/opt/respawn/lib/python3.11/site-packages/respawn/runbooks/gpu_hardware.yaml"
    assert (
        podman("run", "--rm", "--entrypoint", "cat", tag, runbook).stdout
        == (REPO / "runbooks" / "gpu_hardware.yaml").read_text()
    )


def test_the_pods_run_as_the_dedicated_user_on_a_read_only_root(control_plane: ControlPlane):
    for pod in PODS:
        until(lambda: running(pod), f"pod {pod} running")
    assert podman("exec", WORKER, "id", "-u").stdout.strip() == "900"
    denied = podman("exec", WORKER, "touch", "/opt/respawn/x", check=False)
    assert denied.returncode != 0 and "Read-only file system" in denied.stderr
    # The state volume is the respawn user's, and the worker's and the server's alike: the
    # audit trail one of them created there is the other's too.
    for container in (WORKER, "respawn-server-pod-0-server"):
        owned = ["exec", container, "test", "-O", "/var/lib/respawn/audit.db"]
        until(lambda: podman(*owned, check=False).returncode == 0, f"{container}'s own audit trail")


def test_the_server_answers_with_the_secrets_tokens(control_plane: ControlPlane):
    health = until(lambda: httpx.get(f"{SERVER}/healthz", timeout=2).json(), "the server's /healthz")
    assert health == {"status": "ok", "cluster": "gpu-a"}  # the ConfigMap's cluster
    assert httpx.get(f"{SERVER}/api/v1/audit", timeout=5).status_code == 401
    wrong = httpx.get(f"{SERVER}/api/v1/audit", headers={"Authorization": "Bearer " + "0" * 32}, timeout=5)
    assert wrong.status_code == 401
    for token in (control_plane.operators_token, control_plane.dashboards_token):
        page = httpx.get(f"{SERVER}/api/v1/audit", headers={"Authorization": f"Bearer {token}"}, timeout=5)
        assert page.status_code == 200, page.text


def test_the_worker_polls_the_clusters_task_queue_on_temporal(control_plane: ControlPlane):
    # Both kinds of task, polled by the worker pod's process (pid 1 in its container).
    found = until(lambda: seen if len(seen := pollers()) >= 2 else None, f"the worker polling {TASK_QUEUE}")
    assert found == {("workflow", "1@respawn-worker-pod-0"), ("activity", "1@respawn-worker-pod-0")}


def test_kube_down_leaves_no_pod_volume_or_secret(control_plane: ControlPlane):
    down(control_plane.played)
    pods = podman("pod", "ps", "--format", "{{.Name}}").stdout.split()
    volumes = podman("volume", "ls", "--format", "{{.Name}}").stdout.split()
    secrets_left = podman("secret", "ls", "--format", "{{.Name}}").stdout.split()
    assert not set(PODS) & set(pods) and not set(VOLUMES) & set(volumes) and SECRET not in secrets_left
