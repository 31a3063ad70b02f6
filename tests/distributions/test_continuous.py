"""The continuous families against torch.distributions on identical parameters: shapes,
log_prob, cdf/icdf, entropy and moments, expand, reparameterized gradients (against the
implicit-reparameterization formula evaluated by torch) and sample statistics."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
import torch.distributions as td

import ember
import ember.distributions as ed

from ._compare import assert_same, to_numpy

_RNG = np.random.default_rng(0)


def _pos(*shape):
    return _RNG.uniform(0.5, 2.0, shape)


def _real(*shape):
    return _RNG.normal(0.0, 1.0, shape)


@dataclass
class Case:
    name: str
    build: Callable  # (lib, **params) -> distribution of lib
    params: Callable  # () -> dict of float64 arrays
    grad: tuple = ()  # parameters that rsample differentiates (by the implicit formula)
    kwargs: dict = field(default_factory=dict)


CASES = [
    Case("Normal", lambda D, loc, scale: D.Normal(loc, scale),
         lambda: {"loc": _real(2, 3), "scale": _pos(2, 3)}, ("loc", "scale")),
    Case("Uniform", lambda D, low, high: D.Uniform(low, high),
         lambda: {"low": _real(2, 3), "high": _real(2, 3) + 3.0}, ("low", "high")),
    Case("Exponential", lambda D, rate: D.Exponential(rate),
         lambda: {"rate": _pos(2, 3)}, ("rate",)),
    Case("Laplace", lambda D, loc, scale: D.Laplace(loc, scale),
         lambda: {"loc": _real(2, 3), "scale": _pos(2, 3)}, ("loc", "scale")),
    Case("Cauchy", lambda D, loc, scale: D.Cauchy(loc, scale),
         lambda: {"loc": _real(2, 3), "scale": _pos(2, 3)}, ("loc", "scale")),
    Case("Gumbel", lambda D, loc, scale: D.Gumbel(loc, scale),
         lambda: {"loc": _real(2, 3), "scale": _pos(2, 3)}, ("loc", "scale")),
    Case("LogNormal", lambda D, loc, scale: D.LogNormal(loc, scale),
         lambda: {"loc": _real(2, 3) * 0.3, "scale": _pos(2, 3) * 0.5}, ("loc", "scale")),
    Case("HalfNormal", lambda D, scale: D.HalfNormal(scale),
         lambda: {"scale": _pos(2, 3)}, ("scale",)),
    Case("HalfCauchy", lambda D, scale: D.HalfCauchy(scale),
         lambda: {"scale": _pos(2, 3)}, ("scale",)),
    Case("Pareto", lambda D, scale, alpha: D.Pareto(scale, alpha),
         lambda: {"scale": _pos(2, 3), "alpha": _pos(2, 3) + 4.0}, ("scale", "alpha")),
    Case("Weibull", lambda D, scale, concentration: D.Weibull(scale, concentration),
         lambda: {"scale": _pos(2, 3), "concentration": _pos(2, 3) + 0.5},
         ("scale", "concentration")),
    Case("LogisticNormal", lambda D, loc, scale: D.LogisticNormal(loc, scale),
         lambda: {"loc": _real(2, 3), "scale": _pos(2, 3)}),
]
IDS = [c.name for c in CASES]


def _build(case, params, layout="contiguous", requires_grad=False):
    """The ember and torch distributions of ``case`` over ``params``; ``layout="strided"``
    hands ember transposed views of the parameters instead of dense tensors."""
    ours, theirs = {}, {}
    for name, array in params.items():
        if layout == "strided":
            t = ember.tensor(np.ascontiguousarray(array.T)).mT
            assert not t.is_contiguous()
        else:
            t = ember.tensor(array.copy())
        ours[name] = t.requires_grad_(requires_grad)
        theirs[name] = torch.tensor(array.copy(), requires_grad=requires_grad)
    return case.build(ed, **ours), case.build(td, **theirs), ours, theirs


def _result(fn):
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001  (the type is compared with torch's)
        return None, exc


def _assert_same_outcome(ours_fn, theirs_fn):
    theirs, their_exc = _result(theirs_fn)
    ours, our_exc = _result(ours_fn)
    if their_exc is not None:
        assert isinstance(our_exc, type(their_exc)), (our_exc, their_exc)
        return
    assert our_exc is None, our_exc
    assert_same(ours, theirs)


@pytest.mark.parametrize("layout", ["contiguous", "strided"])
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_values_match_torch(case, layout):
    ours, theirs, _, _ = _build(case, case.params(), layout)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    torch.manual_seed(0)
    values = theirs.sample((4,))
    ember_values = ember.tensor(values.numpy().copy())
    assert_same(ours.log_prob(ember_values), theirs.log_prob(values))
    for name in ("mean", "mode", "variance", "stddev"):
        _assert_same_outcome(lambda n=name: getattr(ours, n), lambda n=name: getattr(theirs, n))
    _assert_same_outcome(ours.entropy, theirs.entropy)
    _assert_same_outcome(lambda: ours.cdf(ember_values), lambda: theirs.cdf(values))
    probs = np.linspace(0.05, 0.95, 4).reshape(4, *([1] * len(theirs.batch_shape)))
    probs = np.broadcast_to(probs, (4, *theirs.batch_shape)).copy()
    _assert_same_outcome(lambda: ours.icdf(ember.tensor(probs)),
                         lambda: theirs.icdf(torch.tensor(probs)))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_expand_matches_torch(case):
    ours, theirs, _, _ = _build(case, case.params())
    shape = (5, *theirs.batch_shape)
    big_ours, big_theirs = ours.expand(shape), theirs.expand(shape)
    assert type(big_ours) is type(ours)
    assert tuple(big_ours.batch_shape) == tuple(big_theirs.batch_shape)
    assert tuple(big_ours.event_shape) == tuple(big_theirs.event_shape)
    torch.manual_seed(1)
    values = big_theirs.sample()
    assert_same(big_ours.log_prob(ember.tensor(values.numpy().copy())), big_theirs.log_prob(values))
    assert tuple(big_ours.sample((2,)).shape) == tuple(big_theirs.sample((2,)).shape)
    with pytest.raises(RuntimeError):
        theirs.expand((7, 7))
    with pytest.raises(RuntimeError):
        ours.expand((7, 7))


@pytest.mark.parametrize("case", [c for c in CASES if c.grad], ids=[c.name for c in CASES
                                                                     if c.grad])
def test_rsample_gradient_is_the_implicit_reparameterization(case):
    """For a sample x = F⁻¹(u; θ) with u held fixed, dx/dθ = -(∂F/∂θ)(x; θ) / p(x; θ): the
    gradient ember's rsample gives must equal that formula evaluated with torch's cdf and
    log_prob at the same x."""
    params = case.params()
    ours, _, ours_params, _ = _build(case, params, requires_grad=True)
    ember.manual_seed(3)
    x = ours.rsample((6,))
    cotangent = _RNG.normal(size=tuple(x.shape))
    grads = ember.autograd.grad((x * ember.tensor(cotangent)).sum(),
                                [ours_params[n] for n in case.grad])
    _, theirs, _, theirs_params = _build(case, params, requires_grad=True)
    x_t = torch.tensor(to_numpy(x).copy())
    density = theirs.log_prob(x_t).exp().detach()
    weights = -torch.tensor(cotangent) / density
    expected = torch.autograd.grad((theirs.cdf(x_t) * weights).sum(),
                                   [theirs_params[n] for n in case.grad])
    for name, ours_grad, theirs_grad in zip(case.grad, grads, expected):
        # the formula divides by the density: relative error grows like 1/p at the tails
        assert_same(ours_grad, theirs_grad, rtol=1e-8, atol=1e-8), name


def _finite(value):
    return bool(np.all(np.isfinite(to_numpy(value))))


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_sample_statistics(case):
    """Sample means within 6 standard errors of ``mean`` (where the variance is finite) and
    the empirical CDF within 6 binomial standard errors of torch's cdf."""
    n = 20000
    ours, theirs, _, _ = _build(case, case.params())
    ember.manual_seed(11)
    samples = to_numpy(ours.sample((n,)))
    assert samples.shape == (n, *theirs.batch_shape, *theirs.event_shape)
    support = theirs.support
    assert bool(support.check(torch.tensor(samples)).all())
    mean, _ = _result(lambda: theirs.mean)
    variance, _ = _result(lambda: theirs.variance)
    if mean is not None and _finite(mean) and _finite(variance):
        bound = 6 * np.sqrt(variance.numpy() / n)
        assert np.all(np.abs(samples.mean(0) - mean.numpy()) <= bound)
    try:
        quantiles = theirs.icdf(torch.full(tuple(theirs.batch_shape), 0.3, dtype=torch.float64))
    except NotImplementedError:
        return
    p = theirs.cdf(quantiles).numpy()
    empirical = (samples <= quantiles.numpy()).mean(0)
    assert np.all(np.abs(empirical - p) <= 6 * np.sqrt(p * (1 - p) / n))


def test_rsample_reproduces_under_manual_seed():
    d = ed.Normal(ember.zeros(3), ember.ones(3))
    ember.manual_seed(5)
    first = d.rsample((2,))
    ember.manual_seed(5)
    assert bool((d.rsample((2,)) == first).all())


def test_normal_rsample_gradient_is_the_noise():
    loc = ember.tensor([0.5, -1.0], dtype=ember.float64).requires_grad_()
    scale = ember.tensor([2.0, 0.25], dtype=ember.float64).requires_grad_()
    x = ed.Normal(loc, scale).rsample()
    x.sum().backward()
    eps = ((x - loc) / scale).detach()
    assert bool(ember.allclose(loc.grad, ember.ones_like(loc)))
    assert bool(ember.allclose(scale.grad, eps))


def test_sample_has_no_graph_and_rsample_has_one():
    loc = ember.zeros(2, requires_grad=True)
    d = ed.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad


def test_scalar_parameters_give_empty_batch_shape():
    d = ed.Laplace(0.0, 1.0)
    assert d.batch_shape == ember.Size([])
    assert d.sample((3,)).shape == ember.Size([3])
    assert d.loc.dtype == ember.get_default_dtype()


def test_float32_parameters_keep_their_dtype():
    d = ed.Gumbel(ember.zeros(2), ember.ones(2))
    assert d.rsample().dtype == ember.float32
    assert d.log_prob(ember.zeros(2)).dtype == ember.float32
    assert math.isfinite(float(d.log_prob(ember.zeros(2)).sum()))
