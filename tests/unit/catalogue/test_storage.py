"""runbooks/storage.yaml: file systems and disks failing, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: Linux block/blk-core.c, fs/buffer.c, fs/ext4, fs/xfs, drivers/nvme; glibc's strerror as
CPython's OSError "[Errno %d] %s" prints it; PyTorch's inline_container.cc and pickle; Lustre's
ptlrpc; NFS; botocore and google-api-core; the kubelet's ephemeral-storage and DiskPressure
evictions; TensorFlow's retrying file system (TSL retrying_utils.cc under GcsFileSystem) and
tensor_slice_writer.cc; Megatron-LM's legacy checkpoint loader; round 34, JuiceFS's vfs reader and
writer, klibc's nfsmount and Ceph's monitors (src/mon/HealthMonitor.cc).
"""

from respawn.attribution.attribute import attribute, classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Action, Catalogue, NodeRule, Onset, Rung
from respawn.config.cluster import Budgets
from respawn.decision.decide import JobHistory, JobShape, PastIncident, decide
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._evidence import evidence
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # TSL's retrying_utils.cc under GcsFileSystem.
    (
        "Aborted: All 10 retry attempts failed. The last failure: Unavailable: Error executing an HTTP request: "
        "HTTP response code 503 when resuming upload gs://bucket/model.ckpt-100_temp/part-00000",
        C.STORAGE,
        L.STORAGE,
        "tf-filesystem-retries-exhausted",
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
        "trainer-0-7f9c   team-ml   Evicted   node-17   Pod The node had condition: [DiskPressure]. ",
        C.STORAGE,
        L.STORAGE,
        "evicted-for-disk",
    ),
    # Round 31: the hung-task report of a task asleep in a filesystem's wait (kernel/hung_task.c, fs/xfs), not the
    # node's: the storage under it stopped answering.
    (
        "[51717.03] INFO: task kworker/2:1:5938 blocked for more than 120 seconds.\n"
        "[51717.03]       Not tainted 5.15.0-72-generic #79-Ubuntu\n"
        '[51717.03] "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.\n'
        "[51717.03] task:kworker/2:1     state:D stack:    0 pid: 5938 ppid:     2 flags:0x00004000\n"
        "[51717.03] Workqueue: xfs-sync/rbd3 xfs_log_worker [xfs]\n"
        "[51717.03] Call Trace:\n"
        "[51717.03]  <TASK>\n"
        "[51717.03]  __schedule+0x24e/0x590\n"
        "[51717.03]  schedule+0x69/0x110\n"
        "[51717.03]  xlog_wait_on_iclog+0x16f/0x190 [xfs]\n"
        "[51717.03]  xfs_log_force_seq+0x92/0x180 [xfs]",
        C.STORAGE,
        L.STORAGE,
        "storage-hung-task",
    ),
    (
        "[ 9120.5] INFO: task python:41872 blocked for more than 122 seconds.\n"
        "[ 9120.5] Call Trace:\n"
        "[ 9120.5]  schedule+0x35/0x80\n"
        "[ 9120.5]  rpc_wait_bit_killable+0x1e/0xa0 [sunrpc]\n"
        "[ 9120.5]  __rpc_wait_for_completion_task+0x2c/0x30 [sunrpc]\n"
        "[ 9120.5]  nfs4_run_open_task+0x14f/0x1c0 [nfsv4]",
        C.STORAGE,
        L.STORAGE,
        "storage-hung-task",
    ),
    (
        "Oct 11 06:07:26 store2 kernel: INFO: task glusterfsd:26120 blocked for more than 120 seconds.\n"
        'Oct 11 06:07:26 store2 kernel: "echo 0 > /proc/sys/kernel/hung_task_timeout_secs" disables this message.',
        C.STORAGE,
        L.STORAGE,
        "storage-hung-task",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # Megatron-LM's legacy loader printing torch.load's exception without its class on the next line:
    # that line decides where it carries the evidence (a truncated file), else the layer stays open.
    (
        "could not load the checkpoint\nPytorchStreamReader failed reading zip archive: failed finding central directory",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Storage errnos however they surface.
    (
        "OSError: [Errno 28] No space left on device: '/scratch/run7/ckpt/step_900/optim.pt'",
        C.STORAGE,
        L.STORAGE,
        "disk-full",
    ),
    (
        'SafetensorError: Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
        'left on device" })',
        C.STORAGE,
        L.STORAGE,
        "disk-full",
    ),
    (
        "OSError: [Errno 122] Disk quota exceeded: '/home/u7/.cache/huggingface/hub/tmp9x'",
        C.STORAGE,
        L.STORAGE,
        "disk-quota",
    ),
    ("OSError: [Errno 27] File too large", C.STORAGE, L.STORAGE, "disk-quota"),
    ("RuntimeError: write(): fd 7 failed with Input/output error", C.STORAGE, L.STORAGE, "io-error"),
    ("OSError: [Errno 117] Structure needs cleaning: '/data/shards/00042.tar'", C.STORAGE, L.STORAGE, "io-error"),
    (
        "[ 901.2] I/O error, dev nvme2n1, sector 88123 op 0x1:(WRITE) flags 0x8800 phys_seg 4 prio class 2",
        C.STORAGE,
        L.STORAGE,
        "io-error",
    ),
    (
        "[ 901.3] EXT4-fs warning (device nvme2n1): ext4_end_bio:343: I/O error 10 writing to inode 77 starting "
        "block 1234)",
        C.STORAGE,
        L.STORAGE,
        "io-error",
    ),
    ("OSError: [Errno 116] Stale file handle: '/nfs/runs/7/last.pt'", C.STORAGE, L.STORAGE, "stale-file-handle"),
    (
        "RuntimeError: [enforce fail at inline_container.cc:595] . PytorchStreamWriter failed writing file "
        "data/17: file write failed",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    # Round 22: torch.save's writer refused its file (PyTorchStreamWriter::setup, by release).
    (
        "RuntimeError: [enforce fail at inline_container.cc:274] . PytorchStreamWriter failed opening archive.",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    (
        "RuntimeError: [enforce fail at inline_container.cc:331] . PytorchStreamWriter failed opening archive "
        "/ckpt/run7/step_900.pt: file open failed",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    ("RuntimeError: File /ckpt/run7/step_900.pt cannot be opened.", C.STORAGE, L.STORAGE, "write-failed"),
    # The job's own path that is not there: its configuration, not the file system.
    ("RuntimeError: Parent directory /ckpt/run7 does not exist.", C.APP_ERROR, L.APPLICATION, "python-exception"),
    (
        "RuntimeError: [enforce fail at inline_container.cc:778] . unexpected pos 1792 vs 1680",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    ("_pickle.UnpicklingError: pickle data was truncated", C.STORAGE, L.STORAGE, "write-failed"),
    ("OSError: [Errno 37] No locks available", C.STORAGE, L.STORAGE, "write-failed"),
    ("OSError: 480000000 requested and 0 written", C.STORAGE, L.STORAGE, "write-failed"),
    (
        "LustreError: 167-0: proj-OST0007-osc-ffff9c: This client was evicted by proj-OST0007; in progress "
        "operations using this service will fail.",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    ("nfs: server nas3 not responding, still trying", C.STORAGE, L.STORAGE, "parallel-fs-error"),
    (
        "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the PutObject operation "
        "(reached max retries: 4): Please reduce your request rate.",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "google.api_core.exceptions.ServiceUnavailable: 503 POST https://storage.googleapis.com/upload/storage/v1/"
        "b/ckpt-bkt/o: We encountered an internal error.",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "Message: Pod ephemeral local storage usage exceeds the total limit of containers 40Gi.",
        C.STORAGE,
        L.STORAGE,
        "evicted-for-disk",
    ),
    ("OSError: [Errno 30] Read-only file system: '/spareparts'", C.STORAGE, L.APPLICATION, "read-only-filesystem"),
    (
        "2023-02-08 10:45:59,939 pid:13172 MainThread worker ERROR    [Errno 30] Read-only file system: 'tmp_trainer'",
        C.STORAGE,
        L.APPLICATION,
        "read-only-filesystem",
    ),
    (
        "[ 531.1] blk_update_request: I/O error, dev nvme0n1, sector 100492368 op 0x1:(WRITE) flags 0x104000 "
        "phys_seg 16 prio class 0",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    ("[ 519.2] nvme nvme0: I/O 39 QID 3 timeout, aborting", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    (
        "[ 531.1] nvme0n1: Write(0x1) @ LBA 100492368, 2048 blocks, Data Transfer Error (sct 0x0 / sc 0x4)",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "[ 532.0] Buffer I/O error on dev sdb1, logical block 7712, lost async page write",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "[ 533.0] EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode #2: comm python: reading directory "
        "lblock 0",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    ("[ 533.1] EXT4-fs (nvme0n1p1): Remounting filesystem read-only", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    (
        "[ 533.2] nvme nvme1: controller is down; will reset: CSTS=0xffffffff, PCI_STATUS=0xffff",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    ("OSError: [Errno 5] Input/output error: '/scratch/run7/ckpt.pt'", C.STORAGE, L.STORAGE, "io-error"),
    # Round 25, the job's filesystem not mounted: the kubelet's volume mount, mount.nfs (nfs-utils),
    # util-linux's mount.
    (
        '  Warning  FailedMount  2m  kubelet  MountVolume.SetUp failed for volume "datasets" : mount failed: exit status 32',
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    ("mount.nfs: Connection timed out", C.STORAGE, L.STORAGE, "shared-fs-mount-failed"),
    (
        "mount.nfs4: access denied by server while mounting fs01:/export/home",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    (
        "mount: /mnt/weka: mount(2) system call failed: Connection refused.",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 27: the kubelet's volume manager before Kubernetes 1.13.
    (
        'Warning  FailedMount  2m  kubelet, gpu-node-4  Unable to mount volumes for pod "trainer-0_ml(1a2b3c)": '
        "timeout expired waiting for volumes to attach/mount for pod",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 28: a full disk as Open MPI's shared-memory transport and Ray's object store say it.
    (
        "It appears as if there is not enough space for /tmp/ompi.gpu4.1201/pid.5521/1/shared_mem_cuda_pool.gpu4 (the shared-memory backing",
        C.STORAGE,
        L.STORAGE,
        "disk-full",
    ),
    ("ray.exceptions.OutOfDiskError: Local disk is full", C.STORAGE, L.STORAGE, "disk-full"),
    (
        "The object cannot be created because the local object store is full and the local disk's utilization is over "
        "capacity (95% by default).",
        C.STORAGE,
        L.STORAGE,
        "disk-full",
    ),
    # Round 28: a volume that really did not mount still reads, beside the benign "not registered".
    (
        'MountVolume.SetUp failed for volume "data" : mount failed: exit status 32',
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 28: BeeGFS's kernel client in its own words.
    (
        "[ 901.1] beegfs: mount(4410): Configuration error: Initialization of common objects failed.",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 29: XFS's corruption reports (xfs_error.c); a PersistentVolumeClaim nothing binds (volumebinding).
    (
        "[  9.1] XFS (vdb1): Metadata corruption detected at xfs_inode_buf_verify+0x1a2/0x1c0 [xfs], xfs_inode block 0x40",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "kernel: XFS: Internal error XFS_WANT_CORRUPTED_GOTO at line 1423 of file fs/xfs/xfs_alloc.c.  Caller 0xffffffffa01e76c2",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "Warning  FailedScheduling  30s  default-scheduler  0/8 nodes are available: 8 pod has unbound immediate "
        "PersistentVolumeClaims.",
        C.STORAGE,
        L.SYSTEM_SOFTWARE,
        "pvc-unbound",
    ),
    # Round 30: the attach-detach controller failing to attach (operation_generator.go).
    (
        'Warning  FailedAttachVolume  3s  attachdetach-controller  AttachVolume.Attach failed for volume "pvc-1a2b" : '
        "rpc error: code = Internal desc = failed to attach disk",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 31: filesystem threads and waits in a hung-task report.
    (
        "[ 811.2] INFO: task xfsaild/nvme0n1:1041 blocked for more than 241 seconds.",
        C.STORAGE,
        L.STORAGE,
        "storage-hung-task",
    ),
    (
        "[ 811.2] INFO: task jbd2/sda2-8:512 blocked for more than 120 seconds.",
        C.STORAGE,
        L.STORAGE,
        "storage-hung-task",
    ),
    ("[ 811.2] INFO: task txg_sync:2290 blocked for more than 120 seconds.", C.STORAGE, L.STORAGE, "storage-hung-task"),
    (
        "[ 811.2] INFO: task ll_ost_io01_004:7781 blocked for more than 600 seconds.",
        C.STORAGE,
        L.STORAGE,
        "storage-hung-task",
    ),
    ("[ 811.2] Workqueue: rpciod rpc_async_schedule [sunrpc]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    ("[ 811.2]  [<ffffffffc0a1b2c3>] _xfs_log_force_lsn+0x20e/0x350 [xfs]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    ("[ 811.2]  jbd2_log_wait_commit+0xac/0x120 [jbd2]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    ("[ 811.2]  nfs_wait_bit_killable+0x24/0xa0 [nfs]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    ("[ 811.2]  cv_wait_common+0xb2/0x140 [spl]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    ("[ 811.2]  zfs_rangelock_enter_impl+0x2d1/0x630 [zfs]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    ("[ 811.2]  request_wait_answer+0x13d/0x220 [fuse]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    ("[ 811.2]  ceph_mdsc_do_request+0x8f/0x250 [ceph]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    ("[ 811.2]  ptlrpc_set_wait+0x4d8/0x7c0 [ptlrpc]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    # Round 31: a CSI node plugin's own log of a mount it could not make (csi-common's interceptor).
    (
        "E0301 10:00:00.296439   19551 utils.go:80] GRPC error: rpc error: code = Internal desc = Mount failed with "
        "error: exit status 32, output: mount error(13): Permission denied",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    (
        "E0301 10:00:00.1 1 utils.go:111] GRPC error: rpc error: code = Internal desc = failed to mount 10.0.0.9:/exp "
        "on /var/lib/kubelet/pods/x/volumes/kubernetes.io~csi/pv-1/mount",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 32: the SMB client failing a mount (connect.c); ext4's journal corrupt at replay (jbd2/recovery.c).
    ("[ 64.92] CIFS VFS: cifs_mount failed w/return code = -115", C.STORAGE, L.STORAGE, "shared-fs-mount-failed"),
    ("[ 64.92] CIFS: VFS: cifs_mount failed w/return code = -13", C.STORAGE, L.STORAGE, "shared-fs-mount-failed"),
    ("JBD2: Invalid checksum recovering block 4194315 in log", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    # Round 33: bcache's allocator wait; the kubelet as the node's disk fills; SQLite's corrupt file.
    ("[ 1158.49]  bch_bucket_alloc+0xe5/0x370 [bcache]", C.STORAGE, L.STORAGE, "storage-hung-task"),
    (
        "W1010 09:12:24.938374       1 eviction_manager.go:333] eviction manager: attempting to reclaim ephemeral-storage",
        C.STORAGE,
        L.STORAGE,
        "evicted-for-disk",
    ),
    (
        "E1010 09:12:23.709046       1 kubelet.go:1246] Image garbage collection failed multiple times in a row: failed "
        "to garbage collect required amount of images. Wanted to free 11104591052 bytes, but freed 0 bytes",
        C.STORAGE,
        L.STORAGE,
        "evicted-for-disk",
    ),
    (
        "sqlite3.DatabaseError: database disk image is malformed",
        C.STORAGE,
        L.STORAGE,
        "io-error",
    ),
    # Round 34: JuiceFS's reader and writer giving up on the object store (pkg/vfs/reader.go, writer.go).
    (
        "2025/03/02 11:20:41.118000 juicefs[2211] <WARNING>: fail to read sliceId 4410931 (off:0, size:4096, "
        "clen: 8388608, inode: 9921): timeout after 1m0s [reader.go:801]",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "2025/03/02 11:25:41.120000 juicefs[2211] <ERROR>: flush 9921 timeout after waited 5m0s [writer.go:598]",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 34: klibc's nfsmount refused by the server (usr/kinit/nfsmount/mount.c).
    ("mount call failed - server replied: Permission denied.", C.STORAGE, L.STORAGE, "shared-fs-mount-failed"),
    # Round 34: Ceph's health checks that block I/O (src/mon/HealthMonitor.cc; `ceph health detail`).
    (
        "2025-04-01 02:11:07.120 mon.a mon.0 10.1.0.4:6789/0 881 : cluster [WRN] Health check failed: 14 slow ops, "
        "oldest one blocked for 61 sec, daemons [osd.3,osd.7] have slow ops. (SLOW_OPS)",
        C.STORAGE,
        L.STORAGE,
        "ceph-health-failed",
    ),
    ("[ERR] PG_AVAILABILITY: Reduced data availability: 3 pgs inactive", C.STORAGE, L.STORAGE, "ceph-health-failed"),
    (
        "    mds.cephfs-b(mds.0): 5 slow metadata IOs are blocked > 30 secs, oldest blocked for 412 secs",
        C.STORAGE,
        L.STORAGE,
        "ceph-health-failed",
    ),
    # Round 35: systemd failing a mount unit or a parallel file system's client.
    (
        "Job for beegfs-client.service failed because the control process exited with error code.",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    (
        "Job for mnt-scratch.mount failed because the control process exited with error code.",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 37: the LizardFS / MooseFS client without its master (mastercomm.cc).
    (
        "mfsmount[4410]: master: register error (read header: ETIMEDOUT (Operation timed out))",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 37: a recovery that evicted a client is still a failure (benign's lustre-recovery-complete vetoes 0).
    (
        "Lustre: scratch-OST0003: Recovery over after 2:30, of 12 clients 11 recovered and 1 was evicted.",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 38: the CephFS kernel client refused back into its session, and the dirty state it drops (mds_client.c,
    # caps.c; since 6.6 with the fsid and client id before it).
    ("[3677602.09] ceph: mds0 reconnect denied", C.STORAGE, L.STORAGE, "parallel-fs-error"),
    (
        "[ 5645.19] ceph: [8c1f3b52-1d3e-11ee-9e1c-0cc47a6b2d4e 44110]: mds2 reconnect denied",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "[3677602.10] ceph:  dropping dirty+flushing Fw state for ffff8802dc150518 1099935956631",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 38: FAT and btrfs giving up on a local disk (fs/fat/misc.c, fs/btrfs/messages.c).
    ("FAT-fs (nvme0n1p1): Filesystem has been set read-only", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    (
        "FAT-fs (sda1): error, fat_get_cluster: invalid cluster chain (i_pos 0)",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "BTRFS: error (device nvme1n1) in btrfs_commit_transaction:2418: errno=-5 IO failure (Error while writing out "
        "transaction)",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    ("BTRFS info (device nvme1n1): forced readonly", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    # Round 38: the kubelet's image garbage collector with nothing left to delete (image_gc_manager.go).
    (
        "  Warning  ImageGCFailed  59m  kubelet  Failed to garbage collect required amount of images. Attempted to "
        "free 4783028633 bytes, but only found 0 bytes eligible to free.",
        C.STORAGE,
        L.STORAGE,
        "evicted-for-disk",
    ),
    # Round 39: the block layer's line before 3.x for a disk.
    ("[ 912.4] end_request: I/O error, dev sdb, sector 1953525160", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    # Round 40: SQLite's SQLITE_IOERR as Python raises it; zpool status for permanent errors (ZFS-8000-8A).
    ("sqlite3.OperationalError: disk I/O error", C.STORAGE, L.STORAGE, "io-error"),
    ("status: One or more devices has experienced an error resulting in data", C.STORAGE, L.STORAGE, "io-error"),
    # Round 40: beegfs-meta's quota enforcement.
    (
        "(3) Nov05 09:12:44 Worker2 [Quota Enforcement for create] >> User size quota exceeded. UID: 4242; GID: 100",
        C.STORAGE,
        L.STORAGE,
        "disk-quota",
    ),
    # Round 40: TensorFlow's record_reader.cc on a file cut short or damaged.
    (
        "tensorflow.python.framework.errors_impl.DataLossError: truncated record at 72435675",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    ("DataLossError: corrupted record at 4096", C.STORAGE, L.STORAGE, "write-failed"),
    # Round 40: TensorFlow's GCS file system losing its resumable upload; fsspec's timeout.
    (
        "Unavailable: Unexpected response code 410 when resuming upload gs://bucket/run3/model.ckpt-900.index",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    ("fsspec.exceptions.FSTimeoutError", C.STORAGE, L.STORAGE, "parallel-fs-error"),
    # Round 40: GPUDirect Storage's cufile.log.
    (
        " 05-12-2026 10:01:02:113 [pid=4242 tid=4250] ERROR  cufio-obj:101 error allocating nvfs handle, size: 131072",
        C.STORAGE,
        L.SYSTEM_SOFTWARE,
        "gds-cufile-error",
    ),
    # Round 40: a read-only refusal outside an image's own directories is still the file system's.
    (
        "rm: cannot remove '/scratch/run7/ckpt/step100.pt': Read-only file system",
        C.STORAGE,
        L.APPLICATION,
        "read-only-filesystem",
    ),
    # Round 40: the Ceph kernel client's connection faults (messenger.c con_fault).
    ("libceph: mon2 (1)172.31.52.146:6789 connect error", C.STORAGE, L.STORAGE, "ceph-client-connection-fault"),
    ("libceph: connect (1)172.31.52.146:6789 error -101", C.STORAGE, L.STORAGE, "ceph-client-connection-fault"),
    # Round 41: ext4's hashed directory index full; libata's media error; smartd; LNet not starting.
    (
        "EXT4-fs warning (device nvme0n1p1): ext4_dx_add_entry:2544: Directory (ino: 271020531) index full, reach max "
        "htree level :2",
        C.STORAGE,
        L.STORAGE,
        "disk-full",
    ),
    (
        "[  222.913458]          res 41/40:00:e0:79:2d/00:00:14:00:00/40 Emask 0x409 (media error) <F>",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    ("[  222.925290] ata3.00: error: { UNC }", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    (
        "Device: /dev/sdc [SAT], FAILED SMART self-check. BACK UP DATA NOW!",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "Device: /dev/sg1 [cciss_disk_02] [SCSI], SMART Failure: HARDWARE IMPENDING FAILURE GENERAL HARD DRIVE FAILURE",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    ("kernel: LNetError: 105-4: Error -100 starting up LNI tcp", C.STORAGE, L.STORAGE, "shared-fs-mount-failed"),
    # Round 42: a hung task waiting in GPFS's kernel modules; the node's mmfsd not up; blobfuse under Azure ML;
    # TensorFlow's GCS upload.
    (
        "[Sat Mar  4 04:10:52 2023]  _ZN6ThCond5kWaitEiPKc+0x1d3/0x410 [mmfs26]",
        C.STORAGE,
        L.STORAGE,
        "storage-hung-task",
    ),
    (
        "6027-725 The mmfsd daemon is not ready to handle commands yet.",
        C.STORAGE,
        L.SYSTEM_SOFTWARE,
        "gpfs-daemon-not-ready",
    ),
    (
        "BFSMountError: Unable to mount blob fuse file system",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    (
        "Unavailable: Error executing an HTTP request: HTTP response code 503 when initiating an upload to "
        "gs://bucket/run4/model.ckpt-1200_temp/part-00000",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "Aborted: HTTP response code 429 when uploading gs://bucket/run4/model.ckpt-1200_temp/part-00000",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 43: the MooseFS client's chunk reads and writes; DeepSeek 3FS's storage client giving up.
    (
        "mfsmount[4242]: file: 1201, index: 0, chunk: 9876, version: 1, cs: 0A000001:9422 - readblock error (try "
        "counter: 2)",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "mfsmount[4242]: file: 1201, index: 0, chunk: 9876, version: 1 - writeworker: connection with "
        "(0A000002:9422) was reset by peer (unfinished writes: 1; try counter: 1)",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "[2026-12-07T10:00:00.000000000+00:00 hf3fs_fuse_main:4242 StorageClientImpl.cc:1637 ERROR] #1/1 Failed "
        "batchWrite operation 0x7f0000001000 with id RequestId(7), routing target: ChainId(1), status: "
        "StorageClient::Timeout(7003)",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 44: Mountpoint for Amazon S3 failing a write.
    (
        "WARN write{req=50 ino=2 fh=1 offset=36 length=4}: mountpoint_s3::fuse: write failed: upload error: out of "
        "order write; expected offset 4096 but got 36",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 45: btrfs's data checksum mismatch and device error counters; NVMe over TCP timing out a command;
    # HDFS in safe mode.
    (
        "[ 7.052027] BTRFS warning (device sdb2): csum failed root 5 ino 4242 off 8192 csum 0x1b2c3d4e "
        "expected csum 0x5f6a7b8c mirror 1",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "BTRFS error (device nvme0n1p3): bdev /dev/nvme0n1p3 errs: wr 0, rd 0, flush 0, corrupt 3, gen 0",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "kernel: nvme nvme1: queue 2: timeout cid 0x3041 type 4 opcode 0x2 (Read)",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "org.apache.hadoop.ipc.RemoteException(org.apache.hadoop.hdfs.server.namenode.SafeModeException): Cannot "
        "create file/ckpt/step_400/shard-3. Name node is in safe mode.",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 46: XFS shut down by a log write error; libata's failed queued write; nvidia-fs unable to pin a GPU
    # buffer; HTCondor unable to bring the output back.
    (
        "kernel: XFS (nvme1n1): Log I/O Error (0x2) detected at xlog_ioend_work+0x6e/0x70 [xfs] (fs/xfs/xfs_log.c:1378)."
        "  Shutting down filesystem",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    ("[ 4242.112136] ata3.00: failed command: WRITE FPDMA QUEUED", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    (
        "nvidia-fs:nvfs_pin_gpu_pages:1301 Error ret -12 invoking nvidia_p2p_get_pages_persistent",
        C.STORAGE,
        L.SYSTEM_SOFTWARE,
        "gds-cufile-error",
    ),
    (
        "Hold reason: Error from slot1@gpu-14: STARTER at 10.0.3.14 failed to send file(s) to <10.0.0.2:9618>: "
        "error reading from /var/lib/condor/execute/dir_4242/ckpt.tar: (errno 2) No such file or directory",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    # Round 47: a Storage Scale node expelled; smartd's unreadable sectors; mount.lustre failing.
    (
        "mmfs: [E] Lost membership in cluster gpfs0.example.org. Unmounting file systems.",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "Dec  7 10:00:00 gpu-7 smartd[4242]: Device: /dev/sdb [SAT], 24 Offline uncorrectable sectors",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "mount.lustre: mount 10.0.0.2@o2ib:/scratch at /lustre/scratch failed: No such file or directory",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 48: Ceph's health before Luminous; a controller failing; Blue Gene/L's RAS log.
    (
        "HEALTH_WARN 12 requests are blocked > 32 sec; 3 osds have slow requests",
        C.STORAGE,
        L.STORAGE,
        "ceph-health-failed",
    ),
    ("7 ops are blocked > 65.536 sec on osd.4", C.STORAGE, L.STORAGE, "ceph-health-failed"),
    ("[   5.1] megaraid_sas 0000:41:00.0: Failed to init firmware", C.STORAGE, L.HARDWARE, "storage-controller-failed"),
    (
        "[ 900.2] hpsa 0000:05:00.0: controller lockup detected: 0xffff0000 after 30",
        C.STORAGE,
        L.HARDWARE,
        "storage-controller-failed",
    ),
    (
        "KERNMNTF 1100000000 2006.01.02 R01-M0-N1-I:J18-U01 2006-01-02-10.00.00.000000 R01-M0-N1-I:J18-U01 RAS KERNEL "
        "FATAL Lustre mount FAILED : io-node-3 : point /p/scratch",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 49: XFS refusing a cloned volume; an mpt3sas HBA's firmware faulting.
    (
        "kernel: XFS (nvme2n1p1): Filesystem has duplicate UUID 0b9c1d2e-0000-4000-8000-000000000001 - can't mount",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    ("kernel: mpt3sas_cm0: fault_state(0x2622)!", C.STORAGE, L.HARDWARE, "storage-controller-failed"),
    # Round 50: the NFSv4 client losing its state; ext4 losing delayed-allocation writes.
    ("[ 912.0] NFS: Server nas2 reports our clientid is in use", C.STORAGE, L.STORAGE, "parallel-fs-error"),
    (
        "[ 912.1] NFS: state manager: lease expired failed on NFSv4 server nas2 with error 10022",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "kernel: EXT4-fs (nvme1n1): Delayed block allocation failed for inode 4410 at logical offset 12 with max "
        "blocks 2 with error 28",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    # Round 51: md unable to start an array; smartd's failed self-test; an SMB server gone silent; a parquet file cut short.
    ("[ 30.1] md/raid:md0: cannot start dirty degraded array.", C.STORAGE, L.STORAGE, "raid-member-failed"),
    ("[ 30.1] md/raid:md0: not enough operational devices (2/4 failed)", C.STORAGE, L.STORAGE, "raid-member-failed"),
    ("[ 30.2] md/raid10:md1: failed to run raid set.", C.STORAGE, L.STORAGE, "raid-member-failed"),
    (
        "smartd[900]: Device: /dev/sdb [SAT], Self-Test Log error count increased from 0 to 1",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "[ 88.0] CIFS: VFS: \\\\fs01 has not responded in 180 seconds. Reconnecting...",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "[ 88.0] CIFS: VFS: Server fs01 has not responded in 120 seconds. Reconnecting...",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "pyarrow.lib.ArrowInvalid: Parquet magic bytes not found in footer. Either the file is corrupted or this is "
        "not a parquet file.",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    # Round 52: Ceph's checks of data it cannot serve as stored.
    ("[ERR] PG_DAMAGED: Possible data damage: 1 pg inconsistent", C.STORAGE, L.STORAGE, "ceph-health-failed"),
    (
        "cluster [ERR] Health check failed: 1 scrub errors (OSD_SCRUB_ERRORS)",
        C.STORAGE,
        L.STORAGE,
        "ceph-health-failed",
    ),
    ("[ERR] OBJECT_UNFOUND: 2/811 objects unfound (0.247%)", C.STORAGE, L.STORAGE, "ceph-health-failed"),
    # Round 53: libata unable to bring a disk up; squashfs unable to read its image; NFS and MooseFS servers.
    ("[   63.1] ata5: reset failed, giving up", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    (
        "ata5: link online but 1 devices misclassified, device detection might fail",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "kernel: SQUASHFS error: squashfs_read_data failed to read block 0x2f474cd7",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "kernel: SQUASHFS error: zlib_inflate error, data probably corrupt",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    (
        "kernel: nfsd: too many open connections, consider increasing the number of threads",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "[249239.1] NFSv4: state recovery failed for open file data/shard-3.lock, error = -524",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    ("[249244.9] NFS: __nfs4_reclaim_open_state: Lock reclaim failed!", C.STORAGE, L.STORAGE, "parallel-fs-error"),
    (
        "May 22 04:00:10 m1 mfsmaster[7027]: chunkserver disconnected - ip: 10.39.3.30 / port: 9432, usedspace: 1 (1 GiB)",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    ("A DegradedArray event had been detected on md device /dev/md/1.", C.STORAGE, L.STORAGE, "raid-member-failed"),
    ("      12581816 blocks super 1.2 [2/1] [_U]", C.STORAGE, L.STORAGE, "raid-member-failed"),
    # Round 53: smartctl's verdict that the drive is failing.
    ("SMART overall-health self-assessment test result: FAILED!", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    # Round 54: ext4 carrying errors; dm-thin out of space; NFS's RPC layer; mount.cifs; HTCondor's transfer.
    (
        "EXT4-fs (sdb1): warning: mounting fs with errors, running e2fsck is recommended",
        C.STORAGE,
        L.STORAGE,
        "kernel-block-io-error",
    ),
    ("EXT4-fs (sdb1): error count since last fsck: 494734", C.STORAGE, L.STORAGE, "kernel-block-io-error"),
    (
        "kernel: device-mapper: thin: 252:4: switching pool to out-of-data-space (error IO) mode",
        C.STORAGE,
        L.STORAGE,
        "disk-full",
    ),
    ("nfs_statfs: statfs error = 5", C.STORAGE, L.STORAGE, "parallel-fs-error"),
    ("RPC: error 5 connecting to server belka", C.STORAGE, L.STORAGE, "parallel-fs-error"),
    ("kernel: nfs: RPC call returned error 101", C.STORAGE, L.STORAGE, "parallel-fs-error"),
    ("mount error(112): Host is down", C.STORAGE, L.STORAGE, "shared-fs-mount-failed"),
    (
        "  Reason: Transfer input files failure at execution point slot1_6@node17 using protocol osdf. Details: short read",
        C.STORAGE,
        L.STORAGE,
        "htcondor-transfer-failed",
    ),
    (
        'Warning  ProvisioningFailed  pvc  Failed to provision volume with StorageClass "fast": rpc error: code = Internal',
        C.STORAGE,
        L.SYSTEM_SOFTWARE,
        "pvc-unbound",
    ),
    # Round 55: ZFS's checksum errno as a program prints it; Open MPI's shared-file-pointer lock file.
    ("/var/lib/dpkg/info/ssh.list (Invalid exchange)", C.STORAGE, L.STORAGE, "io-error"),
    ("OSError: [Errno 52] Invalid exchange: '/data/shard-07.bin'", C.STORAGE, L.STORAGE, "io-error"),
    (
        "[n406:131617] [86]mca_sharedfp_lockedfile_file_open: Error during file open",
        C.STORAGE,
        L.STORAGE,
        "write-failed",
    ),
    # Round 55: a volume of the job's own that will not mount stays a failure.
    (
        'Warning  FailedMount  pod/p  MountVolume.SetUp failed for volume "dataset" : configmap "data-cfg" not found',
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 56: Adaptec's controller aborting commands.
    ("kernel: aacraid: Host adapter abort request (7,0,0,0)", C.STORAGE, L.HARDWARE, "storage-controller-failed"),
    # Round 57: a Lustre server's eviction as its debug log holds it; the LANL clusters' file-system domain events.
    (
        "00010000:00020000:35.1F:1566497870.915689:0:0:0:(ldlm_lockd.c:334:waiting_locks_callback()) ### lock "
        "callback timer expired after 100s: evicting client at 10.0.15.157@o2ib10 ns: filter-lustre-OST0000_UUID",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "180600 node-12 clusterfilesystem fdmn.panic 1131228400 1 ServerFileSystem: An ServerFileSystem domain panic "
        "has occurred on storage17",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "191999 node-12 clusterfilesystem fdmn.full 1077949600 1 ServerFileSystem: ServerFileSystem domain root3_local "
        "is full",
        C.STORAGE,
        L.STORAGE,
        "disk-full",
    ),
    # Round 58: md's kick as 2.6 kernels printed it; HTCondor's transfer error; LANL's serverless domain; a mount unit.
    ("[ 6782.323751] raid1: Disk failure on sdb1, disabling device.", C.STORAGE, L.STORAGE, "raid-member-failed"),
    (
        "\t\tError from slot1_8@exec12.example.edu: STARTER at 10.0.58.19 failed to receive file "
        "/var/lib/condor/execute/slot1/dir_2198784/data.tar.gz: FILETRANSFER:1:non-zero exit(13312) from "
        "/usr/libexec/condor/curl_plugin",
        C.STORAGE,
        L.STORAGE,
        "htcondor-transfer-failed",
    ),
    (
        "2594700 node-12 clusterfilesystem clusterfilesystem.no_server 1074279100 1 ClusterFileSystem: There is no "
        "server for ServerFileSystem domain storage17",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    (
        "May 10 15:17:51 n3 systemd[1]: scratch.mount: Mounting timed out. Terminating.",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    (
        "May 10 15:17:51 n3 systemd[1]: scratch.mount: Mount process exited, code=killed, status=15/TERM",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    (
        "May 10 15:17:51 n3 systemd[1]: scratch.mount: Failed with result 'timeout'.",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    # Round 59: a FUSE mount helper that failed; PBS's stage-out; the AWS SDK without its endpoint.
    (
        "daemonize.Run: readFromProcess: sub-process: mountWithArgs: mountWithConn: Mount: mount: fusermount: exit "
        "status 1",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    (
        "Post job file processing error; job 177942309.gadi-pbs on host gadi-cpu-clx-1439",
        C.STORAGE,
        L.STORAGE,
        "pbs-stageout-failed",
    ),
    (
        "tensorflow/core/framework/op_kernel.cc:1273] OP_REQUIRES failed at save_restore_v2_ops.cc:137 : Unknown: : "
        "Unable to connect to endpoint",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 59: Blue Gene/L's Lustre mount failure that names the block (KERNMNTF).
    (
        "KERNMNTF 1132600084 2005.11.21 R14-M0-NC-I:J18-U11 2005-11-21-11.08.04.944948 R14-M0-NC-I:J18-U11 RAS KERNEL FATAL Lustre mount FAILED : bglio78 : block_id : location",
        C.STORAGE,
        L.STORAGE,
        "shared-fs-mount-failed",
    ),
    (
        "134681 node-246 unix.hw state_change.unavailable 1077804742 1 Component State Change: Component "
        "\\042SCSI-WWID:01000010:6005-08b4-0001-00c6-0006-3000-003d-0000\\042 is in the unavailable state (HWID=1973)",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    # Round 60: a LANL domain no longer served; iSCSI giving up on its session; TensorFlow's checkpoint checksum.
    (
        "156291 node-D7 clusterfilesystem clusterfilesystem.not_served 1077864767 1 ClusterFileSystem: "
        "ServerFileSystem domain storage1422 is no longer served by node node-245",
        C.STORAGE,
        L.STORAGE,
        "parallel-fs-error",
    ),
    ("[  120.3] session7: session recovery timed out after 120 secs", C.STORAGE, L.STORAGE, "san-path-failed"),
    ("[  120.3] sd 2:0:0:1: Device offlined - not ready after error recovery", C.STORAGE, L.STORAGE, "san-path-failed"),
    (
        "DataLossError (see above for traceback): Checksum does not match: stored 1669981049 vs. calculated on the "
        "restored bytes 3056795359",
        C.STORAGE,
        L.STORAGE,
        "io-error",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


LINES_WITH_ONSET: list[tuple[str, FailureClass, CauseLayer, str, Onset]] = [
    # Round 48: dm-multipath losing a path, then the last one; a member of an md array failing.
    (
        "Dec  7 10:00:00 gpu-7 multipathd[811]: mpatha: sdc - tur checker reports path is down",
        C.STORAGE,
        L.STORAGE,
        "san-path-failed",
        Onset.SUSPECTED,
    ),
    (
        "multipathd[811]: mpatha: remaining active paths: 0",
        C.STORAGE,
        L.STORAGE,
        "san-path-failed",
        Onset.SUSPECTED,
    ),
    (
        "[ 88.1] md/raid1:md0: Disk failure on nvme1n1p2, disabling device.",
        C.STORAGE,
        L.STORAGE,
        "raid-member-failed",
        Onset.SUSPECTED,
    ),
    ("             State : clean, degraded", C.STORAGE, L.STORAGE, "raid-member-failed", Onset.SUSPECTED),
    ("    Failed Devices : 2", C.STORAGE, L.STORAGE, "raid-member-failed", Onset.SUSPECTED),
    # Round 49: the Fibre Channel transport removing a remote port, QLogic's HBA losing its link.
    (
        "[ 4410.2]  rport-7:0-1: blocked FC remote port time out: removing target and saving binding",
        C.STORAGE,
        L.STORAGE,
        "san-path-failed",
        Onset.SUSPECTED,
    ),
    (
        "[  88.0] qla2xxx [0000:41:00.0]-500b:7: LOOP DOWN detected (2 7 0 0).",
        C.STORAGE,
        L.STORAGE,
        "san-path-failed",
        Onset.SUSPECTED,
    ),
    # Round 51: the SRP initiator's connection failing; a ZFS pool degraded; Ceph OSDs flapping.
    (
        "[ 469.8] scsi host5: ib_srp: failed SEND status WR flushed (5) for CQE 00000000deadbeef",
        C.STORAGE,
        L.STORAGE,
        "san-path-failed",
        Onset.SUSPECTED,
    ),
    (
        "status: One or more devices are faulted in response to persistent errors.",
        C.STORAGE,
        L.STORAGE,
        "zfs-pool-degraded",
        Onset.SUSPECTED,
    ),
    (" state: SUSPENDED", C.STORAGE, L.STORAGE, "zfs-pool-degraded", Onset.SUSPECTED),
    (
        "\t    sdc     FAULTED     16     0     0  too many errors",
        C.STORAGE,
        L.STORAGE,
        "zfs-pool-degraded",
        Onset.SUSPECTED,
    ),
    (
        "\tThere are insufficient replicas for the pool to continue functioning.",
        C.STORAGE,
        L.STORAGE,
        "zfs-pool-degraded",
        Onset.SUSPECTED,
    ),
    (
        "2024-01-02 10:00:00.1 7f00 -1 osd.4 88 heartbeat_check: no reply from 10.1.0.7:6804 osd.9 since back "
        "2024-01-02 09:59:40.0 front 2024-01-02 09:59:40.0 (oldest deadline 2024-01-02 09:59:59.9)",
        C.STORAGE,
        L.AMBIGUOUS,
        "ceph-osd-flapping",
        Onset.SUSPECTED,
    ),
    (
        "cluster [WRN] Monitor daemon marked osd.12 down, but it is still running",
        C.STORAGE,
        L.AMBIGUOUS,
        "ceph-osd-flapping",
        Onset.SUSPECTED,
    ),
    (
        "osd.12 (osd.12) 4410 : cluster [DBG] map e910 wrongly marked me down at e909",
        C.STORAGE,
        L.AMBIGUOUS,
        "ceph-osd-flapping",
        Onset.SUSPECTED,
    ),
    # Round 52: qla2xxx giving up on a remote port; the ZFS event daemon's vdev lost.
    (
        "[18628.1] qla2xxx [0000:02:00.0]-705d:12: Remote port 51 40 2e c0 01 c2 c2 7c is not coming back",
        C.STORAGE,
        L.STORAGE,
        "san-path-failed",
        Onset.SUSPECTED,
    ),
    (
        "Apr 10 15:10:16 nas zed[2509]: eid=15 class=statechange pool='tank' vdev=sdd1 vdev_state=UNAVAIL",
        C.STORAGE,
        L.STORAGE,
        "zfs-pool-degraded",
        Onset.SUSPECTED,
    ),
    (
        "Apr 10 15:10:16 nas zed[2464]: eid=12 class=vdev.no_replicas pool='tank'",
        C.STORAGE,
        L.STORAGE,
        "zfs-pool-degraded",
        Onset.SUSPECTED,
    ),
    # Round 53: ZFS's permanent errors.
    (
        "errors: Permanent errors have been detected in the following files:",
        C.STORAGE,
        L.STORAGE,
        "zfs-pool-degraded",
        Onset.SUSPECTED,
    ),
    # Round 54: ZFS suspending a pool.
    (
        "WARNING: Pool 'ost15' has encountered an uncorrectable I/O failure and has been suspended.",
        C.STORAGE,
        L.STORAGE,
        "zfs-pool-degraded",
        Onset.SUSPECTED,
    ),
]


test_family_line_decides_by_its_pattern_and_onset = cases.lines_decided(LINES_WITH_ONSET)


BENIGN: list[str] = [
    # A retry that succeeded.
    "I0101 10:00:00.000000 retrying_utils.cc:77] The operation failed and will be automatically retried in 1.2 "
    "seconds (attempt 1 out of 10), caused by: Unavailable: Error executing an HTTP request: HTTP response code 503",
    # kubectl listing the condition healthy; a job sacct lists completed.
    "  DiskPressure     False   Mon, 01 Jan 2024 10:00:00 +0000   KubeletHasNoDiskPressure     kubelet has no disk "
    "pressure",
    # Round 25: the kubelet's report of a volume it mounted.
    '  Normal   SuccessfulMountVolume  1m  kubelet  MountVolume.SetUp succeeded for volume "datasets"',
    # Round 26: the attach-detach controller while a rescheduled pod's volume detaches from its old node.
    '  Warning  FailedAttachVolume  71s  attachdetach-controller  Multi-Attach error for volume "pvc-1" Volume is '
    "already exclusively attached to one node and can't be attached to another",
    # Round 28: BeeGFS's client noting a build option at mount.
    "[ 901.0] beegfs: mount(4410): Built without NVFS RDMA support.",
    # Round 29: XFS mounting cleanly.
    "[ 16708.7] XFS (dm-0): Ending clean mount",
    # Round 55: the kubelet retrying the service-account volume before its ConfigMap cache has synced.
    'Warning  FailedMount  pod/p  MountVolume.SetUp failed for volume "kube-api-access-pljgx" : failed to sync configmap '
    "cache: timed out waiting for the condition",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    # Status that says nothing failed.
    "nfs: server nas3 OK",
    "Lustre: proj-OST0007-osc-ffff9c: Connection restored to 10.9.0.7@o2ib (at 10.9.0.7@o2ib)",
    "Disk quota: 3.1T of 10T used",
    "checkpoint written: 0 errors, skipped 0 steps",
    "[ 519.3] nvme nvme0: Abort status: 0x0",
    "mount: /scratch mounted read-only as requested",
    # A program's own message about a file it reads, not torch.save's writer.
    "Input file: File weights.txt cannot be opened, using defaults",
    # Round 31: a CSI driver's other RPCs' errors (a delete already done), and a frame that is not a filesystem's wait.
    "E0301 10:00:00.1 1 utils.go:80] GRPC error: rpc error: code = NotFound desc = volume pv-1 not found",
    "[ 811.2]  xfs_buf_read_map+0x5c/0x2d0 [xfs]",
    # Round 34: JuiceFS retrying an upload; Ceph clearing a check, or healing a down OSD (benign's ceph-health-check).
    "2025/03/02 11:20:41.118000 juicefs[2211] <WARNING>: upload chunks/44/4410/4410931_0_4096: timeout after 1m0s (try 2)",
    "2025-04-01 02:12:07.120 mon.a mon.0 10.1.0.4:6789/0 889 : cluster [INF] Health check cleared: SLOW_OPS (was: 14 "
    "slow ops, oldest one blocked for 61 sec, daemons [osd.3,osd.7] have slow ops.)",
    "2025-04-01 02:13:00.001 mon.a mon.0 10.1.0.4:6789/0 890 : cluster [WRN] Health check failed: 1 osds down (OSD_DOWN)",
    # Round 35: a unit that mounts nothing.
    "Job for nginx.service failed because the control process exited with error code.",
    # Round 38: a CephFS session that came back; btrfs mounting with its options.
    "[ 5645.17] ceph: mds0 reconnect start",
    "[ 5645.20] ceph: mds0 reconnect success",
    "BTRFS info (device nvme1n1): disk space caching is enabled",
    # Round 42: the cluster waiting for quorum is not this node's daemon.
    "6027-725 The mmfsd daemon is not ready to handle commands yet. Waiting for quorum.",
    # Round 44: Mountpoint's lookup of a name that does not exist.
    'WARN lookup{req=8 ino=1 name="missing"}: mountpoint_s3::fuse: lookup failed: inode error: file does not exist',
    # Round 45: btrfs correcting a block from its mirror; an NVMe-oF controller reconnecting.
    "BTRFS info (device sdb2): read error corrected: ino 4242 off 8192 (dev /dev/sdc2 sector 2048)",
    "nvme nvme1: Successfully reconnected (1 attempt)",
    # Round 46: libata's link coming back after a reset.
    "ata3: SATA link up 6.0 Gbps (SStatus 133 SControl 300)",
    # Round 48: a path coming back, a map with paths left, an array healthy or resyncing, a controller's probe.
    "multipathd[811]: mpatha: sdc - tur checker reports path is up",
    "multipathd[811]: mpatha: remaining active paths: 3",
    "             State : clean",
    "    Failed Devices : 0",
    "[   5.1] megaraid_sas 0000:41:00.0: FW now in Ready state",
    # Round 49: the HBA's link coming back, and the reset that follows a fault.
    "[  91.0] qla2xxx [0000:41:00.0]-500a:7: LOOP UP detected (16 Gbps).",
    "kernel: mpt3sas_cm0: diag reset: SUCCESS",
    # Round 51: a path failing over to another is not read; a pool that is ONLINE; a drive's clean self-test.
    "Dec  6 10:50:49 c1 multipathd[1709]: checker failed path 8:16 in map mpathb",
    "Dec  6 10:50:49 c1 multipathd[1709]: mpathb: remaining active paths: 1",
    "[ 912.4] device-mapper: multipath: 253:2: Failing path 8:32.",
    " state: ONLINE",
    "\t    sdc     ONLINE       0     0     0",
    "smartd[900]: Device: /dev/sdb [SAT], previous self-test completed without error",
    # Round 52: zed's events of a healthy pool.
    "Apr 10 15:10:16 nas zed[2514]: eid=16 class=zpool pool='tank'",
    "Apr 10 15:12:00 nas zed[2600]: eid=20 class=statechange pool='tank' vdev=sdd1 vdev_state=ONLINE",
    # Round 52: the checks cleared.
    "cluster [INF] Health check cleared: PG_DAMAGED (was: Possible data damage: 1 pg inconsistent)",
    # Round 53: a healthy array, a disk found, a pool without errors.
    "      12581816 blocks super 1.2 [2/2] [UU]",
    "ata5: SATA link up 6.0 Gbps (SStatus 133 SControl 300)",
    "errors: No known data errors",
    # Round 53: smartctl's verdict on a healthy drive.
    "SMART overall-health self-assessment test result: PASSED",
    # Round 54: dm-thin's low-water event, before it runs out.
    "device-mapper: thin: 252:4: reached low water mark for data device: sending event.",
    # Round 56: libata's tries, which it retries.
    "ata1: COMRESET failed (errno=-16)",
    "[   63.1] ata5: softreset failed (1st FIS failed)",
    "ata5: link online but 1 devices misclassified, retrying",
    # Round 58: a mount unit that did its job.
    "May 10 15:17:51 n3 systemd[1]: scratch.mount: Deactivated successfully.",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


def test_a_storage_errno_under_a_python_exception_is_storage(catalogue: Catalogue, matcher: Matcher):
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            '  File "/opt/train.py", line 210, in save',
            "    torch.save(state, path)",
            "OSError: [Errno 5] Input/output error: '/lustre/proj/run7/ckpt.pt'",
            "[rank1]:[E101 00:00:00.1 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE) ran for 600031 milliseconds before timing out.",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.cause_layer, a.pattern) == (C.STORAGE, L.STORAGE, "io-error")


def test_onsets_and_rules(catalogue: Catalogue):
    # panic() does not return: the node goes down with the job on it.
    assert catalogue.onset("kernel-panic-oom") is Onset.CERTAIN
    assert catalogue.onset("read-only-filesystem") is Onset.SUSPECTED
    assert catalogue.onset("kernel-block-io-error") is Onset.SUSPECTED
    assert catalogue.onset("dcgm-diag-fail") is Onset.SUSPECTED
    storage = {p.id: p for p in catalogue.runbook(C.STORAGE).patterns}
    assert storage["kernel-block-io-error"].node_rule is NodeRule.RECURRENCE
    assert storage["read-only-filesystem"].recoverable_by_restart is False


def test_a_local_disk_failing_blames_its_node_the_second_time(catalogue: Catalogue, matcher: Matcher):
    """Round 36: one I/O error blames no node (the taxonomy's storage row); the node whose kernel logged
    it is offered, and the decision leaves it out when the same class struck it before."""
    kernel = [
        "[  519.201025] nvme nvme0: I/O 39 QID 3 timeout, aborting",
        "[  531.168257] blk_update_request: I/O error, dev nvme0n1, sector 100492368 op 0x1:(WRITE) flags 0x104000",
    ]
    job = "OSError: [Errno 5] Input/output error: '/local/scratch/shard7.bin'"
    excerpt = classify_text(catalogue, matcher, "\n".join([*kernel, job]))
    assert (excerpt.failure_class, excerpt.pattern) == (C.STORAGE, "kernel-block-io-error")
    assert not excerpt.node_implicated and excerpt.nodes == []

    a = attribute(catalogue, matcher, evidence(job, kernel={"node2": kernel}))
    assert (a.pattern, a.node_implicated, a.nodes) == ("kernel-block-io-error", True, ["node2"])
    shape = JobShape(job_nodes=["node1", "node2", "node3"], cluster_nodes=["node1", "node2", "node3", "node4"])
    budgets = Budgets(max_restarts=3, no_checkpoint_attempts=2)
    first = decide(a, catalogue.runbook(C.STORAGE), JobHistory(), budgets, shape, checkpoint_step=10)
    assert (first.action, first.exclude) == (Action.RESTART, [])
    # The built-in ladder stops at a second storage failure; an operator's that restarts twice
    # leaves the node out then, by the pattern's rule (the runbook's own blames no node).
    twice = catalogue.runbook(C.STORAGE).model_copy(update={"ladder": [Rung(action=Action.RESTART_EXCLUDING, times=2)]})
    before = PastIncident(attempt=0, failure_class=C.STORAGE, nodes=["node2"], checkpoint_step=10)
    second = decide(a, twice, JobHistory(restarts=1, incidents=[before]), budgets, shape, checkpoint_step=20)
    assert (second.action, second.exclude) == (Action.RESTART_EXCLUDING, ["node2"])


def test_a_disk_remounted_read_only_is_the_storage_not_the_path(catalogue: Catalogue, matcher: Matcher):
    text = "\n".join(
        [
            "[ 533.1] EXT4-fs (nvme0n1p1): Remounting filesystem read-only",
            "OSError: [Errno 30] Read-only file system: '/local/scratch/ckpt'",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.cause_layer, a.pattern) == (C.STORAGE, L.STORAGE, "kernel-block-io-error")
    alone = classify_text(catalogue, matcher, "OSError: [Errno 30] Read-only file system: '/local/scratch/ckpt'")
    assert (alone.cause_layer, alone.recoverable_by_restart) == (L.APPLICATION, False)


def test_ebusy_on_a_device_node_is_not_storage(catalogue, matcher):
    # The path-less strerror (a device the program opens) is not the file system's.
    got = classify_text(catalogue, matcher, "RuntimeError: Device or resource busy")
    assert got.failure_class is not C.STORAGE


def test_a_ceph_client_connection_fault_is_a_suspicion_a_deadline_still_outranks(catalogue, matcher):
    # Round 40: an OSD closing an idle session prints the same line on a healthy mount.
    hit = matcher.failure("[Thu May 14 12:38:23 2020] libceph: osd7 9.125.70.42:6813 socket closed (con state OPEN)")
    assert (hit.pattern, hit.onset) == ("ceph-client-connection-fault", Onset.SUSPECTED)
    text = "libceph: osd7 9.125.70.42:6813 socket closed (con state OPEN)\nOSError: [Errno 5] Input/output error"
    assert classify_text(catalogue, matcher, text).pattern == "io-error"
