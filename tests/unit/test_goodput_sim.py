"""The goodput simulator (benchmarks/goodput.py, issue 15 item 4): small deterministic checks."""

import importlib.util
import math
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

from respawn.decision.checkpointing import ettr


def _load() -> ModuleType:
    """benchmarks/ is scripts, not a package: load the simulator from its file."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "goodput.py"
    spec = importlib.util.spec_from_file_location("goodput", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["goodput"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


goodput = _load()
HOUR = 3600.0


def test_the_calibration_is_llama_3s_run():
    # 419 / (16,384 × 54 × 24) = 1.9733e-5 per GPU-hour: one failure every 1,296/419 = 3.093 h at 16,384 GPUs
    assert goodput.FAILURES_PER_GPU_S * 3600 == pytest.approx(1.9733e-5, rel=1e-4)
    assert goodput.mtbf_s(16_384) / HOUR == pytest.approx(3.093, abs=1e-3)
    assert goodput.mtbf_s(1_024) == pytest.approx(16 * goodput.mtbf_s(16_384))


def test_with_no_failures_ettr_is_one_minus_the_checkpoint_overhead():
    # 100 segments of 600 s compute + 60 s save: 600/660
    horizon = 100 * 660.0
    assert goodput.simulate([], horizon, 600, 60, 300) == pytest.approx(600 / 660)
    assert goodput.failure_times(random.Random(1), math.inf, horizon) == []


def test_a_failure_loses_the_work_since_the_last_checkpoint_and_the_recovery():
    # 10 segments of 100 + 10 s over 1,100 s; a failure at 250 s: 2 segments kept (200 s), 30 s redone,
    # recovery to 350 s, then 750 s left: 6 segments (600 s) and 90 s unsaved but done: 890/1,100
    assert goodput.simulate([250.0], 1100, 100, 10, 100) == pytest.approx(890 / 1100)
    # struck again at 300 s while recovering: recovery starts over, training again at 400 s; 700 s left:
    # 6 segments (600 s) and 40 s unsaved: 840/1,100
    assert goodput.simulate([250.0, 300.0], 1100, 100, 10, 100) == pytest.approx((200 + 600 + 40) / 1100)


def test_a_seed_gives_the_same_answer_twice():
    once = goodput.run(16_384, goodput.PROFILES, None, 60, 120, 10, 3)
    again = goodput.run(16_384, goodput.PROFILES, None, 60, 120, 10, 3)
    assert once == again


def test_doubling_detection_time_lowers_ettr():
    base = goodput.PROFILES[0]
    slower = goodput.Profile("slower", 2 * base.detection_s, base.action_s, base.restart_s, "test")
    _, cells = goodput.run(16_384, (base, slower), None, 60, 120, 54, 5)
    assert cells["slower"].median < cells[base.name].median
    assert cells["slower"].model < cells[base.name].model
    assert cells[base.name].gain == 0 and cells["slower"].gain < 0  # paired with the first profile, seed by seed


def test_the_simulation_agrees_with_daly_s_formula():
    # τ = 600 s, C = 30 s, M = 1 h, R = 120 s; 2,000 h of wall time, about 2,000 failures
    mtbf, horizon = HOUR, 2_000 * HOUR
    failures = goodput.failure_times(random.Random(7), mtbf, horizon)
    simulated = goodput.simulate(failures, horizon, 600, 30, 120)
    # 600 / (3,600 · e^(120/3,600) · (e^(630/3,600) − 1)) = 600 / (3,600 · 1.03390 · 0.19125) = 0.8429
    expected = ettr(600, 30, mtbf, 120)
    assert expected == pytest.approx(0.8429, abs=1e-4)
    assert simulated == pytest.approx(expected, rel=0.02)


def test_the_svg_has_labelled_axes_and_a_line_per_series():
    lines = [
        goodput.Series("a", 0, False, [(1_024, 0.97), (16_384, 0.88)]),
        goodput.Series("b", 1, True, [(1_024, 0.96), (16_384, 0.85)]),
    ]
    picture = goodput.svg(lines, "test")
    assert picture.startswith("<svg") and picture.count("<polyline") == 2
    assert "ETTR (productive / wall time)" in picture and "GPUs in the job" in picture
