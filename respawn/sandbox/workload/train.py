"""The demo training job: data-parallel PyTorch on CPU (gloo), one rank per Slurm task.

A tiny MLP on synthetic data, padded with sleep so a step takes about
--step-seconds: four ranks must fit on a 2-core machine next to the cluster.
It prints what real trainers print (rank-tagged progress, checkpoint and resume
lines), checkpoints to shared storage and resumes from the newest checkpoint, so
a requeued attempt continues where the last one saved.

Each rank also prints its own compute time per step, excluding its wait in the
gradient all-reduce, as real trainers' per-rank timers do: every rank waits for
the slowest in the all-reduce, so step times alone cannot tell who is slow.
`--step-jitter` makes step times noisy and `--checkpoint-seconds` makes saving a
checkpoint pause the job, as slow shared storage does.

Faults (respawn/sandbox/workload/faults.py) reach a rank through a control file that it polls
once per step: `<faults-dir>/<job id>/<node>`. The rank consumes the file, writes
`<node>.fired` with the time it acted, then prints the failure as production
does and dies (or, for `slow`, stretches its steps from then on).

Data parallel as DistributedDataParallel does it, by hand: rank 0's parameters
broadcast at the start, every step's gradients all-reduced (averaged) before the
update, which blocks each rank until the slowest has computed and fails when a
peer dies, as DDP's reducer does. DDP's constructor and torch.optim's first
optimizer each import torch._dynamo, about 2 s of CPU per rank: with three ranks
on two cores that was a third of every attempt's start, and of the test suite.

This script imports nothing from the project: it runs on the cluster's nodes
with only the standard library and torch.
"""

import argparse
import json
import os
import random
import re
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import NoReturn

# The rank's identity comes from Slurm (srun sets these per task), or from torchrun's elastic
# agent when the job runs the trainer under it (it sets RANK, WORLD_SIZE and the rendezvous).
ELASTIC = "TORCHELASTIC_RUN_ID" in os.environ
RANK = int(os.environ["RANK" if ELASTIC else "SLURM_PROCID"])
WORLD_SIZE = int(os.environ["WORLD_SIZE" if ELASTIC else "SLURM_NTASKS"])
NODE = os.environ["SLURMD_NODENAME"]
JOB_ID = int(os.environ["SLURM_JOB_ID"])
RESTART_COUNT = int(os.environ.get("SLURM_RESTART_COUNT", "0"))  # unset in a job's first run

# Every node of the multi-slurmd sandbox listens on loopback. Where nodes are separate
# hosts (the container sandbox exports RESPAWN_MASTER=launch-node), rank 0 runs on the
# node that launched srun, whose address srun exports.
if ELASTIC:
    MASTER_ADDR = os.environ["MASTER_ADDR"]
elif os.environ.get("RESPAWN_MASTER") == "launch-node":
    MASTER_ADDR = os.environ["SLURM_LAUNCH_NODE_IPADDR"]
else:
    MASTER_ADDR = "127.0.0.1"
FEATURES = 32
CHECKPOINT_NAME = re.compile(r"step-(\d+)\.pt")

# Lines a failing GPU and a failing InfiniBand port make a real job print.
PCI_BUS = "0000:3b:00"
CUDA_ERROR = (
    "CUDA error: {}\n"
    "CUDA kernel errors might be asynchronously reported at some other API call, "
    "so the stacktrace below might be incorrect.\n"
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
)
NCCL_VERSION = "2.21.5"


def log(message: str) -> None:
    # The `[rankN]: ` prefix is the one torch.distributed puts on tracebacks.
    print(f"[rank{RANK}]: {message}", flush=True)


def master_port(job_id: int, restart_count: int) -> int:
    # Distinct per job and per attempt: a rerun must not meet the previous attempt's
    # socket in TIME_WAIT, and concurrent jobs must not meet each other. 29000-32199
    # lies above every port the sandboxes listen on (the highest, 28233) and below the
    # kernel's ephemeral range (32768+).
    return 29000 + (job_id % 400) * 8 + restart_count % 8


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--checkpoint-every", type=int, default=10)
    parser.add_argument("--step-seconds", type=float, default=0.5)
    parser.add_argument("--step-jitter", type=float, default=0.0, help="a rank's step time varies by up to this share")
    parser.add_argument("--checkpoint-seconds", type=float, default=0.0, help="how long saving a checkpoint takes")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--ckpt-dir", required=True, help="checkpoint folder on shared storage; %%j is replaced by the job id"
    )
    parser.add_argument("--faults-dir", type=Path, help="where respawn/sandbox/workload/faults.py leaves control files")
    parser.add_argument(
        "--master-port", type=int, help="the rendezvous port (default: from the job id and restart count)"
    )
    return parser.parse_args()


class InjectedFault:
    """Polls this rank's fault control file; consumes it the moment it is seen."""

    def __init__(self, faults_dir: Path | None) -> None:
        self.control = faults_dir / str(JOB_ID) / NODE if faults_dir else None
        self.slow_factor = 1.0

    def poll(self) -> str | None:
        if self.control is None:
            return None
        try:
            spec = json.loads(self.control.read_text())
        except FileNotFoundError:
            return None
        # Consumed before acting, so the next attempt of this job (after a requeue) runs clean.
        self.control.unlink(missing_ok=True)
        kind = spec["kind"]
        if kind == "slow":
            self.slow_factor = float(spec["factor"])
        fired = self.control.with_name(f"{NODE}.fired")
        if not fired.exists():  # a GPU fault happened earlier, when the driver logged it
            tmp = fired.with_name(f".{fired.name}.tmp")
            tmp.write_text(json.dumps({"kind": kind, "at": time.time()}))
            os.replace(tmp, fired)
        return kind


def nccl_warn(source: str, message: str, tid: int) -> None:
    # NCCL's WARN prefix: host:pid:tid [cudaDev] file:line
    log(f"{NODE}:{os.getpid()}:{tid} [0] {source} NCCL WARN {message}")


def fail_like_production(kind: str) -> NoReturn:
    """Print what `kind` looks like on a real GPU node, then raise as the framework would.

    The exception leaves main() uncaught, so torch.distributed's excepthook prints
    the traceback with the `[rankN]: ` prefix and the rank exits 1.
    """
    import torch.distributed as dist

    if kind in ("xid", "forged_xid"):  # forged: the same text, but no driver said it
        comm = Path("/proc/self/comm").read_text().strip()
        log(f"NVRM: Xid (PCI:{PCI_BUS}): 79, pid={os.getpid()}, name={comm}, GPU has fallen off the bus.")
        raise RuntimeError(CUDA_ERROR.format("unspecified launch failure"))
    if kind == "ecc":
        raise RuntimeError(CUDA_ERROR.format("uncorrectable ECC error encountered"))
    if kind == "ib":
        # NCCL 2.21's net_ib.cc: the async-event thread sees the port go down, then the
        # proxy's pending receive completes with IBV_WC_RETRY_EXC_ERR (12), which NCCL
        # reports as ncclRemoteError to the collective. Both WARNs come from NCCL's own
        # threads, hence tids other than this one's.
        tid = threading.get_native_id()
        nccl_warn("transport/net_ib.cc:110", "NET/IB : mlx5_0:1 Got async event : port error", tid + 3)
        completion = (
            f"NET/IB : Got completion from peer {MASTER_ADDR}<58923> "
            "with status=12 opcode=0 len=0 vendor err 129 (Recv)"
        )
        nccl_warn("transport/net_ib.cc:1696", completion, tid + 7)
        raise dist.DistBackendError(
            "NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
            f"remote process exited or there was a network error, NCCL version {NCCL_VERSION}\n"
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
            f"Last error:\n{completion}"
        )
    if kind == "nccl_error":
        # ProcessGroupNCCL's C10D_NCCL_CHECK: the call site, ncclGetErrorString(ncclSystemError)
        # and NCCL's version, then the result's name and its description (nccl.h.in).
        raise dist.DistBackendError(
            "NCCL error in: /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:3356, "
            f"unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version {NCCL_VERSION}\n"
            "ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error."
        )
    raise ValueError(f"unknown fault kind {kind!r}")


def print_handled_failures(step: int) -> None:
    """Failure-looking text a healthy trainer prints and handles, then trains on: a
    batch-size probe that runs out of GPU memory, a data read retried, a sample
    whose error is caught and skipped (its traceback printed, as logging does)."""
    log(
        f"batch-size probe: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB "
        f"(GPU 0; 79.15 GiB total capacity). Falling back to batch size {max(1, step % 7)}"
    )
    log("data: OSError: [Errno 5] Input/output error: '/datasets/shard-00042.tar', retrying in 1 s (1/5)")
    try:
        {"inputs": None}["labels"]
    except KeyError:
        import traceback

        for line in traceback.format_exc().splitlines():
            log(line)
        log(f"skipped a malformed sample at step {step}")


def newest_checkpoint(ckpt_dir: Path) -> tuple[int, Path] | None:
    found = [(int(m[1]), p) for p in ckpt_dir.glob("step-*.pt") if (m := CHECKPOINT_NAME.fullmatch(p.name))]
    return max(found) if found else None


def save_checkpoint(ckpt_dir: Path, step: int, state: dict) -> Path:
    import torch

    path = ckpt_dir / f"step-{step}.pt"
    tmp = ckpt_dir / f".step-{step}.pt.tmp"
    with open(tmp, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())
    # Atomic: a reader (a resuming attempt) sees a whole checkpoint or none.
    os.replace(tmp, path)
    return path


def main() -> None:
    args = parse_args()
    port = int(os.environ["MASTER_PORT"]) if ELASTIC else args.master_port or master_port(JOB_ID, RESTART_COUNT)
    log(
        f"starting rank {RANK} world_size {WORLD_SIZE} node {NODE} job {JOB_ID} "
        f"restart_count {RESTART_COUNT} master {MASTER_ADDR}:{port} pid {os.getpid()}"
    )

    # This CPU wheel warns on import when numpy is absent; the trainer never uses numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch
    import torch.distributed as dist
    from torch import nn

    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR=MASTER_ADDR, MASTER_PORT=str(port))
    # Node hostnames (node1..) do not resolve; gloo must not look them up.
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group("gloo", rank=RANK, world_size=WORLD_SIZE)

    torch.manual_seed(args.seed)
    model = nn.Sequential(nn.Linear(FEATURES, 64), nn.ReLU(), nn.Linear(64, 1))
    lr = 0.05  # plain SGD, torch.optim.SGD's update without momentum (see the docstring)
    true_weights = torch.randn(FEATURES, 1, generator=torch.Generator().manual_seed(args.seed)) / FEATURES**0.5

    ckpt_dir = Path(args.ckpt_dir.replace("%j", str(JOB_ID)))
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    start = 0
    # Every rank reads the checkpoint before the parameters' broadcast, a collective, so rank 0
    # cannot train on and save a newer one while a slower rank is still looking.
    if (newest := newest_checkpoint(ckpt_dir)) is not None:
        start, path = newest
        state = torch.load(path, weights_only=True)
        model.load_state_dict(state["model"])
        log(f"resumed from checkpoint step {start} ({path})")
    for parameter in model.parameters():
        dist.broadcast(parameter.data, src=0)
    fault = InjectedFault(args.faults_dir)

    for step in range(start + 1, args.steps + 1):
        began = time.monotonic()
        kind = fault.poll()
        # Each rank sees its own shard; the data depends only on (seed, step, rank) so a
        # resumed run trains on what the lost steps would have.
        g = torch.Generator().manual_seed(args.seed * 1_000_003 + step * 1009 + RANK)
        inputs = torch.randn(args.batch_size, FEATURES, generator=g)
        batch = {"inputs": inputs, "labels": inputs @ true_weights + 0.1 * torch.randn(args.batch_size, 1, generator=g)}
        if kind == "keyerror":
            del batch["labels"]  # a malformed sample from the data pipeline: an application bug
        elif kind == "handled":
            print_handled_failures(step)
        elif kind not in (None, "slow"):
            fail_like_production(kind)

        model.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(model(batch["inputs"]), batch["labels"])
        # The padding stands for this rank's GPU work, so it comes before the backward
        # pass, whose gradient all-reduce makes every rank wait for the slowest.
        noise = random.Random(g.initial_seed()).uniform(-args.step_jitter, args.step_jitter)
        time.sleep(max(0.0, args.step_seconds * fault.slow_factor * (1 + noise) - (time.monotonic() - began)))
        collective = time.monotonic()
        loss.backward()
        with torch.no_grad():
            for parameter in model.parameters():
                grad = parameter.grad
                assert grad is not None  # every parameter is in the loss
                dist.all_reduce(grad)
                parameter.sub_(grad, alpha=lr / WORLD_SIZE)
        waited = time.monotonic() - collective

        took = time.monotonic() - began
        log(
            f"step {step}/{args.steps} loss {loss.item():.4f} "
            f"samples/s {args.batch_size / took:.1f} step_time {took:.3f}s"
        )
        log(f"step {step} compute_time {took - waited:.3f}s")
        if RANK == 0 and step % args.checkpoint_every == 0:
            log(f"saving checkpoint step {step}")
            time.sleep(args.checkpoint_seconds)  # slow shared storage: the other ranks wait in the next all-reduce
            state = {"step": step, "model": model.state_dict()}
            log(f"saved checkpoint step {step} to {save_checkpoint(ckpt_dir, step, state)}")

    if RANK == 0:
        log(f"training complete: {args.steps}/{args.steps} steps, job {JOB_ID}")
    dist.destroy_process_group()


if __name__ == "__main__":
    try:
        main()
    except Exception:
        # What an uncaught exception prints (torch.distributed's excepthook: `[rankN]: `), then out
        # at once: an interpreter shutting down beside the process group's live threads sometimes
        # aborts (SIGABRT) instead of exiting 1, as a peer's broken connection reaches them.
        sys.excepthook(*sys.exc_info())
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)
