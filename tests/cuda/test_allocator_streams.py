"""The caching allocator's stream rules (c10's), checked on the CPU with fake streams.

NOTE [Cross-stream frees] in ember/memory/allocator.py: a segment belongs to the stream it was
allocated on and serves only that stream's requests; a block marked with ``record_stream``
is counted as freed at once but is not reused until an event recorded on each using stream
at free time has completed; ``empty_cache`` and the out-of-memory retry wait for those
events. The fake provider lets each test decide when an event completes, so these rules run
in CI, where there is no GPU.
"""

from __future__ import annotations

import random

import pytest

from ember.errors import OutOfMemoryError
from ember.memory import memory_snapshot, memory_stats
from ember.memory.allocator import K_SMALL_BUFFER, CachingAllocator, CpuBackend
from ember.memory.config import AllocatorConfig, parse_alloc_conf
from ember.memory.history import memory_snapshot as snapshot_of
from ember.memory.stats import memory_stats as stats_of

assert memory_snapshot and memory_stats  # the public functions these mirror


class FakeEvent:
    def __init__(self, stream: int):
        self.stream = stream
        self.done = False
        self.synced = False


class FakeStreams:
    """Streams are ints (0 the default); events complete when the test says so."""

    default = 0

    def __init__(self):
        self.now = 0
        self.events: list[FakeEvent] = []

    def current(self) -> int:
        return self.now

    def record(self, stream: int) -> FakeEvent:
        ev = FakeEvent(stream)
        self.events.append(ev)
        return ev

    def query(self, ev: FakeEvent) -> bool:
        return ev.done

    def synchronize(self, ev: FakeEvent) -> None:
        ev.done = ev.synced = True

    def complete(self, stream: int | None = None) -> None:
        for ev in self.events:
            if stream is None or ev.stream == stream:
                ev.done = True


def make(limit: int | None = None, conf: str = "") -> tuple[CachingAllocator, FakeStreams]:
    alloc = CachingAllocator("cpu", CpuBackend(), parse_alloc_conf(conf) if conf else
                             AllocatorConfig())
    streams = FakeStreams()
    alloc.set_streams(streams)
    if limit is not None:
        alloc.set_limit(limit)
    return alloc, streams


def stat(alloc, key: str) -> int:
    return stats_of(alloc)[key]


def test_a_recorded_block_is_not_reused_before_the_event_completes():
    alloc, streams = make()
    b = alloc.malloc(4096)
    ptr = b.ptr
    alloc.record_stream(b, 1)
    alloc.free(b)
    assert stat(alloc, "allocated_bytes.all.current") == 0  # counted as freed at once
    assert stat(alloc, "active_bytes.all.current") == 4096  # still active
    assert stat(alloc, "requested_bytes.all.current") == 4096
    c = alloc.malloc(4096)
    assert c.ptr != ptr  # the parked block is not handed out
    alloc.check()
    streams.complete(1)
    d = alloc.malloc(4096)
    assert d.ptr == ptr  # the event completed: the block is back in its pool
    assert stat(alloc, "active_bytes.all.current") == 8192
    alloc.free(c)
    alloc.free(d)
    alloc.check()
    assert stat(alloc, "allocated_bytes.all.current") == 0
    assert stat(alloc, "active_bytes.all.current") == 0


def test_every_recorded_stream_must_complete():
    alloc, streams = make()
    b = alloc.malloc(1000)
    ptr = b.ptr
    alloc.record_stream(b, 1)
    alloc.record_stream(b, 2)
    alloc.free(b)
    streams.complete(1)
    first = alloc.malloc(1000)
    assert first.ptr != ptr
    streams.complete(2)
    second = alloc.malloc(1000)
    assert second.ptr == ptr
    alloc.check()


def test_recording_the_allocation_stream_is_a_no_op():
    alloc, streams = make()
    b = alloc.malloc(1000)
    ptr = b.ptr
    alloc.record_stream(b, 0)
    alloc.free(b)
    assert not streams.events
    assert alloc.malloc(1000).ptr == ptr


def test_segments_serve_only_their_own_stream():
    alloc, streams = make()
    streams.now = 1
    b = alloc.malloc(4096)
    alloc.free(b)  # cached in a stream-1 segment
    streams.now = 0
    c = alloc.malloc(4096)
    assert c.seg is not b.seg and c.seg.stream == 0
    streams.now = 1
    d = alloc.malloc(4096)
    assert d.seg is b.seg
    assert {s["stream"] for s in snapshot_of(alloc)} == {0, 1}
    alloc.check()


def test_empty_cache_waits_for_events_and_releases():
    alloc, streams = make()
    b = alloc.malloc(4096)
    alloc.record_stream(b, 3)
    alloc.free(b)
    assert [s["blocks"][0]["state"] for s in snapshot_of(alloc)] == ["active_pending_free"]
    alloc.empty_cache()
    assert streams.events[0].synced
    assert stat(alloc, "num_sync_all_streams") == 1
    assert stat(alloc, "reserved_bytes.all.current") == 0
    alloc.check()


def test_out_of_memory_retry_waits_for_events():
    """As c10: the retry after a miss synchronizes the events and releases cached segments,
    then asks for a new segment (it does not search the pools again), so the request fails;
    the block freed by that synchronization serves the next request."""
    alloc, streams = make(limit=K_SMALL_BUFFER)
    a = alloc.malloc(K_SMALL_BUFFER // 2)  # a and b fill the only segment
    b = alloc.malloc(K_SMALL_BUFFER // 2)
    alloc.record_stream(b, 1)
    alloc.free(b)
    with pytest.raises(OutOfMemoryError):
        alloc.malloc(K_SMALL_BUFFER // 2)
    assert streams.events[0].synced and stat(alloc, "num_sync_all_streams") == 1
    assert stat(alloc, "num_alloc_retries") == 1
    c = alloc.malloc(K_SMALL_BUFFER // 2)
    assert c.ptr == b.ptr
    alloc.free(a)
    alloc.free(c)
    alloc.check()


def test_cpu_allocator_has_no_streams():
    alloc = CachingAllocator("cpu", CpuBackend(), AllocatorConfig())
    b = alloc.malloc(100)
    with pytest.raises(RuntimeError, match="no streams"):
        alloc.record_stream(b, 1)
    alloc.free(b)


@pytest.mark.parametrize("seed", range(8))
def test_random_schedules_keep_the_invariants(seed):
    """Random mallocs, frees, record_streams, stream switches and completions: the pools stay
    consistent and no parked block is handed out while one of its events is pending."""
    rng = random.Random(seed)
    alloc, streams = make(conf="max_split_size_mb:20" if seed % 2 else "")
    live: list = []
    parked: dict[int, list[FakeEvent]] = {}  # ptr -> events of a parked block
    for _ in range(300):
        r = rng.random()
        if r < 0.45 or not live:
            size = rng.choice([100, 512, 4096, 300_000, 1 << 20, 3 << 20, 12 << 20, 24 << 20])
            b = alloc.malloc(size)
            for ptr, evs in list(parked.items()):
                if all(e.done for e in evs):
                    del parked[ptr]
            assert b.ptr not in parked, "reused a parked block"
            live.append(b)
        elif r < 0.75:
            b = live.pop(rng.randrange(len(live)))
            n = len(streams.events)
            alloc.free(b)
            if len(streams.events) > n:
                parked[b.ptr] = streams.events[n:]
        elif r < 0.85:
            alloc.record_stream(rng.choice(live), rng.randrange(3))
        elif r < 0.93:
            streams.now = rng.randrange(3)
        elif r < 0.99:
            streams.complete(rng.randrange(3))
        else:
            alloc.empty_cache()
            parked.clear()
        alloc.check()
    for b in live:
        alloc.free(b)
    alloc.empty_cache()
    alloc.check()
    assert stat(alloc, "allocated_bytes.all.current") == 0
    assert stat(alloc, "active_bytes.all.current") == 0
    assert stat(alloc, "reserved_bytes.all.current") == 0
