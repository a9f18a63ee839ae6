"""`respawn status`: what recovery depends on, checked with short timeouts; non-zero when something required is down."""

import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

from respawn.config.cluster import ClusterConfig
from tests.ports import unused_port
from tests.recovery_stack import respawn_running, until, write_config


def _status(config: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "respawn.surfaces.cli", "status", "--config", str(config), *extra],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _checks(result: subprocess.CompletedProcess) -> dict[str, dict]:
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_status_says_what_is_down_and_exits_non_zero_within_its_timeout(tmp_path):
    (tmp_path / "no-slurm").mkdir()
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        config = write_config(
            ClusterConfig.model_validate(
                {
                    "cluster": "nowhere",
                    "environments": {"e": {}},
                    "temporal": {"address": f"127.0.0.1:{unused_port()}"},
                    "scheduler": {"slurm_bin_dir": str(tmp_path / "no-slurm")},
                    "logs": {"job_output": str(tmp_path / "{job_id}.out")},
                    "audit_db": str(tmp_path / "audit.db"),
                    "telemetry": {"detector": {"port": silent.getsockname()[1]}},
                }
            ),
            tmp_path / "c.yaml",
        )
        began = time.monotonic()
        result = _status(config, "--json", "--timeout", "1")
        took = time.monotonic() - began

    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    checks = _checks(result)
    assert report["ok"] is False and report["detector_lag_s"] is None and report["open_incidents"] == []
    assert checks["temporal"]["ok"] is False and "refused" in checks["temporal"]["detail"].lower()
    assert checks["slurm"]["ok"] is False and "cannot run" in checks["slurm"]["detail"]
    assert checks["detector"]["ok"] is False and checks["detector"]["detail"] == "no answer within 1 s"
    assert checks["prometheus"] == {
        "name": "prometheus",
        "ok": None,
        "required": False,
        "target": "",
        "detail": "not configured",
        "seconds": None,
    }
    assert took < 15  # the checks ran side by side, each cut off at its timeout


async def test_status_of_the_sandbox_with_respawn_running(sandbox):
    with respawn_running(sandbox, "status") as config:
        path = sandbox.root / "status.yaml"
        # The detector serves its metrics once it has started (a few seconds).
        result = await until(
            lambda: (r := _status(path, "--json")).returncode == 0 and r, 60, "respawn status to find everything up"
        )
        report = json.loads(result.stdout)
        checks = _checks(result)
        assert {name: c["ok"] for name, c in checks.items()} == {
            "temporal": True,
            "slurm": True,
            "prometheus": True,
            "detector": True,
        }
        assert "4 nodes" in checks["slurm"]["detail"]
        assert 0 <= report["detector_lag_s"] < 30 and checks["detector"]["seconds"] == report["detector_lag_s"]
        assert report["cluster"] == "status"
        # A job of an earlier module that failed a moment ago is news to this detector: whatever it opened is listed.
        assert all(
            i["phase"] == "open" and i["incident_id"].startswith("incident-status-") for i in report["open_incidents"]
        )

        table = _status(path)
        assert table.returncode == 0
        # No library's log line beside the table (httpx logs every request at INFO).
        assert not re.search(r"^\S+ \S+ \S+ INFO ", table.stderr, re.MULTILINE), table.stderr
        lines = table.stdout.splitlines()
        assert lines[0].split() == ["NAME", "STATUS", "TARGET", "DETAIL"]
        assert [line.split()[:2] for line in lines[1:5]] == [
            ["temporal", "ok"],
            ["slurm", "ok"],
            ["prometheus", "ok"],
            ["detector", "ok"],
        ]
        assert re.search(r"^open incidents: \d+$", table.stdout, re.MULTILINE)

        # Temporal gone (a wrong address): required, so the answer is no, and the rest still says yes.
        temporal = config.temporal.model_copy(update={"address": f"127.0.0.1:{unused_port()}"})
        broken = write_config(config.model_copy(update={"temporal": temporal}), sandbox.root / "status-broken.yaml")
        result = _status(broken, "--json")
        assert result.returncode == 1
        assert {name: c["ok"] for name, c in _checks(result).items()} == {
            "temporal": False,
            "slurm": True,
            "prometheus": True,
            "detector": True,
        }


async def test_a_slow_step_says_on_stderr_what_it_still_waits_for(capsys):
    from respawn.surfaces.cli import _waiting

    answers = [["temporal", "prometheus"], ["prometheus"], ["prometheus"], []]
    asked = []

    def pending() -> list[str]:
        asked.append(1)
        return answers[min(len(asked), len(answers)) - 1]

    with _waiting("sandbox up", pending):
        await until(lambda: len(asked) > len(answers), 10, "the watcher to see every answer")
    said = [line.split(" (")[0] for line in capsys.readouterr().err.splitlines()]
    assert said == [
        "sandbox up: waiting for temporal, prometheus",
        "sandbox up: waiting for prometheus",
        "sandbox up: all started, waiting until they answer",
    ]  # each change once
