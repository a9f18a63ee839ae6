"""runbooks/node_failure.yaml: a node lost, as the node and the layers above it say it.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: the Linux kernel (panic() reasons in arch/x86/kernel/cpu/mce, drivers/acpi/apei/ghes.c,
arch/x86/kernel/nmi.c, arch/arm64; kernel/hung_task.c, kernel/rcu/tree_stall.h, kernel/watchdog.c;
arch/x86/mm/fault.c show_fault_oops, arch/{arm,arm64,riscv}/mm/fault.c die_kernel_fault,
lib/bug.c, the die() headers of arch/x86/kernel/dumpstack.c and arch/arm64/kernel/traps.c;
drivers/edac/edac_mc.c); ipmitool's SEL and HPE's IML; Slurm (slurmstepd req.c and mgr.c, slurmd.c
and log.c fatal(), slurmctld job_mgr.c, node_mgr.c and ping_nodes.c, srun step_launch.c and
allocate.c, sinfo) across versions; LBNL NHC's watchdog and traps, Azure's NHC checks; Open MPI's
runtime (help-errmgr-base.txt [node-died], the 4.x and PRRTE "lost communication with a remote
daemon"); Torque's mom_main.c and pbs_error_db.h; ray-project/ray (gcs_node_manager.cc,
gcs_actor_manager.cc GenNodeDiedCause, node_manager.cc, task_manager.cc NODE_DIED,
python/ray/exceptions.py); Kubernetes' node lifecycle controller, the kubelet and kubectl's node
table (printers.go printNode).
"""

import pytest

from respawn.attribution.attribute import attribute, classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import NodeRule, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._evidence import evidence
from tests.unit.catalogue import _catalogue_cases as cases
from tests.unit.catalogue._catalogue_cases import ids

C = FailureClass
L = CauseLayer

CANCELLED_ON_NODE1 = (
    "slurmstepd: error: *** JOB 12 ON node1 CANCELLED AT 2030-02-01T10:00:00 DUE TO NODE "
    "FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"
)


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
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
    # NHC itself stopped or hung: the node's software.
    (
        "NHC watchdog timer 30117 (300 secs) has expired.  Signaling NHC:  kill -s ALRM -- -30116",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "nhc-run-failed",
    ),
    (
        "ERROR:  nhc:  Health check failed:  Watchdog timer unable to terminate hung NHC process 30116.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "nhc-run-failed",
    ),
    (
        "2026-03-01T10:00:00.000000+00:00 gpu-a-03 nhc[30116]: Health check failed:  Script timed out while "
        'executing "check_fs_mount_rw -f /scratch".',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "nhc-run-failed",
    ),
    (
        "ERROR:  nhc:  Health check failed:  Terminated by signal SIGHUP.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "nhc-run-failed",
    ),
    # Ray: a node that died, in the present wordings.
    (
        "ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
        "The actor is dead because its node has died. Node Id: 0b5c8e1d2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    (
        "Task failed because the node it was running on is dead or unavailable. Node IP: 10.2.3.4, node ID: "
        "3e4f5a6b7c8d. This can happen if the node was preempted, had a hardware failure, or its raylet crashed "
        "unexpectedly.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    # The neighbours each must leave alone.
    # a check that failed to run is no measurement
    (
        "ERROR:  nhc:  Health check failed:  check_nccl_allreduce_ib_loopback: nccl_allreduce (IB loopback) returned "
        "error code 1. FaultCode: NHCNA",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-health-check",
    ),
    # NHC's own check of the hardware
    (
        "ERROR:  nhc:  Health check failed:  Actual CPU core count (2) does not match expected (8).",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-health-check",
    ),
    # Ray's raylet exiting because the cluster marked its node dead.
    (
        "[2022-03-01 10:00:00,000 C 12 12] node_manager.cc:170: This node has beem marked as dead.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    (
        "[2024-03-01 10:00:00,000 C 12 12] node_manager.cc:1040: [Timeout] Exiting because this node manager has "
        "mistakenly been marked as dead by the GCS: GCS failed to check the health of this node for 5 times. This is "
        "likely because the machine or raylet has become overloaded.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    (
        "F0301 10:00:00.000000 12 12 node_manager.cc:612] Check failed: node_id != self_node_id_ Exiting because "
        "this node manager has mistakenly been marked dead by the monitor: GCS didn't receive heartbeats within "
        "timeout 30000 ms. This is likely since the machine or raylet became overloaded.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    # slurmstepd's node-failure cancel in its 14.11-15.08 wording (the host is its own).
    (
        "slurmstepd: error: *** JOB 48213 CANCELLED AT 2015-09-01T04:12:55 DUE TO NODE node-3 FAILURE ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-job-node-fail",
    ),
    (
        "slurmstepd: *** JOB 48213 CANCELLED AT 2013-09-01T04:12:55 DUE TO NODE FAILURE ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-job-node-fail",
    ),
    # Slurm's word for an uncorrectable memory error on the node (KNL, 17.02-25.05).
    (
        "slurmstepd: error: *** JOB 48213 ON knl-017 UNCORRECTABLE MEMORY ERROR AT 2019-03-02T11:20:44 ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
    ),
    (
        "slurmstepd: error: *** STEP 48213.0 ON knl-017 UNCORRECTABLE MEMORY ERROR AT 2019-03-02T11:20:44 ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
    ),
    # Round 31: a hung task asleep in no filesystem's wait stays the node's; a hung-task panic stays the node's even when
    # the task was asleep in one (the node is down).
    (
        "[ 843.07] INFO: task python3:5604 blocked for more than 120 seconds.\n"
        "[ 843.07] Call Trace:\n"
        "[ 843.07]  schedule+0x35/0x80\n"
        "[ 843.07]  io_schedule_timeout+0xa6/0x110",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task",
    ),
    (
        "[ 843.07] INFO: task python3:5604 blocked for more than 120 seconds.\n"
        "[ 843.07]  nfs_wait_bit_killable+0x24/0xa0 [nfs]\n"
        "[ 843.09] Kernel panic - not syncing: hung_task: blocked tasks",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task-panic",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # Ray's GCS, as the driver prints the error it pushes (worker.py's logger).
    (
        "2024-03-02 12:53:00,741\tWARNING worker.py:2058 -- The node with node id: 5ad7fa5dd64fc1fec7a82cceecabed8e5e"
        " and address: 10.80.8.181 and node name: 10.80.8.181 has been marked dead because the detector has missed "
        "too many heartbeats from it. This can happen when a \t(1) raylet crashes unexpectedly (OOM, etc.) ",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
        True,
        ["10.80.8.181"],
    ),
    # Older Ray: "the monitor".
    (
        "The node with node id: 0b6a and address: 10.0.0.2 and node name: 10.0.0.2 has been marked dead because the "
        "monitor has missed too many heartbeats from it.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
        True,
        ["10.0.0.2"],
    ),
    # The actor on that node: ActorDiedError, then GenNodeDiedCause's two lines. The node
    # decides over the exception line and over the "died unexpectedly" of the process.
    (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: WorkerDict\n"
        "The actor died because its node has died. Node Id: 9557d62af5f975d09decde2d6adbb2a9\n"
        "\tthe actor's node was terminated unexpectedly: health check failed due to missing too many heartbeats",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
        True,
        [],
    ),
    # The node's raylet gone (the dashboard agent's parent check): the node, its cause left open.
    (
        "(raylet) Raylet is terminated. Termination is unexpected. Possible reasons include: (1) SIGKILL by the user "
        "or system OOM killer, (2) Invalid memory access from Raylet causing SIGSEGV or SIGBUS, (3) Other termination "
        "signals. Last 20 lines of the Raylet logs:",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        "ray-raylet-died",
        True,
        [],
    ),
    # Kubernetes: the node lifecycle controller's event (kubectl get events), the node named.
    (
        "default   2m   Normal   NodeNotReady   node/gpu-node-07   Node gpu-node-07 status is now: NodeNotReady",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-node-lost",
        True,
        ["gpu-node-07"],
    ),
    # kubectl describe node: the condition the controller sets when the kubelet goes silent.
    (
        "  Ready   Unknown   Thu, 08 Oct 2026 00:37:41 +0000   Thu, 08 Oct 2026 00:38:53 +0000   NodeStatusUnknown   "
        "Kubelet stopped posting node status.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-node-lost",
        True,
        [],
    ),
    # The event on each pod of that node (MarkPodsNotReady).
    (
        "Warning  NodeNotReady  3m  node-controller  Node is not ready",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-node-lost",
        True,
        [],
    ),
    # The node deleted under the pod, and podgc failing the orphans.
    (
        "Normal  RemovingNode  40s  node-controller  Node gpu-node-07 event: Removing Node gpu-node-07 from Controller",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-node-lost",
        True,
        [],
    ),
    (
        "    Type: DisruptionTarget  Status: True  Reason: DeletionByPodGC  Message: PodGC: node no longer exists",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-node-lost",
        True,
        [],
    ),
    # The kubelet's own checks: its node's software.
    (
        "  Ready   False   ...   KubeletNotReady   PLEG is not healthy: pleg was last seen active 3m5.304s ago; "
        "threshold is 3m0s",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-kubelet-unhealthy",
        True,
        [],
    ),
    (
        "  Ready   False   ...   KubeletNotReady   container runtime network not ready: NetworkReady=false "
        "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-kubelet-unhealthy",
        True,
        [],
    ),
    # srun losing a node of its step (step_launch.c), and nodes that never booted (allocate.c).
    (
        "srun: error: Aborting, step missing and io error on node 3",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-step-io-lost",
        True,
        [],
    ),
    (
        "srun: error: _step_missing_handler: aborting, io error with slurmstepd on node 1",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-step-io-lost",
        True,
        [],
    ),
    (
        "srun: error: Aborting, can not test connection to node 0.",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-step-io-lost",
        True,
        [],
    ),
    ("salloc: error: Nodes cn17 are still not ready", C.NODE_FAILURE, L.HARDWARE, "slurm-step-io-lost", True, ["cn17"]),
    (
        "srun: error: Something is wrong with the boot of the nodes.",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-step-io-lost",
        True,
        [],
    ),
    # Torque's mother superior losing a sister MOM (mom_main.c), the sister named.
    (
        "=>> PBS: job killed: node 18 (n314) requested job terminate, 'EOF' (code 1099) - received SISTER_EOF "
        "attempting to communicate with sister MOM's",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        "pbs-sister-lost",
        True,
        ["n314"],
    ),
    (
        "=>> PBS: job killed: node 2 (cn07) requested job terminate, 'EOF' (code 1098) - internal or network "
        "failure attempting to communicate with sister MOM's",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        "pbs-sister-lost",
        True,
        ["cn07"],
    ),
    # slurmctld's own log deciding a node's fate (job_mgr.c, node_mgr.c).
    (
        "[2024-06-01T10:00:00.123] requeue job JobId=4242 due to failure of node cn12",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-node-failure",
        True,
        ["cn12"],
    ),
    (
        "[2024-06-01T10:00:00.123] validate_node_specs: Node cn12 unexpectedly rebooted boot_time=1717236000 "
        "last response=1717235000",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-health-check",
        True,
        [],
    ),
    (
        "[2024-06-01T10:00:00.123] error: Setting node cn12 state to INVAL with reason:Low RealMemory (reported:"
        "515000 < 100.00% of configured:1031000)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
        True,
        ["cn12"],
    ),
    # The node's prolog failing, as slurmctld and slurmd log it (node_mgr.c, job_mgr.c, req.c).
    (
        "[2024-06-01T10:00:00.123] error: validate_node_specs: Prolog or job env setup failure on node cn12, "
        "draining the node",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-prolog-failure",
        True,
        ["cn12"],
    ),
    (
        "[2024-06-01T10:00:00.123] error: Prolog launch failure, JobId=4242",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-prolog-failure",
        True,
        [],
    ),
    (
        "[2024-06-01T10:00:00.123] error: Waiting for JobId=4242 REQUEST_LAUNCH_PROLOG notification failed, "
        "giving up after 20 sec",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-prolog-failure",
        True,
        [],
    ),
    # x86 since 4.20, as the node's syslog has it: the host is named.
    (
        "Mar  3 04:05:06 gpu-node-12 kernel: BUG: kernel NULL pointer dereference, address: 0000000000000008",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        ["gpu-node-12"],
    ),
    (
        "[  812.339051] BUG: unable to handle page fault for address: ffffc90000a3f000",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        [],
    ),
    # Before 4.20 (and sh today): "BUG: unable to handle kernel %s at %px".
    (
        "[ 1201.1] BUG: unable to handle kernel NULL pointer dereference at 0000000000000010",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        [],
    ),
    (
        "BUG: unable to handle kernel paging request at ffffeb04000000a0",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        [],
    ),
    # arm64 (Grace nodes): die_kernel_fault and __die.
    (
        "[ 97.5] Unable to handle kernel NULL pointer dereference at virtual address 0000000000000028",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        [],
    ),
    (
        "[ 97.5] Unable to handle kernel execute from non-executable memory at virtual address ffff80000a1b2c3d",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        [],
    ),
    (
        "[ 97.6] Internal error: Oops: 0000000096000005 [#1] PREEMPT SMP",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        [],
    ),
    # lib/bug.c, and x86's die() headers (6.11 prefixes "Oops: ").
    ("[ 55.0] kernel BUG at mm/slub.c:4234!", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "kernel-oops", True, []),
    ("[ 55.1] Oops: 0002 [#1] PREEMPT SMP NOPTI", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "kernel-oops", True, []),
    (
        "kernel: [ 55.1] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] "
        "SMP PTI",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        [],
    ),
    (
        "[ 55.1] Oops: general protection fault, probably for non-canonical address 0x6b6b6b6b6b6b6b6b: 0000 [#1] SMP",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
        True,
        [],
    ),
    # Open MPI's runtime losing a node's daemon: 4.x, with the node on the daemon's line.
    (
        "--------------------------------------------------------------------------\n"
        "ORTE has lost communication with a remote daemon.\n"
        "\n"
        "  HNP daemon   : [[16919,0],0] on node cn031\n"
        "  Remote daemon: [[16919,0],3] on node cn127\n"
        "\n"
        "This is usually due to either a failure of the TCP network\n"
        "connection to the node, or possibly an internal failure of\n"
        "the daemon itself. We cannot recover from this failure, and\n"
        "therefore will terminate the job.",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        "mpi-daemon-lost",
        True,
        ["cn127"],
    ),
    # Open MPI 5 (PRRTE), and the older [node-died] text.
    ("PRTE has lost communication with a remote daemon.", C.NODE_FAILURE, L.AMBIGUOUS, "mpi-daemon-lost", True, []),
    (
        "ORTE has lost communication with its daemon located on node:\n\n  hostname:  cn044\n",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        "mpi-daemon-lost",
        True,
        [],
    ),
    # slurm_errno.c's refusals as sbatch, srun and salloc print them: a wrong request, a refusal by policy,
    # nodes held for maintenance; and scrun's ends of a container job.
    ("scrun: error: Job killed due node failure", C.NODE_FAILURE, L.HARDWARE, "slurm-job-node-fail", False, []),
    # A real prolog failure is still node_failure's.
    (
        "slurmd: error: Prolog failure on node gpu-07",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-prolog-failure",
        True,
        ["gpu-07"],
    ),
    # Open MPI's daemon lost mid-run (not at launch): the remote daemon's node is named.
    (
        "ORTE has lost communication with a remote daemon.\n\n  HNP daemon   : [[16919,0],0] on node cn031\n"
        "  Remote daemon: [[16919,0],3] on node cn127\n",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        "mpi-daemon-lost",
        True,
        ["cn127"],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


DECIDED_IMPLICATING: list[tuple[str, FailureClass, CauseLayer, str, bool]] = [
    # Ray: the node a task ran on died, or its raylet.
    (
        "ray.exceptions.NodeDiedError: Task failed due to the node (where this task was running)  was dead or "
        "unavailable.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
        True,
    ),
    (
        "ray.exceptions.LocalRayletDiedError: The task's local raylet died. Check raylet.out for more information.",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        "ray-raylet-died",
        True,
    ),
]


test_source_lines_are_decided_implicating_the_node_or_not = cases.excerpts_decided(DECIDED_IMPLICATING)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Slurm.
    (
        "srun: error: Task launch for StepId=812.0 failed on node host9: Invalid job credential",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmstepd-node-error",
    ),
    (
        "slurmstepd: error: *** JOB 812 STEPD TERMINATED ON host9 AT 2030-02-01T10:00:00 DUE TO JOB NOT ENDING WITH "
        "SIGNALS ***",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmstepd-node-error",
    ),
    (
        "slurmstepd-host9: error: unable to create step StepId=812.0 cgroup",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmstepd-node-error",
    ),
    ("slurmctld: Killing JobId=812 on failed node host9", C.NODE_FAILURE, L.HARDWARE, "slurm-node-failure"),
    (
        "slurmstepd: error: *** JOB 812 ON host1 CANCELLED AT 2030-02-01T10:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD "
        "LOG FOR DETAILS ***",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-job-node-fail",
    ),  # names the batch host, not the dead one
    (
        "[2030-02-01T10:00:00.000] error: Unable to register: Unable to contact slurm controller (connect failure)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-prolog-failure",
    ),
    # A site's job_submit plugin refusing the request: SLURM_ERROR after the plugin's own message.
    (
        "slurmstepd: error: execve(): /var/spool/slurmd/job812/slurm_script: No such file or directory",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmstepd-node-error",
    ),
    # Round 26: slurmctld draining a node that registers less than it is configured with (node_mgr.c,
    # gres.c), in the versions' words; Determined losing a machine's agent; Ray's agent naming the node.
    (
        "[2019-05-02T08:00:01.123] error: Node gpu017 has low real_memory size (515000 < 515500)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    (
        "[2019-05-02T08:00:01.123] error: Setting node gpu017 state to DRAIN",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    (
        "   Reason=Low RealMemory (reported:257000 < 100.00% of configured:257500) [slurm@2025-01-01T00:00:00]",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    (
        "   Reason=gres/gpu count reported lower than configured (7 < 8) [slurm@2025-01-01T00:00:00]",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    (
        "ERROR: Trial (Experiment 12) was terminated: allocation failed due to agent failure: agent failed while the "
        "container was running: agent closed with allocated containers",
        C.NODE_FAILURE,
        L.HARDWARE,
        "determined-agent-lost",
    ),
    (
        "(raylet) [2023-01-01 10:00:00,000 E 41 41] agent.py:217 -- Raylet is terminated: ip=10.0.3.7, id=ab12cd34. "
        "Termination is unexpected. Possible reasons include: (1) SIGKILL by the user or system OOM killer, (2) Invalid "
        "memory access from Raylet causing SIGSEGV or SIGBUS, (3) Other termination signals.",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        "ray-raylet-died",
    ),
    # Round 27: slurmctld's INVAL line is slurm-node-invalid's, not the health check's; sinfo -R's
    # reason column.
    (
        "slurmctld: error: Setting node gpu17 state to INVAL with reason:gres/gpu count reported lower than "
        "configured (7 < 8)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    ("Low RealMemory                          gpu[017-018]", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "slurm-node-invalid"),
    (
        "Low RealMemory (reported:515000 < 100.00% of configured:1031000) slurm  2026-03-01T10:00:00 gpu17",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    # Round 28: the kubelet's device manager refusing pods for its own state (devicemanager), Torque's
    # server unable to hand a job to a MOM (req_runjob.c), slurmctld's debug and refusal of a
    # registration below its configuration (node_mgr.c, proc_req.c).
    (
        "Message: Pod Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 2, "
        "Available: 0, which is unexpected",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-admission-failed",
    ),
    (
        "Warning  UnexpectedAdmissionError  3s  kubelet  Allocate failed due to rpc error: code = Unavailable desc = "
        "connection error, which is unexpected",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-admission-failed",
    ),
    (
        "03/01/2026 10:00:01  S    unable to run job, send to MOM '10.2.0.17' failed",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "pbs-mom-unreachable",
    ),
    (
        "03/01/2026 10:00:01  S    unable to run job, MOM rejected/timeout",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "pbs-mom-unreachable",
    ),
    (
        "[2026-03-01T10:00:00.001] debug:  Node gpu17 has low real_memory size (501000 / 1031000) < 95.00%",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    (
        "[2026-03-01T10:00:00.002] error: _slurm_rpc_node_registration node=gpu17: Invalid argument",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    # Round 29: the kernel's RCU (3.x wording) and workqueue stall detectors (tree_stall.h, workqueue.c);
    # a fatal platform error record (cper.c); the device plugin unable to register; Torque marking a
    # node offline.
    (
        "[ 9001.1] INFO: rcu_sched_state detected stall on CPU 12 (t=15000 jiffies)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task",
    ),
    (
        "[ 9001.1] BUG: workqueue lockup - pool cpus=7 node=0 flags=0x0 nice=0 stuck for 41s!",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task",
    ),
    ("[    3.1] [Hardware Error]: event severity: fatal", C.NODE_FAILURE, L.HARDWARE, "memory-mce-edac"),
    (
        "2026/03/01 10:00:00 Could not register device plugin: context deadline exceeded",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-admission-failed",
    ),
    (
        "03/01/2026 10:00:00;02;PBS_Server.4410;node;update_failure_counts;Node 'gpu17' has had 12 failures in close "
        "proximity, marking offline.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "pbs-mom-unreachable",
    ),
    # Round 30: the kubelet admitting a pod the node lacks the device for (predicate.go); Ray's lost GCS.
    (
        "trainer-7f9c   0/1     OutOfnvidia.com/gpu   0          2h    <none>        gpu-node-3   <none>",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-admission-failed",
    ),
    (
        "[2026-03-01 10:00:00,000 C 273 339] (raylet) gcs_rpc_client.h:537: Check failed: ... Failed to connect to GCS "
        "within 60 seconds",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "ray-node-dead",
    ),
    # The registration checks' reasons as update_node records them are slurm-node-invalid's, not the health check's.
    (
        "[2026-03-01T10:00:00.003] update_node: node gpu17 reason set to: Low RealMemory (reported:501000 < 95.00% of "
        "configured:1031000)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    (
        "[2026-03-01T10:00:00.003] update_node: node gpu17 reason set to: gres/gpu count reported lower than configured (7 < 8)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    # Round 31: the node's container runtime unable to start a pod's sandbox (kuberuntime_manager.go, containerd's cri).
    (
        "  Warning  FailedCreatePodSandBox  4m (x93 over 24m)  kubelet  Failed to create pod sandbox: rpc error: code = "
        'Unknown desc = failed to get sandbox runtime: no runtime for "nvidia" is configured',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-pod-sandbox-failed",
    ),
    (
        'time="2026-03-01T10:00:00.1+00:00" level=error msg="RunPodSandbox for &PodSandboxMetadata{Name:train-0,'
        'Uid:1,Namespace:default,Attempt:2,} failed, error" error="failed to get sandbox runtime: no runtime for '
        '\\"nvidia\\" is configured"',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-pod-sandbox-failed",
    ),
    # Round 32: a Torque client on the node without its trqauthd (pbsD_connect.c); sinfo -R's cut gres reason.
    (
        "Error in connection to trqauthd (15137)-[could not connect to unix socket /tmp/trqauthd-unix: 111]",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "pbs-mom-unreachable",
    ),
    (
        "gres/gpu count repor slurm     2026-04-14T06:39:53 gpu-node-0",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    # Round 33: slurmd giving up at start (slurmd.c).
    (
        "[2020-07-09T09:55:38.584] error: slurmd initialization failed",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmd-fatal",
    ),
    # Round 34: AMD's decoding of an uncorrected machine check (drivers/edac/mce_amd.c), and the reset it caused as
    # the next boot reads it (arch/x86/kernel/cpu/amd.c).
    ("[Hardware Error]: Uncorrected, software restartable error.", C.NODE_FAILURE, L.HARDWARE, "memory-mce-edac"),
    (
        "x86/amd: Previous system reset reason [0x08000800]: an uncorrected error caused a data fabric sync flood event",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
    ),
    # Round 35: slurmstepd without the node's munge daemon (auth/munge).
    (
        'slurmstepd: error: Munge encode failed: Failed to connect to "/run/munge/munge.socket.2": Connection refused',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmstepd-node-error",
    ),
    # Round 37: the node controller's taint on a silent node, as the scheduler reports it; slurmstepd unable
    # to put the step into its cgroup (cgroup_common.c).
    (
        "0/4 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/unreachable: }, 3 Insufficient "
        "nvidia.com/gpu.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-node-lost",
    ),
    (
        "slurmstepd: error: common_file_write_uints: write value '4410' to '/sys/fs/cgroup/cpuset/slurm/uid_1000/"
        "job_12/step_0/cgroup.procs' failed: No space left on device",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmstepd-node-error",
    ),
    # Round 39: an NMI for a PCI system error or an I/O channel check (nmi.c).
    ("[ 91.3] NMI: PCI system error (SERR) for reason a1 on CPU 0.", C.NODE_FAILURE, L.HARDWARE, "nmi-pci-error"),
    (
        "kernel:[ 912.2] NMI: IOCK error (debug interrupt?) for reason 71 on CPU 0.",
        C.NODE_FAILURE,
        L.HARDWARE,
        "nmi-pci-error",
    ),
    # Round 45: mcelog's decode of an uncorrected machine check with the processor context corrupt.
    ("Processor context corrupt", C.NODE_FAILURE, L.HARDWARE, "memory-mce-edac"),
    # Round 45: ParallelCluster's clustermgtd finding a node's EC2 instance gone.
    (
        "2026-12-07 10:00:00,125 - [slurm_resources:is_backing_instance_valid] - WARNING - Node state check: no "
        "corresponding instance in EC2 for node queue1-dy-p5-3(10.0.4.17), node state: ALLOCATED+CLOUD",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-node-failure",
    ),
    # Round 45: LSF's job whose working directory the execution host does not have.
    (
        "Exited with exit code 1. The job was terminated by LSF: TERM_CWD_NOTEXIST",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmstepd-node-error",
    ),
    # Round 47: an interrupt line no handler claims.
    (
        '[ 1042.480000] irq 77: nobody cared (try booting with the "irqpoll" option)',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
    ),
    # Round 48: the memory manager's bad page reports; slurmctld draining the node a batch script failed on;
    # Flux's broker refusing a node's broker.
    (
        "Mar  2 10:00:00 gpu-3 kernel: BUG: Bad page state in process python3  pfn:1a2b3c",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
    ),
    (
        "[ 77.1] BUG: Bad rss-counter state mm:00000000deadbeef type:MM_ANONPAGES val:-1",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-oops",
    ),
    (
        "slurmctld: error: slurmd error running JobId=4410 on node(s)=gpu-17: Plugin initialization failed",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-batch-launch-failed",
    ),
    (
        "[2026-12-07T10:00:00.100] error: slurmd error running StepId=4410.batch on Node(s)=gpu-17: Slurmd could "
        "not create a batch directory or file",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-batch-launch-failed",
    ),
    (
        "update_node: node gpu-17 reason set to: batch job complete failure",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-batch-launch-failed",
    ),
    (
        "Mar 02 10:00:00 rank0 flux[4242]: broker.err[0]: rejecting connection from node7 (rank 6): v0.46.1 has a "
        "message encoding bug, please upgrade",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "flux-broker-rejected",
    ),
    # Round 49: sinfo -R's reason column cutting the socket*core*thread reason.
    (
        "Low socket*core*thre root      2026-12-07T10:00:00 gpu-[6-7]",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    # Round 51: the BMC's event log; the kubelet without its network plugin.
    (
        "  54 | 03/11/2025 | 16:34:51 | Memory #0x08 | Uncorrectable ECC | Asserted",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
    ),
    (
        'E0923 19:22:45.575181   20183 kubelet.go:2874] "Container runtime network not ready" networkReady="NetworkReady=false"',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-kubelet-unhealthy",
    ),
    (
        'containerd[1324]: level=error msg="failed to reload cni configuration" error="cni plugin not initialized"',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-kubelet-unhealthy",
    ),
    # Round 52: the NVIDIA device plugin finding no GPUs; the node problem detector's conditions.
    (
        "E0506 17:45:45.421956       1 factory.go:112] Incompatible strategy detected auto",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-admission-failed",
    ),
    (
        "E0506 17:45:45.442750 1 main.go:173] error starting plugins: error getting plugins: unable to create plugins: "
        "failed to construct resource managers: invalid device discovery strategy",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-admission-failed",
    ),
    (
        "Warning  KubeletIsDown  26m  kubelet-custom-plugin-monitor  Node condition KubeletProblem is now: True, reason: KubeletIsDown",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-kubelet-unhealthy",
    ),
    (
        "Warning  ContainerRuntimeUnhealthy  3m  health-checker  Node condition ContainerRuntimeUnhealthy is now: True, reason: X",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-kubelet-unhealthy",
    ),
    # Round 52: nvidia-smi unable to reset or reconfigure a GPU something on the node holds.
    ("The following GPUs could not be reset:", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "gpu-reset-refused"),
    (
        "Warning: MIG mode is in pending enable state for GPU 00000000:07:00.0:In use by another client",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "gpu-reset-refused",
    ),
    (
        "1 device is currently being used by one or more other processes (e.g., Fabric Manager, CUDA application, "
        "graphics application such as an X server, or a monitoring application such as another instance of nvidia-smi).",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "gpu-reset-refused",
    ),
    # Round 53: the kubelet unable to create a pod's cgroup.
    (
        "Warning  FailedCreatePodContainer  3m  kubelet  unable to ensure pod container exists: failed to create container for "
        "[kubepods burstable pod31f4] : mkdir /sys/fs/cgroup/memory/kubepods/burstable/pod31f4: cannot allocate memory",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-pod-sandbox-failed",
    ),
    # Round 53: the node's hardware failing, as ipmitool decodes the BMC's event log.
    (
        "   1 | 06/01/2025 | 10:00:00 | Processor CPU1_Status | IERR | Asserted",
        C.NODE_FAILURE,
        L.HARDWARE,
        "bmc-sel-fault",
    ),
    (
        "  2a | 06/01/2025 | 10:00:01 | Processor #0x04 | Thermal Trip | Asserted",
        C.NODE_FAILURE,
        L.HARDWARE,
        "bmc-sel-fault",
    ),
    (
        "  2b | 06/01/2025 | 10:00:02 | Critical Interrupt #0x17 | Bus Fatal Error | Asserted",
        C.NODE_FAILURE,
        L.HARDWARE,
        "bmc-sel-fault",
    ),
    (
        "  2c | 06/01/2025 | 10:00:02 | Critical Interrupt PCIE_ERR | PCI SERR | Asserted",
        C.NODE_FAILURE,
        L.HARDWARE,
        "bmc-sel-fault",
    ),
    (
        "  2d | 06/01/2025 | 10:00:03 | System Firmware Error | Unrecoverable system-board failure | Asserted",
        C.NODE_FAILURE,
        L.HARDWARE,
        "bmc-sel-fault",
    ),
    # Round 54: a node stuck in emergency mode; Blue Gene/L's kernel panic.
    (
        "systemd[1]: Dependency failed for Local File Systems.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "boot-filesystems-failed",
    ),
    (
        "systemd[1]: local-fs.target: Job local-fs.target/start failed with result 'dependency'.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "boot-filesystems-failed",
    ),
    (
        "KERNRTSP 1121115817 2005.07.11 R01-M0-N1-C:J09-U11 2005-07-11-14.03.37.675251 R01-M0-N1-C:J09-U11 RAS KERNEL "
        "FATAL rts panic! - stopping execution",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-fatal",
    ),
    # Round 55: slurmctld rejecting gres.conf's cores; its own pings unfinished (no node named).
    (
        "[2022-06-10T09:46:22.044] error: _node_config_validate: gres/gpu: invalid GRES core specification (48-63) on node n1",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    (
        "error: Node ping apparently hung, many nodes may be DOWN or configured SlurmdTimeout should be increased",
        C.NODE_FAILURE,
        L.SCHEDULER,
        "slurmctld-ping-hung",
    ),
    # Round 56: ASRock's SEL format; the file table full; GPFS expelling a node; Blue Gene/L's TLB interrupt.
    (
        " 36   | 04/13/2025, 03:08:16 | BIOS  | Critical Interrupt   | PCI SERR - Asserted",
        C.NODE_FAILURE,
        L.HARDWARE,
        "bmc-sel-fault",
    ),
    ("        \tVFS: file-max limit 8192 reached", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "file-table-full"),
    (
        "May 7 22:25:39 gpfs02 mmfs: [E] Node 172.17.0.101 (gpfs01) is being expelled due to expired lease.",
        C.NODE_FAILURE,
        L.HARDWARE,
        "gpfs-node-expelled",
    ),
    (
        "KERNDTLB 1118536327 2005.06.11 R30-M0-N9-C:J16-U01 2005-06-11-17.32.07.581048 R30-M0-N9-C:J16-U01 RAS KERNEL "
        "FATAL data TLB error interrupt",
        C.NODE_FAILURE,
        L.HARDWARE,
        "kernel-hardware-panic",
    ),
    # Round 57: the i386 machine-check handlers' panic; Flux's failed prolog and its shell left with unkillable processes.
    (
        "Jul  9 12:19:41 vz01 kernel: Kernel panic: CPU context corrupt",
        C.NODE_FAILURE,
        L.HARDWARE,
        "kernel-hardware-panic",
    ),
    ("Kernel panic - not syncing: CPU context corrupt", C.NODE_FAILURE, L.HARDWARE, "kernel-hardware-panic"),
    (
        "0.878s: job.exception f3Cuf3AX type=prolog severity=0 prolog exited with code=1 on node7 (rank 6)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-prolog-failure",
    ),
    (
        "12.004s: job.exception type=prolog severity=0 prolog timed out on node7 (rank 6)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-prolog-failure",
    ),
    # Round 58: slurmd failing under systemd; a POWER host's processor checkstop; a node image without NVML.
    (
        "  Process: 3877 ExecStart=/usr/sbin/slurmd -D $SLURMD_OPTIONS (code=exited, status=1/FAILURE)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmd-fatal",
    ),
    (
        "Jan 31 19:17:19 n12 systemd[1]: slurmd.service: Failed with result 'exit-code'.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurmd-fatal",
    ),
    ("[Mon Jan 22 11:23:31 2018] \tUnknown Core check stop.", C.NODE_FAILURE, L.HARDWARE, "powernv-hmi-fatal"),
    ("Fatal Hypervisor Maintenance interrupt [Not recovered]", C.NODE_FAILURE, L.HARDWARE, "powernv-hmi-fatal"),
    ("\t[Unit: PC ] Hang Recovery Failed (core check stop)", C.NODE_FAILURE, L.HARDWARE, "powernv-hmi-fatal"),
    (
        "E0402 12:47:47.247405       1 factory.go:112] Incompatible platform detected",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "k8s-device-admission-failed",
    ),
    # Round 59: GPFS recovering nodes it declared dead; Grid Engine's host that does not report.
    (
        "Mon Jun 25 22:23:38.338 2018: Recovering nodes: 10.114.132.109",
        C.NODE_FAILURE,
        L.HARDWARE,
        "gpfs-node-expelled",
    ),
    (
        '    scheduling info:            queue instance "all.q@node001" dropped because it is temporarily not available',
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "sge-queue-unavailable",
    ),
    # Round 59: Blue Gene/L's kernel stopping on a data storage interrupt (KERNSTOR) or for a reason code (KERNTERM).
    (
        "KERNSTOR 1130529611 2005.10.28 R63-M1-N5-C:J17-U01 2005-10-28-13.00.11.719498 R63-M1-N5-C:J17-U01 RAS KERNEL FATAL data storage interrupt",
        C.NODE_FAILURE,
        L.HARDWARE,
        "kernel-hardware-panic",
    ),
    (
        "KERNTERM 1130529611 2005.10.28 R63-M1-N5-C:J17-U01 2005-10-28-13.00.11.719498 R63-M1-N5-C:J17-U01 RAS KERNEL FATAL rts: kernel terminated for reason 1004",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-fatal",
    ),
    # Round 59: the LANL clusters' event log: a power supply, a node not responding, a boot that halted.
    ("51338 node-3 node psu 1106496000 1 psu failure\\ ambient=28", C.NODE_FAILURE, L.HARDWARE, "lanl-node-event"),
    ("2567354 node-147 node status 1074098611 1 not responding", C.NODE_FAILURE, L.HARDWARE, "lanl-node-event"),
    (
        "27373 node-55 action error 1076176599 1 boot (command 2092) Error: HALT asserted\\  cannot continue",
        C.NODE_FAILURE,
        L.HARDWARE,
        "lanl-node-event",
    ),
    # Round 60: slurmd's GPU core affinity that does not fit the sockets; squeue's NODE_FAIL state.
    (
        "error: _check_core_range_matches_sock: gres/gpu GRES autodetected core affinity 0-7 on node node0 doesn't "
        "match socket boundaries. (Socket 0 is cores 0-1)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "slurm-node-invalid",
    ),
    (
        "                 2   compute     wrap   ubuntu NF       2:55      1 ip-10-0-2-231",
        C.NODE_FAILURE,
        L.HARDWARE,
        "slurm-job-node-fail",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


LINES_WITH_ONSET: list[tuple[str, FailureClass, CauseLayer, str, Onset]] = [
    (
        "[ 843.07] INFO: task python3:5604 blocked for more than 120 seconds.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task",
        Onset.SUSPECTED,
    ),
    (
        "[ 843.07] INFO: rcu_sched self-detected stall on CPU { 3}  (t=60000 jiffies g=1 c=2 q=3)",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task",
        Onset.SUSPECTED,
    ),
    (
        "[ 843.07] rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "kernel-hung-task",
        Onset.SUSPECTED,
    ),
    (
        "Feb 23 03:28:16 node3 kernel: mce: [Hardware Error]: Machine check events logged",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
        Onset.SUSPECTED,
    ),
    (
        "[Mon Oct  3 13:52:42 2022] EDAC MC1: 262 CE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 "
        "slot:0 page:0x2031c14 offset:0x940 grain:32 syndrome:0x0 -  OVERFLOW area:DRAM)",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
        Onset.SUSPECTED,
    ),
    (
        "EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#1 (channel:0 slot:1 page:0x1 offset:0x0)",
        C.NODE_FAILURE,
        L.HARDWARE,
        "memory-mce-edac",
        Onset.SUSPECTED,
    ),
    (
        "[ 901.2] Kernel panic - not syncing: Fatal machine check",
        C.NODE_FAILURE,
        L.HARDWARE,
        "kernel-hardware-panic",
        Onset.CERTAIN,
    ),
    (
        "[ 901.2] Kernel panic - not syncing: Synchronous External Abort: synchronous external abort",
        C.NODE_FAILURE,
        L.HARDWARE,
        "kernel-hardware-panic",
        Onset.CERTAIN,
    ),
    # Round 38: the kernel powering the node off at a critical trip point: the ACPI thermal driver, the thermal
    # core before and after 6.x, and the reboot code's protection shutdown after it.
    (
        "Dec 21 20:19:27 gpu07 kernel: [ 2678.188911] Critical temperature reached (99 C), shutting down.",
        C.NODE_FAILURE,
        L.HARDWARE,
        "thermal-shutdown",
        Onset.CERTAIN,
    ),
    (
        "[ 42.48] thermal thermal_zone4: critical temperature reached (128 C), shutting down",
        C.NODE_FAILURE,
        L.HARDWARE,
        "thermal-shutdown",
        Onset.CERTAIN,
    ),
    (
        "[ 91.02] thermal thermal_zone0: x86_pkg_temp: critical temperature reached",
        C.NODE_FAILURE,
        L.HARDWARE,
        "thermal-shutdown",
        Onset.CERTAIN,
    ),
    (
        "[ 91.02] reboot: HARDWARE PROTECTION shutdown (Temperature too high)",
        C.NODE_FAILURE,
        L.HARDWARE,
        "thermal-shutdown",
        Onset.CERTAIN,
    ),
    # Round 51, moved in the review: the BMC's record of an OS stop is a suspicion, an entry of any earlier boot.
    (
        "  55 | 03/11/2025 | 16:34:51 | OS Critical Stop #0x46 | Run-time critical stop | Asserted",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        "bmc-sel-os-stop",
        Onset.SUSPECTED,
    ),
    ("2beb | Watchdog2 | Hard reset | Asserted", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, "bmc-sel-os-stop", Onset.SUSPECTED),
]


test_family_line_decides_by_its_pattern_and_onset = cases.lines_decided(LINES_WITH_ONSET)


NOT_THESE: list[tuple[str, str]] = [
    # The out-of-memory panics are host_oom's, whatever host_oom.yaml holds.
    ("[ 77.1] Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled", "kernel-fatal"),
    ("[ 77.1] Kernel panic - not syncing: System is deadlocked on memory", "kernel-fatal"),
    # A lone corrected error, and the INFO fallback of a P2P path.
    ("EDAC MC0: 1 CE memory read error on CPU_SrcID#0_Ha#0_Chan#0_DIMM#0 (channel:0 slot:0)", "memory-mce-edac"),
]


test_lines_not_for_the_pattern = cases.lines_not_for_the_pattern(NOT_THESE)


NAMED_NODES: list[tuple[str, str]] = [
    # Slurm names the failed node, and the node that could not kill its tasks.
    ("srun: error: Node failure on host9", "host9"),
    ("slurmctld: Removing failed node host9 from JobId=812", "host9"),
    (
        "slurmstepd: error: *** JOB 812 STEPD TERMINATED ON host9 AT 2030-02-01T10:00:00 DUE TO JOB NOT RUNNING ***",
        "host9",
    ),
    # Round 57: Flux's job-exec names the node whose shell it lost.
    (
        "3.201s: job.exception f8ez type=exec severity=0 shell exited with unkillable processes on node7 (rank 6)",
        "node7",
    ),
    ("3.201s: job.exception f8ez type=exec severity=0 node failure on node7 (rank 6)", "node7"),
    ('queue instance "gpu.q@gn12" dropped because it is temporarily not available', "gn12"),
    ("2567354 node-147 node status 1074098611 1 not responding", "node-147"),
]


test_the_named_node_is_the_one_blamed = cases.excerpts_blaming_the_named_node(NAMED_NODES)


# (excerpt, the node the table names).
NODE_TABLES: list[tuple[str, str]] = [
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


@pytest.mark.parametrize(("text", "node"), NODE_TABLES, ids=ids(NODE_TABLES))
def test_node_tables_name_the_node(catalogue, matcher, text, node):
    got = classify_text(catalogue, matcher, text)
    assert got.failure_class is C.NODE_FAILURE
    assert got.nodes == [node]


BENIGN: list[str] = [
    # Talk about hung tasks and Xids, not one.
    "set kernel.hung_task_timeout_secs = 600 in sysctl.conf",
    # The kubelet's other status events, and a node coming back.
    "Normal  NodeReady  10s  kubelet  Node gpu-node-07 status is now: NodeReady",
    "Normal  NodeHasSufficientMemory  10s  kubelet  Node gpu-node-07 status is now: NodeHasSufficientMemory",
    "Normal  NodeSchedulable  10s  kubelet  Node gpu-node-07 status is now: NodeSchedulable",
    "  Ready   True   ...   KubeletReady   kubelet is posting ready status",
    # A node stopped on purpose (Ray's EXPECTED_TERMINATION), and Ray's own healthy output.
    "\tthe actor's node was terminated expectedly: received SIGTERM",
    "Raylet is terminated. Termination is graceful.",
    "2024-03-02 12:50:00,172\tINFO worker.py:1673 -- Started a local Ray instance.",
    "(WorkerDict pid=150008) step 120 | loss 1.734 | lr 3.0e-4",
    # slurmctld hearing from a node again, and the timer server's healthy lines.
    "[2024-06-01T10:05:00.000] Node cn12 now responding",
    # The controller's own prolog (PrologSlurmctld), and slurmd's timing of a healthy prolog.
    "[2024-06-01T10:00:00.123] error: prolog_slurmctld JobId=4242 failed due to timing out",
    "[2024-06-01T10:00:00.123] prolog for JobId=4242 ran for 12 seconds",
    # Torque's sister that had finished killing its part: not a lost node.
    "=>> PBS: job killed: node 1 (cn02) requested job terminate, 'killdone' (1)",
    # An application's own "Oops" and "Internal error" (die's header has a hex code and a [#n] counter).
    "Oops: something went wrong while saving the figure, retrying",
    "Internal error: 0x1f (see the log)",
    # Open MPI's help texts that are warnings, and its daemon lines out of their message.
    "WARNING: Open MPI accepted a TCP connection from what appears to be a",
    "  hostname:  cn044",
    "  HNP daemon   : [[16919,0],0] on node cn031",
    # Ray reporting a node that left on purpose.
    "the actor's node was terminated expectedly: received SIGTERM",
    # The kernel's watchdog configuration and a clean reboot.
    "[    0.123456] NMI watchdog: Enabled. Permanently consumes one hw-PMU counter.",
    "kernel.softlockup_panic = 0",
    "systemd[1]: Started Slurm node daemon.",
    "slurmd: slurmd version 22.05.8 started",
    "slurmd: CPUs=64 Boards=1 Sockets=2 Cores=16 Threads=2 Memory=515000 TmpDisk=100000 Uptime=12 CPUSpecList=(null)",
    # slurmctld hearing from a node again; a node ready again.
    "slurmctld: Node gpu-node-4 now responding",
    "Normal  NodeReady  10s  kubelet  Node gpu-node-4 status is now: NodeReady",
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
    # Ray's heartbeat lag before any verdict.
    "[2022-03-01 10:00:00,000 W 12 40] node_manager.cc:157: Last heartbeat was sent 6901 ms ago. There might be "
    "resource pressure on this node. If heartbeat keeps lagging, this node can be marked as dead mistakenly.",
    # Slurm 25.05's step teardown after a task failed elsewhere (--kill-on-bad-exit): the cause
    # is on another line.
    "slurmstepd: error: *** STEP 48213.0 ON node-3 CANCELLED AT 2025-06-01T10:00:00 DUE TO TASK FAILURE ***",
    "slurmstepd: error: *** STEP 48213.0 ON node-3 FAILED (non-zero exit code or other failure mode) ***",
    # Round 26: slurmctld's drain as it logs an operator's drain too.
    "[2025-01-01T00:00:00.000] drain_nodes: node gpu017 state set to DRAIN",
    # Round 29: a corrected platform error record.
    "[ 900.1] {3}[Hardware Error]: event severity: corrected",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    "slurmstepd: error: *** STEP 812.0 ON host1 CANCELLED AT 2030-02-01T10:00:00 DUE TO TASK FAILURE ***",
    "slurmstepd: error: *** STEP 812.0 ON host1 FAILED (non-zero exit code or other failure mode) ***",
    "Node host9 now responding",
    # Round 34: the same decoder's corrected and deferred errors, and a reset the software asked for.
    "[Hardware Error]: Corrected error, no action required.",
    "[Hardware Error]: Deferred error, no action required.",
    "x86/amd: Previous system reset reason [0x00080800]: software wrote 0x6 to reset control register 0xCF9",
    # Round 35: a credential expired on its way (a clock's or a requeue's), not the node's daemon.
    "slurmstepd: error: Munge decode failed: Expired credential",
    # Round 38: a program's own temperature alarm; the thermal core only warning of a hot zone.
    "Critical temperature reached, switching lamp off",
    "[ 91.02] thermal thermal_zone0: x86_pkg_temp: temperature 95000 above hot trip point",
    # Round 39: the NMI for an unknown reason, which hypervisors and power-saving modes raise on healthy hosts.
    "kernel:[6115219.45] Uhhuh. NMI received for unknown reason 2d on CPU 42.",
    "kernel:[6115219.45] Dazed and confused, but trying to continue",
    # Round 45: mcelog's header, printed for corrected errors too.
    "Hardware event. This is not a software error.",
    # Round 48: the errors slurmctld counts as not the node's, and a race at the job's end.
    "slurmctld: error: Slurmd error running StepId=4410.batch on Node(s)=gpu-17: Communication send failure",
    "slurmctld: slurmd error running StepId=4410.batch from Node(s)=gpu-17: Job/step already completing or completed",
    # Round 51: the BMC's corrected errors and its watchdog's status-only expiry.
    "  12 | 03/11/2025 | 16:34:51 | Memory #0x08 | Correctable ECC | Asserted",
    "  13 | 03/11/2025 | 16:35:00 | Watchdog2 | Timer expired, status only | Asserted",
    # Round 52: the condition cleared.
    "Normal  KubeletIsUp  1m  kubelet-custom-plugin-monitor  Node condition KubeletProblem is now: False, reason: KubeletIsUp",
    # Round 52: a reset that worked.
    "GPU 00000000:07:00.0 was successfully reset.",
    # Round 53: the BMC's informational, corrected and cleared events.
    "   3 | 06/01/2025 | 10:00:00 | Processor CPU1_Status | Presence detected | Asserted",
    "   4 | 06/01/2025 | 10:00:00 | Critical Interrupt #0x17 | Bus Correctable error | Asserted",
    "   5 | 06/01/2025 | 10:05:00 | Processor #0x04 | Thermal Trip | Deasserted",
    # Round 58: the processor recoveries POWER's firmware reports and goes on from.
    "Harmless Hypervisor Maintenance interrupt [Recovered]",
    " Error detail: Processor Recovery done",
    "slurmd.service: Deactivated successfully.",
    '    scheduling info:            queue instance "all.q@node001" dropped because it is disabled',
    "2567400 node-147 node status 1074098700 1 running",
    "2567401 node-148 node status 1074098700 1 configured out",
    "                 2   compute     wrap   ubuntu  R       2:55      1 ip-10-0-2-231",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


def test_a_tasks_own_exit_is_not_the_nodes(matcher: Matcher):
    hit = matcher.failure("srun: error: host7: task 2: Exited with exit code 1")
    assert hit is None or hit.failure_class not in {C.NODE_FAILURE, C.PROCESS_CRASH, C.INTERCONNECT}


def test_the_node_failure_cancel_line_blames_the_down_node_not_its_printer(catalogue, matcher):
    # slurmstepd on the live batch node (node1) prints the cancel line; Slurm lists node3 down.
    ev = evidence("[rank0]: step 40 loss 0.91", CANCELLED_ON_NODE1, job_state="NODE_FAIL", down_nodes=["node3"])
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
    ev = evidence("srun: error: Node failure on node2", job_state="NODE_FAIL", down_nodes=[])
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is C.NODE_FAILURE and a.nodes == ["node2"]


def test_a_machine_check_before_its_panic_stays_hardware(catalogue, matcher):
    """The machine check's lines and the panic it ends in: the hardware, not the kernel's lockup."""
    text = (
        "[ 900.1] mce: [Hardware Error]: CPU 7: Machine Check Exception: 5 Bank 0: b200000000030005\n"
        "[ 900.2] mce: [Hardware Error]: Machine check: Processor context corrupt\n"
        "[ 900.3] Kernel panic - not syncing: Fatal machine check"
    )
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer) == (C.NODE_FAILURE, L.HARDWARE)


def test_sinfo_summary_row_is_a_node_failure_without_a_single_node(catalogue, matcher):
    text = "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST\ngpu*         up   infinite      2  fail gpu-[07-08]"
    got = classify_text(catalogue, matcher, text)
    assert got.failure_class is C.NODE_FAILURE
    assert got.pattern == "sinfo-node-down"


def test_the_old_node_failure_cancel_names_no_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "slurmstepd: error: *** JOB 48213 CANCELLED AT 2015-09-01T04:12:55 DUE TO NODE node-3 FAILURE ***",
    )
    assert not got.node_implicated


def test_uncorrectable_memory_names_the_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "slurmstepd: error: *** JOB 48213 ON knl-017 UNCORRECTABLE MEMORY ERROR AT 2019-03-02T11:20:44 ***",
    )
    assert got.node_implicated
