"""Alembic's environment: migrations run on the connection `respawn.store.engine` hands over.

On PostgreSQL a transaction-scoped advisory lock comes first, so hosts starting
together migrate one after the other (the second finds nothing left to do); on
SQLite the transaction is IMMEDIATE, which does the same.
"""

from alembic import context

from respawn.store import schema
from respawn.store.engine import VERSION_TABLE, serialise

conn = context.config.attributes["connection"]
context.configure(
    connection=conn,
    target_metadata=schema.metadata,
    version_table=VERSION_TABLE,
    render_as_batch=True,  # SQLite alters a table by copying it: alembic's batch mode does that
    transaction_per_migration=False,
)
with context.begin_transaction():
    serialise(conn, "migrations")
    context.run_migrations()
