"""The communication, launch, node, crash and scheduler catalogue, read from its sources.

Every line here is written for these tests from the format strings of the software
that prints it (NCCL src/transport/net_ib, src/misc/socket.cc, src/os/linux.cc,
src/proxy.cc, src/init.cc; PyTorch c10d ProcessGroupNCCL.cpp, socket.cpp, TCPStore.cpp,
torch/distributed/elastic; gloo transport/tcp; Slurm src/srun, src/slurmd,
src/slurmd/slurmstepd, src/slurmctld; glibc, libstdc++, CPython), with made-up hosts,
numbers and paths. The runbooks name the source of each pattern.
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
    # NCCL results as PyTorch prints them (ncclGetErrorString / getNcclErrorDetailStr).
    (
        "torch.distributed.DistBackendError: NCCL error in: /src/c10d/NCCLUtils.cpp:77, internal error - please "
        "report this issue to the NCCL developers, NCCL version 2.26.2",
        "nccl-internal-error",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: /src/c10d/ProcessGroupNCCL.cpp:1990, invalid argument "
        "(run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5",
        "nccl-invalid-usage",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    ("ncclInvalidArgument: Invalid value for an argument.", "nccl-invalid-usage", C.APP_ERROR, L.APPLICATION),
    (
        "host4:31:40 [2] NCCL WARN Duplicate GPU detected : rank 6 and rank 5 both on CUDA device 41000",
        "nccl-invalid-usage",
        C.APP_ERROR,
        L.APPLICATION,
    ),
    # CUDA errors inside NCCL decided by what the error says (NCCL checks.h CUDACHECK, shm.cc, nvmlwrap.cc).
    (
        "host4:31:40 [2] include/alloc.h:120 NCCL WARN Cuda failure 999 'unknown error'",
        "cuda-unknown-error",
        C.GPU_HARDWARE,
        L.HARDWARE,
    ),
    ("[rank3]: Cuda failure 'unknown error'", "cuda-unknown-error", C.GPU_HARDWARE, L.HARDWARE),
    (
        "host4:31:40 [2] transport/shm.cc:601 NCCL WARN Cuda failure 217 'peer access is not supported between these "
        "two devices'",
        "nccl-setup-refused",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "host4:31:40 [2] misc/nvmlwrap.cc:190 NCCL WARN nvmlDeviceGetHandleByPciBusId() failed: Not Found",
        "nccl-setup-refused",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "host4:31:40 [2] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_modify_qp failed with error No route to host",
        "ib-transport-retry",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: /src/c10d/NCCLUtils.hpp:275, timeout, NCCL version 2.27.3",
        "collective-recv-timeout",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
    ),
    (
        "torch.distributed.DistBackendError: NCCL error in: /src/c10d/ProcessGroupNCCL.cpp:88, remote process exited "
        "or there was a network error, NCCL version 2.23.4",
        "nccl-remote-error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    # IB completions by status (ibv_wc_status), in the three formats NCCL has printed.
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with status=7 opcode=0 len=0 "
        "vendor err 130 (Send)",
        "nccl-ib-completion-error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "host4:31:40 [2] transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.7.0.9<5100> with "
        "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  hca mlx5_4",
        "nccl-ib-completion-error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "NET/IB: Got completion from peer 10.7.0.9<5100> with status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_RECV(128) "
        "vendor_err=129  hca mlx5_4",
        "nccl-ib-completion-unattributed",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB: Got completion from peer 10.7.0.9<5100> with status=IBV_WC_REM_ACCESS_ERR(10) "
        "opcode=IBV_WC_RDMA_WRITE(1) vendor_err=136  hca mlx5_4",
        "nccl-remote-error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with error 5, opcode 0, len 0, "
        "vendor err 249 (Recv)",
        "nccl-remote-error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with status=13 opcode=0 len=0 "
        "vendor err 0 (Send)",
        "nccl-remote-error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with error 4, opcode 2, len 8, "
        "vendor err 81 (Send)",
        "ib-async-qp-event",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
    ),
    # IB async events (ncclIbAsyncThreadMain) and the HCA's health.
    (
        "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 Got non-fatal async event: port error(10)",
        "ib-async-port-event",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 async fatal event: local catastrophic error",
        "ib-async-port-event",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 async fatal event on QP (0x55d0) qpn=1204 handle=7 send_cq=2 "
        "recv_cq=2 state=6 sq_psn=0 rq_psn=0: local work queue catastrophic error",
        "ib-async-qp-event",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "[ 812.44] mlx5_core 0000:c1:00.0: poll_health:760:(pid 0): device's health compromised - reached miss count",
        "ib-async-port-event",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "Infiniband device 'mlx5_6' port 1 status: phys state:\t 3: Disabled",
        "ib-port-down",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "[host9:881:0:881]        ud_ep.c:278  UCX  Fatal: transport error: Endpoint timeout",
        "ib-transport-retry",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    # NCCL sockets, proxy, verbs.
    (
        "host4:31:40 [2] os/linux.cc:362 NCCL WARN ncclOsSocketProgressOpt: Call to recv from 10.7.0.9<5100> failed : "
        "Connection reset by peer",
        "nccl-socket-recv-failed",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "host4:31:40 [2] misc/socket.cc:58 NCCL WARN socketProgress: Connection closed by remote peer host5<41002>",
        "connection-lost",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    (
        "host4:31:40 [2] os/linux.cc:288 NCCL WARN ncclOsSocketStartConnect: connect to 10.7.0.9<5100> returned "
        "Connection refused, exceeded error retry count after 35 attempts",
        "store-connect-timeout",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "host4:31:40 [2] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.7.0.9<5100> failed : No route "
        "to host",
        "store-connect-timeout",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "host4:31:40 [2] proxy.cc:1905 NCCL WARN [Proxy Service 9] Failed to execute operation Connect from rank 9, "
        "retcode 6",
        "nccl-system-error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    (
        "host4:31:40 [2] graph/rings.cc:51 NCCL WARN Error : ring 3 does not loop back to start (5 != 3)",
        "nccl-internal-error",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "host4:31:40 [2] graph/connect.cc:77 NCCL WARN Internal error : tree already has 3 children (4 3 5)",
        "nccl-internal-error",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "host4:31:40 [2] misc/ibvwrap.cc:68 NCCL WARN Call to ibv_create_cq failed with error Cannot allocate memory "
        "errno 12",
        "ib-verbs-call-failed",
        C.COMM_ERROR,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "host4:31:40 [2] transport/p2p.cc:250 NCCL WARN failed to open CUDA IPC handle : 201 invalid device context",
        "nccl-cuda-error",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    # PyTorch c10d and elastic.
    (
        "[rank2]:[E101 10:00:00.000 ProcessGroupNCCL.cpp:832] [Rank 2] To avoid data inconsistency, we are taking the "
        "entire process down.",
        "nccl-watchdog-timeout",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
    ),
    (
        "[PG ID 0 PG GUID 0(default_pg) Rank 1] Heartbeat monitor timed out! Process will be terminated after dumping "
        "debug info. workMetaList_.size()=2",
        "nccl-watchdog-stuck",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
    ),
    (
        "[rank6]:[E101 10:00:01.000 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0(default_pg) Rank 6] Observed flight "
        "recorder dump signal from another rank via TCPStore.",
        "nccl-dump-signal",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
    ),
    (
        "[rank3]:[W101 10:00:02.000 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=31, addr=[host4]:40122, "
        "remote=[host1]:29500): failed to recv, got 0 bytes",
        "connection-lost",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    (
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to "
        "(host1, 29500).",
        "store-connect-timeout",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "[E101 10:00:03.000 socket.cpp:1] [c10d] The client socket has failed to connect to any network address of "
        "(host1, 29500).",
        "store-connect-timeout",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "torch.distributed.DistStoreError: wait timeout after 1800000ms, keys: /default_pg//cuda//0",
        "store-connect-timeout",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 3, for key: "
        "store_based_barrier_key:1 (world_size=16, worker_count=12, timeout=0:30:00)",
        "store-connect-timeout",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
        "rendezvous-error",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "RuntimeError: The server socket has failed to listen on any local network address. port: 29400, useIpv6: "
        "false, code: -98, name: EADDRINUSE, message: address already in use",
        "port-in-use",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "RuntimeError: [/src/third_party/gloo/gloo/transport/tcp/pair.cc:589] Write error [10.7.0.9]:40871: Broken pipe",
        "connection-lost",
        C.COMM_ERROR,
        L.AMBIGUOUS,
    ),
    ("  traceback : Signal 6 (SIGABRT) received by PID 5151", "native-abort", C.PROCESS_CRASH, L.AMBIGUOUS),
    ("  exitcode  : -8 (pid: 5151)", "fatal-signal", C.PROCESS_CRASH, L.AMBIGUOUS),
    # Slurm.
    ("srun: error: host7: task 3: Aborted (core dumped)", "srun-task-signalled", C.PROCESS_CRASH, L.AMBIGUOUS),
    (
        "srun: error: Task launch for StepId=812.0 failed on node host9: Invalid job credential",
        "slurmstepd-node-error",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "slurmstepd: error: *** JOB 812 STEPD TERMINATED ON host9 AT 2030-02-01T10:00:00 DUE TO JOB NOT ENDING WITH "
        "SIGNALS ***",
        "slurmstepd-node-error",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "slurmstepd-host9: error: unable to create step StepId=812.0 cgroup",
        "slurmstepd-node-error",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "slurmstepd: error: execve(): /home/u/run.sh: No such file or directory",
        "mpi-launch-failure",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
    ),
    ("slurmctld: Killing JobId=812 on failed node host9", "slurm-node-failure", C.NODE_FAILURE, L.HARDWARE),
    (
        "slurmstepd: error: *** JOB 812 ON host1 CANCELLED AT 2030-02-01T10:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD "
        "LOG FOR DETAILS ***",
        "slurm-job-node-fail",
        C.NODE_FAILURE,
        L.HARDWARE,
    ),  # names the batch host, not the dead one
    (
        "[2030-02-01T10:00:00.000] error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "
        "check_hw_ib:  No IB port mlx5_0:1 is ACTIVE",
        "ib-port-down",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),  # NHC's check names the IB port (lbnl_hw.nhc check_hw_ib): the network, not a generic health failure
    (
        "[2030-02-01T10:00:00.000] error: Unable to register: Unable to contact slurm controller (connect failure)",
        "slurm-prolog-failure",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "slurmstepd: error: *** JOB 812 ON host1 CANCELLED AT 2030-02-01T10:00:00 DUE to SIGNAL Terminated ***",
        "slurm-cancelled",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
    ),
    (
        "srun: error: Unable to create step for job 812: Memory required by task is not available",
        "slurm-step-config",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
    ),
    (
        "srun: error: Unable to create step for job 812: Requested nodes are busy",
        "mpi-launch-failure",
        C.LAUNCH,
        L.SYSTEM_SOFTWARE,
    ),
    (
        "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)",
        "slurmctld-unreachable",
        C.LAUNCH,
        L.SCHEDULER,
    ),
    (
        "salloc: error: Job submit/allocate failed: Socket timed out on send/recv operation",
        "slurmctld-unreachable",
        C.LAUNCH,
        L.SCHEDULER,
    ),
    # A site's job_submit plugin refusing the request: SLURM_ERROR after the plugin's own message.
    (
        "sbatch: error: Batch job submission failed: Unspecified error",
        "slurm-step-config",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
    ),
    (
        "sbatch: error: Batch job submission failed: Requested GRES option unsupported by configured SelectType plugin",
        "slurm-step-config",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
    ),
    (
        "srun: error: slurm_receive_msgs: [[host9.example]:6818] failed: Socket timed out on send/recv operation",
        "store-connect-timeout",
        C.LAUNCH,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "srun: error: Task launch for StepId=812.0 failed on node host9: Unable to layout tasks on given cpus",
        "slurm-step-config",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
    ),
    (
        "slurmstepd: error: execve(): /var/spool/slurmd/job812/slurm_script: No such file or directory",
        "slurmstepd-node-error",
        C.NODE_FAILURE,
        L.SYSTEM_SOFTWARE,
    ),
    # Native crashes.
    ("*** SIGSEGV received at time=1893456000 on cpu 12 ***", "segfault", C.PROCESS_CRASH, L.AMBIGUOUS),
    ("Fatal Python error: Bus error", "bus-error", C.PROCESS_CRASH, L.AMBIGUOUS),
    ("free(): invalid pointer", "heap-corruption", C.PROCESS_CRASH, L.APPLICATION),
    ("*** stack smashing detected ***: terminated", "heap-corruption", C.PROCESS_CRASH, L.APPLICATION),
    (
        "*** Error in `/usr/bin/python3': double free or corruption (!prev): 0x0000000001c3e2a0 ***",
        "heap-corruption",
        C.PROCESS_CRASH,
        L.APPLICATION,
    ),
    (
        "[rank2]: RuntimeError: DataLoader worker (pid 7311) is killed by signal: Aborted. ",
        "dataloader-worker-died",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
    ),
    (
        "Jan  3 04:05:06 gpu12 kernel: python3[4021]: segfault at 7f00 ip 00007f1c2a3b4c5d sp 00007ffd1e2f3a40 error 4 "
        "in libfoo.so[7f1c2a300000+200000]",
        "segfault",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
    ),
    (
        "[ 812.3] traps: pt_main_thread[9911] general protection fault ip:7f3a1b2c3d4e sp:7ffc0a0b0c0d error:0 in "
        "libc.so.6[7f3a1b200000+195000]",
        "segfault",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
    ),
    ("Aborted (core dumped)", "native-abort", C.PROCESS_CRASH, L.AMBIGUOUS),
    ("terminate called without an active exception", "native-abort", C.PROCESS_CRASH, L.AMBIGUOUS),
    (
        "mpirun noticed that process rank 3 with PID 5151 on node host7 exited on signal 6 (Aborted).",
        "native-abort",
        C.PROCESS_CRASH,
        L.AMBIGUOUS,
    ),
    # Round 3 (issue 11): hangs in the text, the HCA and network interfaces, slurmctld refusals, a bare
    # SIGKILL (runbooks name each source).
    # Hangs the text shows with no timeout behind them.
    (
        "[2031-05-02 08:00:00.000001: W /build/horovod/common/stall_inspector.cc:107] One or more tensors were "
        "submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks "
        "for more than 60 seconds. This may indicate that different ranks are trying to submit different tensors",
        "horovod-stall",
        C.HANG,
        L.AMBIGUOUS,
    ),
    (
        "[2031-05-02 08:05:00.000001: E /build/horovod/common/stall_inspector.cc:105] One or more rank (marked by "
        '"!") is stalled for longer than 300 seconds. Will shutdown.',
        "horovod-stall",
        C.HANG,
        L.AMBIGUOUS,
    ),
    ("Stalled ops:grad_fc1_0 [missing ranks: 1, 6]", "horovod-stall", C.HANG, L.AMBIGUOUS),
    ("    barrier (torch/distributed/distributed_c10d.py:4102)", "stack-dump-in-collective", C.HANG, L.AMBIGUOUS),
    ("    all_reduce (deepspeed/comm/torch.py:155)", "stack-dump-in-collective", C.HANG, L.AMBIGUOUS),
    ("Timeout (0:45:00)!", "stack-dump-in-collective", C.HANG, L.AMBIGUOUS),
    # The flight recorder's own lines are comm_timeout's (the taxonomy names dump signals there).
    (
        "[rank6]:[E0502 08:00:00.000000 ProcessGroupNCCL.cpp:700] Stack trace of the failed collective not found, "
        "potentially because FlightRecorder is disabled.",
        "nccl-dump-signal",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
    ),
    (
        "[rank6]:[E0502 08:00:00.000000 ProcessGroupNCCL.cpp:2150] [PG ID 0 PG GUID 0(default_pg) Rank 6] First PG "
        "on this rank to signal dumping.",
        "nccl-dump-signal",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
    ),
    # The HCA and the node's network interfaces.
    (
        "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0: print_health_info:431:(pid 0): synd 0x7: irisc not "
        "responding",
        "ib-async-port-event",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0: mlx5_health_try_recover:341:(pid 812): health "
        "recovery flow aborted, PCI reads still not working",
        "ib-async-port-event",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0: wait_func:1160:(pid 77): QUERY_Q_COUNTER(0x773) "
        "timeout. Will cause a leak of a command resource",
        "ib-async-port-event",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: NETDEV WATCHDOG: eno2 (igb): transmit queue 1 timed out 5004 ms",
        "netdev-tx-timeout",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: ib1: transmit timeout: latency 12040 msecs",
        "netdev-tx-timeout",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: bond1: now running without any active interface!",
        "netdev-tx-timeout",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: NVRM: GPU at PCI:0000:9d:00: GPU-0f0f: NVLink: fatal error detected on link 7",
        "nvlink-error",
        C.INTERCONNECT,
        L.HARDWARE,
    ),
    (
        "[Jun 01 2031 04:00:00] [ERROR] [tid 901] detected NVSwitch fatal error 12028 on fid 0 on NVSwitch pci bus id "
        "00000000:07:00.0 physical id 2 port 40",
        "nvswitch-sxid-fatal",
        C.INTERCONNECT,
        L.HARDWARE,
    ),
    # slurmctld refusing a submission: its policy and its state are the scheduler's layer.
    ("sbatch: error: QOSMaxSubmitJobPerUserLimit", "slurm-policy-limit", C.SCHEDULER_LIMIT, L.SCHEDULER),
    (
        "srun: error: Unable to allocate resources: Job violates accounting/QOS policy (job submit limit, user's size "
        "and/or time limits)",
        "slurm-policy-limit",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
    ),
    (
        "sbatch: error: Batch job submission failed: Invalid qos specification",
        "slurm-policy-limit",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
    ),
    (
        "srun: error: Unable to allocate resources: Required node not available (down, drained or reserved)",
        "slurm-resources-unavailable",
        C.SCHEDULER_LIMIT,
        L.SCHEDULER,
    ),
    # A request the cluster cannot satisfy at all stays the submission's (application).
    (
        "sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification",
        "slurm-step-config",
        C.SCHEDULER_LIMIT,
        L.APPLICATION,
    ),
    (
        "sbatch: error: Batch job submission failed: Rate limit exceeded, please retry momentarily",
        "slurmctld-unreachable",
        C.LAUNCH,
        L.SCHEDULER,
    ),
    # A worker dead by SIGKILL, nothing else said: the launcher's wrapper, layer unknown.
    ("  traceback : Signal 9 (SIGKILL) received by PID 40412", "launcher-child-failed", C.APP_ERROR, L.APPLICATION),
]


@pytest.mark.parametrize(("line", "pattern", "failure_class", "layer"), FAMILIES)
def test_family_line_decides_by_its_pattern(matcher: Matcher, line, pattern, failure_class, layer):
    hit = matcher.failure(line)
    assert hit is not None, line
    assert (hit.pattern, hit.failure_class, hit.cause_layer) == (pattern, failure_class, layer)


# Lines that look like failures and are not: INFO probes and retries, fallbacks,
# warnings about settings, a port coming back, Slurm tearing down a step after a
# failure named elsewhere, c10d's retried per-address warnings.
BENIGN = [
    "host4:31:40 [2] NCCL INFO NET/Plugin: Could not find: libnccl-net-custom.so. Using internal network plugin.",
    "host4:31:40 [2] NCCL INFO NET/Plugin: Failed to find ncclNetPlugin_v8 symbol.",
    "host4:31:40 [2] NCCL INFO NET/Plugin : dlerror=libnccl-net.so: cannot open shared object file: No such file or "
    "directory No plugin found (libnccl-net.so), using internal implementation",
    "host4:31:40 [2] NCCL INFO ncclOsSocketStartConnect: connect to 10.7.0.9<5100> returned Connection refused, "
    "retrying (3/34) after sleep for 300 msec",
    "host4:31:40 [2] NCCL INFO Call to accept returned Resource temporarily unavailable, retrying",
    "host4:31:40 [2] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, RTR, retrying 1/5 after "
    "10 msec of sleep",
    "host4:31:40 [2] NCCL WARN NET/Socket : NCCL_SOCKET_NTHREADS is greater than the maximum allowed, setting to 16",
    "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 Got non-fatal async event: port active(9)",
    "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 GID table changed",
    "host4:31:40 [2] NCCL INFO [Service thread] Connection closed by localRank 1",
    "[W101 10:00:00.000 socket.cpp:1] [c10d] The IPv6 network addresses of (host1, 29500) cannot be retrieved (gai "
    "error: -2 - Name or service not known).",
    "[I101 10:00:00.000 socket.cpp:1] [c10d] The client socket has connected to [host1]:29500 on [host4]:40122.",
    "slurmstepd: error: *** STEP 812.0 ON host1 CANCELLED AT 2030-02-01T10:00:00 DUE TO TASK FAILURE ***",
    "slurmstepd: error: *** STEP 812.0 ON host1 FAILED (non-zero exit code or other failure mode) ***",
    "srun: Job 812 step creation temporarily disabled, retrying (Requested nodes are busy)",
    "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.",
    "Node host9 now responding",
    "host4:31:40 [2] NCCL INFO Channel 03/0 : 2[2] -> 10[2] [send] via NET/IB/4/GDRDMA",
    # Round 3 (issue 11): informative kernel lines, scancel's errors, py-spy headers, a handled NaN skip.
    "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0 enp193s0f0np0: Link up",
    "Jun  1 04:00:00 cn31 kernel: IPv6: ADDRCONF(NETDEV_CHANGE): ib1: link becomes ready",
    "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0: mlx5_health_try_recover:352:(pid 812): health recovery "
    "succeeded",
    "Jun  1 04:00:00 cn31 kernel: bond1: (slave ens2f1): link status definitely up, 100000 Mbps full duplex",
    # A command the firmware refused: printed for probed features and deliberate reconfigurations.
    "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0: mlx5_cmd_out_err:838:(pid 77): SET_FLOW_TABLE_ROOT(0x92f) "
    "op_mod(0x0) failed, status bad parameter(0x3), syndrome (0x2d3e), err(-22)",
    "Jun  1 04:00:00 cn31 kernel: nvidia-nvswitch1: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 40 egress "
    "non-posted PRIV error (First)",
    # scancel's own errors: no cancel happened.
    "scancel: error: Kill job error on job id 5521: Job/step already completing or completed",
    # py-spy's thread header and the torchrun agent's own wait are not a rank stuck in a collective.
    'Thread 52031 (idle): "MainThread"',
    "    _wait_for_workers (torch/distributed/elastic/agent/server/api.py:905)",
    "    wait (threading.py:331)",
    # A framework that skipped a non-finite step and went on.
    "Found NaN in gradients at step 77, skipping the optimizer step",
]


@pytest.mark.parametrize("line", BENIGN)
def test_benign_look_alikes_are_no_failure(matcher: Matcher, line):
    assert matcher.failure(line) is None, matcher.match(line)


def test_a_tasks_own_exit_is_not_the_nodes(matcher: Matcher):
    hit = matcher.failure("srun: error: host7: task 2: Exited with exit code 1")
    assert hit is None or hit.failure_class not in {C.NODE_FAILURE, C.PROCESS_CRASH, C.INTERCONNECT}


def test_a_graceful_rendezvous_exit_is_no_launch_failure(matcher: Matcher):
    hit = matcher.failure("torch.distributed.elastic.rendezvous.api.RendezvousGracefulExitError")
    assert hit is None or hit.failure_class is not C.LAUNCH


@pytest.mark.parametrize(
    ("text", "node"),
    [
        # The local end of a link failure is the host of NCCL's prefix.
        (
            "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with error 12, opcode 0, len 0, "
            "vendor err 129 (Recv)",
            "host4",
        ),
        ("host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 Got async event : port error", "host4"),
        # Slurm names the failed node, and the node that could not kill its tasks.
        ("srun: error: Node failure on host9", "host9"),
        ("slurmctld: Removing failed node host9 from JobId=812", "host9"),
        (
            "slurmstepd: error: *** JOB 812 STEPD TERMINATED ON host9 AT 2030-02-01T10:00:00 DUE TO JOB NOT RUNNING ***",
            "host9",
        ),
    ],
)
def test_the_named_node_is_the_one_blamed(catalogue: Catalogue, matcher: Matcher, text, node):
    a = classify_text(catalogue, matcher, text)
    assert a.node_implicated and a.nodes == [node]


@pytest.mark.parametrize(
    "text",
    [
        # A remote status, a local one, a peer's closed socket, a connect timeout: nobody's node.
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with status=10 opcode=1 len=0",
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with error 4, opcode 2, len 8",
        "host4:31:40 [2] misc/socket.cc:58 NCCL WARN socketProgress: Connection closed by remote peer host5<41002>",
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s while trying to connect to "
        "(host1, 29500).",
        "srun: error: host7: tasks 0-3: Terminated",
    ],
)
def test_echoes_and_peers_blame_no_node(catalogue: Catalogue, matcher: Matcher, text):
    a = classify_text(catalogue, matcher, text)
    assert not a.node_implicated and a.nodes == []


def test_slurms_reports_of_ends_it_caused_open_no_incident(catalogue: Catalogue):
    for pattern in ("slurm-node-failure", "slurm-time-limit", "slurm-preempted", "slurm-cancelled"):
        assert catalogue.onset(pattern) is Onset.REPORTED, pattern


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


def test_a_verbs_enomem_is_not_a_host_oom(catalogue: Catalogue, matcher: Matcher):
    a = classify_text(
        catalogue,
        matcher,
        "host4:31:40 [2] misc/ibvwrap.cc:68 NCCL WARN Call to ibv_reg_mr failed "
        "with error Cannot allocate memory errno 12",
    )
    assert a.failure_class is C.COMM_ERROR and a.recoverable_by_restart is False


def test_a_link_failure_outranks_the_cascade_it_causes(catalogue: Catalogue, matcher: Matcher):
    text = "\n".join(
        [
            "[rank1]:[E101 10:00:00.000 ProcessGroupNCCL.cpp:818] [Rank 1] Some NCCL operations have failed or timed "
            "out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on "
            "corrupted/incomplete data.",
            "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with status=12 opcode=0 len=0 "
            "vendor err 129 (Recv)",
            "host5:11:12 [0] misc/socket.cc:58 NCCL WARN socketProgress: Connection closed by remote peer host4<41002>",
            "srun: error: host4: tasks 0-7: Terminated",
        ]
    )
    a = classify_text(catalogue, matcher, text)
    assert a.failure_class is C.INTERCONNECT and a.nodes == ["host4"]
