"""squeue's text reads (respawn/scheduler/squeue_text.py), on real captures of Slurm 22.05.8 and
24.11.5 made by respawn/sandbox/capture.py (squeue-text*.txt, with the capture's fixed marker):
they read as the JSON captured beside them does, job-owner text cannot pass for structure, the
adapter lists every job from the text (on 24.11 reading again as JSON the few whose state a flag
hides) and reads one job by itself, never the whole cluster."""

import asyncio
import json

import pytest

from respawn.sandbox.capture import HOSTILE_COMMENT, HOSTILE_NAME, TEXT_MARKER
from respawn.scheduler import squeue_text
from respawn.scheduler.errors import JobNotFound, SlurmCommandError, error_from
from respawn.scheduler.slurm import JobInfo, Slurm, parse_squeue_json
from respawn.scheduler.states import JobFlag, JobState
from respawn.scheduler.transport import CommandResult
from tests.unit._slurm_replay import VERSIONS, Replay, folder, situations

DATA = folder("22.05")
SITUATIONS = situations("22.05")["jobs"]


def text_jobs(name: str, version: str = "22.05") -> dict[int, JobInfo]:
    records = squeue_text.records((folder(version) / name).read_text(), TEXT_MARKER)
    jobs = (JobInfo(**squeue_text.job_fields(r), excluded_nodes=None) for r in records)
    return {j.job_id: j for j in jobs}


@pytest.mark.parametrize(
    ("version", "text", "json_name"),
    [
        ("22.05", "squeue-text.txt", "squeue.json"),
        ("22.05", "squeue-text-node-down.txt", "squeue-node-down.json"),
        ("24.11", "squeue-text.txt", "squeue.json"),
        ("24.11", "squeue-text-node-down.txt", "squeue-node-down.json"),
        ("24.11", "squeue-text-requeued-completing.txt", "squeue-requeued-completing.json"),
    ],
)
def test_the_text_reads_as_the_json_beside_it(version: str, text: str, json_name: str) -> None:
    """Captured a moment apart: every field alike, but the exclusions (not in the text listing),
    a reason squeue prints as its description, on 24.11 a flag the text prints in place of
    the base state (the JSON has both), and a pending job's start time: an estimate each
    scheduling pass makes again."""
    from_text = text_jobs(text, version)
    from_json = {j.job_id: j for j in parse_squeue_json((folder(version) / json_name).read_text())}
    assert from_text.keys() == from_json.keys() and len(from_text) >= 12
    for job_id, job in from_json.items():
        read = from_text[job_id]
        assert read.excluded_nodes is None
        unlike = {k for k, v in read.model_dump().items() if v != job.model_dump()[k]} - {"excluded_nodes"}
        if job.state is JobState.PENDING:
            unlike -= {"start_time"}
        if read.state is JobState.COMPLETING:
            assert job.completing and unlike <= {"state", "flags"}, job_id
        elif job.state_description and job.state_description != squeue_text.REQUEUE_HELD:
            assert unlike <= {"state_reason"} and read.state_reason == "", job_id
        else:
            assert not unlike, (job_id, unlike)


def test_the_requeue_hold_reads_as_the_watchdog_needs() -> None:
    held = text_jobs("squeue-text.txt")[SITUATIONS["requeue_held"]]
    assert (held.state, held.state_reason, held.state_description) == (
        "PENDING",
        "JobHeldUser",
        "job requeued in held state",
    )
    assert held.restart_count == 1


@pytest.mark.parametrize("version", VERSIONS)
def test_job_owner_text_cannot_pass_for_structure(version: str) -> None:
    job_id = situations(version)["hostile_text"]
    hostile = text_jobs(f"squeue-text-j{job_id}.txt", version)[job_id]
    assert (hostile.name, hostile.comment) == (HOSTILE_NAME, HOSTILE_COMMENT)
    assert (hostile.state, hostile.state_reason) == ("PENDING", "JobHeldUser")


def test_a_value_that_begins_with_a_newline_is_read_as_it_is() -> None:
    """Where a record is split first (a marker, then a newline) a job's name can begin with a
    newline: the parts' marker counts show it, and the output is read field by field."""
    text = (DATA / "squeue-text.txt").read_text()
    renamed = text.replace(f"{TEXT_MARKER}train2{TEXT_MARKER}", f"{TEXT_MARKER}\ntrain2 x{TEXT_MARKER}")
    assert renamed != text
    records = squeue_text.records(renamed, TEXT_MARKER)
    jobs = {j.job_id: j for j in (JobInfo(**squeue_text.job_fields(r)) for r in records)}
    assert jobs.keys() == text_jobs("squeue-text.txt").keys()
    assert jobs[SITUATIONS["train2"]].name == "\ntrain2 x"


def test_a_record_that_does_not_split_exactly_is_an_error() -> None:
    text = (DATA / "squeue-text.txt").read_text()
    with pytest.raises(SlurmCommandError):
        squeue_text.records(text[: len(text) // 2], TEXT_MARKER)  # cut short
    with pytest.raises(SlurmCommandError):
        squeue_text.records(text.replace("train2", f"train2{TEXT_MARKER}"), TEXT_MARKER)  # a field too many
    with pytest.raises(SlurmCommandError):
        squeue_text.records(text, squeue_text.new_marker())  # another call's output
    assert squeue_text.records("", TEXT_MARKER) == []


def test_markers_are_new_each_call_and_never_read_as_a_width() -> None:
    markers = {squeue_text.new_marker() for _ in range(100)}
    assert len(markers) == 100 and all(m[0].isalpha() and len(m) == 33 for m in markers)


@pytest.fixture
def replay() -> Replay:
    held, running = SITUATIONS["requeue_held"], SITUATIONS["train2"]
    answers = {
        ("scontrol", "--version"): "scontrol-version.txt",
        tuple(squeue_text.command(TEXT_MARKER)): "squeue-text.txt",
        tuple(squeue_text.command(TEXT_MARKER, 999999)): "squeue-text-unknown-job.json",
        tuple(squeue_text.excluded_command([999999])): "squeue-text-unknown-job.json",  # the same refusal
    }
    for job_id in (held, running):
        answers[tuple(squeue_text.command(TEXT_MARKER, job_id))] = f"squeue-text-j{job_id}.txt"
        answers[tuple(squeue_text.excluded_command([job_id]))] = f"squeue-text-j{job_id}-excluded.txt"
    return Replay("22.05", answers)


async def test_one_job_is_read_by_itself(replay: Replay) -> None:
    slurm = Slurm(replay)
    held = await slurm.job(SITUATIONS["requeue_held"])
    assert (held.state_reason, held.excluded_nodes, held.restart_count) == ("JobHeldUser", ["node2"], 1)
    running = await slurm.job(SITUATIONS["train2"])
    assert running.nodes == ["node1", "node2"] and running.excluded_nodes == []
    with pytest.raises(JobNotFound):
        await slurm.job(999999)
    calls = len(replay.calls)
    followed = await slurm.job(SITUATIONS["train2"], exclusions=False)
    assert followed.excluded_nodes is None and len(replay.calls) == calls + 1  # one call: the record alone
    # Only the jobs asked about, never a listing (nor the release: no state here was hidden).
    assert all("--jobs" in call for call in replay.calls)


async def test_jobs_followed_at_once_are_read_in_one_call(replay: Replay) -> None:
    """Two incidents following their jobs at the same moment: one squeue naming both."""
    held, running = SITUATIONS["requeue_held"], SITUATIONS["train2"]
    replay.answers[tuple(squeue_text.command(TEXT_MARKER, [held, running]))] = "squeue-text.txt"
    slurm = Slurm(replay)
    first, second = await asyncio.gather(slurm.job(held, exclusions=False), slurm.job(running, exclusions=False))
    assert (first.job_id, first.state_reason, second.job_id, second.nodes) == (
        held,
        "JobHeldUser",
        running,
        ["node1", "node2"],
    )
    reads = [call for call in replay.calls if call[0] == "squeue"]
    assert len(reads) == 1 and f"{held},{running}" in reads[0]


@pytest.mark.parametrize("version", VERSIONS)
async def test_jobs_followed_while_one_completes_are_read_from_one_squeue(version: str) -> None:
    """Three incidents following their jobs at once, as one was just requeued (its steps still
    ending) and one has left Slurm: one squeue names all three (captured so), the job whose state
    COMPLETING hides is read again by itself as JSON where the version allows, and the one
    squeue did not print is JobNotFound to its caller alone."""
    jobs = situations(version)["jobs"]
    requeued, running = jobs["requeued"], jobs["train2"]
    followed = tuple(squeue_text.command(TEXT_MARKER, [requeued, running, 999999]))
    answers = {
        ("scontrol", "--version"): "scontrol-version.txt",
        followed: "squeue-text-followed-requeued-completing.txt",
    }
    if version != "22.05":
        answers["scontrol", "show", "job", "--json", str(requeued)] = "scontrol-job-requeued-completing.json"
    replay = Replay(version, answers)
    slurm = Slurm(replay)
    first, second, gone = await asyncio.gather(
        *(slurm.job(job_id, exclusions=False) for job_id in (requeued, running, 999999)), return_exceptions=True
    )
    assert isinstance(first, JobInfo) and isinstance(second, JobInfo) and isinstance(gone, JobNotFound)
    assert first.completing and first.restart_count == 1
    assert (second.state, second.nodes) == (JobState.RUNNING, ["node1", "node2"])
    squeues = [call for call in replay.calls if call[0] == "squeue"]
    assert len(squeues) == 1 and "--json" not in squeues[0]
    if version == "22.05":  # its JSON ignores -j: the text stands
        assert first.state is JobState.COMPLETING and ["scontrol", "show"] not in [c[:2] for c in replay.calls]
    else:
        assert first.state is JobState.PENDING and replay.calls[-1][:4] == ["scontrol", "show", "job", "--json"]


@pytest.mark.parametrize("version", VERSIONS)
async def test_jobs_acted_on_at_once_are_read_with_their_exclusions_in_two_calls(version: str) -> None:
    """A storm's excludes and evidence reading their jobs at the same moment (captured so: a job
    with an excluded node, a running one, an array's task by its own id, one Slurm does not
    know): one squeue for the records and one for the exclusions, whatever their number; each
    caller gets its own job's, and the unknown one JobNotFound alone."""
    captured = situations(version)
    held, running, task = captured["jobs"]["requeue_held"], captured["jobs"]["train2"], captured["array_task"]
    named = [held, running, task, 999999]
    replay = Replay(
        version,
        {
            ("scontrol", "--version"): "scontrol-version.txt",
            tuple(squeue_text.command(TEXT_MARKER, named)): "squeue-text-several.txt",
            tuple(squeue_text.excluded_command(named)): "squeue-text-several-excluded.txt",
        },
    )
    slurm = Slurm(replay)
    first, second, third, gone = await asyncio.gather(*(slurm.job(j) for j in named), return_exceptions=True)
    assert isinstance(first, JobInfo) and isinstance(second, JobInfo) and isinstance(third, JobInfo)
    assert (first.job_id, first.excluded_nodes, first.state_reason) == (held, ["node2"], "JobHeldUser")
    assert (second.job_id, second.excluded_nodes, second.nodes) == (running, [], ["node1", "node2"])
    assert (third.job_id, third.excluded_nodes, third.array_job_id) == (task, [], captured["jobs"]["array"])
    assert isinstance(gone, JobNotFound)
    assert [c[0] for c in replay.calls if c[0] == "squeue"] == ["squeue", "squeue"]


def test_exclusions_are_ids_and_hostlists_or_an_error() -> None:
    assert squeue_text.parse_excluded("7|node[1-2]\n8|\n") == {7: ["node1", "node2"], 8: []}
    for printed in ("node2\n", "7 node2\n", "x|node2\n", "7|node1 node2\n"):
        with pytest.raises(SlurmCommandError):
            squeue_text.parse_excluded(printed)


async def test_on_2411_one_job_is_its_text_and_its_exclusions_beside_it() -> None:
    """As on 22.05: a follow reads its job from the text (a few hundred bytes, where the JSON
    prints 6-27 KB); an action that needs the job's excluded nodes reads them beside it."""
    jobs = situations("24.11")["jobs"]
    held, running = jobs["requeue_held"], jobs["train2"]
    replay = Replay(
        "24.11",
        {
            tuple(squeue_text.command(TEXT_MARKER, held)): f"squeue-text-j{held}.txt",
            tuple(squeue_text.command(TEXT_MARKER, running)): f"squeue-text-j{running}.txt",
            tuple(squeue_text.excluded_command([running])): f"squeue-text-j{running}-excluded.txt",
            tuple(squeue_text.command(TEXT_MARKER, 999999)): "squeue-text-unknown-job.json",
        },
    )
    slurm = Slurm(replay)
    followed = await slurm.job(held, exclusions=False)
    assert (followed.state_reason, followed.restart_count, followed.excluded_nodes) == ("JobHeldUser", 1, None)
    assert replay.calls[-1][:2] == ["squeue", "--noheader"]
    with pytest.raises(JobNotFound):
        await slurm.job(999999, exclusions=False)
    acted_on = await slurm.job(running)
    assert acted_on.excluded_nodes == [] and acted_on.nodes == ["node1", "node2"]
    assert all(call[0] == "squeue" and "--json" not in call for call in replay.calls)


async def test_an_unchanged_record_is_not_read_again(replay: Replay) -> None:
    """Each listing draws its own marker; a record printed alike is still the same JobInfo."""
    slurm = Slurm(replay)
    first = {j.job_id: j for j in await slurm.jobs()}
    second = {j.job_id: j for j in await slurm.jobs()}
    assert first.keys() == second.keys() and all(second[k] is first[k] for k in first)
    listings = [c for c in replay.calls if c[0] == "squeue" and "--jobs" not in c]
    assert len(listings) == 2 and listings[0] != listings[1]  # two markers


def test_an_unknown_job_is_job_not_found() -> None:
    failed = json.loads((DATA / "squeue-text-unknown-job.json").read_text())
    assert isinstance(error_from(CommandResult(failed["rc"], "", failed["stderr"]), failed["argv"]), JobNotFound)


async def test_on_2411_a_job_whose_state_a_flag_hides_is_read_again_as_json() -> None:
    """Right after a requeue the text prints COMPLETING for a job the JSON knows as PENDING and
    COMPLETING: that one job is asked for again, by itself, and the others stay as listed."""
    requeued = situations("24.11")["jobs"]["requeued"]
    replay = Replay(
        "24.11",
        {
            tuple(squeue_text.command(TEXT_MARKER)): "squeue-text-requeued-completing.txt",
            ("scontrol", "--version"): "scontrol-version.txt",
            ("scontrol", "show", "job", "--json", str(requeued)): "scontrol-job-requeued-completing.json",
        },
    )
    listed = {j.job_id: j for j in await Slurm(replay).jobs()}
    assert (listed[requeued].state, listed[requeued].flags) == (JobState.PENDING, [JobFlag.COMPLETING])
    assert listed[requeued].completing
    assert not any(j.state is JobState.COMPLETING for j in listed.values())
    assert listed.keys() == text_jobs("squeue-text-requeued-completing.txt", "24.11").keys()
    assert [c[:2] for c in replay.calls] == [["squeue", "--noheader"], ["scontrol", "--version"], ["scontrol", "show"]]


async def test_on_2205_the_listing_is_the_text_alone(tmp_path) -> None:
    """22.05's JSON ignores `-j`: reading a veiled job again would read the whole cluster, so its
    text stands (COMPLETING, the base not known)."""
    running = SITUATIONS["train2"]
    records = squeue_text.records((DATA / "squeue-text.txt").read_text(), TEXT_MARKER)
    completing = [r.replace("RUNNING", "COMPLETING") if squeue_text.job_id(r) == str(running) else r for r in records]
    listing = tmp_path / "squeue-text-completing.txt"  # as 22.05 prints a job ending with its steps still running
    listing.write_text("".join(r.replace(squeue_text.SEP, TEXT_MARKER) + TEXT_MARKER + "\n" for r in completing))
    replay = Replay(
        "22.05",
        {tuple(squeue_text.command(TEXT_MARKER)): str(listing), ("scontrol", "--version"): "scontrol-version.txt"},
    )
    listed = {j.job_id: j for j in await Slurm(replay).jobs()}
    assert listed[running].state is JobState.COMPLETING and len(listed) >= 13
    assert [c[:2] for c in replay.calls] == [["squeue", "--noheader"], ["scontrol", "--version"]]
