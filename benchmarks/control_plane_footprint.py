"""What the control plane's processes cost at rest, in the containers deploy/kubernetes/
describes (started with `podman kube play`, tests/containers/kube_play.py): each process's
CPU (share of one core) over several windows and its resident memory, once the worker polls
its task queue and the server answers. An idle worker and server are the floor a cluster's
incidents add to; the detector's cost per listed job is benchmarks' poll figures, not this.

    python benchmarks/control_plane_footprint.py --runs 5 --window 20
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

from tests.containers.kube_play import PODS, SERVER, built_image, played, podman, pollers, running, until

WORK = Path(os.environ.get("RESPAWN_DEPLOY_TEST_DIR", "/tmp/respawn-deploy"))
CONTAINERS = {"temporal (dev server)": "respawn-temporal-pod-0-temporal",
              "worker": "respawn-worker-pod-0-worker",
              "server": "respawn-server-pod-0-server"}  # fmt: skip
TICKS = os.sysconf("SC_CLK_TCK")


def sample(container: str) -> tuple[float, float]:
    """(CPU seconds so far, resident MiB) of the container's process (pid 1)."""
    text = podman("exec", container, "cat", "/proc/1/stat", "/proc/1/status").stdout
    fields = text.split(")", 1)[1].split()  # after the command name, which may hold spaces
    cpu = (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime
    rss_kb = next(int(line.split()[1]) for line in text.splitlines() if line.startswith("VmRSS:"))
    return cpu, rss_kb / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="windows measured")
    parser.add_argument("--window", type=float, default=20.0, help="seconds per window")
    parser.add_argument("--settle", type=float, default=20.0, help="seconds after start before the first window")
    args = parser.parse_args()
    tag = built_image(WORK)
    size = int(podman("image", "inspect", "--format", "{{.Size}}", tag).stdout.strip())
    with played(WORK, tag):
        for pod in PODS:
            until(lambda pod=pod: running(pod), f"pod {pod} running")
        until(lambda: len(pollers()) >= 2, "the worker polling its task queue")
        until(lambda: httpx.get(f"{SERVER}/healthz", timeout=2).status_code == 200, "the server")
        time.sleep(args.settle)  # past start-up: imports, connections, the first polls
        cpu: dict[str, list[float]] = {name: [] for name in CONTAINERS}
        rss: dict[str, list[float]] = {name: [] for name in CONTAINERS}
        before = {name: sample(c) for name, c in CONTAINERS.items()}
        for _ in range(args.runs):
            began = time.monotonic()
            time.sleep(args.window)
            elapsed = time.monotonic() - began
            for name, container in CONTAINERS.items():
                now = sample(container)
                cpu[name].append(100 * (now[0] - before[name][0]) / elapsed)
                rss[name].append(now[1])
                before[name] = now
    print(f"image {tag}: {size / 1e6:.0f} MB; {args.runs} windows of {args.window:.0f} s, medians")
    print("| process | CPU, % of one core | resident memory (MiB) |")
    print("|---|---|---|")
    for name in CONTAINERS:
        print(f"| {name} | {statistics.median(cpu[name]):.2f} | {statistics.median(rss[name]):.0f} |")


if __name__ == "__main__":
    main()
