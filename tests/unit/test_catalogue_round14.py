"""Round 14 of the catalogue (issue 11): holdout-6's misses, by family.

Each line is a format string of the software that prints it, filled in with made-up
hosts, ids, addresses and numbers: NCCL's bootstrap root (bootstrap.cc) and its earlier
connect wordings (socket.h, socket.cc), DeepSpeed's ssh
check (launcher/runner.py), XLA's coordination client (the RegisterTask RPC in gRPC's
status detail), torch.cuda.nccl's error (nccl.cpp throw_nccl_error), aws-ofi-nccl's
endpoint setup (nccl_ofi_net.cpp, nccl_ofi_ofiutils.cpp), Ray's raylet marked dead
(node_manager.cc), lspci's revision byte (pciutils lspci.c), the CUDA driver API's
CUDA_ERROR_UNKNOWN (cuda.h), BigDL's loss line (DistriOptimizer.scala) and TVM's SIGSEGV
handlers (tvm-ffi backtrace.cc, TVM logging.cc). Beside each, the neighbour it must not
take, from the same sources.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign, assert_decided

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # NCCL's bootstrap root refusing the ranks' check-in: the job never forms.
    (
        "node-4:3120:3190 [0] bootstrap.cc:348 NCCL WARN Bootstrap Root : rank 5 of 16 ranks has already checked in",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-bootstrap-root-mismatch",
    ),
    (
        "node-4:3120:3190 [0] bootstrap.cc:97 NCCL WARN Bootstrap Root : mismatch in rank count from procs 16 : 8",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-bootstrap-root-mismatch",
    ),
    (
        "node-4:3120:3190 [0] bootstrap.cc:335 NCCL WARN Bootstrap Root : mismatch in info from procs, nranks 16 vs "
        "8, nroots 1 vs 1, iroot 0 vs 0, offset 0 vs 0",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-bootstrap-root-mismatch",
    ),
    (
        "node-4:3120:3190 [0] bootstrap.cc:343 NCCL WARN Bootstrap Root : localId 17 is out of range",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-bootstrap-root-mismatch",
    ),
    # DeepSpeed's ssh check before launch: the job's ssh setup.
    (
        "RuntimeError: Using hostfile at /job/hostfile but host=worker-2 was not reachable via ssh. If you are "
        "running with a single node please remove /job/hostfile or setup passwordless ssh.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-ssh-check-failed",
    ),
    (
        "RuntimeError: Unable to detect suitable master address via `hostname -I`, please manually specify one via "
        "--master_addr",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-ssh-check-failed",
    ),
    # ssh's own reason, when the excerpt has it, says which.
    (
        "worker-2: ssh: connect to host worker-2 port 22: Connection refused\n"
        "RuntimeError: Using hostfile at /job/hostfile but host=worker-2 was not reachable via ssh. If you are "
        "running with a single node please remove /job/hostfile or setup passwordless ssh.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "ssh-launch-failed",
    ),
    # NCCL's connect in its wordings before socketStartConnect (v2.4-v2.9, v2.10-v2.15).
    (
        "r1n2:4865:4866 [1] include/socket.h:403 NCCL WARN Connect to 10.1.2.3<56821> failed : Connection refused",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "gpu-3:100:200 [0] misc/socket.cc:456 NCCL WARN Net : Connect to 10.1.2.3<40000> failed : No route to host",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "gpu-3:100:200 [0] misc/socket.cc:456 NCCL WARN Net : Connect to 10.1.2.3<40000> failed : Connection reset "
        "by peer",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-socket-recv-failed",
    ),
    # JAX's task failing to register with the coordination service.
    (
        "E0101 00:00:00.000000 4242 client.cc:96] Coordination service agent in error status: DEADLINE_EXCEEDED: "
        "Deadline Exceeded\nAdditional GRPC error information from remote target coordination_service while calling "
        '/tensorflow.CoordinationService/RegisterTask:\n:{"description":"Deadline Exceeded","grpc_status":4}',
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-coordination-register-timeout",
    ),
    # torch.cuda.nccl's NCCL Error N: the two usage results.
    ("RuntimeError: NCCL Error 5: invalid usage", C.APP_ERROR, L.APPLICATION, "nccl-invalid-usage"),
    (
        "RuntimeError: NCCL Error 4: invalid argument (run with NCCL_DEBUG=WARN for details)",
        C.APP_ERROR,
        L.APPLICATION,
        "nccl-invalid-usage",
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
    # lspci's revision read as all ones: the GPU no longer answers on the bus.
    (
        "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev ff)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-fallen-off-bus",
    ),
    (
        "0000:8a:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev ff)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-fallen-off-bus",
    ),
    # The driver API's unknown error, and the start of the driver that keeps its own pattern.
    ("Couldn't init a GPU test: Error: CUDA_ERROR_UNKNOWN", C.GPU_HARDWARE, L.HARDWARE, "cuda-unknown-error"),
    (
        "E0301 cuda_driver.cc:1160] failed to synchronize the stop event: CUDA_ERROR_UNKNOWN: unknown error",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    (
        "E tensorflow/stream_executor/cuda/cuda_driver.cc:351] failed call to cuInit: CUDA_ERROR_UNKNOWN",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    # BigDL's loss as the JVM prints a non-finite one.
    (
        "INFO  DistriOptimizer$:427 - [Epoch 3 1024/50000][Iteration 400][Wall Clock 100.5s] Trained 128 records in "
        "0.5 seconds. Throughput is 256.0 records/second. Loss is Infinity. Current learning rate is 0.01.",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    (
        "INFO  DistriOptimizer$:295 - [Epoch 3 1024/50000][Iteration 401][Wall Clock 101.0s] Train 128 in 0.5seconds. "
        "Throughput is 256.0 records/second. Loss is NaN. ",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    # TVM's SIGSEGV handlers.
    (
        '!!!!!!! Segfault encountered !!!!!!!\n  File "<unknown>", line 0, in mz_crc32',
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "segfault",
    ),
    ("!!!!!!! TVM encountered a Segfault !!!!!!!", C.PROCESS_CRASH, L.AMBIGUOUS, "segfault"),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


def test_lspci_names_the_fallen_gpu(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "1a:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev a1)\n"
        "1c:00.0 VGA compatible controller: NVIDIA Corporation TU102GL [Quadro RTX 6000/8000] (rev ff)",
    )
    assert got.pattern == "gpu-fallen-off-bus"
    assert got.node_implicated


BENIGN = [
    # NCCL's bootstrap at INFO, and its connect retried.
    "gpu-3:100:200 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    "node-4:3120:3120 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.4<0>",
    # DeepSpeed's launcher once ssh worked.
    "[INFO] [runner.py:555:main] Using IP address of 10.0.0.2 for node worker-2",
    # A running JAX job's coordination RPC closed at shutdown.
    "Additional GRPC error information from remote target coordination_service while calling "
    "/tensorflow.CoordinationService/WatchJobState:",
    # aws-ofi-nccl's provider search at init: NCCL goes on with its own transports.
    "node-1:77:77 [0] find_ofi_provider:543 NCCL WARN NET/OFI Couldn't find any optimal provider",
    "node-1:77:77 [0] nccl_net_ofi_create_plugin:334 NCCL WARN NET/OFI Unable to find a protocol that worked.  "
    "Failing initialization.",
    "node-1:77:77 [0] NCCL INFO NET/Plugin: Failed to initialize NET plugin AWS Libfabric",
    # Ray's heartbeat lag before any verdict.
    "[2022-03-01 10:00:00,000 W 12 40] node_manager.cc:157: Last heartbeat was sent 6901 ms ago. There might be "
    "resource pressure on this node. If heartbeat keeps lagging, this node can be marked as dead mistakenly.",
    # A GPU that answers.
    "3b:00.0 3D controller: NVIDIA Corporation GA100 [A100 SXM4 80GB] (rev a1)",
    # BigDL's finite loss.
    "INFO  DistriOptimizer$:427 - [Epoch 3 1024/50000][Iteration 400][Wall Clock 100.5s] Trained 128 records in "
    "0.5 seconds. Throughput is 256.0 records/second. Loss is 1.0808454.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
