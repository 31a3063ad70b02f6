"""The caching allocator: one per device, PyTorch's CUDA caching-allocator algorithm.

NOTE [Caching allocator]
Requests are rounded to 512 bytes (or to power-of-two divisions, when configured). Rounded
sizes up to 1 MiB come from the *small pool*, carved out of 2 MiB segments; larger ones from
the *large pool*: requests under 10 MiB get 20 MiB segments, larger requests a segment of their
size rounded up to 2 MiB. A request takes the best-fitting cached free block, by (size,
address); a block is split when the remainder is worth keeping (small pool: at least 512 B;
large pool: more than 1 MiB, and only for requests under ``max_split_size``). A freed block
merges with its free neighbours in the segment and stays cached: memory goes back to the
backend only through ``empty_cache()``, the out-of-memory retry, or the garbage-collection
threshold. Each device has a capacity; a segment that would pass it is not allocated: the
allocator then releases cached segments, retries, and raises ``OutOfMemoryError`` with a
diagnosis (see ``ember/memory/diagnose.py``).

NOTE [Free blocks by size]
Each pool keeps its free blocks in a dict ``size -> list of -address`` (sorted, so ``pop()``
gives the lowest address) and a sorted list of the sizes present. An exact-size request is one
dict lookup; otherwise ``bisect`` over the sizes finds the smallest size that fits. Both give
PyTorch's ``lower_bound((size, ptr))`` answer.

NOTE [Exact-size lane]
A freed small-pool block is counted as freed at once but parked, unmerged, in a per-size lane;
the next small request of exactly that size takes it back without the split and merge a round
trip through the pool costs. Any other small request, a new segment, ``empty_cache``, a
snapshot, the statistics and settings changes first settle the lane (free and merge its
blocks), so what can be observed is PyTorch's state: totals are always exact and blocks,
merging and inactive-split figures are exact whenever looked at. The one difference: an
exact-size request gets the most recently freed block of that size, where PyTorch's best fit
might pick another address. Recording history turns the lane off.

NOTE [Parked frees]
A dying Storage does not take the lock: ``park`` appends its block to ``parked`` (a deque:
appends and pops are atomic under the GIL and safe from a finalizer that interrupts a
``malloc``). The block stays counted as allocated until it is *settled*: the next ``malloc``
settles every parked block first, and so do the statistics, snapshots, ``empty_cache``,
settings changes and the peak and accumulation resets (``settle``/``flush``), so every counter
is exact wherever it is read and every malloc counts its increase after the frees that preceded
it, as PyTorch's do. A small request of exactly the size of the most recently parked block
takes it back, counted as a free and a malloc at once (``allocation`` and ``allocated_bytes``
keep their current values). When it also asks for exactly the bytes the block's last owner
did, no current value or peak can change, so ``new_cpu_array`` takes the block back without
the lock and only appends the request to ``trips``, whose cumulative counts (freed bytes,
blocks and requested bytes) are added when the frees are settled. With the exact-size lane off
(recording, streams, no caching) ``park`` is ``free``.

NOTE [Statistics are counters]
Every statistic of ``memory_stats()`` is a counter updated where the block state changes: the
current value, its peak, and the cumulative decrease ("freed"); the cumulative increase is
``current + freed - base`` (``base`` is the current value at the last reset). ``active`` equals
``allocation`` (there are no streams, so no block awaits a cross-stream free).

NOTE [Peaks of "all"]
Allocated bytes, allocations and requested bytes are counted per pool only; "all" (``_All``)
reads their current, freed and base values as the sum of the pools'. Its peaks must still be
exact: the maximum over time of small + large, which can only rise at a malloc. A large-pool
malloc updates its pool's peaks and those of "all" exactly and lowers the small pool's bounds
to ``all peak - large current`` where that is lower (``_peaks()`` inlined). A small-pool
malloc compares each new small-pool value ``v`` with a bound ``lim`` and calls ``_peaks()``
only past it, where
``lim <= min(small peak, all peak - large current)`` always holds: ``_peaks()`` sets it to
exactly that, and afterwards the right-hand side can only fall through a large-pool malloc
(which lowers ``lim`` to it) or a reset of the peaks (which calls ``_peaks()``); the peaks
otherwise only rise and the large pool's current otherwise only falls. So ``v <= lim`` means
``v <= small peak`` and ``v + large <= all peak``: no peak changes, and the one comparison per
statistic is all a small malloc pays.

NOTE [Cross-stream frees]
An allocator may be given a stream provider (``set_streams``: ``current()``, ``record(key)``,
``query(event)``, ``synchronize(event)``, ``default``; keys are hashable stream handles), as
the CUDA device's is; the CPU's has none and runs the code below unchanged. With one, as in
c10: a segment belongs to the stream current when it was allocated, and a request is served
only from free blocks of its own stream's segments (best fit among them). ``record_stream``
marks an allocated block as used by another stream; freeing such a block counts the
allocation as freed at once (``allocated_bytes`` falls) but records an event on every stream
that used it and keeps the block out of the pools, still "active", until all those events
have completed. Each ``malloc`` first processes completed events in stream order;
``empty_cache`` and the out-of-memory retry wait for all of them (``num_sync_all_streams``).
The exact-size lane is off with streams.

NOTE [Re-entrancy]
A Storage is freed from ``__del__``, which the garbage collector may run in the middle of a
``malloc`` on the same thread. The allocator holds an ``RLock`` (other threads wait) and a
``busy`` flag: a free that arrives while busy is queued and done when the running call ends.
A ``malloc`` re-entered that way (a finalizer creating a tensor) is answered with ``None`` and
the caller falls back to memory outside the cache.

Over 800 lines because the block algorithm, its counters and the exact-size lane must be read
together to check the accounting; the stats views already live in stats.py.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from bisect import bisect_left, insort
from collections import deque

import numpy as np

from ember.memory.config import UNLIMITED, AllocatorConfig

__all__ = ["CachingAllocator", "Block", "Segment", "Pool", "CpuBackend", "MetaBackend",
           "round_size", "allocation_size", "format_size", "physical_memory",
           "K_MIN_BLOCK", "K_SMALL_SIZE", "K_SMALL_BUFFER", "K_LARGE_BUFFER", "K_MIN_LARGE_ALLOC",
           "K_ROUND_LARGE", "ALIGNMENT"]

K_MIN_BLOCK = 512
K_SMALL_SIZE = 1 << 20
K_SMALL_BUFFER = 2 << 20
K_LARGE_BUFFER = 20 << 20
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20
ALIGNMENT = 64  # CPU segments start on a 64-byte boundary (cache line, AVX-512)
_new = object.__new__


def physical_memory() -> int:
    """Bytes of physical memory of this machine (the CPU device's default capacity)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 40


def format_size(n: int) -> str:
    """PyTorch's ``format_size``: bytes, KiB, MiB or GiB with two decimals.

    Example:
        >>> from ember.memory import format_size
        >>> format_size(1000), format_size(1536), format_size(3 << 20)
        ('1000 bytes', '1.50 KiB', '3.00 MiB')
    """
    if n <= 1024:
        return f"{n} bytes"
    if n <= 1 << 20:
        return f"{n / 1024:.2f} KiB"
    if n <= 1 << 30:
        return f"{n / (1 << 20):.2f} MiB"
    return f"{n / (1 << 30):.2f} GiB"


def _next_division(size: int, divisions: int) -> int:
    """Round ``size`` up to the next of ``divisions`` equal steps between powers of two."""
    if size & (size - 1) == 0:
        return size
    floor = 1 << (size.bit_length() - 1)
    step = floor // divisions
    if step == 0:
        return floor << 1
    low = size & ~(step - 1)
    return low if low == size else low + step


def round_size(size: int, divisions: list[int] | None = None) -> int:
    """The block size a request of ``size`` bytes gets (PyTorch's ``round_size``).

    Example:
        >>> from ember.memory import round_size
        >>> round_size(1), round_size(512), round_size(513)
        (512, 512, 1024)
    """
    if size < K_MIN_BLOCK:
        return K_MIN_BLOCK
    if divisions is not None:
        index = min(max(size.bit_length() - 1 - 20, 0), len(divisions) - 1)
        d = divisions[index]
        if d > 1 and size > K_MIN_BLOCK * d:
            return _next_division(size, d)
    return (size + K_MIN_BLOCK - 1) & -K_MIN_BLOCK


def allocation_size(size: int) -> int:
    """The segment size a miss for a ``size``-byte block allocates (``get_allocation_size``)."""
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return (size + K_ROUND_LARGE - 1) // K_ROUND_LARGE * K_ROUND_LARGE


class CpuBackend:
    """Raw CPU segments: 64-byte-aligned NumPy ``uint8`` arrays (address read once)."""

    name = "cpu"
    has_data = True

    def alloc(self, size: int):
        """``(array, address)`` of a fresh segment; MemoryError when the OS refuses."""
        raw = np.empty(size + ALIGNMENT, np.uint8)
        addr = raw.ctypes.data
        pad = -addr % ALIGNMENT
        return raw[pad:pad + size], addr + pad

    def free(self, buf) -> None:
        """Segments are NumPy arrays: dropping the last reference returns the memory."""


class MetaBackend:
    """Segments without bytes: the meta device tracks sizes and addresses only."""

    name = "meta"
    has_data = False

    def __init__(self):
        self._next = 1 << 44

    def alloc(self, size: int):
        addr = self._next
        self._next += (size + K_ROUND_LARGE - 1) // K_ROUND_LARGE * K_ROUND_LARGE + K_ROUND_LARGE
        return None, addr

    def free(self, buf) -> None:
        pass


class Segment:
    """Memory obtained from the backend in one piece; its blocks tile it."""

    __slots__ = ("buf", "addr", "size", "small", "head", "ctx", "stream")


class Block:
    """A piece of a segment: allocated to one Storage, or free and cached in its pool."""

    __slots__ = ("seg", "ptr", "size", "requested", "prev", "next", "allocated", "gc_base", "ctx",
                 "arr")

    @property
    def offset(self) -> int:
        """Byte offset of the block inside its segment."""
        return self.ptr - self.seg.addr

    def __repr__(self) -> str:
        state = "allocated" if self.allocated else "free"
        return f"<Block {state} ptr={self.ptr:#x} size={self.size}>"


class _Counters:
    """The statistics of one pool, or of all pools (NOTE [Statistics are counters])."""

    __slots__ = (
        "ab", "ab_pk", "ab_fr", "ab_base",  # allocated bytes
        "ac", "ac_pk", "ac_fr", "ac_base",  # allocations (blocks)
        "rq", "rq_pk", "rq_fr", "rq_base",  # requested bytes
        "rb", "rb_pk", "rb_fr", "rb_base",  # reserved bytes
        "sc", "sc_pk", "sc_fr", "sc_base",  # segments
        "ib", "ib_pk", "ib_al", "ib_fr",  # inactive split bytes (increases, decreases)
        "ic", "ic_pk", "ic_al", "ic_fr",  # inactive split blocks
    )

    def __init__(self):
        for name in _Counters.__slots__:
            setattr(self, name, 0)

    def stat(self, key: str) -> tuple[int, int, int, int]:
        """``(current, peak, allocated, freed)`` of one statistic."""
        cur, peak, freed = getattr(self, key), getattr(self, key + "_pk"), \
            getattr(self, key + "_fr")
        if key in ("ib", "ic"):
            return cur, peak, getattr(self, key + "_al"), freed
        return cur, peak, cur + freed - getattr(self, key + "_base"), freed

    def reset_peaks(self) -> None:
        for key in ("ab", "ac", "rq", "rb", "sc", "ib", "ic"):
            setattr(self, key + "_pk", getattr(self, key))

    def reset_accumulated(self) -> None:
        for key in ("ab", "ac", "rq", "rb", "sc"):
            setattr(self, key + "_base", getattr(self, key))
            setattr(self, key + "_fr", 0)
        for key in ("ib", "ic"):
            setattr(self, key + "_al", 0)
            setattr(self, key + "_fr", 0)

    def inactive(self, nbytes: int, nblocks: int) -> None:
        """Apply a net change of the inactive-split statistics (PyTorch updates them net)."""
        if nbytes > 0:
            self.ib += nbytes
            self.ib_al += nbytes
            if self.ib > self.ib_pk:
                self.ib_pk = self.ib
        elif nbytes < 0:
            self.ib += nbytes
            self.ib_fr -= nbytes
        if nblocks > 0:
            self.ic += nblocks
            self.ic_al += nblocks
            if self.ic > self.ic_pk:
                self.ic_pk = self.ic
        elif nblocks < 0:
            self.ic += nblocks
            self.ic_fr -= nblocks


class Pool(_Counters):
    """Free blocks of one pool (small or large), by size then address, and its statistics.

    ``ab_lim``, ``ac_lim`` and ``rq_lim`` (small pool only) are NOTE [Peaks of "all"]'s
    bounds: below them a small-pool malloc changes no peak.
    """

    __slots__ = ("small", "buckets", "sizes", "calls", "ab_lim", "ac_lim", "rq_lim")

    def __init__(self, small: bool):
        super().__init__()
        self.small = small
        self.buckets: dict[int, list[int]] = {}  # size -> sorted [-address]
        self.sizes: list[int] = []  # sorted sizes present in buckets
        self.calls = 0  # get_free_block calls (garbage-collection age)
        self.ab_lim = self.ac_lim = self.rq_lim = 0


class _All(_Counters):
    """The statistics of all pools: allocated/requested bytes and allocations are the sums of
    the pools' counters, read on demand (NOTE [Peaks of "all"]); the rest are counters."""

    __slots__ = ("small", "large")

    def __init__(self, small: Pool, large: Pool):
        for name in _Counters.__slots__:
            if name[:2] not in ("ab", "ac", "rq") or name.endswith("_pk"):
                setattr(self, name, 0)
        self.small = small
        self.large = large

    def reset_accumulated(self) -> None:
        for key in ("rb", "sc"):
            setattr(self, key + "_base", getattr(self, key))
            setattr(self, key + "_fr", 0)
        for key in ("ib", "ic"):
            setattr(self, key + "_al", 0)
            setattr(self, key + "_fr", 0)


def _sum_of_pools(name: str) -> property:
    def get(self) -> int:
        return getattr(self.small, name) + getattr(self.large, name)
    return property(get, doc=f"``{name}`` of the small pool plus the large pool's.")


for _key in ("ab", "ac", "rq"):
    for _suffix in ("", "_fr", "_base"):
        # the slots stay (inherited) but the class attribute shadows them
        setattr(_All, _key + _suffix, _sum_of_pools(_key + _suffix))
del _key, _suffix


class CachingAllocator:
    """One device's caching allocator (NOTE [Caching allocator]).

    Args:
        device: the device's name (``"cpu"``, ``"meta"``).
        backend: raw segments (``CpuBackend``, ``MetaBackend``, ...).
        config: the settings (``EMBER_ALLOC_CONF``).
        capacity: the device's total memory in bytes (the default limit).
        caching: False gives each block its own segment, released when the block is freed.

    Example:
        >>> allocator = ember.memory.get_allocator("meta")
        >>> isinstance(allocator, ember.memory.CachingAllocator), allocator.device
        (True, 'meta')
    """

    def __init__(self, device: str, backend, config: AllocatorConfig | None = None,
                 capacity: int | None = None, caching: bool = True):
        self.device = device
        self.backend = backend
        self.small = Pool(True)
        self.large = Pool(False)
        self.all = _All(self.small, self.large)
        self.free_blocks: dict[int, Block] = {}  # address -> free block
        self.segments: dict[int, Segment] = {}  # address -> segment
        self.capacity = physical_memory() if capacity is None else capacity
        self.limit = self.capacity
        self.limit_set = False
        self.caching = caching
        self.lock = threading.RLock()
        self.busy = False
        self.pending: list[Block] = []
        self.spare: Block | None = None  # one recycled Block object for the next split
        self.lane: dict[int, list[Block]] = {}  # NOTE [Exact-size lane]; lists may be empty
        self.parked: deque[Block] = deque()  # NOTE [Parked frees]
        self.trips: list[int] = []  # requests served by lock-free take-backs, to be counted
        self.lane_on = caching
        self.park = self.parked.append if caching else self.free
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self.oa = [0, 0, 0, 0]  # oversize allocations: current, peak, base, freed
        self.os = [0, 0, 0, 0]  # oversize segments
        self.recording = False
        self.trace: deque = deque(maxlen=100_000)
        self.context_provider = None  # () -> op name or None (set by ember.utils)
        self.streams = None  # NOTE [Cross-stream frees]
        self.cur_stream = None
        self.uses: dict[Block, set] = {}  # block -> streams recorded with record_stream
        self.events: dict = {}  # stream -> deque of (event, block), in record order
        self.event_count: dict[Block, int] = {}
        self.pending_free = {True: [0, 0], False: [0, 0]}  # small? -> [blocks, bytes]
        self.num_sync_all_streams = 0
        self.configure(config or AllocatorConfig())

    # -- configuration -----------------------------------------------------------------------
    def configure(self, config: AllocatorConfig) -> None:
        """Adopt new settings (cached blocks stay; the rules apply from the next request)."""
        if hasattr(self, "lane"):
            self.flush()
        self.config = config
        self.max_split = config.max_split_size
        self.max_nsr = config.max_non_split_rounding
        self.divisions = config.divisions
        if hasattr(self, "segments"):  # oversize counts follow the new max_split_size
            blocks = [b for s in self.segments.values() for b in _blocks(s)]
            self.oa[0] = sum(1 for b in blocks if b.allocated and b.size >= self.max_split)
            self.os[0] = sum(1 for s in self.segments.values() if s.size >= self.max_split)
            for o in (self.oa, self.os):
                o[1] = max(o[1], o[0])

    def set_limit(self, nbytes: int | None) -> None:
        """Cap reserved memory at ``nbytes`` (None: back to the device capacity)."""
        with self.lock:
            self.limit = self.capacity if nbytes is None else int(nbytes)
            self.limit_set = nbytes is not None

    # -- allocation --------------------------------------------------------------------------
    def malloc(self, nbytes: int) -> Block | None:
        """A block of at least ``nbytes`` (> 0) bytes; OutOfMemoryError when none can be had.

        Returns None only when called re-entrantly from a finalizer (NOTE [Re-entrancy]).
        """
        size = (nbytes + 511) & -512 if self.divisions is None else \
            round_size(nbytes, self.divisions)
        lock = self.lock
        lock.acquire()
        if self.busy:
            lock.release()
            return None
        self.busy = True
        try:
            parked = self.parked
            if size <= K_SMALL_SIZE:
                if parked:  # NOTE [Parked frees]
                    block = self._unpark(size, nbytes)
                    if block is not None:
                        return block
                lane = self.lane.get(size)
                if lane:  # NOTE [Exact-size lane]
                    block = lane.pop()
                else:
                    pool = self.small
                    if self.lane:  # (lists emptied by the lane may remain: cheap)
                        self._flush()
                    block = self._get_free_block(pool, size) if self.caching else None
                    if block is None:
                        block = self._alloc_new(pool, size, nbytes)
                    size = self._split(pool, block, size)
                block.allocated = True
                block.requested = nbytes
                # counters (NOTE [Statistics are counters], NOTE [Peaks of "all"])
                c = self.small
                v = c.ab = c.ab + size
                w = c.ac = c.ac + 1
                r = c.rq = c.rq + nbytes
                if v > c.ab_lim or w > c.ac_lim or r > c.rq_lim:
                    self._peaks()
            else:
                if parked:
                    self._settle()
                pool = self.large
                block = self._get_free_block(pool, size) if self.caching else None
                if block is None:
                    block = self._alloc_new(pool, size, nbytes)
                size = self._split(pool, block, size)
                block.allocated = True
                block.requested = nbytes
                # _peaks() inlined for the large pool: its peaks and those of "all" exactly,
                # then lower the small pool's bounds (NOTE [Peaks of "all"])
                sm, al = self.small, self.all
                v = pool.ab = pool.ab + size
                if v > pool.ab_pk:
                    pool.ab_pk = v
                if v + sm.ab > al.ab_pk:
                    al.ab_pk = v + sm.ab
                if al.ab_pk - v < sm.ab_lim:
                    sm.ab_lim = al.ab_pk - v
                v = pool.ac = pool.ac + 1
                if v > pool.ac_pk:
                    pool.ac_pk = v
                if v + sm.ac > al.ac_pk:
                    al.ac_pk = v + sm.ac
                if al.ac_pk - v < sm.ac_lim:
                    sm.ac_lim = al.ac_pk - v
                v = pool.rq = pool.rq + nbytes
                if v > pool.rq_pk:
                    pool.rq_pk = v
                if v + sm.rq > al.rq_pk:
                    al.rq_pk = v + sm.rq
                if al.rq_pk - v < sm.rq_lim:
                    sm.rq_lim = al.rq_pk - v
            if size >= self.max_split:
                oa = self.oa
                oa[0] += 1
                oa[1] = max(oa[1], oa[0])
            if self.recording:
                block.ctx = self._context()
                self._record("alloc", block.ptr, size, block.ctx)
            return block
        except _OOM as err:
            oom = err
        finally:
            self.busy = False
            if self.pending:
                self._drain()
            lock.release()
        from ember.memory.diagnose import out_of_memory
        raise out_of_memory(self, oom.nbytes, oom.size, oom.alloc_size)

    def _unpark(self, size: int, nbytes: int) -> Block | None:
        """Settle the parked frees; the most recent one's block if it has ``size``, its free
        and this malloc counted together (NOTE [Parked frees]). Lock held, busy."""
        parked = self.parked
        try:
            block = parked.pop()
        except IndexError:  # another thread took it back meanwhile
            return None
        if block.size != size or not self.lane_on:
            parked.append(block)
            self._settle()
            return None
        if parked or self.trips:
            self._settle()
        c = self.small
        req = block.requested
        c.ab_fr += size
        c.ac_fr += 1
        c.rq_fr += req
        r = c.rq = c.rq + nbytes - req
        if r > c.rq_lim:
            self._peaks()
        if size >= self.max_split:
            self.oa[3] += 1
        block.requested = nbytes
        return block

    def _settle(self) -> None:
        """Count the parked frees, oldest first, moving their blocks into the exact-size lane
        (or freeing them fully when the lane is off), and the lock-free take-backs' trips.
        Called with the lock held and busy."""
        parked = self.parked
        uses = self.uses
        while parked:  # a finalizer run meanwhile may append: it is settled too
            try:
                block = parked.popleft()
            except IndexError:  # another thread took the last one back
                break
            if self.lane_on and block.seg.small:
                c = self.small
                size = block.size
                req = block.requested
                c.ab -= size
                c.ab_fr += size
                c.ac -= 1
                c.ac_fr += 1
                c.rq -= req
                c.rq_fr += req
                if size >= self.max_split:
                    self.oa[0] -= 1
                    self.oa[3] += 1
                block.allocated = _LANE
                lane = self.lane.get(size)
                if lane is None:
                    self.lane[size] = [block]
                else:
                    lane.append(block)
            elif uses and block in uses:
                self._free_later(block)
            else:
                self._free(block)
        trips = self.trips
        if trips:
            c = self.small
            divisions = self.divisions
            while trips:
                nbytes = trips.pop()
                size = (nbytes + 511) & -512 if divisions is None else \
                    round_size(nbytes, divisions)
                c.ab_fr += size
                c.ac_fr += 1
                c.rq_fr += nbytes
                if size >= self.max_split:
                    self.oa[3] += 1

    def settle(self) -> None:
        """Count every parked free now (NOTE [Parked frees]): the counters are then exact."""
        with self.lock:
            if (self.parked or self.trips) and not self.busy:
                self.busy = True
                try:
                    self._settle()
                finally:
                    self.busy = False
                    if self.pending:
                        self._drain()

    def _peaks(self) -> None:
        """Bring every allocation peak up to date and recompute the small pool's bounds.

        Called after each small-pool malloc that passes a bound (NOTE [Peaks of "all"]) and
        after the peaks are reset; a large-pool malloc does the same inline.
        """
        s, g, a = self.small, self.large, self.all
        if s.ab > s.ab_pk:
            s.ab_pk = s.ab
        if g.ab > g.ab_pk:
            g.ab_pk = g.ab
        if s.ab + g.ab > a.ab_pk:
            a.ab_pk = s.ab + g.ab
        s.ab_lim = min(s.ab_pk, a.ab_pk - g.ab)
        if s.ac > s.ac_pk:
            s.ac_pk = s.ac
        if g.ac > g.ac_pk:
            g.ac_pk = g.ac
        if s.ac + g.ac > a.ac_pk:
            a.ac_pk = s.ac + g.ac
        s.ac_lim = min(s.ac_pk, a.ac_pk - g.ac)
        if s.rq > s.rq_pk:
            s.rq_pk = s.rq
        if g.rq > g.rq_pk:
            g.rq_pk = g.rq
        if s.rq + g.rq > a.rq_pk:
            a.rq_pk = s.rq + g.rq
        s.rq_lim = min(s.rq_pk, a.rq_pk - g.rq)

    def reset_peaks(self) -> None:
        """Make every peak statistic equal its current value (``reset_peak_memory_stats``)."""
        self.settle()
        with self.lock:
            for c in (self.all, self.small, self.large):
                c.reset_peaks()
            for o in (self.oa, self.os):
                o[1] = o[0]
            self._peaks()

    def _split(self, pool: Pool, block: Block, size: int) -> int:
        """Split ``block`` when the remainder is worth keeping; the size handed out."""
        bsize = block.size
        remaining = bsize - size
        was_split = block.prev is not None or block.next is not None
        if remaining >= K_MIN_BLOCK if pool.small else \
                size < self.max_split and remaining > K_SMALL_SIZE:
            rest = self.spare  # a merged-away free block: requested, allocated, ctx unset
            if rest is None:
                rest = _new(Block)
                rest.requested = 0
                rest.allocated = False
                rest.ctx = None
                rest.arr = None
            else:
                self.spare = None
            rest.seg = block.seg
            ptr = rest.ptr = block.ptr + size
            rest.size = remaining
            rest.gc_base = pool.calls
            rest.prev = block
            nxt = rest.next = block.next
            if nxt is not None:
                nxt.prev = rest
            block.next = rest
            block.size = size
            bucket = pool.buckets.get(remaining)
            if bucket is None:
                pool.buckets[remaining] = [-ptr]
                insort(pool.sizes, remaining)
            else:
                insort(bucket, -ptr)
            self.free_blocks[ptr] = rest
            if was_split:
                pool.ib -= size
                pool.ib_fr += size
                c = self.all
                c.ib -= size
                c.ib_fr += size
            else:  # a new inactive split block: pool.inactive(remaining, 1), inlined
                for c in (pool, self.all):
                    v = c.ib = c.ib + remaining
                    c.ib_al += remaining
                    if v > c.ib_pk:
                        c.ib_pk = v
                    v = c.ic = c.ic + 1
                    c.ic_al += 1
                    if v > c.ic_pk:
                        c.ic_pk = v
        else:
            size = bsize
            if was_split:
                pool.inactive(-bsize, -1)
                self.all.inactive(-bsize, -1)
        return size

    def _get_free_block(self, pool: Pool, size: int) -> Block | None:
        """The best-fitting cached free block, out of its pool (NOTE [Free blocks by size])."""
        buckets = pool.buckets
        bucket = buckets.get(size)
        if bucket is None:
            sizes = pool.sizes
            i = bisect_left(sizes, size)
            if i == len(sizes):
                return None
            bsize = sizes[i]
            bucket = buckets[bsize]
        else:
            bsize = size
        max_split = self.max_split
        if max_split < UNLIMITED:
            if size < max_split <= bsize:
                return None
            if size >= max_split and bsize >= size + self.max_nsr:
                return None
        if self.config.gc_threshold:
            pool.calls += 1
        ptr = -bucket.pop()
        if not bucket:
            del buckets[bsize]
            sizes = pool.sizes
            del sizes[bisect_left(sizes, bsize)]
        return self.free_blocks.pop(ptr)

    def _alloc_new(self, pool: Pool, size: int, nbytes: int) -> Block:
        """A new segment for a miss: allocate, else release cached memory and retry, else OOM."""
        alloc_size = allocation_size(size) if self.caching else size
        if self.lane:
            self._flush()
        if self.config.gc_threshold and self.limit_set:
            self._garbage_collect()
        block = self._alloc_segment(pool, alloc_size)
        if block is None and self.max_split < UNLIMITED:
            self._release_available(size)
            block = self._alloc_segment(pool, alloc_size)
        if block is None:
            if self.events:
                self._sync_events()
            self._release_cached()
            self.num_alloc_retries += 1
            block = self._alloc_segment(pool, alloc_size)
        if block is None:
            self.num_ooms += 1
            if self.recording:
                self._record("oom", 0, alloc_size, None)
            raise _OOM(nbytes, size, alloc_size)
        return block

    def _alloc_segment(self, pool: Pool, alloc_size: int) -> Block | None:
        if self.all.rb + alloc_size > self.limit:
            return None
        try:
            buf, addr = self.backend.alloc(alloc_size)
        except MemoryError:
            return None
        seg = _new(Segment)
        seg.buf = buf
        seg.addr = addr
        seg.size = alloc_size
        seg.small = pool.small
        seg.ctx = None
        seg.stream = self.cur_stream
        block = _new(Block)
        block.seg = seg
        block.ptr = addr
        block.size = alloc_size
        block.requested = 0
        block.prev = block.next = None
        block.allocated = False
        block.gc_base = pool.calls
        block.ctx = None
        block.arr = None
        seg.head = block
        self.segments[addr] = seg
        self.num_device_alloc += 1
        for c in (pool, self.all):
            c.rb += alloc_size
            if c.rb > c.rb_pk:
                c.rb_pk = c.rb
            c.sc += 1
            if c.sc > c.sc_pk:
                c.sc_pk = c.sc
        if alloc_size >= self.max_split:
            o = self.os
            o[0] += 1
            o[1] = max(o[1], o[0])
        if self.recording:
            seg.ctx = self._context()
            self._record("segment_alloc", addr, alloc_size, seg.ctx)
        return block

    # -- free --------------------------------------------------------------------------------
    def free(self, block: Block) -> None:
        """Return an allocated block to its pool (merging with free neighbours)."""
        lock = self.lock
        lock.acquire()
        if self.busy:
            self.pending.append(block)
            lock.release()
            return
        self.busy = True
        try:
            if self.lane_on and block.seg.small:  # NOTE [Exact-size lane]
                # _count_free inlined: the small pool, and no recording (the lane is off then)
                c = self.small
                size = block.size
                req = block.requested
                c.ab -= size
                c.ab_fr += size
                c.ac -= 1
                c.ac_fr += 1
                c.rq -= req
                c.rq_fr += req
                if size >= self.max_split:
                    self.oa[0] -= 1
                    self.oa[3] += 1
                block.allocated = _LANE
                lane = self.lane.get(size)
                if lane is None:
                    self.lane[size] = [block]
                else:
                    lane.append(block)
            else:
                self._free(block)
        finally:
            self.busy = False
            if self.pending:
                self._drain()
            lock.release()

    def _drain(self) -> None:
        self.busy = True
        try:
            pending = self.pending
            uses = self.uses
            while pending:
                block = pending.pop()
                if uses and block in uses:
                    self._free_later(block)
                else:
                    self._free(block)
        finally:
            self.busy = False

    def _free(self, block: Block) -> None:
        self._count_free(block)
        self._free_block(block)

    def _flush(self) -> None:
        """Give every block of the exact-size lane back to its pool (merging)."""
        lanes = self.lane
        self.lane = {}
        for blocks in lanes.values():
            for block in blocks:
                self._free_block(block)

    def flush(self) -> None:
        """Settle the parked frees and the exact-size lane, so blocks and statistics are
        exactly PyTorch's."""
        with self.lock:
            if (self.lane or self.parked or self.trips) and not self.busy:
                self.busy = True
                try:
                    self._settle()
                    self._flush()
                finally:
                    self.busy = False
                    if self.pending:
                        self._drain()

    def set_recording(self, on: bool) -> None:
        """Turn history recording on or off (recording bypasses the exact-size lane)."""
        self.flush()
        self.recording = on
        self.lane_on = self.caching and not on and self.streams is None
        self.park = self.parked.append if self.lane_on else self.free

    def _count_free(self, block: Block) -> None:
        seg = block.seg
        pool = self.small if seg.small else self.large
        size = block.size
        req = block.requested
        if self.recording:
            self._record("free_requested", block.ptr, size, block.ctx)
        c = pool
        c.ab -= size
        c.ab_fr += size
        c.ac -= 1
        c.ac_fr += 1
        c.rq -= req
        c.rq_fr += req
        if size >= self.max_split:
            self.oa[0] -= 1
            self.oa[3] += 1

    def _free_block(self, block: Block) -> None:
        """Put a block whose release is counted back into its pool, merging neighbours."""
        seg = block.seg
        pool = self.small if seg.small else self.large
        size = block.size
        block.allocated = False
        block.requested = 0
        block.ctx = None
        block.arr = None
        d_bytes = d_blocks = 0
        free_blocks = self.free_blocks
        buckets = pool.buckets
        prev = block.prev
        if prev is not None and not prev.allocated:
            self._remove(pool, prev)
            block.ptr = prev.ptr
            block.size += prev.size
            d_bytes -= prev.size
            d_blocks -= 1
            pp = block.prev = prev.prev
            if pp is None:
                seg.head = block
            else:
                pp.next = block
        nxt = block.next
        if nxt is not None and not nxt.allocated:
            # _remove inlined: the common case, the remainder split off by malloc
            nsize = nxt.size
            bucket = buckets[nsize]
            if len(bucket) == 1:
                del buckets[nsize]
                sizes = pool.sizes
                del sizes[bisect_left(sizes, nsize)]
            else:
                del bucket[bisect_left(bucket, -nxt.ptr)]
            del free_blocks[nxt.ptr]
            block.size += nsize
            d_bytes -= nsize
            d_blocks -= 1
            nn = block.next = nxt.next
            if nn is not None:
                nn.prev = block
            nxt.prev = nxt.next = nxt.seg = None
            self.spare = nxt
        whole = block.prev is None and block.next is None
        bsize = block.size
        if not whole:
            d_bytes += bsize
            d_blocks += 1
        if d_bytes < 0 and d_blocks <= 0:  # only decreases: pool.inactive(...) inlined
            for c in (pool, self.all):
                c.ib += d_bytes
                c.ib_fr -= d_bytes
                c.ic += d_blocks
                c.ic_fr -= d_blocks
        elif d_bytes or d_blocks:
            pool.inactive(d_bytes, d_blocks)
            self.all.inactive(d_bytes, d_blocks)
        block.gc_base = pool.calls
        ptr = block.ptr
        bucket = buckets.get(bsize)
        if bucket is None:
            buckets[bsize] = [-ptr]
            insort(pool.sizes, bsize)
        else:
            insort(bucket, -ptr)
        free_blocks[ptr] = block
        if self.recording:
            self._record("free_completed", ptr, size, None)
        if whole and not self.caching:
            self._release(pool, block)

    # -- pool bookkeeping --------------------------------------------------------------------
    def _insert(self, pool: Pool, block: Block) -> None:
        size = block.size
        bucket = pool.buckets.get(size)
        if bucket is None:
            pool.buckets[size] = [-block.ptr]
            insort(pool.sizes, size)
        else:
            insort(bucket, -block.ptr)
        self.free_blocks[block.ptr] = block

    def _remove(self, pool: Pool, block: Block) -> None:
        size = block.size
        bucket = pool.buckets[size]
        if len(bucket) == 1:
            del pool.buckets[size]
            sizes = pool.sizes
            del sizes[bisect_left(sizes, size)]
        else:
            del bucket[bisect_left(bucket, -block.ptr)]
        del self.free_blocks[block.ptr]

    # -- releasing segments ------------------------------------------------------------------
    def _release(self, pool: Pool, block: Block) -> None:
        """Give a free, unsplit segment back to the backend."""
        self._remove(pool, block)
        seg = block.seg
        del self.segments[seg.addr]
        self.backend.free(seg.buf)
        seg.buf = None
        self.num_device_free += 1
        size = seg.size
        for c in (pool, self.all):
            c.rb -= size
            c.rb_fr += size
            c.sc -= 1
            c.sc_fr += 1
        if size >= self.max_split:
            self.os[0] -= 1
            self.os[3] += 1
        if self.recording:
            self._record("segment_free", seg.addr, size, None)

    def _releasable(self, pool: Pool | None = None) -> list[Block]:
        return [b for b in self.free_blocks.values() if b.prev is None and b.next is None and
                (pool is None or b.seg.small == pool.small)]

    def _release_cached(self) -> int:
        """Release every cached unsplit segment (``empty_cache``); bytes released."""
        released = 0
        for b in self._releasable():
            released += b.size
            self._release(self.small if b.seg.small else self.large, b)
        return released

    def _release_available(self, size: int) -> None:
        """With ``max_split_size``: release oversize cached segments to make room for ``size``."""
        pool = self.large
        key = max(size, self.max_split)
        cands = sorted((b for b in self._releasable(pool) if b.size >= self.max_split),
                       key=lambda b: (b.size, b.ptr))
        fit = [b for b in cands if b.size >= key]
        if fit:
            self._release(pool, fit[0])
            return
        total = 0
        for b in reversed(cands):
            if total >= key:
                break
            total += b.size
            self._release(pool, b)

    def _garbage_collect(self) -> None:
        """Release old cached large segments above the garbage-collection threshold."""
        threshold = int(self.config.gc_threshold * self.limit)
        if self.all.rb <= threshold:
            return
        target = self.all.rb - threshold
        pool = self.large
        reclaimed = 0
        while reclaimed < target:
            cands = self._releasable(pool)
            if not cands:
                return
            ages = [pool.calls - b.gc_base for b in cands]
            average = sum(ages) / len(ages)
            freed = False
            for b, age in zip(cands, ages):
                if age >= average and reclaimed < target:
                    reclaimed += b.size
                    self._release(pool, b)
                    freed = True
            if not freed:
                return

    def empty_cache(self) -> None:
        """Release all cached unused segments (PyTorch's ``empty_cache``)."""
        with self.lock:
            self.busy = True
            try:
                self._settle()
                self._flush()
                if self.events:
                    self._sync_events()
                self._release_cached()
            finally:
                self.busy = False
                if self.pending:
                    self._drain()

    # -- streams (NOTE [Cross-stream frees]) -----------------------------------------------
    def set_streams(self, streams) -> None:
        """Make this allocator stream-aware with the provider ``streams`` (see the NOTE)."""
        self.flush()
        with self.lock:
            self.streams = streams
            self.cur_stream = streams.default
            for seg in self.segments.values():
                seg.stream = streams.default
            self.lane_on = False
            self._get_free_block = self._get_free_block_stream
            self.free = self.park = self._free_streams

    def record_stream(self, block: Block, stream) -> None:
        """Mark ``block`` as used by ``stream`` (``Tensor.record_stream``): when freed, it is
        not reused before the work queued on ``stream`` by then has completed."""
        if self.streams is None:
            raise RuntimeError(f"record_stream: the {self.device} allocator has no streams")
        with self.lock:
            if block.allocated is not True or stream == block.seg.stream:
                return
            self.uses.setdefault(block, set()).add(stream)

    def _get_free_block_stream(self, pool: Pool, size: int) -> Block | None:
        """``_get_free_block`` among the current stream's blocks (after completed events)."""
        streams = self.streams
        stream = self.cur_stream = streams.current()
        if self.events:
            self._process_events()
        buckets, sizes = pool.buckets, pool.sizes
        free_blocks = self.free_blocks
        max_split = self.max_split
        for i in range(bisect_left(sizes, size), len(sizes)):
            bsize = sizes[i]
            if max_split < UNLIMITED:
                if size < max_split <= bsize:
                    return None
                if size >= max_split and bsize >= size + self.max_nsr:
                    return None
            bucket = buckets[bsize]
            for j in range(len(bucket) - 1, -1, -1):  # lowest address first
                block = free_blocks[-bucket[j]]
                if block.seg.stream == stream:
                    if self.config.gc_threshold:
                        pool.calls += 1
                    del bucket[j]
                    if not bucket:
                        del buckets[bsize]
                        del sizes[i]
                    return free_blocks.pop(block.ptr)
        return None

    def _free_streams(self, block: Block) -> None:
        """``free`` of a stream-aware allocator: blocks used by other streams wait."""
        if not self.uses or block not in self.uses:
            return CachingAllocator.free(self, block)
        lock = self.lock
        lock.acquire()
        if self.busy:
            self.pending.append(block)
            lock.release()
            return
        self.busy = True
        try:
            self._free_later(block)
        finally:
            self.busy = False
            if self.pending:
                self._drain()
            lock.release()

    def _free_later(self, block: Block) -> None:
        """Count the allocation freed; park the block until its streams' events complete."""
        uses = self.uses.pop(block)
        seg = block.seg
        pool = self.small if seg.small else self.large
        size = block.size
        if self.recording:
            self._record("free_requested", block.ptr, size, block.ctx)
        pool.ab -= size
        pool.ab_fr += size
        pool.ac -= 1
        pool.ac_fr += 1
        if size >= self.max_split:
            self.oa[0] -= 1
            self.oa[3] += 1
        block.allocated = _PENDING
        pf = self.pending_free[seg.small]
        pf[0] += 1
        pf[1] += size
        self.event_count[block] = len(uses)
        for stream in uses:
            event = self.streams.record(stream)
            queue = self.events.get(stream)
            if queue is None:
                queue = self.events[stream] = deque()
            queue.append((event, block))

    def _complete(self, block: Block) -> None:
        """Every event of a parked block completed: free it into its pool."""
        del self.event_count[block]
        seg = block.seg
        pool = self.small if seg.small else self.large
        req = block.requested
        pool.rq -= req
        pool.rq_fr += req
        pf = self.pending_free[seg.small]
        pf[0] -= 1
        pf[1] -= block.size
        self._free_block(block)

    def _event_done(self, block: Block) -> None:
        n = self.event_count[block] - 1
        if n:
            self.event_count[block] = n
        else:
            self._complete(block)

    def _process_events(self) -> None:
        """Free the parked blocks whose events have all completed (each stream in order)."""
        query = self.streams.query
        for stream, queue in list(self.events.items()):
            while queue and query(queue[0][0]):
                self._event_done(queue.popleft()[1])
            if not queue:
                del self.events[stream]

    def _sync_events(self) -> None:
        """Wait for every outstanding event and free the parked blocks."""
        self.num_sync_all_streams += 1
        sync = self.streams.synchronize
        events, self.events = self.events, {}
        for queue in events.values():
            for event, block in queue:
                sync(event)
                self._event_done(block)

    def process_events(self) -> None:
        """Free parked blocks whose events have completed (tests, statistics)."""
        with self.lock:
            if self.events and not self.busy:
                self.busy = True
                try:
                    self._process_events()
                finally:
                    self.busy = False

    # -- history -----------------------------------------------------------------------------
    def _context(self):
        """``(op, frames)`` for a block allocated while recording (frames innermost first)."""
        provider = self.context_provider
        op = provider() if provider is not None else None
        frames = []
        f = sys._getframe(1)
        while f is not None and len(frames) < 64:
            code = f.f_code
            if not code.co_filename.startswith(_MEMORY_DIR):
                frames.append((code.co_filename, f.f_lineno, code.co_name))
            f = f.f_back
        return op, tuple(frames)

    def _record(self, action: str, addr: int, size: int, ctx) -> None:
        self.trace.append((action, addr, size, time.perf_counter_ns() // 1000, self.all.ab,
                           self.all.rb, ctx))

    # -- introspection -----------------------------------------------------------------------
    def largest_free_block(self) -> int:
        """Size of the largest cached free block (0 when none)."""
        self.flush()
        return max((p.sizes[-1] for p in (self.small, self.large) if p.sizes), default=0)

    def check(self) -> None:
        """Assert the allocator's invariants (tests): tiling, merging, pools, counters."""
        self.flush()
        with self.lock:
            totals = {True: [0, 0, 0, 0, 0, 0, 0], False: [0, 0, 0, 0, 0, 0, 0]}
            free_seen = 0
            for addr, seg in self.segments.items():
                assert seg.addr == addr
                b, expect, prev = seg.head, addr, None
                t = totals[seg.small]
                t[0] += seg.size
                t[1] += 1
                while b is not None:
                    assert b.seg is seg and b.prev is prev and b.ptr == expect, "tiling"
                    assert b.size > 0 and b.size % K_MIN_BLOCK == 0
                    if not b.allocated:
                        free_seen += 1
                        assert self.free_blocks.get(b.ptr) is b, "free block not in its pool"
                        assert prev is None or prev.allocated, "unmerged free neighbours"
                        if b.prev is not None or b.next is not None:
                            t[5] += b.size
                            t[6] += 1
                    elif b.allocated is _PENDING:  # freed, awaiting other streams' events
                        t[4] += b.requested
                        assert b in self.event_count
                    else:
                        t[2] += b.size
                        t[3] += 1
                        t[4] += b.requested
                        assert 0 < b.requested <= b.size
                    expect += b.size
                    prev, b = b, b.next
                assert expect == addr + seg.size, "blocks do not tile their segment"
            assert free_seen == len(self.free_blocks)
            for pool in (self.small, self.large):
                n = sum(len(v) for v in pool.buckets.values())
                assert n == sum(1 for b in self.free_blocks.values()
                                if b.seg.small == pool.small)
                assert pool.sizes == sorted(pool.buckets)
                for size, bucket in pool.buckets.items():
                    assert bucket == sorted(bucket) and bucket
                    assert all(self.free_blocks[-p].size == size for p in bucket)
            for c, t in ((self.small, totals[True]), (self.large, totals[False]),
                         (self.all, [a + b for a, b in zip(totals[True], totals[False])])):
                assert (c.rb, c.sc, c.ab, c.ac, c.rq, c.ib, c.ic) == tuple(t), "counters"
                for key in ("ab", "ac", "rq", "rb", "sc", "ib", "ic"):
                    assert getattr(c, key + "_pk") >= getattr(c, key) >= 0, "peak"


def _blocks(seg: Segment):
    b = seg.head
    while b is not None:
        yield b
        b = b.next


_LANE = 2  # Block.allocated of a freed block waiting in the exact-size lane (truthy: no merge)
_PENDING = 3  # Block.allocated of a freed block awaiting other streams (NOTE [Cross-stream ...])
_MEMORY_DIR = os.path.dirname(os.path.abspath(__file__))


class _OOM(Exception):
    """Raised inside the critical section; turned into OutOfMemoryError outside it."""

    def __init__(self, nbytes: int, size: int, alloc_size: int):
        super().__init__(nbytes, size, alloc_size)
        self.nbytes, self.size, self.alloc_size = nbytes, size, alloc_size


# -- one allocator per device ----------------------------------------------------------------
def _make_allocators() -> dict[str, CachingAllocator]:
    from ember.memory.config import caching_disabled, from_environment
    cfg = from_environment()
    caching = not caching_disabled()
    return {"cpu": CachingAllocator("cpu", CpuBackend(), cfg, caching=caching),
            "meta": CachingAllocator("meta", MetaBackend(), cfg, capacity=UNLIMITED,
                                     caching=caching)}


ALLOCATORS = _make_allocators()
CPU_ALLOCATOR = ALLOCATORS["cpu"]
META_ALLOCATOR = ALLOCATORS["meta"]


def allocator_for(device) -> CachingAllocator:
    """The allocator of a device (a ``Device``, a name like ``"cpu"``, or None for cpu)."""
    if device is None:
        return CPU_ALLOCATOR
    name = device if isinstance(device, str) else getattr(device, "type", None)
    if isinstance(name, str) and ":" in name:
        name = name.split(":", 1)[0]
    found = ALLOCATORS.get(name)
    if found is None:
        found = _registered_allocator(name, device)
    return found


def _registered_allocator(name, device) -> CachingAllocator:
    """A new allocator for a device type of the registry (NOTE [Backend descriptors])."""
    from ember.memory.config import caching_disabled, from_environment
    from ember.memory.devices import get_backend
    try:
        backend = get_backend(name) if isinstance(name, str) else None
    except RuntimeError:
        backend = None
    if backend is None or backend.memory is None:
        raise RuntimeError(f"ember.memory: no allocator for device {device!r}; known devices: "
                           f"{', '.join(ALLOCATORS)}")
    found = ALLOCATORS.setdefault(name, CachingAllocator(
        name, backend.memory, from_environment(), capacity=backend.capacity,
        caching=not caching_disabled()))
    return found
