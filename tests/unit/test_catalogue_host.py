"""The host-memory, storage, application and numerical catalogue, and the benign vetoes, read from their sources.

Every line here is written for these tests from the format strings of the software
that prints it (Linux mm/oom_kill.c, mm/memcontrol.c, mm/page_alloc.c, block/blk-core.c,
fs/ext4, fs/xfs, drivers/nvme; Slurm task_cgroup_memory.c, jobacct_gather.c, srun
launch.c; PyTorch DataLoader.cpp, MapAllocator, inline_container.cc, module.py, ATen;
NCCL src/os/linux.cc, checks.h, ibvwrap.cc; Lustre ptlrpc; botocore; DeepSpeed
loss_scaler.py / fused_optimizer.py; Megatron-LM rerun_state_machine.py; Lightning;
glibc po/*.po; CPython), with made-up hosts, numbers and paths. The runbooks name the
source of each pattern.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass

C = FailureClass
L = CauseLayer

# (line, pattern that must decide it, class, layer)
FAMILIES = [
    # The kernel's OOM report, line by line (mm/oom_kill.c dump_header / dump_tasks /
    # __oom_kill_process / oom_reap_task; mm/memcontrol.c).
    (
        "[ 5120.004411] pt_main_thread invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, "
        "oom_score_adj=0",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        "[ 5120.004590] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-3,"
        "oom_memcg=/slurm/uid_501/job_31,task_memcg=/slurm/uid_501/job_31/step_2,task=python3,pid=8080,uid=501",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    ("[ 5120.004601] Tasks state (memory values in pages):", "oom-kill", C.HOST_OOM, L.APPLICATION),
    (
        "[ 5120.004700] Out of memory: Killed process 8080 (python3) total-vm:70123456kB, anon-rss:65000000kB, "
        "file-rss:2048kB, shmem-rss:512kB, UID:501 pgtables:130000kB oom_score_adj:0",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        "Apr  2 03:04:05 cn12 kernel: Killed process 7001 (torchrun) total-vm:9123kB, anon-rss:8000kB, file-rss:0kB",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        "[ 5120.009000] oom_reaper: reaped process 8080 (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    ("[ 5120.004620] memory: usage 50331648kB, limit 50331648kB, failcnt 901", "oom-kill", C.HOST_OOM, L.APPLICATION),
    (
        "Task in /slurm/uid_501/job_31 killed as a result of limit of /slurm/uid_501/job_31",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    # Slurm, Kubernetes, Ray, systemd-oomd, runc.
    (
        "slurmstepd: error: Detected 4 oom_kill events in StepId=31.2. Some of the step tasks have been OOM Killed.",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        "slurmstepd: error: StepId=31.2 exceeded virtual memory limit (81920 > 65536), being killed",
        "slurm-memory-limit",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    ("srun: error: cn12: tasks 0-3: Out Of Memory", "slurm-memory-limit", C.HOST_OOM, L.APPLICATION),
    ('      "reason": "OOMKilled",', "oom-kill", C.HOST_OOM, L.APPLICATION),
    (
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        "systemd-oomd[611]: Killed /system.slice/slurmstepd.scope/job_31 due to memory pressure for "
        "/system.slice being 72.40% > 60.00% for > 20s with reclaim activity",
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        'level=error msg="runc create failed: unable to start container process: container init was OOM-killed '
        '(memory limit too low?)"',
        "oom-kill",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    # Allocation failures, and the kernel's report before a kill.
    (
        "[ 211.5] python3: page allocation failure: order:5, mode:0x40dc0(GFP_KERNEL|__GFP_COMP), nodemask=(null)",
        "host-alloc-failed",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    ("[ 211.6] Mem-Info:", "host-alloc-failed", C.HOST_OOM, L.APPLICATION),
    (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried "
        "to allocate 4294967296 bytes.",
        "host-alloc-failed",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    ("RuntimeError: Could not allocate bytes object!", "host-alloc-failed", C.HOST_OOM, L.APPLICATION),
    ("OSError: [Errno 12] Cannot allocate memory", "host-alloc-failed", C.HOST_OOM, L.APPLICATION),
    # Shared memory (/dev/shm).
    (
        "RuntimeError: DataLoader worker (pid 7712) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
        "shared-memory-exhausted",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    (
        "cn12:90:91 [3] NCCL WARN Error: failed to extend /dev/shm/nccl-Zq81Lm to 4718592 bytes, error: No space "
        "left on device (28)",
        "shared-memory-exhausted",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    # A SIGKILL the text cannot explain, in the locale's words too (glibc po/zh_CN.po).
    (
        "/var/spool/slurmd/job31/slurm_script: line 9: 8080 Killed                  python3 train.py",
        "killed",
        C.HOST_OOM,
        L.APPLICATION,
    ),
    ("已杀死", "killed", C.HOST_OOM, L.APPLICATION),
    ("[pod-7-n0-0] terminated with exit code (137). Reason [Error].", "killed", C.HOST_OOM, L.APPLICATION),
    # Storage errnos however they surface.
    (
        "OSError: [Errno 28] No space left on device: '/scratch/run7/ckpt/step_900/optim.pt'",
        "disk-full",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        'SafetensorError: Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
        'left on device" })',
        "disk-full",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        "OSError: [Errno 122] Disk quota exceeded: '/home/u7/.cache/huggingface/hub/tmp9x'",
        "disk-quota",
        C.STORAGE,
        L.STORAGE,
    ),
    ("OSError: [Errno 27] File too large", "disk-quota", C.STORAGE, L.STORAGE),
    ("RuntimeError: write(): fd 7 failed with Input/output error", "io-error", C.STORAGE, L.STORAGE),
    ("OSError: [Errno 117] Structure needs cleaning: '/data/shards/00042.tar'", "io-error", C.STORAGE, L.STORAGE),
    (
        "[ 901.2] I/O error, dev nvme2n1, sector 88123 op 0x1:(WRITE) flags 0x8800 phys_seg 4 prio class 2",
        "io-error",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        "[ 901.3] EXT4-fs warning (device nvme2n1): ext4_end_bio:343: I/O error 10 writing to inode 77 starting "
        "block 1234)",
        "io-error",
        C.STORAGE,
        L.STORAGE,
    ),
    ("OSError: [Errno 116] Stale file handle: '/nfs/runs/7/last.pt'", "stale-file-handle", C.STORAGE, L.STORAGE),
    (
        "OSError: [Errno 16] Device or resource busy: '/nfs/tmp/x/.nfs0000000012ab34cd00000009'",
        "stale-file-handle",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        "RuntimeError: [enforce fail at inline_container.cc:595] . PytorchStreamWriter failed writing file "
        "data/17: file write failed",
        "write-failed",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        "RuntimeError: [enforce fail at inline_container.cc:778] . unexpected pos 1792 vs 1680",
        "write-failed",
        C.STORAGE,
        L.STORAGE,
    ),
    ("_pickle.UnpicklingError: pickle data was truncated", "write-failed", C.STORAGE, L.STORAGE),
    ("OSError: [Errno 37] No locks available", "write-failed", C.STORAGE, L.STORAGE),
    ("OSError: 480000000 requested and 0 written", "write-failed", C.STORAGE, L.STORAGE),
    (
        "LustreError: 167-0: proj-OST0007-osc-ffff9c: This client was evicted by proj-OST0007; in progress "
        "operations using this service will fail.",
        "parallel-fs-error",
        C.STORAGE,
        L.STORAGE,
    ),
    ("nfs: server nas3 not responding, still trying", "parallel-fs-error", C.STORAGE, L.STORAGE),
    (
        "botocore.exceptions.ClientError: An error occurred (SlowDown) when calling the PutObject operation "
        "(reached max retries: 4): Please reduce your request rate.",
        "parallel-fs-error",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        "google.api_core.exceptions.ServiceUnavailable: 503 POST https://storage.googleapis.com/upload/storage/v1/"
        "b/ckpt-bkt/o: We encountered an internal error.",
        "parallel-fs-error",
        C.STORAGE,
        L.STORAGE,
    ),
    (
        "Message: Pod ephemeral local storage usage exceeds the total limit of containers 40Gi.",
        "evicted-for-disk",
        C.STORAGE,
        L.STORAGE,
    ),
    # Program bugs: built-in exceptions opening the line, PyTorch's own messages.
    ("AttributeError: 'NoneType' object has no attribute 'size'", "python-keyerror", C.APP_ERROR, L.APPLICATION),
    (
        "TypeError: forward() got an unexpected keyword argument 'position_ids'",
        "python-keyerror",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    ("[default3]:IndexError: list index out of range", "python-keyerror", C.APP_ERROR, L.APPLICATION),
    (
        "AssertionError: num_attention_heads must be divisible by tensor_model_parallel_size",
        "python-keyerror",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    (
        "pytorch_lightning.utilities.exceptions.MisconfigurationException: `configure_optimizers` must include a "
        "monitor",
        "python-keyerror",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    (
        "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after "
        "they have already been freed).",
        "python-keyerror",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    ("RuntimeError: Error(s) in loading state_dict for GPT:", "tensor-shape-mismatch", C.APP_ERROR, L.APPLICATION),
    (
        '\tMissing key(s) in state_dict: "blocks.0.attn.c_attn.weight", "blocks.0.attn.c_attn.bias".',
        "tensor-shape-mismatch",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    (
        "RuntimeError: shape '[4, 2048, 16, 64]' is invalid for input of size 4194304",
        "tensor-shape-mismatch",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    ("RuntimeError: expected scalar type Half but found Float", "tensor-device-mismatch", C.APP_ERROR, L.APPLICATION),
    (
        "ImportError: /env/lib/python3.11/site-packages/apex_C.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev",
        "python-import-error",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    # Numbers gone bad.
    (
        "Epoch 2, step 400: loss: tensor(nan, device='cuda:3', grad_fn=<MeanBackward0>)",
        "nan-loss",
        C.NUMERICAL,
        L.APPLICATION,
    ),
    (
        "[E] Rank 5, node cn12, device 1, iteration 811: Unexpected result nan (message='found NaN in local grad "
        "norm for bucket #2 in backward pass before data-parallel communication collective')",
        "non-finite-detected",
        C.NUMERICAL,
        L.APPLICATION,
    ),
    (
        "RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, so it cannot be "
        "clipped.",
        "non-finite-detected",
        C.NUMERICAL,
        L.APPLICATION,
    ),
    (
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        "non-finite-detected",
        C.NUMERICAL,
        L.APPLICATION,
    ),
    (
        "Monitored metric val/loss = nan is not finite. Previous best value was 1.917. Signaling Trainer to stop.",
        "nan-loss",
        C.NUMERICAL,
        L.APPLICATION,
    ),
    (
        "Exception: Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.",
        "loss-scale-minimum",
        C.NUMERICAL,
        L.APPLICATION,
    ),
    (
        "[deepspeed] fp16 dynamic loss scale overflow! Skipping step. Attempted loss scale: 8.0, reducing to 4.0",
        "overflow-at-small-scale",
        C.NUMERICAL,
        L.APPLICATION,
    ),
    # A program raising because a value went non-finite, in its own words.
    ("ValueError: model output is NaN, stopping", "non-finite-detected", C.NUMERICAL, L.APPLICATION),
    ("RuntimeError:predicted depth map contains inf", "non-finite-detected", C.NUMERICAL, L.APPLICATION),
]


@pytest.mark.parametrize(("line", "pattern", "failure_class", "layer"), FAMILIES)
def test_family_line_decides_by_its_pattern(matcher: Matcher, line, pattern, failure_class, layer):
    hit = matcher.failure(line)
    assert hit is not None, line
    assert (hit.pattern, hit.failure_class, hit.cause_layer) == (pattern, failure_class, layer)


# Lines that look like failures to a careless reader and are not.
BENIGN = [
    # NCCL's INFO probes and fallbacks (src/plugin/plugin_open.cc, src/misc/cudawrap.cc).
    "cn12:90:90 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.",
    "cn12:90:90 [0] NCCL INFO NET/Plugin: Plugin load returned 2 : libnccl-net.so: cannot open shared object "
    "file: No such file or directory : when loading libnccl-net.so",
    "cn12:90:90 [0] NCCL INFO NET/Plugin: libnccl-net-ofi.so: undefined symbol: ncclNetPlugin_v9",
    "cn12:90:90 [0] NCCL INFO cuMem host allocations do not appear to be working; falling back to a /dev/shm/ "
    "based implementation",
    # NCCL's handled retries (checks.h, ibvwrap.cc, os/linux.cc).
    "cn12:90:95 [0] NCCL INFO misc/ibvwrap.cc:129 Call to ibv_reg_mr_iova2 failed with error Cannot allocate "
    "memory, retrying",
    "cn12:90:95 [0] NCCL INFO fallocate: Failed to extend /dev/shm/nccl-Zq81Lm to 4096 bytes, error: "
    "Interrupted system call (4) - retrying",
    # Status that says nothing failed.
    '            "OOMKilled": false,',
    "slurmstepd: error: StepId=31.2 hit memory limit at least once during execution. This may or may not "
    "result in some failure.",
    "oom_kill 0",
    "Killed 2 stale dataloader workers before the next epoch",
    "nfs: server nas3 OK",
    "Lustre: proj-OST0007-osc-ffff9c: Connection restored to 10.9.0.7@o2ib (at 10.9.0.7@o2ib)",
    "Disk quota: 3.1T of 10T used",
    "checkpoint written: 0 errors, skipped 0 steps",
    # Warnings that name an exception or an error.
    "/env/lib/python3.11/site-packages/transformers/trainer.py:80: FutureWarning: TypeError will be raised "
    "for positional `tokenizer`",
    "/env/lib/python3.11/site-packages/mmengine/runner/checkpoint.py:40: UserWarning: Error(s) in loading "
    "state_dict for Net: Missing key(s) in state_dict",
    "/env/lib/python3.11/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have "
    "requires_grad=True. Gradients will be None",
    "  warnings.warn(",
    # Healthy numbers, and fp16 warm-up.
    "loss: 0.412 | grad_norm: 0.87 | nan_count: 0 | inf_count: 0",
    "step 300: no NaN or Inf found in gradients",
    "found_inf: tensor([0.], device='cuda:0')",
    "[2030-01-01 00:00:00,000] [INFO] [fused_optimizer.py:180:step] [deepspeed] fp16 dynamic loss scale "
    "overflow! Skipping step. Attempted loss scale: 131072, reducing to 65536",
    "Overflow detected. Skipping step. Attempted loss scale: 8192, reducing to 4096",
    "Monitored metric val/loss did not improve in the last 3 records. Best score: 1.917. Signaling Trainer to stop.",
]


@pytest.mark.parametrize("line", BENIGN)
def test_benign_look_alikes_are_no_failure(matcher: Matcher, line):
    assert matcher.failure(line) is None, [h.pattern for h in matcher.match(line)]


# (line, the benign pattern that vetoes it): a failure pattern matches, the veto wins.
VETOED = [
    (
        "cn12:90:95 [0] NCCL INFO misc/ibvwrap.cc:129 Call to ibv_reg_mr_iova2 failed with error Cannot allocate "
        "memory, retrying",
        "not-a-failure",
    ),
    ("NaN check at step 300: no NaN or Inf found in the gradients", "healthy-counters"),
    (
        "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 65536, but hysteresis is 2. Reducing hysteresis to 1",
        "warmup-overflow",
    ),
]


@pytest.mark.parametrize(("line", "veto"), VETOED)
def test_vetoes_name_their_pattern(matcher: Matcher, line, veto):
    hits = matcher.match(line)
    assert veto in [h.pattern for h in hits if h.benign]
    assert matcher.failure(line) is None


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


def test_onsets(catalogue: Catalogue):
    # The kernel's kill is followed by the process dying; a failed allocation may be caught.
    assert catalogue.onset("oom-kill") is Onset.CERTAIN
    assert catalogue.onset("slurm-memory-limit") is Onset.CERTAIN
    assert catalogue.onset("killed") is Onset.CERTAIN
    assert catalogue.onset("host-alloc-failed") is Onset.SUSPECTED
    assert catalogue.onset("disk-full") is Onset.SUSPECTED
    assert catalogue.onset("python-keyerror") is Onset.SUSPECTED


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


def test_a_kernel_oom_report_is_the_applications(catalogue: Catalogue, matcher: Matcher):
    text = "\n".join(
        [
            "[ 5120.004411] python3 invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, "
            "oom_score_adj=0",
            "[ 5120.004500] Call Trace:",
            "[ 5120.004601] Tasks state (memory values in pages):",
            "/var/spool/slurmd/job31/slurm_script: line 9: 8080 Killed                  python3 train.py",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.cause_layer, a.recoverable_by_restart) == (C.HOST_OOM, L.APPLICATION, False)
    assert a.pattern == "oom-kill" and not a.node_implicated


def test_a_program_bug_outranks_the_peers_it_takes_down(catalogue: Catalogue, matcher: Matcher):
    text = "\n".join(
        [
            "[rank3]: AttributeError: 'NoneType' object has no attribute 'size'",
            "[rank0]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
            "[10.0.0.3]:4711",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert (a.failure_class, a.pattern) == (C.APP_ERROR, "python-keyerror")


def test_a_verbs_enomem_in_nccl_is_not_the_hosts_memory(matcher: Matcher):
    hit = matcher.failure("cn12:90:95 [0] NCCL WARN NET/IB : ibv_reg_mr_iova2 failed with error Cannot allocate memory")
    assert hit is not None and hit.failure_class is not C.HOST_OOM
