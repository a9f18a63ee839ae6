"""Opening the store named by `audit_db`: a SQLite file's path, or a PostgreSQL URL.

Each opening gets its own engine (closed with the trail or the advice store that
holds it) on a schema brought to `schema.HEAD` first, once per process and store:
alembic runs the missing migrations under a lock, so hosts starting together
migrate once. A SQLite file written before the migrations existed has no version:
the first migration creates only the tables it lacks, and the file goes on from there.
"""

import functools
import sqlite3
import threading
from pathlib import Path
from time import monotonic, sleep
from typing import Any

import sqlalchemy as sa
from pydantic import PostgresDsn
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL, Connection, Engine, make_url

from respawn.store import schema

Location = Path | PostgresDsn  # the `audit_db` setting

VERSION_TABLE = "respawn_version"  # alembic's, named so a database shared with others' migrations keeps apart
IMMEDIATE = "respawn_immediate"  # execution option: on SQLite, take the write lock at BEGIN
_BUSY_TIMEOUT_S = 10.0  # how long a SQLite connection waits for another process's lock
_BUSY_RETRY_S = 0.05

_migrated: set[str] = set()
_migrating = threading.Lock()


class NewerSchema(RuntimeError):
    """The store was migrated by a newer release: this one would misread it."""


def url(location: Location) -> URL:
    """The SQLAlchemy URL of a store: psycopg 3 for PostgreSQL, the standard module for SQLite."""
    if isinstance(location, Path):
        return URL.create("sqlite", database=str(location))
    return make_url(str(location)).set(drivername="postgresql+psycopg")


def describe(location: Location) -> str:
    """The store as people may read it: a URL's password left out."""
    return describe_url(url(location))


def describe_url(engine_url: URL) -> str:
    if engine_url.get_backend_name() == "sqlite":
        return str(engine_url.database)
    return engine_url.set(drivername="postgresql").render_as_string(hide_password=True)


def open_engine(location: Location) -> Engine:
    """An engine on the store, its schema at `schema.HEAD`."""
    if isinstance(location, Path):
        location.parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(
            url(location),
            connect_args={"timeout": _BUSY_TIMEOUT_S, "check_same_thread": False},
            json_serializer=schema.json_text,
        )
        sa.event.listen(engine, "connect", _sqlite_connect)
        sa.event.listen(engine, "begin", _sqlite_begin)
    else:
        # A connection checked before use: the database may have restarted or failed over since.
        engine = sa.create_engine(
            url(location), pool_pre_ping=True, pool_size=4, max_overflow=8, json_serializer=schema.json_text
        )
    try:
        _migrate(engine)
    except BaseException:
        engine.dispose()
        raise
    return engine


def read_only_engine(location: Location) -> Engine:
    """An engine that can change nothing, and does not migrate (`respawn check`)."""
    if isinstance(location, Path):
        # SQLite's read-only open: a missing file is an error, not a new empty one.
        read_only = URL.create("sqlite", database=f"file:{location}", query={"mode": "ro", "uri": "true"})
        return sa.create_engine(read_only, connect_args={"timeout": 2.0})
    return sa.create_engine(
        url(location),
        poolclass=sa.pool.NullPool,
        connect_args={"connect_timeout": 5, "options": "-c default_transaction_read_only=on"},
    )


def version(conn: Connection) -> str | None:
    """The migration the store is at; None: none yet (new, or a SQLite file of an earlier release)."""
    if not sa.inspect(conn).has_table(VERSION_TABLE):
        return None
    return conn.execute(sa.select(sa.column("version_num")).select_from(sa.table(VERSION_TABLE))).scalar()


def insert_ignoring(conn: Connection, table: sa.Table, unique: str, row: dict[str, Any]) -> bool:
    """Insert `row` unless one with its `unique` column's value is there; whether it was inserted."""
    return conn.execute(_insert_ignoring(table, unique, conn.dialect.name), row).first() is not None


@functools.cache
def _insert_ignoring(table: sa.Table, unique: str, dialect: str) -> Any:
    # Built once, the row passed as parameters: the compiled statement is then cached too.
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    # RETURNING says whether a row went in on both (a rowcount is not reliable beside it).
    return insert(table).on_conflict_do_nothing(index_elements=[unique]).returning(table.c[unique])


def serialise(conn: Connection, name: str) -> None:
    """One transaction at a time holds `name`, until it ends (PostgreSQL: a transaction-scoped
    advisory lock on the name's hash). SQLite needs none: its writers take turns anyway, and
    a transaction that reads before it writes is IMMEDIATE."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(sa.func.pg_advisory_xact_lock(sa.func.hashtextextended(f"respawn/{name}", 0))))


def _migrate(engine: Engine) -> None:
    key = engine.url.render_as_string(hide_password=False)
    with _migrating:
        if key in _migrated:
            return
        with engine.connect() as conn:
            current = version(conn)
        if current is not None and current > schema.HEAD:
            # A downgrade is a person's decision (alembic downgrade), never a start's.
            raise NewerSchema(
                f"{describe_url(engine.url)}: schema {current} is a newer release's (this one knows {schema.HEAD})"
            )
        if current != schema.HEAD:
            _upgrade(engine)
        _migrated.add(key)


def _upgrade(engine: Engine) -> None:
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(__file__).parent / "migrations"))
    with engine.connect().execution_options(**{IMMEDIATE: True}) as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "head")


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # The driver's own transaction handling off: SQLAlchemy's BEGIN (below) is the only one.
    dbapi_connection.isolation_level = None
    _write_ahead_log(dbapi_connection)
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def _write_ahead_log(dbapi_connection: Any) -> None:
    """The file's journal in WAL mode: the detector and the workers write from other processes.
    The mode is the file's, set once by whichever process opens a new store first. Setting it
    while another process writes to the file fails at once, without SQLite's busy wait (the
    lock it needs would deadlock with the writer's): the detector, the worker and the server
    started together on a new store, and one of them found it "locked" and exited. So it is
    tried again, as long as the busy timeout would have waited. Once set, setting it is a no-op."""
    deadline = monotonic() + _BUSY_TIMEOUT_S
    while True:
        try:
            dbapi_connection.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode != sqlite3.SQLITE_BUSY or monotonic() > deadline:
                raise
        sleep(_BUSY_RETRY_S)


def _sqlite_begin(conn: Connection) -> None:
    # IMMEDIATE where a transaction reads and then writes (a generation, a migration): another
    # process's write between the two would otherwise fail it instead of waiting. Any other
    # transaction is one statement (a read, an insert) and runs as SQLite's own, committed with it.
    if conn.get_execution_options().get(IMMEDIATE):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
