"""runbooks/numerical.yaml: losses and gradients gone non-finite, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: DeepXDE's loss display; PyTorch's clip_grad_norm_ and sampling checks; Megatron-LM's
rerun_state_machine.py and training_log progress line; Lightning's EarlyStopping; DeepSpeed's
loss_scaler.py / fused_optimizer.py; fairseq's loss scaler; improved-diffusion / guided-diffusion's
log2 loss scale (fp16_util.py); tensorboardX's x2num.check_nan; the MetricLogger progress line of
the GradScaler training loops (BEiT / VideoMAE / MAE engines); BigDL's DistriOptimizer.scala;
Marian, OpenNMT-py and Lua trainers' progress lines.
"""

from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


def _metric_line(loss: str, scale: str, grad_norm: str) -> str:
    # engine_for_pretraining: MetricLogger's "{name}: {median:.4f} ({global_avg:.4f})" per meter
    return (
        f"Epoch: [0]  [  40/5004]  eta: 2:10:11  lr: 0.000002  min_lr: 0.000002  loss: {loss}  "
        f"loss_scale: {scale}  weight_decay: 0.0500 (0.0500)  grad_norm: {grad_norm}  time: 1.2211  "
        "data: 0.0102  max mem: 20112"
    )


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Megatron's progress line with a non-finite norm or loss: its nan counter (skipped steps only) says 0.
    (
        " iteration     1200/   50000 | consumed samples:       153600 | elapsed time per iteration (ms): 3120.4 | "
        "learning rate: 1.500E-04 | global batch size:   128 | lm loss: 4.512233E+00 | loss scale: 1.0 | "
        "grad norm: nan | number of skipped iterations:   0 | number of nan iterations:   0 |",
        C.NUMERICAL,
        L.APPLICATION,
        "megatron-progress-nonfinite",
    ),
    (
        " iteration     1200/   50000 | lm loss: NAN | loss scale: 1.0 | grad norm: 2.113 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |",
        C.NUMERICAL,
        L.APPLICATION,
        "megatron-progress-nonfinite",
    ),
    (
        " iteration     1200/   50000 | lm loss: 4.512233E+00 | grad norm: inf | params norm: 812.440 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |",
        C.NUMERICAL,
        L.APPLICATION,
        "megatron-progress-nonfinite",
    ),
    # fairseq's scaler below 1, in its old and new wording.
    ("| WARNING: overflow detected, setting loss scale to: 0.5", C.NUMERICAL, L.APPLICATION, "overflow-at-small-scale"),
    (
        "2026-03-01 10:00:00 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: "
        "6.103515625e-05",
        C.NUMERICAL,
        L.APPLICATION,
        "overflow-at-small-scale",
    ),
    # BigDL's loss as the JVM prints a non-finite one.
    (
        "INFO  DistriOptimizer$:427 - [Epoch 3 1024/50000][Iteration 400][Wall Clock 100.5s] Trained 128 records in "
        "0.5 seconds. Throughput is 256.0 records/second. Loss is Infinity. Current learning rate is 0.01.",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    (
        "INFO  DistriOptimizer$:295 - [Epoch 3 1024/50000][Iteration 401][Wall Clock 101.0s] Train 128 in 0.5seconds. "
        "Throughput is 256.0 records/second. Loss is NaN. ",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    # improved-diffusion / guided-diffusion's log2 loss scale, below 0: a scale under 1.
    ("Found NaN, decreased lg_loss_scale to -16199.354", C.NUMERICAL, L.APPLICATION, "overflow-at-small-scale"),
    # Marian, OpenNMT-py, Lua trainers: nan as a cost, perplexity, cross-entropy.
    (
        "[2024-01-01 10:00:00] Ep. 2 : Up. 1200 : Sen. 96,000 : Cost nan : Time 12.01s : 9001.20 words/s",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    (
        "[2024-01-01 10:00:00,000 INFO] Step 800/10000; acc:   3.10; ppl:   nan; xent:   nan; lr: 0.00100; "
        "900/1000 tok/s;    120 sec",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    ("Validation perplexity: nan", C.NUMERICAL, L.APPLICATION, "nan-loss"),
    ("Epoch 3 ; Iter 10/100 ; LR 0.5000 ; Target tokens/s 1000 ; PPL inf ;", C.NUMERICAL, L.APPLICATION, "nan-loss"),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_ANY_LAYER: list[tuple[str, FailureClass, str]] = [
    # tensorboardX's warning before a progress line whose loss is NaN: the loss decides.
    (
        "WARNING:root:NaN or Inf found in input tensor.\n"
        + _metric_line("nan (6.2011)", "65536.0000 (65536.0000)", "nan (inf)"),
        C.NUMERICAL,
        "nan-loss",
    ),
    # The grad norm inf with the scale already small: past warm-up, not a calibration.
    (_metric_line("6.1203 (6.2011)", "2.0000 (8.5000)", "inf (inf)"), C.NUMERICAL, "nan-loss"),
    # Megatron's progress line keeps its reading (megatron-progress-nonfinite) whatever the scale.
    (
        " iteration     1200/   50000 | lm loss: 4.512233E+00 | loss scale: 65536.0 | grad norm: nan | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |",
        C.NUMERICAL,
        "megatron-progress-nonfinite",
    ),
]


test_failures_beside_the_look_alikes_are_caught = cases.excerpts_decided_whatever_the_layer(DECIDED_ANY_LAYER)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Numbers gone bad.
    (
        "Epoch 2, step 400: loss: tensor(nan, device='cuda:3', grad_fn=<MeanBackward0>)",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    (
        "[E] Rank 5, node cn12, device 1, iteration 811: Unexpected result nan (message='found NaN in local grad "
        "norm for bucket #2 in backward pass before data-parallel communication collective')",
        C.NUMERICAL,
        L.APPLICATION,
        "non-finite-detected",
    ),
    (
        "RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be "
        "clipped.",
        C.NUMERICAL,
        L.APPLICATION,
        "non-finite-detected",
    ),
    (
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        C.NUMERICAL,
        L.APPLICATION,
        "non-finite-detected",
    ),
    (
        "Monitored metric val/loss = nan is not finite. Previous best value was 1.917. Signaling Trainer to stop.",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    (
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
        C.NUMERICAL,
        L.APPLICATION,
        "loss-scale-minimum",
    ),
    (
        "[deepspeed] fp16 dynamic loss scale overflow! Skipping step. Attempted loss scale: 8.0, reducing to 4.0",
        C.NUMERICAL,
        L.APPLICATION,
        "overflow-at-small-scale",
    ),
    # A program raising because a value went non-finite, in its own words.
    ("ValueError: model output is NaN, stopping", C.NUMERICAL, L.APPLICATION, "non-finite-detected"),
    ("RuntimeError:predicted depth map contains inf", C.NUMERICAL, L.APPLICATION, "non-finite-detected"),
    ("2000      [nan]         [nan]         [nan]", C.NUMERICAL, L.APPLICATION, "nan-loss"),
    ("5000      [1.2e-01, inf]    [3.0e-01, nan]    []", C.NUMERICAL, L.APPLICATION, "nan-loss"),
    (
        "WARNING  : Skipping prediction for ERA5 because of 40320 NaN in tc_tokens.",
        C.NUMERICAL,
        L.APPLICATION,
        "non-finite-detected",
    ),
    # Round 29: Darknet's progress line with the loss NaN (detector.c).
    (
        " 1210: -nan, -nan avg loss, 0.001000 rate, 2.410000 seconds, 77440 images",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    # Round 33: PaddlePaddle's AmpScaler with its scale under 1 (grad_scaler.py).
    (
        "Found inf or nan, current scale is: 2.842170943040401e-14, decrease to: 2.842170943040401e-14*0.5",
        C.NUMERICAL,
        L.APPLICATION,
        "overflow-at-small-scale",
    ),
    # Round 39: ESPnet2's and SpeechBrain's trainers stopping a diverged run; icefall's collapsed grad scale.
    (
        "(trainer:404) WARNING: The gradients at all steps are invalid in this epoch. Something seems wrong. This "
        "training was stopped at 2epoch",
        C.NUMERICAL,
        L.APPLICATION,
        "trainer-nonfinite-stop",
    ),
    (
        "ValueError: Loss is not finite and patience is exhausted. To debug, wrap `fit()` with autograd's "
        "`detect_anomaly()`, e.g.",
        C.NUMERICAL,
        L.APPLICATION,
        "trainer-nonfinite-stop",
    ),
    (
        "2023-06-14 13:04:41,744 - speechbrain.core - WARNING - Parameter is not finite: Parameter containing:",
        C.NUMERICAL,
        L.APPLICATION,
        "trainer-nonfinite-stop",
    ),
    (
        "RuntimeError: grad_scale is too small, exiting: 1.2924697071141057e-26",
        C.NUMERICAL,
        L.APPLICATION,
        "loss-scale-minimum",
    ),
    # Round 47: a loss named with a suffix.
    ("10:02:33: train iter: 200 loss_net: nan loss_scale: 1.0000 norm: nan", C.NUMERICAL, L.APPLICATION, "nan-loss"),
    # Round 49: transformers' DebugUnderflowOverflow report.
    ("Detected inf/nan during batch_number=12", C.NUMERICAL, L.APPLICATION, "non-finite-detected"),
    ("3.18e-04      inf output", C.NUMERICAL, L.APPLICATION, "non-finite-detected"),
    ("     nan      nan input[0]", C.NUMERICAL, L.APPLICATION, "non-finite-detected"),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BENIGN: list[str] = [
    # Megatron's healthy progress lines, fp16 and bf16.
    " iteration     1200/   50000 | consumed samples:       153600 | elapsed time per iteration (ms): 3120.4 | "
    "learning rate: 1.500E-04 | global batch size:   128 | lm loss: 4.512233E+00 | loss scale: 65536.0 | "
    "grad norm: 1.874 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    " iteration     1200/   50000 | lm loss: 4.512233E+00 | loss scale: 1.0 | grad norm: 0.412 | "
    "params norm: 812.440 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    # A skipped fp16 step prints no grad norm; its counter says so.
    " iteration       12/   50000 | lm loss: 9.812233E+00 | loss scale: 32768.0 | "
    "number of skipped iterations:   1 | number of nan iterations:   0 |",
    # tensorboardX logging a non-finite value, with nothing else said.
    "WARNING:root:NaN or Inf found in input tensor.",
    # GradScaler skipping a warm-up step, then training on.
    _metric_line("6.1203 (6.1203)", "65536.0000 (65536.0000)", "inf (inf)")
    + "\n"
    + _metric_line("6.1180 (6.1191)", "32768.0000 (49152.0000)", "7.1021 (inf)"),
    # fairseq's warm-up overflows.
    "| WARNING: overflow detected, setting loss scale to: 32.0",
    "2026-03-01 10:00:00 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 64.0",
    # BigDL's finite loss.
    "INFO  DistriOptimizer$:427 - [Epoch 3 1024/50000][Iteration 400][Wall Clock 100.5s] Trained 128 records in "
    "0.5 seconds. Throughput is 256.0 records/second. Loss is 1.0808454.",
    # improved-diffusion's loss scale in warm-up (from 2**20, one step down per skipped step).
    "Found NaN, decreased lg_loss_scale to 19.001",
    # Healthy trainers' progress lines.
    "[2024-01-01 10:00:00] Ep. 1 : Up. 100 : Sen. 8,000 : Cost 5.12345678 : Time 10.00s : 8000.00 words/s",
    "[2024-01-01 10:00:00,000 INFO] Step 100/1000; acc:  12.30; ppl: 812.12; xent: 6.70; lr: 0.00010; 800/900 "
    "tok/s;     60 sec",
    # Round 29: Darknet's progress line with a finite loss.
    " 1210: 3.412000, 3.581200 avg loss, 0.001000 rate, 2.410000 seconds, 77440 images",
    # Round 33: the same scaler calibrating down from its initial scale in warm-up.
    "Found inf or nan, current scale is: 32768.0, decrease to: 32768.0*0.5",
    # Round 36: apex's warm-up search for a usable scale, still in the hundreds.
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 512.0",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    # A framework that skipped a non-finite step and went on.
    "Found NaN in gradients at step 77, skipping the optimizer step",
    # Healthy numbers, and fp16 warm-up.
    "loss: 0.412 | grad_norm: 0.87 | nan_count: 0 | inf_count: 0",
    "step 300: no NaN or Inf found in gradients",
    "found_inf: tensor([0.], device='cuda:0')",
    "[2030-01-01 00:00:00,000] [INFO] [fused_optimizer.py:180:step] [deepspeed] fp16 dynamic loss scale "
    "overflow! Skipping step. Attempted loss scale: 131072, reducing to 65536",
    "Overflow detected. Skipping step. Attempted loss scale: 8192, reducing to 4096",
    "Monitored metric val/loss did not improve in the last 3 records. Best score: 1.917. Signaling Trainer to stop.",
    "1000      [5.47e+03]    [6.44e+03]    [1.00e+00]",
    "Step      Train loss    Test loss     Test metric",
    "nan check: found 0 NaN in tc_tokens",
    # Round 39: the per-step notices of the trainers above, handled steps.
    "(trainer:404) WARNING: The grad norm is nan. Skipping updating the model.",
    "speechbrain.core - WARNING - Patience not yet exhausted, ignoring this batch.",
    "2024-01-15 10:00:00,000 WARNING [train.py:1091] Grad scale is small: 1.0e-06",
    # Round 49: a frame of the same report whose tensor stayed finite.
    "1.01e-06 6.44e+00 weight",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)
