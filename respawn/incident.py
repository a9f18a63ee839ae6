"""The incident: what starts it, what it carries between steps, and how it ends."""

from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, Field

from respawn.attribution import Attribution
from respawn.config import Mode
from respawn.decision import Decision
from respawn.evidence import Evidence


class DetectionKind(StrEnum):
    LOG_LINE = "log_line"  # a runbook failure line in the job's output
    JOB_ENDED = "job_ended"  # Slurm says the attempt ended badly (FAILED, NODE_FAIL, ...)
    NODE_DOWN = "node_down"  # a node of the allocation is DOWN or not responding
    KERNEL = "kernel"  # a fatal line in a node's kernel log


class Detection(BaseModel):
    kind: DetectionKind
    at: datetime  # when the detector saw it
    job_id: int
    attempt: int
    line: str | None = None
    pattern: str | None = None
    node: str | None = None
    job_state: str | None = None
    # Byte offset in the job's output where this attempt began, so evidence is
    # read from this attempt only.
    log_offset: int = 0


class IncidentInput(BaseModel):
    cluster: str
    job_id: int
    attempt: int
    environment: str
    mode: Mode
    settle_s: float
    cascade_wait_s: float
    follow_timeout_s: float


class Phase(StrEnum):
    DETECTED = "detected"
    ATTRIBUTED = "attributed"
    RECOMMENDED = "recommended"  # observe mode: decided, nothing done
    ACTING = "acting"
    FOLLOWING = "following"
    RESUMED = "resumed"
    STOPPED = "stopped"
    CLOSED = "closed"


def incident_id(cluster: str, job_id: int, attempt: int) -> str:
    return f"incident-{cluster}-{job_id}-{attempt}"


class GatherRequest(BaseModel):
    incident_id: str
    job_id: int
    attempt: int
    log_offset: int
    detections: list[Detection]


class Gathered(BaseModel):
    evidence: Evidence
    log_end: int  # where the next attempt's output will begin
    checkpoint_step: int | None  # newest checkpoint this job saved, as far as its output says
    cluster_nodes: list[str]
    excluded_nodes: list[str]
    job_state: str


class AssessRequest(BaseModel):
    incident: IncidentInput
    incident_id: str
    gathered: Gathered


class Assessment(BaseModel):
    attribution: Attribution
    decision: Decision


class ActionRequest(BaseModel):
    incident_id: str
    cluster: str
    job_id: int
    attempt: int
    exclude: list[str] = Field(default_factory=list)
    reason: str = ""


class ActionResult(BaseModel):
    done: bool  # False: the desired state already held, nothing was changed
    detail: str


class FollowRequest(BaseModel):
    incident_id: str
    cluster: str
    job_id: int
    attempt: int  # the attempt that failed; the next one is followed
    log_offset: int
    timeout_s: float


class AttemptStarted(BaseModel):
    attempt: int
    nodes: list[str]
    at: datetime


class Resumed(BaseModel):
    step: int | None  # first step reported by the new attempt
    resumed_from: int | None  # the checkpoint step it says it loaded
    at: datetime


class IncidentResult(BaseModel):
    incident_id: str
    phase: Phase
    failure_class: str | None = None
    action: str | None = None
    acted: bool = False
    reason: str = ""
    excluded_nodes: list[str] = Field(default_factory=list)
    next_attempt: AttemptStarted | None = None
    resumed: Resumed | None = None
