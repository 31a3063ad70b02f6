"""A NumPy look-alike array module whose arrays live on "the device", for backend tests.

``DeviceArray`` is an ``ndarray`` subclass standing for a device array (a CuPy array): NumPy
functions and ufuncs called on it come back as ``DeviceArray`` (NEP 13 / NEP 18, as CuPy's
arrays answer them), and, as CuPy does, it refuses to be mixed with a host ``numpy.ndarray``
in a ufunc, an array function or an assignment. So a kernel that builds a temporary with
``np.empty``/``np.arange``/``np.asarray`` and combines it with a device array fails here the
way it would fail on a GPU, and a test can check that every output came from the device's
array module (``DeviceNumpy``) over the device's own memory (``DeviceMemory``).
"""

from __future__ import annotations

import types

import numpy as np

from ember.memory.allocator import CpuBackend

__all__ = ["DeviceArray", "DeviceNumpy", "DeviceMemory", "device_as_array", "HostArrayMixed"]


class HostArrayMixed(AssertionError):
    """A host ``numpy.ndarray`` met a device array (CuPy raises TypeError there; an
    AssertionError here, so a test expecting a kernel's own TypeError cannot mistake it)."""


def _is_host(x) -> bool:
    return type(x) is np.ndarray


def _host_view(x, where: str):
    """The plain-ndarray view of a device array; a host array is refused."""
    if isinstance(x, DeviceArray):
        return x.view(np.ndarray)
    if _is_host(x):
        raise HostArrayMixed(f"{where}: a host numpy.ndarray {x.shape} {x.dtype} was mixed "
                             "with device arrays")
    if isinstance(x, list | tuple):
        return type(x)(_host_view(v, where) for v in x)
    return x


def _device(x):
    """Results of a computation on device arrays are device arrays."""
    if _is_host(x):
        return x.view(DeviceArray)
    if isinstance(x, np.generic):  # CuPy answers 0-d arrays where NumPy gives scalars
        return np.asarray(x).view(DeviceArray)
    if isinstance(x, tuple | list):
        return type(x)(_device(v) for v in x)
    return x


class DeviceArray(np.ndarray):
    """An array in device memory (see the module docstring)."""

    __array_priority__ = 100.0

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        where = f"{ufunc.__name__}.{method}"
        args = [_host_view(x, where) for x in inputs]
        kwargs = {k: _host_view(v, where) for k, v in kwargs.items()}
        if out is not None:
            kwargs["out"] = tuple(_host_view(o, where) for o in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _device(result)

    def __array_function__(self, func, types_, args, kwargs):
        if np.ndarray in types_:
            raise HostArrayMixed(f"{func.__name__}: a host numpy.ndarray was mixed with device "
                                 "arrays")
        where = func.__name__
        args = _host_view(args, where)
        kwargs = {k: _host_view(v, where) for k, v in kwargs.items()}
        return _device(func(*args, **kwargs))

    def __setitem__(self, key, value):
        if _is_host(value):
            raise HostArrayMixed(f"__setitem__: a host numpy.ndarray {value.shape} was assigned "
                                 "into a device array")
        np.ndarray.__setitem__(self.view(np.ndarray), _index(key), _host_view(value, "setitem"))

    def __getitem__(self, key):
        return _device(np.ndarray.__getitem__(self.view(np.ndarray), _index(key)))


def _index(key):
    """An index with device arrays made plain; a host index array is refused (as on CuPy)."""
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if _is_host(key):
        raise HostArrayMixed(f"indexing: a host numpy.ndarray {key.shape} {key.dtype} indexes "
                             "a device array")
    return key.view(np.ndarray) if isinstance(key, DeviceArray) else key


# functions that make arrays from nothing (or from host data): the module returns device arrays
_CREATORS = {"empty", "zeros", "ones", "full", "arange", "array", "asarray", "ascontiguousarray",
             "eye", "tri", "identity", "linspace", "frombuffer", "fromiter", "empty_like",
             "zeros_like", "ones_like", "full_like", "indices", "asanyarray"}


class DeviceNumpy(types.ModuleType):
    """The device's array module: NumPy's API, device arrays out; records what kernels used."""

    def __init__(self):
        super().__init__("device_numpy")
        self.used: set[str] = set()
        self.created = 0

    def __getattr__(self, name):
        self.used.add(name)
        fn = getattr(np, name)
        if not callable(fn) or isinstance(fn, np.ufunc | type):
            return fn  # constants, dtypes; ufuncs answer through __array_ufunc__
        if name in _CREATORS:

            def create(*args, **kwargs):
                self.created += 1
                args = tuple(a.view(np.ndarray) if isinstance(a, DeviceArray) else a
                             for a in args)
                return _device(fn(*args, **kwargs))

            return create

        def device_function(*args, **kwargs):
            # like CuPy's functions: device arrays in (host arrays refused), device arrays out
            return _device(fn(*_host_view(args, name),
                              **{k: _host_view(v, name) for k, v in kwargs.items()}))

        return device_function


class DeviceMemory(CpuBackend):
    """Raw "device" bytes for the device's caching allocator: segments are DeviceArrays."""

    name = "device"

    def __init__(self):
        self.allocs = self.frees = 0

    def alloc(self, size: int):
        self.allocs += 1
        buf, addr = super().alloc(size)
        return buf.view(DeviceArray), addr

    def free(self, buf) -> None:
        self.frees += 1


def device_as_array(buf, shape: tuple, npdtype, byte_offset: int, byte_strides) -> DeviceArray:
    """A DeviceArray of ``shape`` over a block's bytes (the descriptor's ``as_array``)."""
    return np.ndarray.__new__(DeviceArray, shape, npdtype, buffer=buf, offset=byte_offset,
                              strides=byte_strides)
