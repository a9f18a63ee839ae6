"""The Advisor API (docs/advisor-api.md): advice for controllers, their
reconciliation reports, audit-trail queries, and detections from outside."""

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, HTTPException, Path, Query, Request, status
from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from respawn.advisor.advice import Advice, AdviceError, AdviceStore, Status
from respawn.audit.trail import AuditRow, AuditTrail, EventType
from respawn.config.cluster import ClusterConfig
from respawn.scheduler.slurm import MAX_JOB_ID
from respawn.surfaces.server.auth import Caller, require_read, require_write
from respawn.surfaces.server.deps import advice_store, audit_trail, cluster_config
from respawn.surfaces.server.ingest import Accepted, DetectionReport, IngestError

_SQL_INT = 2**62  # every number that reaches SQLite stays inside its 64-bit integers


class Problem(BaseModel):
    detail: str


def _problems(*codes: int) -> dict:
    # 400: a body that is not JSON at all; 422: JSON that does not hold up.
    return {code: {"model": Problem} for code in codes}


router = APIRouter(prefix="/api/v1", responses=_problems(401, 403, 413))  # 413: respawn/surfaces/server/guard.py

JobId = Annotated[int, Path(ge=1, le=MAX_JOB_ID, description="the Slurm job id")]


def _utc(at: datetime | None) -> datetime | None:
    if at is None:
        return None
    try:
        return at.astimezone(UTC)
    except (OverflowError, ValueError):
        raise ValueError("a time outside the representable range") from None


Moment = Annotated[datetime | None, AfterValidator(_utc)]


class AdvicePage(BaseModel):
    advice: list[Advice]
    next_cursor: int | None = Field(description="pass as `after_job` for the next page; null: this was the last")


class StatusReport(BaseModel):
    model_config = ConfigDict(extra="forbid")
    status: Literal["pending", "converged", "abandoned"]
    detail: str = Field(default="", max_length=1000, description="what was done, or why it was given up")


class AuditPage(BaseModel):
    events: list[AuditRow]
    next_cursor: int | None = Field(description="pass as `after` for the next page; null: this was the last")


@router.get("/advice", response_model=AdvicePage, tags=["advice"], summary="every job's current advice")
def list_advice(
    store: Annotated[AdviceStore, Depends(advice_store)],
    config: Annotated[ClusterConfig, Depends(cluster_config)],
    _: Annotated[Caller, Depends(require_read)],
    open: Annotated[bool, Query(description="only advice no controller has converged or abandoned")] = False,
    after_job: Annotated[int, Query(ge=0, le=MAX_JOB_ID, description="cursor: jobs after this id")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> AdvicePage:
    items = store.listing(config.cluster, open_only=open, after_job=after_job, limit=limit)
    return AdvicePage(advice=items, next_cursor=items[-1].job_id if len(items) == limit else None)


@router.get(
    "/jobs/{job_id}/advice",
    response_model=Advice,
    tags=["advice"],
    responses=_problems(404),
    summary="a job's current advice (its highest generation)",
)
def job_advice(
    job_id: JobId,
    store: Annotated[AdviceStore, Depends(advice_store)],
    config: Annotated[ClusterConfig, Depends(cluster_config)],
    _: Annotated[Caller, Depends(require_read)],
) -> Advice:
    advice = store.current(config.cluster, job_id)
    if advice is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no advice for job {job_id}")
    return advice


@router.post(
    "/jobs/{job_id}/advice/{generation}/status",
    response_model=Advice,
    tags=["advice"],
    responses=_problems(400, 404, 409),
    summary="report reconciliation of one generation",
)
def report_status(
    job_id: JobId,
    generation: Annotated[int, Path(ge=1, le=_SQL_INT)],
    report: StatusReport,
    store: Annotated[AdviceStore, Depends(advice_store)],
    config: Annotated[ClusterConfig, Depends(cluster_config)],
    caller: Annotated[Caller, Depends(require_write)],
) -> Advice:
    """pending while working on it; converged once Slurm is in the desired state; abandoned when it
    cannot be done. Only the job's current generation is accepted (409 for a stale one), and a
    final status stays final."""
    try:
        return store.report(config.cluster, job_id, generation, Status(report.status), report.detail, caller.name)
    except AdviceError as exc:
        raise HTTPException(exc.status_code, str(exc)) from None


@router.get("/audit", response_model=AuditPage, tags=["audit"], summary="audit-trail events, oldest first")
def audit_events(
    audit: Annotated[AuditTrail, Depends(audit_trail)],
    config: Annotated[ClusterConfig, Depends(cluster_config)],
    _: Annotated[Caller, Depends(require_read)],
    job_id: Annotated[int | None, Query(ge=1, le=MAX_JOB_ID)] = None,
    event_type: Annotated[list[EventType], Query(description="repeatable")] = [],  # noqa: B006 (FastAPI copies it)
    since: Annotated[Moment, Query(description="at or after this time")] = None,
    until: Annotated[Moment, Query(description="before this time")] = None,
    after: Annotated[int, Query(ge=0, le=_SQL_INT, description="cursor: events after this id")] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> AuditPage:
    rows = audit.query(
        cluster=config.cluster,
        job_id=job_id,
        event_types=event_type,
        since=since,
        until=until,
        after_id=after,
        limit=limit,
    )
    return AuditPage(events=rows, next_cursor=rows[-1].id if len(rows) == limit else None)


@router.post(
    "/detections",
    response_model=Accepted,
    status_code=status.HTTP_202_ACCEPTED,
    tags=["detections"],
    responses=_problems(400, 404, 409, 503),
    summary="a detection from an external detector",
)
async def post_detection(
    report: DetectionReport,
    request: Request,
    caller: Annotated[Caller, Depends(require_write)],
) -> Accepted:
    """Starts the job attempt's incident, or joins the one already open, exactly as the detector's
    own detections do. 404: no such job; 409: not enrolled, a stale attempt, or the incident has
    closed; 422: a report that does not hold up (a node not the job's, a line no runbook knows)."""
    try:
        return await request.app.state.ingest.deliver(report, caller.name)
    except IngestError as exc:
        raise HTTPException(exc.status_code, exc.detail) from None
