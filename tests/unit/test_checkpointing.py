"""Checkpoint-interval advice (issue 15, item 3): Young/Daly against numbers worked by hand."""

import math

import pytest

from respawn.decision.checkpointing import (
    advise,
    daly_interval,
    duration,
    ettr,
    phrase,
    young_interval,
)

C = 38.0  # s per save
M = 4.1 * 3600  # 14,760 s between failures


def test_young_against_the_worked_number():
    # sqrt(2 · 38 · 14,760) = sqrt(1,121,760) = 1,059.13 s, 17.7 min
    assert young_interval(C, M) == pytest.approx(1059.13, abs=0.01)


def test_daly_against_the_worked_number():
    # ξ = C/(2M) = 38/29,520 = 0.0012873, sqrt(ξ) = 0.035879
    # 1 + 0.035879/3 + 0.0012873/9 = 1 + 0.011960 + 0.000143 = 1.012103
    # 1,059.13 · 1.012103 = 1,071.95; − 38 = 1,033.95 s (17.2 min)
    assert daly_interval(C, M) == pytest.approx(1033.95, abs=0.01)


@pytest.mark.parametrize(
    ("mtbf_min", "published_min"),
    [(24 * 60, 117), (6 * 60, 57), (15, 9.1)],  # Daly 2006, figures 3, 4, 5: δ = 5 min
)
def test_daly_gives_the_papers_own_optima(mtbf_min: float, published_min: float):
    # e.g. M = 24 h: sqrt(2 · 5 · 1440) = 120; ξ = 5/2880; 120 · (1 + 0.01389 + 0.00019) − 5 = 116.7 ≈ 117
    got = daly_interval(5 * 60, mtbf_min * 60)
    assert got is not None
    assert got / 60 == pytest.approx(published_min, abs=0.5 if published_min > 10 else 0.05)


def test_young_and_daly_agree_when_saves_are_short():
    # C/M = 1e-6: Daly's corrections are of order sqrt(C/2M) ≈ 0.07%, and −C is 1/1400 of τ
    young, daly = young_interval(1.0, 1e6), daly_interval(1.0, 1e6)
    assert young is not None and daly is not None
    assert daly == pytest.approx(young, rel=2e-3)
    # ... and part ways as C approaches M: at C = M/2, 100 · (1 + 0.5/3 + 0.25/9) − 50 = 69.4 against Young's 100
    young, daly = young_interval(50.0, 100.0), daly_interval(50.0, 100.0)
    assert young is not None and daly is not None
    assert daly < 0.9 * young


def test_a_save_of_2m_or_more_checkpoints_once_per_mtbf():
    assert daly_interval(80.0, 40.0) == 40.0
    assert daly_interval(80.0, 40.0001) != 40.0001  # just below the boundary the series applies


def test_ettr_against_the_worked_number():
    # Daly's complete form: (τ + C)/M = 0.124526, e^x − 1 = 0.132612; 1,800/(14,760 · 0.132612) = 0.91962
    assert ettr(1800, C, M) == pytest.approx(0.91962, abs=1e-5)
    # a restart of 120 s per failure scales it by e^(−120/14,760) = 0.99190: 0.91217
    assert ettr(1800, C, M, 120) == pytest.approx(0.91217, abs=1e-5)


def test_ettr_is_highest_near_the_optimum_and_falls_away_on_both_sides():
    best = daly_interval(C, M)
    assert best is not None
    values = [ettr(best * f, C, M, 60) for f in (0.25, 0.5, 0.8, 1.0, 1.25, 2.0, 4.0)]
    assert all(v is not None for v in values)
    peak = values.index(max(values))
    assert peak == 3
    assert values[:4] == sorted(values[:4]) and values[3:] == sorted(values[3:], reverse=True)


def test_no_failures_leaves_only_the_save_overhead():
    # M → ∞: ETTR → τ/(τ + C)
    assert ettr(600, 60, 1e15) == pytest.approx(600 / 660, rel=1e-6)


@pytest.mark.parametrize(
    "args",
    [
        (None, C, M),
        (1800, None, M),
        (1800, C, None),
        (0, C, M),
        (1800, 0, M),
        (1800, C, 0),
        (-1, C, M),
        (1800, C, math.nan),
        (1800, C, math.inf),
    ],
)
def test_bad_figures_give_no_advice_rather_than_a_crash(args: tuple[float | None, float | None, float | None]):
    assert advise(*args) is None
    assert ettr(*args) is None


def test_a_negative_or_missing_restart_gives_no_ettr():
    assert ettr(1800, C, M, -1) is None and ettr(1800, C, M, None) is None
    assert young_interval(0, M) is None and daly_interval(C, -5) is None


def test_a_hopeless_job_gets_ettr_zero_not_an_overflow():
    assert ettr(1e6, 10, 1, 0) == 0.0


def test_the_advice_and_its_sentence():
    advice = advise(1800, C, M, 120)
    assert advice is not None
    assert advice.optimal_interval_s == pytest.approx(1033.95, abs=0.01)
    # lost now 1 − 0.91217 = 0.08783; at the optimum ETTR 0.92242, lost 0.07758: saved 0.01025/0.08783 = 11.7%
    assert advice.ettr_optimal == pytest.approx(0.92242, abs=1e-4)
    assert advice.lost_share_saved == pytest.approx(0.117, abs=0.001)
    assert phrase(advice) == (
        "checkpointing every 30 min; at the measured 1 failure per 4.1 h and 38 s saves, "
        "every 17 min would save about 12% of lost time"
    )


def test_a_job_already_at_the_optimum_is_told_so():
    advice = advise(1040, C, M)
    assert advice is not None and advice.lost_share_saved < 0.01
    assert "within 1% of the optimum (every 17 min)" in phrase(advice)


def test_durations_read_as_people_say_them():
    assert (duration(38), duration(1034), duration(14760)) == ("38 s", "17 min", "4.1 h")
