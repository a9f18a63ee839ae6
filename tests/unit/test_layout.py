"""The layout's promises (ARCHITECTURE.md, Modules): what a stage may import."""

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Storage and network clients: none of them may come in with the wire types, which
# the workflow imports and which every stage exchanges.
_CLIENTS = [
    "sqlite3",
    "httpx",
    "asyncssh",
    "temporalio.client",
    "prometheus_api_client",
    "fastapi",
    "uvicorn",
    "docker",
    "subprocess",
]


def test_the_wire_types_import_no_storage_or_network_code():
    probe = (
        "import json, sys\n"
        "import respawn.wire.incident, respawn.wire.evidence, respawn.wire.attribution, respawn.wire.taxonomy\n"
        f"print(json.dumps([m for m in {_CLIENTS!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT)
    assert json.loads(out.stdout) == []


def test_code_imports_the_project_folders_only_through_respawn():
    """workflows/, activities/ and workers/ are installed as respawn.workflows etc.; a bare
    `import workflows` would load a second copy of the workflow under another name."""
    bare = {"workflows", "activities", "workers", "workload"}
    found = []
    for path in [
        *ROOT.glob("respawn/**/*.py"),
        *ROOT.glob("workflows/*.py"),
        *ROOT.glob("activities/*.py"),
        *ROOT.glob("workers/*.py"),
        *ROOT.glob("tests/**/*.py"),
        *ROOT.glob("benchmarks/*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else []
            )
            found += [f"{path.relative_to(ROOT)}: {n}" for n in names if n.split(".")[0] in bare]
    assert found == []


def test_no_two_test_modules_share_a_name():
    """The test folders are not packages: pytest refuses to collect a second module of a name
    (an aborted CI run, not a failed test)."""
    names = [p.name for p in (Path(__file__).parents[1]).rglob("test_*.py")]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_the_command_line_and_the_ssh_transport_import_without_a_warning():
    """What `respawn` imports to start prints nothing of its own: a dependency's deprecation
    notice (asyncssh under cryptography 51 printed ten lines) is noise before every command."""
    probe = "import respawn.surfaces.cli, respawn.scheduler.transport"
    out = subprocess.run([sys.executable, "-W", "error", "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
