"""The detector process: one per cluster, beside the recovery workers."""

import asyncio

from respawn.config.cluster import ClusterConfig
from respawn.detection.detector import Detector
from respawn.services import wait_for_services, wait_for_temporal
from respawn.surfaces import telemetry
from respawn.workers.signals import stop_on_signals


async def run_detector(config: ClusterConfig, stop: asyncio.Event | None = None) -> None:
    stop = stop or stop_on_signals()
    # Served while the servers are waited for: a liveness probe sees the process alive.
    telemetry.expose(config.telemetry.detector)
    services = await wait_for_services(config, stop)
    if services is None:
        return
    telemetry.count_scheduler_errors(services)
    try:
        client = await wait_for_temporal(config, stop)
        if client is not None:
            await Detector(services, client).run(stop)
    finally:
        await services.close()
