"""The Distribution base, constraints and utils against torch.distributions: argument and
sample validation with torch's messages, shapes, repr, expand's contract, the Bregman
entropy of ExponentialFamily, and the helpers in utils."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch
import torch.distributions as td

import ember
import ember.distributions as ed
from ember.distributions import constraints as ec
from ember.distributions import utils as eu

from ._compare import assert_same

_RNG = np.random.default_rng(3)


def _torch_message(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value)


def _ours_message(fn):
    with pytest.raises(ValueError) as info:
        fn()
    return str(info.value)


def _same_up_to_library(ours, theirs):
    """torch's message with ``torch.`` spelled ``ember.`` and tensor reprs normalised."""
    assert ours == theirs.replace("torch.", "ember."), (ours, theirs)


@pytest.mark.parametrize(("family", "args"), [
    ("Normal", ([0.0, float("nan")], 1.0)),
    ("Normal", (0.0, [1.0, -1.0])),
    ("Exponential", ([1.0, 0.0],)),
    ("Laplace", (0.0, [0.0, 1.0])),
    ("Uniform", (1.0, [0.0, 2.0])),
    ("Pareto", ([1.0, 2.0], [-1.0, 1.0])),
])
def test_invalid_parameters_raise_torchs_message(family, args):
    def build(D, L):
        return getattr(D, family)(*[L.tensor(a) if isinstance(a, list) else a for a in args])

    theirs = _torch_message(lambda: build(td, torch))
    ours = _ours_message(lambda: build(ed, ember))
    _same_up_to_library(ours, theirs)
    assert re.match(r"Expected parameter \w+ \(Tensor of shape \(2,\)\) of distribution ",
                    ours)


def test_studentt_names_itself_in_its_parameter_message():
    # torch reports the df check from its internal Chi2; ember names the StudentT
    message = _ours_message(lambda: ed.StudentT(ember.tensor([0.0, 3.0])))
    assert message.startswith("Expected parameter df (Tensor of shape (2,)) of distribution "
                              "StudentT(df: ember.Size([2])")


def test_scalar_parameter_message_prints_the_number():
    ours = _ours_message(lambda: ed.Normal(0.0, -1.0))
    theirs = _torch_message(lambda: td.Normal(0.0, -1.0))
    _same_up_to_library(ours, theirs)
    assert ours.endswith("found invalid values:\n-1.0")


@pytest.mark.parametrize(("family", "params", "value"), [
    ("Exponential", (1.0,), -1.0),
    ("Uniform", (0.0, 1.0), 2.0),
    ("HalfNormal", (1.0,), -0.5),
    ("Normal", (0.0, 1.0), float("nan")),
])
def test_values_outside_the_support_raise_torchs_message(family, params, value):
    theirs = _torch_message(lambda: getattr(td, family)(*params).log_prob(torch.tensor(value)))
    ours = _ours_message(lambda: getattr(ed, family)(*params).log_prob(ember.tensor(value)))
    _same_up_to_library(ours, theirs)


def test_value_shape_errors_match_torch():
    d, t = ed.Normal(ember.zeros(3), 1.0), td.Normal(torch.zeros(3), 1.0)
    _same_up_to_library(_ours_message(lambda: d.log_prob(ember.zeros(2))),
                        _torch_message(lambda: t.log_prob(torch.zeros(2))))
    mvn = ed.MultivariateNormal(ember.zeros(3), ember.eye(3))
    tmvn = td.MultivariateNormal(torch.zeros(3), torch.eye(3))
    _same_up_to_library(_ours_message(lambda: mvn.log_prob(ember.zeros(2))),
                        _torch_message(lambda: tmvn.log_prob(torch.zeros(2))))
    assert _ours_message(lambda: d.log_prob([0.0])) == _torch_message(
        lambda: t.log_prob([0.0]))


def test_validation_can_be_turned_off_per_instance_and_by_default():
    d = ed.Normal(0.0, -1.0, validate_args=False)
    assert bool(ember.isnan(d.log_prob(ember.tensor(0.0))))
    ed.Normal(0.0, 1.0, validate_args=False).log_prob(ember.tensor(float("nan")))
    try:
        ed.Distribution.set_default_validate_args(False)
        ed.Normal(0.0, -1.0)
    finally:
        ed.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        ed.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        ed.Distribution.set_default_validate_args("yes")


def test_expanded_distribution_keeps_its_validation_setting():
    d = ed.Normal(ember.zeros(2), 1.0, validate_args=False).expand((3, 2))
    assert d.batch_shape == ember.Size([3, 2])
    d.log_prob(ember.tensor(float("nan")))  # no check
    with pytest.raises(ValueError):
        ed.Normal(ember.zeros(2), 1.0).expand((3, 2)).log_prob(ember.tensor(float("nan")))


def test_repr_matches_torch():
    assert repr(ed.Normal(0.0, 1.0)) == repr(td.Normal(0.0, 1.0))
    assert repr(ed.Normal(ember.zeros(3), 1.0)) == repr(td.Normal(torch.zeros(3), 1.0)).replace(
        "torch.", "ember.")
    assert repr(ed.Independent(ed.Normal(ember.zeros(3), 1.0), 1)) == repr(
        td.Independent(td.Normal(torch.zeros(3), 1.0), 1)).replace("torch.", "ember.")


def test_subclass_with_own_init_must_define_expand():
    class Shifted(ed.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match="must also define a custom .expand"):
        Shifted(ember.zeros(2)).expand((3, 2))


def test_base_class_methods_raise_not_implemented():
    d = ed.Distribution(ember.Size([2]), validate_args=False)
    for name in ("mean", "variance", "support", "arg_constraints"):
        with pytest.raises(NotImplementedError):
            getattr(d, name)
    with pytest.raises(NotImplementedError):
        _ = d.mode
    for method in (d.rsample, d.entropy, lambda: d.log_prob(ember.zeros(2)),
                   lambda: d.cdf(ember.zeros(2)), lambda: d.icdf(ember.zeros(2)),
                   d.enumerate_support, lambda: d.expand((2,))):
        with pytest.raises(NotImplementedError):
            method()


def test_extended_shape_and_sample_n():
    d = ed.Normal(ember.zeros(2, 3), 1.0)
    assert d._extended_shape((4,)) == ember.Size([4, 2, 3])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert d.sample_n(5).shape == ember.Size([5, 2, 3])
    assert any("sample_n" in str(w.message) for w in caught)


def test_perplexity_and_stddev():
    scale = _RNG.uniform(0.5, 2.0, 3)
    d, t = ed.Laplace(ember.zeros(3, dtype=ember.float64), ember.tensor(scale)), td.Laplace(
        torch.zeros(3, dtype=torch.float64), torch.tensor(scale))
    assert_same(d.perplexity(), t.perplexity())
    assert_same(d.stddev, t.stddev)


@pytest.mark.parametrize(("family", "params"), [
    ("Normal", lambda: (_RNG.normal(size=3), _RNG.uniform(0.5, 2.0, 3))),
    ("Exponential", lambda: (_RNG.uniform(0.5, 2.0, 3),)),
])
def test_exponential_family_bregman_entropy_equals_the_closed_form(family, params):
    args = [ember.tensor(p) for p in params()]
    d = getattr(ed, family)(*args)
    assert_same(ed.ExponentialFamily.entropy(d).detach(), d.entropy())


def test_independent_shapes_and_errors_match_torch():
    base, tbase = ed.Normal(ember.zeros(2, 3, 4), 1.0), td.Normal(torch.zeros(2, 3, 4), 1.0)
    for n in range(4):
        d, t = ed.Independent(base, n), td.Independent(tbase, n)
        assert tuple(d.batch_shape) == tuple(t.batch_shape)
        assert tuple(d.event_shape) == tuple(t.event_shape)
        assert repr(d.support) == repr(t.support)
    _same_up_to_library(_ours_message(lambda: ed.Independent(base, 4)),
                        _torch_message(lambda: td.Independent(tbase, 4)))
    with pytest.raises(NotImplementedError):
        ed.Independent(base, 1).enumerate_support()


CONSTRAINT_CASES = [
    ("real", lambda C: C.real, [0.0, float("nan"), float("inf")]),
    ("positive", lambda C: C.positive, [1.0, 0.0, -1.0]),
    ("nonnegative", lambda C: C.nonnegative, [1.0, 0.0, -1.0]),
    ("greater_than", lambda C: C.greater_than(1.0), [0.5, 1.0, 2.0]),
    ("greater_than_eq", lambda C: C.greater_than_eq(1.0), [0.5, 1.0, 2.0]),
    ("less_than", lambda C: C.less_than(1.0), [0.5, 1.0, 2.0]),
    ("unit_interval", lambda C: C.unit_interval, [0.0, 1.0, 1.5]),
    ("interval", lambda C: C.interval(-1.0, 1.0), [-1.0, 1.0, 1.5]),
    ("half_open_interval", lambda C: C.half_open_interval(-1.0, 1.0), [-1.0, 1.0, 0.5]),
    ("boolean", lambda C: C.boolean, [0.0, 1.0, 0.5]),
    ("nonnegative_integer", lambda C: C.nonnegative_integer, [0.0, 2.0, 1.5]),
    ("positive_integer", lambda C: C.positive_integer, [0.0, 2.0, -1.0]),
    ("integer_interval", lambda C: C.integer_interval(0, 3), [0.0, 3.0, 4.0]),
    ("simplex", lambda C: C.simplex, [[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1]]),
    ("one_hot", lambda C: C.one_hot, [[0.0, 1.0], [1.0, 1.0], [0.5, 0.5]]),
    ("multinomial", lambda C: C.multinomial(3), [[1.0, 2.0], [2.0, 2.0], [-1.0, 1.0]]),
    ("real_vector", lambda C: C.real_vector, [[0.0, 1.0], [float("nan"), 1.0]]),
    ("independent", lambda C: C.independent(C.positive, 1), [[1.0, 2.0], [1.0, -2.0]]),
    ("lower_triangular", lambda C: C.lower_triangular,
     [[[1.0, 0.0], [2.0, -3.0]], [[1.0, 1.0], [0.0, 1.0]]]),
    ("lower_cholesky", lambda C: C.lower_cholesky,
     [[[1.0, 0.0], [2.0, 3.0]], [[1.0, 0.0], [2.0, -3.0]]]),
    ("square", lambda C: C.square, [[[1.0, 0.0], [2.0, 3.0]]]),
    ("symmetric", lambda C: C.symmetric, [[[1.0, 2.0], [2.0, 3.0]], [[1.0, 0.0], [2.0, 3.0]]]),
    ("positive_definite", lambda C: C.positive_definite,
     [[[2.0, 1.0], [1.0, 2.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("positive_semidefinite", lambda C: C.positive_semidefinite,
     [[[1.0, 1.0], [1.0, 1.0]], [[1.0, 2.0], [2.0, 1.0]]]),
    ("corr_cholesky", lambda C: C.corr_cholesky,
     [[[1.0, 0.0], [0.6, 0.8]], [[1.0, 0.0], [0.5, 0.5]]]),
    ("cat", lambda C: C.cat([C.positive, C.real], 0, [1, 2]), [1.0, -1.0, 2.0]),
    ("stack", lambda C: C.stack([C.positive, C.unit_interval], 1), [[1.0, 0.5], [-1.0, 2.0]]),
]


@pytest.mark.parametrize(("name", "build", "values"), CONSTRAINT_CASES,
                         ids=[c[0] for c in CONSTRAINT_CASES])
def test_constraints_check_like_torch(name, build, values):
    ours, theirs = build(ec), build(td.constraints)
    expected = theirs.check(torch.tensor(values, dtype=torch.float64))
    got = ours.check(ember.tensor(values, dtype=ember.float64))
    assert to_list(got) == expected.tolist()
    assert repr(ours) == repr(theirs)
    assert ours.is_discrete == theirs.is_discrete
    assert ours.event_dim == theirs.event_dim


def to_list(t):
    return t.tolist()


def test_dependent_constraints():
    assert ec.is_dependent(ec.dependent)
    assert ec.is_dependent(ed.Uniform.support)
    assert not ec.is_dependent(ec.real)
    with pytest.raises(ValueError):
        ec.dependent.check(ember.zeros(1))
    with pytest.raises(NotImplementedError):
        _ = ec.dependent.event_dim
    assert ec.dependent(is_discrete=True, event_dim=1).event_dim == 1
    assert repr(ed.Uniform(0.0, 2.0).support) == repr(td.Uniform(0.0, 2.0).support)


def test_broadcast_all_matches_torch():
    a, b = eu.broadcast_all(ember.zeros(2, 1, dtype=ember.float64), 3.0)
    ta, tb = td.utils.broadcast_all(torch.zeros(2, 1, dtype=torch.float64), 3.0)
    assert tuple(a.shape) == tuple(ta.shape) and tuple(b.shape) == tuple(tb.shape)
    assert b.dtype == ember.float64
    (c,) = eu.broadcast_all(2.0)
    assert c.dtype == ember.get_default_dtype() and c.shape == ember.Size([])
    with pytest.raises(ValueError):
        eu.broadcast_all("a", 1.0)


def test_logits_probs_helpers_match_torch():
    x = _RNG.normal(size=(2, 3))
    p = _RNG.uniform(0.0, 1.0, (2, 3))
    for is_binary in (False, True):
        assert_same(eu.logits_to_probs(ember.tensor(x), is_binary),
                    td.utils.logits_to_probs(torch.tensor(x), is_binary))
        assert_same(eu.probs_to_logits(ember.tensor(p), is_binary),
                    td.utils.probs_to_logits(torch.tensor(p), is_binary))
    edge = [0.0, 1.0, 0.5]
    assert_same(eu.clamp_probs(ember.tensor(edge, dtype=ember.float64)),
                td.utils.clamp_probs(torch.tensor(edge, dtype=torch.float64)))


def test_tril_vec_round_trip_matches_torch():
    m = _RNG.normal(size=(2, 4, 4))
    for diag in (0, -1):
        vec = eu.tril_matrix_to_vec(ember.tensor(m), diag)
        assert_same(vec, td.utils.tril_matrix_to_vec(torch.tensor(m), diag))
        assert_same(eu.vec_to_tril_matrix(vec, diag),
                    td.utils.vec_to_tril_matrix(torch.tensor(to_list(vec), dtype=torch.float64),
                                                diag))


def test_lazy_property_is_computed_once_with_grad_enabled():
    calls = []

    class Holder:
        @eu.lazy_property
        def value(self):
            calls.append(1)
            return ember.ones(1, requires_grad=True) * 2

    h = Holder()
    with ember.no_grad():
        first = h.value
    assert h.value is first and len(calls) == 1
    assert first.requires_grad
    assert isinstance(Holder.value, eu.lazy_property)
