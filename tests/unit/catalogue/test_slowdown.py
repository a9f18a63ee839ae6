"""runbooks/slowdown.yaml: a node slower than it should be, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: NVIDIA's Xid catalogue (SILENT_RUNNING_PWR_REDUCED_CLOCKING), nvidia-smi -q's clock event
reasons and DCGM's diagnostics; Linux's PCIe link report and lspci -vv; Azure's NHC checks
(azurehpc-health-checks customTests) and distributed_nhc's report.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases
from tests.unit.catalogue._catalogue_cases import xid

C = FailureClass
L = CauseLayer


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
    # ibstat's port block, one field a line; lspci -vv's link status, width downgraded.
    (
        "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed 16GT/s (ok), Width x8 (downgraded)",
        C.SLOWDOWN,
        L.HARDWARE,
        "pcie-degraded",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # SILENT_RUNNING_PWR_REDUCED_CLOCKING: slower, not broken.
    (xid(54, "Auxiliary power is not connected to the GPU board"), C.SLOWDOWN, L.HARDWARE, "xid-reduced-clocking"),
    # Throttling, degraded links, below-threshold performance.
    ("        SW Thermal Slowdown               : Active", C.SLOWDOWN, L.HARDWARE, "gpu-throttled"),
    ("Detected clocks event due to thermal violation in GPU 7.", C.SLOWDOWN, L.HARDWARE, "gpu-throttled"),
    (
        "GPU 2 is running at PCI link width 8X, which is below the minimum allowed link generation of 16 "
        "(parameter 'pcie_min_width')",
        C.SLOWDOWN,
        L.HARDWARE,
        "pcie-degraded",
    ),
    (
        "nvidia 0000:4e:00.0: 31.504 Gb/s available PCIe bandwidth, limited by 8.0 GT/s PCIe x4 link at 0000:40:01.1 "
        "(capable of 504.112 Gb/s with 32.0 GT/s PCIe x16 link)",
        C.SLOWDOWN,
        L.HARDWARE,
        "pcie-degraded",
    ),
    (
        "GPU 1 only achieved a memory bandwidth of 1200.00 GB/s, failing to meet 2800.00 GB/s for test 0",
        C.SLOWDOWN,
        L.HARDWARE,
        "gpu-below-threshold",
    ),
    # Round 41: the clocksource watchdog giving up on the TSC.
    (
        "[    4.019019] clocksource: timekeeping watchdog on CPU3: Marking clocksource 'tsc' as unstable because the "
        "skew is too large:",
        C.SLOWDOWN,
        L.SYSTEM_SOFTWARE,
        "clocksource-unstable",
    ),
    # Round 42: PyTorch/XLA's metrics analysis of a job that recompiles every step.
    (
        "pt-xla-profiler: CompileTime too frequent: 21 counts during 11 steps",
        C.SLOWDOWN,
        L.APPLICATION,
        "xla-recompilation-frequent",
    ),
    (
        "pt-xla-profiler: TransferFromDeviceTime too frequent: 11 counts during 11 steps",
        C.SLOWDOWN,
        L.APPLICATION,
        "xla-recompilation-frequent",
    ),
    # Round 50: vLLM evicting sequences from a full KV cache, not a scheduler's preemption.
    (
        "WARNING 12-07 10:00:00 scheduler.py:1560] Sequence group 42 is preempted by PreemptionMode.RECOMPUTE mode "
        "because there is not enough KV cache space. This can affect the end-to-end performance.",
        C.SLOWDOWN,
        L.APPLICATION,
        "vllm-kv-cache-preemption",
    ),
    # Round 60: NeMo's straggler detection.
    (
        "[NeMo E 2025-03-07 22:43:58 straggler_det_callback:239] Detected stragglers. Terminating training...",
        C.SLOWDOWN,
        L.HARDWARE,
        "straggler-detected",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BENIGN: list[str] = [
    # distributed_nhc's healthy row.
    "gpu-b-18 | Healthy",
    # NHC's debug line for a pass.
    "nccl_all_red_lb: 41.2  GB/s",
    # A GPU's idle PCIe power state: the speed below capability, the width whole.
    "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)",
    "\t\tLnkSta:\tSpeed 16GT/s (ok), Width x16 (ok)",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    "        HW Slowdown                       : Not Active",
    "        SW Power Cap                      : Active",  # power management, not a fault
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


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
