"""The GPU catalogue: one line per family of the sources the runbooks cite.

Lines are written here from the message formats of NVIDIA's Xid catalogue
(docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html), the driver
(open-gpu-kernel-modules: nverror.h, kernel_rc.c, gpu.c, nv.c, the NVSwitch
SXid printer), DCGM's dcgm_errors.h, NVML's error strings, the CUDA runtime's
error names and texts as PyTorch prints them, and Linux's PCIe link report.
Hosts, bus ids, pids and numbers are made up.
"""

import pytest

from respawn.attribution.matcher import Matcher
from respawn.wire.taxonomy import CauseLayer, FailureClass

GPU_HW, GPU_FAULT, LINK, OOM, SLOW = (
    FailureClass.GPU_HARDWARE,
    FailureClass.GPU_FAULT,
    FailureClass.INTERCONNECT,
    FailureClass.GPU_OOM,
    FailureClass.SLOWDOWN,
)
HW, APP, SYS, AMB = CauseLayer.HARDWARE, CauseLayer.APPLICATION, CauseLayer.SYSTEM_SOFTWARE, CauseLayer.AMBIGUOUS


def xid(code: int, text: str, bus: str = "0000:4e:00") -> str:
    return f"[ 7321.004] NVRM: Xid (PCI:{bus}): {code}, pid=5150, name=pt_main_thread, {text}"


# (line, class, layer, pattern): one per family of codes or messages.
FAMILIES = [
    # Xid catalogue: RESET_GPU / RESTART_BM / WORKFLOW_XID_48 -> the GPU failed.
    (xid(46, "GPU stopped processing"), GPU_HW, HW, "xid-fatal"),
    (
        xid(48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x1f"),
        GPU_HW,
        HW,
        "xid-fatal",
    ),
    (xid(64, "Row Remapper Error: failed to remap row"), GPU_HW, HW, "xid-fatal"),
    (xid(95, "Uncontained: FBHUB. RST: Yes, D-RST: No"), GPU_HW, HW, "xid-fatal"),
    (xid(120, "GSP task exception"), GPU_HW, HW, "xid-fatal"),
    (xid(140, "An uncorrectable ECC error was detected that the GPU could not recover"), GPU_HW, HW, "xid-fatal"),
    (xid(143, "GPU Initialization Error"), GPU_HW, HW, "xid-fatal"),
    (xid(158, "GPU Fatal Timeout"), GPU_HW, HW, "xid-fatal"),
    (
        "NVRM: Xid (PCI:0000:4e:00 GPU-I:03): 94, pid=77, name=python, Contained: SM (0x1). RST: No, D-RST: No",
        GPU_HW,
        HW,
        "xid-fatal",
    ),
    ("NVRM: Xid (0000:4e:00): 79, GPU has fallen off the bus.", GPU_HW, HW, "xid-fatal"),  # older prefix
    # WORKFLOW_XID_45: a teardown that names its cause follows that cause.
    (xid(45, "Ch 0000001a caused by previous Xid 48"), GPU_HW, HW, "xid-cleanup-after-fatal"),
    (xid(45, "Ch 0000001a caused by previous Xid 149"), LINK, HW, "xid-nvlink-cleanup"),
    (xid(45, "Ch 0000001a caused by previous Xid 13"), GPU_FAULT, AMB, "xid-other"),
    # IGNORE / deferred reset, but the memory degrades.
    (xid(92, "High single-bit ECC error rate"), GPU_HW, HW, "xid-memory-degraded"),
    (xid(156, "Resource Retirement Event"), GPU_HW, HW, "xid-memory-degraded"),
    # XID_154: the recovery action the driver asks for.
    (
        "NVRM: Xid (PCI:0000:4e:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
        GPU_HW,
        HW,
        "xid-recovery-action",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
        GPU_HW,
        HW,
        "xid-recovery-action",
    ),
    # RESTART_APP + CHECK_APP/CUDA, WORKFLOW_XID_13/31: the program.
    (
        xid(13, "Graphics SM Warp Exception on (GPC 1, TPC 3, SM 0): Out Of Range Address"),
        GPU_FAULT,
        APP,
        "xid-application",
    ),
    (xid(43, "Ch 00000010"), GPU_FAULT, APP, "xid-application"),
    (xid(137, "NVLink: fault at 0x1000 on remote GPU"), GPU_FAULT, APP, "xid-application"),
    # RESTART_APP + CONTACT_SUPPORT: an engine's exception, driver or hardware.
    (xid(32, "Channel ID 00000010 intr0 00040000"), GPU_FAULT, AMB, "xid-engine-fault"),
    (xid(128, "CE12: Unknown Error"), GPU_FAULT, AMB, "xid-engine-fault"),
    # NVLink: 74 always needs a reset; NVLink5 144-150 by their Fatal flag.
    (
        xid(74, "NVLink: fatal error detected on link 9(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"),
        LINK,
        HW,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 74, pid='<unknown>', name=<unknown>, NVLink: Link 2 ...",
        LINK,
        HW,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 17 (0x02100006 0x0 0x0 0x0 0x0 0x0)",
        LINK,
        HW,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 149, NETIR_LINK_DOWN Link Fatal XC0 i0 Link 03 (0x00000011 0x0 0x0 0x0 0x0 0x0)",
        LINK,
        HW,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 150, MSE_WATCHDOG Fatal XC0 i0 Link -1 (0x0 0x0 0x0 0x0 0x0 0x0)",
        LINK,
        HW,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 05 (0x00004c26 0x1 0x0 0x0 0x0 0x0)",
        LINK,
        HW,
        "xid-nvlink-nonfatal",
    ),
    (
        "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
        LINK,
        HW,
        "nvswitch-sxid-fatal",
    ),
    ("Fail - Detected fatal NvSwitch SXID 12028", LINK, HW, "nvswitch-sxid-fatal"),
    ("GPU 3's NvLink link 11 is currently down", LINK, HW, "nvlink-error"),
    ("Detected 7 CRC Data NvLink errors on GPU 1's NVLink which exceeds threshold of 0", LINK, HW, "nvlink-error"),
    # SILENT_RUNNING_PWR_REDUCED_CLOCKING: slower, not broken.
    (xid(54, "Auxiliary power is not connected to the GPU board"), SLOW, HW, "xid-reduced-clocking"),
    # DCGM health / diagnostic failures (ISOLATE / RESET severity).
    ("Detected XID 48 for GPU 0", GPU_HW, HW, "dcgm-diag-xid"),
    ("GPU 6 had memory errors and row remappings are pending", GPU_HW, HW, "dcgm-health-failure"),
    ("A pending retired page has been detected in GPU 2.", GPU_HW, HW, "dcgm-health-failure"),
    ("Detected more than 8 PCIe replays per minute for GPU 4 : 31", GPU_HW, HW, "dcgm-health-failure"),
    (
        "GPU 5 requires a reset to recover from a fault. Recovery action: 1 (GPU_RESET).",
        GPU_HW,
        HW,
        "dcgm-health-failure",
    ),
    # nvidia-smi -q and NVML.
    ("        Pending                           : Yes", GPU_HW, HW, "gpu-reset-required"),
    ("        Remapping Failure Occurred        : Yes", GPU_HW, HW, "gpu-reset-required"),
    ("pynvml.NVMLError_GPUIsLost: GPU is lost", GPU_HW, HW, "gpu-lost"),
    ("Unable to determine the device handle for GPU 0000:4E:00.0: GPU requires restart", GPU_HW, HW, "gpu-lost"),
    ("NVRM: The NVIDIA probe routine failed for 1 device(s).", GPU_HW, HW, "gpu-init-failed"),
    ("Failed to initialize NVML: Driver Not Loaded", GPU_HW, SYS, "nvidia-driver-unreachable"),
    (
        "failed to get remapped rows for GPU-0a1b: failed to get device remapped rows: ERROR_GPU_IS_LOST",
        GPU_HW,
        HW,
        "gpu-lost",
    ),
    (
        "E0101 cuda_driver.cc:1] failed call to cuInit: CUDA_ERROR_UNKNOWN: unknown error",
        GPU_HW,
        SYS,
        "nvidia-driver-unreachable",
    ),
    (
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 804: forward compatibility was attempted on "
        "non supported HW",
        GPU_HW,
        SYS,
        "cuda-compat-unsupported",
    ),
    # CUDA runtime errors as PyTorch prints them.
    ("RuntimeError: CUDA error: system not yet initialized", GPU_HW, SYS, "nvidia-driver-unreachable"),
    (
        "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 802: system not yet initialized",
        GPU_HW,
        SYS,
        "nvidia-driver-unreachable",
    ),
    ("RuntimeError: CUDA error: no CUDA-capable device is detected", GPU_HW, SYS, "nvidia-driver-unreachable"),
    ("RuntimeError: CUDA error: an illegal instruction was encountered", GPU_FAULT, APP, "cuda-illegal-address"),
    ("RuntimeError: CUDA error: hardware stack error", GPU_FAULT, APP, "cuda-illegal-address"),
    ("RuntimeError: CUDA error: invalid program counter", GPU_FAULT, APP, "cuda-illegal-address"),
    ("RuntimeError: CUDA error: the launch timed out and was terminated", GPU_FAULT, AMB, "cuda-launch-failure"),
    ("RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED", GPU_FAULT, AMB, "cuda-error-other"),
    # OOM in each library's words.
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
        "79.1 GiB of which 912.00 MiB is free.",
        OOM,
        APP,
        "cuda-oom",
    ),
    ("gpu9:1:2 [4] misc/utils.cc:1 NCCL WARN Cuda failure 2 'out of memory'", OOM, APP, "cuda-oom"),
    ("RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`", OOM, APP, "cuda-oom"),
    ("cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling `cusolverDnCreate(handle)`", OOM, APP, "cuda-oom"),
    (
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2147483648 "
        "bytes.",
        OOM,
        APP,
        "tf-xla-oom",
    ),
    # Throttling, degraded links, below-threshold performance.
    ("        SW Thermal Slowdown               : Active", SLOW, HW, "gpu-throttled"),
    ("Detected clocks event due to thermal violation in GPU 7.", SLOW, HW, "gpu-throttled"),
    (
        "GPU 2 is running at PCI link width 8X, which is below the minimum allowed link generation of 16 "
        "(parameter 'pcie_min_width')",
        SLOW,
        HW,
        "pcie-degraded",
    ),
    (
        "nvidia 0000:4e:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x4 link at 0000:40:01.1 "
        "(capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)",
        SLOW,
        HW,
        "pcie-degraded",
    ),
    (
        "GPU 1 only achieved a memory bandwidth of 1200.00 GB/s, failing to meet 2800.00 GB/s for test 0",
        SLOW,
        HW,
        "gpu-below-threshold",
    ),
]


@pytest.mark.parametrize(("line", "failure_class", "layer", "pattern"), FAMILIES)
def test_catalogue_family(matcher: Matcher, line: str, failure_class, layer, pattern: str):
    hit = matcher.failure(line)
    assert hit is not None, line
    assert (hit.pattern, hit.failure_class, hit.cause_layer) == (pattern, failure_class, layer)


# Healthy output of the same tools, and codes the catalogue says need nothing of the node.
HEALTHY = [
    "        Pending                           : No",
    "        Remapping Failure Occurred        : No",
    "        Pending Page Blacklist            : No",
    "        Double Bit ECC                    : 0",
    "        HW Slowdown                       : Not Active",
    "        SW Power Cap                      : Active",  # power management, not a fault
    "        Pending                           : Enabled",  # ECC / MIG mode pending, not a remap
    "GPU 3 had memory errors and 0 rows were remapped successfully",  # no DCGM message is worded so
    "Detected 0 volatile double-bit ECC error(s) in GPU 1.",
    "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 12 egress non-posted PRIV error",
    "NVML: GPU recovery action is None",
    "all 8 GPUs: retired pages 0, pending remaps 0, row remap failures 0",
    "see the Xid catalogue: Xid 79 means the GPU has fallen out of the PCIe topology",
]


@pytest.mark.parametrize("line", HEALTHY)
def test_healthy_look_alikes_are_no_failure(matcher: Matcher, line: str):
    assert matcher.failure(line) is None, matcher.failure(line)


# Informational Xids: never the hardware class, whatever else they fall to.
INFORMATIONAL = [
    xid(45, "Ch 00000008"),  # preemptive cleanup: the program was killed or another Xid came first
    xid(14, "Fake error injected"),
    xid(121, "C2C: corrected errors on link 0"),
    "NVRM: Xid (PCI:0000:4e:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
    "NVRM: Xid (PCI:0000:4e:00): 146, TLW_RX Nonfatal XC0 i0 Link 09 (0x00014a03 0x1 0x0 0x0 0x0 0x0)",
]


@pytest.mark.parametrize("line", INFORMATIONAL)
def test_informational_xids_are_not_gpu_hardware(matcher: Matcher, line: str):
    hit = matcher.failure(line)
    assert hit is None or (hit.failure_class is not FailureClass.GPU_HARDWARE and hit.priority < 400), hit


def test_fatal_xid_outranks_its_own_echo(matcher: Matcher):
    # Xid 45 is logged for the channels a fatal Xid tore down; the fatal one decides.
    fatal, echo = matcher.failure(xid(95, "Uncontained: LTC TAG")), matcher.failure(xid(45, "Ch 00000008"))
    assert fatal is not None and echo is not None and fatal.priority > echo.priority
