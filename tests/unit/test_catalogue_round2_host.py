"""Round 2 of the host, storage, numerical and GPU catalogue (issue 11): the benign
vetoes and the new ids, each read from the source that prints its lines.

Lines are written for these tests from the sources' format strings (NVIDIA's Xid
catalogue and nverror.h / gpu.c, PyTorch ProcessGroupNCCL.cpp, NCCL checks.h, Linux
mm/oom_kill.c, block/blk-core.c, fs/buffer.c, fs/ext4, drivers/nvme, glibc's
strerror, DCGM's dcgmi diag table, DeepXDE's loss display), with made-up hosts,
numbers and paths.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue, NodeRule, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass

C = FailureClass
L = CauseLayer

XID = "[ 812.4] NVRM: Xid (PCI:0000:3b:00): {code}, pid='<unknown>', name=<unknown>, {text}"


# (line, the benign pattern that vetoes it, the failure pattern it would otherwise hit)
VETOED = [
    (XID.format(code=14, text="Fake error injected"), "xid-informational", "xid-other"),
    (
        XID.format(code=93, text="Non-fatal violation of provisioned InfoROM wear limit"),
        "xid-informational",
        "xid-other",
    ),
    (XID.format(code=106, text="SMBPBI test message"), "xid-informational", "xid-other"),
    (XID.format(code=107, text="SMBPBI test message silent"), "xid-informational", "xid-other"),
    (XID.format(code=121, text="C2C link corrected error"), "xid-informational", "xid-other"),
    (XID.format(code=162, text="Power smoothing HW circuitry capability disabled"), "xid-informational", "xid-other"),
    (XID.format(code=165, text="Power smoothing"), "xid-informational", "xid-other"),
    (
        XID.format(code=154, text="GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"),
        "xid-recovery-none",
        "xid-other",
    ),
    (
        "[rank3]:[W1101 10:00:00.1 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0(default_pg) Rank 3] Failed to "
        'check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: '
        "Connection reset by peer",
        "tcpstore-should-dump",
        "connection-lost",
    ),
    ("cn7:411:499 [2] NCCL WARN Cuda failure 'driver shutting down'", "nccl-driver-shutting-down", "nccl-cuda-error"),
    ("cn7:411:499 [2] NCCL WARN Cuda failure 4 'driver shutting down'", "nccl-driver-shutting-down", "nccl-cuda-error"),
]


@pytest.mark.parametrize(("line", "veto", "vetoed"), VETOED)
def test_veto_silences_only_what_it_must(matcher: Matcher, line, veto, vetoed):
    hits = matcher.match(line)
    assert veto in [h.pattern for h in hits if h.benign]
    assert vetoed in [h.pattern for h in hits if not h.benign]
    assert matcher.failure(line) is None


# Lines next to the vetoed ones that must still count.
STILL_FAILURES = [
    (XID.format(code=79, text="GPU has fallen off the bus."), "xid-fatal"),
    (XID.format(code=45, text="Ch 00000010"), "xid-other"),
    (XID.format(code=13, text="Graphics SM Warp Exception"), "xid-application"),
    (
        XID.format(code=154, text="GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"),
        "xid-recovery-action",
    ),
    (
        "[rank3]:[W1101 10:00:00.1 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=62, "
        "addr=[::ffff:10.0.0.3]:54761, remote=[::ffff:10.0.0.1]:29500): Broken pipe",
        "connection-lost",
    ),
    ("cn7:411:499 [2] NCCL WARN Cuda failure 'an illegal memory access was encountered'", "cuda-illegal-address"),
    ("cn7:411:499 [2] NCCL WARN Cuda failure 'invalid argument'", "nccl-cuda-error"),
]


@pytest.mark.parametrize(("line", "pattern"), STILL_FAILURES)
def test_neighbours_of_the_vetoes_still_count(matcher: Matcher, line, pattern):
    hit = matcher.failure(line)
    assert hit is not None and hit.pattern == pattern


def test_an_nvlink_xid_is_not_vetoed(matcher: Matcher):
    hit = matcher.failure(XID.format(code=144, text="SAW_MVB Nonfatal XC0 i0 Link 0"))
    assert hit is not None and hit.failure_class is C.INTERCONNECT


def test_vetoes_sit_where_the_issue_puts_them(catalogue: Catalogue):
    benign = {p.id: p for p in catalogue.runbook(C.BENIGN).patterns}
    assert benign["xid-informational"].priority == 355
    assert set(benign["xid-informational"].xid_codes) == {14, 93, 106, 107, 121, 162, 163, 164, 165}
    assert benign["tcpstore-should-dump"].priority >= 300
    assert benign["nccl-driver-shutting-down"].priority >= 300


# (line, pattern, class, layer)
FAMILIES = [
    (
        "[ 77.1] Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled",
        "kernel-panic-oom",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        "[ 77.1] Kernel panic - not syncing: Out of memory and no killable processes...",
        "kernel-panic-oom",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        "[ 77.1] Kernel panic - not syncing: System is deadlocked on memory",
        "kernel-panic-oom",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    ("OSError: [Errno 30] Read-only file system: '/spareparts'", "read-only-filesystem", C.STORAGE, L.APPLICATION),
    (
        "2023-02-08 10:45:59,939 pid:13172 MainThread worker ERROR    [Errno 30] Read-only file system: 'tmp_trainer'",
        "read-only-filesystem",
        C.STORAGE,
        L.APPLICATION,
    ),
    (
        "[ 531.1] blk_update_request: I/O error, dev nvme0n1, sector 100492368 op 0x1:(WRITE) flags 0x104000 "
        "phys_seg 16 prio class 0",
        "kernel-block-io-error",
        C.STORAGE,
        L.STORAGE,
    ),
    ("[ 519.2] nvme nvme0: I/O 39 QID 3 timeout, aborting", "kernel-block-io-error", C.STORAGE, L.STORAGE),
    (
        "[ 531.1] nvme0n1: Write(0x1) @ LBA 100492368, 2048 blocks, Data Transfer Error (sct 0x0 / sc 0x4)",
        "kernel-block-io-error",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        "[ 532.0] Buffer I/O error on dev sdb1, logical block 7712, lost async page write",
        "kernel-block-io-error",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        "[ 533.0] EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode #2: comm python: reading directory "
        "lblock 0",
        "kernel-block-io-error",
        C.STORAGE,
        L.STORAGE,
    ),
    ("[ 533.1] EXT4-fs (nvme0n1p1): Remounting filesystem read-only", "kernel-block-io-error", C.STORAGE, L.STORAGE),
    (
        "[ 533.2] nvme nvme1: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0xffff",
        "kernel-block-io-error",
        C.STORAGE,
        L.STORAGE,
    ),
    ("OSError: [Errno 5] Input/output error: '/scratch/run7/ckpt.pt'", "io-error", C.STORAGE, L.STORAGE),
    (
        "|                           | Fail - GPU: 0                                  |",
        "dcgm-diag-fail",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
    ),
    (
        "| Memory                    | Fail - All                                     |",
        "dcgm-diag-fail",
        C.GPU_HARDWARE,
        L.AMBIGUOUS,
    ),
    ("2000      [nan]         [nan]         [nan]", "nan-loss", C.NUMERICAL, L.APPLICATION),
    ("5000      [1.2e-01, inf]    [3.0e-01, nan]    []", "nan-loss", C.NUMERICAL, L.APPLICATION),
    (
        "WARNING  : Skipping prediction for ERA5 because of 40320 NaN in tc_tokens.",
        "non-finite-detected",
        C.NUMERICAL,
        L.APPLICATION,
    ),
]


@pytest.mark.parametrize(("line", "pattern", "failure_class", "layer"), FAMILIES)
def test_family_line_decides_by_its_pattern(matcher: Matcher, line, pattern, failure_class, layer):
    hit = matcher.failure(line)
    assert hit is not None, line
    assert (hit.pattern, hit.failure_class, hit.cause_layer) == (pattern, failure_class, layer)


NO_FAILURE = [
    "1000      [5.47e+03]    [6.44e+03]    [1.00e+00]",
    "Step      Train loss    Test loss     Test metric",
    "nan check: found 0 NaN in tc_tokens",
    "| GPU Memory                | Pass - GPU: 1                                  |",
    "| Diagnostic                | Skip - All                                     |",
    "[ 519.3] nvme nvme0: Abort status: 0x0",
    "mount: /scratch mounted read-only as requested",
]


@pytest.mark.parametrize("line", NO_FAILURE)
def test_near_misses_are_no_failure(matcher: Matcher, line):
    assert matcher.failure(line) is None, [h.pattern for h in matcher.match(line)]


def test_onsets_and_rules(catalogue: Catalogue):
    # panic() does not return: the node goes down with the job on it.
    assert catalogue.onset("kernel-panic-oom") is Onset.CERTAIN
    assert catalogue.onset("read-only-filesystem") is Onset.SUSPECTED
    assert catalogue.onset("kernel-block-io-error") is Onset.SUSPECTED
    assert catalogue.onset("dcgm-diag-fail") is Onset.SUSPECTED
    storage = {p.id: p for p in catalogue.runbook(C.STORAGE).patterns}
    assert storage["kernel-block-io-error"].node_rule is NodeRule.NAMED
    assert storage["read-only-filesystem"].recoverable_by_restart is False


def test_an_oom_panic_outranks_the_kernel_fatal_reading(catalogue: Catalogue, matcher: Matcher):
    line = "[ 77.1] Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled"
    hits = [h.pattern for h in matcher.match(line) if not h.benign]
    assert hits[0] == "kernel-panic-oom"
    assert catalogue.runbook(C.HOST_OOM).patterns and matcher.failure(line).priority == 810
    # Any other panic stays the node's.
    other = matcher.failure("[ 77.1] Kernel panic - not syncing: Fatal exception")
    assert other is not None and other.failure_class is C.NODE_FAILURE


def test_a_local_disk_failing_blames_the_node(catalogue: Catalogue, matcher: Matcher):
    text = "\n".join(
        [
            "[  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting",
            "[  531.168257] blk_update_request: I/O error, dev nvme0n1, sector 100492368 op 0x1:(WRITE) flags 0x104000",
            "OSError: [Errno 5] Input/output error: '/local/scratch/shard7.bin'",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.pattern) == (C.STORAGE, "kernel-block-io-error")
    assert a.node_implicated


def test_a_disk_remounted_read_only_is_the_storage_not_the_path(catalogue: Catalogue, matcher: Matcher):
    text = "\n".join(
        [
            "[ 533.1] EXT4-fs (nvme0n1p1): Remounting filesystem read-only",
            "OSError: [Errno 30] Read-only file system: '/local/scratch/ckpt'",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.cause_layer, a.pattern) == (C.STORAGE, L.STORAGE, "kernel-block-io-error")
    alone = classify_text(catalogue, matcher, "OSError: [Errno 30] Read-only file system: '/local/scratch/ckpt'")
    assert (alone.cause_layer, alone.recoverable_by_restart) == (L.APPLICATION, False)


def test_the_store_warning_leaves_the_store_error_decide(catalogue: Catalogue, matcher: Matcher):
    text = "\n".join(
        [
            "[rank0]:[W510 09:16:33.3 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0 Rank 0] Failed to check the "
            '"should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Broken pipe',
            "[rank0]:[W510 09:16:34.3 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=62, "
            "addr=[::ffff:10.0.0.3]:54761, remote=[::ffff:10.0.0.3]:46989): Broken pipe",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.pattern) == (C.COMM_ERROR, "connection-lost")
    assert "sendBytes" in a.line
