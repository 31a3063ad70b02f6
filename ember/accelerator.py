"""``ember.accelerator``: torch.accelerator's device-agnostic namespace.

The current accelerator is the first registered device type among ``cuda`` and ``mps``
(NOTE [Device namespaces without a device] in ``ember.backends.cuda``). Without one,
``is_available()`` is False, ``current_accelerator()`` None, ``device_count()`` 0, and every
call that needs a device raises torch's ``RuntimeError("Cannot access accelerator device when
none is available.")``. With a CUDA backend, each call is ``ember.cuda``'s.
"""

from __future__ import annotations

from ember import cuda as _cuda
from ember.backends.cuda import cuda_backend
from ember.backends.mps import mps_backend
from ember.core.device import Device

__all__ = ["is_available", "current_accelerator", "device_count", "current_device_index",
           "current_device_idx", "set_device_index", "set_device_idx", "device_index",
           "synchronize", "current_stream", "set_stream", "empty_cache", "memory_allocated",
           "max_memory_allocated", "memory_reserved", "max_memory_reserved", "memory_stats",
           "reset_peak_memory_stats", "reset_accumulated_memory_stats", "get_memory_info"]


def current_accelerator(check_available: bool = False) -> Device | None:
    """The accelerator's device type as a Device, or None without one.

    Example:
        >>> import ember
        >>> ember.accelerator.current_accelerator() is None
        True
    """
    if cuda_backend() is not None:
        return Device("cuda")
    if mps_backend() is not None:
        return Device("mps")
    return None


def is_available() -> bool:
    """Whether an accelerator device can be used (False on a CPU-only machine)."""
    return device_count() > 0


def device_count() -> int:
    """Number of accelerator devices (0 without one)."""
    acc = current_accelerator()
    if acc is None:
        return 0
    return _cuda.device_count() if acc.type == "cuda" else 1


def _cuda_only():
    """The CUDA namespace when CUDA is the accelerator; torch's RuntimeError without one."""
    acc = current_accelerator()
    if acc is None:
        raise RuntimeError("Cannot access accelerator device when none is available.")
    if acc.type != "cuda":
        raise NotImplementedError(f"ember.accelerator: not implemented for {acc.type}")
    return _cuda


def current_device_index() -> int:
    """Index of the current accelerator device."""
    return _cuda_only().current_device()


current_device_idx = current_device_index


def set_device_index(device, /) -> None:
    """Make an accelerator device current."""
    _cuda_only().set_device(device)


set_device_idx = set_device_index


class device_index:  # noqa: N801  (torch's name)
    """Make accelerator device ``device`` current inside a ``with`` block (None: no-op)."""

    def __init__(self, device: int | None, /) -> None:
        self.idx = device
        self.prev_idx = -1

    def __enter__(self):
        if self.idx is not None:
            cuda = _cuda_only()
            self.prev_idx = cuda.current_device()
            cuda.set_device(self.idx)
        return self

    def __exit__(self, *exc) -> None:
        if self.idx is not None:
            _cuda.set_device(self.prev_idx)


def synchronize(device=None, /) -> None:
    """Wait for the accelerator's queued work."""
    _cuda_only().synchronize(device)


def current_stream(device=None, /):
    """The accelerator's current stream."""
    return _cuda_only().current_stream(device)


def set_stream(stream) -> None:
    """Make ``stream`` the accelerator's current stream."""
    _cuda_only().set_stream(stream)


def empty_cache() -> None:
    """Release the accelerator allocator's cached, unused memory."""
    _cuda_only().empty_cache()


def memory_allocated(device_index=None, /) -> int:
    """Bytes held by tensors on the accelerator."""
    return _cuda_only().memory_allocated(device_index)


def max_memory_allocated(device_index=None, /) -> int:
    """Peak of ``memory_allocated``."""
    return _cuda_only().max_memory_allocated(device_index)


def memory_reserved(device_index=None, /) -> int:
    """Bytes of segments the accelerator's allocator holds."""
    return _cuda_only().memory_reserved(device_index)


def max_memory_reserved(device_index=None, /) -> int:
    """Peak of ``memory_reserved``."""
    return _cuda_only().max_memory_reserved(device_index)


def memory_stats(device_index=None, /):
    """The accelerator allocator's statistics."""
    return _cuda_only().memory_stats(device_index)


def reset_peak_memory_stats(device_index=None, /) -> None:
    """Make each peak statistic equal its current value."""
    _cuda_only().reset_peak_memory_stats(device_index)


def reset_accumulated_memory_stats(device_index=None, /) -> None:
    """Zero the cumulative statistics."""
    _cuda_only().reset_accumulated_memory_stats(device_index)


def get_memory_info(device_index=None, /) -> tuple[int, int]:
    """``(free, total)`` bytes of the accelerator device."""
    return _cuda_only().mem_get_info(device_index)
