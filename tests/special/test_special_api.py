"""ember.special against torch.special: the namespace, autograd coverage, dtypes, out=."""

from __future__ import annotations

import inspect

import numpy as np
import pytest
import torch

import ember

NOT_DIFFERENTIABLE = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
                      "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
                      "modified_bessel_k1", "scaled_modified_bessel_k0",
                      "scaled_modified_bessel_k1", "spherical_bessel_j0")
POLYNOMIALS = tuple(n for n in ember.special.__all__ if n.endswith(("_t", "_u", "_v", "_w",
                                                                   "_h", "_he", "_l", "_p")))


def _torch_functions() -> set[str]:
    return {n for n in dir(torch.special) if not n.startswith("_")
            and callable(getattr(torch.special, n))
            and not inspect.isclass(getattr(torch.special, n))
            and not inspect.ismodule(getattr(torch.special, n))}


def test_all_covers_torch_special():
    names = _torch_functions()
    assert len(names) > 50
    assert sorted(names - set(ember.special.__all__)) == []
    for name in ember.special.__all__:
        fn = getattr(ember.special, name)
        assert callable(fn) and fn.__doc__, name


def test_polynomial_names_found():
    assert len(POLYNOMIALS) == 12


@pytest.mark.parametrize("name", NOT_DIFFERENTIABLE + POLYNOMIALS)
def test_output_never_requires_grad(name):
    args = (0.75,) if name not in POLYNOMIALS else (0.3, 4)
    values = []
    for lib in (torch, ember):
        x = lib.tensor([args[0], 1.5], dtype=lib.float64, requires_grad=True)
        out = getattr(lib.special, name)(x, *args[1:])
        values.append(out.requires_grad)
    assert values == [False, False]


@pytest.mark.parametrize("name,what", [("zeta", "zeta"), ("gammainc", "igamma: input"),
                                       ("gammaincc", "igammac: input")])
def test_first_argument_has_no_derivative(name, what):
    a = ember.tensor([2.5, 3.0], dtype=ember.float64, requires_grad=True)
    x = ember.tensor([0.5, 1.5], dtype=ember.float64, requires_grad=True)
    # ember's engine does not prune edges that a grad() call does not ask for (torch does),
    # so the gradient in x alone is taken with the first argument detached
    (gx,) = ember.autograd.grad(getattr(ember.special, name)(a.detach(), x).sum(), x)
    out = getattr(ember.special, name)(a, x)
    assert out.requires_grad
    ta = torch.tensor([2.5, 3.0], dtype=torch.float64, requires_grad=True)
    tx = torch.tensor([0.5, 1.5], dtype=torch.float64, requires_grad=True)
    t_out = getattr(torch.special, name)(ta, tx)
    (tgx,) = torch.autograd.grad(t_out.sum(), tx, retain_graph=True)
    np.testing.assert_allclose(gx.numpy(), tgx.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="derivative for '" + what):
        torch.autograd.grad(t_out.sum(), ta)
    with pytest.raises(NotImplementedError, match="derivative for '" + what):
        ember.autograd.grad(out.sum(), a)


@pytest.mark.parametrize("name", ["bessel_j0", "erfcx", "ndtri", "airy_ai",
                                  "modified_bessel_k1", "spherical_bessel_j0"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_types_refused_as_torch(name, dtype):
    with pytest.raises(NotImplementedError):
        getattr(torch.special, name)(torch.ones(2, dtype=getattr(torch, dtype)))
    with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented'):
        getattr(ember.special, name)(ember.ones(2, dtype=getattr(ember, dtype)))


def test_integer_input_promotes_to_default_float():
    for lib in (torch, ember):
        assert lib.special.bessel_j0(lib.tensor([1, 2])).dtype == lib.float32
        assert lib.special.zeta(lib.tensor([2, 3]), 1).dtype == lib.float32
        assert lib.special.chebyshev_polynomial_t(lib.tensor([1, 2]), 3).dtype == lib.float32
    with pytest.raises(NotImplementedError, match="igamma_cpu"):
        ember.special.gammainc(ember.tensor([2, 3]), ember.tensor([1, 1]))


def test_gammainc_needs_tensors():
    with pytest.raises(TypeError, match="must be Tensor"):
        torch.special.gammainc(torch.tensor([2.0]), 1.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        ember.special.gammainc(ember.tensor([2.0]), 1.0)


def test_out_argument():
    x = ember.tensor([0.5, 2.0, 7.0], dtype=ember.float64)
    out = ember.empty(3, dtype=ember.float64)
    assert ember.special.bessel_y0(x, out=out) is out
    expected = torch.special.bessel_y0(torch.tensor([0.5, 2.0, 7.0], dtype=torch.float64))
    np.testing.assert_allclose(out.numpy(), expected.numpy(), rtol=1e-12, atol=2e-6)
    out = ember.empty(0, dtype=ember.float64)
    ember.special.zeta(ember.tensor([[2.0], [3.0]], dtype=ember.float64), x, out=out)
    assert out.shape == (2, 3)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ember.special.erfcx(x, out=ember.empty(3, dtype=ember.int64))


def test_igamma_top_level_and_methods():
    a, x = ember.tensor([1.0, 2.5]), ember.tensor([2.0, 0.5])
    assert ember.igamma(a, x).equal(ember.special.gammainc(a, x))
    assert a.igammac(x).equal(ember.special.gammaincc(a, x))
    b = a.clone()
    assert b.igamma_(x) is b and b.equal(ember.special.gammainc(a, x))


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_dtype(name):
    data = np.random.default_rng(0).standard_normal((3, 4))
    got = getattr(ember.special, name)(ember.tensor(data, dtype=ember.float32), 1,
                                       dtype=ember.float64)
    want = getattr(torch.special, name)(torch.tensor(data, dtype=torch.float32), 1,
                                        dtype=torch.float64)
    assert got.dtype == ember.float64
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)


def test_meta_tensors():
    x = ember.empty((2, 3), device="meta")
    assert ember.special.airy_ai(x).shape == (2, 3)
    assert ember.special.legendre_polynomial_p(x, ember.empty((3,), device="meta")).shape == \
        (2, 3)
    with pytest.raises(RuntimeError):
        ember.special.zeta(x, ember.empty((4,), device="meta"))


@pytest.mark.parametrize("name,args", [("entr", ()), ("ndtr", ()), ("log_ndtr", ()),
                                       ("xlog1py", (0.5,))])
def test_composites_take_out(name, args):
    data = [0.25, 1.5, 3.0]
    out = ember.empty(0, dtype=ember.float64)
    got = getattr(ember.special, name)(ember.tensor(data, dtype=ember.float64), *args, out=out)
    t_out = torch.empty(0, dtype=torch.float64)
    getattr(torch.special, name)(torch.tensor(data, dtype=torch.float64), *args, out=t_out)
    assert got is out and out.shape == (3,)
    np.testing.assert_allclose(out.numpy(), t_out.numpy(), rtol=1e-14)


def test_i0_gradient_is_i1():
    x = ember.tensor([-3.0, 0.0, 0.5, 40.0], dtype=ember.float64, requires_grad=True)
    (g,) = ember.autograd.grad(ember.i0(x).sum(), x)
    want = torch.special.i1(torch.tensor([-3.0, 0.0, 0.5, 40.0], dtype=torch.float64))
    np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-14)
    assert ember.autograd.gradcheck(lambda t: ember.i0(t), (x,))
    assert ember.autograd.gradgradcheck(lambda t: ember.i0(t), (x,))
