"""Allocation statistics against a brute-force model that recomputes them after every step.

The allocator counts allocated bytes, allocations and requested bytes per pool and derives
"all" on read, with exact peaks (NOTE [Peaks of "all"] in ``ember/memory/allocator.py``).
This model keeps the live blocks and recomputes every current value after each step, takes
the peaks as running maxima and sums allocated/freed by event, for each pool and for "all".
"""

from __future__ import annotations

import random

import pytest

from ember import memory
from ember.memory.allocator import K_SMALL_SIZE, CachingAllocator, MetaBackend
from ember.memory.stats import memory_stats

MiB = 1 << 20
KEYS = {"allocated_bytes": lambda b: b.size, "active_bytes": lambda b: b.size,
        "requested_bytes": lambda b: b.requested, "allocation": lambda b: 1,
        "active": lambda b: 1}
POOLS = {"all": lambda b: True, "small_pool": lambda b: b.size <= K_SMALL_SIZE,
         "large_pool": lambda b: b.size > K_SMALL_SIZE}


class Model:
    def __init__(self):
        self.peak, self.alloc, self.freed = {}, {}, {}

    def current(self, live):
        return {(k, p): sum(f(b) for b in live if inp(b))
                for k, f in KEYS.items() for p, inp in POOLS.items()}

    def step(self, live, malloced=(), freed=()):
        cur = self.current(live)
        for key, value in cur.items():
            self.peak[key] = max(self.peak.get(key, 0), value)
            k, p = key
            f, inp = KEYS[k], POOLS[p]
            self.alloc[key] = self.alloc.get(key, 0) + sum(f(b) for b in malloced if inp(b))
            self.freed[key] = self.freed.get(key, 0) + sum(f(b) for b in freed if inp(b))
        return cur

    def reset_peaks(self, live):
        self.peak = self.current(live)

    def reset_accumulated(self):
        self.alloc, self.freed = {}, {}


def _sizes(rng):
    return rng.choice([rng.randint(1, 4096), rng.randint(4097, MiB), rng.randint(MiB + 1, 30 * MiB),
                       512, 4096, 3 * MiB])


@pytest.mark.parametrize("seed", range(6))
def test_allocation_statistics_match_a_brute_force_model(seed, monkeypatch):
    rng = random.Random(seed)
    a = CachingAllocator("meta", MetaBackend(), capacity=1 << 40)
    monkeypatch.setitem(__import__("ember.memory.allocator", fromlist=["x"]).ALLOCATORS,
                        "meta", a)
    model, live = Model(), []
    for _ in range(400):
        r = rng.random()
        if r < 0.55 or not live:
            n = _sizes(rng)
            block = a.malloc(n)
            # the block's size as handed out: requested and size stay until it is freed
            live.append(block)
            snap = (block.size, block.requested)
            cur = model.step(live, malloced=[_Frozen(*snap)])
        elif r < 0.93:
            block = live.pop(rng.randrange(len(live)))
            snap = _Frozen(block.size, block.requested)
            a.free(block)
            cur = model.step(live, freed=[snap])
        elif r < 0.97:
            memory.reset_peak_memory_stats("meta")
            model.reset_peaks(live)
            cur = model.current(live)
        else:
            memory.reset_accumulated_memory_stats("meta")
            model.reset_accumulated()
            cur = model.current(live)
        # read without a flush first: what memory_allocated / max_memory_allocated answer
        assert memory.memory_allocated("meta") == cur["allocated_bytes", "all"]
        assert memory.max_memory_allocated("meta") == model.peak["allocated_bytes", "all"]
        stats = memory_stats(a)
        for key, value in cur.items():
            name = f"{key[0]}.{key[1]}"
            assert stats[name + ".current"] == value, name
            assert stats[name + ".peak"] == model.peak[key], name
            assert stats[name + ".allocated"] == model.alloc.get(key, 0), name
            assert stats[name + ".freed"] == model.freed.get(key, 0), name
    a.check()


class _Frozen:
    """A block's size and requested bytes at one moment (blocks change once freed)."""

    __slots__ = ("size", "requested")

    def __init__(self, size, requested):
        self.size, self.requested = size, requested


def test_all_peak_after_large_pool_growth_then_small_reuse():
    """A small block reused through the exact-size lane after the large pool grew must still
    raise the "all" peak of allocated bytes, alone: the allocation count and requested bytes
    stay under their peaks, so only the small pool's byte bound (lowered by the large malloc,
    NOTE [Peaks of "all"]) can notice."""
    a = CachingAllocator("meta", MetaBackend(), capacity=1 << 40)
    p, q = a.malloc(1024), a.malloc(512)  # small: 1536 B, 2 allocations at once
    a.free(q)
    a.free(p)  # both parked in the lane
    big = a.malloc(3 * MiB + 2)  # 3 MiB + 512 B, 3 MiB + 2 requested: the peaks of "all"
    a.free(big)
    big = a.malloc(3 * MiB - 511)  # 3 MiB, 3 MiB - 511 requested
    s = a.malloc(513)  # 1024 B from the lane: all = 3 MiB + 1024 B, requested 3 MiB + 2
    assert s is p
    assert a.all.ab_pk == 3 * MiB + 1024
    assert (a.all.ac_pk, a.all.rq_pk) == (2, 3 * MiB + 2)
    assert (a.small.ab_pk, a.large.ab_pk) == (1536, 3 * MiB + 512)
    a.free(s)
    a.free(big)
    assert memory_stats(a)["allocated_bytes.all.peak"] == 3 * MiB + 1024
    a.check()
