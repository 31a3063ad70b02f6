"""Complex pointwise ops, reductions and products against torch: values, gradients by torch's
convention (conjugate Wirtinger derivatives of a real loss), gradcheck on complex inputs,
non-contiguous and lazily conjugated operands, in-place writes through conjugated views, and
torch's refusals."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.autograd import gradcheck, gradgradcheck

_RNG = np.random.default_rng(0)

UNARY = ["neg", "abs", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
         "square", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
         "tanh", "asinh", "acosh", "atanh", "sigmoid", "angle", "conj_physical", "sgn"]
BINARY = {"add": lambda L, a, b: L.add(a, b, alpha=2), "sub": lambda L, a, b: a - b,
          "mul": lambda L, a, b: a * b, "div": lambda L, a, b: a / b,
          "pow": lambda L, a, b: a ** b, "mul_scalar": lambda L, a, b: a * (0.5 - 2j) + b,
          "rdiv_scalar": lambda L, a, b: (1 + 1j) / a + b,
          "pow_scalar": lambda L, a, b: a ** 2.5 * b,
          "mul_real": lambda L, a, b: a * b.real, "complex_conj": lambda L, a, b: a.conj() * b}
REDUCTIONS = {"sum": lambda L, x: x.sum(), "sum_dim": lambda L, x: x.sum(1),
              "mean": lambda L, x: x.mean(0), "prod": lambda L, x: x.prod(1),
              "cumsum": lambda L, x: x.cumsum(1), "var": lambda L, x: x.var(1),
              "std": lambda L, x: x.std(), "norm": lambda L, x: L.linalg.vector_norm(x, dim=1),
              "norm1": lambda L, x: L.linalg.vector_norm(x, ord=1),
              "norm3": lambda L, x: L.linalg.vector_norm(x, ord=3)}
PRODUCTS = {"matmul": lambda L, a, b: a @ b.mT, "mm": lambda L, a, b: L.mm(a, b.mH),
            "bmm": lambda L, a, b: L.bmm(a[None], b.mT[None]),
            "mv": lambda L, a, b: L.mv(a, b[0]), "dot": lambda L, a, b: L.dot(a[0], b[1]),
            "vdot": lambda L, a, b: L.vdot(a[0], b[1]),
            "outer": lambda L, a, b: L.outer(a[0], b[1]),
            "addmm": lambda L, a, b: L.addmm(a[:, :3], a, b.mT[:, :3], alpha=2)}


def _complex(shape, dtype=np.complex128) -> np.ndarray:
    return (_RNG.uniform(0.3, 1.2, shape) * np.exp(1j * _RNG.uniform(-2.5, 2.5, shape))).astype(
        dtype)


def _layout(lib, a: np.ndarray, kind: str):
    """``a`` as a contiguous, transposed, stepped or lazily conjugated leaf of ``lib``."""
    if kind == "contiguous":
        t = lib.tensor(a)
    elif kind == "transposed":
        t = lib.tensor(a.T.copy()).t()
    elif kind == "stepped":
        t = lib.tensor(np.repeat(a, 2, axis=-1))[..., ::2]
    else:  # conj: a conjugated view of the conjugates
        t = lib.tensor(a.conj().copy()).conj()
    assert np.allclose(t.resolve_conj().numpy(), a)
    return t.requires_grad_() if t.is_leaf else t


def _run(lib, fn, arrays, kind):
    leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
    views = [x if kind == "contiguous" else _view(lib, x, kind) for x in leaves]
    out = fn(lib, *views)
    loss = (out.abs() ** 2).sum() if out.is_complex() else (out * out).sum()
    loss.backward()
    return out, [x.grad for x in leaves]


def _view(lib, x, kind):
    """A differentiable non-contiguous (or conjugated) view with the values of ``x``."""
    if kind == "transposed":
        return x.t().contiguous().t() if x.ndim == 2 else x
    if kind == "stepped":
        return lib.stack([x, x * 0], -1)[..., 0]
    return x.conj().resolve_conj().conj().conj()


def _close(e, t, eps):
    got = e.detach().resolve_conj().numpy()
    want = t.detach().resolve_conj().resolve_neg().numpy()
    assert got.dtype == want.dtype and got.shape == want.shape
    scale = max(1.0, float(np.abs(want).max(initial=0)))
    np.testing.assert_allclose(got, want, rtol=64 * eps, atol=64 * eps * scale)


def _check(fn, arrays, kind):
    e_out, e_grads = _run(ember, fn, arrays, kind)
    t_out, t_grads = _run(torch, fn, arrays, kind)
    eps = np.finfo(np.float64).eps
    _close(e_out, t_out, eps)
    for eg, tg in zip(e_grads, t_grads):
        assert (eg is None) == (tg is None)
        if eg is not None:
            _close(eg, tg, eps * 1e3)  # backward formulas chain a few more roundings


KINDS = ["contiguous", "transposed", "stepped", "conj"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", UNARY)
def test_unary_values_and_grads_like_torch(name, kind):
    _check(lambda L, x: getattr(L, name)(x), [_complex((3, 4))], kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(BINARY))
def test_binary_values_and_grads_like_torch(name, kind):
    _check(BINARY[name], [_complex((3, 4)), _complex((3, 4))], kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(REDUCTIONS))
def test_reductions_values_and_grads_like_torch(name, kind):
    _check(REDUCTIONS[name], [_complex((3, 4))], kind)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(PRODUCTS))
def test_products_values_and_grads_like_torch(name, kind):
    _check(PRODUCTS[name], [_complex((3, 4)), _complex((3, 4))], kind)


def test_real_and_complex_operands_give_real_gradients_to_real_leaves():
    _check(lambda L, a, b: a * b, [_RNG.standard_normal((2, 3)), _complex((2, 3))], "contiguous")
    _check(lambda L, a, b: L.complex(a, b).exp(), [_RNG.standard_normal(3),
                                                    _RNG.standard_normal(3)], "contiguous")
    _check(lambda L, a, b: L.polar(a.abs() + 0.5, b), [_RNG.standard_normal(3),
                                                       _RNG.standard_normal(3)], "contiguous")
    _check(lambda L, a, b: L.view_as_complex(L.stack([a, b], -1)) ** 2,
           [_RNG.standard_normal(3), _RNG.standard_normal(3)], "contiguous")


@pytest.mark.parametrize("fn", [
    lambda t: (t * t.conj() + t).exp(), lambda t: t.abs(), lambda t: t.angle(),
    lambda t: ember.view_as_real(t).sin().sum(-1), lambda t: t.real * t.imag,
    lambda t: (t @ t.mH).sum(), lambda t: t.reciprocal().sqrt(), lambda t: t.var(),
    lambda t: ember.linalg.vector_norm(t), lambda t: t.prod(),
], ids=["exp", "abs", "angle", "view_as_real", "parts", "matmul", "rsqrt", "var", "norm", "prod"])
def test_gradcheck_on_complex_inputs(fn):
    z = ember.tensor(_complex((2, 3)), requires_grad=True)
    assert gradcheck(fn, (z,))


def test_gradgradcheck_on_complex_inputs():
    z = ember.tensor(_complex((3,)), requires_grad=True)
    assert gradgradcheck(lambda t: (t.sin() * t).exp(), (z,))


def test_gradcheck_catches_a_wrong_complex_gradient():
    z = ember.tensor(_complex((3,)), requires_grad=True)
    with pytest.raises(ember.autograd.GradcheckError):
        gradcheck(lambda t: t.real * 1j + t.imag.detach(), (z,))


def test_backward_of_complex_output_needs_a_gradient():
    z = ember.tensor(_complex((2,)), requires_grad=True)
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        (z * 2).backward()
    with pytest.raises(RuntimeError, match="only for real scalar outputs"):
        (z * 2).sum().backward()
    (z * 2).sum().backward(ember.tensor(1j, dtype=ember.complex128))
    t = torch.tensor(z.detach().numpy(), requires_grad=True)
    (t * 2).sum().backward(torch.tensor(1j, dtype=torch.complex128))
    _close(z.grad, t.grad, np.finfo(np.float64).eps)


# -- in-place writes through conjugated views -------------------------------------------------
@pytest.mark.parametrize("op", [
    lambda y, L: y.add_(1 - 2j), lambda y, L: y.mul_(2j), lambda y, L: y.copy_(L.ones(2, 3) * 1j),
    lambda y, L: y.fill_(3 + 1j), lambda y, L: y.__setitem__((0, 1), 5j),
    lambda y, L: y[1].div_(1 + 1j), lambda y, L: y.exp_(),
], ids=["add_", "mul_", "copy_", "fill_", "setitem", "view_div_", "exp_"])
def test_inplace_on_conj_view_writes_through_like_torch(op):
    a = _complex((2, 3))
    outs = []
    for lib in (ember, torch):
        x = lib.tensor(a)
        y = x.conj()
        op(y, lib)
        assert y.is_conj()
        outs.append((x.numpy(), y.resolve_conj().numpy()))
    np.testing.assert_allclose(outs[0][0], outs[1][0], rtol=1e-14)
    np.testing.assert_allclose(outs[0][1], outs[1][1], rtol=1e-14)


def test_inplace_on_conj_view_bumps_the_version_and_autograd_sees_it():
    x = ember.tensor(_complex((3,)), requires_grad=True)
    y = x.clone()
    v = y.conj()
    before = y._version
    v.mul_(2j)
    assert y._version > before
    (y.abs() ** 2).sum().backward()
    t = torch.tensor(x.detach().numpy(), requires_grad=True)
    u = t.clone()
    u.conj().mul_(2j)
    (u.abs() ** 2).sum().backward()
    _close(x.grad, t.grad, np.finfo(np.float64).eps)


# -- torch's refusals -------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [
    lambda L, x: x.clamp(0, 1), lambda L, x: x < 1, lambda L, x: x.floor(),
    lambda L, x: x.sign(), lambda L, x: x.max(), lambda L, x: x.min(), lambda L, x: x.amax(),
    lambda L, x: x.argmax(), lambda L, x: x.max(0), lambda L, x: L.maximum(x, x),
    lambda L, x: x.relu(), lambda L, x: x.clone().abs_(), lambda L, x: x.isposinf(),
    lambda L, x: x.erf(), lambda L, x: L.atan2(x, x), lambda L, x: x % 2,
], ids=["clamp", "lt", "floor", "sign", "max", "min", "amax", "argmax", "max_dim", "maximum",
        "relu", "abs_", "isposinf", "erf", "atan2", "remainder"])
def test_ops_torch_refuses_on_complex(fn):
    a = _complex((2, 3), np.complex64)
    with pytest.raises((RuntimeError, NotImplementedError)) as te:
        fn(torch, torch.tensor(a))
    with pytest.raises(type(te.value)) as ee:
        fn(ember, ember.tensor(a))
    # the same gist: torch's message without its kernel's name
    assert str(te.value).strip().split('" ')[-1] in str(ee.value)


# -- linalg -----------------------------------------------------------------------------------
def _hermitian_pd(n: int) -> np.ndarray:
    m = _complex((n, n))
    return m @ m.conj().T + n * np.eye(n)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_of_complex_reads_one_triangle_like_torch(upper):
    a = _hermitian_pd(3)
    garbage = np.triu(_complex((3, 3)), 1)
    a = a + (garbage.conj().T if upper else garbage)  # the triangle cholesky never reads
    weights = np.arange(9.0).reshape(3, 3)
    outs = []
    for lib in (ember, torch):
        x = lib.tensor(a, requires_grad=True)
        out = lib.linalg.cholesky(x, upper=upper)
        (out.abs() ** 2 * lib.tensor(weights)).sum().backward()
        outs.append((out, x.grad))
    eps = np.finfo(np.float64).eps
    _close(outs[0][0], outs[1][0], eps * 10)
    _close(outs[0][1], outs[1][1], eps * 1e3)


@pytest.mark.parametrize("fn", [
    lambda t: ember.linalg.cholesky(t @ t.mH + 3 * ember.eye(3, dtype=t.dtype)),
    lambda t: ember.linalg.inv(t + 3 * ember.eye(3, dtype=t.dtype)),
    lambda t: ember.linalg.det(t),
    lambda t: ember.linalg.solve(t + 3 * ember.eye(3, dtype=t.dtype), t[:, :2]),
], ids=["cholesky", "inv", "det", "solve"])
def test_gradcheck_complex_linalg(fn):
    z = ember.tensor(_complex((3, 3)), requires_grad=True)
    assert gradcheck(fn, (z,))


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_of_complex_hermitian_like_torch(uplo):
    m = _complex((3, 3))
    a = m + m.conj().T
    weights = np.arange(9.0).reshape(3, 3)
    for fn in (lambda L, x: L.linalg.eigvalsh(x, UPLO=uplo),
               lambda L, x: L.linalg.eigh(x, UPLO=uplo)[0],
               # a loss that does not depend on the eigenvectors' phases
               lambda L, x: L.linalg.eigh(x, UPLO=uplo)[1].abs() ** 2 * L.tensor(weights)):
        outs = []
        for lib in (ember, torch):
            x = lib.tensor(a, requires_grad=True)
            out = fn(lib, x)
            (out * out).sum().backward()
            outs.append((out, x.grad))
        assert outs[0][0].dtype is ember.float64  # real eigenvalues
        eps = np.finfo(np.float64).eps
        _close(outs[0][0], outs[1][0], eps * 100)
        _close(outs[0][1], outs[1][1], eps * 1e4)
    z = ember.tensor(m, requires_grad=True)
    assert gradcheck(lambda t: ember.linalg.eigvalsh(t + t.mH, UPLO=uplo), (z,))
    assert gradcheck(lambda t: ember.linalg.eigh(t + t.mH, UPLO=uplo)[1].abs(), (z,))
