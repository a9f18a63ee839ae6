"""Round 11 of the catalogue (issue 11): benign look-alikes, from the sources that print them.

Each line is a format string of the software that prints it, filled in with made-up
hosts, ids, numbers and paths: Slurm's task/cgroup memory notices
(src/plugins/task/cgroup/task_cgroup_memory.c before and after commit 38e15bf74b) and
its kill messages; tensorboardX's x2num.check_nan warning; the MetricLogger progress line
of the GradScaler training loops (BEiT / VideoMAE / MAE engines). Each benign look-alike
has the real failure next to it, which must still be caught.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import FailureClass
from tests.unit._catalogue_cases import assert_benign

C = FailureClass


def _metric_line(loss: str, scale: str, grad_norm: str) -> str:
    # engine_for_pretraining: MetricLogger's "{name}: {median:.4f} ({global_avg:.4f})" per meter
    return (
        f"Epoch: [0]  [  40/5004]  eta: 2:10:11  lr: 0.000002  min_lr: 0.000002  loss: {loss}  "
        f"loss_scale: {scale}  weight_decay: 0.0500 (0.0500)  grad_norm: {grad_norm}  time: 1.2211  "
        "data: 0.0102  max mem: 20112"
    )


# (excerpt, class, pattern): the failures beside the look-alikes.
DECIDED: list[tuple[str, FailureClass, str]] = [
    # Slurm killing for memory, in its own words.
    (
        "slurmstepd: error: Job 4242 exceeded memory limit (10485760 > 8388608), being killed",
        C.HOST_OOM,
        "slurm-memory-limit",
    ),
    ("slurmstepd: error: Exceeded job memory limit", C.HOST_OOM, "slurm-memory-limit"),
    (
        "slurmstepd: error: Detected 2 oom-kill event(s) in StepId=4242.0. Some of your processes may have been "
        "killed by the cgroup out-of-memory handler.",
        C.HOST_OOM,
        "oom-kill",
    ),
    # The failcnt notice, then the task that did die of it.
    (
        "slurmstepd: error: Exceeded step memory limit at some point.\nsrun: error: gpu-b-03: task 0: Out Of Memory",
        C.HOST_OOM,
        "slurm-memory-limit",
    ),
    # tensorboardX's warning before a progress line whose loss is NaN: the loss decides.
    (
        "WARNING:root:NaN or Inf found in input tensor.\n"
        + _metric_line("nan (6.2011)", "65536.0000 (65536.0000)", "nan (inf)"),
        C.NUMERICAL,
        "nan-loss",
    ),
    # The grad norm inf with the scale already small: past warm-up, not a calibration.
    (_metric_line("6.1203 (6.2011)", "2.0000 (8.5000)", "inf (inf)"), C.NUMERICAL, "nan-loss"),
    # Megatron's progress line keeps its round-10 reading whatever the scale.
    (
        " iteration     1200/   50000 | lm loss: 4.512233E+00 | loss scale: 65536.0 | grad norm: nan | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |",
        C.NUMERICAL,
        "megatron-progress-nonfinite",
    ),
]


@pytest.mark.parametrize(("text", "cls", "pattern"), DECIDED)
def test_failures_beside_the_look_alikes_are_caught(catalogue, matcher, text, cls, pattern):
    got = classify_text(catalogue, matcher, text)
    assert got.failure_class is cls
    assert got.pattern == pattern


BENIGN = [
    # Slurm's failcnt notice, before 17.11 and after: the limit was reached, nothing killed.
    "slurmstepd: error: Exceeded step memory limit at some point.",
    "slurmstepd: Exceeded job memory limit at some point.",
    "slurmstepd: error: StepId=4242.0 hit memory limit at least once during execution. This may or may not "
    "result in some failure.",
    # tensorboardX logging a non-finite value, with nothing else said.
    "WARNING:root:NaN or Inf found in input tensor.",
    # GradScaler skipping a warm-up step, then training on.
    _metric_line("6.1203 (6.1203)", "65536.0000 (65536.0000)", "inf (inf)")
    + "\n"
    + _metric_line("6.1180 (6.1191)", "32768.0000 (49152.0000)", "7.1021 (inf)"),
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
