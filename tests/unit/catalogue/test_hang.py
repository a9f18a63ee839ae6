"""runbooks/hang.yaml: jobs stuck with no timeout behind them, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: Horovod's horovod/common/stall_inspector.cc; py-spy's dump; CPython's
Modules/faulthandler.c; NCCL's RAS report (src/ras/client_support.cc); nvidia-resiliency-ext's rank
monitor (fault_tolerance/rank_monitor_server.py); torchelastic's expiration timer
(file_based_local_timer); XLA's rendezvous (xla/service/rendezvous.cc).
"""

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # NCCL's RAS report (src/ras/client_support.cc): ranks behind the others, a peer lost.
    (
        "#0-0 (27a079b828ff1a75) MISMATCH\n  Communicator ranks have different AllReduce operation counts\n"
        "  7 ranks have launched up to operation 6650\n"
        "  Rank 3 has launched up to operation 6649 -- GPU 3 managed by process 1431 on node gpu-a-02",
        C.HANG,
        L.AMBIGUOUS,
        "horovod-stall",
    ),
    # nvidia-resiliency-ext's rank monitor (fault_tolerance/rank_monitor_server.py).
    ("[Cycle 2] Did not get subsequent heartbeat. Waited 1800.00 seconds.", C.HANG, L.AMBIGUOUS, "horovod-stall"),
    (
        "[Cycle 0] Section 'step' has been open for 612.40 seconds. Timeout is 600.00 seconds.",
        C.HANG,
        L.AMBIGUOUS,
        "horovod-stall",
    ),
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
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # torchelastic's expiration timer killing a worker stuck in a guarded scope.
    (
        "INFO:torch.distributed.elastic.timer.file_based_local_timer:Reaping worker_pid=[4211]. Expired timers: "
        "['train_step']",
        C.HANG,
        L.AMBIGUOUS,
        "elastic-timer-expired",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Hangs the text shows with no timeout behind them (the runbook names each source).
    (
        "[2031-05-02 08:00:00.000001: W /build/horovod/common/stall_inspector.cc:107] One or more tensors were "
        "submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks "
        "for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors",
        C.HANG,
        L.AMBIGUOUS,
        "horovod-stall",
    ),
    (
        "[2031-05-02 08:05:00.000001: E /build/horovod/common/stall_inspector.cc:105] One or more rank (marked by "
        '"!") is stalled for longer than 300 seconds. Will shutdown.',
        C.HANG,
        L.AMBIGUOUS,
        "horovod-stall",
    ),
    ("Stalled ops:grad_fc1_0 [missing ranks: 1, 6]", C.HANG, L.AMBIGUOUS, "horovod-stall"),
    ("    barrier (torch/distributed/distributed_c10d.py:4102)", C.HANG, L.AMBIGUOUS, "stack-dump-in-collective"),
    ("    all_reduce (deepspeed/comm/torch.py:155)", C.HANG, L.AMBIGUOUS, "stack-dump-in-collective"),
    ("Timeout (0:45:00)!", C.HANG, L.AMBIGUOUS, "stack-dump-in-collective"),
    # Round 41: Graphcore's runtime giving up on the IPUs' host sync.
    (
        "[06:58:00.549] [poptorch::python] [critical] RuntimeError: ERROR in poptorch/python/poptorch.cpp:722: "
        "'std::exception' exception: IPUDevice: still waiting for host sync after: 300 seconds. Use the engine "
        "option target.hostSyncTimeout to increase the timeout.",
        C.HANG,
        L.AMBIGUOUS,
        "ipu-host-sync-timeout",
    ),
    # Round 53: a CUDA extension build waiting on a stale lock.
    (
        "Warning: Lock file exists in build directory: '/home/u/.cache/torch_extensions/py39_cu113/renderutils_plugin/lock'",
        C.HANG,
        L.APPLICATION,
        "extension-build-lock-wait",
    ),
    # Round 59: vLLM's executor giving up on a worker.
    (
        "ERROR 09-06 04:14:11 [core.py:640] TimeoutError: RPC call to execute_model timed out.",
        C.HANG,
        L.AMBIGUOUS,
        "engine-rpc-timeout",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BENIGN: list[str] = [
    # slurmctld hearing from a node again, and the timer server's healthy lines.
    "INFO:torch.distributed.elastic.timer.local_timer:Successfully reaped worker=[7]",
    # XLA: the rendezvous completed after all.
    "E0301 10:00:25.000000 4242 rendezvous.cc:70] [id=0] This thread is unstuck waiting for `acquire clique` "
    "after 25.3s. Threads joined rendezvous with significant delay, system can be overloaded and theads make "
    "progess at different rate. Warning above was a false-positive. Perhaps the timeout is too short.",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    # py-spy's thread header and the torchrun agent's own wait are not a rank stuck in a collective.
    'Thread 52031 (idle): "MainThread"',
    "    _wait_for_workers (torch/distributed/elastic/agent/server/api.py:905)",
    "    wait (threading.py:331)",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


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
