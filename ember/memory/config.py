"""Allocator settings: ``EMBER_ALLOC_CONF``, in PyTorch's ``key:value,key:value`` syntax.

NOTE [Allocator settings]
The keys follow ``PYTORCH_CUDA_ALLOC_CONF``: ``max_split_size_mb`` (blocks at least this large
are never split; at least 20), ``max_non_split_rounding_mb`` (how much larger than a request an
unsplittable cached block may be and still serve it; at least 20, default 20),
``garbage_collection_threshold`` (a fraction in (0, 1): with a memory limit set, cached unused
large segments are released before reserved memory passes this fraction of the limit),
``roundup_power2_divisions`` (a power of two, or ``[256:1,512:2,>:4]`` per size interval in MB)
and ``expandable_segments`` (only ``False``: ember has no virtual memory mapping). ``backend``
accepts ``native``. An unknown key or a bad value raises RuntimeError naming it, when the
variable is read (``import ember``) or when ``set_allocator_settings`` is called.
"""

from __future__ import annotations

import os

__all__ = ["AllocatorConfig", "parse_alloc_conf", "ENV_VAR", "MiB"]

ENV_VAR = "EMBER_ALLOC_CONF"
MiB = 1 << 20
UNLIMITED = 1 << 62  # max_split_size when unset (torch: SIZE_MAX)
N_INTERVALS = 16  # roundup_power2_divisions intervals: 1 MB, 2 MB, ..., 32 GB and up


class AllocatorConfig:
    """Parsed allocator settings (the defaults are PyTorch's)."""

    __slots__ = ("max_split_size", "max_non_split_rounding", "gc_threshold", "divisions",
                 "text")

    def __init__(self):
        self.max_split_size = UNLIMITED
        self.max_non_split_rounding = 20 * MiB
        self.gc_threshold = 0.0
        self.divisions: list[int] | None = None  # None: plain 512-byte rounding
        self.text = ""

    def as_dict(self) -> dict:
        """The settings as ``memory_snapshot``'s ``allocator_settings`` reports them."""
        divs = self.divisions or [0] * N_INTERVALS
        return {
            ENV_VAR: self.text,
            "max_split_size": -1 if self.max_split_size >= UNLIMITED else self.max_split_size,
            "max_non_split_rounding_size": self.max_non_split_rounding,
            "garbage_collection_threshold": self.gc_threshold,
            "expandable_segments": False,
            "roundup_power2_divisions": {str(1 << i): d for i, d in enumerate(divs)},
        }


def _bad(key: str, value: str, rule: str) -> RuntimeError:
    return RuntimeError(f"{ENV_VAR}: bad value {value!r} for CachingAllocator option {key}; "
                        f"expected {rule}")


def _int(key: str, value: str, rule: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise _bad(key, value, rule) from None


def _power2(key: str, value: str) -> int:
    n = _int(key, value, "a power of two")
    if n < 0 or (n & (n - 1)):
        raise _bad(key, value, "a power of two")
    return n


def _divisions(value: str) -> list[int]:
    key = "roundup_power2_divisions"
    if not value.startswith("["):
        return [_power2(key, value)] * N_INTERVALS
    if not value.endswith("]"):
        raise _bad(key, value, "a power of two or a list like [256:1,512:2,>:4]")
    out = [0] * N_INTERVALS
    last = -1
    for item in filter(None, value[1:-1].split(",")):
        size, sep, div = item.partition(":")
        if not sep:
            raise _bad(key, item, "an entry <size in MB>:<divisions> or >:<divisions>")
        d = _power2(key, div)
        if size == ">":
            for i in range(last + 1, N_INTERVALS):
                out[i] = d
            last = N_INTERVALS - 1
            continue
        mb = _power2(key, size)
        if mb == 0:
            raise _bad(key, size, "an interval size in MB that is a power of two")
        index = max(0, min(mb.bit_length() - 1, N_INTERVALS - 1))
        if index <= last:
            raise _bad(key, value, "interval sizes in increasing order")
        for i in range(last + 1, index + 1):
            out[i] = d
        last = index
    return out


def _bool(key: str, value: str) -> bool:
    if value not in ("True", "False", "true", "false"):
        raise _bad(key, value, "True or False")
    return value in ("True", "true")


def parse_alloc_conf(text: str) -> AllocatorConfig:
    """Parse ``key:value,key:value`` (the grammar of ``PYTORCH_CUDA_ALLOC_CONF``).

    Raises:
        RuntimeError: an unknown key, a malformed item, or a value out of range (the message
            names the key and the rule).
    """
    cfg = AllocatorConfig()
    cfg.text = text
    items, depth, cur = [], 0, ""
    for ch in text:  # commas inside [...] belong to the value
        depth += ch == "["
        depth -= ch == "]"
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    items.append(cur)
    for item in items:
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not value:
            raise RuntimeError(f"{ENV_VAR}: expected key:value, got {item!r}")
        if key == "max_split_size_mb":
            mb = _int(key, value, "an integer number of MB")
            if mb < 20:
                raise RuntimeError(f"{ENV_VAR}: CachingAllocator option max_split_size_mb too "
                                   f"small, must be >= 20; got {mb}")
            cfg.max_split_size = mb * MiB
        elif key == "max_non_split_rounding_mb":
            mb = _int(key, value, "an integer number of MB")
            if mb < 20:
                raise RuntimeError(f"{ENV_VAR}: CachingAllocator option "
                                   f"max_non_split_rounding_mb too small, must be >= 20; got {mb}")
            cfg.max_non_split_rounding = mb * MiB
        elif key == "garbage_collection_threshold":
            try:
                t = float(value)
            except ValueError:
                raise _bad(key, value, "a number in (0.0, 1.0)") from None
            if not 0.0 < t < 1.0:
                raise RuntimeError(f"{ENV_VAR}: garbage_collect_threshold is invalid, set it in "
                                   f"(0.0, 1.0); got {value}")
            cfg.gc_threshold = t
        elif key == "roundup_power2_divisions":
            divs = _divisions(value)
            cfg.divisions = divs if any(d > 1 for d in divs) else None
        elif key == "expandable_segments":
            if _bool(key, value):
                raise RuntimeError(f"{ENV_VAR}: expandable_segments:True is not supported by "
                                   "ember's allocator (no virtual memory mapping); use False")
        elif key == "backend":
            if value != "native":
                raise _bad(key, value, "native")
        else:
            raise RuntimeError(f"{ENV_VAR}: Unrecognized CachingAllocator option: {key} (known: "
                               "max_split_size_mb, max_non_split_rounding_mb, "
                               "garbage_collection_threshold, roundup_power2_divisions, "
                               "expandable_segments, backend)")
    return cfg


def from_environment() -> AllocatorConfig:
    """The settings in ``EMBER_ALLOC_CONF`` (defaults when unset)."""
    return parse_alloc_conf(os.environ.get(ENV_VAR, ""))


def caching_disabled() -> bool:
    """``EMBER_NO_MEMORY_CACHING=1``: every block gets its own segment, released on free."""
    return os.environ.get("EMBER_NO_MEMORY_CACHING", "") not in ("", "0")
