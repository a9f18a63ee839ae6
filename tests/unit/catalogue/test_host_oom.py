"""runbooks/host_oom.yaml: the host's memory exhausted, in each killer's and allocator's words.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: Linux mm/oom_kill.c (dump_header, dump_tasks, __oom_kill_process, oom_reap_task, the
oom_kill_allocating_task message, kills of processes sharing the victim's memory, RHEL 6's victim
line and vm.would_have_oomkilled), mm/memcontrol.c, mm/page_alloc.c, panic_on_oom; the cgroup's
counters (v2 memory.events, v1 memory.oom_control); Slurm's task/cgroup memory notices
(task_cgroup_memory.c before and after commit 38e15bf74b), jobacct_gather.c and its kill
messages, srun launch.c; LSF's termination reasons; Grid Engine's execd (msg_execd.h) and qacct;
HTCondor's starter (docker_proc.cpp, vanilla_proc.cpp); systemd, systemd-oomd, containerd,
the kubelet's eviction manager, earlyoom, Ray's memory monitor; jemalloc, tcmalloc, bash's xmalloc,
numpy, cuDNN 9's host allocation; NCCL's host malloc (alloc.h) and handled retries; PyTorch's
DataLoader and MapAllocator, PaddlePaddle's shared memory (data_loader.cc, mmap_allocator.cc);
MPICH's Hydra banner; glibc's po/*.po for "Killed"; a shell's "Killed" after a tqdm bar.
"""

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Slurm's controller and LSF on the scheduler's end of a job.
    (
        "TERM_MEMLIMIT: job killed after reaching LSF memory usage limit.",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
    # The kernel's OOM killer in the wordings the report lacked.
    (
        "[ 8812.301122] Out of memory (oom_kill_allocating_task): Kill process 9120 (python) score 0 or sacrifice child",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "[ 8812.301122] Out of memory (oom_kill_allocating_task): Killed process 9120 (python) total-vm:81234567kB, "
        "anon-rss:60123456kB, file-rss:1024kB, shmem-rss:0kB, UID:1000 pgtables:120000kB oom_score_adj:0",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    ("[ 8812.301125] Kill process 9133 (python) sharing same memory", C.HOST_OOM, L.APPLICATION, "oom-kill"),
    (
        '[ 8812.301125] Kill process 9133 (python) in VE "204" sharing same memory',
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "[ 8812.301124] Killed process 9120, UID 1000, (python) total-vm:81234567kB, anon-rss:60123456kB, file-rss:1024kB",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # NCCL's allocators (src/include/alloc.h): host malloc since v2.4, the CUDA forms since v2.14.
    (
        "gpu-7:5120:5188 [3] include/alloc.h:37 NCCL WARN Failed to malloc 33554432 bytes",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
    # MPICH's Hydra banner: the raw wait status of a rank killed by a signal.
    (
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 9665 RUNNING AT node-3\n"
        "=   EXIT CODE: 9\n=   CLEANING UP REMAINING PROCESSES",
        C.HOST_OOM,
        L.APPLICATION,
        "killed",
    ),
    ("YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)", C.HOST_OOM, L.APPLICATION, "killed"),
    # PaddlePaddle's shared memory: the DataLoader's SIGBUS handler (beside the bus error it outranks) and mmap.
    (
        "FatalError: DataLoader process (pid 1234) exited is killed by signal: 1234.\n"
        "  It may be caused by insufficient shared storage space. This problem usually occurs when using docker as "
        "a development environment.\nBus error at (/paddle/paddle/fluid/imperative/data_loader.cc:165)",
        C.HOST_OOM,
        L.APPLICATION,
        "shared-memory-exhausted",
    ),
    (
        "RuntimeError: (Unavailable) Memory map failed when create shared memory.\n"
        "  [Hint: Expected ptr != ((void *) -1), but received ptr:0xffffffffffffffff == ((void *) -1).] "
        "(at /paddle/paddle/fluid/memory/allocation/mmap_allocator.cc:81)",
        C.HOST_OOM,
        L.APPLICATION,
        "shared-memory-exhausted",
    ),
    # HTCondor's starter: docker_proc.cpp, vanilla_proc.cpp, and the cgroup wording.
    (
        "Hold reason: Error from slot1_3@gpu2002.example.edu: Docker job has gone over memory limit of 16384 Mb",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
    (
        "Job has gone over memory limit of 2048 megabytes. Peak usage: 2050 megabytes.",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
    (
        "Job has gone over cgroup memory limit of 4096 megabytes. Peak usage: 4100 megabytes.",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
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
    # Grid Engine's execd reason, in the abort mail and in qacct.
    (
        "Job 812 Aborted\n Exit Status      = 137\n Signal           = KILL\nfailed execd enforced h_vmem limit "
        "because:\njob 812.1 died through signal KILL (9).",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
    ("failed       100 : execd enforced h_rss limit", C.HOST_OOM, L.APPLICATION, "slurm-memory-limit"),
    # A shell's "Killed" glued to a tqdm bar's line.
    (
        "Loading checkpoint shards:  40%|████      | 2/5 [00:03<00:04,  1.51s/it]Killed",
        C.HOST_OOM,
        L.APPLICATION,
        "killed",
    ),
    # The cgroup's own counters (v2 memory.events, v1 memory.oom_control).
    ("oom_kill 2", C.HOST_OOM, L.APPLICATION, "oom-kill"),
    ("/sys/fs/cgroup/slurm/job_4411/memory.events:oom_kill 1", C.HOST_OOM, L.APPLICATION, "oom-kill"),
    ("memory.events.local: oom_group_kill 1", C.HOST_OOM, L.APPLICATION, "oom-kill"),
    # systemd, containerd, kubelet.
    (
        "trainer.service: A process of this unit has been killed by the OOM killer.",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    ("trainer.service: Failed with result 'oom-kill'.", C.HOST_OOM, L.APPLICATION, "oom-kill"),
    (
        'time="2024-03-01T10:00:00.1Z" level=info msg="TaskOOM event &TaskOOM{ContainerID:9f1c2e,'
        'XXX_unrecognized:[],}"',
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "Warning  SystemOOM  2m  kubelet  System OOM encountered, victim process: python3, pid: 4411",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # earlyoom.
    (
        "earlyoom[812]: low memory! at or below SIGTERM limits: mem 10.00%, swap  5.00%",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        'earlyoom[812]: sending SIGTERM to process 4411 uid 1000 "python3": badness 912, VmRSS 118000 MiB',
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        'earlyoom[812]: sending SIGKILL to process 4411 uid 1000 "python3": oom_score 912, VmRSS 118000 MiB',
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # Ray's monitor, per task and in its older Python form.
    (
        "Memory on the node (IP: 10.1.0.7, ID: 5e1f) where the task (task ID: 77ab, name=tokenize, pid=4411, "
        "memory used=28.10GB) was running was 30.20GB / 31.40GB (0.961783), which exceeds the memory usage "
        "threshold of 0.95. Ray killed this worker (ID: 91cd) because it was the most recently scheduled task;",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "ray._private.memory_monitor.RayOutOfMemoryError: More than 95% of the memory on node gpu-a-01 is used "
        "(30.2 / 31.4 GB).",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # Allocators: jemalloc, bash, numpy 1.16's wording, cuDNN 9's host allocation.
    (
        "<jemalloc>: Error in malloc(): out of memory. Requested: 17179869184",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
    ("<jemalloc>: Error allocating aligned memory: out of memory", C.HOST_OOM, L.APPLICATION, "host-alloc-failed"),
    ("bash: xmalloc: cannot allocate 65536 bytes (0 bytes allocated)", C.HOST_OOM, L.APPLICATION, "host-alloc-failed"),
    (
        "numpy.core._exceptions.MemoryError: Unable to allocate array with shape (90000, 90000) and data type float64",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
    (
        "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # Ray's memory monitor told why: host_oom decides over the dead worker.
    (
        "(raylet) A worker died or was killed while executing a task by an unexpected system error.\n"
        "Task was killed due to the node running low on memory. Memory on the node (IP: 10.0.0.1, ID: 3a4b) where "
        "the task (task ID: 8ce7, name=f, pid=69161, memory used=28.1GB) was running was 30.5GB / 31.0GB (0.98), "
        "which exceeds the memory usage threshold of 0.95.",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
        False,
        [],
    ),
    # LSF's termination reasons (bacct -l / bhist -l / the job report).
    (
        "TERM_SWAP: job killed after reaching LSF swap usage limit.",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
        False,
        [],
    ),
    # Grid Engine's execd enforcing the queue's hard limits (msg_execd.h).
    (
        '05/04/2026 03:36:38|  main|node001|W|job 48 exceeds job hard limit "h_vmem" of queue "gpu.q@node001" '
        "(68719476736.00000 > limit:68719476736.00000) - sending SIGKILL",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


DECIDED_ANY_LAYER: list[tuple[str, FailureClass, str]] = [
    # Slurm killing for memory, in its own words.
    (
        "slurmstepd: error: Job 4242 exceeded memory limit (10485760 > 8388608), being killed",
        C.HOST_OOM,
        "slurm-memory-limit",
    ),
    ("slurmstepd: error: Exceeded job memory limit", C.HOST_OOM, "slurm-memory-limit"),
    (
        "slurmstepd: error: Detected 2 oom-kill event(s) in StepId=4242.0. Some of your processes may have been "
        "killed by the cgroup out-of-memory handler.",
        C.HOST_OOM,
        "oom-kill",
    ),
    # The failcnt notice, then the task that did die of it.
    (
        "slurmstepd: error: Exceeded step memory limit at some point.\nsrun: error: gpu-b-03: task 0: Out Of Memory",
        C.HOST_OOM,
        "slurm-memory-limit",
    ),
]


test_failures_beside_the_look_alikes_are_caught = cases.excerpts_decided_whatever_the_layer(DECIDED_ANY_LAYER)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # The kernel's OOM report, line by line (mm/oom_kill.c dump_header / dump_tasks /
    # __oom_kill_process / oom_reap_task; mm/memcontrol.c).
    (
        "[ 5120.004411] pt_main_thread invoked oom-killer: gfp_mask=0x100cca(GFP_HIGHUSER_MOVABLE), order=0, "
        "oom_score_adj=0",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "[ 5120.004590] oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0-3,"
        "oom_memcg=/slurm/uid_501/job_31,task_memcg=/slurm/uid_501/job_31/step_2,task=python3,pid=8080,uid=501",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    ("[ 5120.004601] Tasks state (memory values in pages):", C.HOST_OOM, L.APPLICATION, "oom-kill"),
    (
        "[ 5120.004700] Out of memory: Killed process 8080 (python3) total-vm:70123456kB, anon-rss:65000000kB, "
        "file-rss:2048kB, shmem-rss:512kB, UID:501 pgtables:130000kB oom_score_adj:0",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "Apr  2 03:04:05 cn12 kernel: Killed process 7001 (torchrun) total-vm:9123kB, anon-rss:8000kB, file-rss:0kB",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "[ 5120.009000] oom_reaper: reaped process 8080 (python3), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    ("[ 5120.004620] memory: usage 50331648kB, limit 50331648kB, failcnt 901", C.HOST_OOM, L.APPLICATION, "oom-kill"),
    (
        "Task in /slurm/uid_501/job_31 killed as a result of limit of /slurm/uid_501/job_31",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # Slurm, Kubernetes, Ray, systemd-oomd, runc.
    (
        "slurmstepd: error: Detected 4 oom_kill events in StepId=31.2. Some of the step tasks have been OOM Killed.",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "slurmstepd: error: StepId=31.2 exceeded virtual memory limit (81920 > 65536), being killed",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
    ("srun: error: cn12: tasks 0-3: Out Of Memory", C.HOST_OOM, L.APPLICATION, "slurm-memory-limit"),
    ('      "reason": "OOMKilled",', C.HOST_OOM, L.APPLICATION, "oom-kill"),
    (
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "systemd-oomd[611]: Killed /system.slice/slurmstepd.scope/job_31 due to memory pressure for "
        "/system.slice being 72.40% > 60.00% for > 20s with reclaim activity",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        'level=error msg="runc create failed: unable to start container process: container init was OOM-killed '
        '(memory limit too low?)"',
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # Allocation failures, and the kernel's report before a kill.
    (
        "[ 211.5] python3: page allocation failure: order:5, mode:0x40dc0(GFP_KERNEL|__GFP_COMP), nodemask=(null)",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
    ("[ 211.6] Mem-Info:", C.HOST_OOM, L.APPLICATION, "host-alloc-failed"),
    (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:117] data. DefaultCPUAllocator: not enough memory: you tried "
        "to allocate 4294967296 bytes.",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
    ("RuntimeError: Could not allocate bytes object!", C.HOST_OOM, L.APPLICATION, "host-alloc-failed"),
    ("OSError: [Errno 12] Cannot allocate memory", C.HOST_OOM, L.APPLICATION, "host-alloc-failed"),
    # Shared memory (/dev/shm).
    (
        "RuntimeError: DataLoader worker (pid 7712) is killed by signal: Bus error. It is possible that "
        "dataloader's workers are out of shared memory. Please try to raise your shared memory limit.",
        C.HOST_OOM,
        L.APPLICATION,
        "shared-memory-exhausted",
    ),
    (
        "cn12:90:91 [3] NCCL WARN Error: failed to extend /dev/shm/nccl-Zq81Lm to 4718592 bytes, error: No space "
        "left on device (28)",
        C.HOST_OOM,
        L.APPLICATION,
        "shared-memory-exhausted",
    ),
    # A SIGKILL the text cannot explain, in the locale's words too (glibc po/zh_CN.po).
    (
        "/var/spool/slurmd/job31/slurm_script: line 9: 8080 Killed                  python3 train.py",
        C.HOST_OOM,
        L.APPLICATION,
        "killed",
    ),
    ("已杀死", C.HOST_OOM, L.APPLICATION, "killed"),
    ("[pod-7-n0-0] terminated with exit code (137). Reason [Error].", C.HOST_OOM, L.APPLICATION, "killed"),
    (
        "[ 77.1] Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled",
        C.HOST_OOM,
        L.APPLICATION,
        "kernel-panic-oom",
    ),
    (
        "[ 77.1] Kernel panic - not syncing: Out of memory and no killable processes...",
        C.HOST_OOM,
        L.APPLICATION,
        "kernel-panic-oom",
    ),
    (
        "[ 77.1] Kernel panic - not syncing: System is deadlocked on memory",
        C.HOST_OOM,
        L.APPLICATION,
        "kernel-panic-oom",
    ),
    # Round 25, a cloud training service's verdict on a replica killed for memory.
    (
        "The replica workerpool0-0 ran out-of-memory and exited with a non-zero status of 9(SIGKILL).",
        C.HOST_OOM,
        L.APPLICATION,
        "cloud-replica-oom",
    ),
    # Round 26, YARN's NodeManager killing a container over its memory (ContainersMonitorImpl), as Spark relays it.
    (
        "Container [pid=4242,containerID=container_1700000000000_0001_01_000002] is running beyond physical memory "
        "limits. Current usage: 8.1 GB of 8 GB physical memory used; 10.2 GB of 16.8 GB virtual memory used. Killing "
        "container.",
        C.HOST_OOM,
        L.APPLICATION,
        "yarn-memory-limit",
    ),
    (
        "ExecutorLostFailure (executor 3 exited caused by one of the running tasks) Reason: Container killed by YARN for "
        "exceeding memory limits. 9.5 GB of 9 GB physical memory used.",
        C.HOST_OOM,
        L.APPLICATION,
        "yarn-memory-limit",
    ),
    # Round 27: bash's job report without its "line N:" prefix, and an interactive job's (jobs.c).
    ("90211 Killed                  python train.py --config big.yaml", C.HOST_OOM, L.APPLICATION, "killed"),
    ("[1]+  Killed                  torchrun --nproc_per_node 8 train.py", C.HOST_OOM, L.APPLICATION, "killed"),
    # Round 28: Dask's nanny over its worker's memory limit (nanny.py / worker_memory.py).
    (
        "distributed.nanny - WARNING - Worker exceeded 95% memory budget. Restarting",
        C.HOST_OOM,
        L.APPLICATION,
        "dask-worker-memory-limit",
    ),
    (
        "distributed.nanny.memory - WARNING - Worker tcp://10.0.0.7:40213 (pid=5521) exceeded 95% memory budget. Restarting...",
        C.HOST_OOM,
        L.APPLICATION,
        "dask-worker-memory-limit",
    ),
    # Round 30: the OOM killer's task table header, old and new (mm/oom_kill.c dump_tasks).
    (
        "[1044908.75] [ pid ]   uid  tgid total_vm      rss nr_ptes nr_pmds swapents oom_score_adj name",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    (
        "[ 9001.2] [  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes swapents "
        "oom_score_adj name",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # Round 33: the shell's Killed glued to a progress bar with no bar drawn.
    (
        "padding:  65% 2207000/3382137 [03:08<01:16, 15381.54 examples/s]Killed",
        C.HOST_OOM,
        L.APPLICATION,
        "killed",
    ),
    # Round 37: sacct's State column cut to its width with a "+" (print_fields.c).
    (
        "4410.batch        batch              lab          8 OUT_OF_ME+    0:125",
        C.HOST_OOM,
        L.APPLICATION,
        "slurm-memory-limit",
    ),
    # Round 43: the shell's "Killed" after a Keras bar with its fields.
    (
        "120/4000 [>.............................] - ETA: 301s - loss: 0.9876Killed",
        C.HOST_OOM,
        L.APPLICATION,
        "killed",
    ),
    # Round 44: a row of the OOM killer's task table.
    (
        "[Thu Mar 20 21:01:25 2025] [  86682]     0 86682   893460     3496   516096     6431          -999 containerd",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # Round 45: OpenPAI's exit reason for a container killed at its memory request.
    (
        "Exit Reason: User Container killed by docker due to it exceeded the request memory",
        C.HOST_OOM,
        L.APPLICATION,
        "cloud-replica-oom",
    ),
    # Round 47: TensorFlow unable to start a thread.
    (
        "2026-12-07 10:00:00.335985: F tensorflow/tsl/platform/default/env.cc:74] Check failed: ret == 0 (11 vs. 0)"
        "Thread creation via pthread_create() failed.",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
    # Round 49: Python unable to start a thread.
    ("RuntimeError: can't start new thread", C.HOST_OOM, L.APPLICATION, "host-alloc-failed"),
    # Round 51: Cray ALPS's report of the OOM killer.
    (
        "[NID 04371] 2016-10-19 22:21:28 Apid 23764253: OOM killer terminated this process.",
        C.HOST_OOM,
        L.APPLICATION,
        "oom-kill",
    ),
    # Round 52: the allocator stalling short of the OOM killer.
    ("[55363.4] QXcbEventReader: page allocation stalls for 10048ms, ", C.HOST_OOM, L.APPLICATION, "host-alloc-failed"),
    # Round 56: OpenBLAS unable to start its threads.
    (
        "OpenBLAS blas_thread_init: pthread_create failed for thread 50 of 64: Resource temporarily unavailable",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
    # Round 60: GNU OpenMP unable to start a thread.
    (
        "libgomp: Thread creation failed: Resource temporarily unavailable",
        C.HOST_OOM,
        L.APPLICATION,
        "host-alloc-failed",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BENIGN: list[str] = [
    # Slurm's failcnt notice, before 17.11 and after: the limit was reached, nothing killed.
    "slurmstepd: error: Exceeded step memory limit at some point.",
    "slurmstepd: Exceeded job memory limit at some point.",
    "slurmstepd: error: StepId=4242.0 hit memory limit at least once during execution. This may or may not "
    "result in some failure.",
    # Slurm's task/cgroup failcnt notices, <= 17.11.1 and 17.11.2-18.08: the limit was reached,
    # the kernel may have reclaimed pages; no kill is reported (19.05+ counts oom_kill events).
    "slurmstepd: error: Exceeded step memory limit at some point.",
    "slurmstepd: error: Exceeded job memory limit at some point.",
    "slurmstepd: error: Step 48213.0 hit memory limit at least once during execution. This may or may not result "
    "in some failure.",
    "slurmstepd: error: Job 48213 hit memory+swap limit at least once during execution. This may or may not result "
    "in some failure.",
    # NCCL's allocation INFO lines.
    "gpu-7:5120:5120 [3] NCCL INFO Allocated 33554432 bytes of host memory for proxy buffers",
    "gpu-7:5120:5120 [3] NCCL INFO MMAP memory : Allocated 33554432 bytes",
    # RHEL 6's vm.would_have_oomkilled: nothing is killed.
    "[ 8812.301122] Would have killed process 9120 (python). But continuing instead.",
    # HTCondor's request, and MPICH's normal end.
    "request_memory = 16384",
    # The memory condition listed healthy, and kubelet's event for it.
    "  MemoryPressure   False   Mon, 01 Jan 2024 10:00:00 +0000   KubeletHasSufficientMemory   kubelet has "
    "sufficient memory available",
    "  Normal  NodeHasSufficientMemory  5m  kubelet  Node gpu-b-07 status is now: NodeHasSufficientMemory",
    # Healthy trainers' progress lines.
    "Training: 100%|██████████| 50/50 [00:10<00:00,  4.90it/s]",
    # libfabric's EFA provider at INFO, and a Grid Engine limit requested.
    "#$ -l h_vmem=16G",
    # The cgroup's counters at zero, and the other memory.events / oom_control keys.
    "oom_kill 0",
    "oom_group_kill 0",
    "oom_kill_disable 0",
    "under_oom 0",
    # earlyoom's periodic report and banner; tcmalloc's report of a large allocation that succeeded.
    "earlyoom[812]: mem avail: 42000 of 64000 MiB (65.62%), swap free:    0 of    0 MiB ( 0.00%)",
    "earlyoom v1.7",
    "tcmalloc: large alloc 1073741824 bytes == 0x55d5c0000000 @  0x7f10 0x7f20",
    # systemd-oomd's candidate list; a pod's container that completed.
    "systemd-oomd[812]: Considered 3 cgroups for killing, top candidates were:",
    "      Reason:       Completed",
    # Round 28: Dask's nanny pausing a worker before its limit.
    "distributed.worker.memory - WARNING - Worker is at 81% memory usage. Pausing worker.",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
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
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


def test_onsets(catalogue: Catalogue):
    # The kernel's kill is followed by the process dying; a failed allocation may be caught.
    assert catalogue.onset("oom-kill") is Onset.CERTAIN
    assert catalogue.onset("slurm-memory-limit") is Onset.CERTAIN
    assert catalogue.onset("killed") is Onset.CERTAIN
    assert catalogue.onset("host-alloc-failed") is Onset.SUSPECTED
    assert catalogue.onset("disk-full") is Onset.SUSPECTED
    assert catalogue.onset("python-keyerror") is Onset.SUSPECTED


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


def test_a_verbs_enomem_in_nccl_is_not_the_hosts_memory(matcher: Matcher):
    hit = matcher.failure("cn12:90:95 [0] NCCL WARN NET/IB : ibv_reg_mr_iova2 failed with error Cannot allocate memory")
    assert hit is not None and hit.failure_class is not C.HOST_OOM


def test_an_oom_panic_outranks_the_kernel_fatal_reading(catalogue: Catalogue, matcher: Matcher):
    line = "[ 77.1] Kernel panic - not syncing: Out of memory: system-wide panic_on_oom is enabled"
    hits = [h.pattern for h in matcher.match(line) if not h.benign]
    assert hits[0] == "kernel-panic-oom"
    assert catalogue.runbook(C.HOST_OOM).patterns and matcher.failure(line).priority == 810
    # Any other panic stays the node's.
    other = matcher.failure("[ 77.1] Kernel panic - not syncing: Fatal exception")
    assert other is not None and other.failure_class is C.NODE_FAILURE


def test_a_task_exit_by_sigkill_stays_the_kill(catalogue, matcher):
    got = classify_text(catalogue, matcher, "srun: error: c7: task 3: Exited with exit code 137")
    assert got.pattern == "killed"


def test_ucx_verbs_enomem_is_not_the_hosts_memory(catalogue, matcher):
    got = classify_text(
        catalogue, matcher, "UCX  ERROR ibv_reg_mr(address=0x1, length=4096, access=0xf) failed: Cannot allocate memory"
    )
    assert got.failure_class is not C.HOST_OOM


def test_the_old_ray_monitor_is_not_an_app_error(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "ray.exceptions.RayOutOfMemoryError: More than 95% of the memory on node n3 is used (30.2 / 31.4 GB).",
    )
    assert got.failure_class is C.HOST_OOM
