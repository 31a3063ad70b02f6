"""3-d, LP, unpooling and fractional pooling layers against torch.

Same method as tests/nn/test_conv_modules.py: state (fractional pooling's ``_random_samples``
buffer) copied from the torch module through ``state_dict``; outputs, indices and input
gradients (random cotangent) compared on contiguous and non-contiguous inputs, float32 and
float64, batched and unbatched. Also: reprs, constructor and argument errors, ember's own
random samples, double backward, Meta shapes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.nn.test_conv_modules import DT, _close, _compare, _e, _input, _same_geometry

INF = math.inf
POOLS = [
    ("MaxPool3d", dict(kernel_size=2)),
    ("MaxPool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, return_indices=True)),
    ("MaxPool3d", dict(kernel_size=(2, 3, 2), dilation=(2, 1, 1), padding=1,
                       return_indices=True)),
    ("AvgPool3d", dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ("AvgPool3d", dict(kernel_size=2, padding=1, count_include_pad=False)),
    ("AvgPool3d", dict(kernel_size=(2, 3, 2), stride=1, divisor_override=3)),
    ("AdaptiveAvgPool3d", dict(output_size=(3, None, 2))),
    ("AdaptiveAvgPool3d", dict(output_size=4)),
    ("AdaptiveMaxPool3d", dict(output_size=(2, 3, 4), return_indices=True)),
    ("AdaptiveMaxPool3d", dict(output_size=(None, 1, 3))),
    ("LPPool1d", dict(norm_type=2, kernel_size=3, stride=2)),
    ("LPPool1d", dict(norm_type=INF, kernel_size=2, ceil_mode=True)),
    ("LPPool2d", dict(norm_type=1, kernel_size=(2, 3), stride=1)),
    ("LPPool2d", dict(norm_type=INF, kernel_size=2)),
    ("LPPool3d", dict(norm_type=2, kernel_size=2, stride=(1, 2, 1), ceil_mode=True)),
    ("LPPool3d", dict(norm_type=-INF, kernel_size=(2, 1, 2))),
]
SHAPES = {"1d": (2, 3, 11), "2d": (2, 3, 9, 7), "3d": (2, 3, 6, 7, 5)}


@pytest.mark.parametrize("name,kw", POOLS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(POOLS)])
@pytest.mark.parametrize("dtype", list(DT))
def test_pooling_matches_torch(name, kw, dtype):
    td, tol = DT[dtype]
    tm, em = getattr(torch.nn, name)(**kw), getattr(nn, name)(**kw)
    assert repr(em) == repr(tm)
    shape = SHAPES[name[-2:]]
    for layout in ("contiguous", "permuted", "strided"):
        _compare(tm, em, _input(shape, td, layout), tol)
    _compare(tm, em, _input(shape[1:], td, "permuted"), tol)  # unbatched


def _pooled(nd: int, x: torch.Tensor, **kw):
    return getattr(torch.nn.functional, f"max_pool{nd}d")(x, return_indices=True, **kw)


UNPOOL = [(1, dict(kernel_size=2), (2, 3, 10), None),
          (1, dict(kernel_size=3, stride=2, padding=1), (3, 9), [9]),
          (2, dict(kernel_size=2), (2, 3, 7, 6), (7, 6)),
          (2, dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0)), (3, 7, 6), None),
          (3, dict(kernel_size=2), (2, 3, 5, 4, 6), (2, 3, 5, 4, 6)),
          (3, dict(kernel_size=(1, 3, 2), stride=(1, 2, 2), padding=(0, 1, 1)), (2, 4, 5, 6),
           None)]


@pytest.mark.parametrize("nd,kw,shape,size", UNPOOL)
@pytest.mark.parametrize("dtype", list(DT))
def test_max_unpool_matches_torch(nd, kw, shape, size, dtype):
    td, tol = DT[dtype]
    tv, ti = _pooled(nd, _input(shape, td, "permuted"), **kw)
    tm, em = getattr(torch.nn, f"MaxUnpool{nd}d")(**kw), getattr(nn, f"MaxUnpool{nd}d")(**kw)
    assert repr(em) == repr(tm) and list(em.state_dict()) == []
    tv = tv.detach().requires_grad_(True)
    ev = _same_geometry(tv).requires_grad_(True)
    t_out, e_out = tm(tv, ti, size), em(ev, _e(ti), size)
    _close(e_out, t_out, tol, "output")
    g = torch.randn(t_out.shape, generator=torch.Generator().manual_seed(2), dtype=td)
    (t_out * g).sum().backward()
    (e_out * _e(g)).sum().backward()
    _close(ev.grad, tv.grad, tol, "input grad")


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_strided_indices(nd):
    """Forward with non-contiguous values and indices (torch's backward refuses strided
    indices: it views them; ember's gathers through any layout)."""
    shape = (2, 3) + (6,) * nd
    tv, ti = _pooled(nd, _input(shape, torch.float64, "contiguous"), kernel_size=2)
    big_v = torch.zeros(tuple(2 * s for s in tv.shape), dtype=tv.dtype)
    big_i = torch.zeros(tuple(2 * s for s in ti.shape), dtype=ti.dtype)
    sl = tuple(slice(None, None, 2) for _ in tv.shape)
    big_v[sl], big_i[sl] = tv, ti
    sv, si = big_v[sl], big_i[sl].transpose(0, 1).contiguous().transpose(0, 1)
    ev, ei = _same_geometry(sv), _same_geometry(si)
    assert not ev.is_contiguous() and not ei.is_contiguous()
    fn = f"max_unpool{nd}d"
    _close(getattr(F, fn)(ev, ei, 2), getattr(torch.nn.functional, fn)(sv, si, 2), 0, fn)
    ev.requires_grad_(True)
    g = ember.randn(*getattr(F, fn)(ev, ei, 2).shape, dtype=ember.float64)
    grad, = ember.autograd.grad((getattr(F, fn)(ev, ei, 2) * g).sum(), ev)
    flat = g.reshape(g.shape[0], g.shape[1], -1)
    expected = flat.gather(-1, ei.reshape(ei.shape[0], ei.shape[1], -1)).reshape(ei.shape)
    _close(grad, expected, 0, "input grad")


FRACTIONAL = [(2, dict(kernel_size=3, output_ratio=0.5, return_indices=True), (2, 3, 10, 9)),
              (2, dict(kernel_size=(2, 3), output_size=(5, 4)), (2, 3, 11, 9)),
              (3, dict(kernel_size=2, output_size=(3, 4, 2), return_indices=True), (2, 3, 6, 7, 5)),
              (3, dict(kernel_size=(2, 1, 2), output_ratio=(0.5, 0.6, 0.7)), (2, 3, 6, 7, 5))]


@pytest.mark.parametrize("nd,kw,shape", FRACTIONAL)
@pytest.mark.parametrize("dtype", list(DT))
def test_fractional_matches_torch_given_samples(nd, kw, shape, dtype):
    td, tol = DT[dtype]
    g = torch.Generator().manual_seed(11)
    samples = torch.rand(shape[0], shape[1], nd, generator=g, dtype=td)
    name = f"FractionalMaxPool{nd}d"
    tm = getattr(torch.nn, name)(**kw, _random_samples=samples)
    em = getattr(nn, name)(**kw, _random_samples=_e(torch.rand_like(samples)))
    assert repr(em) == repr(tm) == f"{name}()"
    assert list(em.state_dict()) == list(tm.state_dict()) == ["_random_samples"]
    for layout in ("contiguous", "permuted", "strided"):
        _compare(tm, em, _input(shape, td, layout), tol)  # the samples come with the state
    np.testing.assert_array_equal(em._random_samples.numpy(), samples.numpy())
    tu = getattr(torch.nn, name)(**kw, _random_samples=samples[:1])
    eu = getattr(nn, name)(**kw, _random_samples=_e(samples[:1]))
    _compare(tu, eu, _input(shape[1:], td, "permuted"), tol)  # unbatched


@pytest.mark.parametrize("nd", [2, 3])
def test_fractional_draws_its_own_samples(nd):
    shape = (2, 3) + (9,) * nd
    x = ember.randn(*shape, dtype=ember.float64)
    m = getattr(nn, f"FractionalMaxPool{nd}d")(2, output_size=4, return_indices=True)
    assert list(m.state_dict()) == []
    ember.manual_seed(5)
    v, i = m(x)
    ember.manual_seed(5)
    v2, i2 = m(x)
    assert v.shape == (2, 3) + (4,) * nd and i.dtype == ember.int64
    assert i.tolist() == i2.tolist() and v.tolist() == v2.tolist()
    assert i.tolist() != m(x)[1].tolist()  # fresh samples on the next call
    flat = x.reshape(2, 3, -1)
    got = flat.gather(-1, i.reshape(2, 3, -1)).reshape(v.shape)
    np.testing.assert_array_equal(got.numpy(), v.numpy())
    assert int(i.min()) >= 0 and int(i.max()) < 9 ** nd


def test_constructor_and_argument_errors():
    cases = [("FractionalMaxPool2d", (2,), {}, "FractionalMaxPool2d requires specifying either "
              "an output size, or a pooling ratio"),
             ("FractionalMaxPool3d", (2,), {}, "FractionalMaxPool3d requires specifying"),
             ("FractionalMaxPool2d", (2, 3, 0.5), {},
              "only one of output_size and output_ratio may be specified"),
             ("FractionalMaxPool2d", (2,), dict(output_ratio=1.5),
              r"output_ratio must be between 0 and 1 \(got 1.5\)"),
             ("FractionalMaxPool3d", (2,), dict(output_ratio=(0, 0.5, 0.5)),
              r"output_ratio must be between 0 and 1 \(got \(0, 0.5, 0.5\)\)")]
    for name, args, kw, match in cases:
        for lib in (torch, ember):
            with pytest.raises(ValueError, match=match):
                getattr(lib.nn, name)(*args, **kw)
    x = torch.randn(2, 3, 8, 8)
    calls = [(lambda lib, t: lib.nn.functional.adaptive_avg_pool2d(t[0, 0], (2, 2, 2)),
              ValueError, "Input dimension should be at least 4"),
             (lambda lib, t: lib.nn.functional.adaptive_max_pool3d(t, (2, 2, 2, 2)), ValueError,
              "Input dimension should be at least 5"),
             (lambda lib, t: lib.nn.functional.fractional_max_pool2d(t, 2, output_ratio=0.5),
              TypeError, "object of type 'float' has no len()"),
             (lambda lib, t: lib.nn.functional.fractional_max_pool2d(t[0, 0], 2, output_size=3),
              IndexError, "Dimension out of range"),
             (lambda lib, t: lib.nn.functional.fractional_max_pool2d(t.int(), 2, output_size=3),
              NotImplementedError, "not implemented for 'Int'"),
             (lambda lib, t: lib.nn.functional.max_unpool2d(t, t.long(), 2, output_size=(1, 9)),
              ValueError, r'invalid output_size "\(1, 9\)" \(dim 0 must be between 14 and 18\)')]
    for fn, err, match in calls:
        with pytest.raises(err):
            fn(torch, x)
        with pytest.raises(err, match=match):
            fn(ember, _e(x))


def test_fractional_3d_accepts_a_scalar_ratio_like_torch():
    x = torch.randn(1, 2, 8, 6, 7)
    s = torch.rand(1, 2, 3)
    tv = torch.nn.functional.fractional_max_pool3d(x, 2, output_ratio=0.5, _random_samples=s)
    ev = F.fractional_max_pool3d(_e(x), 2, output_ratio=0.5, _random_samples=_e(s))
    _close(ev, tv, 0, "values")


def _dd(*shape):
    return ember.tensor(np.random.default_rng(3).standard_normal(shape)).requires_grad_(True)


_SAMPLES = ember.tensor([[[0.3, 0.7, 0.5]]], dtype=ember.float64)
GRADGRAD = {
    "max_pool3d": (lambda x: F.max_pool3d(x, 2, 1, 1), ((1, 1, 3, 3, 2),)),
    "avg_pool3d": (lambda x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
                   ((1, 1, 4, 3, 4),)),
    "adaptive_avg_pool3d": (lambda x: F.adaptive_avg_pool3d(x, (2, 3, 1)), ((1, 1, 3, 4, 3),)),
    "adaptive_max_pool3d": (lambda x: F.adaptive_max_pool3d(x, (2, 1, 2)), ((1, 1, 3, 4, 3),)),
    "lp_pool2d": (lambda x: F.lp_pool2d(x * x + 0.5, 1.5, 2, 1), ((1, 1, 3, 4),)),
    "lp_pool3d_inf": (lambda x: F.lp_pool3d(x, INF, 2), ((1, 1, 2, 2, 4),)),
    "max_unpool2d": (lambda x: F.max_unpool2d(x, ember.tensor([[[5, 2], [10, 15]]]), 2),
                     ((1, 2, 2),)),
    "max_unpool3d": (lambda x: F.max_unpool3d(x, ember.tensor([[[[3, 12]]]]), 2),
                     ((1, 1, 1, 2),)),
    "fractional_max_pool3d": (lambda x: F.fractional_max_pool3d(
        x, 2, output_size=2, _random_samples=_SAMPLES), ((1, 1, 3, 3, 4),)),
}


@pytest.mark.parametrize("name", list(GRADGRAD))
def test_gradgradcheck(name):
    fn, shapes = GRADGRAD[name]
    inputs = tuple(_dd(*s) for s in shapes)
    assert ember.autograd.gradgradcheck(fn, inputs)


def test_meta_shapes():
    x = ember.empty(2, 4, 5, 9, 8, device="meta")
    v, i = F.max_pool3d(x, 3, 2, 1, ceil_mode=True, return_indices=True)
    assert v.shape == (2, 4, 3, 5, 5) and i.dtype == ember.int64
    assert F.avg_pool3d(x, 2, padding=1).shape == (2, 4, 3, 5, 5)
    assert F.adaptive_avg_pool3d(x, (1, None, 3)).shape == (2, 4, 1, 9, 3)
    assert F.adaptive_max_pool3d(x, 2, return_indices=True)[1].shape == (2, 4, 2, 2, 2)
    assert F.lp_pool3d(x, 2, 2).shape == (2, 4, 2, 4, 4)
    assert F.lp_pool1d(x[0, 0], INF, 3).shape == (5, 9, 2)
    assert F.max_unpool3d(v, i, 3, 2, 1).shape == (2, 4, 5, 9, 9)
    u = ember.empty(2, 4, 3, device="meta")
    fv, fi = F.fractional_max_pool3d(x, 2, output_ratio=(0.5, 0.5, 0.5), return_indices=True,
                                     _random_samples=u)
    assert fv.shape == fi.shape == (2, 4, 2, 4, 4) and fi.device.type == "meta"


@pytest.mark.parametrize("nd", [2, 3])
def test_max_pool_windows_of_lowest_values_take_their_first_in_bounds_index(nd):
    """A window holding only padding and -inf keeps PyTorch's starting index: the first
    in-bounds element, stepping by the dilation from a negative start."""
    x = torch.full((1, 1) + (5,) * nd, -INF, dtype=torch.float64)
    x[(0, 0) + (4,) * nd] = 1.0
    for kw in (dict(kernel_size=2, stride=1, padding=1, dilation=2),
               dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)):
        fn = f"max_pool{nd}d"
        tv, ti = getattr(torch.nn.functional, fn)(x, return_indices=True, **kw)
        ev, ei = getattr(F, fn)(_e(x), return_indices=True, **kw)
        assert ei.tolist() == ti.tolist(), kw
        np.testing.assert_array_equal(ev.numpy(), tv.numpy())
