"""Pointwise checks the op table cannot express: version counters, views, out= resizing,
special-function accuracy against the standard library, and Python-operator dtypes."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember


def test_inplace_bumps_version_once_and_writes_through_views():
    base = ember.zeros(4, 6)
    view = base[:, ::2]
    v0 = base._version
    out = view.add_(ember.ones(3), alpha=2)
    assert out is view
    assert base._version == view._version == v0 + 1
    np.testing.assert_array_equal(base.numpy()[:, ::2], 2.0)
    np.testing.assert_array_equal(base.numpy()[:, 1::2], 0.0)
    base.t().mul_(3)
    assert base._version == v0 + 2
    np.testing.assert_array_equal(base.numpy()[:, ::2], 6.0)


@pytest.mark.parametrize("call", [
    lambda x: x.exp_(), lambda x: x.clamp_(0, 1), lambda x: x.div_(2, rounding_mode="floor"),
    lambda x: x.lerp_(ember.ones(3), 0.5), lambda x: x.addcmul_(x, x), lambda x: x.round_(),
    lambda x: x.nan_to_num_(), lambda x: x.eq_(0), lambda x: x.logit_(0.1),
])
def test_every_inplace_kind_bumps_once(call):
    x = ember.ones(2, 3)
    v0 = x._version
    assert call(x) is x
    assert x._version == v0 + 1


def test_failed_inplace_leaves_version_and_data_alone():
    x = ember.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.add_(1.5)
    assert x._version == 0
    assert x.tolist() == [1, 2, 3]


def test_out_is_resized_bumped_and_returned():
    a = ember.ones(2, 3)
    out = ember.empty(0)
    v0 = out._version
    r = ember.add(a, 1, out=out)
    assert r is out and tuple(out.shape) == (2, 3) and out._version == v0 + 1
    np.testing.assert_array_equal(out.numpy(), 2.0)
    wide = ember.empty(2, 3, dtype=ember.float64)
    ember.mul(a, 3, out=wide)
    assert wide.dtype == ember.float64 and wide.tolist() == [[3.0] * 3] * 2


def test_out_of_a_view_writes_through():
    base = ember.zeros(2, 6)
    ember.add(ember.ones(2, 3), 1, out=base[:, ::2])
    np.testing.assert_array_equal(base.numpy()[:, ::2], 2.0)


@pytest.mark.parametrize("expr,dtype", [
    ("2 ** i", "int64"), ("2.0 ** i", "float32"), ("i / 2", "float32"), ("i // 2", "int64"),
    ("True + b", "bool"), ("True + i", "int64"), ("2 - i8", "int8"), ("2.5 * i8", "float32"),
    ("b & True", "bool"), ("3 % i", "int64"), ("1 << i", "int64"), ("2 / f16", "float16"),
    ("i8 + ember.tensor(300)", "int8"), ("f16 + ember.tensor(2.0, dtype=ember.float64)",
                                         "float16"),
])
def test_python_operators_follow_torch_dtypes(expr, dtype):
    env = {"ember": ember, "i": ember.tensor([1, 2, 3]), "b": ember.tensor([True, False]),
           "i8": ember.tensor([1, 2], dtype=ember.int8),
           "f16": ember.tensor([1.0, 2.0], dtype=ember.float16)}
    tenv = {"ember": torch, "i": torch.tensor([1, 2, 3]), "b": torch.tensor([True, False]),
            "i8": torch.tensor([1, 2], dtype=torch.int8),
            "f16": torch.tensor([1.0, 2.0], dtype=torch.float16)}
    got, want = eval(expr, env), eval(expr, tenv)
    assert got.dtype.name == dtype == str(want.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy())


def test_where_with_one_argument_is_nonzero_as_tuple():
    cond = ember.tensor([[True, False], [False, True]])
    rows, cols = ember.where(cond)
    assert rows.tolist() == [0, 1] and cols.tolist() == [0, 1]


def test_allclose_and_equal_return_python_bools():
    a = ember.tensor([1.0, 2.0])
    assert ember.allclose(a, a + 1e-9) is True
    assert a.allclose(a + 1) is False
    assert ember.equal(a, ember.tensor([1, 2])) is True
    assert a.equal(a[:1]) is False


# -- special functions: ember's NumPy implementations against the C library ---------------------
GRID = np.concatenate([np.linspace(-6, 6, 2001), [1e-300, -1e-10, 0.0, 26.0, -26.0]])


def test_erf_erfc_match_libm():
    want_erf = np.array([math.erf(v) for v in GRID])
    want_erfc = np.array([math.erfc(v) for v in GRID])
    x = ember.tensor(GRID, dtype=ember.float64)
    np.testing.assert_allclose(ember.erf(x).numpy(), want_erf, rtol=1e-13, atol=1e-300)
    np.testing.assert_allclose(ember.erfc(x).numpy(), want_erfc, rtol=1e-12, atol=1e-300)


def test_erfinv_inverts_erf():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 4001), [1e-30, -1e-12, 1 - 1e-15]])
    x = ember.erfinv(ember.tensor(y, dtype=ember.float64)).numpy()
    back = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(back, y, rtol=1e-13, atol=1e-15)
    edges = ember.erfinv(ember.tensor([1.0, -1.0, 1.5, float("nan")], dtype=ember.float64))
    assert edges.tolist()[:2] == [math.inf, -math.inf]
    assert all(math.isnan(v) for v in edges.tolist()[2:])


def test_lgamma_matches_libm():
    grid = np.concatenate([np.linspace(-20.5, 40, 3001), [1e-8, 1e5, 1e30, -1e-8]])
    grid = grid[grid != np.round(grid)]  # poles checked below
    want = np.array([math.lgamma(v) for v in grid])
    got = ember.lgamma(ember.tensor(grid, dtype=ember.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-12)
    poles = ember.lgamma(ember.tensor([0.0, -1.0, -7.0, math.inf, -math.inf],
                                      dtype=ember.float64))
    assert poles.tolist() == [math.inf] * 5


def test_digamma_matches_torch_in_float64():
    grid = np.concatenate([np.linspace(-9.75, 60, 2001), [1e-9, -1e-9, 0.0, -0.0, -3.0, 1e8]])
    got = ember.digamma(ember.tensor(grid, dtype=ember.float64)).numpy()
    want = torch.digamma(torch.tensor(grid, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-11, equal_nan=True)


def test_invert_of_float_raises_type_error():
    with pytest.raises(TypeError, match="only implemented on integer and Boolean"):
        ~ember.ones(2)


def test_comparison_with_none_falls_back_to_identity():
    x = ember.ones(2)
    assert (x == None) is False  # noqa: E711
    assert (x != None) is True  # noqa: E711
