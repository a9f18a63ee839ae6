"""Advice for a cluster's own controller: the `advisor` scheduler transport.

Where Respawn may not touch the scheduler, an incident publishes what it wants
done with the job (restart with these exclusions, stop, release) as a piece of
advice, and a controller (`respawn controller`, or the cluster's own) carries
it out and reports back. Each new piece of advice for a job gets the next
generation number; a controller reports on the generation it applied, and a
report on one that is no longer the job's current advice is refused, so a slow
controller never confirms something that was superseded.

The advice lives beside the audit trail (the same SQLite file or PostgreSQL
database, respawn/store), so the worker that publishes it and the server that
hands it out agree across processes and hosts.
"""

from contextlib import AbstractContextManager
from datetime import UTC, datetime
from enum import StrEnum

import sqlalchemy as sa
from pydantic import BaseModel, Field
from sqlalchemy.engine import Connection

from respawn.store.engine import IMMEDIATE, Location, open_engine, serialise
from respawn.store.schema import advice


class Desired(StrEnum):
    RESTART = "restart"  # requeue the attempt held, set the exclusions, release it
    STOP = "stop"  # recovery is futile: the job must not run again (cancel what is left of it)
    RELEASE = "release"  # let the job go on under normal scheduling, unchanged


class Status(StrEnum):
    PUBLISHED = "published"  # no controller has reported on it yet
    PENDING = "pending"  # a controller is working on it
    CONVERGED = "converged"  # the scheduler is in the desired state
    ABANDONED = "abandoned"  # a controller gave up on it (the detail says why)


TERMINAL = {Status.CONVERGED, Status.ABANDONED}


class AdviceRequest(BaseModel):
    """What an incident wants done with its job; published once per incident."""

    incident_id: str
    cluster: str
    job_id: int
    attempt: int  # the attempt that failed: a requeue past it has happened
    desired: Desired
    exclude: list[str] = Field(default_factory=list)  # every node the job must avoid, not only new ones
    drain: list[str] = Field(default_factory=list)  # nodes to take out of the pool (node-level evidence backs it)
    reason: str = ""


class Advice(AdviceRequest):
    generation: int  # rises with each new piece of advice for the job
    published_at: datetime
    status: Status = Status.PUBLISHED
    detail: str = ""  # the controller's word with its last report
    controller: str | None = None  # who reported last (the token's name)
    status_at: datetime | None = None


class AdviceRef(BaseModel):
    """One generation of one job's advice, and how long after its publication to wait for a controller."""

    incident_id: str
    cluster: str
    job_id: int
    attempt: int
    generation: int
    timeout_s: float


class Outcome(BaseModel):
    """How a piece of advice ended for the incident that published it."""

    generation: int
    converged: bool
    detail: str  # the controller's word, or why there is none


class AdviceError(Exception):
    """A report the store refuses; `status_code` is what the API answers."""

    status_code = 409


class UnknownAdvice(AdviceError):
    status_code = 404


class StaleGeneration(AdviceError):
    pass


class AlreadyFinal(AdviceError):
    pass


class AdviceStore:
    """The advice in the store `audit_db` names, beside the audit trail (respawn/store)."""

    def __init__(self, location: Location) -> None:
        self._engine = open_engine(location)

    def close(self) -> None:
        self._engine.dispose()

    def publish(self, req: AdviceRequest) -> Advice:
        """The job's next generation; publishing again for the same incident returns what was published."""
        with self._transaction() as conn:
            _hold_job(conn, req.cluster, req.job_id)
            existing = _one(conn, advice.c.incident_id == req.incident_id)
            if existing is not None:
                return existing
            newest = conn.execute(
                sa.select(sa.func.coalesce(sa.func.max(advice.c.generation), 0)).where(
                    advice.c.cluster == req.cluster, advice.c.job_id == req.job_id
                )
            ).scalar_one()
            published = Advice(**req.model_dump(), generation=newest + 1, published_at=datetime.now(UTC))
            row = {**published.model_dump(), "desired": req.desired.value, "status": published.status.value}
            conn.execute(sa.insert(advice).values(row))
            return published

    def current(self, cluster: str, job_id: int) -> Advice | None:
        """The job's newest advice: the only one a controller should act on."""
        with self._engine.connect() as conn:
            return _current(conn, cluster, job_id)

    def get(self, cluster: str, job_id: int, generation: int) -> Advice | None:
        with self._engine.connect() as conn:
            return _one(conn, advice.c.cluster == cluster, advice.c.job_id == job_id, advice.c.generation == generation)

    def listing(self, cluster: str, *, open_only: bool = False, after_job: int = 0, limit: int = 100) -> list[Advice]:
        """Each job's current advice, by job id; page with `after_job` (a cursor)."""
        newer = advice.alias("newer")
        newest = (
            sa.select(sa.func.max(newer.c.generation))
            .where(newer.c.cluster == advice.c.cluster, newer.c.job_id == advice.c.job_id)
            .scalar_subquery()
        )
        where = [advice.c.cluster == cluster, advice.c.job_id > after_job, advice.c.generation == newest]
        if open_only:
            where.append(advice.c.status.not_in([s.value for s in TERMINAL]))
        with self._engine.connect() as conn:
            rows = conn.execute(sa.select(advice).where(*where).order_by(advice.c.job_id).limit(limit)).mappings()
            return [Advice.model_validate(dict(r)) for r in rows]

    def report(
        self, cluster: str, job_id: int, generation: int, status: Status, detail: str, controller: str
    ) -> Advice:
        """A controller's reconciliation status for one generation.

        Only the job's current generation can be reported on; a final status
        (converged, abandoned) stays final, and saying it again changes nothing.
        """
        if status is Status.PUBLISHED:
            raise ValueError("a controller reports pending, converged or abandoned")
        with self._transaction() as conn:
            _hold_job(conn, cluster, job_id)
            current = _current(conn, cluster, job_id)
            if current is None or generation > current.generation:
                raise UnknownAdvice(f"job {job_id} has no advice of generation {generation}")
            if generation < current.generation:
                raise StaleGeneration(
                    f"generation {generation} of job {job_id} is stale: the current advice is"
                    f" generation {current.generation}"
                )
            if current.status in TERMINAL:
                if status is current.status:
                    return current
                raise AlreadyFinal(f"generation {generation} of job {job_id} is already {current.status.value}")
            reported = current.model_copy(
                update={"status": status, "detail": detail, "controller": controller, "status_at": datetime.now(UTC)}
            )
            conn.execute(
                sa.update(advice)
                .where(advice.c.cluster == cluster, advice.c.job_id == job_id, advice.c.generation == generation)
                .values(status=status.value, detail=detail, controller=controller, status_at=reported.status_at)
            )
            return reported

    def _transaction(self) -> AbstractContextManager[Connection]:
        """A transaction whose read and write of a generation are one step across processes and hosts
        (SQLite: IMMEDIATE; PostgreSQL: the job's lock, `_hold_job`)."""
        return self._engine.execution_options(**{IMMEDIATE: True}).begin()


def _hold_job(conn: Connection, cluster: str, job_id: int) -> None:
    # Publishing and reporting on a job's advice take turns: a generation is read and written
    # (or judged current and updated) as one step, whichever host does it.
    serialise(conn, f"advice/{cluster}/{job_id}")


def _current(conn: Connection, cluster: str, job_id: int) -> Advice | None:
    query = (
        sa.select(advice)
        .where(advice.c.cluster == cluster, advice.c.job_id == job_id)
        .order_by(advice.c.generation.desc())
        .limit(1)
    )
    row = conn.execute(query).mappings().first()
    return Advice.model_validate(dict(row)) if row else None


def _one(conn: Connection, *where: sa.ColumnElement[bool]) -> Advice | None:
    row = conn.execute(sa.select(advice).where(*where)).mappings().first()
    return Advice.model_validate(dict(row)) if row else None
