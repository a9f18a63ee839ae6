"""`respawn status`: whether what recovery depends on answers, and which incidents are open.

Every check runs at once, each bounded by the same short timeout, so the
command answers within about that time whatever is down. Temporal and Slurm
are required (without them nothing is recovered), and so is the detector when
its metrics address is configured (without it nothing is detected);
Prometheus is not: detection falls back to the logs without it.
"""

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest

from respawn.config import ClusterConfig, Transport
from respawn.report import summarise
from respawn.services import build_services, connect_temporal

DEFAULT_TIMEOUT_S = 3.0
_LAG = "respawn_detector_lag_seconds"


@dataclass
class Check:
    name: str
    ok: bool | None  # None: not configured, nothing to check
    required: bool
    target: str  # what was asked: an address, a URL
    detail: str
    seconds: float | None = None  # what it measured, where it measures something: the detector's lag


async def report(config: ClusterConfig, timeout: float = DEFAULT_TIMEOUT_S) -> dict:
    """Every check, the detector's lag and the open incidents, as `respawn status --json` prints them."""
    detector = config.telemetry.detector
    detector_url = None if detector is None else \
        f"http://{'127.0.0.1' if detector.host == '0.0.0.0' else detector.host}:{detector.port}/metrics"
    prometheus_url = None if config.metrics is None else config.metrics.prometheus_url.rstrip("/")
    checks = await asyncio.gather(
        _bounded("temporal", True, config.temporal.address, lambda: _temporal(config), timeout),
        _bounded("slurm", True, _scheduler(config), lambda: _slurm(config), timeout),
        _bounded("prometheus", False, prometheus_url, lambda: _prometheus(prometheus_url, timeout), timeout),
        _bounded("detector", True, detector_url, lambda: _detector_lag(detector_url, timeout), timeout),
    )
    return {
        "cluster": config.cluster,
        "ok": all(c.ok is not False for c in checks if c.required),
        "checks": [asdict(c) for c in checks],
        "detector_lag_s": checks[-1].seconds,
        "open_incidents": [i.row() for i in summarise(config).incidents.values() if i.is_open],
    }


async def _bounded(name: str, required: bool, target: str | None,
                   probe: Callable[[], Awaitable[tuple[str, float | None]]], timeout: float) -> Check:
    """Probe `target` (None: not configured) within `timeout`; a failure is its answer."""
    if target is None:
        return Check(name, None, required, "", "not configured")
    try:
        detail, seconds = await asyncio.wait_for(probe(), timeout)
        return Check(name, True, required, target, detail, seconds)
    except TimeoutError:
        return Check(name, False, required, target, f"no answer within {timeout:g} s")
    except Exception as exc:  # whatever fails, the answer is "unreachable, because ..."
        return Check(name, False, required, target, _reason(exc))


def _reason(exc: Exception) -> str:
    text = " ".join(str(getattr(exc, "message", exc) or type(exc).__name__).split())
    # The Temporal client's connection errors wrap the OS's reason deep inside.
    wrapped = re.search(r'message: "([^"]+)"', text)
    return wrapped.group(1) if wrapped else text[:300]


def _scheduler(config: ClusterConfig) -> str:
    ssh = config.scheduler.ssh
    if config.scheduler.transport is Transport.SSH and ssh is not None:
        return f"ssh {ssh.username}@{ssh.host}:{ssh.port}"
    return f"{config.scheduler.transport.value} commands"


async def _temporal(config: ClusterConfig) -> tuple[str, None]:
    client = await connect_temporal(config)
    await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=config.temporal.namespace))
    return f"namespace {config.temporal.namespace}", None


async def _slurm(config: ClusterConfig) -> tuple[str, None]:
    services = build_services(config)
    try:
        nodes = await services.slurm.nodes()
    finally:
        await services.close()
    down = [n.name for n in nodes if n.state.lower().startswith("down")]
    return f"{len(nodes)} nodes" + (f", down: {','.join(down)}" if down else ""), None


async def _prometheus(url: str, timeout: float) -> tuple[str, None]:
    async with httpx.AsyncClient(timeout=timeout) as client:
        reply = await client.get(f"{url}/-/ready")
    reply.raise_for_status()
    return "ready", None


async def _detector_lag(url: str, timeout: float) -> tuple[str, float]:
    """The detector's lag behind the logs, from its own metrics."""
    async with httpx.AsyncClient(timeout=timeout) as client:
        reply = await client.get(url)
    reply.raise_for_status()
    for family in text_string_to_metric_families(reply.text):
        for sample in family.samples:
            if sample.name == _LAG:
                return f"{sample.value:.1f} s behind the logs", round(sample.value, 3)
    raise ValueError(f"no {_LAG} there")
