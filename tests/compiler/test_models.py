"""Real models compile with zero graph breaks and give eager's outputs: the char-GPT of
``ember/examples/gpt.py`` in eval mode, the digits CNN (BatchNorm in eval mode), an MLP and an
LSTM unrolled over a fixed length. Also: frames that introspect themselves run natively."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.compiler import explain


def _rand(*shape, seed=0):
    return ember.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _check_model(m, *args, backends=("numpy", "eager")):
    m.eval()
    with ember.no_grad():
        out = explain(m)(*args)
        assert out.graph_break_count == 0, [b.reason for b in out.break_reasons]
        assert out.graph_count == 1 and not out.native_frames
        want = m(*args)
        for backend in backends:
            got = ember.compile(m, backend=backend)(*args)
            _close(got, want)


def _close(a, b):
    if isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _close(x, y)
        return
    if a is None:
        assert b is None
        return
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-4, atol=1e-5)


def test_char_gpt_eval():
    from ember.examples.gpt import GPT, GPTConfig

    ember.manual_seed(0)
    m = GPT(GPTConfig(vocab_size=30, block_size=16, n_layer=2, n_head=2, n_embd=32))
    idx = ember.tensor(np.random.default_rng(1).integers(0, 30, (2, 16)))
    _check_model(m, idx)


def test_digits_cnn_batchnorm_eval():
    from ember.examples.digits import DigitsCNN

    ember.manual_seed(0)
    _check_model(DigitsCNN(), _rand(4, 1, 8, 8))


def test_digits_mlp():
    ember.manual_seed(0)
    m = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    _check_model(m, _rand(5, 64))


def test_lstm_unrolled():
    ember.manual_seed(0)
    _check_model(nn.LSTM(8, 16, batch_first=True), _rand(2, 5, 8))


def test_frame_introspection_runs_natively():
    def f(x):
        frame = sys._getframe()
        return x + len(frame.f_code.co_name)

    def g(x):
        return x * len(locals())

    x = _rand(3)
    for fn in (f, g):
        out = explain(fn)(x)
        assert out.native_frames and out.graph_count == 0
        _close(ember.compile(fn, backend="eager")(x), fn(x))


@pytest.mark.parametrize("T", [3, 6])
def test_lstm_cell_loop_in_user_code(T):
    ember.manual_seed(0)
    cell = nn.LSTMCell(4, 6).eval()

    def run(xs, h, c):
        for t in range(T):
            h, c = cell(xs[:, t], (h, c))
        return h

    xs, h, c = _rand(2, T, 4), _rand(2, 6, seed=1), _rand(2, 6, seed=2)
    with ember.no_grad():
        out = explain(run)(xs, h, c)
        assert (out.graph_count, out.graph_break_count) == (1, 0)
        _close(ember.compile(run)(xs, h, c), run(xs, h, c))


def test_training_step_gradients_match_eager():
    ember.manual_seed(0)
    m1 = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
    m2 = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))
    m2.load_state_dict(m1.state_dict())
    x = _rand(5, 6)
    cm = ember.compile(m1)
    loss1 = (cm(x) ** 2).mean()
    loss2 = (m2(x) ** 2).mean()
    loss1.backward()
    loss2.backward()
    np.testing.assert_allclose(loss1.detach().numpy(), loss2.detach().numpy(), rtol=1e-6)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        np.testing.assert_allclose(p1.grad.numpy(), p2.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_char_gpt_training_step_with_loss():
    from ember.examples.gpt import GPT, GPTConfig

    ember.manual_seed(0)
    cfg = GPTConfig(vocab_size=30, block_size=16, n_layer=2, n_head=2, n_embd=32)
    m1, m2 = GPT(cfg), GPT(cfg)
    m2.load_state_dict(m1.state_dict())
    g = np.random.default_rng(3)
    idx = ember.tensor(g.integers(0, 30, (2, 16)))
    tgt = ember.tensor(g.integers(0, 30, (2, 16)))
    out = explain(m1)(idx, tgt)
    assert (out.graph_count, out.graph_break_count) == (1, 0)
    cm = ember.compile(m1)
    opt1 = ember.optim.AdamW(m1.parameters(), lr=1e-3)
    opt2 = ember.optim.AdamW(m2.parameters(), lr=1e-3)
    for _ in range(2):
        _, l1 = cm(idx, tgt)
        _, l2 = m2(idx, tgt)
        for opt, loss in ((opt1, l1), (opt2, l2)):
            opt.zero_grad()
            loss.backward()
            opt.step()
        np.testing.assert_allclose(l1.item(), l2.item(), rtol=1e-5)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_compiled_training_step_function(momentum):
    import ember.nn.functional as F

    def make():
        ember.manual_seed(0)
        m = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
        return m, ember.optim.SGD(m.parameters(), lr=0.1, momentum=momentum)

    def step(m, opt, x, y):
        opt.zero_grad()
        loss = F.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        return loss

    (m1, o1), (m2, o2) = make(), make()
    x = _rand(6, 4)
    y = ember.tensor(np.random.default_rng(5).integers(0, 3, (6,)))
    cs = ember.compile(step, backend="eager")
    for _ in range(3):
        l1, l2 = cs(m1, o1, x, y), step(m2, o2, x, y)
        np.testing.assert_allclose(l1.item(), l2.item(), rtol=1e-6)
        for a, b in zip(m1.parameters(), m2.parameters()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                       atol=1e-7)
    out = explain(step)(*make(), x, y)
    assert any("backward" in b.reason for b in out.break_reasons)


def test_optimizer_step_alone_is_one_graph():
    ember.manual_seed(0)
    m = nn.Linear(2, 1)
    opt = ember.optim.SGD(m.parameters(), lr=0.1)
    m(_rand(3, 2)).sum().backward()

    def upd(opt):
        opt.step()

    out = explain(upd)(opt)            # runs one step
    assert (out.graph_count, out.graph_break_count, out.op_count) == (1, 0, 2)
    want = [(p - 0.1 * p.grad).detach() for p in m.parameters()]
    ember.compile(upd)(opt)
    for p, w in zip(m.parameters(), want):
        np.testing.assert_allclose(p.detach().numpy(), w.numpy(), rtol=1e-6)
