import os
from pathlib import Path

import pytest

from respawn.config.cluster import ConfigError, Mode, SchedulerAccess, load_config

GOOD = """
cluster: gpu-a
scheduler:
  transport: ssh
  ssh: {host: login1, port: 22, client_key: /etc/respawn/id, known_hosts: /etc/respawn/known_hosts}
environments:
  prod: {max_mode: observe}
  research: {max_mode: action}
logs:
  job_output: /lustre/jobs/{job_id}/slurm.out
  kernel_log: /var/log/nodes/{node}/kern.log
budgets: {max_restarts: 5}
audit_db: /var/lib/respawn/audit.db
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "respawn.yaml"
    path.write_text(text)
    return path


def test_good_file_loads_with_defaults(tmp_path):
    config = load_config(write(tmp_path, GOOD))
    assert config.scheduler.transport is SchedulerAccess.SSH
    assert config.environments["prod"].max_mode is Mode.OBSERVE
    assert config.budgets.max_restarts == 5
    assert config.budgets.no_checkpoint_attempts == 2
    assert config.task_queue == "respawn-gpu-a"
    assert config.job_output(42) == Path("/lustre/jobs/42/slurm.out")
    assert config.kernel_log("n7") == Path("/var/log/nodes/n7/kern.log")
    assert config.audit_db == Path("/var/lib/respawn/audit.db")


def test_the_audit_store_is_a_file_or_a_postgresql_url(tmp_path):
    url = "postgresql://respawn:s3cret@db1:5432/respawn"
    config = load_config(write(tmp_path, GOOD.replace("/var/lib/respawn/audit.db", url)))
    assert not isinstance(config.audit_db, Path) and str(config.audit_db) == url
    relative = load_config(write(tmp_path, GOOD.replace("/var/lib/respawn/audit.db", "audit.db")))
    assert relative.audit_db == Path("audit.db")


def test_the_workers_sticky_timeout_is_the_sdks_unless_a_site_changes_it(tmp_path):
    assert load_config(write(tmp_path, GOOD)).temporal.sticky_timeout_s == 10.0
    shorter = load_config(write(tmp_path, GOOD + "temporal: {sticky_timeout_s: 2}\n"))
    assert shorter.temporal.sticky_timeout_s == 2
    with pytest.raises(ConfigError, match="sticky_timeout_s"):
        load_config(write(tmp_path, GOOD + "temporal: {sticky_timeout_s: 0}\n"))


def test_every_mistake_of_a_configuration_is_named_at_once_with_the_key_meant(tmp_path):
    text = (
        GOOD.replace("  prod: {max_mode: observe}", "  prod: {max_mod: observe}")
        + "temporal: {adress: t:7233}\nwatchdgo: {}\n"
    )
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path, text.replace("budgets: {max_restarts: 5}", "budgets: {max_restarts: -1}")))
    head, *lines = str(raised.value).splitlines()
    assert head.endswith("respawn.yaml: 4 problems:")
    assert sorted(lines) == [
        "  budgets.max_restarts: Input should be greater than or equal to 0",
        "  environments.prod.max_mod: not a setting here; did you mean 'max_mode'?",
        "  temporal.adress: not a setting here; did you mean 'address'?",
        "  watchdgo: not a setting here; did you mean 'watchdog'?",
    ]


def test_environment_defaults_to_observe(tmp_path):
    config = load_config(write(tmp_path, GOOD.replace("{max_mode: observe}", "{}")))
    assert config.environments["prod"].max_mode is Mode.OBSERVE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cluster: [", "not valid YAML"),
        ("- a\n- b\n", "expected a mapping"),
        (GOOD.replace("max_mode: action", "max_mode: yolo"), "environments.research.max_mode"),
        (
            GOOD.replace(
                "  ssh: {host: login1, port: 22, client_key: /etc/respawn/id, known_hosts: /etc/respawn/known_hosts}\n",
                "",
            ),
            "needs an 'ssh' section",
        ),
        (GOOD.replace("budgets: {max_restarts: 5}", "budgets: {max_restarts: -1}"), "budgets.max_restarts"),
        (GOOD + "surprise: 1\n", "surprise"),
        (GOOD.replace("cluster: gpu-a", "cluster: 'a b; rm'"), "cluster"),
        (GOOD.replace("/var/lib/respawn/audit.db", "mysql://db1/respawn"), "a URL here is postgresql://"),
        (GOOD.replace("/var/lib/respawn/audit.db", "postgresql://db1:99999/r"), "audit_db"),
    ],
)
def test_bad_file_gives_one_line_naming_the_problem(tmp_path, text, message):
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, text))
    assert message in str(err.value)
    assert "\n" not in str(err.value)
    assert str(tmp_path) in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "nope.yaml")


# --- An environment may be bound to partitions, accounts and/or users (issue 10). ---


def test_environment_binding_loads_and_is_optional(tmp_path):
    text = GOOD.replace(
        "  research: {max_mode: action}\n",
        "  research:\n    max_mode: action\n"
        "    allow: {partitions: [gpu, gpu-large], accounts: [ml-prod], users: [alice, bob_2]}\n",
    )
    config = load_config(write(tmp_path, text))
    allow = config.environments["research"].allow
    assert (allow.partitions, allow.accounts, allow.users) == (["gpu", "gpu-large"], ["ml-prod"], ["alice", "bob_2"])
    assert config.environments["prod"].allow is None  # no binding: every job may name it, as before
    one = load_config(write(tmp_path, GOOD.replace("{max_mode: action}", "{max_mode: action, allow: {users: [a]}}")))
    assert (one.environments["research"].allow.partitions, one.environments["research"].allow.users) == (None, ["a"])


@pytest.mark.parametrize(
    ("allow", "message"),
    [
        ("{partitions: []}", "environments.research.allow.partitions: Value error, an empty list admits no job"),
        ("{accounts: [ml], users: []}", "environments.research.allow.users: Value error, an empty list"),
        ("{}", "environments.research.allow: Value error, allow gives none of partitions, accounts, users"),
        ("{users: ['alice; rm -rf /']}", "environments.research.allow.users: Value error, 'alice; rm -rf /' is not a"),
        ("{partitions: [gpu, 'a b']}", "'a b' is not a Slurm name"),
        ("{partitions: ['-x']}", "'-x' is not a Slurm name"),
        ("{partitions: [" + "p" * 65 + "]}", "is not a Slurm name"),
        ("{partitions: gpu}", "environments.research.allow.partitions: Input should be a valid list"),
        ("{users: [1000]}", "environments.research.allow.users.0"),
        (
            "{groups: [ml]}",
            "environments.research.allow.groups: not a setting here (known: accounts, partitions, users)",
        ),
    ],
)
def test_a_bad_binding_gives_one_line_naming_the_problem(tmp_path, allow, message):
    with pytest.raises(ConfigError) as err:
        load_config(write(tmp_path, GOOD.replace("{max_mode: action}", f"{{max_mode: action, allow: {allow}}}")))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


# --- A key given twice is an error, in the configuration and in runbooks (respawn/config/yamlfile.py). ---


@pytest.mark.parametrize(
    ("text", "line", "key"),
    [
        (GOOD + "budgets: {max_restarts: 0}\n", 14, "budgets"),  # the second one, lower down, would have won
        (
            GOOD.replace("  research: {max_mode: action}\n", "  research: {max_mode: observe, max_mode: action}\n"),
            8,
            "max_mode",
        ),
        (
            GOOD.replace("  prod: {max_mode: observe}\n", "  prod: {max_mode: observe}\n  prod: {max_mode: action}\n"),
            8,
            "prod",
        ),
    ],
)
def test_a_duplicate_key_is_one_line_naming_its_line_not_last_one_wins(tmp_path, text, line, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: line {line}: duplicate key '{key}'"


def test_a_merge_key_may_still_be_overridden():
    from respawn.config import yamlfile

    assert yamlfile.load("a: &a {x: 1, y: 2}\nb: {<<: *a, x: 3}\n")["b"] == {"x": 3, "y": 2}


def test_runbooks_and_progress_patterns_refuse_a_duplicate_key(tmp_path):
    from respawn.attribution.runbook import Catalogue, RunbookError
    from respawn.sources.progress import ProgressPatterns

    book = (Path(__file__).parents[2] / "runbooks" / "storage.yaml").read_text()
    (tmp_path / "storage.yaml").write_text(
        "priority: 10\n" + book.replace("priority:", "# priority:") + "priority: 90\n"
    )
    with pytest.raises(RunbookError, match=r"storage\.yaml: line \d+: duplicate key 'priority'$"):
        Catalogue.load(tmp_path)
    (tmp_path / "progress").mkdir()
    (tmp_path / "progress" / "default.yaml").write_text("step: []\nstep: []\n")
    with pytest.raises(RunbookError, match=r"default\.yaml: line 2: duplicate key 'step'$"):
        ProgressPatterns.load(tmp_path)


# --- `respawn config` checks the files that hold secrets (respawn/config/secretfiles.py). ---


def secrets_config(tmp_path: Path, tokens: str, mode: int = 0o600) -> Path:
    key = tmp_path / "id_ed25519"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n...\n")
    key.chmod(0o600)
    path = write(
        tmp_path, GOOD.replace("client_key: /etc/respawn/id", f"client_key: {key}") + f"server:\n  tokens:\n{tokens}"
    )
    path.chmod(mode)
    return path


def respawn_config(path: Path, capsys) -> tuple[int, str]:
    from respawn.surfaces.cli import main

    rc = main(["config", str(path)])
    captured = capsys.readouterr()
    return rc, captured.out + captured.err


def test_config_with_secret_files_only_their_owner_reads_is_ok(tmp_path, capsys):
    token = tmp_path / "controller.token"
    token.write_text("controller-token-0123456789\n")
    token.chmod(0o600)
    path = secrets_config(tmp_path, f"    - {{name: controller, token_file: {token}, scopes: [read, write]}}\n")
    assert respawn_config(path, capsys) == (0, f"{path}: ok (cluster gpu-a, 2 environments)\n")


def test_config_reports_a_missing_or_open_token_file_and_an_open_key_naming_the_fix(tmp_path, capsys):
    token = tmp_path / "controller.token"
    token.write_text("controller-token-0123456789\n")
    token.chmod(0o644)
    (tmp_path / "id_ed25519").touch()
    path = secrets_config(
        tmp_path,
        f"    - {{name: controller, token_file: {token}, scopes: [read, write]}}\n"
        f"    - {{name: gone, token_file: {tmp_path}/gone.token, scopes: [read]}}\n",
    )
    (tmp_path / "id_ed25519").chmod(0o640)
    rc, said = respawn_config(path, capsys)
    assert rc == 1
    lines = said.splitlines()
    assert (
        f"{path}: server.tokens[controller].token_file: {token}: group or others have access (mode 0644):"
        f" chmod 600 {token}" in lines
    )
    assert any(
        line.startswith(f"{path}: server.tokens[gone].token_file: {tmp_path}/gone.token: missing") for line in lines
    )
    assert any("scheduler.ssh.client_key" in line and "mode 0640" in line and "chmod 600" in line for line in lines)
    assert lines[-1] == f"{path}: 3 problem(s) with secret files"
    assert "controller-token-0123456789" not in said  # a secret is never echoed


def test_config_reports_an_unreadable_or_short_token_file(tmp_path, capsys):
    token = tmp_path / "short.token"
    token.write_text("too-short\n")
    token.chmod(0o600)
    path = secrets_config(tmp_path, f"    - {{name: short, token_file: {token}, scopes: [read]}}\n")
    rc, said = respawn_config(path, capsys)
    assert rc == 1 and "server.tokens[short].token_file" in said and "fewer than 16 characters" in said
    if os.geteuid() != 0:  # root reads whatever the mode says
        token.write_text("long-enough-0123456789\n")
        token.chmod(0o000)
        rc, said = respawn_config(path, capsys)
        assert rc == 1 and "cannot read" in said and "Permission denied" in said


def test_an_inline_token_in_a_config_others_can_read_is_a_warning(tmp_path, capsys):
    inline = "    - {name: ci, token: inline-token-0123456789, scopes: [read]}\n"
    rc, said = respawn_config(secrets_config(tmp_path, inline, mode=0o644), capsys)
    assert rc == 0 and "warning: server.tokens[ci].token:" in said and "prefer token_file" in said
    assert "inline-token-0123456789" not in said
    rc, said = respawn_config(secrets_config(tmp_path, inline, mode=0o600), capsys)
    assert rc == 0 and "warning" not in said


def test_a_database_password_in_a_config_others_can_read_is_a_warning_never_shown(tmp_path, capsys):
    key = secrets_config(tmp_path, "").parent / "id_ed25519"
    path = tmp_path / "respawn.yaml"
    for url, mode, warned in (
        ("postgresql://respawn:pw-0123456789@db1/respawn", 0o644, True),
        ("postgresql://respawn:pw-0123456789@db1/respawn", 0o600, False),
        ("postgresql://respawn@db1/respawn", 0o644, False),  # the password from libpq's PGPASSFILE
    ):
        path.write_text(
            GOOD.replace("/var/lib/respawn/audit.db", url).replace("client_key: /etc/respawn/id", f"client_key: {key}")
        )
        path.chmod(mode)
        _, said = respawn_config(path, capsys)
        assert ("warning: audit_db:" in said and "PGPASSFILE" in said) is warned, said
        assert "pw-0123456789" not in said
