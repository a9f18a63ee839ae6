"""runbooks/benign.yaml: the vetoes, and look-alikes whose imitated class is not plain.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: NVIDIA's Xid catalogue and nverror.h / gpu.c (the informational Xids and XID 154's
recovery action to None); PyTorch's ProcessGroupNCCL.cpp ("should dump" on TCPStore) and
TCPStore.cpp; NCCL's checks.h ("driver shutting down"), ibvwrap.cc's handled retries; Megatron-LM
and DeepSpeed's loss scalers (loss_scaler.py, fused_optimizer.py); PyTorch's MPS fallback and
PaddlePaddle's device notice; round 23, what srun, the kernel, PyTorch and a few libraries print
when they go on (their sources beside the lines). Each veto names the benign pattern that silences the line and,
where the case says so, the failure pattern it would otherwise hit.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases
from tests.unit.catalogue._catalogue_cases import XID, ids

C = FailureClass
L = CauseLayer


# (line, the benign pattern that vetoes it, the failure pattern it would otherwise hit where the case names
# it): a failure pattern matches, the veto wins.
VETOED: list[tuple[str, str, str | None]] = [
    (
        "cn12:90:95 [0] NCCL INFO misc/ibvwrap.cc:129 Call to ibv_reg_mr_iova2 failed with error Cannot allocate "
        "memory, retrying",
        "not-a-failure",
        None,
    ),
    ("NaN check at step 300: no NaN or Inf found in the gradients", "healthy-counters", None),
    (
        "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1",
        "warmup-overflow",
        None,
    ),
    (XID.format(code=14, text="Fake error injected"), "xid-informational", "xid-other"),
    (
        XID.format(code=93, text="Non-fatal violation of provisioned InfoROM wear limit"),
        "xid-informational",
        "xid-other",
    ),
    (XID.format(code=106, text="SMBPBI test message"), "xid-informational", "xid-other"),
    (XID.format(code=107, text="SMBPBI test message silent"), "xid-informational", "xid-other"),
    (XID.format(code=121, text="C2C link corrected error"), "xid-informational", "xid-other"),
    (XID.format(code=162, text="Power smoothing HW circuitry capability disabled"), "xid-informational", "xid-other"),
    (XID.format(code=165, text="Power smoothing"), "xid-informational", "xid-other"),
    (
        XID.format(code=154, text="GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)"),
        "xid-recovery-none",
        "xid-other",
    ),
    (
        "[rank3]:[W1101 10:00:00.1 ProcessGroupNCCL.cpp:1771] [PG ID 0 PG GUID 0(default_pg) Rank 3] Failed to "
        'check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: '
        "Connection reset by peer",
        "tcpstore-should-dump",
        "connection-lost",
    ),
    ("cn7:411:499 [2] NCCL WARN Cuda failure 'driver shutting down'", "nccl-driver-shutting-down", "nccl-cuda-error"),
    ("cn7:411:499 [2] NCCL WARN Cuda failure 4 'driver shutting down'", "nccl-driver-shutting-down", "nccl-cuda-error"),
    # Round 27: the NFS client refusing to unlink a silly-renamed file still open (fs/nfs/unlink.c).
    (
        "OSError: [Errno 16] Device or resource busy: '/nfs/tmp/pymp-a1b2c3/.nfs0000000012ab34cd00000009'",
        "nfs-silly-rename-busy",
        "path-busy",
    ),
    (
        "OSError: [Errno 16] Device or resource busy: '.nfs000000000a1b2c3d00000042'",
        "nfs-silly-rename-busy",
        "path-busy",
    ),
    # Round 28: the kubelet's object manager not having registered a configMap or secret
    # (watch_based_manager.go), inside a volume's SetUp failure.
    (
        'MountVolume.SetUp failed for volume "kube-api-access-x7k2p" : object "ml"/"kube-root-ca.crt" not registered',
        "kubelet-volume-object-not-registered",
        "shared-fs-mount-failed",
    ),
    # Round 29: the CUDA driver already torn down at exit (CUDA_ERROR_DEINITIALIZED).
    (
        "E tensorflow/stream_executor/cuda/cuda_event.cc:49] Error polling for event status: failed to query event: "
        "CUDA_ERROR_DEINITIALIZED",
        "cuda-driver-deinitialized",
        "cuda-error-other",
    ),
    # Round 32: an empty floppy or CD-ROM drive probed (blk-core.c, floppy.c); the CPU's thermal-throttle notice
    # (therm_throt.c); an NGC container's reason for running in minor-version compatibility (its entrypoint).
    (
        "[  125.02] blk_update_request: I/O error, dev fd0, sector 0 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
        "legacy-drive-probe-error",
        "kernel-block-io-error",
    ),
    (
        "[ 41.7] blk_update_request: I/O error, dev sr0, sector 0 op 0x0:(READ) flags 0x80700 phys_seg 1 prio class 0",
        "legacy-drive-probe-error",
        "kernel-block-io-error",
    ),
    (
        "[14334.86] CPU3: Package temperature above threshold, cpu clock throttled (total events = 57536)",
        "cpu-thermal-throttle-event",
        "gpu-throttled",
    ),
    (
        "  [[System has unsupported display driver / cuda driver combination (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH) "
        "cuInit()=803]]",
        "ngc-minor-version-compat",
        "nvidia-driver-unreachable",
    ),
    # Round 33: a Ray worker going on without its metrics agent (core_worker_process.cc).
    (
        '{"levelname":"E","message":"Failed to establish connection to the metrics exporter agent. Metrics will not be '
        'exported. Exporter agent status: RpcError: Running out of retries to initialize the metrics agent."}',
        "ray-metrics-agent-unreachable",
        "python-exception",
    ),
    # Round 34: Ceph's own health checks are not a node's.
    (
        "2025-04-01 02:13:00.001 mon.a mon.0 10.1.0.4:6789/0 890 : cluster [WRN] Health check failed: 1 osds down "
        "(OSD_DOWN)",
        "ceph-health-check",
        "slurm-health-check",
    ),
    # Round 36: UCX going on without fork protection (ib_md.c).
    (
        "[1700000000.000001] [gpu4:5150:0]      ib_md.c:1054 UCX  ERROR ibv_fork_init() failed: Operation not "
        "permitted",
        "ucx-fork-init-failed",
        "ib-verbs-call-failed",
    ),
    # Round 37: a Lustre target's recovery with every client back; ldconfig in a read-only image.
    (
        "Lustre: scratch-OST0003: Recovery over after 0:41, of 12 clients 12 recovered and 0 were evicted.",
        "lustre-recovery-complete",
        "parallel-fs-error",
    ),
    (
        "/sbin/ldconfig.real: Can't create temporary cache file /etc/ld.so.cache~: Read-only file system",
        "image-read-only-at-start",
        "read-only-filesystem",
    ),
    # Round 38: a PCIe error the link corrected (aer.c); bus-error reads "PCIe Bus Error" on the detail line.
    (
        "[ 7.77] pci 0000:01:00.0: PCIe Bus Error: severity=Correctable, type=Data Link Layer, (Transmitter ID)",
        "pcie-aer-corrected",
        "bus-error",
    ),
    (
        "alx 0000:07:00.0: AER: PCIe Bus Error: severity=Corrected, type=Data Link Layer, (Receiver ID)",
        "pcie-aer-corrected",
        "bus-error",
    ),
    # Round 39: the older kernels' words for an empty floppy's probe (blk-core.c end_request, buffer.c).
    ("[ 464.22] end_request: I/O error, dev fd0, sector 0", "legacy-drive-probe-error", "kernel-block-io-error"),
    (
        "[ 488.38] Buffer I/O error on device fd0, logical block 0",
        "legacy-drive-probe-error",
        "kernel-block-io-error",
    ),
    # Round 40: UCX's device probe in a container given some of the host's HCAs (uct_ib_md_open).
    (
        "[1594407135.546390] [gpu7:117  :0]          ib_md.c:1933 UCX  ERROR ibv_open_device(mlx5_8) failed: No such "
        "file or directory",
        "rdma-device-probe",
        "ib-verbs-call-failed",
    ),
    # Round 40: an entrypoint script adjusting a read-only image's own directories (coreutils rm, ln, mkdir).
    (
        "rm: cannot remove '/usr/local/cuda/compat/lib': Read-only file system",
        "image-read-only-at-start",
        "read-only-filesystem",
    ),
    (
        "ln: failed to create symbolic link '/etc/ld.so.conf.d/000_cuda.conf': Read-only file system",
        "image-read-only-at-start",
        "read-only-filesystem",
    ),
    (
        "mkdir: cannot create directory '/opt/nvidia/cache': Read-only file system",
        "image-read-only-at-start",
        "read-only-filesystem",
    ),
    # Round 41: a host without the verbs stack (ibv_get_device_list's ENOSYS).
    ("Failed to get IB devices list: Function not implemented", "rdma-device-probe", "hca-hardware-fault"),
    # Round 44: PMIx's shared-memory store lock; the ranks form and run.
    (
        "[compute-7:380048] PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c at line 168",
        "pmix-gds-lock-error",
        "mpi-launch-failure",
    ),
    # Round 45: sbatch retrying a submission the controller is too busy to take.
    (
        "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying",
        "slurm-submit-retrying",
        "slurm-client-fatal",
    ),
    # Round 46: UCX's diagnostics below WARN.
    (
        "[1759897476.656360] [gpu-6:4242:f]        vfs_fuse.c:440  UCX  DIAG  failed to watch on "
        "'/run/user/0/ucx/vfs.sock': Input/output error",
        "ucx-below-warn",
        "io-error",
    ),
    # Round 47: sysctl ignoring a key in a container's read-only /proc/sys.
    (
        'sysctl: setting key "vm.drop_caches", ignoring: Read-only file system',
        "sysctl-key-ignored",
        "read-only-filesystem",
    ),
    # Review of rounds 45-47: libata's SError decode, which reads like a Python exception.
    ("[ 2390.112123] ata3: SError: { HostInt CommWake 10B8B LinkSeq }", "libata-serror-decode", "python-exception"),
    # Round 57: a Lustre target in recovery turning away a client it did not know, in 1.x's words and today's.
    (
        "LustreError: 3953:0:(ldlm_lib.c:645:target_handle_connect()) denying connection for new client "
        "4bda07a5-18f2-44c7-815b-2da148c06203: 2 clients in recovery for 110s",
        "lustre-recovery-window",
        "parallel-fs-error",
    ),
    (
        "Lustre: scratch-OST0003: Denying connection for new client 8c2e1c1a-77d1 (at 10.0.3.4@o2ib), waiting for 12 "
        "known clients (9 recovered, 1 in progress, and 2 evicted) to recover in 1:52",
        "lustre-recovery-window",
        "parallel-fs-error",
    ),
    # Round 59: sshd's pre-authentication child, a client that never logged in.
    (
        "Dec 10 11:03:53 LabSZ sshd[25457]: fatal: Write failed: Connection reset by peer [preauth]",
        "sshd-preauth-noise",
        "connection-lost",
    ),
]


@pytest.mark.parametrize(("line", "veto", "vetoed"), VETOED, ids=ids(VETOED))
def test_vetoes_name_their_pattern(matcher, line, veto, vetoed):
    hits = matcher.match(line)
    assert veto in [h.pattern for h in hits if h.benign]
    if vetoed is not None:
        assert vetoed in [h.pattern for h in hits if not h.benign]
    assert matcher.failure(line) is None


BENIGN: list[str] = [
    # PyTorch's MPS fallback to the CPU for an unsupported operator.
    "UserWarning: The operator 'aten::_upsample_bicubic2d_aa.out' is not currently supported on the MPS backend and "
    "will fall back to run on the CPU. This may have performance implications.",
    # PaddlePaddle's device notice at start.
    "W0101 10:00:00.000000  1234 gpu_resources.cc:119] Please NOTE: device: 0, GPU Compute Capability: 8.0, Driver "
    "API Version: 12.2, Runtime API Version: 11.8",
    # Round 23 (2026-12-06), a sweep of look-alikes that carry a failure's words and report what
    # went on: srun's handled wait for a step (SchedMD/slurm 22.05 src/srun/libsrun/launch.c
    # "Job %u step creation temporarily disabled, retrying (%s)", then "Step created for job %u";
    # 24.11 src/srun/launch.c "Step created for %ps"), its pty's window-size probe (srun_pty.c
    # "ioctl(TIOCGWINSZ): %m") and its ignored option (libsrun/opt.c "Warning: can't honor
    # --ntasks-per-node ...").
    "srun: Job 4242 step creation temporarily disabled, retrying (Requested nodes are busy)",
    "srun: Step created for job 4242",
    "srun: Step created for StepId=4242.3",
    "srun: error: ioctl(TIOCGWINSZ): Inappropriate ioctl for device",
    "srun: Warning: can't honor --ntasks-per-node set to 8 which doesn't match the requested tasks 16 with the "
    "number of requested nodes 1. Ignoring --ntasks-per-node.",
    # ... the kernel's: one corrected memory error (drivers/edac/edac_mc.c, "%d CE"), a server or
    # target back (fs/nfs "nfs: server %s OK"; Lustre's ptlrpc/import.c "Connection restored
    # to %s"), a cable plugged and a link up (mlx5_core's port module event, the netdev's
    # "Link up"), perf lowering its sample rate (kernel/events/core.c "perf: interrupt took too
    # long ...").
    "kernel: EDAC MC0: 1 CE memory read error on CPU_SrcID#0_MC#0_Chan#1_DIMM#0 (channel:1 slot:0 page:0x12345 "
    "offset:0x0 grain:32 syndrome:0x0 - err_code:0x0000:0x009f socket:0 imc:0 rank:0)",
    "kernel: nfs: server nfs01 OK",
    "kernel: Lustre: lustre-OST0003-osc-ffff888123456000: Connection restored to 10.0.0.12@o2ib (at 10.0.0.12@o2ib)",
    "kernel: mlx5_core 0000:3b:00.0: mlx5_port_module_event:1165:(pid 0): Port module event: module 0, Cable plugged",
    "kernel: mlx5_core 0000:3b:00.0 ib0: Link up",
    "kernel: perf: interrupt took too long (2502 > 2500), lowering kernel.perf_event_max_sample_rate to 79750",
    # ... PyTorch's at a normal exit (ProcessGroupNCCL.cpp's "process group has NOT been destroyed"
    # warning, 2.4 on), Gloo's loopback fallback (ProcessGroupGloo.cpp), DDP's unused-parameter
    # advice (reducer.cpp), elastic's agent finishing (torch/distributed/elastic/agent/server/api.py).
    "[rank0]:[W1206 10:11:12.123456 ProcessGroupNCCL.cpp:1168] Warning: WARNING: process group has NOT been "
    "destroyed before we destruct ProcessGroupNCCL. On normal program exit, the application should call "
    "destroy_process_group to ensure that any pending NCCL operations have finished in this process. In rare cases "
    "this process can exit before this point and block the progress of another member of the process group.",
    "[W ProcessGroupGloo.cpp:694] Warning: Unable to resolve hostname to a (local) address. Using the loopback "
    "address as fallback. Manually set the network interface to bind to with GLOO_SOCKET_IFNAME.",
    "[rank0]:[W reducer.cpp:1389] Warning: find_unused_parameters=True was specified in DDP constructor, but did not "
    "find any unused parameters in the forward pass.",
    "INFO:torch.distributed.elastic.agent.server.api:[default] worker group successfully finished. Waiting 300 "
    "seconds for other agents to finish.",
    # ... and the libraries': tokenizers disabling its threads after a fork (huggingface/tokenizers
    # "Disabling parallelism to avoid deadlocks..."), wandb's handled retry ("Network error (%s),
    # entering retry loop."), DeepSpeed ZeRO-3's allocator-flush advice (runtime/zero/stage3.py).
    "huggingface/tokenizers: The current process just got forked, after parallelism has already been used. "
    "Disabling parallelism to avoid deadlocks...",
    "wandb: Network error (ConnectionError), entering retry loop.",
    "[2026-12-06 10:11:12,345] [WARNING] [stage3.py:1850:step] 4 pytorch allocator cache flushes since last step. "
    "this happens when there is high memory pressure and is detrimental to performance.",
    # Round 32: the whole NGC banner for a container running on an older driver in minor-version compatibility.
    "WARNING: CUDA Minor Version Compatibility mode ENABLED.\n"
    "  Using driver version 535.54.03 which has support for CUDA 12.2.  This container\n"
    "  was built with CUDA 12.4 and will be run in Minor Version Compatibility mode.\n"
    "  CUDA Forward Compatibility is preferred over Minor Version Compatibility for use\n"
    "  with this container but was unavailable:\n"
    "  [[Forward compatibility was attempted on non supported HW (CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE) "
    "cuInit()=804]]\n"
    "  See https://docs.nvidia.com/deploy/cuda-compatibility/ for details.",
    # Round 59: JAX's CUDA plugin on a node without a GPU, logged with its traceback; JAX goes on on the CPU.
    "ERROR:2026-01-30 07:41:46,407:jax._src.xla_bridge:477: Jax plugin configuration error: Exception when calling "
    "jax_plugins.xla_cuda12.initialize()\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/jax/_src/xla_bridge.py", line 475, in discover_pjrt_plugins\n'
    "    plugin_module.initialize()\n"
    "RuntimeError: jaxlib/cuda/versions_helpers.cc:113: operation cuInit(0) failed: CUDA_ERROR_NO_DEVICE",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    "host4:31:40 [2] NCCL INFO Channel 03/0 : 2[2] -> 10[2] [send] via NET/IB/4/GDRDMA",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


def test_every_veto_outranks_what_it_vetoes_and_no_more_than_it_must(matcher: Matcher):
    # The handled-retry veto silences the NCCL INFO line, never NCCL's WARN once it gives up.
    warn = "cn12:90:95 [0] NCCL WARN Call to ibv_reg_mr_iova2 failed with error Cannot allocate memory"
    assert matcher.failure(warn) is not None
    # A non-zero NaN count and a positive finding are still numerical.
    assert matcher.failure("found NaN in local grad norm in backward pass").failure_class is C.NUMERICAL
    # The warm-up veto leaves a collapsed loss scale numerical.
    assert (
        matcher.failure("OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 1, reducing to 1").pattern
        == "loss-scale-minimum"
    )


def test_vetoes_sit_where_the_issue_puts_them(catalogue: Catalogue):
    benign = {p.id: p for p in catalogue.runbook(C.BENIGN).patterns}
    assert benign["xid-informational"].priority == 355
    assert set(benign["xid-informational"].xid_codes) == {14, 93, 106, 107, 121, 162, 163, 164, 165}
    assert benign["tcpstore-should-dump"].priority >= 300
    assert benign["nccl-driver-shutting-down"].priority >= 300


def test_an_nfs_silly_rename_busy_is_no_storage_failure_and_other_ebusy_still_is(catalogue, matcher):
    # Alone, the refused unlink is a clean-up racing a reader: nothing in it failed.
    alone = "OSError: [Errno 16] Device or resource busy: '.nfs00000000a1b2c3d400000017'"
    assert classify_text(catalogue, matcher, alone).failure_class is C.BENIGN
    # Raised through a clean-up, the traceback alone cannot say it ended the program (multiprocessing's
    # finalizers print it and go on): vetoed with its exception line. A failed attempt with nothing
    # else stays unknown (test_attribute), not the program's bug.
    raised = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/opt/train/rotate.py", line 41, in prune_old_checkpoints',
            "    shutil.rmtree(old)",
            "OSError: [Errno 16] Device or resource busy: '/nfs/ckpt/step_200/.nfs00000000a1b2c3d400000017'",
        ]
    )
    assert classify_text(catalogue, matcher, raised).failure_class is C.BENIGN
    busy = "OSError: [Errno 16] Device or resource busy: '/nfs/ckpt/run7/step_300.pt'"
    assert classify_text(catalogue, matcher, busy).failure_class is C.STORAGE


def test_a_masked_bus_id_still_leaves_informational_xids_benign(catalogue, matcher):
    a = classify_text(catalogue, matcher, "NVRM: Xid (PCI:xxxx:xx:xx): 121, pid='<unknown>', C2C link corrected error")
    assert a.failure_class is C.BENIGN
