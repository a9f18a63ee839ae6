"""`respawn check`'s verdicts, each from what it reads: captured Slurm outputs, files made to break,
Prometheus answers and Temporal registrations as they would come back."""

import json
import os
import sqlite3
import time
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import IndexedValueType

from respawn.audit.trail import AuditTrail
from respawn.config.cluster import ClusterConfig, MetricsSettings
from respawn.scheduler.slurm import JobInfo, NodeInfo, parse_partitions
from respawn.sources.gpu_metrics import Gpu, GpuMetrics
from respawn.surfaces.check import (
    PrometheusView,
    Status,
    _SlurmView,
    audit_verdict,
    comments_verdict,
    job_output_verdict,
    jobs_verdict,
    kernel_log_verdict,
    missing_fields,
    output_verdict,
    prometheus_verdicts,
    requeue_verdict,
    search_attribute_verdict,
    version_verdict,
)

DATA = Path(__file__).parents[1] / "data"
XID = "DCGM_FI_DEV_XID_ERRORS"
CLOCKS = ["DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL"]
NODES = ["node1", "node2", "node3"]
ENROLLED = '{"respawn": {"environment": "e"}}'


def _data(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def _config(tmp_path: Path, **logs: str) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "c",
            "environments": {"e": {}},
            "logs": {"job_output": str(tmp_path / "out" / "slurm-{job_id}.out"), **logs},
            "audit_db": str(tmp_path / "audit.db"),
        }
    )


def _job(job_id: int = 7, comment: str = ENROLLED, state: str = "RUNNING") -> JobInfo:
    return JobInfo(job_id=job_id, state=state, comment=comment, user_id=os.geteuid(), nodes=["node1"])


# --- Slurm's JSON -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("slurm-22.05/squeue.json", "jobs"),
        ("slurm-22.05/sinfo.json", "nodes"),
        ("slurm-24.11/squeue.json", "jobs"),
        ("slurm-24.11/scontrol-job.json", "jobs"),
        ("slurm-24.11/scontrol-node.json", "nodes"),
        ("slurm-24.11/sinfo.json", "nodes"),
    ],
)
def test_captured_outputs_of_both_releases_carry_everything_their_reader_asks_for(name, key):
    missing, count = missing_fields(_data(name), key, name)
    assert missing == [] and count > 0
    assert output_verdict("slurm.x", "squeue --json", key, _data(name)).status is Status.PASS


@pytest.mark.parametrize("release", ["slurm-22.05", "slurm-24.11"])
def test_a_field_stripped_from_every_job_is_named_as_the_reader_asks_for_it(release):
    data = _data(f"{release}/squeue.json")
    for job in data["jobs"]:
        del job["comment"], job["restart_cnt"]
    assert missing_fields(data, "jobs", "squeue --json")[0] == ["jobs[].comment", "jobs[].restart_cnt"]
    verdict = output_verdict("slurm.jobs", "squeue --json", "jobs", data)
    assert verdict.status is Status.FAIL
    assert "the reader found no jobs[].comment, jobs[].restart_cnt in any of" in verdict.why
    # Missing from some jobs only is a job's own business (a pending job has no allocation yet).
    data = _data(f"{release}/squeue.json")
    del data["jobs"][0]["batch_host"]
    assert missing_fields(data, "jobs", "squeue --json")[0] == []


def test_a_json_version_without_a_reader_fails_naming_it():
    data = _data("slurm-24.11/squeue.json")
    data["meta"]["plugin"]["data_parser"] = "data_parser/v0.0.44"
    verdict = output_verdict("slurm.jobs", "squeue --json", "jobs", data)
    assert verdict.status is Status.FAIL and "output format v0.0.44 from Slurm 24.11.5 has no reader" in verdict.why
    assert version_verdict({"SLURM_VERSION": "25.05.1"}, data).status is Status.FAIL


def test_an_untested_release_in_a_known_format_warns():
    data = _data("slurm-24.11/squeue.json")
    assert version_verdict({"SLURM_VERSION": "24.11.5"}, data).status is Status.PASS
    verdict = version_verdict({"SLURM_VERSION": "24.11.6"}, data)
    assert verdict.status is Status.WARN and "not a tested release" in verdict.why


def test_an_empty_queue_cannot_show_its_fields():
    data = _data("slurm-22.05/squeue.json") | {"jobs": []}
    assert output_verdict("slurm.jobs", "squeue --json", "jobs", data).status is Status.WARN
    assert comments_verdict(data, {}, "root").status is Status.WARN


def test_comments_hidden_by_private_data_or_not_printed_fail():
    data = _data("slurm-22.05/squeue.json")
    assert comments_verdict(data, {"PrivateData": "none"}, "respawn").status is Status.PASS
    hidden = comments_verdict(data, {"PrivateData": "jobs", "SlurmUser": "slurm(64030)"}, "respawn")
    assert hidden.status is Status.FAIL and hidden.why.startswith("PrivateData=jobs: Respawn's user respawn")
    assert comments_verdict(data, {"PrivateData": "jobs", "SlurmUser": "slurm(64030)"}, "root").status is Status.PASS
    for job in data["jobs"]:
        del job["comment"]
    stripped = comments_verdict(data, {}, "root")
    assert stripped.status is Status.FAIL and "no job can enrol" in stripped.why


def test_requeue_needs_job_requeue_and_partitions_that_run_jobs():
    text = (DATA / "slurm-22.05/scontrol-config.txt").read_text()
    assert "JobRequeue" in text
    up = parse_partitions("PartitionName=debug Nodes=node[1-4] State=UP TRES=cpu=8,mem=8000M\n")
    assert up == {"debug": {"PartitionName": "debug", "Nodes": "node[1-4]", "State": "UP", "TRES": "cpu=8,mem=8000M"}}
    epilog = {"Epilog": "/etc/slurm/epilog.sh"}
    assert requeue_verdict({"JobRequeue": "1"} | epilog, up).status is Status.PASS
    # No Epilog: a job on a lost node would be requeued MessageTimeout late.
    late = requeue_verdict({"JobRequeue": "1", "Epilog": "(null)", "MessageTimeout": "10 sec"}, up)
    assert late.status is Status.WARN and "MessageTimeout (10 s) late" in late.why and "Epilog=" in late.fix
    off = requeue_verdict({"JobRequeue": "0"}, up)
    assert off.status is Status.WARN and "--requeue" in off.fix
    # An enrolled job that may not be requeued is named; one that ended, or did not enrol, is not.
    jobs = [_job(3), _job(4).model_copy(update={"requeue": True}), _job(5, comment=""), _job(6, state="FAILED")]
    fixed = requeue_verdict({"JobRequeue": "1"} | epilog, up, jobs)
    assert fixed.status is Status.WARN and fixed.why.startswith("enrolled jobs 3 cannot be requeued")
    down = requeue_verdict({"JobRequeue": "1"} | epilog, parse_partitions("PartitionName=gpu State=DOWN\n"))
    assert down.status is Status.WARN and "gpu (DOWN)" in down.why and "State=UP" in down.fix


# --- Logs -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        ("/logs/slurm-%j.out", "has no {job_id} (%j is Slurm's syntax"),
        ("/logs/{user}/{job_id}.out", "cannot be filled in (KeyError"),
    ],
)
def test_an_output_pattern_that_cannot_name_each_job_fails(tmp_path, pattern, said):
    config = _config(tmp_path).model_copy(
        update={"logs": _config(tmp_path).logs.model_copy(update={"job_output": pattern})}
    )
    verdict = job_output_verdict(config, [_job()], {}, None)
    assert verdict.status is Status.FAIL and said in verdict.why


def test_a_running_job_s_output_must_be_a_regular_file_respawn_reads(tmp_path):
    config = _config(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    # Not there: an enrolled job's output is the signal, so it fails; Slurm's own path helps fix it.
    raw = {"jobs": [{"job_id": 7, "standard_output": "/elsewhere/train-%j.log"}]}
    verdict = job_output_verdict(config, [_job()], raw, None)
    assert verdict.status is Status.FAIL
    assert verdict.why == f"job 7 (RUNNING): {out / 'slurm-7.out'} does not exist"
    assert "Slurm writes it to /elsewhere/train-7.log" in verdict.fix
    # An unenrolled job may write where it likes: a warning; the same job named with --job: a failure.
    assert job_output_verdict(config, [_job(comment="")], {}, None).status is Status.WARN
    assert job_output_verdict(config, [_job(comment="")], {}, 7).status is Status.FAIL
    os.mkfifo(out / "slurm-7.out")
    fifo = job_output_verdict(config, [_job()], {}, None)
    assert fifo.status is Status.FAIL and "not a regular file (fifo)" in fifo.why
    (out / "slurm-7.out").unlink()
    (out / "real.out").write_text("step 1\n")
    (out / "slurm-7.out").symlink_to(out / "real.out")
    assert "symbolic link" in job_output_verdict(config, [_job()], {}, None).why
    (out / "slurm-7.out").unlink()
    (out / "slurm-7.out").write_text("step 1\n")
    assert job_output_verdict(config, [_job()], {}, None).status is Status.PASS


def test_without_a_running_job_the_output_check_skips_and_an_unknown_job_fails(tmp_path):
    config = _config(tmp_path)
    assert job_output_verdict(config, [_job(state="PENDING")], {}, None).status is Status.SKIP
    unknown = job_output_verdict(config, [_job()], {}, 99)
    assert unknown.status is Status.FAIL and unknown.why == "Slurm knows no job 99"


def test_kernel_logs_missing_on_a_node_fail_and_old_ones_warn(tmp_path):
    nodes = [NodeInfo(name=n, state="idle") for n in NODES]
    unset = kernel_log_verdict(_config(tmp_path), nodes, 3600)
    assert unset.status is Status.WARN and "no logs.kernel_log" in unset.why
    kernel = tmp_path / "kernel"
    kernel.mkdir()
    config = _config(tmp_path, kernel_log=str(kernel / "{node}.log"))
    for node in NODES[:2]:
        (kernel / f"{node}.log").write_text("")
    missing = kernel_log_verdict(config, nodes, 3600)
    assert missing.status is Status.FAIL
    assert missing.why == f"kernel logs not read (node3: does not exist), e.g. {kernel / 'node3.log'}"
    (kernel / "node3.log").write_text("")
    assert kernel_log_verdict(config, nodes, 3600).status is Status.PASS
    old = time.time() - 7200
    os.utime(kernel / "node2.log", (old, old))
    stale = kernel_log_verdict(config, nodes, 3600)
    assert stale.status is Status.WARN and stale.why == "node2: kernel log not written in the last 3600 s"
    nameless = _config(tmp_path, kernel_log=str(kernel / "kern.log"))
    assert "has no {node}" in kernel_log_verdict(nameless, nodes, 3600).why


# --- Prometheus ---------------------------------------------------------------------------------------


def _series(label: str = "Hostname", values: list[str] = NODES) -> list[dict[str, str]]:
    return [{"__name__": XID, label: v, "gpu": "0", "job": "dcgm"} for v in values]


def test_every_series_with_the_node_label_passes():
    view = PrometheusView({XID, *CLOCKS}, _series(), "Hostname")
    assert [v.status for v in prometheus_verdicts(view, NODES)] == [Status.PASS, Status.PASS]


def test_no_dcgm_series_fails_and_missing_clocks_warn():
    series, labels = prometheus_verdicts(PrometheusView(set(), [], "Hostname"), NODES)
    assert (
        series.status is Status.FAIL and "no DCGM_FI_DEV_XID_ERRORS series (found no DCGM series at all)" in series.why
    )
    assert labels.status is Status.SKIP
    series, _ = prometheus_verdicts(PrometheusView({XID}, _series(), "Hostname"), NODES)
    assert series.status is Status.WARN and "DCGM_FI_DEV_SM_CLOCK" in series.why


def test_relabelled_series_name_the_label_that_holds_the_nodes():
    _, labels = prometheus_verdicts(PrometheusView({XID, *CLOCKS}, _series("instance"), "Hostname"), NODES)
    assert labels.status is Status.FAIL
    assert labels.why == "label Hostname is on no Xid series; label instance holds them (e.g. node1)"
    assert labels.fix == "set metrics.node_label: instance in the configuration"
    # Configured so, they pass.
    _, labels = prometheus_verdicts(PrometheusView({XID, *CLOCKS}, _series("instance"), "instance"), NODES)
    assert labels.status is Status.PASS


def test_a_node_label_with_other_values_says_so_and_how_to_relabel():
    ports = [f"{n}:9400" for n in NODES]
    _, labels = prometheus_verdicts(PrometheusView({XID, *CLOCKS}, _series("instance", ports), "instance"), NODES)
    assert labels.status is Status.FAIL
    assert labels.why.startswith("label instance holds node1:9400, node2:9400, node3:9400, not Slurm's node names")
    assert "relabel_config" in labels.fix
    _, unknown = prometheus_verdicts(PrometheusView({XID, *CLOCKS}, _series(), "Hostname"), [])
    assert unknown.status is Status.SKIP  # without Slurm's node names there is nothing to compare
    _, partly = prometheus_verdicts(PrometheusView({XID, *CLOCKS}, _series(values=NODES[:2]), "Hostname"), NODES)
    assert partly.status is Status.WARN and "no Xid series for node3" in partly.why


def test_gpu_metrics_queries_and_reads_the_configured_node_label():
    class FakePrometheus:
        def __init__(self) -> None:
            self.queries: list[str] = []

        def custom_query(self, promql: str) -> list[dict]:
            self.queries.append(promql)
            return [{"metric": {"__name__": XID, "instance": "node2", "gpu": "0"}, "value": [0, "79"]}]

    metrics = GpuMetrics(MetricsSettings(prometheus_url="http://prometheus:9090", node_label="instance"))
    fake = FakePrometheus()
    metrics._prom = fake  # type: ignore[assignment]
    assert metrics.xids() == {Gpu("node2", "0"): 79}
    lines = metrics.corroborate(["node2"], since_s=120, slow_nodes=["node2"])
    assert fake.queries[1] == f'{XID}{{instance=~"node2"}} > 0 and changes({XID}{{instance=~"node2"}}[120s]) > 0'
    assert 'instance=~"node2"' in fake.queries[2]
    # The evidence line keeps its own spelling, which the runbooks match.
    assert lines[0] == ("node2", f"respawn-metrics: Hostname=node2 gpu=0 {XID}=79 (changed within the last 120 s)")
    assert MetricsSettings(prometheus_url="http://p").node_label == "Hostname"
    with pytest.raises(ValueError, match="node_label"):
        MetricsSettings(prometheus_url="http://p", node_label='x"}or{')


# --- Temporal and the audit store ---------------------------------------------------------------------


def test_search_attributes_must_all_be_registered_as_keywords():
    keyword, text = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD, IndexedValueType.INDEXED_VALUE_TYPE_TEXT
    names = ["RespawnJobId", "RespawnCluster", "RespawnFailureClass", "RespawnPhase"]
    assert search_attribute_verdict("default", dict.fromkeys(names, keyword)).status is Status.PASS
    missing = search_attribute_verdict("prod", {"RespawnJobId": keyword, "RespawnCluster": text})
    assert missing.status is Status.FAIL
    assert missing.why == (
        "namespace prod: not registered: RespawnFailureClass, RespawnPhase; not keywords: RespawnCluster:"
        " incidents fail to start"
    )
    assert missing.fix.startswith(
        "temporal operator search-attribute create --namespace prod --name RespawnFailureClass --type Keyword && "
    )


def test_the_audit_store_needs_a_writable_folder_and_its_own_schema(tmp_path):
    fresh = audit_verdict(tmp_path / "new" / "audit.db")
    assert fresh.status is Status.PASS and "will be created" in fresh.why
    (tmp_path / "file").write_text("")
    blocked = audit_verdict(tmp_path / "file" / "audit.db")
    assert blocked.status is Status.FAIL and "cannot create a file" in blocked.why
    trail = AuditTrail(tmp_path / "audit.db")
    trail.close()
    assert audit_verdict(tmp_path / "audit.db").why.endswith("schema reads, 0 events; " + f"{tmp_path} is writable")
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    assert "cannot be read" in audit_verdict(tmp_path / "junk.db").why
    other = sqlite3.connect(tmp_path / "other.db")
    other.execute("CREATE TABLE events (id INTEGER, what TEXT)")
    other.close()
    foreign = audit_verdict(tmp_path / "other.db")
    assert foreign.status is Status.FAIL and "table events lacks acted, action, at" in foreign.why


def test_a_listing_the_detector_cannot_read_fails_the_jobs_check_whatever_the_json_says():
    data = _data("slurm-24.11/squeue.json")
    view = _SlurmView("squeue --json", data, "sinfo --json", {}, [], [], {}, {})
    view.listing_error = "squeue: 21 fields do not make records of 22"
    verdict = jobs_verdict(view)
    assert verdict.status is Status.FAIL and verdict.why.endswith(
        "cannot be read: squeue: 21 fields do not make records of 22"
    )
    view.listed, view.listing_error = len(data["jobs"]), None
    verdict = jobs_verdict(view)
    assert verdict.status is Status.PASS and verdict.why.endswith(f"; the detector's listing: {len(data['jobs'])} jobs")
