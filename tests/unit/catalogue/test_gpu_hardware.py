"""runbooks/gpu_hardware.yaml: GPUs and accelerators failing or out of reach, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)
and the driver (open-gpu-kernel-modules: nverror.h, kernel_rc.c, gpu.c, nv.c, kernel_gsp.c,
kern_gmmu.c, the nvidia_dev_xid tracepoint); DCGM's dcgm_errors.h and dcgmi diag table; NVML's
error strings, nvidia-smi -q and nvidia-ml-py's exception classes (pynvml.py); the CUDA runtime's
and driver API's errors as PyTorch, THC and TensorFlow print them (c10/cuda/CUDAFunctions.cpp,
cuda_driver.cc); NVIDIA's device plugin (health.go) and container toolkit; the MPS daemon;
lspci's revision byte (pciutils lspci.c); AMD's ROCm runtime, the amdgpu driver's job timeout,
reset and RAS (amdgpu_job.c, amdgpu_device.c); HIP's and Level Zero's lost devices; Ascend's NPU
memory errors (torch_npu); habanalabs' hl_device_init and Habana's device acquire; TPU
initialization.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases
from tests.unit.catalogue._catalogue_cases import XID, ids, xid

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Xids: the tracepoint's form without "NVRM: ", and a masked bus id.
    (
        "nvidia_dev_xid: Xid (PCI:0000:3b:00): 79, pid=881, name=python, GPU has fallen off the bus.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "xid-fatal",
    ),
    (
        "kernel: NVRM: Xid (PCI:xxxx:xx:xx): 48, pid=881, name=python, An uncorrectable double bit error (DBE) has "
        "been detected on GPU in the framebuffer at partition 6, subpartition 0.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "xid-fatal",
    ),
    # The GSP not answering, on lines of its own.
    (
        "[ 84.30] NVRM: GPU6 _kgspLogRpcTimeout: ************************* GSP Timeout *************************",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gsp-unresponsive",
    ),
    (
        "NVRM: GPU1 Timeout after 45s of waiting for RPC response from GPU1 GSP! Expected function 76 "
        "(GSP_RM_CONTROL) sequence 81 (0x20800a4c 0x4).",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gsp-unresponsive",
    ),
    (
        "NVRM: GPU2 _kgspIsHeartbeatTimedOut: Heartbeat timed out, currentTimeMs 9000 heartbeat 12 "
        "heartbeatWithOffsetMs 3000 diff 6000 timeout 5200",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gsp-unresponsive",
    ),
    (
        "NVRM: GPU2 kgmmuCheckMemSubsysError_IMPL: Memory Subsystem Error detected. kbusSendSysmembarSingle failed.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gsp-unresponsive",
    ),
    # nv.c: a GPU the driver sequestered; NVML's IRQ issue.
    ("[ 4917.6] NVRM: GPU 0000:61:00.0: Device is currently unavailable", C.GPU_HARDWARE, L.HARDWARE, "gpu-lost"),
    (
        "Unable to determine the device handle for GPU 0000:61:00.0: Interrupt Request Issue",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    # DCGM's verdict on an NCCL failure (dcgm_errors.h DCGM_FR_NCCL_ERROR, ISOLATE).
    (
        "Detected NCCL error: ncclSystemError Recovery action: 3 (DRAIN_AND_RESET).",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "dcgm-health-failure",
    ),
    # ROCm: the fault's reason decides whose it is.
    (
        "Memory access fault by GPU node-3 (Agent handle: 0x1f2e) on address 0x7ffe0000. Reason: SRAM ECC failure.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "ecc-uncorrectable",
    ),
    (
        "HW Exception by GPU node-2 (Agent handle: 0x55e0a1b2) reason :ECC",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "ecc-uncorrectable",
    ),
    # nvidia-ml-py's classes: "NVMLError_" + the NVML code in capwords.
    ("pynvml.NVMLError_Unknown: Unknown Error", C.GPU_HARDWARE, L.HARDWARE, "cuda-unknown-error"),
    ("pynvml.NVMLError_ResetRequired: NVML Error with code 16", C.GPU_HARDWARE, L.HARDWARE, "gpu-reset-required"),
    (
        "pynvml.NVMLError_DriverNotLoaded: Driver Not Loaded",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    # DCGM's pending row remap, in a dcgmi diag table whose cell wraps, and in today's wording.
    (
        "| Error                     | GPU 5 has uncorrectable memory errors and row  |\n"
        "|                           |  remappings are pending                        |",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "dcgm-health-failure",
    ),
    ("GPU 5 had memory errors and row remappings are pending", C.GPU_HARDWARE, L.HARDWARE, "dcgm-health-failure"),
    # THC's forms of two CUDA errors.
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
    # A lost GPU explains the missing device printed before it.
    (
        "CUDA Error: no CUDA-capable device is detected\n"
        "Unable to determine the device handle for GPU 0000:41:00.0: GPU is lost.  Reboot the system to recover "
        "this GPU",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    # The neighbours each must leave alone.
    # no device with no GPU named lost stays the driver stack's
    ("CUDA Error: no CUDA-capable device is detected", C.GPU_HARDWARE, L.SYSTEM_SOFTWARE, "nvidia-driver-unreachable"),
    # lspci's revision read as all ones: the GPU no longer answers on the bus.
    (
        "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev ff)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-fallen-off-bus",
    ),
    (
        "0000:8a:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev ff)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-fallen-off-bus",
    ),
    # The driver API's unknown error, and the start of the driver that keeps its own pattern.
    ("Couldn't init a GPU test: Error: CUDA_ERROR_UNKNOWN", C.GPU_HARDWARE, L.HARDWARE, "cuda-unknown-error"),
    (
        "E0301 cuda_driver.cc:1160] failed to synchronize the stop event: CUDA_ERROR_UNKNOWN: unknown error",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    (
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:351] failed call to cuInit: CUDA_ERROR_UNKNOWN",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    # The amdgpu driver: a hung job, the reset, MES (the node's GPU software since round 28).
    (
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout, signaled seq=16060, emitted seq=16062",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "amdgpu-ring-timeout-reset",
    ),
    (
        "amdgpu 0000:0a:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=2201, emitted seq=2203",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "amdgpu-ring-timeout-reset",
    ),
    ("amdgpu 0000:0a:00.0: amdgpu: GPU reset begin!", C.GPU_HARDWARE, L.SYSTEM_SOFTWARE, "amdgpu-ring-timeout-reset"),
    (
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* GPU Recovery Failed: -110",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "amdgpu-ring-timeout-reset",
    ),
    (
        "amdgpu: MES might be in unrecoverable state, issue a GPU reset",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
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
    # c10/cuda/CUDAFunctions.cpp device_count_impl on cudaErrorUnknown, raised and warned.
    (
        "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
        "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    (
        "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, "
        "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be "
        "zero. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    # nv.c nvidia_init_module: no GPU probed, or another driver holding them.
    (
        "[188497.595099] NVRM: No NVIDIA graphics adapter probed!",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    (
        "[    4.000001] NVRM: No NVIDIA graphics adapter found!",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    (
        "[188549.976351] NVRM: The NVIDIA probe routine was not called for 3 device(s).",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    # cudaErrorDevicesUnavailable in CUDA 9+'s words, through THC and a project's own check.
    (
        "THCudaCheck FAIL file=/src/aten/src/THC/THCGeneral.cpp line=51 error=46 : all CUDA-capable devices are "
        "busy or unavailable",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-init-failed",
    ),
    (
        "/home/u/solver/include/domain.cuh@88: CUDA Runtime Error(46): all CUDA-capable devices are busy or "
        "unavailable",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-init-failed",
    ),
    # habanalabs hl_device_init, before and since 6.2.
    (
        "[   41.000001] habanalabs 0000:1b:00.0: Failed to initialize hl0. Device is NOT usable !",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "habana-device-unusable",
    ),
    (
        "habanalabs 0000:b3:00.0: Failed to initialize hl4. Device 0000:b3:00.0 is NOT usable !",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "habana-device-unusable",
    ),
    # Round 32: the same entrypoint when no compatibility mode is left: the status seven spaces in is not vetoed.
    (
        "ERROR: This container was built for NVIDIA Driver Release 550.54 or later, but\n"
        "       version 470.82.01 was detected and compatibility mode is UNAVAILABLE.\n"
        "\n"
        "       [[System has unsupported display driver / cuda driver combination "
        "(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) cuInit()=803]]",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # NVIDIA's device plugin marking a GPU unhealthy for a fatal Xid (health.go, both forms).
    (
        "I0601 10:00:00.000000       1 health.go:159] XidCriticalError: Xid=79 on Device=GPU-5a1f2c3d-0000-1111-2222-"
        "333344445555; marking device as unhealthy.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "device-plugin-xid",
        True,
        [],
    ),
    (
        "2024/06/01 10:00:00 XidCriticalError: Xid=48 on Device=GPU-5a1f2c3d, the device will go unhealthy.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "device-plugin-xid",
        True,
        [],
    ),
    # The node's MPS daemon.
    (
        "RuntimeError: CUDA error: MPS client failed to connect to the MPS control daemon or the MPS server",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "cuda-mps-failure",
        True,
        [],
    ),
    (
        "cudaErrorMpsServerNotReady: MPS server is not ready to accept new MPS client requests",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "cuda-mps-failure",
        True,
        [],
    ),
    # NVIDIA's container toolkit refusing the node's GPUs, inside docker's OCI error: the node's driver stack.
    (
        "docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create "
        "failed: unable to start container process: error during container init: error running hook #0: error "
        "running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
        "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown.",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
        True,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # CUDA errors inside NCCL decided by what the error says (NCCL checks.h CUDACHECK, shm.cc, nvmlwrap.cc).
    (
        "host4:31:40 [2] include/alloc.h:120 NCCL WARN Cuda failure 999 'unknown error'",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    ("[rank3]: Cuda failure 'unknown error'", C.GPU_HARDWARE, L.HARDWARE, "cuda-unknown-error"),
    # Xid catalogue: RESET_GPU / RESTART_BM / WORKFLOW_XID_48 -> the GPU failed.
    (xid(46, "GPU stopped processing"), C.GPU_HARDWARE, L.HARDWARE, "xid-fatal"),
    (
        xid(48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x1f"),
        C.GPU_HARDWARE,
        L.HARDWARE,
        "xid-fatal",
    ),
    (xid(64, "Row Remapper Error: failed to remap row"), C.GPU_HARDWARE, L.HARDWARE, "xid-fatal"),
    (xid(95, "Uncontained: FBHUB. RST: Yes, D-RST: No"), C.GPU_HARDWARE, L.HARDWARE, "xid-fatal"),
    (xid(120, "GSP task exception"), C.GPU_HARDWARE, L.HARDWARE, "xid-fatal"),
    (
        xid(140, "An uncorrectable ECC error was detected that the GPU could not recover"),
        C.GPU_HARDWARE,
        L.HARDWARE,
        "xid-fatal",
    ),
    (xid(143, "GPU Initialization Error"), C.GPU_HARDWARE, L.HARDWARE, "xid-fatal"),
    (xid(158, "GPU Fatal Timeout"), C.GPU_HARDWARE, L.HARDWARE, "xid-fatal"),
    (
        "NVRM: Xid (PCI:0000:4e:00 GPU-I:03): 94, pid=77, name=python, Contained: SM (0x1). RST: No, D-RST: No",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "xid-fatal",
    ),
    (
        "NVRM: Xid (0000:4e:00): 79, GPU has fallen off the bus.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "xid-fatal",
    ),  # older prefix
    # WORKFLOW_XID_45: a teardown that names its cause follows that cause.
    (xid(45, "Ch 0000001a caused by previous Xid 48"), C.GPU_HARDWARE, L.HARDWARE, "xid-cleanup-after-fatal"),
    # IGNORE / deferred reset, but the memory degrades.
    (xid(92, "High single-bit ECC error rate"), C.GPU_HARDWARE, L.HARDWARE, "xid-memory-degraded"),
    (xid(156, "Resource Retirement Event"), C.GPU_HARDWARE, L.HARDWARE, "xid-memory-degraded"),
    # XID_154: the recovery action the driver asks for.
    (
        "NVRM: Xid (PCI:0000:4e:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "xid-recovery-action",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "xid-recovery-action",
    ),
    # DCGM health / diagnostic failures (ISOLATE / RESET severity).
    ("Detected XID 48 for GPU 0", C.GPU_HARDWARE, L.HARDWARE, "dcgm-diag-xid"),
    ("GPU 6 had memory errors and row remappings are pending", C.GPU_HARDWARE, L.HARDWARE, "dcgm-health-failure"),
    ("A pending retired page has been detected in GPU 2.", C.GPU_HARDWARE, L.HARDWARE, "dcgm-health-failure"),
    ("Detected more than 8 PCIe replays per minute for GPU 4 : 31", C.GPU_HARDWARE, L.HARDWARE, "dcgm-health-failure"),
    (
        "GPU 5 requires a reset to recover from a fault. Recovery action: 1 (GPU_RESET).",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "dcgm-health-failure",
    ),
    # nvidia-smi -q and NVML.
    ("        Pending                           : Yes", C.GPU_HARDWARE, L.HARDWARE, "gpu-reset-required"),
    ("        Remapping Failure Occurred        : Yes", C.GPU_HARDWARE, L.HARDWARE, "gpu-reset-required"),
    ("pynvml.NVMLError_GPUIsLost: GPU is lost", C.GPU_HARDWARE, L.HARDWARE, "gpu-lost"),
    (
        "Unable to determine the device handle for GPU 0000:4E:00.0: GPU requires restart",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    ("NVRM: The NVIDIA probe routine failed for 1 device(s).", C.GPU_HARDWARE, L.HARDWARE, "gpu-init-failed"),
    ("Failed to initialize NVML: Driver Not Loaded", C.GPU_HARDWARE, L.SYSTEM_SOFTWARE, "nvidia-driver-unreachable"),
    (
        "failed to get remapped rows for GPU-0a1b: failed to get device remapped rows: ERROR_GPU_IS_LOST",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    (
        "E0101 cuda_driver.cc:1] failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    (
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 804: forward compatibility was attempted on "
        "non supported HW",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "cuda-compat-unsupported",
    ),
    # CUDA runtime errors as PyTorch prints them.
    (
        "RuntimeError: CUDA error: system not yet initialized",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    (
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 802: system not yet initialized",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    (
        "RuntimeError: CUDA error: no CUDA-capable device is detected",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    (
        "|                           | Fail - GPU: 0                                  |",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "dcgm-diag-fail",
    ),
    (
        "| Memory                    | Fail - All                                     |",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "dcgm-diag-fail",
    ),
    # Round 24, an Ascend NPU whose task scheduler stopped answering (ACL_ERROR_RT_LOST_HEARTBEAT, 507010).
    (
        "        Device[3] lost heartbeat.[FUNC:SyncTask][FILE:direct_hwts_engine.cc][LINE:407]",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "accelerator-device-lost",
    ),
    (
        "EE9999  rtStreamSynchronize execute failed, reason=[ts lost heartbeat][FUNC:FuncErrorReason]",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "accelerator-device-lost",
    ),
    # Round 25: nvidia-smi naming the GPU's index before its bus id; the driver rate-limiting GSP RPC
    # errors (kernel_gsp.c).
    (
        "Unable to determine the device handle for GPU3: 0000:9B:00.0: Unknown Error",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    (
        "[ 4120.551201] NVRM: Rate limiting GSP RPC error prints for GPU at PCI:0000:9b:00 (printing 1 of every 30).  "
        "The GPU likely needs to be reset.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gsp-unresponsive",
    ),
    # Round 27: AWS Neuron's runtime finding no device or driver (the Neuron docs' troubleshooting
    # pages), a Tenstorrent card a reset does not bring back (tt-umd, tt-tools-common, tt-smi,
    # luwen), Intel's i915 resetting a hung engine (i915_gpu_error.c), and the container hook's
    # driver RPC failing (libnvidia-container, as Ubuntu's driver container names the binary).
    (
        "2025-Jan-07 11:02:13.0412  4211:4211  ERROR  NRT:nrt_init                  Unable to determine Neuron Driver "
        "version. Please check aws-neuron-dkms package is installed.",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "neuron-device-unavailable",
    ),
    (
        "2025-Jan-07 11:02:13.0412  4211:4211  ERROR  NRT:nrt_init                  This runtime requires Neuron "
        "Driver version 2.0 or greater. Please upgrade aws-neuron-dkms package.",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "neuron-device-unavailable",
    ),
    (
        "2025-Jan-07 11:02:13.0412  31:31  ERROR  TDRV:tdrv_get_dev_info         No neuron device available",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "neuron-device-unavailable",
    ),
    (
        "2025-Jan-07 11:02:13.0412  8:8  ERROR  TDRV:tdrv_init_mla_phase1        Could not open the nd3",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "neuron-device-unavailable",
    ),
    (
        "nrtd[7]: [NRTD:InitTongas] Failed to initialize devices, error:4",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "neuron-device-unavailable",
    ),
    (
        "2026-02-01 09:00:01.100 | warning  |             UMD | Timeout waiting for device at BDF 0000:c1:00.0 to "
        "reappear. (warm_reset.cpp:141)",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "accelerator-reset-failed",
    ),
    (" Config space reset not completed for device 3! ", C.GPU_HARDWARE, L.AMBIGUOUS, "accelerator-reset-failed"),
    (
        " Reset failed for one or more boards, returning with non-zero exit code ",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "accelerator-reset-failed",
    ),
    (" Error when re-initializing chips!", C.GPU_HARDWARE, L.AMBIGUOUS, "accelerator-reset-failed"),
    ("Chip initialization failed (aborted): ARC not ready", C.GPU_HARDWARE, L.AMBIGUOUS, "accelerator-reset-failed"),
    (
        "Exception: It is not currently safe to communicate with ARC because, another message is queued (0x51)",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "accelerator-reset-failed",
    ),
    (
        "[ 8123.456789] i915 0000:00:02.0: [drm] GPU HANG: ecode 12:1:85dffffb, in python3 [20431]",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "i915-gpu-hang",
    ),
    (
        "[  301.2] [drm] GPU HANG: ecode 9:0:0x84d5fffb, in train [4410], hang on rcs0",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "i915-gpu-hang",
    ),
    (
        "Error response from daemon: OCI runtime create failed: container_linux.go:380: starting container process "
        "caused: process_linux.go:545: container init caused: Running hook #0:: error running hook: exit status 1, "
        "stdout: , stderr: nvidia-container-cli.real: initialization error: driver error: failed to process request: unknown",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    # Round 28: amdgpu's ring timeout and MES hang read as the node's GPU software; the driver's
    # probe failing (amdgpu_device.c); the kubelet refusing unhealthy devices (devicemanager).
    (
        "[ 4410.000001] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx_0.0.0 timeout, signaled seq=2041, emitted seq=2043",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "amdgpu-ring-timeout-reset",
    ),
    (
        "[    6.200001] amdgpu 0000:c3:00.0: amdgpu: Fatal error during GPU init",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    (
        "[    6.190001] amdgpu 0000:c3:00.0: amdgpu: amdgpu_device_ip_init failed",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    (
        "Warning  UnexpectedAdmissionError  4s  kubelet  Allocate failed due to no healthy devices present; cannot "
        "allocate unhealthy devices nvidia.com/gpu, which is unexpected",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-unhealthy",
    ),
    (
        "Message: Pod Allocate failed due to previously allocated devices are no longer healthy; cannot allocate "
        "unhealthy devices amd.com/gpu, which is unexpected",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-unhealthy",
    ),
    # Round 29: Intel's xe resetting a timed-out job; the GSP RPC failing with GPU_IS_LOST; nvidia-smi
    # unable to name a GPU; AER's other spelling of an uncorrected report (round 38: a corrected one is benign).
    (
        "xe 0000:03:00.0: [drm] Tile0: GT0: Timedout job: seqno=4410, lrc_seqno=4410, guc_id=2, flags=0x0 in python [5521]",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "i915-gpu-hang",
    ),
    (
        "NVRM: GPU2 _issueRpcAndWait: rpcSendMessage failed with status 0x0000000f for fn 76 sequence 12!",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    (
        "|   3  ERR!                On   | 00000000:3B:00.0 Off |                 ERR! |",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    (
        "pci 0000:41:00.0: PCIe Bus Error: severity=Uncorrectable (Non-Fatal), type=Transaction Layer, (Receiver ID)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "pcie-aer-error",
    ),
    # Round 30: amdgpu failing to resume the GPU (amdgpu_device.c).
    (
        "[ 33.87] amdgpu 0000:c3:00.0: amdgpu: resume of IP block <smu> failed -5",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    (
        "[ 33.88] amdgpu 0000:c3:00.0: amdgpu: amdgpu_device_ip_resume failed (-5).",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    # Round 31: the GPU's power-management firmware no longer acknowledging the driver (smu7_smumgr.c, smu_cmn.c);
    # a Blackhole card whose memory never finishes training (tt-umd local_chip.cpp).
    (
        "                 last message was failed ret is 65535",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "amdgpu-ring-timeout-reset",
    ),
    (" failed to send message 201 ret is 0 ", C.GPU_HARDWARE, L.SYSTEM_SOFTWARE, "amdgpu-ring-timeout-reset"),
    (
        "[ 96.1] amdgpu 0000:03:00.0: amdgpu: SMU: I'm not done with your previous command: SMN_C2PMSG_66:0x0000000E "
        "SMN_C2PMSG_82:0x00000000",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "amdgpu-ring-timeout-reset",
    ),
    ("RuntimeError: DRAM training timed out after 60000 ms", C.GPU_HARDWARE, L.AMBIGUOUS, "accelerator-reset-failed"),
    # Round 32: nccl-tests' CUDACHECK (src/common.h).
    (
        "gpu-node-7: Test CUDA failure common.cu:1045 'unknown error'",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    # Round 34: amdgpu's security processor and IP blocks failing to come up (amdgpu_psp.c, amdgpu_device.c).
    (
        "[   12.401] [drm:psp_hw_start [amdgpu]] *ERROR* PSP load kdb failed!",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    (
        "[   12.402] [drm:amdgpu_device_fw_loading [amdgpu]] *ERROR* hw_init of IP block <psp> failed -22",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    # Round 36: nvgpu failing a step of a Tegra GPU's power-on (nvgpu_init.c); the GPU operator's driver container
    # without the kernel packages of the node's kernel (gpu-driver-container nvidia-driver).
    (
        "nvgpu: 17000000.gpu     nvgpu_finalize_poweron:1121 [ERR]  Failed initialization for: g->ops.pmu.pmu_init",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-init-failed",
    ),
    ("Could not resolve Linux kernel version", C.GPU_HARDWARE, L.SYSTEM_SOFTWARE, "nvidia-driver-unreachable"),
    # Round 41: the GPU Operator's driver container crash-looping on the node.
    (
        'E1103 13:31:36.822843    1601 pod_workers.go:191] Error syncing pod ac11 ("nvidia-driver-daemonset-6d97v_gpu-'
        'operator-resources(ac11)"), skipping: failed to "StartContainer" for "nvidia-driver-ctr" with CrashLoopBackOff: '
        '"back-off 5m0s restarting failed container=nvidia-driver-ctr pod=nvidia-driver-daemonset-6d97v_gpu-operator-'
        'resources(ac11)"',
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    # Round 42: gpu-admin-tools finding a GPU it cannot map.
    (
        "2026-12-07,10:00:00.984 ERROR    GPU /sys/bus/pci/devices/0000:3b:00.0 broken: [Errno 11] Resource "
        "temporarily unavailable",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-init-failed",
    ),
    # Round 43: a GPU the kernel cannot wake.
    (
        "[ 9120.331] vfio-pci 0000:41:00.0: Unable to change power state from D3cold to D0, device inaccessible",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-lost",
    ),
    # Round 45: amdgpu's reset as dev_info prints it, after the PCI address.
    (
        "[  510.633592] amdgpu 0000:67:00.0: GPU reset begin!",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "amdgpu-ring-timeout-reset",
    ),
    # Round 48: nvidia-smi -q counting uncorrectable ECC errors.
    ("            SRAM Uncorrectable            : 2", C.GPU_HARDWARE, L.HARDWARE, "ecc-uncorrectable-counted"),
    ("            DRAM Uncorrectable            : 1", C.GPU_HARDWARE, L.HARDWARE, "ecc-uncorrectable-counted"),
    ("            SRAM Uncorrectable SEC-DED    : 4", C.GPU_HARDWARE, L.HARDWARE, "ecc-uncorrectable-counted"),
    # Round 49: the open kernel module refusing a GPU without a GSP.
    (
        "[  61.0] NVRM: installed in this system is not supported by open",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    # Round 52: Hopper's GSP firmware failing its boot; a register read returning a sentinel.
    (
        "NVRM: GPU6 kgspFmcReportErrorCode_GH100: Fatal GSP-FMC Error: version=0x1, partition=0x1, error code=0xaff",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-init-failed",
    ),
    (
        "NVRM: GPU6 gpuHandleSanityCheckRegReadError_GH100: Possible bad register read: addr: 0x110044,  regvalue: 0xbadf4100",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-init-failed",
    ),
    # Round 58: JAX asked for the TPU backend and libtpu could not bring it up.
    (
        "RuntimeError: Unable to initialize backend 'tpu': INTERNAL: Failed to get global TPU topology.",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "accelerator-init-failed",
    ),
    # Round 59: rocminfo without the amdgpu kernel module.
    (
        "ROCk module is NOT loaded, possibly no GPU devices",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    (
        "Unable to open /dev/kfd read-write: No such file or directory",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "rocm-device-unreachable",
    ),
    # Round 60: the TPU runtime without its device node; Neuron's runtime daemon whose first command timed out.
    (
        "E tensorflow/core/distributed_runtime/rpc/grpc_server_lib.cc:561] Invalid argument: Invalid fd: -1; Couldn't "
        "open device: /dev/accel0 (Operation not permitted); Unable to create Node RegisterInterface for node 0",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "accelerator-init-failed",
    ),
    (
        "Jan 08 21:53:19 ip-10-0-0-31 nrtd[4154]: **[hal] request seq: 2, cmd: 1 timed out**",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
        "accelerator-init-failed",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


STILL_FAILURES: list[tuple[str, str]] = [
    (XID.format(code=79, text="GPU has fallen off the bus."), "xid-fatal"),
    (
        XID.format(code=154, text="GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"),
        "xid-recovery-action",
    ),
]


test_neighbours_of_the_vetoes_still_count = cases.lines_decided_by_the_pattern(STILL_FAILURES)


# Informational Xids: never the hardware class, whatever else they fall to.
INFORMATIONAL_XIDS: list[str] = [
    xid(45, "Ch 00000008"),  # preemptive cleanup: the program was killed or another Xid came first
    xid(14, "Fake error injected"),
    xid(121, "C2C: corrected errors on link 0"),
    "NVRM: Xid (PCI:0000:4e:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
    "NVRM: Xid (PCI:0000:4e:00): 146, TLW_RX Nonfatal XC0 i0 Link 09 (0x00014a03 0x1 0x0 0x0 0x0 0x0)",
]


@pytest.mark.parametrize("line", INFORMATIONAL_XIDS, ids=ids(INFORMATIONAL_XIDS))
def test_informational_xids_are_not_gpu_hardware(matcher, line):
    hit = matcher.failure(line)
    assert hit is None or (hit.failure_class is not C.GPU_HARDWARE and hit.priority < 400), hit


BENIGN: list[str] = [
    # Talk about hung tasks and Xids, not one.
    "see the Xid catalogue for what Xid (PCI) codes mean",
    # CUDA texts that are not errors.
    "nvidia-cuda-mps-control -d started; MPS server ready",
    "I0301 10:00:00.000000 1 cuda_executor.cc:1000] successful NUMA node read from SysFS had negative value (-1)",
    # The kubelet pulling an image that is there, and the toolkit's own INFO.
    "I1202 10:00:00.000000 4242 nvc.c:396] initializing library context (version=1.14.3, build=abc)",
    # nvidia-ml-py's other classes: a query the GPU does not support.
    "pynvml.NVMLError_NotSupported: Not Supported",
    # DCGM: no row remapped.
    "GPU 0 had uncorrectable memory errors and 0 rows were remapped",
    # A GPU that answers.
    "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)",
    # JAX's fallback to the CPU, and PyTorch XPU's empty device count.
    "UserWarning: XPU device count is zero! (Triggered internally at ../c10/xpu/XPUFunctions.cpp:115.)",
    # AMD's RAS query with nothing to report; Habana's debug line before it tries the next device type;
    # a script's own message before it falls back.
    "amdgpu 0000:0b:00.0: amdgpu: 0 uncorrectable hardware errors detected in umc block",
    "Device acquire failed for device_type: 5",
    "INFO:root:TPU initialization failed, falling back to GPU/CPU",
    # NCCL's INFO on a NIC it skipped, TensorFlow's check on another status, the NVIDIA module loading.
    "[    5.123456] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
    # The habanalabs driver's success, MXNet's storage manager chosen, the c10d barrier passed.
    "habanalabs 0000:b3:00.0: Successfully added device 0000:b3:00.0 to habanalabs driver",
    # Round 27: the Neuron runtime's healthy start, and i915's advice lines without the hang.
    "2025-Jan-07 11:02:13.0412  4211:4211   INFO  NRT:nrt_init                  Found neuron driver: 2.19",
    " Config space reset completed for device 3 ",
    "[ 8123.456790] [drm] GPU hangs can indicate a bug anywhere in the entire gfx stack, including userspace.",
    # Round 29: nvidia-smi's ERR! for one reading of a GPU it can name; a GSP RPC failing otherwise.
    "| N/A   31C    P0   ERR! / 250W |    593MiB / 16160MiB |      0%      Default |",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    "        Pending                           : No",
    "        Remapping Failure Occurred        : No",
    "        Pending Page Blacklist            : No",
    "        Double Bit ECC                    : 0",
    "        Pending                           : Enabled",  # ECC / MIG mode pending, not a remap
    "GPU 3 had memory errors and 0 rows were remapped successfully",  # no DCGM message is worded so
    "Detected 0 volatile double-bit ECC error(s) in GPU 1.",
    "NVML: GPU recovery action is None",
    "all 8 GPUs: retired pages 0, pending remaps 0, row remap failures 0",
    "see the Xid catalogue: Xid 79 means the GPU has fallen out of the PCIe topology",
    "| GPU Memory                | Pass - GPU: 1                                  |",
    "| Diagnostic                | Skip - All                                     |",
    # Round 31: powerplay's debug line for a message the SMU does not support (smu7_smumgr.c): answered, not lost.
    "amdgpu: [powerplay] last message was not supported",
    # Round 43: another device's power state is not a GPU's.
    "[ 9120.331] xhci_hcd 0000:00:14.0: Unable to change power state from D3cold to D0, device inaccessible",
    # Round 48: nvidia-smi -q's counters at zero, and correctable errors.
    "            SRAM Uncorrectable            : 0",
    "            DRAM Correctable              : 12",
    # Round 58: JAX probing the platforms it may use, at INFO.
    "I1204 13:13:42.886529 139807170155648 xla_bridge.py:895] Unable to initialize backend 'tpu': INTERNAL: Failed to "
    "open libtpu.so: libtpu.so: cannot open shared object file: No such file or directory",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


def test_fatal_xid_outranks_its_own_echo(matcher: Matcher):
    # Xid 45 is logged for the channels a fatal Xid tore down; the fatal one decides.
    fatal, echo = matcher.failure(xid(95, "Uncontained: LTC TAG")), matcher.failure(xid(45, "Ch 00000008"))
    assert fatal is not None and echo is not None and fatal.priority > echo.priority


def test_lspci_names_the_fallen_gpu(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "1a:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev a1)\n"
        "1c:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev ff)",
    )
    assert got.pattern == "gpu-fallen-off-bus"
    assert got.node_implicated


def test_the_amdgpu_reset_names_the_node_of_its_kernel_log(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "Oct  7 12:58:23 gpu-node-4 kernel: [ 2237.944235] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 "
        "timeout, signaled seq=16060, emitted seq=16062",
    )
    assert got.node_implicated
    assert got.nodes == ["gpu-node-4"]


def test_rocm_device_unreachable_implicates_the_node(catalogue, matcher):
    assert classify_text(catalogue, matcher, "RuntimeError: No HIP GPUs are available").node_implicated


def test_cuda_unknown_error_implicates_the_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
        "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
    )
    assert got.node_implicated


def test_busy_or_unavailable_is_not_a_kernel_fault(catalogue, matcher):
    # gpu_fault's generic THCudaCheck reading (cuda-error-other) was the neighbour it took.
    got = classify_text(
        catalogue,
        matcher,
        "THCudaCheck FAIL file=/src/THCStream.cpp line=40 error=46 : all CUDA-capable devices are busy or unavailable",
    )
    assert got.failure_class is C.GPU_HARDWARE and got.pattern != "cuda-error-other"
