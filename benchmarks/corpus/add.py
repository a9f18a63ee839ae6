"""Add labelled excerpts to Respawn's own held-back corpus, split by a rule nobody chooses.

    python benchmarks/corpus/add.py NEW.jsonl

Each input line is one excerpt in the shape of ../shared/corpus/dev.jsonl (`id`,
`text`, `source`, `failure_class`, `cause_layer`, `node_implicated`,
`recoverable_by_restart`, `rationale`, optionally `fine_class`). The SHA-256 of
the text decides where it goes: `development.jsonl` (patterns may be written
while looking at it) or `validation.jsonl` (scored only at the end, never read
while writing patterns). A text already in either part, or in the shared dev
set, is skipped.
"""

import hashlib
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PARTS = {"development": HERE / "development.jsonl", "validation": HERE / "validation.jsonl"}
SHARED = HERE.parent.parent.parent / "shared" / "corpus" / "dev.jsonl"
CLASSES = {
    "gpu_hardware",
    "gpu_fault",
    "interconnect",
    "comm_timeout",
    "comm_error",
    "gpu_oom",
    "host_oom",
    "app_error",
    "numerical",
    "process_crash",
    "storage",
    "scheduler_limit",
    "node_failure",
    "launch",
    "slowdown",
    "hang",
    "benign",
}
LAYERS = {
    "hardware",
    "infrastructure_network",
    "system_software",
    "storage",
    "scheduler",
    "application",
    "benign",
    "ambiguous",
}
REQUIRED = (
    "id",
    "text",
    "source",
    "failure_class",
    "cause_layer",
    "node_implicated",
    "recoverable_by_restart",
    "rationale",
)


def part_of(text: str) -> str:
    return "validation" if hashlib.sha256(text.strip().encode()).digest()[0] % 2 else "development"


def _texts(path: Path) -> set[str]:
    if not path.exists():
        return set()
    return {json.loads(line)["text"].strip() for line in path.read_text().splitlines() if line.strip()}


def main() -> int:
    seen = set().union(*(_texts(p) for p in [*PARTS.values(), SHARED]))
    ids = {
        json.loads(line)["id"]
        for p in PARTS.values()
        if p.exists()
        for line in p.read_text().splitlines()
        if line.strip()
    }
    added = {name: 0 for name in PARTS}
    for n, line in enumerate(Path(sys.argv[1]).read_text().splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        missing = [k for k in REQUIRED if k not in row]
        if (
            missing
            or row["failure_class"] not in CLASSES
            or row["cause_layer"] not in LAYERS
            or row["recoverable_by_restart"] not in (True, False, "unknown")
            or not isinstance(row["node_implicated"], bool)
        ):
            print(f"line {n}: refused ({missing or 'a label outside the taxonomy'})", file=sys.stderr)
            continue
        text = row["text"].strip()
        if text in seen or row["id"] in ids:
            continue
        seen.add(text)
        ids.add(row["id"])
        name = part_of(text)
        with PARTS[name].open("a") as out:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        added[name] += 1
    print(f"added {added['development']} to development, {added['validation']} to validation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
