"""The CuPy backend's glue: segments, CuPy's temporaries in ember's allocator, streams.

These run wherever a ``cuda`` device is registered: on a GPU, and in CI on the CuPy stand-in
(``tests/cuda/fake_cupy.py``, through ``test_fake_cupy.py``), where ``cudaMalloc`` is
counted by the stand-in's runtime.
"""

from __future__ import annotations

import gc

import pytest

import ember
from ember.memory.allocator import allocator_for
from tests.cuda._gpu import requires_cuda

pytestmark = requires_cuda
MiB = 1 << 20


def _runtime():
    from ember.backends.cupy_device import runtime
    return runtime


def test_segments_come_from_cuda_malloc_and_go_back_on_empty_cache():
    rt = _runtime()
    gc.collect()
    ember.cuda.empty_cache()
    free0, _ = ember.cuda.mem_get_info()
    x = ember.empty(30 * MiB, dtype=ember.uint8, device="cuda")
    alloc = allocator_for("cuda")
    seg = x.untyped_storage()._block.seg
    assert seg.addr == x.data_ptr() and seg.size == 30 * MiB
    assert isinstance(seg.buf, rt.cupy.ndarray) and seg.buf.data.ptr == seg.addr
    free1, _ = ember.cuda.mem_get_info()
    assert free0 - free1 >= 30 * MiB
    del x
    assert seg.addr in alloc.segments  # cached
    ember.cuda.empty_cache()
    assert seg.addr not in alloc.segments
    assert ember.cuda.mem_get_info()[0] >= free1 + 30 * MiB


def test_arrays_are_views_of_allocator_memory():
    x = ember.arange(10.0, device="cuda")[2:8:2]
    from ember.tensor import numpy_view
    a = numpy_view(x)
    assert a.data.ptr == x.data_ptr() and a.strides == (8,)
    assert x.cpu().tolist() == [2.0, 4.0, 6.0]


def test_cupy_temporaries_are_ember_allocations():
    import cupy
    malloc = cupy.cuda.get_allocator()
    if not getattr(malloc, "__module__", "").startswith("ember"):
        pytest.skip("CuPy's pool serves its temporaries (EMBER_CUDA_CUPY_POOL=1)")
    gc.collect()
    before = ember.cuda.memory_allocated()
    p = malloc(3 * MiB)
    assert ember.cuda.memory_allocated() - before >= 3 * MiB
    del p
    gc.collect()
    assert ember.cuda.memory_allocated() == before


def test_record_stream_through_tensors():
    """The allocator keeps a recorded tensor's block until its stream's event completes (the
    event is real on a GPU; on the stand-in, work is done when queued)."""
    gc.collect()
    side = ember.cuda.Stream()
    x = ember.ones(MiB, device="cuda")
    block = x.untyped_storage()._block
    x.record_stream(side)
    alloc = allocator_for("cuda")
    assert alloc.uses.get(block) == {side.cuda_stream}
    x.record_stream(ember.cuda.current_stream())  # its own stream: nothing to record
    assert alloc.uses.get(block) == {side.cuda_stream}
    del x
    assert block not in alloc.uses and (block in alloc.event_count or not block.allocated)
    side.synchronize()
    y = ember.empty(MiB, device="cuda")  # processes completed events first
    assert not alloc.event_count
    del y
    with pytest.raises(RuntimeError, match="CUDA tensor"):
        ember.ones(2).record_stream(side)


def test_streams_key_segments():
    alloc = allocator_for("cuda")
    s = ember.cuda.Stream()
    with ember.cuda.stream(s):
        x = ember.empty(5 * MiB, dtype=ember.uint8, device="cuda")
    assert x.untyped_storage()._block.seg.stream == s.cuda_stream
    y = ember.empty(5 * MiB, dtype=ember.uint8, device="cuda")
    assert y.untyped_storage()._block.seg.stream == 0
    assert alloc.streams.default == 0
    snap = ember.cuda.memory_snapshot()
    assert s.cuda_stream in {seg["stream"] for seg in snap}


def test_pinned_memory_is_a_cpu_tensor_over_page_locked_bytes():
    x = ember.arange(6.0).reshape(2, 3).t()
    p = x.pin_memory()
    assert p.is_pinned() and p.device.type == "cpu" and p.is_contiguous()
    assert p.tolist() == x.tolist()
    assert ember.cuda.memory_allocated() >= 0
    with pytest.raises(RuntimeError, match="pin"):
        ember.ones(2, device="cuda").pin_memory()


def test_device_hooks():
    assert ember.backends.cuda.is_built() and ember.cuda.is_initialized()
    assert ember.amp.is_autocast_available("cuda")
    major, minor = ember.cuda.get_device_capability()
    assert ember.cuda.get_arch_list() == [f"sm_{major}{minor}"]
    ember.cuda.set_device(0)
    with pytest.raises(RuntimeError, match="invalid device ordinal"):
        ember.cuda.set_device(1)
    with ember.cuda.device(0):
        assert ember.cuda.current_device() == 0
    ember.cuda.manual_seed(3)
    assert ember.cuda.initial_seed() == 3
