"""``memory_stats()`` with PyTorch's flat key names, and ``memory_summary()`` in its layout."""

from __future__ import annotations

from collections import OrderedDict

from ember.memory.allocator import CachingAllocator

__all__ = ["memory_stats", "memory_summary"]

# PyTorch's StatArray names -> our counter names
_ARRAYS = {
    "allocation": "ac", "active": "ac", "segment": "sc", "inactive_split": "ic",
    "allocated_bytes": "ab", "active_bytes": "ab", "reserved_bytes": "rb",
    "inactive_split_bytes": "ib", "requested_bytes": "rq",
}
_POOLS = ("all", "small_pool", "large_pool")
_FIELDS = ("current", "peak", "allocated", "freed")


def memory_stats(alloc: CachingAllocator) -> OrderedDict:
    """The allocator's statistics as a flat, key-sorted dict (``torch.cuda.memory_stats``)."""
    alloc.flush()
    with alloc.lock:
        out = {}
        counters = {"all": alloc.all, "small_pool": alloc.small, "large_pool": alloc.large}
        for name, key in _ARRAYS.items():
            for pool in _POOLS:
                values = counters[pool].stat(key)
                for field, value in zip(_FIELDS, values):
                    out[f"{name}.{pool}.{field}"] = value
        for name, c in (("oversize_allocations", alloc.oa), ("oversize_segments", alloc.os)):
            cur, peak, base, freed = c
            for field, value in zip(_FIELDS, (cur, peak, cur + freed - base, freed)):
                out[f"{name}.{field}"] = value
        out["num_alloc_retries"] = alloc.num_alloc_retries
        out["num_ooms"] = alloc.num_ooms
        out["num_sync_all_streams"] = alloc.num_sync_all_streams
        # blocks freed but awaiting other streams stay active (NOTE [Cross-stream frees])
        pf = alloc.pending_free
        for pool, small in (("small_pool", True), ("large_pool", False), ("all", None)):
            n, nbytes = (pf[True][0] + pf[False][0], pf[True][1] + pf[False][1]) \
                if small is None else pf[small]
            for name, extra in (("active", n), ("active_bytes", nbytes)):
                cur = out[f"{name}.{pool}.current"] = out[f"{name}.{pool}.current"] + extra
                out[f"{name}.{pool}.peak"] = max(out[f"{name}.{pool}.peak"], cur)
        out["num_device_alloc"] = alloc.num_device_alloc
        out["num_device_free"] = alloc.num_device_free
        out["max_split_size"] = alloc.config.as_dict()["max_split_size"]
    return OrderedDict(sorted(out.items()))


def _size_cell(value: int, scale_by: int) -> str:
    """A byte count in the unit PyTorch's summary picks for its row (from the row's total)."""
    units = ("B  ", "KiB", "MiB", "GiB", "TiB", "PiB")
    unit = 0
    while unit + 1 < len(units) and scale_by >= 768 * 1024:
        value //= 1024
        scale_by /= 1024
        unit += 1
    return f"{value:6d} {units[unit]}"


def _count_cell(value: int, scale_by: int) -> str:
    units = (" ", "K", "M")
    unit = 0
    while unit + 1 < len(units) and scale_by >= 750 * 1000:
        value //= 1000
        scale_by /= 1000
        unit += 1
    return f"{value:7d} {units[unit]} "


_ROWS = (
    ("allocated_bytes", "Allocated memory", _size_cell),
    ("active_bytes", "Active memory", _size_cell),
    ("requested_bytes", "Requested memory", _size_cell),
    ("reserved_bytes", "Reserved memory", _size_cell),
    ("inactive_split_bytes", "Non-releasable memory", _size_cell),
    ("allocation", "Allocations", _count_cell),
    ("active", "Active allocs", _count_cell),
    ("segment", "Reserved segments", _count_cell),
    ("inactive_split", "Non-releasable allocs", _count_cell),
)


def memory_summary(alloc: CachingAllocator, abbreviated: bool = False) -> str:
    """A 75-column table of the statistics, laid out like ``torch.cuda.memory_summary``."""
    stats = memory_stats(alloc)
    rule, thin = "=" * 75, "-" * 75
    lines = [rule, f" {'':16} ember {alloc.device.upper()} memory summary, device "
             f"{alloc.device}", thin,
             f"  {'':9} OOMs: {stats['num_ooms']:<17d} | {'':6} Alloc retries: "
             f"{stats['num_alloc_retries']}",
             rule, "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]

    def row(label: str, values: list[int], refs: list[int], cell) -> str:
        cells = " | ".join(cell(v, r) for v, r in zip(values, refs))
        return f" {label:<21} | {cells} "

    for key, label, cell in _ROWS:
        lines.append(thin)
        pools = (("all", label),) if abbreviated else \
            (("all", label), ("large_pool", "      from large pool"),
             ("small_pool", "      from small pool"))
        refs = [stats[f"{key}.all.{f}"] for f in _FIELDS]
        for pool, text in pools:
            lines.append(row(text, [stats[f"{key}.{pool}.{f}"] for f in _FIELDS], refs, cell))
    for key, label in (("oversize_allocations", "Oversize allocations"),
                       ("oversize_segments", "Oversize segments")):
        lines.append(thin)
        values = [stats[f"{key}.{f}"] for f in _FIELDS]
        lines.append(row(label, values, values, _count_cell))
    lines.append(rule)
    return "".join(f"|{ln:<75}|\n" for ln in lines)
