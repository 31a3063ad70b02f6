"""Shape family behaviour the op table cannot express: tags, Meta behaviour of data-dependent
ops, result tuple types, in-place version counters, warnings, identity returns, and stability
laws checked with hypothesis against torch."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember.dispatch import Tag
from ember.ops import shape as sh
from tests.opinfo import make


@pytest.mark.parametrize("op", [sh._unique2, sh.unique_dim, sh._unique_consecutive,
                                sh.bincount, sh.repeat_interleave])
def test_data_dependent_ops_are_tagged(op):
    assert Tag.data_dependent_output in op.tags


def _meta(*shape, dtype=ember.float32):
    return ember.empty(*shape, dtype=dtype, device="meta")


@pytest.mark.parametrize("call", [
    lambda: ember.unique(_meta(3, 4)), lambda: ember.unique(_meta(3, 4), dim=0),
    lambda: ember.unique_consecutive(_meta(3, 4)),
    lambda: ember.bincount(_meta(3, dtype=ember.int64)),
])
def test_data_dependent_ops_refuse_meta(call):
    with pytest.raises(NotImplementedError, match="Meta"):
        call()


def test_repeat_interleave_meta_needs_output_size():
    x = ember.empty(2, 3, device="meta")
    reps = ember.empty(2, dtype=ember.int64, device="meta")
    with pytest.raises(RuntimeError, match="without output_size"):
        ember.repeat_interleave(x, reps, 0)
    out = ember.repeat_interleave(x, reps, 0, output_size=7)
    assert out.shape == (7, 3) and out.device.type == "meta"
    assert ember.repeat_interleave(x, 3, 1).shape == (2, 9)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_result_tuples_are_named(device):
    x = ember.empty(3, 4, device=device)
    s, t, k = ember.sort(x), ember.topk(x, 2), ember.kthvalue(x, 1)
    assert (type(s).__name__, type(t).__name__, type(k).__name__) == ("sort", "topk",
                                                                       "kthvalue")
    assert s.values.shape == (3, 4) and s.indices.dtype is ember.int64
    assert t.indices.shape == (3, 2) and k.values.shape == (3,)


@pytest.mark.parametrize("name", ["tril_", "triu_"])
def test_inplace_tri_bumps_version_once_and_refuses_overlap(name):
    x = make((3, 4))
    view = x[1:]
    v = x._version
    assert getattr(x, name)(1) is x
    assert x._version == v + 1 and view._version == v + 1
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        getattr(make((3, 3), layout="expanded"), name)()


@pytest.mark.parametrize("name", ["tril", "triu", "diag", "cat", "histc"])
def test_out_bumps_version(name):
    out = ember.empty(0)
    v = out._version
    x = make((3, 3))
    calls = {"tril": lambda: ember.tril(x, out=out), "triu": lambda: ember.triu(x, out=out),
             "diag": lambda: ember.diag(x, out=out), "cat": lambda: ember.cat([x, x], out=out),
             "histc": lambda: ember.histc(x, 4, out=out)}
    assert calls[name]() is out
    assert out._version == v + 1


def test_cross_without_dim_warns_like_torch():
    sh._cross_warned[0] = False
    a, b = make((4, 3)), make((4, 3))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ember.cross(a, b)
        ember.cross(a, b)
    assert len(caught) == 1 and "without specifying the dim arg is deprecated" in \
        str(caught[0].message)


def test_meshgrid_without_indexing_warns():
    with pytest.warns(UserWarning, match="indexing argument"):
        ember.meshgrid(ember.ones(2), ember.ones(3))


def test_atleast_returns_input_itself_when_nothing_changes():
    x = make((2, 3))
    assert ember.atleast_1d(x) is x and ember.atleast_2d(x) is x
    assert ember.atleast_1d() == () and ember.broadcast_tensors() == ()


def test_meshgrid_and_broadcast_tensors_are_views():
    a, b = make((3,), layout="strided"), make((4,))
    ga, gb = ember.meshgrid(a, b, indexing="ij")
    ba, bb = ember.broadcast_tensors(a, make((2, 1)))
    for view, src in ((ga, a), (gb, b), (ba, a)):
        assert view.untyped_storage().data_ptr() == src.untyped_storage().data_ptr()
        assert view._version == src._version
    assert ga.stride() == (2, 0) and gb.stride() == (0, 1) and ba.stride() == (0, 2)


def test_broadcast_shapes_returns_size():
    out = ember.broadcast_shapes((2, 1), (3,))
    assert isinstance(out, ember.Size) and out == (2, 3)


def test_cat_empty_list_is_value_error_and_runtime_error():
    for exc in (ValueError, RuntimeError):
        with pytest.raises(exc, match="expected a non-empty list of Tensors"):
            ember.cat([])


def test_cat_on_meta_predicts_promoted_dtype():
    a = ember.empty(2, 3, dtype=ember.int8, device="meta")
    b = ember.empty(1, 3, dtype=ember.float16, device="meta")
    out = ember.cat([a, b, ember.empty(0, device="meta", dtype=ember.int64)])
    assert out.shape == (3, 3) and out.dtype is ember.float16 and out.device.type == "meta"


# -- laws against torch --------------------------------------------------------------------------
_values = st.lists(st.sampled_from([0.0, 1.0, -1.0, 2.5, float("nan"), -0.0]), min_size=0,
                   max_size=12)


@settings(max_examples=60, deadline=None)
@given(_values, st.booleans())
def test_stable_sort_matches_torch_exactly(values, descending):
    e = ember.sort(ember.tensor(values, dtype=ember.float32), descending=descending, stable=True)
    t = torch.sort(torch.tensor(values, dtype=torch.float32), descending=descending,
                   stable=True)
    assert e.indices.tolist() == t.indices.tolist()
    np.testing.assert_array_equal(e.values.numpy(), t.values.numpy())


@settings(max_examples=60, deadline=None)
@given(_values, st.booleans())
def test_searchsorted_matches_torch_on_ties_and_nan(values, right):
    seq = sorted(v for v in values if v == v) + [float("nan")] * sum(v != v for v in values)
    probe = [0.0, 1.0, -1.0, float("nan"), 3.0]
    e = ember.searchsorted(ember.tensor(seq, dtype=ember.float32),
                           ember.tensor(probe), right=right)
    t = torch.searchsorted(torch.tensor(seq, dtype=torch.float32), torch.tensor(probe),
                           right=right)
    assert e.tolist() == t.tolist()


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=10))
def test_unique_inverse_reconstructs_input(values):
    x = ember.tensor(values)
    uniq, inverse, counts = ember.unique(x, return_inverse=True, return_counts=True)
    assert [uniq.tolist()[i] for i in inverse.tolist()] == values
    assert sum(counts.tolist()) == len(values)
    assert uniq.tolist() == sorted(set(values))


@pytest.mark.parametrize("call", [
    lambda lib, x, o: lib.argsort(x, dim=0, stable=True, out=o[1]),
    lambda lib, x, o: lib.topk(x, 2, out=o), lambda lib, x, o: lib.kthvalue(x, 2, 0, out=o),
    lambda lib, x, o: lib.sort(x, 0, out=o),
])
def test_tuple_and_index_outs_match_torch(call):
    x = make((3, 4), layout="permuted")
    e_out = (ember.empty(0), ember.empty(0, dtype=ember.int64))
    t_out = (torch.empty(0), torch.empty(0, dtype=torch.int64))
    e = call(ember, x, e_out)
    t = call(torch, torch.from_numpy(np.array(x.numpy())), t_out)
    e, t = (e if isinstance(e, tuple) else (e,)), (t if isinstance(t, tuple) else (t,))
    for a, b in zip(e, t):
        assert a.shape == tuple(b.shape)
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert e_out[1].shape == tuple(t_out[1].shape)


# -- autograd ------------------------------------------------------------------------------------
def _leaf(*shape, low=-3.0, high=3.0):
    rng = np.random.default_rng(sum(shape) + len(shape))
    return ember.tensor(rng.uniform(low, high, shape)).requires_grad_()


GRADGRAD = {
    "cat": (lambda a, b: ember.cat([a, ember.empty(0, dtype=ember.float64), b], 1),
            ((2, 3), (2, 2))),
    "stack": (lambda a, b: ember.stack([a, b], 1), ((2, 3), (2, 3))),
    "hstack": (lambda a, b: ember.hstack([a, b]), ((3,), (2,))),
    "column_stack": (lambda a, b: ember.column_stack([a, b]), ((3,), (3, 2))),
    "flip": (lambda a: a.flip(0, 1), ((2, 3),)),
    "roll": (lambda a: a.roll((1, -2), (0, 1)), ((2, 3),)),
    "roll_flat": (lambda a: a.roll(4), ((2, 3),)),
    "rot90": (lambda a: ember.rot90(a, 3, (1, 0)), ((2, 3),)),
    "repeat": (lambda a: a.repeat(2, 1, 3), ((2, 3),)),
    "tile": (lambda a: ember.tile(a, (2,)), ((2, 3),)),
    "repeat_interleave_int": (lambda a: ember.repeat_interleave(a, 2, 1), ((2, 3),)),
    "repeat_interleave_flat": (lambda a: ember.repeat_interleave(a, 3), ((2, 2),)),
    "repeat_interleave_tensor": (
        lambda a: ember.repeat_interleave(a, ember.tensor([1, 0, 2]), 1), ((2, 3),)),
    "tril": (lambda a: ember.tril(a, -1), ((3, 3),)),
    "triu_": (lambda a: (a * 1).triu_(1), ((3, 4),)),
    "diag_1d": (lambda a: ember.diag(a, -1), ((3,),)),
    "diag_2d": (lambda a: ember.diag(a, 1), ((3, 4),)),
    "diag_embed": (lambda a: ember.diag_embed(a, 1, 0, 2), ((2, 3),)),
    "diagflat": (lambda a: ember.diagflat(a), ((2, 2),)),
    "trace": (lambda a: ember.trace(a), ((3, 4),)),
    "cross": (lambda a, b: ember.cross(a, b, dim=1), ((2, 3), (1, 3))),
    "sort": (lambda a: ember.sort(a, 0, descending=True).values, ((3, 2),)),
    "msort": (lambda a: ember.msort(a), ((3, 2),)),
    "topk": (lambda a: ember.topk(a, 2).values, ((2, 4),)),
    "kthvalue": (lambda a: ember.kthvalue(a, 2, 0).values, ((3, 2),)),
    "meshgrid": (lambda a, b: ember.meshgrid(a, b, indexing="xy"), ((3,), (2,))),
    "broadcast_tensors": (lambda a, b: ember.broadcast_tensors(a, b), ((3, 1), (2,))),
    "atleast_3d": (lambda a: ember.atleast_3d(a), ((3,),)),
}


@pytest.mark.parametrize("name", list(GRADGRAD))
def test_gradgradcheck(name):
    """Second derivatives: the rules are written with ember ops, so they differentiate again."""
    fn, shapes = GRADGRAD[name]
    inputs = tuple(_leaf(*s) for s in shapes)
    assert ember.autograd.gradgradcheck(fn, inputs)


def _selected_grads(lib, x, call, cot):
    """(gradient of x, indices along the selection dim) for ``call(lib, x) -> values, idx``."""
    xs = lib.tensor(x, dtype=lib.float64).requires_grad_()
    values, indices = call(lib, xs)
    (g,) = lib.autograd.grad(values, xs, lib.tensor(cot, dtype=lib.float64))
    return g.detach().numpy(), indices.numpy()


TIE_CALLS = {
    "sort": (lambda lib, x: lib.sort(x, 1), False),
    "sort_descending_dim0": (lambda lib, x: lib.sort(x, 0, descending=True), False),
    "sort_stable": (lambda lib, x: lib.sort(x, dim=1, stable=True), False),
    "topk": (lambda lib, x: lib.topk(x, 3, 1), False),
    "topk_smallest_unsorted": (lambda lib, x: lib.topk(x, 2, 1, largest=False, sorted=False),
                               False),
    "kthvalue": (lambda lib, x: lib.kthvalue(x, 3, 1), True),
    "kthvalue_keepdim": (lambda lib, x: lib.kthvalue(x, 4, 1, True), False),
}


@pytest.mark.parametrize("name", list(TIE_CALLS))
def test_tie_gradients_follow_the_returned_index(name):
    """With ties, the gradient goes to the element whose index was returned: each picked
    element receives its cotangent, and where ember picked the same index as torch the
    gradients agree."""
    call, squeezed = TIE_CALLS[name]
    x = np.array([[1.0, 0.0, 1.0, 2.0, 1.0, 2.0], [2.0, 2.0, 0.0, 1.0, 0.0, 0.0],
                  [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    shape = tuple(call(torch, torch.tensor(x))[0].shape)
    cot = np.random.default_rng(3).standard_normal(shape)
    eg, ei = _selected_grads(ember, x, call, cot)
    tg, ti = _selected_grads(torch, x, call, cot)
    dim = 0 if "dim0" in name else 1
    if squeezed:
        ei, ti, cot = (np.expand_dims(a, dim) for a in (ei, ti, cot))
    e_picked = np.take_along_axis(eg, ei, dim)
    np.testing.assert_allclose(e_picked, cot, rtol=0, atol=0)
    assert np.count_nonzero(eg) == np.count_nonzero(cot)
    same = ei == ti
    assert same.any()
    np.testing.assert_allclose(e_picked[same], np.take_along_axis(tg, ti, dim)[same])
    if name == "sort_stable":
        assert same.all()
        np.testing.assert_allclose(eg, tg)


def test_saved_indices_are_version_checked_like_torch():
    for lib in (ember, torch):
        x = lib.tensor([3.0, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        values, indices = lib.sort(x)
        indices.add_(0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            values.sum().backward()


def test_sort_indices_are_freed_with_the_graph():
    x = _leaf(4)
    values = ember.sort(x).values
    values.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        values.sum().backward()


def test_argsort_and_searches_do_not_require_grad():
    x = _leaf(5)
    for out in (ember.argsort(x), ember.sort(x).indices, ember.topk(x, 2).indices,
                ember.searchsorted(ember.sort(x).values, x), ember.bucketize(x, x.detach()),
                ember.histc(x, 4)):
        assert not out.requires_grad and out.grad_fn is None


@pytest.mark.parametrize("kw", [{}, {"return_inverse": True, "return_counts": True},
                                {"dim": 0, "return_inverse": True}, {"consecutive": True},
                                {"consecutive": True, "dim": 1, "return_counts": True}])
def test_unique_outputs_require_grad_like_torch_and_backward_raises(kw):
    kw = dict(kw)
    consecutive = kw.pop("consecutive", False)
    data = [[1.0, 2.0, 1.0], [1.0, 2.0, 1.0]]
    results = []
    for lib in (ember, torch):
        x = lib.tensor(data, dtype=lib.float64, requires_grad=True)
        out = (lib.unique_consecutive if consecutive else lib.unique)(x, **kw)
        out = out if isinstance(out, tuple) else (out,)
        results.append([o.requires_grad for o in out])
        with pytest.raises(RuntimeError, match="not implemented"):
            out[0].sum().backward()
    assert results[0] == results[1]


def test_bincount_with_weights_requires_grad_like_torch():
    for lib in (ember, torch):
        w = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        out = lib.bincount(lib.tensor([0, 2, 2]), w)
        assert out.requires_grad
        with pytest.raises(RuntimeError, match="not implemented"):
            out.sum().backward()


def test_histc_out_into_a_leaf_requiring_grad_like_torch():
    for lib in (ember, torch):
        x = lib.tensor([0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        out = lib.empty(0, dtype=lib.float64, requires_grad=True)
        assert lib.histc(x, 4, out=out) is out
        assert out.requires_grad and out.grad_fn is None


def _inplace_grads(lib, x, cot, fn):
    xs = lib.tensor(x, dtype=lib.float64, requires_grad=True)
    y = xs * 2
    fn(y)
    (g,) = lib.autograd.grad(y, xs, lib.tensor(cot, dtype=lib.float64))
    return g.numpy()


@pytest.mark.parametrize("fn", [lambda y: y.tril_(-1), lambda y: y.triu_(1),
                                lambda y: y[1:].tril_(), lambda y: y[:, ::2].triu_(-1)],
                         ids=["tril_", "triu_", "tril_view", "triu_strided_view"])
def test_inplace_triangles_and_views_match_torch(fn):
    x = np.arange(12.0).reshape(3, 4)
    cot = np.random.default_rng(5).standard_normal((3, 4))
    np.testing.assert_allclose(_inplace_grads(ember, x, cot, fn),
                               _inplace_grads(torch, x, cot, fn))


def test_cat_skips_legacy_empty_inputs_in_backward():
    a, e, b = _leaf(2, 3), ember.empty(0, dtype=ember.float64).requires_grad_(), _leaf(1, 3)
    out = ember.cat([a, e, b])
    ga, ge, gb = ember.autograd.grad(out, (a, e, b), ember.ones(3, 3, dtype=ember.float64))
    assert ga.shape == (2, 3) and ge.shape == (0,) and gb.shape == (1, 3)
    assert out.grad_fn.name() == "CatBackward0"


@pytest.mark.parametrize("call,saved", [
    (lambda x: ember.sort(x, 0).values, 1), (lambda x: ember.topk(x, 2).values, 1),
    (lambda x: ember.kthvalue(x, 1).values, 1), (lambda x: ember.cat([x, x]), 0),
    (lambda x: x.flip(0), 0), (lambda x: x.repeat(2, 1), 0), (lambda x: ember.tril(x), 0),
    (lambda x: ember.repeat_interleave(x, ember.tensor([1, 2]), 0), 1),
    (lambda x: ember.cross(x, x.detach(), dim=1), 2),
], ids=["sort", "topk", "kthvalue", "cat", "flip", "repeat", "tril", "repeat_interleave",
        "cross"])
def test_rules_save_only_what_they_read(call, saved):
    """Activation memory: sort-like ops keep their indices only, not the values or the input."""
    node = call(_leaf(2, 3)).grad_fn
    assert len(node._saved_tensors) == saved
    if saved == 1:  # indices, or the repeats of repeat_interleave
        assert node._saved_tensors[0].unpack().dtype is ember.int64
