"""deploy/kubernetes/ agrees with itself, the image and the CLI, without a cluster or Podman:
the ConfigMap is a valid configuration whose paths are the pods' mounts, every port the
configuration listens on is the one the pod declares and probes, every container runs a real
`respawn` command restricted as docs/deploy.md says. tests/containers/test_deploy.py starts them."""

import re
from pathlib import Path

import yaml

from respawn.attribution.runbook import DEFAULT_DIR as DEFAULT_RUNBOOKS
from respawn.config.cluster import load_config
from respawn.surfaces import cli

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
MANIFESTS = DEPLOY / "kubernetes"
CONFIG_AT = Path("/etc/respawn/config/cluster.yaml")


def docs(name: str) -> list[dict]:
    return list(yaml.safe_load_all((MANIFESTS / name).read_text()))


def deployment(name: str) -> dict:
    """The pod spec of the Deployment `name`, in either file."""
    (found,) = [
        d for f in ("respawn.yaml", "temporal.yaml") for d in docs(f)
        if d["kind"] == "Deployment" and d["metadata"]["name"] == name
    ]  # fmt: skip
    return found["spec"]["template"]["spec"]


def mounts(spec: dict) -> dict[Path, dict]:
    """mount path -> the volume mounted there."""
    volumes = {v["name"]: v for v in spec["volumes"]}
    (container,) = spec["containers"]
    return {Path(m["mountPath"]): volumes[m["name"]] for m in container["volumeMounts"]}


def config(tmp_path: Path):
    (configmap,) = [d for d in docs("respawn.yaml") if d["kind"] == "ConfigMap"]
    path = tmp_path / "cluster.yaml"
    path.write_text(configmap["data"][CONFIG_AT.name])
    return load_config(path)


def probed_port(probe: dict) -> int:
    found = re.search(r"127\.0\.0\.1:(\d+)/", " ".join(probe["exec"]["command"]))
    assert found, probe
    return int(found[1])


def test_the_configmap_is_a_configuration_whose_paths_are_the_pods_mounts(tmp_path: Path):
    cfg = config(tmp_path)
    assert cfg.temporal.address == "respawn-temporal:7233"  # temporal.yaml's Service
    for name in ("respawn-worker", "respawn-server"):
        at = mounts(deployment(name))
        assert at[CONFIG_AT.parent]["configMap"]["name"] == "respawn-config"
        assert at[cfg.audit_db.parent]["persistentVolumeClaim"]["claimName"] == "respawn-state"
        secrets = at[Path("/etc/respawn/secrets")]["secret"]
        assert secrets["secretName"] == "respawn-secrets" and secrets["optional"] is False
        assert all(
            t.token_file is not None and t.token_file.parent == Path("/etc/respawn/secrets") for t in cfg.server.tokens
        )
    assert cfg.scheduler.ssh is not None and cfg.scheduler.ssh.client_key.parent == Path("/etc/respawn/secrets")
    # The job output the worker reads as evidence is on its read-only job-output volume.
    job_output = mounts(deployment("respawn-worker"))[Path("/shared")]
    assert cfg.logs.job_output.startswith("/shared/") and job_output["persistentVolumeClaim"]["readOnly"] is True
    # No runbooks folder named: the built-in ones, installed with the wheel.
    (configmap,) = [d for d in docs("respawn.yaml") if d["kind"] == "ConfigMap"]
    assert "runbooks" not in configmap["data"][CONFIG_AT.name] and cfg.runbooks == DEFAULT_RUNBOOKS


def test_each_pod_declares_and_probes_the_port_the_configuration_listens_on(tmp_path: Path):
    cfg = config(tmp_path)
    assert cfg.telemetry.worker is not None
    for name, port in (("respawn-worker", cfg.telemetry.worker.port), ("respawn-server", cfg.server.port)):
        (container,) = deployment(name)["containers"]
        assert [p["containerPort"] for p in container["ports"]] == [port]
        for probe in ("livenessProbe", "readinessProbe"):
            if probe in container:
                assert probed_port(container[probe]) == port
    (service,) = [d for d in docs("respawn.yaml") if d["kind"] == "Service"]
    assert service["metadata"]["name"] == "respawn-server" and service["spec"]["ports"][0]["port"] == cfg.server.port


def test_every_container_runs_a_real_command_restricted(tmp_path: Path):
    expected = {"respawn-worker": cli._worker, "respawn-server": cli._serve}
    for name, func in expected.items():
        (container,) = deployment(name)["containers"]
        args = cli._parser().parse_args(container["args"])  # exits (failing) on an unknown command or flag
        assert args.func is func and args.config == CONFIG_AT
    for name in (*expected, "respawn-temporal"):
        (container,) = deployment(name)["containers"]
        ctx = container["securityContext"]
        assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] == 900  # the image's respawn user
        assert ctx["readOnlyRootFilesystem"] is True and ctx["allowPrivilegeEscalation"] is False
        assert ctx["capabilities"] == {"drop": ["ALL"]}
        assert "memory" in container["resources"]["limits"]
    assert "--uid 900" in (DEPLOY / "Containerfile").read_text()
