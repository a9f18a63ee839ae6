"""What `respawn config` says about the secrets a configuration points at.

A configuration that validates can still fail at 3 a.m.: a token file that is
missing or unreadable stops the server, a key file that others can read is a
credential anyone on the host may copy. Each finding names the setting, the
file and the fix; none ever shows a secret.
"""

import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from respawn.config.cluster import ClusterConfig


@dataclass(frozen=True)
class Finding:
    where: str  # the setting, e.g. server.tokens[controller].token_file
    message: str
    problem: bool = True  # False: a warning, the configuration still works as it is

    def __str__(self) -> str:
        return f"{self.where}: {self.message}" if self.problem else f"warning: {self.where}: {self.message}"


def secret_files(config: ClusterConfig) -> list[tuple[str, Path, str]]:
    """(setting, file, kind) of every secret the configuration keeps in a file."""
    found = [
        (f"server.tokens[{t.name}].token_file", t.token_file, "server token")
        for t in config.server.tokens
        if t.token_file is not None
    ]
    if config.scheduler.ssh is not None:
        found.append(("scheduler.ssh.client_key", config.scheduler.ssh.client_key, "key"))
    if config.attribution_hook is not None and config.attribution_hook.token_file is not None:
        found.append(("attribution_hook.token_file", config.attribution_hook.token_file, "hook token"))
    return found


def check(config: ClusterConfig, config_path: Path) -> list[Finding]:
    findings = [f for where, path, kind in secret_files(config) for f in _check_file(where, path, kind)]
    inline = [(f"server.tokens[{t.name}].token", "token_file") for t in config.server.tokens if t.token is not None]
    if not isinstance(config.audit_db, Path) and any(host.get("password") for host in config.audit_db.hosts()):
        inline.append(("audit_db", "libpq's PGPASSFILE or PGPASSWORD (the URL without it)"))
    mode = _mode(config_path)
    if inline and mode is not None and mode & 0o044:
        for where, instead in inline:
            findings.append(
                Finding(
                    where,
                    f"the secret is written in {config_path}, which group or others can read (mode {mode:04o}):"
                    f" prefer {instead} (a file of mode 600), or chmod 600 {shlex.quote(str(config_path))}",
                    problem=False,
                )
            )
    return findings


def _mode(path: Path) -> int | None:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def _check_file(where: str, path: Path, kind: str) -> list[Finding]:
    quoted = shlex.quote(str(path))
    try:
        info = os.stat(path)
    except OSError as exc:
        return [Finding(where, f"{path}: missing or unreachable ({exc.strerror})")]
    if not stat.S_ISREG(info.st_mode):
        return [Finding(where, f"{path}: not a regular file")]
    findings = []
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        findings.append(Finding(where, f"{path}: group or others have access (mode {mode:04o}): chmod 600 {quoted}"))
    try:
        with open(path, "rb") as f:
            content = f.read(64 * 1024)
    except OSError as exc:
        findings.append(Finding(where, f"{path}: cannot read as this user ({exc.strerror})"))
        return findings
    if kind != "key":  # never echo the content: it is a secret, even when malformed
        token = content.decode(errors="replace").strip()
        if not token or any(c.isspace() for c in token):
            findings.append(Finding(where, f"{path}: expected one token on one line"))
        elif kind == "server token" and len(token) < 16:
            findings.append(Finding(where, f"{path}: holds fewer than 16 characters"))
    elif not content.strip():
        findings.append(Finding(where, f"{path}: empty"))
    return findings
