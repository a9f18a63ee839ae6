"""The console's routes: the page at /console and the JSON it polls under /console/api.

Reading needs a token with the read scope, overriding one with the write scope
(respawn/surfaces/server/auth.py). The page itself is static and carries no data, so it
is served without a token and asks for one. These routes are the page's own
API, not a contract: they stay out of the OpenAPI description (the Advisor API
is the public one).
"""

import logging
from importlib.resources import files
from typing import Annotated

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, Response, status
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from respawn.audit.cost import CostReport, parse_since
from respawn.scheduler.slurm import MAX_JOB_ID
from respawn.services import build_services
from respawn.surfaces.console.view import ConsoleView, IncidentRow, JobFilter, JobRow, Overview, Page, Timeline
from respawn.surfaces.override import OverrideError, send_override
from respawn.surfaces.server.auth import Caller, require_read, require_write
from respawn.wire.incident import Override, OverrideAction

log = logging.getLogger("respawn.surfaces.console")

router = APIRouter(prefix="/console", tags=["console"], include_in_schema=False)

_STATIC = files("respawn.surfaces.console") / "static"
_ASSETS = {"console.js": "text/javascript", "console.css": "text/css"}
# Job names, log lines and reasons are written by anyone: the page sets them as
# text, and this policy keeps anything else from running or loading.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self';"
    " img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

JobId = Annotated[int, Path(ge=1, le=MAX_JOB_ID)]
Limit = Annotated[int, Query(ge=1, le=500)]
Cursor = Annotated[int | None, Query(ge=0, description="next_cursor of the previous page")]


async def console_view(request: Request) -> ConsoleView:
    """The app's one ConsoleView, built on first use from the server's configuration
    (async: on the event loop, so two first requests cannot build two)."""
    state = request.app.state
    if getattr(state, "console_view", None) is None:
        services = build_services(state.config)
        state.console_view = ConsoleView(state.config, services.slurm, services.audit)
    return state.console_view


View = Annotated[ConsoleView, Depends(console_view)]


@router.get("")
def page() -> Response:
    return Response((_STATIC / "console.html").read_bytes(), media_type="text/html", headers=_HEADERS)


@router.get("/{name}")
def asset(name: str) -> Response:
    if name not in _ASSETS:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no such file")
    return Response((_STATIC / name).read_bytes(), media_type=_ASSETS[name], headers=_HEADERS)


@router.get("/api/overview", dependencies=[Depends(require_read)])
async def overview(view: View) -> Overview:
    return await view.overview()


@router.get("/api/jobs", dependencies=[Depends(require_read)])
async def jobs(
    view: View,
    state: Annotated[str, Query(max_length=200, description="Slurm states, comma-separated")] = "",
    enrolled: bool | None = None,
    environment: Annotated[str | None, Query(max_length=63)] = None,
    q: Annotated[str, Query(max_length=100, description="part of the job id or name")] = "",
    attention: bool = False,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> Page[JobRow]:
    where = JobFilter(
        state=[s.strip().upper() for s in state.split(",") if s.strip()],
        enrolled=enrolled,
        environment=environment or None,
        text=q.strip().lower(),
        attention=attention,
    )
    return await view.jobs(where, limit, cursor)


@router.get("/api/incidents", dependencies=[Depends(require_read)])
async def incidents(
    view: View,
    open: bool | None = None,
    job: Annotated[int | None, Query(ge=1, le=MAX_JOB_ID)] = None,
    limit: Limit = 20,
    cursor: Cursor = None,
) -> Page[IncidentRow]:
    return await view.incidents(open=open, job_id=job, limit=limit, cursor=cursor)


@router.get("/api/jobs/{job_id}/timeline", dependencies=[Depends(require_read)])
async def timeline(
    view: View,
    job_id: JobId,
    after: Annotated[int, Query(ge=0, description="the id of the last event already shown")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 500,
) -> Timeline:
    found = await view.timeline(job_id, after, limit)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"job {job_id}: neither Slurm nor the audit trail knows it")
    return found


@router.get("/api/cost", dependencies=[Depends(require_read)])
async def cost(
    view: View,
    since: Annotated[str, Query(max_length=16, description="how far back: 30m, 12h, 7d")] = "7d",
) -> CostReport:
    """Lost GPU-hours by part, ETTR, interruptions per 1,000 GPU-hours and MTBF per job size
    over the range (docs/cost.md): what `respawn report --json` prints."""
    try:
        window = parse_since(since)
    except ValueError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"since: {exc}") from None
    return await view.cost(window)


class OverrideRequest(BaseModel):
    # Bounds on what is read; the rules are Override's, checked below.
    model_config = ConfigDict(extra="forbid")
    action: OverrideAction
    reason: str = Field(max_length=2000)
    exclude: list[Annotated[str, Field(max_length=200)]] = Field(default=[], max_length=64)
    incident: str | None = Field(default=None, max_length=200)  # default: the job's newest open incident


class OverrideAnswer(BaseModel):
    job_id: int
    incident: str | None
    who: str
    answer: str  # the incident's own word on what it will do


@router.post("/api/jobs/{job_id}/override")
async def override(
    view: View, job_id: JobId, body: OverrideRequest, caller: Annotated[Caller, Depends(require_write)]
) -> OverrideAnswer:
    """The CLI's override path (`respawn override`), signed with the token's name."""
    try:
        # The same model as the CLI's: the same rules (exclusions only with a restart, node names, reason length).
        command = Override(action=body.action, reason=body.reason.strip(), who=caller.name, exclude=body.exclude)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "override"
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"{where}: {first['msg']}") from None
    if body.incident is not None:
        await view.refresh()
        if body.incident not in view.incidents_of(job_id):
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                f"incident: {body.incident[:100]!r} is not an incident of job {job_id}",
            )
    log.info(
        "override of job %s (%s) by %s: %s",
        job_id,
        body.incident or "its open incident",
        caller.name,
        command.action.value,
    )
    try:
        answer = await send_override(view.config, job_id, command, body.incident)
    except OverrideError as exc:
        log.warning("override of job %s by %s refused: %s", job_id, caller.name, exc)
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    return OverrideAnswer(job_id=job_id, incident=body.incident, who=caller.name, answer=str(answer))
