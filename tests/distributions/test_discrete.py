"""Discrete families against torch.distributions on identical parameters: statistics,
entropy, log_prob and its parameter gradients, enumerate_support, expand, sampling (moments
within statistical bounds) and argument validation."""

from __future__ import annotations

import math

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

P = np.array([[0.1, 0.5, 0.93], [0.02, 0.7, 0.5]])
LOGITS = np.array([[-2.0, 0.3, 4.0], [1.0, -0.5, 0.0]])
SIMPLEX = np.array([[0.2, 0.3, 0.5], [0.7, 0.1, 0.2]])
COUNTS = np.eye(3)[[1, 2, 0]][:, None, :]

FAMILIES = [
    Family("bernoulli_probs", "Bernoulli", {"probs": P}, np.array([0.0, 1.0])[:, None, None],
           grad=("probs",), enumerate=True),
    Family("bernoulli_logits", "Bernoulli", {"logits": LOGITS},
           np.array([0.0, 1.0])[:, None, None], grad=("logits",), enumerate=True),
    Family("bernoulli_half", "Bernoulli", {"probs": np.array([0.5, 0.0, 1.0])},
           np.array([0.0, 1.0])[:, None], enumerate=True),
    Family("categorical_probs", "Categorical", {"probs": SIMPLEX * 3},
           np.array([[0, 2], [1, 1]]), grad=("probs",), enumerate=True),
    Family("categorical_logits", "Categorical", {"logits": LOGITS}, np.array([2, 0]),
           grad=("logits",), enumerate=True),
    Family("categorical_1d", "Categorical", {"probs": np.array([0.0, 0.25, 0.75])},
           np.array([1, 2, 0]), enumerate=True),
    Family("one_hot", "OneHotCategorical", {"probs": SIMPLEX}, COUNTS, grad=("probs",),
           enumerate=True),
    Family("one_hot_logits", "OneHotCategorical", {"logits": LOGITS}, COUNTS,
           grad=("logits",), enumerate=True),
    Family("one_hot_st", "OneHotCategoricalStraightThrough", {"probs": SIMPLEX}, COUNTS,
           enumerate=True),
    Family("binomial_probs", "Binomial", {"total_count": np.array([5.0, 5.0, 5.0]), "probs": P},
           np.array([0.0, 3.0, 5.0]), grad=("probs",), enumerate=True),
    Family("binomial_logits", "Binomial", {"total_count": 7, "logits": LOGITS},
           np.array([[0.0, 7.0, 2.0]]), grad=("logits",), enumerate=True),
    Family("binomial_inhomogeneous", "Binomial",
           {"total_count": np.array([3.0, 10.0]), "probs": np.array([0.3, 0.6])},
           np.array([2.0, 9.0]), grad=("probs",), enumerate=True),
    Family("multinomial", "Multinomial", {"probs": SIMPLEX}, np.array([[2.0, 0.0, 1.0]]),
           grad=("probs",), kwargs={"total_count": 3}),
    Family("multinomial_logits", "Multinomial", {"logits": LOGITS},
           np.array([[0.0, 4.0, 0.0], [1.0, 1.0, 2.0]]), grad=("logits",),
           kwargs={"total_count": 4}),
    Family("multinomial_zero_prob", "Multinomial", {"probs": np.array([0.0, 0.4, 0.6])},
           np.array([[0.0, 1.0, 1.0]]), kwargs={"total_count": 2}),
    Family("poisson", "Poisson", {"rate": np.array([[0.5, 3.0, 40.0]])},
           np.array([[0.0, 2.0, 41.0], [5.0, 0.0, 1.0]]), grad=("rate",)),
    Family("poisson_zero_rate", "Poisson", {"rate": np.array([0.0, 2.0])},
           np.array([0.0, 1.0])),
    Family("geometric_probs", "Geometric", {"probs": P}, np.array([0.0, 4.0, 1.0]),
           grad=("probs",)),
    Family("geometric_logits", "Geometric", {"logits": LOGITS}, np.array([2.0, 0.0, 7.0]),
           grad=("logits",)),
    Family("geometric_certain", "Geometric", {"probs": np.array([1.0, 0.3])},
           np.array([0.0, 2.0])),
    Family("negative_binomial", "NegativeBinomial",
           {"total_count": np.array([0.5, 3.0, 12.0]), "probs": P}, np.array([0.0, 4.0, 30.0]),
           grad=("total_count", "probs")),
    Family("negative_binomial_logits", "NegativeBinomial",
           {"total_count": 2.5, "logits": LOGITS}, np.array([1.0, 0.0, 6.0]),
           grad=("logits",)),
]
IDS = [f.name for f in FAMILIES]


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_statistics_match_torch(family):
    check_statistics(family)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_log_prob_and_gradients_match_torch(family):
    check_log_prob(family)


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_enumerate_support_and_expand_match_torch(family):
    check_enumerate_and_expand(family)


def _within(sample: np.ndarray, mean: np.ndarray, var: np.ndarray, z: float = 5.0):
    n = sample.shape[0]
    assert (np.abs(sample.mean(0) - mean) <= z * np.sqrt(var / n) + 1e-12).all(), (
        sample.mean(0), mean)


MOMENTS = [f for f in FAMILIES if "zero" not in f.name and f.cls != "Categorical"]  # nan mean


@pytest.mark.parametrize("family", MOMENTS, ids=[f.name for f in MOMENTS])
def test_sample_mean_within_statistical_bounds(family):
    ours, _, _, _ = build(family)
    ember.manual_seed(11)
    sample = ours.sample((20_000,))
    assert tuple(sample.shape) == (20_000, *ours.batch_shape, *ours.event_shape)
    assert bool(ours.support.check(sample).all())
    _within(sample.double().numpy(), ours.mean.numpy(), ours.variance.numpy())


def test_categorical_sample_frequencies():
    ember.manual_seed(12)
    probs = np.array([0.05, 0.15, 0.3, 0.5])
    sample = ember.distributions.Categorical(ember.tensor(probs)).sample((40_000,)).numpy()
    freq = np.bincount(sample, minlength=4) / sample.size
    assert (np.abs(freq - probs) <= 5 * np.sqrt(probs * (1 - probs) / sample.size)).all()


def test_straight_through_gradient_is_the_identity_on_probs():
    e_p = ember.tensor(SIMPLEX, requires_grad=True)
    d = ember.distributions.OneHotCategoricalStraightThrough(probs=e_p)
    cot = ember.tensor(np.arange(6.0).reshape(2, 3))
    (d.rsample() * cot).sum().backward()
    t_p = torch.tensor(SIMPLEX, requires_grad=True)
    t_d = torch.distributions.OneHotCategoricalStraightThrough(probs=t_p)
    (t_d.rsample() * torch.tensor(cot.numpy())).sum().backward()
    np.testing.assert_allclose(e_p.grad.numpy(), t_p.grad.numpy(), rtol=1e-12, atol=1e-14)


INVALID = [
    ("Bernoulli", {"probs": np.array([0.5, 1.5])}),
    ("Bernoulli", {}),
    ("Bernoulli", {"probs": np.array([0.5]), "logits": np.array([0.0])}),
    ("Categorical", {"probs": np.array([0.5, -0.5])}),
    ("Categorical", {"probs": np.array(0.5)}),
    ("Categorical", {"logits": np.array(0.5)}),
    ("Binomial", {"total_count": np.array([-1.0]), "probs": np.array([0.5])}),
    ("Binomial", {"total_count": np.array([2.5]), "probs": np.array([0.5])}),
    ("Poisson", {"rate": np.array([-1.0])}),
    ("Geometric", {"probs": np.array([0.0, 0.5])}),
    ("NegativeBinomial", {"total_count": np.array([2.0]), "probs": np.array([1.0])}),
    ("NegativeBinomial", {"total_count": np.array([-2.0]), "probs": np.array([0.5])}),
]


@pytest.mark.parametrize("cls,params", INVALID, ids=[f"{c}-{i}" for i, (c, _) in
                                                      enumerate(INVALID)])
def test_invalid_arguments_raise_as_torch(cls, params):
    def make(lib):
        kw = {k: lib.tensor(v) for k, v in params.items()}
        return getattr(lib.distributions, cls)(validate_args=True, **kw)

    with pytest.raises(Exception) as t_err:
        make(torch)
    with pytest.raises(t_err.type) as e_err:
        make(ember)
    first = str(t_err.value).split("(")[0]
    assert str(e_err.value).startswith(first), (str(e_err.value), str(t_err.value))


def test_value_outside_support_is_rejected():
    for cls, params, bad in (("Bernoulli", {"probs": [0.3]}, [2.0]),
                             ("Poisson", {"rate": [1.0]}, [1.5]),
                             ("Binomial", {"total_count": [3.0], "probs": [0.3]}, [4.0]),
                             ("Categorical", {"probs": [0.5, 0.5]}, 2)):
        for lib in (torch, ember):
            d = getattr(lib.distributions, cls)(validate_args=True,
                                                **{k: lib.tensor(v) for k, v in params.items()})
            with pytest.raises(ValueError, match="support"):
                d.log_prob(lib.tensor(bad))


def test_inhomogeneous_counts_refuse_enumeration_and_total_count_must_be_int():
    d = ember.distributions.Binomial(ember.tensor([2.0, 3.0]), ember.tensor([0.5, 0.5]))
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        d.enumerate_support()
    with pytest.raises(NotImplementedError, match="Inhomogeneous total count"):
        d.entropy()
    with pytest.raises(NotImplementedError, match="inhomogeneous total_count"):
        ember.distributions.Multinomial(ember.tensor(2), ember.tensor([0.5, 0.5]))


def test_scalar_parameters_give_empty_batch_shape():
    for cls, args in (("Bernoulli", (0.3,)), ("Poisson", (2.0,)), ("Geometric", (0.2,))):
        d = getattr(ember.distributions, cls)(*args)
        assert d.batch_shape == ember.Size(())
        assert d.sample().shape == ember.Size(())
    assert math.isclose(ember.distributions.Poisson(2.0).log_prob(ember.tensor(1.0)).item(),
                        math.log(2.0) - 2.0, rel_tol=1e-6)


def test_empty_sample_shapes_fail_as_torch():
    for lib in (torch, ember):
        d = lib.distributions.Categorical(lib.tensor([[0.2, 0.8], [0.5, 0.5]]))
        with pytest.raises(RuntimeError, match="n_sample <= 0"):
            d.sample((0,))
        with pytest.raises(RuntimeError, match="n_sample <= 0"):
            lib.distributions.Multinomial(0, lib.tensor([0.2, 0.8])).sample((2,))


def _float32(family):
    params = {k: (v.astype(np.float32) if isinstance(v, np.ndarray) else v)
              for k, v in family.params.items()}
    return Family(family.name, family.cls, params, family.values, kwargs=family.kwargs)


# float32: log-probabilities add lgamma terms up to ~100 here, each good to a few float32 ulps
TOL32 = 1e-4


@pytest.mark.parametrize("family", FAMILIES, ids=IDS)
def test_float32_parameters_keep_their_dtype(family):
    ours, theirs, _, _ = build(_float32(family))
    values = family.values.astype(np.float32)
    e_lp = ours.log_prob(ember.tensor(values))
    t_lp = theirs.log_prob(torch.tensor(values))
    assert str(e_lp.dtype).split(".")[-1] == str(t_lp.dtype).split(".")[-1]
    np.testing.assert_allclose(e_lp.numpy(), t_lp.numpy(), rtol=TOL32, atol=TOL32)
    ember.manual_seed(0)
    assert str(ours.sample().dtype).split(".")[-1] == str(theirs.sample().dtype).split(".")[-1]


@pytest.mark.parametrize("family", [FAMILIES[0], FAMILIES[4], FAMILIES[9], FAMILIES[13]],
                         ids=["bernoulli", "categorical", "binomial", "multinomial"])
def test_non_contiguous_parameters_give_the_same_results(family):
    # parameters as transposed views of column-major buffers: same values, hostile strides
    def param(v, strided):
        if not isinstance(v, np.ndarray) or v.ndim < 2:
            return ember.tensor(v) if isinstance(v, np.ndarray) else v
        return ember.tensor(np.ascontiguousarray(v.T)).T if strided else ember.tensor(v)

    cls = getattr(ember.distributions, family.cls)
    a = cls(**{k: param(v, False) for k, v in family.params.items()}, **family.kwargs)
    b = cls(**{k: param(v, True) for k, v in family.params.items()}, **family.kwargs)
    value = ember.tensor(family.values)
    np.testing.assert_array_equal(a.log_prob(value).numpy(), b.log_prob(value).numpy())
    ember.manual_seed(6)
    x = a.sample((3,))
    ember.manual_seed(6)
    np.testing.assert_array_equal(x.numpy(), b.sample((3,)).numpy())
