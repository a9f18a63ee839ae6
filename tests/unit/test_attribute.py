import pytest

from respawn.attribution.attribute import attribute, classify_text
from respawn.wire.evidence import LogLine
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._evidence import evidence

XID_79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus."
TIMEOUT = (
    "[rank{r}]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective "
    "operation timeout: WorkNCCL(SeqNum=88, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600231 "
    "milliseconds before timing out."
)


def test_demo_xid_blames_the_node_of_the_rank(catalogue, matcher):
    ev = evidence(
        "[rank0]: step 40 loss 0.91",
        f"[rank1]: {XID_79}",
        "[rank1]: RuntimeError: CUDA error: unspecified launch failure",
        TIMEOUT.format(r=0),
        kernel={"node2": [f"[ 1234.567890] {XID_79}"]},
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.GPU_HARDWARE and a.cause_layer is CauseLayer.HARDWARE
    assert a.node_implicated and a.nodes == ["node2"]
    assert a.recoverable_by_restart is True and a.pattern == "xid-fatal"


def test_kernel_xid_alone_implicates_its_node(catalogue, matcher):
    ev = evidence(
        "RuntimeError: CUDA error: unspecified launch failure",
        kernel={"node3": [f"[ 99.1] {XID_79}"], "node1": ["[ 12.0] eth0: link up"]},
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.GPU_HARDWARE and a.nodes == ["node3"]


def test_untagged_job_xid_finds_its_node_by_pci_bus_in_kernel_logs(catalogue, matcher):
    ev = evidence(
        "NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python, An uncorrectable double bit error (DBE)",
        kernel={
            "node3": ["[ 5.0] NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python, DBE"],
            "node1": ["[ 5.0] NVRM: Xid (PCI:0000:af:00): 13, pid=1, name=python, Graphics Exception"],
        },
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.GPU_HARDWARE and a.nodes == ["node3"]


def test_kernel_lines_of_other_nodes_are_ignored(catalogue, matcher):
    ev = evidence("[rank0]: step 3", kernel={"node9": [f"[ 1.0] {XID_79}"]})
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.PROCESS_CRASH and a.pattern is None


def test_demo_keyerror_is_an_application_error_without_node(catalogue, matcher):
    ev = evidence(
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/work/workload/train.py", line 120, in <module>',
        '[rank0]:     target = batch["labels"]',
        "[rank0]: KeyError: 'labels'",
        TIMEOUT.format(r=1),
        "[rank2]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 2.",
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.APP_ERROR and a.cause_layer is CauseLayer.APPLICATION
    assert not a.node_implicated and a.nodes == []
    assert a.recoverable_by_restart is False and a.pattern == "python-keyerror"
    assert a.line == "[rank0]: KeyError: 'labels'"


def test_demo_nccl_ib_completion_error_blames_the_named_host(catalogue, matcher):
    line = (
        "node2:12345:12399 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<58923> with error 12, "
        "opcode 0, len 0, vendor err 129 (Recv)"
    )
    a = attribute(catalogue, matcher, evidence(f"[rank1]: {line}", TIMEOUT.format(r=0)))
    assert a.failure_class is FailureClass.INTERCONNECT and a.nodes == ["node2"] and a.node_implicated
    assert a.pattern == "nccl-ib-completion-error"
    # The same line with no host prefix cannot say which end failed.
    bare = attribute(
        catalogue,
        matcher,
        evidence("NET/IB : Got completion from peer 10.0.0.3<58923> with status=12 opcode=0 len=0 vendor err 129"),
    )
    assert bare.failure_class is FailureClass.COMM_ERROR and not bare.node_implicated


def test_a_peer_address_is_not_a_suspect(catalogue, matcher):
    # "node3" appears only as the peer the connection was to.
    a = attribute(
        catalogue,
        matcher,
        evidence("[rank1]: RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection closed by peer [node3]:4321"),
    )
    assert a.failure_class is FailureClass.COMM_ERROR and not a.node_implicated and a.nodes == []


def test_hosts_outside_the_allocation_are_never_blamed(catalogue, matcher):
    line = "othernode:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.3<1> with error 12, opcode 0"
    a = attribute(catalogue, matcher, evidence(line))
    assert a.failure_class is FailureClass.INTERCONNECT and a.node_implicated and a.nodes == []


# Patterns that name a host (rounds 26-28), as a job's output could print them: the host outside the attempt's allocation is never blamed, the one inside is.
NAMING_A_HOST = [
    ("[2019-05-02T08:00:01.123] error: Setting node {host} state to DRAIN", "slurm-node-invalid"),
    (
        "(raylet) agent.py:217 -- Raylet is terminated: ip={host}, id=ab12. Termination is unexpected.",
        "ray-raylet-died",
    ),
    (
        '<error> [2024-02-19 05:09:33] agent crashed  address="10.0.0.9" component="agent" '
        'error="agent failed to reconnect by deadline" id="{host}" resource-pool="a100"',
        "determined-agent-lost",
    ),
    ("[2026-03-01T10:00:00.003] update_node: node {host} reason set to: Low RealMemory", "slurm-node-invalid"),
    ("03/01/2026 10:00:01  S    unable to run job, send to MOM '{host}' failed", "pbs-mom-unreachable"),
    # Round 59: Grid Engine's scheduling info; round 57: Flux's shell left with unkillable processes.
    (
        '    scheduling info:  queue instance "all.q@{host}" dropped because it is temporarily not available',
        "sge-queue-unavailable",
    ),
    (
        "3.201s: job.exception f8ez type=exec severity=0 shell exited with unkillable processes on {host} (rank 6)",
        "slurm-node-failure",
    ),
]


@pytest.mark.parametrize(("line", "pattern"), NAMING_A_HOST, ids=[p for _, p in NAMING_A_HOST])
def test_a_named_host_is_blamed_only_inside_the_allocation(catalogue, matcher, line, pattern):
    outside = attribute(catalogue, matcher, evidence(line.format(host="gpu999")))
    inside = attribute(catalogue, matcher, evidence(line.format(host="node2")))
    assert outside.pattern == inside.pattern == pattern
    assert outside.nodes == [] and inside.nodes == ["node2"]


def test_fqdn_host_maps_to_the_short_node_name(catalogue, matcher):
    line = "node3.cluster.local:1:2 [1] NCCL WARN NET/IB : mlx5_1:1 Got async event : port error"
    assert attribute(catalogue, matcher, evidence(line)).nodes == ["node3"]


def test_gpu_oom_on_one_rank_beats_dump_signals_on_others(catalogue, matcher):
    ev = evidence(
        "[rank0]:[E1 ProcessGroupNCCL.cpp:1] [Rank 0] Received a dump signal due to a collective timeout",
        TIMEOUT.format(r=2),
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.",
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.GPU_OOM and a.recoverable_by_restart is False


def test_earliest_rank_decides_among_equals(catalogue, matcher):
    ev = evidence("[rank2]: KeyError: 'first'", "[rank0]: KeyError: 'second'")
    assert attribute(catalogue, matcher, ev).line == "[rank2]: KeyError: 'first'"


def test_traceback_frames_are_not_read_as_errors(catalogue, matcher):
    ev = evidence(
        "Traceback (most recent call last):",
        '  File "/opt/train.py", line 12, in step',
        "    except torch.cuda.OutOfMemoryError:  # uncorrectable ECC error encountered",
        '  File "/opt/data.py", line 40, in load',
        "    raise FileNotFoundError(path)",
        "FileNotFoundError: /data/shard-0007.bin",
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.APP_ERROR and a.pattern == "python-exception"


# A clean-up the program printed and went on from: multiprocessing's finalizer removing a
# directory on NFS whose deleted file a reader still holds (the client's silly-rename).
NFS_CLEAN_UP = (
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3.10/multiprocessing/util.py", line 300, in _run_finalizers',
    "    finalizer()",
    "OSError: [Errno 16] Device or resource busy: '/scratch/tmp/pymp-x1/.nfs00000000a1b2c3d400000017'",
)
# CPython's unraisable hook: an exception raised in __del__, printed and ignored.
IGNORED = (
    "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3c2a1b5e50>",
    "Traceback (most recent call last):",
    '  File "/opt/venv/lib/python3.11/site-packages/torch/utils/data/dataloader.py", line 1479, in __del__',
    "    self._shutdown_workers()",
)


@pytest.mark.parametrize(
    "block",
    [
        NFS_CLEAN_UP,
        (*IGNORED, "AttributeError: '_MultiProcessingDataLoaderIter' object has no attribute '_workers_status'"),
        IGNORED,  # cut off before its exception line: the notice still says Python ignored it
        (
            "Error in atexit._run_exitfuncs:",
            "Traceback (most recent call last):",
            "  File ...",
            "    f()",
            "ValueError: x",
        ),
        ("--- Logging error ---", "Traceback (most recent call last):", "  File ...", "    self.flush()", "OSError: x"),
        # An exception no Python code raised is printed without frames: the notice, then its line.
        (
            "Exception ignored in: <_io.TextIOWrapper name='<stdout>' mode='w' encoding='utf-8'>",
            "BrokenPipeError: [Errno 32] Broken pipe",
        ),
        # Round 48: a library logging the traceback of an optional import as its message's text, under
        # srun --label's tags.
        (
            "3: Import of fused_gelu from megatron.core.fusions.fused_bias_gelu failed with: Traceback (most recent "
            "call last):",
            '3:   File "/opt/nemo/nemo/utils/import_utils.py", line 319, in safe_import_from',
            "3:     return getattr(imported_module, symbol), True",
            "3:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            "3: AttributeError: module 'megatron.core.fusions.fused_bias_gelu' has no attribute 'fused_gelu'",
        ),
    ],
)
def test_a_traceback_a_benign_pattern_vetoes_is_no_failure(catalogue, matcher, block):
    ok = attribute(catalogue, matcher, evidence(*block, "step 41 loss 0.88", job_state="COMPLETED", exit_code=0))
    assert ok.failure_class is FailureClass.BENIGN
    assert classify_text(catalogue, matcher, "\n".join(block)).failure_class is FailureClass.BENIGN
    # In a failed attempt the failure stays unknown, not the clean-up's.
    failed = attribute(catalogue, matcher, evidence(*block))
    assert failed.failure_class is FailureClass.PROCESS_CRASH and failed.pattern is None


def test_an_ignored_traceback_still_reads_a_specific_exception(catalogue, matcher):
    ev = evidence(*IGNORED, "RuntimeError: CUDA error: an illegal memory access was encountered")
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.GPU_FAULT and a.pattern is not None
    # Without frames too: the notice vetoes only up to its own priority.
    ev = evidence("Error in atexit._run_exitfuncs:", "OSError: [Errno 116] Stale file handle")
    assert attribute(catalogue, matcher, ev).pattern == "stale-file-handle"


def test_a_frameless_exception_needs_the_notice_right_before_it(catalogue, matcher):
    ev = evidence(
        "Exception ignored in: <function Pool.__del__ at 0x7f00deadbeef>",
        "step 41 loss 0.88",
        "BrokenPipeError: [Errno 32] Broken pipe",
        job_state="COMPLETED",
        exit_code=0,
    )
    assert attribute(catalogue, matcher, ev).pattern == "connection-lost"


@pytest.mark.parametrize(
    "block",
    [
        # A warning is vetoed on its own line, not over the traceback after it.
        ("UserWarning: the dataset is small", "Traceback (most recent call last):", '  File "/opt/t.py", line 3'),
        # Another rank's notice says nothing of this rank's traceback.
        (
            "[rank1]: Exception ignored in: <function Pool.__del__ at 0x7f00deadbeef>",
            "[rank0]: Traceback (most recent call last):",
            '[rank0]:   File "/opt/t.py", line 3, in <module>',
            "[rank1]: Traceback (most recent call last):",
            "[rank0]:     main()",
            "[rank0]: ValueError: shapes (3,) and (4,) not aligned",
        ),
        # The notice must be the line just before the block in its stream.
        (
            "Exception ignored in: <function Pool.__del__ at 0x7f00deadbeef>",
            "step 41 loss 0.88",
            "Traceback (most recent call last):",
            '  File "/opt/t.py", line 3, in <module>',
            "ValueError: shapes (3,) and (4,) not aligned",
        ),
        # A message that printed a traceback as its text says nothing of it unless a benign pattern knows it.
        (
            "Scheduler hit an exception: Traceback (most recent call last):",
            '  File "/opt/t.py", line 3, in <module>',
            "ValueError: shapes (3,) and (4,) not aligned",
        ),
        # The import notice opens only the traceback it printed: one after it has its own header.
        (
            "Import of apex failed with: Traceback (most recent call last):",
            '  File "/opt/t.py", line 3, in <module>',
            "ModuleNotFoundError: No module named 'apex'",
            "Traceback (most recent call last):",
            '  File "/opt/t.py", line 9, in <module>',
            "ValueError: shapes (3,) and (4,) not aligned",
        ),
    ],
)
def test_other_tracebacks_still_count(catalogue, matcher, block):
    a = attribute(catalogue, matcher, evidence(*block, job_state="COMPLETED", exit_code=0))
    assert a.failure_class is FailureClass.APP_ERROR


def test_a_tagged_exception_line_right_under_a_frame_header_is_read(catalogue, matcher):
    # PyTorch's tag leaves a space before every line ("[rank0]: ..."): that space is not indentation, so
    # an exception line printed right under a frame whose source Python could not show is no frame line.
    ev = evidence(
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "<frozen runpy>", line 198, in _run_module_as_main',
        "[rank0]: ValueError: unknown optimizer 'adamw8'",
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.APP_ERROR and a.pattern == "python-exception"


def test_the_search_for_an_exception_line_passes_over_a_bounded_number_of_other_ranks_lines(catalogue, matcher):
    # Each header passes over at most 64 lines of other ranks: a job printing headers under many rank
    # tags cannot make its own attribution quadratic. Past the bound the header counts, as a cut-off one.
    def block(others: int) -> list[str]:
        lines = [f"[rank0]: {NFS_CLEAN_UP[0]}", f"[rank0]: {NFS_CLEAN_UP[1]}"]
        lines += [f"[rank1]: step {n} loss 0.5" for n in range(others)]
        return [*lines, f"[rank0]: {NFS_CLEAN_UP[3]}", "step 42 loss 0.5"]

    near = attribute(catalogue, matcher, evidence(*block(10), job_state="COMPLETED", exit_code=0))
    assert near.failure_class is FailureClass.BENIGN
    far = attribute(catalogue, matcher, evidence(*block(70), job_state="COMPLETED", exit_code=0))
    assert far.failure_class is FailureClass.APP_ERROR and far.pattern == "python-traceback"


def test_a_message_that_opened_a_traceback_is_searched_for_within_a_bounded_number_of_lines(catalogue, matcher):
    # Round 49: from an exception line, the message that printed the traceback is looked for among the 64
    # lines before it, whatever their rank: a job printing many failure lines under many rank tags pays no
    # more per line than that. Past the bound the exception counts.
    def block(others: int) -> list[str]:
        lines = [
            "[rank0]: Import of apex failed with: Traceback (most recent call last):",
            '[rank0]:   File "/opt/t.py", line 3, in <module>',
        ]
        lines += [f"[rank1]: step {n} loss 0.5" for n in range(others)]
        return [*lines, "[rank0]: ModuleNotFoundError: No module named 'apex'", "step 42 loss 0.5"]

    near = attribute(catalogue, matcher, evidence(*block(10), job_state="COMPLETED", exit_code=0))
    assert near.failure_class is FailureClass.BENIGN
    far = attribute(catalogue, matcher, evidence(*block(70), job_state="COMPLETED", exit_code=0))
    assert far.failure_class is FailureClass.APP_ERROR


def test_down_nodes_mean_node_failure_on_them(catalogue, matcher):
    ev = evidence(
        TIMEOUT.format(r=0),
        "[rank0]: RuntimeError: Connection reset by peer",
        job_state="NODE_FAIL",
        down_nodes=["node3"],
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.NODE_FAILURE and a.nodes == ["node3"] and a.node_implicated


def test_job_state_decides_when_the_log_is_silent(catalogue, matcher):
    timeout = attribute(catalogue, matcher, evidence("[rank0]: step 9", job_state="TIMEOUT", exit_code=0))
    assert timeout.failure_class is FailureClass.SCHEDULER_LIMIT and timeout.recoverable_by_restart is True
    oom = attribute(catalogue, matcher, evidence("[rank0]: step 9", job_state="OUT_OF_MEMORY"))
    assert oom.failure_class is FailureClass.HOST_OOM


def test_user_cancel_is_not_recoverable(catalogue, matcher):
    a = attribute(
        catalogue,
        matcher,
        evidence("slurmstepd: error: *** JOB 12 ON node1 CANCELLED AT 2030-01-01T10:00:00 ***", job_state="CANCELLED"),
    )
    assert a.failure_class is FailureClass.SCHEDULER_LIMIT and a.recoverable_by_restart is False


def test_time_limit_outranks_the_errors_its_kill_provokes(catalogue, matcher):
    a = attribute(
        catalogue,
        matcher,
        evidence(
            "[rank0]: RuntimeError: [gloo] Connection closed by peer [10.0.0.2]:99",
            "slurmstepd: error: *** JOB 12 ON node1 CANCELLED AT 2030-01-01T10:00:00 DUE TO TIME LIMIT ***",
        ),
    )
    assert a.failure_class is FailureClass.SCHEDULER_LIMIT and a.pattern == "slurm-time-limit"


def test_oom_kill_outranks_slurms_cancel(catalogue, matcher):
    a = attribute(
        catalogue,
        matcher,
        evidence(
            "slurmstepd: error: Detected 1 oom_kill event in StepId=12.0. Some of the step tasks have been OOM Killed.",
            "slurmstepd: error: *** STEP 12.0 ON node2 CANCELLED AT 2030-01-01T10:00:00 ***",
        ),
    )
    assert a.failure_class is FailureClass.HOST_OOM and not a.node_implicated


def test_killed_task_offers_its_node_for_recurrence(catalogue, matcher):
    a = attribute(catalogue, matcher, evidence("srun: error: node2: task 1: Killed", exit_code=137))
    assert a.failure_class is FailureClass.PROCESS_CRASH and a.pattern == "srun-task-signalled"
    # The decision blames it only if the same class struck node2 before.
    assert a.node_implicated and a.nodes == ["node2"]
    text = classify_text(catalogue, matcher, "srun: error: node2: task 1: Killed")
    assert not text.node_implicated and text.nodes == []


def test_exit_by_signal_is_read_from_the_exit_code(catalogue, matcher):
    a = attribute(catalogue, matcher, evidence("[rank0]: step 3", exit_code=139))
    assert a.failure_class is FailureClass.PROCESS_CRASH and a.pattern == "exit-by-signal"


def test_unmatched_failure_falls_back_to_process_crash(catalogue, matcher):
    a = attribute(catalogue, matcher, evidence("[rank0]: step 3", exit_code=1))
    assert a.failure_class is FailureClass.PROCESS_CRASH and a.cause_layer is CauseLayer.AMBIGUOUS
    assert a.pattern is None and a.recoverable_by_restart is None
    assert "exit code 1" in (a.line or "")


def test_unknown_failure_text_is_reported_as_unknown_with_its_last_lines(catalogue, matcher):
    ev = evidence("[rank0]: step 3", exit_code=1)
    ev.lines += [LogLine(text=f"[rank0]: frobnicator said {i}", seq=i + 1) for i in range(20)]
    a = attribute(catalogue, matcher, ev)
    assert a.unknown and a.pattern is None
    assert a.last_lines[-1] == "[rank0]: frobnicator said 19" and len(a.last_lines) == 10
    matched = attribute(catalogue, matcher, evidence("RuntimeError: CUDA error: uncorrectable ECC error encountered"))
    assert not matched.unknown and matched.last_lines == []


def test_running_job_with_nothing_wrong_is_benign(catalogue, matcher):
    a = attribute(catalogue, matcher, evidence("[rank0]: step 3", job_state="RUNNING", exit_code=None))
    assert a.failure_class is FailureClass.BENIGN and a.pattern is None


def test_rank_field_set_by_the_gatherer_is_used(catalogue, matcher):
    ev = evidence()
    ev.lines = [LogLine(text="RuntimeError: CUDA error: uncorrectable ECC error encountered", rank=2, seq=0)]
    assert attribute(catalogue, matcher, ev).nodes == ["node3"]


def test_srun_label_tags_a_rank(catalogue, matcher):
    a = attribute(catalogue, matcher, evidence("1: RuntimeError: CUDA error: uncorrectable ECC error encountered"))
    assert a.nodes == ["node2"]


def test_syslog_host_is_named(catalogue, matcher):
    a = classify_text(
        catalogue, matcher, "Jan  3 04:05:06 gpu-a-17 kernel: [ 9.1] NVRM: Xid (PCI:0000:07:00): 79, pid=1, name=x, off"
    )
    assert a.nodes == ["gpu-a-17"] and a.node_implicated


def test_syslog_host_of_a_slurm_daemon_is_named(catalogue, matcher):
    a = classify_text(
        catalogue, matcher, "Mar  9 10:11:12 gpu-b-03 slurmd[4410]: spank-prolog: error: pyxis: failed to import image"
    )
    assert (a.failure_class, a.nodes, a.node_implicated) == (FailureClass.NODE_FAILURE, ["gpu-b-03"], True)


@pytest.mark.parametrize(
    "text",
    [
        "gpu1:7:8 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object file: "
        "No such file or directory : when loading libnccl-net.so",
        "iteration 77/900 | lm loss: 3.1E+00 | loss scale: 1.0 | number of skipped iterations: 0 | "
        "number of nan iterations: 0 |",
        "[INFO] [loss_scaler.py:1:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
        "262144, reducing to 131072",
        "/venv/lib/python3.10/site-packages/accelerate/x.py:9: FutureWarning: `foo` is deprecated\n  warnings.warn(",
        "gpu1:7:8 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM",
    ],
)
def test_benign_text_stays_benign(catalogue, matcher, text):
    a = classify_text(catalogue, matcher, text)
    assert a.failure_class is FailureClass.BENIGN and a.cause_layer is CauseLayer.BENIGN and a.pattern is None


def test_classify_text_reads_a_whole_excerpt(catalogue, matcher):
    a = classify_text(catalogue, matcher, "step 1 loss 2.0\nstep 2 loss 1.9\nKilled\n")
    assert a.failure_class is FailureClass.HOST_OOM and a.cause_layer is CauseLayer.APPLICATION
    assert a.recoverable_by_restart is None and a.pattern == "killed"


def test_hostile_text_is_bounded_in_the_audit_line(catalogue, matcher):
    a = classify_text(catalogue, matcher, "KeyError: '" + "x" * 200_000 + "'")
    assert a.failure_class is FailureClass.APP_ERROR and len(a.line or "") <= 1000


def test_frames_are_read_per_rank_when_ranks_interleave(catalogue, matcher):
    ev = evidence(
        '[rank1]:   File "/opt/train.py", line 7, in step',
        "[rank0]: step 12 loss 0.3",
        "[rank1]:     raise RuntimeError('CUDA error: an illegal memory access was encountered')",
        "[rank1]: KeyError: 'mask'",
    )
    a = attribute(catalogue, matcher, ev)
    assert a.failure_class is FailureClass.APP_ERROR and a.pattern == "python-keyerror"
