"""One adapter, per-version readers: real captures of Slurm 22.05.8 (openapi v0.0.38) and
24.11.5 (data_parser v0.0.42, and v0.0.40/41 asked for), made by respawn/sandbox/capture.py
against real daemons (tests/data/slurm-<version>/situations.json says which job is which)."""

import json

import pytest

from respawn.sandbox.capture import TEXT_MARKER
from respawn.scheduler import actions, slurm_json, squeue_text
from respawn.scheduler.errors import JobCompleting, JobNotFound, SchedulerUnavailable, error_from
from respawn.scheduler.slurm import JobInfo, NodeInfo, Slurm, parse_sinfo_json, parse_squeue_json
from respawn.scheduler.slurm_json import UnsupportedOutput
from respawn.scheduler.states import JobFlag, JobState, NodeFlag, NodeState
from respawn.scheduler.transport import CommandResult
from tests.unit._slurm_replay import VERSIONS, Replay, folder, situations


def jobs(version: str, name: str = "squeue.json") -> dict[int, JobInfo]:
    return {j.job_id: j for j in parse_squeue_json((folder(version) / name).read_text())}


def nodes(version: str, name: str) -> dict[str, NodeInfo]:
    return {n.name: n for n in parse_sinfo_json((folder(version) / name).read_text())}


def job(version: str, label: str, name: str = "squeue.json") -> JobInfo:
    return jobs(version, name)[situations(version)["jobs"][label]]


@pytest.mark.parametrize("version", VERSIONS)
def test_the_output_names_its_version(version: str) -> None:
    data = json.loads((folder(version) / "squeue.json").read_text())
    assert slurm_json.version(data) == {"22.05": "v0.0.38", "24.11": "v0.0.42"}[version]
    assert slurm_json.release(data).startswith(version)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_job_is_read(version: str) -> None:
    ids = set(situations(version)["jobs"].values())
    found = jobs(version)
    assert ids <= set(found)
    # The array's three tasks: the array id is the last task's own id, the other two have their own.
    assert len(found) == len(ids) + 2


@pytest.mark.parametrize("version", VERSIONS)
def test_running_two_node_job_and_its_comment_byte_exact(version: str) -> None:
    running = job(version, "train2")
    assert (running.state, running.flags, running.completing) == (JobState.RUNNING, [], False)
    assert running.state == "RUNNING"  # callers comparing strings keep working
    assert running.comment == situations(version)["comment"]
    assert running.nodes == ["node1", "node2"] and running.batch_host == "node1"
    assert running.requeue is True and running.restart_count == 0
    assert running.exit_code == 0 and running.exit_signal is None
    assert running.start_time is not None and running.start_time >= running.submit_time
    assert running.end_time is None  # Slurm prints a projection for a running job: not an end
    assert running.array_job_id is None and running.array_task_id is None


@pytest.mark.parametrize("version", VERSIONS)
def test_pending_held(version: str) -> None:
    held = job(version, "held")
    assert (held.state, held.state_reason, held.completing) == ("PENDING", "JobHeldUser", False)
    assert held.nodes == [] and held.end_time is None and held.start_time is None


@pytest.mark.parametrize("version", VERSIONS)
def test_requeued_job_is_completing(version: str) -> None:
    """Right after `scontrol requeue`: 22.05 prints COMPLETING in place of the state,
    24.11 prints ["PENDING", "COMPLETING"]; either way no recovery step may touch it yet."""
    requeued = job(version, "requeued", "squeue-requeued-completing.json")
    assert requeued.completing and JobFlag.COMPLETING in requeued.flags
    assert requeued.state == {"22.05": JobState.COMPLETING, "24.11": JobState.PENDING}[version]
    assert requeued.restart_count == 1
    with pytest.raises(JobCompleting, match="still completing"):  # the actions retry until it is not
        actions.not_completing(requeued)
    # Once the node let go: PENDING in BeginTime, no flag.
    later = job(version, "requeued")
    assert (later.state, later.state_reason, later.flags, later.completing) == ("PENDING", "BeginTime", [], False)
    actions.not_completing(later)


@pytest.mark.parametrize("version", VERSIONS)
def test_requeued_held_with_an_excluded_node(version: str) -> None:
    held = job(version, "requeue_held")
    assert (held.state, held.state_reason) == ("PENDING", "JobHeldUser")
    assert held.state_description == "job requeued in held state"
    assert held.restart_count == 1 and held.excluded_nodes == ["node2"] and held.nodes == []
    begin = job(version, "excluded_begin")
    assert (begin.state, begin.state_reason, begin.excluded_nodes) == ("PENDING", "BeginTime", ["node2"])


@pytest.mark.parametrize("version", VERSIONS)
def test_ended_jobs(version: str) -> None:
    exit3 = job(version, "failed_exit3")
    assert (exit3.state, exit3.exit_code, exit3.exit_signal, exit3.state_reason) == (
        "FAILED",
        3,
        None,
        "NonZeroExitCode",
    )
    killed = job(version, "failed_sigkill")
    # 24.11 leaves return_code unset for a job a signal ended: that is exit code 0 with the signal.
    assert (killed.state, killed.exit_code, killed.exit_signal) == ("FAILED", 0, 9)
    cancelled = job(version, "cancelled")
    assert (cancelled.state, cancelled.exit_code, cancelled.exit_signal) == ("CANCELLED", 0, 15)
    done = job(version, "completed")
    assert (done.state, done.exit_code, done.exit_signal) == ("COMPLETED", 0, None)
    for ended in (exit3, killed, cancelled, done):
        assert ended.end_time is not None and ended.end_time >= ended.start_time and not ended.completing


@pytest.mark.parametrize("version", VERSIONS)
def test_node_failed_job(version: str) -> None:
    failed = job(version, "node_fail", "squeue-node-down.json")
    assert (failed.state, failed.state_reason, failed.nodes) == ("NODE_FAIL", "NodeDown", ["node3"])
    assert failed.exit_code == 0 and failed.end_time is not None


@pytest.mark.parametrize("version", VERSIONS)
def test_array_tasks(version: str) -> None:
    array_id = situations(version)["jobs"]["array"]
    tasks = {j.array_task_id: j for j in jobs(version).values() if j.array_job_id == array_id}
    assert sorted(tasks) == [0, 1, 2]
    assert tasks[2].job_id == array_id  # the last task carries the array's own id
    assert (tasks[1].state, tasks[1].exit_code) == ("FAILED", 4)
    assert tasks[0].state == tasks[2].state == "COMPLETED"


NODES = {
    "22.05": ["sinfo.json", "sinfo-N.json"],
    "24.11": [
        "sinfo.json",
        "sinfo-N.json",
        "scontrol-node.json",
        "scontrol-node-v0.0.40.json",
        "scontrol-node-v0.0.41.json",
    ],
}
NODES_DOWN = {
    "22.05": ["sinfo-node-down.json", "sinfo-N-node-down.json"],
    "24.11": ["sinfo-node-down.json", "sinfo-N-node-down.json", "scontrol-node-down.json"],
}


@pytest.mark.parametrize(("version", "name"), [(v, n) for v in VERSIONS for n in NODES[v]])
def test_drained_nodes(version: str, name: str) -> None:
    found = nodes(version, name)
    assert sorted(found) == ["node1", "node2", "node3", "node4"]
    draining, drained = found["node1"], found["node4"]
    # node1 drains under the running 2-node job; node4 has nothing left on it.
    assert (draining.state, draining.flags, draining.reason) == (
        NodeState.MIXED,
        [NodeFlag.DRAIN],
        situations(version)["drain_reason"],
    )
    assert (drained.state, drained.flags, drained.reason) == ("idle", ["DRAIN"], "maintenance")
    assert drained.drained and not drained.unreachable
    assert found["node2"].flags == [] and not found["node2"].drained


@pytest.mark.parametrize(("version", "name"), [(v, n) for v in VERSIONS for n in NODES_DOWN[v]])
def test_down_node(version: str, name: str) -> None:
    down = nodes(version, name)["node3"]
    assert (down.state, down.flags, down.reason) == ("down", ["NOT_RESPONDING"], "Not responding")
    assert down.unreachable


@pytest.mark.parametrize("version", VERSIONS)
def test_not_responding_before_down(version: str) -> None:
    node = nodes(version, "sinfo-not-responding.json")["node3"]
    assert NodeFlag.NOT_RESPONDING in node.flags and node.state != "down" and node.unreachable


def test_older_data_parsers_of_2411_read_the_same() -> None:
    newest = jobs("24.11")
    for parser in ("v0.0.40", "v0.0.41"):
        data = json.loads((folder("24.11") / f"squeue-{parser}.json").read_text())
        assert slurm_json.version(data) == parser
        assert jobs("24.11", f"squeue-{parser}.json") == newest


def test_2411_scontrol_show_job_is_the_same_job() -> None:
    running = situations("24.11")["jobs"]["train2"]
    [one] = parse_squeue_json((folder("24.11") / f"scontrol-job-{running}.json").read_text())
    assert one == jobs("24.11")[running]
    assert parse_squeue_json((folder("24.11") / "scontrol-job-unknown.json").read_text()) == []


def test_2411_squeue_omits_finished_jobs_unless_asked() -> None:
    default = {j.job_id: j for j in parse_squeue_json((folder("24.11") / "squeue-default.json").read_text())}
    assert {j.state for j in default.values()} <= {"RUNNING", "PENDING"}
    assert set(default) < set(jobs("24.11"))


@pytest.mark.parametrize(("key", "value"), [("data_parser", "data_parser/v0.0.43"), ("type", "openapi/v0.0.39")])
def test_an_unknown_version_is_an_error_naming_it(key: str, value: str) -> None:
    data = json.loads((folder("24.11") / "squeue.json").read_text())
    data["meta"]["plugin"] = {key: value}
    with pytest.raises(UnsupportedOutput, match=value.rsplit("/", 1)[1]) as error:
        parse_squeue_json(json.dumps(data))
    assert "24.11.5" in str(error.value)
    with pytest.raises(UnsupportedOutput, match=value.rsplit("/", 1)[1]):
        parse_sinfo_json(json.dumps({**data, "jobs": [], "nodes": []}))


def test_controller_down() -> None:
    # 22.05: rc 0, a JSON with an "errors" entry and no jobs; 24.11: rc 1, stderr only.
    old = json.loads((folder("22.05") / "squeue-controller-down.json").read_text())
    assert old["rc"] == 0
    with pytest.raises(SchedulerUnavailable):
        parse_squeue_json(old["stdout"])
    for version in VERSIONS:
        for name in (
            "squeue-controller-down.json",
            "sinfo-controller-down.json",
            "scontrol-requeue-controller-down.json",
        ):
            result = json.loads((folder(version) / name).read_text())
            if result["rc"] == 0:
                continue
            error = error_from(CommandResult(result["rc"], result["stdout"], result["stderr"]), result["argv"])
            assert isinstance(error, SchedulerUnavailable) and error.retryable, (version, name)


async def test_adapter_on_2205_reads_nodes_as_json() -> None:
    """Jobs are read from squeue's text there (tests/unit/test_squeue_text.py); nodes from sinfo's JSON."""
    transport = Replay("22.05", {("sinfo", "--json"): "sinfo-node-down.json"})
    slurm = Slurm(transport)
    assert (await slurm.node("node3")).unreachable
    assert slurm.format == "v0.0.38"
    assert transport.calls == [["sinfo", "--json"]]


async def test_adapter_on_2411_asks_for_what_it_needs() -> None:
    jobs = situations("24.11")["jobs"]
    failed, held = jobs["node_fail"], jobs["requeue_held"]
    transport = Replay(
        "24.11",
        {
            ("scontrol", "--version"): "scontrol-version.txt",
            tuple(squeue_text.command(TEXT_MARKER)): "squeue-text-node-down.txt",
            tuple(squeue_text.command(TEXT_MARKER, held)): f"squeue-text-j{held}.txt",
            tuple(squeue_text.excluded_command([held])): f"squeue-text-j{held}-excluded.txt",
            tuple(squeue_text.command(TEXT_MARKER, 999999)): "squeue-text-unknown-job.json",
            tuple(squeue_text.excluded_command([999999])): "squeue-text-unknown-job.json",  # the same refusal
            ("sinfo", "--json"): "sinfo-node-down.json",
            ("scontrol", "show", "node", "--json"): "scontrol-node-down.json",
        },
    )
    slurm = Slurm(transport)
    # A finished job is listed (squeue -t all), from its text alone: no job there had a flag over
    # its state. One job is its text and its exclusions beside it (the release is asked only
    # once a job's state is hidden, to read it again as JSON).
    assert failed in {j.job_id for j in await slurm.jobs()}
    assert [call[0] for call in transport.calls] == ["squeue"]
    read = await slurm.job(held)
    assert (read.state, read.state_reason, read.excluded_nodes) == ("PENDING", "JobHeldUser", ["node2"])
    assert sorted(call[-1][:9] for call in transport.calls[1:]) == ["--Format=", "--format="]
    with pytest.raises(JobNotFound):
        await slurm.job(999999)
    node3 = await slurm.node("node3")
    assert slurm.format == "v0.0.42"  # from sinfo's JSON, the first JSON read
    assert (node3.state, node3.flags) == ("down", ["NOT_RESPONDING"])
    assert transport.calls[-1] == ["scontrol", "show", "node", "--json"]
    drained = await slurm.node("node1")
    assert drained.reason == situations("24.11")["drain_reason"] and drained.drained


def test_states_from_strings() -> None:
    assert JobInfo(job_id=1, state="COMPLETING").completing
    assert JobInfo(job_id=1, state="PENDING", flags=["COMPLETING"]).completing
    assert JobInfo(job_id=1, state="SOMETHING_NEW").state is JobState.UNKNOWN
    assert NodeInfo(name="n", state="down").unreachable
    assert NodeInfo(name="n", state="idle", flags=["NOT_RESPONDING"]).unreachable


@pytest.mark.parametrize("version", VERSIONS)
def test_the_sandbox_settings_raise_no_warning(version: str) -> None:
    from respawn.scheduler.slurm import parse_config
    from respawn.surfaces.status import config_warnings

    settings = parse_config((folder(version) / "scontrol-config.txt").read_text())
    assert settings["SLURM_VERSION"] == situations(version)["slurm"].split()[-1]
    assert (settings["JobRequeue"], settings["MinJobAge"], settings["PrivateData"]) == ("1", "600 sec", "none")
    assert "cred_expire=10" in settings["AuthInfo"]
    assert config_warnings(settings, "root") == []


@pytest.mark.parametrize("version", VERSIONS)
def test_a_cluster_without_an_epilog_is_warned_that_node_loss_waits_message_timeout(version: str) -> None:
    """22.05 prints `Epilog = (null)` when none is set, 24.11 prints no `Epilog[N]` key at all."""
    from respawn.scheduler.slurm import parse_config
    from respawn.surfaces.status import config_warnings, has_epilog

    text = (folder(version) / "scontrol-config.txt").read_text()
    assert has_epilog(parse_config(text))
    unset = "\n".join(
        "Epilog                  = (null)" if line.split("=")[0].strip() in ("Epilog", "Epilog[0]") else line
        for line in text.splitlines()
        if version == "22.05" or not line.startswith("Epilog[")
    )
    settings = parse_config(unset)
    assert not has_epilog(settings)
    (warning,) = config_warnings(settings, "root")
    assert warning.startswith("no Epilog: a job on a lost node is requeued MessageTimeout (5 s) late")
    assert not has_epilog(parse_config("EpilogMsgTime = 2000 usec\nEpilogSlurmctld = /bin/true\n"))


def test_settings_that_would_break_recovery_are_warned_about() -> None:
    from respawn.scheduler.slurm import parse_config
    from respawn.surfaces.status import config_warnings

    settings = parse_config((folder("24.11") / "scontrol-config.txt").read_text())
    bad = settings | {
        "SLURM_VERSION": "25.05.1",
        "JobRequeue": "0",
        "MinJobAge": "10 sec",
        "AuthInfo": "socket=/run/munge.socket.2",
        "PrivateData": "accounts,jobs",
    }
    warnings = config_warnings(bad, "respawn")
    assert [w.split()[0] for w in warnings] == ["Slurm", "JobRequeue=0:", "MinJobAge=10", "PrivateData=accounts,jobs:"]
    assert config_warnings(bad | {"AuthInfo": "cred_expire=600"}, "root")[-1].startswith("cred_expire=600 s")
    assert not any("PrivateData" in w for w in config_warnings(bad, "root"))


# ---- the allocation's GPUs (issue 15: what an interruption cost) ----

_CAPTURES = {
    "22.05": ["squeue.json", "squeue-default.json", "squeue-node-down.json", "squeue-requeued-completing.json"],
    "24.11": [
        "squeue.json",
        "squeue-default.json",
        "squeue-v0.0.40.json",
        "squeue-v0.0.41.json",
        "scontrol-job.json",
        "scontrol-job-1.json",
    ],
}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_sandboxes_jobs_have_no_gpus(version: str) -> None:
    for name in _CAPTURES[version]:
        found = parse_squeue_json((folder(version) / name).read_text())
        assert found and all(j.gpus is None for j in found), name


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("tres", "gpus"),
    [
        ("cpu=64,mem=512G,node=8,billing=64,gres/gpu=64", 64),
        ("cpu=64,node=8,billing=64,gres/gpu:a100=64", 64),
        ("cpu=16,node=2,gres/gpu=16,gres/gpu:h100=16", 16),  # the total and its typed count: the total
        ("cpu=16,node=2,gres/gpu:a100=8,gres/gpu:h100=8", 16),
        ("cpu=2,node=2,billing=2,gres/gpumem=80G", None),  # not a count of GPUs
        ("cpu=2,node=2,gres/gpu=-1", None),
        ("cpu=2,node=2,gres/gpu=lots", None),
        ("", None),
    ],
)
def test_a_jobs_gpus_are_read_from_its_tres_in_every_version(version: str, tres: str, gpus: int | None) -> None:
    data = json.loads((folder(version) / "squeue.json").read_text())
    for raw in data["jobs"]:
        raw["tres_alloc_str"] = tres
    found = parse_squeue_json(json.dumps(data))
    assert found and all(j.gpus == gpus for j in found)
    del data["jobs"][0]["tres_alloc_str"]  # a release that does not print it
    assert parse_squeue_json(json.dumps(data))[0].gpus is None
