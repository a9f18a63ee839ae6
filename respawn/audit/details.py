"""What each audit event's `details` say: one model per event type, every field named.

`respawn.audit.trail.DETAILS` maps each `EventType` to its model here. An `AuditEvent`
validates its details against the model of its type when it is made, so a writer
with a misspelt or unknown key fails there and then (in the tests first); readers
ask a row for its typed details (`row.detail(DecidedDetails).checkpoint_step`), never
for a string key, so renaming a field breaks the reader that still uses the old name.

The stored shape is unchanged: a row's details are kept as the JSON object its writer
gave, the fields of its model, in the model's order (each model lists its fields in the
order today's writers write them, so a payload built from a model is the one built
from a dict before it).

Older and newer rows, on read (`details_of`, `AuditEvent.typed_details`):
- a field a row lacks reads as its default: every field has one, because fields were
  added over time (the recorded histories in tests/data/histories have DECIDED rows
  without `interruption` and `submitted`, ATTRIBUTED rows without `unknown` and
  `last_lines`) and readers have always treated a missing key as its default;
- a key the model does not name is left out, so a row a newer release wrote still
  reads after a rollback; writing such a key is refused. Renaming a stored field
  therefore needs a `validation_alias` naming the old key, or the rows written before
  it read the field as its default: tests/unit/test_audit_details.py keeps a row of each
  type as today's code writes it and fails when one of its keys stops being read.
- a value of the wrong type fails the read, loudly.
"""

from pydantic import BaseModel, ConfigDict, Field

from respawn.wire.launcher import LauncherView


class EventDetails(BaseModel):
    """The details of one type of audit event. Unknown keys are refused on write."""

    model_config = ConfigDict(extra="forbid")


class NotEnrolledDetails(EventDetails):
    reason: str | None = None  # why the job is not Respawn's to recover
    submitted: str | None = None  # the job's submit time (ISO), seen before its first requeue


class EnrolledDetails(EventDetails):
    environment: str | None = None
    mode: str | None = None  # the effective mode: action or observe
    note: str | None = None  # e.g. why the mode was narrowed
    refused: str | None = None  # why the environment's binding observes the job only
    # The job's submit time (ISO) seen before its first requeue: tells this job's history
    # from an older job's under the same id (activities/assessment.py).
    submitted: str | None = None
    array_job_id: int | None = None  # a task of this job array: how many tasks the array has, as seen


class DetectedDetails(EventDetails):
    kind: str | None = None  # DetectionKind: log_line, kernel, hang, slowdown, ...
    line: str | None = None
    pattern: str | None = None
    node: str | None = None
    job_state: str | None = None
    mode: str | None = None
    environment: str | None = None
    # When the failure occurred (ISO; the row's `at` is when the detector saw it), and the job's
    # seconds per step then: what the accounting of lost time reads (respawn/audit/cost.py).
    occurred: str | None = None
    step_seconds: float | None = None
    # ... and between its checkpoints, and how long a save takes: the checkpoint advice's measures.
    checkpoint_interval_s: float | None = None
    checkpoint_save_s: float | None = None


class NotInterruptedDetails(EventDetails):
    why: str | None = None
    line: str | None = None
    job_state: str | None = None
    suspected_at_step: int | None = None
    last_step: int | None = None
    # The job's own launcher restarted its workers this often (torchrun, ft_launcher): they count
    # in the job's restart budget (activities/assessment.py).
    job_restarts: int | None = None


class AttributedDetails(EventDetails):
    node_implicated: bool | None = None
    line: str | None = None
    recoverable_by_restart: bool | None = None
    job_state: str | None = None
    down_nodes: list[str] = Field(default_factory=list)
    source: str | None = None  # AttributionSource
    hook_error: str | None = None
    hook_rationale: str | None = None
    hook_refused_nodes: list[str] = Field(default_factory=list)
    unknown: bool | None = None
    last_lines: list[str] = Field(default_factory=list)


class DecidedDetails(EventDetails):
    reason: str = ""
    exclude: list[str] = Field(default_factory=list)
    newly_excluded: list[str] = Field(default_factory=list)
    drain: list[str] = Field(default_factory=list)
    drain_backed: list[str] = Field(default_factory=list)
    down: list[str] = Field(default_factory=list)  # to be called DOWN: silent to Respawn's probe (ledger.to_mark_down)
    systemic: bool | None = None
    # The newest checkpoint when the attempt was interrupted: the checkpoint budget
    # compares it across attempts (activities/assessment.py, past_incidents).
    checkpoint_step: int | None = None
    mode: str | None = None
    interruption: str | None = None  # why the interruption was confirmed
    # The job's submit time (ISO): its decisions are its history, not an older job's under its id.
    submitted: str | None = None
    fallback: str | None = None  # an in-job rung: the job-level rung taken when the relaunch fails
    last_step: int | None = None  # the newest training step the attempt reported: the work redone since the checkpoint
    # What deciding again needs besides the attribution (`respawn replay`, respawn/decision/replay.py):
    # the allocation, the cluster's size, the job's launcher as the decision saw it.
    job_nodes: list[str] = Field(default_factory=list)
    cluster_size: int | None = None
    launcher: LauncherView | None = None
    array_job_id: int | None = None  # a task of this array: its tasks failing alike stop it whole
    gpus: int | None = None  # the allocation's GPUs as Slurm reported them: what lost time costs (audit/cost.py)


class RelaunchedDetails(EventDetails):
    """The job's launcher relaunched its step in the allocation (an in-job rung), acknowledged."""

    rung: str | None = None  # restart_in_place or replace_node
    generation: int | None = None  # of the instruction in the job's channel
    excluded: list[str] = Field(default_factory=list)  # the nodes the new step leaves out
    detail: str | None = None  # the launcher's word
    reason: str | None = None


class RungFailedDetails(EventDetails):
    """An in-job rung that could not be done: the ladder falls back one layer."""

    rung: str | None = None
    why: str | None = None
    fallback: str | None = None  # the job-level rung taken instead


class SchedulerActDetails(EventDetails):
    """HELD, EXCLUDED, RELEASED, DRAINED, MARKED_DOWN: one action on the scheduler (activities/scheduler.py)."""

    changed: bool | None = None  # False: it was so already (a retry, or a crash after the action)
    detail: str | None = None
    reason: str | None = None


class StoppedDetails(EventDetails):
    reason: str | None = None
    # The job's launcher, waiting after its step failed, told to give up: its word (None: no launcher waited).
    launcher: str | None = None


class AttemptStartedDetails(EventDetails):
    """Nothing beyond the row's attempt and nodes."""


class ResumedDetails(EventDetails):
    step: int | None = None  # the new attempt's first training step
    resumed_from: int | None = None  # the checkpoint step it said it resumed from
    line: str | None = None
    # Seconds from the fault (when it occurred, else when it was detected) to this first step:
    # what the recovery cost, whichever rung it took (in the job or a requeue).
    since_fault_s: float | None = None


class JobEndDetails(EventDetails):
    """JOB_COMPLETED, JOB_ENDED: the detector saw the job end as meant."""

    state: str | None = None
    exit_code: int | None = None


class WatchErrorDetails(EventDetails):
    error: str | None = None  # the kind of error (its exception's name)
    detail: str | None = None


class IncidentClosedDetails(EventDetails):
    phase: str = "closed"  # the Phase it closed in
    reason: str | None = None


class OverrideDetails(EventDetails):
    who: str | None = None
    reason: str | None = None


class SystemicDetails(EventDetails):
    reason: str | None = None


class WatchdogReleasedDetails(EventDetails):
    held_for_s: float | None = None
    hold_timeout_s: float | None = None
    restart_count: int | None = None
    excluded_nodes: list[str] = Field(default_factory=list)
    reason: str | None = None


class AdvisedDetails(EventDetails):
    generation: int | None = None
    exclude: list[str] = Field(default_factory=list)
    drain: list[str] = Field(default_factory=list)
    reason: str | None = None


class ReconciledDetails(EventDetails):
    generation: int | None = None
    status: str | None = None  # the advice's Status
    controller: str | None = None
    detail: str | None = None


# What an event says in words, for a table or a timeline: its reason, else its detail.
_REASONED = (
    NotEnrolledDetails,
    DecidedDetails,
    SchedulerActDetails,
    StoppedDetails,
    IncidentClosedDetails,
    OverrideDetails,
    SystemicDetails,
    WatchdogReleasedDetails,
    AdvisedDetails,
)
_DETAILED = (SchedulerActDetails, WatchErrorDetails, ReconciledDetails)


def reason_or_detail(details: EventDetails) -> str:
    """The event's reason, else its detail, else "" (`respawn audit`, the timeline)."""
    reason = details.reason if isinstance(details, _REASONED) else None
    detail = details.detail if isinstance(details, _DETAILED) else None
    return reason or detail or ""
