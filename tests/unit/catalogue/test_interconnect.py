"""runbooks/interconnect.yaml: the fabric and the node's network hardware, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: NVIDIA/nccl src/transport/net_ib (completion and async-event WARNs across versions,
p2p.cc, p2p_resiliency.cc), src/misc/ibvwrap.cc, graph/paths.cc (ncclTopoCheckP2p), nvls.cc;
aws-ofi-nccl's completion and data-path errors; libfabric's EFA provider; UCX (ud_ep.c,
ib_mlx5_log.c); rdma-core (infiniband-diags ibstatus / ibstat, libibverbs/examples/devinfo.c) and
perftest; MLNX_OFED's ibdev2netdev; LBNL NHC scripts/lbnl_hw.nhc; Linux
drivers/net/ethernet/mellanox/mlx5/core (health.c, cmd.c, en_main.c, events.c), the mlx5_ib error
CQE dump, drivers/infiniband/core/cache.c, drivers/pci/pcie/aer.c, net/sched/sch_generic.c,
drivers/infiniband/ulp/ipoib/ipoib_main.c, drivers/net/bonding/bond_main.c; NVIDIA's Xid catalogue
for NVLink (nverror.h), the NVSwitch driver's SXids and Fabric Manager; Ascend HCCP's port;
lspci -vv.
"""

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue, Onset
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases
from tests.unit.catalogue._catalogue_cases import XID, xid

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # NCCL's completion WARN before v2.12 has no "from peer"; 12 is IBV_WC_RETRY_EXC_ERR.
    (
        "gpu-a-07:946:988 [0] transport/net_ib.cc:839 NCCL WARN NET/IB : Got completion with error 12, opcode 1, "
        "len 0, vendor err 129",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-completion-error",
    ),
    # 4 LOC_PROT: a local registration problem (ACS), old form.
    (
        "gpu-a-07:946:988 [0] NCCL WARN NET/IB : Got completion with error 4, opcode 0, len 0, vendor err 81",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    # NCCL's async WARN in its v2.21 and v2.23-v2.27 forms.
    (
        "gpu-a-07:311:405 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_4:1 Got async event : port error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "gpu-a-07:311:405 [0] transport/net_ib.cc:171 NCCL WARN NET/IB : mlx5_4:1 Got async error event: port error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "gpu-a-07:311:405 [0] NCCL WARN NET/IB : mlx5_4:1 Got async error event: local work queue catastrophic error",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    # NCCL's ibvwrap.cc since v2.2x: the errno first.
    (
        "gpu-a-07:1:2 [5] misc/ibvwrap.cc:376 NCCL WARN Call to ibv_modify_qp failed with 110 Connection timed out, "
        "on dev mlx5_3:1, curr state INIT, next state RTR, local GID index 3",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # aws-ofi-nccl.
    (
        "gpu-a-07:1:2 [3] NCCL WARN NET/OFI Request 0x7f00aa001000 completed with error. RC: 113. Error: 2 "
        "(UNDELIVERABLE). Completed length: 0",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # The kernel's port and carrier lines.
    (
        "[  309.26] mlx5_core 0000:0a:00.0 mlx5_2: Port: 1 Link DOWN",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    ("mlx5_core 0000:0a:00.1 enp10s0f1np1: Link down", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-port-down"),
    (
        "mlx5_core 0000:0a:00.0: Port module event[error]: module 0, Cable error, Bad or shorted cable/module",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    ("mlx5_2 port 1 ==> ib2 (Down)", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-port-down"),
    ("\t\t\tphys_state:\t\tPOLLING (2)", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-port-down"),
    (
        "ERROR:  nhc:  Health check failed:  check_hw_ib:  No IB port mlx5_2:1 is ACTIVE (LinkUp 200 Gb/sec).",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    (
        "ERROR:  nhc:  Health check failed:  check_hw_eth:  Ethernet device ib0 not detected.",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    # The HCA itself.
    ("Fatal error:  No devices", C.INTERCONNECT, L.HARDWARE, "hca-hardware-fault"),
    ("No IB devices found", C.INTERCONNECT, L.HARDWARE, "hca-hardware-fault"),
    (
        "ibwarn: [4411] main: stat of IB device 'mlx5_8' failed: No such file or directory",
        C.INTERCONNECT,
        L.HARDWARE,
        "hca-hardware-fault",
    ),
    (
        "[ 77.1] mlx5_core 0000:3b:00.0: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, "
        "(Requester ID)",
        C.INTERCONNECT,
        L.HARDWARE,
        "hca-hardware-fault",
    ),
    # nverror.h's NVLink codes without a catalogue row.
    (
        "NVRM: Xid (PCI:0000:3b:00): 155, NVLink software defined error on link 4",
        C.INTERCONNECT,
        L.HARDWARE,
        "xid-nvlink-nonfatal",
    ),
    # aws-ofi-nccl's completion error without the request.
    (
        "gpu-a-01:4242:4300 [0] NCCL WARN NET/OFI Request completed with error. RC: 5. Error: 21 (Unknown error). "
        "Completed length: 0",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # Ascend: the NPU's RoCE port; NPU memory.
    (
        "EJ0002: The network port is down.Suggest: check the optical module of device 2",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "hccp-port-down",
    ),
    # NCCL's NVLS bind failure, over the unhandled-cuda-error line it comes with.
    (
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:93, unhandled cuda error (run with "
        "NCCL_DEBUG=INFO for details), NCCL version 2.29.3\n"
        "ncclUnhandledCudaError: Call to CUDA function failed.\nLast error:\n"
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation cannot "
        "be performed in the present state'.",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "nccl-nvls-bind-failed",
    ),
    # NCCL's IB resiliency (net_ib/p2p_resiliency.cc), both wordings.
    (
        "gpu-7:1234:5678 [1] transport/net_ib/p2p_resiliency.cc:325 NCCL WARN NET/IB: "
        "ncclIbResiliencyHandleDeviceFailure: Device 0 marked as failed. (send comm=0x7f03e8086000)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-device-failed",
    ),
    (
        "NCCL WARN NET/IB: ncclIbResiliencyHandleDeviceFailure: Device 1 marked as failed. Initiating recovery? Yes "
        "(recv comm=0x55d0, outstandingRecovery=0)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-device-failed",
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
    # mlx5_core cmd.c: every command slot held; a completion after its timeout.
    (
        "[ 812.104] mlx5_core 0000:3b:00.0: cmd_work_handler:877:(pid 4411): failed to allocate command entry",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "[ 812.104] mlx5_core 0000:3b:00.0: mlx5_cmd_comp_handler:1600:(pid 0): Command completion arrived after "
        "timeout (entry idx = 3).",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    # UCX's fatal UD timeout and its error CQE with the bad-response syndrome.
    (
        "[1700000000.123456] [gpu-a-01:4411:0]        ud_ep.c:278  Fatal: UD endpoint 0x5581 to <no debug data>: "
        "unhandled timeout error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "[1700000000.123456] [gpu-a-01:4411:0]  ib_mlx5_log.c:177  UCX  ERROR Bad response on mlx5_2:1/RoCE (synd "
        "0x5 vend 0x0 hw_synd 0/0)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # perftest / rdma-core examples, and the kernel's mlx5_ib dump of an error CQE.
    (" Failed status 12: wr_id 0 syndrom 0x81", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-transport-retry"),
    (" Failed status 20: wr_id 7 syndrom 0x0", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-transport-retry"),
    (
        "[ 812.104] infiniband mlx5_1: dump_cqe:272:(pid 0): WC error: 7, Message: bad response",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # aws-ofi-nccl's data path failing on the provider (not storage's EIO).
    (
        "gpu-a-01:4411:4490 [0] NCCL WARN NET/OFI Unable to retrieve completion queue entries. RC: -5, ERROR: "
        "Input/output error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "gpu-a-01:4411:4490 [3] NCCL WARN NET/OFI Unable to post receive buffer for dev 1. RC: -5, ERROR: "
        "Input/output error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "gpu-a-01:4411:4490 [3] NCCL WARN NET/OFI fi_sendmsg (eager) failed; RC: -5, Error: Input/output error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "gpu-a-01:4411:4490 [3] NCCL WARN NET/OFI Unable to read from fi_cq_readerr. RC: -5. Error: Input/output error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # NCCL 2.27+: the CQE error before the status it logs; the status line decides the layer.
    (
        "gpu-07:4100:4180 [3] NCCL WARN NET/IB: Got CQE with error (devIndex=0, req=0x7f3a10, comm=0x7f3b20 (send), "
        "wr_id=140, qp_num=4711)\n"
        "gpu-07:4100:4180 [3] NCCL WARN NET/IB: Got completion from peer 10.0.0.4<54321> with status=IBV_WC_RETRY_EXC_ERR"
        "(12) opcode=IBV_WC_SEND(0) vendor_err=129 localGid ::ffff:10.0.0.7 remoteGids ::ffff:10.0.0.4 hca mlx5_0",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-completion-error",
        True,
        ["gpu-07"],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # CUDA errors inside NCCL decided by what the error says (NCCL checks.h CUDACHECK, shm.cc, nvmlwrap.cc).
    (
        "host4:31:40 [2] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_modify_qp failed with error No route to host",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # IB completions by status (ibv_wc_status), in the three formats NCCL has printed.
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with status=7 opcode=0 len=0 "
        "vendor err 130 (Send)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-completion-error",
    ),
    (
        "host4:31:40 [2] transport/net_ib/p2p.cc:688 NCCL WARN NET/IB: Got completion from peer 10.7.0.9<5100> with "
        "status=IBV_WC_RETRY_EXC_ERR(12) opcode=IBV_WC_SEND(0) vendor_err=129  hca mlx5_4",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-ib-completion-error",
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with error 4, opcode 2, len 8, "
        "vendor err 81 (Send)",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    # IB async events (ncclIbAsyncThreadMain) and the HCA's health.
    (
        "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 Got non-fatal async event: port error(10)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 async fatal event: local catastrophic error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 async fatal event on QP (0x55d0) qpn=1204 handle=7 send_cq=2 "
        "recv_cq=2 state=6 sq_psn=0 rq_psn=0: local work queue catastrophic error",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    (
        "[ 812.44] mlx5_core 0000:c1:00.0: poll_health:760:(pid 0): device's health compromised - reached miss count",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "Infiniband device 'mlx5_6' port 1 status: phys state:\t 3: Disabled",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),
    (
        "[host9:881:0:881]        ud_ep.c:278  UCX  Fatal: transport error: Endpoint timeout",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # Slurm.
    (
        "[2030-02-01T10:00:00.000] error: health_check failed: rc:1 output:ERROR:  nhc:  Health check failed:  "
        "check_hw_ib:  No IB port mlx5_0:1 is ACTIVE",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-port-down",
    ),  # NHC's check names the IB port (lbnl_hw.nhc check_hw_ib): the network, not a generic health failure
    # The HCA and the node's network interfaces.
    (
        "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0: print_health_info:431:(pid 0): synd 0x7: irisc not "
        "responding",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0: mlx5_health_try_recover:341:(pid 812): health "
        "recovery flow aborted, PCI reads still not working",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: mlx5_core 0000:c1:00.0: wait_func:1160:(pid 77): QUERY_Q_COUNTER(0x773) "
        "timeout. Will cause a leak of a command resource",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-async-port-event",
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: NETDEV WATCHDOG: eno2 (igb): transmit queue 1 timed out 5004 ms",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "netdev-tx-timeout",
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: ib1: transmit timeout: latency 12040 msecs",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "netdev-tx-timeout",
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: bond1: now running without any active interface!",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
    ),
    (
        "Jun  1 04:00:00 cn31 kernel: NVRM: GPU at PCI:0000:9d:00: GPU-0f0f: NVLink: fatal error detected on link 7",
        C.INTERCONNECT,
        L.HARDWARE,
        "nvlink-error",
    ),
    (
        "[Jun 01 2031 04:00:00] [ERROR] [tid 901] detected NVSwitch fatal error 12028 on fid 0 on NVSwitch pci bus id "
        "00000000:07:00.0 physical id 2 port 40",
        C.INTERCONNECT,
        L.HARDWARE,
        "nvswitch-sxid-fatal",
    ),
    # WORKFLOW_XID_45: a teardown that names its cause follows that cause.
    (xid(45, "Ch 0000001a caused by previous Xid 149"), C.INTERCONNECT, L.HARDWARE, "xid-nvlink-cleanup"),
    # NVLink: 74 always needs a reset; NVLink5 144-150 by their Fatal flag.
    (
        xid(74, "NVLink: fatal error detected on link 9(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)"),
        C.INTERCONNECT,
        L.HARDWARE,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 74, pid='<unknown>', name=<unknown>, NVLink: Link 2 ...",
        C.INTERCONNECT,
        L.HARDWARE,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 17 (0x02100006 0x0 0x0 0x0 0x0 0x0)",
        C.INTERCONNECT,
        L.HARDWARE,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 149, NETIR_LINK_DOWN Link Fatal XC0 i0 Link 03 (0x00000011 0x0 0x0 0x0 0x0 0x0)",
        C.INTERCONNECT,
        L.HARDWARE,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 150, MSE_WATCHDOG Fatal XC0 i0 Link -1 (0x0 0x0 0x0 0x0 0x0 0x0)",
        C.INTERCONNECT,
        L.HARDWARE,
        "xid-nvlink-fatal",
    ),
    (
        "NVRM: Xid (PCI:0000:4e:00): 149, NETIR_BER_EVENT Nonfatal XC0 i0 Link 05 (0x00004c26 0x1 0x0 0x0 0x0 0x0)",
        C.INTERCONNECT,
        L.HARDWARE,
        "xid-nvlink-nonfatal",
    ),
    (
        "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
        C.INTERCONNECT,
        L.HARDWARE,
        "nvswitch-sxid-fatal",
    ),
    ("Fail - Detected fatal NvSwitch SXID 12028", C.INTERCONNECT, L.HARDWARE, "nvswitch-sxid-fatal"),
    ("GPU 3's NvLink link 11 is currently down", C.INTERCONNECT, L.HARDWARE, "nvlink-error"),
    (
        "Detected 7 CRC Data NvLink errors on GPU 1's NVLink which exceeds threshold of 0",
        C.INTERCONNECT,
        L.HARDWARE,
        "nvlink-error",
    ),
    # Round 24, NVLS in the other versions' words (NVIDIA/nccl src/transport/nvls.cc): v2.29's bind
    # with its place, the map after it, the message wrapped where its size ends, and before v2.27
    # CUCHECK's failure from nvls.cc.
    (
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 4194304 at MC group 7f3a00000001 "
        "offset 0 : CUDA error 401 'the operation cannot be performed in the present state'.",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "nccl-nvls-bind-failed",
    ),
    (
        "Failed to map NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 1 'invalid argument'.",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "nccl-nvls-bind-failed",
    ),
    (
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 8388608 :",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "nccl-nvls-bind-failed",
    ),
    (
        "gpu12:4411:4520 [3] transport/nvls.cc:161 NCCL WARN Cuda failure 801 'operation not supported'",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "nccl-nvls-bind-failed",
    ),
    # Round 27: the local work-completion statuses in any program's words (ibv_wc_status_str), and
    # MPICH's OFI netmod failing on a completion-queue error (ofi_events.c, "**ofid_poll").
    (
        "[ib7:4410:0]    ud_verbs.c:310  Fatal: Send completion (wr_id=0x1A2B with error: local length error",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    (
        "[WARN gpu-12 5512 5512 pollOnce rdma/providers/ib_data_channel_impl.cc:202] pollOnce - channel_id: 2, CQE "
        "error, wr_id=77, status=2 (local QP operation error), opcode=1, byte_len=0, vendor_err=0x3",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    (
        "work completion failed: local protection error (status 4)",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    (
        "MPIDI_OFI_handle_cq_error(1062): OFI poll failed (ofi_events.c:1064:MPIDI_OFI_handle_cq_error:Input/output "
        "error - UNDELIVERABLE)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "MPIDI_OFI_handle_cq_error(593): OFI poll failed (default nic=hsn0: Input/output error)",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # Round 28: Omni-Path's PSM2 (opa-psm2 psm_context.c) and the MPIs' help text after it; the
    # mlx5 InfiniBand driver's error CQE dump (drivers/infiniband/hw/mlx5/cq.c).
    ("opa07.51122PSM2 can't open hfi unit: -1 (err=23)", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "opa-hfi-open-failed"),
    (
        "opa07.51122hfi_userinit_internal: assign_context command failed: Device or resource busy",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "opa-hfi-open-failed",
    ),
    (
        "PSM2 was unable to open an endpoint. Please make sure that the network link is",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "opa-hfi-open-failed",
    ),
    ("opa07.51122PSM2 no hfi units are active (err=23)", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-port-down"),
    (
        "[ 9001.100001] infiniband mlx5_2: mlx5_poll_one:528:(pid 0): Requestor error cqe on cqn 0x41a:",
        C.INTERCONNECT,
        L.AMBIGUOUS,
        "mlx5-error-cqe",
    ),
    # Round 29: UCX's UD timeout before 1.9, librdmacm's failed connection events by name.
    (
        "[gpu4:4410:0]       ud_ep.c:248  Fatal: UD endpoint 0x1a2b3c0: unhandled timeout error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "rdma_client: event: RDMA_CM_EVENT_UNREACHABLE, error: -110",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "conn 0x7f1c : RDMA_CM_EVENT_REJECTED( _not_ expected )",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # Round 30: mlx5 failing to bring the HCA up at probe (mlx5/core/main.c); the local completion
    # statuses in perftest's and mlx5_ib's words; PSM2's shared memory.
    ("[    5.50] mlx5_core 0000:41:00.1: handle_hca_cap failed", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "hca-probe-failed"),
    (
        "[    5.66] mlx5_core 0000:41:00.1: mlx5_load_one failed with error code -22",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "hca-probe-failed",
    ),
    (
        "[    5.67] mlx5_core: probe of 0000:41:00.1 failed with error -22",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "hca-probe-failed",
    ),
    ("  Failed status 4: wr_id 0 syndrom 0x51", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "ib-async-qp-event"),
    ("PSM could not set up shared memory segment (err=9)", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "opa-hfi-open-failed"),
    # UCX's completion errors read by their status: a link one here, a local one the registration's.
    (
        "[1466599688.714393] [gpu30:25196:0] rc_verbs_iface.c:47   UCX  ERROR Send completion with error: bad response error",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "[1466599688.714393] [gpu30:25196:0] rc_verbs_iface.c:47   UCX  ERROR Send completion with error: local protection error",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "ib-async-qp-event",
    ),
    # Round 33: perftest unable to register its buffer (perftest_resources.c).
    ("Couldn't allocate MR", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "ib-async-qp-event"),
    ("Failed to create MR", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "ib-async-qp-event"),
    # Round 35: the QP refused its path as NVSHMEM's IB transport and Mooncake's transfer engine print it.
    (
        "/opt/nvshmem/src/modules/transport/ibrc/ibrc.cpp:418: non-zero status: 110 ibv_modify_qp failed ",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    (
        "E0401 09:00:01.000000 4411 rdma_endpoint.cpp:385] [Handshake] Failed to modify QP to RTR, check mtu, gid, "
        "peer lid, peer qp num: No route to host [113]",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "ib-transport-retry",
    ),
    # Round 39: the IOMMU refusing a device's DMA, Intel VT-d before and after its NO_PASID wording, and AMD-Vi.
    (
        "[1478401.48] DMAR: [DMA Write] Request device [02:00.0] fault addr cd139000 [fault reason 05] PTE Write access "
        "is not set",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "iommu-dma-fault",
    ),
    (
        "[ 51.2] DMAR: [DMA Read NO_PASID] Request device [41:00.0] fault addr 0x7f3c2000 [fault reason 0x06] PTE Read "
        "access is not set",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "iommu-dma-fault",
    ),
    (
        "[ 408.36] mlx5_core 0000:c1:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x002f address=0x24d08000 "
        "flags=0x0000]",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "iommu-dma-fault",
    ),
    # Round 40: perftest's and rc_pingpong's queue pairs refused; the EFA driver refusing admin commands.
    ("Failed to modify QP 122273 to RTR", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "rdma-connect-setup-failed"),
    ("Failed to modify QP to RTS", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "rdma-connect-setup-failed"),
    (" Unable to Connect the HCA's through the link", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "rdma-connect-setup-failed"),
    (
        "[ 812.500101] infiniband efa_0: Failed to process command REG_MR (opcode 7) comp_status 1 err -12",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    (
        "[ 812.500140] infiniband efa_1: Failed to register mr [-12]",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    # Round 40: Slingshot's CXI driver refusing a memory mapping (libcxi, libfabric's cxi provider).
    ("cxil_map: write error", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "cxi-map-failed"),
    (
        "libfabric:53673:1693359811::cxi:mr:cxip_do_map():90<warn> nid001234: cxil_map() failed: -22",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "cxi-map-failed",
    ),
    # Round 41: GPUDirect RDMA's pinning refused; the peer-memory module that will not load.
    (
        "gdrdrv:nvidia_p2p_get_pages(va=704fe0000 len=327680 p2p_token=0 va_space=0) failed [ret = -22]",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    (
        "modprobe: ERROR: could not insert 'nvidia_peermem': Invalid argument",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    # Round 41: a host that has no RDMA stack at all is no HCA fault; an empty device list still is.
    ("No IB devices found", C.INTERCONNECT, L.HARDWARE, "hca-hardware-fault"),
    # Round 42: GPU memory the NIC cannot register (libfabric's EFA provider, gdrcopy, ibv_reg_mr).
    (
        "libfabric:4242:1700000000::efa:mr:efa_mr_reg_impl():849<warn> Unable to register MR of 8388608 bytes: Bad "
        "address, ibv pd: 0x7f0000001000, total mr reg size 1048576, mr reg count 2",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    (
        "libfabric:4242:1700000000::core:core:cuda_gdrcopy_dev_register():320<warn> gdr_pin_buffer failed! error: "
        "Invalid argument ptr: 0x7e0000000000 len: 8388608",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    (
        "ibv_reg_dmabuf_mr (retain) failed: Invalid argument",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    ("ibv_reg_mr(gpu) failed: Bad address", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "rdma-connect-setup-failed"),
    # Round 43: librdmacm finding no RDMA device for the address.
    ("rdma_create_ep: No such device", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "rdma-connect-setup-failed"),
    # Round 45: libfabric's verbs provider resolving an address on no RDMA device.
    (
        "libfabric:4242:1700000000::verbs:ep_ctrl:vrb_create_ep():239<warn> rdma_resolve_addr failed: Cannot assign "
        "requested address (99)",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    # Round 45: Open MPI's openib BTL naming the verbs async event.
    ("  Error number:      10 (IBV_EVENT_PORT_ERR)", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "ib-async-port-event"),
    ("  Error number:      1 (IBV_EVENT_QP_FATAL)", C.INTERCONNECT, L.SYSTEM_SOFTWARE, "ib-async-qp-event"),
    # Round 54: ixgbe refusing its transceiver; networkd losing carrier.
    (
        "ixgbe 0000:04:00.0: failed to load because an unsupported SFP+ or QSFP module type was detected.",
        C.INTERCONNECT,
        L.HARDWARE,
        "hca-hardware-fault",
    ),
    ("systemd-networkd[913]: enp4s0f0: Lost carrier", C.INTERCONNECT, L.INFRASTRUCTURE_NETWORK, "nic-link-down"),
    # Round 58: the peer-memory module built against another RDMA core.
    (
        "[Tue Sep  8 17:16:02 2026] nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -22)",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    (
        "nvidia_peermem: disagrees about version of symbol ib_unregister_peer_memory_client",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "rdma-connect-setup-failed",
    ),
    # Round 59: Blue Gene/L's links that did not train; the LANL clusters' interface failure finder.
    (
        "- 1123614572 2005.08.09 R00-M0-N6-C:J03-U11 2005-08-09-12.09.32.252222 R00-M0-N6-C:J03-U11 RAS KERNEL FATAL "
        "rts tree/torus link training failed: wanted: B C X+ X- Y+ Y- Z+ Z- got: B C X- Y- Z+ Z-",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
    ),
    (
        "365200 node-12 unix.hw net.niff.down 1085075300 1 NIFF: node node-12 detected a failed network connection on "
        "network 10.5.224.0 via interface alt0",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
    ),
    # Round 59: Blue Gene/L's tree network delivering a packet the kernel did not expect (KERNREC).
    (
        "KERNREC 1130529611 2005.10.28 R63-M1-N5-C:J17-U01 2005-10-28-13.00.11.719498 R63-M1-N5-C:J17-U01 RAS KERNEL FATAL Error receiving packet on tree network, expecting type 57 instead of type 3",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "bgl-tree-packet-error",
    ),
    # Round 60: the LANL event log's switch with a link error on its broadcast tree.
    (
        "26281 Interconnect-0T00 switch_module bcast-error 1124878893 1 Link error on broadcast tree "
        "Interconnect-0T00:00:2:1",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


LINES_WITH_ONSET: list[tuple[str, FailureClass, CauseLayer, str, Onset]] = [
    (
        "gpu1:7:9 [0] graph/paths.cc:303 NCCL WARN P2P is disabled between NVLINK connected GPUs 1 and 0. This should "
        "not be the case given their connectivity, and is probably due to a hardware issue. If you still want to "
        "proceed, you can set NCCL_IGNORE_DISABLED_P2P=1.",
        C.INTERCONNECT,
        L.HARDWARE,
        "nvlink-p2p-disabled",
        Onset.SUSPECTED,
    ),
    # Round 40: i40e / ice resetting the port after Malicious Driver Detection stopped a queue.
    (
        "[  901.234567] i40e 0000:3b:00.0: TX driver issue detected, PF reset issued",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "netdev-tx-timeout",
        Onset.SUSPECTED,
    ),
    (
        "i40e 0000:3b:00.0: Malicious Driver Detection event 0x02 on TX queue 6 PF number 0x01 VF number 0x00",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "netdev-tx-timeout",
        Onset.SUSPECTED,
    ),
    # Round 42: Intel's Ethernet drivers losing the link.
    (
        "[Mon Dec  7 04:56:05 2026] igb 0000:02:00.0 eno1: igb: eno1 NIC Link is Down",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
        Onset.SUSPECTED,
    ),
    # Round 45: the node's neighbour or connection-tracking table full.
    (
        "Dec  7 10:00:00 gpu-node-12 kernel: neighbour: arp_cache: neighbor table overflow!",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "host-network-table-full",
        Onset.SUSPECTED,
    ),
    (
        "[104235.156774] nf_conntrack: nf_conntrack: table full, dropping packet",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "host-network-table-full",
        Onset.SUSPECTED,
    ),
    # Round 47: phylib's link down and downshift; the TCP stack out of socket memory.
    (
        "kernel: igc 0000:05:00.0 enp5s0: Link is Down",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
        Onset.SUSPECTED,
    ),
    (
        "Marvell 88E1510 mdio-bus:01: Downshift occurred from negotiated speed 1Gbps to actual speed 100Mbps, check "
        "cabling!",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
        Onset.SUSPECTED,
    ),
    (
        "[88123.456789] TCP: out of memory -- consider tuning tcp_mem",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "host-network-table-full",
        Onset.SUSPECTED,
    ),
    # Round 48: igb / ixgbe finding a transmit queue hung, ixgbe flushing after link loss, ENA's watchdogs.
    (
        "[8988.2] ixgbe 0000:02:00.1 eth3: Detected Tx Unit Hang",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "netdev-tx-timeout",
        Onset.SUSPECTED,
    ),
    (
        "[3402.5] ixgbe 0000:08:00.1 enp8s0f1: initiating reset to clear Tx work after link loss",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
        Onset.SUSPECTED,
    ),
    (
        "kernel: ena 0000:00:06.0 ens6: Keep alive watchdog timeout.",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "netdev-tx-timeout",
        Onset.SUSPECTED,
    ),
    (
        "kernel: ena 0000:00:06.0 ens6: TX hasn't completed, qid 3, index 801. 5100 usecs from last napi execution, "
        "napi scheduled: 1",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "netdev-tx-timeout",
        Onset.SUSPECTED,
    ),
    # Round 48: Solarflare's driver losing the link.
    (
        "[   16.6] sfc 0000:06:00.0 ens1f0: link down",
        C.INTERCONNECT,
        L.INFRASTRUCTURE_NETWORK,
        "nic-link-down",
        Onset.SUSPECTED,
    ),
    # Round 49: tg3 resetting a port whose transmit timed out.
    (
        "kernel: tg3 0000:02:00.0 eno1: transmit timed out, resetting",
        C.INTERCONNECT,
        L.SYSTEM_SOFTWARE,
        "netdev-tx-timeout",
        Onset.SUSPECTED,
    ),
]


test_family_line_decides_by_its_pattern_and_onset = cases.lines_decided(LINES_WITH_ONSET)


NAMED_NODES: list[tuple[str, str]] = [
    # The local end of a link failure is the host of NCCL's prefix.
    (
        "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with error 12, opcode 0, len 0, "
        "vendor err 129 (Recv)",
        "host4",
    ),
    ("host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 Got async event : port error", "host4"),
]


test_the_named_node_is_the_one_blamed = cases.excerpts_blaming_the_named_node(NAMED_NODES)


BLAMING_NO_NODE: list[str] = [
    # A remote status, a local one, a peer's closed socket, a connect timeout: nobody's node.
    "host4:31:40 [2] NCCL WARN NET/IB : Got completion from peer 10.7.0.9<5100> with error 4, opcode 2, len 8",
]


test_echoes_and_peers_blame_no_node = cases.excerpts_blaming_no_node(BLAMING_NO_NODE)


BENIGN: list[str] = [
    # The port or link coming back, and address changes.
    "gpu-a-07:311:405 [0] NCCL WARN NET/IB : mlx5_4:1 Got async error event: port active",
    "gpu-a-07:311:405 [0] NCCL WARN NET/IB : mlx5_4:1 Got async event : client reregistration",
    "[  312.1] mlx5_core 0000:0a:00.0 mlx5_2: Port: 1 Link ACTIVE",
    "[  311.0] mlx5_core 0000:0a:00.0 mlx5_2: Port: 1 Link INIT",
    "mlx5_core 0000:0a:00.1 enp10s0f1np1: Link up",
    "mlx5_core 0000:0a:00.0: Port module event: module 0, Cable plugged",
    "mlx5_2 port 1 ==> ib2 (Up)",
    "\t\t\tphys_state:\t\tLINK_UP (5)",
    # NCCL's own retry of a modify_qp is INFO, with "retrying".
    "gpu-a-07:1:2 [5] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, RTR, retrying 1/5 after "
    "100 msec of sleep",
    # An NVSwitch SXid (not an Xid) that the switch only counts.
    "nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22013, Non-fatal, Link 60 Minion Link DLREQ interrupt",
    # NCCL 2.27-2.28 when NVLS was not forced on: it goes on without NVLS.
    "gpu-7:5120:5120 [3] NCCL INFO Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA "
    "error 801 'operation not supported'. Proceeding without NVLS support.",
    # NCCL's INFO on a NIC it skipped, TensorFlow's check on another status, the NVIDIA module loading.
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>",
    # The SQ interrupt's information lines, and a healthy ibstat port / lspci link.
    "\tPort 1:\n\t\tState: Active\n\t\tPhysical state: LinkUp\n\t\tRate: 400",
    # A program's own warning that it goes on without peer access (kmcuda's), and NCCL's INFO fallback.
    "n1:1:2 [0] NCCL INFO P2P is disabled between connected GPUs 1 and 0. You can repress this message with "
    "NCCL_IGNORE_DISABLED_P2P=1.",
    # libfabric's EFA provider at INFO, and a Grid Engine limit requested.
    "libfabric:7001:1700000001::efa:core:efa_device_construct():120<info> device 0 is rdmap0s6",
    # mlx5_core at load and in recovery; a port coming up; NCCL and libfabric at INFO; a UCX warning.
    "[ 812.104] mlx5_core 0000:3b:00.0: firmware version: 28.39.1002",
    "[ 812.104] mlx5_core 0000:3b:00.0: 252.048 Gb/s available PCIe bandwidth (16.0 GT/s PCIe x16 link)",
    "[ 812.104] mlx5_core 0000:3b:00.0: mlx5_health_try_recover:350:(pid 8): health recovery succeeded",
    "[ 812.104] mlx5_core 0000:01:00.1 mlx5_0: Port: 1 Link ACTIVE",
    "[ 812.104] mlx5_core 0000:3b:00.0 ens1f0np0: Link up",
    "n1:11:12 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0:10.0.0.1<0>",
    "n1:11:12 [0] NCCL INFO NET/IB : Got non-fatal async event: GID table change(18)",
    "n1:11:12 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 4 nics)",
    "libfabric:7001:1700000001::efa:core:efa_device_construct():120<info> device 0 is rdmap0s6",
    "[1700000000.123456] [gpu-a-01:4411:0]    ucp_context.c:1100 UCX  WARN  transport 'rc_mlx5' is not available",
    "port_state:\t\tPORT_ACTIVE (4)",
    # Round 29: the connection manager's events of a connect that works.
    "rdma_client: event: RDMA_CM_EVENT_ESTABLISHED, error: 0",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    "host4:31:40 [2] NCCL INFO Call to ibv_modify_qp failed with 110 Connection timed out, RTR, retrying 1/5 after "
    "10 msec of sleep",
    "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 Got non-fatal async event: port active(9)",
    "host4:31:40 [2] NCCL WARN NET/IB : mlx5_4:1 GID table changed",
    # Informative kernel lines: a link up, an interface ready, a health recovery that succeeded.
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
    "nvidia-nvswitch0: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 12 egress non-posted PRIV error",
    # Round 39: the IOMMU set up at boot.
    "[ 0.61] DMAR: IOMMU enabled",
    "[ 1.02] AMD-Vi: Interrupt remapping enabled",
    # Round 40: a VF's MDD event disables that VF (a VM's), with no reset of the host's port.
    "i40e 0000:3b:00.0: TX driver issue detected on VF 3",
    # Round 42: the link coming back; a registration refused for lack of pinned memory is not the GPUDirect path.
    "[Mon Dec  7 04:56:07 2026] e1000e: eth1 NIC Link is Up 1000 Mbps Full Duplex, Flow Control: Rx/Tx",
    "libfabric:4242:1700000000::efa:mr:efa_mr_reg_impl():800<info> Registered memory at 0x7f0000000000 of size 8192",
    # Round 45: the module's start-up line and the table's size as sysctl prints it.
    "nf_conntrack version 0.5.0 (65536 buckets, 262144 max)",
    "net.ipv4.neigh.default.gc_thresh3 = 16384",
    # Round 47: phylib's link coming up.
    "kernel: igc 0000:05:00.0 enp5s0: Link is Up - 1Gbps/Full - flow control rx/tx",
    # Round 48: ENA's statistics dump after a reset and e1000e's hang report, which that driver has printed on
    # working links.
    "kernel: ena 0000:00:06.0 ens6: tx_timeout: 0",
    "e1000e 0000:00:1f.6 eno1: Detected Hardware Unit Hang:",
    "[   16.7] sfc 0000:06:00.0 ens1f0: link up at 10000Mbps full-duplex (MTU 1500)",
    # Round 54: networkd's carrier back.
    "systemd-networkd[913]: enp4s0f0: Gained carrier",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


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


def test_an_nvlink_xid_is_not_vetoed(matcher: Matcher):
    hit = matcher.failure(XID.format(code=144, text="SAW_MVB Nonfatal XC0 i0 Link 0"))
    assert hit is not None and hit.failure_class is C.INTERCONNECT


def test_a_kernel_network_failure_names_the_node_of_the_syslog(catalogue, matcher):
    a = classify_text(
        catalogue, matcher, "Jun  1 04:00:00 cn31 kernel: NETDEV WATCHDOG: CPU: 7: transmit queue 5 timed out 8192 ms"
    )
    assert (a.failure_class, a.node_implicated, a.nodes) == (C.INTERCONNECT, True, ["cn31"])


def test_the_wc_status_split_holds_in_the_old_completion_form(catalogue, matcher):
    """12 is the link's (the host is named), 5 WR_FLUSH the peer's: the form does not change the split."""
    host = "gpu-b-02:77:90 [1] NCCL WARN NET/IB : Got completion with error {}, opcode 0, len 0, vendor err 244"
    link = classify_text(catalogue, matcher, host.format(12))
    flushed = classify_text(catalogue, matcher, host.format(5))
    assert (link.failure_class, link.nodes) == (C.INTERCONNECT, ["gpu-b-02"])
    assert (flushed.failure_class, flushed.node_implicated) == (C.COMM_ERROR, False)


def test_an_nvls_bind_failure_implicates_the_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "Failed to bind NVLink SHARP (NVLS) Multicast memory of size 2097152 : CUDA error 401 'the operation "
        "cannot be performed in the present state'.",
    )
    assert got.node_implicated


def test_nvlink_p2p_disabled_implicates_the_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "P2P is disabled between NVLINK connected GPUs 1 and 0. This should not be the case given their "
        "connectivity, and is probably due to a hardware issue.",
    )
    assert got.failure_class is C.INTERCONNECT and got.node_implicated


def test_ofi_data_path_eio_is_not_storage(catalogue, matcher):
    # storage's io-error read fi_strerror's "Input/output error" before.
    got = classify_text(
        catalogue,
        matcher,
        "n1:1:2 [0] NCCL WARN NET/OFI Error posting rx buffer. RC: -5, Error: Input/output error",
    )
    assert got.failure_class is C.INTERCONNECT and got.pattern != "io-error"


def test_the_remote_and_local_statuses_stay_out_of_the_link_reading(catalogue, matcher):
    # A flushed WR (5) and the remote access error (10) are not the link's: not ib-transport-retry.
    for text in (
        " Failed status 5: wr_id 0 syndrom 0xf9",
        "infiniband mlx5_1: dump_cqe:272:(pid 0): WC error: 10, Message: remote access error",
    ):
        assert classify_text(catalogue, matcher, text).pattern != "ib-transport-retry"
