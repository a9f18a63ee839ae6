"""The server's FastAPI application: `create_app(config)`, run by `respawn serve`."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from respawn.advisor.advice import AdviceStore
from respawn.audit.trail import AuditTrail
from respawn.config.cluster import ClusterConfig
from respawn.surfaces import console, telemetry
from respawn.surfaces.server import advisor
from respawn.surfaces.server.auth import Tokens
from respawn.surfaces.server.guard import RequestGuard
from respawn.surfaces.server.ingest import Ingest


def create_app(config: ClusterConfig) -> FastAPI:
    ingest = Ingest(config)
    audit, advice = AuditTrail(config.audit_db), AdviceStore(config.audit_db)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        await ingest.close()
        audit.close()
        advice.close()

    app = FastAPI(
        title="Respawn",
        version="1",
        description=f"Respawn's server for cluster {config.cluster}: the Advisor API (docs/advisor-api.md).",
        lifespan=lifespan,
    )
    app.state.config = config
    app.state.tokens = Tokens(config.server.tokens)
    app.state.ingest = ingest
    app.state.audit, app.state.advice = audit, advice
    cost_gauges = telemetry.CostGauges(config)

    @app.get("/healthz", tags=["server"], summary="liveness: no token needed")
    def healthz() -> dict[str, str]:
        return {"status": "ok", "cluster": config.cluster}

    # ---- Routers: each feature includes its router here (Advisor API, Recovery Console, /metrics). ----
    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        """This process's own metrics (docs/metrics.md); no token: they hold no job ids."""
        cost_gauges.refresh()  # lost GPU-hours and ETTR, from the audit trail (at most once a minute)
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    app.include_router(advisor.router)
    app.include_router(console.router)  # the Recovery Console: /console (docs/console.md)
    # Outermost of ours: every token is checked, and every body bounded, before anything reads a body.
    app.add_middleware(RequestGuard, max_body_bytes=config.server.max_body_bytes)
    return app
