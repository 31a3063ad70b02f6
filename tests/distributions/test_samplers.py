"""The distribution samplers: sample moments within statistical bounds (fixed seeds; bounds
are 5 standard errors from the distribution's own variance and the sample size), the implicit
reparameterization gradients against torch at the same points and in expectation, seeding,
and validation errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember

N = 40_000
Z = 5.0  # standard errors allowed


def _f64(values):
    return ember.tensor(np.asarray(values, np.float64))


def _check_moments(x: np.ndarray, mean: float, var: float, kurtosis_excess: float = 0.0):
    """Sample mean and variance of ``x`` within ``Z`` standard errors of ``mean``, ``var``."""
    n = x.size
    assert abs(x.mean() - mean) <= Z * math.sqrt(var / n), (x.mean(), mean)
    var_se = var * math.sqrt((2.0 + kurtosis_excess) / n)
    assert abs(x.var() - var) <= Z * var_se, (x.var(), var)


@pytest.mark.parametrize("alpha", [0.05, 0.5, 1.0, 3.5, 80.0])
def test_standard_gamma_moments(alpha):
    ember.manual_seed(1)
    x = ember._standard_gamma(ember.full((N,), alpha, dtype=ember.float64)).numpy()
    _check_moments(x, alpha, alpha, 6.0 / alpha)


def test_standard_gamma_float32_and_edges():
    ember.manual_seed(2)
    x = ember._standard_gamma(ember.full((N,), 2.0))
    assert x.dtype == ember.float32
    _check_moments(x.numpy().astype(np.float64), 2.0, 2.0, 3.0)
    edge = ember._standard_gamma(ember.tensor([0.0, -1.0, float("nan"), float("inf")]))
    tiny = float(np.finfo(np.float32).tiny)
    assert edge.tolist() == [tiny, tiny, tiny, float("inf")]  # torch clamps to the smallest normal


def test_manual_seed_reproduces_and_generator_is_used():
    alpha = _f64([0.3, 1.0, 7.0, 30.0])
    draws = []
    for _ in range(2):
        ember.manual_seed(7)
        draws.append((ember._standard_gamma(alpha), ember.poisson(alpha * 3),
                       ember.binomial(alpha.floor() + 20, alpha / 40),
                       ember._sample_dirichlet(alpha)))
    for a, b in zip(*draws):
        assert ember.equal(a, b)
    g = ember.Generator().manual_seed(7)
    before = g.get_offset()
    ember.poisson(alpha, generator=g)
    assert g.get_offset() > before


@pytest.mark.parametrize("rate", [0.0, 0.7, 4.0, 9.99, 10.0, 37.5, 2500.0])
def test_poisson_moments(rate):
    ember.manual_seed(3)
    x = ember.poisson(ember.full((N,), rate, dtype=ember.float64)).numpy()
    if rate == 0:
        assert (x == 0).all()
        return
    assert (x == np.floor(x)).all() and (x >= 0).all()
    _check_moments(x, rate, rate, 1.0 / rate)


def _cells_match_pmf(x: np.ndarray, pmf: np.ndarray):
    """Each value's frequency within Z binomial standard errors of its probability."""
    counts = np.bincount(x.astype(np.int64), minlength=pmf.size)[:pmf.size] / x.size
    se = np.sqrt(pmf * (1 - pmf) / x.size) + 1.0 / x.size
    assert (np.abs(counts - pmf) <= Z * se).all()


@pytest.mark.parametrize("rate", [3.0, 25.0])
def test_poisson_pmf(rate):
    ember.manual_seed(4)
    x = ember.poisson(ember.full((N,), rate, dtype=ember.float64)).numpy()
    k = np.arange(int(rate * 3))
    pmf = np.exp(k * math.log(rate) - rate - np.array([math.lgamma(v + 1) for v in k]))
    _cells_match_pmf(x, pmf)


@pytest.mark.parametrize("n,p", [(6, 0.3), (40, 0.8), (200, 0.45), (10**6, 0.002), (30, 0.01)])
def test_binomial_moments_and_pmf(n, p):
    ember.manual_seed(5)
    x = ember.binomial(ember.full((N,), float(n), dtype=ember.float64),
                       ember.full((N,), p, dtype=ember.float64)).numpy()
    assert (x >= 0).all() and (x <= n).all() and (x == np.floor(x)).all()
    var = n * p * (1 - p)
    _check_moments(x, n * p, var, (1 - 6 * p * (1 - p)) / var)
    if n <= 200:
        k = np.arange(n + 1)
        lg = np.array([math.lgamma(v + 1) for v in k])
        pmf = np.exp(lg[-1] - lg - lg[::-1] + k * math.log(p) + (n - k) * math.log1p(-p))
        _cells_match_pmf(x, pmf)


def test_binomial_degenerate_values_as_torch():
    count = ember.tensor([0.0, 5.0, 5.0, -1.0, 3.0])
    prob = ember.tensor([0.5, 0.0, 1.0, 0.5, 1.5])
    expected = torch.binomial(torch.tensor(count.numpy()), torch.tensor(prob.numpy()))
    assert ember.binomial(count, prob).tolist() == expected.tolist()


@pytest.mark.parametrize("conc", [[1.0, 2.0, 3.0], [0.1, 0.1], [20.0, 5.0, 0.5, 1.0]])
def test_dirichlet_moments(conc):
    ember.manual_seed(6)
    a = np.array(conc)
    x = ember._sample_dirichlet(_f64(np.tile(a, (N, 1)))).numpy()
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=0, atol=8 * np.finfo(np.float64).eps)
    a0 = a.sum()
    for i in range(a.size):
        _check_moments(x[:, i], a[i] / a0, a[i] * (a0 - a[i]) / (a0 * a0 * (a0 + 1)), 6.0)


def test_dirichlet_tiny_concentrations_stay_on_the_simplex():
    ember.manual_seed(8)
    x = ember._sample_dirichlet(ember.full((500, 2), 1e-3))
    tiny = float(np.finfo(np.float32).tiny)
    assert bool((x >= tiny).all()) and bool((x < 1).all())


# -- implicit reparameterization gradients -------------------------------------------------------
# torch evaluates these with fitted approximations (relative error ~1e-3); ember's are exact.
APPROX_RTOL = 5e-3


@pytest.mark.parametrize("alpha", [1e-3, 0.1, 0.7, 1.0, 4.0, 8.0, 9.0, 150.0, 3e4, 2e6])
def test_standard_gamma_grad_matches_torch(alpha):
    torch.manual_seed(0)
    a = torch.full((400,), alpha, dtype=torch.float64)
    x = torch._standard_gamma(a)
    expected = torch._standard_gamma_grad(a, x).numpy()
    got = ember._standard_gamma_grad(ember.tensor(a.numpy()), ember.tensor(x.numpy())).numpy()
    np.testing.assert_allclose(got, expected, rtol=APPROX_RTOL, atol=1e-12)


def test_standard_gamma_grad_exact_at_alpha_two():
    # a = 2: F(x) = 1 - (1 + x) e^-x and dF/da = int_0^x log(t) t e^-t dt - digamma(2) F(x);
    # the integral by the trapezoid rule on a fine grid (error ~1e-9 here).
    x = np.array([0.3, 1.0, 2.5, 6.0])
    t = np.linspace(0, 1, 200_001)[1:, None] * x
    integral = np.trapezoid(np.log(t) * t * np.exp(-t), t, axis=0)
    cdf = 1 - (1 + x) * np.exp(-x)
    dcdf_da = integral - (1 - 0.5772156649015329) * cdf
    expected = -dcdf_da / (x * np.exp(-x))
    got = ember._standard_gamma_grad(_f64([2.0] * 4), _f64(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6)


def test_rsample_gradient_is_unbiased():
    # E[x] = alpha, so E[dx/dalpha] = 1: the backward of the samples' mean estimates it, within
    # Z standard errors of the per-sample gradients' spread.
    ember.manual_seed(9)
    a = _f64([0.2, 1.5, 12.0]).requires_grad_(True)
    x = ember._standard_gamma(a.expand(N, 3))
    x.mean(0).sum().backward()
    per_sample = ember._standard_gamma_grad(a.detach().expand(N, 3), x.detach()).numpy()
    np.testing.assert_allclose(a.grad.numpy(), per_sample.mean(0), rtol=1e-12)
    se = per_sample.std(0) / math.sqrt(N)
    assert (np.abs(a.grad.numpy() - 1) <= Z * se).all(), a.grad


def test_dirichlet_grad_matches_torch():
    torch.manual_seed(1)
    for a, b in [(0.3, 0.5), (1.0, 1.0), (2.0, 5.0), (10.0, 20.0), (50.0, 3.0), (0.05, 4.0)]:
        alpha = torch.full((300,), a, dtype=torch.float64)
        total = alpha + b
        x = torch.distributions.Beta(alpha, total - alpha).sample().clamp(1e-12, 1 - 1e-12)
        expected = torch._dirichlet_grad(x, alpha, total).numpy()
        got = ember._dirichlet_grad(*(ember.tensor(v.numpy()) for v in (x, alpha, total)))
        np.testing.assert_allclose(got.numpy(), expected, rtol=APPROX_RTOL, atol=1e-12)


def test_poisson_gradient_is_zero_and_binomial_has_none():
    rate = _f64([1.0, 20.0]).requires_grad_(True)
    y = ember.poisson(rate)
    y.sum().backward()
    assert rate.grad.tolist() == [0.0, 0.0]
    count = _f64([4.0]).requires_grad_(True)
    z = ember.binomial(count, _f64([0.5]))
    with pytest.raises(RuntimeError, match="not implemented"):
        z.sum().backward()


def test_errors():
    with pytest.raises(RuntimeError, match="invalid Poisson rate"):
        ember.poisson(ember.tensor([-1.0]))
    with pytest.raises(NotImplementedError, match="gamma_cpu"):
        ember._standard_gamma(ember.ones(2, dtype=ember.float16))
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        ember.binomial(ember.tensor([1]), ember.tensor([0.5]))
    with pytest.raises(RuntimeError, match="Found dtype Double but expected Float"):
        ember._standard_gamma_grad(ember.ones(2), ember.ones(2, dtype=ember.float64))


@pytest.mark.parametrize("alpha", [0.05, 0.5, 3.0, 40.0])
def test_standard_gamma_cdf_at_quantiles(alpha):
    # the empirical CDF at torch's-ground-truth quantiles (regularized incomplete gamma) within
    # Z binomial standard errors: catches a wrong shape that moments would miss
    ember.manual_seed(13)
    x = ember._standard_gamma(ember.full((N,), alpha, dtype=ember.float64)).numpy()
    points = np.quantile(x, [0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99])
    expected = torch.special.gammainc(torch.tensor(alpha, dtype=torch.float64),
                                      torch.tensor(points)).numpy()
    empirical = (x[:, None] <= points).mean(0)
    se = np.sqrt(expected * (1 - expected) / N)
    assert (np.abs(empirical - expected) <= Z * se + 1.0 / N).all(), (empirical, expected)


def test_standard_gamma_grad_is_continuous_across_the_large_alpha_switch():
    # exact evaluation below 1e6, the Wilson-Hilferty quantile above: both within 1e-8
    a = 1e6 * (1 + np.array([-1e-12, 0.0]))
    z = np.array([-3.0, 0.0, 2.5])
    x = a[:, None] + np.sqrt(a[:, None]) * z
    g = ember._standard_gamma_grad(_f64(np.broadcast_to(a[:, None], x.shape).copy()),
                                   _f64(x)).numpy()
    np.testing.assert_allclose(g[0], g[1], rtol=1e-8)


def test_binomial_nan_gives_nan():
    got = ember.binomial(ember.tensor([float("nan"), 3.0]), ember.tensor([0.5, float("nan")]))
    assert np.isnan(got.numpy()).all()


def _device_cases():
    from tests.dispatch.test_private_device import _cases
    from tests.ops.opdb import random_dists

    return _cases(random_dists)


@pytest.mark.parametrize("info,dtype", _device_cases())
def test_op_table_on_a_device_whose_arrays_refuse_host_arrays(info, dtype):
    # the samplers compute on the host and copy in and out once: on a device with CuPy-like
    # arrays their outputs are device arrays, and the gradients equal the CPU's
    from tests.dispatch.test_device_arrays import _run

    _run(info, dtype)
