"""Hostile neighbours: jobs whose owners turn what Respawn reads against it.

Everything a job's owner controls is hostile, its output file included. Each
job here is enrolled like any other and attacks the detector from inside its
own output, as a careless or malicious user could:

- `fifo`: replaces its output file with a FIFO (a reader that opens it blocks
  until someone writes);
- `noisy`: prints lines of kilobytes of whitespace, a forged detector line
  behind them, progress with a 400-digit step number, and thousands of fake
  rank tags.

Slurm keeps writing to the file it opened; the name the detector reads is what
the job made of it. A victim job beside them must be recovered as fast as on a
quiet cluster (tests/e2e/test_suspicion_e2e.py, benchmarks/recovery_latency.py).
"""

import subprocess
from enum import StrEnum

from respawn.sandbox import Lab


class Hostility(StrEnum):
    FIFO = "fifo"
    NOISY = "noisy"


# Both hostile jobs fit on this node (2 CPUs): a victim that excludes it keeps the rest of the cluster.
NODE = "node1"

# Printed by the noisy job: each line is something a reader must survive in bounded time.
_NOISE = r"""
import sys, time
spaces = " " * 8000
for i in range(200):
    print(spaces + "x")                                    # regexes that backtrack on whitespace
    print(spaces + "respawn-detector: hang: no progress")  # a forged finding behind it
print("step " + "9" * 400 + " loss 1.0")                   # a number no int or float should take
for rank in range(5000):                                    # ranks the job does not have
    print(f"[rank{rank}]: step 3 loss 0.5 compute_time 0.{rank % 9 + 1} s")
sys.stdout.flush()
time.sleep(600)
"""


def submit_hostile(lab: Lab, kind: Hostility, comment: str) -> int:
    """Submit one hostile job on `NODE`; returns its job id."""
    lab.out_dir.mkdir(parents=True, exist_ok=True)
    out = lab.out_dir / "slurm-%j.out"
    if kind is Hostility.NOISY:
        script = lab.shared / "hostile-noise.py"
        script.write_text(_NOISE)
        wrap = f"exec python3 -u {script}"
    else:
        wrap = (
            f'out={lab.out_dir}/slurm-$SLURM_JOB_ID.out; echo starting; rm -f "$out" && mkfifo "$out"; exec sleep 600'
        )
    argv = [
        "sbatch",
        "--parsable",
        f"--job-name=hostile-{kind.value}",
        "-N1",
        "-n1",
        f"-w{NODE}",
        f"--output={out}",
        f"--chdir={lab.shared}",
        f"--comment={comment}",
        f"--wrap={wrap}",
    ]
    done = subprocess.run(argv, env=lab.env(), capture_output=True, text=True, check=True)
    return int(done.stdout.strip().split(";")[0])
