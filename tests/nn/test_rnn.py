"""Oracle tests for RNN/LSTM/GRU and their cells: torch's weights in, torch's outputs, final
states, input/initial-state gradients and parameter gradients out (float32 and float64), plus
PackedSequence inputs, inter-layer dropout (statistics, eval identity), layouts and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import ember
import ember.nn as nn
from ember.nn.utils import rnn as ernn
from tests.nn._oracle import close, copy_state, to_ember

tnn = torch.nn
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def _randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _pair(name: str, *args, dtype=torch.float32, **kwargs):
    """The torch and ember module of one class/config, ember loaded with torch's weights."""
    torch.manual_seed(0)
    tm = getattr(tnn, name)(*args, **kwargs).to(dtype)
    em = getattr(nn, name)(*args, **kwargs)
    if dtype == torch.float64:
        em = em.double()
    copy_state(tm, em)
    return tm, em


def _flat(x) -> list:
    """Output structures (tensor, tuple of tensors, nested) -> flat list of tensors."""
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in _flat(item)]
    return [x]


def _check(tm, em, t_inputs, tol, seed=1):
    """Forward both, backward random cotangents through every output, compare everything."""
    e_inputs = [None if t is None else
                tuple(to_ember(a, a.requires_grad) for a in t) if isinstance(t, tuple)
                else to_ember(t, t.requires_grad) for t in t_inputs]
    t_out, e_out = _flat(tm(*t_inputs)), _flat(em(*e_inputs))
    assert len(t_out) == len(e_out)
    loss_t, loss_e = 0, 0
    for i, (t, e) in enumerate(zip(t_out, e_out)):
        close(e, t, tol, tol, f"output {i}")
        g = _randn(*t.shape, dtype=t.dtype, seed=seed + i)
        loss_t = loss_t + (t * g).sum()
        loss_e = loss_e + (e * to_ember(g)).sum()
    loss_t.backward()
    loss_e.backward()
    for i, (t, e) in enumerate(zip(_flat(t_inputs), _flat(e_inputs))):
        if t is not None and t.requires_grad:
            close(e.grad, t.grad, tol, tol, f"grad of input {i}")
    tp = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        close(p.grad, tp[name].grad, tol, tol, f"grad of {name}")
    return t_out, e_out


RNN_CONFIGS = [
    ("RNN", dict(num_layers=2, bidirectional=True)),
    ("RNN", dict(nonlinearity="relu", batch_first=True, bias=False)),
    ("RNN", dict(nonlinearity="relu", num_layers=2)),
    ("LSTM", dict(num_layers=2, bidirectional=True, batch_first=True)),
    ("LSTM", dict(bias=False)),
    ("LSTM", dict(proj_size=2, num_layers=2, bidirectional=True)),
    ("GRU", dict(num_layers=2, bidirectional=True)),
    ("GRU", dict(batch_first=True, bias=False)),
]


def _ids(configs):
    return [f"{name}-" + "-".join(f"{k}={v}" for k, v in kw.items()) for name, kw in configs]


def _initial_state(name, kw, batch, dtype, seed=7):
    dirs = 2 if kw.get("bidirectional") else 1
    layers = kw.get("num_layers", 1)
    h_size = kw.get("proj_size") or 4
    h0 = _randn(layers * dirs, batch, h_size, dtype=dtype, seed=seed).requires_grad_()
    if name != "LSTM":
        return h0
    c0 = _randn(layers * dirs, batch, 4, dtype=dtype, seed=seed + 1).requires_grad_()
    return (h0, c0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_h0", [False, True])
@pytest.mark.parametrize("name,kw", RNN_CONFIGS, ids=_ids(RNN_CONFIGS))
def test_rnn_matches_torch(name, kw, with_h0, dtype):
    tm, em = _pair(name, 3, 4, dtype=dtype, **kw)
    shape = (2, 5, 3) if kw.get("batch_first") else (5, 2, 3)
    x = _randn(*shape, dtype=dtype).requires_grad_()
    inputs = [x, _initial_state(name, kw, 2, dtype)] if with_h0 else [x]
    _check(tm, em, inputs, TOL[dtype])


@pytest.mark.parametrize("name,kw", RNN_CONFIGS[::2], ids=_ids(RNN_CONFIGS[::2]))
def test_rnn_unbatched_and_noncontiguous(name, kw):
    tm, em = _pair(name, 3, 4, **kw)
    x = _randn(5, 3).requires_grad_()
    h0 = _initial_state(name, kw, 1, torch.float32)
    h0 = tuple(h[:, 0].detach().requires_grad_() for h in h0) if isinstance(h0, tuple) \
        else h0[:, 0].detach().requires_grad_()
    _check(tm, em, [x, h0], 1e-5)
    # a permuted (non-contiguous) batch
    tm.zero_grad()
    em.zero_grad()
    xp = _randn(3, 2, 5).permute(2, 1, 0)  # (5, 2, 3) in the time-major layout
    xp = xp.transpose(0, 1) if kw.get("batch_first") else xp
    _check(tm, em, [xp.requires_grad_()], 1e-5)


PACKED = [("RNN", {}), ("LSTM", dict(proj_size=2)), ("GRU", {})]


@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("name,extra", PACKED, ids=[p[0] for p in PACKED])
def test_packed_sequence_matches_torch(name, extra, enforce_sorted):
    kw = dict(num_layers=2, bidirectional=True, **extra)
    tm, em = _pair(name, 3, 4, **kw)
    lengths = [5, 3, 3, 1] if enforce_sorted else [3, 5, 1, 3]
    x = _randn(5, 4, 3)
    h0 = _initial_state(name, kw, 4, torch.float32)
    tx, ex = x.clone().requires_grad_(), to_ember(x, True)
    eh0 = tuple(to_ember(h, True) for h in h0) if isinstance(h0, tuple) else to_ember(h0, True)
    t_packed = tnn.utils.rnn.pack_padded_sequence(tx, lengths, enforce_sorted=enforce_sorted)
    e_packed = ernn.pack_padded_sequence(ex, lengths, enforce_sorted=enforce_sorted)
    t_out, t_h = tm(t_packed, h0)
    e_out, e_h = em(e_packed, eh0)
    assert isinstance(e_out, ernn.PackedSequence)
    close(e_out.batch_sizes, t_out.batch_sizes, 0, 0, "batch_sizes")
    t_pad, _ = tnn.utils.rnn.pad_packed_sequence(t_out)
    e_pad, _ = ernn.pad_packed_sequence(e_out)
    t_all, e_all = [t_pad, *_flat(t_h)], [e_pad, *_flat(e_h)]
    loss_t = loss_e = 0
    for i, (t, e) in enumerate(zip(t_all, e_all)):
        close(e, t, 1e-5, 1e-5, f"output {i}")
        g = _randn(*t.shape, seed=10 + i)
        loss_t, loss_e = loss_t + (t * g).sum(), loss_e + (e * to_ember(g)).sum()
    loss_t.backward()
    loss_e.backward()
    close(ex.grad, tx.grad, 1e-5, 1e-5, "input grad")
    for t, e in zip(_flat(h0), _flat(eh0)):
        close(e.grad, t.grad, 1e-5, 1e-5, "h0 grad")
    tp = dict(tm.named_parameters())
    for pname, p in em.named_parameters():
        close(p.grad, tp[pname].grad, 1e-5, 1e-5, pname)


CELLS = [
    ("RNNCell", {}), ("RNNCell", dict(nonlinearity="relu", bias=False)),
    ("LSTMCell", {}), ("LSTMCell", dict(bias=False)), ("GRUCell", {}), ("GRUCell", dict(bias=False)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,kw", CELLS, ids=_ids(CELLS))
def test_cells_match_torch(name, kw, dtype):
    tm, em = _pair(name, 3, 4, dtype=dtype, **kw)
    x = _randn(2, 3, dtype=dtype).requires_grad_()
    _check(tm, em, [x], TOL[dtype])  # zero initial state
    h = _randn(2, 4, dtype=dtype, seed=3).requires_grad_()
    hx = (h, _randn(2, 4, dtype=dtype, seed=4).requires_grad_()) if name == "LSTMCell" else h
    tm.zero_grad()
    em.zero_grad()
    _check(tm, em, [x.detach().requires_grad_(), hx], TOL[dtype])
    # unbatched
    tm.zero_grad()
    em.zero_grad()
    hx1 = tuple(t[0].detach().requires_grad_() for t in hx) if isinstance(hx, tuple) \
        else hx[0].detach().requires_grad_()
    _check(tm, em, [x[0].detach().requires_grad_(), hx1], TOL[dtype])


# -- inter-layer dropout ----------------------------------------------------------------------
def _passthrough_relu_rnn(p: float, size: int = 8) -> nn.RNN:
    """A 2-layer relu RNN whose second layer copies its (dropped-out) input: W_ih2 = I."""
    m = nn.RNN(size, size, num_layers=2, nonlinearity="relu", dropout=p)
    with ember.no_grad():
        m.weight_hh_l0.zero_()
        m.weight_ih_l0.copy_(ember.eye(size) * 0.5 + 0.1)
        m.weight_ih_l1.copy_(ember.eye(size))
        m.weight_hh_l1.zero_()
        for b in (m.bias_ih_l0, m.bias_hh_l0, m.bias_ih_l1, m.bias_hh_l1):
            b.zero_()
    return m


def test_dropout_between_layers_statistics():
    ember.manual_seed(0)
    p = 0.3
    m = _passthrough_relu_rnn(p)
    x = ember.rand(10, 20, 8) + 0.1  # positive, so layer 1's output is positive
    ref, _ = m.eval()(x)
    out, _ = m.train()(x)
    ratio = (out / ref).numpy()
    scale = 1.0 / (1.0 - p)
    assert np.all(np.isclose(ratio, 0.0) | np.isclose(ratio, scale, rtol=1e-5))
    zero_fraction = float(np.isclose(ratio, 0.0).mean())
    assert abs(zero_fraction - p) < 0.05, zero_fraction  # 1600 Bernoulli draws
    out2, _ = m(x)
    assert not np.array_equal(out.numpy(), out2.numpy())  # fresh masks per call


def test_dropout_eval_identity_and_p1_matches_torch():
    tm, em = _pair("LSTM", 3, 4, num_layers=2, dropout=0.4)
    x = _randn(5, 2, 3)
    tm.eval()
    em.eval()
    _check(tm, em, [x.clone().requires_grad_()], 1e-5)  # eval: no dropout, exactly torch
    # p=1 in training zeroes the second layer's input: deterministic, so torch must agree
    tm1, em1 = _pair("GRU", 3, 4, num_layers=2, dropout=1.0)
    _check(tm1, em1, [x.clone().requires_grad_()], 1e-5)


def test_no_dropout_on_last_layer_or_single_layer():
    ember.manual_seed(1)
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        m = nn.GRU(3, 4, dropout=0.5)
    x = ember.randn(5, 2, 3)
    a, _ = m.train()(x)
    b, _ = m.eval()(x)
    close(a, b, 0, 0, "a single layer never drops out")


# -- layouts, init, repr, errors --------------------------------------------------------------
@pytest.mark.parametrize("name,kw", RNN_CONFIGS + CELLS, ids=_ids(RNN_CONFIGS + CELLS))
def test_parameter_layout_and_init(name, kw):
    torch.manual_seed(0)
    tm = getattr(tnn, name)(3, 4, **kw)
    em = getattr(nn, name)(3, 4, **kw)
    t_sd, e_sd = tm.state_dict(), em.state_dict()
    assert list(e_sd) == list(t_sd)
    for key, value in t_sd.items():
        assert tuple(e_sd[key].shape) == tuple(value.shape), key
    bound = 1 / math.sqrt(4)
    values = np.concatenate([p.detach().numpy().ravel() for p in em.parameters()])
    assert values.min() >= -bound and values.max() <= bound
    assert values.std() > bound / 4  # actually drawn, not constant
    assert repr(em) == repr(tm)


def test_all_weights_and_flatten_parameters():
    em = nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    tm = tnn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    assert em._flat_weights_names == tm._flat_weights_names
    assert [[tuple(p.shape) for p in ws] for ws in em.all_weights] == \
        [[tuple(p.shape) for p in ws] for ws in tm.all_weights]
    em.flatten_parameters()


def _raises_like(t_fn, e_fn, match):
    with pytest.raises(Exception) as t_err:
        t_fn()
    with pytest.raises(t_err.type, match=match):
        e_fn()


@pytest.mark.parametrize("build,match", [
    (lambda lib: lib.nn.GRU(3, 4, proj_size=2), "only supported for LSTM"),
    (lambda lib: lib.nn.RNN(3, 4, nonlinearity="gelu"), "Unknown nonlinearity 'gelu'"),
    (lambda lib: lib.nn.LSTM(3, 4, dropout=1.5), "dropout should be a number in range"),
    (lambda lib: lib.nn.LSTM(3, 4, proj_size=4), "proj_size has to be smaller"),
    (lambda lib: lib.nn.LSTM(3, 0), "hidden_size must be greater than zero"),
    (lambda lib: lib.nn.GRU(3, 4, num_layers=0), "num_layers must be greater than zero"),
    (lambda lib: lib.nn.RNN(3, 4, bias=1), "bias should be of type bool"),
])
def test_constructor_errors(build, match):
    _raises_like(lambda: build(torch), lambda: build(ember), match)


@pytest.mark.parametrize("name", ["RNN", "LSTM", "GRU"])
def test_forward_errors(name):
    tm, em = _pair(name, 3, 4, num_layers=2)

    def both(make_input, make_hx, match):
        def run(lib, m):
            conv = (lambda t: t) if lib is torch else to_ember
            hx = make_hx()
            if hx is not None:
                hx = tuple(conv(h) for h in hx) if name == "LSTM" else conv(hx[0])
            return m(conv(make_input()), hx)
        _raises_like(lambda: run(torch, tm), lambda: run(ember, em), match)

    state = lambda *s: (torch.zeros(*s), torch.zeros(*s))  # noqa: E731
    both(lambda: torch.zeros(5, 2, 3, 1), lambda: None, "Expected input to be 2D or 3D")
    both(lambda: torch.zeros(5, 2, 6), lambda: None, "input.size\\(-1\\) must be equal")
    both(lambda: torch.zeros(5, 2, 3), lambda: state(1, 2, 4), "Expected hidden")
    both(lambda: torch.zeros(5, 2, 3), lambda: state(2, 4), "should also be 3-D")
    both(lambda: torch.zeros(5, 3), lambda: state(2, 1, 4), "should also be 2-D")
    both(lambda: torch.zeros(5, 2, 3, dtype=torch.float64), lambda: None, "does not match")


@pytest.mark.parametrize("name", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_errors(name):
    tm, em = _pair(name, 3, 4)
    _raises_like(lambda: tm(torch.zeros(2, 2, 3)), lambda: em(ember.zeros(2, 2, 3)),
                 "Expected input to be 1D or 2D")
    _raises_like(lambda: tm(torch.zeros(2, 5)), lambda: em(ember.zeros(2, 5)),
                 "inconsistent input_size")
