"""Training through compiled regions (ember.compiler.aot) against eager ember.

Compiled forward + backward must train like eager: the same losses step after step (bit for
bit on the NumPy backend, which runs the same roundings as eager's kernels; within 1e-5
relative on the C backend, whose fused kernels reassociate), the same dropout masks (compiled
random ops draw from eager's Philox stream), the same BatchNorm running statistics, gradients
flowing across graph breaks, custom autograd.Functions inlined.
"""

from __future__ import annotations

import shutil

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.compiler import aot, explain
from ember.examples.gpt import GPT, GPTConfig

needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
BACKENDS = ["numpy", pytest.param("c", marks=needs_gcc)]


def _region_node(t):
    """The CompiledFunction node behind ``t`` (through plain eager nodes after the region)."""
    seen, stack = set(), [t.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if type(node).__name__ == "CompiledFunctionBackward":
            return node
        stack += [n for n, _ in node.next_functions]
    return None


def _mlp():
    return nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 32),
                         nn.GELU(approximate="tanh"), nn.Dropout(0.1), nn.Linear(32, 5))


def _gpt():
    return GPT(GPTConfig(vocab_size=17, block_size=16, n_layer=2, n_head=2, n_embd=16,
                         dropout=0.1))


def _train(kind, backend, steps=20):
    """Losses of ``steps`` AdamW steps, eager (backend None) or compiled."""
    ember.manual_seed(0)
    model = _mlp() if kind == "mlp" else _gpt()
    model.train()
    opt = ember.optim.AdamW(model.parameters(), lr=1e-2)
    if kind == "mlp":
        def step(x, y):
            return F.cross_entropy(model(x), y)
    else:
        def step(x, y):
            return model(x, y)[1]
    if backend is not None:
        step = ember.compile(step, backend=backend)
    ember.manual_seed(1234)
    losses, nodes = [], 0
    for i in range(steps):
        g = ember.Generator().manual_seed(100 + i)
        if kind == "mlp":
            x, y = ember.randn(8, 20, generator=g), ember.randint(0, 5, (8,), generator=g)
        else:
            x = ember.randint(0, 17, (4, 16), generator=g)
            y = ember.randint(0, 17, (4, 16), generator=g)
        loss = step(x, y)
        nodes += _region_node(loss) is not None
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    return losses, nodes, ember.default_generator.get_offset()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["mlp", "gpt"])
def test_training_steps_match_eager(kind, backend):
    want, _, want_offset = _train(kind, None)
    got, nodes, got_offset = _train(kind, backend)
    assert nodes == len(got)  # every step ran through one compiled training region
    assert got_offset == want_offset  # the same random numbers were drawn
    if backend == "numpy":
        assert got == want
    else:
        for g, w in zip(got, want):
            assert abs(g - w) <= 1e-5 * abs(w)


@pytest.mark.parametrize("backend", BACKENDS)
def test_dropout_masks_bit_identical(backend):
    x = ember.randn(64, 33)
    w = ember.randn(33, 33, requires_grad=True)

    def f(x, w):
        return F.dropout((x @ w).relu(), 0.5, training=True) * 3

    ember.manual_seed(7)
    want = f(x, w)
    want.sum().backward()
    gw = w.grad.clone()
    w.grad = None
    cf = ember.compile(f, backend=backend)
    ember.manual_seed(7)
    got = cf(x, w)
    assert _region_node(got) is not None
    got.sum().backward()
    assert ember.equal(got == 0, want == 0)  # the masks
    if backend == "numpy":
        assert ember.equal(got, want) and ember.equal(w.grad, gw)
    else:
        ember.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
        ember.testing.assert_close(w.grad, gw, rtol=1e-5, atol=1e-5)
    # the next draw continues the stream where eager's would
    ember.manual_seed(7)
    f(x, w)
    after_eager = ember.rand(3)
    ember.manual_seed(7)
    cf(x, w)
    assert ember.equal(ember.rand(3), after_eager)


def test_batchnorm_running_stats_and_grads_equal_eager():
    def make():
        ember.manual_seed(0)
        return nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))

    eager, comp = make(), make()
    compiled = ember.compile(comp, backend="numpy")
    for i in range(3):
        x = ember.randn(5, 4, generator=ember.Generator().manual_seed(i))
        a = eager(x).square().sum()
        b = compiled(x)
        assert _region_node(b) is not None
        b = b.square().sum()
        a.backward()
        b.backward()
        assert a.item() == b.item()
    bn_e, bn_c = eager[1], comp[1]
    assert ember.equal(bn_e.running_mean, bn_c.running_mean)
    assert ember.equal(bn_e.running_var, bn_c.running_var)
    assert bn_c.num_batches_tracked.item() == 3
    for p, q in zip(eager.parameters(), comp.parameters()):
        assert ember.equal(p.grad, q.grad)


def test_gradients_flow_across_graph_breaks():
    w = ember.randn(3, requires_grad=True)
    x = ember.randn(3, requires_grad=True)

    def f(x):
        y = (x * w).sin()
        print("break")
        return (y * 2).exp().sum()

    cf = ember.compile(f, backend="numpy")
    loss = cf(x)
    second = _region_node(loss)
    assert second is not None
    assert type(second.next_functions[0][0]).__name__ == "CompiledFunctionBackward"
    loss.backward()
    got = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    f(x).backward()
    assert ember.equal(got[0], x.grad) and ember.equal(got[1], w.grad)
    assert explain(f)(x).graph_break_count == 1


class _Square(ember.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 2 * a * g


class _OpaqueBackward(ember.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * 3

    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * float(a.sum().item() * 0 + 3)  # reads data: not traceable


class _OpaqueForward(ember.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * a.sum().item()

    @staticmethod
    def backward(ctx, g):
        return g


def test_custom_function_inlined_when_traceable():
    x = ember.randn(5, requires_grad=True)

    def f(x):
        return _Square.apply(x.sin()).sum()

    info = explain(f)(x)
    assert info.graph_count == 1 and info.graph_break_count == 0
    loss = ember.compile(f, backend="numpy")(x)
    assert _region_node(loss) is not None
    loss.backward()
    got = x.grad.clone()
    x.grad = None
    f(x).backward()
    assert ember.equal(got, x.grad)


def test_custom_function_untraceable_backward_runs_eagerly():
    x = ember.randn(5, requires_grad=True)

    def f(x):
        return _OpaqueBackward.apply(x.cos()).sum()

    loss = ember.compile(f, backend="numpy")(x)
    assert _region_node(loss) is None  # the region runs op by op under autograd
    loss.backward()
    got = x.grad.clone()
    x.grad = None
    f(x).backward()
    assert ember.equal(got, x.grad)


def test_custom_function_untraceable_forward_breaks():
    x = ember.randn(5, requires_grad=True)

    def f(x):
        return _OpaqueForward.apply(x.exp()).sum()

    assert explain(f)(x).graph_break_count >= 1
    loss = ember.compile(f, backend="numpy")(x)
    loss.backward()
    got = x.grad.clone()
    x.grad = None
    f(x).backward()
    assert ember.equal(got, x.grad)


def test_requires_grad_and_grad_mode_are_guarded():
    cnt = []

    def counting(gm, example_inputs):
        cnt.append(1)
        return gm.forward

    def f(x):
        return (x * 2).sin()

    cf = ember.compile(f, backend="numpy")
    x = ember.randn(4)
    assert cf(x).grad_fn is None
    xr = x.clone().requires_grad_(True)
    out = cf(xr)
    assert _region_node(out) is not None
    with ember.no_grad():
        out2 = cf(xr)
    assert out2.grad_fn is None and not out2.requires_grad
    out.sum().backward()
    ember.testing.assert_close(xr.grad, (x * 2).cos() * 2)


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_double_backward_raises_and_saved_tensor_versions_are_checked(backend):
    """As torch.compile's AOTAutograd: ``create_graph=True`` through a compiled region gives
    the first-order gradients (requiring grad, as eager's); differentiating them raises."""
    w = ember.randn(3, requires_grad=True)
    x = ember.randn(3, requires_grad=True)

    def f(x, w):
        return (x * w).tanh().sum()

    cf = ember.compile(f, backend=backend)
    g, = ember.autograd.grad(cf(x, w), [x], create_graph=True)
    want, = ember.autograd.grad(f(x, w), [x], create_graph=True)
    ember.testing.assert_close(g, want)
    assert g.requires_grad and want.requires_grad
    with pytest.raises(RuntimeError, match="double backward through a compiled region"):
        ember.autograd.grad(g.sum(), [w])
    cf(x, w).backward(create_graph=True)
    with pytest.raises(RuntimeError, match="double backward through a compiled region"):
        x.grad.sum().backward()
    loss = cf(x, w)
    with ember.no_grad():
        w.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_outputs_that_alias_inputs_stay_views():
    x = ember.randn(2, 3, requires_grad=True)
    cf = ember.compile(lambda x: (x.view(-1), x * 2), backend="numpy")
    v, y = cf(x)
    assert v._base is x
    (v.sum() + y.sum()).backward()
    assert ember.equal(x.grad, ember.full((2, 3), 3.0))


def test_backward_recomputes_views_instead_of_saving_them():
    lin = nn.Linear(8, 4)
    x = ember.randn(3, 8)
    region = _region_node(ember.compile(lin, backend="numpy")(x)).region
    saved = region.fw_graph.output_node.args[0][region.n_out:]
    # matmul's gradient reads w.t() and x: the forward saves only the input, never the view
    assert all(n.op == "placeholder" for n in saved)
    region.backward_fn()
    assert isinstance(region, aot.TrainingRegion)


def _saved_and_grads(build, loss_fn, x, backend):
    """(the forward's saved values, the parameters' gradients) of one compiled step."""
    m = build()
    out = ember.compile(lambda x: loss_fn(m, x), backend=backend)(x)
    region = _region_node(out).region
    saved = region.fw_graph.output_node.args[0][region.n_out:]
    out.backward()
    return region, saved, [p.grad for p in m.parameters()]


def _gelu_net():
    ember.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 32), nn.GELU(approximate="tanh"), nn.Linear(32, 3))


class _ScaledGelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 32)
        self.scale = nn.Parameter(ember.randn(32))

    def forward(self, x):
        return F.gelu(self.lin(x), approximate="tanh") * self.scale


def _scaled_gelu_net():
    ember.manual_seed(0)
    return _ScaledGelu()


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
@pytest.mark.parametrize("build, recomputed", [(_scaled_gelu_net, True), (_gelu_net, False)])
def test_c_backend_recomputes_saved_pointwise_values_only_where_they_fuse(build, recomputed):
    """On the C backend a pointwise value whose inputs are saved anyway (GELU's output, next
    to GELU's input) is recomputed in the backward when only pointwise ops read it there (the
    scale's gradient: fused, no extra pass): fewer saved bytes than the NumPy backend's
    partition, same gradients. Read by a matmul's weight gradient, it stays saved."""
    import math

    x = ember.randn(16, 6)

    def loss_fn(m, x):
        return F.log_softmax(m(x), -1).sum()

    saved_bytes, grads = {}, {}
    for backend in ("numpy", "c"):
        region, saved, grads[backend] = _saved_and_grads(build, loss_fn, x, backend)
        saved_bytes[backend] = sum(math.prod(n.val.shape) * n.val.element_size() for n in saved)
        if backend == "c":
            names = [n.target.name for n in saved if n.op == "call"]
            bw_names = [n.target.name for n in region.bw_graph.nodes if n.op == "call"]
            assert ("gelu" not in names) is recomputed
            assert ("gelu" in bw_names) is recomputed
    if recomputed:
        assert saved_bytes["c"] <= saved_bytes["numpy"] - 16 * 32 * 4
    else:
        assert saved_bytes["c"] == saved_bytes["numpy"]
    m = build()
    loss_fn(m, x).backward()
    for backend in ("numpy", "c"):
        for g, p in zip(grads[backend], m.parameters(), strict=True):
            ember.testing.assert_close(g, p.grad, rtol=1e-5, atol=1e-6)


def test_training_with_varying_batch_sizes():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 8), nn.GELU(), nn.Linear(8, 3))

    def f(x):
        return F.log_softmax(m(x), -1).sum()

    cf = ember.compile(f, backend="numpy")
    for b in (3, 5, 7, 9):
        x = ember.randn(b, 6)
        loss = cf(x)
        assert _region_node(loss) is not None
        loss.backward()
        got = [p.grad.clone() for p in m.parameters()]
        m.zero_grad()
        f(x).backward()
        assert all(ember.equal(a, p.grad) for a, p in zip(got, m.parameters()))
        m.zero_grad()


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_split_gradient_pieces_are_copied_once_into_their_buffer(backend, block_pair):
    """NOTE [Copies through a reshape]: attention's q/k/v gradients, (B, H, T, hd) read as
    (B, T, C) pieces of the (B, T, 3C) buffer of the split's gradient, are each copied once,
    through a view of the buffer, instead of into a contiguous copy and then the buffer; the
    gradients stay eager's bits on the NumPy backend."""
    cfg = GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=16)
    m1, x1, m2, x2, go = block_pair(cfg, 3)
    out = ember.compile(m2, backend=backend)(x2)
    region = _region_node(out).region
    (out * go).sum().backward()
    source = region.backward_fn().source
    assert source.count("np.copyto(_reshaped(") == 3
    tol = dict(rtol=0, atol=0) if backend == "numpy" else dict(rtol=1e-5, atol=1e-6)
    ember.testing.assert_close(x2.grad, x1.grad, **tol)
    for p, q in zip(m1.parameters(), m2.parameters(), strict=True):
        ember.testing.assert_close(q.grad, p.grad, **tol)
