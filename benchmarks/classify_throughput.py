"""How fast a whole job log is classified: the combined matcher against the naive loop.

    python benchmarks/classify_throughput.py [--lines N] [--runs R] [--naive-lines M] [--failure-every K]

Generates a mixed log of N lines (default one million): mostly healthy progress
lines, NCCL INFO lines and warnings, with a failure every K lines (default ten
thousand; a hundred makes a log dense with failures, where blocks are read line
by line). On
one core (the process is pinned to one CPU) it times, median of R runs:

- classify: `classify_text` over the whole log, as `respawn classify` reads it;
- scan: `Matcher.scan` over the lines (one RE2 set scan per block of lines);
- per line: `Matcher.failure` on every line (one RE2 set scan per line);
- naive: every runbook regex searched on every line, one after the other. This
  is slow enough that it runs on the first M lines and is scaled to N.
"""

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import re2

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from respawn.attribution.attribute import classify_text  # noqa: E402
from respawn.attribution.matcher import Matcher  # noqa: E402
from respawn.attribution.runbook import Catalogue  # noqa: E402

HEALTHY = [
    "iteration {i:>8}/ 1000000 | consumed samples: {s:>12} | elapsed time per iteration (ms): {ms:.1f} | "
    "learning rate: 1.500E-04 | global batch size:   512 | lm loss: {loss:.6E} | loss scale: 1.0 | "
    "grad norm: {g:.3f} | number of skipped iterations:   0 | number of nan iterations:   0 |",
    "{{'loss': {loss:.4f}, 'grad_norm': {g:.4f}, 'learning_rate': 1.9e-05, 'epoch': {e:.2f}}}",
    " 42%|████▏     | {i}/240000 [3:01:11<4:10:09, 9.21it/s, loss={loss:.3f}]",
    "[rank{r}]: step {i} loss {loss:.4f} tokens/s 182133",
    "gpu-{n:03d}:{p}:{p} [{r}] NCCL INFO Channel {c:02d}/0 : {r}[{r}] -> {n}[0] [send] via NET/IB/0/GDRDMA",
    "gpu-{n:03d}:{p}:{p} [{r}] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared "
    "object file: No such file or directory",
    "[2030-01-01 10:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0, lr=[0.0001]",
    "/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have "
    "requires_grad=True. Gradients will be None",
    "[2030-01-01 10:00:00,000] [INFO] [loss_scaler.py:183:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping "
    "step. Attempted loss scale: 65536, reducing to 32768",
]
FAILURES = [
    "[rank{r}]:[E1 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum={i}, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600103 milliseconds before timing out.",
    "[rank{r}]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "[rank{r}]: NVRM: Xid (PCI:0000:3b:00): 79, pid={p}, name=python, GPU has fallen off the bus.",
    "gpu-{n:03d}:{p}:{p} [{r}] NCCL WARN NET/IB : Got completion from peer 10.0.0.{r}<4000> with error 12, "
    "opcode 0, len 0, vendor err 129 (Recv)",
    "[rank{r}]: KeyError: 'labels'",
]


def make_log(n: int, seed: int = 7, failure_every: int = 10_000) -> list[str]:
    rnd = random.Random(seed)
    lines = []
    for i in range(n):
        template = rnd.choice(FAILURES) if i % failure_every == failure_every - 1 else rnd.choice(HEALTHY)
        lines.append(
            template.format(
                i=i,
                s=i * 512,
                ms=rnd.uniform(900, 1100),
                loss=rnd.uniform(1, 3),
                g=rnd.uniform(0.5, 2),
                e=i / 1e5,
                r=rnd.randrange(8),
                n=rnd.randrange(64),
                p=rnd.randrange(1000, 99999),
                c=rnd.randrange(32),
            )
        )
    return lines


def median_seconds(work: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        work()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--naive-lines", type=int, default=20_000)
    parser.add_argument("--failure-every", type=int, default=10_000)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})  # one core, as promised

    catalogue = Catalogue.load()
    matcher = Matcher.from_catalogue(catalogue)
    lines = make_log(args.lines, failure_every=args.failure_every)
    text = "\n".join(lines)
    regexes = [re2.compile(r) for r in matcher.regexes]
    sample = lines[: args.naive_lines]

    def naive() -> int:
        return sum(1 for line in sample for regex in regexes if regex.search(line) is not None)

    attribution = classify_text(catalogue, matcher, text)
    classify_s = median_seconds(lambda: classify_text(catalogue, matcher, text), args.runs)
    scan_s = median_seconds(lambda: list(matcher.scan(lines)), args.runs)
    matcher_s = median_seconds(lambda: [matcher.failure(line) for line in lines], args.runs)
    naive_s = median_seconds(naive, max(1, args.runs // 2)) * len(lines) / len(sample)

    print(f"log: {len(lines):,} lines, {len(text) / 1e6:.0f} MB, {len(regexes)} patterns, one core")
    print(f"verdict: {attribution.failure_class.value} ({attribution.pattern}) nodes={attribution.nodes}")
    print(f"classify_text, whole log        {classify_s:7.2f} s   {len(lines) / classify_s / 1e6:5.2f} M lines/s")
    print(f"combined matcher, scan          {scan_s:7.2f} s   {len(lines) / scan_s / 1e6:5.2f} M lines/s")
    print(f"combined matcher, per line      {matcher_s:7.2f} s   {len(lines) / matcher_s / 1e6:5.2f} M lines/s")
    print(f"naive loop (from {len(sample):,} lines)  {naive_s:7.2f} s   {len(lines) / naive_s / 1e6:5.2f} M lines/s")
    print(f"speed-up over the naive loop: scan {naive_s / scan_s:.0f}x, per line {naive_s / matcher_s:.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
