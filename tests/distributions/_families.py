"""A family case run in both libraries: the same float64 parameters build an ember and a torch
distribution, and every statistic, ``log_prob`` (values and parameter gradients with a random
cotangent), ``cdf``, ``enumerate_support`` and ``expand`` are compared.

Tolerance: these are a few dozen flops over lgamma/digamma/log1p of moderate arguments, so
``RTOL``/``ATOL`` (1e4 ulps of float64) bound the rounding; entropies that sum a support of a
few dozen terms are inside the same bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

import ember
from tests.distributions._compare import ATOL, RTOL, assert_same, to_numpy

STATS = ("mean", "mode", "variance", "stddev")


@dataclass
class Family:
    name: str
    cls: str  # class name in both libraries' distributions modules
    params: dict  # keyword -> NumPy array (float64) or a Python number
    values: np.ndarray | None = None  # points in the support for log_prob (None: torch samples)
    grad: tuple = ()  # parameters whose log_prob gradients are compared
    cdf: bool = False
    enumerate: bool = False
    kwargs: dict = field(default_factory=dict)  # non-tensor keywords (total_count=int)

    @property
    def id(self):
        return self.name


def build(family: Family, requires_grad: bool = False):
    """(ember distribution, torch distribution, ember leaves, torch leaves)."""
    e_kw, t_kw, e_leaves, t_leaves = dict(family.kwargs), dict(family.kwargs), {}, {}
    for key, value in family.params.items():
        if isinstance(value, np.ndarray):
            e = ember.tensor(value.copy())
            t = torch.tensor(value.copy())
            if requires_grad and key in family.grad:
                e.requires_grad_(True)
                t.requires_grad_(True)
                e_leaves[key], t_leaves[key] = e, t
            e_kw[key], t_kw[key] = e, t
        else:
            e_kw[key] = t_kw[key] = value
    ours = getattr(ember.distributions, family.cls)(**e_kw)
    theirs = getattr(torch.distributions, family.cls)(**t_kw)
    return ours, theirs, e_leaves, t_leaves


def outcome(fn):
    try:
        return fn(), None
    except Exception as exc:  # noqa: BLE001  (the exception type is compared)
        return None, exc


# float32 parameters (Python numbers become default-dtype tensors): 100 float32 ulps
TOL32 = 100 * float(np.finfo(np.float32).eps)


def assert_same_outcome(ours_fn, theirs_fn):
    """Both raise the same builtin type, or both return equal values."""
    theirs, t_exc = outcome(theirs_fn)
    if t_exc is not None:
        with pytest.raises(type(t_exc)):
            ours_fn()
        return
    ours = ours_fn()
    tol = TOL32 if theirs.dtype == torch.float32 else RTOL
    assert_same(ours, theirs, tol, tol)


def support_values(family: Family, theirs):
    if family.values is not None:
        return family.values
    torch.manual_seed(0)
    return theirs.sample((4,)).numpy()


def check_statistics(family: Family):
    ours, theirs, _, _ = build(family)
    assert tuple(ours.batch_shape) == tuple(theirs.batch_shape)
    assert tuple(ours.event_shape) == tuple(theirs.event_shape)
    for stat in STATS:
        assert_same_outcome(lambda s=stat: getattr(ours, s), lambda s=stat: getattr(theirs, s))
    assert_same_outcome(ours.entropy, theirs.entropy)
    assert_same_outcome(ours.perplexity, theirs.perplexity)


def check_log_prob(family: Family):
    ours, theirs, e_leaves, t_leaves = build(family, requires_grad=True)
    values = support_values(family, theirs)
    e_lp = ours.log_prob(ember.tensor(values))
    t_lp = theirs.log_prob(torch.tensor(values))
    assert_same(e_lp, t_lp)
    if family.grad:
        cot = np.random.default_rng(0).standard_normal(tuple(t_lp.shape))
        e_grads = ember.autograd.grad((e_lp * ember.tensor(cot)).sum(), list(e_leaves.values()))
        t_grads = torch.autograd.grad((t_lp * torch.tensor(cot)).sum(), list(t_leaves.values()))
        for key, e_g, t_g in zip(e_leaves, e_grads, t_grads):
            np.testing.assert_allclose(to_numpy(e_g), to_numpy(t_g), rtol=RTOL, atol=ATOL,
                                       err_msg=key)
    if family.cdf:
        assert_same(ours.cdf(ember.tensor(values)), theirs.cdf(torch.tensor(values)))


def check_enumerate_and_expand(family: Family):
    ours, theirs, _, _ = build(family)
    if family.enumerate:
        for expand in (True, False):
            assert_same_outcome(lambda e=expand: ours.enumerate_support(e),
                                lambda e=expand: theirs.enumerate_support(e))
    shape = (2,) + tuple(theirs.batch_shape)
    e_big, t_big = ours.expand(shape), theirs.expand(shape)
    assert type(e_big).__name__ == type(t_big).__name__
    assert tuple(e_big.batch_shape) == tuple(t_big.batch_shape)
    values = support_values(family, theirs)[:1]
    assert_same(e_big.log_prob(ember.tensor(values)), t_big.log_prob(torch.tensor(values)))
    assert_same(e_big.mean, t_big.mean)
    sample = e_big.sample((3,))
    assert tuple(sample.shape) == tuple(t_big.sample((3,)).shape)
    assert bool(e_big.support.check(sample).all())
