"""Round 20 of the catalogue (issue 11): a coverage sweep of three classes from their sources.

No labelled set was read: each line is a format string of the software that prints it, filled in
with made-up hosts, ids and numbers, for every way the sources word an interconnect fault (rdma-core
and perftest's completion statuses, the kernel's mlx5 command interface and error CQE dump, UCX's
UD timeout and error CQEs, aws-ofi-nccl's data path), a host OOM (the cgroup's counters, systemd,
containerd, kubelet, earlyoom, Ray, jemalloc, bash, numpy, cuDNN) and a device OOM (the CUDA driver
API's check, PyTorch's ROCm build, the CUDA samples' check idiom, cuDNN 9, cuRAND, DeepSpeed's
inference workspace, vLLM v0's KV cache check). Beside them the neighbour each must not take, and
the look-alikes of the same sources that stay benign.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign, assert_decided

C = FailureClass
L = CauseLayer

NET = (C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK)
HOST = (C.HOST_OOM, L.APPLICATION)
GPU = (C.GPU_OOM, L.APPLICATION)

# (excerpt, class, layer, pattern)
DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # mlx5_core cmd.c: every command slot held; a completion after its timeout.
    (
        "[ 812.104] mlx5_core 0000:3b:00.0: cmd_work_handler:877:(pid 4411): failed to allocate command entry",
        *NET,
        "ib-async-port-event",
    ),
    (
        "[ 812.104] mlx5_core 0000:3b:00.0: mlx5_cmd_comp_handler:1600:(pid 0): Command completion arrived after "
        "timeout (entry idx = 3).",
        *NET,
        "ib-async-port-event",
    ),
    # UCX's fatal UD timeout and its error CQE with the bad-response syndrome.
    (
        "[1700000000.123456] [gpu-a-01:4411:0]        ud_ep.c:278  Fatal: UD endpoint 0x5581 to <no debug data>: "
        "unhandled timeout error",
        *NET,
        "ib-transport-retry",
    ),
    (
        "[1700000000.123456] [gpu-a-01:4411:0]  ib_mlx5_log.c:177  UCX  ERROR Bad response on mlx5_2:1/RoCE (synd "
        "0x5 vend 0x0 hw_synd 0/0)",
        *NET,
        "ib-transport-retry",
    ),
    # perftest / rdma-core examples, and the kernel's mlx5_ib dump of an error CQE.
    (" Failed status 12: wr_id 0 syndrom 0x81", *NET, "ib-transport-retry"),
    (" Failed status 20: wr_id 7 syndrom 0x0", *NET, "ib-transport-retry"),
    (
        "[ 812.104] infiniband mlx5_1: dump_cqe:272:(pid 0): WC error: 7, Message: bad response",
        *NET,
        "ib-transport-retry",
    ),
    # aws-ofi-nccl's data path failing on the provider (not storage's EIO).
    (
        "gpu-a-01:4411:4490 [0] NCCL WARN NET/OFI Unable to retrieve completion queue entries. RC: -5, ERROR: "
        "Input/output error",
        *NET,
        "ib-transport-retry",
    ),
    (
        "gpu-a-01:4411:4490 [3] NCCL WARN NET/OFI Unable to post receive buffer for dev 1. RC: -5, ERROR: "
        "Input/output error",
        *NET,
        "ib-transport-retry",
    ),
    (
        "gpu-a-01:4411:4490 [3] NCCL WARN NET/OFI fi_sendmsg (eager) failed; RC: -5, Error: Input/output error",
        *NET,
        "ib-transport-retry",
    ),
    (
        "gpu-a-01:4411:4490 [3] NCCL WARN NET/OFI Unable to read from fi_cq_readerr. RC: -5. Error: Input/output error",
        *NET,
        "ib-transport-retry",
    ),
    # UCX's verbs calls at setup: a locked-memory limit, not the host's memory.
    (
        "[1700000000.123456] [gpu-a-01:4411:0]     ib_device.c:1040 UCX  ERROR ibv_create_cq(cqe=4096) failed: "
        "Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    (
        "[1700000000.123456] [gpu-a-01:4411:0]        ib_md.c:293  UCX  ERROR ibv_reg_mr(address=0x7f3a, "
        "length=1048576, access=0xf) failed: Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    # The cgroup's own counters (v2 memory.events, v1 memory.oom_control).
    ("oom_kill 2", *HOST, "oom-kill"),
    ("/sys/fs/cgroup/slurm/job_4411/memory.events:oom_kill 1", *HOST, "oom-kill"),
    ("memory.events.local: oom_group_kill 1", *HOST, "oom-kill"),
    # systemd, containerd, kubelet.
    ("trainer.service: A process of this unit has been killed by the OOM killer.", *HOST, "oom-kill"),
    ("trainer.service: Failed with result 'oom-kill'.", *HOST, "oom-kill"),
    (
        'time="2024-03-01T10:00:00.1Z" level=info msg="TaskOOM event &TaskOOM{ContainerID:9f1c2e,'
        'XXX_unrecognized:[],}"',
        *HOST,
        "oom-kill",
    ),
    (
        "Warning  SystemOOM  2m  kubelet  System OOM encountered, victim process: python3, pid: 4411",
        *HOST,
        "oom-kill",
    ),
    # earlyoom.
    ("earlyoom[812]: low memory! at or below SIGTERM limits: mem 10.00%, swap  5.00%", *HOST, "oom-kill"),
    (
        'earlyoom[812]: sending SIGTERM to process 4411 uid 1000 "python3": badness 912, VmRSS 118000 MiB',
        *HOST,
        "oom-kill",
    ),
    (
        'earlyoom[812]: sending SIGKILL to process 4411 uid 1000 "python3": oom_score 912, VmRSS 118000 MiB',
        *HOST,
        "oom-kill",
    ),
    # Ray's monitor, per task and in its older Python form.
    (
        "Memory on the node (IP: 10.1.0.7, ID: 5e1f) where the task (task ID: 77ab, name=tokenize, pid=4411, "
        "memory used=28.10GB) was running was 30.20GB / 31.40GB (0.961783), which exceeds the memory usage "
        "threshold of 0.95. Ray killed this worker (ID: 91cd) because it was the most recently scheduled task;",
        *HOST,
        "oom-kill",
    ),
    (
        "ray._private.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node gpu-a-01 is used "
        "(30.2 / 31.4 GB).",
        *HOST,
        "oom-kill",
    ),
    # Allocators: jemalloc, bash, numpy 1.16's wording, cuDNN 9's host allocation.
    ("<jemalloc>: Error in malloc(): out of memory. Requested: 17179869184", *HOST, "host-alloc-failed"),
    ("<jemalloc>: Error allocating aligned memory: out of memory", *HOST, "host-alloc-failed"),
    ("bash: xmalloc: cannot allocate 65536 bytes (0 bytes allocated)", *HOST, "host-alloc-failed"),
    (
        "numpy.core._exceptions.MemoryError: Unable to allocate array with shape (90000, 90000) and data type float64",
        *HOST,
        "host-alloc-failed",
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
        *HOST,
        "host-alloc-failed",
    ),
    # Device OOM wordings.
    ("RuntimeError: CUDA driver error: out of memory", *GPU, "cuda-oom"),
    ("RuntimeError: HIP error: out of memory", *GPU, "cuda-oom"),
    ("Error out of memory at line 409 in file /src/csrc/ops.cu", *GPU, "cuda-oom"),
    ("RuntimeError: cuDNN Frontend error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED", *GPU, "cuda-oom"),
    ("RuntimeError: cuRAND error: CURAND_STATUS_ALLOCATION_FAILED", *GPU, "cuda-oom"),
    ("RuntimeError: Workspace can't be allocated, no enough memory.", *GPU, "cuda-oom"),
    (
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
        "stored in KV cache (9216). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine.",
        *GPU,
        "cuda-oom",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


def test_ofi_data_path_eio_is_not_storage(catalogue, matcher):
    # storage's io-error read fi_strerror's "Input/output error" before.
    got = classify_text(
        catalogue,
        matcher,
        "n1:1:2 [0] NCCL WARN NET/OFI Error posting rx buffer. RC: -5, Error: Input/output error",
    )
    assert got.failure_class is C.INTERCONNECT and got.pattern != "io-error"


def test_ucx_verbs_enomem_is_not_the_hosts_memory(catalogue, matcher):
    got = classify_text(
        catalogue, matcher, "UCX  ERROR ibv_reg_mr(address=0x1, length=4096, access=0xf) failed: Cannot allocate memory"
    )
    assert got.failure_class is not C.HOST_OOM


def test_the_remote_and_local_statuses_stay_out_of_the_link_reading(catalogue, matcher):
    # A flushed WR (5) and the remote access error (10) are not the link's: not ib-transport-retry.
    for text in (
        " Failed status 5: wr_id 0 syndrom 0xf9",
        "infiniband mlx5_1: dump_cqe:272:(pid 0): WC error: 10, Message: remote access error",
    ):
        assert classify_text(catalogue, matcher, text).pattern != "ib-transport-retry"


def test_cudnn_device_allocation_is_not_an_app_error(catalogue, matcher):
    # python-exception (app_error) read the RuntimeError before.
    got = classify_text(
        catalogue, matcher, "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"
    )
    assert got.failure_class is C.GPU_OOM


def test_the_cuda_driver_oom_is_not_a_gpu_fault(catalogue, matcher):
    # gpu_fault's cuda-error-other read it before.
    got = classify_text(catalogue, matcher, "RuntimeError: CUDA driver error: out of memory")
    assert got.failure_class is not C.GPU_FAULT


def test_the_old_ray_monitor_is_not_an_app_error(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "ray.exceptions.RayOutOfMemoryError: More than 95% of the memory on node n3 is used (30.2 / 31.4 GB).",
    )
    assert got.failure_class is C.HOST_OOM


BENIGN = [
    # The cgroup's counters at zero, and the other memory.events / oom_control keys.
    "oom_kill 0",
    "oom_group_kill 0",
    "oom_kill_disable 0",
    "under_oom 0",
    # earlyoom's periodic report and banner; tcmalloc's report of a large allocation that succeeded.
    "earlyoom[812]: mem avail: 42000 of 64000 MiB (65.62%), swap free:    0 of    0 MiB ( 0.00%)",
    "earlyoom v1.7",
    "tcmalloc: large alloc 1073741824 bytes == 0x55d5c0000000 @  0x7f10 0x7f20",
    # systemd-oomd's candidate list; a pod's container that completed.
    "systemd-oomd[812]: Considered 3 cgroups for killing, top candidates were:",
    "      Reason:       Completed",
    # PyTorch's memory summary, TensorFlow's BFC allocator statistics and its "not a failure" warning.
    "|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |",
    "|            CUDA OOMs: 2            |        cudaMalloc retries: 3         |",
    "2024-03-01 10:00:00.000001: I tensorflow/core/common_runtime/bfc_allocator.cc:1101] Sum Total of in-use "
    "chunks: 1.20GiB",
    "2024-03-01 10:00:00.000001: W tensorflow/core/common_runtime/bfc_allocator.cc:245] Allocator (GPU_0_bfc) "
    "ran out of memory trying to allocate 2.20GiB with freed_by_count=0. The caller indicates that this is not a "
    "failure, but may mean that there could be performance gains if more memory were available.",
    # vLLM's KV cache sizing at INFO; DeepSpeed's memory report.
    "INFO 03-01 10:00:00 worker.py:100] # GPU blocks: 12345, # CPU blocks: 2048",
    "INFO 03-01 10:00:00 kv_cache_utils.py:500] GPU KV cache size: 1,234,567 tokens",
    "[2024-03-01 10:00:00,000] [INFO] [utils.py:800:see_memory_usage] MA 1.2 GB         Max_MA 2.3 GB         "
    "CA 3.4 GB         Max_CA 3 GB ",
    # mlx5_core at load and in recovery; a port coming up; NCCL and libfabric at INFO; a UCX warning.
    "[ 812.104] mlx5_core 0000:3b:00.0: firmware version: 28.39.1002",
    "[ 812.104] mlx5_core 0000:3b:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)",
    "[ 812.104] mlx5_core 0000:3b:00.0: mlx5_health_try_recover:350:(pid 8): health recovery succeeded",
    "[ 812.104] mlx5_core 0000:01:00.1 mlx5_0: Port: 1 Link ACTIVE",
    "[ 812.104] mlx5_core 0000:3b:00.0 ens1f0np0: Link up",
    "n1:11:12 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>",
    "n1:11:12 [0] NCCL INFO NET/IB : Got non-fatal async event: GID table change(18)",
    "n1:11:12 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)",
    "libfabric:7001:1700000001::efa:core:efa_device_construct():120<info> device 0 is rdmap0s6",
    "[1700000000.123456] [gpu-a-01:4411:0]    ucp_context.c:1100 UCX  WARN  transport 'rc_mlx5' is not available",
    "port_state:\t\tPORT_ACTIVE (4)",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
