"""Round 18 of the catalogue (issue 11): holdout-8's misses, each family from its source.

Each line is a format string of the software that prints it, filled in with made-up hosts, ids
and numbers: PyTorch's RPC timeout and TensorFlow's collective deadline (comm_timeout); MPICH's
MPI_Abort and cuBLAS's refusals (app_error); TensorFlow's retrying file system (storage);
MindSpore's PyNative allocator (gpu_oom); PaddlePaddle's shared memory and HTCondor's memory
hold (host_oom); PyTorch's device count on cudaErrorUnknown (gpu_hardware). Beside them the
neighbour each must not take, and the look-alikes that stay benign.
"""

import pytest

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit._catalogue_cases import assert_benign, assert_decided

C = FailureClass
L = CauseLayer

# (excerpt, class, layer, pattern)
DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # torch/csrc/distributed/rpc kRpcTimeoutErrorStr, with and without the milliseconds (1.6).
    (
        "RuntimeError: RPC ran for more than set timeout (60000 ms) and will now be marked with an error",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "torch-rpc-timeout",
    ),
    (
        "RPC ran for more than set timeout and will now be marked with an error",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "torch-rpc-timeout",
    ),
    # base_collective_executor.cc StartAbort, absl's code name and TF 2.x's older one.
    (
        "2024-01-01 10:00:00.000000: E tensorflow/core/common_runtime/base_collective_executor.cc:249] "
        "BaseCollectiveExecutor::StartAbort DEADLINE_EXCEEDED: Deadline Exceeded",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "tf-collective-deadline",
    ),
    (
        "W tensorflow/core/common_runtime/base_collective_executor.cc:217] BaseCollectiveExecutor::StartAbort "
        "Deadline exceeded: Collective ops timed out",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "tf-collective-deadline",
    ),
    # MPICH's MPI_Abort, bare and under the handler's and Cray's prefixes.
    (
        "application called MPI_Abort(MPI_COMM_WORLD, 1) - process 0",
        C.APP_ERROR,
        L.APPLICATION,
        "mpi-application-abort",
    ),
    (
        "Abort(-1) on node 0 (rank 0 in comm 0): application called MPI_Abort(MPI_COMM_WORLD, -1) - process 0",
        C.APP_ERROR,
        L.APPLICATION,
        "mpi-application-abort",
    ),
    (
        "MPICH ERROR [Rank 3] [job id 1234] [Mon Jan  1 10:00:00 2024] [nid001] - Abort(1) (rank 3 in comm 0): "
        "application called MPI_Abort(MPI_COMM_WORLD, 1) - process 3",
        C.APP_ERROR,
        L.APPLICATION,
        "mpi-application-abort",
    ),
    # cuBLAS's refusals: the enum names, Transformer Engine's and XLA's forms of cublasGetStatusString.
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_NOT_SUPPORTED when calling `cublasLtMatmul( ltHandle, ...)`",
        C.APP_ERROR,
        L.APPLICATION,
        "cublas-status-unsupported",
    ),
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_INVALID_VALUE when calling `cublasGemmEx( handle, opa, opb, m, n, k)`",
        C.APP_ERROR,
        L.APPLICATION,
        "cublas-status-unsupported",
    ),
    (
        "RuntimeError: /TransformerEngine/transformer_engine/common/gemm/cublaslt.cu:412 in function cublas_gemm: "
        "cuBLAS Error: an unsupported value or parameter was passed to the function",
        C.APP_ERROR,
        L.APPLICATION,
        "cublas-status-unsupported",
    ),
    (
        "E external/xla/xla/pjrt/pjrt_stream_executor_client.cc:2716] Execution of replica 0 failed: INTERNAL: "
        "cublasLtMatmul(handle, op_desc, alpha, a, b): the requested functionality is not supported",
        C.APP_ERROR,
        L.APPLICATION,
        "cublas-status-unsupported",
    ),
    (
        "cuBLAS Error: the function requires a feature absent from the device architecture",
        C.APP_ERROR,
        L.APPLICATION,
        "cublas-status-unsupported",
    ),
    # TSL's retrying_utils.cc under GcsFileSystem.
    (
        "Aborted: All 10 retry attempts failed. The last failure: Unavailable: Error executing an HTTP request: "
        "HTTP response code 503 when resuming upload gs://bucket/model.ckpt-100_temp/part-00000",
        C.STORAGE,
        L.STORAGE,
        "tf-filesystem-retries-exhausted",
    ),
    # MindSpore's PyNative allocator, input / output / workspace.
    (
        "RuntimeError: Malloc for kernel output failed, Memory isn't enough, node:Default/Cast-op446",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: Malloc for kernel input failed, Memory isn't enough, node:Default/ReduceMean-op0",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: Malloc for kernel workspace failed, Memory isn't enough, node:Default/MatMul-op12",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
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
    # c10/cuda/CUDAFunctions.cpp device_count_impl on cudaErrorUnknown, raised and warned.
    (
        "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
        "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
    ),
    (
        "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment, "
        "e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be "
        "zero. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)",
        C.GPU_HARDWARE,
        L.HARDWARE,
        "cuda-unknown-error",
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
    # NCCL v2.10-v2.13 socketProgressOpt, as torch's report repeats it after "Last error:".
    (
        "node2: Last error:\nnode2: Net : Call to recv from 10.0.0.2<56843> failed : Connection refused",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-socket-recv-failed",
    ),
    (
        "gpu-3:1234:5678 [0] NCCL WARN Net : Call to recv from 10.0.0.2<43120> failed : Connection reset by peer",
        C.COMM_ERROR,
        L.INFRASTRUCTURE_NETWORK,
        "nccl-socket-recv-failed",
    ),
    # nv.c nvidia_init_module: no GPU probed, or another driver holding them.
    (
        "[188497.595099] NVRM: No NVIDIA graphics adapter probed!",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    (
        "[    4.000001] NVRM: No NVIDIA graphics adapter found!",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    (
        "[188549.976351] NVRM: The NVIDIA probe routine was not called for 3 device(s).",
        C.GPU_HARDWARE,
        L.SYSTEM_SOFTWARE,
        "nvidia-driver-unreachable",
    ),
    # TensorFlow's TF_CHECK_OK on a kernel launch, TF 1.x / 2.x status names.
    (
        "Non-OK-status: GpuLaunchKernel(FillPhiloxRandomKernelLaunch<Distribution>, num_blocks, block_size, 0, "
        "d.stream(), gen, data, size, dist) status: Internal: out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "F tensorflow/core/kernels/segment_reduction_ops_gpu.cu.cc:123] Non-OK-status: GpuLaunchKernel(SortedSegmentKernel"
        "<T, Index>, config.block_count, config.thread_per_block, 0, d.stream()) status: INTERNAL: out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # gloo's transports: GLOO_ERROR_MSG("Read timeout ", peer) with its [file:line] prefix.
    (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:598] Read timeout [10.0.0.2]:41243",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "collective-recv-timeout",
    ),
    (
        "UNKNOWN: Gloo ReduceScatter failed: [external/gloo/gloo/transport/tcp/buffer.cc:72] Read timeout [::1]:38624",
        C.COMM_TIMEOUT,
        L.AMBIGUOUS,
        "collective-recv-timeout",
    ),
    # XLA's argument check (CheckCompatibleShapes).
    (
        "E pjrt_stream_executor_client.cc:2410] Execution of replica 0 failed: INVALID_ARGUMENT: Executable expected "
        "shape f32[512,32,1024]{2,1,0} for argument 0 but got incompatible shape f32[512,256,1024]{2,1,0}",
        C.APP_ERROR,
        L.APPLICATION,
        "tensor-shape-mismatch",
    ),
]


@pytest.mark.parametrize(("text", "cls", "layer", "pattern"), DECIDED)
def test_source_lines_are_decided(catalogue, matcher, text, cls, layer, pattern):
    assert_decided(catalogue, matcher, text, cls, layer, pattern)


def test_cublas_execution_failure_stays_gpu_fault(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasSgemm( handle)`",
    )
    assert got.failure_class is C.GPU_FAULT


def test_the_programs_own_error_outranks_mpi_abort(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)\n"
        "application called MPI_Abort(MPI_COMM_WORLD, 1) - process 0",
    )
    assert got.failure_class is C.GPU_OOM


def test_tf_deadline_outranks_the_collective_abort_that_wraps_it(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "E base_collective_executor.cc:249] BaseCollectiveExecutor::StartAbort DEADLINE_EXCEEDED: Deadline Exceeded\n"
        "UnavailableError: Collective ops is aborted by: Deadline Exceeded",
    )
    assert got.pattern == "tf-collective-deadline"


def test_cuda_unknown_error_implicates_the_node(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env "
        "variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.",
    )
    assert got.node_implicated


def test_a_closed_connection_outranks_gloos_read_timeout(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "process 0: [gloo/transport/tcp/buffer.cc:72] Read timeout [::1]:38624\n"
        "process 1: [gloo/transport/tcp/pair.cc:547] Connection closed by peer [::1]:2475",
    )
    assert got.failure_class is C.COMM_ERROR


BENIGN = [
    # The end of a dataset through the same StartAbort line.
    "W tensorflow/core/common_runtime/base_collective_executor.cc:217] BaseCollectiveExecutor::StartAbort Out of "
    "range: End of sequence",
    "BaseCollectiveExecutor::StartAbort OUT_OF_RANGE: End of sequence",
    # The RPC timeout configured, not hit.
    "rpc_backend_options = TensorPipeRpcBackendOptions(rpc_timeout=180)",
    # A retry that succeeded.
    "I0101 10:00:00.000000 retrying_utils.cc:77] The operation failed and will be automatically retried in 1.2 "
    "seconds (attempt 1 out of 10), caused by: Unavailable: Error executing an HTTP request: HTTP response code 503",
    # HTCondor's request, and MPICH's normal end.
    "request_memory = 16384",
    "MPI_Finalize() called on all ranks",
    # NCCL's INFO on a NIC it skipped, TensorFlow's check on another status, the NVIDIA module loading.
    "NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>",
    "Non-OK-status: GpuLaunchKernel(Kernel, 1, 1, 0, d.stream()) status: INVALID_ARGUMENT: invalid configuration argument",
    "[    5.123456] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023",
    # MindSpore's allocator statistics.
    "[INFO] PRE_ACT(1234,python):2024-01-01-10:00:00.000.000 [mem_dynamic_allocator.cc:100] Malloc for kernel output "
    "size: 1024",
]


@pytest.mark.parametrize("text", BENIGN)
def test_look_alikes_stay_benign(catalogue, matcher, text):
    assert_benign(catalogue, matcher, text)
