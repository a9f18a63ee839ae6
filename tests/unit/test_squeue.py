"""Parsing of squeue/sinfo JSON captured from the sandbox (Slurm 22.05.8, openapi v0.0.38),
and the mapping of Slurm's error texts to typed errors."""

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from respawn.scheduler.errors import (
    CommandTimeout,
    InvalidNodeName,
    JobFinished,
    JobNotFound,
    JobNotPending,
    JobPending,
    OperationDisabled,
    SchedulerUnavailable,
    SlurmCommandError,
    TransportError,
    error_from,
)
from respawn.scheduler.slurm import JobInfo, parse_sinfo_json, parse_squeue_json
from respawn.scheduler.transport import CommandResult

DATA = Path(__file__).parents[1] / "data"
# The comment of job 3 in squeue.json, as given to sbatch --comment.
HOSTILE = """{"recovery": {"mode": "observe"}}; $(touch /tmp/pwned) `id` 'single' "double" a=b \\ end"""


@pytest.fixture(scope="module")
def jobs() -> dict[int, JobInfo]:
    return {j.job_id: j for j in parse_squeue_json((DATA / "squeue.json").read_text())}


def test_every_job_is_parsed(jobs: dict[int, JobInfo]) -> None:
    assert sorted(jobs) == list(range(1, 11))


def test_running_two_node_job_with_hostile_comment(jobs: dict[int, JobInfo]) -> None:
    job = jobs[3]
    assert (job.name, job.user, job.state, job.state_reason) == ("train2", "root", "RUNNING", "None")
    assert job.nodes == ["node1", "node2"]
    assert job.batch_host == "node1"
    assert job.requeue is True
    assert job.restart_count == 0
    assert job.comment == HOSTILE
    assert job.workdir == "/tmp/respawn-lab/shared/out"
    assert job.exit_code == 0 and job.exit_signal is None
    assert job.submit_time == datetime(2026, 11, 30, 2, 13, 10, tzinfo=UTC)
    assert job.start_time is not None and job.start_time >= job.submit_time
    assert job.array_job_id is None and job.array_task_id is None


def test_requeued_held_job(jobs: dict[int, JobInfo]) -> None:
    job = jobs[6]
    assert (job.state, job.state_reason) == ("PENDING", "JobHeldUser")
    assert job.state_description == "job requeued in held state"
    assert job.restart_count == 1
    assert job.nodes == []  # a pending job has no allocation, even after it ran


def test_held_job_with_excluded_node(jobs: dict[int, JobInfo]) -> None:
    job = jobs[5]
    assert (job.state, job.state_reason) == ("PENDING", "JobHeldUser")
    assert job.excluded_nodes == ["node4"]
    assert job.batch_host is None
    assert job.start_time is None


def test_exit_status_is_decoded(jobs: dict[int, JobInfo]) -> None:
    # Slurm's JSON holds the raw wait status: 768 is exit 3, 36608 is exit 143, 15 is SIGTERM.
    assert (jobs[4].state, jobs[4].exit_code, jobs[4].exit_signal) == ("FAILED", 3, None)
    assert (jobs[2].state, jobs[2].exit_code) == ("FAILED", 143)
    assert (jobs[7].state, jobs[7].exit_code, jobs[7].exit_signal) == ("CANCELLED", 0, 15)


def test_array_elements(jobs: dict[int, JobInfo]) -> None:
    assert (jobs[9].array_job_id, jobs[9].array_task_id) == (8, 0)
    assert (jobs[8].array_job_id, jobs[8].array_task_id) == (8, 1)


def test_missing_fields_get_defaults() -> None:
    text = json.dumps({"jobs": [{"job_id": 42, "job_state": "PENDING"}, {"name": "no id"}]})
    [job] = parse_squeue_json(text)
    assert job == JobInfo(job_id=42, state="PENDING")


def test_account_and_user_id_for_environment_bindings(jobs: dict[int, JobInfo]) -> None:
    # The sandbox's 22.05 shape: jobs of root (uid 0) in partition debug, without accounting (account "").
    assert {(j.user, j.user_id, j.account, j.partition) for j in jobs.values()} == {("root", 0, "", "debug")}
    raw = {"job_id": 7, "job_state": "RUNNING", "user_name": "alice", "user_id": 1001, "account": "ml-prod"}
    [job] = parse_squeue_json(json.dumps({"jobs": [raw]}))
    assert (job.user, job.user_id, job.account) == ("alice", 1001, "ml-prod")
    # later openapi versions wrap numbers; a missing or unreadable user_id is unknown, not root
    wrapped = {"job_id": 8, "job_state": "RUNNING", "user_id": {"set": True, "infinite": False, "number": 1002}}
    assert parse_squeue_json(json.dumps({"jobs": [wrapped]}))[0].user_id == 1002
    for odd in ({}, {"user_id": None}, {"user_id": "nobody"}, {"user_id": True}):
        assert (
            parse_squeue_json(json.dumps({"jobs": [{"job_id": 9, "job_state": "PENDING", **odd}]}))[0].user_id is None
        )


def test_allocation_falls_back_to_job_resources() -> None:
    resources = {"allocated_nodes": [{"nodename": "node3"}]}
    raw = {"job_id": 1, "job_state": "RUNNING", "nodes": "", "job_resources": resources}
    assert parse_squeue_json(json.dumps({"jobs": [raw]}))[0].nodes == ["node3"]


def test_controller_down_is_not_an_empty_queue() -> None:
    # squeue --json exits 0 with an empty list and an "errors" entry when slurmctld is away.
    with pytest.raises(SchedulerUnavailable, match="slurm_load_jobs"):
        parse_squeue_json((DATA / "squeue_controller_down.json").read_text())
    with pytest.raises(SchedulerUnavailable):
        parse_sinfo_json((DATA / "sinfo_controller_down.json").read_text())


def test_unreadable_output() -> None:
    with pytest.raises(SlurmCommandError):
        parse_squeue_json("squeue: fatal: something")
    with pytest.raises(SlurmCommandError):
        parse_sinfo_json('{"nodes": 3}')


def test_sinfo() -> None:
    nodes = {n.name: n for n in parse_sinfo_json((DATA / "sinfo.json").read_text())}
    assert sorted(nodes) == ["node1", "node2", "node3", "node4"]
    drained = nodes["node4"]
    assert (drained.state, drained.flags, drained.reason) == ("idle", ["DRAIN"], "xid79 gpu fell off bus")
    assert nodes["node1"].state == "allocated" and nodes["node1"].flags == []


def test_sinfo_down_node() -> None:
    data = json.loads((DATA / "sinfo.json").read_text())
    data["nodes"][1].update(state="down", state_flags=["NOT_RESPONDING"], reason="Not responding")
    node = parse_sinfo_json(json.dumps(data))[1]
    assert (node.name, node.state, node.flags) == ("node2", "down", ["NOT_RESPONDING"])


NO_CONTROLLER = "Unable to contact slurm controller (connect failure)"
DRAINING = "DOWNING or DRAINING a node"


# Texts as printed by Slurm 22.05.8 in the sandbox.
@pytest.mark.parametrize(
    ("argv", "stderr", "kind"),
    [
        (["scontrol", "show", "job", "999999"], "slurm_load_jobs error: Invalid job id specified\n", JobNotFound),
        (["scontrol", "release", "999999"], "slurm_suspend error: Invalid job id specified\n", JobNotFound),
        (["scontrol", "requeue", "3"], "Job is pending execution for job 3\n", JobPending),
        (["scontrol", "update", "JobId=1"], "Job is no longer pending execution for job 1\n", JobNotPending),
        (["scontrol", "requeue", "8"], "Requested operation is presently disabled for job 8\n", OperationDisabled),
        (["scontrol", "requeue", "8"], "Job has already finished for job 8\n", JobFinished),
        (["scontrol", "update"], "slurm_update error: Invalid node name specified\n", InvalidNodeName),
        (["squeue"], f"slurm_load_jobs error: {NO_CONTROLLER}\n", SchedulerUnavailable),
        (["scontrol", "requeue", "1"], "Unexpected message received for job 1\n", SchedulerUnavailable),
        (["scancel", "1"], f"scancel: error: Kill job error on job id 1: {NO_CONTROLLER}", SchedulerUnavailable),
        (["scontrol", "update"], f"You must specify a reason when {DRAINING}. Request denied", SlurmCommandError),
    ],
)
def test_error_mapping(argv: list[str], stderr: str, kind: type) -> None:
    error = error_from(CommandResult(rc=1, stdout="", stderr=stderr), argv)
    assert type(error) is kind
    assert error.message.startswith(" ".join(argv[:2]) + ": ")
    assert error.retryable is (kind is SchedulerUnavailable)


def test_error_message_is_short_and_omits_arguments() -> None:
    argv = ["scontrol", "update", "NodeName=node1", "Reason=secret text"]
    error = error_from(CommandResult(rc=1, stdout="", stderr="x" * 5000 + "\nmore"), argv)
    assert "secret" not in error.message and len(error.message) < 400


def test_error_without_output() -> None:
    error = error_from(CommandResult(rc=-1, stdout="", stderr=""), ["squeue", "--json"])
    assert isinstance(error, SlurmCommandError) and "exit status -1" in error.message


def test_transport_errors_are_retryable() -> None:
    assert TransportError("x").retryable and CommandTimeout("x").retryable
    assert isinstance(CommandTimeout("x"), TransportError)
