import re
import shutil
import time

import pytest
import yaml

from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import DEFAULT_DIR, Catalogue
from respawn.wire.taxonomy import FailureClass

# (line, the pattern that must decide it). Written for these tests in the shapes
# the real software prints, with made-up hosts, numbers and paths.
FAILURES = [
    ("NVRM: Xid (PCI:0000:1a:00): 79, pid=901, name=python3, GPU has fallen off the bus.", "xid-fatal"),
    ("[ 88.1] NVRM: Xid (PCI:0000:c1:00): 94, pid=77, name=torchrun, Contained: SM (0x1). RST: No", "xid-fatal"),
    ("kernel: NVRM: Xid (PCI:0001:05:00): 119, pid=12, name=pt_main_thread, Timeout waiting for RPC", "xid-fatal"),
    ("NVRM: GPU at PCI:0000:61:00: GPU-1234 has fallen off the bus.", "gpu-fallen-off-bus"),
    ("Unable to determine the device handle for GPU 0000:61:00.0: GPU is lost.  Reboot the system", "gpu-lost"),
    ("Unable to determine the device handle for GPU 00000000:3D:00.0: Unknown Error", "gpu-lost"),
    ("[ 61.2] NVRM: GPU2 _kgspLogRpcTimeout: ************ GSP Timeout ************", "gsp-unresponsive"),
    ("RuntimeError: CUDA error: uncorrectable ECC error encountered", "ecc-uncorrectable"),
    ("E external/xla/stream.cc:99] CUDA_ERROR_ECC_UNCORRECTABLE while syncing", "ecc-uncorrectable"),
    ("nvidia-smi: Pending Row Remapping : Yes", "gpu-reset-required"),
    ("NVRM: GPU 0000:41:00.0: RmInitAdapter failed! (0x25:0x65:1457)", "gpu-init-failed"),
    ("cudaGetDeviceCount: CUDA-capable device(s) is/are busy or unavailable", "gpu-init-failed"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", "nvidia-driver-unreachable"),
    # The Xid catalogue's families (runbooks/gpu_hardware.yaml names the sources).
    (
        "NVRM: Xid (PCI:0000:2c:00): 63, pid=88, name=python, Row Remapper: New row (0x0000000000abc) marked for "
        "remapping, reset gpu to activate.",
        "xid-memory-degraded",
    ),
    (
        "NVRM: Xid (PCI:0000:2c:00): 154, pid='<unknown>', name=<unknown>, GPU recovery action changed from 0x0 "
        "(None) to 0x1 (GPU Reset Required)",
        "xid-recovery-action",
    ),
    ("Error: Detected XID 119 for GPU 5", "dcgm-diag-xid"),
    ("Fail - GPU 1: Detected 2 volatile double-bit ECC error(s) in GPU 1.", "dcgm-health-failure"),
    ("|                           | Fail - GPU: 0                                  |", "dcgm-diag-fail"),
    ("NVRM: Xid (PCI:0000:61:00): 39, pid=12, name=python, CE0: Unknown Error", "xid-engine-fault"),
    (
        "NVRM: Xid (PCI:0000:61:00): 54, pid=12, Auxiliary power is not connected to the GPU board",
        "xid-reduced-clocking",
    ),
    (
        "nvidia-nvswitch2: SXid (PCI:0000:c5:00.0): 24007, Fatal, Link 31 sourcetrack TCEN0 crumbstore ECC DBE Err",
        "nvswitch-sxid-fatal",
    ),
    ("CUDA initialization: CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE on GPU 0", "cuda-compat-unsupported"),
    (
        "NVRM: Xid (PCI:0000:61:00): 45, pid=12, name=python, Ch 00000004 caused by previous Xid 95",
        "xid-cleanup-after-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:61:00): 45, pid=12, name=python, Ch 00000004 caused by previous Xid 146",
        "xid-nvlink-cleanup",
    ),
    ("RuntimeError: CUDA error: an illegal memory access was encountered", "cuda-illegal-address"),
    ("CUDA error: misaligned address", "cuda-illegal-address"),
    ("RuntimeError: CUDA error: unspecified launch failure", "cuda-launch-failure"),
    ("NVRM: Xid (PCI:0000:b1:00): 31, pid=5, name=python, Ch 00000008, intr 10000000. MMU Fault", "xid-application"),
    ("RuntimeError: CUDA error: operation not supported on global/shared address space", "cuda-error-other"),
    ("RuntimeError: CUDA driver error: unknown error", "cuda-unknown-error"),
    ("RuntimeError: CUDA error: invalid resource handle", "cuda-error-other"),
    ("!!!! kernel execution error. (m: 1024, n: 512, k: 4096, error: 13) ", "cuda-error-other"),
    ("NVRM: Xid (PCI:0000:1a:00): 45, pid=1, name=python, Ch 00000010", "xid-other"),
    ("NVRM: Xid (PCI:0000:1a:00): 109, pid=1, name=python, Ctx Switch Timeout Error", "xid-application"),
    ("Failed to initialize NVML: Driver/library version mismatch", "nvidia-driver-unreachable"),
    (
        "gpu7:4411:4490 [3] NCCL WARN NET/IB : Got completion from peer 10.9.8.7<4211> with error 12, opcode 1, "
        "len 0, vendor err 129 (Recv)",
        "nccl-ib-completion-error",
    ),
    (
        "gpu7:4411:4490 [3] transport/net_ib.cc:99 NCCL WARN NET/IB : mlx5_2:1 Got async event : port error",
        "ib-async-port-event",
    ),
    (
        "gpu7:4411:4490 [3] NCCL WARN NET/IB : mlx5_2:1 Got async event : local work queue catastrophic error",
        "ib-async-qp-event",
    ),
    ("[h3:1:0:1] ib_mlx5_log.c:171  Transport retry count exceeded on mlx5_1:1/RoCE (synd 0x15)", "ib-transport-retry"),
    ("NET/IB : ibv_poll_cq error: status IBV_WC_RETRY_EXC_ERR", "ib-transport-retry"),
    ("link mlx5_3/1 state DOWN physical_state DISABLED", "ib-port-down"),
    ("        Physical state: Polling", "ib-port-down"),
    ("Fatal error:  device 'mlx5_2': sys files not found (/sys/class/infiniband/mlx5_2/ports)", "hca-hardware-fault"),
    (
        "gpu3:9:9 [1] NCCL WARN NET/IB : ibv_reg_mr_iova2 failed with error Cannot allocate memory",
        "ib-verbs-call-failed",
    ),
    ("mlx5: gpu3: got completion with error:", "ib-transport-retry"),
    ("[1700000000.1] [gpu3:1 :0]  ib_iface.c:1 UCX  ERROR Endpoint timeout on ep 0x1", "ib-transport-retry"),
    ("mlx5_core 0000:17:00.0: mlx5_port_module_event: Port module event[error]: module 0, Cable error", "ib-port-down"),
    ("GUID 0xabc port 7: [SymbolErrorCounter == 4112]", "ib-port-counters"),
    ("RuntimeError: CUDA error: uncorrectable NVLink error detected during the execution", "nvlink-error"),
    ("NVRM: Xid (PCI:0000:18:00): 145, RLW_REMAP Fatal XC0 i0 Link 11 (0x0)", "xid-nvlink-fatal"),
    ("NVRM: Xid (PCI:0000:18:00): 146, TLW_RX Nonfatal XC0 i0 Link 02 (0x0)", "xid-nvlink-nonfatal"),
    (
        "[rank3]:[E11 08:00:00.1 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=9, OpType=BROADCAST) ran for 1800001 milliseconds before timing out.",
        "nccl-watchdog-timeout",
    ),
    (
        "[PG ID 0 PG GUID 0 Rank 2] ProcessGroupNCCL's watchdog got stuck for 600 seconds without making progress",
        "nccl-watchdog-stuck",
    ),
    ("[Rank 5] Received a dump signal due to a collective timeout from rank 1", "nccl-dump-signal"),
    (
        "RuntimeError: [gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 300000ms for send operation "
        "to complete",
        "collective-recv-timeout",
    ),
    ("host9:77:88 [1] NCCL INFO transport/net.cc:1130 -> 3", "nccl-error-return-trace"),
    (
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process exited or "
        "there was a network error, NCCL version 2.20.5",
        "nccl-remote-error",
    ),
    ("socketProgressOpt: Call to recv from 10.1.1.4<4434> failed : Connection timed out", "nccl-socket-recv-failed"),
    ("NET/IB : Got completion from peer 10.2.3.4<1234> with status=12 opcode=0", "nccl-ib-completion-unattributed"),
    (
        "torch.distributed.DistBackendError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO)",
        "nccl-system-error",
    ),
    ("ncclUnhandledCudaError: Call to CUDA function failed.", "nccl-cuda-error"),
    (
        "gpu1:7:9 [0] graph/paths.cc:303 NCCL WARN P2P is disabled between NVLINK connected GPUs 1 and 0. This "
        "should not be the case given their connectivity, and is probably due to a hardware issue.",
        "nvlink-p2p-disabled",
    ),
    ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.", "nccl-invalid-usage"),
    (
        "RuntimeError: [third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [10.0.0.9]:1121",
        "connection-lost",
    ),
    ("RuntimeError: NCCL communicator was aborted on rank 3.", "nccl-error-other"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity", "cuda-oom"),
    ("host1:9:9 [2] include/alloc.h:48 NCCL WARN Cuda failure 'out of memory'", "cuda-oom"),
    (
        "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[8]",
        "tf-xla-oom",
    ),
    (
        "slurmstepd: error: Detected 3 oom_kill events in StepId=77.0. Some of the step tasks have been OOM Killed.",
        "oom-kill",
    ),
    ("[1234.5] Out of memory: Killed process 4410 (python) total-vm:9kB", "oom-kill"),
    ("[ 77.1] Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled", "kernel-panic-oom"),
    ("slurmstepd: error: Step 88.0 exceeded memory limit (900 > 800), being killed", "slurm-memory-limit"),
    ("srun: error: gpu-a-07: task 12: Out Of Memory", "slurm-memory-limit"),
    ("RuntimeError: DataLoader worker (pid 8811) is killed by signal: Killed. ", "dataloader-worker-killed"),
    (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:83] DefaultCPUAllocator: can't allocate memory: you tried "
        "to allocate 1 bytes",
        "host-alloc-failed",
    ),
    ("MemoryError", "host-alloc-failed"),
    (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).",
        "shared-memory-exhausted",
    ),
    ("Message:  The node was low on resource: memory. Container trainer was using 60Gi.", "evicted-for-memory"),
    ("Killed", "killed"),
    ("/var/spool/slurmd/job77/slurm_script: line 12: 4242 Killed   torchrun train.py", "killed"),
    ("KeyError: 'input_ids'", "python-keyerror"),
    ("ModuleNotFoundError: No module named 'apex'", "python-import-error"),
    ("RuntimeError: mat1 and mat2 shapes cannot be multiplied (8x512 and 256x10)", "tensor-shape-mismatch"),
    (
        "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!",
        "tensor-device-mismatch",
    ),
    ("RuntimeError: CUDA error: device-side assert triggered", "cuda-device-assert"),
    ("RuntimeError: CUDA error: no kernel image is available for execution on the device", "cuda-setup-error"),
    ("ValueError: too many values to unpack (expected 2)", "python-exception"),
    ("Traceback (most recent call last):", "python-traceback"),
    (
        "subprocess.CalledProcessError: Command '['python', 'x.py']' returned non-zero exit status 1.",
        "python-exception",
    ),
    (
        "[2030-01-01 00:00:00,000] [ERROR] [launch.py:321:sigkill_handler] ['python', 'x.py'] exits with return "
        "code = -9",
        "launcher-child-failed",
    ),
    ("AssertionError", "python-exception"),
    ("torch.distributed.elastic.multiprocessing.errors.ChildFailedError:", "launcher-child-failed"),
    (
        "E0101 00:00:00.1 99 api.py:881] failed (exitcode: 1) local_rank: 3 (pid: 7) of binary: /usr/bin/python",
        "launcher-child-exited",  # round 13: a positive exit code is the worker's own
    ),
    ("iteration 400/1000 | lm loss: nan | loss scale: 8192.0 |", "megatron-progress-nonfinite"),
    ("step 400: loss: nan", "nan-loss"),
    ("{'loss': inf, 'grad_norm': 3.2, 'epoch': 1.0}", "nan-loss"),
    ("RuntimeError: Function 'MulBackward0' returned nan values in its 0th output.", "non-finite-detected"),
    ("FloatingPointError: Minimum loss scale reached (0.0001).", "loss-scale-minimum"),
    ("Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.", "loss-scale-minimum"),
    (
        "[deepspeed] OVERFLOW! Rank 3 Skipping step. Attempted loss scale: 16.0, reducing to 8.0",
        "overflow-at-small-scale",
    ),
    ("iteration 9 | number of skipped iterations: 1 | number of nan iterations:   2 |", "nan-iterations"),
    ("Fatal Python error: Segmentation fault", "segfault"),
    ("bash: line 1: 9911 Segmentation fault      (core dumped) python train.py", "segfault"),
    ("ERROR: Unexpected bus error encountered in worker.", "bus-error"),
    ("srun: error: gpu-b-12: task 5: Killed", "srun-task-signalled"),
    ("terminate called after throwing an instance of 'c10::Error'", "native-abort"),
    ("Illegal instruction (core dumped)", "fatal-signal"),
    ("RuntimeError: DataLoader worker (pid(s) 4242, 4243) exited unexpectedly", "dataloader-worker-died"),
    ("slurm: JobState=FAILED ExitCode=139", "exit-by-signal"),
    ("OSError: [Errno 28] No space left on device: '/scratch/ckpt/step_100'", "disk-full"),
    ("OSError: [Errno 122] Disk quota exceeded", "disk-quota"),
    ("OSError: [Errno 5] Input/output error: '/lustre/run/log.txt'", "io-error"),
    ("OSError: [Errno 116] Stale file handle", "stale-file-handle"),
    ("RuntimeError: PytorchStreamWriter failed writing file data/12: file write failed", "write-failed"),
    ("RuntimeError: PytorchStreamReader failed reading zip archive: failed finding central directory", "write-failed"),
    ("Message: The node was low on resource: ephemeral-storage. Container x was using 90Gi", "evicted-for-disk"),
    (
        "LustreError: 11-0: lfs-OST0004-osc: operation ost_write to node 10.0.0.8@o2ib failed: rc = -107",
        "parallel-fs-error",
    ),
    ("kernel:LustreError: 81:0:(osc_cache.c:955:osc_extent_wait()) LBUG", "lustre-client-lbug"),
    (
        "[ 531.1] blk_update_request: I/O error, dev nvme0n1, sector 1004 op 0x1:(WRITE) flags 0x0 phys_seg 16 prio "
        "class 0",
        "kernel-block-io-error",
    ),
    ("OSError: [Errno 30] Read-only file system: '/outputs'", "read-only-filesystem"),
    (
        "slurmstepd: error: *** JOB 5012 ON gpu-a-01 CANCELLED AT 2030-01-01T00:00:00 DUE TO TIME LIMIT ***",
        "slurm-time-limit",
    ),
    ("slurm: JobState=TIMEOUT ExitCode=0", "slurm-time-limit"),
    (
        "slurmstepd: error: *** STEP 5012.3 ON gpu-a-01 CANCELLED AT 2030-01-01T00:00:00 DUE TO PREEMPTION ***",
        "slurm-preempted",
    ),
    ("slurmstepd: error: *** JOB 5012 ON gpu-a-01 CANCELLED AT 2030-01-01T00:00:00 ***", "slurm-cancelled"),
    ("srun: error: Unable to create step for job 77: More processors requested than permitted", "slurm-step-config"),
    ("srun: error: gpu-b-12: tasks 4-7: Terminated", "srun-task-terminated"),
    ("slurm: NodeName=gpu-a-02 State=DOWN+NOT_RESPONDING", "slurm-node-down"),
    ("srun: error: Node failure on gpu-a-02", "slurm-node-failure"),
    (
        "slurmstepd: error: *** JOB 5012 ON gpu-a-01 CANCELLED AT 2030-01-01T00:00:00 DUE TO NODE FAILURE, SEE "
        "SLURMCTLD LOG FOR DETAILS ***",
        "slurm-job-node-fail",
    ),
    ("slurmctld: error: Nodes gpu-a-[02-03] not responding", "slurm-node-not-responding"),
    ("update_node: node gpu-a-04 reason set to: Kill task failed", "slurmstepd-node-error"),
    ("update_node: node gpu-a-04 reason set to: Scheduler health check failed", "slurm-health-check"),
    ("Kernel panic - not syncing: hung_task: blocked tasks", "kernel-hung-task-panic"),
    (
        "Jun  2 03:04:05 gpu-a-04 slurmd[2211]: spank-epilog: error: pyxis: failed to remove container",
        "slurm-prolog-failure",
    ),
    ("Jun  2 03:04:05 gpu-a-04 kernel: NVRM: knvlinkCoreTrainingLinks_GH100: link 7 training failed!", "nvlink-error"),
    ("srun: error: Prolog failure on node gpu-a-05", "slurm-prolog-failure"),
    (
        "slurmstepd: error: couldn't chdir to `/home/u': No such file or directory: going to /tmp instead",
        "slurmstepd-node-error",
    ),
    ("[ 901.2] Kernel panic - not syncing: Fatal exception", "kernel-fatal"),
    ("[ 902.4] INFO: task python3:5604 blocked for more than 120 seconds.", "kernel-hung-task"),
    ("[ 903.1] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:", "kernel-hung-task"),
    ("[ 904.0] mce: [Hardware Error]: Machine check events logged", "memory-mce-edac"),
    (
        "[ 904.2] EDAC MC0: 1 UE memory read error on CPU_SrcID#0_Ha#0_Chan#1_DIMM#0 (channel:1 slot:0)",
        "memory-mce-edac",
    ),
    (
        "RuntimeError: The server socket has failed to bind to [::]:29400 (errno: 98 - Address already in use).",
        "port-in-use",
    ),
    ("torch.distributed.elastic.rendezvous.api.RendezvousClosedError", "rendezvous-error"),
    (
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 3/4 clients joined.",
        "store-connect-timeout",
    ),
    ("socket.gaierror: [Errno -3] Temporary failure in name resolution", "name-resolution"),
    ("srun: error: Application launch failed: Socket timed out on send/recv operation", "mpi-launch-failure"),
    ("Detected 300.1 GFLOPs for GPU 2 which is below the threshold 900.0", "gpu-below-threshold"),
    ("    HW Slowdown                       : Active", "gpu-throttled"),
    ("Straggler detected: rank 12 is 3.1x slower than the median", "straggler-detected"),
    ("PCIe link width for GPU 3 degraded from x16 to x4", "pcie-degraded"),
    # Respawn's own trusted lines (respawn/detection/rhythm.py, respawn/sources/gpu_metrics.py).
    (
        "respawn-detector: hang: no progress from rank 2 on node3 for 12.3 s (threshold 10.0 s, training);"
        " its process is stopped",
        "progress-stalled",
    ),
    (
        "respawn-detector: slowdown: rank 2 on node3 is 3.0x slower than its peers (score 0.33, compute 2.990 s)"
        " for 20.1 s",
        "progress-straggler",
    ),
    (
        "respawn-metrics: Hostname=node3 gpu=0 DCGM_FI_DEV_CLOCK_THROTTLE_REASONS=8 (hw_slowdown)"
        " DCGM_FI_DEV_SM_CLOCK=1005 MHz",
        "dcgm-clocks-throttled",
    ),
    ("respawn-metrics: Hostname=node2 gpu=0 DCGM_FI_DEV_XID_ERRORS=79 (was 0)", "dcgm-xid"),
    # Scheduler and host-memory shapes beyond Slurm (PBS / Torque, Ray, zsh), and storage as libraries raise it.
    ("Job exceeded its walltime limit. Job was aborted", "slurm-time-limit"),
    ("=>> PBS: job killed: cput 7260 exceeded limit 7200", "slurm-time-limit"),
    ("05/06/2031 10:11:12;0008;PBS_Server.311;Job;991.pbs01;Job deleted at request of admin@pbs01", "slurm-cancelled"),
    ("=>> PBS: job killed: mem 9437184kb exceeded limit 8388608kb", "slurm-memory-limit"),
    (
        "(raylet) node_manager.cc:3040: 2 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers "
        "crashed due to other reasons at node (ID: 3f2e, IP: 10.1.2.3)",
        "oom-kill",
    ),
    ("[2]  + 80211 killed     python train.py --cfg big.yaml", "killed"),
    (
        "botocore.exceptions.ConnectionClosedError: Connection was closed before we received a valid response from "
        'endpoint URL: "https://s3.example/ckpt/step_100.pt".',
        "parallel-fs-error",
    ),
    ("OSError: error closing file", "write-failed"),
    ("*** Error in `/opt/py/bin/python': free(): invalid next size (fast): 0x00007f9a10002c30 ***", "heap-corruption"),
    ("gpu9:11:12 [1] graph/rings.cc:44 NCCL WARN Error : ring 1 does not contain rank 6", "nccl-internal-error"),
    (
        "srun: error: Unable to allocate resources: Unable to contact slurm controller (connect failure)",
        "slurmctld-unreachable",
    ),
    ("[rank5]: Cuda failure 999 'unknown error'", "cuda-unknown-error"),
    ("[ 91.2] pcieport 0000:80:01.1: AER: Uncorrected (Non-Fatal) error received: 0000:81:00.0", "pcie-aer-error"),
    (
        "[ 91.2] nvidia 0000:81:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, "
        "(Requester ID)",
        "pcie-aer-error",
    ),
    # Hangs in the text: Horovod's stall inspector, a py-spy dump parked in a collective.
    (
        "[2031-05-02 08:00:00.000001: W /build/horovod/common/stall_inspector.cc:107] One or more tensors were "
        "submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks "
        "for more than 60 seconds.",
        "horovod-stall",
    ),
    ("    all_gather_into_tensor (torch/distributed/distributed_c10d.py:2911)", "stack-dump-in-collective"),
    ("Thread 0x00007f9d3a7fe700 (most recent call first):", "stack-dump-of-threads"),
    # The node's network interface stops sending (sch_generic.c, ipoib_main.c, bond_main.c).
    ("Jun  1 04:00:00 cn31 kernel: NETDEV WATCHDOG: CPU: 7: transmit queue 5 timed out 8192 ms", "netdev-tx-timeout"),
    # slurmctld refusing a submission (slurm_errno.c).
    (
        "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified",
        "slurm-policy-limit",
    ),
    ("salloc: error: Job submit/allocate failed: Partition in DOWN state", "slurm-resources-unavailable"),
    # Round 6 (issue 11): node loss as Ray, Kubernetes and srun say it; LSF's limits; Ray's dead workers.
    (
        "The node with node id: 5ad7fa5d and address: 10.1.2.3 and node name: 10.1.2.3 has been marked dead "
        "because the detector has missed too many heartbeats from it.",
        "ray-node-dead",
    ),
    (
        "(raylet) Raylet is terminated. Termination is unexpected. Possible reasons include: (1) SIGKILL",
        "ray-raylet-died",
    ),
    (
        "I0601 10:00:00.000000       1 health.go:159] XidCriticalError: Xid=79 on Device=GPU-5a1f2c3d; marking "
        "device as unhealthy.",
        "device-plugin-xid",
    ),
    ("Node gpu-07 status is now: NodeNotReady", "k8s-node-lost"),
    ("PLEG is not healthy: pleg was last seen active 3m5.3s ago; threshold is 3m0s", "k8s-kubelet-unhealthy"),
    ("srun: error: Aborting, step missing and io error on node 3", "slurm-step-io-lost"),
    # Round 7 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    ("[ 55.1] BUG: kernel NULL pointer dereference, address: 0000000000000008", "kernel-oops"),
    ("  Remote daemon: [[16919,0],3] on node cn127", "mpi-daemon-lost"),
    ("An MPI communication peer process has unexpectedly disconnected.  This", "peer-runtime-lost"),
    (
        "=>> PBS: job killed: node 18 (n314) requested job terminate, 'EOF' (code 1099) - received SISTER_EOF "
        "attempting to communicate with sister MOM's",
        "pbs-sister-lost",
    ),
    ("Pod was terminated in response to imminent node shutdown.", "node-reclaimed"),
    ("TERM_PROCESSLIMIT: job killed after reaching LSF process limit.", "lsf-resource-limit"),
    (
        "  Warning  FailedScheduling  12s  default-scheduler  0/8 nodes are available: 8 Insufficient nvidia.com/gpu.",
        "unschedulable",
    ),
    (
        '"message": "The following quota metrics exceed quota limits: aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"',
        "cloud-quota-exceeded",
    ),
    ("The replica master 0 ran out-of-memory and exited with a non-zero status of 137.", "cloud-replica-oom"),
    ("mount.nfs: Connection timed out", "shared-fs-mount-failed"),
    # Round 27: Neuron, Tenstorrent and i915 devices; Open MPI outside init; Horovod and SkyPilot.
    ("ERROR  TDRV:tdrv_get_dev_info         No neuron device available", "neuron-device-unavailable"),
    ("Timeout waiting for device at BDF 0000:41:00.0 to reappear.", "accelerator-reset-failed"),
    ("i915 0000:00:02.0: [drm] GPU HANG: ecode 11:1:fffffffe", "i915-gpu-hang"),
    ("*** The MPI_Barrier() function was called after MPI_FINALIZE was invoked.", "mpi-called-outside-init"),
    ("Timed out waiting for tasks to start. Please check connectivity between servers.", "horovod-start-timeout"),
    (
        "Failed to provision all possible launchable resources. Relax the task's resource requirements:",
        "cloud-provision-failed",
    ),
    ("No launchable resource found for task eval-3.", "cloud-request-unsatisfiable"),
    ("failed       28  : changing into working directory", "sge-job-not-started"),
    # Round 28: the kubelet's device manager, Torque's server, PSM2, mlx5's error CQE, Dask, Ray Train.
    (
        "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu",
        "k8s-device-unhealthy",
    ),
    (
        "Allocate failed due to requested number of devices unavailable for nvidia.com/gpu. Requested: 1",
        "k8s-device-admission-failed",
    ),
    ("unable to run job, send to MOM '10.1.4.4' failed", "pbs-mom-unreachable"),
    ("node3.4410PSM2 can't open hfi unit: 0 (err=23)", "opa-hfi-open-failed"),
    ("infiniband mlx5_0: mlx5_poll_one:530:(pid 0): Responder error cqe on cqn 0x1c2:", "mlx5-error-cqe"),
    ("Worker exceeded 80% memory budget. Restarting", "dask-worker-memory-limit"),
    ("The worker group startup timed out after 60.0 seconds waiting for 16 workers.", "ray-train-worker-group-timeout"),
    ("0/4 nodes are available: 4 pod has unbound immediate PersistentVolumeClaims.", "pvc-unbound"),
    ("mlx5_core 0000:01:00.0: mlx5_load_one failed with error code -22", "hca-probe-failed"),
    # Round 31: a filesystem's wait in a hung-task report, the node's container runtime.
    ("[ 811.2]  xlog_wait+0x5e/0x70 [xfs]", "storage-hung-task"),
    (
        'Failed to create pod sandbox: rpc error: code = Unknown desc = no runtime for "nvidia" is configured',
        "k8s-pod-sandbox-failed",
    ),
    ("[2019-05-02T08:00:01.123] error: Setting node gpu017 state to DRAIN", "slurm-node-invalid"),
    ("Container killed by YARN for exceeding memory limits. 9.5 GB of 9 GB physical memory used.", "yarn-memory-limit"),
    ("allocation failed due to agent failure: agent failed while the container was running", "determined-agent-lost"),
    (
        "Unable to load optimizer from checkpoint /ckpt/iter_0002000. Specify --no-load-optim or --finetune to "
        "prevent attempting to load the optimizer state, exiting ...",
        "megatron-checkpoint-load",
    ),
    ("could not load the checkpoint", "checkpoint-load-failed"),
    (
        "INFO:torch.distributed.elastic.timer.local_timer:Reaping worker_id=[7]. Expired timers: ['train_step']",
        "elastic-timer-expired",
    ),
    ("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.", "ray-worker-died"),
    # Round 8 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    ("srun: error: Job allocation 81234 has been revoked", "slurm-allocation-revoked"),
    ("An ORTE daemon has unexpectedly failed after launch and before", "mpi-daemon-launch-failed"),
    ("RuntimeError: CUDA error: too many resources requested for launch", "cuda-build-mismatch"),
    ("CUDA error: MPS client failed to connect to the MPS control daemon or the MPS server", "cuda-mps-failure"),
    (
        "F0301 10:00:00.000000 4242 client.h:80] Terminating process because the coordinator detected missing "
        "heartbeats. This most likely indicates that another task died; see the other task logs for more details.",
        "xla-coordination-peer-lost",
    ),
    (
        "DEADLINE_EXCEEDED: Barrier timed out. Id: [Init]Wait_for_all_tasks_to_register::0. This usually happens "
        "because a task triggered the barrier too early or too slowly.",
        "xla-coordination-register-timeout",
    ),
    ("ssh: connect to host gpu-node-3 port 22: No route to host", "ssh-launch-failed"),
    ("Host key verification failed.", "ssh-auth-refused"),
    (
        "subprocess.CalledProcessError: Command '['python', 'train.py']' died with <Signals.SIGKILL: 9>.",
        "subprocess-killed",
    ),
    ("[rank: 0] Handling auto-requeue signal: 10", "framework-requeue-signal"),
    ("Error: ErrImagePull", "container-start-failed"),
    # Round 9 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    ("OSError: [Errno 113] No route to host", "socket-connect-errno"),
    (
        "RuntimeError: [enforce fail at device.cc:212] ifa != nullptr. Unable to find interface for: [0.0.0.0]",
        "gloo-no-interface",
    ),
    # Round 10 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    ("[ 901.2] Kernel panic - not syncing: Fatal hardware error!", "kernel-hardware-panic"),
    ("slurmd[812]: fatal: Unable to bind listen port (6818): Address already in use", "slurmd-fatal"),
    (
        " iteration 20/100 | lm loss: 3.1E+00 | grad norm: nan | number of nan iterations:   0 |",
        "megatron-progress-nonfinite",
    ),
    # Round 12 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    (
        "Memory access fault by GPU node-2 (Agent handle: 0x5566aa) on address 0x7f1200000000. Reason: Unknown.",
        "rocm-gpu-fault",
    ),
    (
        "E0301 10:00:00.000000 4242 rendezvous.cc:41] [id=3] This thread has been waiting for `collective` for "
        "20 seconds and may be stuck. Expected 8 threads to join the rendezvous, but not all of them arrived on time.",
        "xla-rendezvous-stuck",
    ),
    (
        "F0301 10:00:40.000000 4242 rendezvous.cc:77] [id=3] Termination timeout for `collective` of 40 seconds "
        "exceeded. Exiting to ensure a consistent program state. Expected 8 threads to join the rendezvous, but "
        "only 7 of them arrived on time.",
        "xla-rendezvous-timeout",
    ),
    ("gpu-a-07          1      batch*    alloc*   64   2:32:1 512000        0      1   (null) none", "sinfo-node-down"),
    # Round 13 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    (
        "gpu-b-12 | ERROR: nhc: Health check failed: check_nccl_allreduce: NCCL allreduce, BUS BW "
        "(expected >=480.0 GB/s, but measured 311.2 GB/s). FaultCode: NHC2010",
        "nhc-bandwidth-low",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_nccl_allreduce_ib_loopback: NCCL allreduce, BUS BW "
        "(expected >=40.0 GB/s, but measured 12.5 GB/s). FaultCode: NHC2003",
        "nhc-network-bandwidth-low",
    ),
    ('ERROR:  nhc:  Health check failed:  Script timed out while executing "check_fs_mount_rw".', "nhc-run-failed"),
    ("node-3:2211:2211 [0] NCCL WARN Bootstrap : no socket interface found", "nccl-no-interface"),
    # Round 14 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    (
        "node-4:3120:3190 [0] bootstrap.cc:348 NCCL WARN Bootstrap Root : rank 5 of 16 ranks has already checked in",
        "nccl-bootstrap-root-mismatch",
    ),
    (
        "RuntimeError: Using hostfile at /job/hostfile but host=worker-2 was not reachable via ssh. If you are "
        "running with a single node please remove /job/hostfile or setup passwordless ssh.",
        "deepspeed-ssh-check-failed",
    ),
    # Round 15 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    (
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment variable "
        "MASTER_ADDR expected, but not set",
        "torch-rendezvous-config-missing",
    ),
    (
        "ValueError: Hostfile contains a bad entry: worker-1 slots=8, unable to proceed with launching",
        "deepspeed-hostfile-invalid",
    ),
    # Round 16 (tests/unit/catalogue/ has the rest of each family, in the module of each runbook).
    (
        "EI0002: The wait execution of the Notify register times out. Reason: The Notify register has not received "
        "the Notify record from remote rank: [3].",
        "hccl-exec-timeout",
    ),
    ("EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time.", "hccl-link-error"),
    (
        "EJ0001: Failed to initialize the HCCP process. Reason: Maybe the last training process is running.",
        "hccl-init-failed",
    ),
    (
        "EI0004: The ranktable or rank is invalid,Reason:[rank 9]. Please check the configured ranktable.",
        "hccl-config-invalid",
    ),
    ("EJ0002: The network port is down.Suggest: check the optical module", "hccp-port-down"),
    (
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'x'.",
        "nccl-nvls-bind-failed",
    ),
    (
        "[gpu1:1581048] pml_ucx.c:419 Error: ucp_ep_create(proc=9) failed: Destination is unreachable",
        "ompi-ucx-wireup-failed",
    ),
    (
        "[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring sdma0 timeout, signaled seq=16060, emitted seq=16062",
        "amdgpu-ring-timeout-reset",
    ),
    (
        "UserWarning: TPU backend initialization is taking more than 60.0 seconds. Did you run your code on all TPU hosts?",
        "jax-tpu-backend-init",
    ),
    # Round 17 (tests/unit/catalogue/ has the rest of each stack, in the module of each runbook).
    (
        "RuntimeError: MPS backend out of memory (MPS allocated: 17.50 GB, other allocations: 1.20 GB)",
        "accelerator-oom",
    ),
    ("HIP_CHECK failed: hipErrorIllegalAddress at attention.hip:212", "hip-illegal-address"),
    ("there is an aicore error exception, core id is 0, error code = 0x800000", "accelerator-kernel-fault"),
    ("RuntimeError: No HIP GPUs are available", "rocm-device-unreachable"),
    ("RuntimeError: XPU error: UR_RESULT_ERROR_DEVICE_LOST", "accelerator-device-lost"),
    ("RuntimeError: HCCL function error: HcclAllreduce(...), error code is 7", "hccl-error"),
    ("2024:01:01-10:00:00:(1234) |CCL_ERROR| atl_ofi.cpp:345 atl_ofi_comm_init: fi_getinfo error", "oneccl-error"),
    ("Fatal error in PMPI_Allreduce: Other MPI error, error stack:", "mpi-call-failed"),
    ("Fatal error in PMPI_Init: Other MPI error, error stack:", "mpi-init-failed"),
    ("RuntimeError: Failed to connect to client mesh master: 10.0.0.1:8477", "xla-mesh-connect-failed"),
    ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "mpi-rank-exit"),
    ("RuntimeError: HIP error: invalid device function", "hip-build-mismatch"),
    ("NPU function error: UCE ERROR., error code is 507053", "npu-memory-uncorrectable"),
    (
        "amdgpu 0000:c1:00.0: amdgpu: uncorrectable hardware error(ERREVENT_ATHUB_INTERRUPT) detected!",
        "amdgpu-ras-uncorrectable",
    ),
    ("RuntimeError: synStatus=8 [Device already acquired] Device acquire failed.", "accelerator-init-failed"),
    ("UnavailableError: Collective ops is aborted by: failed to connect to all addresses", "tf-collective-aborted"),
    # Round 18 (tests/unit/catalogue/ has each family's siblings, in the module of each runbook).
    ("RPC ran for more than set timeout (60000 ms) and will now be marked with an error", "torch-rpc-timeout"),
    ("BaseCollectiveExecutor::StartAbort DEADLINE_EXCEEDED: Deadline Exceeded", "tf-collective-deadline"),
    ("application called MPI_Abort(MPI_COMM_WORLD, 1) - process 0", "mpi-application-abort"),
    ("cuBLAS Error: the requested functionality is not supported", "cublas-status-unsupported"),
    (
        "All 10 retry attempts failed. The last failure: Unavailable: HTTP response code 503",
        "tf-filesystem-retries-exhausted",
    ),
    (
        "NCCL WARN NET/IB: ncclIbResiliencyHandleDeviceFailure: Device 0 marked as failed. (send comm=0x1)",
        "nccl-ib-device-failed",
    ),
    # Round 19.
    ("what():  Native API failed. Native API returns: -999 (Unknown PI error)", "sycl-native-api-failed"),
    ("Native API failed. Native API returns: -42 (PI_ERROR_INVALID_BINARY)", "sycl-binary-mismatch"),
    ("Rank 1 has different values for step: 20.0. Other ranks: 19.0", "fsdp-optim-state-mismatch"),
    ("OSError: [Errno 16] Device or resource busy: '/scratch/mlruns/0/metrics/loss'", "path-busy"),
    (
        "[ 812.5] amdgpu 0000:c1:00.0: amdgpu: [gfxhub0] retry page fault (src_id:0 ring:0 vmid:3 pasid:32771)",
        "amdgpu-kernel-fault",
    ),
    (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 2 is running collective: X, but Rank 0 "
        "is running collective: Y.",
        "collective-mismatch",
    ),
    (
        "E0101 10:00:00.1 7 grpc_client.cc:236] proc param error:name:[w_0] ep:[10.0.0.3:6170] grpc error:Deadline "
        "Exceeded",
        "paddle-rpc-deadline",
    ),
    ("run.sh: line 12: torchrun: command not found", "launcher-not-found"),
    (
        "/opt/env/bin/python3: can't open file '/work/trian.py': [Errno 2] No such file or directory",
        "python-script-not-found",
    ),
    (
        "0.031s: job.exception type=exec severity=0 task 0: start failed: python: No such file or directory",
        "flux-job-exec-failed",
    ),
    ("3600.012s: job.exception type=timeout severity=0 resource allocation expired", "flux-job-limit"),
    ("node7:rank3: Assertion failure at psm3/ptl_am/ptl.c:211: nbytes == req->req_data.recv_msglen", "psm-assertion"),
    (
        "habanalabs 0000:b3:00.0: Failed to initialize hl4. Device 0000:b3:00.0 is NOT usable !",
        "habana-device-unusable",
    ),
    (
        "gpu1:7:9 [0] transport.cc:175 NCCL WARN No transport found for rank 0[1000] -> rank 9[2000]",
        "nccl-setup-refused",
    ),
    (
        "cluster [WRN] Health check update: 3 slow ops, oldest one blocked for 35 sec, osd.2 has slow ops (SLOW_OPS)",
        "ceph-health-failed",
    ),
    (
        "RuntimeError: [enforce fail at gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. 8 vs 4",
        "gloo-transport-error",
    ),
    ("exec /app/train: exec format error", "exec-format-error"),
    (
        "core_worker_process.cc:232: Failed to register worker to Raylet: IOError: Unable to register worker with raylet.",
        "ray-worker-register-failed",
    ),
    ("nvgpu: 17000000.gpu  nvgpu_tsg_set_ctx_mmu_error:1070 [ERR]  TSG 5 generated a mmu fault", "nvgpu-mmu-fault"),
    (
        "[10:00:00] dmlc-core/include/dmlc/logging.h:263: [10:00:00] src/c_api/c_api.cc:1: Check failed: x",
        "dmlc-log-fatal",
    ),
    ("[ 2678.1] thermal thermal_zone2: critical temperature reached (105 C), shutting down", "thermal-shutdown"),
    ("Windows fatal exception: stack overflow", "windows-fatal-exception"),
    (
        "subprocess.CalledProcessError: Command 'train.exe' returned non-zero exit status 3221225477.",
        "windows-crash-status",
    ),
    (
        "ERROR: (gcloud.compute.instances.create) ZONE_RESOURCE_POOL_EXHAUSTED: The zone 'projects/p/zones/us-east1-b' "
        "does not have enough resources available to fulfill the request.",
        "cloud-capacity-unavailable",
    ),
    ("error execution phase kubelet-start: timed out waiting for the condition", "kubeadm-phase-failed"),
    (
        "[1478401.48] DMAR: [DMA Write NO_PASID] Request device [82:00.0] fault addr 0xf8139000 [fault reason 0x05] "
        "PTE Write access is not set",
        "iommu-dma-fault",
    ),
    ("[ 91.3] NMI: PCI system error (SERR) for reason a1 on CPU 0.", "nmi-pci-error"),
    (
        "ValueError: Loss is not finite and patience is exhausted. To debug, wrap `fit()` with autograd",
        "trainer-nonfinite-stop",
    ),
    ("There are not enough slots available in the system to satisfy the 16 slots", "mpi-not-enough-slots"),
    ("sbatch: error: Batch script contains DOS line breaks (\\r\\n)", "sbatch-script-invalid"),
    ("=>> PBS: job killed: ncpus 19.43 exceeded limit 8 (sum)", "pbs-cpu-limit"),
    ("Failed to modify QP 4242 to RTR", "rdma-connect-setup-failed"),
    (
        " 05-12-2026 10:01:02:113 [pid=4242 tid=4250] ERROR  cufio:1185 cuFileBufRegister error, object allocation failed",
        "gds-cufile-error",
    ),
    ("cxil_map: write error", "cxi-map-failed"),
    ("CreateSession still waiting for response from worker: /job:worker/replica:0/task:1", "members-not-joined"),
    ("Additional GRPC error information from remote target /job:ps/replica:0/task:0:", "tf-remote-call-failed"),
    ("[ 9856.985876] libceph: osd2 (1)10.0.0.249:6801 socket error on write", "ceph-client-connection-fault"),
    ("tsc: Marking TSC unstable due to clocksource watchdog", "clocksource-unstable"),
    (
        "[poptorch::python] [critical] IPUDevice: still waiting for host sync after: 300 seconds.",
        "ipu-host-sync-timeout",
    ),
    (
        "WARNING:torch.distributed.elastic.agent.server.api:Received 15 death signal, shutting down workers",
        "launcher-told-to-stop",
    ),
    # Round 42.
    (
        "libfabric:4242:1700000000::efa:mr:efa_mr_regattr():1003<warn> Unable to register MR: Bad address",
        "rdma-connect-setup-failed",
    ),
    ("[ 5120.331] e1000e: eth1 NIC Link is Down", "nic-link-down"),
    (" cxiWaitEventWait+0x208/0x330 [mmfslinux]", "storage-hung-task"),
    ("mmremote: GPFS is not ready to handle commands yet.", "gpfs-daemon-not-ready"),
    ("BFSMountError: Unable to mount blob fuse file system", "shared-fs-mount-failed"),
    (
        "2026-12-07 10:00:00 ERROR    GPU /sys/bus/pci/devices/0000:3b:00.0 broken: [Errno 11] Resource temporarily unavailable",
        "gpu-init-failed",
    ),
    ("Failed to run module scripts-user (scripts in /var/lib/cloud/instance/scripts)", "cloud-init-scripts-failed"),
    ("qsub: submit error (Invalid Job Dependency MSG=cannot queue job 4410.pbs01)", "pbs-submit-rejected"),
    ("ERROR: No supported GPU(s) detected to run this container", "container-gpu-unsupported"),
    ("pt-xla-profiler: CompileTime too frequent: 40 counts during 20 steps", "xla-recompilation-frequent"),
    # Round 43.
    ("Job cannot be executed", "pbs-job-cannot-execute"),
    ("srun: error: pyxis: could not add mount entry: data:/workspace/data", "container-args-invalid"),
    # Round 44.
    ("slurmctld[4242]: error: Munge decode failed: Invalid credential", "slurm-auth-failed"),
    (
        "F1207 10:00:00.000000  4242 math_functions.cpp:91] Check failed: error == cudaSuccess (30 vs. 0)  unknown error",
        "caffe-cuda-check-failed",
    ),
    # Round 45.
    ("kernel: neighbour: arp_cache: neighbor table overflow!", "host-network-table-full"),
    ("Could not create cudnn handle: CUDNN_STATUS_NOT_INITIALIZED", "cudnn-not-initialized"),
    ("srun: fatal: Invalid user id: 5012", "slurm-client-fatal"),
    # Round 46.
    (
        "|CCL_ERROR| atl_ofi_helper.cpp:1635 atl_ofi_open_nw_provs: can not open network providers",
        "oneccl-transport-unavailable",
    ),
    # Round 48.
    ("multipathd[811]: mpatha: remaining active paths: 0", "san-path-failed"),
    ("scsi host5: ib_srp: failed RECV status WR flushed (5) for CQE 00000000a1b2c3d4", "san-path-failed"),
    (" state: DEGRADED", "zfs-pool-degraded"),
    (
        "2017-02-08 06:11:15.3 7f39 -1 osd.2 9 heartbeat_check: no reply from 10.0.0.2:6803 osd.3 since back",
        "ceph-osd-flapping",
    ),
    ("debug1: kex_exchange_identification: banner line 0: Exceeded MaxStartups", "sshd-maxstartups"),
    ("wandb: ERROR Run initialization has timed out after 90.0 sec.", "tracking-service-unreachable"),
    ("RuntimeError: CUDA error: invalid device ordinal", "gpu-index-not-visible"),
    ("The following GPUs could not be reset:", "gpu-reset-refused"),
    ("VFS: file-max limit 8192 reached", "file-table-full"),
    ("mmfs: [E] Node 10.0.0.1 (gpfs01) is being expelled due to expired lease.", "gpfs-node-expelled"),
    (
        "error: Node ping apparently hung, many nodes may be DOWN or configured SlurmdTimeout should be increased",
        "slurmctld-ping-hung",
    ),
    ("  Reason: Transfer output files failure at execution point slot1@n2", "htcondor-transfer-failed"),
    ("systemd[1]: Dependency failed for Local File Systems.", "boot-filesystems-failed"),
    ("kubelet  Container web failed liveness probe, will be restarted", "k8s-probe-restart"),
    ("   1 | 06/01/2025 | 10:00:00 | Processor CPU1_Status | IERR | Asserted", "bmc-sel-fault"),
    ("2beb | Watchdog2 | Hard reset | Asserted", "bmc-sel-os-stop"),
    ("Warning: Lock file exists in build directory: '/tmp/ext/lock'", "extension-build-lock-wait"),
    ("WARNING:tensorflow:Your input ran out of data; interrupting training.", "keras-input-exhausted"),
    ("[drm:amdgpu_job_timedout [amdgpu]] *ERROR* ring gfx timeout, but soft recovered", "amdgpu-job-soft-recovered"),
    ("[ 88.1] md/raid10:md1: Disk failure on sdd1, disabling device.", "raid-member-failed"),
    ("[   6.0] megaraid_sas 0000:41:00.0: FW in FAULT state!!", "storage-controller-failed"),
    ("            DRAM Uncorrectable            : 3", "ecc-uncorrectable-counted"),
    (
        "slurmctld: error: slurmd error running JobId=12 on node(s)=n3: Plugin initialization failed",
        "slurm-batch-launch-failed",
    ),
    (
        "broker.err[0]: rejecting connection from node9 (rank 8): node9 is configured as rank 8: mismatched config?",
        "flux-broker-rejected",
    ),
    ("Epoch 3:  41% 512/1248 [rank: 0] Received SIGTERM: 15", "framework-told-to-stop"),
    # Round 49.
    ("NCCL WARN Error : no algorithm/protocol available for function Broadcast", "nccl-algo-unavailable"),
    ("User not in the specified user group. Job not submitted.", "batch-submit-rejected"),
    # Round 50.
    ("rocBLAS error: Cannot read TensileLibrary.dat: Illegal seek", "gpu-library-unusable"),
    (
        "Sequence group 7 is preempted by PreemptionMode.SWAP mode because there is not enough KV cache space",
        "vllm-kv-cache-preemption",
    ),
    ("ray.exceptions.RuntimeEnvSetupError: Failed to setup runtime environment.", "ray-runtime-env-failed"),
    ("vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.", "engine-core-died"),
    ("Fatal Hypervisor Maintenance interrupt [Not recovered]", "powernv-hmi-fatal"),
    ("Reason:           OutOfmemory", "k8s-admission-out-of-resource"),
    ("TimeoutError: RPC call to execute_model timed out.", "engine-rpc-timeout"),
    ('queue instance "all.q@node001" dropped because it is temporarily not available', "sge-queue-unavailable"),
    ("Post job file processing error; job 12.pbs on host n3", "pbs-stageout-failed"),
    (
        "RAS KERNEL FATAL Error receiving packet on tree network, expecting type 57 instead of type 3",
        "bgl-tree-packet-error",
    ),
    ("51338 node-3 node psu 1106496000 1 psu failure\\ ambient=28", "lanl-node-event"),
]

# Lines that look close to a failure and are not one.
# Slurm tearing a step down after a requeue (Respawn's own) or a failure named
# elsewhere: written late, often once the next attempt runs, and never the cause.
TEARDOWN = [
    "slurmstepd-node1: error: *** JOB 5 ON node1 CANCELLED AT 2026-11-30T02:30:35 DUE TO JOB REQUEUE ***",
    "srun: forcing job termination",
    "srun: Job step aborted: Waiting up to 4 seconds for job step to finish.",
    "srun: error: Timed out waiting for job step to complete",
    "srun: StepId=5.0 aborted before step completely launched.",
    "srun: launch/slurm: _step_signal: Terminating StepId=5.0",
    "slurmstepd-node1: error: *** STEP 5.0 ON node1 CANCELLED AT 2026-11-30T02:30:34 ***",
]


@pytest.mark.parametrize("line", TEARDOWN)
def test_slurm_teardown_is_never_a_failure(matcher: Matcher, line: str):
    assert matcher.failure(line) is None


NEAR_MISSES = [
    "see https://docs.nvidia.com/deploy/xid-errors for what Xid 79 means",  # talk about Xids, not one
    "host1:1:1 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object "
    "file: No such file or directory",
    "host1:1:1 [0] NCCL INFO NCCL_IB_TIMEOUT set by environment to 22.",
    "iteration 10/90 | lm loss: 2.1E+00 | loss scale: 1.0 | number of skipped iterations: 0 | number of nan "
    "iterations: 0 |",
    "[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, reducing to 32768",
    "Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 16384.0",
    "W tensorflow/bfc_allocator.cc:9] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.0GiB. The "
    "caller indicates that this is not a failure, but may mean there could be performance gains",
    "/site-packages/torch/nn/modules/module.py:1: UserWarning: the error handler is deprecated",
    "No stragglers detected.",
    "{'loss': 0.52, 'grad_norm': 1.7, 'learning_rate': 2e-05}",
    "Epoch 3: 100%|##########| 50/50 [00:10<00:00, 4.9it/s, loss=0.31]",
    "[rank0]:[I101 00:00:00.1 ProcessGroupNCCL.cpp:1 ] ProcessGroupNCCL heart beat monitor thread joined.",
    "Saving checkpoint to /scratch/run/ckpt-1000 (KeyError handling enabled)",
    "HW Slowdown : Not Active",
    "ChildFailedError handler installed",
    "slurmstepd: error: *** JOB 5012 ON gpu-a-01 CANCELLED AT 2030-01-01T00:00:00 DUE TO JOB REQUEUE",
    "killed 0 stale workers",
    "health check: no uncorrectable ECC errors on any GPU",
    "[W socket.cpp:663] [c10d] The client socket has failed to connect to [node1]:29500 (errno: 111 - Connection "
    "refused).",
    "export NCCL_IB_RETRY_CNT=7  # transport retry count",
    "[I ProcessGroupNCCL.cpp:1] ProcessGroupNCCL initialization options: TIMEOUT(ms): 1800000, USE_HIGH_PRIORITY: 0",
    "Killed 3 zombie processes before start",
    "gpu-lost-and-found: 0 devices reported lost",
    "loss: 0.31 | grad_norm: 0.94 | nan_count: 0",
    "slurm: JobState=FAILED ExitCode=1",
]


# (line, the benign pattern that vetoes it): each looks like a failure to some pattern.
VETOED = [
    ("gpu3:1:1 [0] NCCL INFO NCCL error in: probing plugins", "nccl-info"),
    ("/x.py:1: UserWarning: RuntimeError: will be raised in a future release", "warning-line"),
    (
        "W tf/bfc_allocator.cc:1] Allocator (GPU_0_bfc) ran out of memory trying to allocate 2.0GiB. The caller "
        "indicates that this is not a failure, but may mean that there could be performance gains",
        "not-a-failure",
    ),
    (
        "[deepspeed] OVERFLOW! Rank 1 Skipping step. Attempted loss scale: 4096, reducing to 2048 (grad_norm: inf)",
        "warmup-overflow",
    ),
    ("number of nan iterations:   0 | loss: nan-free", "healthy-counters"),
    ("=== No stragglers detected (3 slow ranks checked) ===", "no-stragglers"),
    ("NVRM: Xid (PCI:0000:3b:00): 121, pid='<unknown>', name=<unknown>, C2C link corrected error", "xid-informational"),
    (
        "NVRM: Xid (PCI:0000:3b:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
        "xid-recovery-none",
    ),
    (
        '[rank0]:[W510 09:16:33.3 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0 Rank 0] Failed to check the "should '
        'dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: Broken pipe',
        "tcpstore-should-dump",
    ),
    ("gpu3:1:9 [0] NCCL WARN Cuda failure 'driver shutting down'", "nccl-driver-shutting-down"),
    ("[rank2]: step 1200: loss: nan, skipping this step", "nonfinite-step-skipped"),
    (
        "WARNING: Retrying (Retry(total=4, connect=None, read=None, redirect=None, status=None)) after connection "
        "broken by 'NewConnectionError('<urllib3.connection.HTTPSConnection object at 0x7f2a>: Failed to establish "
        "a new connection: [Errno 111] Connection refused')': /simple/torch/",
        "not-a-failure",
    ),
    # Round 11: Slurm's failcnt notice, tensorboardX's warning, GradScaler's skip.
    ("slurmstepd: error: Exceeded step memory limit at some point.", "slurm-memory-failcnt"),
    ("WARNING:root:NaN or Inf found in input tensor.", "tensorboard-nonfinite-value"),
    (
        "Epoch: [3]  [ 120/5004]  eta: 1:02:03  lr: 0.000120  loss: 6.1203 (6.2011)  loss_scale: 65536.0000 "
        "(65536.0000)  grad_norm: inf (inf)  time: 0.7102  data: 0.0011  max mem: 20112",
        "gradscaler-skipped-step",
    ),
    # Round 16: NCCL's IB device probe, which skips a device it cannot open.
    ("gpu-7:80744:80744 [1] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed", "rdma-device-probe"),
    (
        "OSError: [Errno 16] Device or resource busy: '/nfs/home/u/.nfs000000000123abcd00000004'",
        "nfs-silly-rename-busy",
    ),
    (
        'MountVolume.SetUp failed for volume "cfg" : object "ns"/"cfg" not registered',
        "kubelet-volume-object-not-registered",
    ),
    ("failed to query event: CUDA_ERROR_DEINITIALIZED", "cuda-driver-deinitialized"),
    ("blk_update_request: I/O error, dev fd0, sector 0 op 0x0:(READ) flags 0x0", "legacy-drive-probe-error"),
    ("CPU0: Core temperature above threshold, cpu clock throttled (total events = 1)", "cpu-thermal-throttle-event"),
    ("  [[No CUDA-capable device is detected (CUDA_ERROR_NO_DEVICE) cuInit()=100]]", "ngc-minor-version-compat"),
    (
        "Failed to establish connection to the metrics exporter agent. Metrics will not be exported. RpcError: x",
        "ray-metrics-agent-unreachable",
    ),
    # Round 19: a program's own warning that it goes on without peer access.
    (
        "warning: failed to enable p2p on gpu #2: peer access is not supported between these two devices",
        "p2p-unavailable-warning",
    ),
    (
        "cluster [WRN] Health check failed: 1 host (2 osds) down (OSD_HOST_DOWN)",
        "ceph-health-check",
    ),
    ("[gpu4:5150:0] ib_md.c:1054 UCX  ERROR ibv_fork_init() failed: No such file or directory", "ucx-fork-init-failed"),
    (
        "Lustre: lfs-OST0000: Recovery over after 2:30, of 3 clients 3 recovered and 0 were evicted.",
        "lustre-recovery-complete",
    ),
    (
        "ldconfig: Can't create temporary cache file /etc/ld.so.cache~: Read-only file system",
        "image-read-only-at-start",
    ),
    (
        "[ 41.6] pcieport 0000:00:1c.1: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Transmitter ID)",
        "pcie-aer-corrected",
    ),
    ("[ 464.22] end_request: I/O error, dev fd0, sector 0", "legacy-drive-probe-error"),
    (
        "[1594407135.546337] [gpu7:117  :0]          ib_md.c:1933 UCX  ERROR ibv_open_device(mlx5_9) failed: No such "
        "file or directory",
        "rdma-device-probe",
    ),
    ("rm: cannot remove '/usr/local/cuda/compat/lib': Read-only file system", "image-read-only-at-start"),
    ("Failed to get IB devices list: Function not implemented", "rdma-device-probe"),
    ("[node-25:380048] PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c at line 168", "pmix-gds-lock-error"),
    ("salloc: error: Slurm job queue full, sleeping and retrying.", "slurm-submit-retrying"),
    (
        "[1759897476.656360] [gpu-6:4242:f]  vfs_fuse.c:440  UCX  DIAG  failed to watch on '/run/user/0/ucx/vfs.sock': "
        "Input/output error",
        "ucx-below-warn",
    ),
    ('sysctl: setting key "net.core.rmem_max", ignoring: Read-only file system', "sysctl-key-ignored"),
    ("ata1: SError: { RecovComm Persist PHYRdyChg }", "libata-serror-decode"),
    ("sshd[1761]: error: Bind to port 22 on 0.0.0.0 failed: Address already in use.", "sshd-address-skipped"),
    ("srun: Required node not available (down, drained or reserved)", "slurm-allocation-pending-reason"),
    (
        'MountVolume.SetUp failed for volume "kube-api-access-x1" : failed to sync configmap cache: timed out waiting for the condition',
        "k8s-token-volume-cache-wait",
    ),
    (
        "Lustre: fs-OST0001: Denying connection for new client 1f2e (at 10.0.0.8@tcp), waiting for 4 known clients "
        "(3 recovered, 0 in progress, and 1 evicted) already passed deadline 0:05",
        "lustre-recovery-window",
    ),
    (
        "Dec 10 11:03:53 LabSZ sshd[25457]: fatal: Write failed: Connection reset by peer [preauth]",
        "sshd-preauth-noise",
    ),
]


# Python's notices that it printed an exception and ignored it: no failure on their own, they veto
# the traceback printed after them (`vetoes: traceback`; test_attribute reads the blocks).
TRACEBACK_VETOES = [
    ("Exception ignored in: <function Pool.__del__ at 0x7f00deadbeef>", "python-exception-ignored"),
    ("Exception ignored in atexit callback: <function _exit_function at 0x7f00deadbeef>", "python-exception-ignored"),
    ("Error in atexit._run_exitfuncs:", "python-exception-ignored"),
    ("--- Logging error ---", "python-exception-ignored"),
    ("Import of transformer_engine failed with: Traceback (most recent call last):", "optional-import-logged"),
    (
        "INFO:nemo.utils.import_utils:Import of fused_gelu from m.f failed with: Traceback (most recent call last):",
        "optional-import-logged",
    ),
    (
        "ERROR:jax._src.xla_bridge:Jax plugin configuration error: Exception when calling jax_plugins.xla_cuda12.initialize()",
        "jax-plugin-init-logged",
    ),
]


@pytest.mark.parametrize(("line", "veto"), VETOED)
def test_benign_patterns_veto_their_lines(matcher: Matcher, line: str, veto: str):
    hits = matcher.match(line)
    assert veto in [h.pattern for h in hits if h.benign]
    assert any(not h.benign for h in hits), "the line should look like a failure"
    assert matcher.failure(line) is None


@pytest.mark.parametrize(("line", "veto"), TRACEBACK_VETOES)
def test_traceback_vetoes_name_their_lines(matcher: Matcher, line: str, veto: str):
    assert [h.pattern for h in matcher.match(line)] == [veto]
    assert matcher.traceback_veto(line) == matcher.match(line)[0].priority


def test_a_line_veto_is_no_traceback_veto(matcher: Matcher):
    assert matcher.traceback_veto("/x.py:1: UserWarning: RuntimeError: will be raised in a future release") is None
    assert matcher.traceback_veto("Exception in thread Thread-3:") is None  # a thread that died is not ignored


def test_every_benign_pattern_has_a_test_line(catalogue: Catalogue):
    benign = {p.id for p in catalogue.runbook(FailureClass.BENIGN).patterns}
    assert benign == {v for _, v in VETOED} | {v for _, v in TRACEBACK_VETOES}


@pytest.mark.parametrize(("line", "pattern"), FAILURES)
def test_failure_lines_hit_their_pattern(matcher: Matcher, line: str, pattern: str):
    hit = matcher.failure(line)
    assert hit is not None, line
    assert hit.pattern == pattern


@pytest.mark.parametrize("line", NEAR_MISSES)
def test_near_misses_are_no_failure(matcher: Matcher, line: str):
    assert matcher.failure(line) is None


def test_every_failure_pattern_has_a_test_line(catalogue: Catalogue):
    tested = {p for _, p in FAILURES}
    patterns = {
        p.id for b in catalogue.runbooks.values() if b.failure_class is not FailureClass.BENIGN for p in b.patterns
    }
    assert patterns - tested == set()


def test_hit_carries_runbook_defaults_and_groups(matcher: Matcher):
    hit = matcher.failure("NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python, An uncorrectable double bit error")
    assert hit is not None
    assert hit.failure_class is FailureClass.GPU_HARDWARE and hit.priority == 900
    assert hit.groups["xid"] == "48" and hit.groups["pci"] == "0000:3b:00"
    assert hit.recoverable_by_restart is True


def test_pattern_overrides_apply(matcher: Matcher):
    full = matcher.failure("OSError: [Errno 28] No space left on device")
    stale = matcher.failure("OSError: [Errno 116] Stale file handle")
    assert full is not None and full.recoverable_by_restart is False
    assert stale is not None and stale.recoverable_by_restart is True
    killed = matcher.failure("Killed")
    assert killed is not None and killed.recoverable_by_restart is None  # an explicit null override
    local = matcher.failure(
        "NET/IB : Got completion from peer 10.0.0.7<42> with error 4, opcode 0, len 0, vendor err 81"
    )
    assert local is not None and local.failure_class.value == "interconnect"
    assert local.cause_layer.value == "system_software"  # the pattern's layer, not its runbook's


def test_benign_vetoes_only_below_its_priority(matcher: Matcher):
    # The NCCL INFO veto (290) hides a "connection reset" (300)? No: only lower priorities.
    info_reset = "host1:1:1 [0] NCCL INFO misc/socket.cc:50 Connection reset by peer"
    assert matcher.failure(info_reset) is not None
    # ... but hides the other NCCL errors it mentions (260).
    assert matcher.failure("host1:1:1 [0] NCCL INFO NCCL error in: nothing yet") is None
    # The loss-scale minimum (700) outranks the warm-up overflow veto (650) if both match.
    line = "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1, reducing to 1"
    hit = matcher.failure(line)
    assert hit is not None and hit.pattern == "loss-scale-minimum"


def test_match_lists_benign_hits_too(matcher: Matcher):
    hits = matcher.match("host1:1:1 [0] NCCL INFO NCCL error in: nothing yet")
    assert [h.pattern for h in hits] == ["nccl-info", "nccl-error-other"]
    assert matcher.match("all is well") == []


def test_highest_priority_wins_on_one_line(matcher: Matcher):
    line = "[Rank 0] Watchdog thread terminated with exception: CUDA error: an illegal memory access was encountered"
    hit = matcher.failure(line)
    assert hit is not None and hit.failure_class is FailureClass.GPU_FAULT


def test_combined_matcher_agrees_with_the_naive_loop(catalogue: Catalogue, matcher: Matcher):
    import re2

    lines = [line for line, _ in FAILURES] + NEAR_MISSES
    patterns = [(p, re2.compile(p.regex)) for b in catalogue.runbooks.values() for p in b.patterns]
    for line in lines:
        naive = {p.id for p, compiled in patterns if _naive_hit(p, compiled, line)}
        assert {h.pattern for h in matcher.match(line)} == naive, line


def _naive_hit(pattern, compiled, line: str) -> bool:
    found = compiled.search(line)
    if found is None:
        return False
    return pattern.xid_codes is None or int(found.group("xid")) in pattern.xid_codes


def test_scan_finds_what_failure_finds_line_by_line(matcher: Matcher):
    # Anchored patterns ("Killed" alone on its line, a traceback header) inside
    # blocks, and blocks with no failure at all.
    lines = [f"step {i} loss 0.5" for i in range(1000)]
    lines[5] = "Killed"
    lines[130] = "Traceback (most recent call last):"
    lines[131] = "ValueError: bad value"
    lines[700] = "host1:1:1 [0] NCCL INFO NCCL error in: nothing yet"  # vetoed
    lines[999] = "MemoryError"
    expected = [(i, h) for i, line in enumerate(lines) if (h := matcher.failure(line)) is not None]
    assert list(matcher.scan(lines)) == expected
    assert [i for i, _ in expected] == [5, 130, 131, 999]


def test_hostile_long_lines_do_not_stall(matcher: Matcher):
    # 100 KB built to make a backtracking engine suffer on these patterns.
    hostile = [
        "a" * 100_000,
        "NCCL WARN " + "host:1:" * 14_000,
        "Got completion from peer " + "x" * 100_000,
        "loss" + " :" * 50_000,
        'File "' + "(" * 100_000,
        "NVRM: Xid (PCI:0000:3b:00): " + "9" * 100_000,
    ]
    for line in hostile:
        began = time.perf_counter()
        matcher.match(line)
        matcher.failure(line)
        assert time.perf_counter() - began < 0.5
    tail = "x" * 100_000 + " RuntimeError: CUDA error: uncorrectable ECC error encountered"
    hit = matcher.failure(tail)
    assert hit is not None and hit.pattern == "ecc-uncorrectable"


def test_regexes_lists_every_pattern(catalogue: Catalogue, matcher: Matcher):
    everything = sorted(p.regex for b in catalogue.runbooks.values() for p in b.patterns)
    assert sorted(matcher.regexes) == everything
    assert all(re.compile(r"\S").search(r) for r in matcher.regexes)


def test_a_matcher_over_the_same_patterns_reuses_their_compiled_sets(catalogue: Catalogue, tmp_path):
    first, again = Matcher.from_catalogue(catalogue), Matcher.from_catalogue(Catalogue.load())
    assert again._failures._set is first._failures._set and again._blocks is first._blocks
    assert again._failures.rules[0].compiled is first._failures.rules[0].compiled
    # An edited catalogue gets sets of its own, and answers by its own patterns.
    edited = tmp_path / "runbooks"
    shutil.copytree(DEFAULT_DIR, edited)
    book = yaml.safe_load((edited / "app_error.yaml").read_text())
    book["patterns"].append({"id": "made-up", "regex": "zz-made-up-failure"})
    (edited / "app_error.yaml").write_text(yaml.safe_dump(book, sort_keys=False))
    other = Matcher.from_catalogue(Catalogue.load(edited))
    assert other._failures._set is not first._failures._set
    assert other.failure("zz-made-up-failure") is not None and first.failure("zz-made-up-failure") is None
