"""Round 9 of the catalogue (issue 11): families written from the code that prints them.

Each line is a format string of the software that prints it, filled in with made-up
hosts, ids, numbers and paths: cpython's OSError "[Errno %d] %s" with glibc's strerror
texts, as a rank raises them when it connects to its rendezvous or coordinator, and
urllib3's wrappers of them (urllib3/connection.py, connectionpool.py); PyTorch 2.x
torch/csrc/distributed/c10d/TCPStore.cpp (the connect / validate loop) and socket.cpp;
NVIDIA/nccl src/transport/net_ib/connect.cc, net_ib.cc (v2.18), src/plugin/net.cc;
aws/aws-ofi-nccl's memory registration WARNs; ray-project/ray
src/ray/core_worker/task_manager.cc (NODE_DIED) and python/ray/exceptions.py.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, node implicated, pattern)
DECIDED = [
    # Python's connect errnos: the job could not form; the network path or the peer was not there.
    (
        "TimeoutError: [Errno 110] Connection timed out",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        "socket-connect-errno",
    ),
    ("OSError: [Errno 113] No route to host", C.LAUNCH, L.INFRASTRUCTURE_NETWORK, False, "socket-connect-errno"),
    ("OSError: [Errno 101] Network is unreachable", C.LAUNCH, L.INFRASTRUCTURE_NETWORK, False, "socket-connect-errno"),
    ("OSError: [Errno 112] Host is down", C.LAUNCH, L.INFRASTRUCTURE_NETWORK, False, "socket-connect-errno"),
    (
        "OSError: [Errno 99] Cannot assign requested address",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        "socket-connect-errno",
    ),
    (
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='10.0.0.1', port=8080): Max retries exceeded "
        "with url: /rendezvous (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f2a>: "
        "Failed to establish a new connection: [Errno 111] Connection refused'))",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        "socket-connect-errno",
    ),
    (
        "urllib3.exceptions.ConnectTimeoutError: (<urllib3.connection.HTTPSConnection object at 0x7f2a>, "
        "'Connection to coordinator.internal timed out. (connect timeout=10)')",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        "socket-connect-errno",
    ),
    # gloo's connect to a peer, in strerror's words; gloo without the interface it was told to use.
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [10.0.0.5]:31422: "
        "Connection refused",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        "socket-connect-errno",
    ),
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [10.0.0.5]:31422: "
        "Connection timed out",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        "socket-connect-errno",
    ),
    (
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:212] ifa != nullptr. "
        "Unable to find interface for: [10.1.2.3]",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        False,
        "gloo-no-interface",
    ),
    # A connection that existed and broke stays comm_error's (a cascade, usually).
    (
        "ConnectionAbortedError: [Errno 103] Software caused connection abort",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        "connection-lost",
    ),
    ("ConnectionResetError: [Errno 104] Connection reset by peer", C.COMM_ERROR, L.AMBIGUOUS, False, "connection-lost"),
    ("BrokenPipeError: [Errno 32] Broken pipe", C.COMM_ERROR, L.AMBIGUOUS, False, "connection-lost"),
    # TCPStore 2.x: the connect / validate loop giving up.
    (
        "[E1202 10:00:00.123456789 TCPStore.cpp:390] [c10d] TCP client failed to connect/validate to host "
        "node01:29500 - timed out (try=3, timeout=600000ms): The client socket has failed to connect to "
        "[node01]:29500 (errno: 111 - Connection refused).",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        "store-connect-timeout",
    ),
    # NCCL's network layer, by what its WARN says.
    (
        "node01:1234:1240 [0] NCCL WARN NET/IB: mlx5dv_create_qp failed to create QP: Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        False,
        "ib-verbs-call-failed",
    ),
    (
        "node01:1234:1240 [1] register_rail_mr_buffer:617 NCCL WARN NET/OFI Unable to register memory (type = 2) "
        "for device 4. RC: -22, Error: Invalid argument",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        False,
        "ib-verbs-call-failed",
    ),
    (
        "node01:1234:1240 [1] NCCL WARN NET/OFI Unable to register memory (type = 1) for device 0. RC: -12, "
        "Error: Cannot allocate memory",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        False,
        "ib-verbs-call-failed",
    ),
    (
        "node01:1234:1240 [0] NCCL WARN NET/IB : Attempted to connect incompatible devices: [0]mlx5_0:1/IB and "
        "[1]mlx5_2:1/RoCE. Try selecting NICs of only one link type using NCCL_IB_HCA",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        False,
        "nccl-setup-refused",
    ),
    (
        "node01:1234:1240 [0] NCCL WARN Failed to initialize any NET plugin",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
        False,
        "nccl-setup-refused",
    ),
    (
        "node01:1234:1240 [0] NCCL WARN NET/IB : req 0/1 tag 7 peer 10.0.0.2<41234> collective mismatch error, "
        "local size 4096 remote size 8192",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        "nccl-invalid-usage",
    ),
    # Ray: the node a task ran on died, or its raylet.
    (
        "ray.exceptions.NodeDiedError: Task failed due to the node (where this task was running)  was dead or "
        "unavailable.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        "ray-node-dead",
    ),
    (
        "ray.exceptions.LocalRayletDiedError: The task's local raylet died. Check raylet.out for more information.",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        True,
        "ray-raylet-died",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "implicated", "pattern"), DECIDED)
def test_source_lines_decide_by_their_pattern(catalogue, matcher, text, cls, layer, implicated, pattern):
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer, got.pattern) == (cls, layer, pattern)
    assert got.node_implicated is implicated


def test_missing_gloo_interface_does_not_restart(catalogue):
    """The host's address or GLOO_SOCKET_IFNAME is wrong: a restart finds it wrong again."""
    book = catalogue.runbooks[C.LAUNCH]
    assert next(p for p in book.patterns if p.id == "gloo-no-interface").recoverable_by_restart is False


def test_registration_and_setup_refusals_do_not_restart(catalogue):
    """A provider that refuses the registration, or ports of two link layers, refuse it again."""
    book = catalogue.runbooks[C.COMM_ERROR]
    verdicts = {p.id: p.recoverable_by_restart for p in book.patterns}
    assert verdicts["ib-verbs-call-failed"] is False
    assert verdicts["nccl-setup-refused"] is False


# Lines from the same sources, and their neighbours, that say nothing failed.
BENIGN = [
    # urllib3's handled retry, as pip and hub clients log it.
    "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection "
    "broken by 'NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f2a>: Failed to establish a "
    "new connection: [Errno 110] Connection timed out')': /simple/torch/",
    # c10d's connect loop retrying, and connecting.
    "[W1202 10:00:00.123456789 TCPStore.cpp:358] [c10d] TCP client failed to connect/validate to host node01:29500 "
    "- retrying (try=0, timeout=600000ms, delay=496ms): The client socket has failed to connect to [node01]:29500 "
    "(errno: 111 - Connection refused).",
    "[I1202 10:00:00.123456789 socket.cpp:787] [c10d] The client socket has connected to [node01]:29500 on "
    "[node02]:51234.",
    # Other errnos and their numbers in healthy text.
    "errno 110 is ETIMEDOUT; see man 3 errno",
    "Connection to coordinator.internal established (connect timeout=10)",
    # gloo connecting, and choosing its interface.
    "I1202 10:00:00.123456 4242 ProcessGroupGloo.cpp:742] [Rank 0]: Using network interface eth0 for gloo",
    # NCCL's network layer setting up.
    "node01:1234:1240 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_2:1/RoCE ; OOB eth0:10.0.0.1<0>",
    "node01:1234:1240 [0] NCCL INFO NET/OFI Selected Provider is efa (found 4 nics)",
    "node01:1234:1240 [0] NCCL INFO NET/Plugin: Loaded net plugin Libfabric (v8)",
    # Ray reporting a node that left on purpose.
    "the actor's node was terminated expectedly: received SIGTERM",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
