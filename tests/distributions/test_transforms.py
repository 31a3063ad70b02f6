"""Transforms, biject_to/transform_to and TransformedDistribution against
torch.distributions: forward and inverse values, log-abs-det-Jacobians (also against
autograd's Jacobian), shapes, caching, and round trips through the constraint registries."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.distributions as td
import torch.distributions.transforms as tt

import ember
import ember.distributions as ed
import ember.distributions.transforms as et
from ember.distributions import constraints as ec

from ._compare import assert_same, to_numpy

_RNG = np.random.default_rng(2)


def _pair(build):
    return build(et, ember), build(tt, torch)


TRANSFORMS = {
    "exp": (lambda T, L: T.ExpTransform(), (2, 3)),
    "power": (lambda T, L: T.PowerTransform(L.tensor(2.5, dtype=L.float64)), (2, 3)),
    "sigmoid": (lambda T, L: T.SigmoidTransform(), (2, 3)),
    "softplus": (lambda T, L: T.SoftplusTransform(), (2, 3)),
    "tanh": (lambda T, L: T.TanhTransform(), (2, 3)),
    "affine": (lambda T, L: T.AffineTransform(L.tensor([1.0, -2.0, 0.5], dtype=L.float64),
                                              L.tensor([2.0, -0.5, 3.0], dtype=L.float64)),
               (2, 3)),
    "affine_event": (lambda T, L: T.AffineTransform(0.5, L.tensor([2.0, -0.5, 3.0],
                                                                   dtype=L.float64),
                                                    event_dim=1), (2, 3)),
    "affine_scalar": (lambda T, L: T.AffineTransform(1.0, -3.0), (2, 3)),
    "stick_breaking": (lambda T, L: T.StickBreakingTransform(), (2, 3)),
    "lower_cholesky": (lambda T, L: T.LowerCholeskyTransform(), (2, 3, 3)),
    "corr_cholesky": (lambda T, L: T.CorrCholeskyTransform(), (2, 6)),
    "compose": (lambda T, L: T.ComposeTransform([T.AffineTransform(0.5, 2.0),
                                                 T.ExpTransform()]), (2, 3)),
    "compose_event": (lambda T, L: T.ComposeTransform([T.StickBreakingTransform(),
                                                       T.AffineTransform(0.0, 3.0)]), (2, 3)),
    "inverse_exp": (lambda T, L: T.ExpTransform().inv, (2, 3)),
    "independent": (lambda T, L: T.IndependentTransform(T.ExpTransform(), 1), (2, 3)),
    "reshape": (lambda T, L: T.ReshapeTransform((2, 3), (3, 2)), (4, 2, 3)),
    "cat": (lambda T, L: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)],
                                        dim=1, lengths=[1, 2]), (2, 3)),
    "stack": (lambda T, L: T.StackTransform([T.ExpTransform(), T.TanhTransform(),
                                             T.SigmoidTransform()], dim=1), (2, 3)),
    "cdf": (lambda T, L: T.CumulativeDistributionTransform(
        (ed if L is ember else td).Normal(L.tensor(0.5, dtype=L.float64),
                                          L.tensor(2.0, dtype=L.float64))), (2, 3)),
}
@pytest.mark.parametrize("name", list(TRANSFORMS))
def test_transform_matches_torch(name):
    build, shape = TRANSFORMS[name]
    ours, theirs = _pair(build)
    if name in ("power", "inverse_exp"):  # domain: the positive reals
        x_np = _RNG.uniform(0.5, 2.0, shape)
    else:
        x_np = _RNG.normal(size=shape)
    x, x_t = ember.tensor(x_np.copy()), torch.tensor(x_np.copy())
    y, y_t = ours(x), theirs(x_t)
    assert_same(y, y_t)
    assert_same(ours.inv(y), theirs.inv(y_t), rtol=1e-9, atol=1e-9)
    try:
        expected = theirs.log_abs_det_jacobian(x_t, y_t)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            ours.log_abs_det_jacobian(x, y)
    else:
        assert_same(ours.log_abs_det_jacobian(x, y), expected, rtol=1e-9, atol=1e-9)
    assert ours.domain.event_dim == theirs.domain.event_dim
    assert ours.codomain.event_dim == theirs.codomain.event_dim
    assert ours.bijective == theirs.bijective
    assert tuple(ours.forward_shape(shape)) == tuple(theirs.forward_shape(shape))
    assert tuple(ours.inverse_shape(tuple(y_t.shape))) == tuple(
        theirs.inverse_shape(tuple(y_t.shape)))
    assert bool(ours.codomain.check(y).all())


@pytest.mark.parametrize("name", ["exp", "sigmoid", "tanh", "softplus", "affine", "power"])
def test_log_abs_det_jacobian_of_elementwise_transforms_is_autograds(name):
    build, shape = TRANSFORMS[name]
    transform = build(et, ember)
    x = ember.tensor(_RNG.uniform(0.5, 2.0, shape), requires_grad=True)
    y = transform(x)
    (dy,) = ember.autograd.grad(y.sum(), [x])
    assert_same(transform.log_abs_det_jacobian(x, y).detach(), dy.abs().log(),
                rtol=1e-10, atol=1e-12)


def test_stick_breaking_log_det_is_autograds():
    transform = et.StickBreakingTransform()
    x = ember.tensor(_RNG.normal(size=4), requires_grad=True)
    y = transform(x)
    rows = [ember.autograd.grad(y[i], [x], retain_graph=True)[0] for i in range(4)]
    jacobian = ember.stack(rows)  # (K, K): drop the last, dependent coordinate
    _, logdet = ember.linalg.slogdet(jacobian)
    assert_same(transform.log_abs_det_jacobian(x, y).detach(), logdet.detach(),
                rtol=1e-10, atol=1e-12)


def test_cache_returns_the_original_input():
    t = et.ExpTransform(cache_size=1)
    x = ember.randn(3)
    y = t(x)
    assert t.inv(y) is x
    assert t(x) is y
    assert et.ExpTransform().inv(y) is not x
    with pytest.raises(ValueError):
        et.ExpTransform(cache_size=2)


def test_inverse_of_inverse_and_equality():
    t = et.ExpTransform()
    assert t.inv.inv is t
    assert t.inv == et.ExpTransform().inv
    assert et.AffineTransform(1.0, 2.0) == et.AffineTransform(1.0, 2.0)
    assert et.AffineTransform(1.0, 2.0) != et.AffineTransform(1.0, 3.0)
    assert et.ComposeTransform([t, t.inv]).inv.parts[0] == t
    assert et.identity_transform(ember.tensor([1.5])).item() == 1.5


def test_reshape_transform_rejects_mismatched_sizes():
    with pytest.raises(ValueError):
        et.ReshapeTransform((2, 3), (4,))
    with pytest.raises(ValueError):
        tt.ReshapeTransform((2, 3), (4,))


CONSTRAINTS = [
    ("real", lambda C: C.real, (3,)),
    ("positive", lambda C: C.positive, (3,)),
    ("nonnegative", lambda C: C.nonnegative, (3,)),
    ("greater_than", lambda C: C.greater_than(1.5), (3,)),
    ("less_than", lambda C: C.less_than(-1.0), (3,)),
    ("unit_interval", lambda C: C.unit_interval, (3,)),
    ("interval", lambda C: C.interval(-2.0, 5.0), (3,)),
    ("simplex", lambda C: C.simplex, (2, 3)),
    ("lower_cholesky", lambda C: C.lower_cholesky, (2, 3, 3)),
    ("positive_definite", lambda C: C.positive_definite, (2, 3, 3)),
    ("corr_cholesky", lambda C: C.corr_cholesky, (2, 3)),
    ("independent", lambda C: C.independent(C.positive, 1), (2, 3)),
    ("cat", lambda C: C.cat([C.positive, C.real], dim=0, lengths=[1, 2]), (3,)),
    ("stack", lambda C: C.stack([C.positive, C.unit_interval], dim=0), (2, 3)),
]


@pytest.mark.parametrize(("name", "build", "shape"), CONSTRAINTS,
                         ids=[c[0] for c in CONSTRAINTS])
@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_registries_map_reals_into_the_constraint_as_torch(registry, name, build, shape):
    ours_c, theirs_c = build(ec), build(td.constraints)
    try:
        theirs = getattr(td, registry)(theirs_c)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            getattr(ed, registry)(ours_c)
        return
    ours = getattr(ed, registry)(ours_c)
    x = _RNG.normal(size=shape)
    y, y_t = ours(ember.tensor(x.copy())), theirs(torch.tensor(x.copy()))
    assert_same(y, y_t, rtol=1e-10, atol=1e-10)
    assert bool(ours_c.check(y).all())
    assert_same(ours.log_abs_det_jacobian(ember.tensor(x.copy()), y) if ours.bijective
                else ember.zeros(()),
                theirs.log_abs_det_jacobian(torch.tensor(x.copy()), y_t) if theirs.bijective
                else torch.zeros(()), rtol=1e-9, atol=1e-9)


def test_registry_refuses_unknown_constraints():
    with pytest.raises(NotImplementedError):
        ed.biject_to(ec.boolean)
    with pytest.raises(TypeError):
        ed.biject_to.register(int, lambda c: None)


DISTRIBUTIONS = [
    ("affine_normal", lambda D, T, L: D.TransformedDistribution(
        D.Normal(L.tensor([0.5, -1.0], dtype=L.float64), L.tensor([1.0, 2.0], dtype=L.float64)),
        [T.AffineTransform(1.0, -2.0), T.ExpTransform()]), (3, 2)),
    ("tanh_normal", lambda D, T, L: D.TransformedDistribution(
        D.Normal(L.zeros(2, dtype=L.float64), L.ones(2, dtype=L.float64)), T.TanhTransform()),
     (3, 2)),
    ("stick_normal", lambda D, T, L: D.TransformedDistribution(
        D.Normal(L.zeros(2, 3, dtype=L.float64), L.ones(2, 3, dtype=L.float64)),
        [T.StickBreakingTransform()]), (3, 2, 4)),
    ("reshape_normal", lambda D, T, L: D.TransformedDistribution(
        D.Normal(L.zeros(6, dtype=L.float64), L.ones(6, dtype=L.float64)),
        [T.ReshapeTransform((6,), (2, 3))]), (3, 2, 3)),
]


@pytest.mark.parametrize(("name", "build", "shape"), DISTRIBUTIONS,
                         ids=[d[0] for d in DISTRIBUTIONS])
def test_transformed_distribution_matches_torch(name, build, shape):
    ours, theirs = build(ed, et, ember), build(td, tt, torch)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    torch.manual_seed(3)
    values = theirs.sample((3,))
    assert tuple(values.shape) == shape
    assert_same(ours.log_prob(ember.tensor(values.numpy().copy())), theirs.log_prob(values),
                rtol=1e-9, atol=1e-9)
    assert tuple(ours.rsample((3,)).shape) == shape
    assert repr(ours.support) == repr(theirs.support)
    if not ours.event_shape:
        assert_same(ours.cdf(ember.tensor(values.numpy().copy())), theirs.cdf(values))
        probs = np.full((3, *theirs.batch_shape), 0.3)
        assert_same(ours.icdf(ember.tensor(probs)), theirs.icdf(torch.tensor(probs)),
                    rtol=1e-9, atol=1e-9)
    bigger = (4, *theirs.batch_shape)
    assert tuple(ours.expand(bigger).sample().shape) == tuple(theirs.expand(bigger)
                                                              .sample().shape)


def test_transformed_distribution_log_prob_on_its_rsample_is_differentiable():
    loc = ember.tensor([0.3, -0.2], dtype=ember.float64, requires_grad=True)
    d = ed.TransformedDistribution(ed.Normal(loc, 1.0), [et.ExpTransform(cache_size=1)])
    x = d.rsample((5,))
    log_prob = d.log_prob(x)
    (grad,) = ember.autograd.grad(log_prob.sum(), [loc])
    # log p(exp z) = log N(z; loc, 1) - z with z = loc + eps: d/dloc = -1 per sample
    np.testing.assert_allclose(to_numpy(grad), [-5.0, -5.0], rtol=1e-10)


def test_transformed_distribution_rejects_non_transforms():
    with pytest.raises(ValueError):
        ed.TransformedDistribution(ed.Normal(0.0, 1.0), [lambda x: x])
    with pytest.raises(ValueError):
        ed.TransformedDistribution(ed.Normal(0.0, 1.0), "exp")
