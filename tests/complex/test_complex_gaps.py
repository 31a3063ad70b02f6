"""Complex inputs of the pointwise, reduction, indexing and copy ops torch accepts them for:
values and gradients against torch (conjugate Wirtinger convention), gradcheck on complex128,
zero-base powers, writes through a conjugated tensor's parts, casts to real and printing."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck

_RNG = np.random.default_rng(7)
_EPS = {np.complex64: np.finfo(np.float32).eps, np.complex128: np.finfo(np.float64).eps}


def _complex(shape, dtype=np.complex128) -> np.ndarray:
    return (_RNG.uniform(0.3, 1.2, shape) * np.exp(1j * _RNG.uniform(-2.5, 2.5, shape))).astype(
        dtype)


def _close(e, t, dtype=np.complex128, factor=64) -> None:
    got, want = e.detach().resolve_conj().numpy(), t.detach().resolve_conj().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    tol = _EPS[dtype] * factor
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol, equal_nan=True)


# name -> (function of (lib, *leaves), input shapes)
GRAD_CASES = {
    "lerp_scalar": (lambda L, a, b: L.lerp(a, b, 0.3 - 0.2j), [(3, 4), (3, 4)]),
    "lerp_tensor": (lambda L, a, b, w: L.lerp(a, b, w), [(3, 4), (3, 4), (4,)]),
    "lerp_far": (lambda L, a, b: L.lerp(a, b, 0.8), [(3, 4), (3, 4)]),
    "addcmul": (lambda L, a, b, c: L.addcmul(a, b, c, value=0.5 + 1j), [(3, 4), (4,), (3, 4)]),
    "addcdiv": (lambda L, a, b, c: L.addcdiv(a, b, c, value=2), [(3, 4), (3, 4), (3, 4)]),
    "logsumexp": (lambda L, a: L.logsumexp(a, 1), [(3, 4)]),
    "trace": (lambda L, a: L.trace(a), [(4, 4)]),
    "logcumsumexp": (lambda L, a: a.logcumsumexp(1), [(3, 4)]),
    "var_mean": (lambda L, a: L.var_mean(a, 1)[1] * 2 + L.var_mean(a, 1)[0], [(3, 4)]),
    "std_mean": (lambda L, a: L.std_mean(a)[1], [(3, 4)]),
    "prod": (lambda L, a: a.prod(1), [(3, 4)]),
    "cumprod": (lambda L, a: a.cumprod(0), [(3, 4)]),
    "where": (lambda L, a, b: L.where(a.real > 0, a, b), [(3, 4), (3, 4)]),
    "masked_fill": (lambda L, a: a.masked_fill(a.imag > 0, 2 - 1j), [(3, 4)]),
    "index_select": (lambda L, a: a.index_select(1, L.tensor([3, 0, 3])), [(3, 4)]),
    "gather": (lambda L, a: a.gather(1, L.tensor([[0, 2], [1, 1], [3, 0]])), [(3, 4)]),
    "scatter_add": (lambda L, a, s: a.scatter_add(1, L.tensor([[0, 2], [1, 1], [3, 0]]), s),
                    [(3, 4), (3, 2)]),
    "cat_stack": (lambda L, a, b: L.stack([L.cat([a, b]), L.cat([b, a])]), [(2, 3), (2, 3)]),
    "view_as_real_copy": (lambda L, a: L.view_as_real_copy(a), [(3, 2)]),
    "abs": (lambda L, a: a.abs(), [(3, 4)]),
    "angle": (lambda L, a: a.angle(), [(3, 4)]),
    "pow_complex_exp": (lambda L, a, b: a ** b, [(3, 4), (3, 4)]),
    "pow_real_exp": (lambda L, a: a ** 1.5, [(3, 4)]),
}


def _loss(lib, out):
    """A real loss of a complex or real output whose gradient touches both parts."""
    if out.is_complex():
        w = lib.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))
        return (out.real * w).sum() + (out.imag * w * w).sum()
    return (out * lib.tensor(np.linspace(0.5, 1.5, out.numel()).reshape(tuple(out.shape)))).sum()


@pytest.mark.parametrize("name", GRAD_CASES)
def test_values_and_gradients_match_torch(name):
    fn, shapes = GRAD_CASES[name]
    arrays = [_complex(s) for s in shapes]
    results = {}
    for lib in (torch, ember):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        out = fn(lib, *leaves)
        _loss(lib, out).backward()
        results[lib] = (out, [x.grad for x in leaves])
    (eo, eg), (to, tg) = results[ember], results[torch]
    _close(eo, to)
    for e, t in zip(eg, tg, strict=True):
        _close(e, t)


@pytest.mark.parametrize("name", GRAD_CASES)
def test_gradcheck_complex128(name):
    fn, shapes = GRAD_CASES[name]
    leaves = [ember.tensor(_complex(s), requires_grad=True) for s in shapes]
    assert gradcheck(lambda *xs: fn(ember, *xs), tuple(leaves))


def test_complex64_values_match_torch():
    a, b = _complex((5, 3), np.complex64), _complex((5, 3), np.complex64)
    for fn in (lambda L, x, y: L.lerp(x, y, 0.7), lambda L, x, y: L.logsumexp(x, 0),
               lambda L, x, y: L.var_mean(x, 0)[1], lambda L, x, y: L.trace(x[:3]),
               lambda L, x, y: L.addcdiv(x, x, y)):
        _close(fn(ember, ember.tensor(a), ember.tensor(b)),
               fn(torch, torch.tensor(a), torch.tensor(b)), np.complex64)


def test_isclose_measures_complex_distances():
    a = np.array([1 + 1j, 1 + 1j, complex(np.nan, 1), complex(np.inf, 0), 1j, 2 + 0j])
    b = np.array([1 + 1.5j, 1 + 1j + 1e-9j, complex(1, np.nan), complex(np.inf, 0), -1j, 2 + 1e-3j])
    for kw in ({}, {"equal_nan": True}, {"atol": 0.6}, {"rtol": 0.01, "atol": 0}):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "discards the imaginary part" on the way
            got = ember.isclose(ember.tensor(a), ember.tensor(b), **kw)
        assert got.tolist() == torch.isclose(torch.tensor(a), torch.tensor(b), **kw).tolist()
        assert ember.allclose(ember.tensor(a[:2]), ember.tensor(b[:2]), **kw) == \
            torch.allclose(torch.tensor(a[:2]), torch.tensor(b[:2]), **kw)


def test_pow_of_a_complex_zero_base_matches_torch():
    base = np.array([0j, 0j, 0j, 0j, 0j, 0j, 1j])
    exps = np.array([0j, 1 + 0j, 2j, -1 + 0j, 1 + 1j, -1 + 1j, 0j])
    for dtype in (np.complex64, np.complex128):
        e = ember.pow(ember.tensor(base.astype(dtype)), ember.tensor(exps.astype(dtype)))
        t = torch.pow(torch.tensor(base.astype(dtype)), torch.tensor(exps.astype(dtype)))
        _close(e, t, dtype)
        for scalar in (0.0, 2, 0.5, -1.0, -2.5, 1j, 0j):
            _close(ember.tensor(base.astype(dtype)) ** scalar,
                   torch.tensor(base.astype(dtype)) ** scalar, dtype)


def test_gradients_at_zero_match_torch():
    z = np.array([0j, 1 + 1j, -2 + 0j])
    for fn in (lambda x: x.abs(), lambda x: x.angle(), lambda x: x.sgn()):
        grads = []
        for lib in (torch, ember):
            x = lib.tensor(z, requires_grad=True)
            _loss(lib, fn(x)).backward()
            grads.append(x.grad)
        _close(grads[1], grads[0])


def test_view_as_complex_copy_shares_nothing():
    pairs = ember.tensor(_RNG.normal(size=(3, 2)))
    c = ember.view_as_complex_copy(pairs)
    assert c.dtype == ember.complex128 and c.is_contiguous()
    pairs.zero_()
    assert bool((c != 0).all())
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        ember.view_as_complex_copy(ember.zeros(3, 3))


def test_parts_of_a_conjugated_tensor():
    a = _complex((2, 3))
    x, tx = ember.tensor(a), torch.tensor(a)
    assert x.conj().imag.is_neg() and tx.conj().imag.is_neg()
    np.testing.assert_array_equal(x.conj().imag.resolve_neg().numpy(),
                                  tx.conj().imag.resolve_neg().numpy())
    np.testing.assert_array_equal(x.conj().real.numpy(), tx.conj().real.numpy())
    # assigning a part writes the conjugated tensor's stored values, as torch
    for value in (1.5, np.arange(3.0)):
        x, tx = ember.tensor(a), torch.tensor(a)
        y, ty = x.conj(), tx.conj()
        y.imag = ember.tensor(value) if isinstance(value, np.ndarray) else value
        ty.imag = torch.tensor(value) if isinstance(value, np.ndarray) else value
        np.testing.assert_array_equal(x.numpy(), tx.numpy())
        np.testing.assert_array_equal(y.resolve_conj().numpy(), ty.resolve_conj().numpy())


def test_copy_between_complex_and_real():
    a = _complex((2, 3))
    with pytest.warns(UserWarning, match="Casting complex values to real discards the imaginary"):
        dst = ember.zeros(2, 3).copy_(ember.tensor(a))
    np.testing.assert_array_equal(dst.numpy(), a.real.astype(np.float32))
    dst = ember.zeros(2, 3, dtype=ember.complex64).copy_(ember.tensor(a.real))
    np.testing.assert_array_equal(dst.numpy(), a.real.astype(np.complex64))
    strided = ember.zeros(2, 6, dtype=ember.complex128)[:, ::2]
    strided.copy_(ember.tensor(a).conj())
    np.testing.assert_array_equal(strided.numpy(), a.conj())


def test_repr_of_non_finite_complex_matches_torch():
    for values in ([complex(np.inf, np.nan), 1 + 2j, complex(-np.inf, -np.inf), complex(np.nan, 0)],
                   [1.5 + 2j, -3j], [1e10 + 1j, complex(0, np.inf)]):
        for dtype in ("complex64", "complex128"):
            e = repr(ember.tensor(values, dtype=getattr(ember, dtype)))
            t = repr(torch.tensor(values, dtype=getattr(torch, dtype)))
            assert e == t.replace("torch.", "ember.")


def test_complex_division_by_zero_is_silent_as_torch():
    a = ember.tensor([1 + 1j, 0j, 2 + 0j])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's divide/invalid flags stay inside the kernel
        got = a / ember.tensor([0j, 0j, 0j])
    want = torch.tensor([1 + 1j, 0j, 2 + 0j]) / torch.tensor([0j, 0j, 0j])
    _close(got, want)


def test_reducing_complex_into_a_real_dtype_warns_as_torch():
    a = _complex((2, 3))
    for name in ("sum", "mean", "prod"):
        with pytest.warns(UserWarning, match="Casting complex values to real discards"):
            got = getattr(ember.tensor(a), name)(dtype=ember.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = getattr(torch.tensor(a), name)(dtype=torch.float64)
        _close(got, want)
