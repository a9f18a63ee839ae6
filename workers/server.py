"""The HTTP server's process (`respawn serve`): the Advisor API, external detections, the console."""

import logging
import os

import uvicorn

from respawn.config.cluster import ClusterConfig
from respawn.surfaces.server.app import create_app


class QuietScrapes(logging.Filter):
    """Leaves out of the access log a successful scrape of /metrics: Prometheus's, every few
    seconds, was most of the sandbox's server log (1.6 MB) and buried the calls that matter.
    A failed scrape is still logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        # uvicorn's access record: (client, method, path with query, HTTP version, status)
        args = record.args
        if not (isinstance(args, tuple) and len(args) == 5):
            return True
        return not (args[1] == "GET" and args[2] == "/metrics" and args[4] == 200)


def run_server(config: ClusterConfig) -> None:
    server = uvicorn.Config(
        create_app(config),
        host=config.server.host,
        port=config.server.port,
        log_level=os.environ.get("RESPAWN_LOG", "INFO").lower(),
    )
    logging.getLogger("uvicorn.access").addFilter(QuietScrapes())  # after uvicorn.Config set its logging up
    uvicorn.Server(server).run()
