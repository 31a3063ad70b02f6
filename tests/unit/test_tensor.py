"""The Tensor API: storage, geometry, data access, conversions, version counter, views."""

from __future__ import annotations

import gc
import math

import ml_dtypes
import numpy as np
import pytest
import torch

import ember

NAMES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8",
         "bool"]


def E(name):
    return getattr(ember, name)


def T(name):
    return getattr(torch, name)


def pair(name, shape=(3, 4)):
    """The same values as an ember tensor and a torch tensor."""
    n = math.prod(shape)
    values = (np.arange(n) % 7 - 2).reshape(shape)
    if name == "bool":
        values = values > 0
    elif name == "uint8":
        values = np.abs(values)
    t = torch.tensor(values.tolist(), dtype=T(name))
    return ember.tensor(values.tolist(), dtype=E(name)), t


def same_error(fn_ember, fn_torch):
    """Both raise, and with the same builtin exception type."""
    with pytest.raises(Exception) as te:
        fn_torch()
    with pytest.raises(Exception) as ee:
        fn_ember()
    assert isinstance(ee.value, type(te.value)), (type(ee.value), type(te.value))


# -- the acceptance line ---------------------------------------------------------------
def test_acceptance_transpose_is_a_view():
    x = ember.arange(12.0).view(3, 4)
    y = x.t()
    assert y.data_ptr() == x.data_ptr()
    assert not y.is_contiguous()
    assert y.stride() == (1, 4)
    assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()


# -- storage and data pointers ----------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("shape", [(2, 3), (5,), (), (0, 4)])
def test_untyped_storage_nbytes_like_torch(name, shape):
    e = ember.zeros(shape, dtype=E(name))
    t = torch.zeros(shape, dtype=T(name))
    assert e.untyped_storage().nbytes() == t.untyped_storage().nbytes()
    assert e.nbytes == t.nbytes and e.itemsize == t.itemsize


def test_data_ptr_includes_offset():
    x = ember.arange(20, dtype=ember.int32).view(4, 5)
    st = x.untyped_storage()
    for v in (x[1:], x[2, 3:], x[:, 2], x[1:, 1:].t(), x[3, 4]):
        assert v.untyped_storage().data_ptr() == st.data_ptr()
        assert v.data_ptr() == st.data_ptr() + v.storage_offset() * 4
    assert x[2, 3:].storage_offset() == 13


def test_storage_offset_like_torch():
    e, t = pair("float32", (4, 5, 6))
    for f in (lambda x: x[1:, 2], lambda x: x[..., 3:], lambda x: x[2].t()[1:],
              lambda x: x.narrow(2, 4, 2), lambda x: x.diagonal(1, 1, 2)):
        assert f(e).storage_offset() == f(t).storage_offset()
        assert f(e).stride() == f(t).stride()


# -- contiguity ---------------------------------------------------------------------------------
GEOMETRIES = [((3, 4), (4, 1)), ((3, 4), (1, 3)), ((3, 1), (1, 7)), ((1, 4), (9, 1)),
              ((2, 0, 3), (5, 7, 2)), ((0,), (3,)), ((), ()), ((2, 3), (3, 2)),
              ((2, 3), (6, 1)), ((2, 1, 3), (3, 100, 1)), ((3, 4), (0, 1)), ((4,), (2,)),
              ((1, 1), (5, 5)), ((2, 2), (2, 1)), ((2, 2), (1, 2))]


@pytest.mark.parametrize("shape,stride", [
    g for g in GEOMETRIES])
def test_is_contiguous_like_torch(shape, stride):
    e = ember.zeros(64).as_strided(shape, stride)
    t = torch.zeros(64).as_strided(shape, stride)
    assert e.is_contiguous() == t.is_contiguous()


def test_contiguous_returns_self_or_copy():
    x = ember.arange(12.0).view(3, 4)
    assert x.contiguous() is x
    assert ember.zeros(3, 1).as_strided((3, 1), (1, 9)).contiguous().stride() == (1, 9)
    y = x.t()
    c = y.contiguous()
    assert c is not y and c._base is None and c.is_contiguous()
    assert c.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    assert c.stride() == (3, 1)
    assert c.tolist() == y.tolist()


@pytest.mark.parametrize("view", ["t", "step", "expand", "permute", "zero_dim", "empty"])
def test_clone_like_torch(view):
    views = {"t": lambda x: x.t(), "step": lambda x: x[::2], "expand": lambda x: x[:1].expand(3, 3),
             "permute": lambda x: x.view(2, 2, 3).permute(2, 0, 1), "zero_dim": lambda x: x[1, 2],
             "empty": lambda x: x[:0]}
    e, t = pair("float32", (4, 3))
    ev, tv = views[view](e), views[view](t)
    ec, tc = ev.clone(), tv.clone()
    assert ec.stride() == tc.stride() and ec.shape == tc.shape
    assert ec._base is None and not ec._is_view()
    assert ec.tolist() == tc.tolist()
    if ev.numel():
        assert ec.untyped_storage().data_ptr() != ev.untyped_storage().data_ptr()
        ec.fill_(5.0)
        assert ev.tolist() == tv.tolist()  # the original is untouched


def test_detach_shares_storage_and_version():
    x = ember.arange(6.0).view(2, 3).requires_grad_()
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None
    assert d.data_ptr() == x.data_ptr() and d.stride() == x.stride()
    assert not d._is_view() and d._base is None
    v = x._version
    d.add_(1.0)
    assert x._version == d._version == v + 1
    assert x.detach().tolist()[0] == [1.0, 2.0, 3.0]


# -- NumPy ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_numpy_shares_memory(name):
    x = ember.zeros(3, 4, dtype=E(name)).t()
    a = x.numpy()
    assert a.dtype == (ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name))
    assert a.shape == (4, 3) and a.ctypes.data == x.data_ptr()
    a[1, 2] = 1
    assert x[1, 2].item() == 1
    x[0, 1] = 1
    assert a[0, 1] == 1


def test_numpy_keeps_storage_alive():
    x = ember.arange(1000.0)
    a = x[10:20].numpy()
    ptr = a.ctypes.data
    del x
    gc.collect()
    junk = [ember.full((1000,), 7.0) for _ in range(20)]  # would reuse freed memory
    assert a.ctypes.data == ptr
    np.testing.assert_array_equal(a, np.arange(10.0, 20.0))
    del junk


def test_numpy_errors_like_torch():
    same_error(lambda: ember.zeros(2).requires_grad_().numpy(),
               lambda: torch.zeros(2).requires_grad_().numpy())
    same_error(lambda: ember.zeros(2, device="meta").numpy(),
               lambda: torch.zeros(2, device="meta").numpy())
    assert ember.zeros(2).requires_grad_().numpy(force=True).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("name", NAMES)
def test_from_numpy_shares_memory(name):
    npdt = ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name)
    a = np.zeros((4, 6), dtype=npdt)
    for arr in (a, a.T, a[::2, 1::3], a[1:, 2:], a[1, 2, ...]):
        x = ember.from_numpy(arr)
        assert x.dtype is E(name) and x.shape == arr.shape
        assert x.stride() == tuple(s // arr.itemsize for s in arr.strides)
        assert x.data_ptr() == arr.ctypes.data
        idx = (0,) * arr.ndim
        arr[idx] = 1
        assert x[idx].item() == 1
        x[idx] = 0
        assert arr[idx] == 0


def test_from_numpy_keeps_array_alive_and_empty():
    x = ember.from_numpy(np.arange(5.0))
    gc.collect()
    assert x.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    e = ember.from_numpy(np.zeros((0, 3), np.int32))
    assert e.shape == (0, 3) and e.dtype is ember.int32


def test_from_numpy_errors_like_torch():
    neg = np.arange(4.0)[::-1]
    with pytest.raises(ValueError, match="negative"):
        ember.from_numpy(neg)
    with pytest.raises(ValueError):
        torch.from_numpy(neg)
    odd = np.lib.stride_tricks.as_strided(np.zeros(10, np.int16), (3,), (3,))
    with pytest.raises(ValueError, match="multiple of the element byte size"):
        ember.from_numpy(odd)
    for bad in (np.zeros(2, np.uint64), np.zeros(2, np.uint16), np.zeros(2, np.float128)
                if hasattr(np, "float128") else np.zeros(2, np.uint32)):
        with pytest.raises(TypeError, match="can't convert np.ndarray"):
            ember.from_numpy(bad)
    with pytest.raises(TypeError):
        ember.from_numpy([1.0, 2.0])


@pytest.mark.parametrize("name", NAMES)
def test_array_protocol(name):
    e, t = pair(name)
    a = np.asarray(e)
    assert a.ctypes.data == e.data_ptr()
    np.testing.assert_array_equal(a.astype(np.float64), np.asarray(t.float()).astype(np.float64)
                                  if name == "bfloat16" else np.asarray(t).astype(np.float64))
    assert np.asarray(e, dtype=np.float64).dtype == np.float64


# -- Python values ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", NAMES)
def test_item_and_tolist_like_torch(name):
    e, t = pair(name, (2, 3, 2))
    assert e.tolist() == t.tolist()
    assert e[1, 2, 1].item() == t[1, 2, 1].item()
    assert type(e[1, 2, 1].item()) is type(t[1, 2, 1].item())
    assert e[0, 1, 0].tolist() == t[0, 1, 0].tolist()
    assert e.permute(2, 0, 1).tolist() == t.permute(2, 0, 1).tolist()
    assert e[:0].tolist() == []
    assert e[0, :1, :1].item() == t[0, :1, :1].item()


def test_item_errors():
    same_error(lambda: ember.zeros(2).item(), lambda: torch.zeros(2).item())
    same_error(lambda: ember.zeros(0).item(), lambda: torch.zeros(0).item())


def test_len_iter_bool_like_torch():
    e, t = pair("float32", (3, 4))
    assert len(e) == len(t) == 3
    rows = list(e)
    assert [r.tolist() for r in rows] == [r.tolist() for r in t]
    assert all(r.data_ptr() == e[i].data_ptr() and r._base is not None
               for i, r in enumerate(rows))
    assert [r.item() for r in ember.arange(3)] == [0, 1, 2]
    same_error(lambda: len(ember.tensor(1.0)), lambda: len(torch.tensor(1.0)))
    same_error(lambda: iter(ember.tensor(1.0)), lambda: iter(torch.tensor(1.0)))
    assert bool(ember.tensor([2.0])) and not bool(ember.tensor(0))
    assert bool(ember.tensor([[True]]))
    same_error(lambda: bool(ember.zeros(2)), lambda: bool(torch.zeros(2)))
    same_error(lambda: bool(ember.zeros(0)), lambda: bool(torch.zeros(0)))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        bool(ember.zeros(2))
    assert float(ember.tensor([2.5])) == 2.5 and int(ember.tensor(7)) == 7
    assert [10, 20, 30][ember.tensor(1)] == 20
    same_error(lambda: [1, 2][ember.tensor(1.0)], lambda: [1, 2][torch.tensor(1.0)])
    assert f"{ember.tensor(2.5):.2f}" == "2.50"


# -- geometry accessors -----------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 3, 4), (1, 0, 5)])
@pytest.mark.parametrize("name", ["float32", "float16", "int64", "bool", "uint8"])
def test_geometry_accessors_like_torch(shape, name):
    e, t = ember.zeros(shape, dtype=E(name)), torch.zeros(shape, dtype=T(name))
    assert e.size() == t.size() and e.shape == t.shape
    assert isinstance(e.size(), ember.Size) and repr(e.shape) == repr(t.shape).replace(
        "torch.", "ember.")
    assert e.dim() == t.dim() and e.ndim == t.ndim and e.ndimension() == t.ndimension()
    assert e.numel() == t.numel() and e.nelement() == t.nelement()
    assert e.element_size() == t.element_size()
    assert e.stride() == t.stride()
    for d in range(-max(len(shape), 1), max(len(shape), 1)):
        if shape:
            assert e.size(d) == t.size(d) and e.stride(d) == t.stride(d)
    same_error(lambda: e.size(5), lambda: t.size(5))
    same_error(lambda: e.stride(-5), lambda: t.stride(-5))
    assert e.is_floating_point() == t.is_floating_point()
    assert e.is_signed() == t.is_signed()
    assert e.shape.numel() == t.shape.numel()


def test_size_behaves_like_a_tuple():
    s = ember.zeros(2, 3, 4).size()
    assert s == (2, 3, 4) and s[1:] == (3, 4) and isinstance(s[1:], ember.Size)
    assert isinstance(s + (5,), ember.Size) and s[-1] == 4


# -- conversions --------------------------------------------------------------------------------
CAST_PAIRS = [
    (src, dst) for src in NAMES for dst in NAMES]


@pytest.mark.parametrize("src,dst", CAST_PAIRS)
def test_to_dtype_values_like_torch(src, dst):
    e, t = pair(src, (2, 5))
    er, tr = e.to(E(dst)), t.to(T(dst))
    assert er.dtype is E(dst) and er.shape == tr.shape
    got = er.float().tolist() if dst == "bfloat16" else er.tolist()
    want = tr.float().tolist() if dst == "bfloat16" else tr.tolist()
    assert got == want


def test_to_returns_self_when_nothing_changes():
    x = ember.zeros(2, 3)
    assert x.to(ember.float32) is x
    assert x.to("cpu") is x and x.to(ember.device("cpu")) is x
    assert x.to(ember.zeros(1)) is x
    assert x.to("cpu", ember.float32) is x
    assert x.to(dtype=ember.float32, device="cpu") is x
    assert x.float() is x and x.type_as(ember.zeros(1)) is x
    c = x.to(ember.float32, copy=True)
    assert c is not x and c.data_ptr() != x.data_ptr()
    y = x.to(ember.zeros(1, dtype=ember.int8))
    assert y.dtype is ember.int8 and y._base is None
    assert x.t().to(ember.float64).stride() == torch.zeros(2, 3).t().double().stride()


@pytest.mark.parametrize("method,name", [("float", "float32"), ("double", "float64"),
                                         ("half", "float16"), ("bfloat16", "bfloat16"),
                                         ("long", "int64"), ("int", "int32"), ("bool", "bool"),
                                         ("short", "int16"), ("char", "int8"), ("byte", "uint8")])
def test_cast_methods(method, name):
    e = ember.tensor([-1.75, 0.0, 2.5, 3.0])
    t = torch.tensor([-1.75, 0.0, 2.5, 3.0])
    if name == "uint8":
        e, t = e.abs(), t.abs()
    er, tr = getattr(e, method)(), getattr(t, method)()
    assert er.dtype is E(name)
    assert er.float().tolist() == tr.float().tolist()
    assert e.type_as(ember.zeros(1, dtype=E(name))).dtype is E(name)


def test_to_meta_and_meta_data_access():
    x = ember.arange(6.0).view(2, 3)
    m = x.to("meta")
    assert m.is_meta and m.device.type == "meta" and not x.is_meta
    assert m.shape == (2, 3) and m.dtype is ember.float32 and m.stride() == (3, 1)
    assert x.t().to("meta").stride() == (1, 3)
    assert m.to("meta") is m
    tm = torch.arange(6.0).view(2, 3).to("meta")
    same_error(lambda: m.numpy(), lambda: tm.numpy())
    same_error(lambda: m[0, 0].item(), lambda: tm[0, 0].item())
    same_error(lambda: bool(m[0, 0]), lambda: bool(tm[0, 0]))
    same_error(lambda: m.to("cpu"), lambda: tm.to("cpu"))
    with pytest.raises(RuntimeError, match="meta"):
        np.asarray(m)


def test_meta_tolist_error_type():
    same_error(lambda: ember.zeros(2, device="meta").tolist(),
               lambda: torch.zeros(2, device="meta").tolist())


# -- version counter, _base, _meta_key ---------------------------------------------------------
def test_version_counter_shared_and_bumped():
    x = ember.zeros(3, 4)
    v = x[1]
    w = x.t()[2:]
    assert x._version == v._version == w._version == 0
    v.add_(1.0)
    assert x._version == v._version == w._version == 1
    w.copy_(ember.ones(2, 3))
    assert x._version == 2
    x[0, 0] = 5.0
    assert x._version == v._version == 3
    x[:, 1] = ember.zeros(3)
    assert w._version == 4
    _ = x + 1
    _ = x.t().contiguous()
    assert x._version == 4
    c = x.clone()
    assert c._ver is not x._ver
    c.mul_(2)
    assert x._version == 4


@pytest.mark.parametrize("op", ["clone", "contiguous", "double", "reshape"])
def test_fresh_copies_start_at_version_zero(op):
    fns = {"clone": lambda a: a.clone(), "contiguous": lambda a: a.t().contiguous(),
           "double": lambda a: a.double(), "reshape": lambda a: a.t().reshape(6)}
    assert fns[op](ember.zeros(2, 3))._version == fns[op](torch.zeros(2, 3))._version == 0


def test_version_counter_against_torch():
    ops = [lambda a: a.add_(1), lambda a: a[0].mul_(2), lambda a: a.copy_(a.clone()),
           lambda a: a.__setitem__(1, 3.0), lambda a: a.t().zero_(), lambda a: a.fill_(1.0),
           lambda a: a + 1, lambda a: a.view(-1)]
    e, t = ember.zeros(2, 3), torch.zeros(2, 3)
    for op in ops:
        op(e)
        op(t)
        assert e._version == t._version


def test_base_is_the_root():
    r = ember.arange(24.0)
    assert r._base is None and not r._is_view()
    x = r.view(2, 3, 4)
    chain = [x, x.transpose(0, 2), x[1], x[1][2], x[1][2][1:], x.permute(1, 0, 2)[0],
             x.unsqueeze(0).expand(2, 2, 3, 4), x.diagonal(0, 1, 2).unsqueeze(-1)]
    for v in chain:
        assert v._base is r and v._is_view()
    assert x.clone()._base is None and x.contiguous()._base is r


def test_meta_key_cache():
    a, b = ember.zeros(2, 3), ember.ones(2, 3)
    assert a._meta_key == b._meta_key
    assert a._meta_key != a.t()._meta_key
    assert a._meta_key != ember.zeros(2, 3, dtype=ember.float64)._meta_key
    assert a._meta_key != ember.zeros(2, 3, device="meta")._meta_key
    assert a._meta_key != ember.zeros(3, 2)._meta_key
    key = a._meta_key
    a.requires_grad_()
    assert a._meta_key != key and a._meta_key[-1] is True
    a.requires_grad_(False)
    assert a._meta_key == key
    x = ember.zeros(2, 3)
    x._set_meta((3, 2), (1, 3), 0)
    assert x._meta_key == ember.zeros(2, 3).t()._meta_key


def test_legacy_constructor():
    assert ember.Tensor(2, 3).shape == (2, 3) and ember.Tensor(2, 3).dtype is ember.float32
    assert ember.Tensor([1, 2]).dtype is ember.float32 and ember.Tensor([1, 2]).tolist() == [1, 2]
    assert ember.Tensor().shape == (0,)


def test_requires_grad_rules_like_torch():
    same_error(lambda: ember.zeros(2, dtype=ember.int64).requires_grad_(),
               lambda: torch.zeros(2, dtype=torch.int64).requires_grad_())
    x = ember.zeros(2)
    x.requires_grad = True
    assert x.requires_grad and x.is_leaf


def test_device_properties():
    x = ember.zeros(2)
    assert x.device == ember.device("cpu") and x.is_cpu and not x.is_cuda and not x.is_meta
    assert x.get_device() == torch.zeros(2).get_device()
    assert str(x.device) == "cpu" and repr(x.device) == "device(type='cpu')"
