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

from respawn.audit.report import summarise
from respawn.config.cluster import ClusterConfig, SchedulerAccess
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
    detector_url = (
        None
        if detector is None
        else f"http://{'127.0.0.1' if detector.host == '0.0.0.0' else detector.host}:{detector.port}/metrics"
    )
    prometheus_url = None if config.metrics is None else config.metrics.prometheus_url.rstrip("/")
    warnings = asyncio.create_task(_slurm_warnings(config, timeout))
    checks = await asyncio.gather(
        _bounded("temporal", True, config.temporal.address, lambda _: _temporal(config), timeout),
        _bounded("slurm", True, _scheduler(config), lambda _: _slurm(config), timeout),
        _bounded("prometheus", False, prometheus_url, lambda url: _prometheus(url, timeout), timeout),
        _bounded("detector", True, detector_url, lambda url: _detector_lag(url, timeout), timeout),
    )
    return {
        "cluster": config.cluster,
        "ok": all(c.ok is not False for c in checks if c.required),
        "checks": [asdict(c) for c in checks],
        "detector_lag_s": checks[-1].seconds,
        # The cluster's settings that would break recovery (none: nothing to say, or Slurm unreachable).
        "warnings": await warnings,
        "open_incidents": [i.row() for i in summarise(config).incidents.values() if i.is_open],
    }


async def _bounded(
    name: str,
    required: bool,
    target: str | None,
    probe: Callable[[str], Awaitable[tuple[str, float | None]]],
    timeout: float,
) -> Check:
    """Probe `target` (None: not configured) within `timeout`; a failure is its answer."""
    if target is None:
        return Check(name, None, required, "", "not configured")
    try:
        detail, seconds = await asyncio.wait_for(probe(target), timeout)
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
    if config.scheduler.transport is SchedulerAccess.SSH and ssh is not None:
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


# Slurm releases Respawn is tested against (README, "Supported Slurm").
TESTED_SLURM = ("22.05.8", "24.11.5")
# The detector must see an ended job before the controller forgets it.
MIN_JOB_AGE_S = 60
DEFAULT_CRED_EXPIRE_S = 120


async def _slurm_warnings(config: ClusterConfig, timeout: float) -> list[str]:
    """Warnings from `scontrol show config`; none when Slurm does not answer (its check says so)."""
    try:
        services = build_services(config)
        try:
            settings = await asyncio.wait_for(services.slurm.config(), timeout)
        finally:
            await services.close()
    except Exception:  # unreachable: the slurm check reports it
        return []
    return config_warnings(settings, _respawn_user(config))


def _respawn_user(config: ClusterConfig) -> str:
    ssh = config.scheduler.ssh
    if config.scheduler.transport is SchedulerAccess.SSH and ssh is not None:
        return ssh.username
    import getpass

    return getpass.getuser()


def has_epilog(settings: dict[str, str]) -> bool:
    """Whether slurmd runs an Epilog: `Epilog = PATH` (22.05; `(null)` when unset) or `Epilog[N] = PATH`
    (23.11+, one key per script, none when unset). Without one, slurmd answers a kill for a job with
    no steps left on it ESLURMD_KILL_JOB_ALREADY_COMPLETE (slurmd/req.c, _rpc_terminate_job), and
    slurmctld's agent applies that answer only once every node of its fan-out has answered or timed
    out (slurmctld/agent.c): with a node lost, MessageTimeout later. A SPANK plugin's epilog has the
    same effect, but `scontrol show config` does not show it."""
    return any(
        (key == "Epilog" or re.fullmatch(r"Epilog\[\d+\]", key)) and value not in ("", "(null)")
        for key, value in settings.items()
    )


def config_warnings(settings: dict[str, str], user: str) -> list[str]:
    """What in the cluster's configuration would break recovery, one sentence each."""
    warnings = []
    version = settings.get("SLURM_VERSION", "")
    if version and version not in TESTED_SLURM:
        warnings.append(
            f"Slurm {version} is not a tested release ({', '.join(TESTED_SLURM)}): "
            "an unknown JSON format is refused, not guessed"
        )
    if settings.get("JobRequeue", "1").strip() == "0":
        warnings.append(
            "JobRequeue=0: only jobs submitted with --requeue can be requeued; Respawn cannot restart the others"
        )
    age = re.match(r"\d+", settings.get("MinJobAge", ""))
    if age is not None and int(age[0]) < MIN_JOB_AGE_S:
        warnings.append(
            f"MinJobAge={age[0]} s: an ended job may be forgotten before the detector sees it "
            f"end (want at least {MIN_JOB_AGE_S} s)"
        )
    expire = re.search(r"cred_expire=(\d+)", settings.get("AuthInfo", ""))
    seconds = int(expire[1]) if expire else DEFAULT_CRED_EXPIRE_S
    if seconds > 300:
        warnings.append(
            f"cred_expire={seconds} s: a job requeued without Respawn releasing it (observe mode, "
            f"Slurm's own requeue) waits {seconds + 1} s before it may start"
        )
    if not has_epilog(settings):
        timeout = re.match(r"\d+", settings.get("MessageTimeout", ""))
        warnings.append(
            f"no Epilog: a job on a lost node is requeued MessageTimeout ({timeout[0] if timeout else 10} s) late: a node whose "
            "steps have already ended answers the kill 'already complete', which slurmctld applies only once "
            "its message to the lost node has failed; any Epilog (even /bin/true) avoids it"
        )
    private = {p.strip().lower() for p in settings.get("PrivateData", "").split(",")}
    slurm_user = settings.get("SlurmUser", "").split("(")[0]
    if private & {"jobs", "all"} and user not in ("root", slurm_user):
        warnings.append(
            f"PrivateData={settings['PrivateData']}: Respawn's user {user} sees only its own jobs "
            "and their comments; run it as root or SlurmUser, or make it an operator"
        )
    return warnings
