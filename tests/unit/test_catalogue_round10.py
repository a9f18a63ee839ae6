"""Round 10 of the catalogue (issue 11): the cause layer per pattern, from what the source says.

Each line is a format string of the software that prints it, filled in with made-up
hosts, ids, numbers and paths: the Linux kernel's panic() reasons (arch/x86/kernel/cpu/mce
core.c, drivers/acpi/apei/ghes.c, arch/x86/kernel/nmi.c, arch/arm64) and its lockup
watchdog (kernel/watchdog.c); Slurm 22.05 (src/common/log.c fatal() as slurmd prints it,
src/slurmd/slurmstepd/mgr.c, src/slurmctld/ping_nodes.c); Ray's GCS and Kubernetes'
node lifecycle controller; PyTorch's c10d socket.cpp / TCPStore and torchelastic's
rendezvous errors; NCCL's src/misc/socket.cc; XLA's coordination service; Megatron-LM's
training_log progress line.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED = [
    # The kernel panicking for the hardware: the reason passed to panic() names it.
    (
        "[ 901.2] Kernel panic - not syncing: Fatal local machine check",
        C.NODE_FAILURE,
        L.HARDWARE,
        "kernel-hardware-panic",
    ),
    (
        "Kernel panic - not syncing: Timeout: Not all CPUs entered broadcast exception handler",
        C.NODE_FAILURE,
        L.HARDWARE,
        "kernel-hardware-panic",
    ),
    ("Kernel panic - not syncing: Fatal hardware error!", C.NODE_FAILURE, L.HARDWARE, "kernel-hardware-panic"),
    ("Kernel panic - not syncing: NMI IOCK error: Not continuing", C.NODE_FAILURE, L.HARDWARE, "kernel-hardware-panic"),
    ("Kernel panic - not syncing: NMI: Not continuing", C.NODE_FAILURE, L.HARDWARE, "kernel-hardware-panic"),
    ("Kernel panic - not syncing: Asynchronous SError Interrupt", C.NODE_FAILURE, L.HARDWARE, "kernel-hardware-panic"),
    # The kernel's own: lockups ("a bug", lockup-watchdogs.rst) and panics for its own reasons.
    (
        "[12345.678901] watchdog: BUG: soft lockup - CPU#17 stuck for 26s! [pt_main_thread:9911]",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-fatal",
    ),
    ("NMI watchdog: Watchdog detected hard LOCKUP on cpu 5", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "kernel-fatal"),
    ("Kernel panic - not syncing: softlockup: hung tasks", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "kernel-fatal"),
    ("Kernel panic - not syncing: Fatal exception", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "kernel-fatal"),
    (
        "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-fatal",
    ),
    # slurmd exiting on a fatal error, on its stderr and in the journal.
    ("slurmd: fatal: Unable to determine this slurmd's NodeName", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "slurmd-fatal"),
    (
        "Dec 01 10:00:00 gpu-node-3 slurmd[2211]: slurmd: fatal: Unable to bind listen port (6818): Address already in use",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmd-fatal",
    ),
    # slurmstepd unable to put the step into the job's container (job_container plugin).
    ("slurmstepd: error: container_g_join failed: 771234", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "slurmstepd-node-error"),
    (
        "slurmstepd: error: container_g_join(771234): No such file or directory",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmstepd-node-error",
    ),
    # The node's daemon silent: slurmd, the raylet, the kubelet.
    (
        "slurmctld: error: Nodes gpu-node-[4-5] not responding",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-not-responding",
    ),
    (
        "The node with node id: 7f3e and address: 10.0.0.9 and node name: 10.0.0.9 has been marked dead because the "
        "detector has missed too many heartbeats from it.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    (
        "Ready False NodeStatusUnknown Kubelet stopped posting node status.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-node-lost",
    ),
    # Forming the job: an endpoint not reached in time is the network's, as the development set labels it
    # (docs/runbooks.md, "Cause layers"); a port already in use is system software (test_catalogue_comm).
    (
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to "
        "(trainer-0, 29400).",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "rendezvous-error",
    ),
    (
        "node7:41:52 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.2.0.1<41000> failed : "
        "Connection refused",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "DEADLINE_EXCEEDED: Barrier timed out. Id: [Init]Wait_for_all_tasks_to_register::0. This usually happens "
        "because a task triggered the barrier too early or too slowly.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-coordination-register-timeout",
    ),
    (
        "node7:41:52 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.2.0.1<41000> failed : "
        "No route to host",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "srun: error: slurm_receive_msgs: [[gpu-node-8]:6818] failed: Zero Bytes were transmitted or received",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    # Megatron's progress line with a non-finite norm or loss: its nan counter (skipped steps only) says 0.
    (
        " iteration     1200/   50000 | consumed samples:       153600 | elapsed time per iteration (ms): 3120.4 | "
        "learning rate: 1.500E-04 | global batch size:   128 | lm loss: 4.512233E+00 | loss scale: 1.0 | "
        "grad norm: nan | number of skipped iterations:   0 | number of nan iterations:   0 |",
        C.NUMERICAL,
        L.APPLICATION,
        "megatron-progress-nonfinite",
    ),
    (
        " iteration     1200/   50000 | lm loss: NAN | loss scale: 1.0 | grad norm: 2.113 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |",
        C.NUMERICAL,
        L.APPLICATION,
        "megatron-progress-nonfinite",
    ),
    (
        " iteration     1200/   50000 | lm loss: 4.512233E+00 | grad norm: inf | params norm: 812.440 | "
        "number of skipped iterations:   0 | number of nan iterations:   0 |",
        C.NUMERICAL,
        L.APPLICATION,
        "megatron-progress-nonfinite",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_decide_by_their_pattern(catalogue, matcher, text, cls, layer, pattern):
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer, got.pattern) == (cls, layer, pattern)


def test_a_machine_check_before_its_panic_stays_hardware(catalogue, matcher):
    """The machine check's lines and the panic it ends in: the hardware, not the kernel's lockup."""
    text = (
        "[ 900.1] mce: [Hardware Error]: CPU 7: Machine Check Exception: 5 Bank 0: b200000000030005\n"
        "[ 900.2] mce: [Hardware Error]: Machine check: Processor context corrupt\n"
        "[ 900.3] Kernel panic - not syncing: Fatal machine check"
    )
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer) == (C.NODE_FAILURE, L.HARDWARE)


# Lines from the same sources, and their neighbours, that say nothing failed.
BENIGN = [
    # Megatron's healthy progress lines, fp16 and bf16.
    " iteration     1200/   50000 | consumed samples:       153600 | elapsed time per iteration (ms): 3120.4 | "
    "learning rate: 1.500E-04 | global batch size:   128 | lm loss: 4.512233E+00 | loss scale: 65536.0 | "
    "grad norm: 1.874 | num zeros: 0.0 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    " iteration     1200/   50000 | lm loss: 4.512233E+00 | loss scale: 1.0 | grad norm: 0.412 | "
    "params norm: 812.440 | number of skipped iterations:   0 | number of nan iterations:   0 |",
    # A skipped fp16 step prints no grad norm; its counter says so.
    " iteration       12/   50000 | lm loss: 9.812233E+00 | loss scale: 32768.0 | "
    "number of skipped iterations:   1 | number of nan iterations:   0 |",
    # The kernel's watchdog configuration and a clean reboot.
    "[    0.123456] NMI watchdog: Enabled. Permanently consumes one hw-PMU counter.",
    "kernel.softlockup_panic = 0",
    "systemd[1]: Started Slurm node daemon.",
    "slurmd: slurmd version 22.05.8 started",
    "slurmd: CPUs=64 Boards=1 Sockets=2 Cores=16 Threads=2 Memory=515000 TmpDisk=100000 Uptime=12 CPUSpecList=(null)",
    # slurmctld hearing from a node again; a node ready again.
    "slurmctld: Node gpu-node-4 now responding",
    "Normal  NodeReady  10s  kubelet  Node gpu-node-4 status is now: NodeReady",
    # c10d connecting, and NCCL's socket layer retrying.
    "[I1202 10:00:00.123456789 socket.cpp:787] [c10d] The client socket has connected to [node01]:29500 on "
    "[node02]:51234.",
    "node7:41:52 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    # torchelastic's rendezvous going well, and a graceful exit.
    "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:",
    "I1202 10:00:00.000 dynamic_rendezvous.py:1137] The node 'trainer-0_42_0' has joined round 0 of the c10d "
    "rendezvous 'job7' as rank 0 in a world of size 2.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
