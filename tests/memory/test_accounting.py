"""Exact accounting of the caching allocator (PyTorch's c10 rules) through real tensors."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import ember
from ember import memory
from ember.memory.allocator import round_size
from tests.memory.conftest import configured

MiB = 1 << 20


def stat(key: str) -> int:
    return memory.memory_stats()[key]


def test_round_size():
    assert round_size(1) == 512
    assert round_size(513) == 1024
    assert round_size(MiB) == MiB
    divs = [4] * 16
    assert round_size(int(1.2 * MiB), divs) == int(1.25 * MiB)
    assert round_size(1200, divs) == 1536  # only above 512 * divisions
    assert round_size(3 * MiB, divs) == 3 * MiB


def test_four_byte_tensor_gets_512_bytes_of_a_new_2mib_segment(fresh):
    t = ember.empty(1)
    assert memory.memory_allocated() == 512
    assert memory.memory_reserved() == 2 * MiB
    assert stat("reserved_bytes.small_pool.current") == 2 * MiB
    assert stat("requested_bytes.all.current") == 4
    assert stat("segment.small_pool.current") == 1
    assert stat("num_device_alloc") == 1
    del t
    assert memory.memory_allocated() == 0
    assert memory.memory_reserved() == 2 * MiB  # cached, not returned
    memory.empty_cache()
    assert memory.memory_reserved() == 0
    assert stat("num_device_free") == 1


@pytest.mark.parametrize("nbytes, segment, block", [
    (5 * MiB, 20 * MiB, 5 * MiB),
    (12 * MiB, 12 * MiB, 12 * MiB),
    (11 * MiB + 1, 12 * MiB, 12 * MiB),  # a remainder <= 1 MiB is not split off
    (MiB + 1, 20 * MiB, MiB + 512),
])
def test_large_requests_get_c10_segment_sizes(fresh, nbytes, segment, block):
    t = ember.empty(nbytes, dtype=ember.uint8)
    assert memory.memory_reserved() == segment
    assert stat("reserved_bytes.large_pool.current") == segment
    assert memory.memory_allocated() == block
    assert stat("requested_bytes.large_pool.current") == nbytes
    del t
    assert memory.memory_reserved() == segment
    memory.empty_cache()
    assert memory.memory_reserved() == 0


def test_large_remainder_of_one_mib_or_less_is_not_split(fresh):
    t = ember.empty(int(19.5 * MiB), dtype=ember.uint8)  # a 20 MiB segment
    assert memory.memory_allocated() == 20 * MiB  # handed out whole
    assert stat("requested_bytes.all.current") == int(19.5 * MiB)
    del t


def test_cached_block_is_reused_and_neighbours_merge(fresh):
    a = ember.empty(1000, dtype=ember.uint8)
    b = ember.empty(1000, dtype=ember.uint8)
    pa, pb = a.data_ptr(), b.data_ptr()
    assert pb - pa == 1024  # carved one after the other
    del a
    c = ember.empty(600, dtype=ember.uint8)  # best fit: the 1024-byte hole at the front
    assert c.data_ptr() == pa
    del b, c
    segs = memory.memory_snapshot()
    assert len(segs) == 1 and len(segs[0]["blocks"]) == 1  # everything merged back
    assert segs[0]["blocks"][0]["state"] == "inactive"
    assert stat("inactive_split_bytes.all.current") == 0
    fresh.check()


def test_freed_memory_stays_reserved_until_empty_cache_and_live_segments_stay(fresh):
    keep = ember.empty(3 * MiB, dtype=ember.uint8)
    tmp = ember.empty(18 * MiB, dtype=ember.uint8)  # too big for the 17 MiB remainder
    assert memory.memory_reserved() == 20 * MiB + 18 * MiB
    del tmp
    assert memory.memory_reserved() == 38 * MiB
    memory.empty_cache()
    assert memory.memory_reserved() == 20 * MiB  # the segment holding ``keep`` stays
    assert keep.numel() == 3 * MiB


def test_max_split_size_keeps_large_blocks_whole(fresh):
    configured(fresh, "max_split_size_mb:20")
    big = ember.empty(30 * MiB, dtype=ember.uint8)
    del big  # a cached 30 MiB oversize block
    small = ember.empty(5 * MiB, dtype=ember.uint8)  # must not split the oversize block
    assert memory.memory_reserved() == 50 * MiB
    assert stat("oversize_segments.current") == 2  # 30 MiB, and the 20 MiB one for ``small``
    again = ember.empty(25 * MiB, dtype=ember.uint8)  # >= max_split: reuses the 30 MiB block
    assert memory.memory_reserved() == 50 * MiB
    assert memory.memory_allocated() == 5 * MiB + 30 * MiB
    assert stat("oversize_allocations.current") == 1
    assert stat("max_split_size") == 20 * MiB
    del small, again
    fresh.check()


def test_zero_byte_storage_allocates_nothing(fresh):
    t = ember.empty(0)
    u = ember.empty(3, 0, dtype=ember.float64)
    assert memory.memory_reserved() == 0 and memory.memory_allocated() == 0
    assert t.untyped_storage().nbytes() == 0 and u.numel() == 0


def test_views_share_one_block(fresh):
    x = ember.empty(256)
    before = memory.memory_allocated()
    v = x[10:20].view(2, 5).t()
    assert memory.memory_allocated() == before
    del x
    assert memory.memory_allocated() == before  # the view keeps the storage
    del v
    assert memory.memory_allocated() == 0


def test_data_ptr_is_the_block_address_and_64_byte_aligned(fresh):
    t = ember.empty(10)
    snap = memory.memory_snapshot()
    assert snap[0]["address"] % 64 == 0
    assert t.data_ptr() == snap[0]["blocks"][0]["address"]
    assert t.data_ptr() == np.asarray(t).ctypes.data


def test_numpy_array_keeps_the_block_alive(fresh):
    t = ember.arange(256, dtype=ember.float32)
    arr = t.numpy()
    ptr = t.data_ptr()
    del t
    gc.collect()
    assert memory.memory_allocated() == 1024  # still allocated: the array can see it
    u = ember.full((256,), 7.0)
    assert u.data_ptr() != ptr  # never handed out again while visible
    assert arr[5] == 5.0 and arr.ctypes.data == ptr
    del arr
    assert memory.memory_allocated() == 1024  # only ``u`` now
    del u
    assert memory.memory_allocated() == 0


def test_array_protocol_and_views_keep_the_block(fresh):
    t = ember.arange(12, dtype=ember.float64).reshape(3, 4)
    col = np.asarray(t[:, 1])  # strided, offset view
    del t
    assert memory.memory_allocated() == 512
    assert col.tolist() == [1.0, 5.0, 9.0]
    del col
    assert memory.memory_allocated() == 0


def test_dlpack_export_keeps_the_block(fresh):
    t = ember.arange(8, dtype=ember.int64)
    arr = np.from_dlpack(t)
    del t
    assert memory.memory_allocated() == 512
    assert arr.tolist() == list(range(8))
    del arr
    gc.collect()
    assert memory.memory_allocated() == 0


def test_from_numpy_memory_is_not_counted(fresh):
    a = np.ones(1000, np.float32)
    t = ember.from_numpy(a)
    assert memory.memory_allocated() == 0
    u = t + 1  # the result is ember's
    assert memory.memory_allocated() == 4096
    del u


def test_meta_device_counts_sizes_without_bytes(fresh_meta):
    t = ember.empty(1000, 1000, device="meta")
    assert memory.memory_allocated("meta") == 4_000_256  # rounded to 512
    assert memory.memory_reserved("meta") == 20 * MiB
    assert t.data_ptr() == 0
    del t
    assert memory.memory_allocated("meta") == 0
    memory.empty_cache("meta")
    assert memory.memory_reserved("meta") == 0


def test_out_resize_goes_through_the_allocator(fresh):
    out = ember.empty(1)
    ember.add(ember.ones(1000), 1, out=out)
    assert out.shape == (1000,)
    assert memory.memory_allocated() == 4096  # ``out``'s old block and ones(1000) are freed
    fresh.check()


def test_peaks_and_resets(fresh):
    a = ember.empty(1000)
    b = ember.empty(1000)
    del b
    assert memory.max_memory_allocated() == 8192 and memory.memory_allocated() == 4096
    memory.reset_peak_memory_stats()
    assert memory.max_memory_allocated() == 4096
    memory.reset_accumulated_memory_stats()
    s = memory.memory_stats()
    assert s["allocated_bytes.all.allocated"] == 0 and s["allocated_bytes.all.freed"] == 0
    del a
    s = memory.memory_stats()
    assert s["allocated_bytes.all.freed"] == 4096 and s["allocation.all.freed"] == 1


def test_memory_fraction_and_limit_round_trip(fresh):
    memory.set_per_process_memory_fraction(0.5)
    assert memory.get_memory_limit() == fresh.capacity // 2
    assert memory.get_per_process_memory_fraction() == pytest.approx(0.5)
    memory.set_memory_limit(64 * MiB)
    assert memory.mem_get_info() == (64 * MiB, fresh.capacity)
    memory.set_memory_limit(None)
    assert memory.get_memory_limit() == fresh.capacity
    with pytest.raises(ValueError, match="Allowed range"):
        memory.set_per_process_memory_fraction(1.5)
    with pytest.raises(ValueError, match="non-negative"):
        memory.set_memory_limit(-1)


def test_cycles_are_returned_on_garbage_collection(fresh):
    class Holder:
        pass
    h = Holder()
    h.me = h
    h.t = ember.empty(1000)
    del h
    assert memory.memory_allocated() == 4096
    gc.collect()
    assert memory.memory_allocated() == 0
