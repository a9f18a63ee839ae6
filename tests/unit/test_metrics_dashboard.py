"""The Grafana dashboard in deploy/grafana graphs only metrics Respawn defines, in valid PromQL."""

import json
import re
import subprocess
from pathlib import Path

import yaml

from respawn.surfaces import telemetry

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana" / "respawn-dashboard.json"
_SUFFIXES = {"counter": ["_total"], "histogram": ["_bucket", "_count", "_sum"], "gauge": [""]}


def _exposed() -> set[str]:
    """Every series name respawn/telemetry.py makes a process expose."""
    return {
        family.name + suffix
        for collector in telemetry.ALL
        for family in collector.describe()
        for suffix in _SUFFIXES[family.type]
    }


def _panels() -> list[dict]:
    return [p for p in json.loads(DASHBOARD.read_text())["panels"] if p["type"] != "row"]


def _expressions() -> list[str]:
    return [t["expr"] for p in _panels() for t in p["targets"]]


def test_every_expression_graphs_metrics_that_respawn_defines():
    exposed = _exposed()
    assert _expressions()
    for expr in _expressions():
        used = set(re.findall(r"\brespawn_[a-z_]+\b", expr))
        assert used, f"graphs nothing of Respawn's: {expr}"
        assert used <= exposed, f"unknown metrics {used - exposed} in {expr}"


def test_every_panel_reads_the_datasource_variable():
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    for panel in _panels():
        assert panel["datasource"]["uid"] == "${DS_PROMETHEUS}"
        assert all(t["datasource"]["uid"] == "${DS_PROMETHEUS}" for t in panel["targets"])


def test_the_dashboard_covers_latency_incidents_outcomes_success_actions_lag_and_errors():
    used = " ".join(_expressions())
    for name in (
        "respawn_detection_latency_seconds_bucket",
        "respawn_action_latency_seconds_bucket",
        "respawn_incidents_total",
        "respawn_restarts_resumed_total",
        "respawn_drains_total",
        "respawn_exclusions_total",
        "respawn_watchdog_releases_total",
        "respawn_detector_lag_seconds",
        "respawn_scheduler_errors_total",
        "respawn_recovery_duration_seconds_bucket",
    ):
        assert name in used, name
    assert "histogram_quantile(0.5," in used and "histogram_quantile(0.95," in used
    assert "by (failure_class)" in used and "by (outcome)" in used


def test_every_expression_is_valid_promql(tmp_path):
    # Grafana fills in the window variable; promtool parses the rest.
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"respawn:dashboard:{i}", "expr": expr.replace("$window", "1d")}
                    for i, expr in enumerate(_expressions())
                ],
            }
        ]
    }
    path = tmp_path / "rules.yml"
    path.write_text(yaml.safe_dump(rules))
    checked = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_cost_row_graphs_lost_gpu_hours_and_seconds_by_part_stacked_and_the_clusters_ettr():
    panels = json.loads(DASHBOARD.read_text())["panels"]
    [row] = [i for i, p in enumerate(panels) if p["type"] == "row" and p["title"] == "Cost"]
    following = panels[row + 1 :]
    cost = following[: next((i for i, p in enumerate(following) if p["type"] == "row"), len(following))]
    # Each panel by the first of Respawn's metrics it reads.
    by_metric = {re.search(r"\brespawn_([a-z_]+)\b", p["targets"][0]["expr"]).group(1): p for p in cost}
    assert set(by_metric) == {"lost_gpu_hours", "lost_seconds", "ettr_ratio"}
    for name in ("lost_gpu_hours", "lost_seconds"):
        panel = by_metric[name]
        assert panel["type"] == "timeseries" and f"sum by (part) (respawn_{name})" in panel["targets"][0]["expr"]
        assert panel["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "normal"
        assert panel["targets"][0]["legendFormat"] == "{{part}}"
    assert by_metric["lost_seconds"]["fieldConfig"]["defaults"]["unit"] == "s"
    ettr = by_metric["ettr_ratio"]
    assert ettr["fieldConfig"]["defaults"]["unit"] == "percentunit"
    # Only the server sets the cost gauges; the other processes expose respawn_ettr_ratio as 0.
    assert "and on (instance) respawn_lost_seconds" in ettr["targets"][0]["expr"]
    # The row sits below the others, nothing overlapping it.
    top = panels[row]["gridPos"]["y"]
    assert all(p["gridPos"]["y"] + p["gridPos"]["h"] <= top for p in panels[:row])
