"""Everything a Respawn process talks to, built once from the cluster configuration."""

import asyncio
import logging
import os
import re
from dataclasses import dataclass

from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter

from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.audit.trail import AuditTrail
from respawn.config.cluster import ClusterConfig, SchedulerAccess
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import LocalTransport, SshTransport
from respawn.sources.progress import ProgressPatterns, ProgressReader

log = logging.getLogger(__name__)

_RETRY_FIRST_S = 1.0  # a daemon's first wait for Temporal, doubled at each try
_RETRY_MAX_S = 30.0
# The SDK's connect error is its Rust transport's debug print; the operating system's words are in it.
_OS_REASON = re.compile(r'message: "([^"]+)"')


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


async def wait_for_temporal(config: ClusterConfig, stop: asyncio.Event) -> Client | None:
    """A daemon's connection to Temporal, tried until it answers (None: told to stop first).

    The worker and the detector may start before the server (a host's boot, pods in any order):
    they wait, one line each try, with their metrics already served, instead of exiting with the
    SDK's traceback into a restart loop whose back-off (Kubernetes': up to 5 min) outlasts the
    server's own start. Commands run by hand use connect_temporal and fail at once."""
    delay = _RETRY_FIRST_S
    while not stop.is_set():
        try:
            return await connect_temporal(config)
        except RuntimeError as exc:  # the SDK's error for a server that does not answer
            log.warning(
                "cannot reach Temporal at %s (%s); trying again in %.0f s", config.temporal.address, why(exc), delay
            )
        try:
            await asyncio.wait_for(stop.wait(), delay)
        except TimeoutError:
            delay = min(2 * delay, _RETRY_MAX_S)
    return None


def why(exc: BaseException) -> str:
    """Why Temporal could not be reached, in one short phrase: "Connection refused", not the
    transport's nested debug print of it."""
    message = str(getattr(exc, "message", exc))
    found = _OS_REASON.search(message)
    return found.group(1) if found else message
