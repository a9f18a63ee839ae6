"""Goodput at scale: a discrete-event simulation of one training job on N GPUs (issue 15, item 4).

The job computes for τ seconds, saves a checkpoint for C seconds, and again. Failures arrive as
a Poisson process whose rate is proportional to the GPUs (calibrated from Llama 3's run, below),
at the same wall-clock times for every recovery profile (common random numbers: the hardware
fails the same way whoever recovers it). A failure costs the work since the last completed
checkpoint, then recovery: detection + action + the rung's restart + the framework's own restart
(process start, NCCL init, checkpoint load). A failure during recovery starts recovery again, as
in Daly's model (respawn.decision.checkpointing.ettr), so the two can be compared.

ETTR (effective training time ratio) = productive compute / wall time, for each profile at 1k,
4k, 16k and 100k GPUs, the median over seeds with the range; a Markdown table on stdout, an SVG
plot (ETTR against GPUs) in benchmarks/goodput.svg.

Usage: .venv/bin/python benchmarks/goodput.py [--quick] [--seeds 51] [--days 54] [--save-s 60]
"""

import argparse
import math
import random
import statistics
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from respawn.decision.checkpointing import daly_interval, ettr

# --- Calibration -------------------------------------------------------------------------------
# Meta, "The Llama 3 Herd of Models" (2024), §3.3.4: 419 unexpected interruptions in a 54-day
# snapshot of the 405B pre-training on 16,384 H100s (466 in all, 47 of them planned). That is
# 419 / (16,384 × 54 × 24 GPU-hours) = 1.97e-5 failures per GPU-hour, one every 3.09 h at 16k.
LLAMA3_GPUS = 16_384
LLAMA3_DAYS = 54
LLAMA3_UNPLANNED = 419
FAILURES_PER_GPU_S = LLAMA3_UNPLANNED / (LLAMA3_GPUS * LLAMA3_DAYS * 86_400)

# --- Defaults, each with its source ------------------------------------------------------------
SCALES = (1_024, 4_096, 16_384, 100_000)  # the table's job sizes
PLOT_SCALES = (1_024, 2_048, 4_096, 8_192, 16_384, 32_768, 50_000, 100_000)
SAVE_S = 60.0  # assumption: a blocking save of the sharded state; the figure is the caller's to set
FRAMEWORK_RESTART_S = 120.0  # assumption: process start, NCCL init, checkpoint load at scale; every profile pays it
FIXED_INTERVAL_S = 1800.0  # a common "every 30 min" habit, for comparison with Daly's optimum
DAYS = LLAMA3_DAYS  # one run as long as Llama 3's snapshot
SEEDS = 51


@dataclass(frozen=True)
class Profile:
    """How one recovery system spends the time from a fault to training again (seconds)."""

    name: str
    detection_s: float  # fault → incident noticed
    action_s: float  # noticed → the job released / relaunched
    restart_s: float  # released → first step, the scheduler's or launcher's part (without the framework's)
    source: str

    def recovery_s(self, framework_restart_s: float) -> float:
        """Fault to training again: the profile's own parts plus the framework's restart."""
        return self.detection_s + self.action_s + self.restart_s + framework_restart_s


# Respawn's sandbox figures (BENCHMARKS.md, "Recovery latency", 2026-12-01, medians of 5):
# detection 0.42 s, action 1.66 s. Fault to first step again on the sandbox (issue 14,
# benchmarks/layered_recovery.py, BENCHMARKS.md, median of 5): 6.53 s in place (the launcher
# relaunches the step), 10.54 s by requeue; less detection and action, the restart parts are
# 6.53 − 2.08 and 10.54 − 2.08 s.
RESPAWN_DETECTION_S, RESPAWN_ACTION_S = 0.42, 1.66
IN_PLACE_FAULT_TO_STEP_S, REQUEUE_FAULT_TO_STEP_S = 6.53, 10.54
_RESPAWN_PARTS = RESPAWN_DETECTION_S + RESPAWN_ACTION_S
PROFILES = (
    # NVIDIA Recovery's production means (as BENCHMARKS.md quotes them): 69 s detection, 94 s
    # action, then a job-level requeue; its scheduler part taken as the sandbox's requeue floor,
    # the same as Respawn's requeue, so that the two differ only where they were measured.
    Profile(
        "NVIDIA Recovery, requeue",
        69.0,
        94.0,
        REQUEUE_FAULT_TO_STEP_S - _RESPAWN_PARTS,
        "NVIDIA production means; requeue as sandbox",
    ),
    Profile(
        "Respawn, requeue",
        RESPAWN_DETECTION_S,
        RESPAWN_ACTION_S,
        REQUEUE_FAULT_TO_STEP_S - _RESPAWN_PARTS,
        "sandbox: BENCHMARKS.md, layered_recovery.py",
    ),
    Profile(
        "Respawn, in job",
        RESPAWN_DETECTION_S,
        RESPAWN_ACTION_S,
        IN_PLACE_FAULT_TO_STEP_S - _RESPAWN_PARTS,
        "sandbox: BENCHMARKS.md, layered_recovery.py",
    ),
)


def mtbf_s(gpus: int) -> float:
    """Mean time between failures of a job on `gpus` GPUs: the rate scales with the GPUs."""
    return math.inf if gpus <= 0 or FAILURES_PER_GPU_S == 0 else 1 / (FAILURES_PER_GPU_S * gpus)


def failure_times(rng: random.Random, mtbf: float, horizon_s: float) -> list[float]:
    """A Poisson process's arrival times up to the horizon: exponential gaps of mean `mtbf`."""
    times: list[float] = []
    if not math.isfinite(mtbf):
        return times
    t = rng.expovariate(1 / mtbf)
    while t < horizon_s:
        times.append(t)
        t += rng.expovariate(1 / mtbf)
    return times


def progress(span_s: float, interval_s: float, save_s: float) -> tuple[float, float]:
    """Over `span_s` from a checkpoint: (work saved in completed segments, work computed after the last save)."""
    segment = interval_s + save_s
    done = math.floor(span_s / segment)
    return done * interval_s, min(span_s - done * segment, interval_s)


def simulate(failures: Sequence[float], horizon_s: float, interval_s: float, save_s: float, recovery_s: float) -> float:
    """ETTR of one run: walk the failures in time order, counting the compute each checkpoint saved.

    From a checkpoint the job runs until the next failure; the segments it completed are kept,
    the rest is redone. Then it recovers for `recovery_s` of failure-free time (a failure during
    recovery starts it again) and runs on from its last checkpoint. At the horizon, the compute
    since the last save counts: it was done, and nothing undid it.
    """
    productive = 0.0
    t = 0.0  # when the job last (re)started from a checkpoint
    events: Iterator[float] = iter(failures)
    upcoming = next(events, math.inf)
    while t < horizon_s:
        if upcoming >= horizon_s:
            saved, unsaved = progress(horizon_s - t, interval_s, save_s)
            return (productive + saved + unsaved) / horizon_s
        productive += progress(upcoming - t, interval_s, save_s)[0]
        recovering_from = upcoming
        upcoming = next(events, math.inf)
        while upcoming < recovering_from + recovery_s:  # struck again while recovering: start over
            recovering_from = upcoming
            upcoming = next(events, math.inf)
        t = recovering_from + recovery_s
    return productive / horizon_s


@dataclass(frozen=True)
class Cell:
    """One profile at one size: the simulated median and range, and Daly's model for the same.

    `gain` is the median, seed by seed, of this profile's ETTR less the first profile's on the same
    failures (paired: run-to-run spread is larger than the gap between profiles at small sizes,
    the gap on a given run is not); `gain_low` the smallest.
    """

    median: float
    low: float
    high: float
    model: float
    gain: float
    gain_low: float


def run(
    gpus: int,
    profiles: Sequence[Profile],
    interval_s: float | None,
    save_s: float,
    framework_restart_s: float,
    days: float,
    seeds: int,
) -> tuple[float, dict[str, Cell]]:
    """Each profile on the same failures, seed by seed; None for the interval means Daly's optimum."""
    mtbf = mtbf_s(gpus)
    tau = interval_s if interval_s is not None else (daly_interval(save_s, mtbf) or math.inf)
    horizon = days * 86_400
    runs: dict[str, list[float]] = {p.name: [] for p in profiles}
    for seed in range(seeds):
        failures = failure_times(random.Random(seed), mtbf, horizon)
        for p in profiles:
            runs[p.name].append(simulate(failures, horizon, tau, save_s, p.recovery_s(framework_restart_s)))
    first = runs[profiles[0].name]
    cells = {}
    for p in profiles:
        gains = [mine - theirs for mine, theirs in zip(runs[p.name], first, strict=True)]
        cells[p.name] = Cell(
            statistics.median(runs[p.name]),
            min(runs[p.name]),
            max(runs[p.name]),
            ettr(tau, save_s, mtbf, p.recovery_s(framework_restart_s)) or 0.0,
            statistics.median(gains),
            min(gains),
        )
    return tau, cells


def duration(seconds: float) -> str:
    """Seconds for a table: '9.2 min', '3.1 h'."""
    return f"{seconds / 60:.1f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def table(
    title: str,
    rows: list[tuple[int, float, dict[str, Cell]]],
    profiles: Sequence[Profile],
    days: float,
) -> str:
    """A Markdown table: a row per size, a column per profile, and what the fastest gets back over the slowest."""
    first, last = profiles[0].name, profiles[-1].name
    head = [
        "GPUs",
        "MTBF",
        "interval",
        *(p.name for p in profiles),
        f"GPU-h back per {days:g}-day run, {last} vs {first} (paired median; least)",
    ]
    lines = [f"**{title}**", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for gpus, tau, cells in rows:
        parts = [f"{gpus:,}", duration(mtbf_s(gpus)), duration(tau)]
        parts += [
            f"**{c.median:.3f}** ({c.low:.3f}–{c.high:.3f}; model {c.model:.3f})"
            for c in (cells[p.name] for p in profiles)
        ]
        gpu_hours = gpus * days * 24
        parts.append(f"{cells[last].gain * gpu_hours:,.0f} (at least {cells[last].gain_low * gpu_hours:,.0f})")
        lines.append("| " + " | ".join(parts) + " |")
    return "\n".join(lines)


COLOURS = ("#c0392b", "#2874a6", "#1e8449", "#7d3c98", "#b9770e")


@dataclass(frozen=True)
class Series:
    """One line of the plot: a profile (its colour) at one checkpoint policy (solid or dashed)."""

    name: str
    colour: int
    dashed: bool
    points: list[tuple[int, float]]


def svg(series: Sequence[Series], subtitle: str, notes: Sequence[str] = ()) -> str:
    """ETTR against GPUs (log scale), one line per series; hand-written SVG, axes labelled."""
    width, height, left, right, top, bottom = 880, 460, 70, 300, 50, 60
    xs = [g for line in series for g, _ in line.points]
    ys = [e for line in series for _, e in line.points]
    x0, x1 = math.log10(min(xs)), math.log10(max(xs))
    y0 = max(0.0, math.floor(min(ys) * 20 - 1) / 20)
    y1 = 1.0

    def px(g: float) -> float:
        return left + (math.log10(g) - x0) / (x1 - x0) * (width - left - right)

    def py(e: float) -> float:
        return top + (y1 - e) / (y1 - y0) * (height - top - bottom)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{left}" y="22" font-size="15">ETTR against job size (median over seeds)</text>',
        f'<text x="{left}" y="40" fill="#555">{subtitle}</text>',
    ]
    tick = y0
    while tick <= y1 + 1e-9:
        y = py(tick)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{width - right}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{tick:.2f}</text>')
        tick += 0.05
    for g in sorted(set(xs)):
        x = px(g)
        out.append(f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{height - bottom}" stroke="#eee"/>')
        label = f"{g // 1024}k" if g % 1024 == 0 else f"{g / 1000:g}k"
        out.append(f'<text x="{x:.1f}" y="{height - bottom + 18}" text-anchor="middle">{label}</text>')
    out.append(f'<line x1="{left}" y1="{height - bottom}" x2="{width - right}" y2="{height - bottom}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{height - bottom}" stroke="black"/>')
    out.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 18}" text-anchor="middle">'
        "GPUs in the job (log scale; failures calibrated from Llama 3: 419 in 54 days on 16,384)</text>"
    )
    out.append(
        f'<text x="18" y="{(top + height - bottom) / 2}" text-anchor="middle" '
        f'transform="rotate(-90 18 {(top + height - bottom) / 2})">ETTR (productive / wall time)</text>'
    )
    for i, line in enumerate(series):
        colour = COLOURS[line.colour % len(COLOURS)]
        dash = ' stroke-dasharray="6 4"' if line.dashed else ""
        points = line.points
        path = " ".join(f"{px(g):.1f},{py(e):.1f}" for g, e in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>')
        out += [f'<circle cx="{px(g):.1f}" cy="{py(e):.1f}" r="3" fill="{colour}"/>' for g, e in points]
        ly = top + 10 + i * 20
        out.append(
            f'<line x1="{width - right + 15}" y1="{ly}" x2="{width - right + 40}" y2="{ly}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{width - right + 46}" y="{ly + 4}">{line.name}</text>')
    for j, note in enumerate(notes):  # under the legend
        out.append(f'<text x="{width - right + 15}" y="{top + 20 + (len(series) + j) * 20}" fill="#555">{note}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="5 seeds, a seconds-long run")
    parser.add_argument("--seeds", type=int, default=SEEDS)
    parser.add_argument("--days", type=float, default=DAYS, help="wall time of each simulated run")
    parser.add_argument("--save-s", type=float, default=SAVE_S, help="checkpoint save time C")
    parser.add_argument("--framework-restart-s", type=float, default=FRAMEWORK_RESTART_S)
    parser.add_argument("--fixed-interval-s", type=float, default=FIXED_INTERVAL_S)
    parser.add_argument("--svg", type=Path, default=Path(__file__).with_name("goodput.svg"))
    args = parser.parse_args(argv)
    seeds = 5 if args.quick else args.seeds

    print(
        f"Failures: {FAILURES_PER_GPU_S * 3600:.3g} per GPU-hour (Llama 3: {LLAMA3_UNPLANNED} in "
        f"{LLAMA3_DAYS} days on {LLAMA3_GPUS:,} GPUs). Save {args.save_s:g} s, framework restart "
        f"{args.framework_restart_s:g} s (assumptions), {args.days:g}-day runs, median of {seeds} seeds "
        "(range in brackets; 'model' is Daly's formula for the same figures).\n"
    )
    print("| profile | detection (s) | action (s) | restart (s) | + framework (s) | fault to training (s) | source |")
    print("|---|---|---|---|---|---|---|")
    for p in PROFILES:
        print(
            f"| {p.name} | {p.detection_s:g} | {p.action_s:g} | {p.restart_s:.2f} | {args.framework_restart_s:g} "
            f"| {p.recovery_s(args.framework_restart_s):.1f} | {p.source} |"
        )
    print()
    series: list[Series] = []
    fixed = f"every {args.fixed_interval_s / 60:g} min"
    for label, title, interval in (
        ("Daly's interval", "Checkpointing at Daly's optimum for each size", None),
        (fixed, f"Checkpointing {fixed}", args.fixed_interval_s),
    ):
        rows = []
        lines = [Series(f"{p.name}, {label}", i, interval is not None, []) for i, p in enumerate(PROFILES)]
        for gpus in sorted(set(SCALES) | set(PLOT_SCALES)):
            tau, cells = run(gpus, PROFILES, interval, args.save_s, args.framework_restart_s, args.days, seeds)
            for p, line in zip(PROFILES, lines, strict=True):
                line.points.append((gpus, cells[p.name].median))
            if gpus in SCALES:
                rows.append((gpus, tau, cells))
        series += lines
        print(table(title, rows, PROFILES, args.days))
        print()
    subtitle = (
        f"save {args.save_s:g} s, framework restart {args.framework_restart_s:g} s, {args.days:g}-day runs, "
        f"{seeds} seeds; solid: Daly's interval, dashed: every {args.fixed_interval_s / 60:g} min"
    )
    gap = abs(PROFILES[1].recovery_s(0) - PROFILES[2].recovery_s(0))
    notes = (
        f"{PROFILES[1].name} and {PROFILES[2].name.split(', ')[1]}",
        f"differ by {gap:.0f} s per failure:",
        "their lines overlap.",
    )
    args.svg.write_text(svg(series, subtitle, notes))
    print(f"Plot: {args.svg}")


if __name__ == "__main__":
    main()
