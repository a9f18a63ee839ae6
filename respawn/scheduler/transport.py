"""How Slurm commands reach the cluster: a local subprocess, or ssh to a login node.

Commands are argument lists, never shell text. Locally they are exec'd as is;
over ssh the remote side always runs a shell, so every argument is quoted with
shlex.join and a job comment or drain reason cannot become shell syntax.
Either way a command that runs past its timeout is killed, not abandoned: a
late `scontrol requeue` must not act after the caller gave up on it.
"""

import asyncio
import os
import shlex
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.utils import CryptographyDeprecationWarning

from respawn.scheduler.errors import CommandTimeout, TransportError

# asyncssh 2.24 names DSA's key types at import, and cryptography 51 (the release a fresh
# install resolves) warns about each: ten lines of noise before the output of every command
# that imports this, about a key type asyncssh offers, not one Respawn chose.
warnings.filterwarnings("ignore", category=CryptographyDeprecationWarning, module=r"asyncssh\.")
import asyncssh  # noqa: E402  (after the filter: the warnings come at its import)

REMOTE_TIMEOUT_RC = 124  # coreutils `timeout`; Slurm's commands exit 0, 1 or 2
SSH_GRACE = 5.0  # beyond the remote timeout, for the round trip and the kill


@dataclass(frozen=True)
class CommandResult:
    rc: int  # -1 when the command ended by a signal
    stdout: str
    stderr: str


class Transport(Protocol):
    async def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        """Run `argv`; `env`: variables set for this command only (SLURM_TIME_FORMAT)."""
        ...

    async def close(self) -> None: ...


class LocalTransport:
    """Runs commands on this host, as this user, with `env` (e.g. one that sets SLURM_CONF).

    With `bin_dir` every command is taken from that folder (e.g. /opt/slurm/bin)
    instead of PATH, so a PATH that lacks Slurm, or holds another Slurm, does not matter.
    """

    def __init__(self, env: Mapping[str, str] | None = None, bin_dir: Path | None = None) -> None:
        self._env = dict(env) if env is not None else None
        self._bin_dir = bin_dir

    async def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        _check_argv(argv)
        program = argv[0] if self._bin_dir is None else str(self._bin_dir / argv[0])
        environment = self._env
        if env:
            environment = {**(self._env if self._env is not None else os.environ), **env}
        try:
            proc = await asyncio.create_subprocess_exec(
                program,
                *argv[1:],
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=environment,
            )
        except OSError as exc:
            raise TransportError(f"{program}: cannot run: {exc.strerror or exc}") from exc
        try:
            stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout)
        except BaseException as exc:
            # Timed out or cancelled: a stray scontrol must not act later on its own.
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            if isinstance(exc, TimeoutError):
                raise CommandTimeout(f"{' '.join(argv[:2])}: no answer within {timeout:g} s") from None
            raise
        rc = proc.returncode if proc.returncode is not None and proc.returncode >= 0 else -1
        return CommandResult(rc, stdout.decode(errors="replace"), stderr.decode(errors="replace"))

    async def close(self) -> None:
        return None


class SshTransport:
    """Runs commands on `host` over one reused ssh connection, with host-key checking
    against a pinned known_hosts file; a lost connection is reopened on the next call."""

    def __init__(
        self,
        host: str,
        port: int,
        username: str,
        client_keys: Sequence[str | Path],
        known_hosts: str | Path,
        connect_timeout: float = 10.0,
    ) -> None:
        self._host = host
        self._port = port
        self._username = username
        self._client_keys = [str(k) for k in client_keys]
        self._known_hosts = str(known_hosts)
        self._connect_timeout = connect_timeout
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()

    async def run(
        self, argv: Sequence[str], timeout: float = 30.0, env: Mapping[str, str] | None = None
    ) -> CommandResult:
        _check_argv(argv)
        conn = await self._connection()
        # sshd neither hangs up a session without a pty nor honours signal requests
        # (OpenSSH 9.2), so a command left behind by a closed channel runs on: the
        # remote side enforces the timeout itself, and exits 124 when it fires.
        settings = [f"{key}={value}" for key, value in (env or {}).items()]
        command = shlex.join(
            ["timeout", "--kill-after=1", f"{timeout:g}", *(["env", *settings] if settings else []), *argv]
        )
        too_late = f"{' '.join(argv[:2])}: no answer within {timeout:g} s over ssh"
        try:
            done = await asyncio.wait_for(conn.run(command, check=False, errors="replace"), timeout + SSH_GRACE)
        except TimeoutError:
            await self._drop(conn)
            raise CommandTimeout(too_late) from None
        except (asyncssh.Error, OSError) as exc:
            await self._drop(conn)
            raise TransportError(f"ssh {self._target()}: {_describe(exc)}") from exc
        if done.exit_status == REMOTE_TIMEOUT_RC:
            raise CommandTimeout(too_late)
        rc = done.exit_status if done.exit_status is not None and done.exit_status >= 0 else -1
        return CommandResult(rc, _text(done.stdout), _text(done.stderr))

    async def close(self) -> None:
        async with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
            await conn.wait_closed()

    async def _connection(self) -> asyncssh.SSHClientConnection:
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            try:
                self._conn = await asyncssh.connect(
                    self._host,
                    self._port,
                    username=self._username,
                    client_keys=self._client_keys,
                    known_hosts=self._known_hosts,  # never None: that would switch host-key checking off
                    config=None,  # not the user's ~/.ssh/config
                    agent_path=None,
                    connect_timeout=self._connect_timeout,
                    keepalive_interval=15,
                )
            except (asyncssh.Error, OSError, TimeoutError) as exc:
                self._conn = None
                raise TransportError(f"ssh {self._target()}: cannot connect: {_describe(exc)}") from exc
            return self._conn

    async def _drop(self, conn: asyncssh.SSHClientConnection) -> None:
        async with self._lock:
            if self._conn is conn:
                self._conn = None
        conn.close()

    def _target(self) -> str:
        return f"{self._username}@{self._host}:{self._port}"


def _check_argv(argv: Sequence[str]) -> None:
    if not argv or isinstance(argv, str):
        raise ValueError("argv must be a non-empty list of arguments, not a string")


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__
