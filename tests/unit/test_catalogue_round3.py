"""Round 3 of the catalogue (issue 11): families written from their sources, not from misses.

Lines are written for these tests from the format strings of the software that
prints them (Horovod horovod/common/stall_inspector.cc; py-spy's dump; CPython
Modules/faulthandler.c; PyTorch ProcessGroupNCCL.cpp and
torch/distributed/elastic/multiprocessing/errors; Linux
drivers/net/ethernet/mellanox/mlx5/core/{health.c,cmd.c,en_main.c}, net/sched/sch_generic.c,
drivers/infiniband/ulp/ipoib/ipoib_main.c, drivers/net/bonding/bond_main.c; NVIDIA
Fabric Manager and the NVSwitch driver; Slurm src/common/slurm_errno.c and
src/scancel/scancel.c), with made-up hosts, ranks and numbers.
"""

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass

C = FailureClass
L = CauseLayer


def test_a_horovod_stall_report_is_a_hang_blaming_no_host(catalogue, matcher):
    text = "\n".join(
        [
            "[2031-05-02 08:00:00.000001: W /build/horovod/common/stall_inspector.cc:107] One or more tensors were "
            "submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of "
            "ranks for more than 60 seconds.",
            "Missing ranks:",
            "3: [DistributedOptimizer_Allreduce/grad_embed_0]",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.pattern, a.node_implicated) == (C.HANG, "horovod-stall", False)


def test_a_py_spy_dump_parked_in_a_collective_is_a_hang(catalogue, matcher):
    text = "\n".join(
        [
            "Process 40412: python train.py",
            "Python v3.11.9 (/usr/bin/python3.11)",
            "",
            'Thread 40412 (idle): "MainThread"',
            "    _wait_for_work (torch/distributed/distributed_c10d.py:2800)",
            "    all_reduce (torch/distributed/distributed_c10d.py:2501)",
            "    step (train.py:88)",
        ]
    )
    assert classify_text(catalogue, matcher, text).failure_class is C.HANG


def test_a_timeout_outranks_the_stack_dump_of_the_same_hang(catalogue, matcher):
    text = "\n".join(
        [
            "    all_reduce (torch/distributed/distributed_c10d.py:2501)",
            "[rank1]:[E0502 08:30:00.000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
            "600123 milliseconds before timing out.",
        ]
    )
    assert classify_text(catalogue, matcher, text).failure_class is C.COMM_TIMEOUT


def test_a_kernel_network_failure_names_the_node_of_the_syslog(catalogue, matcher):
    a = classify_text(
        catalogue, matcher, "Jun  1 04:00:00 cn31 kernel: NETDEV WATCHDOG: CPU: 7: transmit queue 5 timed out 8192 ms"
    )
    assert (a.failure_class, a.node_implicated, a.nodes) == (C.INTERCONNECT, True, ["cn31"])


def test_a_policy_refusal_is_not_retried(catalogue, matcher):
    a = classify_text(
        catalogue,
        matcher,
        "sbatch: error: AssocMaxSubmitJobLimit\nsbatch: error: Batch job "
        "submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or "
        "time limits)",
    )
    assert (a.failure_class, a.cause_layer, a.recoverable_by_restart) == (C.SCHEDULER_LIMIT, L.SCHEDULER, False)
