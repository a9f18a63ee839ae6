"""runbooks/comm_error.yaml: communication failures, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: NVIDIA/nccl (net_ib completions and async events across versions, net_ib/connect.cc,
misc/socket.cc, os/linux.cc, proxy.cc, init.cc, graph/rings.cc, graph/connect.cc, transport/p2p.cc,
shm.cc, nvmlwrap.cc, ibvwrap.cc, plugin/net.cc, the RAS report in ras/client_support.cc);
aws-ofi-nccl's registration, endpoint and completion WARNs (nccl_ofi_net.cpp, nccl_ofi_ofiutils.cpp);
UCX's verbs calls; PyTorch c10d (ProcessGroupNCCL.cpp, TCPStore.cpp, socket.cpp) and gloo's
transport/tcp; CPython's OSError "[Errno %d] %s" with glibc's strerror texts; Horovod's
SHUT_DOWN_ERROR (operations.cc); Open MPI's TCP BTL (help-mpi-btl-tcp.txt); XLA's coordination
service (client.h, coordination_service.cc); Ascend CANN hcomm's error registry and torch_npu's
HCCL errors; oneCCL; MPI's fatal handlers; PSM2 / PSM3's psmi_assert_always; TensorFlow's
collective ops; torch.distributed's "Last error:" report of NCCL's socketProgressOpt.
"""

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # NCCL's completion status (12, the form before v2.12) copied under PyTorch's "Last error:", no host
    # prefix.
    (
        "Last error:\nNET/IB : Got completion with error 12, opcode 0, len 0, vendor err 129",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-completion-unattributed",
    ),
    # NCCL's completion WARN before v2.12 with 10 REM_ACCESS: the remote side first.
    (
        "gpu-a-07:946:988 [0] NCCL WARN NET/IB : Got completion with error 10, opcode 3, len 0, vendor err 136",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    # NCCL's RAS report (src/ras/client_support.cc): ranks behind the others, a peer lost.
    (
        "DEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
        "  Process 1431 on node gpu-a-02 managing GPU 3",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    # The neighbours each must leave alone.
    # the abort with another reason
    (
        "RuntimeError: NCCL communicator was aborted on rank 3.  Original reason for failure was: NCCL error: "
        "unhandled system error, NCCL version 2.14.3",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-system-error",
    ),
    # NCCL's connect in its wordings before socketStartConnect (v2.4-v2.9, v2.10-v2.15).
    (
        "gpu-3:100:200 [0] misc/socket.cc:456 NCCL WARN Net : Connect to 10.1.2.3<40000> failed : Connection reset "
        "by peer",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-socket-recv-failed",
    ),
    # aws-ofi-nccl refused the endpoint's resources by the provider.
    (
        "node-1:77:90 [0] nccl_net_ofi_domain_get_ep:969 NCCL WARN NET/OFI Creating new endpoint for domain "
        "0x55d0c0ffee00 failed: Invalid argument",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    (
        "node-1:77:90 [0] nccl_net_ofi_domain_t::get_ep:854 NCCL WARN NET/OFI Creating new endpoint for domain "
        "0x55d0c0ffee00 failed",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    (
        "node-1:77:90 [0] nccl_ofi_ofiutils_init_connection:447 NCCL WARN NET/OFI Couldn't create completion queue. "
        "RC: -12, ERROR: Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    (
        "node-1:77:90 [0] create_nccl_ofi_component:459 NCCL WARN NET/OFI Couldn't open AV. RC: -22, ERROR: Invalid "
        "argument",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    (
        "node-1:77:90 [0] nccl_ofi_ofiutils_init_connection:292 NCCL WARN NET/OFI Couldn't bind EP-AV. RC: -22, "
        "ERROR: Invalid argument",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    # Ascend HCCL: the links during a collective (EI0006, EI0010, EI0012, EI0013).
    (
        "[rank3]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: "
        "HcclAllreduce, error code is 6\n"
        "[rank3]: EI0006: [PID: 811] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did "
        "not send the data in time. Please check the reason for the rank being stuck",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    (
        "EI0010: P2P communication failed. Reason: peer device 3 unreachable",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    (
        "EI0012: SDMA memory copy task exception occurred. Remote rank: [5]. Base information: [streamID:[2]]. "
        "Task information: []. Communicator information: [].",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    (
        "EI0013: An error CQE occurred during operator execution. Local information: server 10.0.0.1, device ID 0, "
        "device IP 192.168.1.10. Peer information: server 10.0.0.2, device ID 0, device IP 192.168.1.20.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    # Ascend NPU memory, AMD's RAS, devices that cannot be opened.
    (
        "tensorflow.python.framework.errors_impl.UnavailableError: Collective ops is aborted by: failed to connect "
        "to all addresses",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "tf-collective-aborted",
    ),
    # HCCL's errors (its timeouts are comm_timeout's hccl-exec-timeout), oneCCL's, MPI's.
    (
        "torch.distributed.DistBackendError: HCCL function error: HcclAllreduce(inputPtr, outputPtr, numel, "
        "hcclType, hcclReduceOp, comm, stream), error code is 7",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-error",
    ),
    (
        "2024:01:01-10:00:00:(1234) |CCL_ERROR| atl_ofi.cpp:345 atl_ofi_comm_init: fi_getinfo error: ret -61",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "oneccl-error",
    ),
    (
        "Abort(474615310) on node 3 (rank 3 in comm 0): Fatal error in PMPI_Allreduce: Other MPI error, error stack:",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "mpi-call-failed",
    ),
    ("[gpu-3:01234] *** An error occurred in MPI_Allreduce", C.COMM_ERROR, L.AMBIGUOUS, "mpi-call-failed"),
    # NCCL v2.10-v2.13 socketProgressOpt, as torch's report repeats it after "Last error:".
    (
        "node2: Last error:\nnode2: Net : Call to recv from 10.0.0.2<56843> failed : Connection refused",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-socket-recv-failed",
    ),
    (
        "gpu-3:1234:5678 [0] NCCL WARN Net : Call to recv from 10.0.0.2<43120> failed : Connection reset by peer",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-socket-recv-failed",
    ),
    # Horovod's SHUT_DOWN_ERROR broken inside its first words by a log wrapper.
    (
        "W op_kernel.cc:1] OP_REQUIRES failed at mpi_ops.cc:300 : Unknown: Horovod has b\n"
        "een shut down. This was caused by an exception on one of the ranks or an attempt to allreduce, allgather "
        "or broadcast a tensor after one of the ranks finished execution. If",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
    ),
    # CANN hcomm's registry titles; the runtime's fftsplus timeout and ACL 507048.
    (
        "EI0006: Communication_Error_Get_Socket(EI0006): srcRank[10.0.0.3/1] connect destRank[10.0.0.4/0] fail",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "hccl-link-error",
    ),
    # PSM3 / PSM2 psmi_assert_always.
    (
        "gpu12:rank5: Assertion failure at psm3/ptl_ips/ips_proto.c:1733: flow->xmit_seq_num.psn_num == psn",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "psm-assertion",
    ),
    (
        "node3.4411 Assertion failure at ptl_am/am_reqrep_shmem.c:1871: len <= AMLONG_MTU",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "psm-assertion",
    ),
    # UCX's verbs calls at setup: a locked-memory limit, not the host's memory.
    (
        "[1700000000.123456] [gpu-a-01:4411:0]     ib_device.c:1040 UCX  ERROR ibv_create_cq(cqe=4096) failed: "
        "Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    (
        "[1700000000.123456] [gpu-a-01:4411:0]        ib_md.c:293  UCX  ERROR ibv_reg_mr(address=0x7f3a, "
        "length=1048576, access=0xf) failed: Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # Horovod's shutdown as TensorFlow and PyTorch surface it.
    (
        "tensorflow.python.framework.errors_impl.UnknownError: Horovod has been shut down. This was caused by an "
        "exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the "
        "ranks finished execution. If the shutdown was caused by an exception, you should see the exception in the "
        "log before the first shutdown message.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
        False,
        [],
    ),
    (
        "horovod.common.exceptions.HorovodInternalError: Horovod has been shut down. This was caused by an exception "
        "on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after one of the ranks "
        "finished execution.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
        False,
        [],
    ),
    # Open MPI's TCP BTL: the peer hung up.
    (
        "An MPI communication peer process has unexpectedly disconnected.  This\n"
        "usually indicates a failure in the peer process (e.g., a crash or\n"
        "otherwise exiting without calling MPI_FINALIZE first).",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
        False,
        [],
    ),
    # NCCL 2.27+: the CQE error before the status it logs; the status line decides the layer.
    (
        "gpu-07:4100:4180 [3] NCCL WARN NET/IB: Got CQE with error (devIndex=0, req=0x7f3a10, comm=0x7f3b20 (send), "
        "wr_id=140, qp_num=4711)",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
        False,
        [],
    ),
    # NCCL's proxy on an aborted communicator: the cascade of an abort elsewhere.
    (
        "gpu-07:4100:4180 [3] NCCL WARN Comm 0x55d1c0a0 is in abort state",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-error-other",
        False,
        [],
    ),
    # JAX's coordination service: a peer task lost (a cascade, no node from the text).
    (
        "F0301 10:00:00.000000 4242 client.h:80] Terminating process because the coordinator detected missing "
        "heartbeats. This most likely indicates that another task died; see the other task logs for more "
        "details. Status: UNAVAILABLE: Task /job:jax_worker/replica:0/task:3 heartbeat timeout. This indicates "
        "that the remote task has failed, got preempted, or crashed unexpectedly.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "xla-coordination-peer-lost",
        False,
        [],
    ),
    (
        "F0511 07:38:29.000000 315 client.h:77] Terminating process because the JAX distributed service detected "
        "fatal errors. This most likely indicates that another task died; see the other task logs for more details.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "xla-coordination-peer-lost",
        False,
        [],
    ),
    (
        "absl::Status: UNAVAILABLE: Failed to send RPC to coordination service. Either the leader task was "
        "preempted/died/restarted unexpectedly or this task is experiencing network issues.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "xla-coordination-peer-lost",
        False,
        [],
    ),
    (
        "INTERNAL: Coordination service has stopped. RegisterTask() from task: /job:jax_worker/replica:0/task:1 "
        "failed.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "xla-coordination-peer-lost",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


DECIDED_IMPLICATING: list[tuple[str, FailureClass, CauseLayer, str, bool]] = [
    # A connection that existed and broke stays comm_error's (a cascade, usually).
    (
        "ConnectionAbortedError: [Errno 103] Software caused connection abort",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "connection-lost",
        False,
    ),
    ("ConnectionResetError: [Errno 104] Connection reset by peer", C.COMM_ERROR, L.AMBIGUOUS, "connection-lost", False),
    ("BrokenPipeError: [Errno 32] Broken pipe", C.COMM_ERROR, L.AMBIGUOUS, "connection-lost", False),
    # NCCL's network layer, by what its WARN says.
    (
        "node01:1234:1240 [0] NCCL WARN NET/IB: mlx5dv_create_qp failed to create QP: Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
        False,
    ),
    (
        "node01:1234:1240 [1] register_rail_mr_buffer:617 NCCL WARN NET/OFI Unable to register memory (type = 2) "
        "for device 4. RC: -22, Error: Invalid argument",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
        False,
    ),
    (
        "node01:1234:1240 [1] NCCL WARN NET/OFI Unable to register memory (type = 1) for device 0. RC: -12, "
        "Error: Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
        False,
    ),
    (
        "node01:1234:1240 [0] NCCL WARN NET/IB : Attempted to connect incompatible devices: [0]mlx5_0:1/IB and "
        "[1]mlx5_2:1/RoCE. Try selecting NICs of only one link type using NCCL_IB_HCA",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-setup-refused",
        False,
    ),
    (
        "node01:1234:1240 [0] NCCL WARN Failed to initialize any NET plugin",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-setup-refused",
        False,
    ),
]


test_source_lines_are_decided_implicating_the_node_or_not = cases.excerpts_decided(DECIDED_IMPLICATING)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # NCCL results as PyTorch prints them (ncclGetErrorString / getNcclErrorDetailStr).
    (
        "torch.distributed.DistBackendError: NCCL error in: /src/c10d/NCCLUtils.cpp:77, internal error - please "
        "report this issue to the NCCL developers, NCCL version 2.26.2",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-internal-error",
    ),
    # CUDA errors inside NCCL decided by what the error says (NCCL checks.h CUDACHECK, shm.cc, nvmlwrap.cc).
    (
        "host4:31:40 [2] transport/shm.cc:601 NCCL WARN Cuda failure 217 'peer access is not supported between these "
        "two devices'",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-setup-refused",
    ),
    (
        "host4:31:40 [2] misc/nvmlwrap.cc:190 NCCL WARN nvmlDeviceGetHandleByPciBusId() failed: Not Found",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-setup-refused",
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: /src/c10d/ProcessGroupNCCL.cpp:88, remote process exited "
        "or there was a network error, NCCL version 2.23.4",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    # IB completions by status (ibv_wc_status), in the three formats NCCL has printed.
    (
        "NET/IB: Got completion from peer 10.7.0.9<5100> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV(128) "
        "vendor_err=129  hca mlx5_4",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-completion-unattributed",
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB: Got completion from peer 10.7.0.9<5100> with status=IBV_WC_REM_ACCESS_ERR(10) "
        "opcode=IBV_WC_RDMA_WRITE(1) vendor_err=136  hca mlx5_4",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with error 5, opcode 0, len 0, "
        "vendor err 249 (Recv)",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with status=13 opcode=0 len=0 "
        "vendor err 0 (Send)",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    # NCCL sockets, proxy, verbs.
    (
        "host4:31:40 [2] os/linux.cc:362 NCCL WARN ncclOsSocketProgressOpt: Call to recv from 10.7.0.9<5100> failed : "
        "Connection reset by peer",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-socket-recv-failed",
    ),
    (
        "host4:31:40 [2] misc/socket.cc:58 NCCL WARN socketProgress: Connection closed by remote peer host5<41002>",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "connection-lost",
    ),
    (
        "host4:31:40 [2] proxy.cc:1905 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, "
        "retcode 6",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-system-error",
    ),
    (
        "host4:31:40 [2] graph/rings.cc:51 NCCL WARN Error : ring 3 does not loop back to start (5 != 3)",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-internal-error",
    ),
    (
        "host4:31:40 [2] graph/connect.cc:77 NCCL WARN Internal error : tree already has 3 children (4 3 5)",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-internal-error",
    ),
    (
        "host4:31:40 [2] misc/ibvwrap.cc:68 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory "
        "errno 12",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    (
        "host4:31:40 [2] transport/p2p.cc:250 NCCL WARN failed to open CUDA IPC handle : 201 invalid device context",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-cuda-error",
    ),
    # PyTorch c10d and elastic.
    (
        "[rank3]:[W101 10:00:02.000 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=31, addr=[host4]:40122, "
        "remote=[host1]:29500): failed to recv, got 0 bytes",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "connection-lost",
    ),
    (
        "RuntimeError: [/src/third_party/gloo/gloo/transport/tcp/pair.cc:589] Write error [10.7.0.9]:40871: Broken pipe",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "connection-lost",
    ),
    # Round 27: the remote work-completion statuses in any program's words (ibv_wc_status_str).
    (
        "[WARN gpu-12 5512 5512 pollOnce rdma/providers/ib_data_channel_impl.cc:203] pollOnce - channel_id: 1, CQE "
        "error, wr_id=90, status=10 (remote access error), opcode=1, byte_len=0, vendor_err=0x7",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    ("rdma write failed: remote operation error", C.COMM_ERROR, L.AMBIGUOUS, "nccl-remote-error"),
    # Round 29: a glog CHECK on an NCCL call's result (Paddle's nccl_helper.h).
    (
        "F0301 10:00:00.1 4410 nccl_helper.h:62] Check failed: dynload::ncclGroupEnd() == ncclSuccess (3 vs. 0)",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-error-other",
    ),
    # A remote status reads as the peer's in UCX's words too, not as the link's (interconnect.yaml's header).
    (
        "[1595598109.293924] [cn007:58829:0]   ib_iface.c:512  UCX  ERROR send completion with error: remote access error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    # Round 32: Ray's object store losing an object whose owner exited (exceptions.py OwnerDiedError).
    (
        "ray.exceptions.OwnerDiedError: Failed to retrieve object 00ffffffffffffffffffffffffffffffffffffff0600000002e1f505.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
    ),
    (
        "The object's owner has exited. This is the Python worker that first created the ObjectRef via `.remote()` or "
        "`ray.put()`.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
    ),
    # Round 33: NCCL's return trace by the ncclResult_t it unwinds (checks.h NCCLCHECK; nccl.h's codes).
    (
        "host4:4707:5232 [2] NCCL INFO transport/shm.cc:101 -> 2",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-system-error",
    ),
    (
        "host4:4288:4521 [1] NCCL INFO proxy.cc:878 -> 6 [Progress Thread]",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-remote-error",
    ),
    ("host4:1050:1315 [0] NCCL INFO enqueue.cc:1012 -> 1", C.COMM_ERROR, L.SYSTEM_SOFTWARE, "nccl-cuda-error"),
    # Round 34: gloo's transport refusing what a peer sent (GLOO_ENFORCE in gloo/transport).
    (
        "  what():  [enforce fail at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= "
        "op.nbytes. 2097152 vs 1048576",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "gloo-transport-error",
    ),
    # Round 37: a Ray process that gave up reconnecting to the cluster's GCS (gcs_client.cc).
    (
        "[2026-02-01 09:00:00,000 C 4410 4410] gcs_client.cc:201: Couldn't reconnect to GCS server. The last "
        "attempted GCS server address was 10.0.0.5:6379",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
    ),
    # Round 39: LightGBM's socket network (socket_wrapper.hpp); oneCCL's exception (CCL_THROW).
    ("[LightGBM] [Fatal] Socket recv error, code: 104", C.COMM_ERROR, L.AMBIGUOUS, "connection-lost"),
    (
        "RuntimeError: oneCCL: global.cpp:150 getenv_local_coord: EXCEPTION: to get local_idx/count from ATL, set "
        "CCL_ZE_IPC_EXCHANGE=sockets explicitly",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "oneccl-error",
    ),
    # Round 40: XLA's coordination service seeing a task come back with a new incarnation.
    (
        "E1205 18:39:10.837611  387 coordination_service.cc:962] /job:jax_worker/replica:0/task:3 unexpectedly tried "
        "to connect with a different incarnation. It has likely restarted.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "xla-coordination-peer-lost",
    ),
    # Round 40: UCX's device that is there and refuses to open is still read (only ENOENT is a probe).
    (
        "[1594407135.546337] [gpu7:117  :0]          ib_md.c:1933 UCX  ERROR ibv_open_device(mlx5_0) failed: "
        "Permission denied",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "ib-verbs-call-failed",
    ),
    # Round 40: TensorFlow's remote call failing with a gRPC status (grpc_util.h FromGrpcStatus).
    (
        "Additional GRPC error information from remote target /job:ps/replica:0/task:0/device:CPU:0 while calling "
        "/tensorflow.eager.EagerService/Enqueue:",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "tf-remote-call-failed",
    ),
    ("Additional GRPC error information:", C.COMM_ERROR, L.AMBIGUOUS, "tf-remote-call-failed"),
    # Round 45: Caffe2's NCCL check; TensorFlow's ring collective giving up.
    (
        "[E net_dag.cc:188] Exception from operator chain starting at '' (type 'NCCLAllreduce'): caffe2::EnforceNotMet: "
        "[enforce fail at cuda_nccl_gpu.cc:24] status == ncclSuccess. 2 vs 0.  Error at: cuda_nccl_gpu.cc24: "
        "system error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "nccl-error-other",
    ),
    (
        "2026-12-07 10:00:00.289749: E tensorflow/core/common_runtime/ring_alg.cc:291] Aborting RingGather with "
        "Unavailable: OS Error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "tf-collective-aborted",
    ),
    # Round 49: NCCL left without an algorithm by the job's NCCL_ALGO.
    (
        "gpu3:812:990 [0] NCCL WARN Error : no algorithm/protocol available for function AllReduce with datatype "
        "ncclBfloat16. NCCL_ALGO was set to NVLS.",
        C.COMM_ERROR,
        L.APPLICATION,
        "nccl-algo-unavailable",
    ),
    # Round 57: Ray's object store without any copy of an object a task needs.
    (
        "(Worker pid=88, ip=10.0.0.7) ray.exceptions.ObjectFetchTimedOutError: Failed to retrieve object "
        "c8ef45ccd0112571ffffffffffffffffffffffff0100000001000000.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
    ),
    (
        "ray.exceptions.ObjectReconstructionFailedMaxAttemptsExceededError: Failed to retrieve object "
        "c8ef45ccd0112571ffffffffffffffffffffffff0100000001000000.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "peer-runtime-lost",
    ),
    # Round 59: Blue Gene/L's I/O-node daemon losing the job's control stream (APPREAD, APPSEV, APPTO).
    (
        "APPSEV 1132600084 2005.11.21 R14-M0-NC-I:J18-U11 2005-11-21-11.08.04.944948 R14-M0-NC-I:J18-U11 RAS APP FATAL ciod: Error reading message prefix after LOAD_MESSAGE on CioStream socket to "
        "172.16.96.116:42213: Link has been severed",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "connection-lost",
    ),
    (
        "APPREAD 1132600084 2005.11.21 R14-M0-NC-I:J18-U11 2005-11-21-11.08.04.944948 R14-M0-NC-I:J18-U11 RAS APP FATAL ciod: failed to read message prefix on control stream (CioStream socket to "
        "172.16.96.116:33569",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        "connection-lost",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


LINES_WITH_ONSET: list[tuple[str, FailureClass, CauseLayer, str, Onset]] = [
    (
        "gpu1:7:9 [0] transport.cc:175 NCCL WARN No transport found for rank 0[1000] -> rank 9[2000]",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-setup-refused",
        Onset.SUSPECTED,
    ),
    (
        "z-pc:909608:910337 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not "
        "supported between these two devices",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        "nccl-setup-refused",
        Onset.SUSPECTED,
    ),
]


test_family_line_decides_by_its_pattern_and_onset = cases.lines_decided(LINES_WITH_ONSET)


STILL_FAILURES: list[tuple[str, str]] = [
    (
        "[rank3]:[W1101 10:00:00.1 TCPStore.cpp:106] [c10d] sendBytes failed on SocketImpl(fd=62, "
        "addr=[::ffff:10.0.0.3]:54761, remote=[::ffff:10.0.0.1]:29500): Broken pipe",
        "connection-lost",
    ),
    ("cn7:411:499 [2] NCCL WARN Cuda failure 'invalid argument'", "nccl-cuda-error"),
]


test_neighbours_of_the_vetoes_still_count = cases.lines_decided_by_the_pattern(STILL_FAILURES)


NOT_THESE: list[tuple[str, str]] = [
    # A lone corrected error, and the INFO fallback of a P2P path.
    (
        "node155:1:2 [1] NCCL INFO P2P is disabled between connected GPUs 2 and 1. You can repress this message with "
        "NCCL_IGNORE_DISABLED_P2P=1.",
        "nccl-setup-refused",
    ),
]


test_lines_not_for_the_pattern = cases.lines_not_for_the_pattern(NOT_THESE)


BLAMING_NO_NODE: list[str] = [
    # A remote status, a local one, a peer's closed socket, a connect timeout: nobody's node.
    "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with status=10 opcode=1 len=0",
    "host4:31:40 [2] misc/socket.cc:58 NCCL WARN socketProgress: Connection closed by remote peer host5<41002>",
]


test_echoes_and_peers_blame_no_node = cases.excerpts_blaming_no_node(BLAMING_NO_NODE)


BENIGN: list[str] = [
    # Horovod's healthy lines and its uninitialised state (a usage error elsewhere, not a lost peer).
    "[1,0]<stdout>:Horovod initialized: rank 0, size 8",
    # JAX's coordination service when all is well.
    "I0301 10:00:00.000000 4242 coordination_service.cc:800] /job:jax_worker/replica:0/task:1 has disconnected "
    "from coordination service.",
    # NCCL's network layer setting up.
    "node01:1234:1240 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_2:1/RoCE ; OOB eth0:10.0.0.1<0>",
    "node01:1234:1240 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)",
    "node01:1234:1240 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v8)",
    # aws-ofi-nccl's provider search at init: NCCL goes on with its own transports.
    "node-1:77:77 [0] find_ofi_provider:543 NCCL WARN NET/OFI Couldn't find any optimal provider",
    "node-1:77:77 [0] nccl_net_ofi_create_plugin:334 NCCL WARN NET/OFI Unable to find a protocol that worked.  "
    "Failing initialization.",
    "node-1:77:77 [0] NCCL INFO NET/Plugin: Failed to initialize NET plugin AWS Libfabric",
    # NCCL's IB transport skipping the devices a container was not given, then using the rest.
    "65826-86bd:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed",
    "65826-86bd:80746:80746 [3] transport/net_ib.cc:149 NCCL WARN NET/IB : Unable to open device mlx5_59",
    "65826-86bd:80746:80746 [3] transport/net_ib.cc:158 NCCL WARN NET/IB : Unable to query device mlx5_59",
    "65826-86bd:80746:80746 [3] NCCL INFO NET/IB : Using [0]mlx5_1:1/RoCE [1]mlx5_18:1/RoCE ; OOB eth0:10.0.0.7<0>",
    # oneCCL's warning and info levels.
    "2024:01:01-10:00:00:(1234) |CCL_WARN| did not find MPI-launcher specific variables, switch to ATL/OFI, to force "
    "enable ATL/MPI set CCL_ATL_TRANSPORT=mpi",
    "2024:01:01-10:00:00:(1234) |CCL_INFO| process launcher: hydra, local_proc_idx: 0, local_proc_count: 8",
    # A program's own warning that it goes on without peer access (kmcuda's), and NCCL's INFO fallback.
    "warning: failed to enable p2p on gpu #1: peer access is not supported between these two devices",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    "host4:31:40 [2] NCCL INFO NET/Plugin: Could not find: libnccl-net-custom.so. Using internal network plugin.",
    "host4:31:40 [2] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.",
    "host4:31:40 [2] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or "
    "directory No plugin found (libnccl-net.so), using internal implementation",
    "host4:31:40 [2] NCCL WARN NET/Socket : NCCL_SOCKET_NTHREADS is greater than the maximum allowed, setting to 16",
    "host4:31:40 [2] NCCL INFO [Service thread] Connection closed by localRank 1",
    # NCCL's INFO probes and fallbacks (src/plugin/plugin_open.cc, src/misc/cudawrap.cc).
    "cn12:90:90 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
    "cn12:90:90 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object "
    "file: No such file or directory : when loading libnccl-net.so",
    "cn12:90:90 [0] NCCL INFO NET/Plugin: libnccl-net-ofi.so: undefined symbol: ncclNetPlugin_v9",
    "cn12:90:90 [0] NCCL INFO cuMem host allocations do not appear to be working; falling back to a /dev/shm/ "
    "based implementation",
    # Round 39: LightGBM retrying a connection while its network forms.
    "[LightGBM] [Warning] Connect to rank 1 failed, wait for 2.600000 seconds",
    # Round 45: the ring's abort reaching the other collectives.
    "2026-12-07 10:00:00.291604: E tensorflow/core/common_runtime/ring_alg.cc:291] Aborting RingReduce with "
    "Cancelled: Cancelled",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


def test_a_verbs_enomem_is_not_a_host_oom(catalogue: Catalogue, matcher: Matcher):
    a = classify_text(
        catalogue,
        matcher,
        "host4:31:40 [2] misc/ibvwrap.cc:68 NCCL WARN Call to ibv_reg_mr failed "
        "with error Cannot allocate memory errno 12",
    )
    assert a.failure_class is C.COMM_ERROR and a.recoverable_by_restart is False


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


def test_setup_refusals_do_not_recover_by_restart(matcher: Matcher):
    hit = matcher.failure("gpu1:7:9 [0] transport.cc:175 NCCL WARN No transport found for rank 0[1000] -> rank 9[2000]")
    assert hit is not None and hit.recoverable_by_restart is False


def test_registration_and_setup_refusals_do_not_restart(catalogue):
    """A provider that refuses the registration, or ports of two link layers, refuse it again."""
    book = catalogue.runbooks[C.COMM_ERROR]
    verdicts = {p.id: p.recoverable_by_restart for p in book.patterns}
    assert verdicts["ib-verbs-call-failed"] is False
    assert verdicts["nccl-setup-refused"] is False


def test_a_verbs_call_nccl_gives_up_on_is_still_read(catalogue, matcher):
    """The probe's veto covers the device open only: a verbs call NCCL fails on stays a failure."""
    got = classify_text(
        catalogue, matcher, "gpu-7:80744:80744 [1] misc/ibvwrap.cc:106 NCCL WARN Call to ibv_reg_mr failed"
    )
    assert got.pattern == "ib-verbs-call-failed"


def test_tensorflow_names_the_cause_it_wraps(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "tensorflow.python.framework.errors_impl.InternalError: Collective ops is aborted by: Error invoking NCCL: "
        "unhandled cuda error",
    )
    assert got.pattern != "tf-collective-aborted"


def test_a_closed_connection_outranks_gloos_read_timeout(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "process 0: [gloo/transport/tcp/buffer.cc:72] Read timeout [::1]:38624\n"
        "process 1: [gloo/transport/tcp/pair.cc:547] Connection closed by peer [::1]:2475",
    )
    assert got.failure_class is C.COMM_ERROR


def test_other_nccl_setup_refusals_stay_comm_error(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "n1:1:2 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not supported "
        "between these two devices",
    )
    assert (got.failure_class, got.pattern) == (C.COMM_ERROR, "nccl-setup-refused")
