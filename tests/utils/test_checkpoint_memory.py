"""Checkpointing measured by ember's caching allocator: peak memory of checkpoint_sequential
against a bound from shapes, and the planner's budget and prediction."""

from __future__ import annotations

import gc

import pytest

import ember
import ember.nn as nn
from ember import memory
from ember.utils.checkpoint import (
    CheckpointPlan,
    apply_plan,
    checkpoint_modules,
    checkpoint_sequential,
    plan,
    remove_plan,
)

B, D = 4096, 64          # one activation: 4096 x 64 float32 = 1 MiB (weights are 16 KiB)
ACT = B * D * 4


def mlp(n: int, inner: int = 1):
    """n blocks of (Linear, ReLU) x inner; each ReLU saves its 1 MiB output."""
    blocks = [nn.Sequential(*[nn.Linear(D, D) if k % 2 == 0 else nn.ReLU()
                              for k in range(2 * inner)]) for _ in range(n)]
    return nn.Sequential(*blocks)


def backward_peak(model, x, run) -> int:
    """Peak of allocated bytes during backward (absolute), from a fresh step."""
    model.zero_grad()
    x.grad = None
    gc.collect()
    loss = run(model, x).sum()
    memory.reset_peak_memory_stats()
    loss.backward()
    return memory.max_memory_allocated()


@pytest.mark.parametrize("reentrant", [False, True])
def test_checkpoint_sequential_cuts_the_backward_peak_by_the_expected_bytes(reentrant):
    ember.manual_seed(0)
    n, segments = 16, 4
    model = mlp(n)
    x = ember.randn(B, D, requires_grad=True)
    plain = backward_peak(model, x, lambda m, t: m(t))
    ckpt = backward_peak(model, x, lambda m, t: checkpoint_sequential(
        m, segments, t, use_reentrant=reentrant))
    # Plain backward starts with all n ReLU outputs alive. A checkpointed segment of `size`
    # blocks keeps only its output (the next segment's input) instead of `size` outputs, and
    # recomputing one segment in backward never needs more than what the plain run freed.
    # The reentrant form's nested backward also holds the segment's output gradient until it
    # returns: one activation more at its peak.
    size = n // segments
    expected = ((segments - 1) * (size - 1) - reentrant) * ACT
    saved = plain - ckpt
    print(f"plain {plain}  checkpointed {ckpt}  saved {saved / ACT:.2f} MiB  expected "
          f"{expected / ACT:.0f} MiB")
    assert abs(saved - expected) <= 0.1 * expected, (plain, ckpt, saved, expected)


def test_checkpointed_forward_keeps_only_segment_boundaries():
    ember.manual_seed(0)
    model = mlp(8)
    x = ember.randn(B, D, requires_grad=True)
    gc.collect()
    before = memory.memory_allocated()
    out = checkpoint_sequential(model, 4, x, use_reentrant=False)
    kept = memory.memory_allocated() - before
    # 3 checkpointed segments of 2 blocks keep their outputs; the last segment keeps its 2
    # ReLU outputs (the second is `out` itself)
    assert kept == 5 * ACT
    del out


def measured_step_peak(model, x) -> int:
    """Peak above the step's start over forward and backward, gradients starting as None."""
    model.zero_grad()
    gc.collect()
    base = memory.memory_allocated()
    memory.reset_peak_memory_stats()
    model(x).sum().backward()
    return memory.max_memory_allocated() - base


@pytest.mark.parametrize("fraction", [0.75, 0.55])
def test_planner_meets_budget_and_predicts_the_peak(fraction):
    ember.manual_seed(0)
    model = mlp(10, inner=3)   # three ReLU outputs kept per block, one when checkpointed
    x = ember.randn(B, D)
    p0 = plan(model, x, 1 << 40)
    assert p0.checkpointed == () and p0.predicted_peak == p0.plain_peak
    assert abs(measured_step_peak(model, x) - p0.plain_peak) <= 0.1 * p0.plain_peak
    budget = int(fraction * p0.plain_peak)
    p = plan(model, x, budget)
    assert isinstance(p, CheckpointPlan) and p.checkpointed
    assert p.predicted_peak <= budget and p.plain_peak == p0.plain_peak
    apply_plan(model, p)
    try:
        got = measured_step_peak(model, x)
    finally:
        remove_plan(model)
    assert got <= budget
    assert abs(got - p.predicted_peak) <= 0.1 * p.predicted_peak, (got, p.predicted_peak)
    assert p.recompute_seconds > 0


def test_planner_leaves_state_alone_and_checks_budget():
    ember.manual_seed(0)
    model = nn.Sequential(nn.Sequential(nn.Linear(D, D), nn.BatchNorm1d(D), nn.Dropout(0.5)),
                          nn.Sequential(nn.Linear(D, D), nn.ReLU()))
    x = ember.randn(256, D)
    model(x).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    stats = [b.clone() for b in model.buffers()]
    rng = ember.get_rng_state()
    p = plan(model, x, 1 << 40)
    assert all(bool((a == b).all()) for a, b in zip(grads, [q.grad for q in model.parameters()]))
    assert all(bool((a == b).all()) for a, b in zip(stats, model.buffers()))
    assert bool((rng == ember.get_rng_state()).all())
    assert len(p.profiles) == 2
    with pytest.raises(ValueError, match="below the smallest achievable peak"):
        plan(model, x, 1024)


def test_apply_plan_wraps_forward_in_place():
    ember.manual_seed(0)
    model = mlp(4, inner=2)
    x = ember.randn(64, D, requires_grad=True)
    keys = list(model.state_dict())
    p = plan(model, x, 1 << 40)
    p = CheckpointPlan((0, 2), p.predicted_peak, p.plain_peak, p.memory_budget, 0.0,
                       p.profiles, p.head_peak, p.blocks)
    model(x).sum().backward()
    ref = [q.grad.clone() for q in model.parameters()]
    apply_plan(model, p)
    assert list(model.state_dict()) == keys
    calls = []
    inner = model[0].forward.forward
    model[0].forward.forward = lambda t: calls.append(1) or inner(t)
    model.zero_grad()
    model(x).sum().backward()
    assert len(calls) == 2  # forward, then the recomputation
    assert all(bool((a == q.grad).all()) for a, q in zip(ref, model.parameters()))
    remove_plan(model)
    assert "forward" not in vars(model[0])
    with pytest.raises(ValueError, match="not part of the model"):
        apply_plan(mlp(4), p)


def test_checkpoint_modules_wraps_every_module():
    ember.manual_seed(0)
    model = mlp(3)
    x = ember.randn(32, D)
    model(x).sum().backward()
    ref = [q.grad.clone() for q in model.parameters()]
    model.zero_grad()
    checkpoint_modules(list(model.children()))
    gc.collect()
    before = memory.memory_allocated()
    out = model(x)
    assert memory.memory_allocated() - before == 3 * memory.round_size(32 * D * 4)  # outputs
    out.sum().backward()
    assert all(bool((a == q.grad).all()) for a, q in zip(ref, model.parameters()))
    with ember.no_grad():
        assert not model(x).requires_grad
    remove_plan(model)
    assert all("forward" not in vars(b) for b in model.children())
    with pytest.raises(TypeError, match="expected a module with a forward method"):
        checkpoint_modules([lambda t: t])
