"""The images built here without a registry, each reused while its inputs stay the same.

The base is Debian from `debootstrap` (minbase, this host's suite and apt mirror)
imported into Podman, or the registry's Debian of this host's release on a Docker engine. The node
image adds Slurm, munge and sshd with apt-get. The Respawn image (`respawn_image`,
`make image`, deploy/Containerfile) adds Debian's Python and the project's wheels,
built on this host. Each image's tag is a hash of what went into it, so a second
build finds it built and a changed recipe builds anew.

Python and the training workload are not installed: the nodes bind-mount the
host's interpreter and virtualenv (cluster.py), as nodes share software on a
real cluster's shared filesystem. The libraries that interpreter links against
come from Debian here, the same release as the host's.
"""

import hashlib
import io
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

from respawn.sandbox.containers.cluster import REPO
from respawn.sandbox.containers.engine import Engine, EngineError, containers_conf

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
        base = engine.registry_base or debootstrap_base(log)
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
    suite = platform.freedesktop_os_release().get("VERSION_CODENAME", "")
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


def debootstrap_base(log: Path) -> str:
    """The tag of the Debian base image in Podman's storage, debootstrapped and imported unless there."""
    suite, mirror = host_release()
    tag = f"localhost/respawn-base:{_digest(f'debootstrap --variant=minbase {suite} {mirror}')}"
    if _podman_has(tag):
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


def _podman_has(tag: str) -> bool:
    return subprocess.run(["podman", "image", "exists", tag], check=False, timeout=60).returncode == 0


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


# What goes into the Respawn image: the recipe and every file of the wheel (the runbooks among them).
CONTAINERFILE = REPO / "deploy" / "Containerfile"
_SOURCES = ("pyproject.toml", "respawn", "activities", "workflows", "workers", "runbooks", "deploy/Containerfile")


def respawn_image(work_dir: Path, log: Path) -> str:
    """The tag of the Respawn image in Podman's storage (localhost/respawn:<hash of its inputs>),
    built unless there. `work_dir` keeps the containers.conf, the dependencies' wheels (reused
    while pyproject.toml's dependencies stay the same) and the build context."""
    if shutil.which("podman") is None:
        raise EngineError("podman is not installed (deploy/setup.sh installs it)")
    os.environ["CONTAINERS_CONF"] = str(containers_conf(work_dir))  # runc, cgroupfs, ulimits (engine.py)
    base = debootstrap_base(log)
    sources = _sources_digest(base)
    tag = f"localhost/respawn:{sources}"
    if not _podman_has(tag):
        _build_respawn_image(work_dir, log, base, sources, tag)
        _remove_older(tag)
    _logged(log, ["podman", "tag", tag, release_tag()], "podman tag")  # the name deploy/kubernetes/ uses
    return tag


def release_tag() -> str:
    """localhost/respawn:<the project's version>, the image the Kubernetes manifests name."""
    return f"localhost/respawn:{tomllib.loads((REPO / 'pyproject.toml').read_text())['project']['version']}"


def _build_respawn_image(work_dir: Path, log: Path, base: str, sources: str, tag: str) -> None:
    dependencies = _dependency_wheels(work_dir, log)
    with tempfile.TemporaryDirectory(prefix="respawn-image-", dir=work_dir) as context:
        wheels, source = Path(context) / "wheels", Path(context) / "source"
        shutil.copytree(dependencies, wheels)
        # The wheel from a copy of exactly the hashed files: a build in the tree would reuse
        # its build/ folder, stale modules included.
        for name in _SOURCES:
            if (REPO / name).is_dir():
                ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
                shutil.copytree(REPO / name, source / name, symlinks=True, ignore=ignore)
            else:
                (source / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO / name, source / name)
        wheel = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(source)]
        _logged(log, wheel, "pip wheel")
        build = ["podman", "build", "--build-arg", f"BASE={base}", "--build-arg", f"SOURCES={sources}",
                 "-t", tag, "-f", str(CONTAINERFILE), context]  # fmt: skip
        _logged(log, build, f"podman build of {tag}")


def _remove_older(tag: str) -> None:
    """Earlier builds' tags (each a whole image once the tree changed): removed, unless a container uses one."""
    listed = subprocess.run(
        ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", "localhost/respawn"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    older = [t for t in listed.stdout.split() if re.fullmatch(r"localhost/respawn:[0-9a-f]{16}", t) and t != tag]
    if older:
        subprocess.run(["podman", "rmi", *older], capture_output=True, check=False, timeout=120)


def _dependency_wheels(work_dir: Path, log: Path) -> Path:
    """The project's dependencies as wheels, from the host's package index, in a folder named by their pins."""
    pins = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    folder = work_dir / f"wheels-{_digest(chr(10).join(sorted(pins)))}"
    if not folder.is_dir():
        partial = folder.with_suffix(".partial")
        shutil.rmtree(partial, ignore_errors=True)
        _logged(log, [sys.executable, "-m", "pip", "wheel", "-q", "-w", str(partial), *pins], "pip wheel")
        partial.rename(folder)
    return folder


def _sources_digest(base: str) -> str:
    digest = hashlib.sha256(base.encode())
    for path in _source_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _source_files() -> Iterator[Path]:
    for name in _SOURCES:
        top = REPO / name
        if top.is_file():
            yield top
            continue
        for folder, dirs, files in os.walk(top):  # links (respawn/workflows...) not followed: named on their own
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            yield from (Path(folder) / f for f in sorted(files) if not f.endswith(".pyc"))


def _logged(log: Path, argv: list[str], what: str) -> None:
    with open(log, "ab") as out:
        done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, check=False, timeout=BUILD_TIMEOUT)
    if done.returncode != 0:
        raise EngineError(f"{what} failed (exit {done.returncode}); see {log}")


def main() -> None:
    """`make image`: build the Respawn image (in $RESPAWN_IMAGE_DIR, else /var/tmp/respawn-image) and print its tag."""
    work = Path(os.environ.get("RESPAWN_IMAGE_DIR", "/var/tmp/respawn-image"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"{respawn_image(work, work / 'build.log')} (and {release_tag()})")
