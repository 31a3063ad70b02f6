"""The public names of torch that ember lacks, against the reviewed list in api_gaps.toml.

Namespaces compared: ``torch``, ``torch.Tensor``, ``torch.nn``, ``torch.nn.functional``,
``torch.optim``, ``torch.linalg``, ``torch.autograd`` and ``torch.utils.data``, each with its
ember counterpart (``ember``, ``ember.Tensor``, ``ember.nn``, ...).

What counts as public (the rule, applied to ``dir()`` of the torch object):
  * no leading underscore (private names and dunders are out);
  * a module attribute counts only if it is that namespace's own submodule
    (``torch.nn.functional.np`` or ``torch.os`` are imports, not API);
  * objects defined outside torch (``typing.Optional``, ``math``'s functions re-exported by an
    ``import``, ``TYPE_CHECKING``) are imports, not API.

Every remaining name torch has and ember lacks must be listed in ``api_gaps.toml`` under its
namespace with the reason it is absent or the area that brings it; a new gap fails
``test_no_unlisted_gaps``, and an entry that ember now has fails ``test_no_stale_entries``, so
the list stays honest. ``python -m tests.unit.test_api_coverage`` rewrites the file, keeping the
reviewed reasons and proposing one for each new gap (review them before committing).
"""

from __future__ import annotations

import importlib
import inspect
import sys
import tomllib
import types
from pathlib import Path

import pytest

GAPS_FILE = Path(__file__).with_name("api_gaps.toml")
NAMESPACES = ("torch", "torch.Tensor", "torch.nn", "torch.nn.functional", "torch.optim",
              "torch.linalg", "torch.autograd", "torch.utils.data")


def _resolve(path: str):
    """The object at a dotted path (``torch.Tensor``, ``ember.nn.functional``), or None."""
    parts = path.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return None
    for i, part in enumerate(parts[1:], 1):
        if hasattr(obj, part):
            obj = getattr(obj, part)
            continue
        try:
            obj = importlib.import_module(".".join(parts[:i + 1]))
        except ImportError:
            return None
    return obj


def _is_public(namespace: str, name: str, value) -> bool:
    """The rule in the module docstring."""
    if name.startswith("_") or name == "TYPE_CHECKING":
        return False
    if isinstance(value, types.ModuleType):
        return value.__name__ == f"{namespace}.{name}"
    module = getattr(value, "__module__", None) if (inspect.isclass(value) or callable(value)) \
        else None
    return not (isinstance(module, str) and module.split(".")[0] not in ("torch", "builtins"))


def public_names(namespace: str) -> set[str]:
    """The public names of torch's ``namespace``."""
    obj = _resolve(namespace)
    names = set()
    for name in dir(obj):
        try:
            value = inspect.getattr_static(obj, name)
        except AttributeError:
            continue
        if _is_public(namespace, name, value):
            names.add(name)
    return names


def ember_has(namespace: str, name: str) -> bool:
    obj = _resolve("ember" + namespace[len("torch"):])
    return obj is not None and hasattr(obj, name)


def current_gaps() -> dict[str, set[str]]:
    """Per namespace, the public names of torch that ember lacks."""
    return {ns: {n for n in public_names(ns) if not ember_has(ns, n)} for ns in NAMESPACES}


def load_listed() -> dict[str, dict[str, str]]:
    if not GAPS_FILE.exists():
        return {ns: {} for ns in NAMESPACES}
    with GAPS_FILE.open("rb") as f:
        data = tomllib.load(f)
    return {ns: data.get(ns, {}) for ns in NAMESPACES}


GAPS = current_gaps()
LISTED = load_listed()


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_no_unlisted_gaps(namespace):
    """A name torch has, ember lacks and the list does not explain is a new gap."""
    new = sorted(GAPS[namespace] - set(LISTED[namespace]))
    assert not new, (f"{namespace}: {len(new)} public names of torch are missing from ember and "
                     f"from tests/unit/api_gaps.toml: {new}; build them or list them with the "
                     "reason (python -m tests.unit.test_api_coverage proposes entries)")


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_no_stale_entries(namespace):
    """An entry that ember now has (or that torch no longer has) must leave the list."""
    stale = sorted(set(LISTED[namespace]) - GAPS[namespace])
    assert not stale, (f"{namespace}: listed in tests/unit/api_gaps.toml but no longer a gap "
                       f"(ember has it, or torch dropped it): {stale}; remove these entries")


@pytest.mark.parametrize("namespace", NAMESPACES)
def test_every_entry_has_a_reason(namespace):
    empty = sorted(n for n, why in LISTED[namespace].items() if not str(why).strip())
    assert not empty, f"{namespace}: entries without a reason: {empty}"


def test_rule_keeps_api_and_drops_imports():
    """The public-name rule on known cases."""
    top, fn = public_names("torch"), public_names("torch.nn.functional")
    assert {"add", "Tensor", "float32", "nn", "pi"} <= top
    assert not {"os", "sys", "math", "TYPE_CHECKING", "_C"} & top
    assert "relu" in fn and not {"np", "math", "warnings", "Optional", "torch"} & fn
    assert "reshape" in public_names("torch.Tensor")


# -- regenerating the list ----------------------------------------------------------------------
# Proposals only: review them before committing. Exact names first ("namespace:name" or a
# bare name), then substrings (first match wins).
_REMOVED = "removed from torch (calling it raises there); use ember.linalg"
_LU = "LU/LDL factorisations and low-rank methods: not built (ember.linalg has the rest)"
_DTYPES = "a dtype ember does not have (ember has float16/32/64, bfloat16, int8-64, uint8, bool)"
_BUILD = "torch's build metadata or import machinery (ember.__version__ is ember's)"
_DISPATCH = "torch's dispatcher internals and __torch_function__: ember.dispatch has its own"
_DEVICE = "device namespaces: accelerators other than the CPU"
_DOCS = "a documentation string of torch's, not API"
_EXACT = {
    "AVG": "torch.monitor aggregation: not built", "SUM": "torch.monitor aggregation: not built",
    "AggregationType": "torch.monitor aggregation: not built",
    "monitor": "torch.monitor: not built", "LockingLogger": "torch.monitor logging: not built",
    "LoggerBase": "torch.monitor logging: not built",
    "NoopLogger": "torch.monitor logging: not built",
    "ao": "quantization and pruning (torch.ao): not built",
    "sspaddmm": "sparse tensors: ember has only the strided layout",
    "SavedTensor": "saved-tensor hooks are there (ember.autograd.graph); the class is not "
                   "exposed",
    "torch.Tensor:eig": _REMOVED,
    "torch.autograd:DeviceType": "profiler: not built (ember.utils.dispatch traces ops)",
    "ProfilerEvent": "profiler: not built (ember.utils.dispatch traces ops)",
    "functional_datapipe": "DataPipes: deprecated in torch.utils.data",
    "binomial": "random family: not built yet", "poisson": "random family: not built yet",
    "BufferDict": "nn container new in torch 2.13: not built",
    "torch:ModuleDict": "use ember.nn.ModuleDict (torch's top-level copy is not re-exported)",
    "torch:ParameterDict": "use ember.nn.ParameterDict",
    "classes": "TorchScript custom classes", "classproperty": "an internal helper of torch's",
    "compiled_with_cxx11_abi": _BUILD, "USE_GLOBAL_DEPS": _BUILD,
    "USE_RTLD_GLOBAL_WITH_LIBTORCH": _BUILD, "version": _BUILD, "torch_version": _BUILD,
    "conv_tbc": "time-batch-channel convolution: not built (use conv1d)",
    "cpu": _DEVICE + " (torch.cpu stream/device helpers)",
    "DisableTorchFunction": _DISPATCH, "DisableTorchFunctionSubclass": _DISPATCH,
    "overrides": _DISPATCH, "DispatchKey": _DISPATCH, "DispatchKeySet": _DISPATCH,
    "ExcludeDispatchKeyGuard": _DISPATCH, "OperatorInfo": _DISPATCH, "PRIVATE_OPS": _DISPATCH,
    "Tag": _DISPATCH, "has_torch_function": _DISPATCH, "has_torch_function_unary": _DISPATCH,
    "has_torch_function_variadic": _DISPATCH, "handle_torch_function": _DISPATCH,
    "distributions": "torch.distributions: not built",
    "eig": "complex numbers: eig returns complex eigenvectors", "eigvals": "complex numbers",
    "torch:eig": _REMOVED, "lstsq": _REMOVED, "matrix_rank": _REMOVED, "solve": _REMOVED,
    "symeig": _REMOVED, "torch.linalg:lstsq": "least squares: not built yet",
    "torch.linalg:eig": "complex numbers: eig returns complex eigenvectors",
    "householder_product": "Householder products (QR internals): not built",
    "lu": _LU, "lu_solve": _LU, "lu_unpack": _LU, "lu_factor": _LU, "lu_factor_ex": _LU,
    "ldl_factor": _LU, "ldl_factor_ex": _LU, "ldl_solve": _LU, "ormqr": _LU, "lobpcg": _LU,
    "pca_lowrank": _LU, "svd_lowrank": _LU,
    "embedding_bag": "ATen's 4-output embedding_bag: use ember.nn.functional.embedding_bag",
    "embedding_renorm_": "use ember.nn.functional.embedding(max_norm=...)",
    "FatalError": "TorchScript", "JITException": "TorchScript",
    "from_file": "serialization internals: use ember.save/ember.load",
    "get_file_path": "serialization internals", "PyTorchFileReader": "serialization internals",
    "PyTorchFileWriter": "serialization internals",
    "futures": "TorchScript and RPC futures: not built",
    "hash_tensor": "new in torch 2.x: not built yet", "histogramdd": "not built yet",
    "hub": "model hub downloads: out of scope (ember reads checkpoints with ember.load)",
    "igamma": "incomplete gamma: no NumPy kernel; not built",
    "igammac": "incomplete gamma: no NumPy kernel; not built",
    "igamma_": "incomplete gamma: not built", "igammac_": "incomplete gamma: not built",
    "index_reduce": "scatter family: not built yet", "index_reduce_": "not built yet",
    "init_num_threads": "internal hook of torch's thread pool (ember.set_num_threads is there)",
    "jagged": "nested (jagged) tensors: not modelled", "nested": "nested tensors: not modelled",
    "to_padded_tensor": "nested tensors: not modelled", "masked": "masked tensors: not modelled",
    "multiprocessing": "torch.multiprocessing: not built (NOTE [Shared storages] in "
                       "ember/tensor/typed_storage.py)",
    "prepare_multiprocessing_environment": "torch.multiprocessing: not built",
    "native_batch_norm": "ATen's normalisation returning saved statistics: not built",
    "native_group_norm": "ATen's normalisation returning saved statistics: not built",
    "native_norm": "ATen's norm kernel: use ember.linalg.vector_norm",
    "package": "torch.package: out of scope", "quasirandom": "Sobol engine: not built",
    "segment_reduce": "not built yet", "slice_inverse": "not built yet",
    "storage": "module torch.storage: ember.TypedStorage/UntypedStorage are at top level",
    "thread_safe_generator": "not built yet", "types": "module of typing aliases",
    "functional": "module torch.functional: its functions are at ember's top level",
    "get_default_device": _DEVICE, "set_default_device": _DEVICE,
    "get_autocast_gpu_dtype": _DEVICE, "set_autocast_gpu_dtype": _DEVICE,
    "get_autocast_xla_dtype": _DEVICE, "set_autocast_xla_dtype": _DEVICE,
    "is_autocast_xla_enabled": _DEVICE, "set_autocast_xla_enabled": _DEVICE,
    "torch.Tensor:as_subclass": "tensor subclasses: not supported",
    "grad_dtype": "new in torch 2.13: not built",
    "torch.Tensor:index": "ATen's index op: use tensor[...]",
    "indices": "sparse tensors: ember has only the strided layout",
    "values": "sparse tensors: ember has only the strided layout",
    "module_load": "tensor-subclass hook of load_state_dict: not built",
    "name": "named tensors: not modelled", "reinforce": "removed from torch",
    "resize": "deprecated non-in-place resize: use resize_ or reshape",
    "resize_as": "deprecated non-in-place resize: use resize_as_",
    "volatile": "removed from torch (no_grad replaced it)",
    "attention": "module torch.nn.attention (SDPA backend selection): not built",
    "common_types": "module of typing aliases", "factory_kwargs": "an internal helper of torch's",
    "grad": "module of convolution gradient helpers: not built",
    "torch.autograd:graph": "module torch.autograd.graph: not built",
    "intrinsic": "quantization: fused modules for quantized inference",
    "parallel": "data parallelism: ember.distributed is planned",
    "qat": "quantization: quantization-aware training",
    "Container": "deprecated container class of torch's: use ember.nn.Sequential/ModuleList",
    "CrossMapLRN2d": "legacy LRN: not built (use ember.nn.LocalResponseNorm)",
    "LinearCrossEntropyLoss": "new in torch 2.13: not built",
    "LinearCrossEntropyOptions": "new in torch 2.13: not built",
    "linear_cross_entropy": "new in torch 2.13: not built",
    "NLLLoss2d": "deprecated alias of NLLLoss: not built",
    "assert_int_or_pair": "an internal helper of torch's",
    "GRID_SAMPLE_INTERPOLATION_MODES": "an internal table of torch's",
    "GRID_SAMPLE_PADDING_MODES": "an internal table of torch's",
    "grouped_mm": _DEVICE + " (GPU grouped GEMM)", "scaled_mm": _DEVICE + " (float8 GEMM)",
    "scaled_grouped_mm": _DEVICE + " (float8 GEMM)", "ScalingType": _DEVICE + " (float8 GEMM)",
    "SwizzleType": _DEVICE + " (float8 GEMM)",
    "native_channel_shuffle": "at ember's top level; not re-exported in nn.functional",
    "reproducibility_notes": _DOCS, "sparse_support_notes": _DOCS, "tf32_notes": _DOCS,
    "common_notes": _DOCS,
    "torch.nn.functional:Tensor": "a re-export of torch.Tensor (ember.Tensor)",
    "torch.nn.functional:DType": "a typing alias",
    "Muon": "optimizer new in torch 2.9: not built yet",
    "SparseAdam": "sparse tensors: ember has only the strided layout",
    "swa_utils": "stochastic weight averaging helpers: not built yet",
    "swap_in_optimizer_params_and_state": "new in torch 2.13: not built",
    "anomaly_mode": "module torch.autograd.anomaly_mode: ember.autograd.anomaly has it",
    "enforce_grad_layout_policy": "internal switch of torch's engine",
    "forward_ad": "forward-mode AD: not built",
    "is_multithreading_enabled": "ember's engine is single-threaded: not built",
    "set_multithreading_enabled": "ember's engine is single-threaded: not built",
    "is_tensor_like": _DISPATCH, "is_view_replay_enabled": "internal switch of torch's engine",
    "NestedIOFunction": "legacy autograd Function API: use ember.autograd.Function",
    "variable": "module torch.autograd.variable: ember.autograd.Variable is there",
    "DistributedSampler": "distributed: ember.distributed is planned (docs/architecture.md §6)",
}
_PROPOSALS = [
    (("quant", "qint", "QInt", "QUInt", "quint", "qscheme", "q_per_channel", "q_scale",
      "q_zero_point", "per_channel", "per_tensor", "int_repr", "fbgemm", "qparams", "obs_fake"),
     "quantization: no quantized dtypes or kernels"),
    (("complex", "Complex", "cfloat", "cdouble", "chalf", "view_as_real", "polar", "imag"),
     "complex numbers: ember has no complex dtypes"),
    (("sparse", "coo", "csr", "csc", "bsr", "bsc", "crow_indices", "ccol_indices",
      "col_indices", "row_indices", "coalesce", "to_dense", "spmm", "smm", "hspmm", "saddmm",
      "dsmm", "hsmm", "indices_copy", "values_copy", "dense_dim", "sparse_dim"),
     "sparse tensors: ember has only the strided layout"),
    (("float8", "float4", "bits", "bit", "int1", "int2", "int3", "int4", "int5", "int6",
      "int7", "uint"), _DTYPES),
    (("cuda", "cudnn", "miopen", "mkldnn", "xpu", "mtia", "ipu", "vulkan", "Stream", "Event",
      "record_stream", "get_device_module", "AcceleratorError"), _DEVICE),
    (("Script", "jit", "Graph", "Node", "Block", "Value", "Type", "FileCheck", "parse_ir",
      "import_ir_module", "CompilationUnit", "ExecutionPlan", "Argument", "FunctionSchema",
      "AliasDb", "Code", "Gradient", "StaticModule", "Capsule", "BroadcastingList",
      "boolean_dispatch", "Future", "fork", "wait", "parse_schema", "parse_type_comment",
      "merge_type_from_type_comment", "unify_type_list", "ErrorReport", "CallStack",
      "DeepCopyMemoTable", "ConcreteModuleType", "TracingState", "InferredType", "Use",
      "LiteScriptModule", "ThroughputBenchmark", "Benchmark", "IODescriptor"),
     "TorchScript: ember compiles with ember.compile, not TorchScript"),
    (("sym_", "Sym", "fx", "export", "cond", "while_loop", "vmap", "func", "compiler"),
     "compiler: symbolic shapes, FX, export and functorch transforms are not in ember.compile"),
    (("distributed", "DataParallel", "SyncBatchNorm", "DistributedSampler", "rpc", "RRef",
      "batch_norm_"), "distributed: ember.distributed is planned (docs/architecture.md §6)"),
    (("Storage", "StorageContext"),
     "typed storage internals of torch's serialization: ember has TypedStorage, "
     "UntypedStorage and the legacy FloatStorage-style classes"),
    (("DataPipe", "datapipe", "DataChunk", "graph_settings", "runtime_validation",
      "argument_validation", "non_deterministic", "graph"),
     "DataPipes: deprecated in torch.utils.data"),
    (("fft", "stft", "istft", "signal", "windows"),
     "spectral ops: no FFT in ember (the window functions are at the top level)"),
    (("lstm", "gru", "rnn_"), "recurrent cells as ops: use the nn.LSTM/GRU/RNN modules"),
    (("profiler", "Profiler", "kineto", "ProfilerActivity", "DeviceType"),
     "profiler: not built (ember.utils.dispatch traces ops)"),
    (("Mapping", "Sequence", "cast", "overload"), "a typing alias"),
]


def _propose(namespace: str, name: str) -> str:
    reason = _EXACT.get(f"{namespace}:{name}") or _EXACT.get(name)
    if reason:
        return reason
    for keys, reason in _PROPOSALS:
        if any(k in name for k in keys):
            return reason
    return "not built yet"


def write_gaps_file() -> None:
    """Rewrite api_gaps.toml: current gaps, reviewed reasons kept, proposals for new ones."""
    listed = load_listed()
    lines = [
        "# Public names of torch that ember lacks, and why (tests/unit/test_api_coverage.py).",
        "# Each entry: name = \"reason or the area that brings it\". A name ember gains must be",
        "# removed here; a new gap must be built or listed. Regenerate proposals with",
        "# `python -m tests.unit.test_api_coverage` and review them.",
    ]
    for ns, gaps in current_gaps().items():
        lines += ["", f'["{ns}"]']
        for name in sorted(gaps, key=lambda n: (n.lower(), n)):
            reason = listed[ns].get(name) or _propose(ns, name)
            lines.append(f'{name} = "{reason}"' if name.isidentifier() else
                         f'"{name}" = "{reason}"')
    GAPS_FILE.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    write_gaps_file()
    sys.stdout.write(f"wrote {GAPS_FILE}\n")
