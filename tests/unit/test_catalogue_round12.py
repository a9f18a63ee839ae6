"""Round 12 of the catalogue (issue 11): failures the held-back sets called benign.

Each line is a format string of the software that prints it, filled in with made-up
hosts, ids, addresses and numbers: AMD's ROCm runtime (ROCR-Runtime runtime.cpp),
nvidia-ml-py's generated exception classes (pynvml.py), DCGM's pending-row-remap message,
XLA's rendezvous (xla/service/rendezvous.cc), ipmitool's SEL description of a machine
check, slurmd's config check (slurmd.c), kubectl's node table (printers.go printNode),
sinfo's rows (src/sinfo), Torque's error table (pbs_error_db.h), Slurm's option checks
(slurm_opt.c), Taskcluster's worker-runner, aws-ofi-nccl, fairseq's loss scaler,
Megatron's LR scheduler check and torchelastic's ChildFailedError block. Their benign
neighbours, from the same sources, stay benign.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign, assert_decided

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
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
    # XLA's rendezvous: the stall warning, then the termination (glog's file name says "rendezvous").
    (
        "E0301 10:00:20.000000 4242 rendezvous.cc:38] This thread has been waiting for 10 seconds and may be stuck:",
        C.HANG,
        L.AMBIGUOUS,
        "xla-rendezvous-stuck",
    ),
    (
        "E0301 10:00:20.000000 4242 rendezvous.cc:52] [id=0] This thread has been waiting for `acquire clique` for "
        "20 seconds and may be stuck. All 4 threads joined the rendezvous, however the leader has not marked the "
        "rendezvous as completed. Leader can be deadlocked inside the rendezvous callback.",
        C.HANG,
        L.AMBIGUOUS,
        "xla-rendezvous-stuck",
    ),
    (
        "E0301 10:00:20.000000 4242 rendezvous.cc:38] This thread has been waiting for 10 seconds and may be stuck:\n"
        "E0301 10:00:50.000000 4242 rendezvous.cc:44] Termination timeout of 30 seconds exceeded. Exiting to ensure "
        "a consistent program state.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "xla-rendezvous-timeout",
    ),
    # The BMC's event log (ipmitool sel list) and HPE's IML.
    (
        "  1a3 | 03/01/2026 | 10:00:00 | Processor #0x1a | Uncorrectable machine check exception | Asserted",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
    ),
    (
        "Uncorrectable Machine Check Exception (Board 0, Processor 2, APIC ID 0x00000040, Bank 0x00000004, "
        "Status 0xBA000000'73000402, Address 0x00000000'00000000, Misc 0x00000000'00000000)",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
    ),
    # slurmd's own count of the node against slurm.conf.
    (
        "slurmd: error: Node configuration differs from hardware: CPUs=64:128(hw) Boards=1:1(hw) "
        "SocketsPerBoard=2:2(hw) CoresPerSocket=32:32(hw) ThreadsPerCore=1:2(hw)",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-health-check",
    ),
    # Kubernetes and Torque: the node's daemon silent.
    (
        "qdel: Server could not connect to MOM 4242.pbs-server",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-not-responding",
    ),
    # Scheduler refusals and ends.
    (
        "qsub: Job exceeds queue resource limits MSG=cannot locate feasible nodes (nodes file is empty or all "
        "systems are busy)",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    (
        "srun: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    (
        "sbatch: fatal: --gpus-per-task is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    (
        "2026/03/01 10:00:00 EC2 Metadata Service says termination is imminent",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    # aws-ofi-nccl's completion error without the request.
    (
        "gpu-a-01:4242:4300 [0] NCCL WARN NET/OFI Request completed with error. RC: 5. Error: 21 (Unknown error). "
        "Completed length: 0",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # fairseq's scaler below 1, in its old and new wording.
    ("| WARNING: overflow detected, setting loss scale to: 0.5", C.NUMERICAL, L.APPLICATION, "overflow-at-small-scale"),
    (
        "2026-03-01 10:00:00 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: "
        "6.103515625e-05",
        C.NUMERICAL,
        L.APPLICATION,
        "overflow-at-small-scale",
    ),
    # Megatron's LR-scheduler check on resume, the assertion's message alone.
    (
        "OptimizerParamScheduler: class input value 0.0003 and checkpointvalue 0.0001 for minimum learning rate "
        "do not match",
        C.APP_ERROR,
        L.APPLICATION,
        "megatron-checkpoint-load",
    ),
    # torchelastic's block with its exception line cut off (round 13: with a positive
    # exit code the worker exited itself, launcher-child-exited; by a signal, the wrapper's).
    (
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-03-01_10:00:00\n  host      : gpu-a-01\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 4242)",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    (
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-03-01_10:00:00\n  host      : gpu-a-01\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : -15 (pid: 4242)",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-failed",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


# (excerpt, the node the table names)
TABLES: list[tuple[str, str]] = [
    # kubectl get nodes: NAME STATUS ROLES AGE VERSION (no ROLES before 1.8).
    (
        "NAME           STATUS     ROLES    AGE   VERSION\ngpu-worker-2   Ready      <none>   41d   v1.29.4\n"
        "gpu-worker-3   NotReady   <none>   41d   v1.29.4",
        "gpu-worker-3",
    ),
    ("gpu-worker-4   NotReady,SchedulingDisabled   3h20m   v1.7.2", "gpu-worker-4"),
    # sinfo -N -l: one node per row.
    (
        "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON\n"
        "gpu-06         1      gpu*       mixed   64   2:32:1 512000        0      1   (null) none\n"
        "gpu-07         1      gpu*       down*   64   2:32:1 512000        0      1   (null) Not responding",
        "gpu-07",
    ),
]


@pytest.mark.parametrize(("text", "node"), TABLES)
def test_node_tables_name_the_node(catalogue, matcher, text, node):
    got = classify_text(catalogue, matcher, text)
    assert got.failure_class is C.NODE_FAILURE
    assert got.nodes == [node]


def test_sinfo_summary_row_is_a_node_failure_without_a_single_node(catalogue, matcher):
    text = "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ngpu*         up   infinite      2  fail gpu-[07-08]"
    got = classify_text(catalogue, matcher, text)
    assert got.failure_class is C.NODE_FAILURE
    assert got.pattern == "sinfo-node-down"


BENIGN = [
    # ROCm's note after a fault, alone.
    "GPU core dump failed",
    # nvidia-ml-py's other classes: a query the GPU does not support.
    "pynvml.NVMLError_NotSupported: Not Supported",
    # DCGM: no row remapped.
    "GPU 0 had uncorrectable memory errors and 0 rows were remapped",
    # XLA: the rendezvous completed after all.
    "E0301 10:00:25.000000 4242 rendezvous.cc:70] [id=0] This thread is unstuck waiting for `acquire clique` "
    "after 25.3s. Threads joined rendezvous with significant delay, system can be overloaded and theads make "
    "progess at different rate. Warning above was a false-positive. Perhaps the timeout is too short.",
    # ipmitool: a corrected machine check.
    "  1a4 | 03/01/2026 | 10:00:01 | Processor #0x1a | Correctable machine check error | Asserted",
    # slurmd adjusting CPUs to cores, at INFO.
    "slurmd: CPUs has been set to match cores per node instead of threads CPUs=64:128(hw)",
    # kubectl: healthy and cordoned nodes.
    "NAME           STATUS                     ROLES    AGE   VERSION\n"
    "gpu-worker-2   Ready                      <none>   41d   v1.29.4\n"
    "gpu-worker-5   Ready,SchedulingDisabled   <none>   41d   v1.29.4",
    # sinfo: drained, idle and allocated nodes that answer.
    "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\n"
    "gpu*         up   infinite      4  drain gpu-[01-04]\n"
    "gpu*         up   infinite     10  alloc gpu-[05-14]\n"
    "gpu*         up   infinite      2   idle gpu-[15-16]",
    # Slurm ignoring --hint for another option, at INFO.
    "srun: Following options are mutually exclusive with --hint: --ntasks-per-core, --cores-per-socket, "
    "--threads-per-core, --sockets-per-node, -B and --cpu-bind (other than --cpu-bind=verbose). Ignoring --hint.",
    # worker-runner's follow-up, alone.
    "2026/03/01 10:00:00 Sending graceful-termination request with finish-tasks=false",
    # fairseq's warm-up overflows.
    "| WARNING: overflow detected, setting loss scale to: 32.0",
    "2026-03-01 10:00:00 | INFO | fairseq.trainer | NOTE: overflow detected, setting loss scale to: 64.0",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
