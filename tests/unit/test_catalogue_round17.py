"""Round 17 of the catalogue (issue 11): every accelerator stack's wording of each family.

Each line is a format string of the software that prints it, filled in with made-up hosts, ids
and numbers: the device allocators of PyTorch's MPS, XPU and torch_npu backends, PaddlePaddle,
MindSpore and Habana's bridge (gpu_oom); HIP's and ROCR's kernel faults and Ascend CANN's AI
Core exceptions (gpu_fault); HIP's and Level Zero's lost or unreachable devices (gpu_hardware);
torch_npu's HCCL errors, oneCCL's errors and MPI's fatal
handlers (comm_timeout, comm_error); MPI_Init, Hydra's proxies and torch_xla's mesh service
(launch); Hydra's bad-termination banner (app_error). Beside them the neighbour each must not
take, and each stack's INFO / warning / fallback lines that stay benign.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_decided

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Device out of memory, per stack (torch_npu's is cuda-oom's since round 16).
    (
        "RuntimeError: MPS backend out of memory (MPS allocated: 17.50 GB, other allocations: 1.20 GB, max allowed: "
        "18.13 GB). Tried to allocate 512.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable "
        "upper limit for memory allocations (may cause system failure).",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB (GPU 0; 64.00 GiB total capacity; 60.10 GiB "
        "already allocated; 1.20 GiB free; 61.30 GiB reserved in total by PyTorch)",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.97 GiB total capacity; 57.12 GiB "
        "already allocated; 57.12 GiB current active; 1.03 GiB free; 58.10 GiB reserved in total by PyTorch)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "MemoryError: ResourceExhaustedError: Out of memory error on GPU 0. Cannot allocate 1.500000GB memory on GPU "
        "0, 30.500000GB memory has been allocated and available memory is only 512.000000MB.",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "Out of memory error on GPU Virtual Memory 2. Cannot allocate 4.000000GB memory on GPU Virtual Memory 2, "
        "75.000000GB memory has been allocated and available memory is only 1.000000GB.",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: Device(id:0) memory isn't enough and alloc failed, kernel name: "
        "Default/network-WithLossCell/MatMul-op0, alloc size: 2147483648B.",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::939524096 (896)MB",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: level_zero backend failed with error: 70000002 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    # Kernel faults: the program's, or undecided.
    (
        "HIP_CHECK failed: hipErrorIllegalAddress at attention.hip:212",
        C.GPU_FAULT,
        L.APPLICATION,
        "hip-illegal-address",
    ),
    (
        ":0:rocdevice.cpp            :2690: 12345678901 us: [pid:1234  tid:0x7f00] Callback: Queue 0x7f0000000000 "
        "aborting with error : HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory "
        "beyond the largest legal address. code: 0x29",
        C.GPU_FAULT,
        L.APPLICATION,
        "hip-illegal-address",
    ),
    (
        ":0:rocdevice.cpp            :2690: 12345678901 us: [pid:1234  tid:0x7f00] Callback: Queue 0x7f0000000000 "
        "aborting with error : HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception. "
        "code: 0x1016",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    (
        "EZ9999: [PID: 1234] 2024-01-01-10:00:00.000.000 The error from device(chipId:0, dieId:0), serial number is "
        "12, there is an aicore error exception, core id is 0, error code = 0x800000, dump info: pc start: "
        "0x1240c0000000, current: 0x1240c0000100",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    (
        "The error from device(chipId:1, dieId:0), serial number is 3, there is an aivec error exception, core id is 18",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    (
        "[ERROR] RUNTIME(1234,python):2024-01-01-10:00:00.000.000 [task_info.cc:1192]1234 PrintErrorInfo:Aicore "
        "kernel execution failed, device_id=0, stream_id=2, report_stream_id=2, task_id=3, flip_num=0, fault "
        "kernel_name=MatMulV2_12, program id=1, hash=1.",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    # Devices lost or out of reach.
    ("RuntimeError: No HIP GPUs are available", C.GPU_HARDWARE, L.SYSTEM_SOFTWARE, "rocm-device-unreachable"),
    (
        "RuntimeError: HIP error: no ROCm-capable device is detected",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    (
        "RuntimeError: level_zero backend failed with error: 20 (ZE_RESULT_ERROR_DEVICE_LOST)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "accelerator-device-lost",
    ),
    ("RuntimeError: XPU error: UR_RESULT_ERROR_DEVICE_LOST", C.GPU_HARDWARE, L.HARDWARE, "accelerator-device-lost"),
    ("hipMemcpy failed: hipErrorECCNotCorrectable", C.GPU_HARDWARE, L.HARDWARE, "accelerator-device-lost"),
    # Ascend NPU memory, AMD's RAS, devices that cannot be opened.
    (
        "RuntimeError: npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:464 NPU function error: UCE "
        "ERROR., error code is 507053",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "npu-memory-uncorrectable",
    ),
    (
        "RuntimeError: synchronize:torch_npu/csrc/core/npu/NPUStream.cpp:467 NPU function error: HBM MULTI BIT ECC "
        "ERROR.reason=[hbm Multi-bit ECC error] time us= 1733. time is 1733, error code is 507054",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "npu-memory-uncorrectable",
    ),
    (
        "RuntimeError: c10_npu::acl::AclrtSynchronizeStreamWithTimeout(stream) NPU function error: "
        "AclrtSynchronizeStreamWithTimeout, error code is 507054",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "npu-memory-uncorrectable",
    ),
    (
        "amdgpu 0000:c1:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "amdgpu-ras-uncorrectable",
    ),
    (
        "amdgpu 0000:0b:00.0: amdgpu: 2 uncorrectable hardware errors detected in umc block",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "amdgpu-ras-uncorrectable",
    ),
    (
        "RuntimeError: synStatus=8 [Device already acquired] Device acquire failed.",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "accelerator-init-failed",
    ),
    (
        "RuntimeError: TPU initialization failed: open(/dev/accel0): Device or resource busy",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "accelerator-init-failed",
    ),
    (
        "tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted by: failed to connect "
        "to all addresses",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "tf-collective-aborted",
    ),
    # HCCL's errors (its timeouts are round 16's), oneCCL's, MPI's.
    (
        "torch.distributed.DistBackendError: HCCL function error: HcclAllreduce(inputPtr, outputPtr, numel, "
        "hcclType, hcclReduceOp, comm, stream), error code is 7",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-error",
    ),
    (
        "2024:01:01-10:00:00:(1234) |CCL_ERROR| atl_ofi.cpp:345 atl_ofi_comm_init: fi_getinfo error: ret -61",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "oneccl-error",
    ),
    (
        "Abort(474615310) on node 3 (rank 3 in comm 0): Fatal error in PMPI_Allreduce: Other MPI error, error stack:",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "mpi-call-failed",
    ),
    ("[gpu-3:01234] *** An error occurred in MPI_Allreduce", C.COMM_ERROR, L.AMBIGUOUS, "mpi-call-failed"),
    # Forming the job.
    (
        "Abort(1091215) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init: Other MPI error, error stack:",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    (
        '[mpiexec@gpu-1] HYDU_sock_connect (utils/sock/sock.c:145): unable to connect from "gpu-1" to "gpu-2" '
        "(No route to host)",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    (
        "RuntimeError: Failed to connect to client mesh master: 10.0.0.1:8477",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-mesh-connect-failed",
    ),
    # The launcher's verdict and the program's binaries.
    ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", C.APP_ERROR, L.APPLICATION, "mpi-rank-exit"),
    ("RuntimeError: HIP error: invalid device function", C.APP_ERROR, L.APPLICATION, "hip-build-mismatch"),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


def test_paddle_oom_is_the_device_not_the_host(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "MemoryError: ResourceExhaustedError: Out of memory error on GPU 0. "
        "Cannot allocate 1.5GB memory on GPU 0, available memory is only 512MB.",
    )
    assert got.pattern != "host-alloc-failed"


def test_mindspore_cpu_allocator_is_not_the_device(catalogue, matcher):
    got = classify_text(
        catalogue, matcher, "RuntimeError: Memory isn't enough and alloc failed, kernel name: Add-op1, alloc size: 64B."
    )
    assert got.pattern != "accelerator-oom"


def test_sycls_generic_out_of_resources_is_not_an_oom(catalogue, matcher):
    got = classify_text(
        catalogue, matcher, "RuntimeError: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)"
    )
    assert got.failure_class is not C.GPU_OOM


def test_the_ranks_own_error_outranks_hydras_banner(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.97 GiB total capacity)\n"
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 4321 RUNNING AT gpu-3\n=   EXIT CODE: 1",
    )
    assert got.failure_class is C.GPU_OOM


def test_tensorflow_names_the_cause_it_wraps(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "tensorflow.python.framework.errors_impl.InternalError: Collective ops is aborted by: Error invoking NCCL: "
        "unhandled cuda error",
    )
    assert got.pattern != "tf-collective-aborted"


def test_rocm_device_unreachable_implicates_the_node(catalogue, matcher):
    assert classify_text(catalogue, matcher, "RuntimeError: No HIP GPUs are available").node_implicated


BENIGN = [
    # PyTorch's MPS fallback to the CPU for an unsupported operator.
    "UserWarning: The operator 'aten::_upsample_bicubic2d_aa.out' is not currently supported on the MPS backend and "
    "will fall back to run on the CPU. This may have performance implications.",
    # Habana's allocator before it defragments and retries (PT_DEVMEM_DEBUG / PT_DEVMEM_WARN).
    "[DEVMEM] Allocation failed for size::2147483648 (2048)MB",
    "Memory allocation failed. Attempt to defragment memory.",
    # oneCCL's warning and info levels.
    "2024:01:01-10:00:00:(1234) |CCL_WARN| did not find MPI-launcher specific variables, switch to ATL/OFI, to force "
    "enable ATL/MPI set CCL_ATL_TRANSPORT=mpi",
    "2024:01:01-10:00:00:(1234) |CCL_INFO| process launcher: hydra, local_proc_idx: 0, local_proc_count: 8",
    # HCCL's timeouts set, not hit.
    "export HCCL_CONNECT_TIMEOUT=1200",
    # PaddlePaddle's device notice at start.
    "W0101 10:00:00.000000  1234 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 8.0, Driver "
    "API Version: 12.2, Runtime API Version: 11.8",
    # JAX's fallback to the CPU, and PyTorch XPU's empty device count.
    "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
    "UserWarning: XPU device count is zero! (Triggered internally at ../c10/xpu/XPUFunctions.cpp:115.)",
    # AMD's RAS query with nothing to report; Habana's debug line before it tries the next device type;
    # a script's own message before it falls back.
    "amdgpu 0000:0b:00.0: amdgpu: 0 uncorrectable hardware errors detected in umc block",
    "Device acquire failed for device_type: 5",
    "INFO:root:TPU initialization failed, falling back to GPU/CPU",
    # Triton's autotuner skipping a configuration that needs more shared memory (round 15 declined it).
    "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 262144, Hardware limit: 232448. "
    "Reducing block sizes or `num_stages` may help.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert classify_text(catalogue, matcher, text).failure_class is C.BENIGN
