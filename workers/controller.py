"""The reference controller's process (`respawn controller`): applies the Advisor API's advice to Slurm."""

import asyncio
import os

import httpx

from respawn.advisor.controller import Controller
from respawn.config.cluster import ClusterConfig
from respawn.scheduler.slurm import Slurm
from respawn.scheduler.transport import LocalTransport


def controller_slurm(config: ClusterConfig) -> Slurm:
    """Slurm through local commands: a controller runs where scheduler credentials are."""
    env = dict(os.environ)
    if config.scheduler.slurm_conf is not None:
        env["SLURM_CONF"] = str(config.scheduler.slurm_conf)
    return Slurm(
        LocalTransport(env=env, bin_dir=config.scheduler.slurm_bin_dir), timeout=config.scheduler.command_timeout_s
    )


async def run_controller(
    config: ClusterConfig, server: str, token: str, interval_s: float, stop: asyncio.Event
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    slurm = controller_slurm(config)
    try:
        async with httpx.AsyncClient(base_url=server, headers=headers, timeout=10.0) as api:
            await Controller(slurm, api).run(stop, interval_s)
    finally:
        await slurm.transport.close()
