"""Round 16 of the catalogue (issue 11): holdout-7's misses, by family.

Each line is a format string of the software that prints it, filled in with made-up hosts,
ids and numbers: Ascend's collective library (CANN hcomm's error-message registry: EI0002,
EI0006, EI0010, EI0012, EI0013, EJ0001, EJ0002, EJ0003, EI0001, EI0004, EI0008, EI0011, EI0014,
EI0015, EI0017) and torch_npu's NPU errors (NPUErrorCodes.h, NPUCachingAllocator.cpp), Open
MPI's UCX PML (pml_ucx.c) and its daemon missing on a host, MPICH's Hydra banner
(pmiserv_cb.c, mpiexec.c), Kueue's preemption (preemption.go), NCCL's NVLS bind failure
(nvls.cc), the amdgpu driver's job timeout and reset (amdgpu_job.c, amdgpu_device.c),
Marian's and dlib's CUDA checks (cuda_helpers.h, cuda_utils.h), TensorFlow's ROCm allocator
(rocm_driver.cc), improved-diffusion's log2 loss scale (fp16_util.py) and JAX's TPU
backend (xla_bridge.py). Beside each, the neighbour it must
not take: NCCL's IB device probe (net_ib.cc, ibvwrap.cc), which skips a device it cannot
open, the amdgpu soft recovery, Kueue's own admission and quota wait, JAX's CPU fallback.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign, assert_decided

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Ascend HCCL: a collective timing out (EI0002), the stream sync under it, torch_npu's code.
    (
        "EI0002: [PID: 7277] 2024-11-28-11:59:30.645.648 The wait execution of the Notify register times out. "
        "Reason: The Notify register has not received the Notify record from remote rank: [3]. base information: "
        "[streamID:[5], taskID[9], tag[AllReduce_10.0.0.1%eth0_60000_0_1]]. task information: []. group "
        "information: []",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    (
        "EE1002: 2024-09-03-16:50:00.041.231 Stream synchronize timeout. rtDeviceSynchronize execute failed, "
        "reason=[stream sync timeout]",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    (
        "npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:370 NPU error, error code is 107020.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    # Ascend HCCL: the links during a collective (EI0006, EI0010, EI0012, EI0013).
    (
        "[rank3]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: "
        "HcclAllreduce, error code is 6\n"
        "[rank3]: EI0006: [PID: 811] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did "
        "not send the data in time. Please check the reason for the rank being stuck",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    (
        "EI0010: P2P communication failed. Reason: peer device 3 unreachable",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    (
        "EI0012: SDMA memory copy task exception occurred. Remote rank: [5]. Base information: [streamID:[2]]. "
        "Task information: []. Communicator information: [].",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    (
        "EI0013: An error CQE occurred during operator execution. Local information: server 10.0.0.1, device ID 0, "
        "device IP 192.168.1.10. Peer information: server 10.0.0.2, device ID 0, device IP 192.168.1.20.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    # Ascend HCCP / HCCL at start: the previous process still holds the device, a port, rootInfo.
    (
        "RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:64\n"
        "EJ0001: 2024-05-21-11:57:54.167.645 Failed to initialize the HCCP process. Reason: Maybe the last "
        "training process is running.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-init-failed",
    ),
    ("EJ0003: Failed to bind the IP port. Reason: address in use", C.LAUNCH, L.SYSTEM_SOFTWARE, "hccl-init-failed"),
    (
        "EI0015: Failed to collect cluster information of the communicator based on rootInfo detection. Reason: "
        "timeout waiting for 8 ranks.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-init-failed",
    ),
    (
        "EI0004: The ranktable or rank is invalid,Reason:[rank id 9 out of range]. Please check the configured "
        "ranktable. [/etc/hccl.json]",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-config-invalid",
    ),
    (
        "EI0001: Environment variable [HCCL_SOCKET_IFNAME] is invalid. Reason: no such interface.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-config-invalid",
    ),
    (
        "EI0008: The HCCL versions are inconsistent: tag [AllReduce_1], local_version [7.1], remote_version [7.0]",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-config-invalid",
    ),
    # Ascend: the NPU's RoCE port; NPU memory.
    (
        "EJ0002: The network port is down.Suggest: check the optical module of device 2",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "hccp-port-down",
    ),
    (
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; 58.10 GiB "
        "already allocated)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    ("EI0011: Failed to allocate [4294967296] bytes of NPU memory.", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    # Open MPI: the UCX PML wiring the job; orted missing on the remote host.
    (
        "[gpu1:1581048] pml_ucx.c:419 Error: ucp_ep_create(proc=9) failed: Destination is unreachable",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ompi-ucx-wireup-failed",
    ),
    (
        "[gpu1:1581048] pml_ucx.c:472 Error: Failed to resolve UCX endpoint for rank 9",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ompi-ucx-wireup-failed",
    ),
    ("bash: orted: command not found", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-daemon-launch-failed"),
    ("bash: prted: command not found", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-daemon-launch-failed"),
    # MPICH's Hydra banner: the raw wait status of a rank killed by a signal.
    (
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 9665 RUNNING AT node-3\n"
        "=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES",
        C.HOST_OOM,
        L.APPLICATION,
        "killed",
    ),
    ("YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)", C.HOST_OOM, L.APPLICATION, "killed"),
    (
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 9665 RUNNING AT node-3\n=   EXIT CODE: 139",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "segfault",
    ),
    # Kueue's preemption, in v0.3-v0.7's and v0.8+'s wording.
    (
        "message: 'Preempted to accommodate a workload (UID: 9f54, JobUID: a20d) due to prioritization in the "
        "ClusterQueue'",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    ("message: Preempted to accommodate a higher priority Workload", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-preempted"),
    # NCCL's NVLS bind failure, over the unhandled-cuda-error line it comes with.
    (
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:93, unhandled cuda error (run with "
        "NCCL_DEBUG=INFO for details), NCCL version 2.29.3\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot "
        "be performed in the present state'.",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "nccl-nvls-bind-failed",
    ),
    # The amdgpu driver: a hung job, the reset, MES.
    (
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout, signaled seq=16060, emitted seq=16062",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "amdgpu-ring-timeout-reset",
    ),
    (
        "amdgpu 0000:0a:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=2201, emitted seq=2203",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "amdgpu-ring-timeout-reset",
    ),
    ("amdgpu 0000:0a:00.0: amdgpu: GPU reset begin!", C.GPU_HARDWARE, L.HARDWARE, "amdgpu-ring-timeout-reset"),
    (
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* GPU Recovery Failed: -110",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "amdgpu-ring-timeout-reset",
    ),
    (
        "amdgpu: MES might be in unrecoverable state, issue a GPU reset",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "amdgpu-ring-timeout-reset",
    ),
    # Marian's and dlib's CUDA checks; TensorFlow's ROCm allocator.
    (
        "[2025-01-21 16:30:37] Error: CUDA error 999 'unknown error' - src/tensors/gpu/algorithm.cu:54: "
        "cudaStreamSynchronize(0)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    (
        "[2025-01-21 16:30:37] Error: CUDA error 2 'out of memory' - src/tensors/gpu/device.cu:32: "
        "cudaMalloc(&data_, size)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "  what():  Error while calling cudaOccupancyMaxPotentialBlockSize(&num_blocks,&num_threads,K) in file "
        "dlib/cuda/cuda_utils.h:186. code: 98, reason: invalid device function",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    (
        "  what():  Error while calling cudaMalloc(&data, new_size*sizeof(float)) in file dlib/cuda/gpu_data.cpp:218."
        " code: 2, reason: out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "2019-01-08 19:06:11.303639: E tensorflow/stream_executor/rocm/rocm_driver.cc:601] failed to allocate 7.35G "
        "(7889485824 bytes) from device: hipError_t(1002)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # improved-diffusion / guided-diffusion's log2 loss scale, below 0: a scale under 1.
    ("Found NaN, decreased lg_loss_scale to -16199.354", C.NUMERICAL, L.APPLICATION, "overflow-at-small-scale"),
    # JAX's TPU backend at start.
    (
        "UserWarning: TPU backend initialization is taking more than 60.0 seconds. Did you run your code on all TPU "
        "hosts? See https://jax.readthedocs.io/en/latest/multi_process.html for more information.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "jax-tpu-backend-init",
    ),
    (
        "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with pid "
        "176028. Not attempting to load libtpu.so in this process.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "jax-tpu-backend-init",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


def test_the_amdgpu_reset_names_the_node_of_its_kernel_log(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "Oct  7 12:58:23 gpu-node-4 kernel: [ 2237.944235] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 "
        "timeout, signaled seq=16060, emitted seq=16062",
    )
    assert got.node_implicated
    assert got.nodes == ["gpu-node-4"]


def test_an_nvls_bind_failure_implicates_the_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation "
        "cannot be performed in the present state'.",
    )
    assert got.node_implicated


def test_a_verbs_call_nccl_gives_up_on_is_still_read(catalogue, matcher):
    """The probe's veto covers the device open only: a verbs call NCCL fails on stays a failure."""
    got = classify_text(
        catalogue, matcher, "gpu-7:80744:80744 [1] misc/ibvwrap.cc:106 NCCL WARN Call to ibv_reg_mr failed"
    )
    assert got.pattern == "ib-verbs-call-failed"


BENIGN = [
    # NCCL's IB transport skipping the devices a container was not given, then using the rest.
    "65826-86bd:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed",
    "65826-86bd:80746:80746 [3] transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to open device mlx5_59",
    "65826-86bd:80746:80746 [3] transport/net_ib.cc:158 NCCL WARN NET/IB : Unable to query device mlx5_59",
    "65826-86bd:80746:80746 [3] NCCL INFO NET/IB : Using [0]mlx5_1:1/RoCE [1]mlx5_18:1/RoCE ; OOB eth0:10.0.0.7<0>",
    # The amdgpu driver's soft recovery: the job finished after all.
    "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, but soft recovered",
    # Kueue admitting a workload; its own requeue for a quota it cannot give yet.
    "message: Quota reserved in ClusterQueue cluster-queue",
    "message: 'couldn''t assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
    "a100, 4 more needed'",
    # Ascend's INFO and warnings at start.
    "[INFO] HCCL(12345,python):2024-05-21-11:57:54.167.645 [hccl_comm.cc:120] HcclCommInitRootInfo success",
    # JAX finding no TPU on a CPU host (the fallback it announces is not a failure without the TPU's own words).
    "WARNING:jax._src.xla_bridge:An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not "
    "installed. Falling back to cpu.",
    # NCCL 2.27-2.28 when NVLS was not forced on: it goes on without NVLS.
    "gpu-7:5120:5120 [3] NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA "
    "error 801 'operation not supported'. Proceeding without NVLS support.",
    # improved-diffusion's loss scale in warm-up (from 2**20, one step down per skipped step).
    "Found NaN, decreased lg_loss_scale to 19.001",
    # Open MPI's UCX PML on a healthy start.
    "[gpu1:1581048] pml_ucx.c:289 mca_pml_ucx_init",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
