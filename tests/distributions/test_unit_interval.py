"""ContinuousBernoulli, Kumaraswamy and VonMises against torch.distributions on identical
parameters, their KL pairs, and their samplers (moments within statistical bounds)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
from tests.distributions._compare import assert_same
from tests.distributions._families import (
    Family,
    build,
    check_enumerate_and_expand,
    check_log_prob,
    check_statistics,
)

P = np.array([[0.1, 0.4995, 0.5], [0.7, 0.99, 0.5008]])
U = np.array([[0.2, 0.5, 0.9], [0.0, 1.0, 0.3]])
A = np.array([0.5, 2.0, 5.0])
B = np.array([3.0, 0.7, 2.0])

FAMILIES = [
    Family("continuous_bernoulli", "ContinuousBernoulli", {"probs": P}, U, grad=("probs",),
           cdf=True),
    Family("continuous_bernoulli_logits", "ContinuousBernoulli",
           {"logits": np.array([-3.0, 1e-4, 0.0, 2.0])}, np.array([0.1, 0.5, 0.7, 1.0]),
           grad=("logits",), cdf=True),
    Family("kumaraswamy", "Kumaraswamy", {"concentration1": A, "concentration0": B},
           np.array([0.2, 0.5, 0.9]), grad=("concentration1", "concentration0"), cdf=True),
]
IDS = [f.name for f in FAMILIES]


@pytest.mark.parametrize("family", FAMILIES[:2], ids=IDS[:2])  # Kumaraswamy: its own test
def test_statistics_match_torch(family):
    check_statistics(family)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_log_prob_cdf_and_gradients_match_torch(family):
    check_log_prob(family)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_expand_matches_torch(family):
    check_enumerate_and_expand(family)


def test_continuous_bernoulli_icdf_and_rsample_gradient():
    e, t, e_leaves, t_leaves = build(FAMILIES[0], requires_grad=True)
    u = np.array([[0.05, 0.5, 0.99], [0.3, 0.7, 0.1]])
    e_x, t_x = e.icdf(ember.tensor(u)), t.icdf(torch.tensor(u))
    assert_same(e_x, t_x)
    (e_g,) = ember.autograd.grad(e_x.sum(), list(e_leaves.values()))
    (t_g,) = torch.autograd.grad(t_x.sum(), list(t_leaves.values()))
    np.testing.assert_allclose(e_g.numpy(), t_g.numpy(), rtol=1e-10, atol=1e-12)


def test_kumaraswamy_statistics_and_mode():
    e, t, _, _ = build(FAMILIES[2])
    for stat in ("mean", "variance"):
        assert_same(getattr(e, stat), getattr(t, stat))
    assert_same(e.entropy(), t.entropy())
    # the mode (a-1)/(ab-1))^(1/a) where a, b >= 1; torch 2.13 returns NaN whenever b > 1
    expected = np.where((A >= 1) & (B >= 1), ((A - 1) / (A * B - 1)) ** (1 / A), np.nan)
    np.testing.assert_allclose(e.mode.numpy(), expected, rtol=1e-14, equal_nan=True)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_sample_moments_within_statistical_bounds(family):
    ours, _, _, _ = build(family)
    ember.manual_seed(21)
    n = 20_000
    x = ours.rsample((n,)).detach().numpy()
    assert bool(ours.support.check(ember.tensor(x)).all())
    mean, var = ours.mean.numpy(), ours.variance.numpy()
    assert (np.abs(x.mean(0) - mean) <= 5 * np.sqrt(var / n)).all()


# -- VonMises: torch evaluates log I0 and log I1 by polynomial fits (relative error ~1e-7);
# ember uses the exact exponentially scaled Bessel functions, hence the 1e-6 tolerance.
VM_TOL = 1e-6
LOC = np.array([0.5, -1.0, 3.0, 0.0])
KAPPA = np.array([0.3, 20.0, 1e-7, 700.0])


def _von_mises(lib, requires_grad=False):
    loc = lib.tensor(LOC.copy(), requires_grad=requires_grad)
    kappa = lib.tensor(KAPPA.copy(), requires_grad=requires_grad)
    return lib.distributions.VonMises(loc, kappa), loc, kappa


def test_von_mises_matches_torch():
    (e, e_loc, e_k), (t, t_loc, t_k) = _von_mises(ember, True), _von_mises(torch, True)
    v = np.array([0.1, 5.0, -2.0, 0.01])
    e_lp, t_lp = e.log_prob(ember.tensor(v)), t.log_prob(torch.tensor(v))
    np.testing.assert_allclose(e_lp.detach().numpy(), t_lp.detach().numpy(), rtol=VM_TOL)
    e_g = ember.autograd.grad(e_lp.sum(), [e_loc, e_k])
    t_g = torch.autograd.grad(t_lp.sum(), [t_loc, t_k])
    for a, b in zip(e_g, t_g):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=VM_TOL, atol=1e-12)
    for stat in ("mean", "mode", "variance"):  # torch's fits: ~3e-7 absolute
        np.testing.assert_allclose(getattr(e, stat).detach().numpy(),
                                   getattr(t, stat).detach().numpy(), rtol=VM_TOL, atol=VM_TOL)
    # sqrt amplifies torch's absolute error where the variance is small: compare squares
    np.testing.assert_allclose(e.stddev.detach().numpy() ** 2, t.variance.detach().numpy(),
                               rtol=VM_TOL, atol=VM_TOL)


def test_von_mises_variance_is_exact():
    mpmath = pytest.importorskip("mpmath")
    e, _, _ = _von_mises(ember)
    expected = [float(1 - mpmath.besseli(1, k) / mpmath.besseli(0, k)) for k in KAPPA]
    np.testing.assert_allclose(e.variance.numpy(), expected, rtol=1e-12)
    big = e.expand((2, 4))
    assert big.batch_shape == ember.Size((2, 4)) and type(big).__name__ == "VonMises"
    assert e.has_rsample is False
    with pytest.raises(NotImplementedError):
        e.rsample()


def test_von_mises_samples_have_the_mean_resultant_length():
    e, _, _ = _von_mises(ember)
    ember.manual_seed(22)
    n = 20_000
    x = e.sample((n,)).numpy()
    assert ((x >= -math.pi) & (x < math.pi)).all()
    # E[cos(x - loc)] = I1(k)/I0(k) = 1 - circular variance; Var[cos] <= 1/2
    resultant = np.cos(x - LOC).mean(0)
    expected = 1 - e.variance.numpy()
    assert (np.abs(resultant - expected) <= 5 * math.sqrt(0.5 / n)).all(), (resultant, expected)
    assert np.abs(np.sin(x - LOC).mean(0)).max() <= 5 * math.sqrt(0.5 / n)


def test_von_mises_keeps_float32():
    d = ember.distributions.VonMises(ember.tensor([0.0]), ember.tensor([2.0]))
    assert d.sample((3,)).dtype == ember.float32


KL_PAIRS = [
    ("ContinuousBernoulli", {"probs": P[0]}, "ContinuousBernoulli", {"probs": P[1]}),
    ("Beta", {"concentration1": A, "concentration0": B}, "ContinuousBernoulli",
     {"probs": P[1]}),
    ("ContinuousBernoulli", {"probs": P[0]}, "Exponential", {"rate": B}),
    ("ContinuousBernoulli", {"probs": P[0]}, "Normal", {"loc": A - 1, "scale": B}),
    ("ContinuousBernoulli", {"probs": P[0]}, "Uniform",
     {"low": np.array([-0.5, 0.0, -1.0]), "high": np.array([1.5, 2.0, 1.0])}),
    ("Gamma", {"concentration": A, "rate": B}, "ContinuousBernoulli", {"probs": P[0]}),
    ("Normal", {"loc": A, "scale": B}, "ContinuousBernoulli", {"probs": P[0]}),
]


@pytest.mark.parametrize("pc,pp,qc,qp", KL_PAIRS, ids=[f"{p}-{q}" for p, _, q, _ in KL_PAIRS])
def test_kl_matches_torch(pc, pp, qc, qp):
    def kl(lib):
        p = getattr(lib.distributions, pc)(**{k: lib.tensor(v) for k, v in pp.items()})
        q = getattr(lib.distributions, qc)(**{k: lib.tensor(v) for k, v in qp.items()})
        return lib.distributions.kl_divergence(p, q)

    assert_same(kl(ember), kl(torch))
