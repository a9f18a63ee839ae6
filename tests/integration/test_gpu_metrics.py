"""GPU metrics through Prometheus: the lines they make, what a failing Prometheus leaves,
and the sandbox's real Prometheus scraping its simulated DCGM exporters."""

import asyncio
import json
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace
from typing import ClassVar

import pytest

from respawn.activities.evidence import EvidenceActivities
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.sandbox import Lab, dcgm, prometheus
from respawn.sandbox.workload.faults import THROTTLED
from respawn.sources.gpu_metrics import (
    Gpu,
    GpuMetrics,
    MetricsError,
    MetricsSettings,
    XidWatch,
    clocks_line,
    throttle_reasons,
    unavailable_line,
    xid_changes,
)
from respawn.wire.evidence import LineSource

NODE2, NODE3 = Gpu("node2", "0"), Gpu("node3", "0")


@pytest.fixture(scope="module")
def matcher() -> Matcher:
    return Matcher.from_catalogue(Catalogue.load())


def test_throttle_reasons_are_nvmls_bits():
    assert throttle_reasons(0) == []
    assert throttle_reasons(0x48) == ["hw_slowdown", "hw_thermal_slowdown"]
    assert throttle_reasons(0x1) == ["gpu_idle"]


def test_only_a_throttled_gpu_backs_a_straggler(matcher):
    readings = {"DCGM_FI_DEV_SM_CLOCK": 660.0, "DCGM_FI_DEV_GPU_TEMP": 92.0, "DCGM_FI_DEV_GPU_UTIL": 100.0}
    throttled = clocks_line(NODE3, readings | {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": 0x48})
    assert throttled == (
        "respawn-metrics: Hostname=node3 gpu=0 DCGM_FI_DEV_CLOCK_THROTTLE_REASONS=72"
        " (hw_slowdown,hw_thermal_slowdown) DCGM_FI_DEV_SM_CLOCK=660 MHz DCGM_FI_DEV_GPU_TEMP=92 C"
        " DCGM_FI_DEV_GPU_UTIL=100 %"
    )
    hit = matcher.failure(throttled)
    assert hit is not None and hit.pattern == "dcgm-clocks-throttled" and hit.groups["host"] == "node3"
    for mask in (0, 0x1, 0x2):  # not throttled, idle, clocks set by the application: no slowdown
        assert matcher.failure(clocks_line(NODE3, readings | {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": mask})) is None


def test_a_new_xid_is_news_and_a_first_sight_is_a_baseline(matcher):
    assert xid_changes({}, {NODE2: 79}) == []
    assert xid_changes({NODE2: 79}, {NODE2: 79}) == []
    assert xid_changes({NODE2: 79}, {NODE2: 0}) == []  # cleared: nothing new happened
    (change,) = xid_changes({NODE2: 0, NODE3: 0}, {NODE2: 79, NODE3: 0})
    assert change.gpu == NODE2
    assert change.line == "respawn-metrics: Hostname=node2 gpu=0 DCGM_FI_DEV_XID_ERRORS=79 (was 0)"
    hit = matcher.failure(change.line)
    assert hit is not None and hit.pattern == "dcgm-xid" and hit.groups["host"] == "node2"
    # A non-fatal Xid (13: an application's illegal memory access) is no hardware fault.
    (app,) = xid_changes({NODE2: 0}, {NODE2: 13})
    assert matcher.failure(app.line) is None


def test_the_unavailable_line_blames_nothing(matcher):
    for reason in (
        "no answer within 2 s",
        "could not connect",
        "the query was refused",
        "the answer could not be read",
    ):
        line = unavailable_line(reason)
        assert line.startswith(f"respawn-metrics: GPU metrics not available ({reason})")
        assert matcher.failure(line) is None


class _FakePrometheus(BaseHTTPRequestHandler):
    delay = 0.0
    queries: ClassVar[list[str]] = []

    def do_GET(self):  # http.server's name
        query = urllib.parse.parse_qs(urllib.parse.urlparse(self.path).query)["query"][0]
        type(self).queries.append(query)
        time.sleep(self.delay)
        if query.startswith("DCGM_FI_DEV_XID_ERRORS{"):  # the changed-Xid query of corroborate
            result = [{"metric": {"Hostname": "node2", "gpu": "0"}, "value": [0, "79"]}]
        elif query.startswith("{__name__"):
            result = [
                {"metric": {"__name__": name, "Hostname": "node3", "gpu": "0"}, "value": [0, str(value)]}
                for name, value in (("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 8), ("DCGM_FI_DEV_SM_CLOCK", 990))
            ]
        else:
            result = [
                {"metric": {"__name__": "DCGM_FI_DEV_XID_ERRORS", "Hostname": n, "gpu": "0"}, "value": [0, "0"]}
                for n in ("node1", "node2")
            ]
        body = json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def fake_prometheus() -> Iterator[str]:
    _FakePrometheus.delay, _FakePrometheus.queries = 0.0, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakePrometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_corroborate_asks_for_xid_changes_on_the_jobs_nodes_and_clocks_of_the_slow_ones(fake_prometheus):
    metrics = GpuMetrics(MetricsSettings(prometheus_url=fake_prometheus))
    found = metrics.corroborate(["node1", "node2"], since_s=300, slow_nodes=["node3"])
    assert found == [
        ("node2", "respawn-metrics: Hostname=node2 gpu=0 DCGM_FI_DEV_XID_ERRORS=79 (changed within the last 300 s)"),
        (
            "node3",
            "respawn-metrics: Hostname=node3 gpu=0 DCGM_FI_DEV_CLOCK_THROTTLE_REASONS=8 (hw_slowdown)"
            " DCGM_FI_DEV_SM_CLOCK=990 MHz",
        ),
    ]
    assert _FakePrometheus.queries[0] == (
        'DCGM_FI_DEV_XID_ERRORS{Hostname=~"node1|node2"} > 0 and '
        'changes(DCGM_FI_DEV_XID_ERRORS{Hostname=~"node1|node2"}[300s]) > 0'
    )
    assert metrics.xids() == {Gpu("node1", "0"): 0, Gpu("node2", "0"): 0}


def test_a_slow_or_absent_prometheus_fails_within_the_timeout(fake_prometheus):
    _FakePrometheus.delay = 3.0
    slow = GpuMetrics(MetricsSettings(prometheus_url=fake_prometheus, timeout_s=0.5))
    began = time.monotonic()
    with pytest.raises(MetricsError, match=r"no answer within 0\.5 s"):
        slow.xids()
    assert time.monotonic() - began < 2
    with pytest.raises(MetricsError, match="could not connect"):
        GpuMetrics(MetricsSettings(prometheus_url="http://127.0.0.1:9", timeout_s=0.5)).xids()


async def test_evidence_without_prometheus_is_log_only_and_says_so():
    config = SimpleNamespace(metrics=MetricsSettings(prometheus_url="http://127.0.0.1:9", timeout_s=0.5))
    gather = EvidenceActivities(SimpleNamespace(config=config))
    (line,) = await gather._gpu_metrics(["node1"], None, [])
    assert line.source is LineSource.METRICS and "this evidence is from logs only" in line.text


class _Xids:
    def __init__(self, *answers):
        self.answers = list(answers)

    def xids(self):
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


async def test_xid_watch_reports_a_change_once_and_survives_an_outage(caplog):
    source = _Xids({NODE2: 0}, MetricsError("ConnectionError: refused"), {NODE2: 79}, {NODE2: 79})
    watch = XidWatch(source, interval_s=0.0)
    seen = []
    for tick in range(10):
        seen += await watch.changes(float(tick))
        await asyncio.sleep(0.05)  # the query's thread finishes between polls
    assert [c.gpu for c in seen] == [NODE2]
    assert "GPU metrics unavailable" in caplog.text


async def test_the_sandbox_prometheus_scrapes_the_simulated_gpus(sandbox: Lab):
    metrics = GpuMetrics(MetricsSettings(prometheus_url=prometheus.URL))
    assert {g.node for g in metrics.xids()} == set(sandbox.nodes)
    dcgm.set_gpu(sandbox, "node4", THROTTLED | {"DCGM_FI_DEV_SM_CLOCK": 660})
    try:
        deadline = time.monotonic() + 15
        found = []
        while time.monotonic() < deadline:
            found = metrics.corroborate([], 0, ["node4"])
            if found and "hw_slowdown" in found[0][1]:
                break
            await asyncio.sleep(0.2)
        assert found and found[0][0] == "node4", found
        throttled = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS=72 (hw_slowdown,hw_thermal_slowdown)"
        assert f"{throttled} DCGM_FI_DEV_SM_CLOCK=660 MHz" in found[0][1]
    finally:
        dcgm.heal(sandbox, "node4")
    help_text = _metrics_page(sandbox, "node4")
    assert "# HELP DCGM_FI_DEV_XID_ERRORS SIMULATED GPU" in help_text
    assert 'Hostname="node4"' in help_text and 'gpu="0"' in help_text


def _metrics_page(lab: Lab, node: str) -> str:
    with urllib.request.urlopen(f"http://{dcgm.HOST}:{dcgm.port(lab, node)}/metrics", timeout=5) as reply:
        return reply.read().decode()
