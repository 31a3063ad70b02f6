"""``ember.cuda``: torch.cuda's namespace, answering as a CPU-only torch build does.

Every function first asks whether a ``"cuda"`` backend descriptor is registered
(NOTE [Device namespaces without a device] in ``ember.backends.cuda``). While none is:
``is_available()`` is False, ``device_count()`` 0, seeding is a no-op, the memory figures are
0, and what needs a device raises torch's exception type (mostly ``AssertionError("... not
compiled with CUDA enabled")``). Once a CUDA backend registers, the same functions serve it:
memory figures come from its caching allocator (``ember.memory``), synchronisation and streams
from its descriptor, and device queries from the descriptor's ``extra`` hooks
(``device_count``, ``current_device``, ``set_device``, ``get_device_name``, ``manual_seed``...).

Importing this module registers the CuPy device (``ember.backends.cupy_device``; NOTE [The
CuPy device]) when CuPy is installed and sees a GPU, and nothing otherwise; the device
registry also imports it when first asked for ``"cuda"`` (``ember.memory.devices``).
"""

from __future__ import annotations

from ember.backends import cupy_device as _cupy_device
from ember.backends.cuda import cuda_backend
from ember.core.device import Device
from ember.cuda import amp as amp
from ember.cuda.memory import (
    _record_memory_history,
    empty_cache,
    get_per_process_memory_fraction,
    max_memory_allocated,
    max_memory_cached,
    max_memory_reserved,
    mem_get_info,
    memory_allocated,
    memory_cached,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_stats_as_nested_dict,
    memory_summary,
    reset_accumulated_memory_stats,
    reset_max_memory_allocated,
    reset_peak_memory_stats,
    set_per_process_memory_fraction,
)
from ember.cuda.memory import not_compiled as _not_compiled
from ember.errors import OutOfMemoryError

__all__ = [
    "is_available", "device_count", "is_initialized", "init", "current_device", "set_device",
    "get_device_name", "get_device_capability", "get_device_properties", "synchronize",
    "manual_seed", "manual_seed_all", "seed", "seed_all", "initial_seed", "get_rng_state",
    "set_rng_state", "get_rng_state_all", "set_rng_state_all", "device", "device_of",
    "Stream", "Event", "StreamContext", "stream", "current_stream", "default_stream",
    "set_stream", "is_bf16_supported", "is_tf32_supported", "get_arch_list",
    "get_gencode_flags", "ipc_collect", "OutOfMemoryError", "amp",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "memory_cached", "max_memory_cached", "empty_cache", "reset_peak_memory_stats",
    "reset_max_memory_allocated", "reset_accumulated_memory_stats", "memory_stats",
    "memory_stats_as_nested_dict", "memory_summary", "memory_snapshot", "mem_get_info",
    "set_per_process_memory_fraction", "get_per_process_memory_fraction",
    "_record_memory_history",
]


# What a registered backend that leaves a hook out means: one device, the current one is 0.
_DEFAULT_HOOKS = {"device_count": lambda: 1, "current_device": lambda: 0}


def _hook(name: str):
    """The registered CUDA backend's ``extra[name]`` hook (None without a backend)."""
    backend = cuda_backend()
    if backend is None:
        return None
    fn = backend.extra.get(name, _DEFAULT_HOOKS.get(name))
    if fn is None:
        raise NotImplementedError(f"ember.cuda.{name}: the registered 'cuda' backend does not "
                                  f"provide {name!r} in its descriptor's extra hooks")
    return fn


def _require(name: str, exc: type[Exception] = AssertionError):
    fn = _hook(name)
    if fn is None:
        raise _not_compiled(exc)
    return fn


def _index(device) -> int | None:
    """A device argument (int, 'cuda:1', Device, None) as an index (None: the current one)."""
    if device is None or isinstance(device, int):
        return device
    d = Device(device)
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index


# -- availability ---------------------------------------------------------------------------
def is_available() -> bool:
    """Whether a CUDA device can be used (``torch.cuda.is_available``).

    Example:
        >>> import ember
        >>> device = "cuda" if ember.cuda.is_available() else "cpu"
        >>> device
        'cpu'
    """
    return device_count() > 0


def device_count() -> int:
    """Number of CUDA devices (0 without a CUDA backend)."""
    fn = _hook("device_count")
    return 0 if fn is None else int(fn())


def is_initialized() -> bool:
    """Whether CUDA state has been initialised (a CUDA backend is registered)."""
    return cuda_backend() is not None


def init() -> None:
    """Initialise CUDA state (``AssertionError`` without a CUDA backend, as torch)."""
    if cuda_backend() is None:
        raise _not_compiled()


def current_device() -> int:
    """Index of the current CUDA device."""
    return int(_require("current_device")())


def set_device(device) -> None:
    """Make ``device`` current (torch's CPU build raises ``AttributeError``; so does ember)."""
    index = _index(device)
    if index is not None and index < 0:
        return
    _require("set_device", AttributeError)(index)


def get_device_name(device=None) -> str:
    """Name of a CUDA device."""
    return _require("get_device_name")(_index(device))


def get_device_capability(device=None) -> tuple[int, int]:
    """Compute capability ``(major, minor)`` of a CUDA device."""
    return _require("get_device_capability")(_index(device))


def get_device_properties(device=None):
    """Properties of a CUDA device (name, memory, capability, ...)."""
    return _require("get_device_properties")(_index(device))


def synchronize(device=None) -> None:
    """Wait for every kernel queued on a CUDA device to finish."""
    backend = cuda_backend()
    if backend is None:
        raise _not_compiled()
    backend.synchronize()


def ipc_collect() -> None:
    """Release CUDA memory held by closed inter-process handles."""
    _require("ipc_collect")()


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current CUDA device computes in bfloat16 (False without one)."""
    return cuda_backend() is not None and bool(_hook("is_bf16_supported")())


def is_tf32_supported() -> bool:
    """Whether the current CUDA device has TF32 tensor cores (False without one)."""
    return cuda_backend() is not None and bool(_hook("is_tf32_supported")())


def get_arch_list() -> list[str]:
    """Architectures the CUDA kernels were built for ([] without a CUDA backend)."""
    fn = _hook("get_arch_list")
    return [] if fn is None else list(fn())


def get_gencode_flags() -> str:
    """NVCC gencode flags of the CUDA kernels ('' without a CUDA backend)."""
    return " ".join(f"-gencode compute=compute_{a[3:]},code={a}" for a in get_arch_list())


# -- random numbers -------------------------------------------------------------------------
def manual_seed(seed: int) -> None:
    """Seed the current CUDA device's generator (a no-op without one, as in torch)."""
    fn = _hook("manual_seed")
    if fn is not None:
        fn(int(seed))


def manual_seed_all(seed: int) -> None:
    """Seed every CUDA device's generator (a no-op without one, as in torch)."""
    fn = _hook("manual_seed_all")
    if fn is not None:
        fn(int(seed))


def seed() -> None:
    """Seed the current CUDA generator from entropy (a no-op without one)."""
    fn = _hook("seed")
    if fn is not None:
        fn()


def seed_all() -> None:
    """Seed every CUDA generator from entropy (a no-op without one)."""
    fn = _hook("seed_all")
    if fn is not None:
        fn()


def initial_seed() -> int:
    """The current CUDA generator's seed (``AssertionError`` without CUDA, as torch)."""
    return int(_require("initial_seed")())


def get_rng_state(device="cuda"):
    """The CUDA generator's state as a uint8 tensor."""
    return _require("get_rng_state")(_index(device))


def set_rng_state(new_state, device="cuda") -> None:
    """Restore a CUDA generator's state (ignored without CUDA, as torch queues it)."""
    fn = _hook("set_rng_state")
    if fn is not None:
        fn(new_state, _index(device))


def get_rng_state_all() -> list:
    """Every CUDA generator's state ([] without CUDA)."""
    return [get_rng_state(i) for i in range(device_count())]


def set_rng_state_all(new_states) -> None:
    """Restore every CUDA generator's state."""
    for i, state in enumerate(new_states):
        set_rng_state(state, i)


# -- device and stream context managers -----------------------------------------------------
class device:  # noqa: N801  (torch's name)
    """Make a CUDA device current inside a ``with`` block (``torch.cuda.device``).

    Index -1 (or None) does nothing; entering with a real index needs a CUDA backend
    (``RuntimeError`` otherwise, as torch's CPU build).
    """

    def __init__(self, device) -> None:
        index = _index(device)
        self.idx = -1 if index is None else index
        self.prev_idx = -1

    def __enter__(self):
        if self.idx == -1:
            return self
        if cuda_backend() is None:
            raise RuntimeError("ember was compiled without CUDA support (no 'cuda' backend is "
                               "registered)")
        self.prev_idx = current_device()
        if self.prev_idx != self.idx:
            set_device(self.idx)
        return self

    def __exit__(self, *exc) -> None:
        if self.idx != -1 and self.prev_idx != self.idx:
            set_device(self.prev_idx)


class device_of(device):  # noqa: N801  (torch's name)
    """``device(obj.get_device())`` when ``obj`` is a CUDA tensor, else a no-op context."""

    def __init__(self, obj) -> None:
        super().__init__(obj.get_device() if getattr(obj, "is_cuda", False) else -1)


class Stream:
    """A CUDA stream (``torch.cuda.Stream``): needs a CUDA backend."""

    def __new__(cls, device=None, priority: int = 0, **kwargs):
        factory = _hook("Stream")
        if factory is None:
            raise RuntimeError("ember.cuda.Stream requires CUDA support (no 'cuda' backend is "
                               "registered)")
        return factory(device=device, priority=priority, **kwargs)


class Event:
    """A CUDA event (``torch.cuda.Event``): needs a CUDA backend."""

    def __new__(cls, enable_timing: bool = False, blocking: bool = False,
                interprocess: bool = False):
        factory = _hook("Event")
        if factory is None:
            raise RuntimeError("ember.cuda.Event requires CUDA support (no 'cuda' backend is "
                               "registered)")
        return factory(enable_timing=enable_timing, blocking=blocking,
                       interprocess=interprocess)


class StreamContext:
    """Run a ``with`` block on ``stream``; ``None`` makes it a no-op (as torch's)."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self._prev = None

    def __enter__(self):
        if self.stream is not None:
            self._prev = current_stream()
            set_stream(self.stream)
        return self.stream

    def __exit__(self, *exc) -> None:
        if self.stream is not None:
            set_stream(self._prev)


def stream(stream) -> StreamContext:
    """``StreamContext(stream)``: select a stream inside a ``with`` block."""
    return StreamContext(stream)


def current_stream(device=None):
    """The stream kernels are queued on (``torch.cuda.current_stream``)."""
    backend = cuda_backend()
    if backend is None:
        raise _not_compiled()
    return backend.current_stream()


def _record_stream(self, stream) -> None:
    """Mark this CUDA tensor's memory as used by ``stream`` (``torch.Tensor.record_stream``).

    When the tensor's storage is freed, its block is not reused until the work queued on
    ``stream`` by then has completed (NOTE [Cross-stream frees] in ``ember/memory/allocator.py``).
    """
    if self._device.type != "cuda":
        raise RuntimeError(f"record_stream: expected a CUDA tensor, got one on {self._device}")
    _require("record_stream")(self, stream)


def _install_tensor_methods() -> None:
    from ember.tensor import Tensor
    if not hasattr(Tensor, "record_stream"):
        Tensor.record_stream = _record_stream


_install_tensor_methods()
_cupy_device.register()


def default_stream(device=None):
    """The default stream of a CUDA device."""
    return _require("default_stream")(_index(device))


def set_stream(stream) -> None:
    """Make ``stream`` current (a no-op for None)."""
    if stream is not None:
        _require("set_stream")(stream)
