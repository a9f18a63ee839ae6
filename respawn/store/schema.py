"""The tables of the audit trail and the advice, once for both databases (SQLAlchemy Core).

Changes to them go through a migration in `migrations/versions/` (alembic) and move
`HEAD` to it; a test checks that the migrations build exactly these tables on both.
The column types keep what releases before the migrations wrote into SQLite (times as
ISO 8601 text, nodes as one comma-separated text, JSON as text), so their files are
read as they are; PostgreSQL gets its own types (timestamptz, jsonb).
"""

import json
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect

HEAD = "0001"  # the newest migration: a store whose version is this one needs none


class Moment(sa.types.TypeDecorator[datetime]):
    """A time zone-aware time: timestamptz on PostgreSQL; on SQLite the UTC ISO 8601 text
    it always was there, which sorts and compares as time does."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> sa.types.TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(sa.Text())
        return dialect.type_descriptor(sa.DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        value = value.astimezone(UTC)
        return value.isoformat() if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return datetime.fromisoformat(value) if isinstance(value, str) else value.astimezone(UTC)


class NodeList(sa.types.TypeDecorator[list[str]]):
    """Node names as one comma-separated text (a Slurm node name holds no comma)."""

    impl = sa.Text()
    cache_ok = True

    def process_bind_param(self, value: list[str] | None, dialect: Dialect) -> str | None:
        return None if value is None else ",".join(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> list[str] | None:
        return None if value is None else [n for n in value.split(",") if n]


def json_text(value: Any) -> str:
    """How both databases' JSON columns are written: keys sorted, anything else as its text."""
    return json.dumps(value, default=str, sort_keys=True)


JsonDocument = sa.JSON().with_variant(JSONB(), "postgresql")
# SQLite's rowid alias must be exactly INTEGER; PostgreSQL's identity a bigint.
RowId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
JobId = sa.BigInteger()

metadata = sa.MetaData()

events = sa.Table(
    "events",
    metadata,
    sa.Column("id", RowId, sa.Identity(), primary_key=True),
    sa.Column("key", sa.Text, nullable=False, unique=True),  # names the event once: a second write is ignored
    sa.Column("at", Moment, nullable=False),
    sa.Column("cluster", sa.Text, nullable=False),
    sa.Column("job_id", JobId, nullable=False),
    sa.Column("attempt", sa.Integer),
    sa.Column("incident_id", sa.Text),
    sa.Column("event_type", sa.Text, nullable=False),
    sa.Column("failure_class", sa.Text),
    sa.Column("pattern", sa.Text),
    sa.Column("cause_layer", sa.Text),
    sa.Column("nodes", NodeList, nullable=False),
    sa.Column("action", sa.Text),
    sa.Column("acted", sa.Boolean),
    sa.Column("details", JsonDocument, nullable=False),
    sa.Index("events_job", "cluster", "job_id", "id"),
    sa.Index("events_type", "event_type", "id"),
    sa.Index("events_incident", "incident_id", "id"),
    sqlite_autoincrement=True,  # ids never reused: readers follow the trail by id
)

advice = sa.Table(
    "advice",
    metadata,
    sa.Column("cluster", sa.Text, primary_key=True),
    sa.Column("job_id", JobId, primary_key=True),
    sa.Column("generation", sa.Integer, primary_key=True),
    sa.Column("incident_id", sa.Text, nullable=False, unique=True),  # one piece of advice per incident
    sa.Column("attempt", sa.Integer, nullable=False),
    sa.Column("desired", sa.Text, nullable=False),
    sa.Column("exclude", JsonDocument, nullable=False),
    sa.Column("drain", JsonDocument, nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("published_at", Moment, nullable=False),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("detail", sa.Text, nullable=False),
    sa.Column("controller", sa.Text),
    sa.Column("status_at", Moment),
)
