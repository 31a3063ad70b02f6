"""``ember.cuda.memory``: torch.cuda's memory API over the CUDA device's caching allocator.

Without a CUDA backend each function answers as torch's CPU-only build does (checked against
torch 2.13): the figures are 0, ``memory_stats()`` is an empty ``OrderedDict``,
``empty_cache()`` does nothing; ``mem_get_info`` and the memory fraction raise
``AssertionError``; ``reset_*``/``memory_snapshot`` raise ``AttributeError`` and
``memory_summary`` ``KeyError`` (the types torch's build raises), each with a message saying
that no CUDA backend is registered. With one registered, each is ``ember.memory``'s function
for the ``cuda`` device.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

from ember import memory as _memory
from ember.backends.cuda import cuda_backend
from ember.core.device import Device
from ember.errors import cuda_not_compiled

__all__ = ["memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
           "memory_cached", "max_memory_cached", "empty_cache", "reset_peak_memory_stats",
           "reset_max_memory_allocated", "reset_accumulated_memory_stats", "memory_stats",
           "memory_stats_as_nested_dict", "memory_summary", "memory_snapshot", "mem_get_info",
           "set_per_process_memory_fraction", "get_per_process_memory_fraction",
           "not_compiled", "_record_memory_history"]


def not_compiled(exc: type[Exception] = AssertionError) -> Exception:
    """torch's "not compiled with CUDA enabled" error, as ``exc`` (its type varies by call)."""
    return cuda_not_compiled(exc)


def _device(device) -> Device | None:
    """The cuda Device to ask, or None when no CUDA backend is registered."""
    if cuda_backend() is None:
        return None
    if device is None:
        return Device("cuda", 0)
    if isinstance(device, int):
        return Device("cuda", device)
    return Device(device)


def memory_allocated(device=None) -> int:
    """Bytes held by tensors on a CUDA device (0 without one).

    Example:
        >>> import ember
        >>> ember.cuda.memory_allocated()
        0
    """
    d = _device(device)
    return 0 if d is None else _memory.memory_allocated(d)


def max_memory_allocated(device=None) -> int:
    """Peak of ``memory_allocated`` (0 without a CUDA device)."""
    d = _device(device)
    return 0 if d is None else _memory.max_memory_allocated(d)


def memory_reserved(device=None) -> int:
    """Bytes of segments the CUDA allocator holds (0 without a CUDA device)."""
    d = _device(device)
    return 0 if d is None else _memory.memory_reserved(d)


def max_memory_reserved(device=None) -> int:
    """Peak of ``memory_reserved`` (0 without a CUDA device)."""
    d = _device(device)
    return 0 if d is None else _memory.max_memory_reserved(d)


def memory_cached(device=None) -> int:
    """Deprecated name of ``memory_reserved`` (warns ``FutureWarning``, as torch)."""
    warnings.warn("`torch.cuda.memory_cached` has been renamed to `torch.cuda.memory_reserved`",
                  FutureWarning, stacklevel=2)
    return memory_reserved(device)


def max_memory_cached(device=None) -> int:
    """Deprecated name of ``max_memory_reserved`` (warns ``FutureWarning``, as torch)."""
    warnings.warn("`torch.cuda.max_memory_cached` has been renamed to "
                  "`torch.cuda.max_memory_reserved`", FutureWarning, stacklevel=2)
    return max_memory_reserved(device)


def empty_cache() -> None:
    """Release the CUDA allocator's cached, unused segments (a no-op without CUDA)."""
    d = _device(None)
    if d is not None:
        _memory.empty_cache(d)


def memory_stats(device=None) -> OrderedDict:
    """The CUDA allocator's statistics (an empty ``OrderedDict`` without CUDA)."""
    d = _device(device)
    return OrderedDict() if d is None else _memory.memory_stats(d)


def memory_stats_as_nested_dict(device=None) -> dict:
    """``memory_stats`` nested by the dots of its keys ({} without CUDA)."""
    nested: dict = {}
    for key, value in memory_stats(device).items():
        *path, leaf = key.split(".")
        node = nested
        for part in path:
            node = node.setdefault(part, {})
        node[leaf] = value
    return nested


def _needs(device, exc: type[Exception]) -> Device:
    d = _device(device)
    if d is None:
        raise not_compiled(exc)
    return d


def reset_peak_memory_stats(device=None) -> None:
    """Make each peak statistic equal its current value (``AttributeError`` without CUDA)."""
    _memory.reset_peak_memory_stats(_needs(device, AttributeError))


def reset_max_memory_allocated(device=None) -> None:
    """Alias of ``reset_peak_memory_stats`` (``AttributeError`` without CUDA)."""
    _memory.reset_peak_memory_stats(_needs(device, AttributeError))


def reset_accumulated_memory_stats(device=None) -> None:
    """Zero the cumulative statistics (``AttributeError`` without CUDA)."""
    _memory.reset_accumulated_memory_stats(_needs(device, AttributeError))


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A readable table of ``memory_stats`` (``KeyError`` without CUDA, as torch)."""
    return _memory.memory_summary(_needs(device, KeyError), abbreviated)


def memory_snapshot(mempool_id=None, include_traces: bool = True) -> list[dict]:
    """Segments with their blocks (``AttributeError`` without CUDA)."""
    return _memory.memory_snapshot(_needs(None, AttributeError))


def mem_get_info(device=None) -> tuple[int, int]:
    """``(free, total)`` bytes of a CUDA device, from ``cudaMemGetInfo`` when the backend
    provides it (``AssertionError`` without a CUDA device)."""
    d = _needs(device, AssertionError)
    hook = cuda_backend().extra.get("mem_get_info")
    return hook(d.index) if hook is not None else _memory.mem_get_info(d)


def _record_memory_history(enabled="all", context="all", stacks="all",
                           max_entries: int = 1_000_000, device=None, **kwargs) -> None:
    """Record where each CUDA block is allocated (``torch.cuda.memory._record_memory_history``).

    ``enabled`` None turns recording off; any other value turns it on (ember records Python
    frames and the operator for every allocation). ``AttributeError`` without CUDA.
    """
    d = _needs(device, AttributeError)
    _memory.record_history(enabled is not None and enabled is not False, max_entries, d)


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap the CUDA allocator at ``fraction`` of the device (``AssertionError`` without one)."""
    _memory.set_per_process_memory_fraction(fraction, _needs(device, AssertionError))


def get_per_process_memory_fraction(device=None) -> float:
    """The CUDA allocator's cap as a fraction (``AssertionError`` without a device)."""
    return _memory.get_per_process_memory_fraction(_needs(device, AssertionError))
