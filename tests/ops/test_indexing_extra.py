"""Advanced indexing beyond the op table: random index combinations against torch, storage
and version-counter effects of ``__setitem__``, Meta behaviour of data-dependent ops."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.dispatch import Tag
from ember.ops import scatter_gather as sg
from tests.opinfo import to_torch


# -- random index combinations ----------------------------------------------------------------
@st.composite
def index_case(draw):
    """A shape and an index tuple mixing ints, slices, None, ..., lists, bools, tensors, masks."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    items, dim, used_ellipsis = [], 0, False
    n_adv = draw(st.integers(1, 3))
    adv_len = draw(st.integers(1, 3))
    while dim < len(shape) and len(items) < 6:
        size = shape[dim]
        kind = draw(st.sampled_from(["int", "slice", "none", "tensor", "list", "mask", "bool",
                                     "ellipsis", "tensor"]))
        if kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
            dim += 1
        elif kind == "slice":
            start = draw(st.one_of(st.none(), st.integers(-size, size)))
            stop = draw(st.one_of(st.none(), st.integers(-size, size)))
            items.append(slice(start, stop, draw(st.one_of(st.none(), st.integers(1, 3)))))
            dim += 1
        elif kind == "none":
            items.append(None)
        elif kind == "bool":
            items.append(draw(st.booleans()))
        elif kind == "ellipsis" and not used_ellipsis:
            used_ellipsis = True
            items.append(Ellipsis)
            dim = len(shape) - draw(st.integers(0, len(shape) - dim))
        elif kind == "mask":
            k = draw(st.integers(1, len(shape) - dim))
            bits = draw(st.lists(st.booleans(), min_size=int(np.prod(shape[dim:dim + k])),
                                 max_size=int(np.prod(shape[dim:dim + k]))))
            items.append(("mask", np.array(bits, bool).reshape(shape[dim:dim + k])))
            dim += k
        elif kind in ("tensor", "list") and n_adv > 0:
            n_adv -= 1
            values = draw(st.lists(st.integers(-size, size - 1), min_size=adv_len,
                                   max_size=adv_len))
            items.append(values if kind == "list" else ("tensor", np.array(values)))
            dim += 1
    return shape, tuple(items)


def _lib_index(items, lib):
    out = []
    for it in items:
        if isinstance(it, tuple):
            out.append(lib.tensor(it[1]) if lib is torch else ember.tensor(it[1]))
        else:
            out.append(it)
    return tuple(out)


def _outcome(fn):
    try:
        return fn(), None
    except (IndexError, RuntimeError, ValueError, TypeError) as e:
        return None, type(e)


@settings(max_examples=60, deadline=None)
@given(index_case(), st.sampled_from(["contiguous", "permuted"]))
def test_getitem_matches_torch(case, layout):
    shape, items = case
    data = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ember.tensor(data) if layout == "contiguous" else \
        ember.tensor(np.ascontiguousarray(data.T)).permute(*reversed(range(len(shape))))
    t = to_torch(x)
    want, t_err = _outcome(lambda: t[_lib_index(items, torch)])
    got, e_err = _outcome(lambda: x[_lib_index(items, ember)])
    assert e_err == t_err, f"{items}: ember raised {e_err}, torch {t_err}"
    if want is not None:
        assert tuple(got.shape) == tuple(want.shape), items
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@settings(max_examples=60, deadline=None)
@given(index_case(), st.booleans())
def test_setitem_matches_torch(case, scalar):
    shape, items = case
    x = ember.tensor(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape))
    t = to_torch(x)
    t_idx, e_idx = _lib_index(items, torch), _lib_index(items, ember)
    target, err = _outcome(lambda: t[t_idx])
    if err is not None:
        return
    if _has_duplicates(t, t_idx):
        return  # which duplicate wins is undefined in torch
    value = -7.5 if scalar else torch.randn(target.shape)
    t[t_idx] = value
    before = x._version
    x[e_idx] = value if scalar else ember.tensor(value.numpy())
    np.testing.assert_array_equal(x.numpy(), t.numpy())
    assert x._version == before + 1


def _has_duplicates(t: torch.Tensor, idx) -> bool:
    positions = torch.arange(t.numel()).reshape(t.shape)[idx]
    return positions.numel() != positions.unique().numel()


# -- storage and version counters ----------------------------------------------------------------
def test_advanced_getitem_is_a_copy():
    x = ember.arange(12.0).view(3, 4)
    y = x[ember.tensor([0, 2])]
    assert y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr()
    y[0, 0] = 100.0
    assert x[0, 0].item() == 0.0


def test_basic_part_is_still_a_view_before_the_copy():
    x = ember.arange(24.0).view(2, 3, 4)
    ptr = x.untyped_storage().data_ptr()
    assert x[1, ..., 2].untyped_storage().data_ptr() == ptr
    assert x[ember.tensor(1)].untyped_storage().data_ptr() == ptr  # 0-d int tensor selects


def test_setitem_writes_through_views_and_bumps_once():
    base = ember.zeros(4, 5)
    view = base[1:].t()  # (5, 3), non-contiguous
    before = base._version
    view[ember.tensor([0, 4]), 1:] = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    assert base._version == view._version == before + 1
    expected = np.zeros((4, 5), np.float32)
    expected[2:, 0] = [1.0, 2.0]
    expected[2:, 4] = [3.0, 4.0]
    np.testing.assert_array_equal(base.numpy(), expected)


def test_setitem_with_mask_and_scalar():
    x = ember.tensor([[1.0, -2.0], [-3.0, 4.0]])
    before = x._version
    x[ember.tensor([[False, True], [True, False]])] = 0.0
    assert x.tolist() == [[1.0, 0.0], [0.0, 4.0]]
    assert x._version == before + 1


def test_basic_setitem_bumps_once():
    x = ember.zeros(3, 4)
    before = x._version
    x[1, 1:3] = ember.ones(1, 2)  # leading size-1 dims of the value are ignored
    assert x._version == before + 1
    assert x.numpy()[1].tolist() == [0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("value", [[1.9, -2.5], 1.5], ids=["1-d", "0-d"])
def test_advanced_setitem_refuses_another_dtype_like_torch(value):
    """Tensor indices: a tensor value of another dtype raises torch's error and writes nothing;
    a Python number is cast; basic indices cast a tensor value (copy_)."""
    tx, ex = torch.zeros(3, dtype=torch.int64), ember.zeros(3, dtype=ember.int64)
    with pytest.raises(RuntimeError) as t_err:
        tx[torch.tensor([0, 2])] = torch.tensor(value, dtype=torch.float64)
    with pytest.raises(RuntimeError) as e_err:
        ex[ember.tensor([0, 2])] = ember.tensor(value, dtype=ember.float64)
    assert str(e_err.value) == str(t_err.value)
    assert ex.tolist() == [0, 0, 0] and ex._version == 0
    ex[ember.tensor([0, 2])] = 2.7
    mask = ember.tensor([True, False, False])
    ex[mask] = -1
    ex[1:2] = ember.tensor([5.9], dtype=ember.float64)
    assert ex.tolist() == [-1, 5, 2]


def test_setitem_duplicate_indices_last_write_wins():
    x = ember.zeros(3)
    x[ember.tensor([1, 1, 1])] = ember.tensor([1.0, 2.0, 3.0])
    assert x.tolist() == [0.0, 3.0, 0.0]


def test_setitem_refuses_expanded_target():
    x = ember.zeros(3, 1).expand(3, 4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x[ember.tensor([0])] = 1.0


@pytest.mark.parametrize("call", [
    lambda x: x.scatter_(1, ember.tensor([[0]]), 1.0),
    lambda x: x.scatter_add_(1, ember.tensor([[0]]), ember.ones(1, 1)),
    lambda x: x.scatter_reduce_(1, ember.tensor([[0]]), ember.ones(1, 1), "amax"),
    lambda x: x.index_add_(0, ember.tensor([0]), ember.ones(1, 4)),
    lambda x: x.index_copy_(0, ember.tensor([0]), ember.ones(1, 4)),
    lambda x: x.index_fill_(0, ember.tensor([0]), 1.0),
    lambda x: x.index_put_((ember.tensor([0]),), ember.tensor(1.0)),
    lambda x: x.masked_fill_(ember.ones(4, 4, dtype=ember.bool), 1.0),
    lambda x: x.masked_scatter_(ember.ones(4, dtype=ember.bool), ember.ones(16)),
    lambda x: x.put_(ember.tensor([0]), ember.ones(1), accumulate=True),
])
def test_inplace_ops_bump_version_once_and_return_self(call):
    base = ember.zeros(5, 4)
    x = base[1:]
    before = base._version
    assert call(x) is x
    assert base._version == before + 1
    assert base.numpy()[1:].any() and not base.numpy()[0].any()


def test_out_is_resized_and_bumped():
    out = ember.empty(0)
    before = out._version
    r = ember.gather(ember.arange(6.0).view(2, 3), 1, ember.tensor([[2, 0]]), out=out)
    assert r is out and tuple(out.shape) == (1, 2) and out.tolist() == [[2.0, 0.0]]
    assert out._version == before + 1


# -- Meta and data-dependent ops --------------------------------------------------------------
def _meta(*shape, dtype=ember.float32):
    return ember.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("call", [
    lambda: ember.nonzero(_meta(3, 4)),
    lambda: ember.argwhere(_meta(3, 4)),
    lambda: ember.masked_select(_meta(3, 4), _meta(3, 4, dtype=ember.bool)),
    lambda: _meta(3, 4)[_meta(3, 4, dtype=ember.bool)],
])
def test_data_dependent_ops_refuse_meta(call):
    with pytest.raises(NotImplementedError, match="data-dependent"):
        call()


def test_meta_predicts_advanced_shapes():
    x = _meta(2, 3, 4, 5)
    idx = ember.empty(2, 1, dtype=ember.int64, device="meta")
    assert tuple(x[:, idx, :, ember.empty(3, dtype=ember.int64, device="meta")].shape) == \
        (2, 3, 2, 4)
    assert tuple(ember.ops.aten.index(x, [None, idx]).shape) == (2, 2, 1, 4, 5)
    y = _meta(3, 4)
    y[_meta(3, 4, dtype=ember.bool)] = 1.0  # index_put_ needs no data to keep self's shape
    assert y._version == 1


def test_tags():
    for op in (sg.nonzero_op, sg.masked_select, sg.argwhere, sg.index):
        assert Tag.data_dependent_output in op.tags
    assert Tag.inplace in sg.index_put_.tags and Tag.inplace in sg.scatter_.tags


def test_where_condition_matches_torch():
    c = np.array([[0, 1, 0], [2, 0, 3]])
    got = sg.where_condition(ember.tensor(c))
    want = torch.where(torch.tensor(c))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == ember.int64 and g.tolist() == w.tolist()


def test_nonzero_as_tuple_of_scalar():
    got = ember.tensor(5.0).nonzero(as_tuple=True)
    assert len(got) == 1 and got[0].tolist() == [0]


def test_where_condition_bool_scalar_and_empty():
    for c in (np.array([[True, False], [True, True]]), np.array(True), np.array(False),
              np.zeros((2, 0, 3), bool)):
        got = sg.where_condition(ember.tensor(c))
        want = torch.where(torch.tensor(c))
        assert [g.tolist() for g in got] == [w.tolist() for w in want]
        assert all(tuple(g.shape) == tuple(w.shape) for g, w in zip(got, want))


# -- gradients ----------------------------------------------------------------------------------
def _f64(lib, a, requires_grad=True):
    t = lib.tensor(np.asarray(a, dtype=np.float64), dtype=lib.float64)
    return t.requires_grad_(requires_grad)


def _grads_both(fn, arrays, cot_seed=0):
    """Gradients of ``fn(lib, *leaves)`` w.r.t. float64 leaves made from ``arrays``, in both
    libraries, with the same random cotangent; returns (ember grads, torch grads)."""
    out = []
    for lib in (ember, torch):
        leaves = [_f64(lib, a) for a in arrays]
        y = fn(lib, *leaves)
        cot = np.random.default_rng(cot_seed).standard_normal(tuple(y.shape))
        gs = lib.autograd.grad(y, leaves, _f64(lib, cot, False), allow_unused=True)
        out.append([None if g is None else np.asarray(g.detach().numpy()) for g in gs])
    return out


def _assert_grads(got, want):
    for i, (g, w) in enumerate(zip(got, want)):
        if g is None or w is None:
            other = g if w is None else w
            assert other is None or not other.any(), f"grad {i}"
            continue
        np.testing.assert_allclose(g, w, rtol=1e-10, atol=1e-12, err_msg=f"grad {i}")


_RNG = np.random.default_rng(5)


def _idx(lib, a):
    return lib.tensor(np.asarray(a, dtype=np.int64))


def _mask(lib, a):
    return lib.tensor(np.asarray(a, dtype=bool))


# Representative ops whose backward (and the backward of that) stays inside this family.
GRADGRAD = {
    "gather": (lambda lib, x: lib.gather(x, 1, _idx(lib, [[0, 0, 2], [1, 0, 1]])), [(2, 3)]),
    "scatter_src": (lambda lib, x, s: x.scatter(0, _idx(lib, [[1, 0, 2]]), s),
                    [(3, 3), (1, 3)]),
    "scatter_add": (lambda lib, x, s: x.scatter_add(1, _idx(lib, [[0, 0], [2, 2]]), s),
                    [(2, 3), (2, 2)]),
    "scatter_reduce_sum": (lambda lib, x, s: x.scatter_reduce(
        0, _idx(lib, [1, 1, 0]), s, "sum", include_self=False), [(3,), (3,)]),
    "index_select": (lambda lib, x: x.index_select(0, _idx(lib, [2, 0, 2])), [(3, 2)]),
    "index_add": (lambda lib, x, s: x.index_add(1, _idx(lib, [1, 1]), s), [(2, 3), (2, 2)]),
    "index_copy": (lambda lib, x, s: x.index_copy(0, _idx(lib, [2, 0]), s), [(3, 2), (2, 2)]),
    "index": (lambda lib, x: x[_idx(lib, [[0, 1], [1, 1]]), :, _idx(lib, [0, 2])],
              [(2, 2, 3)]),
    "index_put": (lambda lib, x, v: lib.ops.aten.index_put(
        x, [_idx(lib, [0, 2]), _idx(lib, [1, 1])], v), [(3, 2), (2,)]),
    "index_put_acc": (lambda lib, x, v: lib.ops.aten.index_put(
        x, [_idx(lib, [0, 0, 2])], v, True), [(3, 2), (3, 2)]),
    "masked_select": (lambda lib, x: x.masked_select(_mask(lib, [True, False, True])),
                      [(2, 3)]),
    "masked_scatter": (lambda lib, x, s: x.masked_scatter(_mask(lib, [[True, False],
                                                                      [True, True]]), s),
                       [(2, 2), (5,)]),
    "masked_fill": (lambda lib, x: x.masked_fill(_mask(lib, [False, True]), 2.0), [(3, 2)]),
    "take": (lambda lib, x: x.take(_idx(lib, [[0, -1], [3, 0]])), [(2, 2)]),
    "put": (lambda lib, x, s: x.put(_idx(lib, [3, 0]), s), [(2, 2), (2,)]),
    "put_acc": (lambda lib, x, s: x.put(_idx(lib, [1, 1]), s, accumulate=True),
                [(3,), (2,)]),
    "take_along_dim": (lambda lib, x: lib.take_along_dim(x, _idx(lib, [[1], [0]]), 1),
                       [(2, 3)]),
}


@pytest.mark.parametrize("name", list(GRADGRAD))
def test_gradgradcheck(name):
    fn, shapes = GRADGRAD[name]
    xs = [_f64(ember, _RNG.standard_normal(s)) for s in shapes]
    assert ember.autograd.gradgradcheck(lambda *a: fn(ember, *a), tuple(xs))


@pytest.mark.parametrize("name", list(GRADGRAD))
def test_first_and_second_gradients_match_torch(name):
    fn, shapes = GRADGRAD[name]
    arrays = [_RNG.standard_normal(s) for s in shapes]
    got, want = _grads_both(fn, arrays)
    _assert_grads(got, want)
    # the gradient is linear in the cotangent: differentiate <grad, w> w.r.t. the cotangent
    res = []
    for lib in (ember, torch):
        leaves = [_f64(lib, a) for a in arrays]
        y = fn(lib, *leaves)
        cot = _f64(lib, np.random.default_rng(1).standard_normal(tuple(y.shape)))
        gs = lib.autograd.grad(y, leaves, cot, create_graph=True)
        total = sum((g * _f64(lib, np.full(tuple(g.shape), 0.5) + i, False)).sum()
                    for i, g in enumerate(gs))
        (gc,) = lib.autograd.grad(total, [cot])
        res.append(np.asarray(gc.detach().numpy()))
    np.testing.assert_allclose(res[0], res[1], rtol=1e-10, atol=1e-12)


# -- getitem / setitem gradients against torch (hypothesis) -------------------------------------
def _leaf(lib, data: np.ndarray, layout: str):
    if layout == "permuted":
        rev = tuple(reversed(range(data.ndim)))
        x = _f64(lib, np.ascontiguousarray(data.transpose(rev)), False).permute(*rev)
    else:
        x = _f64(lib, data, False)
    return x.requires_grad_()


@settings(max_examples=40, deadline=None)
@given(index_case(), st.sampled_from(["contiguous", "permuted"]), st.integers(0, 2**16))
def test_getitem_gradients_match_torch(case, layout, seed):
    shape, items = case
    data = np.random.default_rng(seed).standard_normal(shape)
    try:
        want_y = _leaf(torch, data, layout)[_lib_index(items, torch)]
    except (IndexError, RuntimeError, ValueError, TypeError):
        return
    cot = np.random.default_rng(seed + 1).standard_normal(tuple(want_y.shape))
    grads = []
    for lib in (ember, torch):
        x = _leaf(lib, data, layout)
        y = x[_lib_index(items, lib)]
        assert y.requires_grad
        (g,) = lib.autograd.grad(y, [x], _f64(lib, cot, False))
        grads.append(np.asarray(g.detach().numpy()))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12, err_msg=str(items))


@settings(max_examples=40, deadline=None)
@given(index_case(), st.sampled_from(["tensor", "broadcast", "scalar"]), st.booleans(),
       st.integers(0, 2**16))
def test_setitem_gradients_match_torch(case, value_kind, value_requires_grad, seed):
    """``h[idx] = v`` on a non-leaf ``h``: gradients for ``h``'s history and for ``v`` (the
    basic part of ``idx`` makes the written tensor a view of ``h``: CopySlices)."""
    shape, items = case
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(shape)
    try:
        target = torch.tensor(data)[_lib_index(items, torch)]
    except (IndexError, RuntimeError, ValueError, TypeError):
        return
    vshape = {"tensor": tuple(target.shape), "broadcast": tuple(target.shape)[-1:],
              "scalar": None}[value_kind]
    vdata = None if vshape is None else rng.standard_normal(vshape)
    cot = rng.standard_normal(shape)
    grads = []
    for lib in (ember, torch):
        x = _f64(lib, data)
        h = x.clone()
        leaves = [x]
        if vdata is None:
            h[_lib_index(items, lib)] = 1.5
        else:
            v = _f64(lib, vdata, value_requires_grad)
            leaves += [v] if value_requires_grad else []
            h[_lib_index(items, lib)] = v
        gs = lib.autograd.grad(h, leaves, _f64(lib, cot, False), allow_unused=True)
        grads.append([None if g is None else np.asarray(g.detach().numpy()) for g in gs])
    _assert_grads(*grads)


def test_setitem_gradient_through_view_of_permuted_base():
    def fn(lib, x, v):
        h = x.t().clone()  # permuted (column-major) storage, as clone keeps dense strides
        h[0, _idx(lib, [2, 0])] = v
        return h
    got, want = _grads_both(fn, [_RNG.standard_normal((3, 2)), _RNG.standard_normal(2)])
    _assert_grads(got, want)


# -- in-place ops on views of non-leaves (CopySlices) ---------------------------------------------
INPLACE_ON_VIEW = {
    "scatter_": lambda lib, v, s: v.scatter_(1, _idx(lib, [[2, 0], [1, 3]]), s[:, :2]),
    "scatter_value": lambda lib, v, s: v.scatter_(1, _idx(lib, [[2], [1]]), 4.0),
    "scatter_add_": lambda lib, v, s: v.scatter_add_(1, _idx(lib, [[2, 2, 0], [1, 1, 1]]),
                                                     s[:, :3]),
    "scatter_reduce_amax": lambda lib, v, s: v.scatter_reduce_(
        1, _idx(lib, [[2, 2, 0], [1, 1, 1]]), s[:, :3], "amax", include_self=False),
    "scatter_reduce_prod": lambda lib, v, s: v.scatter_reduce_(
        1, _idx(lib, [[2, 2, 0], [1, 1, 1]]), s[:, :3], "prod"),
    "scatter_reduce_mean": lambda lib, v, s: v.scatter_reduce_(
        1, _idx(lib, [[2, 2, 0], [1, 1, 1]]), s[:, :3], "mean", include_self=False),
    "index_add_": lambda lib, v, s: v.index_add_(1, _idx(lib, [3, 3, 0, 1]), s, alpha=-2),
    "index_copy_": lambda lib, v, s: v.index_copy_(1, _idx(lib, [3, 0]), s[:, :2]),
    "index_fill_": lambda lib, v, s: v.index_fill_(1, _idx(lib, [3, 0, 3]), s[0, 0]),
    "masked_fill_": lambda lib, v, s: v.masked_fill_(_mask(lib, [True, False, False, True]),
                                                     s[1, 1]),
    "masked_scatter_": lambda lib, v, s: v.masked_scatter_(
        _mask(lib, [[True, False, False, True], [False, True, True, True]]), s),
    "put_": lambda lib, v, s: v.put_(_idx(lib, [7, 0, -3]), s[0, :3]),
    "put_accumulate": lambda lib, v, s: v.put_(_idx(lib, [7, 7, 0]), s[0, :3],
                                               accumulate=True),
    "index_put_": lambda lib, v, s: v.index_put_((_idx(lib, [1, 0]), _idx(lib, [3, 3])),
                                                 s[0, :2]),
    "index_put_acc": lambda lib, v, s: v.index_put_((_idx(lib, [1, 1]),), s, accumulate=True),
    "setitem_mask": lambda lib, v, s: v.__setitem__(_mask(lib, [[True, False, False, True],
                                                                [False, True, True, False]]),
                                                    s[1, :4]),
}


@pytest.mark.parametrize("name", list(INPLACE_ON_VIEW))
def test_inplace_on_view_of_non_leaf(name):
    """``b = x * 1; op_(b[:, 1:])``: gradients for ``x`` (through CopySlices) and ``src``."""
    op = INPLACE_ON_VIEW[name]

    def fn(lib, x, s):
        b = x.clone()
        op(lib, b[:, 1:], s)
        return b
    data = _RNG.standard_normal((2, 5))
    data[0, 2] = data[0, 3]  # a tie for amax, a repeated factor for prod
    got, want = _grads_both(fn, [data, _RNG.standard_normal((2, 4))])
    _assert_grads(got, want)


# -- behaviour beyond torch, and torch's refusals -------------------------------------------------
@pytest.mark.parametrize("inplace", [False, True])
def test_scatter_src_larger_than_index_pads_gradient(inplace):
    """torch's own shape check rejects grad.gather(dim, index) for a src larger than index;
    ember zero-pads it: src elements outside index's extent were never read."""
    idx = [[0, 2], [1, 0]]
    x0, s0 = _RNG.standard_normal((3, 3)), _RNG.standard_normal((3, 4))

    def run(lib, s_arr, op):
        x, s = _f64(lib, x0), _f64(lib, s_arr)
        base = x.clone() if inplace else x
        y = getattr(base, op + ("_" if inplace else ""))(1, _idx(lib, idx), s)
        return lib.autograd.grad(y, [x, s], _f64(lib, np.arange(9.0).reshape(3, 3), False))
    for op in ("scatter", "scatter_add"):
        gx, gs = run(ember, s0, op)
        tx, ts = run(torch, s0[:2, :2], op)
        np.testing.assert_allclose(gx.numpy(), tx.numpy())
        want = np.zeros((3, 4))
        want[:2, :2] = ts.numpy()
        np.testing.assert_allclose(gs.numpy(), want)


def test_index_fill_value_gradient_negative_and_duplicate_indices():
    """Each filled position counts once; torch's formula fails on negative indices, so compare
    with torch on the equivalent non-negative, duplicate-free index."""
    x0 = _RNG.standard_normal((3, 4))
    cot = _RNG.standard_normal((3, 4))
    res = []
    for lib, index in ((ember, [-1, 3, 0, 0]), (torch, [3, 0])):
        x, v = _f64(lib, x0), _f64(lib, 2.0)
        y = x.index_fill(1, _idx(lib, index), v)
        res.append([g.numpy() for g in lib.autograd.grad(y, [x, v], _f64(lib, cot, False))])
    _assert_grads(*res)


def test_scatter_with_reduce_has_no_derivative_like_torch():
    for lib in (ember, torch):
        x, s = _f64(lib, np.ones((2, 3))), _f64(lib, np.ones((2, 2)))
        for y in (x.scatter(1, _idx(lib, [[0, 1], [1, 2]]), s, reduce="add"),
                  x.scatter(1, _idx(lib, [[0, 1], [1, 2]]), 2.0, reduce="multiply")):
            assert y.requires_grad
            with pytest.raises(RuntimeError, match="derivative for aten::scatter is not "
                                                   "implemented"):
                lib.autograd.grad(y.sum(), [x])


@pytest.mark.parametrize("reduce", ["amax", "amin", "mean", "prod", "sum"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_ties_and_zeros_match_torch(reduce, include_self):
    """amax/amin share the gradient evenly among ties (self included); prod handles one and
    several zeros scattered to the same place."""
    x0 = np.array([[1.0, 0.0, 3.0, 2.0], [5.0, 5.0, 0.0, -1.0]])
    s0 = np.array([[3.0, 3.0, 0.0, 1.0], [0.0, 0.0, 5.0, 2.0]])
    idx = [[2, 2, 1, 0], [2, 2, 0, 0]]

    def fn(lib, x, s):
        return x.scatter_reduce(1, _idx(lib, idx), s, reduce, include_self=include_self)
    got, want = _grads_both(fn, [x0, s0])
    _assert_grads(got, want)


def test_scatter_reduce_prod_several_zeros_refuses_double_backward():
    x = _f64(ember, [2.0, 3.0])
    s = _f64(ember, [0.0, 0.0, 4.0])
    y = x.scatter_reduce(0, _idx(ember, [0, 0, 1]), s, "prod")
    gx, gs = ember.autograd.grad(y.sum(), [x, s], create_graph=True)
    assert gs.tolist() == [0.0, 0.0, 3.0] and gx.tolist() == [0.0, 4.0]
    with pytest.raises(RuntimeError, match="Double backward is unsupported for src"):
        ember.autograd.grad(gs.sum(), [s])
    (g2,) = ember.autograd.grad(gx.sum(), [s])  # self's gradient stays differentiable
    t = torch.tensor([0.0, 0.0, 4.0], dtype=torch.float64, requires_grad=True)
    tx = torch.tensor([2.0, 3.0], dtype=torch.float64, requires_grad=True)
    tgx, _ = torch.autograd.grad(tx.scatter_reduce(0, torch.tensor([0, 0, 1]), t, "prod").sum(),
                                 [tx, t], create_graph=True)
    (want,) = torch.autograd.grad(tgx.sum(), [t])
    np.testing.assert_allclose(g2.numpy(), want.numpy())


def test_index_and_mask_inputs_get_no_gradient_and_only_index_is_saved():
    x = _f64(ember, _RNG.standard_normal((3, 4)))
    idx = _idx(ember, [[0, 1], [2, 2], [1, 0]])
    y = x.gather(1, idx)
    assert len(y.grad_fn._saved_tensors) == 1
    assert y.grad_fn.name() == "GatherBackward0"
    assert y.grad_fn.next_functions[1] == (None, 0)
    m = x.masked_fill(_mask(ember, [True, False, True, False]), 0.0)
    assert m.grad_fn.name() == "MaskedFillBackward0"
    assert len(m.grad_fn._saved_tensors) == 1
    v = x[_idx(ember, [0, 0])]
    assert v.grad_fn.name() == "IndexBackward0"


def test_modified_index_is_detected():
    x = _f64(ember, _RNG.standard_normal(4))
    idx = _idx(ember, [0, 1])
    y = x.index_select(0, idx)
    idx.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_integer_inputs_do_not_require_grad():
    x = ember.arange(6).reshape(2, 3)
    assert not x.gather(1, _idx(ember, [[0], [1]])).requires_grad
    s = _f64(ember, np.ones((1, 1)))  # float src into a float self requiring nothing else
    y = ember.zeros(2, 3, dtype=ember.float64).scatter(1, _idx(ember, [[1]]), s)
    (g,) = ember.autograd.grad(y.sum(), [s])
    assert g.tolist() == [[1.0]]


@pytest.mark.parametrize("shape,make_index", [
    ((3, 0), lambda lib: (lib.tensor([5]),)),
    ((3, 2), lambda lib: (lib.tensor([5]), slice(0, 0))),
    ((1, 2, 1, 1), lambda lib: (None, Ellipsis, 0, None, lib.tensor([0, 1]), slice(None, 0))),
])
def test_out_of_range_indices_into_an_empty_result_are_not_checked_as_torch(shape, make_index):
    """torch reads nothing for an empty result and so checks no index bounds."""
    x, tx = ember.zeros(*shape), torch.zeros(*shape)
    assert tuple(x[make_index(ember)].shape) == tuple(tx[make_index(torch)].shape)
    x[make_index(ember)] = 1.0
    tx[make_index(torch)] = 1.0
    assert x.sum().item() == tx.sum().item() == 0.0
