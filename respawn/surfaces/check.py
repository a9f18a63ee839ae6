"""`respawn check`: the signals contract, checked before the first job (docs/check.md).

Everything Respawn reads is read once the way Respawn reads it, and each
finding says pass, warn or fail, why, and how to fix it: Slurm's JSON through
the real readers (the fields they ask for and do not find), job comments,
requeue, a running job's output through the configured pattern, every node's
kernel log (or, under a log server, the job's and the nodes' streams by the site's
labels), DCGM's series in Prometheus with the node label Respawn matches,
Temporal's namespace and search attributes, and the audit store. A mismatch
found here is one that would otherwise be a silent failure at 3 a.m.

The checks run at once, as `respawn status`'s do (respawn/surfaces/status.py),
each bounded by the same timeout; those that need Slurm's jobs and nodes share
one read of them. A check that cannot run (nothing configured, nothing to look
at) says `skip`, which is not a failure.
"""

import asyncio
import os
import re
import stat
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

import httpx
import sqlalchemy as sa

from respawn.audit.trail import row_of
from respawn.config.cluster import ClusterConfig, LogSource, MetricsSettings
from respawn.scheduler import hostlist, slurm_json
from respawn.scheduler.errors import SchedulerError
from respawn.scheduler.slurm import JobInfo, NodeInfo, Slurm
from respawn.scheduler.slurm_json.common import integer
from respawn.scheduler.states import ENDED, JobState
from respawn.sources import gpu_metrics
from respawn.sources.joblog import UnsafeOutput, reads_any_file, tail_lines
from respawn.sources.logstream import Line, LogSourceError, LogStream, Selector, open_stream
from respawn.store import schema
from respawn.store.engine import Location, describe, read_only_engine, version
from respawn.surfaces.status import _reason, _respawn_user, _scheduler, config_warnings

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_KERNEL_LOG_AGE_S = 24 * 3600.0


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"  # not configured, or nothing to look at: not a failure


@dataclass
class Verdict:
    name: str
    status: Status
    why: str
    fix: str = ""


def _v(name: str, status: Status, why: str, fix: str = "") -> Verdict:
    return Verdict(name, status, why, fix)


# --- Slurm's JSON, through the real readers -------------------------------------------------------------

# Where a reader reads one key or another (a version's shape, or a fallback), the one it did
# not find is not missing when the other is there. Each pair is a fallback in the readers
# (respawn/scheduler/slurm_json/): the format's name, a pending job's allocation, 24.11's
# node state list that carries its flags, sinfo's groups in place of a node list.
_EITHER = {
    "meta.plugin.data_parser": "meta.plugin.type",
    "meta.plugin.type": "meta.plugin.data_parser",
    "jobs[].job_resources": "jobs[].nodes",
    "jobs[].job_resources.nodes.allocation": "jobs[].job_resources.nodes.list",
    "nodes[].state_flags": "nodes[].state",
    "nodes": "sinfo",
    "sinfo": "nodes",
}


class _Asked(dict[str, Any]):
    """A JSON object that records, for each key a reader asks for, whether it was there."""

    def __init__(self, data: Mapping[str, Any], path: str, asked: dict[str, list[bool]]) -> None:
        super().__init__(data)
        self._path, self._asked = path, asked

    def _note(self, key: Any) -> str:
        where = f"{self._path}.{key}" if self._path else str(key)
        self._asked.setdefault(where, []).append(key in self)
        return where

    def get(self, key: Any, default: Any = None) -> Any:
        where = self._note(key)
        return _wrap(super().get(key), where, self._asked) if key in self else default

    def __getitem__(self, key: Any) -> Any:
        return _wrap(super().__getitem__(key), self._note(key), self._asked)


def _wrap(value: Any, where: str, asked: dict[str, list[bool]]) -> Any:
    if isinstance(value, dict):
        return _Asked(value, where, asked)
    if isinstance(value, list):
        return [_Asked(v, f"{where}[]", asked) if isinstance(v, dict) else v for v in value]
    return value


def missing_fields(data: dict[str, Any], key: str, what: str) -> tuple[list[str], int]:
    """The fields the reader of this output asked for and found in none of its records, and how many
    records it read. Raises what the reader raises (an unknown version: UnsupportedOutput)."""
    asked: dict[str, list[bool]] = {}
    read = slurm_json.jobs if key == "jobs" else slurm_json.nodes
    records = read(_Asked(data, "", asked), what)
    present = {where for where, found in asked.items() if any(found)}
    missing = [where for where, found in asked.items() if not any(found) and _EITHER.get(where, "\0") not in present]
    return sorted(missing), len(records)


def output_verdict(name: str, what: str, key: str, data: dict[str, Any]) -> Verdict:
    """Whether this output is in a format Respawn reads and carries what its reader needs."""
    version = slurm_json.version(data) or slurm_json.LEGACY
    printed = f"{what} ({version}{f', Slurm {r}' if (r := slurm_json.release(data)) else ''})"
    try:
        missing, count = missing_fields(data, key, what)
    except slurm_json.UnsupportedOutput as exc:
        return _v(name, Status.FAIL, str(exc), "run a Slurm release Respawn reads (README, 'Supported Slurm')")
    if missing:
        return _v(
            name,
            Status.FAIL,
            f"{printed}: the reader found no {', '.join(missing)} in any of {count} {key}",
            "these fields are Respawn's signals: a site filter or plugin that strips them from the JSON"
            " must let them through (compare with `" + what + "` on a stock Slurm)",
        )
    if count == 0:
        return _v(
            name,
            Status.WARN,
            f"{printed}: no {key} to read, so their fields could not be checked",
            "run it again with a job in the queue" if key == "jobs" else "",
        )
    return _v(name, Status.PASS, f"{printed}: {count} {key}, every field the reader asks for is there")


def jobs_verdict(view: "_SlurmView") -> Verdict:
    """The listing the detector reads each poll (squeue's text, strictly) reads, and so does the
    JSON the activities read one job from (output_verdict)."""
    if view.listing_error is not None:
        return _v(
            "slurm.jobs",
            Status.FAIL,
            f"the detector's listing (squeue --states=all --Format=...) cannot be read: {view.listing_error}",
            "run the squeue of the Slurm release the controller runs (README, 'Supported Slurm')",
        )
    verdict = output_verdict("slurm.jobs", view.jobs_what, "jobs", view.jobs_data)
    return replace(verdict, why=f"{verdict.why}; the detector's listing: {view.listed} jobs")


def comments_verdict(jobs_data: dict[str, Any], settings: dict[str, str], user: str) -> Verdict:
    """Whether job comments (how a job enrols) are in squeue's output and visible to Respawn's user."""
    name = "slurm.comments"
    private = [w for w in config_warnings(settings, user) if w.startswith("PrivateData=")]
    if private:
        return _v(name, Status.FAIL, private[0], "run Respawn as root or SlurmUser, or drop 'jobs' from PrivateData")
    jobs = [j for j in jobs_data.get("jobs") or [] if isinstance(j, dict)]
    if not jobs:
        return _v(name, Status.WARN, "no job in the queue: whether comments are printed could not be seen")
    if not any("comment" in j for j in jobs):
        return _v(
            name,
            Status.FAIL,
            f"squeue --json prints no comment for any of {len(jobs)} jobs: no job can enrol",
            "jobs enrol through --comment (README, 'Enrolling a job'); let squeue print it",
        )
    commented = sum(bool(j.get("comment")) for j in jobs)
    return _v(name, Status.PASS, f"comments are printed ({commented} of {len(jobs)} jobs carry one)")


def requeue_verdict(
    settings: Mapping[str, str], partitions: Mapping[str, Mapping[str, str]], jobs: Iterable[JobInfo] = ()
) -> Verdict:
    """Whether Slurm lets Respawn requeue a job, its partitions run a requeued job again, and the
    enrolled jobs that have not ended may be requeued. (Slurm has no per-partition requeue switch:
    JobRequeue is the cluster's default, --requeue/--no-requeue the job's.)"""
    name = "slurm.requeue"
    fixed = sorted(j.job_id for j in jobs if _enrolled(j) and not j.requeue and j.state not in ENDED)
    if fixed:
        shown = ", ".join(map(str, fixed[:10])) + (f" and {len(fixed) - 10} more" if len(fixed) > 10 else "")
        return _v(
            name,
            Status.WARN,
            f"enrolled jobs {shown} cannot be requeued (submitted with --no-requeue, or JobRequeue=0 without"
            " --requeue): a restart rung stops them instead",
            "submit enrolled jobs with --requeue",
        )
    if settings.get("JobRequeue", "1").strip() == "0":
        return _v(
            name,
            Status.WARN,
            "JobRequeue=0: only jobs submitted with --requeue can be requeued; Respawn cannot restart the others",
            "set JobRequeue=1 in slurm.conf, or submit every enrolled job with --requeue",
        )
    stopped = sorted(p for p, s in partitions.items() if s.get("State", "UP").upper() != "UP")
    if stopped:
        shown = ", ".join(f"{p} ({partitions[p].get('State')})" for p in stopped)
        return _v(
            name,
            Status.WARN,
            f"JobRequeue=1, but partitions {shown} are not UP: a job requeued there does not start again",
            f"scontrol update PartitionName={stopped[0]} State=UP, once it should run jobs",
        )
    late = [w for w in config_warnings(dict(settings), "root") if w.startswith("no Epilog")]
    if late:
        return _v(name, Status.WARN, late[0], "set Epilog= in slurm.conf (any script, even /bin/true) and reconfigure")
    return _v(name, Status.PASS, f"JobRequeue=1; partitions {', '.join(sorted(partitions)) or '(none)'} are UP")


def _pattern_error(pattern: str, placeholder: str, setting: str) -> str | None:
    """Why a configured path pattern cannot name each job's (node's) own file; None when it can."""
    if "{" + placeholder + "}" not in pattern:
        slurmish = re.search(r"%[A-Za-z]", pattern)
        hint = f" ({slurmish[0]} is Slurm's syntax; Respawn fills in {{{placeholder}}})" if slurmish else ""
        return f"{setting} {pattern!r} has no {{{placeholder}}}{hint}: every one would read the same file"
    try:
        pattern.format(**{placeholder: "x"})
    except (KeyError, IndexError, ValueError) as exc:
        return f"{setting} {pattern!r} cannot be filled in ({type(exc).__name__}: {exc})"
    return None


def _readable(path: Path, owner_uid: int | None) -> str | None:
    """Why `path` is not a file Respawn reads (joblog.py's rules); None when it is one."""
    try:
        os.lstat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    try:
        tail_lines(path, 1, 4096, owner_uid=owner_uid)  # a look, not a read: thousands of nodes
    except UnsafeOutput as exc:
        return exc.reason
    return None


def pick_job(jobs: list[JobInfo], wanted: int | None) -> JobInfo | None:
    """The job whose output is checked: the one asked for, else the newest running one."""
    if wanted is not None:
        return next((j for j in jobs if j.job_id == wanted), None)
    running = [j for j in jobs if j.state is JobState.RUNNING and j.array_task_id is None]
    return max(running, key=lambda j: j.job_id, default=None)


def job_output_verdict(
    config: ClusterConfig, jobs: list[JobInfo], raw_jobs: dict[str, Any], wanted: int | None
) -> Verdict:
    """Whether `logs.job_output` names a running job's output: a regular file Respawn may read."""
    name = "logs.job_output"
    pattern = config.logs.job_output
    error = _pattern_error(pattern, "job_id", "logs.job_output")
    if error:
        return _v(name, Status.FAIL, error, "write the pattern with {job_id}, e.g. /shared/logs/slurm-{job_id}.out")
    job = pick_job(jobs, wanted)
    if job is None:
        if wanted is not None:
            return _v(name, Status.FAIL, f"Slurm knows no job {wanted}", "name a job squeue lists, with --job")
        return _v(name, Status.SKIP, "no running job to resolve the pattern for", "run it again with --job ID")
    path = config.job_output(job.job_id)
    owner = job.user_id if reads_any_file() else None  # as the detector reads it (respawn/detection/detector.py)
    problem = _readable(path, owner)
    if problem is None:
        return _v(name, Status.PASS, f"job {job.job_id} ({job.state.value}): {path} is a regular file Respawn reads")
    slurm_path = _slurm_output(raw_jobs, job.job_id)
    said = f"; Slurm writes it to {slurm_path}" if slurm_path and slurm_path != str(path) else ""
    fix = (
        f"make logs.job_output name the file each job writes (Slurm's -o/--output){said}; Respawn reads it"
        " without following links, only when regular and the job user's"
    )
    # A job Respawn was not asked about, which may write elsewhere by its own choice: worth a look, no more.
    status = Status.FAIL if wanted is not None or _enrolled(job) else Status.WARN
    return _v(name, status, f"job {job.job_id} ({job.state.value}): {path} {problem}", fix)


def _enrolled(job: JobInfo) -> bool:
    return '"respawn"' in job.comment


def _slurm_output(raw_jobs: dict[str, Any], job_id: int) -> str:
    """Where Slurm says the job's output goes (24.11 prints it; 22.05 leaves it empty)."""
    for raw in raw_jobs.get("jobs") or []:
        if isinstance(raw, dict) and integer(raw.get("job_id")) == job_id:
            value = raw.get("standard_output")
            return value.replace("%j", str(job_id)) if isinstance(value, str) else ""
    return ""


def kernel_log_verdict(
    config: ClusterConfig, nodes: Iterable[NodeInfo], max_age_s: float, now: float | None = None
) -> Verdict:
    """Whether every node's kernel log is there, readable and written to lately."""
    name = "logs.kernel_log"
    pattern = config.logs.kernel_log
    if pattern is None:
        return _v(
            name,
            Status.WARN,
            "no logs.kernel_log: Xids and other node-level faults are seen in GPU metrics and job output only,"
            " and no node is drained without node-level evidence",
            "set logs.kernel_log to each node's kernel log as the detector's host sees it, e.g. /var/log/nodes/{node}/kern.log",
        )
    error = _pattern_error(pattern, "node", "logs.kernel_log")
    if error:
        return _v(name, Status.FAIL, error, "write the pattern with {node}")
    now = time.time() if now is None else now
    names = sorted(n.name for n in nodes)
    absent: dict[str, list[str]] = {}
    stale: list[str] = []
    for node in names:
        path = config.kernel_log(node)
        assert path is not None
        problem = _readable(path, None)
        if problem is not None:
            absent.setdefault(problem, []).append(node)
        elif now - os.stat(path).st_mtime > max_age_s:
            stale.append(node)
    if absent:
        said = "; ".join(f"{hostlist.compress(n)}: {why}" for why, n in sorted(absent.items()))
        example = config.kernel_log(next(iter(absent.values()))[0])
        return _v(
            name,
            Status.FAIL,
            f"kernel logs not read ({said}), e.g. {example}",
            "ship each node's kernel log (rsyslog kern.*) to the path logs.kernel_log names, as a regular file",
        )
    if stale:
        return _v(
            name,
            Status.WARN,
            f"{hostlist.compress(stale)}: kernel log not written in the last {max_age_s:g} s",
            "check that the nodes' kernel logs are still shipped (an idle node may simply be quiet)",
        )
    if not names:
        return _v(name, Status.SKIP, "Slurm lists no node")
    return _v(name, Status.PASS, f"{len(names)} nodes: each kernel log there, readable, written within {max_age_s:g} s")


# --- A log server: the streams, found by the site's labels as the detector asks for them ---------------


def log_server_verdicts(
    config: ClusterConfig,
    jobs: list[JobInfo],
    nodes: Iterable[NodeInfo],
    wanted: int | None,
    max_age_s: float,
    now_ns: int | None = None,
) -> list[Verdict]:
    """`logs.source: loki | victorialogs`: the server answers, a running job's output stream is
    found by its labels, and each node's kernel stream has a line within `max_age_s` (blocking:
    the client's requests, each bounded by `logs.server.timeout_s`)."""
    stream = open_stream(config.logs)
    assert stream is not None and config.logs.server is not None
    url = config.logs.server.url
    now_ns = time.time_ns() if now_ns is None else now_ns
    names = sorted(n.name for n in nodes if _selectable(n.name))
    job = pick_job(jobs, wanted)
    try:
        since = now_ns - int(max_age_s * 1e9)
        newest = {n: stream.range(Selector.kernel(n), since, now_ns, 1).lines for n in names}
        job_lines = None
        if job is not None:
            start = job.start_time or job.submit_time
            begin = int(start.timestamp()) * 1_000_000_000 if start else now_ns - int(max_age_s * 1e9)
            job_lines = stream.range(Selector.job(job.job_id), begin, now_ns, 1).lines
    except LogSourceError as exc:
        fix = f"make {url} answer Respawn (logs.server.url, logs.server.tenant, logs.server.timeout_s)"
        skip = f"needs the log server at {url}"
        return [
            _v("logs.server", Status.FAIL, exc.detail, fix),
            _v("logs.job_stream", Status.SKIP, skip),
            _v("logs.kernel_stream", Status.SKIP, skip),
        ]
    finally:
        stream.close()
    verdicts = [_v("logs.server", Status.PASS, f"{config.logs.source.value} at {url} answers")]
    verdicts.append(_job_stream_verdict(stream, job, job_lines, wanted))
    verdicts.append(_kernel_stream_verdict(stream, names, newest, max_age_s))
    return verdicts


def _selectable(node: str) -> bool:
    """A node name a kernel stream can be asked for by (the detector skips the others likewise)."""
    try:
        Selector.kernel(node)
    except ValueError:
        return False
    return True


def _job_stream_verdict(
    stream: LogStream, job: JobInfo | None, lines: list[Line] | None, wanted: int | None
) -> Verdict:
    name = "logs.job_stream"
    if job is None:
        if wanted is not None:
            return _v(name, Status.FAIL, f"Slurm knows no job {wanted}", "name a job squeue lists, with --job")
        return _v(name, Status.SKIP, "no running job to look for the stream of", "run it again with --job ID")
    labels = stream.describe(Selector.job(job.job_id))
    if lines:
        return _v(name, Status.PASS, f"job {job.job_id} ({job.state.value}): its lines are labelled {labels}")
    fix = (
        f"make the shipper label each job's output with {stream.labels.job_id}=<Slurm's job id>"
        " (set from SLURM_JOB_ID or the output file's path, never from what the job prints),"
        " or set logs.labels to the labels it uses"
    )
    status = Status.FAIL if wanted is not None or _enrolled(job) else Status.WARN
    return _v(name, status, f"job {job.job_id} ({job.state.value}): no line labelled {labels} since it started", fix)


def _kernel_stream_verdict(
    stream: LogStream, names: list[str], newest: Mapping[str, list[Line]], max_age_s: float
) -> Verdict:
    name = "logs.kernel_stream"
    if not names:
        return _v(name, Status.SKIP, "Slurm lists no node")
    quiet = [n for n in names if not newest[n]]
    example = stream.describe(Selector.kernel(quiet[0] if quiet else names[0]))
    if len(quiet) == len(names):
        return _v(
            name,
            Status.FAIL,
            f"no node has a kernel line labelled as Respawn asks ({example}) in the last {max_age_s:g} s",
            f"ship each node's kernel log (rsyslog kern.*) labelled {stream.labels.node}=<node name as Slurm"
            f" prints it> and {stream.labels.stream}={stream.labels.kernel_stream},"
            " or set logs.labels.node, .stream and .kernel_stream to the labels it uses",
        )
    if quiet:
        return _v(
            name,
            Status.WARN,
            f"{hostlist.compress(quiet)}: no kernel line in the last {max_age_s:g} s (e.g. {example})",
            "check that these nodes' kernel logs are still shipped (an idle node may simply be quiet)",
        )
    return _v(name, Status.PASS, f"{len(names)} nodes: each kernel stream has a line within {max_age_s:g} s")


# --- Prometheus: DCGM's series, as gpu_metrics.py queries them ---------------------------------------

_ALL_NAMES = (gpu_metrics.XID, *gpu_metrics.CLOCKS)


@dataclass
class PrometheusView:
    names: set[str]  # the DCGM metric names that have series
    xid_series: list[dict[str, str]]  # the label sets of the Xid gauge's series
    label: str


async def prometheus_view(settings: MetricsSettings, timeout: float) -> PrometheusView:
    """What Prometheus holds of the series Respawn queries (two instant queries)."""
    url = f"{settings.prometheus_url.rstrip('/')}/api/v1/query"
    async with httpx.AsyncClient(timeout=timeout) as client:

        async def query(promql: str) -> list[dict[str, Any]]:
            reply = await client.get(url, params={"query": promql})
            reply.raise_for_status()
            body = reply.json()
            if body.get("status") != "success":
                raise ValueError(f"query refused: {body.get('error', 'no reason given')}")
            return list(body.get("data", {}).get("result") or [])

        counted, xids = await asyncio.gather(
            query(f'count by (__name__) ({{__name__=~"{"|".join(_ALL_NAMES)}"}})'), query(gpu_metrics.XID)
        )
    return PrometheusView(
        names={s.get("metric", {}).get("__name__", "") for s in counted},
        xid_series=[dict(s.get("metric", {})) for s in xids],
        label=settings.node_label,
    )


def prometheus_verdicts(view: PrometheusView, nodes: list[str]) -> list[Verdict]:
    """The series' names and their node label, against Slurm's node names."""
    names = "prometheus.series"
    labels = "prometheus.labels"
    missing_clocks = [n for n in gpu_metrics.CLOCKS if n not in view.names]
    if gpu_metrics.XID not in view.names:
        return [
            _v(
                names,
                Status.FAIL,
                f"no {gpu_metrics.XID} series (found {', '.join(sorted(view.names)) or 'no DCGM series at all'}):"
                " Xids are not seen in metrics",
                "scrape NVIDIA's dcgm-exporter on every GPU node into this Prometheus, or point"
                " metrics.prometheus_url at the one that does",
            ),
            _v(labels, Status.SKIP, "no Xid series to read labels from"),
        ]
    series = (
        _v(
            names,
            Status.WARN,
            f"{gpu_metrics.XID} is there; no {', '.join(missing_clocks)}: a straggler's clocks cannot back it",
            "enable these fields in dcgm-exporter's counters file (default-counters.csv)",
        )
        if missing_clocks
        else _v(names, Status.PASS, f"{', '.join(_ALL_NAMES)}: every series Respawn queries is there")
    )
    return [series, label_verdict(view, nodes)]


def label_verdict(view: PrometheusView, nodes: list[str]) -> Verdict:
    name = "prometheus.labels"
    known = set(nodes)
    if not known:
        return _v(name, Status.SKIP, "needs Slurm's node names, which did not come")
    labelled = {s[view.label] for s in view.xid_series if view.label in s}
    matched = labelled & known
    fits = _labels_holding_nodes(view.xid_series, known)
    if matched:
        uncovered = sorted(known - matched)
        if uncovered:
            return _v(
                name,
                Status.WARN,
                f"{view.label} names {len(matched)} of {len(known)} nodes; no Xid series for {hostlist.compress(uncovered)}",
                "fine where those nodes have no GPUs; otherwise scrape dcgm-exporter there too",
            )
        return _v(name, Status.PASS, f"label {view.label} names every node ({len(matched)}) on the Xid series")
    other = sorted(label for label in fits if label != view.label)
    sample = ", ".join(sorted(labelled)[:3])
    held = f"holds {sample}, not Slurm's node names" if labelled else "is on no Xid series"
    if other:
        return _v(
            name,
            Status.FAIL,
            f"label {view.label} {held}; label {other[0]} holds them (e.g. {fits[other[0]]})",
            f"set metrics.node_label: {other[0]} in the configuration",
        )
    return _v(
        name,
        Status.FAIL,
        f"label {view.label} {held}, and no label of the Xid series holds a node name as Slurm spells it"
        f" (e.g. {_example_labels(view.xid_series)})",
        "relabel in Prometheus so one label holds the Slurm node name (e.g. a relabel_config taking the host"
        " part of instance into a Hostname label), then set metrics.node_label to it",
    )


def _labels_holding_nodes(series: list[dict[str, str]], nodes: set[str]) -> dict[str, str]:
    """Label -> a node name it holds, for every label whose value is a Slurm node name."""
    found: dict[str, str] = {}
    for labels in series:
        for label, value in labels.items():
            if value in nodes and label != "__name__":
                found.setdefault(label, value)
    return found


def _example_labels(series: list[dict[str, str]]) -> str:
    if not series:
        return "no series"
    return " ".join(f"{k}={v}" for k, v in sorted(series[0].items()) if k != "__name__")[:200]


# --- Temporal -----------------------------------------------------------------------------------------


def search_attribute_verdict(namespace: str, registered: Mapping[str, int]) -> Verdict:
    """Whether the search attributes the incidents upsert are registered, as keywords."""
    from temporalio.api.enums.v1 import IndexedValueType

    from respawn.workflows.search import CLUSTER, FAILURE_CLASS, JOB_ID, PHASE

    keyword = IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD
    wanted = [key.name for key in (JOB_ID, CLUSTER, FAILURE_CLASS, PHASE)]
    missing = [n for n in wanted if n not in registered]
    wrong = [n for n in wanted if n in registered and registered[n] != keyword]
    name = "temporal.search_attributes"
    if missing or wrong:
        said = "; ".join(
            part
            for part in (
                f"not registered: {', '.join(missing)}" if missing else "",
                f"not keywords: {', '.join(wrong)}" if wrong else "",
            )
            if part
        )
        create = " && ".join(
            f"temporal operator search-attribute create --namespace {namespace} --name {n} --type Keyword"
            for n in missing or wrong
        )
        return _v(name, Status.FAIL, f"namespace {namespace}: {said}: incidents fail to start", create)
    return _v(name, Status.PASS, f"{', '.join(wanted)} registered as keywords")


async def _temporal(config: ClusterConfig) -> list[Verdict]:
    from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
    from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
    from temporalio.service import RPCError, RPCStatusCode

    from respawn.services import connect_temporal

    namespace = config.temporal.namespace
    client = await connect_temporal(config)
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
    except RPCError as exc:
        if exc.status is not RPCStatusCode.NOT_FOUND:
            raise
        return [
            _v(
                "temporal.namespace",
                Status.FAIL,
                f"no namespace {namespace} at {config.temporal.address}",
                f"temporal operator namespace create --namespace {namespace} (or set temporal.namespace)",
            ),
            _v("temporal.search_attributes", Status.SKIP, "no namespace to look in"),
        ]
    answer = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace=namespace))
    return [
        _v("temporal.namespace", Status.PASS, f"namespace {namespace} at {config.temporal.address}"),
        search_attribute_verdict(namespace, dict(answer.custom_attributes)),
    ]


# --- The audit store ----------------------------------------------------------------------------------


def audit_verdict(location: Location) -> Verdict:
    """Whether the audit store can be written (a SQLite file: its folder takes a new file) and its
    schema reads (read-only: nothing changes, not even a migration)."""
    if isinstance(location, Path):
        path = location
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent  # Respawn creates the missing folders: the first one there must take them
        try:
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".respawn-check-"):
                pass
        except OSError as exc:
            return _v(
                "audit",
                Status.FAIL,
                f"{folder}: cannot create a file ({exc.strerror}): the trail (and SQLite's journal beside it) cannot be written",
                f"make {folder} writable by Respawn's user, or set audit_db elsewhere",
            )
        if not path.exists():
            return _v("audit", Status.PASS, f"{path} will be created at the first start ({folder} is writable)")
        if not stat.S_ISREG(path.stat().st_mode):
            return _v("audit", Status.FAIL, f"{path} is not a regular file", "set audit_db to a file's path")
        return _schema_verdict(location, f"; {folder} is writable")
    return _schema_verdict(location, f" ({describe(location)})")


def _schema_verdict(location: Location, where: str) -> Verdict:
    shown = describe(location)
    fix = (
        "set audit_db to a file of Respawn's own"
        if isinstance(location, Path)
        else "set audit_db to Respawn's database"
    )
    engine = read_only_engine(location)
    try:
        with engine.connect() as conn:
            inspector = sa.inspect(conn)
            columns = {c["name"] for c in inspector.get_columns("events")} if inspector.has_table("events") else set()
            wanted = set(schema.events.c.keys())
            if columns and wanted - columns:
                return _v(
                    "audit",
                    Status.FAIL,
                    f"{shown}: table events lacks {', '.join(sorted(wanted - columns))}: another program's, or older",
                    fix,
                )
            at = version(conn)
            if at is not None and at > schema.HEAD:
                return _v(
                    "audit",
                    Status.FAIL,
                    f"{shown}: schema {at} is a newer release's (this one knows {schema.HEAD})",
                    "",
                )
            if columns:
                for row in conn.execute(
                    sa.select(schema.events).order_by(schema.events.c.id.desc()).limit(1)
                ).mappings():
                    row_of(row)
            count = conn.execute(sa.select(sa.func.count()).select_from(schema.events)).scalar() if columns else 0
    except (sa.exc.SQLAlchemyError, ValueError) as exc:
        return _v("audit", Status.FAIL, f"{shown}: the trail cannot be read ({_reason(exc)})", fix)
    finally:
        engine.dispose()
    migrate = "" if at == schema.HEAD else f", schema {at or 'of an earlier release'} migrated at the first start"
    return _v("audit", Status.PASS, f"{shown}: schema reads, {count} events{migrate}{where}")


# --- Running them ---------------------------------------------------------------------------------------


@dataclass
class _SlurmView:
    jobs_what: str
    jobs_data: dict[str, Any]
    nodes_what: str
    nodes_data: dict[str, Any]
    jobs: list[JobInfo]
    nodes: list[NodeInfo]
    settings: dict[str, str]
    partitions: dict[str, dict[str, str]]
    extra_job: list[JobInfo] = field(default_factory=list)
    # The listing the detector reads each poll (squeue's text): its jobs, or why it cannot be read.
    listed: int = 0
    listing_error: str | None = None


async def _read_slurm(config: ClusterConfig, job: int | None) -> _SlurmView:
    from respawn.services import _transport

    slurm = Slurm(_transport(config), timeout=config.scheduler.command_timeout_s)
    try:
        jobs_what, jobs_data = await slurm.jobs_output()  # first: it tells the adapter the version
        (nodes_what, nodes_data), settings, partitions = await asyncio.gather(
            slurm.nodes_output(), slurm.config(), slurm.partitions()
        )
        jobs = [JobInfo(**f) for f in slurm_json.jobs(jobs_data, jobs_what)]
        nodes = [NodeInfo(**f) for f in slurm_json.nodes(nodes_data, nodes_what)]
        view = _SlurmView(jobs_what, jobs_data, nodes_what, nodes_data, jobs, nodes, settings, partitions)
        try:
            view.listed = len(await slurm.jobs())
        except SchedulerError as exc:
            view.listing_error = _reason(exc)
        if job is not None and all(j.job_id != job for j in jobs):
            try:
                view.extra_job.append(await slurm.job(job))
            except Exception:  # the output check says there is no such job
                pass
        return view
    finally:
        await slurm.transport.close()


async def _bounded(
    names: list[str], probe: Callable[[], Awaitable[list[Verdict]]], timeout: float, fix: str
) -> list[Verdict]:
    """The probe's verdicts within `timeout`; a failure to answer fails each of `names`."""
    try:
        return await asyncio.wait_for(probe(), timeout)
    except TimeoutError:
        return [_v(n, Status.FAIL, f"no answer within {timeout:g} s", fix) for n in names]
    except Exception as exc:  # whatever fails, the answer is "unreachable, because ..."
        return [_v(n, Status.FAIL, _reason(exc), fix) for n in names]


_SLURM_CHECKS = ["slurm.jobs", "slurm.nodes", "slurm.version", "slurm.comments", "slurm.requeue"]
_SLURM_NEEDERS = ["logs.job_output", "logs.kernel_log"]  # the files named by Slurm's jobs and nodes
_SERVER_NEEDERS = ["logs.server", "logs.job_stream", "logs.kernel_stream"]  # a log server's streams, likewise


async def run_checks(
    config: ClusterConfig,
    timeout: float = DEFAULT_TIMEOUT_S,
    job: int | None = None,
    kernel_log_age_s: float = DEFAULT_KERNEL_LOG_AGE_S,
) -> dict[str, Any]:
    """Every check, as `respawn check --json` prints it: `ok` is false when any failed."""
    reading = asyncio.create_task(asyncio.wait_for(_read_slurm(config, job), timeout))
    metrics = config.metrics

    async def slurm_checks() -> list[Verdict]:
        view = await reading
        return [
            jobs_verdict(view),
            output_verdict("slurm.nodes", view.nodes_what, "nodes", view.nodes_data),
            version_verdict(view.settings, view.jobs_data),
            comments_verdict(view.jobs_data, view.settings, _respawn_user(config)),
            requeue_verdict(view.settings, view.partitions, view.jobs),
        ]

    async def log_checks() -> list[Verdict]:
        server = config.logs.source is not LogSource.FILES
        try:
            view = await reading
        except Exception:  # the patterns can still be judged; the files need Slurm's jobs and nodes
            if server:
                return [_v(name, Status.SKIP, "needs Slurm's jobs and nodes") for name in _SERVER_NEEDERS]
            return [
                _v(name, Status.FAIL, error) if error else _v(name, Status.SKIP, "needs Slurm's jobs and nodes")
                for name, error in (
                    ("logs.job_output", _pattern_error(config.logs.job_output, "job_id", "logs.job_output")),
                    (
                        "logs.kernel_log",
                        config.logs.kernel_log and _pattern_error(config.logs.kernel_log, "node", "logs.kernel_log"),
                    ),
                )
            ]
        jobs = view.jobs + view.extra_job
        if server:
            return await asyncio.to_thread(log_server_verdicts, config, jobs, view.nodes, job, kernel_log_age_s)
        return await asyncio.to_thread(
            lambda: [
                job_output_verdict(config, jobs, view.jobs_data, job),
                kernel_log_verdict(config, view.nodes, kernel_log_age_s),
            ]
        )

    async def prometheus_checks() -> list[Verdict]:
        if metrics is None:
            why = "no metrics section: Xids are read from kernel logs only"
            return [_v("prometheus.series", Status.SKIP, why), _v("prometheus.labels", Status.SKIP, why)]
        found = await prometheus_view(metrics, timeout)
        try:
            nodes = [n.name for n in (await reading).nodes]
        except Exception:
            nodes = []
        return prometheus_verdicts(found, nodes)

    async def audit_checks() -> list[Verdict]:
        return [await asyncio.to_thread(audit_verdict, config.audit_db)]

    slurm_fix = f"make Slurm answer Respawn ({_scheduler(config)}): scheduler.* in the configuration"
    prometheus_fix = "" if metrics is None else f"make {metrics.prometheus_url} answer, or fix metrics.prometheus_url"
    groups = await asyncio.gather(
        _bounded(_SLURM_CHECKS, slurm_checks, timeout, slurm_fix),
        _bounded(
            _SLURM_NEEDERS if config.logs.source is LogSource.FILES else _SERVER_NEEDERS, log_checks, timeout * 2, ""
        ),
        _bounded(["prometheus.series", "prometheus.labels"], prometheus_checks, timeout * 2, prometheus_fix),
        _bounded(
            ["temporal.namespace", "temporal.search_attributes"],
            lambda: _temporal(config),
            timeout,
            f"make Temporal answer at {config.temporal.address} (temporal.address)",
        ),
        _bounded(["audit"], audit_checks, timeout, ""),
    )
    verdicts = [v for group in groups for v in group]
    return {
        "cluster": config.cluster,
        "ok": all(v.status is not Status.FAIL for v in verdicts),
        "checks": [asdict(v) | {"status": v.status.value} for v in verdicts],
    }


def version_verdict(settings: dict[str, str], jobs_data: dict[str, Any]) -> Verdict:
    """The JSON format is one Respawn reads (else slurm.jobs fails); a release it was not tested on warns."""
    version = slurm_json.version(jobs_data) or slurm_json.LEGACY
    release = settings.get("SLURM_VERSION", "") or slurm_json.release(jobs_data)
    untested = [w for w in config_warnings(settings, "root") if w.startswith("Slurm ")]
    if version not in slurm_json.READERS:
        return _v(
            "slurm.version",
            Status.FAIL,
            f"Slurm {release or '?'} prints JSON {version}, which Respawn has no reader for",
            "run a Slurm release Respawn reads (README, 'Supported Slurm')",
        )
    if untested:
        return _v("slurm.version", Status.WARN, untested[0], "see README, 'Supported Slurm'")
    return _v("slurm.version", Status.PASS, f"Slurm {release or '?'}, JSON {version}: a tested release")
