"""Reduction family checks the op table cannot express: named tuples, methods, out= and
version counters, in-place scans, long rows, and torch's own quirks worked around."""

import numpy as np
import pytest
import torch

import ember
from ember.ops.reduction import return_types
from tests.opinfo import make, to_torch


def _np(t):
    return np.asarray(t.float().numpy() if t.dtype == ember.bfloat16 else t.numpy())


@pytest.mark.parametrize("name,fields", [
    ("max", ("values", "indices")), ("min", ("values", "indices")),
    ("median", ("values", "indices")), ("nanmedian", ("values", "indices")),
    ("mode", ("values", "indices")), ("cummax", ("values", "indices")),
    ("cummin", ("values", "indices")),
])
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_named_tuples(name, fields, device):
    x = ember.empty((3, 4), device=device) if device == "meta" else make((3, 4))
    r = getattr(ember, name)(x, 1)
    assert type(r) is getattr(return_types, name)
    assert r._fields == fields
    assert r.indices.dtype == ember.int64 and r.values.dtype == x.dtype


def test_aminmax_named_tuple():
    r = ember.aminmax(ember.tensor([[3.0, -1.0], [2.0, 5.0]]), dim=0)
    assert type(r) is return_types.aminmax
    assert r.min.tolist() == [2.0, -1.0] and r.max.tolist() == [3.0, 5.0]


def test_var_mean_is_a_plain_tuple():
    r = ember.var_mean(make((3, 4)), 0)
    assert type(r) is tuple and len(r) == 2


METHODS = ["sum", "nansum", "mean", "nanmean", "prod", "amax", "amin", "argmax", "argmin",
           "var", "std", "all", "any", "count_nonzero", "logsumexp", "norm"]


@pytest.mark.parametrize("name", METHODS)
def test_tensor_methods_match_functions(name):
    x = make((3, 4), layout="strided")
    got = getattr(x, name)(1) if name != "norm" else x.norm(2, 1)
    want = getattr(ember, name)(x, 1) if name != "norm" else ember.norm(x, 2, 1)
    np.testing.assert_array_equal(_np(got), _np(want))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
                                  "median", "nanmedian", "mode", "max", "min", "aminmax"])
def test_more_methods_exist(name):
    x = make((2, 3))
    r = getattr(x, name)(dim=1) if name == "aminmax" else getattr(x, name)(1)
    assert r is not None


def test_max_binary_and_other_keyword():
    a, b = make((3, 4)), make((4,))
    np.testing.assert_array_equal(_np(ember.max(a, b)), _np(ember.maximum(a, b)))
    np.testing.assert_array_equal(_np(a.min(other=b)), _np(ember.minimum(a, b)))


def test_out_is_resized_and_version_bumped_once():
    x = make((3, 4), layout="permuted")
    out = ember.empty(0)
    v = out._version
    r = ember.sum(x, 1, out=out)
    assert r is out and out.shape == (3,) and out._version == v + 1
    np.testing.assert_allclose(_np(out), _np(x).sum(1), rtol=1e-6)


def test_out_pair_for_max_dim():
    x = make((3, 4))
    vals, idx = ember.empty(0), ember.empty(0, dtype=ember.int64)
    r = ember.max(x, 1, out=(vals, idx))
    assert r[0] is vals and r[1] is idx and vals.shape == (3,)
    assert idx.tolist() == _np(x).argmax(1).tolist()


def test_inplace_cumsum_writes_through_a_strided_view():
    base = ember.zeros(4, 6)
    view = base[:, ::2]
    view.copy_(ember.ones(4, 3))
    v = base._version
    r = view.cumsum_(1)
    assert r is view and base._version == v + 1
    assert base[:, ::2].tolist() == [[1.0, 2.0, 3.0]] * 4
    assert base[:, 1::2].tolist() == [[0.0, 0.0, 0.0]] * 4


def test_inplace_scan_refuses_expanded_targets():
    x = ember.ones(3).expand(4, 3)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        x.cumprod_(0)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_dim_on_expanded_input(name):
    # torch reads garbage for stride-0 inputs here; a contiguous copy is the oracle
    x = make((4, 5), layout="expanded")
    got = getattr(ember, name)(x, 1)
    want = getattr(torch, name)(to_torch(x).contiguous(), 1)
    np.testing.assert_array_equal(_np(got.values), want.values.numpy())
    picked = np.take_along_axis(_np(x), _np(got.indices)[:, None], 1)[:, 0]
    np.testing.assert_array_equal(picked, want.values.numpy())


@pytest.mark.parametrize("dtype", ["float32", "int64", "float16"])
def test_mode_and_median_on_long_rows_with_ties(dtype):
    x = make((6, 40), dtype, low=0, high=4)
    if dtype != "int64":
        x = ember.tensor(np.floor(_np(x)), dtype=getattr(ember, dtype))
    t = to_torch(x)
    for name in ("mode", "median"):
        got, want = getattr(ember, name)(x, 1), getattr(torch, name)(t, 1)
        np.testing.assert_array_equal(_np(got.values), want.values.float().numpy())
        picked = np.take_along_axis(_np(x), _np(got.indices)[:, None], 1)[:, 0]
        np.testing.assert_array_equal(picked, want.values.float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_large_half_reductions_accumulate_in_float32(dtype):
    x = make((64, 257), dtype, low=0, high=1)
    t = to_torch(x)
    for got, want in [(ember.sum(x), torch.sum(t)), (ember.mean(x, 1), torch.mean(t, 1)),
                      (ember.var(x, 0), torch.var(t, 0)), (x.cumsum(1), t.cumsum(1))]:
        np.testing.assert_allclose(_np(got), want.float().numpy(), rtol=2e-2 if dtype !=
                                   "float32" else 1e-5, atol=1e-3)


def test_svd_orders_refuse_non_finite_input():
    x = ember.tensor([[1.0, float("nan")], [0.0, 1.0]])
    with pytest.raises(RuntimeError, match="non-finite values"):
        ember.linalg_matrix_norm(x, "nuc")


def test_norm_runs_on_meta():
    x = ember.empty((2, 3, 4), device="meta")
    assert ember.norm(x, "fro", (1, 2)).shape == (2,)
    assert ember.linalg_matrix_norm(x, 2, keepdim=True).shape == (2, 1, 1)


def test_int_sum_wraps_like_torch():
    x = ember.tensor([2**62, 2**62, 2**62], dtype=ember.int64)
    assert ember.sum(x).item() == torch.sum(torch.tensor([2**62] * 3)).item()


def test_var_with_large_correction_is_inf():
    x = ember.tensor([1.0, 2.0, 4.0])
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        assert ember.var(x, correction=5).item() == float("inf")
    with pytest.warns(UserWarning, match="std"):
        assert ember.std(x, 0, correction=3).item() == float("inf")


# -- derivatives ------------------------------------------------------------------------------
def _leaf(values):
    return ember.tensor(values, dtype=ember.float64).requires_grad_()


_X = [[0.5, -1.2, 2.0, 0.7], [1.5, 0.3, -0.8, 2.2], [-0.4, 1.1, 0.9, -1.7]]
_POS = [[0.5, 1.2, 2.0, 0.7], [1.5, 0.3, 0.8, 2.2], [0.4, 1.1, 0.9, 1.7]]

GRADGRAD = [
    ("sum_dims", _X, lambda x: x.sum((0, 1))),
    ("sum_keepdim", _X, lambda x: ember.sum(x, -1, keepdim=True)),
    ("sum_none_dtype", _X, lambda x: x.sum(dtype=ember.float64)),
    ("nansum", _X, lambda x: ember.nansum(x, 0)),
    ("mean", _X, lambda x: x.mean(1)),
    ("nanmean", _X, lambda x: ember.nanmean(x, (0, 1), keepdim=True)),
    ("prod_dim", _X, lambda x: x.prod(1)),
    ("prod_all", _X, lambda x: x.prod()),
    ("prod_zero", [[1.5, 0.0, 2.0], [0.7, -1.1, 0.9]], lambda x: x.prod(1)),
    ("prod_all_zero", [[1.5, 0.0, 2.0], [0.7, -1.1, 0.9]], lambda x: x.prod()),
    ("prod_all_two_zeros", [[1.5, 0.0, 2.0], [0.7, 0.0, 0.9]], lambda x: x.prod()),
    ("max_dim", _X, lambda x: x.max(1).values),
    ("amax", _X, lambda x: x.amax(0)),
    ("aminmax", _X, lambda x: ember.aminmax(x, dim=1)),
    ("median_dim", _X, lambda x: x.median(0).values),
    ("var", _X, lambda x: x.var(1)),
    ("std", _X, lambda x: x.std(0, correction=0)),
    ("var_mean", _X, lambda x: ember.var_mean(x, 1)),
    ("std_mean", _X, lambda x: ember.std_mean(x)),
    ("logsumexp", _X, lambda x: ember.logsumexp(x, 1)),
    ("vector_norm_2", _X, lambda x: ember.linalg_vector_norm(x, 2, 1)),
    ("vector_norm_3", _X, lambda x: ember.linalg_vector_norm(x, 3.0)),
    ("vector_norm_1_5", _X, lambda x: ember.linalg_vector_norm(x, 1.5, 0)),
    ("vector_norm_inf", _X, lambda x: ember.linalg_vector_norm(x, float("inf"), 1)),
    ("norm_fro", _X, lambda x: x.norm()),
    ("matrix_norm_fro", _X, lambda x: ember.linalg_matrix_norm(x)),
    ("matrix_norm_1", _X, lambda x: ember.linalg_matrix_norm(x, 1)),
    ("cumsum", _X, lambda x: x.cumsum(1)),
    ("cumprod", _X, lambda x: x.cumprod(1)),
    ("cumprod_zero", [[1.5, 0.0, 2.0, 0.5], [0.7, -1.1, 0.0, 0.9]], lambda x: x.cumprod(1)),
    ("cumprod_two_zeros", [[0.0, 1.5, 0.0, 0.5], [0.7, 0.0, 0.0, 0.9]], lambda x: x.cumprod(1)),
    ("cummax", _X, lambda x: x.cummax(1).values),
    ("logcumsumexp", _X, lambda x: x.logcumsumexp(0)),
    ("quantile", _X, lambda x: ember.quantile(x, 0.3, 1)),
    ("log_of_sum", _POS, lambda x: x.sum(0).log()),
]


@pytest.mark.parametrize("name,values,fn", GRADGRAD, ids=[c[0] for c in GRADGRAD])
def test_gradgradcheck(name, values, fn):
    """Rules are written with ember ops, so their own gradients check out too."""
    assert ember.autograd.gradgradcheck(fn, (_leaf(values),))


def test_gradcheck_quantile_q_tensor():
    q = ember.tensor([0.1, 0.45, 0.8], dtype=ember.float64).requires_grad_()
    assert ember.autograd.gradcheck(lambda x, q: ember.quantile(x, q, 0), (_leaf(_X), q))


def test_sum_backward_restores_reduced_dims():
    x = _leaf(np.arange(24.0).reshape(2, 3, 4).tolist())
    for dim, keepdim in [((0, 2), False), ((2, 0), True), (None, False), ((), False), (1, True)]:
        y = x.sum(dim, keepdim=keepdim) if dim is not None else x.sum()
        g = ember.autograd.grad(y, x, ember.ones_like(y))[0]
        assert g.shape == x.shape and np.all(_np(g) == 1.0)


def test_max_all_and_amax_share_ties_evenly_like_torch():
    vals = [[3.0, 1.0, 3.0], [2.0, 3.0, 0.0]]
    for f in (lambda lib, t: t.max(), lambda lib, t: t.amax(), lambda lib, t: t.amax(1),
              lambda lib, t: lib.linalg.vector_norm(t, float("inf"), 1)
              if lib is torch else ember.linalg_vector_norm(t, float("inf"), 1)):
        xe, xt = _leaf(vals), torch.tensor(vals, dtype=torch.float64, requires_grad=True)
        ge = ember.autograd.grad(f(ember, xe).sum(), xe)[0]
        gt = torch.autograd.grad(f(torch, xt).sum(), xt)[0]
        np.testing.assert_allclose(_np(ge), gt.numpy())


def test_prod_with_zeros_matches_torch():
    for vals in ([[2.0, 0.0, 3.0], [0.0, 0.0, 5.0]], [[1.5, -2.0], [0.0, 4.0]]):
        for dim in (None, 0, 1):
            xe, xt = _leaf(vals), torch.tensor(vals, dtype=torch.float64, requires_grad=True)
            ye = xe.prod() if dim is None else xe.prod(dim)
            yt = xt.prod() if dim is None else xt.prod(dim)
            ge = ember.autograd.grad(ye.sum(), xe)[0]
            gt = torch.autograd.grad(yt.sum(), xt)[0]
            np.testing.assert_allclose(_np(ge), gt.numpy())


def test_norm_2_at_zero_gives_zero_gradient():
    x = ember.zeros(3, dtype=ember.float64).requires_grad_()
    (g,) = ember.autograd.grad(ember.linalg_vector_norm(x), x)
    assert _np(g).tolist() == [0.0, 0.0, 0.0]


def test_svd_norm_double_backward_refuses():
    x = _leaf(_X)
    (g,) = ember.autograd.grad(ember.linalg_matrix_norm(x, "nuc"), x, create_graph=False)
    t = torch.tensor(_X, dtype=torch.float64, requires_grad=True)
    (gt,) = torch.autograd.grad(torch.linalg.matrix_norm(t, "nuc"), t)
    np.testing.assert_allclose(_np(g), gt.numpy(), rtol=1e-10)
    with pytest.raises(NotImplementedError, match="double backward"):
        ember.autograd.grad(ember.linalg_matrix_norm(x, 2), x, create_graph=True)


def test_svd_norm_backward_raises_linalg_error_on_non_finite():
    from ember.ops.linalg import LinAlgError
    from ember.ops.reduction import _svd_factors
    with pytest.raises(LinAlgError, match="non-finite"):
        _svd_factors(ember.tensor([[1.0, float("nan")], [0.0, 1.0]]))


@pytest.mark.parametrize("row", [
    [2.0, 0.0, 3.0, 0.0, 5.0], [0.0, 0.0, 1.5, 2.0, -1.0], [1.0, float("inf"), 0.0, 2.0, 3.0],
    [3.0, 0.0, 2.0, float("nan"), 0.0], [1.5, -2.0, 0.5, 4.0, 0.0],
])
def test_cumprod_with_zeros_matches_torch(row):
    """First order uses torch's O(n) form, so non-finite values past a zero stay contained."""
    vals = [row, row[::-1]]
    cot = np.random.default_rng(3).standard_normal((2, 5))
    for dim in (0, 1):
        xe, xt = _leaf(vals), torch.tensor(vals, dtype=torch.float64, requires_grad=True)
        ge = ember.autograd.grad(xe.cumprod(dim), xe, ember.tensor(cot, dtype=ember.float64))[0]
        gt = torch.autograd.grad(xt.cumprod(dim), xt, torch.tensor(cot))[0]
        np.testing.assert_allclose(_np(ge), gt.numpy(), rtol=1e-12)


def test_svd_norm_forward_raises_linalg_error():
    from ember.ops.linalg import LinAlgError
    with pytest.raises(LinAlgError):
        ember.linalg_matrix_norm(ember.tensor([[1.0, float("nan")], [0.0, 1.0]]), "nuc")
