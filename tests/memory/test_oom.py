"""Out-of-memory: a deterministic fragmentation scenario, exhaustion, recovery, settings."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import ember
from ember import memory
from ember.memory.config import parse_alloc_conf
from tests.memory.conftest import configured

MiB = 1 << 20


def fragment(fresh):
    """Under 64 MiB: a cached 44 MiB block, carved by ten 2 MiB tensors, every other freed."""
    memory.set_memory_limit(64 * MiB)
    big = ember.empty(44 * MiB, dtype=ember.uint8)
    del big  # cached
    smalls = [ember.empty(2 * MiB, dtype=ember.uint8) for _ in range(10)]
    kept = smalls[1::2]
    del smalls
    return kept


def test_fragmentation_oom_explains_itself_and_the_allocator_recovers(fresh):
    kept = fragment(fresh)
    free_inside = memory.memory_reserved() - memory.memory_allocated()
    assert free_inside == 34 * MiB  # far more than the 26 MiB asked below ...
    assert fresh.largest_free_block() == 24 * MiB  # ... but no block that large
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.empty(26 * MiB, dtype=ember.uint8)
    msg = str(info.value)
    assert isinstance(info.value, RuntimeError)
    assert "Tried to allocate 26.00 MiB" in msg
    assert "the largest free block is 24.00 MiB" in msg
    assert "64.00 MiB allowed" in msg
    assert "10.00 MiB is allocated by tensors" in msg
    assert "34.00 MiB is reserved by ember but unallocated" in msg
    assert "Diagnosis: fragmentation" in msg
    assert "max_split_size_mb" in msg and "empty_cache()" in msg
    stats = memory.memory_stats()
    assert stats["num_ooms"] == 1
    assert stats["num_alloc_retries"] == 1
    fresh.check()  # consistent after the failure
    # the program continues: a request that fits a hole still works
    fine = ember.ones(MiB // 2)
    assert float(fine.sum()) == MiB // 2
    del fine
    fresh.check()
    # release the fragments: the whole segment is free again, and empty_cache returns it
    del kept
    memory.empty_cache()
    assert memory.memory_reserved() == 0
    ok = ember.empty(26 * MiB, dtype=ember.uint8)
    assert memory.memory_reserved() == 26 * MiB
    del ok
    fresh.check()


def test_same_workload_with_max_split_size_does_not_fragment(fresh):
    configured(fresh, "max_split_size_mb:20")
    kept = fragment(fresh)  # the 44 MiB block is oversize: the 2 MiB tensors leave it whole
    ok = ember.empty(26 * MiB, dtype=ember.uint8)  # reuses the cached 44 MiB block
    assert memory.memory_reserved() == 64 * MiB
    assert memory.memory_stats()["num_ooms"] == 0
    del ok, kept
    fresh.check()


def test_real_exhaustion_names_the_remedies_and_the_holders(fresh):
    memory.set_memory_limit(64 * MiB)
    memory.record_history(True)
    held = [ember.zeros(12 * MiB // 4) for _ in range(5)]
    with pytest.raises(ember.OutOfMemoryError) as info:
        ember.empty(16 * MiB, dtype=ember.uint8)
    msg = str(info.value)
    assert "Diagnosis: memory exhausted" in msg
    for remedy in ("smaller batch", "no_grad", "inference_mode", "loss.item()",
                   "activation checkpointing"):
        assert remedy in msg
    assert "Largest live tensors" in msg
    assert "12.00 MiB: ember.float32 [3145728] by zeros" in msg
    assert "test_oom.py" in msg  # the user line that created it
    del held
    fresh.check()


def test_oom_releases_cached_segments_before_failing(fresh):
    memory.set_memory_limit(40 * MiB)
    a = ember.empty(30 * MiB, dtype=ember.uint8)
    del a  # cached 30 MiB
    b = ember.empty(36 * MiB, dtype=ember.uint8)  # needs the cache released: a retry
    assert memory.memory_reserved() == 36 * MiB
    assert memory.memory_stats()["num_alloc_retries"] == 1
    assert memory.memory_stats()["num_ooms"] == 0
    del b


def test_garbage_collection_threshold_releases_old_cached_segments(fresh):
    configured(fresh, "garbage_collection_threshold:0.5")
    memory.set_memory_limit(100 * MiB)
    a = ember.empty(60 * MiB, dtype=ember.uint8)
    del a  # 60 MiB cached: above half the limit
    b = ember.empty(70 * MiB, dtype=ember.uint8)  # the collector frees the cache first
    assert memory.memory_reserved() == 70 * MiB
    assert memory.memory_stats()["num_alloc_retries"] == 0  # no out-of-memory retry needed
    del b


@pytest.mark.parametrize("text, message", [
    ("bogus:1", "Unrecognized CachingAllocator option: bogus"),
    ("max_split_size_mb:5", "max_split_size_mb too small, must be >= 20"),
    ("max_split_size_mb:lots", "bad value 'lots' for CachingAllocator option max_split_size_mb"),
    ("garbage_collection_threshold:1.5", "garbage_collect_threshold is invalid"),
    ("roundup_power2_divisions:3", "roundup_power2_divisions; expected a power of two"),
    ("expandable_segments:True", "expandable_segments:True is not supported"),
    ("max_split_size_mb", "expected key:value"),
])
def test_bad_alloc_conf_fails_clearly(text, message):
    with pytest.raises(RuntimeError, match=message) as info:
        parse_alloc_conf(text)
    assert "EMBER_ALLOC_CONF" in str(info.value)
    with pytest.raises(RuntimeError, match=message):
        memory.set_allocator_settings(text)


def test_good_alloc_conf_parses():
    cfg = parse_alloc_conf("max_split_size_mb:64, garbage_collection_threshold:0.6,"
                           "roundup_power2_divisions:[256:1,512:2,>:4],expandable_segments:False")
    assert cfg.max_split_size == 64 * MiB
    assert cfg.gc_threshold == 0.6
    assert cfg.divisions[:8] == [1] * 8 + [] or cfg.divisions[8] == 1
    assert cfg.divisions[9] == 2 and cfg.divisions[15] == 4


def test_bad_environment_variable_fails_at_import():
    env = dict(os.environ, EMBER_ALLOC_CONF="max_split_size_mb:1")
    proc = subprocess.run([sys.executable, "-c", "import ember"], env=env, capture_output=True,
                          text=True, cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                              os.path.abspath(__file__)))))
    assert proc.returncode != 0
    assert "EMBER_ALLOC_CONF: CachingAllocator option max_split_size_mb too small" in proc.stderr


def test_environment_variable_is_read():
    env = dict(os.environ, EMBER_ALLOC_CONF="max_split_size_mb:40")
    code = "import ember; print(ember.memory.memory_stats()['max_split_size'])"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                              os.path.abspath(__file__)))))
    assert proc.stdout.strip() == str(40 * MiB), proc.stderr
