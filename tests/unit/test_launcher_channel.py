"""The launcher's channel (respawn/launcher/channel.py): atomic files, hostile
files refused, and the generation rules that keep anything from being done twice."""

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from respawn.launcher import channel
from respawn.launcher.channel import (
    MAX_FILE,
    Ack,
    Action,
    ChannelError,
    Instruction,
    MalformedMessage,
    StaleGeneration,
    Status,
    StepState,
)

AT = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


@pytest.fixture
def ch(tmp_path: Path) -> Path:
    directory = tmp_path / ".respawn-42"
    channel.create_channel(directory)
    return directory


def relaunch(generation: int, incident: str = "incident-c-42-0") -> Instruction:
    return Instruction(incident_id=incident, generation=generation, action=Action.RELAUNCH, reason="crash")


def ack(generation: int, incident: str = "incident-c-42-0", done: bool = True) -> Ack:
    return Ack(incident_id=incident, generation=generation, done=done, nodes=["node1", "node3"], at=AT)


def test_default_directory_lies_beside_the_output() -> None:
    assert channel.channel_dir(Path("/shared/out/slurm-42.out"), 42) == Path("/shared/out/.respawn-42")


def test_round_trip_of_every_message(ch: Path) -> None:
    assert channel.post_instruction(ch, relaunch(1)) is None
    assert channel.read_instruction(ch) == relaunch(1)
    channel.write_ack(ch, ack(1))
    assert channel.read_ack(ch, 1) == ack(1)
    status = Status(
        job_id=42,
        state=StepState.FAILED,
        step_nodes=["node1", "node2"],
        spares=["node3"],
        exit_code=143,
        restarts=1,
        generation=1,
        updated_at=AT,
        waiting_until=AT,
    )
    channel.write_status(ch, status)
    assert channel.read_status(ch) == status


def test_nothing_there_reads_as_nothing(tmp_path: Path, ch: Path) -> None:
    assert channel.read_status(ch) is None
    assert channel.read_ack(ch, 1) is None
    assert channel.read_status(tmp_path / "no-such-channel") is None  # a job without the launcher
    assert channel.last_acked_generation(ch) == 0


def test_posting_to_a_job_without_a_launcher_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ChannelError, match="no launcher"):
        channel.post_instruction(tmp_path / "missing", relaunch(1))


def test_writes_are_atomic_and_leave_no_temporary_file(ch: Path) -> None:
    # A reader polling while the writer rewrites sees a whole message every time.
    stop = threading.Event()
    seen: list[object] = []

    def read() -> None:
        while not stop.is_set():
            seen.append(channel.read_status(ch))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for restarts in range(300):
            channel.write_status(
                ch, Status(state=StepState.RUNNING, restarts=restarts, detail="x" * 1500, updated_at=AT)
            )
    finally:
        stop.set()
        reader.join()
    assert all(s is None or isinstance(s, Status) for s in seen)
    assert sorted(os.listdir(ch)) == ["status.json"]


def test_a_planted_link_is_replaced_not_written_through(tmp_path: Path, ch: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    (ch / "instruction.json").symlink_to(victim)
    channel.write_ack(ch, ack(1))  # the writer's own files are unaffected
    with pytest.raises(ChannelError, match="symbolic link"):
        channel.read_instruction(ch)
    (ch / "status.json").symlink_to(victim)
    channel.write_status(ch, Status(state=StepState.RUNNING, updated_at=AT))
    assert victim.read_text() == "precious"
    assert not (ch / "status.json").is_symlink()


def test_a_linked_directory_is_refused(tmp_path: Path, ch: Path) -> None:
    link = tmp_path / ".respawn-43"
    link.symlink_to(ch)
    with pytest.raises(ChannelError, match="symbolic link"):
        channel.read_status(link)
    with pytest.raises(ChannelError, match="symbolic link"):
        channel.post_instruction(link, relaunch(1))
    with pytest.raises(ChannelError):
        channel.create_channel(link)


def test_a_fifo_is_refused_without_blocking(ch: Path) -> None:
    os.mkfifo(ch / "status.json")
    with pytest.raises(ChannelError, match="not a regular file"):
        channel.read_status(ch)


def test_a_directory_in_place_of_a_file_is_refused(ch: Path) -> None:
    (ch / "ack-1.json").mkdir()
    with pytest.raises(ChannelError, match="not a regular file"):
        channel.read_ack(ch, 1)


def test_an_oversized_file_is_refused(ch: Path) -> None:
    (ch / "status.json").write_bytes(b" " * (MAX_FILE + 1))
    with pytest.raises(ChannelError, match="larger than"):
        channel.read_status(ch)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"state": "running"}',  # updated_at missing
        b'{"state": "exploded", "updated_at": "2026-01-02T03:04:05Z"}',
        b'{"state": "running", "updated_at": "2026-01-02T03:04:05Z", "extra": 1}',
        b'{"state": "running", "updated_at": "2026-01-02T03:04:05Z", "restarts": "3"}',
        b'{"state": "running", "updated_at": "2026-01-02T03:04:05Z", "restarts": -1}',
        b'{"state": "running", "updated_at": "2026-01-02T03:04:05Z", "step_nodes": ["node[1-3]"]}',
        b'{"state": "running", "updated_at": "2026-01-02T03:04:05Z", "step_nodes": ["-w"]}',
        b'{"state": "running", "updated_at": "2026-01-02T03:04:05Z", "exit_code": 1000}',
    ],
)
def test_a_malformed_status_is_refused(ch: Path, body: bytes) -> None:
    (ch / "status.json").write_bytes(body)
    with pytest.raises(MalformedMessage, match="malformed Status"):
        channel.read_status(ch)


@pytest.mark.parametrize(
    "fields",
    [
        {"action": "relaunch_excluding", "exclude": []},  # excluding nothing
        {"action": "relaunch", "exclude": ["node2"]},  # excluding with the wrong action
        {"action": "reboot"},
        {"action": "relaunch", "generation": 0},
        {"action": "relaunch", "incident_id": "../../etc"},
        {"action": "relaunch", "reason": "x" * 5000},
    ],
)
def test_a_malformed_instruction_is_refused(ch: Path, fields: dict[str, object]) -> None:
    body = {"incident_id": "incident-c-42-0", "generation": 1, **fields}
    (ch / "instruction.json").write_text(json.dumps(body))
    with pytest.raises(MalformedMessage):
        channel.read_instruction(ch)


def test_a_generation_with_an_ack_is_never_acted_on_again(ch: Path) -> None:
    channel.post_instruction(ch, relaunch(1))
    assert channel.pending_instruction(ch, last_acted=0) == relaunch(1)
    channel.write_ack(ch, ack(1))
    # A launcher that restarted knows nothing in memory: the ack alone stops it.
    assert channel.pending_instruction(ch, last_acted=0) is None
    assert channel.last_acked_generation(ch) == 1


def test_an_older_or_equal_generation_is_ignored(ch: Path) -> None:
    channel.post_instruction(ch, relaunch(3))
    assert channel.pending_instruction(ch, last_acted=3) is None
    assert channel.pending_instruction(ch, last_acted=5) is None
    assert channel.pending_instruction(ch, last_acted=2) == relaunch(3)


def test_post_instruction_returns_the_existing_ack_and_writes_nothing(ch: Path) -> None:
    channel.post_instruction(ch, relaunch(1))
    channel.write_ack(ch, ack(1, done=False))
    before = (ch / "instruction.json").stat()
    # A worker that crashed after posting posts again: it gets the ack, whatever it asks.
    again = Instruction(incident_id="incident-c-42-0", generation=1, action=Action.GIVE_UP)
    assert channel.post_instruction(ch, again) == ack(1, done=False)
    assert channel.post_instruction(ch, relaunch(1)) == ack(1, done=False)
    assert (ch / "instruction.json").stat().st_mtime_ns == before.st_mtime_ns
    assert channel.read_instruction(ch) == relaunch(1)


def test_posting_the_same_instruction_twice_is_harmless(ch: Path) -> None:
    assert channel.post_instruction(ch, relaunch(1)) is None
    assert channel.post_instruction(ch, relaunch(1)) is None
    assert channel.read_instruction(ch) == relaunch(1)


def test_another_instruction_for_a_posted_generation_is_refused(ch: Path) -> None:
    channel.post_instruction(ch, relaunch(1))
    with pytest.raises(ChannelError, match="posted for another instruction"):
        channel.post_instruction(ch, relaunch(1, incident="incident-c-42-1"))


def test_an_older_generation_than_posted_or_acknowledged_is_refused(ch: Path) -> None:
    channel.post_instruction(ch, relaunch(2))
    with pytest.raises(StaleGeneration, match="older than posted 2"):
        channel.post_instruction(ch, relaunch(1))
    channel.write_ack(ch, ack(2))
    channel.post_instruction(ch, relaunch(4))
    channel.write_ack(ch, ack(4))
    with pytest.raises(StaleGeneration, match="older than acknowledged 4"):
        channel.post_instruction(ch, relaunch(3))
    assert channel.post_instruction(ch, relaunch(5)) is None


def test_a_damaged_instruction_is_replaced_by_the_next_post(ch: Path) -> None:
    (ch / "instruction.json").write_text("{garbage")
    assert channel.post_instruction(ch, relaunch(1)) is None
    assert channel.read_instruction(ch) == relaunch(1)


def test_the_newest_ack_comes_from_names_alone(ch: Path) -> None:
    for generation in (1, 2, 10):
        channel.write_ack(ch, ack(generation))
    (ch / "ack-0.json").write_text("x")  # not a generation
    (ch / "ack-7.json.tmp").write_text("x")
    (ch / "notes").write_text("x")
    assert channel.last_acked_generation(ch) == 10
