"""Job enrolment from the sbatch comment.

A job opts in with `--comment='{"respawn":{"environment":"prod","mode":"observe"}}'`.
The comment is written by any user, so it is parsed as hostile input: bounded in
size, JSON only, strict types, and its text never reaches a shell or a log
format string. A job can narrow what its environment allows, never widen it.

An environment may be bound to partitions, accounts and/or users (its `allow`,
respawn/config/cluster.py): a job that names an environment it is not bound to is still
enrolled, in observe mode at most (Respawn watches and recommends, never acts),
and the refusal is on record (`Enrolment.refused`, and `note`).
"""

import json
import re

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from respawn.config.cluster import ClusterConfig, Mode
from respawn.scheduler.slurm import JobInfo

MAX_COMMENT_BYTES = 4096
_ENV_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")


class Enrolment(BaseModel):
    environment: str
    mode: Mode  # effective: the stricter of the job's and the environment's
    requested_mode: Mode | None = None
    note: str = ""  # e.g. why the mode was narrowed
    # Why the environment's binding (`allow`) does not admit this job, which is
    # therefore observed only; None when the job may use the environment.
    refused: str | None = None


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


def enrol(job: JobInfo, config: ClusterConfig) -> Enrolment | NotEnrolled:
    """The enrolment of a job from its comment, within what its environment allows it."""
    comment = job.comment
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
    refused = None
    if environment.allow is not None:
        why = environment.allow.refusal(job.partition, job.account, job.user)
        if why is not None:
            refused = f"environment {request.environment!r} is {why}"
            allowed = Mode.OBSERVE  # a job cannot widen its lot by naming another's environment
    mode = allowed if request.mode is None else allowed.narrowest(request.mode)
    note = ""
    if refused is not None:
        note = f"{refused}: observe only"
        if request.mode is Mode.ACTION:
            note = f"job asked for action; {note}"
    elif request.mode is Mode.ACTION and mode is Mode.OBSERVE:
        note = f"job asked for action; environment {request.environment!r} allows observe only"
    return Enrolment(
        environment=request.environment, mode=mode, requested_mode=request.mode, note=note, refused=refused
    )
