"""runbooks/scheduler_limit.yaml: the scheduler's limits, refusals and ends of a job.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: Slurm (src/slurmctld job_mgr.c, job_scheduler.c, gang.c; srun, salloc and sbatch with
slurm_errno.c's refusals; allocate.c and salloc.c's "Job allocation %u has been revoked";
scrun's alloc.c; sacct; slurm_opt.c's option checks); LSF's termination reasons; Grid Engine's
execd (msg_execd.h); Torque's error table; Kubernetes' Job controller and activeDeadlineSeconds
(job_controller.go, active_deadline.go), kubeflow's training operator, graceful node shutdown and
Kueue's preemption (preemption.go); Taskcluster's worker-runner; SkyPilot's managed-job controller;
Flux's job exceptions; Lightning's auto-requeue.
"""

from respawn.attribution.attribute import classify_text
from respawn.attribution.runbook import Catalogue, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Slurm's controller and LSF on the scheduler's end of a job.
    (
        "[2031-02-01T10:00:00.001] Time limit exhausted for JobId=4242",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
    ),
    (
        "[2031-02-01T10:00:00.001] _job_deadline: JobId=4242 with time_limit 600 exceeded deadline "
        "2031-02-01T09:59:00 and cancelled",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
    ),
    (
        "[2031-02-01T10:00:00.001] preempted JobId=4242 has been requeued",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    (
        "Exited with exit code 130.\nTERM_RUNLIMIT: job killed after reaching LSF run time limit.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
    ),
    ("TERM_OWNER: job killed by owner.", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-cancelled"),
    # Scheduler refusals and ends.
    (
        "qsub: Job exceeds queue resource limits MSG=cannot locate feasible nodes (nodes file is empty or all "
        "systems are busy)",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    (
        "srun: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive.",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    (
        "sbatch: fatal: --gpus-per-task is mutually exclusive with --ntasks-per-gpu and SLURM_NTASKS_PER_GPU",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    (
        "2026/03/01 10:00:00 EC2 Metadata Service says termination is imminent",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    # Kueue's preemption, in v0.3-v0.7's and v0.8+'s wording.
    (
        "message: 'Preempted to accommodate a workload (UID: 9f54, JobUID: a20d) due to prioritization in the "
        "ClusterQueue'",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    ("message: Preempted to accommodate a higher priority Workload", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-preempted"),
    # sacct's cancelling uid; SkyPilot's managed-job controller, with and without the status.
    ("4242|trainer|CANCELLED by 51234|02:11:09|gpu-b-07", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-cancelled"),
    (
        "(sky-1a2b-alice, pid=4411) I 03-01 10:00:00 controller.py:212] Cluster is preempted (status: STOPPED). "
        "Recovering...",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    (
        "I 03-01 10:00:00 controller.py:199] Cluster is preempted. Recovering...",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    # Flux: flux-job.c's fatal exceptions, the job shell's FATAL.
    (
        "3600.012s: job.exception type=timeout severity=0 resource allocation expired",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "flux-job-limit",
    ),
    ("12.500s: job.exception type=cancel severity=0 ", C.SCHEDULER_LIMIT, L.SCHEDULER, "flux-job-limit"),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # Ray's actor on a node the autoscaler preempted (GenNodeDiedCause): a preemption, resumed elsewhere.
    (
        "The actor died because its node has died. Node Id: 9557d62af5f975d09decde2d6adbb2a9\n"
        "\tthe actor's node was preempted: Spot instance preemption",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
        False,
        [],
    ),
    # Graceful node shutdown (a spot VM reclaimed, a maintenance).
    (
        "Status:  Failed\nReason:  Terminated\nMessage: Pod was terminated in response to imminent node shutdown.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
        False,
        [],
    ),
    # LSF's termination reasons (bacct -l / bhist -l / the job report).
    (
        "TERM_WINDOW: job killed after queue run window closed.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
        False,
        [],
    ),
    (
        "TERM_LOAD: job killed after load exceeds threshold.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
        False,
        [],
    ),
    (
        "TERM_REQUEUE_ADMIN: job killed and requeued by root or LSF administrator.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-cancelled",
        False,
        [],
    ),
    (
        "TERM_REQUEUE_OWNER: job killed and requeued by owner.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-cancelled",
        False,
        [],
    ),
    (
        "TERM_RC_RECLAIM: job killed and requeued when an LSF resource connector execution host is reclaimed by EC2.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
        False,
        [],
    ),
    (
        "TERM_THREADLIMIT: job killed after reaching LSF thread limit.",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "lsf-resource-limit",
        False,
        [],
    ),
    # slurm_errno.c's refusals as sbatch, srun and salloc print them: a wrong request, a refusal by policy,
    # nodes held for maintenance; and scrun's ends of a container job.
    *[
        (
            f"sbatch: error: Batch job submission failed: {text}",
            C.SCHEDULER_LIMIT,
            L.APPLICATION,
            "slurm-step-config",
            False,
            [],
        )
        for text in (
            "No partition specified or system default partition",
            "Requested nodes not in this partition",
            "Time limit specification required, but not provided",
            "Duplicate generic resource (gres) specification",
            "Multiple partition job request not supported when a partition is set in the association",
        )
    ],
    (
        "srun: error: Unable to create step for job 4242: Insufficient GRES available in allocation",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
        False,
        [],
    ),
    *[
        (
            f"salloc: error: Job submit/allocate failed: {text}",
            C.SCHEDULER_LIMIT,
            L.SCHEDULER,
            "slurm-policy-limit",
            False,
            [],
        )
        for text in (
            "User's group not permitted to use this partition",
            "Access denied to requested reservation",
            "Burst Buffer permission denied",
            "Burst Buffer resource limit exceeded",
        )
    ],
    (
        "srun: error: Unable to allocate resources: Job can not start due to maintenance reservation.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-resources-unavailable",
        False,
        [],
    ),
    (
        "scrun: error: Job killed due hitting max wall clock limit",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
        False,
        [],
    ),
    # Kubernetes' activeDeadlineSeconds: the Job controller's condition, the kubelet's, kubeflow's.
    (
        "  Warning  DeadlineExceeded  2m  job-controller  Job was active longer than specified deadline",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
        False,
        [],
    ),
    (
        "    message: Pod was active on the node longer than the specified deadline",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
        False,
        [],
    ),
    (
        'time="2024-05-01T10:00:00Z" level=info msg="Job llama-ft has failed because it was active longer than '
        'specified deadline"',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
        False,
        [],
    ),
    # srun / salloc: the controller ended the allocation they waited on. Not a prolog failure.
    (
        "srun: error: Job allocation 81234 has been revoked",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-allocation-revoked",
        False,
        [],
    ),
    (
        "salloc: Job allocation 81234 has been revoked.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-allocation-revoked",
        False,
        [],
    ),
    # salloc's time-limit form of the same message stays the time limit.
    (
        "salloc: Job 81234 has exceeded its time limit and its allocation has been revoked.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
        False,
        [],
    ),
    # A revoke with its reason in the same excerpt: the reason decides.
    (
        "srun: error: Job allocation 81234 has been revoked\n"
        "slurmstepd: error: *** JOB 81234 ON gpu-07 CANCELLED AT 2026-12-02T10:00:00 DUE TO PREEMPTION ***",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
        False,
        [],
    ),
    # Grid Engine's execd enforcing the queue's hard limits (msg_execd.h).
    (
        "05/04/2026 03:36:38|  main|node001|W|job 48.1 exceeded hard wallclock time - initiate terminate method",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
        False,
        [],
    ),
    (
        '05/04/2026 03:36:38|  main|node001|W|job 48 exceeds job hard limit "h_rt" of queue "gpu.q@node001" '
        "(86401.00000 > limit:86400.00000) - sending SIGKILL",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
        False,
        [],
    ),
    # Lightning saving and requeueing on Slurm's warning signal.
    (
        "[rank: 0] Handling auto-requeue signal: 10",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "framework-requeue-signal",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Slurm.
    (
        "slurmstepd: error: *** JOB 812 ON host1 CANCELLED AT 2030-02-01T10:00:00 DUE to SIGNAL Terminated ***",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-cancelled",
    ),
    (
        "srun: error: Unable to create step for job 812: Memory required by task is not available",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    # A site's job_submit plugin refusing the request: SLURM_ERROR after the plugin's own message.
    (
        "sbatch: error: Batch job submission failed: Unspecified error",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    (
        "sbatch: error: Batch job submission failed: Requested GRES option unsupported by configured SelectType plugin",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    (
        "srun: error: Task launch for StepId=812.0 failed on node host9: Unable to layout tasks on given cpus",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    # slurmctld refusing a submission: its policy and its state are the scheduler's layer.
    ("sbatch: error: QOSMaxSubmitJobPerUserLimit", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-policy-limit"),
    (
        "srun: error: Unable to allocate resources: Job violates accounting/QOS policy (job submit limit, user's size "
        "and/or time limits)",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-policy-limit",
    ),
    (
        "sbatch: error: Batch job submission failed: Invalid qos specification",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-policy-limit",
    ),
    (
        "srun: error: Unable to allocate resources: Required node not available (down, drained or reserved)",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-resources-unavailable",
    ),
    # A request the cluster cannot satisfy at all stays the submission's (application).
    (
        "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    # Round 25, Kubernetes holding the pod: kube-scheduler's FitError, the cluster autoscaler, Kueue's
    # flavor assigner (also as kubectl prints the condition in YAML); Google Cloud's quota refusal; the
    # accounting-policy refusal as a workflow tool relays it, lower-cased.
    (
        "  Warning  FailedScheduling  2m3s  default-scheduler  0/4 nodes are available: 4 Insufficient nvidia.com/gpu. "
        "preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "unschedulable",
    ),
    (
        "  Normal   NotTriggerScaleUp  45s  cluster-autoscaler  pod didn't trigger scale-up: 1 max node group size reached",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "unschedulable",
    ),
    (
        "    message: couldn't assign flavors to pod set worker: insufficient unused quota for nvidia.com/gpu in flavor "
        "h100, 16 more needed",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "unschedulable",
    ),
    (
        "message: 'couldn''t assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor "
        "a100, 4 more needed'",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "unschedulable",
    ),
    (
        '    "message": "The following quota metrics exceed quota limits: '
        'aiplatform.googleapis.com/custom_model_training_nvidia_h100_gpus",',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "cloud-quota-exceeded",
    ),
    (
        "sbatch: error: batch job submission failed: job violates accounting/qos policy (job submit limit, user's size "
        "and/or time limits)",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-policy-limit",
    ),
    # Round 26: SkyPilot's other versions (sky/jobs/controller.py, the first sky/spot/controller.py);
    # Volcano's gang and Ray's autoscaler holding a job; SageMaker's service quota; AWS Batch's host gone.
    (
        "I 03-01 10:00:00 controller.py:612] Cluster is preempted or failed (status: STOPPED). Recovering...",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    (
        "I 03-01 10:00:00 controller.py:100] The cluster is preempted.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    (
        "  Warning  Unschedulable  2m  volcano  4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, "
        "4 minAvailable",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "unschedulable",
    ),
    (
        "(autoscaler +1m2s) Error: No available node types can fulfill resource request {'GPU': 8.0, 'CPU': 8.0}. Add "
        "suitable node types to this cluster to resolve this issue.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "unschedulable",
    ),
    (
        "botocore.errorfactory.ResourceLimitExceeded: An error occurred (ResourceLimitExceeded) when calling the "
        "CreateTrainingJob operation: The account-level service limit 'ml.p4d.24xlarge for training job usage' is 2 "
        "Instances, with current utilization of 2 Instances and a request delta of 1 Instances.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "cloud-quota-exceeded",
    ),
    (
        '        "statusReason": "Host EC2 (instance i-0a1b2c3d4e5f60718) terminated.",',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
    ),
    # Flux's exception event in the job's eventlog, raw and formatted (RFC 18 / RFC 21, libeventlog).
    (
        '{"timestamp":1700000000.5,"name":"exception","context":{"type":"timeout","severity":0,"userid":-1,'
        '"note":"resource allocation expired"}}',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "flux-job-limit",
    ),
    (
        '1700000000.500000 exception type=cancel severity=0 userid=5001 note="cancel by owner"',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "flux-job-limit",
    ),
    # Round 27: flux job eventlog -H quotes string values (libeventlog formatter.c, json_dumps);
    # Torque's mail when the MOM's kill names no resource (msg_momjoboverlimit).
    (
        '[Jan02 10:11] exception type="timeout" severity=0 userid=1002 note="resource allocation expired"',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "flux-job-limit",
    ),
    (
        "Job exceeded some resource limit (walltime, mem, etc.). Job was aborted",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
    ),
    # Round 27: qacct's failed field for code 37.
    (
        "failed       37  : qmaster enforced h_rt, h_cpu, or h_vmem limit",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-time-limit",
    ),
    # Round 31: Compute Engine's quota refusal as gcloud relays it.
    (
        " - Quota 'NVIDIA_A100_GPUS' exceeded.  Limit: 8.0 in region us-central1.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "cloud-quota-exceeded",
    ),
    (
        " - Quota 'GPUS_ALL_REGIONS' exceeded. Limit: 0.0 globally.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "cloud-quota-exceeded",
    ),
    # Round 36: PBS's server rerunning a job at its scheduler's request, a preemption by requeueing.
    (
        "03/01/2026 10:11:12  S    Job Rerun at request of Scheduler@pbs01.cluster",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    # Round 37: HTCondor's eviction, in the job event log and as DAGMan names it.
    ("004 (4410.000.000) 03/01 10:11:12 Job was evicted.", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-preempted"),
    (
        "03/01/26 10:11:12 Event: ULOG_JOB_EVICTED for HTCondor Node train_step (4410.0.0) {03/01/26 10:11:12}",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    # Round 39: PBS Pro's MoM over the CPUs a job asked for.
    ("=>> PBS: job killed: ncpus 58.88 exceeded limit 16 (sum)", C.SCHEDULER_LIMIT, L.APPLICATION, "pbs-cpu-limit"),
    # Round 40: Nextflow's Kubernetes executor losing its pod with the node.
    (
        "  Unable to find pod nf-6d5503fb55142c0f - The pod may be evicted by a node shutdown event",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
    ),
    # Round 40: Slurm-GCP's resume program writing Compute Engine's quota error as the node's reason.
    (
        "[2026-11-06T11:23:46.199] update_node: node gpu-nodeset-1 reason set to: GCP Error: Quota NVIDIA_H100_GPUS "
        "exceeded. Limit: 8.0 in region us-central1.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "cloud-quota-exceeded",
    ),
    # Round 40: Volcano's job controller and the MPI operator on an evicted member.
    (
        "I0128 08:13:50.578876       1 job_controller.go:305] Try to handle request <Queue: , Job: default/ddp-job, "
        "Task:worker, Pod:ddp-job-worker-1, Event:PodEvicted, ExitCode:0, Action:, JobVersion: 0>",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    ("    reason: MPIJobEvicted", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-preempted"),
    # Round 40: Cromwell on Google's Pipelines API, the worker gone.
    (
        "The job was stopped before the command finished. PAPI error code 14. Execution failed: worker was terminated.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
    ),
    # Round 40: Compute Engine's quota error as its code and message.
    ("Code: QUOTA_EXCEEDED", C.SCHEDULER_LIMIT, L.SCHEDULER, "cloud-quota-exceeded"),
    ("Message: Quota 'GPUS_ALL_REGIONS' exceeded.", C.SCHEDULER_LIMIT, L.SCHEDULER, "cloud-quota-exceeded"),
    # Round 41: torchrun's agent told to stop from outside (the signal's number, later its name).
    (
        "WARNING:torch.distributed.elastic.agent.server.api:Received 1 death signal, shutting down workers",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "launcher-told-to-stop",
    ),
    (
        "W0823 16:54:02.337000 139733055988160 torch/distributed/elastic/agent/server/api.py:688] Received "
        "Signals.SIGTERM death signal, shutting down workers",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "launcher-told-to-stop",
    ),
    # Round 43: HTCondor's eviction in its XML event log.
    ('    <a n="MyType"><s>JobEvictedEvent</s></a>', C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-preempted"),
    # Round 45: the rest of slurmctld's reasons a request fits no node.
    ("sbatch: error: CPU count per node can not be satisfied", C.SCHEDULER_LIMIT, L.APPLICATION, "slurm-step-config"),
    (
        "salloc: error: Socket, core and/or thread specification can not be satisfied",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
        "slurm-step-config",
    ),
    # Round 46: the elastic agent stopped by a signal; Flux's cancel.
    (
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 4242 got signal: 15",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "launcher-told-to-stop",
    ),
    ("flux-cancel: Canceled 3 jobs", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-cancelled"),
    # Round 48: the kubelet preempting a pod for a critical one; Megatron-LM leaving before its time limit;
    # Lightning's rank told to stop.
    ("Message:        Preempted in order to admit critical pod", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-preempted"),
    (
        "[exiting program after 1430.1 minutes] datetime: 2026-12-07 10:00:00",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "framework-requeue-signal",
    ),
    (
        "[exiting program after receiving SIGTERM.] datetime: 2026-12-07 10:00:00",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "framework-requeue-signal",
    ),
    ("[rank: 3] Received SIGTERM: 15", C.SCHEDULER_LIMIT, L.SCHEDULER, "framework-told-to-stop"),
    # Round 50: kube-scheduler preempting a pod for one of higher priority.
    (
        '  "message": "Kube-scheduler: preempting to accommodate a higher priority pod: team-a/train-7",',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-preempted",
    ),
    # Round 52: the kubelet's node shutdown manager.
    (
        'I0623 15:42:16.744070    1748 nodeshutdown_manager_linux.go:316] "Shutdown manager killing pod with gracePeriod" pod="ns/p" gracePeriod=15',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
    ),
    # Round 54: Karpenter's spot interruption; srun forwarding the user's Ctrl-C.
    (
        'DEBUG  controller.interruption  removing offering from offerings  {"messageKind": "SpotInterruptionKind"}',
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
    ),
    ("srun: sending Ctrl-C to job 13218794.0", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-cancelled"),
    ("^Csrun: sending Ctrl-C to job 13218794.0", C.SCHEDULER_LIMIT, L.SCHEDULER, "slurm-cancelled"),
    # Round 55: Compute Engine's host maintenance.
    (
        "compute.instances.terminateOnHostMaintenance on node gpu-7 at 2026-05-27: Instance terminated during Compute "
        "Engine maintenance.",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
    ),
    # Round 57: flux-job's exception with the job's ID.
    (
        "3600.012s: job.exception f8ezArJcP type=timeout severity=0 resource allocation expired",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "flux-job-limit",
    ),
    # Round 58: Compute Engine reclaiming a Spot VM.
    (
        "systemevent-1746631209934-6348d44d25ec7  compute.instances.preempted  us-central1-a/instances/gke-pool-1  200  "
        "DONE  2025-05-07T08:20:20.201-07:00",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "node-reclaimed",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BENIGN: list[str] = [
    # Respawn's own requeue as slurmstepd prints it.
    "slurmstepd: error: *** JOB 4242 ON gpu-a-07 CANCELLED AT 2031-02-01T10:00:00 DUE TO JOB REQUEUE ***",
    # LSF's report of a job that ended well.
    "Successfully completed.",
    # srun waiting for busy nodes (a retry), and Slurm's reservation and partition INFO.
    "srun: job 4242 queued and waiting for resources",
    # Kubernetes' other Job conditions and a deadline being set, not exceeded.
    "  Normal   Completed  1m  job-controller  Job completed",
    "I0501 10:00:00.000000       1 job_controller.go:512] Job has activeDeadlineSeconds configuration. Will sync this "
    "job again in 3600s",
    # srun / salloc while the allocation is healthy.
    "srun: job 81234 queued and waiting for resources",
    "salloc: Granted job allocation 81234",
    "srun: Job allocation 81234 has been granted",
    # Lightning setting its handlers up (no signal received yet).
    "SLURM auto-requeueing enabled. Setting signal handlers.",
    # Grid Engine's soft limits only warn; exit statuses that are no death by signal.
    "05/04/2026 03:36:38|  main|node001|W|job 48.1 exceeded soft wallclock time - initiate soft notify method",
    # Slurm ignoring --hint for another option, at INFO.
    "srun: Following options are mutually exclusive with --hint: --ntasks-per-core, --cores-per-socket, "
    "--threads-per-core, --sockets-per-node, -B and --cpu-bind (other than --cpu-bind=verbose). Ignoring --hint.",
    # worker-runner's follow-up, alone.
    "2026/03/01 10:00:00 Sending graceful-termination request with finish-tasks=false",
    # Kueue admitting a workload (its wait for quota it cannot give yet is unschedulable's since round 25).
    "message: Quota reserved in ClusterQueue cluster-queue",
    # kubectl listing the condition healthy; a job sacct lists completed.
    "4243|trainer|COMPLETED|00:41:09|gpu-b-07",
    # A missing helper in a prologue; a non-fatal Flux exception; a healthy SkyPilot controller.
    "5.002s: job.exception type=test severity=1 this is only a test",
    "I 03-01 10:00:00 controller.py:150] Cluster is up. Submitting the job.",
    # Round 25: the pod placed, and the autoscaler adding the node it waited for.
    "  Normal   Scheduled  10s  default-scheduler  Successfully assigned default/train-0 to gpu-node-3",
    "  Normal   TriggeredScaleUp  3m  cluster-autoscaler  pod triggered scale-up: [{gpu-pool 1->2 (max: 4)}]",
    # Flux's non-fatal exception in the eventlog (severity above 0: the job goes on).
    '{"timestamp":1700000000.5,"name":"exception","context":{"type":"timeout","severity":1,"userid":-1,"note":"soft"}}',
    # Round 27: the formatted non-fatal exception (severity above 0).
    '[  +0.010101] exception type="timeout" severity=1 userid=1002 note="soft limit"',
    # Round 54: srun's notice of why the controller queued its allocation.
    "srun: Required node not available (down, drained or reserved)",
    "salloc: Required partition not available (inactive or drain)",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    # scancel's own errors: no cancel happened.
    "scancel: error: Kill job error on job id 5521: Job/step already completing or completed",
    # Round 31: a quota report that refuses nothing.
    "Quota 'NVIDIA_A100_GPUS': 4.0 of 8.0 used in region us-central1",
    # Round 36: a rerun a user asked for is not a preemption.
    "03/01/2026 10:11:12  S    Job Rerun at request of alice@login01.cluster",
    # Round 48: Megatron-LM's planned stop at an iteration the run chose.
    "[exiting program at iteration 5000] datetime: 2026-12-07 10:00:00",
    # Round 54: Karpenter's rebalance recommendation is advice, not a reclaim.
    '{"messageKind": "RebalanceRecommendationKind", "action": "NoAction"}',
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


def test_slurms_reports_of_ends_it_caused_open_no_incident(catalogue: Catalogue):
    for pattern in ("slurm-node-failure", "slurm-time-limit", "slurm-preempted", "slurm-cancelled"):
        assert catalogue.onset(pattern) is Onset.REPORTED, pattern


def test_a_policy_refusal_is_not_retried(catalogue, matcher):
    a = classify_text(
        catalogue,
        matcher,
        "sbatch: error: AssocMaxSubmitJobLimit\nsbatch: error: Batch job "
        "submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or "
        "time limits)",
    )
    assert (a.failure_class, a.cause_layer, a.recoverable_by_restart) == (C.SCHEDULER_LIMIT, L.SCHEDULER, False)


def test_allocation_revoked_has_no_verdict():
    """A revoke does not say whether a cancel (never), a preemption or a node failure (yes) ended the job."""
    from respawn.attribution.runbook import Catalogue

    book = Catalogue.load().runbooks[C.SCHEDULER_LIMIT]
    pattern = next(p for p in book.patterns if p.id == "slurm-allocation-revoked")
    assert pattern.recoverable_by_restart is None


def test_a_cloud_node_its_quota_refused_is_the_quota_not_a_node_failure(catalogue, matcher):
    # Round 40: the node Slurm-GCP could not create.
    reason = "GCP Error: Quota CPUS_PER_VM_FAMILY exceeded. Limit: 12.0 in region europe-west4."
    cases.assert_reason_outranks_the_requeue(catalogue, matcher, reason, C.SCHEDULER_LIMIT, "cloud-quota-exceeded")
