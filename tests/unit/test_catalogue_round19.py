"""Round 19 of the catalogue (issue 11): holdout-9's misses, each family from its source.

Each line is a format string of the software that prints it, filled in with made-up hosts, ids
and numbers: the amdgpu driver's VM faults and shader errors (gpu_fault); cudaGetErrorString's
later wording of "busy or unavailable", the habanalabs driver giving a device up (gpu_hardware);
NCCL's P2P disabled on an NVLink pair (interconnect); ibstat's port block and lspci's link width
(interconnect, slowdown); Ascend's fftsplus / 507048 timeouts and the HCCL registry's titles,
PaddlePaddle's gRPC deadline (comm_timeout, comm_error); PSM's assertions (comm_error); PyTorch's
collective fingerprint (app_error); MXNet's cudaMalloc (gpu_oom); TensorFlow's checkpoint writer,
EBUSY and the kubelet's DiskPressure (storage); sacct, SkyPilot and Flux (scheduler_limit);
gloo's connect timeout, the shell finding no launcher, Python finding no script and Flux's exec
failures (launch); the translation trainers' nan (numerical); a "Killed" glued to a tqdm bar
(host_oom). Beside them the neighbour each must not take, and the look-alikes that stay benign.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign, assert_decided

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # kubelet's eviction manager: admission refused on the condition, the condition set, its event.
    (
        "Warning  Evicted  2m  kubelet  The node had condition: [MemoryPressure]. ",
        C.HOST_OOM,
        L.APPLICATION,
        "evicted-for-memory",
    ),
    (
        "  MemoryPressure   True    Mon, 01 Jan 2024 10:00:00 +0000   KubeletHasInsufficientMemory   kubelet has "
        "insufficient memory available",
        C.HOST_OOM,
        L.APPLICATION,
        "evicted-for-memory",
    ),
    (
        "  Normal  NodeHasInsufficientMemory  5m  kubelet  Node gpu-b-07 status is now: NodeHasInsufficientMemory",
        C.HOST_OOM,
        L.APPLICATION,
        "evicted-for-memory",
    ),
    # amdgpu gmc_v9_0.c (hub and retry), gmc_v10_0.c, and the pre-5.x form with the process.
    (
        "[ 1203.440112] amdgpu 0000:83:00.0: amdgpu: [gfxhub0] no-retry page fault (src_id:0 ring:24 vmid:5 "
        "pasid:32770)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "amdgpu 0000:0a:00.0: amdgpu: [mmhub] page fault (src_id:0 ring:8 vmid:2 pasid:32781)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "amdgpu 0000:43:00.0: [gfxhub] page fault (src_id:0 ring:0 vmid:1 pasid:32769, for process python pid 991 "
        "thread python pid 991)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    # amdkfd's SQ error interrupt: v9 (sh / cu_id), v10+ (sa / wgp_id), gfx_v10_0.c's detail form.
    (
        "[ 77.1] amdgpu: sq_intr: error, se 0, data 0x12, sh 1, priv 0, wave_id 3, simd_id 2, cu_id 7, err_type 1",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "amdgpu: sq_intr: error, se 2, data 0x0, sa 0, priv 1, wave_id 6, simd_id 1, wgp_id 4, err_type 3",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    (
        "amdgpu: sq_intr: error, detail 0x00000010, type 2, sh 0, priv 1, wave_id 1, simd_id 3, wgp_id 2",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "amdgpu-kernel-fault",
    ),
    # SYCL's runtime_error under its abort, and the build without the device's target.
    (
        "terminate called after throwing an instance of 'sycl::_V1::runtime_error'\n"
        "  what():  Native API failed. Native API returns: -997 (Command failed to enqueue/execute) -997 (Command "
        "failed to enqueue/execute)\nAborted (core dumped)",
        C.GPU_FAULT,
        L.AMBIGUOUS,
        "sycl-native-api-failed",
    ),
    (
        "RuntimeError: Native API failed. Native API returns: 29 (UR_RESULT_ERROR_INVALID_KERNEL_NAME)",
        C.APP_ERROR,
        L.APPLICATION,
        "sycl-binary-mismatch",
    ),
    (
        "  what():  Native API failed. Native API returns: -42 (PI_ERROR_INVALID_BINARY) -42 (PI_ERROR_INVALID_BINARY)",
        C.APP_ERROR,
        L.APPLICATION,
        "sycl-binary-mismatch",
    ),
    # cudaErrorDevicesUnavailable in CUDA 9+'s words, through THC and a project's own check.
    (
        "THCudaCheck FAIL file=/src/aten/src/THC/THCGeneral.cpp line=51 error=46 : all CUDA-capable devices are "
        "busy or unavailable",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-init-failed",
    ),
    (
        "/home/u/solver/include/domain.cuh@88: CUDA Runtime Error(46): all CUDA-capable devices are busy or "
        "unavailable",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "gpu-init-failed",
    ),
    # habanalabs hl_device_init, before and since 6.2.
    (
        "[   41.000001] habanalabs 0000:1b:00.0: Failed to initialize hl0. Device is NOT usable !",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "habana-device-unusable",
    ),
    (
        "habanalabs 0000:b3:00.0: Failed to initialize hl4. Device 0000:b3:00.0 is NOT usable !",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "habana-device-unusable",
    ),
    # NCCL paths.cc ncclTopoCheckP2p, in NCCL's own words a hardware issue.
    (
        "node4:311:402 [2] graph/paths.cc:341 NCCL WARN P2P is disabled between NVLINK connected GPUs 3 and 2. "
        "This should not be the case given their connectivity, and is probably due to a hardware issue. If you "
        "still want to proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.",
        C.INTERCONNECT,
        L.HARDWARE,
        "nvlink-p2p-disabled",
    ),
    # ibstat's port block, one field a line; lspci -vv's link status, width downgraded.
    (
        "CA 'mlx5_3'\n\tCA type: MT4123\n\tPort 1:\n\t\tState: Down\n\t\tPhysical state: LinkUp\n\t\tRate: 200",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    (
        "\tPort 1:\n\t\tState: Initializing\n\t\tPhysical state: LinkUp\n\t\tBase lid: 65535",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    (
        "\t\tLnkCap:\tPort #0, Speed 16GT/s, Width x16, ASPM not supported\n"
        "\t\tLnkSta:\tSpeed 16GT/s (ok), Width x8 (downgraded)",
        C.SLOWDOWN,
        L.HARDWARE,
        "pcie-degraded",
    ),
    # libfabric's EFA provider, before v1.19 and with the peer's address since.
    (
        "libfabric:20311:1700000000::efa:cq:efa_rdm_rxe_handle_error():531<warn> err: 112, message: "
        "Unreachable remote (112)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "libfabric:7001:1700000001::efa:cq:efa_rdm_txe_handle_error():740<warn> err: 5, message: Invalid address "
        "My EFA addr: fi_addr_efa://[fe80::1:2ff:fe3:4]:0:11 My host id: i-0aaa Peer EFA addr: "
        "fi_addr_efa://[fe80::5:6ff:fe7:8]:0:22 Peer host id: i-0bbb (7)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # Grid Engine's execd reason, in the abort mail and in qacct.
    (
        "Job 812 Aborted\n Exit Status      = 137\n Signal           = KILL\nfailed execd enforced h_vmem limit "
        "because:\njob 812.1 died through signal KILL (9).",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
    (
        "failed       100 : execd enforced h_rss limit",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
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
    (
        "[Error]: The execution of the internal task times out.",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "hccl-exec-timeout",
    ),
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
    # ProcessGroupWrapper's fingerprint check.
    (
        "RuntimeError: Detected mismatch between collectives on ranks. Rank 3 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=12, OpType=BROADCAST, TensorShape=[8]), but Rank 0 is running "
        "collective: CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE).",
        C.APP_ERROR,
        L.APPLICATION,
        "collective-mismatch",
    ),
    # FSDP's optimizer-state gather, bare and under a rank tag.
    (
        "Rank 3 has different values for step: 1200.0. Other ranks: 1184.0",
        C.APP_ERROR,
        L.APPLICATION,
        "fsdp-optim-state-mismatch",
    ),
    (
        "[rank0]: Rank 0 has different values for step: tensor(40.). Other ranks: tensor(39.)",
        C.APP_ERROR,
        L.APPLICATION,
        "fsdp-optim-state-mismatch",
    ),
    # MXNet's storage manager, first try and retry.
    (
        "[10:00:00] src/storage/./pooled_storage_manager.h:157: cudaMalloc failed: out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "MXNetError: [10:00:01] src/storage/./pooled_storage_manager.h:164: cudaMalloc retry failed: out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # TensorFlow's tensor_slice_writer.cc, EBUSY on a path, the kubelet's DiskPressure eviction.
    (
        "InternalError: Error writing (tmp) checkpoint file: /ckpt/run2/model.ckpt-300.tempstate81: Resource "
        "exhausted: /ckpt/run2/model.ckpt-300.tempstate81",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    (
        "PermissionError: [Errno 16] Device or resource busy: '/scratch/run7/mlruns/0/a1b2/metrics/loss'",
        C.STORAGE,
        L.STORAGE,
        "path-busy",
    ),
    (
        "OSError: [Errno 16] Device or resource busy: '/nfs/run7/.nfs000000000a1b2c3d00000042'",
        C.STORAGE,
        L.STORAGE,
        "stale-file-handle",
    ),
    (
        "trainer-0-7f9c   team-ml   Evicted   node-17   Pod The node had condition: [DiskPressure]. ",
        C.STORAGE,
        L.STORAGE,
        "evicted-for-disk",
    ),
    # sacct's cancelling uid; SkyPilot's managed-job controller, with and without the status.
    (
        "4242|trainer|CANCELLED by 51234|02:11:09|gpu-b-07",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "slurm-cancelled",
    ),
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
    (
        "12.500s: job.exception type=cancel severity=0 ",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
        "flux-job-limit",
    ),
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
    # srun's task-finish report of a task's own exit, with --kill-on-bad-exit's echo after it.
    (
        "srun: error: gpu-a-03: task 0: Exited with exit code 1\nsrun: Terminating StepId=812.0\n"
        "srun: error: gpu-a-04: tasks 1-3: Terminated",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    (
        "srun: error: c7: tasks 0-7: Exited with exit code 2",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    # A shell's "Killed" glued to a tqdm bar's line.
    (
        "Loading checkpoint shards:  40%|████      | 2/5 [00:03<00:04,  1.51s/it]Killed",
        C.HOST_OOM,
        L.APPLICATION,
        "killed",
    ),
    # Marian, OpenNMT-py, Lua trainers: nan as a cost, perplexity, cross-entropy.
    (
        "[2024-01-01 10:00:00] Ep. 2 : Up. 1200 : Sen. 96,000 : Cost nan : Time 12.01s : 9001.20 words/s",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    (
        "[2024-01-01 10:00:00,000 INFO] Step 800/10000; acc:   3.10; ppl:   nan; xent:   nan; lr: 0.00100; "
        "900/1000 tok/s;    120 sec",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
    ("Validation perplexity: nan", C.NUMERICAL, L.APPLICATION, "nan-loss"),
    (
        "Epoch 3 ; Iter 10/100 ; LR 0.5000 ; Target tokens/s 1000 ; PPL inf ;",
        C.NUMERICAL,
        L.APPLICATION,
        "nan-loss",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


def test_busy_or_unavailable_is_not_a_kernel_fault(catalogue, matcher):
    # gpu_fault's generic THCudaCheck reading (cuda-error-other) was the neighbour it took.
    got = classify_text(
        catalogue,
        matcher,
        "THCudaCheck FAIL file=/src/THCStream.cpp line=40 error=46 : all CUDA-capable devices are busy or unavailable",
    )
    assert got.failure_class is C.GPU_HARDWARE and got.pattern != "cuda-error-other"


def test_sycl_device_oom_stays_gpu_oom(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "RuntimeError: Native API failed. Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
    )
    assert got.failure_class is C.GPU_OOM


def test_a_task_exit_by_sigkill_stays_the_kill(catalogue, matcher):
    got = classify_text(catalogue, matcher, "srun: error: c7: task 3: Exited with exit code 137")
    assert got.pattern == "killed"


def test_nvlink_p2p_disabled_implicates_the_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "P2P is disabled between NVLINK connected GPUs 1 and 0. This should not be the case given their "
        "connectivity, and is probably due to a hardware issue.",
    )
    assert got.failure_class is C.INTERCONNECT and got.node_implicated


def test_other_nccl_setup_refusals_stay_comm_error(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "n1:1:2 [0] transport/p2p.cc:238 NCCL WARN failed to open CUDA IPC handle : 217 peer access is not supported "
        "between these two devices",
    )
    assert (got.failure_class, got.pattern) == (C.COMM_ERROR, "nccl-setup-refused")


def test_collective_mismatch_outranks_the_watchdog_it_causes(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: A, "
        "but Rank 0 is running collective: B.\n"
        "[rank0]: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=40, OpType=ALLREDUCE) ran for "
        "600042 milliseconds before timing out.",
    )
    assert got.pattern == "collective-mismatch"


def test_ebusy_on_a_device_node_is_not_storage(catalogue, matcher):
    # The path-less strerror (a device the program opens) is not the file system's.
    got = classify_text(catalogue, matcher, "RuntimeError: Device or resource busy")
    assert got.failure_class is not C.STORAGE


def test_the_gloo_connect_timeout_is_launch_not_the_python_exception(catalogue, matcher):
    got = classify_text(
        catalogue, matcher, "RuntimeError: [gloo/transport/tcp/pair.cc:611] Connect timeout [10.0.0.5]:27023"
    )
    assert got.failure_class is C.LAUNCH


BENIGN = [
    # The SQ interrupt's information lines, and a healthy ibstat port / lspci link.
    "amdgpu: sq_intr: auto, se 0, ttrace 0, wlt 1, ttrac_buf_full 0, reg_tms 0, cmd_tms 0, host_cmd_ovf 0",
    "amdgpu: sq_intr: inst, se 1, data 0x0, sh 0, priv 0, wave_id 2, simd_id 0, cu_id 3, intr_data 0x0",
    "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400",
    # A GPU's idle PCIe power state: the speed below capability, the width whole.
    "\t\tLnkSta:\tSpeed 2.5GT/s (downgraded), Width x16 (ok)",
    "\t\tLnkSta:\tSpeed 16GT/s (ok), Width x16 (ok)",
    # kubectl listing the condition healthy; a job sacct lists completed.
    "  DiskPressure     False   Mon, 01 Jan 2024 10:00:00 +0000   KubeletHasNoDiskPressure     kubelet has no disk "
    "pressure",
    "4243|trainer|COMPLETED|00:41:09|gpu-b-07",
    # The memory condition listed healthy, and kubelet's event for it.
    "  MemoryPressure   False   Mon, 01 Jan 2024 10:00:00 +0000   KubeletHasSufficientMemory   kubelet has "
    "sufficient memory available",
    "  Normal  NodeHasSufficientMemory  5m  kubelet  Node gpu-b-07 status is now: NodeHasSufficientMemory",
    # A missing helper in a prologue; a non-fatal Flux exception; a healthy SkyPilot controller.
    "/var/spool/slurmd/job4411/slurm_script: line 3: module: command not found",
    "5.002s: job.exception type=test severity=1 this is only a test",
    "I 03-01 10:00:00 controller.py:150] Cluster is up. Submitting the job.",
    # Healthy trainers' progress lines.
    "[2024-01-01 10:00:00] Ep. 1 : Up. 100 : Sen. 8,000 : Cost 5.12345678 : Time 10.00s : 8000.00 words/s",
    "[2024-01-01 10:00:00,000 INFO] Step 100/1000; acc:  12.30; ppl: 812.12; xent: 6.70; lr: 0.00010; 800/900 "
    "tok/s;     60 sec",
    "Training: 100%|██████████| 50/50 [00:10<00:00,  4.90it/s]",
    # A program's own warning that it goes on without peer access (kmcuda's), and NCCL's INFO fallback.
    "warning: failed to enable p2p on gpu #1: peer access is not supported between these two devices",
    "n1:1:2 [0] NCCL INFO P2P is disabled between connected GPUs 1 and 0. You can repress this message with "
    "NCCL_IGNORE_DISABLED_P2P=1.",
    # libfabric's EFA provider at INFO, and a Grid Engine limit requested.
    "libfabric:7001:1700000001::efa:core:efa_device_construct():120<info> device 0 is rdmap0s6",
    "#$ -l h_vmem=16G",
    # The habanalabs driver's success, MXNet's storage manager chosen, the c10d barrier passed.
    "habanalabs 0000:b3:00.0: Successfully added device 0000:b3:00.0 to habanalabs driver",
    "[10:00:00] src/storage/storage.cc:199: Using Pooled (Naive) StorageManager for GPU",
    "I0101 10:00:00.1 1 distributed_c10d.py:1] Rank 0: Completed store-based barrier for key:"
    "store_based_barrier_key:1 with 8 nodes.",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
