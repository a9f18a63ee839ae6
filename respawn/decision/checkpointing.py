"""How often a job should checkpoint, and what it would gain: Young/Daly, pure (issue 15, item 3).

A job that checkpoints rarely redoes a lot of work after each failure; one that checkpoints often
spends its time saving. The optimum balances the two from two measured figures the progress
signal has: C, the time one save takes, and M, the mean time between failures of a job of that
size. Every function here takes seconds and returns None (never raises, never divides by zero)
when a figure is missing or not a positive finite number: advice from a bad measurement is worse
than none.

Sources:

- J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9),
  1974, doi:10.1145/361147.361115: τ = sqrt(2 C M).
- J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
  Future Generation Computer Systems 22(3), 2006, doi:10.1016/j.future.2004.11.016: the complete
  cost function for Poisson failures (failures can strike while computing, saving or restarting,
  and each sends the job back to its last checkpoint)

      T_wall = M · e^(R/M) · (e^((τ + C)/M) − 1) · T_s / τ

  and its perturbation solution for the optimum, for C < 2M

      τ_opt = sqrt(2 C M) · (1 + (1/3)·sqrt(C/(2M)) + (1/9)·(C/(2M))) − C,

  else τ_opt = M. The paper's figures 3-5 (C = 5 min, R = 10 min) give τ_opt = 117 min at
  M = 24 h, 57 min at M = 6 h and 9.1 min at M = 15 min; tests/unit/test_checkpointing.py checks
  those numbers.
"""

import math

from pydantic import BaseModel, ConfigDict


def _positive(*values: float | None) -> bool:
    """True when every figure is a finite number above zero: the formulas divide by them."""
    return all(v is not None and math.isfinite(v) and v > 0 for v in values)


def young_interval(save_s: float | None, mtbf_s: float | None) -> float | None:
    """Young's first-order optimum sqrt(2 C M), in seconds: good while saves are short next to M."""
    if not _positive(save_s, mtbf_s):
        return None
    assert save_s is not None and mtbf_s is not None
    return math.sqrt(2 * save_s * mtbf_s)


def daly_interval(save_s: float | None, mtbf_s: float | None) -> float | None:
    """Daly's higher-order optimum (FGCS 2006), in seconds: Young's, corrected for long saves.

    When a save takes 2M or more, the series no longer applies and Daly's answer is M itself:
    checkpoint about once per expected failure.
    """
    if not _positive(save_s, mtbf_s):
        return None
    assert save_s is not None and mtbf_s is not None
    if save_s >= 2 * mtbf_s:
        return mtbf_s
    xi = save_s / (2 * mtbf_s)
    return math.sqrt(2 * save_s * mtbf_s) * (1 + math.sqrt(xi) / 3 + xi / 9) - save_s


def ettr(
    interval_s: float | None, save_s: float | None, mtbf_s: float | None, restart_s: float | None = 0.0
) -> float | None:
    """Effective training time ratio (productive time / wall time) for an interval τ: Daly's model.

    From Daly's complete cost function, ETTR = τ / (M · e^(R/M) · (e^((τ + C)/M) − 1)). To first
    order in 1/M it is 1 − C/τ − ((τ + C)/2 + R)/M: the save overhead, the work redone since the
    last checkpoint (half a segment on average) and the restart, once per failure. The exact form
    stays between 0 and 1 where the first-order one would go negative (τ or R close to M).
    R, the time from a failure to training again, may be zero (not measured: lost time is then
    saves and redone work only).
    """
    if not _positive(interval_s, save_s, mtbf_s):
        return None
    if restart_s is None or not math.isfinite(restart_s) or restart_s < 0:
        return None
    assert interval_s is not None and save_s is not None and mtbf_s is not None
    exponent = (interval_s + save_s) / mtbf_s
    if exponent + restart_s / mtbf_s > 700:  # e^700 is near the float limit: nothing useful gets done
        return 0.0
    return interval_s / (mtbf_s * math.exp(restart_s / mtbf_s) * math.expm1(exponent))


class CheckpointAdvice(BaseModel):
    """The advice for one job: its interval against Daly's optimum, and what the change would buy."""

    model_config = ConfigDict(frozen=True)

    current_interval_s: float
    optimal_interval_s: float  # Daly's higher-order estimate
    young_interval_s: float  # the first-order one, for reference
    save_s: float
    mtbf_s: float
    restart_s: float
    ettr_current: float
    ettr_optimal: float
    lost_share_saved: float  # (lost now − lost at the optimum) / lost now; 0 when already there


def advise(
    current_interval_s: float | None, save_s: float | None, mtbf_s: float | None, restart_s: float | None = 0.0
) -> CheckpointAdvice | None:
    """Daly's optimum for a job, and the share of its lost time (1 − ETTR) that moving to it saves.

    None when a figure is missing or not positive (the reason is the caller's to say: which
    figure the progress signal lacked). The saving can be slightly negative in principle (Daly's
    estimate is not the exact optimum); it is reported as 0 then: the job is at the optimum.
    """
    optimal = daly_interval(save_s, mtbf_s)
    young = young_interval(save_s, mtbf_s)
    now = ettr(current_interval_s, save_s, mtbf_s, restart_s)
    if optimal is None or young is None or now is None:
        return None
    best = ettr(optimal, save_s, mtbf_s, restart_s)
    assert best is not None and current_interval_s is not None and save_s is not None and mtbf_s is not None
    assert restart_s is not None
    lost_now = 1 - now
    saved = (best - now) / lost_now if lost_now > 0 else 0.0
    return CheckpointAdvice(
        current_interval_s=current_interval_s,
        optimal_interval_s=optimal,
        young_interval_s=young,
        save_s=save_s,
        mtbf_s=mtbf_s,
        restart_s=restart_s,
        ettr_current=now,
        ettr_optimal=best,
        lost_share_saved=max(0.0, saved),
    )


def duration(seconds: float) -> str:
    """Seconds as people say them: '38 s', '17 min', '4.1 h'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 120 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


NEGLIGIBLE = 0.01  # below 1% of lost time saved, the advice is to leave the interval alone


def phrase(advice: CheckpointAdvice) -> str:
    """The advice as the console and the report say it (the sentence of issue 15, item 3)."""
    measured = f"at the measured 1 failure per {duration(advice.mtbf_s)} and {duration(advice.save_s)} saves"
    now = f"checkpointing every {duration(advice.current_interval_s)}"
    if advice.lost_share_saved < NEGLIGIBLE:
        return f"{now}; {measured}, that is within 1% of the optimum (every {duration(advice.optimal_interval_s)})"
    return (
        f"{now}; {measured}, every {duration(advice.optimal_interval_s)} would save about "
        f"{advice.lost_share_saved:.0%} of lost time"
    )
