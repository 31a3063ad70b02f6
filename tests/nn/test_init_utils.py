"""nn.init (formulas, statistics, errors), nn.utils (clipping, vector conversion, rnn packing)
and Dropout (statistics, scaling, eval identity)."""

from __future__ import annotations

import math

import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.nn import init
from ember.nn.utils import rnn
from ember.ops.nn_ops import native_dropout, native_dropout_backward
from tests.nn._oracle import close, to_ember


# -- init -------------------------------------------------------------------------------------
def test_calculate_gain_matches_torch():
    for nl, p in [("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None),
                  ("relu", None), ("leaky_relu", None), ("leaky_relu", 0.2), ("selu", None)]:
        assert init.calculate_gain(nl, p) == pytest.approx(torch.nn.init.calculate_gain(nl, p))
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("foo")
    with pytest.raises(ValueError, match="not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def _stats(t):
    return float(t.mean()), float(t.std()), float(t.min()), float(t.max())


def test_init_distributions():
    g = ember.Generator().manual_seed(0)
    w = ember.empty(200, 300)
    init.uniform_(w, -2, 3, generator=g)
    mean, std, lo, hi = _stats(w)
    assert -2 <= lo and hi <= 3 and abs(mean - 0.5) < 0.05
    init.normal_(w, 1.0, 2.0, generator=g)
    mean, std, _, _ = _stats(w)
    assert abs(mean - 1) < 0.05 and abs(std - 2) < 0.05
    init.trunc_normal_(w, 0.0, 1.0, -1.0, 2.0, generator=g)
    _, _, lo, hi = _stats(w)
    assert lo >= -1.0 and hi <= 2.0
    init.xavier_uniform_(w, gain=2.0, generator=g)
    a = 2.0 * math.sqrt(6.0 / 500)
    assert float(w.abs().max()) <= a and abs(float(w.std()) - a / math.sqrt(3)) < 0.01 * a * 5
    init.xavier_normal_(w, generator=g)
    assert abs(float(w.std()) - math.sqrt(2.0 / 500)) < 0.003
    init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu", generator=g)
    b = math.sqrt(2.0) * math.sqrt(3.0 / 200)
    assert float(w.abs().max()) <= b
    init.kaiming_normal_(w, nonlinearity="relu", generator=g)
    assert abs(float(w.std()) - math.sqrt(2.0 / 300)) < 0.003
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(w, mode="fan_avg")
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(ember.empty(3))


def test_init_deterministic_shapes():
    w = ember.empty(3, 5)
    assert init.constant_(w, 0.5).tolist() == [[0.5] * 5] * 3
    assert float(init.ones_(w).sum()) == 15 and float(init.zeros_(w).sum()) == 0
    close(init.eye_(w), torch.eye(3, 5))
    c = ember.empty(4, 2, 3, 3)
    close(init.dirac_(c), torch.nn.init.dirac_(torch.empty(4, 2, 3, 3)))
    c = ember.empty(4, 2, 3)
    close(init.dirac_(c, groups=2), torch.nn.init.dirac_(torch.empty(4, 2, 3), groups=2))
    q = init.orthogonal_(ember.empty(4, 6), gain=1.5)
    close(q @ q.t(), torch.eye(4) * 2.25, 1e-4, 1e-4)
    q = init.orthogonal_(ember.empty(6, 3))
    close(q.t() @ q, torch.eye(3), 1e-4, 1e-4)
    s = init.sparse_(ember.empty(10, 4), 0.3)
    assert [int((s[:, j] == 0).sum()) for j in range(4)] == [3] * 4
    leaf = nn.Parameter(ember.ones(2, 2))
    init.normal_(leaf)  # works on a leaf that requires grad (under no_grad)
    assert leaf.requires_grad and leaf.is_leaf


# -- utils ------------------------------------------------------------------------------------
def _grads_pair():
    tp = [torch.nn.Parameter(torch.randn(3, 2)), torch.nn.Parameter(torch.randn(4))]
    for p in tp:
        p.grad = torch.randn_like(p) * 3
    ep = [nn.Parameter(to_ember(p)) for p in tp]
    for e, t in zip(ep, tp):
        e.grad = to_ember(t.grad)
    return tp, ep


@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
def test_clip_grad_norm(norm_type):
    tp, ep = _grads_pair()
    tn = torch.nn.utils.clip_grad_norm_(tp, 1.0, norm_type)
    en = nn.utils.clip_grad_norm_(ep, 1.0, norm_type)
    close(en, tn)
    for e, t in zip(ep, tp):
        close(e.grad, t.grad)
    tp, ep = _grads_pair()
    close(nn.utils.clip_grad_norm_(ep, 1e6, norm_type), torch.nn.utils.clip_grad_norm_(
        tp, 1e6, norm_type))
    for e, t in zip(ep, tp):
        close(e.grad, t.grad)  # large max_norm: unchanged


def test_clip_grad_nonfinite_and_value():
    p = nn.Parameter(ember.ones(2))
    p.grad = ember.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    tp, ep = _grads_pair()
    torch.nn.utils.clip_grad_value_(tp, 0.5)
    nn.utils.clip_grad_value_(ep, 0.5)
    for e, t in zip(ep, tp):
        close(e.grad, t.grad)
    assert float(nn.utils.clip_grad_norm_([nn.Parameter(ember.ones(1))], 1.0)) == 0.0


def test_parameters_vector_roundtrip():
    m = nn.Linear(3, 2)
    vec = nn.utils.parameters_to_vector(m.parameters())
    assert vec.shape == (8,)
    close(vec[:6], m.weight.reshape(-1))
    new = ember.arange(8, dtype=ember.float32)
    w = m.weight
    nn.utils.vector_to_parameters(new, m.parameters())
    assert m.weight is w and m.weight.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert m.bias.tolist() == [6.0, 7.0]
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], m.parameters())


def test_pad_and_pack_sequences_match_torch():
    seqs = [torch.randn(4, 2), torch.randn(2, 2), torch.randn(3, 2)]
    es = [to_ember(s, True) for s in seqs]
    for bf in (False, True):
        for side in ("right", "left"):
            close(rnn.pad_sequence(es, bf, -1.0, side),
                  torch.nn.utils.rnn.pad_sequence(seqs, bf, -1.0, side))
    padded = torch.nn.utils.rnn.pad_sequence(seqs, batch_first=True)
    lengths = [4, 2, 3]
    tp = torch.nn.utils.rnn.pack_padded_sequence(padded, lengths, True, enforce_sorted=False)
    ep = rnn.pack_padded_sequence(to_ember(padded), lengths, True, enforce_sorted=False)
    close(ep.data, tp.data)
    close(ep.batch_sizes, tp.batch_sizes)
    close(ep.sorted_indices, tp.sorted_indices)
    close(ep.unsorted_indices, tp.unsorted_indices)
    for bf in (False, True):
        t_out, t_len = torch.nn.utils.rnn.pad_packed_sequence(tp, bf, 0.5, total_length=5)
        e_out, e_len = rnn.pad_packed_sequence(ep, bf, 0.5, total_length=5)
        close(e_out, t_out)
        close(e_len, t_len)
    with pytest.raises(RuntimeError, match="must be sorted in decreasing order"):
        rnn.pack_padded_sequence(to_ember(padded), lengths, True)
    packed = rnn.pack_sequence(es, enforce_sorted=False)
    back = rnn.unpack_sequence(packed)
    for a, b in zip(back, seqs):
        close(a, b)
    (packed.data * 2).sum().backward()  # gradients flow through packing
    assert es[0].grad.tolist() == [[2.0, 2.0]] * 4


# -- dropout ----------------------------------------------------------------------------------
def test_dropout_statistics_and_scaling():
    ember.manual_seed(0)
    x = ember.ones(100, 100, requires_grad=True)
    d = nn.Dropout(0.25)
    y = d(x)
    vals = sorted(y.unique().tolist())
    assert len(vals) == 2 and vals[0] == 0.0 and vals[1] == pytest.approx(4 / 3)
    kept = float((y != 0).float().mean())
    assert abs(kept - 0.75) < 0.02
    assert abs(float(y.mean()) - 1.0) < 0.03
    y.sum().backward()
    close(x.grad, (y.detach() != 0).float() * (4 / 3))
    d.eval()
    assert d(x) is x
    with ember.no_grad():  # no_grad does not switch dropout off; only eval() does
        d.train()
        assert float((d(x) == 0).float().mean()) > 0.1


def test_dropout_edge_cases_and_errors():
    x = ember.ones(50, 50)
    assert float(F.dropout(x, 1.0).abs().sum()) == 0
    assert F.dropout(x, 0.0) is x
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but "
                                         "got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="but got -0.1"):
        F.dropout(x, -0.1)
    g1 = ember.Generator().manual_seed(3)
    a = ember.zeros(5, 5).bernoulli_(0.5, generator=g1)
    g2 = ember.Generator().manual_seed(3)
    b = ember.zeros(5, 5).bernoulli_(0.5, generator=g2)
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_native_dropout_matches_torch_semantics(dtype):
    """``native_dropout``: a bool mask with the composite dropout's draws, output and gradient
    ``* mask / (1 - p)`` as torch computes them (on a strided input), a 1-byte saved mask."""
    ed, td = getattr(ember, dtype), getattr(torch, dtype)
    base = torch.randn(40, 30, generator=torch.Generator().manual_seed(2)).to(td)
    tx = base.t()[::2]  # (15, 40), strided
    ex = to_ember(base.float()).to(ed).t()[::2]
    ember.manual_seed(7)
    out, mask = ember.native_dropout(ex.requires_grad_(dtype != "bfloat16"), 0.3, True)
    ember.manual_seed(7)
    ref_mask = ember.zeros(15, 40, dtype=ed).bernoulli_(0.7)  # the composite's stream
    assert mask.dtype == ember.bool and mask.tolist() == (ref_mask == 1).tolist()
    tmask = torch.tensor(mask.numpy())
    close(out.float(), (tx * tmask * (1 / 0.7)).float(), 1e-6, 1e-6)
    if dtype != "bfloat16":
        assert out.grad_fn.name() == "NativeDropoutBackward0"
        assert out.grad_fn._saved_result1.dtype == ember.bool
        g = torch.randn(15, 40, generator=torch.Generator().manual_seed(3)).to(td)
        out.backward(to_ember(g.float()).to(ed))
        close(ex.grad.float(), torch.ops.aten.native_dropout_backward(g, tmask, 1 / 0.7).float(),
              1e-6, 1e-6)
    e_out, e_mask = ember.native_dropout(ex.detach(), 0.3, False)  # eval: copy, all kept
    assert bool(e_mask.all()) and e_out.tolist() == ex.tolist()
    assert e_out.data_ptr() != ex.data_ptr()


def test_native_dropout_edges_and_double_backward():
    x = ember.randn(6, 5, dtype=ember.float64, requires_grad=True)
    zero, none_kept = ember.native_dropout(x, 1.0, True)
    assert not bool(none_kept.any()) and float(zero.abs().sum()) == 0
    (zero * 3).sum().backward()
    assert float(x.grad.abs().sum()) == 0
    _, m_train = ember.native_dropout(x, 0.5, None)  # train=None means training
    assert not bool(m_train.all())
    empty_out, empty_mask = ember.native_dropout(ember.empty(0, 3), 0.5, True)
    assert empty_mask.dtype == ember.float32 and empty_out.shape == (0, 3)  # torch's quirk
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got "
                                           r"p=-0.5"):
        ember.native_dropout(x, 1.5, True)
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired "
                                           "output type Long"):
        ember.native_dropout(ember.arange(4), 0.5, True)
    y, m = ember.native_dropout(x, 0.4, True)
    assert ember.autograd.gradcheck(lambda t: native_dropout_backward(t, m, 1 / 0.6), (x,))
    assert ember.autograd.gradgradcheck(
        lambda t: native_dropout_backward(t, m, 1 / 0.6), (x,))
    g = ember.randn(6, 5, dtype=ember.float64)
    close(native_dropout_backward(g, m[:1], 2.0),
          torch.ops.aten.native_dropout_backward(torch.tensor(g.numpy()),
                                                 torch.tensor(m[:1].numpy()), 2.0))


def test_dropout_uses_the_fused_op_and_keeps_its_masks():
    """F.dropout out of place is native_dropout (same masks as before: the bernoulli_ stream);
    in place it multiplies by the float mask; both agree element for element."""
    x = ember.randn(30, 20)
    ember.manual_seed(5)
    fused = F.dropout(x, 0.2)
    ember.manual_seed(5)
    y = x.clone()
    F.dropout(y, 0.2, inplace=True)
    assert fused.tolist() == y.tolist()
    from ember.utils.dispatch import trace
    with trace() as t:
        F.dropout(x, 0.2)
    assert [e.op for e in t.events] == [native_dropout]


@pytest.mark.parametrize("cls,shape", [("Dropout1d", (20, 30, 8)), ("Dropout2d", (20, 30, 4, 4)),
                                       ("Dropout1d", (30, 8))])
def test_channel_dropout_zeroes_whole_channels(cls, shape):
    ember.manual_seed(1)
    y = getattr(nn, cls)(0.5)(ember.ones(*shape))
    flat = y.reshape(-1, shape[-1] if cls == "Dropout1d" else 16)
    per_channel = set()
    for row in flat.tolist():
        per_channel.add(len(set(row)))
    assert per_channel == {1}  # every channel all-zero or all-2
    frac = float((y == 0).float().mean())
    assert 0.35 < frac < 0.65


def test_alpha_dropout_keeps_selu_statistics():
    ember.manual_seed(2)
    x = ember.randn(200, 200)
    y = nn.AlphaDropout(0.2)(x)
    assert abs(float(y.mean())) < 0.03 and abs(float(y.std()) - 1.0) < 0.03
    assert nn.AlphaDropout(0.2).eval()(x) is x
    vals = y[(x - y).abs() > 1e-3]
    a = 1.0 / math.sqrt((1.7580993408473766 ** 2 * 0.2 + 1) * 0.8)
    dropped = -1.7580993408473766 * a + 1.7580993408473766 * a * 0.2
    assert vals.numel() > 0
    assert float((y - dropped).abs().min()) < 1e-5
