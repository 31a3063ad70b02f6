"""Gradients of every differentiable op-table entry against torch, and gradcheck.

For each entry that lists float64, every sample is run with its floating tensor inputs
requiring grad in both libraries; where torch's result is differentiable, ember's must be
too, and ``autograd.grad`` with the same random cotangent must agree (None on one side is
accepted only against zeros on the other). A few small samples per op also pass gradcheck.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from tests.opinfo import to_torch
from tests.ops.test_ops import OP_DB

# float64 samples of every entry listing it; complex128 samples of those listing it, whose
# gradients follow torch's convention (conjugate Wirtinger derivatives of a real loss)
GRAD_CASES = [pytest.param(info, d, id=info.name if d == "float64" else f"{info.name}-{d}")
              for d in ("float64", "complex128") for info in OP_DB
              if d in info.dtypes and getattr(info, "grad", True)]


def _leaves(args):
    """Mark floating ember tensors among ``args`` as requiring grad (copies of non-leaves)."""
    out, leaves = [], []
    for a in args:
        if isinstance(a, ember.Tensor) and a.dtype.is_differentiable:
            a = a.detach().requires_grad_(True)
            leaves.append(a)
        elif isinstance(a, list) and a and all(isinstance(t, ember.Tensor) for t in a):
            new = [t.detach().requires_grad_(True) if t.dtype.is_differentiable else t
                   for t in a]
            leaves += [t for t in new if t.requires_grad]
            a = new
        out.append(a)
    return tuple(out), leaves


def _tensors(x):
    if isinstance(x, ember.Tensor | torch.Tensor):
        return [x]
    if isinstance(x, tuple | list):
        return [t for v in x for t in _tensors(v)]
    return []


def _compare_sample(info, sample):
    args, e_leaves = _leaves(sample.args)
    if not e_leaves:
        return False
    t_args, t_kwargs = to_torch((args, sample.kwargs))
    t_leaves = [t for t in _tensors(t_args) if t.requires_grad]
    try:
        t_out = info.fn(torch, *t_args, **t_kwargs)
    except Exception:
        return False
    t_outs = [o for o in _tensors(t_out) if o.requires_grad]
    e_out = info.fn(ember, *args, **sample.kwargs)
    flags = [o.requires_grad for o in _tensors(e_out)]
    assert flags == [o.requires_grad for o in _tensors(t_out)], \
        f"{sample!r}: requires_grad of outputs {flags} differ from torch's"
    if not t_outs:
        return False
    e_outs = [o for o in _tensors(e_out) if o.dtype.is_differentiable]
    e_outs = [o for o, t in zip(e_outs, [o for o in _tensors(t_out)
                                         if o.dtype.is_floating_point or o.dtype.is_complex])
              if t.requires_grad]
    assert all(o.requires_grad for o in e_outs), f"{sample!r}: ember output does not require grad"
    rng = np.random.default_rng(0)
    cot = [rng.standard_normal(tuple(o.shape)) + (
        1j * rng.standard_normal(tuple(o.shape)) if o.is_complex() else 0) for o in t_outs]
    e_cot = [ember.tensor(c, dtype=o.dtype) for c, o in zip(cot, e_outs)]
    try:
        t_grads = torch.autograd.grad(t_outs, t_leaves, [torch.tensor(c, dtype=o.dtype)
                                                         for c, o in zip(cot, t_outs)],
                                      allow_unused=True)
    except RuntimeError:  # torch has no formula: ember's backward must refuse too
        with pytest.raises(RuntimeError):
            ember.autograd.grad(e_outs, e_leaves, e_cot, allow_unused=True)
        return False
    e_grads = ember.autograd.grad(e_outs, e_leaves, e_cot, allow_unused=True)
    for i, (eg, tg) in enumerate(zip(e_grads, t_grads)):
        if tg is None or eg is None:
            other = eg if tg is None else tg
            assert other is None or not np.any(np.asarray(other.detach().resolve_conj()
                                                          .resolve_neg().numpy())), \
                f"{sample!r}: grad {i} is None on one side and nonzero on the other"
            continue
        assert tuple(eg.shape) == tuple(tg.shape), f"{sample!r}: grad {i} shape"
        np.testing.assert_allclose(eg.detach().resolve_conj().resolve_neg().numpy(),
                                   tg.detach().resolve_conj().resolve_neg().numpy(), rtol=1e-6,
                                   atol=1e-8, err_msg=f"{sample!r}: grad {i}")
    return True


@pytest.mark.parametrize("info,dtype", GRAD_CASES)
def test_gradients_match_torch(info, dtype):
    """Differentiable samples agree with torch; the others are non-differentiable in both."""
    for s in info.samples(dtype):
        _compare_sample(info, s)


def _size(sample) -> int:
    ts = [a for a in sample.args if isinstance(a, ember.Tensor)]
    return sum(t.numel() for t in ts) if ts and any(t.numel() for t in ts) else 10**9


# Random ops (values not compared) redraw on every call: finite differences are meaningless.
DIFFERENTIABLE = [c for c in GRAD_CASES if getattr(c.values[0], "gradcheck", True)
                  and c.values[0].compare_values]


@pytest.mark.parametrize("info,dtype", DIFFERENTIABLE)
def test_gradcheck(info, dtype):
    """float64 (complex128) finite differences agree with the analytical gradient on the
    smallest samples (complex inputs and outputs as pairs of real ones, as torch)."""
    checked = 0
    for sample in sorted(info.samples(dtype), key=_size)[:6]:
        if checked >= 2 or _size(sample) > 200:
            continue
        args, leaves = _leaves(sample.args)
        if not leaves:
            continue
        t_args, t_kwargs = to_torch((args, sample.kwargs))
        try:
            t_out = info.fn(torch, *t_args, **t_kwargs)
        except Exception:
            continue
        if not any(o.requires_grad for o in _tensors(t_out)):
            continue
        if any(not torch.isfinite(o).all() for o in _tensors(t_out)
               if o.is_floating_point() or o.is_complex()):
            continue  # finite differences of a non-finite output (logdet < 0) mean nothing

        def f(*xs, _args=args, _leaves=leaves, _kw=sample.kwargs):
            it = iter(xs)
            rebuilt = [next(it) if any(a is l for l in _leaves) else a for a in _args]
            return info.fn(ember, *rebuilt, **_kw)

        assert ember.autograd.gradcheck(f, tuple(leaves), atol=1e-5, rtol=1e-3), sample
        checked += 1
