"""Round 15 of the catalogue (issue 11): every version's wording, for the families jobs hit most.

Each line is a format string of the software that prints it, in the wording of one of its
versions, filled in with made-up hosts, ids and numbers: ProcessGroupNCCL's blocking wait
(torch 1.x synchronizeInternal, then WorkNCCL's wait with each suffix it printed),
Slurm's uncorrectable-memory-error notice and its node-failure cancel before 16.05
(slurmstepd req.c), the kernel's OOM
killer (mm/oom_kill.c: the oom_kill_allocating_task message, the kills of processes sharing
the victim's memory, RHEL 6's victim line), NCCL's allocators (alloc.h), PyTorch's
insufficient-driver message (c10/cuda/CUDAFunctions.cpp), CUDA's error texts in THC's
and Triton's forms (THCGeneral, driver.c gpuAssert), torch.distributed's URL
rendezvous (rendezvous.py), DeepSpeed's launcher (runner.py) and gloo's device lookups
(device.cc). Beside each, the neighbour it
must not take, from the same sources: the options ProcessGroupNCCL logs at init, Slurm's
cgroup "hit memory limit" notices (the source says "may or may not result in some
failure"), RHEL 6's would_have_oomkilled notice, torch.cuda.is_available()'s warning.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign, assert_decided

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # ProcessGroupNCCL's blocking wait timing out, in each version's wording.
    (
        "RuntimeError: [Rank 2] Caught collective operation timeout: WorkNCCL(OpType=ALLGATHER, "
        "TensorShape=[4096], Timeout(ms)=60000) ran for 60417 milliseconds before timing out.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    (
        "RuntimeError: [Rank 2] Work WorkNCCL(SeqNum=7, OpType=SEND, TensorShape=[4096], Timeout(ms)=60000) "
        "timed out in blocking wait (NCCL_BLOCKING_WAIT=1).",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    (
        "torch.distributed.DistBackendError: [PG 0 Rank 2] Work WorkNCCL(SeqNum=7, OpType=_ALLGATHER_BASE, "
        "NumelIn=4096, NumelOut=32768, Timeout(ms)=60000) timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    (
        "torch.distributed.DistBackendError: [PG ID 0 PG GUID 0(default_pg) Rank 2] Work WorkNCCL(SeqNum=7, "
        "OpType=REDUCE_SCATTER, NumelIn=32768, NumelOut=4096, Timeout(ms)=60000) timed out in blocking wait.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    # slurmstepd's node-failure cancel in its 14.11-15.08 wording (the host is its own).
    (
        "slurmstepd: error: *** JOB 48213 CANCELLED AT 2015-09-01T04:12:55 DUE TO NODE node-3 FAILURE ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-job-node-fail",
    ),
    (
        "slurmstepd: *** JOB 48213 CANCELLED AT 2013-09-01T04:12:55 DUE TO NODE FAILURE ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-job-node-fail",
    ),
    # Slurm's word for an uncorrectable memory error on the node (KNL, 17.02-25.05).
    (
        "slurmstepd: error: *** JOB 48213 ON knl-017 UNCORRECTABLE MEMORY ERROR AT 2019-03-02T11:20:44 ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
    ),
    (
        "slurmstepd: error: *** STEP 48213.0 ON knl-017 UNCORRECTABLE MEMORY ERROR AT 2019-03-02T11:20:44 ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
    ),
    # The kernel's OOM killer in the wordings the report lacked.
    (
        "[ 8812.301122] Out of memory (oom_kill_allocating_task): Kill process 9120 (python) score 0 or sacrifice child",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "[ 8812.301122] Out of memory (oom_kill_allocating_task): Killed process 9120 (python) total-vm:81234567kB, "
        "anon-rss:60123456kB, file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:120000kB oom_score_adj:0",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    ("[ 8812.301125] Kill process 9133 (python) sharing same memory", C.HOST_OOM, L.APPLICATION, "oom-kill"),
    (
        '[ 8812.301125] Kill process 9133 (python) in VE "204" sharing same memory',
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "[ 8812.301124] Killed process 9120, UID 1000, (python) total-vm:81234567kB, anon-rss:60123456kB, file-rss:1024kB",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # NCCL's allocators (src/include/alloc.h): host malloc since v2.4, the CUDA forms since v2.14.
    (
        "gpu-7:5120:5188 [3] include/alloc.h:37 NCCL WARN Failed to malloc 33554432 bytes",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
    (
        "gpu-7:5120:5188 [3] include/alloc.h:52 NCCL WARN Failed to CUDA host alloc 33554432 bytes",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "gpu-7:5120:5188 [3] include/alloc.h:128 NCCL WARN Failed to CUDA calloc async 33554432 bytes",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # torch.distributed's URL rendezvous without its rank or world (rendezvous.py).
    (
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable WORLD_SIZE "
        "expected, but not set",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "torch-rendezvous-config-missing",
    ),
    (
        "ValueError: Error initializing torch.distributed using tcp:// rendezvous: rank parameter missing",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "torch-rendezvous-config-missing",
    ),
    (
        "ValueError: Error initializing torch.distributed using file:// rendezvous: world size parameter missing",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "torch-rendezvous-config-missing",
    ),
    # DeepSpeed's launcher refusing its hostfile or multi-node setup (launcher/runner.py).
    (
        "[2021-03-02 10:11:12,130] [ERROR] [runner.py:139:fetch_hostfile] Hostfile is not formatted correctly, "
        "unable to proceed with training.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "[2021-03-02 10:11:12,130] [ERROR] [runner.py:143:fetch_hostfile] Hostfile contains duplicate hosts, "
        "unable to proceed with training.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "ValueError: Hostfile contains multiple entries for worker-3, unable to proceed with launching",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "ValueError: Hostfile is empty or not formatted correctly, unable to proceed with launching.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "ValueError: Num nodes is >1 but no extra nodes available via hostfile",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    ("RuntimeError: launcher 'pdsh' not installed.", C.LAUNCH, L.SYSTEM_SOFTWARE, "deepspeed-hostfile-invalid"),
    # gloo's device lookups (gloo/transport/tcp/device.cc).
    (
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
        "Unable to find address for: ib0",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "gloo-no-interface",
    ),
    (
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:208] rp != nullptr. "
        "Unable to find address for: gpu-node-12",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "gloo-no-interface",
    ),
    # The CUDA build-mismatch texts in THC's and Triton's forms, and Triton's out of memory.
    (
        "RuntimeError: cuda runtime error (8) : invalid device function at /pytorch/aten/src/THC/THCTensorCopy.cu:204",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=383 error=7 : too many resources "
        "requested for launch",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    (
        "RuntimeError: Triton Error [CUDA]: too many resources requested for launch",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    ("RuntimeError: Triton Error [CUDA]: out of memory", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    # PyTorch's words for cudaErrorInsufficientDriver, raised.
    (
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11020). Please update your GPU "
        "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
        "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
        "version of the CUDA driver.",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-setup-error",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


def test_the_old_node_failure_cancel_names_no_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "slurmstepd: error: *** JOB 48213 CANCELLED AT 2015-09-01T04:12:55 DUE TO NODE node-3 FAILURE ***",
    )
    assert not got.node_implicated


def test_uncorrectable_memory_names_the_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "slurmstepd: error: *** JOB 48213 ON knl-017 UNCORRECTABLE MEMORY ERROR AT 2019-03-02T11:20:44 ***",
    )
    assert got.node_implicated


def test_a_jvm_unknown_host_is_not_gloo(catalogue, matcher):
    got = classify_text(catalogue, matcher, "java.net.UnknownHostException: Unable to find address for: gpu-node-12")
    assert got.pattern != "gloo-no-interface"


BENIGN = [
    # ProcessGroupNCCL's options at init, with the blocking wait on.
    "[I ProcessGroupNCCL.cpp:587] [Rank 0] ProcessGroupNCCL initialized with following options:",
    "NCCL_BLOCKING_WAIT: 1",
    "[I ProcessGroupNCCL.cpp:500] [Rank 0] NCCL_BLOCKING_WAIT and NCCL_ASYNC_ERROR_HANDLING should not both be "
    "enabled. Only NCCL_BLOCKING_WAIT is being used in this process.",
    # Slurm's task/cgroup failcnt notices, <= 17.11.1 and 17.11.2-18.08: the limit was reached,
    # the kernel may have reclaimed pages; no kill is reported (19.05+ counts oom_kill events).
    "slurmstepd: error: Exceeded step memory limit at some point.",
    "slurmstepd: error: Exceeded job memory limit at some point.",
    "slurmstepd: error: Step 48213.0 hit memory limit at least once during execution. This may or may not result "
    "in some failure.",
    "slurmstepd: error: Job 48213 hit memory+swap limit at least once during execution. This may or may not result "
    "in some failure.",
    # Slurm 25.05's step teardown after a task failed elsewhere (--kill-on-bad-exit): the cause
    # is on another line.
    "slurmstepd: error: *** STEP 48213.0 ON node-3 CANCELLED AT 2025-06-01T10:00:00 DUE TO TASK FAILURE ***",
    "slurmstepd: error: *** STEP 48213.0 ON node-3 FAILED (non-zero exit code or other failure mode) ***",
    # NCCL's allocation INFO lines.
    "gpu-7:5120:5120 [3] NCCL INFO Allocated 33554432 bytes of host memory for proxy buffers",
    "gpu-7:5120:5120 [3] NCCL INFO MMAP memory : Allocated 33554432 bytes",
    # torch.distributed's rendezvous at INFO.
    "INFO:torch.distributed.distributed_c10d:Rank 0: Completed store-based barrier for key:store_based_barrier_key:1 "
    "with 8 nodes.",
    # DeepSpeed's single-node run without a hostfile.
    "[2023-05-01 09:00:00,000] [WARNING] [runner.py:202:fetch_hostfile] Unable to find hostfile, will proceed with "
    "training with local resources only.",
    # RHEL 6's vm.would_have_oomkilled: nothing is killed.
    "[ 8812.301122] Would have killed process 9120 (python). But continuing instead.",
    # torch.cuda.is_available()'s warning: the program goes on on the CPU.
    "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:128: UserWarning: CUDA initialization: The "
    "NVIDIA driver on your system is too old (found version 11020). Please update your GPU driver",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
