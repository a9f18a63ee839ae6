"""The detector process: one per cluster, beside the recovery workers."""

import asyncio

from respawn import metrics
from respawn.config import ClusterConfig
from respawn.detector import Detector
from respawn.services import build_services, connect_temporal
from workers.signals import stop_on_signals


async def run_detector(config: ClusterConfig, stop: asyncio.Event | None = None) -> None:
    stop = stop or stop_on_signals()
    services = build_services(config)
    metrics.expose(config.telemetry.detector, services)
    try:
        client = await connect_temporal(config)
        await Detector(services, client).run(stop)
    finally:
        await services.close()
