"""Gamma, Chi2, Beta and Dirichlet against torch.distributions on identical parameters, and
their reparameterized samples: the gradient ember's autograd gives equals torch's implicit
reparameterization formula evaluated at ember's own sample, and in expectation it equals the
derivative of the mean (statistical bounds)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.distributions._families import (
    Family,
    build,
    check_enumerate_and_expand,
    check_log_prob,
    check_statistics,
)

CONC = np.array([[0.3, 1.0, 4.5], [12.0, 0.8, 2.0]])
RATE = np.array([[2.0, 0.5, 1.0], [3.0, 1.0, 0.1]])
X = np.array([[0.05, 1.3, 7.0], [2.0, 0.01, 30.0]])
U = np.array([[0.05, 0.5, 0.97], [0.3, 0.999, 0.002]])
SIMPLEX = np.array([[0.2, 0.3, 0.5], [0.05, 0.9, 0.05]])

FAMILIES = [
    Family("gamma", "Gamma", {"concentration": CONC, "rate": RATE}, X,
           grad=("concentration", "rate"), cdf=True),
    Family("gamma_scalar", "Gamma", {"concentration": 2.0, "rate": 0.5}, np.array([0.5, 3.0]),
           cdf=True),
    Family("chi2", "Chi2", {"df": CONC * 2}, X, grad=("df",), cdf=True),
    Family("beta", "Beta", {"concentration1": CONC, "concentration0": RATE}, U,
           grad=("concentration1", "concentration0")),
    Family("beta_scalar", "Beta", {"concentration1": 0.5, "concentration0": 3.0},
           np.array([0.1, 0.9])),
    Family("dirichlet", "Dirichlet", {"concentration": CONC}, SIMPLEX,
           grad=("concentration",)),
    Family("dirichlet_below_one", "Dirichlet", {"concentration": np.array([0.3, 0.5, 0.9])},
           SIMPLEX),
]
IDS = [f.name for f in FAMILIES]


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_statistics_match_torch(family):
    check_statistics(family)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_log_prob_cdf_and_gradients_match_torch(family):
    check_log_prob(family)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_expand_matches_torch(family):
    check_enumerate_and_expand(family)


def _t(x):
    return torch.tensor(x.detach().numpy())


def test_gamma_rsample_gradient_is_torchs_formula_at_the_same_sample():
    conc = ember.tensor(CONC, requires_grad=True)
    rate = ember.tensor(RATE, requires_grad=True)
    ember.manual_seed(0)
    x = ember.distributions.Gamma(conc, rate).rsample((5,))
    cot = np.random.default_rng(1).standard_normal(tuple(x.shape))
    g_conc, g_rate = ember.autograd.grad((x * ember.tensor(cot)).sum(), [conc, rate])
    # x = s / rate with s ~ Gamma(c, 1): dx/dc = standard_gamma_grad(c, s) / rate, dx/drate = -x/rate
    s = _t(x) * torch.tensor(RATE)
    c = torch.tensor(CONC).expand_as(s)
    dx_dc = torch._standard_gamma_grad(c, s) / torch.tensor(RATE)
    np.testing.assert_allclose(g_conc.numpy(), (dx_dc * torch.tensor(cot)).sum(0).numpy(),
                               rtol=5e-3, atol=1e-10)  # torch's approximation error
    expected_rate = (-_t(x) / torch.tensor(RATE) * torch.tensor(cot)).sum(0)
    np.testing.assert_allclose(g_rate.numpy(), expected_rate.numpy(), rtol=1e-12, atol=1e-14)


def test_dirichlet_rsample_gradient_is_torchs_formula_at_the_same_sample():
    conc = ember.tensor(CONC, requires_grad=True)
    ember.manual_seed(1)
    x = ember.distributions.Dirichlet(conc).rsample((4,))
    cot = np.random.default_rng(2).standard_normal(tuple(x.shape))
    (grad,) = ember.autograd.grad((x * ember.tensor(cot)).sum(), [conc])
    tx, tc, tg = _t(x), torch.tensor(CONC).expand(4, 2, 3), torch.tensor(cot)
    total = tc.sum(-1, True).expand_as(tc)
    expected = torch._dirichlet_grad(tx, tc, total) * (tg - (tx * tg).sum(-1, True))
    np.testing.assert_allclose(grad.numpy(), expected.sum(0).numpy(), rtol=5e-3, atol=1e-10)


@pytest.mark.parametrize("family,d_mean", [
    ("Gamma", lambda c, r: (1 / r, -c / r ** 2)),
    ("Beta", lambda a, b: (b / (a + b) ** 2, -a / (a + b) ** 2)),
])
def test_rsample_gradient_is_unbiased(family, d_mean):
    # d/dtheta E[x] = E[dx/dtheta]: the gradients of K independent chunk means estimate it;
    # their spread gives the standard error of the overall mean (5 of them allowed)
    a = np.array([0.4, 2.0, 9.0])
    b = np.array([1.5, 0.7, 4.0])
    pa, pb = ember.tensor(a, requires_grad=True), ember.tensor(b, requires_grad=True)
    ember.manual_seed(3)
    chunks, size = 20, 1000
    x = getattr(ember.distributions, family)(pa, pb).rsample((chunks, size))
    grads = [ember.autograd.grad(x[k].mean(0).sum(), [pa, pb], retain_graph=True)
             for k in range(chunks)]
    for i, expected in enumerate(d_mean(a, b)):
        g = np.stack([gk[i].numpy() for gk in grads])  # (K, 3)
        se = g.std(0, ddof=1) / np.sqrt(chunks)
        assert (np.abs(g.mean(0) - expected) <= 5 * se).all(), (g.mean(0), expected, se)


@pytest.mark.parametrize("family", [f for f in FAMILIES if "below" not in f.name], ids=[
    f.name for f in FAMILIES if "below" not in f.name])
def test_sample_moments_within_statistical_bounds(family):
    ours, _, _, _ = build(family)
    ember.manual_seed(4)
    n = 20_000
    sample = ours.rsample((n,)).detach().numpy()
    assert bool(ours.support.check(ember.tensor(sample)).all())
    mean, var = ours.mean.numpy(), ours.variance.numpy()
    assert (np.abs(sample.mean(0) - mean) <= 5 * np.sqrt(var / n)).all()
    # variance: the standard error of a sample variance needs the fourth moment; bound it
    # by the sample's own fourth central moment
    m4 = ((sample - sample.mean(0)) ** 4).mean(0)
    assert (np.abs(sample.var(0) - var) <= 5 * np.sqrt((m4 - var ** 2) / n) + 1e-12).all()


INVALID = [
    ("Gamma", {"concentration": [-1.0], "rate": [1.0]}),
    ("Gamma", {"concentration": [1.0], "rate": [0.0]}),
    ("Chi2", {"df": [0.0]}),
    ("Beta", {"concentration1": [1.0], "concentration0": [-2.0]}),
    ("Dirichlet", {"concentration": [1.0, -0.5]}),
    ("Dirichlet", {"concentration": 1.0}),
]


@pytest.mark.parametrize("cls,params", INVALID, ids=[f"{c}-{i}" for i, (c, _) in
                                                      enumerate(INVALID)])
def test_invalid_arguments_raise_as_torch(cls, params):
    def make(lib):
        return getattr(lib.distributions, cls)(validate_args=True, **{
            k: lib.tensor(v, dtype=lib.float64) for k, v in params.items()})

    with pytest.raises(Exception) as t_err:
        make(torch)
    with pytest.raises(t_err.type) as e_err:
        make(ember)
    assert str(e_err.value).split("(")[0] == str(t_err.value).split("(")[0]


def test_gamma_rsample_keeps_float32_and_stays_positive():
    ember.manual_seed(5)
    x = ember.distributions.Gamma(ember.tensor([1e-3, 1.0]), ember.tensor([1.0, 1.0])).rsample(
        (1000,))
    assert x.dtype == ember.float32
    assert bool((x > 0).all())


def test_compiled_rsample_and_gradients_equal_eager():
    # the samplers draw from the same Philox stream under ember.compile, so a compiled function
    # of the same generator state reproduces eager samples and implicit gradients
    def f(c, r):
        x = ember.distributions.Gamma(c, r).rsample((4,))
        y = ember.distributions.Dirichlet(c).rsample()
        return (x * x).sum() + (y * y).sum() + ember.poisson(r).sum()

    c = ember.tensor([0.5, 2.0, 3.0], dtype=ember.float64, requires_grad=True)
    r = ember.tensor([1.0, 2.0, 0.5], dtype=ember.float64, requires_grad=True)
    ember.manual_seed(0)
    eager = f(c, r)
    eager_grads = ember.autograd.grad(eager, [c, r])
    ember.manual_seed(0)
    compiled = ember.compile(f)(c, r)
    compiled_grads = ember.autograd.grad(compiled, [c, r])
    np.testing.assert_allclose(compiled.item(), eager.item(), rtol=1e-12)
    for a, b in zip(compiled_grads, eager_grads):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


@pytest.mark.parametrize("family", [FAMILIES[0], FAMILIES[3], FAMILIES[5]], ids=[
    "gamma", "beta", "dirichlet"])
def test_non_contiguous_parameters_give_the_same_results(family):
    # parameters as transposed views of column-major buffers: same values, hostile strides
    dense = {k: ember.tensor(v) for k, v in family.params.items()}
    strided = {k: ember.tensor(np.ascontiguousarray(v.T)).T for k, v in family.params.items()}
    assert not next(iter(strided.values())).is_contiguous()
    cls = getattr(ember.distributions, family.cls)
    a, b = cls(**dense), cls(**strided)
    value = ember.tensor(family.values)
    np.testing.assert_array_equal(a.log_prob(value).numpy(), b.log_prob(value).numpy())
    np.testing.assert_array_equal(a.entropy().numpy(), b.entropy().numpy())
    ember.manual_seed(5)
    x = a.rsample((3,))
    ember.manual_seed(5)
    np.testing.assert_array_equal(x.numpy(), b.rsample((3,)).numpy())
