"""Round 5 of the catalogue (issue 11): families written from the code that prints them.

Each line is a format string of the software that prints it, filled in with
made-up hosts, devices, numbers and paths: NVIDIA/nccl src/transport/net_ib
(completion and async-event WARNs across versions) and src/misc/ibvwrap.cc;
aws-ofi-nccl's completion errors; Linux drivers/infiniband/core/cache.c,
drivers/net/ethernet/mellanox/mlx5/core/{en_main.c,events.c}, drivers/pci/pcie/aer.c,
kernel/hung_task.c, kernel/watchdog.c; rdma-core infiniband-diags (ibstatus,
ibstat) and libibverbs/examples/devinfo.c; MLNX_OFED's ibdev2netdev; LBNL NHC
scripts/lbnl_hw.nhc; NVIDIA/open-gpu-kernel-modules (kernel_rc.c, the
nvidia_dev_xid tracepoint, kernel_gsp.c, kern_gmmu.c, nv.c, nverror.h); NVML's
error strings; CPython Python/traceback.c; Slurm src/slurmctld/{job_mgr.c,
job_scheduler.c,gang.c}, src/srun/launch.c; LSF's termination reasons.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED = [
    # NCCL's completion WARN before v2.12 has no "from peer"; 12 is IBV_WC_RETRY_EXC_ERR.
    (
        "gpu-a-07:946:988 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion with error 12, opcode 1, "
        "len 0, vendor err 129",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-completion-error",
    ),
    # The same status copied under PyTorch's "Last error:", no host prefix.
    (
        "Last error:\nNET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-completion-unattributed",
    ),
    # 10 REM_ACCESS: the remote side first, in the old form.
    (
        "gpu-a-07:946:988 [0] NCCL WARN NET/IB : Got completion with error 10, opcode 3, len 0, vendor err 136",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    # 4 LOC_PROT: a local registration problem (ACS), old form.
    (
        "gpu-a-07:946:988 [0] NCCL WARN NET/IB : Got completion with error 4, opcode 0, len 0, vendor err 81",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    # v2.21 and v2.23-v2.27 forms of the async WARN.
    (
        "gpu-a-07:311:405 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_4:1 Got async event : port error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "gpu-a-07:311:405 [0] transport/net_ib.cc:171 NCCL WARN NET/IB : mlx5_4:1 Got async error event: port error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "gpu-a-07:311:405 [0] NCCL WARN NET/IB : mlx5_4:1 Got async error event: local work queue catastrophic error",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    # ibvwrap.cc since v2.2x: the errno first.
    (
        "gpu-a-07:1:2 [5] misc/ibvwrap.cc:376 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, "
        "on dev mlx5_3:1, curr state INIT, next state RTR, local GID index 3",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # aws-ofi-nccl.
    (
        "gpu-a-07:1:2 [3] NCCL WARN NET/OFI Request 0x7f00aa001000 completed with error. RC: 113. Error: 2 "
        "(UNDELIVERABLE). Completed length: 0",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # The kernel's port and carrier lines.
    (
        "[  309.26] mlx5_core 0000:0a:00.0 mlx5_2: Port: 1 Link DOWN",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    ("mlx5_core 0000:0a:00.1 enp10s0f1np1: Link down", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-port-down"),
    (
        "mlx5_core 0000:0a:00.0: Port module event[error]: module 0, Cable error, Bad or shorted cable/module",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    ("mlx5_2 port 1 ==> ib2 (Down)", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-port-down"),
    ("\t\t\tphys_state:\t\tPOLLING (2)", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-port-down"),
    (
        "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_2:1 is ACTIVE (LinkUp 200 Gb/sec).",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_hw_eth:  Ethernet device ib0 not detected.",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    # The HCA itself.
    ("Fatal error:  No devices", C.INTERCONNECT, L.HARDWARE, "hca-hardware-fault"),
    ("No IB devices found", C.INTERCONNECT, L.HARDWARE, "hca-hardware-fault"),
    (
        "ibwarn: [4411] main: stat of IB device 'mlx5_8' failed: No such file or directory",
        C.INTERCONNECT,
        L.HARDWARE,
        "hca-hardware-fault",
    ),
    (
        "[ 77.1] mlx5_core 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, "
        "(Requester ID)",
        C.INTERCONNECT,
        L.HARDWARE,
        "hca-hardware-fault",
    ),
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
    # nverror.h's NVLink codes without a catalogue row.
    (
        "NVRM: Xid (PCI:0000:3b:00): 155, NVLink software defined error on link 4",
        C.INTERCONNECT,
        L.HARDWARE,
        "xid-nvlink-nonfatal",
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
    # NCCL's RAS report (src/ras/client_support.cc): ranks behind the others, a peer lost.
    (
        "#0-0 (27a079b828ff1a75) MISMATCH\n  Communicator ranks have different AllReduce operation counts\n"
        "  7 ranks have launched up to operation 6650\n"
        "  Rank 3 has launched up to operation 6649 -- GPU 3 managed by process 1431 on node gpu-a-02",
        C.HANG,
        L.AMBIGUOUS,
        "horovod-stall",
    ),
    (
        "DEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
        "  Process 1431 on node gpu-a-02 managing GPU 3",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    # ProcessGroupNCCL.cpp heartbeatMonitor: a peer flagged a timeout on the store.
    (
        "[rank5]:[E0201 10:00:00.000 ProcessGroupNCCL.cpp:1380] [PG 0 Rank 5] Received a global timeout from "
        "another rank and will start to dump the debug info.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-dump-signal",
    ),
    # nvidia-resiliency-ext's rank monitor (fault_tolerance/rank_monitor_server.py).
    (
        "[Cycle 2] Did not get subsequent heartbeat. Waited 1800.00 seconds.",
        C.HANG,
        L.AMBIGUOUS,
        "horovod-stall",
    ),
    (
        "[Cycle 0] Section 'step' has been open for 612.40 seconds. Timeout is 600.00 seconds.",
        C.HANG,
        L.AMBIGUOUS,
        "horovod-stall",
    ),
    # kernel/hung_task.c's second line, and an older soft lockup.
    (
        '[ 2460.1] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task",
    ),
    (
        "[ 2460.1] INFO: task python:4411 is blocked on a mutex likely owned by task python:4410.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task",
    ),
    (
        "[ 99.0] BUG: soft lockup - CPU#12 stuck for 22s! [python:4411]",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-fatal",
    ),
    # Slurm's controller and LSF on the scheduler's end of a job.
    (
        "[2031-02-01T10:00:00.001] Time limit exhausted for JobId=4242",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
    ),
    (
        "[2031-02-01T10:00:00.001] _job_deadline: JobId=4242 with time_limit 600 exceeded deadline "
        "2031-02-01T09:59:00 and cancelled",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
    ),
    (
        "[2031-02-01T10:00:00.001] preempted JobId=4242 has been requeued",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    (
        "Exited with exit code 130.\nTERM_RUNLIMIT: job killed after reaching LSF run time limit.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
    ),
    ("TERM_OWNER: job killed by owner.", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-cancelled"),
    (
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_decide_by_their_pattern(catalogue, matcher, text, cls, layer, pattern):
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.cause_layer, a.pattern) == (cls, layer, pattern)


def test_the_wc_status_split_holds_in_the_old_completion_form(catalogue, matcher):
    """12 is the link's (the host is named), 5 WR_FLUSH the peer's: the form does not change the split."""
    host = "gpu-b-02:77:90 [1] NCCL WARN NET/IB : Got completion with error {}, opcode 0, len 0, vendor err 244"
    link = classify_text(catalogue, matcher, host.format(12))
    flushed = classify_text(catalogue, matcher, host.format(5))
    assert (link.failure_class, link.nodes) == (C.INTERCONNECT, ["gpu-b-02"])
    assert (flushed.failure_class, flushed.node_implicated) == (C.COMM_ERROR, False)


def test_a_faulthandler_dump_without_a_crash_is_a_hang(catalogue, matcher):
    text = "\n".join(
        [
            "Thread 0x00007f3a1b7fe700 (most recent call first):",
            '  File "/usr/lib/python3.11/threading.py", line 320 in wait',
            "",
            "Current thread 0x00007f3a2c1d4740 (most recent call first):",
            '  File "/opt/train.py", line 88 in step',
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.pattern, a.node_implicated) == (C.HANG, "stack-dump-of-threads", False)


def test_a_crash_decides_over_its_faulthandler_dump(catalogue, matcher):
    text = "\n".join(
        [
            "Fatal Python error: Aborted",
            "",
            "Thread 0x00007f3a1b7fe700 (most recent call first):",
            '  File "/usr/lib/python3.11/threading.py", line 320 in wait',
        ]
    )
    assert classify_text(catalogue, matcher, text).failure_class is C.PROCESS_CRASH


def test_a_masked_bus_id_still_leaves_informational_xids_benign(catalogue, matcher):
    a = classify_text(catalogue, matcher, "NVRM: Xid (PCI:xxxx:xx:xx): 121, pid='<unknown>', C2C link corrected error")
    assert a.failure_class is C.BENIGN


BENIGN = [
    # The port or link coming back, and address changes.
    "gpu-a-07:311:405 [0] NCCL WARN NET/IB : mlx5_4:1 Got async error event: port active",
    "gpu-a-07:311:405 [0] NCCL WARN NET/IB : mlx5_4:1 Got async event : client reregistration",
    "[  312.1] mlx5_core 0000:0a:00.0 mlx5_2: Port: 1 Link ACTIVE",
    "[  311.0] mlx5_core 0000:0a:00.0 mlx5_2: Port: 1 Link INIT",
    "mlx5_core 0000:0a:00.1 enp10s0f1np1: Link up",
    "mlx5_core 0000:0a:00.0: Port module event: module 0, Cable plugged",
    "mlx5_2 port 1 ==> ib2 (Up)",
    "\t\t\tphys_state:\t\tLINK_UP (5)",
    # NCCL's own retry of a modify_qp is INFO, with "retrying".
    "gpu-a-07:1:2 [5] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, RTR, retrying 1/5 after "
    "100 msec of sleep",
    # An NVSwitch SXid (not an Xid) that the switch only counts.
    "nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22013, Non-fatal, Link 60 Minion Link DLREQ interrupt",
    # srun waiting for resources inside its allocation, then getting them.
    "srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)",
    "srun: Job 4242 step creation still disabled, retrying (Requested nodes are busy)",
    "srun: Step created for StepId=4242.1",
    # Respawn's own requeue as slurmstepd prints it.
    "slurmstepd: error: *** JOB 4242 ON gpu-a-07 CANCELLED AT 2031-02-01T10:00:00 DUE TO JOB REQUEUE ***",
    # Talk about hung tasks and Xids, not one.
    "set kernel.hung_task_timeout_secs = 600 in sysctl.conf",
    "see the Xid catalogue for what Xid (PCI) codes mean",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
