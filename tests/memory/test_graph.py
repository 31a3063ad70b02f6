"""Graph retention: a kept ``loss`` keeps its graph's saved tensors, and live_tensors says so."""

from __future__ import annotations

import ember
from ember import memory


def step(w, keep: list, item: bool):
    x = ember.randn(128, 128)  # a fresh activation each step, saved by mul for w's gradient
    loss = (w * x).sum()
    keep.append(loss.item() if item else loss)


def grows(fresh, item: bool = False, grad: bool = True) -> list[int]:
    w = ember.randn(128, 128, requires_grad=True)
    keep, seen = [], []
    with ember.set_grad_enabled(grad):
        for _ in range(4):
            step(w, keep, item)
            seen.append(memory.memory_allocated())
    return seen, keep, w


def test_keeping_loss_grows_memory_every_step_and_is_attributed_to_saved_tensors(fresh):
    memory.record_history(True)
    seen, keep, w = grows(fresh)
    assert all(b > a for a, b in zip(seen, seen[1:])), seen
    assert seen[1] - seen[0] >= 128 * 128 * 4  # one activation per step
    live = memory.live_tensors(limit=None)
    saved = [t for t in live if t.saved]
    assert len(saved) == 4
    assert all(t.shape == (128, 128) and t.op == "randn.default" for t in saved)
    assert all("test_graph.py" in t.source and "in step" in t.source for t in saved)
    held = [t for t in live if not t.saved and t.shape == (128, 128)]
    assert len(held) == 1  # w itself, held by this test
    keep.clear()  # dropping the losses frees their graphs
    assert memory.memory_allocated() == seen[0] - 128 * 128 * 4 - 512


def test_item_keeps_memory_flat(fresh):
    seen, _, _ = grows(fresh, item=True)
    assert len(set(seen)) == 1, seen
    assert not any(t.saved for t in memory.live_tensors())


def test_no_grad_keeps_memory_flat(fresh):
    seen, _, _ = grows(fresh, grad=False)
    # only the 0-d losses (512-byte blocks) accumulate
    assert [b - a for a, b in zip(seen, seen[1:])] == [512, 512, 512]


def test_forward_under_no_grad_allocates_less(fresh):
    w1 = ember.randn(256, 256, requires_grad=True)
    w2 = ember.randn(256, 256, requires_grad=True)
    x = ember.randn(64, 256)

    def forward():
        return ((x @ w1).relu() @ w2).tanh().sum()

    base = memory.memory_allocated()
    with ember.no_grad():
        out = forward()
    plain = memory.memory_allocated() - base
    del out
    out = forward()
    with_grad = memory.memory_allocated() - base
    assert with_grad >= plain + 2 * 64 * 256 * 4  # saved: relu and tanh outputs
    out.backward()
    del out
    assert memory.memory_allocated() - base == 2 * 256 * 256 * 4  # the two .grad tensors
