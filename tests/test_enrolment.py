import json

import pytest

from respawn.config import ClusterConfig, Mode
from respawn.enrolment import MAX_COMMENT_BYTES, Enrolment, NotEnrolled, enrol


@pytest.fixture
def config(tmp_path) -> ClusterConfig:
    return ClusterConfig.model_validate({
        "cluster": "c1",
        "environments": {"prod": {"max_mode": "observe"}, "demo": {"max_mode": "action"}},
        "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
        "audit_db": str(tmp_path / "audit.db"),
    })


def comment(**respawn) -> str:
    return json.dumps({"respawn": respawn})


def test_job_in_action_environment_gets_what_it_asks(config):
    assert enrol(comment(environment="demo", mode="action"), config) == Enrolment(
        environment="demo", mode=Mode.ACTION, requested_mode=Mode.ACTION)
    assert enrol(comment(environment="demo", mode="observe"), config).mode is Mode.OBSERVE


def test_job_without_mode_gets_the_environment_mode(config):
    assert enrol(comment(environment="demo"), config).mode is Mode.ACTION
    assert enrol(comment(environment="prod"), config).mode is Mode.OBSERVE


def test_job_cannot_widen_an_observe_environment(config):
    result = enrol(comment(environment="prod", mode="action"), config)
    assert isinstance(result, Enrolment)
    assert result.mode is Mode.OBSERVE
    assert "observe only" in result.note


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (None, "no comment"),
        ("", "no comment"),
        ("just a note about my run", "not JSON"),
        ("[1, 2]", "no 'respawn' object"),
        ('{"other": 1}', "no 'respawn' object"),
        ('{"respawn": "demo"}', "not an object"),
        ('{"respawn": {"environment": 7}}', "environment"),
        ('{"respawn": {"environment": "demo", "mode": "destroy"}}', "mode"),
        ('{"respawn": {"environment": "demo", "mode": ["action"]}}', "mode"),
        ('{"respawn": {"environment": "demo", "drain": "all"}}', "drain"),
        ('{"respawn": {"environment": "staging"}}', "unknown environment 'staging'"),
        ('{"respawn": {"environment": "demo; rm -rf / #"}}', "environment"),
        ('{"respawn": {"environment": "$(reboot)"}}', "environment"),
        ('{"respawn": {"environment": "`id`", "mode": "action"}}', "environment"),
        ("{" * 5000, "larger than"),
        ("[" * 2000 + "]" * 2000, "not JSON"),
    ],
)
def test_hostile_or_malformed_comments_are_not_enrolled_with_a_reason(config, text, reason):
    result = enrol(text, config)
    assert isinstance(result, NotEnrolled)
    assert reason in result.reason


def test_huge_comment_is_refused_before_parsing(config):
    huge = comment(environment="demo", padding="x" * 100_000)
    result = enrol(huge, config)
    assert isinstance(result, NotEnrolled)
    assert str(MAX_COMMENT_BYTES) in result.reason
