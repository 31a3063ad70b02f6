"""A second CPU-like device registered from outside ember, the way torch offers PrivateUse1.

The device borrows the CPU kernels (its array module is NumPy) but has its own dispatch key,
its own caching allocator and its own statistics. The op table's pointwise and reduction
entries run on it and must give the CPU results bit for bit (the same kernels run), with every
output on the device; a small MLP trains there exactly as on the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.core.device import Device
from ember.memory import Storage
from ember.ops.special import heaviside
from ember.tensor import make_tensor, numpy_view
from tests.ops.opdb import pointwise as pointwise_db
from tests.ops.opdb import reduction as reduction_db

from .device_numpy import DeviceArray, DeviceMemory, DeviceNumpy, device_as_array

NAME = "ember_test_npu"


def _register() -> Device:
    """Rename PrivateUse1 and register the device once per process (a rename is final)."""
    ember.utils.rename_privateuse1_backend(NAME)
    try:
        ember.utils.get_backend(NAME)
    except RuntimeError:
        ember.utils.register_backend(ember.utils.DeviceBackend(
            NAME, "PrivateUse1", DeviceNumpy(), DeviceMemory(), as_array=device_as_array,
            kernels_from="cpu"))
    return Device(NAME)


DEV = _register()


def to_device(x, memo):
    """``x`` with every tensor copied to DEV in the same geometry (storage sharing kept)."""
    if isinstance(x, ember.Tensor):
        st = x.untyped_storage()
        if id(st) not in memo:
            new = Storage(st.nbytes(), DEV)
            if st.nbytes():
                new.data[...] = ember.utils.get_backend(NAME).from_host(st.data)
            memo[id(st)] = new
        t = make_tensor(memo[id(st)], x._shape, x._stride, x._offset, x.dtype, DEV)
        return t.requires_grad_() if x.requires_grad else t
    if isinstance(x, list | tuple):
        return type(x)(to_device(v, memo) for v in x)
    if isinstance(x, dict):
        return {k: to_device(v, memo) for k, v in x.items()}
    if isinstance(x, ember.Device) and x.type == "cpu":
        return DEV
    return x


def assert_same_on_device(got, ref, where="out"):
    if isinstance(ref, tuple | list):
        assert len(got) == len(ref), where
        for i, (g, r) in enumerate(zip(got, ref)):
            assert_same_on_device(g, r, f"{where}[{i}]")
        return
    if not isinstance(ref, ember.Tensor):
        assert got == ref or (got != got and ref != ref), where
        return
    assert_device_output(got, where)
    assert (got.shape, got.dtype) == (ref.shape, ref.dtype), where
    g = np.array(ember.utils.get_backend(NAME).array_module.asarray(got.detach().cpu()))
    r = np.array(ref.detach())
    if r.ndim == 0 and r.dtype.kind == "f" and r.dtype.itemsize >= 4:
        # a 0-d result: NumPy computes on host scalars, the device on 0-d arrays (CuPy never
        # returns scalars), and NumPy's scalar arithmetic may round the last bit differently
        np.testing.assert_array_max_ulp(g, r, maxulp=2)
        return
    np.testing.assert_array_equal(g, r, err_msg=where)


def assert_device_output(t, where="out"):
    """``t`` lives on DEV: its bytes come from DEV's allocator and its array is a DeviceArray
    (no kernel left a host ``numpy.ndarray`` behind)."""
    assert t.device == DEV, f"{where}: on {t.device}"
    st = t.untyped_storage()
    assert st._alloc is ember.memory.get_allocator(DEV), f"{where}: storage not from DEV"
    assert st.nbytes() == 0 or st._block is not None, f"{where}: storage outside the allocator"
    assert type(st._buf) is DeviceArray, f"{where}: storage bytes are {type(st._buf)}"
    assert type(numpy_view(t)) is DeviceArray, f"{where}: array is {type(numpy_view(t))}"


# entries whose ``fn`` reads results on the host with ``.numpy()``: run directly below
HOST_READING = {"median_dim": "median", "nanmedian_dim": "nanmedian", "mode": "mode"}


def _cases(db):
    """Each entry with its first dtype, and int64 and bfloat16 where it takes them."""
    cases = []
    for info in db.OPS:
        if info.name in HOST_READING:
            continue
        extra = tuple(d for d in info.dtypes if d in ("int64", "bfloat16"))
        for d in dict.fromkeys(info.dtypes[:1] + extra):
            cases.append(pytest.param(info, d, id=f"{info.name}-{d}"))
    return cases


@pytest.mark.parametrize("info,dtype", _cases(pointwise_db) + _cases(reduction_db))
def test_op_table_on_private_device(info, dtype):
    for sample in info.samples(dtype):
        args, kwargs = to_device((sample.args, sample.kwargs), {})
        try:
            ref = info.fn(ember, *sample.args, **sample.kwargs)
        except Exception as exc:  # the CPU refuses: the device refuses the same way
            with pytest.raises(type(exc)):
                info.fn(ember, *args, **kwargs)
            continue
        if not info.compare_values:
            continue
        got = info.fn(ember, *args, **kwargs)
        assert_same_on_device(got, ref, f"{info.name} {sample!r}")


@pytest.mark.parametrize("name", sorted(HOST_READING.values()))
def test_values_and_indices_on_private_device(name):
    x = ember.from_numpy(np.array([[3., 1., 2., 1.], [5., 5., 4., 0.]], np.float32))
    ref = getattr(ember, name)(x, 1)
    got = getattr(ember, name)(to_device(x, {}), 1)
    assert_same_on_device(tuple(got), tuple(ref))


def test_device_keys_and_names():
    from ember.dispatch.keys import key_names
    x = ember.ones(2, device=NAME)
    assert x.device.type == NAME and str(x.device) == NAME
    assert key_names(x._keys) == ["ADInplaceOrView", "PrivateUse1"]
    x.requires_grad_()
    assert key_names(x._keys)[0] == "AutogradPrivateUse1"
    assert getattr(x, f"is_{NAME}") and not ember.ones(1).__getattribute__(f"is_{NAME}")
    assert getattr(ember.ones(2), NAME)().device == DEV
    assert ember.utils.privateuse1_name() == NAME


def test_rename_is_final():
    with pytest.raises(RuntimeError, match="already been set"):
        ember.utils.rename_privateuse1_backend("another_name")
    ember.utils.rename_privateuse1_backend(NAME)  # the same name again is fine
    with pytest.raises(RuntimeError, match="already has a backend"):
        ember.utils.register_backend(ember.utils.DeviceBackend(NAME, "PrivateUse1"))


def test_memory_statistics_are_per_device():
    ember.memory.empty_cache(DEV)
    raw = ember.utils.get_backend(NAME).memory
    segments_before, frees_before = raw.allocs, raw.frees
    cpu_before = ember.memory.memory_stats()["allocated_bytes.all.current"]
    dev_before = ember.memory.memory_stats(device=DEV)["allocated_bytes.all.current"]
    x = ember.empty(1 << 20, device=DEV)  # 4 MiB: large pool
    stats = ember.memory.memory_stats(device=NAME)
    assert stats["allocated_bytes.all.current"] - dev_before == 4 << 20
    assert stats["segment.large_pool.current"] >= 1
    assert ember.memory.memory_stats()["allocated_bytes.all.current"] == cpu_before
    assert ember.memory.get_allocator(DEV) is not ember.memory.get_allocator("cpu")
    del x
    assert ember.memory.memory_allocated(DEV) == dev_before
    assert ember.memory.memory_reserved(DEV) > 0  # cached, not returned
    ember.memory.empty_cache(DEV)
    assert ember.memory.memory_reserved(DEV) == ember.memory.memory_stats(
        device=DEV)["reserved_bytes.all.current"]
    # the segments came from, and went back to, the device's raw memory provider
    assert raw.allocs > segments_before and raw.frees > frees_before


def _mlp_losses(device, steps=5):
    ember.manual_seed(0)
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 3))
    model = model.to(device)
    opt = ember.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(0)
    x = ember.from_numpy(rng.standard_normal((32, 8)).astype(np.float32)).to(device)
    y = ember.from_numpy(rng.integers(0, 3, 32)).to(device)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss)
    for p in model.parameters():
        assert p.device == device and p.grad.device == device
    return [float(v.detach().cpu()) for v in losses], [p.detach().cpu() for p in
                                                      model.parameters()]


def test_mlp_trains_on_private_device():
    before = ember.memory.memory_stats(device=DEV)["allocation.all.allocated"]
    dev_losses, dev_params = _mlp_losses(DEV)
    cpu_losses, cpu_params = _mlp_losses(ember.device("cpu"))
    assert dev_losses == cpu_losses  # the same kernels, bit for bit
    assert dev_losses[-1] < dev_losses[0]
    for a, b in zip(dev_params, cpu_params):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert ember.memory.memory_stats(device=DEV)["allocation.all.allocated"] > before


def test_mixed_devices_raise_like_torch():
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        ember.ones(2, device=NAME) + ember.ones(2)
    assert (ember.ones(2, device=NAME) + ember.tensor(1.0)).device == DEV  # a CPU 0-d: a scalar
    x = ember.ones(2)
    x.copy_(ember.full((2,), 3.0, device=NAME))  # copies cross devices
    assert x.tolist() == [3.0, 3.0]


def test_kernels_reach_arrays_through_the_array_module():
    # NOTE [Kernels and array modules]: the shared helpers take functions from the device's
    # array module; the pointwise tables still bind NumPy's ufuncs (listed there).
    xp = ember.utils.get_backend(NAME).array_module
    x = ember.arange(3.0, device=NAME)
    assert ember.outer(x, x).device == DEV and "multiply" in xp.used  # _util.run_ufunc
    h = ember.empty(3, device=NAME)
    heaviside(x - 1, ember.tensor(0.5, device=NAME), out=h)  # _util.write_result
    assert "copyto" in xp.used and h.tolist() == [0.0, 0.5, 1.0]
    assert ember.empty(0, device=NAME).tolist() == [] and "empty" in xp.used


def test_indexed_device_keeps_its_index():
    x = ember.ones(2, device=f"{NAME}:0")
    assert str(x.device) == f"{NAME}:0"
    assert (x * 2).device == x.device and x.sum().device == x.device
