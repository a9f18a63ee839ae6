"""Advice for a cluster's own controller: the `advisor` scheduler transport.

Where Respawn may not touch the scheduler, an incident publishes what it wants
done with the job (restart with these exclusions, stop, release) as a piece of
advice, and a controller (`respawn controller`, or the cluster's own) carries
it out and reports back. Each new piece of advice for a job gets the next
generation number; a controller reports on the generation it applied, and a
report on one that is no longer the job's current advice is refused, so a slow
controller never confirms something that was superseded.

The advice lives in SQLite beside the audit trail (same file), so the worker
that publishes it and the server that hands it out agree across processes.
"""

import json
import sqlite3
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


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


_SCHEMA = """
CREATE TABLE IF NOT EXISTS advice (
    cluster TEXT NOT NULL,
    job_id INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    incident_id TEXT NOT NULL UNIQUE,
    attempt INTEGER NOT NULL,
    desired TEXT NOT NULL,
    exclude TEXT NOT NULL,
    drain TEXT NOT NULL,
    reason TEXT NOT NULL,
    published_at TEXT NOT NULL,
    status TEXT NOT NULL,
    detail TEXT NOT NULL,
    controller TEXT,
    status_at TEXT,
    PRIMARY KEY (cluster, job_id, generation)
);
"""
_COLUMNS = (
    "cluster, job_id, generation, incident_id, attempt, desired, exclude, drain, reason, published_at,"
    " status, detail, controller, status_at"
)


class AdviceStore:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        self._db.close()

    def publish(self, req: AdviceRequest) -> Advice:
        """The job's next generation; publishing again for the same incident returns what was published."""
        with self._transaction():
            existing = self._one("incident_id = ?", (req.incident_id,))
            if existing is not None:
                return existing
            (newest,) = self._db.execute(
                "SELECT COALESCE(MAX(generation), 0) FROM advice WHERE cluster = ? AND job_id = ?",
                (req.cluster, req.job_id),
            ).fetchone()
            advice = Advice(**req.model_dump(), generation=newest + 1, published_at=datetime.now(UTC))
            self._db.execute(
                f"INSERT INTO advice ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    advice.cluster,
                    advice.job_id,
                    advice.generation,
                    advice.incident_id,
                    advice.attempt,
                    advice.desired.value,
                    json.dumps(advice.exclude),
                    json.dumps(advice.drain),
                    advice.reason,
                    advice.published_at.isoformat(),
                    advice.status.value,
                    advice.detail,
                    None,
                    None,
                ),
            )
            return advice

    def current(self, cluster: str, job_id: int) -> Advice | None:
        """The job's newest advice: the only one a controller should act on."""
        return self._one("cluster = ? AND job_id = ? ORDER BY generation DESC LIMIT 1", (cluster, job_id))

    def get(self, cluster: str, job_id: int, generation: int) -> Advice | None:
        return self._one("cluster = ? AND job_id = ? AND generation = ?", (cluster, job_id, generation))

    def listing(self, cluster: str, *, open_only: bool = False, after_job: int = 0, limit: int = 100) -> list[Advice]:
        """Each job's current advice, by job id; page with `after_job` (a cursor)."""
        where = (
            "a.cluster = ? AND a.job_id > ? AND a.generation = (SELECT MAX(generation) FROM advice b"
            " WHERE b.cluster = a.cluster AND b.job_id = a.job_id)"
        )
        args: list[str | int] = [cluster, after_job]
        if open_only:
            where += f" AND a.status NOT IN ({','.join('?' * len(TERMINAL))})"
            args += [s.value for s in TERMINAL]
        rows = self._db.execute(
            f"SELECT {_COLUMNS} FROM advice a WHERE {where} ORDER BY a.job_id LIMIT ?", (*args, limit)
        ).fetchall()
        return [_advice(r) for r in rows]

    def report(
        self, cluster: str, job_id: int, generation: int, status: Status, detail: str, controller: str
    ) -> Advice:
        """A controller's reconciliation status for one generation.

        Only the job's current generation can be reported on; a final status
        (converged, abandoned) stays final, and saying it again changes nothing.
        """
        if status is Status.PUBLISHED:
            raise ValueError("a controller reports pending, converged or abandoned")
        with self._transaction():
            current = self.current(cluster, job_id)
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
            now = datetime.now(UTC)
            self._db.execute(
                "UPDATE advice SET status = ?, detail = ?, controller = ?, status_at = ?"
                " WHERE cluster = ? AND job_id = ? AND generation = ?",
                (status.value, detail, controller, now.isoformat(), cluster, job_id, generation),
            )
            return current.model_copy(
                update={"status": status, "detail": detail, "controller": controller, "status_at": now}
            )

    def _one(self, where: str, args: tuple[str | int, ...]) -> Advice | None:
        row = self._db.execute(f"SELECT {_COLUMNS} FROM advice WHERE {where}", args).fetchone()
        return _advice(row) if row else None

    def _transaction(self) -> "_Immediate":
        return _Immediate(self._db)


class _Immediate:
    """BEGIN IMMEDIATE ... COMMIT: the read and the write of a generation are one step across processes."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def __enter__(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self._db.execute("COMMIT" if exc_type is None else "ROLLBACK")


def _advice(r: tuple[Any, ...]) -> Advice:
    return Advice(
        cluster=r[0],
        job_id=r[1],
        generation=r[2],
        incident_id=r[3],
        attempt=r[4],
        desired=Desired(r[5]),
        exclude=json.loads(r[6]),
        drain=json.loads(r[7]),
        reason=r[8],
        published_at=datetime.fromisoformat(r[9]),
        status=Status(r[10]),
        detail=r[11],
        controller=r[12],
        status_at=datetime.fromisoformat(r[13]) if r[13] else None,
    )
