"""deploy/systemd/: each unit starts a real `respawn` command with real flags, keeps the
hardening docs/deploy.md promises, and passes `systemd-analyze verify` (offline: it needs no
systemd running; skipped where it is not installed)."""

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from respawn.surfaces import cli

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
UNITS = DEPLOY / "systemd"
INSTALLED = "/opt/respawn/bin/respawn"  # where docs/deploy.md installs it (the image's path too)
CONFIG = Path("/etc/respawn/cluster.yaml")
STATE = "/var/lib/respawn"
# unit -> the CLI function its ExecStart runs, and the capabilities it may hold
EXPECTED = {
    "respawn-detector.service": (cli._detector, "CAP_DAC_READ_SEARCH"),
    "respawn-worker.service": (cli._worker, "CAP_DAC_READ_SEARCH"),
    "respawn-server.service": (cli._serve, ""),
}


def parse_unit(text: str) -> dict[str, dict[str, list[str]]]:
    """section -> key -> every value given (a key may repeat; comments and blanks skipped)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        assert current is not None, f"a setting before any section: {line}"
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def unit(name: str) -> dict[str, dict[str, list[str]]]:
    return parse_unit((UNITS / name).read_text())


def one(section: dict[str, list[str]], key: str) -> str:
    values = section.get(key, [])
    assert len(values) == 1, f"{key}: expected one value, found {values}"
    return values[0]


def test_every_unit_is_checked():
    assert sorted(p.name for p in UNITS.glob("*.service")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_execstart_runs_a_real_respawn_command_with_real_flags(name: str):
    argv = shlex.split(one(unit(name)["Service"], "ExecStart"))
    assert argv[0] == INSTALLED
    args = cli._parser().parse_args(argv[1:])  # exits (failing the test) on an unknown command or flag
    assert args.func is EXPECTED[name][0]
    assert args.config == CONFIG


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_units_are_hardened_and_restart_with_backoff(name: str):
    service, section = unit(name)["Service"], unit(name)["Unit"]
    settings = {k: one(service, k) for k in service if k not in ("SystemCallFilter",)}
    assert settings["User"] == settings["Group"] == "respawn"
    assert settings["NoNewPrivileges"] == "yes" and settings["ProtectSystem"] == "strict"
    assert settings["PrivateTmp"] == settings["PrivateDevices"] == "yes"
    assert settings["ProtectHome"] == ("yes" if name == "respawn-server.service" else "read-only")
    # The only writable folder: the state directory, which holds the SQLite audit trail.
    assert settings["StateDirectory"] == "respawn" and "ReadWritePaths" not in settings
    assert settings["CapabilityBoundingSet"] == settings["AmbientCapabilities"] == EXPECTED[name][1]
    assert settings["EnvironmentFile"] == "-/etc/respawn/respawn.env"
    assert settings["Restart"] == "on-failure" and float(settings["RestartSec"].removesuffix("s")) >= 1
    assert int(one(section, "StartLimitBurst")) >= 1 and int(one(section, "StartLimitIntervalSec")) > 0
    assert settings["RestartPreventExitStatus"] == "2"
    assert service["SystemCallFilter"] == ["@system-service", "~@privileged"]


def test_an_invalid_configuration_exits_with_the_status_the_units_do_not_restart(tmp_path: Path, capsys):
    bad = tmp_path / "cluster.yaml"
    bad.write_text("cluster: gpu-a\n")  # no environments, no logs
    assert cli.main(["detector", "--config", str(bad)]) == 2
    assert "respawn:" in capsys.readouterr().err


def test_the_dedicated_user_and_the_example_configuration_fit_the_units():
    user = shlex.split((UNITS / "respawn.sysusers").read_text().splitlines()[-1])
    assert user[:2] == ["u", "respawn"] and user[4] == STATE  # its home is the state directory
    example = yaml.safe_load((DEPLOY / "cluster.example.yaml").read_text())
    assert Path(example["audit_db"]).parent == Path(STATE)  # writable under ProtectSystem=strict
    # No unit may bind a port below 1024 (no CAP_NET_BIND_SERVICE).
    ports = [example["server"]["port"], *(listen["port"] for listen in example["telemetry"].values())]
    assert min(ports) > 1023


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verifies_the_units_and_rates_their_exposure_low(tmp_path: Path):
    # verify checks that ExecStart's binary exists: point the copies at this venv's respawn.
    here = Path(sys.executable).parent / "respawn"
    copies = []
    for name in sorted(EXPECTED):
        copy = tmp_path / name
        copy.write_text((UNITS / name).read_text().replace(INSTALLED, str(here)))
        copies.append(str(copy))
    verified = subprocess.run(["systemd-analyze", "verify", *copies], capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0 and not verified.stdout + verified.stderr, verified.stderr
    for copy in copies:
        rated = subprocess.run(
            ["systemd-analyze", "security", "--offline=yes", copy], capture_output=True, text=True, timeout=60
        )
        level = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", rated.stdout)
        assert level, rated.stdout[-500:] + rated.stderr
        assert float(level[1]) <= 2.5, f"{copy}: exposure {level[1]} (systemd's scale: 0 safest, 10 unsafe)"
