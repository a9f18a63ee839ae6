"""`respawn check` under `logs.source: loki | victorialogs`: the server answers, a running job's
stream is found by its labels, each node's kernel stream has a recent line; against the fakes
(tests/fakes/), including label mappings that do not fit what the shipper writes."""

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from respawn.config.cluster import ClusterConfig
from respawn.scheduler.slurm import JobInfo, NodeInfo
from respawn.surfaces.check import Status, log_server_verdicts
from tests.fakes._http import FakeServer
from tests.fakes.loki import FakeLoki
from tests.fakes.victorialogs import FakeVictoriaLogs

S = 1_000_000_000
NODES = [NodeInfo(name=n, state="allocated") for n in ("node1", "node2", "node3")]
KERNEL = "2026-12-01T17:25:04+00:00 {node} kernel: usb 1-1: new high-speed USB device"


@pytest.fixture(params=["loki", "victorialogs"])
def fake(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    server: FakeServer = FakeLoki() if request.param == "loki" else FakeVictoriaLogs()
    server.source = request.param  # type: ignore[attr-defined]
    server.start()
    now = time.time_ns()
    for node in ("node1", "node2", "node3"):
        server.push({"node": node, "stream": "kernel"}, KERNEL.format(node=node), now - 60 * S)  # type: ignore[attr-defined]
    server.push({"job_id": "12", "stream": "stdout"}, "step 1/30 loss 2.1", now - 5 * S)  # type: ignore[attr-defined]
    yield server
    server.down()


def _config(fake: FakeServer, **labels: Any) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {"demo": {}},
            "audit_db": "/nowhere/audit.db",
            "logs": {
                "job_output": "/nowhere/{job_id}.out",
                "source": fake.source,  # type: ignore[attr-defined]
                # a loaded CI runner can take longer than a real query should: the fakes answer at once
                "server": {"url": fake.url, "timeout_s": 10.0},
                "labels": labels,
            },
        }
    )


JOB = JobInfo(
    job_id=12,
    state="RUNNING",
    comment='{"respawn":{"environment":"demo"}}',
    start_time=datetime.now(UTC) - timedelta(minutes=1),
)


def _verdicts(fake: FakeServer, jobs: list[JobInfo] = [JOB], **labels: Any) -> dict[str, Any]:  # noqa: B006
    found = log_server_verdicts(_config(fake, **labels), jobs, NODES, None, 3600)
    return {v.name: v for v in found}


def test_the_sites_streams_found_by_their_labels_pass(fake):
    verdicts = _verdicts(fake)
    assert {n: v.status for n, v in verdicts.items()} == {
        "logs.server": Status.PASS,
        "logs.job_stream": Status.PASS,
        "logs.kernel_stream": Status.PASS,
    }
    assert 'job_id="12"' in verdicts["logs.job_stream"].why


def test_a_job_label_the_shipper_does_not_write_fails_naming_the_labels_asked_for(fake):
    verdicts = _verdicts(fake, job_id="slurm_job_id")
    job = verdicts["logs.job_stream"]
    assert job.status is Status.FAIL
    assert 'slurm_job_id="12"' in job.why and "logs.labels" in job.fix and "SLURM_JOB_ID" in job.fix
    assert verdicts["logs.kernel_stream"].status is Status.PASS


def test_a_kernel_stream_value_that_matches_no_node_fails(fake):
    verdicts = _verdicts(fake, kernel_stream="kern")
    kernel = verdicts["logs.kernel_stream"]
    assert kernel.status is Status.FAIL
    assert 'stream="kern"' in kernel.why and "logs.labels" in kernel.fix


def test_a_node_without_a_recent_kernel_line_warns(fake):
    fake.entries = [e for e in fake.entries if e[0].get("node") != "node3"]  # type: ignore[attr-defined]
    kernel = _verdicts(fake)["logs.kernel_stream"]
    assert kernel.status is Status.WARN and kernel.why.startswith("node3:")


def test_an_unenrolled_jobs_missing_stream_warns_and_no_running_job_skips(fake):
    other = JOB.model_copy(update={"job_id": 13, "comment": ""})
    assert _verdicts(fake, [other])["logs.job_stream"].status is Status.WARN
    assert _verdicts(fake, [])["logs.job_stream"].status is Status.SKIP


def test_a_server_that_does_not_answer_fails_with_how_to_fix_it(fake):
    fake.down()
    verdicts = _verdicts(fake)
    assert verdicts["logs.server"].status is Status.FAIL
    assert "logs.server.url" in verdicts["logs.server"].fix
    assert verdicts["logs.job_stream"].status is Status.SKIP
