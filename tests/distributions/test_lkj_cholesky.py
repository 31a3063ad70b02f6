"""LKJCholesky against torch.distributions: log_prob and its gradient on identical factors,
shapes, expand and validation; samples: valid Cholesky factors of correlation matrices whose
off-diagonal correlations have the LKJ marginal ((r + 1) / 2 ~ Beta(b, b) with
b = concentration - 1 + dim / 2, so E r = 0 and Var r = 1 / (2 concentration + dim - 1))."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.distributions._compare import RTOL, assert_same

CONC = np.array([0.5, 1.0, 3.0])


@pytest.mark.parametrize("dim", [2, 3, 5])
def test_log_prob_and_gradient_match_torch(dim):
    e_c = ember.tensor(CONC, requires_grad=True)
    t_c = torch.tensor(CONC, requires_grad=True)
    e, t = (ember.distributions.LKJCholesky(dim, e_c),
            torch.distributions.LKJCholesky(dim, t_c))
    assert tuple(e.batch_shape) == tuple(t.batch_shape)
    assert tuple(e.event_shape) == tuple(t.event_shape)
    torch.manual_seed(0)
    value = t.sample((4,))
    e_lp, t_lp = e.log_prob(ember.tensor(value.numpy())), t.log_prob(value)
    assert_same(e_lp, t_lp)
    (e_g,) = ember.autograd.grad(e_lp.sum(), [e_c])
    (t_g,) = torch.autograd.grad(t_lp.sum(), [t_c])
    # gradients pass through mvlgamma's digamma: ember's agrees with torch's to ~1e-15
    np.testing.assert_allclose(e_g.numpy(), t_g.numpy(), rtol=RTOL)
    big_e, big_t = e.expand((2, 3)), t.expand((2, 3))
    assert tuple(big_e.batch_shape) == tuple(big_t.batch_shape)
    assert_same(big_e.log_prob(ember.tensor(value[0].numpy())),
                big_t.log_prob(value[0]))


@pytest.mark.parametrize("dim", [2, 4])
def test_samples_are_correlation_factors_with_the_lkj_marginal(dim):
    d = ember.distributions.LKJCholesky(dim, ember.tensor(CONC))
    ember.manual_seed(31)
    n = 20_000
    L = d.sample((n,))
    assert L.shape == ember.Size((n, 3, dim, dim))
    assert bool(d.support.check(L).all())
    R = (L @ L.mT).numpy()
    np.testing.assert_allclose(np.diagonal(R, axis1=-2, axis2=-1), 1.0, atol=1e-5)
    var = 1 / (2 * CONC + dim - 1)
    rows, cols = np.tril_indices(dim, -1)
    for i, j in zip(rows, cols):
        r = R[..., i, j].astype(np.float64)
        assert (np.abs(r.mean(0)) <= 5 * np.sqrt(var / n)).all()
        # (r+1)/2 is Beta(b, b): Var(r^2) <= E r^4 <= 3 var^2 bounds the variance's error
        assert (np.abs(r.var(0) - var) <= 5 * np.sqrt(3 * var ** 2 / n)).all()


def test_validation():
    for lib in (torch, ember):
        with pytest.raises(ValueError, match="dim to be an integer greater than or equal to 2"):
            lib.distributions.LKJCholesky(1, lib.tensor(1.0))
        with pytest.raises(ValueError):
            lib.distributions.LKJCholesky(3, lib.tensor(-1.0), validate_args=True)
        d = lib.distributions.LKJCholesky(2, lib.tensor(1.0), validate_args=True)
        with pytest.raises(ValueError, match="support"):
            d.log_prob(lib.tensor([[1.0, 0.0], [0.9, 0.9]]))
