"""Round 13 of the catalogue (issue 11): failures read as another failure class, and layers.

Each line is a format string of the software that prints it, filled in with made-up
hosts, ids, addresses and numbers: LBNL NHC's watchdog and traps (mej/nhc, the nhc
script), Azure's NHC checks (azurehpc-health-checks customTests), XLA's coordination
service and JAX's client (coordination_service.cc, pjrt/distributed/client.cc), vLLM's
memory checks (gpu_worker, v1/core/kv_cache_utils.py), Ray's node-death texts
(gcs_actor_manager.cc, normal_task_submitter.cc), ProcessGroupNCCL's abort, THC's
THCudaCheck, nvidia-smi's lost GPU and NCCL's interface search (bootstrap.cc,
net_socket.cc). Beside each, the neighbour it must not take, from the same sources.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign, assert_decided

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Azure's NHC bandwidth checks: a slow node, by the path they measure.
    (
        "ERROR:  nhc:  Health check failed:  check_nccl_allreduce: NCCL allreduce, BUS BW (expected >=480.0 GB/s, "
        "but measured 305.6 GB/s). FaultCode: NHC2010",
        C.SLOWDOWN,
        L.HARDWARE,
        "nhc-bandwidth-low",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_rccl_allreduce: RCCL allreduce, BUS BW (expected >=330.0 GB/s, "
        "but measured 120.0 GB/s). FaultCode: NHC2010",
        C.SLOWDOWN,
        L.HARDWARE,
        "nhc-bandwidth-low",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_gpu_bw: HtoD test on GPU 5 failed. Bandwidth 11.2 is less than 24. "
        "FaultCode: NHC2020",
        C.SLOWDOWN,
        L.HARDWARE,
        "nhc-bandwidth-low",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_gpu_bw: P2P test on GPU 1 to GPU 6 failed. Bandwidth 40.5 is less "
        "than 300. FaultCode: NHC2020",
        C.SLOWDOWN,
        L.HARDWARE,
        "nhc-bandwidth-low",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_nccl_allreduce_ib_loopback: NCCL allreduce, BUS BW "
        "(expected >=40.0 GB/s, but measured 9.8 GB/s). FaultCode: NHC2003",
        C.SLOWDOWN,
        L.INFRASTRUCTURE_NETWORK,
        "nhc-network-bandwidth-low",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_ib_bw_gdr: ib_write_bw, IB=mlx5_ib3, mlx5_ib3:1, IB BW "
        "(expected > 380 Gbps, but measured 96.1 Gbps. FaultCode: NHC2003",
        C.SLOWDOWN,
        L.INFRASTRUCTURE_NETWORK,
        "nhc-network-bandwidth-low",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_ib_bw_non_gdr:  IB=mlx5_ib0, IB BW (expected > 380 Gbps, but "
        "measured 120 Gbps). FaultCode: NHC2003",
        C.SLOWDOWN,
        L.INFRASTRUCTURE_NETWORK,
        "nhc-network-bandwidth-low",
    ),
    # NHC itself stopped or hung: the node's software.
    (
        "NHC watchdog timer 30117 (300 secs) has expired.  Signaling NHC:  kill -s ALRM -- -30116",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "nhc-run-failed",
    ),
    (
        "ERROR:  nhc:  Health check failed:  Watchdog timer unable to terminate hung NHC process 30116.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "nhc-run-failed",
    ),
    (
        "2026-03-01T10:00:00.000000+00:00 gpu-a-03 nhc[30116]: Health check failed:  Script timed out while "
        'executing "check_fs_mount_rw -f /scratch".',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "nhc-run-failed",
    ),
    (
        "ERROR:  nhc:  Health check failed:  Terminated by signal SIGHUP.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "nhc-run-failed",
    ),
    # JAX's client barrier right after it connects: the job never formed.
    (
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect."
        " Timed out task names:\n/job:jax_worker/replica:0/task:2",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-coordination-register-timeout",
    ),
    # vLLM's memory checks.
    (
        "ValueError: Free memory on device cuda:0 (30.12/79.19 GiB) on startup is less than desired GPU memory "
        "utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "ValueError: Free memory on device (12.0/23.5 GiB) on startup is less than desired GPU memory utilization "
        "(0.9, 21.15 GiB).",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (6.25 GiB).",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # THC's forms of two CUDA errors.
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=2 : out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "luajit: cuda runtime error (2) : out of memory at /tmp/luarocks/cutorch/lib/THC/generic/THCStorage.cu:66",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "RuntimeError: cuda runtime error (30) : unknown error at /pytorch/aten/src/THC/THCGeneral.cpp:50",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCCachingHostAllocator.cpp line=278 error=999 : unknown error",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    # Ray: a node that died, in the present wordings.
    (
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
        "The actor is dead because its node has died. Node Id: 0b5c8e1d2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    (
        "Task failed because the node it was running on is dead or unavailable. Node IP: 10.2.3.4, node ID: "
        "3e4f5a6b7c8d. This can happen if the node was preempted, had a hardware failure, or its raylet crashed "
        "unexpectedly.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    # The abort that carries the watchdog's timeout, wrapped where issues wrap it.
    (
        "RuntimeError: NCCL communicator was aborted on rank 5.  Original reason for failure was: [Rank 5] Watchdog "
        "caught collective \noperation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for "
        "600321 milliseconds before timing out.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    # A lost GPU explains the missing device printed before it.
    (
        "CUDA Error: no CUDA-capable device is detected\n"
        "Unable to determine the device handle for GPU 0000:41:00.0: GPU is lost.  Reboot the system to recover "
        "this GPU",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    # NCCL with no interface to use: the host's configuration.
    (
        "gpu-a-02:4242:4242 [0] NCCL WARN Bootstrap : no socket interface found",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-no-interface",
    ),
    (
        "gpu-a-02:4242:4300 [0] NCCL WARN NET/Socket : No usable listening interface found",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-no-interface",
    ),
    (
        "gpu-a-02:4242:4300 [0] NCCL WARN no device found matching exactly ib9, verify NCCL_OOB_NET_IFNAME",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-no-interface",
    ),
    # torchelastic: a worker that exited itself with an error status.
    (
        "E0301 10:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) "
        "local_rank: 2 (pid: 5151) of binary: /usr/bin/python3",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\ntrain.py FAILED\n"
        "------------------------------------------------------------\nFailures:\n  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n"
        "  time      : 2026-03-01_10:00:00\n  host      : gpu-a-01\n  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : 2 (pid: 5151)\n  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    # The neighbours each must leave alone.
    (  # a worker killed by a signal: whoever sent it is not said
        "E0301 10:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) "
        "local_rank: 2 (pid: 5151) of binary: /usr/bin/python3",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-failed",
    ),
    (  # the exception itself, when the excerpt has it, decides
        'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    main()\n'
        "KeyError: 'labels'\n"
        "E0301 10:00:00.000000 4242 api.py:874] failed (exitcode: 1) local_rank: 0 (pid: 5151) of binary: python3",
        C.APP_ERROR,
        L.APPLICATION,
        "python-keyerror",
    ),
    (  # a check that failed to run is no measurement
        "ERROR:  nhc:  Health check failed:  check_nccl_allreduce_ib_loopback: nccl_allreduce (IB loopback) returned "
        "error code 1. FaultCode: NHCNA",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-health-check",
    ),
    (  # NHC's own check of the hardware
        "ERROR:  nhc:  Health check failed:  Actual CPU core count (2) does not match expected (8).",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-health-check",
    ),
    (  # a barrier inside the job is a collective's timeout
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: sync_global_devices",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "collective-recv-timeout",
    ),
    (  # the abort with another reason
        "RuntimeError: NCCL communicator was aborted on rank 3.  Original reason for failure was: NCCL error: "
        "unhandled system error, NCCL version 2.14.3",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-system-error",
    ),
    (  # the actor's worker process, not its node
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "ray-worker-died",
    ),
    (  # THC's device-side assert stays the program's
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=405 error=59 : device-side assert triggered",
        C.GPU_FAULT,
        L.APPLICATION,
        "cuda-device-assert",
    ),
    (  # gloo's counterpart of nccl-no-interface
        "Unable to find interface for: [10.0.0.3]",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "gloo-no-interface",
    ),
    (  # a connect NCCL tried and the network refused stays the network's
        "gpu-a-02:4242:4300 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.3<40404> failed : "
        "Connection timed out",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (  # no device with no GPU named lost stays the driver stack's
        "CUDA Error: no CUDA-capable device is detected",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


# distributed_nhc's report names the node in front of NHC's line.
@pytest.mark.parametrize(
    ("text", "node"),
    [
        (
            "gpu-b-17 | ERROR: nhc: Health check failed: check_nccl_allreduce_ib_loopback: NCCL allreduce, BUS BW "
            "(expected >=40.0 GB/s, but measured 18.1 GB/s)",
            "gpu-b-17",
        ),
        (
            "gpu-b-21 | ERROR: nhc: Health check failed: Bandwidth is low on device 6. Reported bandwidth is 8 GB/s.",
            "gpu-b-21",
        ),
    ],
)
def test_distributed_nhc_names_the_slow_node(catalogue, matcher, text, node):
    got = classify_text(catalogue, matcher, text)
    assert got.failure_class is C.SLOWDOWN
    assert got.nodes == [node]


BENIGN = [
    # distributed_nhc's healthy row.
    "gpu-b-18 | Healthy",
    # vLLM's memory report at INFO.
    "(EngineCore_DP0 pid=411) INFO 03-01 10:00:00 [gpu_worker.py:276] Available KV cache memory: 12.50 GiB",
    "INFO 03-01 10:00:00 [kv_cache_utils.py:716] GPU KV cache size: 204,800 tokens",
    # NHC's debug line for a pass.
    "nccl_all_red_lb: 41.2  GB/s",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
