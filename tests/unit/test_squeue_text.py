"""22.05's text reads (respawn/scheduler/squeue_text.py), on real captures of Slurm 22.05.8
made by respawn/sandbox/capture.py (squeue-text*.txt, with the capture's fixed marker): they
read as the JSON captured beside them does, job-owner text cannot pass for structure, and
the adapter reads one job by itself, never the whole cluster."""

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from respawn.sandbox.capture import HOSTILE_COMMENT, HOSTILE_NAME, TEXT_MARKER
from respawn.scheduler import squeue_text
from respawn.scheduler.errors import JobNotFound, SlurmCommandError, error_from
from respawn.scheduler.slurm import JobInfo, Slurm, parse_squeue_json
from respawn.scheduler.transport import CommandResult

DATA = Path(__file__).parents[1] / "data" / "slurm-22.05"
SITUATIONS = json.loads((DATA / "situations.json").read_text())
HOSTILE = SITUATIONS["hostile_text"]
SITUATIONS = SITUATIONS["jobs"]


def text_jobs(name: str) -> dict[int, JobInfo]:
    records = squeue_text.records((DATA / name).read_text(), TEXT_MARKER)
    jobs = (JobInfo(**squeue_text.job_fields(r), excluded_nodes=None) for r in records)
    return {j.job_id: j for j in jobs}


@pytest.mark.parametrize(
    ("text", "json_name"), [("squeue-text.txt", "squeue.json"), ("squeue-text-node-down.txt", "squeue-node-down.json")]
)
def test_the_text_reads_as_the_json_beside_it(text: str, json_name: str) -> None:
    """Captured a moment apart: every field alike, but the exclusions (not in the text listing)
    and a reason squeue prints as its description."""
    from_text = text_jobs(text)
    from_json = {j.job_id: j for j in parse_squeue_json((DATA / json_name).read_text())}
    assert from_text.keys() == from_json.keys() and len(from_text) >= 13
    for job_id, job in from_json.items():
        read = from_text[job_id]
        assert read.excluded_nodes is None
        unlike = {k for k, v in read.model_dump().items() if v != job.model_dump()[k]} - {"excluded_nodes"}
        if job.state_description and job.state_description != squeue_text.REQUEUE_HELD:
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


def test_job_owner_text_cannot_pass_for_structure() -> None:
    hostile = text_jobs(f"squeue-text-j{HOSTILE}.txt")[HOSTILE]
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


class Replay:
    """A transport answering each command with a captured 22.05 output; a text read is answered
    with the marker the call drew in place of the capture's, as squeue would print it."""

    def __init__(self, answers: dict[tuple[str, ...], str]) -> None:
        self.answers = answers
        self.calls: list[list[str]] = []

    async def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        self.calls.append(list(argv))
        marker = TEXT_MARKER
        formats = [a for a in argv if a.startswith("--Format=")]
        if formats:
            assert env == squeue_text.ENV  # times as epoch seconds, not the Slurm host's local time
            marker = formats[0].split(",")[0].removeprefix("--Format=jobid:0")
            argv = [a.replace(marker, TEXT_MARKER) for a in argv]
        name = self.answers[tuple(argv)]
        if name.endswith(".json"):  # a failed command, as captured
            failed = json.loads((DATA / name).read_text())
            return CommandResult(failed["rc"], failed["stdout"], failed["stderr"])
        return CommandResult(0, (DATA / name).read_text().replace(TEXT_MARKER, marker), "")

    async def close(self) -> None:
        return None


@pytest.fixture
def replay() -> Replay:
    held, running = SITUATIONS["requeue_held"], SITUATIONS["train2"]
    answers = {
        ("scontrol", "--version"): "scontrol-version.txt",
        tuple(squeue_text.command(TEXT_MARKER)): "squeue-text.txt",
        tuple(squeue_text.command(TEXT_MARKER, 999999)): "squeue-text-unknown-job.json",
    }
    for job_id in (held, running):
        answers[tuple(squeue_text.command(TEXT_MARKER, job_id))] = f"squeue-text-j{job_id}.txt"
        answers[tuple(squeue_text.excluded_command(job_id))] = f"squeue-text-j{job_id}-excluded.txt"
    return Replay(answers)


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
    # The release once (no controller call), then only the jobs asked about: never a listing.
    assert replay.calls[0] == ["scontrol", "--version"] and replay.calls.count(["scontrol", "--version"]) == 1
    assert all("--jobs" in call for call in replay.calls[1:])


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
