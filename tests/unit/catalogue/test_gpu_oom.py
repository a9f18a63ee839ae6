"""runbooks/gpu_oom.yaml: device memory exhausted, in each stack's words.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: PyTorch's CUDA caching allocator and its MPS, XPU, ROCm and torch_npu backends
(NPUCachingAllocator.cpp); NCCL's allocators (alloc.h) and CUDA failures inside NCCL; cuBLAS,
cuSOLVER, cuDNN 9 and cuRAND's allocation statuses; THC's and Triton's forms of "out of memory";
the CUDA samples' check idiom; XLA's GPU and TPU allocators (RESOURCE_EXHAUSTED); TensorFlow's
ROCm allocator (rocm_driver.cc), TF_CHECK_OK on a kernel launch and its BFC allocator; PaddlePaddle,
MindSpore (including its PyNative allocator), Habana's bridge (PT_DEVMEM) and Level Zero;
Marian's and dlib's CUDA checks; MXNet's storage manager (pooled_storage_manager.h); vLLM's memory
checks (gpu_worker, kv_cache_utils.py, v0's KV cache check); DeepSpeed's inference workspace; Graphcore's
Poplar memory allocation errors.
"""

from respawn.attribution.attribute import classify_text
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # vLLM's memory checks.
    (
        "ValueError: Free memory on device cuda:0 (30.12/79.19 GiB) on startup is less than desired GPU memory "
        "utilization (0.9, 71.27 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "ValueError: Free memory on device (12.0/23.5 GiB) on startup is less than desired GPU memory utilization "
        "(0.9, 21.15 GiB).",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is "
        "needed, which is larger than the available KV cache memory (6.25 GiB).",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # THC's forms of two CUDA errors.
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=50 error=2 : out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "luajit: cuda runtime error (2) : out of memory at /tmp/luarocks/cutorch/lib/THC/generic/THCStorage.cu:66",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # NCCL's allocators (src/include/alloc.h): host malloc since v2.4, the CUDA forms since v2.14.
    (
        "gpu-7:5120:5188 [3] include/alloc.h:52 NCCL WARN Failed to CUDA host alloc 33554432 bytes",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "gpu-7:5120:5188 [3] include/alloc.h:128 NCCL WARN Failed to CUDA calloc async 33554432 bytes",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # The CUDA build-mismatch texts in THC's and Triton's forms, and Triton's out of memory.
    ("RuntimeError: Triton Error [CUDA]: out of memory", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    # Ascend: the NPU's RoCE port; NPU memory.
    (
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 0; 60.97 GiB total capacity; 58.10 GiB "
        "already allocated)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    ("EI0011: Failed to allocate [4294967296] bytes of NPU memory.", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    # Marian's and dlib's CUDA checks; TensorFlow's ROCm allocator.
    (
        "[2025-01-21 16:30:37] Error: CUDA error 2 'out of memory' - src/tensors/gpu/device.cu:32: "
        "cudaMalloc(&data_, size)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "  what():  Error while calling cudaMalloc(&data, new_size*sizeof(float)) in file dlib/cuda/gpu_data.cpp:218."
        " code: 2, reason: out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "2019-01-08 19:06:11.303639: E tensorflow/stream_executor/rocm/rocm_driver.cc:601] failed to allocate 7.35G "
        "(7889485824 bytes) from device: hipError_t(1002)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # Device out of memory, per stack (torch_npu's is cuda-oom's).
    (
        "RuntimeError: MPS backend out of memory (MPS allocated: 17.50 GB, other allocations: 1.20 GB, max allowed: "
        "18.13 GB). Tried to allocate 512.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable "
        "upper limit for memory allocations (may cause system failure).",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: XPU out of memory. Tried to allocate 2.00 GiB (GPU 0; 64.00 GiB total capacity; 60.10 GiB "
        "already allocated; 1.20 GiB free; 61.30 GiB reserved in total by PyTorch)",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.97 GiB total capacity; 57.12 GiB "
        "already allocated; 57.12 GiB current active; 1.03 GiB free; 58.10 GiB reserved in total by PyTorch)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "MemoryError: ResourceExhaustedError: Out of memory error on GPU 0. Cannot allocate 1.500000GB memory on GPU "
        "0, 30.500000GB memory has been allocated and available memory is only 512.000000MB.",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "Out of memory error on GPU Virtual Memory 2. Cannot allocate 4.000000GB memory on GPU Virtual Memory 2, "
        "75.000000GB memory has been allocated and available memory is only 1.000000GB.",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: Device(id:0) memory isn't enough and alloc failed, kernel name: "
        "Default/network-WithLossCell/MatMul-op0, alloc size: 2147483648B.",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: [Rank:0] FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::939524096 (896)MB",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "RuntimeError: level_zero backend failed with error: 70000002 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
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
    # Device OOM wordings.
    ("RuntimeError: CUDA driver error: out of memory", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    ("RuntimeError: HIP error: out of memory", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    ("Error out of memory at line 409 in file /src/csrc/ops.cu", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    (
        "RuntimeError: cuDNN Frontend error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    ("RuntimeError: cuRAND error: CURAND_STATUS_ALLOCATION_FAILED", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    ("RuntimeError: Workspace can't be allocated, no enough memory.", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    (
        "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
        "stored in KV cache (9216). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine.",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # XLA's allocators.
    (
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 2.00GiB "
        "(2147483648B) on device ordinal 0",
        C.GPU_OOM,
        L.APPLICATION,
        "tf-xla-oom",
        False,
        [],
    ),
    (
        "RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 8.00G. That was not possible. "
        "There are 3.50G free.",
        C.GPU_OOM,
        L.APPLICATION,
        "tf-xla-oom",
        False,
        [],
    ),
    (
        "XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error. Ran out of memory in memory space "
        "hbm. Used 17.5G of 15.48G hbm.",
        C.GPU_OOM,
        L.APPLICATION,
        "tf-xla-oom",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # OOM in each library's words.
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of "
        "79.1 GiB of which 912.00 MiB is free.",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    ("gpu9:1:2 [4] misc/utils.cc:1 NCCL WARN Cuda failure 2 'out of memory'", C.GPU_OOM, L.APPLICATION, "cuda-oom"),
    (
        "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "cusolver error: CUSOLVER_STATUS_ALLOC_FAILED, when calling `cusolverDnCreate(handle)`",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 2147483648 "
        "bytes.",
        C.GPU_OOM,
        L.APPLICATION,
        "tf-xla-oom",
    ),
    # Round 24: NVLS's set-up failing for the GPU's memory is the memory's (transport/nvls.cc CUCHECK);
    # XLA's ROCm allocator naming the code (rocm_driver.cc); Poplar's graph and streams not fitting.
    (
        "gpu12:4411:4520 [3] transport/nvls.cc:171 NCCL WARN Cuda failure 2 'out of memory'",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "2025-02-11 09:14:27.512301: E external/xla/xla/stream_executor/rocm/rocm_driver.cc:1268] failed to "
        "allocate 61.50GiB (66035122176 bytes) from device: HIP_ERROR_OutOfMemory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "poptorch.poptorch_core.Error: In poptorch/source/CompilerImpl.cpp:412: "
        "'poplar_graph_memory_allocation_error': Out of memory: Cannot fit all variable data onto one or more tiles",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    (
        "terminate called after throwing an instance of 'poplar::stream_memory_allocation_error'",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    # Round 25, MindSpore's memory pool asked for more than the device holds (mem_dynamic_allocator.cc).
    (
        "[ERROR] DEVICE(2231,ffff9c,python):2025-06-02-10:00:01.123.456 [mindspore/ccsrc/backend/common/mem_reuse/"
        "mem_dynamic_allocator.cc:392] AddMemBlockAndMemBufByEagerFree] TotalUsedMemStatistics : 31138512896 plus "
        "alloc size : 4294967296 is more than total mem size : 32212254720.",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    # Round 28: XLA's allocator as TensorFlow's status printed it before absl.
    (
        "Execution of replica 0 failed: Resource exhausted: Failed to allocate request for 64.00MiB (67108864B) on "
        "device ordinal 3",
        C.GPU_OOM,
        L.APPLICATION,
        "tf-xla-oom",
    ),
    # Round 29: CuPy's OutOfMemoryError as Chainer prints it, old and new; Theano's and Aesara's allocator.
    (
        "Exception in main training loop: out of memory to allocate 8388608 bytes (total 12884901888 bytes)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "cupy.cuda.memory.OutOfMemoryError: Out of memory allocating 1,073,741,824 bytes (allocated so far: 15,032,385,536 bytes).",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    (
        "MemoryError: Error allocating 52428800 bytes of device memory (out of memory). Driver report 10485760 bytes free "
        "and 4294967296 bytes total",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # Round 33: ITEX's BFC allocator on an Intel GPU; Metal's out of memory under MLX.
    (
        "E itex/core/devices/bfc_allocator.cc:101] Allocator ran out of memory trying to allocate 10529419660 Bytes "
        "(rounded to 10529419776 Bytes)",
        C.GPU_OOM,
        L.APPLICATION,
        "tf-xla-oom",
    ),
    (
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] Command buffer execution "
        "failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
        C.GPU_OOM,
        L.APPLICATION,
        "accelerator-oom",
    ),
    # Round 34: MXNet's check after a kernel launch (src/operator/mxnet_op.h).
    (
        "mxnet.base.MXNetError: [09:12:44] src/operator/nn/./../mxnet_op.h:680: Check failed: err == cudaSuccess (2 vs. "
        "0) : Name: mxnet_generic_kernel ErrStr:out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # Round 37: Caffe's CUDA_CHECK on cudaErrorMemoryAllocation (device_alternate.hpp).
    (
        "F0101 10:00:00.000000  4410 syncedmem.cpp:71] Check failed: error == cudaSuccess (2 vs. 0)  out of memory",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # Round 38: the allocator's OOM report failing on its NVML query (CUDACachingAllocator.cpp
    # reportProcessMemoryInfo), as on a MIG slice.
    (
        'RuntimeError: NVML_SUCCESS == r INTERNAL ASSERT FAILED at "../c10/cuda/CUDACachingAllocator.cpp":1154, '
        "please report a bug to PyTorch.",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # Round 40: TensorFlow's copy to the GPU whose destination allocation came back empty.
    (
        "tensorflow.python.framework.errors_impl.InternalError: Failed copying input tensor from "
        "/job:localhost/replica:0/task:0/device:CPU:0 to /job:localhost/replica:0/task:0/device:GPU:0 in order to "
        "run _EagerConst: Dst tensor is not initialized.",
        C.GPU_OOM,
        L.APPLICATION,
        "tf-xla-oom",
    ),
    # Round 55: Kaldi's allocator quoting CUDA's OOM.
    (
        "ERROR (nnet3-train[5.5]:AllocateNewRegion():cu-allocator.cc:519) Failed to allocate a memory region of "
        "8088715264 bytes. Memory info: free:15426M CUDA error: 'out of memory'",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
    # Round 60: PyTorch's OutOfMemoryError as Ray re-raises it in the caller.
    (
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=508648, ip=10.1.200.6)",
        C.GPU_OOM,
        L.APPLICATION,
        "cuda-oom",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BENIGN: list[str] = [
    # vLLM's memory report at INFO.
    "(EngineCore_DP0 pid=411) INFO 03-01 10:00:00 [gpu_worker.py:276] Available KV cache memory: 12.50 GiB",
    "INFO 03-01 10:00:00 [kv_cache_utils.py:716] GPU KV cache size: 204,800 tokens",
    # Habana's allocator before it defragments and retries (PT_DEVMEM_DEBUG / PT_DEVMEM_WARN).
    "[DEVMEM] Allocation failed for size::2147483648 (2048)MB",
    "Memory allocation failed. Attempt to defragment memory.",
    # Triton's autotuner skipping a configuration that needs more shared memory (triton/runtime/autotuner.py
    # _bench catches OutOfResources and, when verbose, says so; the exception line with its module is a
    # traceback's, app_error's cuda-build-mismatch since round 24).
    "Autotuning failed with out of resource: shared memory, Required: 262144, Hardware limit: 232448. "
    "Reducing block sizes or `num_stages` may help.",
    # NCCL's INFO on a NIC it skipped, TensorFlow's check on another status, the NVIDIA module loading.
    "Non-OK-status: GpuLaunchKernel(Kernel, 1, 1, 0, d.stream()) status: INVALID_ARGUMENT: invalid configuration argument",
    # MindSpore's allocator statistics.
    "[INFO] PRE_ACT(1234,python):2024-01-01-10:00:00.000.000 [mem_dynamic_allocator.cc:100] Malloc for kernel output "
    "size: 1024",
    # The habanalabs driver's success, MXNet's storage manager chosen, the c10d barrier passed.
    "[10:00:00] src/storage/storage.cc:199: Using Pooled (Naive) StorageManager for GPU",
    # PyTorch's memory summary, TensorFlow's BFC allocator statistics and its "not a failure" warning.
    "|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |",
    "|            CUDA OOMs: 2            |        cudaMalloc retries: 3         |",
    "2024-03-01 10:00:00.000001: I tensorflow/core/common_runtime/bfc_allocator.cc:1101] Sum Total of in-use "
    "chunks: 1.20GiB",
    "2024-03-01 10:00:00.000001: W tensorflow/core/common_runtime/bfc_allocator.cc:245] Allocator (GPU_0_bfc) "
    "ran out of memory trying to allocate 2.20GiB with freed_by_count=0. The caller indicates that this is not a "
    "failure, but may mean that there could be performance gains if more memory were available.",
    # vLLM's KV cache sizing at INFO; DeepSpeed's memory report.
    "INFO 03-01 10:00:00 worker.py:100] # GPU blocks: 12345, # CPU blocks: 2048",
    "INFO 03-01 10:00:00 kv_cache_utils.py:500] GPU KV cache size: 1,234,567 tokens",
    "[2024-03-01 10:00:00,000] [INFO] [utils.py:800:see_memory_usage] MA 1.2 GB         Max_MA 2.3 GB         "
    "CA 3.4 GB         Max_CA 3 GB ",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


def test_paddle_oom_is_the_device_not_the_host(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "MemoryError: ResourceExhaustedError: Out of memory error on GPU 0. "
        "Cannot allocate 1.5GB memory on GPU 0, available memory is only 512MB.",
    )
    assert got.pattern != "host-alloc-failed"


def test_mindspore_cpu_allocator_is_not_the_device(catalogue, matcher):
    got = classify_text(
        catalogue, matcher, "RuntimeError: Memory isn't enough and alloc failed, kernel name: Add-op1, alloc size: 64B."
    )
    assert got.pattern != "accelerator-oom"


def test_sycls_generic_out_of_resources_is_not_an_oom(catalogue, matcher):
    got = classify_text(
        catalogue, matcher, "RuntimeError: Native API failed. Native API returns: -5 (PI_ERROR_OUT_OF_RESOURCES)"
    )
    assert got.failure_class is not C.GPU_OOM


def test_the_ranks_own_error_outranks_hydras_banner(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB (NPU 3; 60.97 GiB total capacity)\n"
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID 4321 RUNNING AT gpu-3\n=   EXIT CODE: 1",
    )
    assert got.failure_class is C.GPU_OOM


def test_the_programs_own_error_outranks_mpi_abort(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB total capacity)\n"
        "application called MPI_Abort(MPI_COMM_WORLD, 1) - process 0",
    )
    assert got.failure_class is C.GPU_OOM


def test_sycl_device_oom_stays_gpu_oom(catalogue, matcher):
    got = classify_text(
        catalogue,
        matcher,
        "RuntimeError: Native API failed. Native API returns: 39 (UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY)",
    )
    assert got.failure_class is C.GPU_OOM


def test_cudnn_device_allocation_is_not_an_app_error(catalogue, matcher):
    # python-exception (app_error) read the RuntimeError before.
    got = classify_text(
        catalogue, matcher, "RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED"
    )
    assert got.failure_class is C.GPU_OOM
