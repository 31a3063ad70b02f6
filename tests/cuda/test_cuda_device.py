"""The ``cuda`` device on CuPy: tensors, copies, memory, streams, training (needs a GPU).

Memory figures are checked against the driver (``cudaMemGetInfo`` through
``ember.cuda.mem_get_info``); the stream rules against real streams and events; training
against the same model on the CPU.
"""

from __future__ import annotations

import gc
import io

import numpy as np
import pytest

import ember
from tests.cuda._gpu import FAKE, kernels_pending, requires_cuda

pytestmark = requires_cuda
MiB = 1 << 20
CUDA = "cuda"
N = 256 if FAKE else 4096  # the side stream's matrices: ~20 ms of GPU work at 4096


def _settle():
    gc.collect()
    ember.cuda.synchronize()
    ember.cuda.empty_cache()


# -- tensors and copies -----------------------------------------------------------------------
def test_tensors_live_on_the_device_and_come_back():
    x = ember.arange(12, dtype=ember.float32).reshape(3, 4)
    y = x.cuda()
    assert y.is_cuda and y.device.type == "cuda" and not x.is_cuda
    assert (y * 2 + 1).device.type == "cuda"
    np.testing.assert_array_equal((y * 2 + 1).cpu().numpy(), x.numpy() * 2 + 1)
    assert y.t().contiguous().cpu().tolist() == x.t().tolist()
    assert y.sum().item() == 66.0 and y[1, 2].item() == 6.0
    assert "device='cuda" in repr(y)
    z = ember.ones(2, 3, device="cuda:0", dtype=ember.float64)
    assert z.device.type == "cuda" and z.dtype == ember.float64
    assert y.to("cpu").device.type == "cpu" and y.cuda() is y
    with pytest.raises(TypeError, match="cuda"):
        y.numpy()
    with pytest.raises(RuntimeError, match="same device"):
        y + x


def test_casts_and_non_contiguous_copies_between_devices():
    x = ember.arange(24, dtype=ember.float64).reshape(2, 3, 4).permute(2, 0, 1)
    y = x.to(CUDA, dtype=ember.float32)
    assert y.dtype == ember.float32
    np.testing.assert_array_equal(y.cpu().numpy(), x.numpy().astype(np.float32))
    h = ember.empty(4, 2, 3, dtype=ember.int64)
    h.copy_(y)
    np.testing.assert_array_equal(h.numpy(), x.numpy().astype(np.int64))
    d = ember.zeros(3, 4, device=CUDA)
    d[1].copy_(ember.tensor([1.0, 2.0, 3.0, 4.0]))
    assert d.cpu().tolist()[1] == [1.0, 2.0, 3.0, 4.0]
    half = ember.tensor([1.5, -2.5, 70000.0]).to(CUDA, dtype=ember.float16)
    assert half.dtype == ember.float16 and half.cpu().tolist()[:2] == [1.5, -2.5]


def test_pinned_memory_and_non_blocking_copies():
    x = ember.randn(1000, 100)
    p = x.pin_memory()
    assert p.is_pinned() and not x.is_pinned() and p.device.type == "cpu"
    np.testing.assert_array_equal(p.numpy(), x.numpy())
    d = p.to(CUDA, non_blocking=True)
    ember.cuda.synchronize()
    np.testing.assert_array_equal(d.cpu().numpy(), x.numpy())
    d2 = p.cuda(non_blocking=True)
    ember.cuda.current_stream().synchronize()
    assert ember.equal(d2.cpu(), x)


def test_autograd_on_the_device():
    w = ember.randn(5, 3, dtype=ember.float64).cuda().requires_grad_()
    x = ember.randn(4, 5, dtype=ember.float64).cuda()
    loss = (x @ w).tanh().pow(2).mean()
    loss.backward()
    wc = w.detach().cpu().requires_grad_()
    (x.cpu() @ wc).tanh().pow(2).mean().backward()
    assert w.grad.device.type == "cuda"
    np.testing.assert_allclose(w.grad.cpu().numpy(), wc.grad.numpy(), rtol=1e-12)


def test_save_and_load_with_map_location(tmp_path):
    t = {"w": ember.randn(3, 4).cuda(), "b": ember.arange(3).cuda()}
    buf = io.BytesIO()
    ember.save(t, buf)
    buf.seek(0)
    back = ember.load(buf)
    assert back["w"].device.type == "cuda" and ember.equal(back["w"].cpu(), t["w"].cpu())
    buf.seek(0)
    cpu = ember.load(buf, map_location="cpu")
    assert cpu["w"].device.type == "cpu" and ember.equal(cpu["b"], t["b"].cpu())
    buf2 = io.BytesIO()
    ember.save({"x": ember.ones(2)}, buf2)
    buf2.seek(0)
    assert ember.load(buf2, map_location="cuda")["x"].device.type == "cuda"


def test_device_queries():
    assert ember.cuda.is_available() and ember.cuda.device_count() == 1
    assert ember.cuda.current_device() == 0
    name = ember.cuda.get_device_name()
    assert isinstance(name, str) and name
    props = ember.cuda.get_device_properties(0)
    free, total = ember.cuda.mem_get_info()
    assert props.total_memory == total and 0 < free <= total


# -- memory -----------------------------------------------------------------------------------
def test_allocator_statistics_match_the_driver():
    _settle()
    reserved0 = ember.cuda.memory_reserved()
    free0, _ = ember.cuda.mem_get_info()
    x = ember.empty(256 * MiB, dtype=ember.uint8, device=CUDA)
    free1, _ = ember.cuda.mem_get_info()
    assert ember.cuda.memory_allocated() >= 256 * MiB
    grown = ember.cuda.memory_reserved() - reserved0
    assert grown == 256 * MiB
    assert abs((free0 - free1) - grown) <= 2 * MiB  # the driver's own page rounding
    stats = ember.cuda.memory_stats()
    assert stats["segment.large_pool.current"] >= 1 and stats["num_device_alloc"] >= 1
    del x
    assert ember.cuda.memory_reserved() - reserved0 == grown  # cached, not returned
    ember.cuda.empty_cache()
    free2, _ = ember.cuda.mem_get_info()
    assert ember.cuda.memory_reserved() == reserved0
    assert abs(free2 - free0) <= 2 * MiB
    assert "Memory Allocated" in ember.cuda.memory_summary() or \
        "Allocated memory" in ember.cuda.memory_summary()


def test_fragmentation_out_of_memory_with_a_memory_fraction():
    _settle()
    reserved0 = ember.cuda.memory_reserved()
    total = ember.cuda.get_device_properties(0).total_memory
    ember.cuda.set_per_process_memory_fraction((reserved0 + 64 * MiB + 4096) / total)
    try:
        big = ember.empty(44 * MiB, dtype=ember.uint8, device=CUDA)
        del big  # cached
        smalls = [ember.empty(2 * MiB, dtype=ember.uint8, device=CUDA) for _ in range(10)]
        kept = smalls[1::2]
        del smalls
        with pytest.raises(ember.cuda.OutOfMemoryError) as info:
            ember.empty(26 * MiB, dtype=ember.uint8, device=CUDA)
        msg = str(info.value)
        assert "CUDA out of memory" in msg and "Diagnosis: fragmentation" in msg
        assert "the largest free block is 24.00 MiB" in msg
        assert ember.cuda.memory_stats()["num_ooms"] >= 1
        del kept
        ember.cuda.empty_cache()
        ok = ember.empty(26 * MiB, dtype=ember.uint8, device=CUDA)
        del ok
    finally:
        ember.cuda.set_per_process_memory_fraction(1.0)
        _settle()


def test_memory_history_and_snapshot():
    ember.cuda._record_memory_history()
    try:
        x = ember.ones(1000, device=CUDA) * 3
        snap = ember.cuda.memory_snapshot()
        blocks = [b for s in snap for b in s["blocks"] if b["state"] == "active_allocated"]
        assert any(b.get("frames") for b in blocks)
        del x
    finally:
        ember.cuda._record_memory_history(None)


# -- streams ----------------------------------------------------------------------------------
def _busy(stream, x, n=6):
    """Queue long work on ``stream`` that reads ``x`` (big matrix products)."""
    with ember.cuda.stream(stream):
        a = ember.full((N, N), 0.01, device=CUDA)
        for _ in range(n):
            a = a @ a * 1e-3 + x[: N * N].view(N, N)
    return a


def test_streams_and_events():
    s = ember.cuda.Stream()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    with ember.cuda.stream(s):
        assert ember.cuda.current_stream() == s
        start, end = ember.cuda.Event(enable_timing=True), ember.cuda.Event(enable_timing=True)
        start.record()
        y = ember.ones(1 << 20, device=CUDA) * 2
        end.record()
    assert ember.cuda.current_stream() == ember.cuda.default_stream()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) >= 0
    s.synchronize()
    assert y.sum().item() == 2.0 * (1 << 20)


def test_record_stream_keeps_a_block_until_the_stream_is_done():
    _settle()
    side = ember.cuda.Stream()
    nbytes = N * N * 4
    x = ember.zeros(N * N, device=CUDA)
    ptr = x.data_ptr()
    side.wait_stream(ember.cuda.current_stream())
    out = _busy(side, x)
    x.record_stream(side)
    del x
    y = ember.empty(nbytes, dtype=ember.uint8, device=CUDA)
    if not side.query():  # the side stream still runs: the block must not be reused
        assert y.data_ptr() != ptr
        assert ember.cuda.memory_stats()["active_bytes.all.current"] >= \
            ember.cuda.memory_allocated()
    side.synchronize()
    del y
    z = ember.empty(nbytes, dtype=ember.uint8, device=CUDA)
    assert z.data_ptr() == ptr or ember.cuda.memory_allocated() > 0
    del out, z
    # without record_stream the block is reused at once
    w = ember.zeros(N * N, device=CUDA)
    p2 = w.data_ptr()
    del w
    assert ember.empty(nbytes, dtype=ember.uint8, device=CUDA).data_ptr() == p2


# -- training ---------------------------------------------------------------------------------
def _char_gpt_losses(device, steps=4):
    from ember.examples.gpt import GPT, GPTConfig

    ember.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=65, block_size=32, n_layer=2, n_head=4, n_embd=64))
    model = model.to(device)
    opt = ember.optim.AdamW(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, 65, (8, 33))
    x, y = ember.tensor(idx[:, :-1]).to(device), ember.tensor(idx[:, 1:]).to(device)
    losses = []
    for _ in range(steps):
        _, loss = model(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses


def test_char_gpt_trains_on_the_gpu_as_on_the_cpu():
    with kernels_pending():
        gpu = _char_gpt_losses(CUDA)
    cpu = _char_gpt_losses("cpu")
    np.testing.assert_allclose(gpu, cpu, rtol=2e-4)
    assert gpu[-1] < gpu[0]


# -- mixed precision --------------------------------------------------------------------------
def test_autocast_on_cuda_lowers_matmul_and_keeps_fp32_ops():
    a = ember.randn(8, 8).cuda()
    with ember.autocast("cuda"):
        m = a @ a
        s = m.softmax(-1)
        lin = ember.nn.functional.linear(a, a)
    assert m.dtype == ember.float16 and lin.dtype == ember.float16
    assert s.dtype == ember.float32  # softmax runs in float32 under CUDA autocast
    np.testing.assert_allclose(m.float().cpu().numpy(), (a @ a).cpu().numpy(), rtol=1e-2,
                               atol=1e-2)


def test_grad_scaler_on_cuda():
    model = ember.nn.Linear(4, 2).cuda()
    opt = ember.optim.SGD(model.parameters(), lr=0.1)
    scaler = ember.amp.GradScaler("cuda")
    assert scaler.is_enabled()
    x = ember.randn(3, 4).cuda()
    before = model.weight.detach().cpu()
    with ember.autocast("cuda"):
        loss = model(x).float().pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    assert not ember.equal(model.weight.detach().cpu(), before)
    assert scaler.get_scale() == 65536.0
