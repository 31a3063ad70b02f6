"""Re-entrant frees, threads, pass-through mode, foreign memory."""

from __future__ import annotations

import threading

import numpy as np

import ember
from ember import memory
from ember.memory.allocator import CachingAllocator, MetaBackend
from ember.memory.storage import Storage

MiB = 1 << 20


def test_free_during_a_running_call_is_queued_and_done_at_its_end():
    a = CachingAllocator("meta", MetaBackend(), capacity=1 << 40)
    b1, b2 = a.malloc(1000), a.malloc(1000)
    a.busy = True  # as if a malloc were running when the garbage collector freed b1
    a.free(b1)
    assert a.pending == [b1] and a.all.ab == 2048
    assert a.malloc(10) is None  # a re-entrant malloc is refused, not interleaved
    a.busy = False
    a.free(b2)  # the next call settles the queue too
    assert not a.pending and a.all.ab == 0
    a.check()


def test_storage_falls_back_to_uncached_memory_when_re_entered(fresh):
    fresh.busy = True
    try:
        st = Storage(100)
    finally:
        fresh.busy = False
    assert st._block is None and st.nbytes() == 100 and st.data.shape == (100,)
    assert memory.memory_allocated() == 0


def test_threads_allocating_and_freeing_leave_the_allocator_consistent(fresh):
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            keep = []
            for _ in range(300):
                keep.append(ember.empty(int(rng.integers(1, 300_000)), dtype=ember.uint8))
                if len(keep) > 5:
                    keep.pop(int(rng.integers(0, len(keep))))
        except Exception as err:  # noqa: BLE001
            errors.append(err)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert memory.memory_allocated() == 0
    fresh.check()


def test_pass_through_mode_returns_memory_on_free():
    a = CachingAllocator("meta", MetaBackend(), capacity=1 << 40, caching=False)
    blocks = [a.malloc(n) for n in (100, 3 * MiB, 700)]
    assert a.all.rb == 512 + 3 * MiB + 1024  # a segment per block, of its own size
    for b in blocks:
        a.free(b)
    assert a.all.rb == 0 and a.num_device_free == 3
    a.check()


def test_dlpack_import_is_not_counted(fresh):
    a = np.ones(1000)
    t = ember.from_dlpack(a)
    assert memory.memory_allocated() == 0 and t.shape == (1000,)
