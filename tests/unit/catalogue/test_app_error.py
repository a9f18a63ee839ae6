"""runbooks/app_error.yaml: the program's own errors, read from their sources.

Each line is a source's format string, in the wording of the version a comment names, filled in
with made-up hosts, ids, numbers and paths; beside the failures, the neighbours each pattern must
not take and the look-alikes that must stay benign.

Sources: CPython's built-in exceptions and its traceback; PyTorch's own messages (module.py, ATen,
c10d's ProcessGroupWrapper fingerprint check, FSDP's optimizer-state gather, torch.cuda.nccl's
throw_nccl_error); torchelastic's ChildFailedError block and multiprocessing/api.py; NCCL's results
as PyTorch prints them (ncclGetErrorString / getNcclErrorDetailStr) and its version and size
mismatches (net_socket.cc, bootstrap.cc); the CUDA runtime's cudaError enum (driver_types.h), the
driver's cuGetErrorString texts, THC's and Triton's forms, Marian's and dlib's CUDA checks, HIP's
and SYCL's build mismatches; cuBLAS's status strings (Transformer Engine, XLA); MPICH's MPI_Abort
and Hydra's banner; Megatron-LM's checkpointing.py and LR-scheduler check; DeepSpeed's and
Megatron's checkpoint loaders; Ray's ActorDiedError; XLA's CheckCompatibleShapes; srun's
task-finish report; subprocess's CalledProcessError.
"""

from respawn.attribution.attribute import classify_text
from respawn.attribution.matcher import Matcher
from respawn.attribution.runbook import Catalogue
from respawn.wire.taxonomy import CauseLayer, FailureClass
from tests.unit.catalogue import _catalogue_cases as cases

C = FailureClass
L = CauseLayer


DECIDED: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # Megatron's LR-scheduler check on resume, the assertion's message alone.
    (
        "OptimizerParamScheduler: class input value 0.0003 and checkpointvalue 0.0001 for minimum learning rate "
        "do not match",
        C.APP_ERROR,
        L.APPLICATION,
        "megatron-checkpoint-load",
    ),
    # torchelastic's block with its exception line cut off (with a positive exit code the worker
    # exited itself, launcher-child-exited; by a signal, the wrapper's, launcher-child-failed).
    (
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-03-01_10:00:00\n  host      : gpu-a-01\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : 1 (pid: 4242)",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    (
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-03-01_10:00:00\n  host      : gpu-a-01\n"
        "  rank      : 0 (local_rank: 0)\n  exitcode  : -15 (pid: 4242)",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-failed",
    ),
    # torchelastic: a worker that exited itself with an error status.
    (
        "E0301 10:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 1) "
        "local_rank: 2 (pid: 5151) of binary: /usr/bin/python3",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\ntrain.py FAILED\n"
        "------------------------------------------------------------\nFailures:\n  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\nRoot Cause (first observed failure):\n[0]:\n"
        "  time      : 2026-03-01_10:00:00\n  host      : gpu-a-01\n  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : 2 (pid: 5151)\n  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    # The neighbours each must leave alone.
    # a worker killed by a signal: whoever sent it is not said
    (
        "E0301 10:00:00.000000 4242 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) "
        "local_rank: 2 (pid: 5151) of binary: /usr/bin/python3",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-failed",
    ),
    # the exception itself, when the excerpt has it, decides
    (
        'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    main()\n'
        "KeyError: 'labels'\n"
        "E0301 10:00:00.000000 4242 api.py:874] failed (exitcode: 1) local_rank: 0 (pid: 5151) of binary: python3",
        C.APP_ERROR,
        L.APPLICATION,
        "python-keyerror",
    ),
    # torch.cuda.nccl's NCCL Error N: the two usage results.
    ("RuntimeError: NCCL Error 5: invalid usage", C.APP_ERROR, L.APPLICATION, "nccl-invalid-usage"),
    (
        "RuntimeError: NCCL Error 4: invalid argument (run with NCCL_DEBUG=WARN for details)",
        C.APP_ERROR,
        L.APPLICATION,
        "nccl-invalid-usage",
    ),
    # The CUDA build-mismatch texts in THC's and Triton's forms, and Triton's out of memory.
    (
        "RuntimeError: cuda runtime error (8) : invalid device function at /pytorch/aten/src/THC/THCTensorCopy.cu:204",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    (
        "THCudaCheck FAIL file=/pytorch/aten/src/THC/THCGeneral.cpp line=383 error=7 : too many resources "
        "requested for launch",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    (
        "RuntimeError: Triton Error [CUDA]: too many resources requested for launch",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    # PyTorch's words for cudaErrorInsufficientDriver, raised.
    (
        "RuntimeError: The NVIDIA driver on your system is too old (found version 11020). Please update your GPU "
        "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx "
        "Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your "
        "version of the CUDA driver.",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-setup-error",
    ),
    # Marian's and dlib's CUDA checks; TensorFlow's ROCm allocator.
    (
        "  what():  Error while calling cudaOccupancyMaxPotentialBlockSize(&num_blocks,&num_threads,K) in file "
        "dlib/cuda/cuda_utils.h:186. code: 98, reason: invalid device function",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    # The launcher's verdict and the program's binaries.
    ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", C.APP_ERROR, L.APPLICATION, "mpi-rank-exit"),
    ("RuntimeError: HIP error: invalid device function", C.APP_ERROR, L.APPLICATION, "hip-build-mismatch"),
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
    # XLA's argument check (CheckCompatibleShapes).
    (
        "E pjrt_stream_executor_client.cc:2410] Execution of replica 0 failed: INVALID_ARGUMENT: Executable expected "
        "shape f32[512,32,1024]{2,1,0} for argument 0 but got incompatible shape f32[512,256,1024]{2,1,0}",
        C.APP_ERROR,
        L.APPLICATION,
        "tensor-shape-mismatch",
    ),
    # SYCL's runtime_error under its abort, and the build without the device's target.
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
    # srun's task-finish report of a task's own exit, with --kill-on-bad-exit's echo after it.
    (
        "srun: error: gpu-a-03: task 0: Exited with exit code 1\nsrun: Terminating StepId=812.0\n"
        "srun: error: gpu-a-04: tasks 1-3: Terminated",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    ("srun: error: c7: tasks 0-7: Exited with exit code 2", C.APP_ERROR, L.APPLICATION, "launcher-child-exited"),
    # Round 49: a failed rank's own exception under torch.distributed.checkpoint's CheckpointException decides.
    (
        "CheckpointException ranks:dict_keys([1])\n"
        "Traceback (most recent call last): (RANK 1)\n"
        '  File "/opt/torch/distributed/checkpoint/utils.py", line 212, in all_gather\n'
        "    result = map_fun()\n"
        "OSError: [Errno 28] No space left on device",
        C.STORAGE,
        L.STORAGE,
        "disk-full",
    ),
    # Round 50: rocBLAS's missing library outranks the abort that follows.
    (
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory\n"
        "Aborted (core dumped)",
        C.APP_ERROR,
        L.SYSTEM_SOFTWARE,
        "gpu-library-unusable",
    ),
]


test_source_lines_are_decided = cases.excerpts_decided(DECIDED)


DECIDED_WITH_NODES: list[tuple[str, FailureClass, CauseLayer, str, bool, list[str]]] = [
    # Megatron-LM refusing a checkpoint, then sys.exit() with no exception (checkpointing.py).
    (
        "Unable to load rng state from checkpoint /ckpt/iter_0002000/mp_rank_00/model_optim_rng.pt. Specify "
        "--no-load-rng or --finetune to prevent attempting to load the rng state, exiting ...",
        C.APP_ERROR,
        L.APPLICATION,
        "megatron-checkpoint-load",
        False,
        [],
    ),
    ("Invalid checkpoint version 0.5.", C.APP_ERROR, L.APPLICATION, "megatron-checkpoint-load", False, []),
    (
        ">> '--exit-on-missing-checkpoint' is set but no checkpoint was found under load directory '/ckpt' "
        "(missing metadata/tracker file '/ckpt/latest_checkpointed_iteration.txt'). Exiting with a non-zero status. <<",
        C.APP_ERROR,
        L.APPLICATION,
        "megatron-checkpoint-load",
        False,
        [],
    ),
    # Its legacy loader printing torch.load's exception without its class on the next line:
    # that line decides where it carries the evidence (a truncated file), else the layer stays open.
    (
        "could not load the checkpoint\nInvalid magic number; corrupt file?",
        C.APP_ERROR,
        L.AMBIGUOUS,
        "checkpoint-load-failed",
        False,
        [],
    ),
    # Horovod's shutdown (comm_error's peer-runtime-lost) with the failing rank's own error in the same
    # excerpt: that error decides.
    (
        "[1,3]<stderr>:KeyError: 'labels'\n"
        "[1,0]<stderr>:tensorflow.python.framework.errors_impl.AbortedError: Horovod has been shut down. This was "
        "caused by an exception on one of the ranks or an attempt to allreduce, allgather or broadcast a tensor after "
        "one of the ranks finished execution.",
        C.APP_ERROR,
        L.APPLICATION,
        "python-keyerror",
        False,
        [],
    ),
    # Ranks that disagree: NCCL versions across nodes, and collective sizes.
    (
        "gpu-07:4100:4180 [3] NCCL WARN NCCL version mismatch with remote peer 10.0.0.3<45678> (local: 2.21.5, "
        "remote 2.18.1)",
        C.APP_ERROR,
        L.APPLICATION,
        "nccl-invalid-usage",
        False,
        [],
    ),
    (
        "gpu-07:4100:4180 [3] NCCL WARN NET/Socket : peer 10.0.0.3<45678> message truncated : receiving 1048576 bytes "
        "instead of 65536. If you believe your socket network is in a healthy state, there may be a mismatch in "
        "collective sizes or environment settings (e.g. NCCL_PROTO, NCCL_ALGO) between ranks",
        C.APP_ERROR,
        L.APPLICATION,
        "nccl-invalid-usage",
        False,
        [],
    ),
    (
        "gpu-07:4100:4180 [3] NCCL WARN Message truncated : received 2048 bytes instead of 4096",
        C.APP_ERROR,
        L.APPLICATION,
        "nccl-invalid-usage",
        False,
        [],
    ),
    # The CUDA enum: the program's build or launch configuration, the same on every node.
    (
        "RuntimeError: CUDA error: too many resources requested for launch",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
        False,
        [],
    ),
    ("RuntimeError: CUDA error: invalid device function", C.APP_ERROR, L.APPLICATION, "cuda-build-mismatch", False, []),
    (
        "RuntimeError: CUDA error: invalid configuration argument",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
        False,
        [],
    ),
    (
        "RuntimeError: CUDA error: operation not permitted when stream is capturing",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
        False,
        [],
    ),
    (
        "RuntimeError: CUDA error: CUDA driver is a stub library",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
        False,
        [],
    ),
    (
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION: the provided PTX was compiled with an unsupported toolchain.",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
        False,
        [],
    ),
    (
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_NO_BINARY_FOR_GPU",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
        False,
        [],
    ),
    # torchelastic restarting its workers; the wrapped worker error, when present, decides.
    (
        "[2026-12-02 10:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group FAILED. "
        "2/3 attempts left; will restart worker group",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-failed",
        False,
        [],
    ),
    (
        "[rank1]: KeyError: 'input_ids'\n"
        "[2026-12-02 10:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Worker group "
        "FAILED. 2/3 attempts left; will restart worker group",
        C.APP_ERROR,
        L.APPLICATION,
        "python-keyerror",
        False,
        [],
    ),
    # A launcher's child killed by SIGKILL, and a session that hung up.
    (
        "subprocess.CalledProcessError: Command '['/usr/bin/python', 'train.py']' died with <Signals.SIGKILL: 9>.",
        C.APP_ERROR,
        L.AMBIGUOUS,
        "subprocess-killed",
        False,
        [],
    ),
]


test_source_lines_are_decided_with_their_nodes = cases.excerpts_decided(DECIDED_WITH_NODES)


DECIDED_IMPLICATING: list[tuple[str, FailureClass, CauseLayer, str, bool]] = [
    # NCCL's network layer, by what its WARN says.
    (
        "node01:1234:1240 [0] NCCL WARN NET/IB : req 0/1 tag 7 peer 10.0.0.2<41234> collective mismatch error, "
        "local size 4096 remote size 8192",
        C.APP_ERROR,
        L.APPLICATION,
        "nccl-invalid-usage",
        False,
    ),
]


test_source_lines_are_decided_implicating_the_node_or_not = cases.excerpts_decided(DECIDED_IMPLICATING)


LINES: list[tuple[str, FailureClass, CauseLayer, str]] = [
    # NCCL results as PyTorch prints them (ncclGetErrorString / getNcclErrorDetailStr).
    (
        "torch.distributed.DistBackendError: NCCL error in: /src/c10d/ProcessGroupNCCL.cpp:1990, invalid argument "
        "(run with NCCL_DEBUG=WARN for details), NCCL version 2.21.5",
        C.APP_ERROR,
        L.APPLICATION,
        "nccl-invalid-usage",
    ),
    ("ncclInvalidArgument: Invalid value for an argument.", C.APP_ERROR, L.APPLICATION, "nccl-invalid-usage"),
    (
        "host4:31:40 [2] NCCL WARN Duplicate GPU detected : rank 6 and rank 5 both on CUDA device 41000",
        C.APP_ERROR,
        L.APPLICATION,
        "nccl-invalid-usage",
    ),
    # A worker dead by SIGKILL, nothing else said: the launcher's wrapper, layer unknown.
    ("  traceback : Signal 9 (SIGKILL) received by PID 40412", C.APP_ERROR, L.APPLICATION, "launcher-child-failed"),
    # Program bugs: built-in exceptions opening the line, PyTorch's own messages.
    ("AttributeError: 'NoneType' object has no attribute 'size'", C.APP_ERROR, L.APPLICATION, "python-keyerror"),
    (
        "TypeError: forward() got an unexpected keyword argument 'position_ids'",
        C.APP_ERROR,
        L.APPLICATION,
        "python-keyerror",
    ),
    ("[default3]:IndexError: list index out of range", C.APP_ERROR, L.APPLICATION, "python-keyerror"),
    (
        "AssertionError: num_attention_heads must be divisible by tensor_model_parallel_size",
        C.APP_ERROR,
        L.APPLICATION,
        "python-keyerror",
    ),
    (
        "pytorch_lightning.utilities.exceptions.MisconfigurationException: `configure_optimizers` must include a "
        "monitor",
        C.APP_ERROR,
        L.APPLICATION,
        "python-keyerror",
    ),
    (
        "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after "
        "they have already been freed).",
        C.APP_ERROR,
        L.APPLICATION,
        "python-keyerror",
    ),
    ("RuntimeError: Error(s) in loading state_dict for GPT:", C.APP_ERROR, L.APPLICATION, "tensor-shape-mismatch"),
    (
        '\tMissing key(s) in state_dict: "blocks.0.attn.c_attn.weight", "blocks.0.attn.c_attn.bias".',
        C.APP_ERROR,
        L.APPLICATION,
        "tensor-shape-mismatch",
    ),
    (
        "RuntimeError: shape '[4, 2048, 16, 64]' is invalid for input of size 4194304",
        C.APP_ERROR,
        L.APPLICATION,
        "tensor-shape-mismatch",
    ),
    ("RuntimeError: expected scalar type Half but found Float", C.APP_ERROR, L.APPLICATION, "tensor-device-mismatch"),
    (
        "ImportError: /env/lib/python3.11/site-packages/apex_C.so: undefined symbol: _ZN3c1017RegisterOperatorsD1Ev",
        C.APP_ERROR,
        L.APPLICATION,
        "python-import-error",
    ),
    # Round 24: CUDA's cudaErrorTooManyPeers; Triton's compiler refusing a kernel the GPU cannot hold
    # (triton/runtime/errors.py OutOfResources); a module's exception class named plain Error.
    ("RuntimeError: CUDA error: peer mapping resources exhausted", C.APP_ERROR, L.APPLICATION, "cuda-build-mismatch"),
    (
        "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 233472, Hardware limit: "
        "232448. Reducing block sizes or `num_stages` may help.",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    (
        "poptorch.poptorch_core.Error: In poptorch/source/LowerToPopart.cpp:88: 'std::out_of_range': vector::_M_range_check",
        C.APP_ERROR,
        L.APPLICATION,
        "python-exception",
    ),
    ("_csv.Error: line contains NUL", C.APP_ERROR, L.APPLICATION, "python-exception"),
    # Round 27: Open MPI refusing a call outside init / finalize (errhandler_predefined.c), and
    # Kubeflow's operator reporting a replica's own non-zero exit (pkg/controller.v1).
    (
        "*** The MPI_Comm_free() function was called after MPI_FINALIZE was invoked.",
        C.APP_ERROR,
        L.APPLICATION,
        "mpi-called-outside-init",
    ),
    (
        "*** The MPI_Comm_rank() function was called before MPI_INIT was invoked.",
        C.APP_ERROR,
        L.APPLICATION,
        "mpi-called-outside-init",
    ),
    (
        "INFO[0412] Pod: ml.bert-large-worker-3 exited with code 2  job=ml.bert-large replica-type=worker",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    # Round 36: an exception Ray re-raises in the caller under its RayTaskError(cause) class (exceptions.py).
    (
        "ray.exceptions.RayTaskError(ValueError): ray::Trainer.fit() (pid=4410, ip=10.0.0.7, "
        "repr=<train.Trainer object at 0x7f00deadbeef>)",
        C.APP_ERROR,
        L.APPLICATION,
        "python-exception",
    ),
    # Round 37: dmlc-core's LOG(FATAL) as MXNet prints it before it throws (logging.h).
    (
        "[10:00:00] /build/mxnet/3rdparty/dmlc-core/include/dmlc/logging.h:263: [10:00:00] src/io/iter_image_recordio.cc:"
        "211: Check failed: batch_size > 0",
        C.APP_ERROR,
        L.APPLICATION,
        "dmlc-log-fatal",
    ),
    # Round 40: Dynamo's exceptions whose class names end in neither Error nor Exception.
    (
        "torch._dynamo.exc.FailOnRecompileLimitHit: recompile_limit reached with fullgraph=True. Excessive "
        "recompilations can degrade performance due to the compilation overhead of each recompilation.",
        C.APP_ERROR,
        L.APPLICATION,
        "python-exception",
    ),
    (
        "torch._dynamo.exc.Unsupported: call_function BuiltinVariable(open) [ConstantVariable()] {}",
        C.APP_ERROR,
        L.APPLICATION,
        "python-exception",
    ),
    # Round 42: cudaErrorSymbolNotFound, a kernel the loaded module does not hold.
    (
        "2026-12-07 10:00:00.711470: E external/org_tensorflow/tensorflow/stream_executor/cuda/cuda_driver.cc:682] "
        'failed to get PTX kernel "fusion_3" from module: CUDA_ERROR_NOT_FOUND: named symbol not found',
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    ("RuntimeError: CUDA error: named symbol not found", C.APP_ERROR, L.APPLICATION, "cuda-build-mismatch"),
    # Round 43: gpu-burn unable to load its compare kernel.
    ('Couldn\'t init a GPU test: Error in "load module":', C.APP_ERROR, L.APPLICATION, "cuda-build-mismatch"),
    # Round 44: cuDNN older than TensorFlow's build; Intel's CPU check; glibc's kernel floor.
    (
        "2026-12-07 10:00:00.016734: E tensorflow/stream_executor/cuda/cuda_dnn.cc:352] Loaded runtime CuDNN library: "
        "8.0.5 but source was compiled with: 8.1.0.  CuDNN library needs to have matching major version",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-setup-error",
    ),
    (
        "Please verify that both the operating system and the processor support Intel(R) MOVBE, F16C, FMA, BMI, LZCNT "
        "and AVX2 instructions.",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-setup-error",
    ),
    ("  FATAL: kernel too old", C.APP_ERROR, L.APPLICATION, "cuda-setup-error"),
    # Round 45: cuDNN failing to start, as TensorFlow and a glog check report it; Warp's CUDA error 900.
    (
        "  (0) Unknown: Failed to get convolution algorithm. This is probably because cuDNN failed to initialize, so "
        "try looking to see if a warning log message was printed above.",
        C.APP_ERROR,
        L.SYSTEM_SOFTWARE,
        "cudnn-not-initialized",
    ),
    (
        "F1207 10:00:00.834202  2944 conv_op.cc:86] Check failed: CUDNN_STATUS_SUCCESS == status (0 vs. 1) Cudnn "
        "Error: CUDNN_STATUS_NOT_INITIALIZED",
        C.APP_ERROR,
        L.SYSTEM_SOFTWARE,
        "cudnn-not-initialized",
    ),
    (
        "Warp CUDA error 900: operation not permitted when stream is capturing (in function wp_cuda_unload_module, "
        "warp/native/warp.cu:3947)",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-build-mismatch",
    ),
    # Round 45: PaddlePaddle's launcher finding a trainer gone.
    (
        "ERROR 2026-12-07 10:00:00,680 launch_utils.py:604] ABORT!!! Out of all 8 trainers, the trainer process with "
        "rank=[5] was aborted. Please check its log.",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    # Round 47: XLA without a loadable NCCL; Hydra's report that the job raised.
    (
        "NCCL operation ncclGetUniqueId(&id) failed: Unable to load NCCL library. Multi-GPU collectives will not work.",
        C.APP_ERROR,
        L.APPLICATION,
        "cuda-setup-error",
    ),
    (
        "Error executing job with overrides: ['trainer.devices=8', 'model.micro_batch_size=4']",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
    # Round 49: cuDNN's frontend finding no engine for a convolution (gpu-library-unusable since the review).
    (
        "RuntimeError: FIND was unable to find an engine to execute this computation",
        C.APP_ERROR,
        L.SYSTEM_SOFTWARE,
        "gpu-library-unusable",
    ),
    # Round 49: torch.distributed.checkpoint naming the ranks whose save failed.
    ("CheckpointException ranks:dict_keys([0, 3])", C.APP_ERROR, L.APPLICATION, "python-exception"),
    # Round 50: GPU math libraries the node's stack cannot run.
    (
        "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary_gfx1103.dat: No such file or directory",
        C.APP_ERROR,
        L.SYSTEM_SOFTWARE,
        "gpu-library-unusable",
    ),
    ("RuntimeError: cuFFT error: CUFFT_INTERNAL_ERROR", C.APP_ERROR, L.SYSTEM_SOFTWARE, "gpu-library-unusable"),
    # Round 51: Open MPI's report of MPI_Abort.
    (
        "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD",
        C.APP_ERROR,
        L.APPLICATION,
        "mpi-application-abort",
    ),
    # Round 52: Keras ending fit() on an exhausted dataset.
    (
        "WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your dataset or "
        "generator can generate at least `steps_per_epoch * epochs` batches (in this case, 28100 batches).",
        C.APP_ERROR,
        L.APPLICATION,
        "keras-input-exhausted",
    ),
    # Round 54: the kubelet restarting a container its probe fails.
    (
        "Normal  Killing  8s (x2 over 44s)  kubelet  Container nginx failed startup probe, will be restarted",
        C.APP_ERROR,
        L.APPLICATION,
        "k8s-probe-restart",
    ),
    # Round 58: TensorFlow's checkpoint reader without a file for the name it is given.
    (
        "W tensorflow/core/framework/op_kernel.cc:975] Not found: Unsuccessful TensorSliceReader constructor: Failed "
        "to find any matching files for model.ckpt-577569",
        C.APP_ERROR,
        L.AMBIGUOUS,
        "checkpoint-load-failed",
    ),
    # Round 59: Open MPI's launcher naming the first process that exited non-zero.
    (
        "mpiexec detected that one or more processes exited with non-zero status, thus causing",
        C.APP_ERROR,
        L.APPLICATION,
        "launcher-child-exited",
    ),
]


test_family_line_decides_by_its_pattern = cases.lines_decided(LINES)


BENIGN: list[str] = [
    # Checkpoint loaders saying they start fresh: Megatron's print_rank_0 and DeepSpeed's warning.
    "WARNING: could not find the metadata file /ckpt/latest_checkpointed_iteration.txt",
    "[2024-05-01 10:00:00,000] [WARNING] [engine.py:2780:load_checkpoint] Unable to find latest file at "
    "/ckpt/latest, if trying to load latest checkpoint please ensure this file exists or pass an explicit "
    "checkpoint tag when loading a checkpoint.",
    # CUDA texts that are not errors.
    "CUDA driver version: 12040, runtime version: 12010",
    # torchelastic's healthy lines and the warning it prints while shutting workers down.
    "[2026-12-02 10:00:00,000] torch.distributed.elastic.agent.server.api: [INFO] [default] Rendezvous complete "
    "for workers. Result:",
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 4242 closing signal SIGTERM",
    # A subprocess that exited normally.
    "Command '['python', 'prep.py']' finished with exit status 0.",
    # torch.cuda.is_available()'s warning: the program goes on on the CPU.
    "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:128: UserWarning: CUDA initialization: The "
    "NVIDIA driver on your system is too old (found version 11020). Please update your GPU driver",
    # HTCondor's request, and MPICH's normal end.
    "MPI_Finalize() called on all ranks",
    # Round 24: Inductor's autotuning dropping a Triton config too big for the GPU and going on.
    "No valid triton configs. OutOfResources: out of resource: shared memory, Required: 110592, Hardware limit: "
    "101376. Reducing block sizes or `num_stages` may help.. Ignoring this choice.",
    # Round 27: the operator's report of a replica that finished.
    "INFO[0412] Pod: ml.bert-large-worker-3 exited with code 0  job=ml.bert-large replica-type=worker",
]


test_look_alikes_stay_benign = cases.look_alikes_staying_benign(BENIGN)


NO_FAILURE: list[str] = [
    # Warnings that name an exception or an error.
    "/env/lib/python3.11/site-packages/transformers/trainer.py:80: FutureWarning: TypeError will be raised "
    "for positional `tokenizer`",
    "/env/lib/python3.11/site-packages/mmengine/runner/checkpoint.py:40: UserWarning: Error(s) in loading "
    "state_dict for Net: Missing key(s) in state_dict",
    "/env/lib/python3.11/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs have "
    "requires_grad=True. Gradients will be None",
    "  warnings.warn(",
    # Round 54: a readiness probe's failure takes the pod out of service only.
    "Warning  Unhealthy  8s (x6 over 48s)  kubelet  Readiness probe failed: HTTP probe failed with statuscode: 503",
]


test_look_alikes_are_no_failure = cases.look_alikes_matching_no_failure(NO_FAILURE)


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


def test_an_actor_that_died_of_its_own_exception_is_not_a_dead_process(catalogue, matcher):
    """Ray's ActorDiedError for an exception in the actor's constructor is the program's."""
    got = classify_text(
        catalogue,
        matcher,
        "ray.exceptions.ActorDiedError: The actor died because of an error raised in its creation task, "
        "ray::Trainer.__init__() (pid=3, ip=10.0.0.1)",
    )
    assert got.failure_class is C.APP_ERROR


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
