"""The cluster configuration: one YAML file, validated by pydantic.

A bad file stops start-up with one line that names the file, the field and the
problem, because this is read by people at 3 a.m.
"""

import ipaddress
import re
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    HttpUrl,
    PostgresDsn,
    ValidationError,
    model_validator,
)

from respawn.attribution.runbook import DEFAULT_DIR as DEFAULT_RUNBOOKS
from respawn.config import problems, yamlfile
from respawn.wire.launcher import channel_dir

# The sections a stage reads are defined here, with the rest of the file's shape, so
# that reading the configuration imports no stage's network or storage code.


class AttributionHook(BaseModel):
    """The `attribution_hook` section of the cluster configuration."""

    model_config = ConfigDict(extra="forbid")
    url: HttpUrl
    # The whole exchange; the assess activity itself times out at 30 s.
    timeout_s: float = Field(default=2.0, gt=0, le=20)
    # A file holding the bearer token, read at each request so it can be rotated.
    token_file: Path | None = None
    max_lines: int = Field(default=2000, ge=1, le=100_000)  # evidence lines sent at most: the last ones

    @model_validator(mode="before")
    @classmethod
    def _no_inline_token(cls, data: Any) -> Any:
        # Config files are copied, diffed and pasted into tickets: a secret in
        # one leaks. Say so, rather than "extra inputs are not permitted".
        if isinstance(data, dict) and any(k in data for k in ("token", "bearer_token")):
            raise ValueError("a token is never written in the configuration: put it in a file, set token_file")
        return data

    @model_validator(mode="after")
    def _secrets_stay_secret(self) -> "AttributionHook":
        if self.url.username or self.url.password:
            raise ValueError("credentials in the url would be a secret in the configuration: use token_file")
        if self.token_file is not None and self.url.scheme != "https" and not _loopback(self.url.host or ""):
            raise ValueError("token_file needs an https url: a bearer token over plain HTTP can be read on the wire")
        return self


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class MetricsSettings(BaseModel):
    """`metrics` in the cluster configuration: where DCGM's series can be queried."""

    model_config = ConfigDict(extra="forbid")
    prometheus_url: str = Field(pattern=r"^https?://\S+$")
    timeout_s: float = Field(default=2.0, gt=0, le=60)  # per query: past it, evidence is log-only
    poll_interval_s: float = Field(default=2.0, gt=0, le=600)  # how often the detector reads the Xids
    # The label holding the Slurm node name on DCGM's series: dcgm-exporter's `Hostname`, or whatever
    # the site's relabelling keeps (e.g. `instance`, `node`); `respawn check` says which one fits.
    node_label: str = Field(default="Hostname", pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class StoppedTaskCheck(StrEnum):
    NONE = "none"  # name a hung rank from its output alone
    # Ask the job's nodes through an overlapping srun step (a real cluster).
    SLURM_STEP = "slurm_step"
    # Read /proc of the machine the detector runs on: right only where the
    # detector shares the nodes' process table (the sandbox, a one-node cluster).
    LOCAL_PROC = "local_proc"


class ProgressSettings(BaseModel):
    """`detector.progress` in the cluster configuration."""

    model_config = ConfigDict(extra="forbid")
    # Hang: silent longer than max(hang_floor_s, hang_factor × p95 of recent step intervals).
    hang_factor: float = Field(default=5.0, gt=1)
    hang_floor_s: float = Field(default=60.0, gt=0)
    # From the attempt's start to its first step: imports, rendezvous, loading a checkpoint.
    startup_s: float = Field(default=1200.0, gt=0)
    # From a "saving checkpoint" line until progress resumes.
    checkpoint_s: float = Field(default=900.0, gt=0)
    window: int = Field(default=50, ge=5, le=10_000)  # step intervals the threshold and baseline learn from
    # Straggler: a rank whose recent median compute time is this many times its peers'.
    straggler_factor: float = Field(default=1.5, gt=1)
    # Slowdown: the job's recent median step time this many times its own baseline.
    slowdown_factor: float = Field(default=1.5, gt=1)
    sustain_s: float = Field(default=120.0, gt=0)  # how long either must hold before it is an incident
    recent: int = Field(default=10, ge=3, le=1000)  # samples in a "recent" median
    # Straggler incidents recommend only, unless this is set: then the slowdown
    # runbook's ladder acts (restart without the slow node) where the job's mode allows.
    act_on_stragglers: bool = False
    stopped_task_check: StoppedTaskCheck = StoppedTaskCheck.NONE


class ConfigError(ValueError):
    """A configuration that cannot be used; the message is one line."""


class Mode(StrEnum):
    OBSERVE = "observe"  # recommend and record, never touch the scheduler
    ACTION = "action"  # act on the scheduler

    def narrowest(self, other: "Mode") -> "Mode":
        """The stricter of two modes: a job can narrow what the operator allows, never widen it."""
        return Mode.OBSERVE if Mode.OBSERVE in (self, other) else Mode.ACTION


class SchedulerAccess(StrEnum):
    """How Respawn reaches the scheduler: `scheduler.transport` in the configuration."""

    LOCAL = "local"
    SSH = "ssh"
    # Respawn reads Slurm (local commands) but never changes it: incidents publish
    # advice and the cluster's controller carries it out (docs/advisor-api.md).
    ADVISOR = "advisor"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SshSettings(_Strict):
    host: str
    port: int = Field(default=22, ge=1, le=65535)
    username: str = "root"
    client_key: Path
    known_hosts: Path  # host keys are pinned: verification is never switched off


class SchedulerSettings(_Strict):
    transport: SchedulerAccess = SchedulerAccess.LOCAL
    slurm_conf: Path | None = None  # SLURM_CONF for the local transport
    ssh: SshSettings | None = None
    # Where squeue/scontrol/sinfo live when they are not on PATH (e.g. /opt/slurm/bin).
    slurm_bin_dir: Path | None = None
    command_timeout_s: float = Field(default=20.0, gt=0)
    # Slurm commands one Respawn process runs at once; the others wait their turn. In a storm
    # hundreds of incidents act together, and as many squeue/scontrol at once queued in
    # slurmctld beyond its RPC threads ("pending RPCs at cycle end", BENCHMARKS.md, "A failure
    # storm"): a controller serves every cluster user, and one process keeps to a share of it.
    max_concurrent_commands: int = Field(default=16, ge=1, le=1024)
    # advisor transport: how long an incident waits for a controller to reconcile its advice.
    reconcile_timeout_s: float = Field(default=300.0, gt=0)

    @model_validator(mode="after")
    def _ssh_needs_settings(self) -> "SchedulerSettings":
        if self.transport is SchedulerAccess.SSH and self.ssh is None:
            raise ValueError("transport 'ssh' needs an 'ssh' section")
        return self


class TemporalSettings(_Strict):
    address: str = "127.0.0.1:7233"
    namespace: str = "default"
    task_queue: str | None = None  # default: respawn-<cluster>
    # The Temporal Web UI, for links to incidents (the console puts them in pages: http(s) only).
    ui_url: str = Field(default="http://127.0.0.1:8233", pattern=r"^https?://[^\s]+$")
    # What one worker runs at once. Most of an incident's activities are long polls that wait
    # (a heartbeat every few seconds, asyncio, no thread each): in a storm every incident holds
    # one while it follows its job, so the SDK's default of 100 would queue the 101st incident's
    # scheduler actions behind others' waiting. Workflow tasks are short; more workers on the
    # task queue scale both.
    max_concurrent_activities: int = Field(default=1000, ge=1, le=100_000)
    max_concurrent_workflow_tasks: int = Field(default=200, ge=2, le=10_000)
    # The activities' blocking reads and writes (job output, kernel logs, GPU metrics over HTTP,
    # the audit trail) run on threads: asyncio's default pool is cpu_count + 4 threads (6 on
    # two cores), so in a storm every incident's evidence queued behind five others' waits.
    # They wait on I/O, not on the CPU: one pool of this many threads for the worker.
    blocking_threads: int = Field(default=64, ge=1, le=1024)
    # How long a workflow task waits on this worker's sticky queue before any worker may take
    # it (replaying the incident): how soon a killed worker's incidents move on (a graceful stop
    # hands them over at once). The SDK's 10 s: at 2 s, a storm's busy worker let a quarter of
    # its tasks time out and replayed them, and the replays kept it busier (benchmarks/storm.py,
    # BENCHMARKS.md "A failure storm", runs 16-17: released in 180 s 305 -> all 500). A killed
    # worker's action already takes up to its 20 s heartbeat timeout to move on.
    sticky_timeout_s: float = Field(default=10.0, gt=0, le=300)
    # Run the incidents' workflow code in the SDK's sandbox, as the tests always do; why a worker
    # runs it without by default: workers/worker.py, `workflow_runner`.
    workflow_sandbox: bool = False

    def workflow_url(self, workflow_id: str) -> str:
        """The Temporal Web UI's page of a workflow (an incident)."""
        return (
            f"{self.ui_url.rstrip('/')}/namespaces/{quote(self.namespace, safe='')}/workflows/"
            f"{quote(workflow_id, safe='')}"
        )


class Approval(_Strict):
    # An operator approves or denies each action within this time ...
    timeout_s: float = Field(default=900.0, gt=0)
    # ... or this happens when nobody answers.
    default: Literal["approve", "deny"] = "deny"


# A Slurm partition, account or user name as written in the configuration.
_SLURM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")


def _slurm_names(names: list[str]) -> list[str]:
    if not names:
        raise ValueError("an empty list admits no job: leave it out not to restrict")
    for name in names:
        if not _SLURM_NAME.fullmatch(name):
            raise ValueError(f"{name[:70]!r} is not a Slurm name (letters, digits, '_', '.', '-'; at most 64)")
    return names


SlurmNames = Annotated[list[str], AfterValidator(_slurm_names)]


class EnvironmentBinding(_Strict):
    """Which jobs may use an environment (its `allow`): the jobs that match every list given.

    A list left out does not restrict; an empty list is an error (it would admit
    no job: leave it out instead), and so is a binding that gives none. The job's
    partition, account and user are Slurm's (squeue), not anything the job says
    about itself. A job submitted to several partitions (`-p a,b`, while pending)
    matches only when every one of them is allowed. Accounts are compared without
    case (Slurm keeps them in lower case); without Slurm accounting a job's account
    is empty and matches no `accounts` list.
    """

    partitions: SlurmNames | None = None
    accounts: SlurmNames | None = None
    users: SlurmNames | None = None

    @model_validator(mode="after")
    def _restricts(self) -> "EnvironmentBinding":
        if self.partitions is None and self.accounts is None and self.users is None:
            raise ValueError("allow gives none of partitions, accounts, users: leave it out to admit every job")
        return self

    def refusal(self, partition: str, account: str, user: str) -> str | None:
        """Why a job with these Slurm attributes is not admitted; None when it is."""
        if self.partitions is not None:
            asked = [p for p in partition.split(",") if p]
            if not asked or any(p not in self.partitions for p in asked):
                return f"bound to partitions {', '.join(self.partitions)}; job is in {_shown(partition)}"
        if self.accounts is not None and account.lower() not in {a.lower() for a in self.accounts}:
            return f"bound to accounts {', '.join(self.accounts)}; job's account is {_shown(account)}"
        if self.users is not None and user not in self.users:
            return f"bound to users {', '.join(self.users)}; job's user is {_shown(user)}"
        return None


def _shown(value: str) -> str:
    """A Slurm name for a note: one short line, '(none)' when empty."""
    text = " ".join(value.split())[:80]
    return text or "(none)"


class Environment(_Strict):
    """What the jobs that name this environment in their comment get at most.

    Without `allow` any job may name it. With `allow` (EnvironmentBinding) a job
    must match every list given (partitions, accounts, users); a job that names
    it without matching is enrolled in observe mode at most, the refusal on record.
    """

    # The most this environment allows. New environments watch before they act.
    max_mode: Mode = Mode.OBSERVE
    # In action mode, wait for an operator's approval before acting.
    approval: Approval | None = None
    # The jobs that may use it: None admits every job.
    allow: EnvironmentBinding | None = None


class LogSource(StrEnum):
    """Where job output and kernel logs are read (docs/log-sources.md)."""

    FILES = "files"  # a shared filesystem: `job_output` and `kernel_log` paths
    LOKI = "loki"  # Grafana Loki's HTTP API
    VICTORIALOGS = "victorialogs"  # VictoriaLogs' HTTP API


# A label (Loki) or field (VictoriaLogs) name: plain, so it can be written into a query unquoted.
_LABEL = r"^[A-Za-z_][A-Za-z0-9_.]{0,127}$"


class LogServer(_Strict):
    """`logs.server`: the Loki or VictoriaLogs a site ships job output and kernel logs to."""

    url: str = Field(pattern=r"^https?://[^\s@]+$")  # no credentials in the url: it is configuration
    # Each request: connecting, and each read, within it; the body read to its end is checked against it
    # between reads (so a request costs at most about twice this). Past it the poll goes on without it.
    timeout_s: float = Field(default=2.0, gt=0, le=60)
    # Loki's X-Scope-OrgID, VictoriaLogs' AccountID: for multi-tenant servers.
    tenant: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.:-]{1,150}$")


class LogLabels(_Strict):
    """`logs.labels`: how a site labels the streams it ships. Job output lines carry the job id
    in `job_id` (and `stream` = `job_stream`, when set); kernel lines carry the node's name in
    `node` and `stream` = `kernel_stream`. `match` holds constant labels every query carries
    (e.g. `cluster: gpu-a`, when one server holds several clusters' logs)."""

    job_id: str = Field(default="job_id", pattern=_LABEL)
    node: str = Field(default="node", pattern=_LABEL)
    stream: str = Field(default="stream", pattern=_LABEL)
    job_stream: str | None = Field(default=None, max_length=200)  # None: any stream of the job
    kernel_stream: str = Field(default="kernel", min_length=1, max_length=200)
    match: dict[Annotated[str, Field(pattern=_LABEL)], Annotated[str, Field(max_length=200)]] = Field(
        default_factory=dict, max_length=10
    )


class LogBounds(_Strict):
    """`logs.bounds`: what one poll of a log server may cost (docs/log-sources.md)."""

    max_lines: int = Field(default=5000, ge=1, le=100_000)  # new lines per stream per poll; the rest next poll
    max_line_chars: int = Field(default=8192, ge=256, le=1 << 20)  # longer lines are cut
    max_response_bytes: int = Field(default=16 << 20, ge=1 << 16, le=1 << 30)  # one response, read at most
    # Loki's `max_entries_limit_per_query` (5000 unless the site raised it): one request's limit.
    max_entries_per_query: int = Field(default=5000, ge=1, le=1_000_000)
    streams_per_request: int = Field(default=50, ge=1, le=1000)  # streams one query asks for
    requests_per_poll: int = Field(default=16, ge=1, le=1000)  # more streams than this allows rotate
    poll_budget_s: float = Field(default=5.0, gt=0, le=600)  # no new request once a poll took this long
    # A line that arrives this late (older than the newest line seen in its stream) is still
    # delivered, once; an older one is not (docs/log-sources.md: late lines).
    late_window_s: float = Field(default=10.0, ge=0, le=3600)
    backoff_s: float = Field(default=1.0, gt=0, le=600)  # after a 429 without Retry-After; doubles
    max_backoff_s: float = Field(default=60.0, gt=0, le=3600)
    # A stream not found is asked after (series / field_values) at most this often, over this lookback.
    missing_check_s: float = Field(default=30.0, gt=0, le=3600)
    missing_lookback_s: float = Field(default=6 * 3600.0, gt=0, le=30 * 86400)


class LogSettings(_Strict):
    # Where job output and kernel logs are read: files (the paths below), or a log server.
    source: LogSource = LogSource.FILES
    server: LogServer | None = None  # required unless source is files
    labels: LogLabels = Field(default_factory=LogLabels)
    bounds: LogBounds = Field(default_factory=LogBounds)
    # Where a job's output file lies; {job_id} is filled in. Operators set this
    # rather than trusting a path a job reports about itself. With a log server,
    # still the place of the launcher's channel (below).
    job_output: str
    # A node's kernel log (trusted node-level evidence); {node} is filled in.
    kernel_log: str | None = None
    # How much of an attempt's output evidence gathering reads back.
    evidence_lines: int = Field(default=400, ge=10, le=100_000)
    # The in-job launcher's channel directory (docs/launcher.md), {job_id} filled in, for sites
    # whose jobs run `respawn launch --channel ...`; unset, `.respawn-<job id>/` beside the output.
    launcher_channel: str | None = None

    @model_validator(mode="after")
    def _server_for_source(self) -> "LogSettings":
        if self.source is not LogSource.FILES and self.server is None:
            raise ValueError(f"logs.source {self.source.value} needs logs.server (its url)")
        if self.source is LogSource.LOKI:
            names = [self.labels.job_id, self.labels.node, self.labels.stream, *self.labels.match]
            dotted = [n for n in names if "." in n]
            if dotted:
                raise ValueError(f"Loki label names have no dots: {', '.join(dotted)}")
        return self


class Budgets(_Strict):
    max_restarts: int = Field(default=3, ge=0)  # per job, unless a runbook says otherwise
    # Stop when this many attempts in a row saved no new checkpoint.
    no_checkpoint_attempts: int = Field(default=2, ge=1)
    # A node implicated in this many incidents (any jobs) within the window is
    # recommended for drain; drained in action mode only with node-level evidence.
    node_incidents_to_drain: int = Field(default=3, ge=1)
    node_window_s: float = Field(default=24 * 3600.0, gt=0)
    # Circuit breaker: when more than this share of the cluster's nodes is
    # implicated within the window, the failure is systemic (a switch, a file
    # system): stop excluding and draining, keep recommending, raise it loudly.
    systemic_node_share: float = Field(default=0.25, gt=0, le=1)
    systemic_window_s: float = Field(default=900.0, gt=0)
    # A job array whose tasks fail the same way: when at least this share of its tasks (and two)
    # failed with one class within `systemic_window_s`, recovery stops for the whole array.
    array_systemic_share: float = Field(default=0.5, gt=0, le=1)


class Listen(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(ge=1, le=65535)


class TelemetrySettings(_Strict):
    # Where each Respawn process serves its own metrics for Prometheus (/metrics,
    # docs/metrics.md); a process without an address serves none. Not to be
    # confused with `metrics`, the Prometheus Respawn queries for GPU metrics.
    detector: Listen | None = None
    worker: Listen | None = None  # one worker per host, or one config per worker: the port is its own


class AccountingSettings(_Strict):
    """`accounting` in the cluster configuration: what the accounting of lost GPU-hours
    (respawn/audit/cost.py, docs/cost.md) assumes where the audit trail does not say.

    The audit trail does not record a job's GPUs: a job's are taken as the nodes of its
    allocation (as its rows name them) times `gpus_per_node`, else `job_gpus`; every
    figure built on them says the GPUs were assumed."""

    gpus_per_node: int | None = Field(default=None, ge=1, le=1024)
    job_gpus: int | None = Field(default=None, ge=1, le=10_000_000)  # a job whose allocation no row names


class WatchdogSettings(_Strict):
    # A job Respawn holds is released unchanged, to normal scheduling, when no
    # decision released it within this time (worker down, attribution stuck,
    # scheduler calls failing): recovery fails open.
    hold_timeout_s: float = Field(default=120.0, gt=0)


class DetectorSettings(_Strict):
    poll_interval_s: float = Field(default=0.5, gt=0, le=60)
    # A job Slurm still lists that ended longer than this before the detector started is
    # history (someone dealt with it); a restarted detector catches up on what ended while
    # it was down, up to this long.
    catch_up_s: float = Field(default=60.0, ge=0, le=3600)
    # Detections of one interruption arrive over a second or so: wait this long
    # before gathering evidence so they are read as one incident. Slurm's verdict
    # (the attempt ended) ends the wait: the evidence is whole then.
    settle_s: float = Field(default=1.0, ge=0, le=60)
    # A node Slurm flags NOT_RESPONDING (not yet DOWN) counts as lost once flagged this long:
    # one message timing out to a busy slurmd sets the flag for a second or two, a node cut
    # off keeps it until SlurmdTimeout makes it DOWN (respawn/detection/rules.py `down`).
    not_responding_s: float = Field(default=5.0, ge=0, le=600)
    # A communication error is often the echo of a node that died: wait this
    # long for Slurm to notice a dead node before blaming nobody.
    cascade_wait_s: float = Field(default=20.0, ge=0, le=600)
    # ... unless asking the nodes settles it: each node's slurmd is given this long to answer
    # a connection (activities/probe.py); 0 turns the probe off.
    probe_timeout_s: float = Field(default=2.0, ge=0, le=30)
    # A node whose slurmd the probe found silent, and which the decision excludes, is called
    # DOWN (scontrol update State=DOWN) once it is still silent to a second probe, in action
    # mode: the held job's requeue completes at once instead of after SlurmdTimeout. False:
    # wait for Slurm's own verdict.
    mark_silent_down: bool = True
    # A failure-like line in an attempt that still runs is a suspicion: the incident
    # waits this long for the interruption to be confirmed (the attempt ends, stalls,
    # loses a node) before it closes as not interrupted (respawn/detection/interruption.py).
    confirm_window_s: float = Field(default=30.0, gt=0, le=3600)
    # How long the incident follows the next attempt before it closes.
    follow_timeout_s: float = Field(default=600.0, gt=0)
    # An in-job rung: how long the job's launcher is given to acknowledge a relaunch
    # (docs/launcher.md) before the ladder falls back to the requeue.
    relaunch_timeout_s: float = Field(default=60.0, gt=0, le=3600)
    # At most this many log detections are signalled per job attempt.
    max_signals_per_attempt: int = Field(default=20, ge=1)
    # Jobs whose detections are signalled to Temporal at once, in a storm of failures. Each
    # start is a round trip that a loaded server answers in about half a second: 32 at a
    # time, a storm's 500th incident started 11 s after Slurm ended its job; 128, 7 s
    # (BENCHMARKS.md, "A failure storm", runs 56-57).
    max_concurrent_deliveries: int = Field(default=128, ge=1, le=1024)
    # Hangs and stragglers, read from the job's progress lines (respawn/detection/rhythm.py).
    progress: ProgressSettings = Field(default_factory=ProgressSettings)


class ApiToken(_Strict):
    """A bearer token of the Respawn server: who holds it and what it may do."""

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")  # logged; the token never is
    # The secret itself, or a file holding it (so the YAML need not); exactly one.
    token: str | None = Field(default=None, min_length=16, max_length=512)
    token_file: Path | None = None
    scopes: list[Literal["read", "write"]] = Field(min_length=1)

    @model_validator(mode="after")
    def _one_secret(self) -> "ApiToken":
        if (self.token is None) == (self.token_file is None):
            raise ValueError("give exactly one of 'token' and 'token_file'")
        return self

    def secret(self) -> str:
        """The token, read from its file when it has one (stripped of the trailing newline)."""
        if self.token is not None:
            return self.token
        assert self.token_file is not None  # exactly one of the two (_one_secret)
        try:
            secret = self.token_file.read_text().strip()
        except OSError as exc:
            raise ConfigError(f"server token {self.name}: cannot read {self.token_file}: {exc.strerror}") from None
        if len(secret) < 16:
            raise ConfigError(f"server token {self.name}: {self.token_file} holds fewer than 16 characters")
        return secret


class ServerSettings(_Strict):
    """The Respawn HTTP server (`respawn serve`): the Advisor API and the console."""

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=1, le=65535)
    tokens: list[ApiToken] = Field(default_factory=list)
    # A longer request body gets 413 before it is read (respawn/surfaces/server/guard.py).
    max_body_bytes: int = Field(default=1024 * 1024, ge=1024, le=64 * 1024 * 1024)

    @model_validator(mode="after")
    def _unique_names(self) -> "ServerSettings":
        names = [t.name for t in self.tokens]
        if len(names) != len(set(names)):
            raise ValueError("token names must be unique")
        return self


def _store_location(value: Any) -> Any:
    """A URL (anything with `://`) must be PostgreSQL's; anything else is a SQLite file's path."""
    if isinstance(value, str) and "://" in value:
        if not value.startswith(("postgresql://", "postgresql+psycopg://")):
            raise ValueError("a URL here is postgresql://USER[:PASSWORD]@HOST[:PORT]/DATABASE; else a file's path")
        return PostgresDsn(value)
    return value


class ClusterConfig(_Strict):
    cluster: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    scheduler: SchedulerSettings = Field(default_factory=SchedulerSettings)
    temporal: TemporalSettings = Field(default_factory=TemporalSettings)
    environments: dict[str, Environment]
    logs: LogSettings
    budgets: Budgets = Field(default_factory=Budgets)
    detector: DetectorSettings = Field(default_factory=DetectorSettings)
    watchdog: WatchdogSettings = Field(default_factory=WatchdogSettings)
    # GPU metrics (DCGM through Prometheus): Xid detection and corroboration. None: logs only.
    metrics: MetricsSettings | None = None
    # Respawn's own metrics, served by its processes (docs/metrics.md).
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    # What the accounting of lost GPU-hours assumes of a job's GPUs (docs/cost.md).
    accounting: AccountingSettings = Field(default_factory=AccountingSettings)
    # The audit trail and the advice (docs/store.md): a SQLite file's path (one host), or a
    # postgresql:// URL (a control plane on several hosts).
    audit_db: Annotated[Path | PostgresDsn, BeforeValidator(_store_location)]
    runbooks: Path = DEFAULT_RUNBOOKS
    attribution_hook: AttributionHook | None = None  # optional second opinion (docs/attribution-hook.md)
    server: ServerSettings = Field(default_factory=ServerSettings)

    @property
    def task_queue(self) -> str:
        return self.temporal.task_queue or f"respawn-{self.cluster}"

    def job_output(self, job_id: int) -> Path:
        return Path(self.logs.job_output.format(job_id=job_id))

    def launcher_channel(self, job_id: int) -> Path:
        if self.logs.launcher_channel:
            return Path(self.logs.launcher_channel.format(job_id=job_id))
        return channel_dir(self.job_output(job_id), job_id)

    def kernel_log(self, node: str) -> Path | None:
        return Path(self.logs.kernel_log.format(node=node)) if self.logs.kernel_log else None


def load_config(path: Path) -> ClusterConfig:
    try:
        data = yamlfile.load(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except yamlfile.DuplicateKeyError as exc:  # last-one-wins would hide the first from its reader
        raise ConfigError(f"{path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    try:
        return ClusterConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(problems.describe(path, exc, ClusterConfig)) from None
