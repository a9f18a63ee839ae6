"""The incident: what starts it, what it carries between steps, and how it ends."""

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from respawn.config.cluster import Approval, Mode
from respawn.decision.decide import Decision
from respawn.decision.ledger import NodeVerdict
from respawn.detection.interruption import ASSUMED, Interruption
from respawn.wire.attribution import Attribution
from respawn.wire.evidence import Evidence
from respawn.wire.launcher import LauncherView


class DetectionKind(StrEnum):
    LOG_LINE = "log_line"  # a runbook failure line in the job's output
    JOB_ENDED = "job_ended"  # Slurm says the attempt ended badly (FAILED, NODE_FAIL, ...)
    NODE_DOWN = "node_down"  # a node of the allocation is DOWN or not responding
    KERNEL = "kernel"  # a fatal line in a node's kernel log
    HANG = "hang"  # no progress for longer than the job's own rhythm allows (respawn/detection/rhythm.py)
    SLOWDOWN = "slowdown"  # a straggler rank, or the job slower than its baseline: an incident of its own
    METRICS = "metrics"  # a node's GPU metrics report a fault: a new Xid through DCGM


class Acting(StrEnum):
    """Who carries out an incident's decision."""

    RESPAWN = "respawn"  # Respawn changes Slurm itself (hold, exclude, release, drain)
    # The advisor transport: Respawn publishes advice and awaits the cluster's own
    # controller reporting it carried it out (docs/advisor-api.md).
    CONTROLLER = "controller"


class Detection(BaseModel):
    kind: DetectionKind
    at: datetime  # when the detector saw it
    job_id: int
    attempt: int
    # When Slurm accepted the job: Slurm reuses job ids (a controller reset, a wraparound),
    # so a job is its id and its submit time. None where it is not known.
    submitted: datetime | None = None
    line: str | None = None
    pattern: str | None = None
    node: str | None = None
    job_state: str | None = None
    # Where this attempt began in the job's output, so evidence is read from this attempt only:
    # a byte offset in its file, or under a log server (logs.source loki, victorialogs) the
    # stream's time stamp in nanoseconds since the epoch. Every position an incident carries
    # (GatherRequest.log_offset, Gathered.log_end, FollowRequest.log_offset, the results' log_end)
    # is of the same kind: the cluster's logs.source says which (docs/log-sources.md, "Positions").
    log_offset: int = 0
    # When the failure occurred, as well as the signal tells (the line's own time, the output's
    # last write, Slurm's end time), and the job's seconds per step then: the accounting of lost time.
    occurred: datetime | None = None
    step_seconds: float | None = None
    checkpoint_interval_s: float | None = None  # the job's seconds between checkpoints, and a save's own
    checkpoint_save_s: float | None = None
    # The job's launcher runs its step (docs/launcher.md; its channel has a status): the incident's
    # settle ends once the launcher reports the step ended, when all of srun's output is written.
    launched: bool = False
    # The attempt's nodes as Slurm listed them when the detector saw this (never the job's text):
    # once Slurm requeues the job it lists none (PENDING again), and the evidence may be read later.
    allocation: list[str] = Field(default_factory=list)


class IncidentInput(BaseModel):
    cluster: str
    job_id: int
    attempt: int
    submitted: datetime | None = None  # the job's submit time: its history is its own, not an old job's under its id
    environment: str
    mode: Mode
    settle_s: float
    cascade_wait_s: float
    follow_timeout_s: float
    # How long a suspicion waits for the interruption to be confirmed before the
    # incident closes as not interrupted (respawn/detection/interruption.py).
    confirm_window_s: float = 30.0
    approval: Approval | None = None  # the environment wants an operator's word before acting
    acting: Acting = Acting.RESPAWN
    # Acting.CONTROLLER: how long the controller's reconciliation is awaited.
    reconcile_timeout_s: float = 300.0
    # An in-job rung: how long the job's launcher is given to acknowledge a relaunch.
    relaunch_timeout_s: float = 60.0
    # A cascade (an error naming no culprit): how long each node's slurmd is given to answer a probe.
    probe_timeout_s: float = 2.0
    # A node the probe found silent, and the decision excludes, is called DOWN by Respawn
    # (detector.mark_silent_down). False for incidents started before it existed.
    mark_silent_down: bool = False

    @model_validator(mode="before")
    @classmethod
    def _acting_of_older_inputs(cls, data: Any) -> Any:
        """Incidents started before `acting` existed said "controller" by a reconcile timeout
        (None: Respawn acts). Their recorded inputs still decide the same way on replay."""
        if isinstance(data, dict) and "acting" not in data and "reconcile_timeout_s" in data:
            data = dict(data)
            timeout = data.pop("reconcile_timeout_s")
            data["acting"] = Acting.RESPAWN if timeout is None else Acting.CONTROLLER
            if timeout is not None:
                data["reconcile_timeout_s"] = timeout
        return data


class OverrideAction(StrEnum):
    STOP = "stop"  # do nothing more for the job: it stays ended
    RESTART = "restart"  # restart it, excluding the given nodes as well
    RELEASE = "release"  # let it go on under normal scheduling, unchanged
    APPROVE = "approve"  # go ahead with Respawn's decision
    DENY = "deny"  # do not act on Respawn's decision


_NODE = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"


class Override(BaseModel):
    """An operator taking over an incident, from the CLI or the Temporal Web UI."""

    model_config = ConfigDict(extra="forbid")
    action: OverrideAction
    reason: str = Field(min_length=1, max_length=500)
    who: str = Field(default="unknown", min_length=1, max_length=64)
    exclude: list[Annotated[str, StringConstraints(pattern=_NODE)]] = Field(default_factory=list, max_length=64)

    @model_validator(mode="after")
    def _exclude_only_on_restart(self) -> "Override":
        if self.exclude and self.action is not OverrideAction.RESTART:
            raise ValueError("nodes can only be excluded with a restart")
        return self


class Phase(StrEnum):
    DETECTED = "detected"
    SUSPECTED = "suspected"  # failure-like text in a running attempt: awaiting confirmation
    NOT_INTERRUPTED = "not_interrupted"  # the attempt went on, or ended as meant: nothing to recover
    ATTRIBUTED = "attributed"
    RECOMMENDED = "recommended"  # observe mode: decided, nothing done
    AWAITING_APPROVAL = "awaiting_approval"
    DENIED = "denied"  # an operator said no: nothing done
    RELEASED = "released"  # an operator let the job go on unchanged
    ACTING = "acting"
    FOLLOWING = "following"
    RESUMED = "resumed"
    STOPPED = "stopped"
    CLOSED = "closed"


def incident_id(
    cluster: str,
    job_id: int,
    attempt: int,
    kind: DetectionKind | None = None,
    seq: int = 0,
    submitted: datetime | None = None,
) -> str:
    """One incident per interruption of an attempt, and a slowdown beside it: a slow
    job keeps running, so a crash later in the same attempt must still find an
    incident to open. An incident that found the attempt not interrupted leaves
    the attempt watched: the next suspicion opens the next one (`seq`). With the
    job's submit time, a new job under a reused id never meets an old one's incidents."""
    job = f"{job_id}-s{int(submitted.timestamp())}" if submitted is not None else str(job_id)
    base = f"incident-{cluster}-{job}-{attempt}"
    if kind is DetectionKind.SLOWDOWN:
        return f"{base}-slowdown"
    return f"{base}.{seq}" if seq else base


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
    # The nodes the job could run on (its partitions', up, not drained); None: not read.
    eligible_nodes: list[str] | None = None
    restart_count: int | None = None  # Slurm's, when gathered: past the attempt, Slurm requeued it
    last_step: int | None = None  # the newest training step the attempt reported
    # The job's in-job launcher, read while the job runs: None when it runs none (docs/launcher.md).
    launcher: LauncherView | None = None
    # The job's own launcher's restarts of its workers (torchrun, ft_launcher): its lines, at most 20.
    job_restarts: list[str] = Field(default_factory=list)
    # That launcher saw its workers fail and has not said yet whether it restarts them.
    own_launcher_deciding: bool = False
    array_job_id: int | None = None  # the job is a task of this array
    gpus: int | None = None  # in the allocation, as Slurm reports it (tres gres/gpu); None: not reported


class AssessRequest(BaseModel):
    incident: IncidentInput
    incident_id: str
    gathered: Gathered
    detections: list[Detection] = Field(default_factory=list)


class Assessment(BaseModel):
    attribution: Attribution
    decision: Decision
    nodes: NodeVerdict = Field(default_factory=NodeVerdict)
    interruption: Interruption = ASSUMED
    # Wait for a dead node before deciding: the runbook calls the class a cascade and the
    # evidence names no node. None: assessed before runbooks said so (recorded histories).
    cascade: bool | None = None


class AssessAttemptRequest(BaseModel):
    """The attempt's evidence to gather, and the incident to judge it for."""

    incident: IncidentInput
    gather: GatherRequest


class Assessed(BaseModel):
    gathered: Gathered
    assessment: Assessment


class ProbeRequest(BaseModel):
    nodes: list[str]
    timeout_s: float


class ProbeVerdict(StrEnum):
    SILENT = "silent"  # some nodes answered, these did not: they are the suspects
    ALL_ANSWERED = "all_answered"  # every node is there: no dead node behind the error
    UNKNOWN = "unknown"  # none answered (or none could be asked): the probe cannot tell


class Probed(BaseModel):
    verdict: ProbeVerdict
    silent: list[str] = Field(default_factory=list)
    answered: list[str] = Field(default_factory=list)
    unknown: list[str] = Field(default_factory=list)  # not asked: Slurm lists no address for them
    seconds: float = 0.0


class ActionRequest(BaseModel):
    incident_id: str
    cluster: str
    job_id: int
    attempt: int
    exclude: list[str] = Field(default_factory=list)
    drain: list[str] = Field(default_factory=list)
    down: list[str] = Field(default_factory=list)  # nodes to call DOWN (silent to the probe; ledger.to_mark_down)
    reason: str = ""


class RelaunchRequest(BaseModel):
    """An in-job rung: the instruction for the job's launcher, through its channel."""

    incident_id: str
    cluster: str
    job_id: int
    attempt: int
    exclude: list[str] = Field(default_factory=list)  # empty: the same nodes
    reason: str = ""
    timeout_s: float  # for the launcher's acknowledgement


class StepEndRequest(BaseModel):
    """The settle of an incident whose job runs under its launcher: until the step ended, at most `within_s`."""

    cluster: str
    job_id: int
    within_s: float


class Relaunched(BaseModel):
    done: bool  # False: not carried out (`detail` says why); the ladder falls back
    detail: str
    generation: int | None = None  # of the instruction posted
    nodes: list[str] = Field(default_factory=list)  # where the new step runs
    log_end: int | None = None  # the job's output size once acknowledged: the next incident reads after it


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
    in_job: bool = False  # relaunched in the allocation: the same attempt trains again
    fault_at: datetime | None = None  # when the failure occurred (else was detected): the recovery's zero


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
    # Not interrupted, or relaunched in the job: where its evidence ended, so the attempt's next
    # incident reads what came after.
    log_end: int | None = None
    # An in-job rung relaunched the step: the attempt goes on, and its next interruption opens
    # the attempt's next incident (respawn/detection/detector.py, signal_detection).
    relaunched: bool = False
