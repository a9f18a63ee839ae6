"""The audit trail and the advice as releases before the migrations created them in SQLite.

A SQLite file of such a release has one or both tables and no version: only the
missing ones are created, so it opens as it is.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

from respawn.store.schema import JobId, JsonDocument, Moment, NodeList, RowId

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    existing = set(sa.inspect(op.get_bind()).get_table_names())
    if "events" not in existing:
        op.create_table(
            "events",
            sa.Column("id", RowId, sa.Identity(), primary_key=True),
            sa.Column("key", sa.Text, nullable=False, unique=True),
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
            sqlite_autoincrement=True,
        )
        op.create_index("events_job", "events", ["cluster", "job_id", "id"])
        op.create_index("events_type", "events", ["event_type", "id"])
        op.create_index("events_incident", "events", ["incident_id", "id"])
    if "advice" not in existing:
        op.create_table(
            "advice",
            sa.Column("cluster", sa.Text, primary_key=True),
            sa.Column("job_id", JobId, primary_key=True),
            sa.Column("generation", sa.Integer, primary_key=True),
            sa.Column("incident_id", sa.Text, nullable=False, unique=True),
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


def downgrade() -> None:
    op.drop_table("advice")
    op.drop_table("events")
