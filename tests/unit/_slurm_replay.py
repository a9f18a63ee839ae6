"""Slurm's real outputs, replayed: the captures of tests/data/slurm-<version>/ made by
respawn/sandbox/capture.py against real daemons (situations.json says which job is which)."""

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from respawn.sandbox.capture import TEXT_MARKER
from respawn.scheduler import squeue_text
from respawn.scheduler.transport import CommandResult

DATA = Path(__file__).parents[1] / "data"
VERSIONS = ["22.05", "24.11"]


def folder(version: str) -> Path:
    return DATA / f"slurm-{version}"


def situations(version: str) -> dict:
    return json.loads((folder(version) / "situations.json").read_text())


class Replay:
    """A transport answering each command with the output captured for it. A text read is
    answered with the marker the call drew in place of the capture's, as squeue would print
    it; a capture of a failing command (capture.py's save_result) with its status and stderr."""

    def __init__(self, version: str, answers: dict[tuple[str, ...], str]) -> None:
        self.version, self.answers = version, answers
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
        text = (folder(self.version) / self.answers[tuple(argv)]).read_text()
        captured = json.loads(text) if text.startswith("{") else {}
        if captured.keys() == {"argv", "rc", "stdout", "stderr"}:
            return CommandResult(captured["rc"], captured["stdout"], captured["stderr"])
        return CommandResult(0, text.replace(TEXT_MARKER, marker), "")

    async def close(self) -> None:
        return None
