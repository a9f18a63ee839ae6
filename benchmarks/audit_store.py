"""What the audit trail costs on each store: a SQLite file, and Debian's PostgreSQL on this host.

    python benchmarks/audit_store.py [--events N] [--writers W] [--runs R]

Each run starts from an empty store (a new file; a new database on a PostgreSQL
server started for the benchmark in /tmp and stopped at the end) and measures,
median of R runs:

- record: one event written (`AuditTrail.record`: the idempotent insert, and on
  PostgreSQL the lock that keeps ids visible in order), N events one after the other;
- again: the same N events written again (each found there, nothing inserted);
- job query: a job's last 100 events (`query(job_id=...)`), 200 times;
- read all: the N events in one query;
- W writers: W threads, each with its own trail (as separate hosts would be),
  writing N/W events each at once: events per second in all.
"""

import argparse
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pydantic import PostgresDsn  # noqa: E402

from respawn.audit.trail import AuditEvent, AuditTrail, EventType  # noqa: E402
from respawn.sandbox import postgres  # noqa: E402
from respawn.store.engine import Location  # noqa: E402


def events(n: int, prefix: str) -> list[AuditEvent]:
    return [
        AuditEvent(
            key=f"incident-c1-{i % 50}-s1-0/{prefix}{i}",
            event_type=EventType.DETECTED,
            cluster="c1",
            job_id=i % 50,
            nodes=["node2", "node3"],
            details={"kind": "crash", "line": "NCCL error: unhandled system error " * 3},
        )
        for i in range(n)
    ]


def run(location: Location, n: int, writers: int) -> dict[str, float]:
    trail = AuditTrail(location)
    batch = events(n, "e")
    t = time.perf_counter()
    for e in batch:
        trail.record(e)
    record = (time.perf_counter() - t) / n
    t = time.perf_counter()
    for e in batch:
        trail.record(e)
    again = (time.perf_counter() - t) / n
    t = time.perf_counter()
    for i in range(200):
        trail.query(job_id=i % 50, limit=100)
    job_query = (time.perf_counter() - t) / 200
    t = time.perf_counter()
    assert len(trail.query(limit=n)) == n
    read_all = time.perf_counter() - t
    trail.close()
    trails = [AuditTrail(location) for _ in range(writers)]
    shares = [events(n // writers, f"w{w}-") for w in range(writers)]
    barrier = threading.Barrier(writers + 1)

    def write(w: int) -> None:
        barrier.wait()
        for e in shares[w]:
            trails[w].record(e)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
    for th in threads:
        th.start()
    barrier.wait()
    t = time.perf_counter()
    for th in threads:
        th.join()
    concurrent = (n // writers * writers) / (time.perf_counter() - t)
    for tr in trails:
        tr.close()
    return {
        "record (ms)": record * 1e3,
        "again (ms)": again * 1e3,
        "job query (ms)": job_query * 1e3,
        "read all (ms)": read_all * 1e3,
        f"{writers} writers (events/s)": concurrent,
    }


def measure(name: str, new_store: Callable[[], Location], n: int, writers: int, runs: int) -> None:
    results = [run(new_store(), n, writers) for _ in range(runs)]
    for key in results[0]:
        values = [r[key] for r in results]
        shown = " / ".join(f"{v:.3g}" for v in values)
        print(f"{name:10} {key:22} {shown}  median {statistics.median(values):.3g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="respawn-store-bench-"))
    server = postgres.Postgres(Path(tempfile.mkdtemp(prefix="respawn-pg-")), port=25433)
    try:
        measure("sqlite", lambda: folder / f"{uuid.uuid4().hex}.db", args.events, args.writers, args.runs)
        postgres.start(server)
        measure(
            "postgresql",
            lambda: PostgresDsn(postgres.create_database(server, f"bench_{uuid.uuid4().hex[:12]}")),
            args.events,
            args.writers,
            args.runs,
        )
    finally:
        postgres.stop(server)
        shutil.rmtree(server.folder, ignore_errors=True)
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
