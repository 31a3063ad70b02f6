"""DLPack interop: zero-copy both ways with NumPy, torch and ember itself."""

from __future__ import annotations

import gc

import ml_dtypes
import numpy as np
import pytest
import torch

import ember
from ember.tensor.interop import from_dlpack, to_dlpack

NUMPY_DTYPES = ["float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8",
                "bool"]
ALL_DTYPES = NUMPY_DTYPES + ["bfloat16"]


def _np_dtype(name):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)


def _values(name, shape, start=1):
    n = int(np.prod(shape))
    if name == "bool":
        return (np.arange(n) % 3 == 0).reshape(shape)
    return (np.arange(start, start + n) % 100).astype(_np_dtype(name)).reshape(shape)


def _one(name):
    return True if name == "bool" else 42


def _layouts(a):
    """The same data contiguous, transposed, sliced with a step, offset, 0-d and empty."""
    return {"contiguous": a, "transposed": a.T, "strided": a[:, ::2], "offset": a[1:, 1:],
            "zero_dim": a[1, 2, ...], "empty": a[:0]}


LAYOUTS = ["contiguous", "transposed", "strided", "offset", "zero_dim", "empty"]


def _torch_of(a):
    t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if a.dtype == ml_dtypes.bfloat16 \
        else torch.from_numpy(a)
    return t


def _torch_values(t):
    return t.float().numpy() if t.dtype is torch.bfloat16 else t.numpy()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_numpy_to_ember_zero_copy(name, layout):
    src = _layouts(_values(name, (4, 6)))[layout]
    x = from_dlpack(src)
    assert x.dtype is getattr(ember, name)
    assert x.shape == src.shape
    assert x.stride() == tuple(s // src.itemsize for s in src.strides) or src.size == 0
    np.testing.assert_array_equal(x.numpy(), src)
    if src.size == 0:
        return
    assert x.data_ptr() == src.ctypes.data
    idx = (0,) * src.ndim
    src[idx] = _one(name)                       # producer write is visible in ember
    assert x[idx].item() == _one(name)
    x[idx] = False if name == "bool" else 7     # ember write is visible in the producer
    assert src[idx] == (False if name == "bool" else 7)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", ALL_DTYPES)
def test_torch_to_ember_zero_copy(name, layout):
    src = _torch_of(_layouts(_values(name, (4, 6)))[layout])
    x = from_dlpack(src)
    assert x.dtype is getattr(ember, name)
    assert x.shape == tuple(src.shape)
    if src.numel() == 0:
        return
    assert x.stride() == src.stride()
    assert x.data_ptr() == src.data_ptr()
    np.testing.assert_array_equal(np.asarray(x).astype(np.float64)
                                  if name == "bfloat16" else x.numpy(), _torch_values(src))
    idx = (0,) * src.dim()
    src[idx] = _one(name)
    assert x[idx].item() == _one(name)
    x[idx] = 0
    assert src[idx].item() == 0


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_ember_to_numpy_zero_copy(name, layout):
    x = _ember_layouts(name)[layout]
    a = np.from_dlpack(x)
    assert a.shape == tuple(x.shape)
    np.testing.assert_array_equal(a, x.numpy())
    if a.size == 0:
        return
    assert a.ctypes.data == x.data_ptr()
    idx = (0,) * a.ndim
    x[idx] = _one(name)
    assert a[idx] == _one(name)
    a[idx] = 0
    assert x[idx].item() == 0


def _ember_layouts(name):
    base = ember.from_numpy(_values(name, (4, 6)))
    return {"contiguous": base, "transposed": base.t(), "strided": base[:, ::2],
            "offset": base[1:, 1:], "zero_dim": base[1, 2], "empty": base[:0]}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("name", NUMPY_DTYPES)
def test_ember_to_torch_zero_copy(name, layout):
    x = _ember_layouts(name)[layout]
    t = torch.from_dlpack(x)
    assert t.dtype is getattr(torch, name)
    assert tuple(t.shape) == tuple(x.shape)
    if t.numel() == 0:
        return
    assert t.stride() == x.stride()
    assert t.data_ptr() == x.data_ptr()
    idx = (0,) * t.dim()
    x[idx] = _one(name)
    assert t[idx].item() == _one(name)
    t[idx] = 0
    assert x[idx].item() == 0


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided", "zero_dim"])
def test_bfloat16_export_with_to_dlpack(layout):
    x = _ember_layouts("bfloat16")[layout]
    t = torch.from_dlpack(to_dlpack(x))
    assert t.dtype is torch.bfloat16
    assert t.stride() == x.stride() and t.data_ptr() == x.data_ptr()
    np.testing.assert_array_equal(t.float().numpy(), np.asarray(x).astype(np.float32))
    idx = (0,) * t.dim()
    t[idx] = 2.5
    assert x[idx].item() == 2.5


def test_bfloat16_export_via_protocol():
    x = ember.arange(4.0).to(ember.bfloat16)
    t = torch.from_dlpack(x)
    assert t.dtype is torch.bfloat16 and t.data_ptr() == x.data_ptr()


@pytest.mark.parametrize("name", ALL_DTYPES)
def test_ember_to_ember_shares_memory(name):
    x = _ember_layouts(name)["transposed"]
    y = from_dlpack(x) if name != "bfloat16" else from_dlpack(to_dlpack(x))
    assert y.dtype is x.dtype and y.shape == x.shape and y.stride() == x.stride()
    assert y.data_ptr() == x.data_ptr()
    y[0, 0] = 1
    assert x[0, 0].item() == 1


def test_ember_tensor_bfloat16_into_from_dlpack():
    x = ember.arange(6.0).to(ember.bfloat16).view(2, 3)
    y = from_dlpack(x)
    assert y.dtype is ember.bfloat16 and y.data_ptr() == x.data_ptr()


def test_public_name():
    assert ember.from_dlpack is from_dlpack


def test_raw_capsules_legacy_and_versioned():
    t = torch.arange(6.0).reshape(2, 3)
    for capsule in (t.__dlpack__(), t.__dlpack__(max_version=(1, 0))):
        x = from_dlpack(capsule)
        assert x.data_ptr() == t.data_ptr() and x.shape == (2, 3)
        x[1, 2] = -1.0          # legacy capsules still give writable memory
        assert t[1, 2].item() == -1.0
        t[1, 2] = 5.0


def test_consumed_capsule_is_rejected():
    capsule = np.arange(3).__dlpack__()
    np.from_dlpack(_Holder(capsule))
    with pytest.raises(ValueError, match="consumed"):
        from_dlpack(capsule)


class _Holder:
    def __init__(self, capsule, device=(1, 0)):
        self.capsule, self.device = capsule, device

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return self.device


def test_producer_memory_outlives_producer():
    a = np.arange(8.0)
    x = from_dlpack(a)
    del a
    gc.collect()
    view = x[2:].numpy()
    del x
    gc.collect()
    np.testing.assert_array_equal(view, np.arange(2.0, 8.0))
    t = torch.arange(5)
    y = from_dlpack(t)
    del t
    gc.collect()
    assert y.tolist() == [0, 1, 2, 3, 4]


def test_read_only_producer_stays_read_only():
    a = np.arange(3.0)
    a.flags.writeable = False
    x = from_dlpack(a)
    assert x.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="read-only"):
        x[0] = 1.0


@pytest.mark.parametrize("arr", [np.zeros(2, np.complex64), np.zeros(2, np.uint16),
                                 np.zeros(2, np.uint32)], ids=["complex64", "uint16", "uint32"])
def test_unsupported_dtype(arr):
    with pytest.raises(TypeError, match="unsupported DLPack dtype"):
        from_dlpack(arr)


def test_negative_strides():
    with pytest.raises(ValueError, match="negative strides"):
        from_dlpack(np.arange(4)[::-1])


def test_errors():
    with pytest.raises(TypeError, match="__dlpack__"):
        from_dlpack([1, 2, 3])
    with pytest.raises(RuntimeError, match="device type"):
        from_dlpack(_Holder(np.arange(2).__dlpack__(), device=(2, 0)))
    with pytest.raises(RuntimeError, match="require gradient"):
        to_dlpack(ember.zeros(2).requires_grad_())
    with pytest.raises(RuntimeError, match="require gradient"):
        np.from_dlpack(ember.zeros(2).requires_grad_())
    with pytest.raises(RuntimeError, match="meta"):
        to_dlpack(ember.zeros(2, device="meta"))
    assert ember.zeros(2).__dlpack_device__() == (1, 0)
