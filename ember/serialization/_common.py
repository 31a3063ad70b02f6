"""Shared pieces of ember.serialization: error classes, PyTorch's dtype/storage names, the
user allowlist of globals.

NOTE [Torch names without torch]
PyTorch's checkpoint format names its rebuild functions and storage types as pickle globals
(``torch._utils._rebuild_tensor_v2``, ``torch.FloatStorage``). ember writes and reads those
*names* but never imports torch: on write, ``TorchGlobal`` objects emit the GLOBAL opcode by
hand (see _pickler.py); on read, the names map to ember's own rebuild functions (_rebuild.py).
"""

from __future__ import annotations

import contextlib
import pickle

from ember.core import dtype as dt

__all__ = ["CheckpointError", "UnpicklingError", "TorchGlobal", "STORAGE_DTYPES",
           "TORCH_DTYPES", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "user_allowed_globals"]


class CheckpointError(RuntimeError):
    """A checkpoint is truncated, corrupted, inconsistent or uses something ember lacks.

    Raised for container problems (zip structure, records, sizes, offsets, dtypes). Refused or
    malformed pickles raise ``UnpicklingError`` instead.

    Example:
        >>> import io, ember.serialization as es
        >>> buf = io.BytesIO(); es.save({"w": ember.ones(2)}, buf)
        >>> try:
        ...     es.load(io.BytesIO(buf.getvalue()[:100]))  # truncated
        ... except es.CheckpointError:
        ...     print("truncated checkpoint")
        truncated checkpoint
    """


class UnpicklingError(pickle.UnpicklingError):
    """A checkpoint's pickle was refused by the weights-only unpickler, or is malformed.

    Example:
        >>> import argparse, io, ember.serialization as es
        >>> buf = io.BytesIO(); es.save(argparse.Namespace(lr=0.5), buf); _ = buf.seek(0)
        >>> try:
        ...     es.load(buf)  # weights_only=True refuses classes not allowlisted
        ... except es.UnpicklingError:
        ...     print("refused")
        refused
    """


class TorchGlobal:
    """A pickle GLOBAL by name (``module``, ``name``): written as-is, never imported."""

    __slots__ = ("module", "name")
    _interned: dict = {}

    def __new__(cls, module: str, name: str):
        key = (module, name)
        g = cls._interned.get(key)
        if g is None:
            g = object.__new__(cls)
            g.module, g.name = module, name
            cls._interned[key] = g
        return g

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"

    def __call__(self, *args, **kwargs):  # pickle requires reduce functions to be callable
        raise TypeError(f"{self!r} is a name written into checkpoints, not a function")


# ember dtype <-> PyTorch's legacy storage class name (torch.FloatStorage, ...).
STORAGE_DTYPES = {d.scalar_name + "Storage": d for d in dt.ALL_DTYPES}
STORAGE_NAMES = {d: name for name, d in STORAGE_DTYPES.items()}
# ember dtype <-> torch.<name> (ember's dtype names are torch's attribute names).
TORCH_DTYPES = {d.name: d for d in dt.ALL_DTYPES}
# PyTorch dtypes and storages that ember lacks: allowed globals that fail with a clear error.
UNKNOWN_TORCH_DTYPES = frozenset(
    ["uint16", "uint32",
     "uint64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
     "float8_e8m0fnu", "float4_e2m1fn_x2", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
     "bits1x8", "bits2x4", "bits4x2", "bits8", "bits16", "int1", "int2", "int3", "int4", "int5",
     "int6", "int7", "uint1", "uint2", "uint3", "uint4", "uint5", "uint6", "uint7"])
UNKNOWN_STORAGES = frozenset(["QUInt8Storage",
                              "QInt8Storage", "QInt32Storage", "QUInt4x2Storage",
                              "QUInt2x4Storage"])
# torch.float / torch.long ... are aliases that pickle under their canonical names; accept them.
_ALIASES = {"float": "float32", "double": "float64", "half": "float16", "long": "int64",
            "int": "int32", "short": "int16", "chalf": "complex32", "cfloat": "complex64",
            "cdouble": "complex128"}
for _alias, _canon in _ALIASES.items():
    TORCH_DTYPES[_alias] = TORCH_DTYPES[_canon]


def unknown_dtype(name: str) -> CheckpointError:
    return CheckpointError(f"load: the checkpoint holds a tensor of dtype torch.{name}, which "
                           "ember does not have; expected one of "
                           f"{', '.join(d.name for d in dt.ALL_DTYPES)}")


# -- user allowlist ---------------------------------------------------------------------------
_user_globals: dict[str, object] = {}


def _global_name(obj) -> str:
    module = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None)
    if not module or not qualname:
        raise TypeError(f"add_safe_globals: cannot name {obj!r}; pass (obj, 'module.name')")
    return f"{module}.{qualname}"


def add_safe_globals(safe_globals: list) -> None:
    """Allow ``weights_only`` loads to resolve these globals (process-wide).

    Each entry is a class/function (named by ``__module__.__qualname__``) or a pair
    ``(obj, "module.name")`` for an object pickled under another name. Only add globals from
    sources you trust: allowlisted callables *run* during loading. Modules ``os``, ``sys``,
    ``posix``, ``nt``, ``subprocess`` and code-running builtins stay blocked regardless.

    Example:
        >>> import collections, ember.serialization as es
        >>> es.add_safe_globals([collections.Counter]); es.clear_safe_globals()
    """
    for entry in safe_globals:
        if isinstance(entry, tuple):
            if len(entry) != 2 or not isinstance(entry[1], str):
                raise TypeError("add_safe_globals: expected (obj, 'module.name'); "
                                f"got {entry!r}")
            _user_globals[entry[1]] = entry[0]
        else:
            _user_globals[_global_name(entry)] = entry


def get_safe_globals() -> list:
    """The user-allowlisted globals, as passed to ``add_safe_globals``.

    Example:
        >>> import argparse, ember.serialization as es
        >>> with es.safe_globals([argparse.Namespace]):
        ...     print(es.get_safe_globals())
        [<class 'argparse.Namespace'>]
        >>> es.get_safe_globals()
        []
    """
    return [obj if _global_name_or_none(obj) == name else (obj, name)
            for name, obj in _user_globals.items()]


def _global_name_or_none(obj) -> str | None:
    try:
        return _global_name(obj)
    except TypeError:
        return None


def clear_safe_globals() -> None:
    """Forget every user-allowlisted global.

    Example:
        >>> import argparse, ember.serialization as es
        >>> es.add_safe_globals([argparse.Namespace])
        >>> es.clear_safe_globals(); es.get_safe_globals()
        []
    """
    _user_globals.clear()


@contextlib.contextmanager
def safe_globals(globals_: list):
    """Allow these globals for ``weights_only`` loads inside the ``with`` block only.

    Example:
        >>> import argparse, io, ember.serialization as es
        >>> buf = io.BytesIO(); es.save(argparse.Namespace(lr=0.5), buf); _ = buf.seek(0)
        >>> with es.safe_globals([argparse.Namespace]):
        ...     print(es.load(buf))
        Namespace(lr=0.5)
    """
    saved = dict(_user_globals)
    add_safe_globals(globals_)
    try:
        yield
    finally:
        _user_globals.clear()
        _user_globals.update(saved)


def user_allowed_globals() -> dict[str, object]:
    return _user_globals
