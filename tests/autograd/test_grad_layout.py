"""The layout contract for leaf gradients (NOTE [Stealing gradients] in engine.py, NOTE [mm
gradient layout] in ember/ops/linalg.py), and the engine's two per-node steps on the same
graphs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import ember
from ember.dispatch.modes import DispatchMode

_COPIES = {"copy_", "clone", "contiguous", "_to_copy", "empty_strided"}


class _CopyCounter(DispatchMode):
    """Records copy-like kernel calls on tensors of at least ``min_numel`` elements."""

    def __init__(self, min_numel: int):
        self.min_numel = min_numel
        self.copies: list[tuple[str, tuple]] = []

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.name in _COPIES:
            sizes = [a.numel() for a in args if isinstance(a, ember.Tensor)]
            if isinstance(out, ember.Tensor):
                sizes.append(out.numel())
            if max(sizes, default=0) >= self.min_numel:
                self.copies.append((func.short_name, tuple(out.shape)))
        return out


def _mlp(lib, sizes=(784, 512, 512, 10)):
    layers = []
    for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(lib.nn.Linear(a, b))
        if i < len(sizes) - 2:
            layers.append(lib.nn.ReLU())
    return lib.nn.Sequential(*layers)


def _step(lib, model, opt, x, y):
    loss = lib.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_mlp_training_step_makes_no_large_copies(momentum):
    ember.manual_seed(0)
    model = _mlp(ember, (64, 48, 48, 10))
    opt = ember.optim.SGD(model.parameters(), lr=0.01, momentum=momentum)
    x, y = ember.randn(32, 64), ember.randint(0, 10, (32,))
    _step(ember, model, opt, x, y)  # momentum buffers are made in the first step
    with _CopyCounter(min_numel=256) as counter:
        _step(ember, model, opt, x, y)
    assert counter.copies == []


def test_linear_weight_gradients_are_adopted_contiguous_and_match_torch():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 12)).astype(np.float32)
    y = rng.integers(0, 5, 16)
    grads = {}
    for lib in (ember, torch):
        lib.manual_seed(0)
        model = _mlp(lib, (12, 8, 8, 5))
        if lib is ember:
            e_model = model
        else:  # same weights
            with torch.no_grad():
                for (_, tp), (_, ep) in zip(model.named_parameters(),
                                            e_model.named_parameters()):
                    tp.copy_(torch.from_numpy(ep.detach().numpy().copy()))
        loss = lib.nn.functional.cross_entropy(model(lib.tensor(x)), lib.tensor(y))
        loss.backward()
        grads[lib] = [(n, p.grad) for n, p in model.named_parameters()]
    for (name, eg), (_, tg) in zip(grads[ember], grads[torch]):
        assert eg.stride() == tg.stride() and eg.is_contiguous(), name
        assert eg._base is None, name
        t = tg.numpy()
        np.testing.assert_allclose(eg.numpy(), t, rtol=1e-4, atol=1e-5 * np.abs(t).max())


@pytest.mark.parametrize("op", ["mul", "exp", "mm_right", "mm_left", "linear", "addmm"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "expanded"])
def test_leaf_gradient_layout_matches_torch(op, layout):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((4, 3) if layout != "expanded" else (3, 1)).astype(np.float32)
    other = rng.standard_normal((2, 3)).astype(np.float32)

    def run(lib):
        b = lib.tensor(base)
        leaf = {"contiguous": lambda: b.t().contiguous(), "transposed": lambda: b.t(),
                "expanded": lambda: b.expand(3, 4)}[layout]().detach().requires_grad_()
        o = lib.tensor(other)
        out = {"mul": lambda: leaf * 2.0, "exp": lambda: leaf.exp(),
               "mm_right": lambda: o.mm(leaf), "mm_left": lambda: leaf.t().mm(o.t()),
               "linear": lambda: lib.nn.functional.linear(o, leaf.t()),
               "addmm": lambda: lib.addmm(lib.ones(4), o, leaf)}[op]()
        (out * out).sum().backward()
        return leaf.grad

    e, t = run(ember), run(torch)
    assert e.stride() == t.stride()
    np.testing.assert_allclose(e.numpy(), t.numpy(), rtol=1e-5, atol=1e-5)


def test_gradient_kept_by_a_hook_is_not_adopted():
    def run(lib):
        w = lib.ones(3, requires_grad=True)
        kept = []
        w.register_hook(lambda g: kept.append(g))
        (w * 2).sum().backward()
        (w * 3).sum().backward()  # accumulates in place into w.grad
        return kept[0].tolist(), w.grad.tolist()
    assert run(ember) == run(torch)


def _root_gradient_run(lib, how):
    w = lib.zeros(3, 4, requires_grad=True)
    g = lib.ones(4, 3) if how == "transposed" else lib.ones(3, 4)
    out = {"leaf": lambda: w, "transposed": lambda: w.t(), "viewed": lambda: w.view(12)}[how]()
    out.backward(g.view(12) if how == "viewed" else g)
    g.add_(1)
    return w.grad.tolist()


@pytest.mark.parametrize("how", ["leaf", "transposed"])
def test_root_gradient_is_not_adopted(how):
    assert _root_gradient_run(ember, how) == _root_gradient_run(torch, how) == [[1.0] * 4] * 3


def test_view_of_root_gradient_is_not_adopted():
    # torch adopts ``g.view(12).view(3, 4)`` (its TensorImpl has one use), so its w.grad
    # shares the caller's ``g``; ember also counts the holders of the view's base
    assert _root_gradient_run(ember, "viewed") == [[1.0] * 4] * 3


def test_one_gradient_reaching_two_leaves_gives_each_its_own_memory():
    a = ember.zeros(3, requires_grad=True)
    b = ember.zeros(3, requires_grad=True)
    (a + b).sum().backward()
    assert a.grad.data_ptr() != b.grad.data_ptr()
    a.grad.add_(1)
    assert b.grad.tolist() == [1.0, 1.0, 1.0]


def test_view_gradients_sharing_a_base_are_copied():
    # cat's backward hands each leaf a slice of one gradient
    ps = [ember.zeros(4, requires_grad=True) for _ in range(3)]
    (ember.cat(ps) * ember.arange(12.0)).sum().backward()
    ptrs = {p.grad.data_ptr() for p in ps}
    assert len(ptrs) == 3
    ps[0].grad.add_(100)
    assert ps[1].grad.tolist() == [4.0, 5.0, 6.0, 7.0]


# -- the engine's two per-node steps ---------------------------------------------------------
def _graphs():
    def mlp(lib, xs):
        x, w1, w2 = xs
        return (lib.tanh(x @ w1).relu() @ w2).log_softmax(1).sum()

    def shared(lib, xs):
        x, w1, _ = xs
        h = x @ w1
        return (h * h).sum() + h.exp().mean() + (h[:, :2] * 3).sum()

    def multi_output(lib, xs):
        x, w1, _ = xs
        a, b = (x @ w1).split(2, dim=1)
        return (a * b.sum(1, keepdim=True)).sum() + lib.stack([a, a]).max()

    def in_place(lib, xs):
        x, w1, _ = xs
        h = x @ w1
        h.mul_(2).add_(1)
        h[:, 0] = h[:, 1] * 3
        return h.sum()

    return {"mlp": mlp, "shared": shared, "multi_output": multi_output, "in_place": in_place}


def _leaves(lib):
    rng = np.random.default_rng(2)
    shapes = ((5, 4), (4, 4), (4, 3))
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True)
            for s in shapes]


def _every_node(root):
    seen, stack, out = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        out.append(node)
        stack.extend(n for n, _ in node.next_functions)
    return out


@pytest.mark.parametrize("graph", list(_graphs()))
@pytest.mark.parametrize("path", ["hooked", "anomaly"])
def test_general_and_hot_steps_give_the_same_gradients(graph, path):
    fn = _graphs()[graph]
    hot = _leaves(ember)
    fn(ember, hot).backward()
    general = _leaves(ember)
    out = fn(ember, general)
    calls = []
    if path == "hooked":  # a node pre-hook sends every node through the general step
        for node in _every_node(out.grad_fn):
            if not isinstance(node, ember.autograd.graph.AccumulateGrad):
                node.register_prehook(lambda grads: calls.append(1))
        out.backward()
        assert calls
    else:
        with ember.autograd.detect_anomaly():
            out.backward()
    expected = _leaves(torch)
    fn(torch, expected).backward()
    for h, g, t in zip(hot, general, expected):
        if t.grad is None:
            assert h.grad is None and g.grad is None
            continue
        np.testing.assert_array_equal(h.grad.numpy(), g.grad.numpy())
        np.testing.assert_allclose(h.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-4)
