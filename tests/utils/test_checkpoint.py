"""ember.utils.checkpoint: exact gradients with and without checkpointing, the non-reentrant and
reentrant forms, selective checkpointing, and the errors torch raises in the same situations."""

from __future__ import annotations

import functools
import gc
import math
import warnings

import pytest
import torch
import torch.utils.checkpoint as tcp

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.dispatch.modes import DispatchMode
from ember.tensor.random import Generator
from ember.utils.checkpoint import (
    CheckpointError,
    CheckpointPolicy,
    SelectiveCheckpointContext,
    checkpoint,
    checkpoint_sequential,
    create_selective_checkpoint_contexts,
    set_checkpoint_debug_enabled,
    set_checkpoint_early_stop,
    set_checkpoint_replay_draws,
)


# -- models -----------------------------------------------------------------------------------------
class Attention(nn.Module):
    """Causal multi-head self-attention written with plain ops (dropout on the probabilities)."""

    def __init__(self, c: int, heads: int, p: float):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.heads
        q, k, v = self.qkv(x).split(C, dim=2)  # (B, T, 3C) -> 3 x (B, T, C)
        q = q.view(B, T, self.heads, hs).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
        k = k.view(B, T, self.heads, hs).transpose(1, 2)
        v = v.view(B, T, self.heads, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, nh, T, T)
        mask = ember.ones(T, T).tril() == 0
        att = self.drop(F.softmax(att.masked_fill(mask, float("-inf")), dim=-1))
        y = (att @ v).transpose(1, 2).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, C)
        return self.drop(self.proj(y))


class GPTBlock(nn.Module):
    def __init__(self, c: int = 16, heads: int = 2, p: float = 0.1):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c), nn.LayerNorm(c)
        self.attn = Attention(c, heads, p)
        self.mlp = nn.Sequential(nn.Linear(c, 4 * c), nn.GELU(), nn.Linear(4 * c, c),
                                 nn.Dropout(p))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def mlp():
    return nn.Sequential(*[nn.Sequential(nn.Linear(12, 12), nn.Tanh()) for _ in range(6)]), \
        ember.randn(5, 12)


def cnn():
    def block(cin, cout):
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())
    return nn.Sequential(block(2, 4), block(4, 4), block(4, 4), block(4, 3)), \
        ember.randn(3, 2, 6, 6)


def gpt():
    return nn.Sequential(*[GPTBlock() for _ in range(4)]), ember.randn(2, 5, 16)


MODELS = {"mlp": mlp, "cnn_bn": cnn, "gpt_dropout": gpt}
SAVE_MATMULS = [ember.mm, ember.addmm, ember.matmul, ember.bmm]


def run(model, x, scheme: str, reentrant: bool):
    """One training step with the given checkpointing; returns the output and all gradients."""
    model.zero_grad()
    x = x.detach().requires_grad_()
    ember.manual_seed(1234)
    blocks = list(model.children())
    if scheme == "none":
        out = model(x)
    elif scheme == "per_block":
        out = x
        for b in blocks:
            out = checkpoint(b, out, use_reentrant=reentrant)
    elif scheme == "sequential":
        out = checkpoint_sequential(model, 2, x, use_reentrant=reentrant)
    else:  # selective: matmuls saved, everything else recomputed
        ctx = functools.partial(create_selective_checkpoint_contexts, SAVE_MATMULS)
        out = x
        for b in blocks:
            out = checkpoint(b, out, use_reentrant=False, context_fn=ctx)
    g = ember.linspace(-1, 1, out.numel()).view(out.shape)
    (out * g).sum().backward()
    return out.detach(), [p.grad for p in model.parameters()] + [x.grad]


def same(a, b) -> bool:
    return a.shape == b.shape and bool((a == b).all())


CASES = [(m, s, r) for m in MODELS for s in ("per_block", "sequential", "selective")
         for r in (False, True) if not (s == "selective" and r)]


@pytest.mark.parametrize("model_name,scheme,reentrant", CASES)
def test_gradients_equal_exactly(model_name, scheme, reentrant):
    ember.manual_seed(0)
    model, x = MODELS[model_name]()
    ref_out, ref = run(model, x, "none", False)
    out, grads = run(model, x, scheme, reentrant)
    assert same(out, ref_out)
    assert len(grads) == len(ref)
    for a, b in zip(grads, ref):
        assert a is not None and same(a, b)


def test_dropout_is_active_and_rng_state_matters():
    ember.manual_seed(0)
    model, x = gpt()
    _, ref = run(model, x, "none", False)
    ember.manual_seed(1234)
    model.zero_grad()
    x = x.detach().requires_grad_()
    out = x
    for b in model.children():
        out = checkpoint(b, out, use_reentrant=False, preserve_rng_state=False)
    (out * ember.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
    assert not all(same(p.grad, r) for p, r in zip(model.parameters(), ref))
    model.eval()
    _, a = run(model, x, "none", False)
    _, b = run(model, x, "none", False)
    assert all(same(u, v) for u, v in zip(a, b))  # eval: no randomness at all


@pytest.mark.filterwarnings("ignore:None of the inputs have requires_grad")
@pytest.mark.parametrize("replay", [True, False], ids=["replay", "redraw"])
@pytest.mark.parametrize("reentrant", [False, True])
def test_dropout_masks_are_replayed_not_redrawn(monkeypatch, replay, reentrant):
    """NOTE [Replayed draws]: the recomputation takes the forward's dropout masks from the
    checkpoint's tape, so backward runs no generator work; with replay off it draws them
    again. The gradients are exactly the plain ones either way, nested checkpoints included."""
    ember.manual_seed(0)
    model, x = gpt()
    _, ref = run(model, x, "none", False)
    draws = []
    real = Generator._bernoulli_words
    monkeypatch.setattr(Generator, "_bernoulli_words",
                        lambda self, n, t: draws.append(n) or real(self, n, t))
    blocks = list(model.children())

    def pair(a, b):
        return lambda t: checkpoint(b, checkpoint(a, t, use_reentrant=reentrant),
                                    use_reentrant=reentrant)

    model.zero_grad()
    xr = x.detach().requires_grad_()
    ember.manual_seed(1234)
    with set_checkpoint_replay_draws(replay):  # backward inside: recomputations nest
        out = xr
        for seg in (pair(*blocks[:2]), pair(*blocks[2:])):
            out = checkpoint(seg, out, use_reentrant=reentrant)
        forward_draws = len(draws)
        assert forward_draws == 4 * 3  # three dropouts per block
        (out * ember.linspace(-1, 1, out.numel()).view(out.shape)).sum().backward()
    # redrawn: once per recomputation; the reentrant outer segment re-runs its inner
    # checkpoints' forwards, which then recompute in their own backward
    redraws = forward_draws * (2 if reentrant else 1)
    assert len(draws) - forward_draws == (0 if replay else redraws)
    for p, r in zip([*model.parameters(), xr], [*ref]):
        assert same(p.grad, r)


# -- behaviour ---------------------------------------------------------------------------------------
class CountOps(DispatchMode):
    def __init__(self):
        self.names: list[str] = []

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.append(func.name)
        return func(*args, **(kwargs or {}))


def test_function_runs_twice_and_forward_keeps_nothing_inside():
    calls = []
    w = ember.randn(64, 64, requires_grad=True)

    def f(t):
        calls.append(1)
        return (t @ w).tanh().tanh().tanh()

    x = ember.randn(256, 64, requires_grad=True)
    gc.collect()  # garbage of earlier tests must not be freed inside the measurement
    before = ember.memory.memory_allocated()
    y = checkpoint(f, x, use_reentrant=False)
    kept = ember.memory.memory_allocated() - before
    assert kept == ember.memory.round_size(y.numel() * 4)  # the output only: no activations
    y.sum().backward()
    assert len(calls) == 2
    x2 = x.detach().requires_grad_()
    (f(x2)).sum().backward()
    assert same(x.grad, x2.grad)


def test_kwargs_and_non_tensor_inputs_and_outputs():
    x = ember.randn(3, requires_grad=True)

    def f(a, scale, *, shift, tag):
        return {"tag": tag}, a * scale + shift, 7

    meta, y, seven = checkpoint(f, x, 3.0, use_reentrant=False, shift=ember.ones(3), tag="t")
    assert meta == {"tag": "t"} and seven == 7
    y.sum().backward()
    assert same(x.grad, ember.full((3,), 3.0))
    with pytest.raises(ValueError, match="Unexpected keyword arguments: shift"):
        checkpoint(f, x, 3.0, use_reentrant=True, shift=1)


def test_reentrant_non_tensor_inputs_and_outputs():
    x = ember.randn(3, requires_grad=True)
    y, label = checkpoint(lambda a, k, s: (a.sin() * k, s), x, 2.0, "lbl", use_reentrant=True)
    assert label == "lbl"
    y.sum().backward()
    assert same(x.grad, x.detach().cos() * 2.0)


def test_inputs_not_requiring_grad():
    lin = nn.Linear(4, 4)
    x = ember.randn(2, 4)
    y = checkpoint(lin, x, use_reentrant=False)
    assert y.requires_grad  # the parameters require grad
    y.sum().backward()
    assert lin.weight.grad is not None
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = checkpoint(lin, x, use_reentrant=True)
    assert not y.requires_grad  # torch: parameters get no gradient


def test_nested_checkpoints():
    w = ember.randn(6, 6, requires_grad=True)

    def inner(t):
        return (t @ w).sin()

    def outer(t):
        return checkpoint(inner, t.tanh(), use_reentrant=False).exp() @ w

    x = ember.randn(3, 6, requires_grad=True)
    for reentrant_outer in (False, True):
        x.grad = w.grad = None
        y = checkpoint(outer, x, use_reentrant=reentrant_outer)
        y.sum().backward()
        gx, gw = x.grad, w.grad
        x.grad = w.grad = None
        outer_plain = ((x.tanh() @ w).sin().exp() @ w)
        outer_plain.sum().backward()
        assert same(gx, x.grad) and same(gw, w.grad)


def test_autograd_grad_and_backward_inputs_non_reentrant():
    x = ember.randn(4, requires_grad=True)
    w = ember.randn(4, requires_grad=True)
    y = checkpoint(lambda a: (a * w).exp(), x, use_reentrant=False)
    (gx,) = ember.autograd.grad(y.sum(), x, retain_graph=True)
    assert same(gx, (x * w).exp().detach() * w.detach())
    y.sum().backward(inputs=[w])
    assert x.grad is None and same(w.grad, (x * w).exp().detach() * x.detach())


def test_retain_graph_recomputes_for_each_backward():
    x = ember.randn(5, requires_grad=True)
    calls = []

    def f(t):
        calls.append(1)
        return t.sin().exp()

    y = checkpoint(f, x, use_reentrant=False).sum()
    y.backward(retain_graph=True)
    first = x.grad.clone()
    y.backward()
    assert len(calls) == 3
    assert same(x.grad, first * 2)


def test_no_grad_is_a_plain_call():
    x = ember.randn(3, requires_grad=True)
    calls = []

    def f(t):
        calls.append(1)
        return t * 2

    with ember.no_grad():
        y = checkpoint(f, x, use_reentrant=False)
    assert not y.requires_grad and len(calls) == 1


def test_inside_module_forward():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(5, 5), nn.Linear(5, 2)

        def forward(self, x, ckpt: bool):
            h = checkpoint(self.a, x, use_reentrant=False) if ckpt else self.a(x)
            return self.b(h.relu())

    net = Net()
    x = ember.randn(3, 5)
    net(x, False).sum().backward()
    ref = [p.grad.clone() for p in net.parameters()]
    net.zero_grad()
    net(x, True).sum().backward()
    assert all(same(p.grad, r) for p, r in zip(net.parameters(), ref))


def test_early_stop_recomputes_fewer_ops():
    x = ember.randn(8, 8, requires_grad=True)

    def f(t):
        h = t.sin()          # saves t: the only saved tensor
        for _ in range(6):   # additions and negations save nothing
            h = -(h + 1)
        return h

    def backward_ops(early: bool) -> list[str]:
        with set_checkpoint_early_stop(early):
            y = checkpoint(f, x, use_reentrant=False)
        with CountOps() as c:
            y.sum().backward()
        return c.names

    early, full = backward_ops(True), backward_ops(False)
    # sin saves its input before it runs, so the early-stopped recomputation ends right there
    assert early.count("sin") == 0 and full.count("sin") == 1
    # without early stop the six (add, neg) pairs after it run again too
    assert full.count("add") - early.count("add") == 6
    assert full.count("neg") - early.count("neg") == 6


def test_selective_policy_function_replays_saved_ops():
    x = ember.randn(6, 6, requires_grad=True)
    seen = []

    def policy(ctx, op, *args, **kwargs):
        assert isinstance(ctx, SelectiveCheckpointContext) and not ctx.is_recompute
        seen.append(op.name)
        return CheckpointPolicy.MUST_SAVE if op is ember.mm else \
            CheckpointPolicy.PREFER_RECOMPUTE

    ctx = functools.partial(create_selective_checkpoint_contexts, policy)

    def f(t):
        return ember.mm(t, t).sin().cos()

    y = checkpoint(f, x, use_reentrant=False, context_fn=ctx)
    assert "mm" in seen and "sin" in seen
    with CountOps() as c:
        y.sum().backward()
    ref = x.grad.clone()
    y = checkpoint(f, x, use_reentrant=False)
    with CountOps() as vanilla:
        y.sum().backward()
    # mm is replayed from the cache instead of running again; sin runs again either way
    assert vanilla.names.count("mm") - c.names.count("mm") == 1
    assert vanilla.names.count("sin") == c.names.count("sin")
    x.grad = None
    f(x).sum().backward()
    assert same(x.grad, ref)


def test_selective_bool_policy_and_errors():
    x = ember.randn(4, 4, requires_grad=True)
    ctx = functools.partial(create_selective_checkpoint_contexts,
                            lambda c, op, *a, **k: op is ember.mm)
    y = checkpoint(lambda t: ember.mm(t, t).exp(), x, use_reentrant=False, context_fn=ctx).sum()
    y.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="Trying to backward an extra time"):
        y.backward()
    with pytest.raises(ValueError, match="Expected op in `op_list`"):
        create_selective_checkpoint_contexts(["mm"])
    with pytest.raises(TypeError, match="policy_fn_or_list must be either a function or a list"):
        create_selective_checkpoint_contexts(3)


def test_selective_cached_output_mutated_raises():
    x = ember.randn(4, 4, requires_grad=True)
    ctx = functools.partial(create_selective_checkpoint_contexts, [ember.mm])
    keep = []

    def f(t):
        h = ember.mm(t, t)
        keep.append(h)
        return h.exp()

    y = checkpoint(f, x, use_reentrant=False, context_fn=ctx)
    with ember.no_grad():
        keep[0].add_(1)
    with pytest.raises(RuntimeError, match="has been mutated"):
        y.sum().backward()


# -- errors, next to torch's ---------------------------------------------------------------------------
def nondeterministic(lib):
    state = {"n": 4}

    def f(t):
        n = state["n"]
        state["n"] = 3
        return (t[:n] * 2).sin()
    return f


@pytest.mark.parametrize("lib,mod,err", [(ember, None, CheckpointError),
                                         (torch, tcp, tcp.CheckpointError)])
def test_determinism_error_like_torch(lib, mod, err):
    ck = checkpoint if lib is ember else tcp.checkpoint
    x = lib.randn(4, 4, requires_grad=True)
    y = ck(nondeterministic(lib), x, use_reentrant=False)
    with pytest.raises(err, match=r"Recomputed values for the following tensors have different "
                                  r"metadata than during the forward pass\.\ntensor at position"):
        y.sum().backward()
    assert issubclass(err, RuntimeError)


def test_determinism_count_error_and_none_check():
    x = ember.randn(4, 4, requires_grad=True)
    state = {"first": True}

    def f(t):
        h = t.sin()
        if state["first"]:
            h = h.exp()  # saves its result in forward only
        state["first"] = False
        return h * 2

    y = checkpoint(f, x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="A different number of tensors was saved"):
        y.sum().backward()
    with pytest.raises(ValueError, match=r"determinism_check should be one of \['default', "
                                         r"'none'\], but got bogus"):
        checkpoint(f, x, use_reentrant=False, determinism_check="bogus")
    state["n"] = 4
    y = checkpoint(nondeterministic(ember), x, use_reentrant=False, determinism_check="none")
    with pytest.raises(RuntimeError):  # mismatched shapes then fail inside the backward formula
        y.sum().backward()


def test_debug_shows_the_operators_of_both_runs():
    x = ember.randn(4, 4, requires_grad=True)
    y = checkpoint(nondeterministic(ember), x, use_reentrant=False, debug=True)
    with pytest.raises(CheckpointError) as info:
        y.sum().backward()
    text = str(info.value)
    fwd, rec = text.split("Operations executed during recomputation:")
    assert "Operations executed during the original forward:" in fwd
    assert "mul.Tensor([4, 4])" in fwd and "sin.default([4, 4])" in fwd
    assert "mul.Tensor([3, 4])" in rec.split("Error message:")[0]
    assert "test_checkpoint.py" in fwd  # each op names the line that called it
    with set_checkpoint_debug_enabled(True):
        y = checkpoint(nondeterministic(ember), x, use_reentrant=False)
    with pytest.raises(CheckpointError, match="Operations executed during recomputation"):
        y.sum().backward()
    with pytest.raises(ValueError, match="debug=True is incompatible with non-default "
                                         "context_fn"):
        checkpoint(lambda t: t, x, use_reentrant=False, debug=True,
                   context_fn=functools.partial(create_selective_checkpoint_contexts, []))


@pytest.mark.parametrize("lib", [ember, torch])
def test_reentrant_with_autograd_grad_raises_like_torch(lib):
    ck = checkpoint if lib is ember else tcp.checkpoint
    x = lib.randn(3, requires_grad=True)
    y = ck(lambda t: t.sin(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match=r"When use_reentrant=True, .*checkpoint is "
                                           r"incompatible with \.grad\(\) or passing an `inputs`"):
        lib.autograd.grad(y.sum(), x)
    y = ck(lambda t: t.sin(), x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="incompatible with .grad"):
        y.sum().backward(inputs=[x])


@pytest.mark.parametrize("lib", [ember, torch])
def test_missing_use_reentrant_warns_like_torch(lib):
    ck, seq = (checkpoint, checkpoint_sequential) if lib is ember else \
        (tcp.checkpoint, tcp.checkpoint_sequential)
    x = lib.randn(3, requires_grad=True)
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed "
                                         "explicitly"):
        y = ck(lambda t: t.sin(), x)
    assert y.grad_fn is not None and "Backward" in type(y.grad_fn).__name__  # reentrant default
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        seq([lambda t: t * 2, lambda t: t + 1], 2, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ck(lambda t: t.sin(), x, use_reentrant=False)


@pytest.mark.parametrize("lib", [ember, torch])
def test_reentrant_rejects_context_fn_and_debug_like_torch(lib):
    ck = checkpoint if lib is ember else tcp.checkpoint
    x = lib.randn(3, requires_grad=True)
    msg = "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
    with pytest.raises(ValueError, match=msg):
        ck(lambda t: t, x, use_reentrant=True, debug=True)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: a"):
        ck(lambda t, a: t, x, use_reentrant=True, a=1)


def test_checkpoint_sequential_leaves_the_last_segment_alone():
    calls = [0] * 5
    fns = []
    for i in range(5):
        def f(t, i=i):
            calls[i] += 1
            return t.sin()
        fns.append(f)
    x = ember.randn(3, requires_grad=True)
    y = checkpoint_sequential(fns, 2, x, use_reentrant=False)
    y.sum().backward()
    assert calls == [2, 2, 1, 1, 1]  # segment size 2: [0, 1] checkpointed; [2, 3, 4] plain
    with pytest.raises(ValueError, match="segments"):
        checkpoint_sequential(fns, 6, x, use_reentrant=False)
    with pytest.raises(ValueError, match="Unexpected keyword arguments: bogus"):
        checkpoint_sequential(fns, 2, x, use_reentrant=False, bogus=1)


@pytest.mark.parametrize("lib", [ember, torch])
def test_input_modified_in_place_after_forward_raises_like_torch(lib):
    ck = checkpoint if lib is ember else tcp.checkpoint
    x = lib.randn(3, requires_grad=True)
    a = x * 1
    y = ck(lambda t: t.sin(), a, use_reentrant=False)
    with lib.no_grad():
        a.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; "
                                           "expected version 0 instead"):
        y.sum().backward()
