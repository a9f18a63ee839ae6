"""Round 6 of the catalogue (issue 11): node loss as the layers above the node say it.

Each line is a format string of the software that prints it, filled in with
made-up hosts, ids, numbers and paths: ray-project/ray (gcs_node_manager.cc's
"marked dead" error and death reasons, gcs_actor_manager.cc GenNodeDiedCause, the
raylet's worker-died error, python/ray/exceptions.py); kubernetes/kubernetes (the
node lifecycle controller's events and NodeStatusUnknown condition,
MarkPodsNotReady, podgc's DisruptionTarget, the kubelet's PLEG and runtime checks,
the graceful node shutdown manager); NVIDIA/k8s-device-plugin internal/rm/health.go; SchedMD/slurm src/api/step_launch.c and
src/srun/allocate.c, slurm_errno.c's controller errors as srun prints them,
src/slurmctld/job_mgr.c and node_mgr.c; adaptivecomputing/torque src/resmom/mom_main.c;
torch/distributed/elastic/timer; IBM
Spectrum LSF's termination reasons (bacct / bhist); PyTorch ProcessGroupNCCL's
flight-recorder INFO line; NVIDIA/Megatron-LM megatron/training/checkpointing.py.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, node implicated, nodes, pattern)
DECIDED = [
    # Ray's GCS, as the driver prints the error it pushes (worker.py's logger).
    (
        "2024-03-02 12:53:00,741\tWARNING worker.py:2058 -- The node with node id: 5ad7fa5dd64fc1fec7a82cceecabed8e5e"
        " and address: 10.80.8.181 and node name: 10.80.8.181 has been marked dead because the detector has missed "
        "too many heartbeats from it. This can happen when a \t(1) raylet crashes unexpectedly (OOM, etc.) ",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        ["10.80.8.181"],
        "ray-node-dead",
    ),
    # Older Ray: "the monitor".
    (
        "The node with node id: 0b6a and address: 10.0.0.2 and node name: 10.0.0.2 has been marked dead because the "
        "monitor has missed too many heartbeats from it.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        ["10.0.0.2"],
        "ray-node-dead",
    ),
    # The actor on that node: ActorDiedError, then GenNodeDiedCause's two lines. The node
    # decides over the exception line and over the "died unexpectedly" of the process.
    (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tclass_name: WorkerDict\n"
        "The actor died because its node has died. Node Id: 9557d62af5f975d09decde2d6adbb2a9\n"
        "\tthe actor's node was terminated unexpectedly: health check failed due to missing too many heartbeats",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "ray-node-dead",
    ),
    # The same node preempted by the autoscaler: a preemption, resumed elsewhere.
    (
        "The actor died because its node has died. Node Id: 9557d62af5f975d09decde2d6adbb2a9\n"
        "\tthe actor's node was preempted: Spot instance preemption",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "node-reclaimed",
    ),
    # The node's raylet gone (the dashboard agent's parent check): the node, its cause left open.
    (
        "(raylet) Raylet is terminated. Termination is unexpected. Possible reasons include: (1) SIGKILL by the user "
        "or system OOM killer, (2) Invalid memory access from Raylet causing SIGSEGV or SIGBUS, (3) Other termination "
        "signals. Last 20 lines of the Raylet logs:",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        True,
        [],
        "ray-raylet-died",
    ),
    # A worker process died with no node death and no memory monitor kill: the raylet's error.
    (
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
        "the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff8c22c88e5dbb3e56 Worker ID: "
        "1efd1674 Node ID: 0d733c08 Worker IP address: 127.0.0.1 Worker port: 43489 Worker PID: 150008 Worker exit "
        "type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        False,
        [],
        "ray-worker-died",
    ),
    (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tpid: 26103\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Worker exits unexpectedly. Worker exits with an exit code None.",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        False,
        [],
        "ray-worker-died",
    ),
    # Ray's memory monitor told why: host_oom decides over the dead worker.
    (
        "(raylet) A worker died or was killed while executing a task by an unexpected system error.\n"
        "Task was killed due to the node running low on memory. Memory on the node (IP: 10.0.0.1, ID: 3a4b) where "
        "the task (task ID: 8ce7, name=f, pid=69161, memory used=28.1GB) was running was 30.5GB / 31.0GB (0.98), "
        "which exceeds the memory usage threshold of 0.95.",
        C.HOST_OOM,
        L.APPLICATION,
        False,
        [],
        "oom-kill",
    ),
    # Kubernetes: the node lifecycle controller's event (kubectl get events), the node named.
    (
        "default   2m   Normal   NodeNotReady   node/gpu-node-07   Node gpu-node-07 status is now: NodeNotReady",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        ["gpu-node-07"],
        "k8s-node-lost",
    ),
    # kubectl describe node: the condition the controller sets when the kubelet goes silent.
    (
        "  Ready   Unknown   Thu, 08 Oct 2026 00:37:41 +0000   Thu, 08 Oct 2026 00:38:53 +0000   NodeStatusUnknown   "
        "Kubelet stopped posting node status.",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "k8s-node-lost",
    ),
    # The event on each pod of that node (MarkPodsNotReady).
    (
        "Warning  NodeNotReady  3m  node-controller  Node is not ready",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "k8s-node-lost",
    ),
    # The node deleted under the pod, and podgc failing the orphans.
    (
        "Normal  RemovingNode  40s  node-controller  Node gpu-node-07 event: Removing Node gpu-node-07 from Controller",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "k8s-node-lost",
    ),
    (
        "    Type: DisruptionTarget  Status: True  Reason: DeletionByPodGC  Message: PodGC: node no longer exists",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "k8s-node-lost",
    ),
    # NVIDIA's device plugin marking a GPU unhealthy for a fatal Xid (health.go, both forms).
    (
        "I0601 10:00:00.000000       1 health.go:159] XidCriticalError: Xid=79 on Device=GPU-5a1f2c3d-0000-1111-2222-"
        "333344445555; marking device as unhealthy.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        True,
        [],
        "device-plugin-xid",
    ),
    (
        "2024/06/01 10:00:00 XidCriticalError: Xid=48 on Device=GPU-5a1f2c3d, the device will go unhealthy.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        True,
        [],
        "device-plugin-xid",
    ),
    # The kubelet's own checks: its node's software.
    (
        "  Ready   False   ...   KubeletNotReady   PLEG is not healthy: pleg was last seen active 3m5.304s ago; "
        "threshold is 3m0s",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "k8s-kubelet-unhealthy",
    ),
    (
        "  Ready   False   ...   KubeletNotReady   container runtime network not ready: NetworkReady=false "
        "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "k8s-kubelet-unhealthy",
    ),
    # Graceful node shutdown (a spot VM reclaimed, a maintenance).
    (
        "Status:  Failed\nReason:  Terminated\nMessage: Pod was terminated in response to imminent node shutdown.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "node-reclaimed",
    ),
    # srun losing a node of its step (step_launch.c), and nodes that never booted (allocate.c).
    (
        "srun: error: Aborting, step missing and io error on node 3",
        C.NODE_FAILURE,
        L.HARDWARE,
        True,
        [],
        "slurm-step-io-lost",
    ),
    (
        "srun: error: _step_missing_handler: aborting, io error with slurmstepd on node 1",
        C.NODE_FAILURE,
        L.HARDWARE,
        True,
        [],
        "slurm-step-io-lost",
    ),
    (
        "srun: error: Aborting, can not test connection to node 0.",
        C.NODE_FAILURE,
        L.HARDWARE,
        True,
        [],
        "slurm-step-io-lost",
    ),
    (
        "salloc: error: Nodes cn17 are still not ready",
        C.NODE_FAILURE,
        L.HARDWARE,
        True,
        ["cn17"],
        "slurm-step-io-lost",
    ),
    (
        "srun: error: Something is wrong with the boot of the nodes.",
        C.NODE_FAILURE,
        L.HARDWARE,
        True,
        [],
        "slurm-step-io-lost",
    ),
    # The controller's errno as the client's own error line (slurm_errno.c).
    (
        "srun: error: Unable to contact slurm controller (connect failure)",
        C.LAUNCH,
        L.SCHEDULER,
        False,
        [],
        "slurmctld-unreachable",
    ),
    (
        "sbatch: error: slurm_submit_batch_job: Unable to contact slurm controller (send failure)",
        C.LAUNCH,
        L.SCHEDULER,
        False,
        [],
        "slurmctld-unreachable",
    ),
    # LSF's termination reasons (bacct -l / bhist -l / the job report).
    (
        "TERM_SWAP: job killed after reaching LSF swap usage limit.",
        C.HOST_OOM,
        L.APPLICATION,
        False,
        [],
        "slurm-memory-limit",
    ),
    (
        "TERM_WINDOW: job killed after queue run window closed.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-time-limit",
    ),
    (
        "TERM_LOAD: job killed after load exceeds threshold.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-preempted",
    ),
    (
        "TERM_REQUEUE_ADMIN: job killed and requeued by root or LSF administrator.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-cancelled",
    ),
    (
        "TERM_REQUEUE_OWNER: job killed and requeued by owner.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "slurm-cancelled",
    ),
    (
        "TERM_RC_RECLAIM: job killed and requeued when an LSF resource connector execution host is reclaimed by EC2.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        False,
        [],
        "node-reclaimed",
    ),
    (
        "TERM_THREADLIMIT: job killed after reaching LSF thread limit.",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        False,
        [],
        "lsf-resource-limit",
    ),
    # Torque's mother superior losing a sister MOM (mom_main.c), the sister named.
    (
        "=>> PBS: job killed: node 18 (n314) requested job terminate, 'EOF' (code 1099) - received SISTER_EOF "
        "attempting to communicate with sister MOM's",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        True,
        ["n314"],
        "pbs-sister-lost",
    ),
    (
        "=>> PBS: job killed: node 2 (cn07) requested job terminate, 'EOF' (code 1098) - internal or network "
        "failure attempting to communicate with sister MOM's",
        C.NODE_FAILURE,
        L.AMBIGUOUS,
        True,
        ["cn07"],
        "pbs-sister-lost",
    ),
    # slurmctld's own log deciding a node's fate (job_mgr.c, node_mgr.c).
    (
        "[2024-06-01T10:00:00.123] requeue job JobId=4242 due to failure of node cn12",
        C.NODE_FAILURE,
        L.HARDWARE,
        True,
        ["cn12"],
        "slurm-node-failure",
    ),
    (
        "[2024-06-01T10:00:00.123] validate_node_specs: Node cn12 unexpectedly rebooted boot_time=1717236000 "
        "last response=1717235000",
        C.NODE_FAILURE,
        L.HARDWARE,
        True,
        [],
        "slurm-health-check",
    ),
    (
        "[2024-06-01T10:00:00.123] error: Setting node cn12 state to INVAL with reason:Low RealMemory (reported:"
        "515000 < 100.00% of configured:1031000)",
        C.NODE_FAILURE,
        L.HARDWARE,
        True,
        [],
        "slurm-health-check",
    ),
    # The node's prolog failing, as slurmctld and slurmd log it (node_mgr.c, job_mgr.c, req.c).
    (
        "[2024-06-01T10:00:00.123] error: validate_node_specs: Prolog or job env setup failure on node cn12, "
        "draining the node",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        ["cn12"],
        "slurm-prolog-failure",
    ),
    (
        "[2024-06-01T10:00:00.123] error: Prolog launch failure, JobId=4242",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "slurm-prolog-failure",
    ),
    (
        "[2024-06-01T10:00:00.123] error: Waiting for JobId=4242 REQUEST_LAUNCH_PROLOG notification failed, "
        "giving up after 20 sec",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
        True,
        [],
        "slurm-prolog-failure",
    ),
    # torchelastic's expiration timer killing a worker stuck in a guarded scope.
    (
        "INFO:torch.distributed.elastic.timer.file_based_local_timer:Reaping worker_pid=[4211]. Expired timers: "
        "['train_step']",
        C.HANG,
        L.AMBIGUOUS,
        False,
        [],
        "elastic-timer-expired",
    ),
    # Megatron-LM refusing a checkpoint, then sys.exit() with no exception (checkpointing.py).
    (
        "Unable to load rng state from checkpoint /ckpt/iter_0002000/mp_rank_00/model_optim_rng.pt. Specify "
        "--no-load-rng or --finetune to prevent attempting to load the rng state, exiting ...",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "megatron-checkpoint-load",
    ),
    (
        "Invalid checkpoint version 0.5.",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "megatron-checkpoint-load",
    ),
    (
        ">> '--exit-on-missing-checkpoint' is set but no checkpoint was found under load directory '/ckpt' "
        "(missing metadata/tracker file '/ckpt/latest_checkpointed_iteration.txt'). Exiting with a non-zero status. <<",
        C.APP_ERROR,
        L.APPLICATION,
        False,
        [],
        "megatron-checkpoint-load",
    ),
    # Its legacy loader printing torch.load's exception without its class on the next line:
    # that line decides where it carries the evidence (a truncated file), else the layer stays open.
    (
        "could not load the checkpoint\nPytorchStreamReader failed reading zip archive: failed finding central directory",
        C.STORAGE,
        L.STORAGE,
        False,
        [],
        "write-failed",
    ),
    (
        "could not load the checkpoint\nInvalid magic number; corrupt file?",
        C.APP_ERROR,
        L.AMBIGUOUS,
        False,
        [],
        "checkpoint-load-failed",
    ),
    # The flight recorder's INFO line once a timeout's dump is written.
    (
        "[rank3]:[I1104 10:02:11.000000 ProcessGroupNCCL.cpp:1440] [PG ID 0 PG GUID 0(default_pg) Rank 3] Finished "
        "flight recorder successfully. Output can be analyzed using the fr_trace script.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        False,
        [],
        "nccl-dump-signal",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "implicated", "nodes", "pattern"), DECIDED)
def test_source_lines_decide_by_their_pattern(catalogue, matcher, text, cls, layer, implicated, nodes, pattern):
    got = classify_text(catalogue, matcher, text)
    assert (got.failure_class, got.cause_layer, got.pattern) == (cls, layer, pattern)
    assert (got.node_implicated, got.nodes) == (implicated, nodes)


def test_an_actor_that_died_of_its_own_exception_is_not_a_dead_process(catalogue, matcher):
    """Ray's ActorDiedError for an exception in the actor's constructor is the program's."""
    got = classify_text(
        catalogue,
        matcher,
        "ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, "
        "ray::Trainer.__init__() (pid=3, ip=10.0.0.1)",
    )
    assert got.failure_class is C.APP_ERROR


# Lines from the same sources that say nothing failed.
BENIGN = [
    # The kubelet's other status events, and a node coming back.
    "Normal  NodeReady  10s  kubelet  Node gpu-node-07 status is now: NodeReady",
    "Normal  NodeHasSufficientMemory  10s  kubelet  Node gpu-node-07 status is now: NodeHasSufficientMemory",
    "Normal  NodeSchedulable  10s  kubelet  Node gpu-node-07 status is now: NodeSchedulable",
    "  Ready   True   ...   KubeletReady   kubelet is posting ready status",
    # A node stopped on purpose (Ray's EXPECTED_TERMINATION), and Ray's own healthy output.
    "\tthe actor's node was terminated expectedly: received SIGTERM",
    "Raylet is terminated. Termination is graceful.",
    "2024-03-02 12:50:00,172\tINFO worker.py:1673 -- Started a local Ray instance.",
    "(WorkerDict pid=150008) step 120 | loss 1.734 | lr 3.0e-4",
    # srun waiting on a busy controller (allocate.c's retry message) and its INFO lines.
    "srun: Slurm controller not responding, sleeping and retrying.",
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    # slurmctld hearing from a node again, and the timer server's healthy lines.
    "[2024-06-01T10:05:00.000] Node cn12 now responding",
    "INFO:torch.distributed.elastic.timer.local_timer:Successfully reaped worker=[7]",
    # The controller's own prolog (PrologSlurmctld), and slurmd's timing of a healthy prolog.
    "[2024-06-01T10:00:00.123] error: prolog_slurmctld JobId=4242 failed due to timing out",
    "[2024-06-01T10:00:00.123] prolog for JobId=4242 ran for 12 seconds",
    # Torque's sister that had finished killing its part: not a lost node.
    "=>> PBS: job killed: node 1 (cn02) requested job terminate, 'killdone' (1)",
    # LSF's report of a job that ended well.
    "Successfully completed.",
    # Checkpoint loaders saying they start fresh: Megatron's print_rank_0 and DeepSpeed's warning.
    "WARNING: could not find the metadata file /ckpt/latest_checkpointed_iteration.txt",
    "[2024-05-01 10:00:00,000] [WARNING] [engine.py:2780:load_checkpoint] Unable to find latest file at "
    "/ckpt/latest, if trying to load latest checkpoint please ensure this file exists or pass an explicit "
    "checkpoint tag when loading a checkpoint.",
    # The flight recorder configured, not dumping.
    "[rank0]:[I ProcessGroupNCCL.cpp:913] [PG ID 0 PG GUID 0 Rank 0] ProcessGroupNCCL initialization options: "
    "size: 8, global rank: 0, TORCH_NCCL_ASYNC_ERROR_HANDLING: 3, TORCH_NCCL_DUMP_ON_TIMEOUT: 1, "
    "TORCH_NCCL_TRACE_BUFFER_SIZE: 2000",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
