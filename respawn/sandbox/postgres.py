"""Debian's PostgreSQL as the audit store of a control plane on several hosts (docs/store.md).

One cluster (`initdb`) in a folder: `data/` (PGDATA), `password` (the `respawn`
role's, generated at the first start), `postgres.log`, and the server's Unix
socket. The server runs as the `postgres` user Debian's package creates when
started by root (PostgreSQL refuses to run as root), listens on `host:port`
(25432 by default, beside Debian's own cluster on 5432), and accepts the
`respawn` role with its password from the networks in `allow`; through the
socket (in the folder only that user enters), that user. `pg_ctl` starts and stops it (`-m fast`: open sessions
are rolled back, nothing committed is lost).
"""

import os
import pwd
import re
import secrets
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import URL

from respawn.sandbox import procs
from respawn.sandbox.lab import Lab

PORT = 25432
ROLE = "respawn"
DATABASE = "respawn"
_DATABASE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")
RUN_AS = "postgres"  # the system user of Debian's package
START_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30


def bin_dir() -> Path:
    """The newest of Debian's PostgreSQL versions installed (15 on Debian 12, 17 on 13)."""
    found = sorted(
        (p for p in Path("/usr/lib/postgresql").glob("*/bin") if (p / "initdb").exists() and p.parent.name.isdigit()),
        key=lambda p: int(p.parent.name),
    )
    if not found:
        raise RuntimeError("no PostgreSQL under /usr/lib/postgresql: apt-get install postgresql (deploy/setup.sh does)")
    return found[-1]


@dataclass(frozen=True)
class Postgres:
    folder: Path
    port: int = PORT
    host: str = "127.0.0.1"  # where it listens, and the address in its URLs
    allow: tuple[str, ...] = field(default=("127.0.0.1/32",))  # networks the role may connect from

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def log(self) -> Path:
        return self.folder / "postgres.log"

    @property
    def password_file(self) -> Path:
        return self.folder / "password"

    def url(self, database: str = DATABASE) -> str:
        """The `audit_db` setting that names `database` on this server."""
        return URL.create(
            "postgresql",
            username=ROLE,
            password=self.password_file.read_text().strip(),
            host=self.host,
            port=self.port,
            database=database,
        ).render_as_string(hide_password=False)


def of_lab(lab: Lab) -> Postgres:
    """The sandbox's: in the lab, on PORT (`respawn sandbox up --store postgresql`)."""
    return Postgres(lab.root / "postgres")


def start(pg: Postgres) -> None:
    """Create the cluster and its `respawn` database at the first start, then start it (idempotent)."""
    binaries = bin_dir()
    _own_folder(pg.folder)
    if not (pg.data / "PG_VERSION").exists():
        _init(pg, binaries)
    if running(pg):
        return
    _write_hba(pg)
    _run(
        [
            str(binaries / "pg_ctl"),
            "start",
            "--wait",
            f"--timeout={START_TIMEOUT_S}",
            f"--pgdata={pg.data}",
            f"--log={pg.log}",
            # Settings on the command line, not in postgresql.conf: each start says where it listens.
            f"--options=-c port={pg.port} -c listen_addresses={pg.host} -c unix_socket_directories={pg.folder}",
        ],
        START_TIMEOUT_S + 10,
        f"PostgreSQL did not start; last lines of {pg.log}",
        pg.log,
    )
    _create_database(pg, binaries, DATABASE)


def stop(pg: Postgres) -> None:
    """Stop the server if it runs; the cluster stays for the next start."""
    if not running(pg):
        return
    _run(
        [
            str(bin_dir() / "pg_ctl"),
            "stop",
            "--wait",
            f"--timeout={STOP_TIMEOUT_S}",
            "--mode=fast",
            f"--pgdata={pg.data}",
        ],
        STOP_TIMEOUT_S + 10,
        "PostgreSQL did not stop",
        pg.log,
    )


def running(pg: Postgres) -> bool:
    """The postmaster of this cluster is alive (its pid file's first line names it)."""
    pid = procs.read_pid(pg.data / "postmaster.pid")
    return pid is not None and procs.alive(pid) and procs.comm(pid) in ("postgres", "postmaster")


def create_database(pg: Postgres, name: str) -> str:
    """A new, empty database on the running server (a test's own); its `audit_db` URL."""
    if not _DATABASE_NAME.fullmatch(name):
        raise ValueError(f"{name!r}: a database name here is lower-case letters, digits and _")
    _create_database(pg, bin_dir(), name)
    return pg.url(name)


def _init(pg: Postgres, binaries: Path) -> None:
    if not pg.password_file.exists():
        pg.password_file.write_text(secrets.token_urlsafe(24) + "\n")
        pg.password_file.chmod(0o600)
        _chown(pg.password_file)
    _run(
        [
            str(binaries / "initdb"),
            f"--pgdata={pg.data}",
            f"--username={ROLE}",
            f"--pwfile={pg.password_file}",
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",  # the first fsync happens at the first checkpoint: initdb is only faster
        ],
        120,
        "initdb failed",
    )


def _write_hba(pg: Postgres) -> None:
    # The role only, by password, from the allowed networks. The socket lies in the folder only
    # the server's user may enter, so whoever reaches it is that user (or root): trusted.
    lines = ["# Written by respawn.sandbox.postgres at each start; edits are lost.", "local all all trust"]
    lines += [f"host all {ROLE} {network} scram-sha-256" for network in pg.allow]
    path = pg.data / "pg_hba.conf"
    path.write_text("\n".join(lines) + "\n")
    _chown(path)


def _create_database(pg: Postgres, binaries: Path, name: str) -> None:
    try:
        _run([str(binaries / "createdb"), *_socket_args(pg), f"--owner={ROLE}", name], 30, "createdb failed")
    except RuntimeError as exc:
        if f'database "{name}" already exists' not in str(exc):
            raise


def _socket_args(pg: Postgres) -> list[str]:
    # Peer authentication through the socket: the server's own user, as the cluster's superuser role.
    return [f"--host={pg.folder}", f"--port={pg.port}", f"--username={ROLE}"]


def _own_folder(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o700)
    _chown(folder)


def _chown(path: Path) -> None:
    if os.geteuid() == 0:
        user = pwd.getpwnam(RUN_AS)
        os.chown(path, user.pw_uid, user.pw_gid)


def _run(argv: list[str], timeout: float, what: str, log: Path | None = None) -> str:
    """Run a PostgreSQL program as the server's user (as root: `postgres`); its standard output."""
    if shutil.which(argv[0]) is None:
        raise RuntimeError(f"{argv[0]} is not executable")
    as_root = os.geteuid() == 0
    result = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=timeout,
        user=RUN_AS if as_root else None,
        group=RUN_AS if as_root else None,
        extra_groups=[] if as_root else None,
        cwd="/",
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"},
    )
    if result.returncode != 0:
        tail = f"\n{procs.log_tail(log)}" if log is not None else ""
        raise RuntimeError(f"{what} (rc {result.returncode}): {result.stderr.strip()}{tail}")
    return result.stdout
