"""What one detector poll of a log server costs as the number of enrolled jobs grows.

    python benchmarks/logserver_poll.py [--jobs 10,100,1000] [--nodes 64] [--polls 20] [--runs 5]

Against the Loki and VictoriaLogs fakes (tests/fakes/: stdlib HTTP servers in this
process, so the time is mostly theirs and Python's HTTP, not a real server's), the
detector's `StreamFollower` (respawn/detection/logfollow.py) polls N enrolled jobs and
the nodes' kernel streams; before each poll every job prints one line and one job
prints a flood (20 000 lines). Reported, median over the runs: requests per poll, wall
time per poll, and in how many polls every quiet job's line was delivered (the flood's
isolation: 1 means never delayed).
"""

import argparse
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from respawn.attribution.matcher import Matcher  # noqa: E402
from respawn.attribution.runbook import DEFAULT_DIR, Catalogue  # noqa: E402
from respawn.config.cluster import LogSettings  # noqa: E402
from respawn.detection.logfollow import StreamFollower  # noqa: E402
from respawn.scheduler.slurm import JobInfo, NodeInfo  # noqa: E402
from respawn.sources.logstream import open_stream  # noqa: E402
from tests.fakes.loki import FakeLoki  # noqa: E402
from tests.fakes.victorialogs import FakeVictoriaLogs  # noqa: E402

FLOOD = 20_000


def run(source: str, jobs: int, nodes: int, polls: int, matcher: Matcher) -> tuple[float, float, float]:
    fake = FakeLoki() if source == "loki" else FakeVictoriaLogs()
    fake.start()
    try:
        settings = LogSettings.model_validate(
            {"job_output": "/x/{job_id}", "source": source, "server": {"url": fake.url, "timeout_s": 10}}
        )
        stream = open_stream(settings)
        assert stream is not None
        follower = StreamFollower(stream, matcher, datetime.now(UTC) - timedelta(seconds=1))
        started = datetime.now(UTC)  # the jobs start as the detector watches: their lines are news
        listed = [JobInfo(job_id=j, state="RUNNING", start_time=started) for j in range(1, jobs + 1)]
        node_list = [NodeInfo(name=f"node{n}", state="allocated") for n in range(1, nodes + 1)]
        for node in node_list:  # every node has a kernel stream, as at a site
            fake.push({"node": node.name, "stream": "kernel"}, "kernel: booted", time.time_ns() - 10**9)  # type: ignore[attr-defined]
        cursors = {j.job_id: None for j in listed}
        requests, seconds, waits = [], [], []
        pending: dict[int, int] = {}  # job -> the poll its line was printed before
        for n in range(polls):
            now = time.time_ns()
            for job in listed[1:]:
                fake.push({"job_id": str(job.job_id), "stream": "stdout"}, f"step {n} loss 1.0", now)  # type: ignore[attr-defined]
                pending.setdefault(job.job_id, n)
            if n == 0:
                for i in range(FLOOD):
                    fake.push({"job_id": "1", "stream": "stdout"}, f"flood {i}", now - i)  # type: ignore[attr-defined]
            before, began = len(fake.requests), time.perf_counter()
            polled = follower.poll([(j, cursors[j.job_id]) for j in listed], node_list)
            seconds.append(time.perf_counter() - began)
            requests.append(len(fake.requests) - before)
            for job_id, got in polled.jobs.items():
                cursors[job_id] = got.cursor  # type: ignore[assignment]
                if job_id in pending and got.lines:
                    waits.append(n - pending.pop(job_id) + 1)
        follower.close()
        return statistics.median(requests), statistics.median(seconds), max(waits)
    finally:
        fake.down()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jobs", default="10,100,1000")
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--polls", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    matcher = Matcher.from_catalogue(Catalogue.load(DEFAULT_DIR))
    print("| server | jobs | nodes | requests per poll | ms per poll | polls to deliver a quiet job's line (worst) |")
    print("|---|---|---|---|---|---|")
    for source in ("loki", "victorialogs"):
        for jobs in (int(j) for j in args.jobs.split(",")):
            runs = [run(source, jobs, args.nodes, args.polls, matcher) for _ in range(args.runs)]
            req = statistics.median(r[0] for r in runs)
            ms = statistics.median(r[1] for r in runs) * 1000
            worst = max(r[2] for r in runs)
            print(f"| {source} | {jobs} | {args.nodes} | {req:g} | {ms:.1f} | {worst:g} |", flush=True)


if __name__ == "__main__":
    main()
