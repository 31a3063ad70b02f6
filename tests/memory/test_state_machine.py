"""Allocator invariants under random alloc / free / empty_cache / limit / settings sequences."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ember.errors import OutOfMemoryError
from ember.memory.allocator import CachingAllocator, MetaBackend, allocation_size, round_size
from ember.memory.config import parse_alloc_conf
from ember.memory.stats import memory_stats

MiB = 1 << 20
SIZES = st.one_of(st.integers(1, 4096), st.integers(4097, 2 * MiB),
                  st.integers(2 * MiB, 30 * MiB), st.sampled_from([512, MiB, 10 * MiB, 20 * MiB]))


class AllocatorMachine(RuleBasedStateMachine):
    """Drive a meta-backed allocator (addresses and sizes, no bytes) and check it after each step."""

    def __init__(self):
        super().__init__()
        self.alloc = CachingAllocator("meta", MetaBackend(), capacity=1 << 40)
        self.live: list = []

    @rule(nbytes=SIZES)
    def malloc(self, nbytes):
        try:
            block = self.alloc.malloc(nbytes)
        except OutOfMemoryError:
            # legitimate only when, after releasing every cached segment it could, the segment
            # this request needs does not fit under the limit (partly used segments stay)
            a = self.alloc
            size = (nbytes + 511) & -512 if a.divisions is None else \
                round_size(nbytes, a.divisions)
            assert a.all.rb + allocation_size(size) > a.limit, "out of memory with room left"
            return
        assert block.size >= nbytes and block.requested == nbytes
        self.live.append(block)

    @precondition(lambda self: self.live)
    @rule(i=st.integers(0, 10**6))
    def free(self, i):
        self.alloc.free(self.live.pop(i % len(self.live)))

    @rule()
    def empty_cache(self):
        self.alloc.empty_cache()
        assert all(b.prev is not None or b.next is not None
                   for b in self.alloc.free_blocks.values())

    @rule(limit=st.one_of(st.none(), st.integers(8 * MiB, 200 * MiB)))
    def set_limit(self, limit):
        self.alloc.set_limit(limit)

    @rule(text=st.sampled_from(["", "max_split_size_mb:20", "max_split_size_mb:25",
                                "roundup_power2_divisions:4",
                                "garbage_collection_threshold:0.5"]))
    def configure(self, text):
        self.alloc.configure(parse_alloc_conf(text))

    @invariant()
    def consistent(self):
        a = self.alloc
        a.check()  # tiling, merging, pool index, counters == sums over blocks, peaks >= currents
        live = sorted((b.ptr, b.ptr + b.size) for b in self.live)
        for (_, end), (start, _) in zip(live, live[1:]):
            assert end <= start, "allocated blocks overlap"
        assert a.all.ab == sum(b.size for b in self.live)
        assert a.all.rq == sum(b.requested for b in self.live)
        stats = memory_stats(a)
        for key in ("allocated_bytes", "reserved_bytes", "requested_bytes", "allocation",
                    "segment", "inactive_split", "inactive_split_bytes"):
            for pool in ("all", "small_pool", "large_pool"):
                cur = stats[f"{key}.{pool}.current"]
                assert stats[f"{key}.{pool}.peak"] >= cur >= 0
                assert stats[f"{key}.{pool}.allocated"] - stats[f"{key}.{pool}.freed"] == cur
            assert stats[f"{key}.all.current"] == \
                stats[f"{key}.small_pool.current"] + stats[f"{key}.large_pool.current"]
        assert stats["active_bytes.all.current"] == stats["allocated_bytes.all.current"]
        assert a.oa[0] == sum(1 for b in self.live if b.size >= a.max_split)
        assert a.os[0] == sum(1 for s in a.segments.values() if s.size >= a.max_split)

    def teardown(self):
        for b in self.live:
            self.alloc.free(b)
        self.alloc.empty_cache()
        assert self.alloc.all.rb == 0 and not self.alloc.segments


TestAllocatorMachine = AllocatorMachine.TestCase
TestAllocatorMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None,
                                         suppress_health_check=[HealthCheck.too_slow])
