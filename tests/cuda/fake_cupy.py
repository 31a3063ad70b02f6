"""A stand-in for CuPy on machines without a GPU: the ``cuda`` backend's glue, run on the CPU.

``install()`` puts modules named ``cupy``, ``cupy.cuda`` (``runtime``, ``memory``, streams,
events, pinned memory, ``set_allocator``) and ``cupyx`` into ``sys.modules``; it must run
before ``ember`` is imported. Their arrays (``FakeCupyArray``) are NumPy arrays in a
"device memory" that ``runtime.malloc`` hands out by address, built the way CuPy builds them
(``ndarray(shape, dtype, memptr, strides)`` over a ``MemoryPointer``), and, like CuPy's, they
refuse to be mixed with host ``numpy.ndarray`` objects (``HostArrayMixed``): a kernel or a
copy that forgets a host/device transfer fails here as it would on a GPU. Streams and events
are synchronous (work is done when queued). ``runtime.memGetInfo`` counts what ``malloc``
handed out, so the driver-level checks of the GPU tests run against it.

What this cannot check: CuPy's own kernels, dtypes CuPy lacks, and real concurrency; the
GPU run (``tests/cuda/device_check.sh``) does.
"""

from __future__ import annotations

import bisect
import sys
import types

import numpy as np

__all__ = ["install", "FakeCupyArray", "HostArrayMixed", "TOTAL"]

TOTAL = 8 << 30  # the fake device's memory


class HostArrayMixed(AssertionError):
    """A host ``numpy.ndarray`` met a device array (CuPy raises TypeError there)."""


def _host(x, where: str):
    if isinstance(x, FakeCupyArray):
        return x.view(np.ndarray)
    if type(x) is np.ndarray:
        raise HostArrayMixed(f"{where}: a host numpy.ndarray {x.shape} {x.dtype} was mixed "
                             "with device arrays")
    if isinstance(x, list | tuple):
        return type(x)(_host(v, where) for v in x)
    return x


def _dev(x):
    if type(x) is np.ndarray:
        return x.view(FakeCupyArray)
    if isinstance(x, np.generic):  # CuPy answers 0-d arrays where NumPy gives scalars
        return np.asarray(x).view(FakeCupyArray)
    if isinstance(x, tuple) and hasattr(x, "_fields"):  # a named tuple (linalg results)
        return type(x)(*(_dev(v) for v in x))
    if isinstance(x, tuple | list):
        return type(x)(_dev(v) for v in x)
    return x


# -- device memory --------------------------------------------------------------------------
class _Runtime(types.ModuleType):
    class CUDARuntimeError(RuntimeError):
        pass

    def __init__(self):
        super().__init__("cupy.cuda.runtime")
        self.starts: list[int] = []  # sorted segment addresses
        self.bufs: dict[int, np.ndarray] = {}
        self.used = 0
        self.mallocs = self.frees = 0

    def getDeviceCount(self) -> int:  # noqa: N802  (CUDA's names)
        return 1

    def getDeviceProperties(self, index: int) -> dict:  # noqa: N802
        return {"name": b"Fake CUDA Device", "totalGlobalMem": TOTAL, "major": 9, "minor": 0,
                "multiProcessorCount": 4, "l2CacheSize": 1 << 20, "integrated": 0}

    def memGetInfo(self):  # noqa: N802
        return TOTAL - self.used, TOTAL

    def malloc(self, size: int) -> int:
        if self.used + size > TOTAL:
            raise self.CUDARuntimeError("cudaErrorMemoryAllocation: out of memory")
        buf = np.zeros(size + 256, np.uint8)
        ptr = buf.ctypes.data
        pad = -ptr % 256
        buf = buf[pad:pad + size]
        ptr += pad
        bisect.insort(self.starts, ptr)
        self.bufs[ptr] = buf
        self.used += size
        self.mallocs += 1
        return ptr

    def free(self, ptr: int) -> None:
        buf = self.bufs.pop(ptr)
        del self.starts[bisect.bisect_left(self.starts, ptr)]
        self.used -= buf.nbytes
        self.frees += 1

    def find(self, ptr: int) -> tuple[np.ndarray, int]:
        """The segment holding ``ptr`` and the offset in it."""
        i = bisect.bisect_right(self.starts, ptr) - 1
        if i < 0:
            raise ValueError(f"fake cupy: address {ptr:#x} is not device memory")
        start = self.starts[i]
        buf = self.bufs[start]
        if ptr > start + buf.nbytes:
            raise ValueError(f"fake cupy: address {ptr:#x} is not device memory")
        return buf, ptr - start


RUNTIME = _Runtime()


class UnownedMemory:
    def __init__(self, ptr: int, size: int, owner, device_id: int = -1):
        self.ptr, self.size, self.owner, self.device_id = ptr, size, owner, device_id


class MemoryPointer:
    def __init__(self, mem, offset: int):
        self.mem, self.offset = mem, offset
        self.ptr = mem.ptr + offset

    def __add__(self, n: int) -> MemoryPointer:
        return MemoryPointer(self.mem, self.offset + n)


class _OwnMemory:
    """Memory of an array the fake module made itself (not from ``malloc``)."""

    def __init__(self, arr):
        self.ptr, self.size, self.arr = arr.ctypes.data, arr.nbytes, arr


# -- arrays ---------------------------------------------------------------------------------
class FakeCupyArray(np.ndarray):
    """A device array (see the module docstring)."""

    __array_priority__ = 100.0

    def __new__(cls, shape, dtype=float, memptr=None, strides=None, order="C"):
        dtype = np.dtype(dtype)
        if dtype.kind == "V" or dtype.name == "bfloat16":
            raise ValueError(f"Unsupported dtype {dtype}")
        if memptr is None:
            return np.zeros(shape, dtype).view(cls)
        mem = memptr.mem
        if isinstance(mem, _OwnMemory):
            base, off = mem.arr.reshape(-1).view(np.uint8), memptr.offset
        else:
            base, off = RUNTIME.find(memptr.ptr)
        arr = np.ndarray.__new__(cls, shape, dtype, buffer=base, offset=off, strides=strides)
        arr._keep = mem
        return arr

    def __array_finalize__(self, obj):
        self._keep = getattr(obj, "_keep", None)

    @property
    def data(self) -> MemoryPointer:  # CuPy's MemoryPointer, not NumPy's memoryview
        mem = self._keep
        ptr = self.ctypes.data
        if mem is None or isinstance(mem, _OwnMemory):
            try:
                RUNTIME.find(ptr)
                return MemoryPointer(UnownedMemory(ptr, self.nbytes, self), 0)
            except ValueError:
                root = self.base if isinstance(self.base, np.ndarray) else self
                own = _OwnMemory(root)
                return MemoryPointer(own, ptr - own.ptr)
        return MemoryPointer(UnownedMemory(ptr, self.nbytes, mem), 0)

    def __array_ufunc__(self, ufunc, method, *inputs, out=None, **kwargs):
        where = f"{ufunc.__name__}.{method}"
        args = [_host(x, where) for x in inputs]
        kwargs = {k: _host(v, where) for k, v in kwargs.items()}
        if out is not None:
            kwargs["out"] = tuple(_host(o, where) for o in out)
        result = getattr(ufunc, method)(*args, **kwargs)
        if out is not None:
            return out[0] if len(out) == 1 else out
        return _dev(result)

    def __array_function__(self, func, types_, args, kwargs):
        if np.ndarray in types_:
            raise HostArrayMixed(f"{func.__name__}: a host numpy.ndarray was mixed with device "
                                 "arrays")
        return _dev(func(*_host(args, func.__name__),
                         **{k: _host(v, func.__name__) for k, v in kwargs.items()}))

    def __setitem__(self, key, value):
        if type(value) is np.ndarray:
            raise HostArrayMixed("__setitem__: a host numpy.ndarray was assigned into a device "
                                 "array")
        np.ndarray.__setitem__(self.view(np.ndarray), _index(key), _host(value, "setitem"))

    def __getitem__(self, key):
        return _dev(np.ndarray.__getitem__(self.view(np.ndarray), _index(key)))

    def __array__(self, dtype=None, copy=None):
        raise TypeError("Implicit conversion to a NumPy array is not allowed. Please use "
                        "`.get()` to construct a NumPy array explicitly.")

    def __float__(self):
        return float(self.view(np.ndarray))

    def get(self, stream=None, order="C", out=None, blocking=True) -> np.ndarray:
        host = np.array(self.view(np.ndarray), order=order, copy=True)
        if out is not None:
            out[...] = host
            return out
        return host

    def set(self, arr, stream=None) -> None:
        if type(arr) is not np.ndarray or arr.shape != self.shape or arr.dtype != self.dtype:
            raise ValueError("fake cupy: set() needs a host array of the same shape and dtype")
        self.view(np.ndarray)[...] = arr


def _index(key):
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    if type(key) is np.ndarray:
        raise HostArrayMixed("indexing: a host numpy.ndarray indexes a device array")
    return key.view(np.ndarray) if isinstance(key, FakeCupyArray) else key


# -- streams, events, allocator hooks, pinned memory ------------------------------------------
class Stream:
    null: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False,
                 priority=None):
        self.ptr = 0 if null else id(self)
        self.priority = priority

    done = True

    def synchronize(self) -> None:
        pass

    def use(self) -> Stream:
        _CURRENT[0] = self
        return self

    def wait_event(self, event) -> None:
        pass

    def record(self, event=None):
        event = event or Event()
        event.record(self)
        return event


Stream.null = Stream(null=True)
_CURRENT = [Stream.null]


class Event:
    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False):
        self.time = None

    def record(self, stream=None) -> None:
        import time
        self.time = time.perf_counter()

    done = True

    def synchronize(self) -> None:
        pass


def get_elapsed_time(start: Event, end: Event) -> float:
    return (end.time - start.time) * 1e3


class PinnedMemoryPointer(bytearray):
    """Page-locked host bytes (here: ordinary ones)."""


class MemoryPool:
    def malloc(self, size: int):
        return MemoryPointer(_OwnMemory(np.zeros(max(size, 1), np.uint8)), 0)


_ALLOCATOR = [None]


def set_allocator(fn=None) -> None:
    _ALLOCATOR[0] = fn


class _Device:
    def __init__(self, index: int = 0):
        self.id = index

    def synchronize(self) -> None:
        pass


def _plain(x):
    """Device arrays (in sequences too) as plain ones: creators take them, as CuPy's do."""
    if isinstance(x, FakeCupyArray):
        return x.view(np.ndarray)
    if isinstance(x, list | tuple):
        return type(x)(_plain(v) for v in x)
    return x


# functions that make arrays from nothing or from host data: device arrays out
_CREATORS = {"empty", "zeros", "ones", "full", "arange", "array", "asarray",
             "ascontiguousarray", "eye", "tri", "identity", "linspace", "empty_like",
             "zeros_like", "ones_like", "full_like", "indices", "asanyarray"}


class _FakeCupy(types.ModuleType):
    ndarray = FakeCupyArray

    def __getattr__(self, name):
        fn = getattr(np, name)
        if name not in _CREATORS:
            return fn

        def create(*args, **kwargs):
            args = _plain(args)
            out = fn(*args, **kwargs)
            if isinstance(out, np.ndarray) and out.dtype.name == "bfloat16":
                raise ValueError("Unsupported dtype bfloat16")
            return _dev(out if isinstance(out, np.ndarray | tuple | list) else np.array(out))
        return create

    @staticmethod
    def asnumpy(a):
        return a.get() if isinstance(a, FakeCupyArray) else np.asarray(a)


def install() -> None:
    """Make ``import cupy`` give the fake (call before ``import ember``)."""
    import importlib.machinery
    cupy = _FakeCupy("cupy")
    cupy.__spec__ = importlib.machinery.ModuleSpec("cupy", None)
    cupy.__version__ = "0.0-fake"
    cuda = types.ModuleType("cupy.cuda")
    memory = types.ModuleType("cupy.cuda.memory")
    memory.UnownedMemory = UnownedMemory
    memory.MemoryPointer = MemoryPointer
    memory.MemoryPool = MemoryPool
    for name, value in {"runtime": RUNTIME, "memory": memory, "MemoryPointer": MemoryPointer,
                        "Stream": Stream, "Event": Event, "get_elapsed_time": get_elapsed_time,
                        "PinnedMemoryPointer": PinnedMemoryPointer,
                        "alloc_pinned_memory": PinnedMemoryPointer, "MemoryPool": MemoryPool,
                        "set_allocator": set_allocator, "Device": _Device,
                        "get_allocator": lambda: _ALLOCATOR[0],
                        "get_current_stream": lambda: _CURRENT[0]}.items():
        setattr(cuda, name, value)
    cupy.cuda = cuda
    lib = types.ModuleType("cupy.lib")
    lib.stride_tricks = types.SimpleNamespace(
        as_strided=lambda a, shape=None, strides=None: _dev(np.lib.stride_tricks.as_strided(
            a.view(np.ndarray), shape=shape, strides=strides)))
    cupy.lib = lib
    cupyx = types.ModuleType("cupyx")

    def scatter(ufunc):
        def fn(target, index, values):
            ufunc.at(target.view(np.ndarray), _index(index), _host(values, "scatter"))
        return fn
    cupyx.scatter_add = scatter(np.add)
    cupyx.scatter_max = scatter(np.maximum)
    cupyx.scatter_min = scatter(np.minimum)
    sys.modules.update({"cupy": cupy, "cupy.cuda": cuda, "cupy.cuda.runtime": RUNTIME,
                        "cupy.cuda.memory": memory, "cupy.lib": lib, "cupyx": cupyx})
