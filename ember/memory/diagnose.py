"""Who holds memory: live tensors by allocation, and out-of-memory errors that explain themselves.

NOTE [Finding tensors without importing them]
``ember.memory`` sits below ``ember.tensor`` and ``ember.autograd`` and imports neither. Live
tensors are found among the garbage collector's objects by duck typing: an object whose class
has a ``_storage`` slot holding a Storage with an allocator block. A tensor counts as *reachable
only through an autograd graph* when every reference to it is accounted for by autograd's
saved-tensor records (objects of a class named ``SavedTensor``) or by views of it: its
reference count, less the references this function itself holds, equals those references.
Anything else (a variable, a list, a frame, a ``.grad`` slot) makes it held by the program.
"""

from __future__ import annotations

import gc
import sys
from dataclasses import dataclass

from ember.errors import OutOfMemoryError
from ember.memory.allocator import CachingAllocator, format_size

__all__ = ["LiveTensor", "live_tensors", "out_of_memory"]


@dataclass
class LiveTensor:
    """One live allocation and the tensor over it (``ember.memory.live_tensors()``).

    Example:
        >>> x = ember.empty(1 << 26, device="meta")  # 256 MiB, the largest on this device
        >>> info = ember.memory.live_tensors("meta", limit=1)[0]
        >>> info.shape, info.dtype, info.nbytes, info.saved
        ((67108864,), ember.float32, 268435456, False)
    """

    nbytes: int  # block size (rounded, as counted by memory_allocated)
    requested: int  # bytes the storage asked for
    shape: tuple
    dtype: object
    device: str
    op: str | None  # creating operator (with history recording on)
    source: str | None  # "file:line in function" of the user code that created it
    saved: bool  # reachable only as tensors saved by an autograd graph
    address: int
    count: int = 1  # tensors (views included) over this storage

    def __str__(self) -> str:
        where = f" by {self.op}" if self.op else ""
        at = f" at {self.source}" if self.source else ""
        saved = " [held only by an autograd graph]" if self.saved else ""
        return (f"{format_size(self.nbytes)}: {self.dtype} {list(self.shape)}{where}{at}"
                f"{saved}")


def _user_frame(frames) -> str | None:
    """The innermost frame outside the ember package, as ``file:line in name``."""
    for filename, line, name in frames:
        if not _in_ember(filename):
            return f"{filename}:{line} in {name}"
    return None


_EMBER_DIR = None


def _in_ember(filename: str) -> bool:
    global _EMBER_DIR
    if _EMBER_DIR is None:
        import os
        _EMBER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    return filename.startswith(_EMBER_DIR)


def live_tensors(device=None, limit: int | None = 10) -> list[LiveTensor]:
    """The largest live allocations of a device, largest first (NOTE [Finding tensors ...]).

    Each entry gives the block size, the shape and dtype of the tensor over it, the creating
    op and user source line (recorded only while ``record_history`` is on), and whether the
    memory is reachable only as tensors saved by an autograd graph, the usual way a retained
    ``loss`` keeps a whole step's activations alive.
    """
    from ember.memory.allocator import allocator_for
    alloc = allocator_for(device)
    with alloc.lock:  # no allocation changes hands while we look
        return _scan(alloc, limit)


def _scan(alloc: CachingAllocator, limit: int | None) -> list[LiveTensor]:
    kinds: dict[type, int] = {}  # 1: a tensor class, 2: autograd's saved-tensor record
    tensors, records = [], []
    objects = gc.get_objects()
    for obj in objects:
        cls = type(obj)
        kind = kinds.get(cls)
        if kind is None:
            kind = kinds[cls] = 2 if cls.__name__ == "SavedTensor" else \
                1 if isinstance(getattr(cls, "_storage", None), _SLOT) else 0
        if kind == 1:
            st = getattr(obj, "_storage", None)
            block = getattr(st, "_block", None)
            if block is not None and block.allocated and getattr(st, "_alloc", None) is alloc:
                tensors.append(obj)
        elif kind == 2:
            records.append(obj)
    del objects, obj
    ids = {id(t) for t in tensors}
    known: dict[int, int] = {}  # references explained by saved-tensor records and views
    saved_ids: set[int] = set()
    for rec in records:
        for name in ("_data", "_leaf", "_packed"):
            x = getattr(rec, name, None)
            if x is not None and id(x) in ids:
                known[id(x)] = known.get(id(x), 0) + 1
                saved_ids.add(id(x))
    del records
    for t in tensors:
        base = getattr(t, "_base", None)
        if base is not None and id(base) in ids:
            known[id(base)] = known.get(id(base), 0) + 1
    by_block: dict[int, list] = {}  # id(block) -> [block, tensors, held by program, saved]
    for t in tensors:
        # our own references: the ``tensors`` list, the loop variable, getrefcount's argument
        held = sys.getrefcount(t) - 3 - known.get(id(t), 0) > 0
        block = t._storage._block
        entry = by_block.get(id(block))
        if entry is None:
            entry = by_block[id(block)] = [block, [], False, False]
        entry[1].append(t)
        entry[2] = entry[2] or held
        entry[3] = entry[3] or id(t) in saved_ids
    out = []
    for block, ts, held, saved in by_block.values():
        root = max(ts, key=lambda x: (getattr(x, "_base", None) is None, _numel(x._shape)))
        op, frames = block.ctx if block.ctx is not None else (None, ())
        out.append(LiveTensor(block.size, block.requested, tuple(root._shape), root._dtype,
                              alloc.device, op, _user_frame(frames), saved and not held,
                              block.ptr, len(ts)))
    del tensors, by_block
    out.sort(key=lambda e: (-e.nbytes, e.address))
    return out if limit is None else out[:limit]


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


class _SlotProbe:
    __slots__ = ("_storage",)


_SLOT = type(_SlotProbe._storage)  # the member-descriptor type of a ``__slots__`` entry


def out_of_memory(alloc: CachingAllocator, nbytes: int, size: int,
                  alloc_size: int) -> OutOfMemoryError:
    """The OutOfMemoryError of a failed request, with its diagnosis and remedies."""
    largest = alloc.largest_free_block()  # settles parked frees first: exact counters below
    a = alloc.all
    allocated, reserved = a.ab, a.rb
    unused = reserved - allocated
    limit = alloc.limit
    dev = alloc.device.upper() if alloc.device in ("cpu", "cuda") else alloc.device
    lines = [
        f"{dev} out of memory. Tried to allocate {format_size(alloc_size)} (a request of "
        f"{format_size(nbytes)}). Device {alloc.device} has a total capacity of "
        f"{format_size(alloc.capacity)} of which {format_size(max(limit - reserved, 0))} is "
        f"free within the limit; {format_size(limit)} allowed. Of the allocated memory "
        f"{format_size(allocated)} is allocated by tensors, and {format_size(unused)} is "
        f"reserved by ember but unallocated; the largest free block is "
        f"{format_size(largest)}.",
    ]
    try:
        with alloc.lock:
            holders = _scan(alloc, 5)
    except Exception:  # diagnosis must never hide the error  # noqa: BLE001
        holders = []
    saved = sum(h.nbytes for h in holders if h.saved)
    if unused >= size and largest < size:
        lines.append(f"Diagnosis: fragmentation. {format_size(unused)} is free inside reserved "
                     f"segments, more than the {format_size(size)} asked, but no free block is "
                     "large enough.")
        lines.append("Remedies: set EMBER_ALLOC_CONF=max_split_size_mb:<N> (for example 20 or "
                     "more) so that large cached blocks are not split; free the tensors that "
                     "pin fragments, then call ember.memory.empty_cache(); allocate long-lived "
                     "tensors first.")
    else:
        lines.append(f"Diagnosis: memory exhausted. Live tensors hold {format_size(allocated)} "
                     f"of the {format_size(limit)} allowed.")
        remedies = ["use a smaller batch", "run evaluation under ember.no_grad() or "
                    "ember.inference_mode()", "drop references to losses and outputs (keep "
                    "loss.item(), not loss)", "use activation checkpointing",
                    "raise the limit with ember.memory.set_memory_limit()"]
        if saved:
            remedies.insert(0, f"{format_size(saved)} of the largest tensors is reachable only "
                            "through autograd graphs: something keeps a loss or output with "
                            "its graph alive")
        lines.append("Remedies: " + "; ".join(remedies) + ".")
    if holders:
        lines.append("Largest live tensors (turn on ember.memory.record_history() to see where "
                     "each was created):" if all(h.op is None and h.source is None
                                                 for h in holders)
                     else "Largest live tensors:")
        lines.extend(f"  {h}" for h in holders)
    return OutOfMemoryError("\n".join(lines))
