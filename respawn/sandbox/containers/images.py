"""The node image, built here without a registry and reused while its inputs stay the same.

The base is Debian from `debootstrap` (minbase, this host's suite and apt mirror)
imported into Podman, or the registry's debian:12 on a Docker engine. The node
image adds Slurm, munge and sshd with apt-get. Each image's tag is a hash of what
went into it, so a second `up` finds it built and a changed recipe builds anew.

Python and the training workload are not installed: the nodes bind-mount the
host's interpreter and virtualenv (cluster.py), as nodes share software on a
real cluster's shared filesystem. The libraries that interpreter links against
come from Debian here, the same release as the host's.
"""

import hashlib
import io
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from respawn.sandbox.containers.engine import Engine, EngineError

BUILD_TIMEOUT = 900.0
# Slurm and its auth; sshd for the head (the SSH transport's far end); the shared
# libraries of a pyenv-built CPython (ssl, ctypes, sqlite, bz2, lzma, readline, uuid).
NODE_PACKAGES = (
    "slurm-wlm", "munge", "openssh-server", "procps",
    "libssl3", "libffi8", "libsqlite3-0", "libbz2-1.0", "liblzma5", "libreadline8", "libuuid1", "zlib1g",
)  # fmt: skip
NODE_CONTAINERFILE = """\
FROM {base}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends {packages} \\
 && rm -rf /var/lib/apt/lists/*
"""

_URIS = re.compile(r"^URIs:\s*(\S+)", re.MULTILINE)
_DEB_LINE = re.compile(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", re.MULTILINE)


def node_image(engine: Engine, log: Path) -> str:
    """The tag of the node image, built (with its base) unless already there."""
    import docker

    client = docker.DockerClient(base_url=engine.docker_host, timeout=int(BUILD_TIMEOUT))
    try:
        base = engine.registry_base or _debootstrap_base(client, log)
        if engine.registry_base and not _exists(client, base):
            client.images.pull(base)
        containerfile = NODE_CONTAINERFILE.format(base=base, packages=" ".join(NODE_PACKAGES))
        tag = f"localhost/respawn-node:{_digest(containerfile)}"
        if not _exists(client, tag):
            try:
                _, lines = client.images.build(
                    fileobj=io.BytesIO(containerfile.encode()), tag=tag, rm=True, forcerm=True
                )
            except docker.errors.BuildError as exc:
                _append(log, "".join(str(chunk.get("stream", chunk)) for chunk in exc.build_log))
                raise EngineError(f"building {tag} failed: {exc.msg}; see {log}") from exc
            _append(log, "".join(str(chunk.get("stream", "")) for chunk in lines))
        return tag
    finally:
        client.close()


def host_release() -> tuple[str, str]:
    """(suite, mirror) of this host: its codename and the Debian mirror apt uses for it."""
    fields = dict(line.split("=", 1) for line in Path("/etc/os-release").read_text().splitlines() if "=" in line)
    suite = fields.get("VERSION_CODENAME", "").strip('"')
    if not suite:
        raise EngineError("/etc/os-release names no VERSION_CODENAME: cannot pick a debootstrap suite")
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for path in sources:
        if not path.is_file():
            continue
        text = path.read_text(errors="replace")
        if path.suffix == ".sources":
            # deb822 stanzas: take the one whose suites include the release itself.
            for stanza in re.split(r"\n\s*\n", text):
                suites = re.search(r"^Suites:\s*(.+)$", stanza, re.MULTILINE)
                uris = _URIS.search(stanza)
                if suites and uris and suite in suites.group(1).split():
                    return suite, uris.group(1)
        else:
            for uri, line_suite in _DEB_LINE.findall(text):
                if line_suite == suite:
                    return suite, uri
    raise EngineError(f"no apt source for {suite} in /etc/apt: cannot pick a debootstrap mirror")


def _debootstrap_base(client, log: Path) -> str:
    suite, mirror = host_release()
    tag = f"localhost/respawn-base:{_digest(f'debootstrap --variant=minbase {suite} {mirror}')}"
    if _exists(client, tag):
        return tag
    if shutil.which("debootstrap") is None:
        raise EngineError("debootstrap is not installed (deploy/setup.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="respawn-rootfs-", dir="/var/tmp") as work:
        rootfs = Path(work) / "rootfs"
        with open(log, "ab") as out:
            subprocess.run(
                ["debootstrap", "--variant=minbase", suite, str(rootfs), mirror],
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=BUILD_TIMEOUT,
            )
            if not (rootfs / "usr/bin/apt-get").exists():
                raise EngineError(f"debootstrap {suite} from {mirror} failed; see {log}")
            # `podman import` reads the root filesystem as a tar stream.
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
            imported = subprocess.run(
                ["podman", "import", "-", tag],
                stdin=tar.stdout,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
                timeout=BUILD_TIMEOUT,
            )
            tar.wait()
    if imported.returncode != 0 or tar.returncode != 0:
        raise EngineError(f"podman import of the debootstrap root failed; see {log}")
    return tag


def _exists(client, tag: str) -> bool:
    import docker

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def _digest(recipe: str) -> str:
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def _append(log: Path, text: str) -> None:
    with open(log, "a") as out:
        out.write(text)
