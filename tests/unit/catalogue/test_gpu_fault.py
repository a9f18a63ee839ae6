"""runbooks/gpu_fault.yaml: kernel and device faults of a running program, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html:
RESTART_APP with CHECK_APP / CUDA or CONTACT_SUPPORT, WORKFLOW_XID_13/31/45) and the driver
(nverror.h, kernel_rc.c); the CUDA runtime's error names and texts as PyTorch prints them, THC's
THCudaCheck; cuBLAS's CUBLAS_STATUS_EXECUTION_FAILED; AMD's ROCm runtime (ROCR-Runtime
runtime.cpp, HIP's and ROCR's kernel faults, rocdevice.cpp), the amdgpu driver's VM faults
(gmc_v9_0.c, gmc_v10_0.c) and amdkfd's SQ interrupts; Ascend CANN's AI Core and AI CPU exceptions; SYCL's
runtime_error.
"""

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases
from tests.unit.catalogue._catalogue_cases import XID, xid

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # ROCm: the fault's reason decides whose it is.
    (
        "Memory access fault by GPU node-4 (Agent handle: 0x55d1c2a0e0f0) on address 0x7f00dead0000. "
        "Reason: Page not present or supervisor privilege.",
        C.GPU_FAULT,
        L.APPLICATION,
        "cuda-illegal-address",
    ),
    (
        "Memory access fault by GPU node-1 on address 0x1000(may not be exact address). "
        "Reason: Write access to a read-only page.",
        C.GPU_FAULT,
        L.APPLICATION,
        "cuda-illegal-address",
    ),
    (
        "HW Exception by GPU node-2 (Agent handle: 0x55e0a1b2) reason :GPU Hang",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "rocm-gpu-fault",
    ),
    (
        "GPU core dump failed\nMemory access fault by GPU node-6 (Agent handle: 0x9a) on address 0x14a1c000. "
        "Reason: Generic hang recovery.",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "rocm-gpu-fault",
    ),
    # The neighbours each must leave alone.
    # THC's device-side assert stays the program's
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=405 error=59 : device-side assert triggered",
        C.GPU_FAULT,
        L.APPLICATION,
        "cuda-device-assert",
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
    # amdgpu gmc_v9_0.c (hub and retry), gmc_v10_0.c, and the pre-5.x form with the process.
    (
        "[ 1203.440112] amdgpu 0000:83:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:5 "
        "pasid:32770)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "amdgpu 0000:0a:00.0: amdgpu: [mmhub] page fault (src_id:0 ring:8 vmid:2 pasid:32781)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "amdgpu 0000:43:00.0: [gfxhub] page fault (src_id:0 ring:0 vmid:1 pasid:32769, for process python pid 991 "
        "thread python pid 991)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    # amdkfd's SQ error interrupt: v9 (sh / cu_id), v10+ (sa / wgp_id), gfx_v10_0.c's detail form.
    (
        "[ 77.1] amdgpu: sq_intr: error, se 0, data 0x12, sh 1, priv 0, wave_id 3, simd_id 2, cu_id 7, err_type 1",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "amdgpu: sq_intr: error, se 2, data 0x0, sa 0, priv 1, wave_id 6, simd_id 1, wgp_id 4, err_type 3",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "amdgpu: sq_intr: error, detail 0x00000010, type 2, sh 0, priv 1, wave_id 1, simd_id 3, wgp_id 2",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    # SYCL's runtime_error under its abort, and the build without the device's target.
    (
        "terminate called after throwing an instance of 'sycl::_V1::runtime_error'\n"
        "  what():  Native API failed. Native API returns: -997 (Command failed to enqueue/execute) -997 (Command "
        "failed to enqueue/execute)\nAborted (core dumped)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "sycl-native-api-failed",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # WORKFLOW_XID_45: a teardown that names its cause follows that cause.
    (xid(45, "Ch 0000001a caused by previous Xid 13"), C.GPU_FAULT, L.AMBIGUOUS, "xid-other"),
    # RESTART_APP + CHECK_APP/CUDA, WORKFLOW_XID_13/31: the program.
    (
        xid(13, "Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address"),
        C.GPU_FAULT,
        L.APPLICATION,
        "xid-application",
    ),
    (xid(43, "Ch 00000010"), C.GPU_FAULT, L.APPLICATION, "xid-application"),
    (xid(137, "NVLink: fault at 0x1000 on remote GPU"), C.GPU_FAULT, L.APPLICATION, "xid-application"),
    # RESTART_APP + CONTACT_SUPPORT: an engine's exception, driver or hardware.
    (xid(32, "Channel ID 00000010 intr0 00040000"), C.GPU_FAULT, L.AMBIGUOUS, "xid-engine-fault"),
    (xid(128, "CE12: Unknown Error"), C.GPU_FAULT, L.AMBIGUOUS, "xid-engine-fault"),
    # CUDA runtime errors as PyTorch prints them.
    (
        "RuntimeError: CUDA error: an illegal instruction was encountered",
        C.GPU_FAULT,
        L.APPLICATION,
        "cuda-illegal-address",
    ),
    ("RuntimeError: CUDA error: hardware stack error", C.GPU_FAULT, L.APPLICATION, "cuda-illegal-address"),
    ("RuntimeError: CUDA error: invalid program counter", C.GPU_FAULT, L.APPLICATION, "cuda-illegal-address"),
    (
        "RuntimeError: CUDA error: the launch timed out and was terminated",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "cuda-launch-failure",
    ),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", C.GPU_FAULT, L.AMBIGUOUS, "cuda-error-other"),
    # Round 24, Ascend's AI CPU engine failing as its AI Core does (rt_error_codes.h 507018,
    # device_error_proc.cc ProcessAicpuErrorInfo, task_info.cc PrintAicpuErrorInfo).
    (
        "E39999: 2025-03-02-10:11:12.123.456 An exception occurred during AICPU execution, stream_id:7, "
        "task_id:311, errcode:21008, msg:inner error[FUNC:ProcessAicpuErrorInfo][FILE:device_error_proc.cc][LINE:730]",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    (
        "        Kernel task happen error, retCode=0x2a, [aicpu exception].[FUNC:PreCheckTaskErr][FILE:task_info.cc][LINE:1776]",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    (
        "Aicpu kernel execute failed, device_id=1, stream_id=4, task_id=88, errorCode=2a.[FUNC:PrintAicpuErrorInfo]",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    (
        "[ERROR] RUNTIME(3102,python):2025-03-02-10:11:12.123.456 [api_c.cc:721]3190 rtStreamSynchronize:"
        "ErrCode=507018, desc=[aicpu exception], InnerCode=0x715002a",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    # Round 32: the TPU runtime halting a program on a device-side check; the Neuron runtime's 1004.
    (
        "F0000 00:00:1716973077.466057 9049 pjrt_computation_client.cc:487] Non-OK-status: status: INTERNAL: Accelerator "
        "device halted prematurely, perhaps due to an on-device check-failure. Node 0 halted unexpectedly",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    (
        'Internal: adaptor.cc:446:Execute failed: nrt_execute: status=1004, error message="Execution was completed '
        'with other errors".',
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    # Round 33: a Metal command buffer MLX could not run (MTLCommandBufferError).
    (
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer execution "
        "failed: Internal Error (0000000e:Internal Error)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    # Round 36: nvgpu ending the channel of a Tegra GPU's MMU fault (tsg.c), its Xid 31.
    (
        "nvgpu: 17000000.gpu   nvgpu_tsg_set_ctx_mmu_error:1070 [ERR]  TSG 3 generated a mmu fault",
        C.GPU_FAULT,
        L.APPLICATION,
        "nvgpu-mmu-fault",
    ),
    (
        "nvgpu: 57000000.gpu gk20a_fifo_set_ctx_mmu_error_ch:1532 [ERR]  channel 12 generated a mmu fault",
        C.GPU_FAULT,
        L.APPLICATION,
        "nvgpu-mmu-fault",
    ),
    # Round 41: a PowerVR-derived driver resetting a context its firmware found locked up.
    (
        "[24078.925037] MTGPU:(Error): 56377:  PID 1747 experienced error Guilty Lockup (0x1) caller[CheckFWCCB CTX "
        "Reset Noticication] [188]",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "accelerator-kernel-fault",
    ),
    # Round 44: the older amdgpu GMCs' VM faults; Caffe's CUDA and cuDNN checks.
    (
        "[  712.873530] amdgpu 0001:01:00.0: GPU fault detected: 146 0x0218082c",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "[  712.927554] amdgpu 0001:01:00.0: VM fault (0x2c, vmid 2) at page 1052739, read from 'TC2' (0x54433200) (8)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "F1207 10:00:00.000000  4242 syncedmem.hpp:30] Check failed: error == cudaSuccess (11 vs. 0)  invalid argument",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "caffe-cuda-check-failed",
    ),
    (
        "F1207 10:00:00.000000  4242 cudnn_conv_layer.cpp:52] Check failed: status == CUDNN_STATUS_SUCCESS (4 vs. 0)  "
        "CUDNN_STATUS_INTERNAL_ERROR",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "caffe-cuda-check-failed",
    ),
    # Round 45: the CUDA check under easylogging++; Warp's own CUDA error report.
    (
        "2026-12-07 10:00:00,773 FATAL [default] Check failed: [error == cudaSuccess]  unknown error",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "caffe-cuda-check-failed",
    ),
    (
        "Warp CUDA error 999: unknown error (in function wp_cuda_context_synchronize, warp/native/warp.cu:2311)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "cuda-error-other",
    ),
    # Round 50: a CUDA error as NVIDIA's samples' check macro prints it.
    (
        "Cuda failure: operation not supported on global/shared address space at line 286 in file /src/pp.cpp error "
        "status: 717",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "cuda-error-other",
    ),
    # Round 52: amdgpu killing one hung job without a GPU reset.
    (
        "[5621708.5] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, but soft recovered",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-job-soft-recovered",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


STILL_FAILURES: list[tuple[str, str]] = [
    (XID.format(code=45, text="Ch 00000010"), "xid-other"),
    (XID.format(code=13, text="Graphics SM Warp Exception"), "xid-application"),
    ("cn7:411:499 [2] NCCL WARN Cuda failure 'an illegal memory access was encountered'", "cuda-illegal-address"),
]


test_neighbours_of_the_vetoes_still_count = cases.lines_decided_by_the_pattern(STILL_FAILURES)


BENIGN: list[str] = [
    # ROCm's note after a fault, alone.
    "GPU core dump failed",
    # The SQ interrupt's information lines, and a healthy ibstat port / lspci link.
    "amdgpu: sq_intr: auto, se 0, ttrace 0, wlt 1, ttrac_buf_full 0, reg_tms 0, cmd_tms 0, host_cmd_ovf 0",
    "amdgpu: sq_intr: inst, se 1, data 0x0, sh 0, priv 0, wave_id 2, simd_id 0, cu_id 3, intr_data 0x0",
    # Round 44: a CUDA check in a destructor as the runtime unloads.
    "ERROR: Check failed: error == cudaSuccess (29 vs. 0) driver shutting down",
    # Round 45: the easylogging++ check at exit, code 29.
    "ERROR: Check failed: [error == cudaSuccess]  driver shutting down",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


def test_cublas_execution_failure_stays_gpu_fault(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle)`",
    )
    assert got.failure_class is C.GPU_FAULT


def test_the_cuda_driver_oom_is_not_a_gpu_fault(catalogue, matcher):
    # gpu_fault's cuda-error-other read it before.
    got = classify_text(catalogue, matcher, "RuntimeError: CUDA driver error: out of memory")
    assert got.failure_class is not C.GPU_FAULT
