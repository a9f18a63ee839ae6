"""Detection and action latency of the whole recovery loop, measured by `respawn demo`.

Runs the demo N times on the local stack and prints each run and the medians,
beside NVIDIA Recovery's production figures (69 s detection, 94 s action, means).
Usage: .venv/bin/python benchmarks/recovery_latency.py --runs 5 [--fault xid] [--transport local|ssh|advisor]
"""

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

RESPAWN = Path(sys.executable).parent / "respawn"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--fault", default="xid")
    parser.add_argument("--transport", default="local")
    parser.add_argument(
        "--hostile-neighbours",
        action="store_true",
        help="hostile jobs beside the victim (respawn/sandbox/workload/hostile.py); the victim runs on 2 nodes",
    )
    args = parser.parse_args()
    hostile = ["--hostile-neighbours"] if args.hostile_neighbours else []
    runs = []
    for i in range(args.runs):
        # Each run on a fresh lab: otherwise the node record of the runs before
        # (node2 failing again and again) would drain node2, as it should.
        subprocess.run([str(RESPAWN), "sandbox", "down"], capture_output=True, check=True)
        out = subprocess.run(
            [str(RESPAWN), "demo", "--json", "--fault", args.fault, "--transport", args.transport, *hostile],
            capture_output=True,
            text=True,
            check=False,
        )
        if out.returncode != 0:
            print(f"run {i + 1}: failed (rc {out.returncode})\n{out.stderr[-2000:]}", file=sys.stderr)
            return 1
        result = json.loads(out.stdout.strip().splitlines()[-1])
        runs.append(result)
        print(
            f"run {i + 1}: detection {result['detection_latency_s']} s, action {result['action_latency_s']} s,"
            f" final {result['final_state']}, excluded {result['excluded_nodes']},"
            f" resumed from step {result['resumed_from_step']}",
            flush=True,
        )
    detection = statistics.median(r["detection_latency_s"] for r in runs)
    action = statistics.median(r["action_latency_s"] for r in runs)
    beside = ", beside hostile jobs" if hostile else ""
    print(f"\nmedian of {len(runs)} runs ({args.fault}, {args.transport} transport{beside}):")
    print(f"  detection latency (fault -> incident started): {detection:.2f} s   (NVIDIA Recovery: 69 s mean)")
    print(f"  action latency (incident started -> released): {action:.2f} s   (NVIDIA Recovery: 94 s mean)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
