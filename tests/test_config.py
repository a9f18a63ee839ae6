from pathlib import Path

import pytest

from respawn.config import ConfigError, Mode, Transport, load_config

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
    assert config.scheduler.transport is Transport.SSH
    assert config.environments["prod"].max_mode is Mode.OBSERVE
    assert config.budgets.max_restarts == 5
    assert config.budgets.no_checkpoint_attempts == 2
    assert config.task_queue == "respawn-gpu-a"
    assert config.job_output(42) == Path("/lustre/jobs/42/slurm.out")
    assert config.kernel_log("n7") == Path("/var/log/nodes/n7/kern.log")


def test_environment_defaults_to_observe(tmp_path):
    config = load_config(write(tmp_path, GOOD.replace("{max_mode: observe}", "{}")))
    assert config.environments["prod"].max_mode is Mode.OBSERVE


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cluster: [", "not valid YAML"),
        ("- a\n- b\n", "expected a mapping"),
        (GOOD.replace("max_mode: action", "max_mode: yolo"), "environments.research.max_mode"),
        (GOOD.replace("  ssh: {host: login1, port: 22, client_key: /etc/respawn/id, known_hosts: /etc/respawn/known_hosts}\n", ""),
         "needs an 'ssh' section"),
        (GOOD.replace("budgets: {max_restarts: 5}", "budgets: {max_restarts: -1}"), "budgets.max_restarts"),
        (GOOD + "surprise: 1\n", "surprise"),
        (GOOD.replace("cluster: gpu-a", "cluster: 'a b; rm'"), "cluster"),
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


# --- A key given twice is an error, in the configuration and in runbooks (respawn/yamlfile.py). ---

@pytest.mark.parametrize(("text", "line", "key"), [
    (GOOD + "budgets: {max_restarts: 0}\n", 14, "budgets"),  # the second one, lower down, would have won
    (GOOD.replace("  research: {max_mode: action}\n", "  research: {max_mode: observe, max_mode: action}\n"),
     8, "max_mode"),
    (GOOD.replace("  prod: {max_mode: observe}\n", "  prod: {max_mode: observe}\n  prod: {max_mode: action}\n"),
     8, "prod"),
])
def test_a_duplicate_key_is_one_line_naming_its_line_not_last_one_wins(tmp_path, text, line, key):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == f"{path}: line {line}: duplicate key '{key}'"


def test_a_merge_key_may_still_be_overridden():
    from respawn import yamlfile

    assert yamlfile.load("a: &a {x: 1, y: 2}\nb: {<<: *a, x: 3}\n")["b"] == {"x": 3, "y": 2}


def test_runbooks_and_progress_patterns_refuse_a_duplicate_key(tmp_path):
    from respawn.progress import ProgressPatterns
    from respawn.runbook import Catalogue, RunbookError

    book = (Path(__file__).parent.parent / "runbooks" / "storage.yaml").read_text()
    (tmp_path / "storage.yaml").write_text("priority: 10\n" + book.replace("priority:", "# priority:")
                                           + "priority: 90\n")
    with pytest.raises(RunbookError, match=r"storage\.yaml: line \d+: duplicate key 'priority'$"):
        Catalogue.load(tmp_path)
    (tmp_path / "progress").mkdir()
    (tmp_path / "progress" / "default.yaml").write_text("step: []\nstep: []\n")
    with pytest.raises(RunbookError, match=r"default\.yaml: line 2: duplicate key 'step'$"):
        ProgressPatterns.load(tmp_path)
