import json

import pytest

from respawn.config.cluster import ClusterConfig, Mode
from respawn.detection.enrolment import MAX_COMMENT_BYTES, Enrolment, NotEnrolled, enrol
from respawn.scheduler.slurm import JobInfo


@pytest.fixture
def config(tmp_path) -> ClusterConfig:
    return ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {"prod": {"max_mode": "observe"}, "demo": {"max_mode": "action"}},
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
        }
    )


def comment(**respawn) -> str:
    return json.dumps({"respawn": respawn})


def job(text: str | None, partition: str = "debug", account: str = "", user: str = "root") -> JobInfo:
    """A running job with this sbatch comment (None: no comment), as squeue gives it."""
    return JobInfo(job_id=1, state="RUNNING", comment=text or "", partition=partition, account=account, user=user)


def test_job_in_action_environment_gets_what_it_asks(config):
    assert enrol(job(comment(environment="demo", mode="action")), config) == Enrolment(
        environment="demo", mode=Mode.ACTION, requested_mode=Mode.ACTION
    )
    assert enrol(job(comment(environment="demo", mode="observe")), config).mode is Mode.OBSERVE


def test_job_without_mode_gets_the_environment_mode(config):
    assert enrol(job(comment(environment="demo")), config).mode is Mode.ACTION
    assert enrol(job(comment(environment="prod")), config).mode is Mode.OBSERVE


def test_job_cannot_widen_an_observe_environment(config):
    result = enrol(job(comment(environment="prod", mode="action")), config)
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
    result = enrol(job(text), config)
    assert isinstance(result, NotEnrolled)
    assert reason in result.reason


def test_huge_comment_is_refused_before_parsing(config):
    huge = comment(environment="demo", padding="x" * 100_000)
    result = enrol(job(huge), config)
    assert isinstance(result, NotEnrolled)
    assert str(MAX_COMMENT_BYTES) in result.reason


@pytest.fixture
def bound(tmp_path) -> ClusterConfig:
    """debug jobs observe; prod acts for gpu jobs of ml-prod's alice and bob; open acts for anyone."""
    return ClusterConfig.model_validate(
        {
            "cluster": "c1",
            "environments": {
                "sandbox": {"max_mode": "observe", "allow": {"partitions": ["debug"]}},
                "prod": {
                    "max_mode": "action",
                    "allow": {"partitions": ["gpu"], "accounts": ["ml-prod"], "users": ["alice", "bob"]},
                },
                "team": {"max_mode": "action", "allow": {"accounts": ["ml-prod"]}},
                "mine": {"max_mode": "action", "allow": {"users": ["alice"]}},
                "open": {"max_mode": "action"},
            },
            "logs": {"job_output": str(tmp_path / "slurm-{job_id}.out")},
            "audit_db": str(tmp_path / "audit.db"),
        }
    )


def test_job_bound_to_an_observe_environment_naming_an_acting_one_is_observed_with_the_refusal(bound):
    result = enrol(job(comment(environment="prod", mode="action"), partition="debug"), bound)
    assert isinstance(result, Enrolment)  # still watched, with recommendations: not refused outright
    assert (result.environment, result.mode, result.requested_mode) == ("prod", Mode.OBSERVE, Mode.ACTION)
    assert result.refused == "environment 'prod' is bound to partitions gpu; job is in debug"
    assert result.note == (
        "job asked for action; environment 'prod' is bound to partitions gpu; job is in debug: observe only"
    )
    # its own environment takes it, as it allows
    assert enrol(job(comment(environment="sandbox"), partition="debug"), bound) == Enrolment(
        environment="sandbox", mode=Mode.OBSERVE
    )


def test_refusal_applies_when_the_job_asks_no_mode_or_observe(bound):
    for text in (comment(environment="prod"), comment(environment="prod", mode="observe")):
        result = enrol(job(text, partition="debug"), bound)
        assert result.mode is Mode.OBSERVE
        assert result.refused is not None and result.note == f"{result.refused}: observe only"


def test_bound_by_account(bound):
    assert enrol(job(comment(environment="team"), account="ml-prod"), bound).mode is Mode.ACTION
    assert enrol(job(comment(environment="team"), account="ML-Prod"), bound).mode is Mode.ACTION  # Slurm lower-cases
    other = enrol(job(comment(environment="team", mode="action"), account="physics"), bound)
    assert other.mode is Mode.OBSERVE
    assert other.refused == "environment 'team' is bound to accounts ml-prod; job's account is physics"
    # without Slurm accounting the account is empty: no account binding admits it
    assert enrol(job(comment(environment="team")), bound).refused.endswith("job's account is (none)")


def test_bound_by_user(bound):
    assert enrol(job(comment(environment="mine"), user="alice"), bound).mode is Mode.ACTION
    other = enrol(job(comment(environment="mine"), user="mallory"), bound)
    assert other.mode is Mode.OBSERVE
    assert other.refused == "environment 'mine' is bound to users alice; job's user is mallory"


@pytest.mark.parametrize(
    ("partition", "account", "user", "refused"),
    [
        ("gpu", "ml-prod", "alice", None),
        ("gpu", "ml-prod", "bob", None),
        ("debug", "ml-prod", "alice", "partitions gpu; job is in debug"),
        ("gpu", "physics", "alice", "accounts ml-prod; job's account is physics"),
        ("gpu", "ml-prod", "carol", "users alice, bob; job's user is carol"),
        ("gpu,debug", "ml-prod", "alice", "partitions gpu; job is in gpu,debug"),  # pending, may start in debug
        ("", "ml-prod", "alice", "partitions gpu; job is in (none)"),
    ],
)
def test_a_combined_binding_needs_every_given_list_to_match(bound, partition, account, user, refused):
    result = enrol(job(comment(environment="prod", mode="action"), partition, account, user), bound)
    assert result.mode is (Mode.ACTION if refused is None else Mode.OBSERVE)
    assert result.refused == (None if refused is None else f"environment 'prod' is bound to {refused}")


def test_an_unbound_environment_admits_every_job(bound):
    for partition, account, user in (("debug", "", "root"), ("gpu", "physics", "mallory"), ("", "", "")):
        result = enrol(job(comment(environment="open", mode="action"), partition, account, user), bound)
        assert (result.mode, result.refused, result.note) == (Mode.ACTION, None, "")


def test_a_binding_never_widens_an_observe_environment(bound):
    result = enrol(job(comment(environment="sandbox", mode="action"), partition="debug"), bound)
    assert (result.mode, result.refused) == (Mode.OBSERVE, None)
    assert "observe only" in result.note
