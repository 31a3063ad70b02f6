"""Reading side of the checkpoint format: what PyTorch's pickle globals mean in ember.

``DEFAULT_GLOBALS`` maps each global that a weights-only load may resolve (PyTorch's default
allowlist, minus what ember cannot represent) to ember's own object. The rebuild functions
validate every size, stride and offset against the storage they index before making a tensor
(no read outside a record is ever possible), and raise ``CheckpointError`` otherwise.
``resolve_global`` is the single gate every GLOBAL goes through; it refuses before anything
runs.
"""

from __future__ import annotations

import _compat_pickle
import codecs
from collections import Counter, OrderedDict

from ember.core import dtype as dt
from ember.core.device import META, Device
from ember.memory.storage import Storage
from ember.serialization._common import (
    STORAGE_DTYPES,
    TORCH_DTYPES,
    UNKNOWN_STORAGES,
    UNKNOWN_TORCH_DTYPES,
    CheckpointError,
    UnpicklingError,
    unknown_dtype,
    user_allowed_globals,
)
from ember.serialization._torch_modules import allowlisted_equivalent, ember_name
from ember.tensor import Size, Tensor, make_tensor
from ember.tensor.parameter import Parameter

__all__ = ["LoadedStorage", "StorageType", "DEFAULT_GLOBALS", "resolve_global",
           "is_default_allowed", "BLOCKED_MODULES"]

_MAX_DIMS = 64
_MAX_INT = 2**63 - 1


class StorageType:
    """What ``torch.FloatStorage`` (typed) or ``torch.UntypedStorage`` (dtype None) means."""

    __slots__ = ("dtype", "name")

    def __init__(self, dtype: dt.DType | None, name: str):
        self.dtype, self.name = dtype, name

    def __repr__(self) -> str:
        return f"torch.{self.name}"


class LoadedStorage:
    """A storage read from a checkpoint, typed by its persistent id.

    ``offset``/``numel`` are in elements of ``dtype`` (bytes when untyped); a legacy-format
    storage view starts ``offset`` elements into ``storage``.
    """

    __slots__ = ("storage", "dtype", "offset", "numel")

    def __init__(self, storage: Storage, dtype: dt.DType | None, offset: int, numel: int):
        self.storage, self.dtype, self.offset, self.numel = storage, dtype, offset, numel


# -- validation --------------------------------------------------------------------------------
def _bad(what: str) -> CheckpointError:
    return CheckpointError(f"load: invalid tensor in checkpoint: {what}")


def _int(x, what: str) -> int:
    if type(x) is not int or not 0 <= x <= _MAX_INT:
        raise _bad(f"{what} must be a non-negative int; got {x!r}")
    return x


def _ints(xs, what: str) -> tuple:
    if not isinstance(xs, tuple | list) or len(xs) > _MAX_DIMS:
        raise _bad(f"{what} must be a tuple of at most {_MAX_DIMS} ints; got {xs!r}")
    return tuple(_int(x, what) for x in xs)


def _bool(x, what: str) -> bool:
    if type(x) is not bool:
        raise _bad(f"{what} must be a bool; got {x!r}")
    return x


def _make(storage, offset, size, stride, dtype, requires_grad) -> Tensor:
    if not isinstance(storage, LoadedStorage):
        raise _bad(f"expected a storage; got {type(storage).__name__}")
    if not isinstance(dtype, dt.DType):
        raise _bad(f"expected a dtype; got {dtype!r}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    offset = _int(offset, "storage_offset")
    if len(size) != len(stride):
        raise _bad(f"size {size} and stride {stride} have different lengths")
    item = dtype.itemsize
    if storage.dtype is None:  # untyped: offset and numel are bytes
        if storage.numel % item or storage.offset % item:
            raise _bad(f"an untyped storage of {storage.numel} bytes cannot hold {dtype}")
        base, limit = storage.offset // item, storage.numel // item
    else:
        if storage.dtype is not dtype:
            raise _bad(f"a {storage.dtype} storage rebuilt as {dtype}")
        base, limit = storage.offset, storage.numel
    numel = 1
    for s in size:
        numel *= s
    last = offset + sum((s - 1) * st for s, st in zip(size, stride)) if numel else offset - 1
    if offset > limit or last >= limit:
        raise _bad(f"size {size}, stride {stride} and offset {offset} reach element {last} of a "
                   f"storage of {limit} elements")
    t = make_tensor(storage.storage, size, stride, base + offset, dtype, storage.storage.device)
    if _bool(requires_grad, "requires_grad"):
        if not dtype.is_differentiable:
            raise _bad(f"a {dtype} tensor cannot require grad")
        t.requires_grad_(True)
    return t


def _hooks(backward_hooks) -> None:
    if not isinstance(backward_hooks, dict):
        raise _bad(f"backward_hooks must be an OrderedDict; got {type(backward_hooks).__name__}")


# -- PyTorch's rebuild functions ----------------------------------------------------------------
def rebuild_tensor(storage, storage_offset, size, stride):
    """``torch._utils._rebuild_tensor``: a tensor over a typed storage."""
    if not isinstance(storage, LoadedStorage) or storage.dtype is None:
        raise _bad("_rebuild_tensor needs a typed storage")
    return _make(storage, storage_offset, size, stride, storage.dtype, False)


def rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                      metadata=None):
    """``torch._utils._rebuild_tensor_v2``; hooks are not restored (as in PyTorch)."""
    _hooks(backward_hooks)
    dtype = storage.dtype if isinstance(storage, LoadedStorage) else None
    return _with_metadata(_make(storage, storage_offset, size, stride, dtype, requires_grad),
                          metadata)


def rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks,
                      dtype, metadata=None):
    """``torch._utils._rebuild_tensor_v3``: the dtype is given explicitly."""
    _hooks(backward_hooks)
    return _with_metadata(_make(storage, storage_offset, size, stride, dtype, requires_grad),
                          metadata)


def _with_metadata(t: Tensor, metadata) -> Tensor:
    """Apply torch's tensor metadata (``{"conj": True}`` for a conjugated view, ``{"neg":
    True}`` for one with the negative bit)."""
    if metadata is None:
        return t
    if not isinstance(metadata, dict) or not set(metadata) <= {"conj", "neg"}:
        raise _bad(f"unsupported tensor metadata {metadata!r}")
    if _bool(metadata.get("neg", False), "neg"):
        if t._dtype is dt.bool_:
            raise _bad("the negative bit is set on a bool tensor")
        t._is_neg = True
    if _bool(metadata.get("conj", False), "conj"):
        if not t._dtype.is_complex:
            raise _bad("the conjugation bit is set on a non-complex tensor")
        t._is_conj = True
    return t


def rebuild_parameter(data, requires_grad, backward_hooks):
    """``torch._utils._rebuild_parameter``: a Parameter sharing ``data``'s storage."""
    _hooks(backward_hooks)
    if type(data) is not Tensor:
        raise _bad(f"a Parameter must wrap a Tensor; got {type(data).__name__}")
    if _bool(requires_grad, "requires_grad") and not data.dtype.is_floating_point:
        raise _bad(f"a {data.dtype} Parameter cannot require grad")
    return Parameter(data, requires_grad)


def rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    """``torch._utils._rebuild_parameter_with_state``: a Parameter with Python attributes."""
    p = rebuild_parameter(data, requires_grad, backward_hooks)
    apply_tensor_state(p, state)
    return p


def rebuild_meta_tensor_no_storage(dtype, size, stride, requires_grad):
    """``torch._utils._rebuild_meta_tensor_no_storage``: a meta tensor (no data)."""
    if not isinstance(dtype, dt.DType):
        raise _bad(f"expected a dtype; got {dtype!r}")
    size, stride = _ints(size, "size"), _ints(stride, "stride")
    if len(size) != len(stride):
        raise _bad(f"size {size} and stride {stride} have different lengths")
    extent = 1 + sum((s - 1) * st for s, st in zip(size, stride)) if 0 not in size else 0
    t = make_tensor(Storage(extent * dtype.itemsize, META), size, stride, 0, dtype, META)
    if _bool(requires_grad, "requires_grad") and dtype.is_floating_point:
        t.requires_grad_(True)
    return t


def rebuild_from_type_v2(func, new_type, args, state):
    """``torch._tensor._rebuild_from_type_v2``: ``func(*args)`` then the subclass and state."""
    if func not in _REBUILD_FUNCS or not isinstance(args, tuple):
        raise UnpicklingError(f"_rebuild_from_type_v2: refused function {func!r}")
    if new_type not in (Tensor, Parameter):
        raise UnpicklingError(f"_rebuild_from_type_v2: refused tensor type {new_type!r}")
    t = func(*args)
    if new_type is Parameter and type(t) is not Parameter:
        t = Parameter(t, t.requires_grad)
    apply_tensor_state(t, state)
    return t


def apply_tensor_state(t: Tensor, state) -> None:
    """Set the Python attributes a checkpoint stored on a tensor (public names only)."""
    if state is None:
        return
    if isinstance(state, tuple) and len(state) == 2 and state[1] is None:
        state = state[0]
    if not isinstance(state, dict):
        raise UnpicklingError(f"tensor state must be a dict; got {type(state).__name__}")
    for key, value in state.items():
        if type(key) is not str or key.startswith("_") or hasattr(type(t), key):
            raise UnpicklingError(f"refused tensor attribute {key!r} in checkpoint")
        t.__dict__[key] = value


def _unsupported(name: str):
    def refuse(*args, **kwargs):
        raise CheckpointError(f"load: the checkpoint uses torch._utils.{name} (quantized, "
                              "sparse, nested or subclass tensors), which ember does not support")
    refuse.__name__ = name
    return refuse


# -- the plain-data helpers PyTorch allows ------------------------------------------------------
def encode(obj, encoding: str = "utf-8"):
    """``_codecs.encode`` limited to str -> bytes (how protocol 2 pickles bytes)."""
    if type(obj) is not str or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise UnpicklingError(f"_codecs.encode: refused arguments ({type(obj).__name__}, "
                              f"{encoding!r})")
    return codecs.encode(obj, encoding)


def safe_bytearray(data=b""):
    """``builtins.bytearray`` from bytes only (never from a size: no huge allocations)."""
    if not isinstance(data, bytes | bytearray):
        raise UnpicklingError(f"bytearray: refused argument of type {type(data).__name__}")
    return bytearray(data)


def make_device(type_, index=None) -> Device:
    """``torch.device(...)`` as ember's Device."""
    if type(type_) is not str or (index is not None and type(index) is not int):
        raise _bad(f"invalid device ({type_!r}, {index!r})")
    try:
        return Device(type_, index) if index is not None else Device(type_)
    except RuntimeError as e:
        raise _bad(str(e)) from None


def make_size(sizes=()) -> Size:
    """``torch.Size(...)`` as ember's Size."""
    return Size(_ints(sizes, "torch.Size"))


_REBUILD_FUNCS = {rebuild_tensor, rebuild_tensor_v2, rebuild_tensor_v3, rebuild_parameter,
                  rebuild_parameter_with_state, rebuild_meta_tensor_no_storage}
_UNSUPPORTED = ("_rebuild_qtensor", "_rebuild_sparse_tensor", "_rebuild_nested_tensor",
                "_rebuild_wrapper_subclass", "_rebuild_device_tensor_from_numpy",
                "_rebuild_device_tensor_from_cpu_tensor", "_rebuild_sparse_csr_tensor")

DEFAULT_GLOBALS: dict[str, object] = {
    "collections.OrderedDict": OrderedDict,
    "collections.Counter": Counter,
    "torch._utils._rebuild_tensor": rebuild_tensor,
    "torch._utils._rebuild_tensor_v2": rebuild_tensor_v2,
    "torch._utils._rebuild_tensor_v3": rebuild_tensor_v3,
    "torch._utils._rebuild_parameter": rebuild_parameter,
    "torch._utils._rebuild_parameter_with_state": rebuild_parameter_with_state,
    "torch._utils._rebuild_meta_tensor_no_storage": rebuild_meta_tensor_no_storage,
    "torch._tensor._rebuild_from_type_v2": rebuild_from_type_v2,
    "torch.nn.parameter.Parameter": Parameter,
    "torch.Tensor": Tensor,
    "torch.Size": make_size,
    "torch.device": make_device,
    "_codecs.encode": encode,
    "builtins.bytearray": safe_bytearray,
    "builtins.set": set,
    "builtins.frozenset": frozenset,
    "builtins.complex": complex,
    "torch.storage.UntypedStorage": StorageType(None, "UntypedStorage"),
    "torch.UntypedStorage": StorageType(None, "UntypedStorage"),
}
DEFAULT_GLOBALS.update({f"torch._utils.{n}": _unsupported(n) for n in _UNSUPPORTED})
DEFAULT_GLOBALS.update({f"torch.{n}": d for n, d in TORCH_DTYPES.items()})
DEFAULT_GLOBALS.update({f"torch.{n}": StorageType(d, n) for n, d in STORAGE_DTYPES.items()})
_DEFAULT_VALUES = {id(v) for v in DEFAULT_GLOBALS.values()}
# Allowed by PyTorch but not representable in ember: resolving them raises a clear error.
_KNOWN_UNREPRESENTABLE = {f"torch.{n}" for n in UNKNOWN_TORCH_DTYPES | UNKNOWN_STORAGES}

# Never resolvable, even when a user allowlists them (they run code or touch the system).
BLOCKED_MODULES = ("sys", "os", "posix", "nt", "subprocess", "importlib", "runpy", "ctypes",
                   "marshal", "pickle", "_pickle", "shutil", "pty", "socket", "code")
_BLOCKED_BUILTINS = {"eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr",
                     "open", "input", "breakpoint", "globals", "locals", "vars", "exit", "quit",
                     "help", "memoryview", "type", "object", "super", "classmethod",
                     "staticmethod", "property"}


def normalize(module: str, name: str) -> tuple[str, str]:
    """Python 2 names (``__builtin__.set``) as pickle's ``fix_imports`` maps them."""
    if (module, name) in _compat_pickle.NAME_MAPPING:
        return _compat_pickle.NAME_MAPPING[(module, name)]
    return _compat_pickle.IMPORT_MAPPING.get(module, module), name


def blocked_reason(module: str, name: str) -> str | None:
    """Why ``module.name`` can never be allowed, or None."""
    root = module.split(".", 1)[0]
    if root in BLOCKED_MODULES:
        return f"whose module {module} is blocked"
    if module == "builtins" and name in _BLOCKED_BUILTINS:
        return "which runs code or inspects objects and is blocked"
    return None


def is_default_allowed(full: str) -> bool:
    return full in DEFAULT_GLOBALS or full in _KNOWN_UNREPRESENTABLE


def resolve_global(module: str, name: str):
    """The ember object a weights-only load may use for GLOBAL ``module name``.

    Raises:
        UnpicklingError: the global is blocked or not allowlisted (nothing is imported).
        CheckpointError: the global is a PyTorch dtype/storage that ember lacks.
    """
    module, name = normalize(module, name)
    full = f"{module}.{name}"
    reason = blocked_reason(module, name)
    if reason is not None:
        raise UnpicklingError(f"Trying to load unsupported GLOBAL {full} {reason}.")
    obj = DEFAULT_GLOBALS.get(full)
    if obj is not None:
        return obj
    if full in _KNOWN_UNREPRESENTABLE:
        raise unknown_dtype(name)
    allowed = user_allowed_globals()
    obj = allowed.get(full)
    if obj is None:
        obj = allowlisted_equivalent(module, name, allowed)
    if obj is not None:
        return obj
    raise UnpicklingError(_refusal(module, name))


def _refusal(module: str, name: str) -> str:
    """Why a weights-only load refused GLOBAL ``module.name``, and the way out."""
    full = f"{module}.{name}"
    if module.startswith(("torch.nn.", "torch._C._nn")):
        # NOTE [Torch modules in whole-model pickles] in _torch_modules.py
        ours = ember_name(module, name)
        return (f"Unsupported global: GLOBAL {full} was not an allowed global by default. It "
                f"is torch's, read by ember as {ours}: if you trust this checkpoint, allowlist "
                f"it with `ember.serialization.add_safe_globals([{ours}])` or the "
                f"`ember.serialization.safe_globals([{ours}])` context manager, together with "
                "your own module classes. (Or load with weights_only=False, which runs "
                "arbitrary code: only for checkpoints from a source you trust.)")
    return (f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please "
            f"use `ember.serialization.add_safe_globals([{name}])` or the "
            f"`ember.serialization.safe_globals([{name}])` context manager to allowlist this "
            "global if you trust this class/function. (Or load with weights_only=False, which "
            "runs arbitrary code: only for checkpoints from a source you trust.)")


def is_allowed_callable(obj) -> bool:
    """Whether REDUCE/NEWOBJ may call ``obj``: a default or user-allowlisted global."""
    if id(obj) in _DEFAULT_VALUES and callable(obj):
        return not isinstance(obj, StorageType | dt.DType)
    return any(obj is v for v in user_allowed_globals().values())
