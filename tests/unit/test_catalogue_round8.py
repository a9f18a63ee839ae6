"""Round 8 of the catalogue (issue 11): families written from the code that prints them.

Each line is a format string of the software that prints it, filled in with made-up
hosts, ids, numbers and paths: SchedMD/slurm src/srun/allocate.c and src/salloc/salloc.c
("Job allocation %u has been revoked"); open-mpi/ompi orte/mca/errmgr/base/help-errmgr-base.txt
([failed-daemon-launch], [failed-daemon], [node-died]) and errmgr_default_hnp.c; the CUDA
runtime's cudaError enum (driver_types.h) and the driver's cuGetErrorString texts as
PyTorch prints them ("CUDA error: %s"); openxla/xla xla/pjrt/distributed/client.h,
xla/tsl/distributed_runtime/coordination/coordination_service.cc and
coordination_service_error_util.cc, the GPU and TPU allocators' RESOURCE_EXHAUSTED texts;
OpenSSH ssh.c / sshconnect.c / sshconnect2.c and pdsh as DeepSpeed's multinode runner uses
them; torch/distributed/elastic/agent/server/api.py and multiprocessing/errors; cpython
Lib/subprocess.py CalledProcessError; Lightning's signal connector.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, node implicated, nodes, pattern)
DECIDED = [
    # srun / salloc: the controller ended the allocation they waited on. Not a prolog failure.
    (
        "srun: error: Job allocation 81234 has been revoked",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-allocation-revoked",
    ),
    (
        "salloc: Job allocation 81234 has been revoked.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-allocation-revoked",
    ),
    # salloc's time-limit form of the same message stays the time limit.
    (
        "salloc: Job 81234 has exceeded its time limit and its allocation has been revoked.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-time-limit",
    ),
    # A revoke with its reason in the same excerpt: the reason decides.
    (
        "srun: error: Job allocation 81234 has been revoked\n"
        "slurmstepd: error: *** JOB 81234 ON gpu-07 CANCELLED AT 2026-12-02T10:00:00 DUE TO PREEMPTION ***",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-preempted",
    ),
    # A real prolog failure is still node_failure's.
    (
        "slurmd: error: Prolog failure on node gpu-07",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        ["gpu-07"],
        "slurm-prolog-failure",
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
        False,
        [],
        "mpi-daemon-launch-failed",
    ),
    (
        "An ORTE daemon has unexpectedly failed after launch and before\n"
        "communicating back to mpirun. This could be caused by a number\n"
        "of factors, including an inability to create a connection back\n"
        "to mpirun due to a lack of common network interfaces and/or no\n"
        "route found between them.",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        False,
        [],
        "mpi-daemon-launch-failed",
    ),
    # The mid-run case is unchanged: the remote daemon's node is named.
    (
        "ORTE has lost communication with a remote daemon.\n\n  HNP daemon   : [[16919,0],0] on node cn031\n"
        "  Remote daemon: [[16919,0],3] on node cn127\n",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        True,
        ["cn127"],
        "mpi-daemon-lost",
    ),
    # The CUDA enum: the program's build or launch configuration, the same on every node.
    (
        "RuntimeError: CUDA error: too many resources requested for launch",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "cuda-build-mismatch",
    ),
    ("RuntimeError: CUDA error: invalid device function", C.APP_ERROR, L.APPLICATION, False, [], "cuda-build-mismatch"),
    (
        "RuntimeError: CUDA error: invalid configuration argument",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "cuda-build-mismatch",
    ),
    (
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "cuda-build-mismatch",
    ),
    (
        "RuntimeError: CUDA error: CUDA driver is a stub library",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "cuda-build-mismatch",
    ),
    (
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain.",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "cuda-build-mismatch",
    ),
    (
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_NO_BINARY_FOR_GPU",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "cuda-build-mismatch",
    ),
    # The node's MPS daemon.
    (
        "RuntimeError: CUDA error: MPS client failed to connect to the MPS control daemon or the MPS server",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "cuda-mps-failure",
    ),
    (
        "cudaErrorMpsServerNotReady: MPS server is not ready to accept new MPS client requests",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "cuda-mps-failure",
    ),
    # XLA's allocators.
    (
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 2.00GiB "
        "(2147483648B) on device ordinal 0",
        C.GPU_OOM,
        L.APPLICATION,
        False,
        [],
        "tf-xla-oom",
    ),
    (
        "RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00G. That was not possible. "
        "There are 3.50G free.",
        C.GPU_OOM,
        L.APPLICATION,
        False,
        [],
        "tf-xla-oom",
    ),
    (
        "XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space "
        "hbm. Used 17.5G of 15.48G hbm.",
        C.GPU_OOM,
        L.APPLICATION,
        False,
        [],
        "tf-xla-oom",
    ),
    # JAX's coordination service: a peer task lost (a cascade, no node from the text).
    (
        "F0301 10:00:00.000000 4242 client.h:80] Terminating process because the coordinator detected missing "
        "heartbeats. This most likely indicates that another task died; see the other task logs for more "
        "details. Status: UNAVAILABLE: Task /job:jax_worker/replica:0/task:3 heartbeat timeout. This indicates "
        "that the remote task has failed, got preempted, or crashed unexpectedly.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "xla-coordination-peer-lost",
    ),
    (
        "F0511 07:38:29.000000 315 client.h:77] Terminating process because the JAX distributed service detected "
        "fatal errors. This most likely indicates that another task died; see the other task logs for more details.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "xla-coordination-peer-lost",
    ),
    (
        "absl::Status: UNAVAILABLE: Failed to send RPC to coordination service. Either the leader task was "
        "preempted/died/restarted unexpectedly or this task is experiencing network issues.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "xla-coordination-peer-lost",
    ),
    (
        "INTERNAL: Coordination service has stopped. RegisterTask() from task: /job:jax_worker/replica:0/task:1 "
        "failed.",
        C.COMM_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "xla-coordination-peer-lost",
    ),
    # ... and the job that never formed.
    (
        "jaxlib.xla_extension.XlaRuntimeError: DEADLINE_EXCEEDED: Barrier timed out. Id: "
        "[Init]Wait_for_all_tasks_to_register::0. This usually happens because a task triggered the barrier too "
        "early or too slowly.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        [],
        "xla-coordination-register-timeout",
    ),
    # ssh-started workers.
    (
        "ssh: connect to host gpu-node-3 port 22: Connection timed out",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        [],
        "ssh-launch-failed",
    ),
    (
        "pdsh@gpu-node-1: gpu-node-3: ssh exited with exit code 255",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        [],
        "ssh-launch-failed",
    ),
    (
        "gpu-node-3: Permission denied (publickey,gssapi-keyex,gssapi-with-mic).",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        False,
        [],
        "ssh-auth-refused",
    ),
    # torchelastic restarting its workers; the wrapped worker error, when present, decides.
    (
        "[2026-12-02 10:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group FAILED. "
        "2/3 attempts left; will restart worker group",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "launcher-child-failed",
    ),
    (
        "[rank1]: KeyError: 'input_ids'\n"
        "[2026-12-02 10:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group "
        "FAILED. 2/3 attempts left; will restart worker group",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "python-keyerror",
    ),
    # A launcher's child killed by SIGKILL, and a session that hung up.
    (
        "subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' died with <Signals.SIGKILL: 9>.",
        C.APP_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "subprocess-killed",
    ),
    (
        "  traceback : Signal 1 (SIGHUP) received by PID 4242",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        False,
        [],
        "srun-task-terminated",
    ),
    # Grid Engine's execd enforcing the queue's hard limits (msg_execd.h).
    (
        "05/04/2026 03:36:38|  main|node001|W|job 48.1 exceeded hard wallclock time - initiate terminate method",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-time-limit",
    ),
    (
        '05/04/2026 03:36:38|  main|node001|W|job 48 exceeds job hard limit "h_rt" of queue "gpu.q@node001" '
        "(86401.00000 > limit:86400.00000) - sending SIGKILL",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-time-limit",
    ),
    (
        '05/04/2026 03:36:38|  main|node001|W|job 48 exceeds job hard limit "h_vmem" of queue "gpu.q@node001" '
        "(68719476736.00000 > limit:68719476736.00000) - sending SIGKILL",
        C.HOST_OOM,
        L.APPLICATION,
        False,
        [],
        "slurm-memory-limit",
    ),
    # A failed glog / abseil CHECK: native code aborts.
    (
        "F1202 10:00:00.123456  4242 gpu_executable.cc:123] Check failed: status.ok() INTERNAL: Failed to launch\n"
        "*** Check failure stack trace: ***",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        False,
        [],
        "native-abort",
    ),
    # 128+N exit statuses: a death by signal, the weakest evidence.
    ("Process finished with exit code 139", C.PROCESS_CRASH, L.AMBIGUOUS, False, [], "exit-by-signal"),
    ("ERROR: process exited with exit status 134", C.PROCESS_CRASH, L.AMBIGUOUS, False, [], "exit-by-signal"),
    # NVIDIA's container toolkit refusing the node's GPUs, inside docker's OCI error: the node's driver stack.
    (
        "docker: Error response from daemon: failed to create shim task: OCI runtime create failed: runc create "
        "failed: unable to start container process: error during container init: error running hook #0: error "
        "running hook: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\n"
        "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch: unknown.",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "nvidia-driver-unreachable",
    ),
    # A container that could not start for its image.
    (
        '  Warning  Failed     12s   kubelet  Failed to pull image "nvcr.io/nvidia/pytorch:24.05-py3": rpc error: '
        "code = Unknown desc = failed to pull and unpack image",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        False,
        [],
        "container-start-failed",
    ),
    (
        "trainer-worker-0   0/1     ImagePullBackOff   0          3m",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
        False,
        [],
        "container-start-failed",
    ),
    # torchelastic's keep-alive failing records this node FAILED in the rendezvous state (dynamic_rendezvous.py
    # _keep_alive: NodeState.FAILED): the store is unreachable, read as the rendezvous error it names.
    (
        "W0813 22:23:32.979031 140204091807488 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1267] "
        "The node 'gpu-07_4242_0' has failed to send a keep-alive heartbeat to the rendezvous '100' due to an "
        "error of type RendezvousTimeoutError.",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
        False,
        [],
        "rendezvous-error",
    ),
    # Lightning saving and requeueing on Slurm's warning signal.
    (
        "[rank: 0] Handling auto-requeue signal: 10",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "framework-requeue-signal",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "implicated", "nodes", "pattern"), DECIDED)
def test_source_lines_decide_by_their_pattern(catalogue, matcher, text, cls, layer, implicated, nodes, pattern):
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer, got.pattern) == (cls, layer, pattern)
    assert (got.node_implicated, got.nodes) == (implicated, nodes)


def test_allocation_revoked_has_no_verdict():
    """A revoke does not say whether a cancel (never), a preemption or a node failure (yes) ended the job."""
    from respawn.attribution.runbook import Catalogue

    book = Catalogue.load().runbooks[C.SCHEDULER_LIMIT]
    pattern = next(p for p in book.patterns if p.id == "slurm-allocation-revoked")
    assert pattern.recoverable_by_restart is None


# Lines from the same sources, and their neighbours, that say nothing failed.
BENIGN = [
    # srun / salloc while the allocation is healthy.
    "srun: job 81234 queued and waiting for resources",
    "salloc: Granted job allocation 81234",
    "srun: Job allocation 81234 has been granted",
    # Open MPI / PRRTE help texts' other lines and a daemon that did start.
    "This usually is caused by:",
    "  settings, or configure OMPI with --enable-orterun-prefix-by-default",
    # CUDA texts that are not errors.
    "CUDA driver version: 12040, runtime version: 12010",
    "nvidia-cuda-mps-control -d started; MPS server ready",
    "I0301 10:00:00.000000 1 cuda_executor.cc:1000] successful NUMA node read from SysFS had negative value (-1)",
    # JAX's coordination service when all is well.
    "I0301 10:00:00.000000 4242 coordination_service.cc:600] Waiting for 3/4 tasks to connect.",
    "I0301 10:00:00.000000 4242 coordination_service_agent.cc:300] Coordination agent has successfully connected.",
    "I0301 10:00:00.000000 4242 coordination_service.cc:800] /job:jax_worker/replica:0/task:1 has disconnected "
    "from coordination service.",
    # ssh that worked, and a warning about a host key it learned.
    "Warning: Permanently added 'gpu-node-3,10.0.0.3' (ECDSA) to the list of known hosts.",
    "pdsh@gpu-node-1: gpu-node-3: ssh exited with exit code 0",
    # torchelastic's healthy lines and the warning it prints while shutting workers down.
    "[2026-12-02 10:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Rendezvous complete "
    "for workers. Result:",
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4242 closing signal SIGTERM",
    # Lightning setting its handlers up (no signal received yet).
    "SLURM auto-requeueing enabled. Setting signal handlers.",
    # Grid Engine's soft limits only warn; exit statuses that are no death by signal.
    "05/04/2026 03:36:38|  main|node001|W|job 48.1 exceeded soft wallclock time - initiate soft notify method",
    "Process finished with exit code 0",
    "exit code 1390 written to results.csv",
    # "check failed" in a health summary's prose is not glog's CHECK.
    "  sanity check failed: 0 of 12",
    # The kubelet pulling an image that is there, and the toolkit's own INFO.
    '  Normal   Pulled     5s    kubelet  Successfully pulled image "nvcr.io/nvidia/pytorch:24.05-py3" in 2m1s',
    '  Normal   Pulling    2m    kubelet  Pulling image "nvcr.io/nvidia/pytorch:24.05-py3"',
    "I1202 10:00:00.000000 4242 nvc.c:396] initializing library context (version=1.14.3, build=abc)",
    # A subprocess that exited normally.
    "Command '['python', 'prep.py']' finished with exit status 0.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
