"""`respawn check` on the sandbox: its configuration passes with a job running, and configurations
broken the ways sites break them fail with the message that says what to change.

Two Prometheus servers of the test's own stand for other sites' (Debian's Prometheus, as the
sandbox's): one that answers and holds no series, and one that scrapes the sandbox's DCGM
exporters with the node's label relabelled from `Hostname` to `node`.
"""

import json
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from respawn.config.cluster import ClusterConfig
from respawn.sandbox import Lab, dcgm
from respawn.sandbox.labconfig import lab_config
from tests.ports import unused_port
from tests.recovery_stack import write_config

XID = "DCGM_FI_DEV_XID_ERRORS"


def _ask(url: str, promql: str) -> list[dict]:
    query = urllib.parse.urlencode({"query": promql})
    with urllib.request.urlopen(f"{url}/api/v1/query?{query}", timeout=2) as reply:
        return json.load(reply)["data"]["result"]


@pytest.fixture(scope="module")
def prometheus_pair(sandbox: Lab, tmp_path_factory) -> Iterator[tuple[str, str]]:
    """(a Prometheus with no series at all, one whose DCGM series carry the node as `node`)."""
    targets = [f"{dcgm.HOST}:{dcgm.port(sandbox, n)}" for n in sandbox.nodes]
    relabelled = f"""\
global: {{scrape_interval: 1s, scrape_timeout: 1s}}
scrape_configs:
  - job_name: dcgm
    static_configs: [{{targets: {json.dumps(targets)}}}]
    metric_relabel_configs:
      - {{source_labels: [Hostname], target_label: node}}
      - {{regex: Hostname, action: labeldrop}}
"""
    procs, urls = [], []
    for name, text in (("empty", "scrape_configs: []\n"), ("relabelled", relabelled)):
        root = tmp_path_factory.mktemp(f"prometheus-{name}")
        (root / "prometheus.yml").write_text(text)
        port = unused_port()
        argv = [
            shutil.which("prometheus") or "prometheus",
            f"--config.file={root / 'prometheus.yml'}",
            f"--storage.tsdb.path={root / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ]
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        urls.append(f"http://127.0.0.1:{port}")
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                ready = _ask(urls[0], "vector(1)") and len(_ask(urls[1], XID)) == len(sandbox.nodes)
            except OSError:
                ready = False
            if ready:
                break
            assert time.monotonic() < deadline, "the test's Prometheus servers did not come up"
            time.sleep(0.2)
        yield urls[0], urls[1]
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(timeout=15)


@pytest.fixture(scope="module")
def running_job(sandbox: Lab) -> Iterator[int]:
    """An enrolled job of this test's, running, its output where the sandbox's configuration says."""
    argv = [
        "sbatch",
        "--parsable",
        "-w",
        sandbox.nodes[0],
        f"--output={sandbox.out_dir}/slurm-%j.out",
        '--comment={"respawn": {"environment": "prod"}}',
        "--wrap",
        "echo started; exec sleep 300",
    ]
    done = subprocess.run(argv, env=sandbox.env(), capture_output=True, text=True, timeout=30, check=True)
    job_id = int(done.stdout.strip().split(";")[0])
    try:
        deadline = time.monotonic() + 30
        while not (sandbox.out_dir / f"slurm-{job_id}.out").exists():
            assert time.monotonic() < deadline, f"job {job_id} did not start"
            time.sleep(0.2)
        yield job_id
    finally:
        subprocess.run(["scancel", str(job_id)], env=sandbox.env(), timeout=30, check=False)


def _check(config: ClusterConfig, path: Path, job_id: int | None, *extra: str) -> tuple[int, dict[str, dict]]:
    write_config(config, path)
    job = [] if job_id is None else ["--job", str(job_id)]
    result = subprocess.run(
        [sys.executable, "-m", "respawn.surfaces.cli", "check", "--config", str(path), "--json", *job, *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )
    report = json.loads(result.stdout)
    assert report["ok"] is (result.returncode == 0), result.stderr
    return result.returncode, {c["name"]: c for c in report["checks"]}


def _with(config: ClusterConfig, **sections) -> ClusterConfig:
    return ClusterConfig.model_validate(config.model_dump(mode="json") | sections)


def test_with_nothing_answering_each_check_fails_within_its_timeout_and_the_patterns_are_still_judged(tmp_path):
    (tmp_path / "no-slurm").mkdir()
    config = ClusterConfig.model_validate(
        {
            "cluster": "nowhere",
            "environments": {"e": {}},
            "temporal": {"address": f"127.0.0.1:{unused_port()}"},
            "scheduler": {"slurm_bin_dir": str(tmp_path / "no-slurm")},
            "logs": {"job_output": str(tmp_path / "slurm-%j.out"), "kernel_log": str(tmp_path / "{node}.log")},
            "metrics": {"prometheus_url": f"http://127.0.0.1:{unused_port()}"},
            "audit_db": str(tmp_path / "audit.db"),
        }
    )
    began = time.monotonic()
    rc, checks = _check(config, tmp_path / "nowhere.yaml", None, "--timeout", "2")
    assert time.monotonic() - began < 15 and rc == 1
    statuses = {name: c["status"] for name, c in checks.items()}
    assert statuses == {
        **dict.fromkeys(["slurm.jobs", "slurm.nodes", "slurm.version", "slurm.comments", "slurm.requeue"], "fail"),
        "logs.job_output": "fail",
        "logs.kernel_log": "skip",
        "prometheus.series": "fail",
        "prometheus.labels": "fail",
        "temporal.namespace": "fail",
        "temporal.search_attributes": "fail",
        "audit": "pass",
    }
    assert "cannot run" in checks["slurm.jobs"]["why"]
    assert "has no {job_id} (%j is Slurm's syntax" in checks["logs.job_output"]["why"]
    assert "refused" in checks["temporal.namespace"]["why"].lower()


def test_the_sandbox_s_configuration_passes_every_check(sandbox, running_job, tmp_path):
    config = lab_config(sandbox)
    rc, checks = _check(config, tmp_path / "sandbox.yaml", running_job)
    assert rc == 0
    assert {name: c["status"] for name, c in checks.items()} == {
        "slurm.jobs": "pass",
        "slurm.nodes": "pass",
        "slurm.version": "pass",
        "slurm.comments": "pass",
        "slurm.requeue": "pass",
        "logs.job_output": "pass",
        "logs.kernel_log": "pass",
        "prometheus.series": "pass",
        "prometheus.labels": "pass",
        "temporal.namespace": "pass",
        "temporal.search_attributes": "pass",
        "audit": "pass",
    }
    assert checks["logs.job_output"]["why"].startswith(f"job {running_job} (RUNNING): {sandbox.out_dir}")
    assert checks["slurm.jobs"]["why"].startswith("squeue --json (v0.0.38, Slurm 22.05.8)")
    assert re.search(r"; the detector's listing: [1-9]\d* jobs$", checks["slurm.jobs"]["why"])
    assert (
        checks["prometheus.labels"]["why"]
        == f"label Hostname names every node ({len(sandbox.nodes)}) on the Xid series"
    )

    table = subprocess.run(
        [sys.executable, "-m", "respawn.surfaces.cli", "check", "--config", str(tmp_path / "sandbox.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert table.returncode == 0, table.stdout
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["CHECK", "STATUS", "WHY"]
    assert lines[1].split()[:2] == ["slurm.jobs", "PASS"]
    assert lines[-1].endswith("0 fail, 0 skip") or lines[-1].endswith("0 fail, 1 skip")


def test_a_wrong_output_path_a_missing_kernel_log_and_a_prometheus_without_dcgm_fail(
    sandbox, running_job, prometheus_pair, tmp_path
):
    empty, _ = prometheus_pair
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    for node in sandbox.nodes[:-1]:  # the last node's kernel log never arrived
        (kernel / f"{node}.log").write_text("")
    config = _with(
        lab_config(sandbox),
        logs={"job_output": str(sandbox.out_dir / "job-{job_id}.log"), "kernel_log": str(kernel / "{node}.log")},
        metrics={"prometheus_url": empty},
    )
    rc, checks = _check(config, tmp_path / "broken.yaml", running_job)
    assert rc == 1
    output = checks["logs.job_output"]
    assert output["status"] == "fail"
    assert output["why"] == f"job {running_job} (RUNNING): {sandbox.out_dir / f'job-{running_job}.log'} does not exist"
    kernel_log = checks["logs.kernel_log"]
    last = sandbox.nodes[-1]
    assert kernel_log["status"] == "fail"
    assert kernel_log["why"] == f"kernel logs not read ({last}: does not exist), e.g. {kernel / f'{last}.log'}"
    series = checks["prometheus.series"]
    assert series["status"] == "fail"
    assert series["why"].startswith(f"no {XID} series (found no DCGM series at all)")
    assert "dcgm-exporter" in series["fix"]
    # The rest of the configuration is the sandbox's: still fine.
    assert {checks[n]["status"] for n in ("slurm.jobs", "temporal.namespace", "audit")} == {"pass"}


def test_relabelled_metrics_name_the_label_to_set_and_pass_once_it_is_set(
    sandbox, running_job, prometheus_pair, tmp_path
):
    _, relabelled = prometheus_pair
    config = _with(lab_config(sandbox), metrics={"prometheus_url": relabelled})
    rc, checks = _check(config, tmp_path / "relabelled.yaml", running_job)
    assert rc == 1
    labels = checks["prometheus.labels"]
    assert labels["status"] == "fail" and checks["prometheus.series"]["status"] == "pass"
    assert labels["why"] == f"label Hostname is on no Xid series; label node holds them (e.g. {sandbox.nodes[0]})"
    assert labels["fix"] == "set metrics.node_label: node in the configuration"

    config = _with(lab_config(sandbox), metrics={"prometheus_url": relabelled, "node_label": "node"})
    rc, checks = _check(config, tmp_path / "mapped.yaml", running_job)
    assert checks["prometheus.labels"]["status"] == "pass" and rc == 0

    # The sandbox's own Prometheus, told to match `instance`: that label holds host:port, Hostname the nodes.
    sandbox_config = lab_config(sandbox)
    assert sandbox_config.metrics is not None
    config = _with(
        sandbox_config, metrics={"prometheus_url": sandbox_config.metrics.prometheus_url, "node_label": "instance"}
    )
    rc, checks = _check(config, tmp_path / "instance.yaml", running_job)
    assert rc == 1
    assert checks["prometheus.labels"]["why"].startswith("label instance holds 127.0.0.1:")
    assert checks["prometheus.labels"]["fix"] == "set metrics.node_label: Hostname in the configuration"


def test_an_unreachable_prometheus_and_a_missing_namespace_fail(sandbox, running_job, tmp_path):
    config = _with(
        lab_config(sandbox),
        metrics={"prometheus_url": f"http://127.0.0.1:{unused_port()}", "timeout_s": 1},
        temporal={"address": sandbox.temporal_address, "namespace": "respawn-check-absent"},
    )
    rc, checks = _check(config, tmp_path / "unreachable.yaml", running_job)
    assert rc == 1
    assert checks["prometheus.series"]["status"] == "fail" == checks["prometheus.labels"]["status"]
    assert "metrics.prometheus_url" in checks["prometheus.series"]["fix"]
    assert checks["temporal.namespace"]["status"] == "fail"
    assert checks["temporal.namespace"]["why"] == f"no namespace respawn-check-absent at {sandbox.temporal_address}"
    assert checks["temporal.search_attributes"]["status"] == "skip"
