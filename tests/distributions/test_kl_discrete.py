"""KL divergences of the discrete families and of Gamma, Beta and Dirichlet against torch's,
on identical parameters: values (infinite where torch's are) and parameter gradients."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.distributions._compare import ATOL, assert_same, to_numpy

# Gradients through digamma meet ember's trigamma (polygamma(1)), which agrees with torch's to
# ~5e-10 relative over (0.05, 20); 1e-8 leaves a margin of 20.
GRAD_RTOL = 1e-8

P = np.array([0.1, 0.5, 0.93, 0.0, 1.0])
Q = np.array([0.3, 0.5, 0.2, 0.4, 0.6])
SIMPLEX_P = np.array([[0.2, 0.3, 0.5], [0.0, 0.4, 0.6]])
SIMPLEX_Q = np.array([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8]])
A = np.array([0.4, 2.0, 7.5])
B = np.array([1.5, 0.6, 3.0])
C = np.array([3.0, 1.2, 0.5])
D = np.array([0.7, 4.0, 1.1])

# (name, p class, p params, q class, q params, differentiable params)
PAIRS = [
    ("bernoulli", "Bernoulli", {"probs": P}, "Bernoulli", {"probs": Q}, ()),
    ("bernoulli_q_edges", "Bernoulli", {"probs": Q}, "Bernoulli", {"probs": P}, ()),
    ("bernoulli_logits", "Bernoulli", {"logits": A - 2}, "Bernoulli", {"logits": B}, "pq"),
    ("categorical", "Categorical", {"probs": SIMPLEX_P}, "Categorical", {"probs": SIMPLEX_Q},
     ()),
    ("categorical_q_zero", "Categorical", {"probs": SIMPLEX_Q}, "Categorical",
     {"probs": SIMPLEX_P}, ()),
    ("categorical_logits", "Categorical", {"logits": SIMPLEX_Q * 3},
     "Categorical", {"logits": SIMPLEX_P}, "pq"),
    ("one_hot", "OneHotCategorical", {"probs": SIMPLEX_P}, "OneHotCategorical",
     {"probs": SIMPLEX_Q}, ()),
    ("binomial", "Binomial", {"total_count": np.array([5.0, 8.0, 3.0]), "probs": Q[:3]},
     "Binomial", {"total_count": np.array([5.0, 6.0, 3.0]), "probs": P[:3]}, ()),
    ("poisson", "Poisson", {"rate": A}, "Poisson", {"rate": B}, "pq"),
    ("geometric", "Geometric", {"probs": Q}, "Geometric", {"probs": P[:3].repeat(2)[:5]}, ()),
    ("geometric_grad", "Geometric", {"probs": Q[:3]}, "Geometric", {"probs": P[:3]}, "pq"),
    ("gamma", "Gamma", {"concentration": A, "rate": B}, "Gamma",
     {"concentration": C, "rate": D}, "pq"),
    ("beta", "Beta", {"concentration1": A, "concentration0": B}, "Beta",
     {"concentration1": C, "concentration0": D}, "pq"),
    ("dirichlet", "Dirichlet", {"concentration": np.stack([A, B])}, "Dirichlet",
     {"concentration": np.stack([C, D])}, "pq"),
    ("bernoulli_poisson", "Bernoulli", {"probs": Q[:3]}, "Poisson", {"rate": A}, "pq"),
    ("beta_exponential", "Beta", {"concentration1": A, "concentration0": B}, "Exponential",
     {"rate": C}, "pq"),
    ("beta_gamma", "Beta", {"concentration1": A, "concentration0": B}, "Gamma",
     {"concentration": C, "rate": D}, "pq"),
    ("beta_normal", "Beta", {"concentration1": A, "concentration0": B}, "Normal",
     {"loc": C - 1, "scale": D}, "pq"),
    ("beta_uniform", "Beta", {"concentration1": A, "concentration0": B}, "Uniform",
     {"low": np.array([-0.5, 0.0, 0.1]), "high": np.array([1.0, 1.5, 1.0])}, ()),
    ("exponential_gamma", "Exponential", {"rate": A}, "Gamma",
     {"concentration": C, "rate": D}, "pq"),
    ("gamma_exponential", "Gamma", {"concentration": A, "rate": B}, "Exponential",
     {"rate": C}, "pq"),
    ("gamma_gumbel", "Gamma", {"concentration": A, "rate": B}, "Gumbel",
     {"loc": C - 1, "scale": D}, "pq"),
    ("gamma_normal", "Gamma", {"concentration": A, "rate": B}, "Normal",
     {"loc": C - 1, "scale": D}, "pq"),
    ("pareto_gamma", "Pareto", {"scale": B, "alpha": np.array([0.8, 2.5, 4.0])}, "Gamma",
     {"concentration": C, "rate": D}, ()),
    ("uniform_beta", "Uniform", {"low": np.array([0.1, 0.0, -0.2]),
                                 "high": np.array([0.6, 1.0, 0.5])}, "Beta",
     {"concentration1": C, "concentration0": D}, ()),
    ("uniform_gamma", "Uniform", {"low": np.array([0.1, 0.5, -0.2]),
                                  "high": np.array([0.6, 3.0, 0.5])}, "Gamma",
     {"concentration": C, "rate": D}, ()),
    ("normal_gamma", "Normal", {"loc": A, "scale": B}, "Gamma",
     {"concentration": C, "rate": D}, ()),
    ("gamma_beta", "Gamma", {"concentration": A, "rate": B}, "Beta",
     {"concentration1": C, "concentration0": D}, ()),
    ("gamma_uniform", "Gamma", {"concentration": A, "rate": B}, "Uniform",
     {"low": C - 5, "high": D + 5}, ()),
    ("poisson_bernoulli", "Poisson", {"rate": A}, "Bernoulli", {"probs": Q[:3]}, ()),
    ("poisson_binomial", "Poisson", {"rate": A}, "Binomial",
     {"total_count": np.array([3.0, 3.0, 3.0]), "probs": Q[:3]}, ()),
    ("laplace_beta", "Laplace", {"loc": A, "scale": B}, "Beta",
     {"concentration1": C, "concentration0": D}, ()),
]


def _build(lib, cls, params, grad):
    leaves = []
    kwargs = {}
    for key, value in params.items():
        t = lib.tensor(value.copy())
        if grad and key != "total_count":
            t.requires_grad_(True)
            leaves.append(t)
        kwargs[key] = t
    return getattr(lib.distributions, cls)(**kwargs), leaves


@pytest.mark.parametrize("name,pc,pp,qc,qp,grad", PAIRS, ids=[p[0] for p in PAIRS])
def test_kl_matches_torch(name, pc, pp, qc, qp, grad):
    e_p, e_leaves = _build(ember, pc, pp, "p" in grad)
    e_q, e_q_leaves = _build(ember, qc, qp, "q" in grad)
    t_p, t_leaves = _build(torch, pc, pp, "p" in grad)
    t_q, t_q_leaves = _build(torch, qc, qp, "q" in grad)
    expected = torch.distributions.kl_divergence(t_p, t_q)
    got = ember.distributions.kl_divergence(e_p, e_q)
    assert_same(got, expected)
    if grad:
        cot = np.random.default_rng(0).standard_normal(tuple(expected.shape))
        t_grads = torch.autograd.grad((expected * torch.tensor(cot)).sum(),
                                      t_leaves + t_q_leaves)
        e_grads = ember.autograd.grad((got * ember.tensor(cot)).sum(), e_leaves + e_q_leaves)
        for e_g, t_g in zip(e_grads, t_grads):
            np.testing.assert_allclose(to_numpy(e_g), to_numpy(t_g), rtol=GRAD_RTOL, atol=ATOL)


def test_binomial_kl_refuses_a_larger_q_count():
    p = ember.distributions.Binomial(ember.tensor([2.0]), ember.tensor([0.5]))
    q = ember.distributions.Binomial(ember.tensor([3.0]), ember.tensor([0.5]))
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        ember.distributions.kl_divergence(p, q)


def test_kl_is_zero_against_itself_and_positive_otherwise():
    p = ember.distributions.Dirichlet(ember.tensor([[1.0, 2.0, 3.0]]))
    assert abs(ember.distributions.kl_divergence(p, p).item()) < 1e-6
    q = ember.distributions.Dirichlet(ember.tensor([[2.0, 2.0, 2.0]]))
    assert ember.distributions.kl_divergence(p, q).item() > 0
