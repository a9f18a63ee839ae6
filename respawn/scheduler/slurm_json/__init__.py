"""Per-version readers of Slurm's JSON output, one adapter above them.

Every `squeue`/`sinfo`/`scontrol --json` output names the format it is in, in
`meta`: 22.05 says `meta.plugin.type = "openapi/v0.0.38"`; 23.11 to 24.11 say
`meta.plugin.data_parser = "data_parser/v0.0.4x"`. The version picks the reader;
each reader turns its version's shape into the same fields of `JobInfo` and
`NodeInfo` (respawn/scheduler/slurm.py), states and flags apart
(respawn/scheduler/states.py). A version no reader knows is an error naming it,
never an empty list: an empty list would read as "every job gone".

Output without any `meta` (hand-written, or older tooling) is read as v0.0.38.
"""

from typing import Any, Protocol

from respawn.scheduler.errors import SlurmCommandError
from respawn.scheduler.slurm_json import v0038, v0040
from respawn.scheduler.slurm_json.common import mapping


class Reader(Protocol):
    """What each version's module provides: JobInfo and NodeInfo fields from its output."""

    def jobs(self, data: dict[str, Any]) -> list[dict[str, Any]]: ...

    def nodes(self, data: dict[str, Any]) -> list[dict[str, Any]]: ...


LEGACY = "v0.0.38"
READERS: dict[str, Reader] = {"v0.0.38": v0038, "v0.0.40": v0040, "v0.0.41": v0040, "v0.0.42": v0040}
# The Slurm releases each format was captured from (tests/data/slurm-*).
TESTED = {"v0.0.38": "22.05.8", "v0.0.40": "24.11.5", "v0.0.41": "24.11.5", "v0.0.42": "24.11.5"}


class UnsupportedOutput(SlurmCommandError):
    """Slurm printed a JSON format this Respawn has no reader for (a newer or older Slurm)."""


def version(data: dict[str, Any]) -> str:
    """The output's format version, e.g. "v0.0.38" or "v0.0.42"; "" when it states none."""
    meta = data.get("meta")
    plugin = meta.get("plugin") if isinstance(meta, dict) else None
    if not isinstance(plugin, dict):
        return ""
    for key in ("data_parser", "type"):  # 23.11+: data_parser/v0.0.4x; 22.05: openapi/v0.0.38
        value = plugin.get(key)
        if isinstance(value, str) and "/" in value:
            return value.rsplit("/", 1)[-1]
    return ""


def release(data: dict[str, Any]) -> str:
    """The Slurm release that printed it ("22.05.8", "24.11.5"), when it says."""
    meta = mapping(data.get("meta"))
    for key in ("slurm", "Slurm"):
        release = mapping(meta.get(key)).get("release")
        if isinstance(release, str):
            return release
    return ""


def reader(data: dict[str, Any], what: str) -> Reader:
    """The reader module for this output's version; UnsupportedOutput names the version otherwise."""
    found = version(data) or LEGACY
    module = READERS.get(found)
    if module is None:
        slurm = release(data)
        known = ", ".join(f"{v} (Slurm {r})" for v, r in TESTED.items())
        raise UnsupportedOutput(
            f"{what}: output format {found}{f' from Slurm {slurm}' if slurm else ''} has no reader here; known: {known}"
        )
    return module


def jobs(data: dict[str, Any], what: str) -> list[dict[str, Any]]:
    """JobInfo fields of every job in the output."""
    return reader(data, what).jobs(data)


def nodes(data: dict[str, Any], what: str) -> list[dict[str, Any]]:
    """NodeInfo fields of every node in the output, one entry per node name."""
    return reader(data, what).nodes(data)
