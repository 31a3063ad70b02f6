"""L2: Storage, the bytes under every tensor, and the caching allocator they come from.

Every Storage of every device is a block of that device's ``CachingAllocator`` (PyTorch's CUDA
caching-allocator algorithm, NOTE [Caching allocator] in ``allocator.py``): ``cpu`` blocks are
carved from 64-byte-aligned NumPy segments, ``meta`` blocks have addresses and sizes but no
bytes (so ``memory_allocated("meta")`` says what a model would take). Memory shared with NumPy
through ``from_numpy`` or imported through DLPack is not ember's and is not counted.

The functions below mirror ``torch.cuda``'s memory API; each takes ``device`` (a Device, a
name, or None for ``cpu``).

Example:
    >>> import ember
    >>> from ember import memory
    >>> before = memory.memory_allocated()
    >>> x = ember.empty(1)                      # 4 bytes, one 512-byte block
    >>> memory.memory_allocated() - before
    512
"""

from __future__ import annotations

from collections import OrderedDict

from ember.memory import history as _history
from ember.memory.allocator import ALLOCATORS, CachingAllocator, format_size, round_size
from ember.memory.allocator import allocator_for as _allocator_for
from ember.memory.config import parse_alloc_conf
from ember.memory.diagnose import LiveTensor
from ember.memory.diagnose import live_tensors as _live_tensors
from ember.memory.history import register_history_hooks, set_context_provider
from ember.memory.stats import memory_stats as _memory_stats
from ember.memory.stats import memory_summary as _memory_summary
from ember.memory.storage import Storage, UntypedStorage

__all__ = [
    "Storage", "UntypedStorage", "CachingAllocator", "LiveTensor",
    "memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
    "reset_peak_memory_stats", "reset_accumulated_memory_stats", "reset_max_memory_allocated",
    "memory_stats", "memory_summary", "memory_snapshot", "empty_cache",
    "set_per_process_memory_fraction", "get_per_process_memory_fraction", "set_memory_limit",
    "get_memory_limit", "mem_get_info", "record_history", "plot_snapshot", "plot_timeline",
    "live_tensors", "set_allocator_settings", "get_allocator_settings", "format_size",
    "round_size", "set_context_provider", "register_history_hooks", "get_allocator",
]


def get_allocator(device=None) -> CachingAllocator:
    """The caching allocator of ``device`` (cpu when None).

    Example:
        >>> allocator = ember.memory.get_allocator("meta")
        >>> type(allocator).__name__
        'CachingAllocator'
    """
    return _allocator_for(device)


def memory_allocated(device=None) -> int:
    """Bytes held by tensors' blocks now (rounded sizes; ``torch.cuda.memory_allocated``).

    Example:
        >>> before = ember.memory.memory_allocated("meta")
        >>> x = ember.empty(1024, 256, device="meta")  # 1 MiB of float32, no bytes behind it
        >>> ember.memory.memory_allocated("meta") - before
        1048576
    """
    a = _allocator_for(device)
    a.settle()
    return a.all.ab


def max_memory_allocated(device=None) -> int:
    """Peak of ``memory_allocated`` since the start or the last ``reset_peak_memory_stats``.

    Example:
        >>> ember.memory.reset_peak_memory_stats("meta")
        >>> before = ember.memory.max_memory_allocated("meta")
        >>> x = ember.empty(1 << 20, device="meta")
        >>> del x
        >>> ember.memory.max_memory_allocated("meta") - before  # the peak keeps the 4 MiB
        4194304
    """
    a = _allocator_for(device)
    a.settle()
    return a.all.ab_pk


def memory_reserved(device=None) -> int:
    """Bytes of segments the allocator holds (allocated plus cached).

    Example:
        >>> x = ember.empty(1024, device="meta")
        >>> ember.memory.memory_reserved("meta") >= ember.memory.memory_allocated("meta")
        True
    """
    return _allocator_for(device).all.rb


def max_memory_reserved(device=None) -> int:
    """Peak of ``memory_reserved``.

    Example:
        >>> ember.memory.max_memory_reserved() >= ember.memory.memory_reserved()
        True
    """
    return _allocator_for(device).all.rb_pk


def reset_peak_memory_stats(device=None) -> None:
    """Make every peak statistic equal its current value.

    Example:
        >>> ember.memory.reset_peak_memory_stats("meta")
        >>> stats = ember.memory.memory_stats("meta")
        >>> stats["allocated_bytes.all.peak"] == stats["allocated_bytes.all.current"]
        True
    """
    _allocator_for(device).reset_peaks()


reset_max_memory_allocated = reset_peak_memory_stats


def reset_accumulated_memory_stats(device=None) -> None:
    """Zero the cumulative statistics ("allocated", "freed") and the event counters.

    Example:
        >>> ember.memory.reset_accumulated_memory_stats("meta")
        >>> ember.memory.memory_stats("meta")["allocation.all.allocated"]
        0
    """
    a = _allocator_for(device)
    a.settle()
    with a.lock:
        for c in (a.all, a.small, a.large):
            c.reset_accumulated()
        for o in (a.oa, a.os):
            o[2], o[3] = o[0], 0
        a.num_alloc_retries = a.num_ooms = a.num_device_alloc = a.num_device_free = 0


def memory_stats(device=None) -> OrderedDict:
    """Flat, sorted statistics with PyTorch's keys (``allocated_bytes.all.current``, ...).

    For each of ``allocation``, ``segment``, ``active``, ``inactive_split``,
    ``allocated_bytes``, ``reserved_bytes``, ``active_bytes``, ``inactive_split_bytes`` and
    ``requested_bytes``: ``<name>.<all|small_pool|large_pool>.<current|peak|allocated|freed>``;
    ``oversize_allocations.*`` and ``oversize_segments.*``; and the counters
    ``num_alloc_retries``, ``num_ooms``, ``num_device_alloc``, ``num_device_free``,
    ``num_sync_all_streams``, ``max_split_size`` (-1 when unlimited).

    Example:
        >>> stats = ember.memory.memory_stats("meta")
        >>> before = stats["allocation.all.allocated"]
        >>> x = ember.empty(10, device="meta")
        >>> ember.memory.memory_stats("meta")["allocation.all.allocated"] - before
        1
    """
    return _memory_stats(_allocator_for(device))


def memory_summary(device=None, abbreviated: bool = False) -> str:
    """A readable table of ``memory_stats`` in ``torch.cuda.memory_summary``'s layout.

    Example:
        >>> print(ember.memory.memory_summary().splitlines()[1].split("|")[1].strip())
        ember CPU memory summary, device cpu
    """
    return _memory_summary(_allocator_for(device), abbreviated)


def memory_snapshot(device=None) -> list[dict]:
    """Segments with their blocks (address, size, requested size, state, frames, op).

    Block states are ``"active_allocated"`` and ``"inactive"`` (free). With
    ``record_history`` on, each block allocated since has ``frames`` (innermost first) and
    ``op``, the operator that created it.

    Example:
        >>> x = ember.empty(1000, device="meta")
        >>> segment = ember.memory.memory_snapshot("meta")[0]
        >>> sorted(segment["blocks"][0])
        ['address', 'frames', 'requested_size', 'size', 'state']
    """
    return _history.memory_snapshot(_allocator_for(device))


def _snapshot(device=None) -> dict:
    """``{"segments", "device_traces", "allocator_settings"}`` (``torch.cuda.memory._snapshot``)."""
    return _history.snapshot(_allocator_for(device))


def empty_cache(device=None) -> None:
    """Release every cached segment that holds no live block (``torch.cuda.empty_cache``).

    Example:
        >>> x = ember.empty(1 << 28, device="meta")  # 1 GiB: a segment of its own
        >>> del x  # the segment stays cached
        >>> before = ember.memory.memory_reserved("meta")
        >>> ember.memory.empty_cache("meta")
        >>> before - ember.memory.memory_reserved("meta") >= 1 << 30
        True
    """
    _allocator_for(device).empty_cache()


def set_memory_limit(nbytes: int | None, device=None) -> None:
    """Cap the device's reserved memory at ``nbytes`` (None: back to the full capacity).

    A request that would pass the cap releases cached segments, retries, then raises
    ``ember.OutOfMemoryError``.

    Example:
        >>> ember.memory.empty_cache("meta")  # no cached segment to reuse
        >>> ember.memory.set_memory_limit(1 << 20, "meta")
        >>> try:
        ...     ember.empty(1 << 20, device="meta")  # 4 MiB
        ... except ember.OutOfMemoryError:
        ...     print("out of memory")
        out of memory
        >>> ember.memory.set_memory_limit(None, "meta")
    """
    if nbytes is not None and (not isinstance(nbytes, int) or isinstance(nbytes, bool) or
                               nbytes < 0):
        raise ValueError(f"set_memory_limit: expected a non-negative int or None; got {nbytes!r}")
    _allocator_for(device).set_limit(nbytes)


def get_memory_limit(device=None) -> int:
    """The device's current cap on reserved memory, in bytes.

    Example:
        >>> ember.memory.get_memory_limit() == ember.memory.mem_get_info()[1]  # no cap set
        True
    """
    return _allocator_for(device).limit


def set_per_process_memory_fraction(fraction: float, device=None) -> None:
    """Cap reserved memory at ``fraction`` of the device's capacity (0 <= fraction <= 1).

    Example:
        >>> ember.memory.set_per_process_memory_fraction(0.5, "meta")
        >>> ember.memory.get_per_process_memory_fraction("meta")
        0.5
        >>> ember.memory.set_per_process_memory_fraction(1.0, "meta")
    """
    if not isinstance(fraction, (int, float)) or isinstance(fraction, bool):
        raise TypeError(f"Invalid type for fraction argument, must be `float`; got "
                        f"{type(fraction).__name__}")
    if not 0 <= fraction <= 1:
        raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
    a = _allocator_for(device)
    a.set_limit(int(fraction * a.capacity))


def get_per_process_memory_fraction(device=None) -> float:
    """The cap on reserved memory as a fraction of the capacity.

    Example:
        >>> ember.memory.get_per_process_memory_fraction()
        1.0
    """
    a = _allocator_for(device)
    return a.limit / a.capacity


def mem_get_info(device=None) -> tuple[int, int]:
    """``(free, total)`` bytes: room left under the cap, and the device capacity.

    Example:
        >>> free, total = ember.memory.mem_get_info()
        >>> 0 <= free <= total
        True
    """
    a = _allocator_for(device)
    return max(a.limit - a.all.rb, 0), a.capacity


def record_history(enabled=True, max_entries: int = 1_000_000, device=None,
                   clear_history: bool = False) -> None:
    """Record where each block is allocated (see NOTE [Memory history] in ``history.py``).

    Args:
        enabled: True or ``"all"`` (stacks of live blocks and a trace of events), ``"state"``
            (stacks of live blocks only), False or None (stop).
        max_entries: size of the event ring buffer (oldest entries are dropped).
        device: the device (cpu when None).
        clear_history: drop the events recorded so far.

    Example:
        >>> ember.memory.record_history(device="meta")
        >>> x = ember.ones(3, device="meta") * 2
        >>> blocks = [b for s in ember.memory.memory_snapshot("meta") for b in s["blocks"]]
        >>> any(b.get("op") for b in blocks)
        True
        >>> ember.memory.record_history(False, device="meta")
    """
    _history.record_history(_allocator_for(device), enabled, max_entries, clear_history)


def plot_snapshot(path, device=None) -> str:
    """Draw the segments and their blocks (allocated / inactive split / free) to ``path``.

    ``.svg`` is written directly; ``.png`` needs matplotlib. Returns the path.

    Example:
        >>> import os, tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = ember.memory.plot_snapshot(os.path.join(d, "memory.svg"))
        ...     print(os.path.getsize(path) > 0)
        True
    """
    return _history.plot_snapshot(_allocator_for(device), path)


def plot_timeline(path, device=None) -> str:
    """Draw allocated and reserved memory over the recorded history to ``path`` (svg/png).

    Example:
        >>> import os, tempfile
        >>> ember.memory.record_history()
        >>> x = ember.ones(1000)
        >>> with tempfile.TemporaryDirectory() as d:
        ...     path = ember.memory.plot_timeline(os.path.join(d, "timeline.svg"))
        ...     print(os.path.getsize(path) > 0)
        True
        >>> ember.memory.record_history(False)
    """
    return _history.plot_timeline(_allocator_for(device), path)


def live_tensors(device=None, limit: int | None = 10) -> list[LiveTensor]:
    """The largest live allocations (shape, dtype, creating op, source line, saved-only).

    See NOTE [Finding tensors without importing them] in ``diagnose.py``.

    Example:
        >>> x = ember.empty(1 << 26, device="meta")  # 256 MiB
        >>> top = ember.memory.live_tensors("meta", limit=1)[0]
        >>> top.shape, top.dtype, top.nbytes
        ((67108864,), ember.float32, 268435456)
    """
    return _live_tensors(device, limit)


def set_allocator_settings(settings: str) -> None:
    """Apply ``EMBER_ALLOC_CONF``-syntax settings to every device's allocator at run time.

    Example:
        >>> ember.memory.set_allocator_settings("garbage_collection_threshold:0.8")
        >>> ember.memory.get_allocator_settings()["garbage_collection_threshold"]
        0.8
        >>> ember.memory.set_allocator_settings("")  # the defaults again
    """
    cfg = parse_alloc_conf(settings)
    for a in ALLOCATORS.values():
        with a.lock:
            a.configure(cfg)


def get_allocator_settings(device=None) -> dict:
    """The allocator's settings as ``memory_snapshot``'s ``allocator_settings`` reports them.

    Example:
        >>> ember.memory.get_allocator_settings()["expandable_segments"]
        False
    """
    return _allocator_for(device).config.as_dict()

