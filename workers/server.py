"""The HTTP server's process (`respawn serve`): the Advisor API, external detections, the console."""

import os

import uvicorn

from respawn.config.cluster import ClusterConfig
from respawn.surfaces.server.app import create_app


def run_server(config: ClusterConfig) -> None:
    uvicorn.run(
        create_app(config),
        host=config.server.host,
        port=config.server.port,
        log_level=os.environ.get("RESPAWN_LOG", "INFO").lower(),
    )
