"""Job enrolment from the sbatch comment.

A job opts in with `--comment='{"respawn":{"environment":"prod","mode":"observe"}}'`.
The comment is written by any user, so it is parsed as hostile input: bounded in
size, JSON only, strict types, and its text never reaches a shell or a log
format string. A job can narrow what its environment allows, never widen it.
"""

import json
import re

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from respawn.config import ClusterConfig, Mode

MAX_COMMENT_BYTES = 4096
_ENV_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class Enrolment(BaseModel):
    environment: str
    mode: Mode  # effective: the stricter of the job's and the environment's
    requested_mode: Mode | None = None
    note: str = ""  # e.g. why the mode was narrowed


class NotEnrolled(BaseModel):
    reason: str


class _JobRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    environment: str
    mode: Mode | None = None

    @field_validator("environment")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError("environment must be a short name of letters, digits, '.', '_' or '-'")
        return value

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, value: object) -> object:
        # strict mode refuses plain strings for enums; accept exactly the two names
        if value is None or isinstance(value, Mode):
            return value
        if isinstance(value, str) and value in Mode.__members__.values():
            return Mode(value)
        raise ValueError("mode must be 'observe' or 'action'")


def enrol(comment: str | None, config: ClusterConfig) -> Enrolment | NotEnrolled:
    if not comment:
        return NotEnrolled(reason="no comment")
    if len(comment.encode("utf-8", "surrogatepass")) > MAX_COMMENT_BYTES:
        return NotEnrolled(reason=f"comment larger than {MAX_COMMENT_BYTES} bytes")
    try:
        data = json.loads(comment)
    except (json.JSONDecodeError, RecursionError):
        return NotEnrolled(reason="comment is not JSON")
    if not isinstance(data, dict) or "respawn" not in data:
        return NotEnrolled(reason="comment has no 'respawn' object")
    if not isinstance(data["respawn"], dict):
        return NotEnrolled(reason="'respawn' in the comment is not an object")
    try:
        request = _JobRequest.model_validate(data["respawn"])
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "respawn"
        return NotEnrolled(reason=f"bad comment: {where}: {first['msg']}")
    environment = config.environments.get(request.environment)
    if environment is None:
        return NotEnrolled(reason=f"unknown environment {request.environment!r}")
    allowed = environment.max_mode
    mode = allowed if request.mode is None else allowed.narrowest(request.mode)
    note = ""
    if request.mode is Mode.ACTION and mode is Mode.OBSERVE:
        note = f"job asked for action; environment {request.environment!r} allows observe only"
    return Enrolment(environment=request.environment, mode=mode, requested_mode=request.mode, note=note)
