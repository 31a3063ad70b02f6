"""Complex linalg.lstsq (every CPU driver) and linalg.matrix_power (negative exponents too):
values, dtypes and gradients against torch (conjugate Wirtinger convention), gradcheck."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck

_RNG = np.random.default_rng(11)
_EPS = {"complex64": np.finfo(np.float32).eps, "complex128": np.finfo(np.float64).eps,
        "float32": np.finfo(np.float32).eps, "float64": np.finfo(np.float64).eps}


def _complex(shape) -> np.ndarray:
    return _RNG.uniform(-1, 1, shape) + 1j * _RNG.uniform(-1, 1, shape)


def _tensors(lib, arrays, dtype, grad=False, transpose=False):
    out = []
    for a in arrays:
        if transpose and a.ndim >= 2:  # a transposed (non-contiguous) view of the same values
            t = lib.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)),
                           dtype=getattr(lib, dtype)).mT
        else:
            t = lib.tensor(a, dtype=getattr(lib, dtype))
        out.append(t.detach().requires_grad_(grad) if grad else t)
    return out


def _check(got, want, tol) -> None:
    g, w = got.detach().resolve_conj().numpy(), want.detach().resolve_conj().numpy()
    assert g.dtype == w.dtype and g.shape == w.shape, (g.dtype, w.dtype, g.shape, w.shape)
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol)


def _real_loss(lib, outs):
    """A real loss touching both parts of every complex output (and the real ones)."""
    total = 0
    for o in outs:
        if not o.requires_grad or o.numel() == 0:
            continue
        w = lib.tensor(np.linspace(0.5, 1.5, o.numel()).reshape(tuple(o.shape)))
        total = total + ((o.real * w + o.imag * w * w) if o.is_complex() else o * w).sum()
    return total


LSTSQ_CASES = [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((4, 4), (4, 1)), ((2, 5, 3), (2, 5, 2)),
               ((2, 5, 3), (2, 5)), ((5, 3), (5,)), ((1, 4, 2), (3, 4, 1))]


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("transpose", [False, True])
def test_lstsq_matches_torch(dtype, driver, transpose):
    # the conditioning of these random matrices is modest (< 1e2): eps times a factor of 1e3
    tol = _EPS[dtype] * 1e3
    kw = {} if driver is None else {"driver": driver}
    for sa, sb in LSTSQ_CASES:
        arrays = [_complex(sa), _complex(sb)]
        results = {}
        for lib in (ember, torch):
            A, B = _tensors(lib, arrays, dtype, grad=True, transpose=transpose)
            r = lib.linalg.lstsq(A, B, **kw)
            loss = _real_loss(lib, r)
            grads = lib.autograd.grad(loss, (A, B)) if dtype == "complex128" else ()
            results[lib] = (tuple(r), grads)
        (eo, eg), (to, tg) = results[ember], results[torch]
        for e, t in zip(eo, to, strict=True):
            if t.dtype == torch.int64:
                assert e.tolist() == t.tolist()
            else:
                _check(e, t, tol)
            assert e.requires_grad == t.requires_grad
        for e, t in zip(eg, tg, strict=True):
            _check(e, t, tol * 10)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_of_a_rank_deficient_complex_matrix(driver):
    a = _complex((6, 4))
    a[:, 3] = (0.5 - 2j) * a[:, 1]  # rank 3: the minimum-norm solution
    b = _complex((6, 2))
    for rcond in (None, 1e-3):
        e = ember.linalg.lstsq(ember.tensor(a), ember.tensor(b), rcond, driver=driver)
        t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), rcond, driver=driver)
        assert e.rank.tolist() == t.rank.tolist() == 3
        _check(e.solution, t.solution, 1e-10)
        _check(e.residuals, t.residuals, 1e-10)
        _check(e.singular_values, t.singular_values, 1e-10)


def test_lstsq_gradcheck_complex128():
    A = ember.tensor(_complex((5, 3)), requires_grad=True)
    B = ember.tensor(_complex((5, 2)), requires_grad=True)
    assert gradcheck(lambda a, b: ember.linalg.lstsq(a, b).solution, (A, B))
    assert gradcheck(lambda a, b: ember.linalg.lstsq(a, b, driver="gelsd").residuals, (A, B))
    W = ember.tensor(_complex((2, 4)), requires_grad=True)  # underdetermined: minimum norm
    assert gradcheck(lambda a, b: ember.linalg.lstsq(a, b).solution, (W, B[:2]))


def test_lstsq_refuses_mixed_real_and_complex_as_torch():
    a, b = _complex((4, 2)), _complex((4, 1))
    with pytest.raises(RuntimeError):
        torch.linalg.lstsq(torch.tensor(a), torch.tensor(b.real))
    with pytest.raises(RuntimeError, match="Expected input and other to have the same dtype"):
        ember.linalg.lstsq(ember.tensor(a), ember.tensor(b.real))


def _well_conditioned(shape) -> np.ndarray:
    n = shape[-1]
    return _complex(shape) * 0.4 + np.eye(n) * (1.2 + 0.3j)


@pytest.mark.parametrize("dtype", ["complex64", "complex128", "float32", "float64"])
@pytest.mark.parametrize("n", [-3, -2, -1, 0, 1, 2, 3, 5])
@pytest.mark.parametrize("transpose", [False, True])
def test_matrix_power_matches_torch(dtype, n, transpose):
    a = _well_conditioned((2, 3, 3))
    if dtype.startswith("float"):
        a = a.real
    # |n| products of a matrix of condition ~ 10: eps * |n| * 1e2
    tol = _EPS[dtype] * max(abs(n), 1) * 1e2
    results = {}
    for lib in (ember, torch):
        (A,) = _tensors(lib, [a], dtype, grad=True, transpose=transpose)
        out = lib.linalg.matrix_power(A, n)
        (g,) = lib.autograd.grad(_real_loss(lib, [out]), (A,)) if n else (lib.zeros_like(A),)
        results[lib] = (out, g)
    _check(results[ember][0], results[torch][0], tol)
    _check(results[ember][1], results[torch][1], tol * 10)


@pytest.mark.parametrize("n", [-2, -1, 2, 3])
def test_matrix_power_gradcheck_complex128(n):
    A = ember.tensor(_well_conditioned((3, 3)), requires_grad=True)
    assert gradcheck(lambda a: ember.linalg.matrix_power(a, n), (A,))
    assert gradcheck(lambda a: a.matrix_power(n), (A,))


def test_matrix_power_of_a_singular_complex_matrix_raises_as_torch():
    a = np.ones((3, 3)) * (1 + 1j)
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.matrix_power(torch.tensor(a), -1)
    with pytest.raises(ember.linalg.LinAlgError, match="singular"):
        ember.linalg.matrix_power(ember.tensor(a), -1)


def test_matrix_power_negative_of_an_integer_matrix_still_refuses():
    with pytest.raises(RuntimeError):
        torch.linalg.matrix_power(torch.eye(2, dtype=torch.int64), -1)
    with pytest.raises(RuntimeError, match="Expected a floating point or complex tensor"):
        ember.linalg.matrix_power(ember.eye(2, dtype=ember.int64), -1)


def test_eigh_backward_refuses_a_phase_dependent_loss_as_torch():
    m = _complex((3, 3))
    a = m + m.conj().T
    errors = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        _, V = lib.linalg.eigh(x)
        with pytest.raises(RuntimeError) as info:  # the loss sees V's phases
            lib.autograd.grad(V.real.sum() + V.imag.sum(), x)
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    for lib in (ember, torch):  # |V|^2 is phase free: both differentiate it
        x = lib.tensor(a, requires_grad=True)
        _, V = lib.linalg.eigh(x)
        lib.autograd.grad((V.abs() ** 2 * lib.arange(9.0).reshape(3, 3)).sum(), x)
