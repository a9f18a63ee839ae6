"""Round 7 of the catalogue (issue 11): peers and nodes lost below the trainer, and deadlines.

Each line is a format string of the software that prints it, filled in with made-up
hosts, ids, numbers and paths: torvalds/linux (arch/x86/mm/fault.c show_fault_oops,
arch/{arm,arm64,riscv}/mm/fault.c die_kernel_fault, lib/bug.c, the die() headers of
arch/x86/kernel/dumpstack.c and arch/arm64/kernel/traps.c); open-mpi/ompi
(orte/mca/errmgr/base/help-errmgr-base.txt [node-died], the 4.x and PRRTE "lost
communication with a remote daemon", opal/mca/btl/tcp/help-mpi-btl-tcp.txt [peer hung
up]); horovod/horovod horovod/common/operations.cc SHUT_DOWN_ERROR; NVIDIA/nccl
src/transport/net_ib/p2p.cc, src/proxy.cc, src/ras/ras.cc, src/transport/net_socket.cc and
(before v2.4) src/bootstrap.cc; SchedMD/slurm src/common/slurm_errno.c (the refusals
slurm_strerror gives sbatch, srun and salloc) and src/scrun/alloc.c; kubernetes/kubernetes pkg/controller/job/job_controller.go
and pkg/kubelet/active_deadline.go, kubeflow's training operator.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, node implicated, nodes, pattern)
DECIDED = [
    # x86 since 4.20, as the node's syslog has it: the host is named.
    (
        "Mar  3 04:05:06 gpu-node-12 kernel: BUG: kernel NULL pointer dereference, address: 0000000000000008",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        ["gpu-node-12"],
        "kernel-oops",
    ),
    (
        "[  812.339051] BUG: unable to handle page fault for address: ffffc90000a3f000",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "kernel-oops",
    ),
    # Before 4.20 (and sh today): "BUG: unable to handle kernel %s at %px".
    (
        "[ 1201.1] BUG: unable to handle kernel NULL pointer dereference at 0000000000000010",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "kernel-oops",
    ),
    (
        "BUG: unable to handle kernel paging request at ffffeb04000000a0",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "kernel-oops",
    ),
    # arm64 (Grace nodes): die_kernel_fault and __die.
    (
        "[ 97.5] Unable to handle kernel NULL pointer dereference at virtual address 0000000000000028",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "kernel-oops",
    ),
    (
        "[ 97.5] Unable to handle kernel execute from non-executable memory at virtual address ffff80000a1b2c3d",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "kernel-oops",
    ),
    (
        "[ 97.6] Internal error: Oops: 0000000096000005 [#1] PREEMPT SMP",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "kernel-oops",
    ),
    # lib/bug.c, and x86's die() headers (6.11 prefixes "Oops: ").
    ("[ 55.0] kernel BUG at mm/slub.c:4234!", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, True, [], "kernel-oops"),
    ("[ 55.1] Oops: 0002 [#1] PREEMPT SMP NOPTI", C.NODE_FAILURE, L.SYSTEM_SOFTWARE, True, [], "kernel-oops"),
    (
        "kernel: [ 55.1] general protection fault, probably for non-canonical address 0xdead000000000100: 0000 [#1] "
        "SMP PTI",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "kernel-oops",
    ),
    (
        "[ 55.1] Oops: general protection fault, probably for non-canonical address 0x6b6b6b6b6b6b6b6b: 0000 [#1] SMP",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "kernel-oops",
    ),
    # A user program's general protection fault as the kernel logs it (traps.c): the process's, not the node's.
    (
        "traps: python[4021] general protection fault ip:7f3a5c0b12e4 sp:7ffd2a8c1e50 error:0 in "
        "libc.so.6[7f3a5c000000+195000]",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        False,
        [],
        "segfault",
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
        True,
        ["cn127"],
        "mpi-daemon-lost",
    ),
    # Open MPI 5 (PRRTE), and the older [node-died] text.
    ("PRTE has lost communication with a remote daemon.", C.NODE_FAILURE, L.AMBIGUOUS, True, [], "mpi-daemon-lost"),
    (
        "ORTE has lost communication with its daemon located on node:\n\n  hostname:  cn044\n",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        True,
        [],
        "mpi-daemon-lost",
    ),
    # Horovod's shutdown as TensorFlow and PyTorch surface it.
    (
        "tensorflow.python.framework.errors_impl.UnknownError: Horovod has been shut down. This was caused by an "
        "exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the "
        "ranks finished execution. If the shutdown was caused by an exception, you should see the exception in the "
        "log before the first shutdown message.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "peer-runtime-lost",
    ),
    (
        "horovod.common.exceptions.HorovodInternalError: Horovod has been shut down. This was caused by an exception "
        "on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the ranks "
        "finished execution.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "peer-runtime-lost",
    ),
    # ... and the failing rank's own error, in the same excerpt, decides.
    (
        "[1,3]<stderr>:KeyError: 'labels'\n"
        "[1,0]<stderr>:tensorflow.python.framework.errors_impl.AbortedError: Horovod has been shut down. This was "
        "caused by an exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after "
        "one of the ranks finished execution.",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "python-keyerror",
    ),
    # Open MPI's TCP BTL: the peer hung up.
    (
        "An MPI communication peer process has unexpectedly disconnected.  This\n"
        "usually indicates a failure in the peer process (e.g., a crash or\n"
        "otherwise exiting without calling MPI_FINALIZE first).",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "peer-runtime-lost",
    ),
    # NCCL 2.27+: the CQE error before the status it logs; the status line decides the layer.
    (
        "gpu-07:4100:4180 [3] NCCL WARN NET/IB: Got CQE with error (devIndex=0, req=0x7f3a10, comm=0x7f3b20 (send), "
        "wr_id=140, qp_num=4711)",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "nccl-remote-error",
    ),
    (
        "gpu-07:4100:4180 [3] NCCL WARN NET/IB: Got CQE with error (devIndex=0, req=0x7f3a10, comm=0x7f3b20 (send), "
        "wr_id=140, qp_num=4711)\n"
        "gpu-07:4100:4180 [3] NCCL WARN NET/IB: Got completion from peer 10.0.0.4<54321> with status=IBV_WC_RETRY_EXC_ERR"
        "(12) opcode=IBV_WC_SEND(0) vendor_err=129 localGid ::ffff:10.0.0.7 remoteGids ::ffff:10.0.0.4 hca mlx5_0",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        True,
        ["gpu-07"],
        "nccl-ib-completion-error",
    ),
    # NCCL's proxy on an aborted communicator: the cascade of an abort elsewhere.
    (
        "gpu-07:4100:4180 [3] NCCL WARN Comm 0x55d1c0a0 is in abort state",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "nccl-error-other",
    ),
    # Ranks that disagree: NCCL versions across nodes, and collective sizes.
    (
        "gpu-07:4100:4180 [3] NCCL WARN NCCL version mismatch with remote peer 10.0.0.3<45678> (local: 2.21.5, "
        "remote 2.18.1)",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "nccl-invalid-usage",
    ),
    (
        "gpu-07:4100:4180 [3] NCCL WARN NET/Socket : peer 10.0.0.3<45678> message truncated : receiving 1048576 bytes "
        "instead of 65536. If you believe your socket network is in a healthy state, there may be a mismatch in "
        "collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between ranks",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "nccl-invalid-usage",
    ),
    (
        "gpu-07:4100:4180 [3] NCCL WARN Message truncated : received 2048 bytes instead of 4096",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "nccl-invalid-usage",
    ),
    # slurm_errno.c's refusals as sbatch, srun and salloc print them: a wrong request, a refusal by policy,
    # nodes held for maintenance; and scrun's ends of a container job.
    *[
        (
            f"sbatch: error: Batch job submission failed: {text}",
            C.SCHEDULER_LIMIT,
            L.APPLICATION,
            False,
            [],
            "slurm-step-config",
        )
        for text in (
            "No partition specified or system default partition",
            "Requested nodes not in this partition",
            "Time limit specification required, but not provided",
            "Duplicate generic resource (gres) specification",
            "Multiple partition job request not supported when a partition is set in the association",
        )
    ],
    (
        "srun: error: Unable to create step for job 4242: Insufficient GRES available in allocation",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        False,
        [],
        "slurm-step-config",
    ),
    *[
        (
            f"salloc: error: Job submit/allocate failed: {text}",
            C.SCHEDULER_LIMIT,
            L.SCHEDULER,
            False,
            [],
            "slurm-policy-limit",
        )
        for text in (
            "User's group not permitted to use this partition",
            "Access denied to requested reservation",
            "Burst Buffer permission denied",
            "Burst Buffer resource limit exceeded",
        )
    ],
    (
        "srun: error: Unable to allocate resources: Job can not start due to maintenance reservation.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-resources-unavailable",
    ),
    (
        "scrun: error: Job killed due hitting max wall clock limit",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-time-limit",
    ),
    ("scrun: error: Job killed due node failure", C.NODE_FAILURE, L.HARDWARE, False, [], "slurm-job-node-fail"),
    # Kubernetes' activeDeadlineSeconds: the Job controller's condition, the kubelet's, kubeflow's.
    (
        "  Warning  DeadlineExceeded  2m  job-controller  Job was active longer than specified deadline",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-time-limit",
    ),
    (
        "    message: Pod was active on the node longer than the specified deadline",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-time-limit",
    ),
    (
        'time="2024-05-01T10:00:00Z" level=info msg="Job llama-ft has failed because it was active longer than '
        'specified deadline"',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-time-limit",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "implicated", "nodes", "pattern"), DECIDED)
def test_source_lines_decide_by_their_pattern(catalogue, matcher, text, cls, layer, implicated, nodes, pattern):
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer, got.pattern) == (cls, layer, pattern)
    assert (got.node_implicated, got.nodes) == (implicated, nodes)


# Lines from the same sources, and their neighbours, that say no node or peer failed.
BENIGN = [
    # An application's own "Oops" and "Internal error" (die's header has a hex code and a [#n] counter).
    "Oops: something went wrong while saving the figure, retrying",
    "Internal error: 0x1f (see the log)",
    # Open MPI's help texts that are warnings, and its daemon lines out of their message.
    "WARNING: Open MPI accepted a TCP connection from what appears to be a",
    "  hostname:  cn044",
    "  HNP daemon   : [[16919,0],0] on node cn031",
    # Horovod's healthy lines and its uninitialised state (a usage error elsewhere, not a lost peer).
    "[1,0]<stdout>:Horovod initialized: rank 0, size 8",
    # NCCL's INFO about a connect it retries, and the IB resiliency failing over (it recovers).
    "gpu-07:4100:4180 [3] NCCL INFO ncclOsSocketStartConnect: connect to 10.0.0.3<45678> returned Connection refused, "
    "retrying (1/34) after sleep for 100 msec",
    # srun waiting for busy nodes (a retry), and Slurm's reservation and partition INFO.
    "srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)",
    "srun: job 4242 queued and waiting for resources",
    # Kubernetes' other Job conditions and a deadline being set, not exceeded.
    "  Normal   Completed  1m  job-controller  Job completed",
    "I0501 10:00:00.000000       1 job_controller.go:512] Job has activeDeadlineSeconds configuration. Will sync this "
    "job again in 3600s",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
