"""Frees parked by dying storages (NOTE [Parked frees]): counted exactly wherever looked at."""

from __future__ import annotations

import threading

import numpy as np

import ember
from ember import memory
from ember.memory.storage import Storage

MiB = 1 << 20
ember.ones(1) + 1  # the CPU kernels import (and allocate while probing) before any test


def stats() -> dict:
    return memory.memory_stats()


def test_a_dead_tensor_is_parked_and_reads_as_freed(fresh):
    t = ember.empty(100)
    del t
    assert len(fresh.parked) == 1  # not counted yet ...
    assert memory.memory_allocated() == 0  # ... but every reader settles first
    assert not fresh.parked
    s = stats()
    assert (s["allocation.all.current"], s["allocation.all.freed"]) == (0, 1)
    assert (s["allocated_bytes.all.freed"], s["requested_bytes.all.freed"]) == (512, 400)
    fresh.check()


def test_a_request_of_the_parked_size_takes_the_block_back(fresh):
    t = ember.empty(100)  # 400 B in a 512 B block
    ptr = t.untyped_storage().data_ptr()
    del t
    u = ember.empty(120)  # 480 B: the same rounded size
    assert not fresh.parked
    assert u.untyped_storage().data_ptr() == ptr
    s = stats()
    assert [s[f"allocation.all.{f}"] for f in ("current", "peak", "allocated", "freed")] == \
        [1, 1, 2, 1]
    assert [s[f"allocated_bytes.small_pool.{f}"] for f in ("current", "peak", "allocated",
                                                           "freed")] == [512, 512, 1024, 512]
    assert [s[f"requested_bytes.all.{f}"] for f in ("current", "peak", "allocated", "freed")] \
        == [480, 480, 880, 400]
    fresh.check()


def test_an_identical_request_takes_the_block_back_without_the_lock(fresh):
    t = ember.empty(100)
    ptr = t.untyped_storage().data_ptr()
    del t
    u = ember.empty(100)
    assert u.untyped_storage().data_ptr() == ptr
    assert not fresh.parked and fresh.trips == [400]  # counted when settled
    s = stats()
    assert not fresh.trips
    assert [s[f"allocation.all.{f}"] for f in ("current", "peak", "allocated", "freed")] == \
        [1, 1, 2, 1]
    assert [s[f"requested_bytes.all.{f}"] for f in ("current", "peak", "allocated", "freed")] \
        == [400, 400, 800, 400]
    assert (s["allocated_bytes.all.allocated"], s["allocated_bytes.all.freed"]) == (1024, 512)
    fresh.check()


def test_lock_free_take_backs_stay_bounded_and_counted(fresh):
    for _ in range(3000):
        t = ember.empty(100)
        del t
    assert len(fresh.trips) <= 1024
    s = stats()
    assert (s["allocation.all.allocated"], s["allocation.all.freed"]) == (3000, 3000)
    assert s["requested_bytes.all.freed"] == 3000 * 400
    assert s["allocated_bytes.all.peak"] == 512
    fresh.check()


def test_other_sizes_settle_the_parked_frees_first(fresh):
    a, b = ember.empty(100), ember.empty(1000)  # 512 and 4096 bytes
    del a, b
    assert len(fresh.parked) == 2
    c = ember.empty(5000)  # a third size: both frees are counted before it
    assert not fresh.parked
    assert memory.memory_allocated() == 20480
    assert memory.max_memory_allocated() == 20480  # not 512 + 4096 + 20480: a, b died first
    del c
    fresh.check()


def test_a_large_request_counts_parked_small_frees_before_its_peak(fresh):
    small = ember.empty(1000)
    del small
    big = ember.empty(3 * MiB, dtype=ember.uint8)
    assert not fresh.parked
    s = stats()
    assert s["allocated_bytes.all.peak"] == 3 * MiB  # not 3 MiB + the small block
    assert s["allocated_bytes.small_pool.current"] == 0
    del big
    fresh.check()


def test_peak_and_accumulated_resets_count_parked_frees_first(fresh):
    t = ember.empty(1000)
    del t
    memory.reset_peak_memory_stats()
    assert memory.max_memory_allocated() == 0
    u = ember.empty(1000)
    del u
    memory.reset_accumulated_memory_stats()
    s = stats()
    assert (s["allocation.all.allocated"], s["allocation.all.freed"]) == (0, 0)


def test_without_the_lane_a_storage_frees_at_once(fresh):
    fresh.set_recording(True)
    try:
        t = ember.empty(100)
        del t
        assert not fresh.parked and fresh.all.ab == 0
        assert [e[0] for e in fresh.trace][-2:] == ["free_requested", "free_completed"]
    finally:
        fresh.set_recording(False)
    t = ember.empty(100)
    del t
    assert len(fresh.parked) == 1


def test_a_block_parked_while_a_call_runs_is_settled_by_the_next(fresh):
    st = Storage(100)
    fresh.busy = True  # as if a malloc were running when the garbage collector ran
    try:
        del st
    finally:
        fresh.busy = False
    assert len(fresh.parked) == 1
    other = Storage(5000)
    assert not fresh.parked and memory.memory_allocated() == 5120
    del other
    fresh.check()


def test_empty_cache_and_snapshots_see_parked_blocks_as_free(fresh):
    t = ember.empty(1000)
    del t
    (segment,) = memory.memory_snapshot()
    assert segment["allocated_size"] == 0
    assert {b["state"] for b in segment["blocks"]} == {"inactive"}
    t = ember.empty(1000)
    del t
    memory.empty_cache()
    assert memory.memory_reserved() == 0 and not fresh.parked


def test_threads_parking_and_taking_back_keep_counters_exact(fresh):
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(400):
                n = int(rng.choice([100, 120, 1000, 70_000]))
                x = ember.ones(n) + 1  # the addition's input dies while the output lives
                del x
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    s = stats()
    assert memory.memory_allocated() == 0 and s["requested_bytes.all.current"] == 0
    assert s["allocation.all.allocated"] == s["allocation.all.freed"] == 4 * 400 * 2
    fresh.check()
