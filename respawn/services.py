"""Everything a Respawn process talks to, built once from the cluster configuration."""

import asyncio
import logging
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from sqlalchemy.exc import OperationalError
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.service import RPCError, RPCStatusCode

from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.audit.trail import AuditTrail
from respawn.config.cluster import ClusterConfig, ConfigError, SchedulerAccess
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import LocalTransport, SshTransport
from respawn.sources.progress import ProgressPatterns, ProgressReader
from respawn.store.engine import describe

log = logging.getLogger(__name__)
T = TypeVar("T")

_RETRY_FIRST_S = 1.0  # a daemon's first wait for a server that does not answer, doubled at each try
_RETRY_MAX_S = 30.0
# The SDK's connect error is its Rust transport's debug print; the operating system's words are in it.
_OS_REASON = re.compile(r'message: "([^"]+)"')
# What a server says while it starts or is overloaded: worth waiting for. Any other refusal is the settings'.
_TRANSIENT = {
    RPCStatusCode.UNAVAILABLE,
    RPCStatusCode.DEADLINE_EXCEEDED,
    RPCStatusCode.RESOURCE_EXHAUSTED,
    RPCStatusCode.ABORTED,
    RPCStatusCode.INTERNAL,
    RPCStatusCode.UNKNOWN,
}


@dataclass
class Services:
    config: ClusterConfig
    slurm: Slurm
    audit: AuditTrail
    catalogue: Catalogue
    matcher: Matcher
    progress: ProgressReader

    async def close(self) -> None:
        await self.slurm.transport.close()
        self.audit.close()


def build_services(config: ClusterConfig) -> Services:
    catalogue = Catalogue.load(config.runbooks)
    return Services(
        config=config,
        slurm=Slurm(
            _transport(config),
            timeout=config.scheduler.command_timeout_s,
            concurrency=config.scheduler.max_concurrent_commands,
        ),
        audit=AuditTrail(config.audit_db),
        catalogue=catalogue,
        matcher=Matcher.from_catalogue(catalogue),
        progress=ProgressReader(ProgressPatterns.load(config.runbooks)),
    )


def _transport(config: ClusterConfig) -> LocalTransport | SshTransport:
    settings = config.scheduler
    if settings.transport is SchedulerAccess.SSH:
        assert settings.ssh is not None  # the config validator guarantees it
        return SshTransport(
            host=settings.ssh.host,
            port=settings.ssh.port,
            username=settings.ssh.username,
            client_keys=[settings.ssh.client_key],
            known_hosts=settings.ssh.known_hosts,
        )
    env = dict(os.environ)
    if settings.slurm_conf is not None:
        env["SLURM_CONF"] = str(settings.slurm_conf)
    return LocalTransport(env=env, bin_dir=settings.slurm_bin_dir)


async def connect_temporal(config: ClusterConfig) -> Client:
    return await Client.connect(
        config.temporal.address,
        namespace=config.temporal.namespace,
        data_converter=pydantic_data_converter,
    )


async def wait_for_services(config: ClusterConfig, stop: asyncio.Event) -> Services | None:
    """A daemon's services, built once the audit store answers (None: told to stop first). A
    SQLite file has no server to wait for: a path it cannot open is a mistake, shown at once."""
    if isinstance(config.audit_db, Path):
        try:
            return build_services(config)
        except (OSError, OperationalError) as exc:
            raise ConfigError(f"audit_db: cannot open {config.audit_db}: {why(exc)}") from None
    where = f"the audit store at {describe(config.audit_db)}"
    return await _until_it_answers(where, lambda: asyncio.to_thread(build_services, config), OperationalError, stop)


async def wait_for_temporal(config: ClusterConfig, stop: asyncio.Event) -> Client | None:
    """A daemon's connection to Temporal, tried until it answers (None: told to stop first).
    RuntimeError: the SDK's error for a server that does not answer; RPCError: one that cannot
    answer yet (starting, its database not up, overloaded)."""
    where = f"Temporal at {config.temporal.address}"
    return await _until_it_answers(where, lambda: _namespace_client(config), (RuntimeError, RPCError), stop)


async def _namespace_client(config: ClusterConfig) -> Client:
    """A client whose namespace exists. A namespace that does not is a configuration mistake, said
    in one line (exit status 2: the units do not restart for it), not a worker's traceback at its
    validation or a detector that starts and fails at its first delivery."""
    client = await connect_temporal(config)
    namespace = config.temporal.namespace
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
    except RPCError as exc:
        if exc.status in _TRANSIENT:
            raise  # waited for
        if exc.status is RPCStatusCode.NOT_FOUND:
            raise ConfigError(
                f"temporal.namespace: no namespace {namespace!r} at {config.temporal.address} "
                f"(temporal operator namespace create --namespace {namespace}, or set temporal.namespace)"
            ) from None
        # Refused (permission, authentication, an invalid request): the settings', not the server's.
        raise ConfigError(f"temporal: {config.temporal.address} refused: {exc.status.name}: {exc.message}") from None
    return client


async def _until_it_answers(
    what: str,
    attempt: Callable[[], Awaitable[T]],
    unreachable: type[Exception] | tuple[type[Exception], ...],
    stop: asyncio.Event,
) -> T | None:
    """`attempt()` until it does not fail with `unreachable`, 1 s apart doubling to 30 s.

    The worker and the detector may start before Temporal or PostgreSQL (a host's boot, pods in
    any order, a maintenance): they wait, one line each try, instead of exiting with a traceback
    into a restart loop that gives up (the systemd units': 10 restarts in 5 min) or backs off
    longer than the server takes (Kubernetes': up to 5 min). Commands run by hand fail at once."""
    delay = _RETRY_FIRST_S
    while not stop.is_set():
        try:
            return await attempt()
        except unreachable as exc:
            log.warning("cannot reach %s (%s); trying again in %.0f s", what, why(exc), delay)
        try:
            await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            delay = min(2 * delay, _RETRY_MAX_S)
    return None


def why(exc: BaseException) -> str:
    """Why a server could not be reached, in one short phrase ("Connection refused"), not the
    Temporal transport's nested debug print of it or the database driver's paragraph."""
    message = str(getattr(exc, "orig", None) or getattr(exc, "message", exc)).strip()
    found = _OS_REASON.search(message)
    if found:
        return found.group(1)
    return message.splitlines()[0] if message else type(exc).__name__
