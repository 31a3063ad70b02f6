"""The array module a kernel computes with, and the few calls NumPy and CuPy spell differently.

Kernels take their array module from their tensors' device (``array_module(t)``; NOTE
[Kernels and array modules] in ``ember/backends/cpu/__init__.py``) and never name ``numpy``
to make an array. Where the two libraries part ways, a kernel calls one of the named helpers
below. Each has a NumPy implementation, which also serves any NumPy look-alike whose arrays
subclass ``ndarray``; a backend whose array module needs another spelling (CuPy) supplies it
once with ``register_helpers(cupy, scatter_add=cupyx.scatter_add, ...)``.

The helpers are looked up by the array module, one dict lookup per call, and only off the
tensors' hot path (scatters, sorts, stride tricks, host round trips).
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np

from ember.core.device import CPU
from ember.memory.devices import array_module_of, get_backend, guard_state

__all__ = ["array_module", "register_helpers", "helper_names", "ufunc_at", "as_strided",
           "reduceat", "sort", "argsort", "to_host", "from_host", "ufunc_of", "cast",
           "module_of", "like"]

_OVERRIDES: dict[int, dict[str, Callable]] = {}  # id(array module) -> helper name -> function


def array_module(t=None) -> ModuleType:
    """The array module of ``t``'s device, or of the allocation device when ``t`` is None."""
    device = guard_state.device if t is None else t._device
    return np if device is CPU else array_module_of(device)


def register_helpers(module: ModuleType, **helpers: Callable) -> None:
    """Supply ``module``'s spelling of named helpers (see ``helper_names()``).

    Raises:
        ValueError: a name is not one of the helpers.
    """
    unknown = sorted(set(helpers) - set(helper_names()))
    if unknown:
        raise ValueError(f"register_helpers: unknown helpers {unknown}; expected some of "
                         f"{helper_names()}")
    _OVERRIDES.setdefault(id(module), {}).update(helpers)


def helper_names() -> list[str]:
    """The helpers a backend can override."""
    return ["ufunc_at", "as_strided", "reduceat", "sort", "argsort", "ufunc_of"]


def _override(xp: ModuleType, name: str) -> Callable | None:
    found = _OVERRIDES.get(id(xp)) if xp is not np else None
    return None if found is None else found.get(name)


def ufunc_of(xp: ModuleType, ufunc: np.ufunc):
    """The array module's ufunc named like NumPy's ``ufunc`` (``cupy.add`` for ``np.add``)."""
    if xp is np:
        return ufunc
    fn = _override(xp, "ufunc_of")
    return fn(ufunc) if fn is not None else getattr(xp, ufunc.__name__)


def ufunc_at(xp: ModuleType, ufunc: np.ufunc, target, index, values) -> None:
    """Unbuffered ``ufunc(target[index], values)`` in place, repeated indices accumulating.

    NumPy: ``np.add.at``; CuPy: ``cupyx.scatter_add`` / ``scatter_max`` / ``scatter_min``.
    """
    fn = _override(xp, "ufunc_at")
    if fn is not None:
        return fn(ufunc, target, index, values)
    ufunc.at(target, index, values)
    return None


def as_strided(xp: ModuleType, a, shape: tuple, strides: tuple, writeable: bool = True):
    """A view of ``a`` with byte ``strides`` (NumPy's and CuPy's ``lib.stride_tricks``);
    ``writeable=False`` marks a view with overlapping windows read-only where the module can."""
    fn = _override(xp, "as_strided")
    if fn is not None:
        return fn(a, shape, strides)
    return np.lib.stride_tricks.as_strided(a, shape=shape, strides=strides, subok=True,
                                           writeable=writeable)


def reduceat(xp: ModuleType, ufunc: np.ufunc, a, indices, axis: int = 0):
    """``ufunc.reduceat`` (CuPy has no ``reduceat``: a segmented reduction there)."""
    fn = _override(xp, "reduceat")
    if fn is not None:
        return fn(ufunc, a, indices, axis)
    return ufunc.reduceat(a, indices, axis=axis)


def sort(xp: ModuleType, a, axis: int = -1, stable: bool = False):
    """Sorted copy of ``a`` (NaNs last); ``stable`` asks for a stable sort (NumPy ``kind=``)."""
    fn = _override(xp, "sort")
    if fn is not None:
        return fn(a, axis, stable)
    return np.sort(a, axis=axis, kind="stable" if stable else None)


def argsort(xp: ModuleType, a, axis: int = -1, stable: bool = False):
    """Indices that sort ``a`` (NaNs last); ``stable`` keeps equal elements in order."""
    fn = _override(xp, "argsort")
    if fn is not None:
        return fn(a, axis, stable)
    return np.argsort(a, axis=axis, kind="stable" if stable else None)


def to_host(t_or_device, array) -> np.ndarray:
    """A host NumPy array with ``array``'s values (itself on cpu; the backend's ``to_host``).

    For the computations only NumPy has (LAPACK-only ``linalg`` routines): copy in, compute,
    ``from_host`` back. Synchronizes the device.
    """
    device = getattr(t_or_device, "_device", t_or_device)
    if device is CPU:
        return array
    backend = get_backend(device.type)
    host = backend.to_host(array, False)
    backend.synchronize()
    return host


def from_host(t_or_device, array):
    """A device array with a host array's values (``array`` itself on cpu)."""
    device = getattr(t_or_device, "_device", t_or_device)
    if device is CPU:
        return array
    return get_backend(device.type).from_host(np.asarray(array), False)


def cast(value, dtype):
    """``value`` in ``dtype``: an array (of any module) cast on its device, a Python or NumPy
    scalar as a NumPy scalar (wrapping out-of-range integers like a cast), which every array
    module accepts as an operand where a 0-d host array would be refused."""
    astype = getattr(value, "astype", None)
    if astype is not None:
        return astype(dtype, copy=False)
    return np.asarray(value).astype(dtype)[()]


_BY_TYPE: dict[type, ModuleType] = {np.ndarray: np}


def module_of(a) -> ModuleType:
    """The array module that made array ``a`` (``numpy`` for host arrays and scalars).

    Each registered module's array type is learnt the first time an unknown type is met
    (``type(xp.empty(0))``), so nothing touches a device before a kernel runs on it.
    """
    xp = _BY_TYPE.get(type(a))
    if xp is not None:
        return xp
    from ember.memory.devices import registered_backends
    for b in registered_backends():
        m = b.array_module
        if m is not None and m is not np and m not in _BY_TYPE.values():
            _BY_TYPE[type(m.empty(0, np.uint8))] = m
    return _BY_TYPE.get(type(a), np)


def like(a, host: np.ndarray):
    """The host array ``host`` as an array of ``a``'s module (itself when ``a`` is a host
    array): index and weight tables that kernels compute on the host from sizes alone."""
    xp = module_of(a)
    if xp is np:
        return host
    for b in _registered():
        if b.array_module is xp:
            return b.from_host(np.asarray(host), False)
    return xp.asarray(host)


def _registered():
    from ember.memory.devices import registered_backends
    return registered_backends()
