"""kl_divergence between the continuous families against torch.distributions.kl_divergence
on identical parameters, its gradients, the registry's dispatch and its errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
import torch.distributions as td

import ember
import ember.distributions as ed

from ._compare import assert_same, to_numpy

_RNG = np.random.default_rng(1)
SHAPE = (2, 3)


def _real():
    return _RNG.normal(size=SHAPE)


def _pos(low=0.5, high=2.0):
    return _RNG.uniform(low, high, SHAPE)


def _spd(n, batch=(2,)):
    a = _RNG.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


FAMILIES = {
    "Normal": lambda: ("Normal", {"loc": _real(), "scale": _pos()}),
    "Uniform": lambda: ("Uniform", {"low": _real() - 3, "high": _real() + 3}),
    "UniformPositive": lambda: ("Uniform", {"low": _pos(2.5, 3.0), "high": _pos(3.5, 5.0)}),
    "Exponential": lambda: ("Exponential", {"rate": _pos()}),
    "Laplace": lambda: ("Laplace", {"loc": _real(), "scale": _pos()}),
    "Gumbel": lambda: ("Gumbel", {"loc": _real(), "scale": _pos()}),
    "Cauchy": lambda: ("Cauchy", {"loc": _real(), "scale": _pos()}),
    "HalfNormal": lambda: ("HalfNormal", {"scale": _pos()}),
    "Pareto": lambda: ("Pareto", {"scale": _pos(), "alpha": _pos(0.5, 4.0)}),
    "LogNormal": lambda: ("LogNormal", {"loc": _real(), "scale": _pos()}),
}

PAIRS = [
    ("Normal", "Normal"), ("Uniform", "Uniform"), ("Exponential", "Exponential"),
    ("Laplace", "Laplace"), ("Gumbel", "Gumbel"), ("Cauchy", "Cauchy"),
    ("HalfNormal", "HalfNormal"), ("Pareto", "Pareto"), ("LogNormal", "LogNormal"),
    ("Uniform", "Normal"), ("Exponential", "Normal"), ("Gumbel", "Normal"),
    ("Laplace", "Normal"), ("Pareto", "Normal"), ("Pareto", "Exponential"),
    ("UniformPositive", "Exponential"), ("Uniform", "Exponential"),
    ("UniformPositive", "Pareto"), ("Uniform", "Gumbel"), ("Exponential", "Gumbel"),
    ("Normal", "Gumbel"), ("Normal", "Laplace"),
    ("Normal", "Uniform"), ("Normal", "Pareto"), ("Normal", "Exponential"),
    ("Laplace", "Uniform"), ("Laplace", "Pareto"), ("Laplace", "Exponential"),
    ("Gumbel", "Uniform"), ("Gumbel", "Pareto"), ("Gumbel", "Exponential"),
    ("Exponential", "Uniform"), ("Exponential", "Pareto"), ("Pareto", "Uniform"),
]


def _make(family, params, requires_grad=False):
    ours = {k: ember.tensor(v.copy()).requires_grad_(requires_grad) for k, v in params.items()}
    theirs = {k: torch.tensor(v.copy(), requires_grad=requires_grad)
              for k, v in params.items()}
    return getattr(ed, family)(**ours), getattr(td, family)(**theirs), ours, theirs


@pytest.mark.parametrize(("p_name", "q_name"), PAIRS, ids=[f"{p}-{q}" for p, q in PAIRS])
def test_kl_matches_torch(p_name, q_name):
    p_family, p_params = FAMILIES[p_name]()
    q_family, q_params = FAMILIES[q_name]()
    p_ours, p_theirs, p_ours_params, p_theirs_params = _make(p_family, p_params, True)
    q_ours, q_theirs, _, _ = _make(q_family, q_params)
    ours = ed.kl_divergence(p_ours, q_ours)
    theirs = td.kl_divergence(p_theirs, q_theirs)
    # closed forms of the cross-family pairs differ from torch's in how they are arranged:
    # allow the rounding of a few dozen operations on O(10) magnitudes
    assert_same(ours, theirs, rtol=1e-11, atol=1e-11)
    finite = np.isfinite(to_numpy(theirs))
    if not finite.any():
        return
    cotangent = np.where(finite, _RNG.normal(size=tuple(theirs.shape)), 0.0)
    names = sorted(p_params)
    ours_grads = ember.autograd.grad(
        (ember.where(ember.tensor(finite), ours, 0.0) * ember.tensor(cotangent)).sum(),
        [p_ours_params[n] for n in names], allow_unused=True)
    theirs_grads = torch.autograd.grad(
        (torch.where(torch.tensor(finite), theirs, 0.0) * torch.tensor(cotangent)).sum(),
        [p_theirs_params[n] for n in names], allow_unused=True)
    for o, t in zip(ours_grads, theirs_grads):
        if t is None:
            assert o is None or not bool(o.abs().gt(0).any())
            continue
        assert_same(o, t, rtol=1e-9, atol=1e-9)


def _mvn_params():
    n = 3
    loc = _RNG.normal(size=(2, n))
    cov = _spd(n)
    tril = np.linalg.cholesky(_spd(n))
    return n, loc, cov, tril


@pytest.mark.parametrize("p_kind", ["covariance", "scale_tril", "precision", "lowrank"])
@pytest.mark.parametrize("q_kind", ["covariance", "scale_tril", "lowrank"])
def test_kl_multivariate_normals_match_torch(p_kind, q_kind):
    def build(kind):
        n, loc, cov, tril = _mvn_params()
        if kind == "lowrank":
            factor, diag = _RNG.normal(size=(2, n, 2)), _RNG.uniform(0.5, 2.0, (2, n))
            return (ed.LowRankMultivariateNormal(ember.tensor(loc), ember.tensor(factor),
                                                 ember.tensor(diag)),
                    td.LowRankMultivariateNormal(torch.tensor(loc), torch.tensor(factor),
                                                 torch.tensor(diag)))
        key = {"covariance": "covariance_matrix", "scale_tril": "scale_tril",
               "precision": "precision_matrix"}[kind]
        matrix = tril if kind == "scale_tril" else cov
        return (ed.MultivariateNormal(ember.tensor(loc), **{key: ember.tensor(matrix)}),
                td.MultivariateNormal(torch.tensor(loc), **{key: torch.tensor(matrix)}))

    p_ours, p_theirs = build(p_kind)
    q_ours, q_theirs = build(q_kind)
    assert_same(ed.kl_divergence(p_ours, q_ours), td.kl_divergence(p_theirs, q_theirs),
                rtol=1e-10, atol=1e-10)


def test_kl_mvn_event_shape_mismatch_is_a_value_error():
    p = ed.MultivariateNormal(ember.zeros(2), ember.eye(2))
    q = ed.MultivariateNormal(ember.zeros(3), ember.eye(3))
    with pytest.raises(ValueError, match="different event shapes"):
        ed.kl_divergence(p, q)


def test_kl_independent_sums_the_reinterpreted_dims():
    loc, scale = _real(), _pos()
    p = ed.Independent(ed.Normal(ember.tensor(loc), ember.tensor(scale)), 1)
    q = ed.Independent(ed.Normal(ember.zeros(SHAPE, dtype=ember.float64), 1.0), 1)
    tp = td.Independent(td.Normal(torch.tensor(loc), torch.tensor(scale)), 1)
    tq = td.Independent(td.Normal(torch.zeros(SHAPE, dtype=torch.float64), 1.0), 1)
    assert_same(ed.kl_divergence(p, q), td.kl_divergence(tp, tq))
    with pytest.raises(NotImplementedError):
        ed.kl_divergence(p, ed.Independent(ed.Normal(ember.zeros(SHAPE), 1.0), 2))


def test_kl_without_closed_form_raises_not_implemented():
    with pytest.raises(NotImplementedError, match="No KL"):
        ed.kl_divergence(ed.Cauchy(0.0, 1.0), ed.Normal(0.0, 1.0))


def test_kl_different_exponential_families_raise():
    with pytest.raises(NotImplementedError, match="Bregman"):
        ed.kl_divergence(ed.Normal(0.0, 1.0), _OtherFamily(validate_args=False))


class _OtherFamily(ed.ExponentialFamily):
    arg_constraints: dict = {}


def test_expfamily_bregman_kl_equals_the_closed_form():
    class BregmanNormal(ed.Normal):
        pass

    p = BregmanNormal(ember.tensor(_real()), ember.tensor(_pos()))
    q = BregmanNormal(ember.tensor(_real()), ember.tensor(_pos()))
    # a subclass of Normal dispatches to (Normal, Normal); the Bregman form must agree
    bregman = ed.kl.__dict__["_kl_expfamily_expfamily"](p, q)
    assert_same(bregman, ed.kl_divergence(p, q))


class _A(ed.Distribution):
    pass


class _B(_A):
    pass


def test_register_kl_dispatches_to_the_most_specific_pair_and_warns_when_ambiguous():
    @ed.register_kl(_A, _A)
    def kl_aa(p, q):
        return "aa"

    @ed.register_kl(_B, _A)
    def kl_ba(p, q):
        return "ba"

    a, b = _A(validate_args=False), _B(validate_args=False)
    assert ed.kl_divergence(b, a) == "ba"
    assert ed.kl_divergence(a, b) == "aa"
    assert ed.kl_divergence(b, b) == "ba"

    @ed.register_kl(_A, _B)
    def kl_ab(p, q):
        return "ab"

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = ed.kl_divergence(b, b)
    assert result in ("ba", "ab")
    assert any("Ambiguous kl_divergence" in str(w.message) for w in caught)

    @ed.register_kl(_B, _B)
    def kl_bb(p, q):
        return "bb"

    assert ed.kl_divergence(b, b) == "bb"


def test_register_kl_refuses_non_distributions():
    with pytest.raises(TypeError):
        ed.register_kl(int, ed.Normal)
