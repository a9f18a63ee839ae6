"""Submitting the demo training job (respawn/sandbox/workload/train.py) to the sandbox cluster."""

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from respawn.sandbox import Lab

BATCH_SCRIPT = Path(__file__).resolve().parent / "train.sbatch"
TRAINER = BATCH_SCRIPT.with_name("train.py")


class SubmitError(RuntimeError):
    """sbatch refused the job; the message carries its error."""


def output_path(lab: Lab, job_id: int) -> Path:
    """The job's stdout and stderr, every attempt appended (`--open-mode=append`)."""
    return lab.out_dir / f"slurm-{job_id}.out"


def checkpoint_dir(lab: Lab, job_id: int) -> Path:
    return lab.ckpt_dir / str(job_id)


def submit(
    lab: Lab,
    *,
    nodes: int = 4,
    steps: int = 60,
    checkpoint_every: int = 10,
    step_seconds: float = 0.5,
    comment: str | None = None,
    name: str = "train",
    extra_sbatch_args: Sequence[str] = (),
    trainer_args: Sequence[str] = (),  # more of train.py's options, e.g. --step-jitter=0.3
    python_args: Sequence[str] = (),  # before the trainer, e.g. -m torch.distributed.run --max-restarts=1
) -> int:
    """Submit the training job on `nodes` nodes, one rank each; returns the job id."""
    # Slurm does not create the output folder: a job writing into a missing one fails silently.
    lab.out_dir.mkdir(parents=True, exist_ok=True)
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name={name}",
        # Requeue covers node failure and is what recovery uses; append keeps earlier attempts' output.
        "--requeue",
        "--open-mode=append",
        f"-N{nodes}",
        "--ntasks-per-node=1",
        f"--output={lab.out_dir}/slurm-%j.out",
        # Jobs run in the lab's shared storage, so whatever they leave (a core
        # file from an aborting rank) stays in the lab, not in the caller's folder.
        f"--chdir={lab.shared}",
    ]
    if comment is not None:
        argv.append(f"--comment={comment}")
    argv += [*extra_sbatch_args, str(BATCH_SCRIPT), *python_args, str(TRAINER)]
    argv += [
        f"--steps={steps}",
        f"--checkpoint-every={checkpoint_every}",
        f"--step-seconds={step_seconds}",
        f"--ckpt-dir={lab.ckpt_dir}/%j",  # the trainer puts in the job id; see checkpoint_dir()
        f"--faults-dir={lab.faults_dir}",
        *trainer_args,
    ]
    # sbatch exports this environment to the job, so srun finds the interpreter running us.
    env = {**lab.env(), "RESPAWN_PYTHON": sys.executable}
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)
    if result.returncode != 0:
        raise SubmitError(f"sbatch failed (rc {result.returncode}): {result.stderr.strip()}")
    # --parsable prints "<id>" or "<id>;<cluster>".
    return int(result.stdout.strip().split(";")[0])
