"""Everything a Respawn process talks to, built once from the cluster configuration."""

import os
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
