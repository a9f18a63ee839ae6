"""Round 2 of the node, communication and launch catalogue (issue 11).

Lines are written for these tests from the format strings of the software that
prints them (Slurm src/slurmd/slurmstepd/req.c, Linux kernel/hung_task.c,
kernel/rcu/tree_stall.h, arch/x86/kernel/cpu/mce, drivers/edac/edac_mc.c, NVIDIA/nccl
src/graph/paths.cc, src/transport.cc, src/transport/p2p.cc, PyTorch c10d socket.cpp),
with made-up hosts and numbers.
"""

import pytest

from respawn.attribution.attribute import attribute, classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue, NodeRule, Onset
from respawn.wire.evidence import Evidence, LogLine
from respawn.wire.taxonomy import CauseLayer, FailureClass

C = FailureClass
L = CauseLayer

CANCELLED_ON_NODE1 = (
    "slurmstepd: error: *** JOB 12 ON node1 CANCELLED AT 2030-02-01T10:00:00 DUE TO NODE "
    "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"
)


def evidence(*texts: str, **fields) -> Evidence:
    fields.setdefault("job_state", "NODE_FAIL")
    fields.setdefault("exit_code", 1)
    return Evidence(
        cluster="lab",
        job_id=12,
        attempt=0,
        nodes=["node1", "node2", "node3"],
        placement={0: "node1", 1: "node2", 2: "node3"},
        lines=[LogLine(text=t, seq=i) for i, t in enumerate(texts)],
        **fields,
    )


def test_the_node_failure_cancel_line_blames_the_down_node_not_its_printer(catalogue, matcher):
    # slurmstepd on the live batch node (node1) prints the cancel line; Slurm lists node3 down.
    ev = evidence("[rank0]: step 40 loss 0.91", CANCELLED_ON_NODE1, down_nodes=["node3"])
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is C.NODE_FAILURE and a.node_implicated
    assert a.nodes == ["node3"]


def test_the_cancel_line_alone_names_nobody(catalogue, matcher):
    hit = matcher.failure(CANCELLED_ON_NODE1)
    assert hit is not None and hit.pattern == "slurm-job-node-fail" and hit.node_rule is NodeRule.NONE
    assert catalogue.onset("slurm-job-node-fail") is Onset.REPORTED
    a = classify_text(catalogue, matcher, CANCELLED_ON_NODE1)
    assert a.failure_class is C.NODE_FAILURE and "node1" not in a.nodes


def test_srun_still_names_the_failed_node(catalogue, matcher):
    ev = evidence("srun: error: Node failure on node2", down_nodes=[])
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is C.NODE_FAILURE and a.nodes == ["node2"]


# (line, pattern, class, layer, onset)
FAMILIES = [
    (
        "[ 843.07] INFO: task python3:5604 blocked for more than 120 seconds.",
        "kernel-hung-task",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        Onset.SUSPECTED,
    ),
    (
        "[ 843.07] INFO: rcu_sched self-detected stall on CPU { 3}  (t=60000 jiffies g=1 c=2 q=3)",
        "kernel-hung-task",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        Onset.SUSPECTED,
    ),
    (
        "[ 843.07] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
        "kernel-hung-task",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        Onset.SUSPECTED,
    ),
    (
        "Feb 23 03:28:16 node3 kernel: mce: [Hardware Error]: Machine check events logged",
        "memory-mce-edac",
        C.NODE_FAILURE,
        L.HARDWARE,
        Onset.SUSPECTED,
    ),
    (
        "[Mon Oct  3 13:52:42 2022] EDAC MC1: 262 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 "
        "slot:0 page:0x2031c14 offset:0x940 grain:32 syndrome:0x0 -  OVERFLOW area:DRAM)",
        "memory-mce-edac",
        C.NODE_FAILURE,
        L.HARDWARE,
        Onset.SUSPECTED,
    ),
    (
        "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#1 (channel:0 slot:1 page:0x1 offset:0x0)",
        "memory-mce-edac",
        C.NODE_FAILURE,
        L.HARDWARE,
        Onset.SUSPECTED,
    ),
    (
        "[ 901.2] Kernel panic - not syncing: Fatal machine check",
        "kernel-hardware-panic",
        C.NODE_FAILURE,
        L.HARDWARE,
        Onset.CERTAIN,
    ),
    (
        "[ 901.2] Kernel panic - not syncing: Synchronous External Abort: synchronous external abort",
        "kernel-hardware-panic",
        C.NODE_FAILURE,
        L.HARDWARE,
        Onset.CERTAIN,
    ),
    (
        "gpu1:7:9 [0] graph/paths.cc:303 NCCL WARN P2P is disabled between NVLINK connected GPUs 1 and 0. This should "
        "not be the case given their connectivity, and is probably due to a hardware issue. If you still want to "
        "proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.",
        "nvlink-p2p-disabled",
        C.INTERCONNECT,
        L.HARDWARE,
        Onset.SUSPECTED,
    ),
    (
        "gpu1:7:9 [0] transport.cc:175 NCCL WARN No transport found for rank 0[1000] -> rank 9[2000]",
        "nccl-setup-refused",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        Onset.SUSPECTED,
    ),
    (
        "z-pc:909608:910337 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not "
        "supported between these two devices",
        "nccl-setup-refused",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        Onset.SUSPECTED,
    ),
    (
        "[E socket.cpp:500] [c10d] The server socket has failed to listen on any local network address.",
        "port-in-use",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        Onset.SUSPECTED,
    ),
    ("OSError: [Errno 98] Address already in use", "port-in-use", C.LAUNCH, L.SYSTEM_SOFTWARE, Onset.SUSPECTED),
]


@pytest.mark.parametrize(("line", "pattern", "failure_class", "layer", "onset"), FAMILIES)
def test_family_line_decides_by_its_pattern(
    catalogue: Catalogue, matcher: Matcher, line, pattern, failure_class, layer, onset
):
    hit = matcher.failure(line)
    assert hit is not None, line
    assert (hit.pattern, hit.failure_class, hit.cause_layer, hit.onset) == (pattern, failure_class, layer, onset)


def test_setup_refusals_do_not_recover_by_restart(matcher: Matcher):
    hit = matcher.failure("gpu1:7:9 [0] transport.cc:175 NCCL WARN No transport found for rank 0[1000] -> rank 9[2000]")
    assert hit is not None and hit.recoverable_by_restart is False


NOT_THESE = [
    # c10d's per-address bind warnings: retried on the next address, in both torch log formats.
    (
        "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:25641 (errno: 98 - Address already in "
        "use).",
        "port-in-use",
    ),
    (
        "[W1203 10:00:00.000000 77 torch/csrc/distributed/c10d/socket.cpp:462] [c10d] The server socket has failed to "
        "bind to 0.0.0.0:29500 (errno: 98 - Address already in use).",
        "port-in-use",
    ),
    # The out-of-memory panics are host_oom's, whatever host_oom.yaml holds.
    ("[ 77.1] Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled", "kernel-fatal"),
    ("[ 77.1] Kernel panic - not syncing: System is deadlocked on memory", "kernel-fatal"),
    # A lone corrected error, and the INFO fallback of a P2P path.
    ("EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0)", "memory-mce-edac"),
    (
        "node155:1:2 [1] NCCL INFO P2P is disabled between connected GPUs 2 and 1. You can repress this message with "
        "NCCL_IGNORE_DISABLED_P2P=1.",
        "nccl-setup-refused",
    ),
]


@pytest.mark.parametrize(("line", "pattern"), NOT_THESE)
def test_lines_not_for_the_pattern(matcher: Matcher, line, pattern):
    hit = matcher.failure(line)
    assert hit is None or hit.pattern != pattern


def test_the_bind_warnings_alone_are_no_failure(matcher: Matcher):
    for line, _ in NOT_THESE[:2]:
        assert matcher.failure(line) is None, line
