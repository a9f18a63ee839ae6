"""runbooks/process_crash.yaml: a process dead by a signal or a native abort, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: glibc, libstdc++ and CPython (faulthandler, "Fatal Python error"); the kernel's segfault
and traps.c lines; torchelastic's error report and PyTorch's DataLoader; Slurm's srun task reports;
Open MPI's mpirun; glog / abseil CHECK failures; TVM's SIGSEGV handlers (tvm-ffi backtrace.cc,
logging.cc); MPICH's Hydra banner; Ray's raylet worker-died error; 128+N exit statuses; gperftools'
tcmalloc (tcmalloc.cc's kCrash logs).
"""

from respawn.attribution.attribute import classify_text
from respawn.attribution.runbook import Catalogue, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # The neighbours each must leave alone.
    # the actor's worker process, not its node
    (
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "ray-worker-died",
    ),
    # TVM's SIGSEGV handlers.
    (
        '!!!!!!! Segfault encountered !!!!!!!\n  File "<unknown>", line 0, in mz_crc32',
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "segfault",
    ),
    ("!!!!!!! TVM encountered a Segfault !!!!!!!", C.PROCESS_CRASH, L.AMBIGUOUS, "segfault"),
    # MPICH's Hydra banner: the raw wait status of a rank killed by a signal.
    (
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 9665 RUNNING AT node-3\n=   EXIT CODE: 139",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "segfault",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # A worker process died with no node death and no memory monitor kill: the raylet's error.
    (
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. To troubleshoot "
        "the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff8c22c88e5dbb3e56 Worker ID: "
        "1efd1674 Node ID: 0d733c08 Worker IP address: 127.0.0.1 Worker port: 43489 Worker PID: 150008 Worker exit "
        "type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file.",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "ray-worker-died",
        False,
        [],
    ),
    (
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\tpid: 26103\n"
        "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Worker exits unexpectedly. Worker exits with an exit code None.",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "ray-worker-died",
        False,
        [],
    ),
    # A user program's general protection fault as the kernel logs it (traps.c): the process's, not the node's.
    (
        "traps: python[4021] general protection fault ip:7f3a5c0b12e4 sp:7ffd2a8c1e50 error:0 in "
        "libc.so.6[7f3a5c000000+195000]",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "segfault",
        False,
        [],
    ),
    # A launcher's child killed by SIGKILL, and a session that hung up.
    (
        "  traceback : Signal 1 (SIGHUP) received by PID 4242",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "srun-task-terminated",
        False,
        [],
    ),
    # A failed glog / abseil CHECK: native code aborts.
    (
        "F1202 10:00:00.123456  4242 gpu_executable.cc:123] Check failed: status.ok() INTERNAL: Failed to launch\n"
        "*** Check failure stack trace: ***",
        C.PROCESS_CRASH,
        L.APPLICATION,
        "native-abort",
        False,
        [],
    ),
    # 128+N exit statuses: a death by signal, the weakest evidence.
    ("Process finished with exit code 139", C.PROCESS_CRASH, L.AMBIGUOUS, "exit-by-signal", False, []),
    ("ERROR: process exited with exit status 134", C.PROCESS_CRASH, L.AMBIGUOUS, "exit-by-signal", False, []),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # PyTorch c10d and elastic.
    ("  traceback : Signal 6 (SIGABRT) received by PID 5151", C.PROCESS_CRASH, L.APPLICATION, "native-abort"),
    ("  exitcode  : -8 (pid: 5151)", C.PROCESS_CRASH, L.AMBIGUOUS, "fatal-signal"),
    # Slurm.
    ("srun: error: host7: task 3: Aborted (core dumped)", C.PROCESS_CRASH, L.AMBIGUOUS, "srun-task-signalled"),
    # Native crashes.
    ("*** SIGSEGV received at time=1893456000 on cpu 12 ***", C.PROCESS_CRASH, L.AMBIGUOUS, "segfault"),
    ("Fatal Python error: Bus error", C.PROCESS_CRASH, L.AMBIGUOUS, "bus-error"),
    ("free(): invalid pointer", C.PROCESS_CRASH, L.APPLICATION, "heap-corruption"),
    ("*** stack smashing detected ***: terminated", C.PROCESS_CRASH, L.APPLICATION, "heap-corruption"),
    (
        "*** Error in `/usr/bin/python3': double free or corruption (!prev): 0x0000000001c3e2a0 ***",
        C.PROCESS_CRASH,
        L.APPLICATION,
        "heap-corruption",
    ),
    (
        "[rank2]: RuntimeError: DataLoader worker (pid 7311) is killed by signal: Aborted. ",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "dataloader-worker-died",
    ),
    (
        "Jan  3 04:05:06 gpu12 kernel: python3[4021]: segfault at 7f00 ip 00007f1c2a3b4c5d sp 00007ffd1e2f3a40 error 4 "
        "in libfoo.so[7f1c2a300000+200000]",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "segfault",
    ),
    (
        "[ 812.3] traps: pt_main_thread[9911] general protection fault ip:7f3a1b2c3d4e sp:7ffc0a0b0c0d error:0 in "
        "libc.so.6[7f3a1b200000+195000]",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "segfault",
    ),
    ("Aborted (core dumped)", C.PROCESS_CRASH, L.APPLICATION, "native-abort"),
    ("terminate called without an active exception", C.PROCESS_CRASH, L.APPLICATION, "native-abort"),
    (
        "mpirun noticed that process rank 3 with PID 5151 on node host7 exited on signal 6 (Aborted).",
        C.PROCESS_CRASH,
        L.APPLICATION,
        "native-abort",
    ),
    # Round 24, gperftools' tcmalloc aborting on a pointer it never handed out (src/tcmalloc.cc, kCrash).
    (
        "src/tcmalloc.cc:283] Attempt to free invalid pointer 0x7f1c2d3e4f50 ",
        C.PROCESS_CRASH,
        L.APPLICATION,
        "heap-corruption",
    ),
    (
        "src/tcmalloc.cc:1943] Attempt to realloc invalid pointer 0x55d0c0ffee00",
        C.PROCESS_CRASH,
        L.APPLICATION,
        "heap-corruption",
    ),
    # Round 30: Composer's launcher naming a rank's signal.
    ("ERROR:composer.cli.launcher:Rank 3 crashed with exit code -7.", C.PROCESS_CRASH, L.AMBIGUOUS, "bus-error"),
    ("ERROR:composer.cli.launcher:Rank 1 crashed with exit code -11.", C.PROCESS_CRASH, L.AMBIGUOUS, "segfault"),
    # Round 33: glibc malloc's own assertion (malloc.c).
    (
        "python: malloc.c:4302: _int_malloc: Assertion `(unsigned long) (size) >= (unsigned long) (nb)' failed.",
        C.PROCESS_CRASH,
        L.APPLICATION,
        "heap-corruption",
    ),
    # Round 38: CPython's faulthandler on Windows, Windows Error Reporting's event and the exit status of a
    # process an unhandled native exception ended (NTSTATUS), unsigned and signed.
    ("Windows fatal exception: access violation", C.PROCESS_CRASH, L.AMBIGUOUS, "windows-fatal-exception"),
    ("Windows fatal exception: int divide by zero", C.PROCESS_CRASH, L.AMBIGUOUS, "windows-fatal-exception"),
    ("Exception code: 0xc0000005", C.PROCESS_CRASH, L.AMBIGUOUS, "windows-crash-status"),
    (
        "subprocess.CalledProcessError: Command '['accelerate', 'launch', 'train.py']' returned non-zero exit status "
        "3221225477.",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "windows-crash-status",
    ),
    ("Process finished with exit code -1073740791 (0xC0000409)", C.PROCESS_CRASH, L.AMBIGUOUS, "windows-crash-status"),
    # Round 40: Dask's nanny seeing its worker die by a crash signal.
    (
        "distributed.nanny - INFO - Worker process 30133 was killed by signal 11",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "ray-worker-died",
    ),
    # Round 45: malloc_printerr's free-list checks, as glibc before 2.26 prints them; LSF's external signal.
    (
        "*** Error in `python3': malloc(): smallbin double linked list corrupted: 0x00007fce87574000 ***",
        C.PROCESS_CRASH,
        L.APPLICATION,
        "heap-corruption",
    ),
    ("free(): double free detected in tcache 2", C.PROCESS_CRASH, L.APPLICATION, "heap-corruption"),
    ("TERM_EXTERNAL_SIGNAL: job killed by a signal external to LSF.", C.PROCESS_CRASH, L.AMBIGUOUS, "exit-by-signal"),
    # Round 46: glibc's assert; Open MPI's signal handler.
    (
        "train: src/loader.c:186: void loader_init(Loader *, int): Assertion `ntok >= need' failed.",
        C.PROCESS_CRASH,
        L.APPLICATION,
        "native-abort",
    ),
    ("[node-3:4242] Signal: Aborted (6)", C.PROCESS_CRASH, L.APPLICATION, "native-abort"),
    # Round 58: vLLM's engine-core process gone.
    (
        "(APIServer pid=83023) ERROR 02-23 18:49:03 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: "
        "EngineCore encountered an issue. See stack trace (above) for the root cause.",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
        "engine-core-died",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BLAMING_NO_NODE: list[str] = [
    # A remote status, a local one, a peer's closed socket, a connect timeout: nobody's node.
    "srun: error: host7: tasks 0-3: Terminated",
]


test_echoes_and_peers_blame_no_node = cases.excerpts_blaming_no_node(BLAMING_NO_NODE)


BENIGN: list[str] = [
    # Grid Engine's soft limits only warn; exit statuses that are no death by signal.
    "Process finished with exit code 0",
    "exit code 1390 written to results.csv",
    # "check failed" in a health summary's prose is not glog's CHECK.
    "  sanity check failed: 0 of 12",
    # Round 38: an exception code faulthandler prints by number (a COM call refused) is not read, nor exit 0.
    "Windows fatal exception: code 0x8001010d",
    "Process finished with exit code 0",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


def test_the_watchdog_teardown_and_crashes_confirm_by_themselves(catalogue: Catalogue):
    for pattern in (
        "nccl-watchdog-timeout",
        "nccl-watchdog-stuck",
        "segfault",
        "bus-error",
        "fatal-signal",
        "native-abort",
        "srun-task-signalled",
    ):
        assert catalogue.onset(pattern) is Onset.CERTAIN, pattern
    for pattern in ("connection-lost", "nccl-remote-error", "store-connect-timeout", "ib-async-port-event"):
        assert catalogue.onset(pattern) is Onset.SUSPECTED, pattern


def test_a_crash_decides_over_its_faulthandler_dump(catalogue, matcher):
    text = "\n".join(
        [
            "Fatal Python error: Aborted",
            "",
            "Thread 0x00007f3a1b7fe700 (most recent call first):",
            '  File "/usr/lib/python3.11/threading.py", line 320 in wait',
        ]
    )
    assert classify_text(catalogue, matcher, text).failure_class is C.PROCESS_CRASH
