"""The CUDA runtime as ember's layers below the kernels need it, through CuPy.

NOTE [CUDA memory belongs to ember's allocator]
Device memory comes from ``cudaMalloc``/``cudaFree`` (``cupy.cuda.runtime``) in whole
segments that ember's caching allocator carves into blocks (``CudaMemory``). A segment's
"buffer" is a CuPy ``uint8`` array over the raw pointer (``UnownedMemory``: CuPy never frees
it), so every array a kernel sees is a CuPy view of allocator memory (``as_array``). CuPy's own
temporaries (the result of ``cupy.sum`` without ``out=``, a ufunc's intermediate) are routed
to the same allocator through ``cupy.cuda.set_allocator`` (``route_cupy_allocations``): each
is a block whose holder frees it when CuPy drops the memory, so ``memory_allocated`` counts
them as torch counts its kernels' workspace, and CuPy's pool holds nothing.
``EMBER_CUDA_CUPY_POOL=1`` leaves CuPy's pool in charge of its temporaries.

NOTE [Streams in the allocator]
The caching allocator knows streams only through ``CudaStreams`` (``current``, ``record``,
``query``, ``synchronize``; keys are stream handles, 0 the default stream). A block belongs
to the stream current when it was allocated; ``Tensor.record_stream(s)`` adds ``s`` to its
uses, and freeing it then records an event on each used stream and keeps the block out of
every pool until all those events have completed (c10's rules; ``ember/memory/allocator.py``
NOTE [Cross-stream frees]).
"""

from __future__ import annotations

import os
import threading

import numpy as np

__all__ = ["cupy", "CudaMemory", "CudaStreams", "as_array", "device_count", "properties",
           "Stream", "Event", "route_cupy_allocations", "pinned_empty", "is_pinned_array",
           "to_host", "from_host", "register_kernel_helpers"]

import cupy  # noqa: E402  (the module is imported only when CuPy is present)

_rt = cupy.cuda.runtime
_UnownedMemory = cupy.cuda.memory.UnownedMemory
_MemoryPointer = cupy.cuda.MemoryPointer
_ndarray = cupy.ndarray


def device_count() -> int:
    """Number of CUDA devices CuPy sees (0 when the driver or runtime is missing)."""
    try:
        return int(_rt.getDeviceCount())
    except Exception:  # noqa: BLE001  (no driver, insufficient driver, no device)
        return 0


class CudaMemory:
    """Raw device segments for the caching allocator: ``cudaMalloc``/``cudaFree``.

    ``alloc`` returns ``(buffer, address)`` where ``buffer`` is a CuPy ``uint8`` array over
    the segment (NOTE [CUDA memory belongs to ember's allocator]); ``MemoryError`` when the
    device is out of memory, so the allocator frees cached segments and retries.
    """

    name = "cuda"
    has_data = True

    def __init__(self, device: int = 0):
        self.device = device

    def alloc(self, size: int):
        try:
            ptr = _rt.malloc(size)
        except _rt.CUDARuntimeError as e:
            if "memory" in str(e).lower():
                raise MemoryError(str(e)) from None
            raise
        mem = _UnownedMemory(ptr, size, self, self.device)
        return _ndarray((size,), np.uint8, _MemoryPointer(mem, 0)), ptr

    def free(self, buf) -> None:
        if buf is not None:
            _rt.free(buf.data.ptr)


def as_array(buf, shape: tuple, npdtype, byte_offset: int, byte_strides):
    """A CuPy array of ``shape`` over the segment bytes ``buf`` (a flat CuPy ``uint8`` array)."""
    return _ndarray(shape, npdtype, buf.data + byte_offset, byte_strides)


# -- streams and events ---------------------------------------------------------------------
class Stream:
    """A CUDA stream (``torch.cuda.Stream``) over a CuPy stream.

    Args:
        device: the CUDA device (only device 0 is served).
        priority: lower numbers are higher priority (CuPy's convention, as torch's).
        stream: wrap an existing CuPy stream instead of creating one.

    Equality and hashing follow the handle (``cuda_stream``), so two objects for one stream
    are the same stream to the allocator.
    """

    def __init__(self, device=None, priority: int = 0, *, stream=None):
        self._cs = stream if stream is not None else cupy.cuda.Stream(non_blocking=False,
                                                                         priority=priority)
        self.device = _cuda_device()
        self.priority = priority

    @property
    def cuda_stream(self) -> int:
        """The ``cudaStream_t`` handle as an int (0: the legacy default stream)."""
        return int(self._cs.ptr)

    def query(self) -> bool:
        """Whether every kernel queued on the stream has finished."""
        return bool(self._cs.done)

    def synchronize(self) -> None:
        """Wait for every kernel queued on the stream."""
        self._cs.synchronize()

    def wait_event(self, event: Event) -> None:
        """Make future work on this stream wait for ``event``."""
        self._cs.wait_event(event._ce)

    def wait_stream(self, stream: Stream) -> None:
        """Make future work on this stream wait for the work queued on ``stream`` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event: Event | None = None) -> Event:
        """Record ``event`` (a new one when None) on this stream and return it."""
        event = event if event is not None else Event()
        event.record(self)
        return event

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and other.cuda_stream == self.cuda_stream

    def __hash__(self) -> int:
        return hash(self.cuda_stream)

    def __enter__(self):
        self._prev = current_stream()
        set_stream(self)
        return self

    def __exit__(self, *exc):
        set_stream(self._prev)

    def __repr__(self) -> str:
        return f"<ember.cuda.Stream device=cuda:0 cuda_stream={self.cuda_stream:#x}>"


class Event:
    """A CUDA event (``torch.cuda.Event``): marks a point in a stream's work."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self._ce = cupy.cuda.Event(block=blocking, disable_timing=not enable_timing,
                                   interprocess=interprocess)
        self.enable_timing = enable_timing

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (the current stream when None)."""
        self._ce.record((stream or current_stream())._cs)

    def wait(self, stream: Stream | None = None) -> None:
        """Make future work on ``stream`` (current when None) wait for this event."""
        (stream or current_stream()).wait_event(self)

    def query(self) -> bool:
        """Whether the work before the event has completed."""
        return bool(self._ce.done)

    def synchronize(self) -> None:
        """Wait until the event has completed."""
        self._ce.synchronize()

    def elapsed_time(self, end: Event) -> float:
        """Milliseconds between this event and ``end`` (both recorded, timing enabled)."""
        return float(cupy.cuda.get_elapsed_time(self._ce, end._ce))

    def __repr__(self) -> str:
        return f"<ember.cuda.Event at {id(self):#x}>"


_DEFAULT: list = []
_streams = threading.local()


def default_stream(device=None) -> Stream:
    """The default (legacy null) stream of device 0."""
    if not _DEFAULT:
        _DEFAULT.append(Stream(stream=cupy.cuda.Stream.null))
    return _DEFAULT[0]


def current_stream(device=None) -> Stream:
    """The stream this thread queues kernels on."""
    s = getattr(_streams, "current", None)
    return s if s is not None else default_stream()


def set_stream(stream: Stream | None) -> None:
    """Queue this thread's kernels on ``stream`` (CuPy's current stream follows)."""
    if stream is None:
        return
    _streams.current = stream
    stream._cs.use()


class CudaStreams:
    """The allocator's view of streams (NOTE [Streams in the allocator]): keys are handles."""

    default = 0

    def __init__(self):
        self._by_key: dict[int, Stream] = {}

    def current(self) -> int:
        s = getattr(_streams, "current", None)
        return 0 if s is None else s.cuda_stream

    def key(self, stream) -> int:
        """The allocator key of a ``Stream`` (remembered so events can be recorded on it)."""
        k = stream.cuda_stream
        self._by_key.setdefault(k, stream)
        return k

    def record(self, key: int):
        stream = default_stream() if key == 0 else self._by_key[key]
        return stream.record_event()

    def query(self, event) -> bool:
        return event.query()

    def synchronize(self, event) -> None:
        event.synchronize()


# -- CuPy's temporaries through ember's allocator ------------------------------------------------
class _BlockHolder:
    """Owner of a CuPy temporary's block: frees it when CuPy drops the memory."""

    __slots__ = ("alloc", "block")

    def __init__(self, alloc, block):
        self.alloc, self.block = alloc, block

    def __del__(self):
        block = self.block
        if block is not None:
            self.block = None
            try:
                self.alloc.free(block)
            except Exception:  # noqa: BLE001  (interpreter shutdown)
                pass


def route_cupy_allocations(alloc) -> bool:
    """Make CuPy allocate its temporaries from ``alloc`` (NOTE [CUDA memory belongs to ...]).

    Returns False (and changes nothing) when ``EMBER_CUDA_CUPY_POOL=1``.
    """
    if os.environ.get("EMBER_CUDA_CUPY_POOL", "") == "1":
        return False
    fallback = cupy.cuda.MemoryPool()

    def malloc(size: int):
        if size == 0:
            return fallback.malloc(0)
        block = alloc.malloc(size)
        if block is None:  # re-entered from a finalizer: CuPy's own pool answers
            return fallback.malloc(size)
        mem = _UnownedMemory(block.ptr, size, _BlockHolder(alloc, block), 0)
        return _MemoryPointer(mem, 0)

    cupy.cuda.set_allocator(malloc)
    return True


# -- pinned host memory -----------------------------------------------------------------------
def pinned_empty(nbytes: int):
    """``(numpy uint8 array, owner)`` of ``nbytes`` page-locked host bytes."""
    mem = cupy.cuda.alloc_pinned_memory(max(nbytes, 1))
    return np.frombuffer(mem, np.uint8, nbytes), mem


def is_pinned_array(owner) -> bool:
    """Whether a storage owner is page-locked memory from ``pinned_empty``."""
    return isinstance(owner, cupy.cuda.PinnedMemoryPointer)


# -- device properties --------------------------------------------------------------------------
class _Properties:
    """``torch.cuda.get_device_properties``'s fields that CUDA reports."""

    def __init__(self, index: int):
        p = _rt.getDeviceProperties(index)
        name = p["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.total_memory = int(p["totalGlobalMem"])
        self.major, self.minor = int(p["major"]), int(p["minor"])
        self.multi_processor_count = int(p["multiProcessorCount"])
        self.L2_cache_size = int(p.get("l2CacheSize", 0))
        self.is_integrated = bool(p.get("integrated", 0))

    def __repr__(self) -> str:
        return (f"_CudaDeviceProperties(name='{self.name}', major={self.major}, "
                f"minor={self.minor}, total_memory={self.total_memory // (1 << 20)}MB, "
                f"multi_processor_count={self.multi_processor_count})")


_PROPS: dict[int, _Properties] = {}


def properties(index: int | None = None) -> _Properties:
    """The (cached) properties of device ``index`` (None: 0)."""
    index = 0 if index is None else index
    if index != 0:
        raise RuntimeError(f"ember.cuda: device {index} is not served (one CUDA device, 0)")
    p = _PROPS.get(index)
    if p is None:
        p = _PROPS[index] = _Properties(index)
    return p


def _cuda_device():
    from ember.core.device import Device
    return Device("cuda", 0)


# -- host transfers and the kernels' helpers (NOTE [Kernels and array modules]) ----------------
def to_host(array, non_blocking: bool = False) -> np.ndarray:
    """A host NumPy copy of a CuPy array, queued on the current stream."""
    return array.get(stream=current_stream()._cs, blocking=not non_blocking)


def from_host(array, non_blocking: bool = False):
    """A CuPy array with a host array's values, copied on the current stream."""
    host = np.asarray(array)
    if not host.flags.c_contiguous:  # (np.ascontiguousarray would make a 0-d array 1-d)
        host = host.copy(order="C")
    out = cupy.empty(host.shape, host.dtype)
    if host.size:
        out.set(host, stream=current_stream()._cs)
    return out


_SCATTERS = {"add": "scatter_add", "maximum": "scatter_max", "minimum": "scatter_min"}
_REDUCERS = {"add": "sum", "multiply": "prod", "maximum": "max", "minimum": "min",
             "logical_or": "any", "logical_and": "all", "fmax": "nanmax", "fmin": "nanmin"}


def ufunc_at(ufunc, target, index, values) -> None:
    """``ufunc.at`` on CuPy: ``cupyx.scatter_add``/``scatter_max``/``scatter_min``."""
    import cupyx
    name = _SCATTERS.get(ufunc.__name__)
    if name is None:
        raise NotImplementedError(f"ember cuda: {ufunc.__name__}.at has no CuPy scatter")
    getattr(cupyx, name)(target, index, values)


def as_strided(a, shape: tuple, strides: tuple):
    """A view of CuPy array ``a`` with byte ``strides``."""
    return cupy.lib.stride_tricks.as_strided(a, shape=shape, strides=strides)


def reduceat(ufunc, a, indices, axis: int = 0):
    """NumPy's ``ufunc.reduceat`` on CuPy (one reduction per segment)."""
    name = _REDUCERS.get(ufunc.__name__)
    if name is None:
        raise NotImplementedError(f"ember cuda: {ufunc.__name__}.reduceat")
    reduce = getattr(cupy, name)
    idx = [int(i) for i in (indices.get() if hasattr(indices, "get") else indices)]
    a = cupy.moveaxis(a, axis, 0)
    parts = []
    for k, start in enumerate(idx):
        end = idx[k + 1] if k + 1 < len(idx) else a.shape[0]
        parts.append(reduce(a[start:end], axis=0) if start < end else a[start])
    out = cupy.stack(parts) if parts else a[:0]
    return cupy.moveaxis(out, 0, axis)


def sort(a, axis: int = -1, stable: bool = False):
    """Sorted copy (CuPy's sort is stable and puts NaNs last, as NumPy's)."""
    return cupy.sort(a, axis=axis)


def argsort(a, axis: int = -1, stable: bool = False):
    """Indices that sort ``a`` (stable, NaNs last)."""
    return cupy.argsort(a, axis=axis)


def register_kernel_helpers() -> None:
    """Give the CPU kernels CuPy's spellings (``ember.backends.cpu._xp.register_helpers``)."""
    try:
        from ember.backends.cpu._xp import register_helpers
    except ImportError:  # kernels that do not take helpers yet
        return
    register_helpers(cupy, ufunc_at=ufunc_at, as_strided=as_strided, reduceat=reduceat,
                     sort=sort, argsort=argsort)
