"""runbooks/launch.yaml: the job failing to form, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: PyTorch c10d (socket.cpp, TCPStore.cpp's connect / validate loop, the store based barrier),
torchelastic's rendezvous (api.py, dynamic_rendezvous.py) and torch.distributed's URL rendezvous
(rendezvous.py); gloo's transport/tcp (pair.cc, device.cc); NCCL's bootstrap.cc, misc/socket.cc
(and socket.h before v2.10), net_socket.cc; CPython's OSError "[Errno %d] %s" with glibc's
strerror texts and urllib3's wrappers (connection.py, connectionpool.py); XLA's coordination
service and JAX's client (client.h, coordination_service.cc), JAX's TPU backend (xla_bridge.py);
torch_xla's mesh service; OpenSSH (ssh.c, sshconnect.c, sshconnect2.c) and pdsh; DeepSpeed's
launcher (launcher/runner.py); Open MPI (help-errmgr-base.txt [failed-daemon-launch],
[failed-daemon], errmgr_default_hnp.c, the UCX PML pml_ucx.c), MPI_Init and MPICH's Hydra proxies;
Ascend HCCP / HCCL at start; Slurm (slurm_errno.c as sbatch, srun and salloc print it, srun
step_launch.c, slurmstepd's execve); Kubernetes' image pulls; Flux (flux-job.c, the job shell);
bash, zsh and CPython's pymain_run_file finding no launcher or script.
"""

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Forming the job: an endpoint not reached in time is the network's, as the development set labels it
    # (docs/runbooks.md, "Cause layers"); a port already in use is system software (port-in-use).
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
    # JAX's client barrier right after it connects: the job never formed.
    (
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Barrier_id: PjRT_Client_Connect."
        " Timed out task names:\n/job:jax_worker/replica:0/task:2",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-coordination-register-timeout",
    ),
    # NCCL with no interface to use: the host's configuration.
    (
        "gpu-a-02:4242:4242 [0] NCCL WARN Bootstrap : no socket interface found",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-no-interface",
    ),
    (
        "gpu-a-02:4242:4300 [0] NCCL WARN NET/Socket : No usable listening interface found",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-no-interface",
    ),
    (
        "gpu-a-02:4242:4300 [0] NCCL WARN no device found matching exactly ib9, verify NCCL_OOB_NET_IFNAME",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-no-interface",
    ),
    # The neighbours each must leave alone.
    # gloo's counterpart of nccl-no-interface
    ("Unable to find interface for: [10.0.0.3]", C.LAUNCH, L.SYSTEM_SOFTWARE, "gloo-no-interface"),
    # a connect NCCL tried and the network refused stays the network's
    (
        "gpu-a-02:4242:4300 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.0.0.3<40404> failed : "
        "Connection timed out",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
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
    # JAX's task failing to register with the coordination service.
    (
        "E0101 00:00:00.000000 4242 client.cc:96] Coordination service agent in error status: DEADLINE_EXCEEDED: "
        "Deadline Exceeded\nAdditional GRPC error information from remote target coordination_service while calling "
        '/tensorflow.CoordinationService/RegisterTask:\n:{"description":"Deadline Exceeded","grpc_status":4}',
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-coordination-register-timeout",
    ),
    # torch.distributed's URL rendezvous without its rank or world (rendezvous.py).
    (
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable WORLD_SIZE "
        "expected, but not set",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "torch-rendezvous-config-missing",
    ),
    (
        "ValueError: Error initializing torch.distributed using tcp:// rendezvous: rank parameter missing",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "torch-rendezvous-config-missing",
    ),
    (
        "ValueError: Error initializing torch.distributed using file:// rendezvous: world size parameter missing",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "torch-rendezvous-config-missing",
    ),
    # DeepSpeed's launcher refusing its hostfile or multi-node setup (launcher/runner.py).
    (
        "[2021-03-02 10:11:12,130] [ERROR] [runner.py:139:fetch_hostfile] Hostfile is not formatted correctly, "
        "unable to proceed with training.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "[2021-03-02 10:11:12,130] [ERROR] [runner.py:143:fetch_hostfile] Hostfile contains duplicate hosts, "
        "unable to proceed with training.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "ValueError: Hostfile contains multiple entries for worker-3, unable to proceed with launching",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "ValueError: Hostfile is empty or not formatted correctly, unable to proceed with launching.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "ValueError: Num nodes is >1 but no extra nodes available via hostfile",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    ("RuntimeError: launcher 'pdsh' not installed.", C.LAUNCH, L.SYSTEM_SOFTWARE, "deepspeed-hostfile-invalid"),
    # gloo's device lookups (gloo/transport/tcp/device.cc).
    (
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:83] ifa != nullptr. "
        "Unable to find address for: ib0",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "gloo-no-interface",
    ),
    (
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:208] rp != nullptr. "
        "Unable to find address for: gpu-node-12",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "gloo-no-interface",
    ),
    # Ascend HCCP / HCCL at start: the previous process still holds the device, a port, rootInfo.
    (
        "RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:64\n"
        "EJ0001: 2024-05-21-11:57:54.167.645 Failed to initialize the HCCP process. Reason: Maybe the last "
        "training process is running.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-init-failed",
    ),
    ("EJ0003: Failed to bind the IP port. Reason: address in use", C.LAUNCH, L.SYSTEM_SOFTWARE, "hccl-init-failed"),
    (
        "EI0015: Failed to collect cluster information of the communicator based on rootInfo detection. Reason: "
        "timeout waiting for 8 ranks.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-init-failed",
    ),
    (
        "EI0004: The ranktable or rank is invalid,Reason:[rank id 9 out of range]. Please check the configured "
        "ranktable. [/etc/hccl.json]",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-config-invalid",
    ),
    (
        "EI0001: Environment variable [HCCL_SOCKET_IFNAME] is invalid. Reason: no such interface.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-config-invalid",
    ),
    (
        "EI0008: The HCCL versions are inconsistent: tag [AllReduce_1], local_version [7.1], remote_version [7.0]",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "hccl-config-invalid",
    ),
    # Open MPI: the UCX PML wiring the job; orted missing on the remote host.
    (
        "[gpu1:1581048] pml_ucx.c:419 Error: ucp_ep_create(proc=9) failed: Destination is unreachable",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ompi-ucx-wireup-failed",
    ),
    (
        "[gpu1:1581048] pml_ucx.c:472 Error: Failed to resolve UCX endpoint for rank 9",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ompi-ucx-wireup-failed",
    ),
    ("bash: orted: command not found", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-daemon-launch-failed"),
    ("bash: prted: command not found", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-daemon-launch-failed"),
    # JAX's TPU backend at start.
    (
        "UserWarning: TPU backend initialization is taking more than 60.0 seconds. Did you run your code on all TPU "
        "hosts? See https://jax.readthedocs.io/en/latest/multi_process.html for more information.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "jax-tpu-backend-init",
    ),
    (
        "RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with pid "
        "176028. Not attempting to load libtpu.so in this process.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "jax-tpu-backend-init",
    ),
    # Forming the job.
    (
        "Abort(1091215) on node 0 (rank 0 in comm 0): Fatal error in PMPI_Init: Other MPI error, error stack:",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    (
        '[mpiexec@gpu-1] HYDU_sock_connect (utils/sock/sock.c:145): unable to connect from "gpu-1" to "gpu-2" '
        "(No route to host)",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    (
        "RuntimeError: Failed to connect to client mesh master: 10.0.0.1:8477",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-mesh-connect-failed",
    ),
    # Flux: flux-job.c's fatal exceptions, the job shell's FATAL.
    (
        "0.031s: job.exception type=exec severity=0 task 0 (host c12): start failed: train: No such file or directory",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "flux-job-exec-failed",
    ),
    (
        "0.040s: flux-shell[0]: FATAL: plugin 'cyclic': shell.init failed",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "flux-job-exec-failed",
    ),
    # gloo's pair connect timeout, bare and under connectFullMesh.
    (
        "RuntimeError: [/src/third_party/gloo/gloo/transport/tcp/pair.cc:799] Connect timeout [10.1.0.4]:35117",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    # The shell finding no launcher: bash (English, zh_CN with its "行", de), zsh.
    (
        "/var/spool/slurmd/job4411/slurm_script: line 22: torchrun: command not found",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "launcher-not-found",
    ),
    ("train_multi.sh: 行 31: deepspeed：未找到命令", C.LAUNCH, L.SYSTEM_SOFTWARE, "launcher-not-found"),
    ("job.sh: Zeile 5: python3: Kommando nicht gefunden.", C.LAUNCH, L.SYSTEM_SOFTWARE, "launcher-not-found"),
    ("zsh: command not found: mpirun", C.LAUNCH, L.SYSTEM_SOFTWARE, "launcher-not-found"),
    # CPython's pymain_run_file, Python 3 and 2, with torchrun's echo after it.
    (
        "/opt/env/bin/python3: can't open file '/work/trian.py': [Errno 2] No such file or directory\n"
        "E0101 10:00:00.000 1 torch/distributed/elastic/multiprocessing/api.py:800] failed (exitcode: 2) "
        "local_rank: 0 (pid: 4411) of binary: /opt/env/bin/python3",
        C.LAUNCH,
        L.APPLICATION,
        "python-script-not-found",
    ),
    (
        "python: can't open file 'main.py': [Errno 13] Permission denied",
        C.LAUNCH,
        L.APPLICATION,
        "python-script-not-found",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # The controller's errno as the client's own error line (slurm_errno.c).
    (
        "srun: error: Unable to contact slurm controller (connect failure)",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
        False,
        [],
    ),
    (
        "sbatch: error: slurm_submit_batch_job: Unable to contact slurm controller (send failure)",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
        False,
        [],
    ),
    # Open MPI: a daemon that never came up is the launch's, even with the "lost communication" text after it.
    (
        "--------------------------------------------------------------------------\n"
        "ORTE was unable to reliably start one or more daemons.\n"
        "This usually is caused by:\n"
        "--------------------------------------------------------------------------\n"
        "ORTE has lost communication with a remote daemon.\n"
        "\n"
        "  HNP daemon   : [[16919,0],0] on node cn031\n"
        "  Remote daemon: [[16919,0],3] on node cn127\n",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-daemon-launch-failed",
        False,
        [],
    ),
    (
        "An ORTE daemon has unexpectedly failed after launch and before\n"
        "communicating back to mpirun. This could be caused by a number\n"
        "of factors, including an inability to create a connection back\n"
        "to mpirun due to a lack of common network interfaces and/or no\n"
        "route found between them.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-daemon-launch-failed",
        False,
        [],
    ),
    # JAX's coordination service: the job that never formed.
    (
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: "
        "[Init]Wait_for_all_tasks_to_register::0. This usually happens because a task triggered the barrier too "
        "early or too slowly.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-coordination-register-timeout",
        False,
        [],
    ),
    # ssh-started workers.
    (
        "ssh: connect to host gpu-node-3 port 22: Connection timed out",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "ssh-launch-failed",
        False,
        [],
    ),
    (
        "pdsh@gpu-node-1: gpu-node-3: ssh exited with exit code 255",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "ssh-launch-failed",
        False,
        [],
    ),
    (
        "gpu-node-3: Permission denied (publickey,gssapi-keyex,gssapi-with-mic).",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ssh-auth-refused",
        False,
        [],
    ),
    # A container that could not start for its image.
    (
        '  Warning  Failed     12s   kubelet  Failed to pull image "nvcr.io/nvidia/pytorch:24.05-py3": rpc error: '
        "code = Unknown desc = failed to pull and unpack image",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
        False,
        [],
    ),
    (
        "trainer-worker-0   0/1     ImagePullBackOff   0          3m",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
        False,
        [],
    ),
    # torchelastic's keep-alive failing records this node FAILED in the rendezvous state (dynamic_rendezvous.py
    # _keep_alive: NodeState.FAILED): the store is unreachable, read as the rendezvous error it names.
    (
        "W0813 22:23:32.979031 140204091807488 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1267] "
        "The node 'gpu-07_4242_0' has failed to send a keep-alive heartbeat to the rendezvous '100' due to an "
        "error of type RendezvousTimeoutError.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "rendezvous-error",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


DECIDED_IMPLICATING: list[tuple[str, FailureClass, CauseLayer, str, bool]] = [
    # Python's connect errnos: the job could not form; the network path or the peer was not there.
    (
        "TimeoutError: [Errno 110] Connection timed out",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "socket-connect-errno",
        False,
    ),
    ("OSError: [Errno 113] No route to host", C.LAUNCH, L.INFRASTRUCTURE_NETWORK, "socket-connect-errno", False),
    ("OSError: [Errno 101] Network is unreachable", C.LAUNCH, L.INFRASTRUCTURE_NETWORK, "socket-connect-errno", False),
    ("OSError: [Errno 112] Host is down", C.LAUNCH, L.INFRASTRUCTURE_NETWORK, "socket-connect-errno", False),
    (
        "OSError: [Errno 99] Cannot assign requested address",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "socket-connect-errno",
        False,
    ),
    (
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='10.0.0.1', port=8080): Max retries exceeded "
        "with url: /rendezvous (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f2a>: "
        "Failed to establish a new connection: [Errno 111] Connection refused'))",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "socket-connect-errno",
        False,
    ),
    (
        "urllib3.exceptions.ConnectTimeoutError: (<urllib3.connection.HTTPSConnection object at 0x7f2a>, "
        "'Connection to coordinator.internal timed out. (connect timeout=10)')",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "socket-connect-errno",
        False,
    ),
    # gloo's connect to a peer, in strerror's words; gloo without the interface it was told to use.
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [10.0.0.5]:31422: "
        "Connection refused",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "socket-connect-errno",
        False,
    ),
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:799] connect [10.0.0.5]:31422: "
        "Connection timed out",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "socket-connect-errno",
        False,
    ),
    (
        "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/device.cc:212] ifa != nullptr. "
        "Unable to find interface for: [10.1.2.3]",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "gloo-no-interface",
        False,
    ),
    # TCPStore 2.x: the connect / validate loop giving up.
    (
        "[E1202 10:00:00.123456789 TCPStore.cpp:390] [c10d] TCP client failed to connect/validate to host "
        "node01:29500 - timed out (try=3, timeout=600000ms): The client socket has failed to connect to "
        "[node01]:29500 (errno: 111 - Connection refused).",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
        False,
    ),
]


test_source_lines_are_decided_implicating_the_node_or_not = cases.excerpts_decided(DECIDED_IMPLICATING)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # NCCL sockets, proxy, verbs.
    (
        "host4:31:40 [2] os/linux.cc:288 NCCL WARN ncclOsSocketStartConnect: connect to 10.7.0.9<5100> returned "
        "Connection refused, exceeded error retry count after 35 attempts",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "host4:31:40 [2] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.7.0.9<5100> failed : No route "
        "to host",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    # PyTorch c10d and elastic.
    (
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to "
        "(host1, 29500).",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "[E101 10:00:03.000 socket.cpp:1] [c10d] The client socket has failed to connect to any network address of "
        "(host1, 29500).",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg//cuda//0",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    (
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
        "store_based_barrier_key:1 (world_size=16, worker_count=12, timeout=0:30:00)",
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
        "RuntimeError: The server socket has failed to listen on any local network address. port: 29400, useIpv6: "
        "false, code: -98, name: EADDRINUSE, message: address already in use",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "port-in-use",
    ),
    # Slurm.
    (
        "slurmstepd: error: execve(): /home/u/run.sh: No such file or directory",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "srun: error: Unable to create step for job 812: Requested nodes are busy",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    (
        "salloc: error: Job submit/allocate failed: Socket timed out on send/recv operation",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    # A site's job_submit plugin refusing the request: SLURM_ERROR after the plugin's own message.
    (
        "srun: error: slurm_receive_msgs: [[host9.example]:6818] failed: Socket timed out on send/recv operation",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    # A request the cluster cannot satisfy at all stays the submission's (application).
    (
        "sbatch: error: Batch job submission failed: Rate limit exceeded, please retry momentarily",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    # Round 24: c10d's per-address warning when the port is in use (socket.cpp SocketListenOp::tryListen).
    (
        "[W socket.cpp:436] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "port-in-use",
    ),
    (
        "[W1206 19:30:01.123456789 socket.cpp:462] [c10d] The server socket has failed to listen on [::]:29400 "
        "(errno: 98 - Address already in use).",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "port-in-use",
    ),
    # Round 25, pyxis failing to bring up the step's container (NVIDIA/pyxis pyxis_slurmstepd.c) and
    # slurmstepd failing the step for a required SPANK plugin (src/common/spank.c).
    (
        "slurmstepd: error: pyxis: container start failed with error code: 1",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "slurmstepd: error: pyxis: failed to import docker image: nvcr.io#nvidia/pytorch:24.05-py3",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "slurmstepd-gpu-0042: error: spank: required plugin spank_pyxis.so: task_init() failed with rc=-1",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 25, a configless client with no controller to ask (src/common/read_config.c).
    ("srun: fatal: Could not establish a configuration source", C.LAUNCH, L.SCHEDULER, "slurmctld-unreachable"),
    # Round 25, DeepSpeed's ssh check failing as Python reports it (runner.py, subprocess.check_call).
    (
        "subprocess.CalledProcessError: Command 'ssh -o PasswordAuthentication=no gpu-node-7 hostname' returned "
        "non-zero exit status 255.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-ssh-check-failed",
    ),
    # Round 26, Docker Hub refusing a pull for its rate limit, as Singularity relays it.
    (
        "FATAL:   Unable to handle docker://ubuntu:22.04 uri: failed to get checksum for docker://ubuntu:22.04: reading "
        "manifest 22.04 in docker.io/library/ubuntu: toomanyrequests: You have reached your pull rate limit.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 27: Horovod's start timeout (runner/common/util/timeout.py), SkyPilot's provisioning
    # verdicts (cloud_vm_ray_backend.py, optimizer.py).
    (
        "Exception: Timed out waiting for all hosts to register. Please check connectivity between servers. You may "
        "need to increase the --start-timeout parameter if you have too many servers.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "horovod-start-timeout",
    ),
    (
        "sky.exceptions.ResourcesUnavailableError: Failed to provision all possible launchable resources. Relax the "
        "task's resource requirements: 2x AWS({'A100': 8})",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "cloud-provision-failed",
    ),
    (
        "sky.exceptions.ResourcesUnavailableError: No launchable resource found for task train-7. To fix: relax its "
        "resource requirements.",
        C.LAUNCH,
        L.APPLICATION,
        "cloud-request-unsatisfiable",
    ),
    (
        "This means the catalog does not contain any resources that satisfy this request.",
        C.LAUNCH,
        L.APPLICATION,
        "cloud-request-unsatisfiable",
    ),
    # Round 27: Grid Engine's shepherd that never started the script (qacct's failed field, qstat -j).
    ("failed       27  : searching requested shell", C.LAUNCH, L.SYSTEM_SOFTWARE, "sge-job-not-started"),
    (
        "error reason    1:          03/01/2026 10:11:12 [1001:4410]: failed changing into working directory because: No such file",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "sge-job-not-started",
    ),
    ("failed       26  : opening input/output file", C.LAUNCH, L.SYSTEM_SOFTWARE, "sge-job-not-started"),
    # Round 28: Ray Train's worker group never started (train/v2 exceptions.py); Grid Engine's
    # client without an answer from the qmaster (gdi).
    (
        "ray.train.ControllerError: The worker group startup timed out after 30.0 seconds waiting for 4 workers.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ray-train-worker-group-timeout",
    ),
    (
        "Unable to run job: failed receiving gdi request response for mid=1 (got syncron message receive timeout error).",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    # Round 29: Singularity's / Apptainer's starter failing to build the container.
    (
        "FATAL:   container creation failed: mount /scratch->/scratch error: while mounting /scratch: mount source "
        "/scratch doesn't exist",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 30: a Ray driver that cannot reach the cluster it joins (gcs_rpc_client.h).
    (
        "[2026-03-01 10:00:00,000 E 4410 4410] gcs_rpc_client.h:179: Failed to connect to GCS at address 10.0.0.5:6379 "
        "within 5 seconds.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "store-connect-timeout",
    ),
    # Round 31: srun giving up on a step whose tasks never all started (step_launch.c, launch.c); a Slurm command
    # that cannot read its configuration (read_config.c); MPICH's singleton init with no process manager
    # (simple_pmi.c).
    (
        "srun: error: timeout waiting for task launch, started 3 of 8 tasks",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    ("sbatch: fatal: Unable to process configuration file", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-launch-failure"),
    ("PMII_singinit: execv failed: No such file or directory", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-launch-failure"),
    (
        "[unset]:   This singleton init program attempted to access some feature",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    # Round 32: musl's name-resolution text; the Docker daemon with no GPU device driver, its image-config pull;
    # Singularity 2's abort.
    (
        "nslookup: can't resolve 'job-master-0': Name does not resolve",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "name-resolution",
    ),
    (
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "docker: error pulling image configuration: Get https://registry.example/v2/blobs/sha256/9b: net/http: TLS "
        "handshake timeout.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    ("ABORT  : Retval = 255", C.LAUNCH, L.SYSTEM_SOFTWARE, "container-start-failed"),
    # Round 33: podman's CDI, the Docker daemon's unknown runtime, Apptainer's fatal level.
    (
        "Error: setting up CDI devices: unresolvable CDI devices nvidia.com/gpu=all",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "docker: Error response from daemon: Unknown runtime specified nvidia.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "FATAL:   while extracting /scratch/img.sif: root filesystem extraction failed: extract command failed",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 34: the raylet's worker pool, a worker process dead before it registered (src/ray/raylet/worker_pool.cc).
    (
        "(raylet) [2025-05-02 08:00:01,100 E 811 811] (raylet) worker_pool.cc:590: Some workers of the worker "
        "process(9121) have not registered within the timeout. The process is dead, probably it crashed during start.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ray-train-worker-group-timeout",
    ),
    # Round 34: Torque's clients without their server (src/cmds).
    (
        "qsub: cannot connect to server pbs01 (errno=111) Connection refused",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    (
        "pbsnodes: cannot connect to server pbs01, error=15034 (Server shutting down)",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    # Round 34: a program the kernel will not execute (ENOEXEC), as runc, a Go launcher, the shell and Python print it.
    (
        "standard_init_linux.go:228: exec user process caused: exec format error",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "exec-format-error",
    ),
    ("exec /usr/local/bin/train: exec format error", C.LAUNCH, L.SYSTEM_SOFTWARE, "exec-format-error"),
    (
        "/bin/bash: ./train: cannot execute binary file: Exec format error",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "exec-format-error",
    ),
    ("OSError: [Errno 8] Exec format error: './launch.sh'", C.LAUNCH, L.SYSTEM_SOFTWARE, "exec-format-error"),
    # Round 35: Open MPI's Slurm launcher without srun, and ORTE ending the job on its error (plm/slurm).
    (
        "The SLURM process starter for OpenMPI was unable to locate a",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-daemon-launch-failed",
    ),
    (
        "[[41022,0],0] FORCE-TERMINATE AT (null):1 - error plm_slurm_module.c(471)",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-daemon-launch-failed",
    ),
    # Round 36: srun's report of a task slurmd could not start (step_launch.c), a registry that cannot be
    # chosen for an unqualified image (containers/image shortnames.go), a Ray worker its raylet never took
    # (core_worker_process.cc), JAX's registration RPC as the trimmed status names it.
    ("srun: error: task 3 launch failed: Unspecified error", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-launch-failure"),
    (
        "srun: error: task 0 launch failed: Plugin initialization failed",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "Error: short-name resolution enforced but cannot prompt without a TTY",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        'Error: short-name "trainer:1.4" did not resolve to an alias and no unqualified-search registries are defined '
        'in "/etc/containers/registries.conf"',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "[2026-02-01 09:00:30,001 E 5150 5150] core_worker_process.cc:232: Failed to register worker to Raylet: "
        "IOError: Failed to read data from the socket: End of file worker_id=02000000ffffffffffffffff",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ray-worker-register-failed",
    ),
    (
        "RPC: /tensorflow.CoordinationService/RegisterTask",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "xla-coordination-register-timeout",
    ),
    # Round 37: the Docker daemon without the runtime the job names (runtime_unix.go); rootless podman without
    # its user namespace (pkg/unshare); Open MPI's PMI-2 client under srun (pmix_s2.c, its own typo).
    (
        "docker: Error response from daemon: unknown or invalid runtime name: nvidia.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        'Error: cannot set up namespace using "/usr/bin/newuidmap": exit status 1',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    ("PMI2_Init failed to intialize.  Return code: 14", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-launch-failure"),
    # Round 38: the docker client without its daemon, or refused by it (docker/cli).
    (
        "docker: Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "docker: permission denied while trying to connect to the Docker daemon socket at unix:///var/run/docker.sock: "
        'Head "http://%2Fvar%2Frun%2Fdocker.sock/_ping": dial unix /var/run/docker.sock: connect: permission denied.',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 38: each cloud's stock-out in its documented error (EC2, Compute Engine, Azure).
    (
        "An error occurred (InsufficientInstanceCapacity) when calling the RunInstances operation: We currently do not "
        "have sufficient p5.48xlarge capacity in the Availability Zone you requested (us-east-2b).",
        C.LAUNCH,
        L.SCHEDULER,
        "cloud-capacity-unavailable",
    ),
    (
        " - The zone 'projects/ml/zones/us-central1-a' does not have enough resources available to fulfill the request. "
        " Try a different zone, or try again later.",
        C.LAUNCH,
        L.SCHEDULER,
        "cloud-capacity-unavailable",
    ),
    (
        "Code: SkuNotAvailable Message: The requested size for resource '/subscriptions/1/resourceGroups/rg/providers/"
        "Microsoft.Compute/virtualMachines/gpu0' is currently not available in location 'eastus' zones '' for "
        "subscription '1'.",
        C.LAUNCH,
        L.SCHEDULER,
        "cloud-capacity-unavailable",
    ),
    (
        "(ZonalAllocationFailed) Allocation failed. We do not have sufficient capacity for the requested VM size in "
        "this zone.",
        C.LAUNCH,
        L.SCHEDULER,
        "cloud-capacity-unavailable",
    ),
    # Round 38: SkyPilot failing over from one zone's stock-out to the next is read as the stock-out (a suspicion
    # until the attempt ends; round 27 left it unread).
    (
        "W 03-01 10:11:12 cloud_vm_ray_backend.py:358] Got ZONE_RESOURCE_POOL_EXHAUSTED in us-east1-b (message: The "
        "zone 'projects/p/zones/us-east1-b' does not have enough resources available to fulfill the request.  Try a "
        "different zone, or try again later.)",
        C.LAUNCH,
        L.SCHEDULER,
        "cloud-capacity-unavailable",
    ),
    # Round 38: kubeadm failing a phase of joining the node (workflow/runner.go).
    (
        "error execution phase preflight: [preflight] Some fatal errors occurred:",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "kubeadm-phase-failed",
    ),
    # Round 39: Open MPI without the slots asked for (rmaps); sbatch refusing the script (sbatch.c); a cloud node's
    # capacity code as AWS ParallelCluster's resume program writes it.
    (
        "There are not enough slots available in the system to satisfy the 2 slots",
        C.LAUNCH,
        L.APPLICATION,
        "mpi-not-enough-slots",
    ),
    ("sbatch: error: Batch script contains DOS line breaks (\\r\\n)", C.LAUNCH, L.APPLICATION, "sbatch-script-invalid"),
    (
        "sbatch: error: This does not look like a batch script.  The first line must start with #! followed by the "
        "path to an interpreter.",
        C.LAUNCH,
        L.APPLICATION,
        "sbatch-script-invalid",
    ),
    (
        "[2023-08-28T16:55:46.905] update_node: node gpu-dy-p4d-1 reason set to: (Code:InsufficientInstanceCapacity)"
        "Failure when resuming nodes",
        C.LAUNCH,
        L.SCHEDULER,
        "cloud-capacity-unavailable",
    ),
    # Round 40: rootless podman unpacking a layer owned by ids outside the user's subordinate range.
    (
        'Error: copying system image from manifest list: writing blob: adding layer with blob "sha256:55c2": '
        "processing tar file(potentially insufficient UIDs or GIDs available in user namespace (requested "
        '172761424:0 for /opt/app): Check /etc/subuid and /etc/subgid if configured locally and run "podman system '
        'migrate": lchown /opt/app: invalid argument): exit status 1',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 40: squeue, sinfo and scontrol without their controller; sbatch's script not written; SGE's commlib.
    (
        "slurm_load_jobs error: Unable to contact slurm controller (connect failure)",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    (
        "slurm_load_partitions: Unable to contact slurm controller (connect failure)",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    (
        "sbatch: error: Batch job submission failed: I/O error writing script/environment to file",
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    (
        'error: unable to send message to qmaster using port 6444 on host "sge-master.example.org": got send error',
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    # Round 40: Flux's scheduler refusing the allocation (the "alloc" exception, severity 0).
    (
        "0.022s: job.exception type=alloc severity=0 unsatisfiable request",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "flux-job-exec-failed",
    ),
    # Round 41: Compute Engine's bulk insert short of its minimum count, as Slurm-GCP's resume logs it.
    (
        "resume.py ERROR: group operation failed: Requested minimum count of 6 VMs could not be created.",
        C.LAUNCH,
        L.SCHEDULER,
        "cloud-capacity-unavailable",
    ),
    # Round 42: NCCL_NET naming no loaded network; pyxis's last start-up steps; PALS; cloud-init; Torque's qsub.
    (
        "nid000101:4242:4250 [1] net.cc:626 NCCL WARN Error: network AWS Libfabric not found.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "nccl-no-interface",
    ),
    (
        "slurmstepd: error: pyxis: seccomp filter failed: Invalid argument",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "slurmstepd: error: pyxis: setgid failed",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "launch failed on x1000c0s1b0n0: Couldn't forward RPC launch(0f0e0d0c-aaaa-bbbb-cccc-0123456789ab) to child "
        "x1000c0s2b0n0.hsn.example.org: Resource temporarily unavailable",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "Dec 07 10:00:00 cloud-init[1201]: util.py[WARNING]: Failed running /var/lib/cloud/instance/scripts/part-001 [1]",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "cloud-init-scripts-failed",
    ),
    (
        "Dec 07 10:00:00 cloud-init[1201]: cc_scripts_user.py[WARNING]: Failed to run module scripts-user (scripts in "
        "/var/lib/cloud/instance/scripts)",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "cloud-init-scripts-failed",
    ),
    (
        "qsub: submit error (Unauthorized Request  MSG=group ACL is not satisfied: user ann@login1, queue gpu)",
        C.LAUNCH,
        L.SCHEDULER,
        "pbs-submit-rejected",
    ),
    # Round 43: DeepSpeed's runner with no address for its first host; Open MPI's PMIx client under srun;
    # Torque's aborted job; pyxis refusing the job's container options.
    (
        "[2026-12-07 10:00:00,000] [INFO] [runner.py:417:main] Using IP address of  for node worker-0.train.svc",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "deepspeed-hostfile-invalid",
    ),
    (
        "[n0042.cluster.local:4242] OPAL ERROR: Unreachable in file ext3x_client.c at line 112",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    ("Job cannot be executed", C.LAUNCH, L.SYSTEM_SOFTWARE, "pbs-job-cannot-execute"),
    (
        'srun: error: pyxis: mount source must be a relative path, an absolute path, "tmpfs" or "umount"',
        C.LAUNCH,
        L.APPLICATION,
        "container-args-invalid",
    ),
    (
        'pyxis: error: a container with name "train" does not exist, and --container-image is not set',
        C.LAUNCH,
        L.APPLICATION,
        "container-args-invalid",
    ),
    # Round 44: JAX's TPU backend failing to start; Hydra without its launcher; Slurm's PMI-2 fed garbage; Apptainer
    # without user namespaces; the NVIDIA hook's mounts; Slurm's authentication.
    (
        "RuntimeError: Backend 'tpu_driver' failed to initialize: DEADLINE_EXCEEDED: Failed to connect to remote server "
        "at address: grpc://10.0.0.2:8470.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "jax-tpu-backend-init",
    ),
    (
        "[mpiexec@nid00042] HYDU_create_process (utils/launch/launch.c:75): execvp error on file srun (No such file or "
        "directory)",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "slurmstepd: error: mpi/pmi2: invalid PMI1 init command: `error'",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "ERROR  : Failed to create user namespace: user namespace disabled",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "nvidia-container-cli: mount error: file creation failed: /var/lib/docker/overlay2/0a1b/merged/usr/lib/"
        "x86_64-linux-gnu/libnvidia-ml.so.1: file exists: unknown.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        'squeue: error: Munge encode failed: Failed to access "/var/run/munge/munge.socket.2": Permission denied',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "slurm-auth-failed",
    ),
    ("slurm_load_jobs error: Protocol authentication error", C.LAUNCH, L.SYSTEM_SOFTWARE, "slurm-auth-failed"),
    # Kubernetes' reasons a container did not start (the kubelet's sync results): the node's, or the spec's.
    (
        "  Warning  Failed     12s (x3 over 40s)  kubelet  Error: RunContainerError",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "trainer-worker-0   0/1     CreateContainerError   0          2m",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "trainer-worker-1   0/1     CreateContainerConfigError   0          2m",
        C.LAUNCH,
        L.APPLICATION,
        "container-args-invalid",
    ),
    (
        '  Warning  InspectFailed  5s  kubelet  Failed to apply default image tag "Trainer:Latest": couldn\'t parse '
        "image reference: invalid reference format  Error: InvalidImageName",
        C.LAUNCH,
        L.APPLICATION,
        "container-args-invalid",
    ),
    # Round 45: srun, sbatch or salloc stopping before the launch; runc unable to exec the entrypoint.
    (
        "srun: fatal: cpus-per-task set by two different environment variables SLURM_CPUS_PER_TASK=16 != "
        "SLURM_TRES_PER_TASK=cpu=8",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "slurm-client-fatal",
    ),
    ("sbatch: fatal: Invalid user id: 5012", C.LAUNCH, L.SYSTEM_SOFTWARE, "slurm-client-fatal"),
    (
        "standard_init_linux.go:228: exec user process caused: no such file or directory",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "exec-format-error",
    ),
    (
        'standard_init_linux.go:178: exec user process caused "permission denied"',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "exec-format-error",
    ),
    # Round 45: a job_submit plugin's reason for refusing the job, as sbatch prints it.
    (
        "sbatch: error: Jobs in partition gpu must ask for at least one GPU",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "slurm-client-fatal",
    ),
    # Round 46: oneCCL without a usable libfabric provider; slurmctld unable to sign a credential; Grid Engine's
    # error state; a pod spec its namespace's quota refuses.
    (
        "2026:12:07-10:00:00:(4242) |CCL_ERROR| atl_ofi.cpp:237 init: can't find suitable provider",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "oneccl-transport-unavailable",
    ),
    (
        "srun: error: Unable to create step for job 4242: Error generating job credential",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "slurm-auth-failed",
    ),
    (
        "   4242 0.55500 train.sh   alice        Eqw   12/07/2026 10:00:00                                    8",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "sge-job-not-started",
    ),
    (
        'Error from server (Forbidden): pods "trainer-0" is forbidden: failed quota: team-quota: must specify '
        "limits.memory",
        C.LAUNCH,
        L.APPLICATION,
        "container-args-invalid",
    ),
    # Round 47: Podman without ids to map; NVML refused inside a container; Grid Engine's qmaster out of reach.
    (
        "Error: error creating container storage: could not find enough available IDs",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    ("Failed to initialize NVML: Insufficient Permissions", C.LAUNCH, L.SYSTEM_SOFTWARE, "container-start-failed"),
    (
        'Unable to run job: unable to contact qmaster using port 6444 on host "sge-master".',
        C.LAUNCH,
        L.SCHEDULER,
        "slurmctld-unreachable",
    ),
    # Round 49: Open MPI's start-up help texts; srun's PMI-1 server; sbatch quoted by a workflow tool; LSF's bsub.
    (
        "It looks like orte_init failed for some reason; your parallel process is",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    (
        "A requested component was not found, or was unable to be opened.  This",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    (
        "A request was made to bind to that would result in binding more",
        C.LAUNCH,
        L.APPLICATION,
        "mpi-not-enough-slots",
    ),
    ("srun: error: PMK_KVS_Barrier duplicate request from task 3", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-launch-failure"),
    (
        "SLURM sbatch failed. The error message was sbatch: error: Batch job submission failed: Job dependency problem",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "slurm-client-fatal",
    ),
    ("Request aborted by esub. Job not submitted.", C.LAUNCH, L.APPLICATION, "batch-submit-rejected"),
    (
        "[ERR.] PJM 0057 pjsub node=64 is greater than the upper limit (48).",
        C.LAUNCH,
        L.APPLICATION,
        "batch-submit-rejected",
    ),
    # Round 50: Torque's submit filter; srun's PMI2 plugin; an accelerator the zone lacks; an admission webhook.
    (
        "qsub: submit filter returned an error code, aborting job submission.",
        C.LAUNCH,
        L.SCHEDULER,
        "pbs-submit-rejected",
    ),
    (
        "srun: error: mpi/pmi2: failed to send temp kvs to compute nodes",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        " - The resource 'projects/p1/zones/us-east1-b/acceleratorTypes/nvidia-h100-80gb' was not found",
        C.LAUNCH,
        L.APPLICATION,
        "cloud-request-unsatisfiable",
    ),
    (
        'Error from server: admission webhook "validate.kyverno.svc" denied the request: policy require-limits',
        C.LAUNCH,
        L.APPLICATION,
        "container-args-invalid",
    ),
    # Round 51: Open MPI's ppr mapper; Hydra losing its proxy; sshd past MaxStartups.
    ("Your job has requested more processes than the ppr for", C.LAUNCH, L.APPLICATION, "mpi-not-enough-slots"),
    (
        "[mpiexec@n1] HYD_pmcd_pmiserv_send_signal (pm/pmiserv/pmiserv_cb.c:177): unable to write data to proxy",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "debug1: kex_exchange_identification: banner line 0: Exceeded MaxStartups",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "sshd-maxstartups",
    ),
    (
        "sshd[811]: drop connection #10 from [10.0.0.5]:50122 on [10.0.0.9]:22 past MaxStartups",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "sshd-maxstartups",
    ),
    # Round 52: a GPU index the process cannot see; Open MPI without a point-to-point layer.
    ("RuntimeError: CUDA error: invalid device ordinal", C.LAUNCH, L.APPLICATION, "gpu-index-not-visible"),
    (
        "gpu7:1:2 [1] transport/p2p.cc:275 NCCL WARN Cuda failure 'invalid device ordinal'",
        C.LAUNCH,
        L.APPLICATION,
        "gpu-index-not-visible",
    ),
    (
        'RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "../aten/src/ATen/cuda/CUDAContext.cpp":50',
        C.LAUNCH,
        L.APPLICATION,
        "gpu-index-not-visible",
    ),
    (
        "lightning_fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [0, 1]",
        C.LAUNCH,
        L.APPLICATION,
        "gpu-index-not-visible",
    ),
    ("   No components were able to be opened in the pml framework.", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-init-failed"),
    # Round 53: Open MPI refusing root, without a route to its daemon, its RTE failing; pam_slurm_adopt.
    ("mpirun has detected an attempt to run as root.", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-launch-failure"),
    (
        "ORTE does not know how to route a message to the specified daemon",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "It looks like MPI runtime init failed for some reason; your parallel process is",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    (
        "Access denied by pam_slurm_adopt: you have no active jobs on this node",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "ssh-auth-refused",
    ),
    # Round 53: Open MPI's help texts for a peer no transport reaches, a rank without PMIx, mpirun without prterun.
    (
        "MPI_INIT has failed because at least one MPI process is unreachable",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    (
        "At least one pair of MPI processes are unable to reach each other for",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-init-failed",
    ),
    ("PMIx_Init failed for the following reason:", C.LAUNCH, L.SYSTEM_SOFTWARE, "mpi-launch-failure"),
    (
        "Open MPI's mpirun command was unable to find an underlying prterun",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    # Round 54: munged refusing to start; EKS nodes that never join; an ECS task without its secrets.
    (
        'munged: Error: Logfile is insecure: group-writable permissions set on "/var/log"',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "slurm-auth-failed",
    ),
    (
        'CREATE_FAILED – "Nodegroup ng-1 failed to stabilize: [{Code: NodeCreationFailure,Message: Instances failed to '
        'join the kubernetes cluster,ResourceIds: [i-1]}]"',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "cloud-provision-failed",
    ),
    (
        "ResourceInitializationError: unable to pull secrets or registry auth: execution resource retrieval failed",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 55: Docker's port allocator; runc without its cgroups; the kubelet without a Secret; Hydra and Open MPI.
    (
        "Error response from daemon: driver failed programming external connectivity on endpoint web (abc): Bind for "
        "0.0.0.0:8000 failed: port is already allocated",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "port-in-use",
    ),
    (
        "docker: Error response from daemon: cgroups: cannot find cgroup mount destination: unknown.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        'Warning  Failed  29m  kubelet  Error: secrets "train-secret" not found',
        C.LAUNCH,
        L.APPLICATION,
        "container-args-invalid",
    ),
    (
        "[proxy:0:0@n1] HYDU_create_process (utils/launch/launch.c:22): pipe error (Too many open files)",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "Open MPI tried to bind a new process, but something went wrong.  The",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    # Round 56: PBS's never-runnable job; LSF's refusal quoted; Docker's and containerd's names; the topology manager.
    (
        "comment = Can Never Run: Insufficient amount of resource: ncpus (R: 88 A: 50 T: 50)",
        C.LAUNCH,
        L.SCHEDULER,
        "pbs-submit-rejected",
    ),
    ('and error: "rhel7: No such queue. Job not submitted."', C.LAUNCH, L.APPLICATION, "batch-submit-rejected"),
    (
        'docker: Error response from daemon: Conflict. The container name "/fwd" is already in use by container "4a5a".',
        C.LAUNCH,
        L.APPLICATION,
        "container-args-invalid",
    ),
    (
        'Warning  Failed  7s  kubelet  Error: failed to reserve container name "p_ns": name "p_ns" is reserved for "8181"',
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "kube-system   kube-dns-b54d5f547-22dks   0/3     Topology Affinity Error   0",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 57: flux-job's exception with the job's ID; an sshd closing before its banner.
    (
        "0.031s: job.exception f8ezArJcP type=exec severity=0 task 0 (host c12): start failed: train: No such file",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "flux-job-exec-failed",
    ),
    ("ssh_exchange_identification: Connection closed by remote host", C.LAUNCH, L.SYSTEM_SOFTWARE, "sshd-maxstartups"),
    ("kex_exchange_identification: Connection closed by remote host", C.LAUNCH, L.SYSTEM_SOFTWARE, "sshd-maxstartups"),
    (
        "kex_exchange_identification: read: Connection reset by peer",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "ssh-launch-failed",
    ),
    # Round 57: Ray's runtime environment that could not be set up.
    (
        "ray.exceptions.RuntimeEnvSetupError: Failed to setup runtime environment.",
        C.LAUNCH,
        L.AMBIGUOUS,
        "ray-runtime-env-failed",
    ),
    (
        'Error from server (BadRequest): container "trainer" in pod "train-worker-0" is waiting to start: trying and '
        "failing to pull image",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    # Round 58: Open MPI's daemon without its libraries; srun outside its job; enroot's switch; the kubelet's admission.
    (
        "A daemon (pid 11893) died unexpectedly with status 127 while attempting",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-daemon-launch-failed",
    ),
    (
        "prted: error while loading shared libraries: libimf.so: cannot open shared object file: No such file or "
        "directory",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-daemon-launch-failed",
    ),
    (
        "srun: error: Unable to confirm allocation for job 812: Invalid job id specified",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    (
        "enroot-switchroot: failed to switch root: /raid/enroot/data/pyt: Invalid argument",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "Message:          Pod was rejected: Node didn't have enough resource: cpu, requested: 150, used: 11388, "
        "capacity: 11500",
        C.LAUNCH,
        L.SCHEDULER,
        "k8s-admission-out-of-resource",
    ),
    ("Reason:           OutOfcpu", C.LAUNCH, L.SCHEDULER, "k8s-admission-out-of-resource"),
    # Round 59: a device the hook cannot find; Apptainer's verbose fatal; Podman's locks; clouds without capacity.
    (
        "nvidia-container-cli: device error: no-gpu-has-128MiB-to-run: unknown device: unknown",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "FATAL   [U=0,P=426377]     Master()                      container creation failed: while applying cgroups "
        "config: unable to start unit",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "Error: allocating lock for new container: allocation failed; exceeded num_locks (2048)",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "container-start-failed",
    ),
    (
        "Error: Compute.OverconstrainedAllocationRequest : The VM size (or combination of VM sizes) required by this "
        "deployment cannot be provisioned due to deployment request constraints.",
        C.LAUNCH,
        L.SCHEDULER,
        "cloud-capacity-unavailable",
    ),
    ("Errors: p5.48xlarge in aws/us-west-1: NoCapacityError.", C.LAUNCH, L.SCHEDULER, "cloud-capacity-unavailable"),
    # Round 59: Blue Gene/L's I/O-node daemon without the job's node map (APPCHILD).
    (
        "APPCHILD 1132600084 2005.11.21 R14-M0-NC-I:J18-U11 2005-11-21-11.08.04.944948 R14-M0-NC-I:J18-U11 RAS APP FATAL ciod: Error creating node map from file /p/gb2/maps/8k.map: No child processes",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
    # Round 60: libtpu's held lock; an image without the node's platform; Open MPI's TCP transport at wire-up.
    (
        "I0000 00:00:1649423660.053391 1924758 f236.cc:165] libtpu.so already in use by another process probably owned "
        "by another user.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "jax-tpu-backend-init",
    ),
    (
        "no matching manifest for linux/arm64 in the manifest list entries",
        C.LAUNCH,
        L.APPLICATION,
        "container-gpu-unsupported",
    ),
    (
        "WARNING: Open MPI failed to TCP connect to a peer MPI process.  This",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "mpi-launch-failure",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


LINES_WITH_ONSET: list[tuple[str, FailureClass, CauseLayer, str, Onset]] = [
    (
        "[E socket.cpp:500] [c10d] The server socket has failed to listen on any local network address.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "port-in-use",
        Onset.SUSPECTED,
    ),
    ("OSError: [Errno 98] Address already in use", C.LAUNCH, L.SYSTEM_SOFTWARE, "port-in-use", Onset.SUSPECTED),
    # Round 40: members that have not joined while the job forms: a suspicion, they may still come.
    (
        "INFO:root:Waiting in store based barrier to initialize process group for rank: 0, key: "
        "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "members-not-joined",
        Onset.SUSPECTED,
    ),
    (
        "2018-04-17 20:50:08.778624: I tensorflow/core/distributed_runtime/master.cc:221] CreateSession still "
        "waiting for response from worker: /job:ps/replica:0/task:0",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        "members-not-joined",
        Onset.SUSPECTED,
    ),
    # Round 42: an NGC image that does not know the node's GPU.
    (
        "ERROR: No supported GPU(s) detected to run this container",
        C.LAUNCH,
        L.APPLICATION,
        "container-gpu-unsupported",
        Onset.SUSPECTED,
    ),
    # Round 51: W&B unable to start its run.
    (
        "wandb.errors.errors.CommError: Run initialization has timed out after 90.0 sec.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        "tracking-service-unreachable",
        Onset.SUSPECTED,
    ),
]


test_family_line_decides_by_its_pattern_and_onset = cases.lines_decided(LINES_WITH_ONSET)


NOT_THESE: list[tuple[str, str]] = [
    # c10d's per-address bind warnings for an address this host cannot take: retried on the next address,
    # in both torch log formats. (With errno 98 the port is in use on every address: port-in-use, round 24.)
    (
        "[W socket.cpp:426] [c10d] The server socket has failed to bind to [::]:25641 (errno: 97 - Address family not "
        "supported by protocol).",
        "port-in-use",
    ),
    (
        "[W1203 10:00:00.000000 77 torch/csrc/distributed/c10d/socket.cpp:462] [c10d] The server socket has failed to "
        "bind to 10.0.0.9:29500 (errno: 99 - Cannot assign requested address).",
        "port-in-use",
    ),
]


test_lines_not_for_the_pattern = cases.lines_not_for_the_pattern(NOT_THESE)


BLAMING_NO_NODE: list[str] = [
    # A remote status, a local one, a peer's closed socket, a connect timeout: nobody's node.
    "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to "
    "(host1, 29500).",
]


test_echoes_and_peers_blame_no_node = cases.excerpts_blaming_no_node(BLAMING_NO_NODE)


BENIGN: list[str] = [
    # srun waiting for resources inside its allocation, then getting them.
    "srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)",
    "srun: Job 4242 step creation still disabled, retrying (Requested nodes are busy)",
    "srun: Step created for StepId=4242.1",
    # srun waiting on a busy controller (allocate.c's retry message) and its INFO lines.
    "srun: Slurm controller not responding, sleeping and retrying.",
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    # Round 31: srun after a step cancelled while it started (launch.c), a requeue among them.
    "srun: StepId=4410.0 aborted before step completely launched.",
    # NCCL's INFO about a connect it retries, and the IB resiliency failing over (it recovers).
    "gpu-07:4100:4180 [3] NCCL INFO ncclOsSocketStartConnect: connect to 10.0.0.3<45678> returned Connection refused, "
    "retrying (1/34) after sleep for 100 msec",
    # srun waiting for busy nodes (a retry), and Slurm's reservation and partition INFO.
    "srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)",
    # Open MPI / PRRTE help texts' other lines and a daemon that did start.
    "This usually is caused by:",
    "  settings, or configure OMPI with --enable-orterun-prefix-by-default",
    # JAX's coordination service when all is well.
    "I0301 10:00:00.000000 4242 coordination_service.cc:600] Waiting for 3/4 tasks to connect.",
    "I0301 10:00:00.000000 4242 coordination_service_agent.cc:300] Coordination agent has successfully connected.",
    # ssh that worked, and a warning about a host key it learned.
    "Warning: Permanently added 'gpu-node-3,10.0.0.3' (ECDSA) to the list of known hosts.",
    "pdsh@gpu-node-1: gpu-node-3: ssh exited with exit code 0",
    # The kubelet pulling an image that is there, and the toolkit's own INFO.
    '  Normal   Pulled     5s    kubelet  Successfully pulled image "nvcr.io/nvidia/pytorch:24.05-py3" in 2m1s',
    '  Normal   Pulling    2m    kubelet  Pulling image "nvcr.io/nvidia/pytorch:24.05-py3"',
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
    # c10d connecting, and NCCL's socket layer retrying.
    "[I1202 10:00:00.123456789 socket.cpp:787] [c10d] The client socket has connected to [node01]:29500 on "
    "[node02]:51234.",
    "node7:41:52 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    # torchelastic's rendezvous going well, and a graceful exit.
    "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous complete for workers. Result:",
    "I1202 10:00:00.000 dynamic_rendezvous.py:1137] The node 'trainer-0_42_0' has joined round 0 of the c10d "
    "rendezvous 'job7' as rank 0 in a world of size 2.",
    # NCCL's bootstrap at INFO, and its connect retried.
    "gpu-3:100:200 [0] NCCL INFO Call to connect returned Connection refused, retrying",
    "node-4:3120:3120 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.4<0>",
    # DeepSpeed's launcher once ssh worked.
    "[INFO] [runner.py:555:main] Using IP address of 10.0.0.2 for node worker-2",
    # A running JAX job's coordination RPC closed at shutdown.
    "Additional GRPC error information from remote target coordination_service while calling "
    "/tensorflow.CoordinationService/WatchJobState:",
    # torch.distributed's rendezvous at INFO.
    "INFO:torch.distributed.distributed_c10d:Rank 0: Completed store-based barrier for key:store_based_barrier_key:1 "
    "with 8 nodes.",
    # DeepSpeed's single-node run without a hostfile.
    "[2023-05-01 09:00:00,000] [WARNING] [runner.py:202:fetch_hostfile] Unable to find hostfile, will proceed with "
    "training with local resources only.",
    # Ascend's INFO and warnings at start.
    "[INFO] HCCL(12345,python):2024-05-21-11:57:54.167.645 [hccl_comm.cc:120] HcclCommInitRootInfo success",
    # JAX finding no TPU on a CPU host (the fallback it announces is not a failure without the TPU's own words).
    "WARNING:jax._src.xla_bridge:An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not "
    "installed. Falling back to cpu.",
    # Open MPI's UCX PML on a healthy start.
    "[gpu1:1581048] pml_ucx.c:289 mca_pml_ucx_init",
    # JAX's fallback to the CPU, and PyTorch XPU's empty device count.
    "An NVIDIA GPU may be present on this machine, but a CUDA-enabled jaxlib is not installed. Falling back to cpu.",
    # A missing helper in a prologue; a non-fatal Flux exception; a healthy SkyPilot controller.
    "/var/spool/slurmd/job4411/slurm_script: line 3: module: command not found",
    # The habanalabs driver's success, MXNet's storage manager chosen, the c10d barrier passed.
    "I0101 10:00:00.1 1 distributed_c10d.py:1] Rank 0: Completed store-based barrier for key:"
    "store_based_barrier_key:1 with 8 nodes.",
    # Round 25: pyxis's progress and the header of the log it prints after a failure.
    "slurmstepd: pyxis: importing docker image: nvcr.io#nvidia/pytorch:24.05-py3",
    "slurmstepd: pyxis: imported docker image: nvcr.io#nvidia/pytorch:24.05-py3",
    # Round 52: sshd skipping an address it could not bind, going on with the others.
    "Nov 9 12:10:55 admin1 sshd[1761]: error: Bind to port 22 on 0.0.0.0 failed: Address already in use.",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    "host4:31:40 [2] NCCL INFO ncclOsSocketStartConnect: connect to 10.7.0.9<5100> returned Connection refused, "
    "retrying (3/34) after sleep for 300 msec",
    "host4:31:40 [2] NCCL INFO Call to accept returned Resource temporarily unavailable, retrying",
    "[W101 10:00:00.000 socket.cpp:1] [c10d] The IPv6 network addresses of (host1, 29500) cannot be retrieved (gai "
    "error: -2 - Name or service not known).",
    "[I101 10:00:00.000 socket.cpp:1] [c10d] The client socket has connected to [host1]:29500 on [host4]:40122.",
    "srun: Job 812 step creation temporarily disabled, retrying (Requested nodes are busy)",
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    # Round 27: qacct's record of a job that ran and ended well.
    "failed       0",
    # Round 33: PostgreSQL's FATAL (two spaces), not Apptainer's.
    'FATAL:  password authentication failed for user "mlflow"',
    # Round 34: a worker process still alive and slow to register is a slow start, not a failed one.
    "(raylet) [2025-05-02 08:00:01,100 E 811 811] (raylet) worker_pool.cc:590: Some workers of the worker process(9121) "
    "have not registered within the timeout. The process is still alive, probably it's hanging during start.",
    # Round 36: a task srun could not start because its job was already ending (a cancel or a requeue);
    # a coordination RPC other than the registration, in a running job.
    "srun: error: task 2 launch failed: Job/step already completing or completed",
    "RPC: /tensorflow.CoordinationService/Heartbeat",
    # Round 38: a cloud's capacity named in a healthy notice; kubeadm finishing a phase.
    "Reserved 8 p5.48xlarge instances; sufficient capacity in us-east-2b",
    '[upload-config] Storing the configuration used in ConfigMap "kubeadm-config" in the "kube-system" Namespace',
    # Round 42: cloud-init running the same module without a failure.
    "Dec 07 10:00:00 cloud-init[1201]: util.py[DEBUG]: Running module scripts-user (<module 'cloudinit.config.cc_scripts_user'>)",
    # Round 43: the runner's address found.
    "[2026-12-07 10:00:00,000] [INFO] [runner.py:417:main] Using IP address of 10.0.0.5 for node worker-0",
    # Round 46: Grid Engine's queued and running jobs.
    "   4243 0.55500 train.sh   alice        qw    12/07/2026 10:00:00                                    8",
    "   4244 0.55500 train.sh   alice        r     12/07/2026 10:00:00 gpu.q@node-3                       8",
    # Round 49: bsub's answer when the job is queued.
    "Job <4410> is submitted to queue <gpu>.",
    "[INFO] PJM 0000 pjsub Job 4410 submitted.",
    # Round 51: W&B's retry notice before it gives up.
    "wandb: Network error (ReadTimeout), entering retry loop.",
    # Round 52: the device count and Lightning's accepted devices.
    "torch.cuda.device_count() = 8",
    "GPU available: True (cuda), used: True",
    # Round 57: kubectl logs before the container has started: nothing failed yet.
    'Error from server (BadRequest): container "pytorch" in pod "train-worker-0" is waiting to start: PodInitializing',
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


def test_a_graceful_rendezvous_exit_is_no_launch_failure(matcher: Matcher):
    hit = matcher.failure("torch.distributed.elastic.rendezvous.api.RendezvousGracefulExitError")
    assert hit is None or hit.failure_class is not C.LAUNCH


def test_the_bind_warnings_alone_are_no_failure(matcher: Matcher):
    for line, _ in NOT_THESE[:2]:
        assert matcher.failure(line) is None, line


def test_missing_gloo_interface_does_not_restart(catalogue):
    """The host's address or GLOO_SOCKET_IFNAME is wrong: a restart finds it wrong again."""
    book = catalogue.runbooks[C.LAUNCH]
    assert next(p for p in book.patterns if p.id == "gloo-no-interface").recoverable_by_restart is False


def test_a_jvm_unknown_host_is_not_gloo(catalogue, matcher):
    got = classify_text(catalogue, matcher, "java.net.UnknownHostException: Unable to find address for: gpu-node-12")
    assert got.pattern != "gloo-no-interface"


def test_the_gloo_connect_timeout_is_launch_not_the_python_exception(catalogue, matcher):
    got = classify_text(
        catalogue, matcher, "RuntimeError: [gloo/transport/tcp/pair.cc:611] Connect timeout [10.0.0.5]:27023"
    )
    assert got.failure_class is C.LAUNCH


def test_a_cloud_node_that_never_came_up_is_its_capacity_not_a_node_failure(catalogue, matcher):
    # Round 39: the node AWS ParallelCluster could not launch.
    reason = "(Code:LimitedInstanceCapacity)Failure when resuming nodes"
    cases.assert_reason_outranks_the_requeue(catalogue, matcher, reason, C.LAUNCH, "cloud-capacity-unavailable")
