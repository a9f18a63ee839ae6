"""What an assessment's node record costs as the decisions in its window grow (issue 17, storms).

    python benchmarks/node_record.py [--decisions 0,100,500,2000] [--naming 0.1] [--runs 5]

Every assessment counts the nodes other incidents named within the drain and systemic windows
(respawn/activities/assessment.py `_node_record`). In a storm every incident does so while the
others' decisions pile up, so the read's cost per decision is paid n times over. For each count
of decisions (a share `--naming` of them name a node, as in a storm of crashes mostly naming
none), in a fresh SQLite trail: the read as the assessment makes it (`AuditTrail.implicated`),
and every decision in the window read whole (`AuditTrail.query`, what it read before),
median of R runs, and what a storm of that many incidents pays in all (n reads, each
of half the decisions on average).
"""

import argparse
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from respawn.audit.details import DecidedDetails  # noqa: E402
from respawn.audit.trail import AuditTrail, EventType, incident_event  # noqa: E402

# A storm's decision as benchmarks/storm.py records it (its details' shape, not its values).
DETAILS = DecidedDetails(
    cluster_size=4,
    job_nodes=["node1"],
    interruption="the attempt ended FAILED",
    mode="action",
    reason="process_crash: restart (occurrence 1, no node to blame) (no launcher in the job: the ladder goes on at the requeue)",
    submitted="2026-12-05T08:17:52+00:00",
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", default="0,100,500,2000")
    parser.add_argument("--naming", type=float, default=0.1, help="share of the decisions that name a node")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(
        "| decisions in the window | lean read (implicated) | whole rows (query) | a storm of that many: lean | whole |"
    )
    print("|---|---|---|---|---|")
    for n in (int(x) for x in args.decisions.split(",")):
        lean, whole = _measure(n, args.naming, args.runs)
        print(f"| {n} | {lean * 1e3:.2f} ms | {whole * 1e3:.2f} ms | {lean * n / 2:.2f} s | {whole * n / 2:.2f} s |")
    return 0


def _measure(n: int, naming: float, runs: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        audit = AuditTrail(Path(tmp) / "audit.db")
        every = max(1, round(1 / naming)) if naming > 0 else 0
        for i in range(n):
            nodes = [f"node{i % 4 + 1}"] if every and i % every == 0 else []
            audit.record(
                incident_event(
                    EventType.DECIDED,
                    incident_id=f"i{i}",
                    cluster="c1",
                    job_id=i,
                    attempt=0,
                    nodes=nodes,
                    details=DETAILS,
                )
            )
        since = datetime.now(UTC) - timedelta(hours=1)
        lean = _median(lambda: audit.implicated(cluster="c1", since=since), runs)
        whole = _median(
            lambda: audit.query(cluster="c1", event_types=[EventType.DECIDED], since=since, limit=100_000), runs
        )
        audit.close()
    return lean, whole


def _median(read, runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        read()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


if __name__ == "__main__":
    raise SystemExit(main())
