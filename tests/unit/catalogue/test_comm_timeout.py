"""runbooks/comm_timeout.yaml: collectives and peers timing out, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: PyTorch's ProcessGroupNCCL.cpp (the watchdog, heartbeatMonitor, the flight recorder and
its dump signal, the blocking wait in each version's wording: torch 1.x synchronizeInternal, then
WorkNCCL's wait with each suffix it printed); torch/csrc/distributed/rpc's kRpcTimeoutErrorStr;
gloo's GLOO_ERROR_MSG("Read timeout ", peer); NCCL's results as PyTorch prints them; XLA's
rendezvous.cc and JAX's barriers; TensorFlow's base_collective_executor.cc StartAbort; Ascend CANN
hcomm's EI0002, the runtime's fftsplus timeout, ACL 507048 and torch_npu's NPUStream.cpp;
PaddlePaddle's grpc_client.cc; Horovod's stall_inspector.cc with a timeout behind it.
"""

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # ProcessGroupNCCL.cpp heartbeatMonitor: a peer flagged a timeout on the store.
    (
        "[rank5]:[E0201 10:00:00.000 ProcessGroupNCCL.cpp:1380] [PG 0 Rank 5] Received a global timeout from "
        "another rank and will start to dump the debug info.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-dump-signal",
    ),
    # XLA's rendezvous: the stall warning, then the termination (glog's file name says "rendezvous").
    (
        "E0301 10:00:20.000000 4242 rendezvous.cc:38] This thread has been waiting for 10 seconds and may be stuck:\n"
        "E0301 10:00:50.000000 4242 rendezvous.cc:44] Termination timeout of 30 seconds exceeded. Exiting to ensure "
        "a consistent program state.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "xla-rendezvous-timeout",
    ),
    # The abort that carries the watchdog's timeout, wrapped where issues wrap it.
    (
        "RuntimeError: NCCL communicator was aborted on rank 5.  Original reason for failure was: [Rank 5] Watchdog "
        "caught collective \noperation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, Timeout(ms)=600000) ran for "
        "600321 milliseconds before timing out.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    # The neighbours each must leave alone.
    # a barrier inside the job is a collective's timeout
    (
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: sync_global_devices",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "collective-recv-timeout",
    ),
    # ProcessGroupNCCL's blocking wait timing out, in each version's wording.
    (
        "RuntimeError: [Rank 2] Caught collective operation timeout: WorkNCCL(OpType=ALLGATHER, "
        "TensorShape=[4096], Timeout(ms)=60000) ran for 60417 milliseconds before timing out.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    (
        "RuntimeError: [Rank 2] Work WorkNCCL(SeqNum=7, OpType=SEND, TensorShape=[4096], Timeout(ms)=60000) "
        "timed out in blocking wait (NCCL_BLOCKING_WAIT=1).",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    (
        "torch.distributed.DistBackendError: [PG 0 Rank 2] Work WorkNCCL(SeqNum=7, OpType=_ALLGATHER_BASE, "
        "NumelIn=4096, NumelOut=32768, Timeout(ms)=60000) timed out in blocking wait (TORCH_NCCL_BLOCKING_WAIT=1).",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    (
        "torch.distributed.DistBackendError: [PG ID 0 PG GUID 0(default_pg) Rank 2] Work WorkNCCL(SeqNum=7, "
        "OpType=REDUCE_SCATTER, NumelIn=32768, NumelOut=4096, Timeout(ms)=60000) timed out in blocking wait.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    # Ascend HCCL: a collective timing out (EI0002), the stream sync under it, torch_npu's code.
    (
        "EI0002: [PID: 7277] 2024-11-28-11:59:30.645.648 The wait execution of the Notify register times out. "
        "Reason: The Notify register has not received the Notify record from remote rank: [3]. base information: "
        "[streamID:[5], taskID[9], tag[AllReduce_10.0.0.1%eth0_60000_0_1]]. task information: []. group "
        "information: []",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    (
        "EE1002: 2024-09-03-16:50:00.041.231 Stream synchronize timeout. rtDeviceSynchronize execute failed, "
        "reason=[stream sync timeout]",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    (
        "npuSynchronizeDevice:torch_npu/csrc/core/npu/NPUStream.cpp:370 NPU error, error code is 107020.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    # torch/csrc/distributed/rpc kRpcTimeoutErrorStr, with and without the milliseconds (1.6).
    (
        "RuntimeError: RPC ran for more than set timeout (60000 ms) and will now be marked with an error",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "torch-rpc-timeout",
    ),
    (
        "RPC ran for more than set timeout and will now be marked with an error",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "torch-rpc-timeout",
    ),
    # base_collective_executor.cc StartAbort, absl's code name and TF 2.x's older one.
    (
        "2024-01-01 10:00:00.000000: E tensorflow/core/common_runtime/base_collective_executor.cc:249] "
        "BaseCollectiveExecutor::StartAbort DEADLINE_EXCEEDED: Deadline Exceeded",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "tf-collective-deadline",
    ),
    (
        "W tensorflow/core/common_runtime/base_collective_executor.cc:217] BaseCollectiveExecutor::StartAbort "
        "Deadline exceeded: Collective ops timed out",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "tf-collective-deadline",
    ),
    # gloo's transports: GLOO_ERROR_MSG("Read timeout ", peer) with its [file:line] prefix.
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Read timeout [10.0.0.2]:41243",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "collective-recv-timeout",
    ),
    (
        "UNKNOWN: Gloo ReduceScatter failed: [external/gloo/gloo/transport/tcp/buffer.cc:72] Read timeout [::1]:38624",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "collective-recv-timeout",
    ),
    # CANN hcomm's registry titles; the runtime's fftsplus timeout and ACL 507048.
    (
        "EI9999: 2025-01-01-10:00:00.000.001 The error from device(chipId:3, dieId:0), serial number is 4, hccl "
        "fftsplus task timeout occurred during task execution, stream_id:6, sq_id:6, task_id:120, stuck notify "
        "num:2, timeout:30min(default).",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    (
        "RuntimeError: npuSynchronizeDevice:csrc/core/npu/NPUStream.cpp:400 NPU function error: "
        "AclrtSynchronizeDeviceWithTimeout, error code is 507048",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    ("[Error]: The execution of the internal task times out.", C.COMM_TIMEOUT, L.AMBIGUOUS, "hccl-exec-timeout"),
    (
        "[ERROR] HCCL(812,python):2025-01-01-10:00:00 EI0002 Communication_Error_Timeout",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
    # PaddlePaddle grpc_client.cc.
    (
        "E0101 09:00:00.000001  2201 grpc_client.cc:236] proc param error:name:[embedding_0.w_0] "
        "ep:[10.1.2.3:6174] grpc error:Deadline Exceeded",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "paddle-rpc-deadline",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # The flight recorder's INFO line once a timeout's dump is written.
    (
        "[rank3]:[I1104 10:02:11.000000 ProcessGroupNCCL.cpp:1440] [PG ID 0 PG GUID 0(default_pg) Rank 3] Finished "
        "flight recorder successfully. Output can be analyzed using the fr_trace script.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-dump-signal",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # CUDA errors inside NCCL decided by what the error says (NCCL checks.h CUDACHECK, shm.cc, nvmlwrap.cc).
    (
        "torch.distributed.DistBackendError: NCCL error in: /src/c10d/NCCLUtils.hpp:275, timeout, NCCL version 2.27.3",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "collective-recv-timeout",
    ),
    # PyTorch c10d and elastic.
    (
        "[rank2]:[E101 10:00:00.000 ProcessGroupNCCL.cpp:832] [Rank 2] To avoid data inconsistency, we are taking the "
        "entire process down.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    (
        "[PG ID 0 PG GUID 0(default_pg) Rank 1] Heartbeat monitor timed out! Process will be terminated after dumping "
        "debug info. workMetaList_.size()=2",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-stuck",
    ),
    (
        "[rank6]:[E101 10:00:01.000 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0(default_pg) Rank 6] Observed flight "
        "recorder dump signal from another rank via TCPStore.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-dump-signal",
    ),
    # The flight recorder's own lines are comm_timeout's (the taxonomy names dump signals there).
    (
        "[rank6]:[E0502 08:00:00.000000 ProcessGroupNCCL.cpp:700] Stack trace of the failed collective not found, "
        "potentially because FlightRecorder is disabled.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-dump-signal",
    ),
    (
        "[rank6]:[E0502 08:00:00.000000 ProcessGroupNCCL.cpp:2150] [PG ID 0 PG GUID 0(default_pg) Rank 6] First PG "
        "on this rank to signal dumping.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-dump-signal",
    ),
    # Round 28: c10::Error's backtrace when the watchdog raised the timeout (ProcessGroupNCCL.cpp).
    (
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        "std::ratio<1l, 1000l> > >) + 0x1d2 (0x7f0a1c2f38f2 in /opt/torch/lib/libtorch_cuda.so)",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "nccl-watchdog-timeout",
    ),
    # Round 29: gloo's own timeout closing the pair (pair.cc, unbound_buffer.cc).
    ("RuntimeError: Application timeout caused pair closure", C.COMM_TIMEOUT, L.AMBIGUOUS, "collective-recv-timeout"),
    # Round 33: the trace's other codes stay here (3: ncclInternalError).
    (
        "host4:5892:6289 [2] NCCL INFO misc/socket.cc:47 -> 3",
        C.COMM_TIMEOUT,
        L.SYSTEM_SOFTWARE,
        "nccl-error-return-trace",
    ),
    # Round 39: XGBoost's rabit waiting on a peer's socket (socket.h PollHelper).
    (
        "xgboost.core.XGBoostError: [23:55:55] /work/rabit/include/rabit/internal/socket.h:170: Poll timeout",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "collective-recv-timeout",
    ),
    # Round 47: Megascale seeing no progress across slices.
    (
        "Megascale hang detected: Timed out waiting for 2 graphs to complete at launch_id 4242. Already completed: 64. "
        "StepGloballyInProgress: true. Timeout: 5m",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "xla-rendezvous-timeout",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BENIGN: list[str] = [
    # The flight recorder configured, not dumping.
    "[rank0]:[I ProcessGroupNCCL.cpp:913] [PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL initialization options: "
    "size: 8, global rank: 0, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_DUMP_ON_TIMEOUT: 1, "
    "TORCH_NCCL_TRACE_BUFFER_SIZE: 2000",
    # ProcessGroupNCCL's options at init, with the blocking wait on.
    "[I ProcessGroupNCCL.cpp:587] [Rank 0] ProcessGroupNCCL initialized with following options:",
    "NCCL_BLOCKING_WAIT: 1",
    "[I ProcessGroupNCCL.cpp:500] [Rank 0] NCCL_BLOCKING_WAIT and NCCL_ASYNC_ERROR_HANDLING should not both be "
    "enabled. Only NCCL_BLOCKING_WAIT is being used in this process.",
    # HCCL's timeouts set, not hit.
    "export HCCL_CONNECT_TIMEOUT=1200",
    # The end of a dataset through the same StartAbort line.
    "W tensorflow/core/common_runtime/base_collective_executor.cc:217] BaseCollectiveExecutor::StartAbort Out of "
    "range: End of sequence",
    "BaseCollectiveExecutor::StartAbort OUT_OF_RANGE: End of sequence",
    # The RPC timeout configured, not hit.
    "rpc_backend_options = TensorPipeRpcBackendOptions(rpc_timeout=180)",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


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


def test_tf_deadline_outranks_the_collective_abort_that_wraps_it(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "E base_collective_executor.cc:249] BaseCollectiveExecutor::StartAbort DEADLINE_EXCEEDED: Deadline Exceeded\n"
        "UnavailableError: Collective ops is aborted by: Deadline Exceeded",
    )
    assert got.pattern == "tf-collective-deadline"
