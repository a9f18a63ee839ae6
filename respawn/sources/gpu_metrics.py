"""GPU metrics through Prometheus: what DCGM says about a job's nodes.

DCGM-exporter's series (labelled `Hostname` and `gpu`; the node's label is
`metrics.node_label`, for sites whose relabelling keeps another) are read two ways:

- by the detector, `XidWatch`: a GPU's `DCGM_FI_DEV_XID_ERRORS` (the last Xid
  it raised) changing is news, like a fatal line in its node's kernel log.
  The gauge holds a code, not a count: the same Xid raised again leaves it
  unchanged, and DCGM-exporter publishes no time for it. A repeat is seen in
  the kernel log (one line per Xid), which is why that log is read as well;

- by evidence gathering, `GpuMetrics.corroborate`: the Xids that changed on the
  job's nodes during the attempt back a hardware attribution, and the clocks of
  the nodes a straggler finding names tell whether they are throttled.

Both write what they find as trusted lines (`respawn-metrics: Hostname=node2
gpu=0 DCGM_FI_DEV_XID_ERRORS=79 ...`) for the runbooks to match. Prometheus
corroborates, it is never a dependency: a query that fails or times out leaves
the evidence log-only, and the evidence says so.
"""

import asyncio
import logging
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from respawn.config.cluster import MetricsSettings
from respawn.wire.evidence import METRICS_PREFIX

log = logging.getLogger("respawn.sources.gpu_metrics")

XID = "DCGM_FI_DEV_XID_ERRORS"
THROTTLE = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
CLOCKS = (THROTTLE, "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_GPU_UTIL")
_UNITS = {"DCGM_FI_DEV_SM_CLOCK": " MHz", "DCGM_FI_DEV_GPU_TEMP": " C", "DCGM_FI_DEV_GPU_UTIL": " %"}
# NVML's clocks-throttle-reason bits, as DCGM reports them.
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
_WINDOW_MIN_S, _WINDOW_MAX_S = 60, 24 * 3600


class MetricsError(RuntimeError):
    """Prometheus did not answer usefully; the message says why, in one line."""


@dataclass(frozen=True, slots=True)
class Gpu:
    node: str
    gpu: str


class GpuMetrics:
    """Prometheus queries over DCGM-exporter's series. Blocking: call from a thread."""

    def __init__(self, settings: MetricsSettings) -> None:
        # Here, not at the top: the configuration imports this module for its
        # settings, and only the processes that query should load an HTTP stack.
        from prometheus_api_client import PrometheusConnect
        from urllib3.util.retry import Retry

        self._timeout = settings.timeout_s
        self._node_label = settings.node_label  # a label name (the settings' pattern): safe in PromQL
        # No retries: a caller that cannot wait gets an answer within the timeout.
        # read=False: a read timeout is raised as itself, not as a connection error.
        retry = Retry(total=0, read=False, raise_on_status=False)
        self._prom = PrometheusConnect(url=settings.prometheus_url, retry=retry, timeout=settings.timeout_s)

    def query(self, promql: str) -> list[tuple[Gpu, str, float]]:
        """(GPU, metric name, value) for each series of an instant query."""
        try:
            result = self._prom.custom_query(promql)
        except Exception as exc:  # requests, HTTP status and JSON errors alike: the source is down
            log.debug("prometheus query %r failed", promql, exc_info=True)
            raise MetricsError(_reason(exc, self._timeout)) from None
        samples = []
        for series in result or []:
            labels, (_, value) = series.get("metric", {}), series.get("value", (0, "nan"))
            if self._node_label in labels:
                samples.append(
                    (Gpu(labels[self._node_label], labels.get("gpu", "?")), labels.get("__name__", ""), float(value))
                )
        return samples

    def xids(self) -> dict[Gpu, int]:
        """The last Xid each GPU raised (0: none)."""
        return {gpu: int(value) for gpu, _, value in self.query(XID) if math.isfinite(value)}

    def corroborate(self, nodes: Iterable[str], since_s: float, slow_nodes: Iterable[str]) -> list[tuple[str, str]]:
        """(node, evidence line): Xids that changed on `nodes` in the last `since_s`,
        and the clocks of `slow_nodes`. Raises MetricsError."""
        nodes, slow = sorted(set(nodes)), sorted(set(slow_nodes))
        lines: list[tuple[str, str]] = []
        if nodes:
            window = int(min(max(since_s, _WINDOW_MIN_S), _WINDOW_MAX_S))
            selector = f'{XID}{{{self._node_label}=~"{_any_of(nodes)}"}}'
            changed = f"{selector} > 0 and changes({selector}[{window}s]) > 0"
            for gpu, _, value in sorted(self.query(changed), key=lambda s: (s[0].node, s[0].gpu)):
                lines.append((gpu.node, xid_line(gpu, int(value), f"changed within the last {window} s")))
        if slow:
            names = "|".join(CLOCKS)
            readings: dict[Gpu, dict[str, float]] = {}
            for gpu, name, value in self.query(f'{{__name__=~"{names}",{self._node_label}=~"{_any_of(slow)}"}}'):
                readings.setdefault(gpu, {})[name] = value
            for gpu, values in sorted(readings.items(), key=lambda r: (r[0].node, r[0].gpu)):
                lines.append((gpu.node, clocks_line(gpu, values)))
        return lines


def _reason(exc: Exception, timeout_s: float) -> str:
    """Why a query failed, in words of our own: the exception's text could read like
    a failure the runbooks know (`ConnectionError: ...` is a Python exception line)."""
    from prometheus_api_client.exceptions import PrometheusApiClientException
    from requests.exceptions import ConnectionError, Timeout

    if isinstance(exc, Timeout):
        return f"no answer within {timeout_s:g} s"
    if isinstance(exc, ConnectionError):
        return "could not connect"
    if isinstance(exc, PrometheusApiClientException):
        return "the query was refused"
    return "the answer could not be read"


def _any_of(nodes: list[str]) -> str:
    """A PromQL regex matching exactly these node names, inside a double-quoted string
    (whose own escapes need the regex's backslashes doubled)."""
    return "|".join(re.escape(n) for n in nodes).replace("\\", "\\\\")


def xid_line(gpu: Gpu, xid: int, how: str) -> str:
    return f"{METRICS_PREFIX}Hostname={gpu.node} gpu={gpu.gpu} {XID}={xid} ({how})"


def throttle_reasons(mask: int) -> list[str]:
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


def clocks_line(gpu: Gpu, values: Mapping[str, float]) -> str:
    """One GPU's clocks reading; the runbooks see throttling in the decoded reasons."""
    parts = []
    for name in CLOCKS:
        if name not in values or not math.isfinite(values[name]):
            continue
        value = int(values[name])
        if name == THROTTLE:
            parts.append(f"{name}={value} ({','.join(throttle_reasons(value)) or 'none'})")
        else:
            parts.append(f"{name}={value}{_UNITS.get(name, '')}")
    return f"{METRICS_PREFIX}Hostname={gpu.node} gpu={gpu.gpu} {' '.join(parts)}"


def unavailable_line(reason: str) -> str:
    """What the evidence says when Prometheus could not be asked: nothing here is from metrics."""
    return f"{METRICS_PREFIX}GPU metrics not available ({reason}); this evidence is from logs only"


@dataclass(frozen=True, slots=True)
class XidChange:
    gpu: Gpu
    line: str


def xid_changes(before: Mapping[Gpu, int], now: Mapping[Gpu, int]) -> list[XidChange]:
    """GPUs whose last Xid changed to a new, non-zero code. A GPU seen for the first
    time is history, not news: its value is only a baseline."""
    return [
        XidChange(gpu, xid_line(gpu, xid, f"was {before[gpu]}"))
        for gpu, xid in sorted(now.items(), key=lambda item: (item[0].node, item[0].gpu))
        if gpu in before and xid != before[gpu] and xid
    ]


class XidWatch:
    """The detector's reader of the Xid gauge, one query per interval, off the poll loop.

    A query runs in a thread while the detector polls on; each call hands over
    what the last finished query found. A failed query is logged once per
    outage and detection carries on from logs.
    """

    def __init__(self, metrics: GpuMetrics, interval_s: float) -> None:
        self._metrics, self._interval = metrics, interval_s
        self._known: dict[Gpu, int] = {}
        self._pending: asyncio.Task[dict[Gpu, int]] | None = None
        self._next = 0.0
        self._failing = False

    async def changes(self, now: float) -> list[XidChange]:
        """New Xids since the last call; `now` is the caller's monotonic clock."""
        found: list[XidChange] = []
        if self._pending is not None and self._pending.done():
            try:
                values = self._pending.result()
            except MetricsError as exc:
                if not self._failing:
                    log.warning("GPU metrics unavailable, Xids are read from logs only: %s", exc)
                self._failing = True
            else:
                if self._failing:
                    log.info("GPU metrics available again")
                self._failing = False
                found = xid_changes(self._known, values)
                # A GPU that vanished keeps its last value, so its return is no news.
                self._known |= values
            self._pending = None
        if self._pending is None and now >= self._next:
            self._next = now + self._interval
            self._pending = asyncio.create_task(asyncio.to_thread(self._metrics.xids))
        return found
