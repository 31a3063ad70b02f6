"""Oracle tests for scaled_dot_product_attention, MultiheadAttention and the Transformer layers:
torch's weights in, torch's outputs, attention weights, input gradients and parameter gradients
out, for every mask kind (bool/float attn_mask, key padding, causal), in train mode with dropout
0 and in eval mode with dropout > 0, float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn as nn
import ember.nn.functional as F
from tests.nn._oracle import close, copy_state, to_ember

tnn = torch.nn
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def _randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def _conv(value):
    return to_ember(value, value.requires_grad) if isinstance(value, torch.Tensor) else value


def _outputs(x) -> list:
    if isinstance(x, (tuple, list)):
        return [t for t in x if t is not None]
    return [x]


def _compare(t_fn, e_fn, t_args, t_kwargs, tol, params=None, seed=1):
    """Call both, compare outputs; backward random cotangents; compare input/param grads."""
    e_args = [_conv(a) for a in t_args]
    e_kwargs = {k: _conv(v) for k, v in t_kwargs.items()}
    t_out, e_out = _outputs(t_fn(*t_args, **t_kwargs)), _outputs(e_fn(*e_args, **e_kwargs))
    assert len(t_out) == len(e_out)
    loss_t = loss_e = 0
    for i, (t, e) in enumerate(zip(t_out, e_out)):
        close(e, t, tol, tol, f"output {i}")
        g = _randn(*t.shape, dtype=t.dtype, seed=seed + i)
        loss_t, loss_e = loss_t + (t * g).sum(), loss_e + (e * to_ember(g)).sum()
    loss_t.backward()
    loss_e.backward()
    for i, (t, e) in enumerate(zip(t_args, e_args)):
        if isinstance(t, torch.Tensor) and t.requires_grad:
            close(e.grad, t.grad, tol, tol, f"grad of input {i}")
    if params is not None:
        tm, em = params
        tp = dict(tm.named_parameters())
        for name, p in em.named_parameters():
            close(p.grad, tp[name].grad, tol, tol, f"grad of {name}")
    return t_out, e_out


def _pair(name, *args, dtype=torch.float32, **kwargs):
    torch.manual_seed(0)
    tm = getattr(tnn, name)(*args, **kwargs).to(dtype)
    em = getattr(nn, name)(*args, **kwargs)
    if dtype == torch.float64:
        em = em.double()
    copy_state(tm, em)
    return tm, em


def _req(*shape, dtype=torch.float32, seed=0):
    return _randn(*shape, dtype=dtype, seed=seed).requires_grad_()


# -- scaled_dot_product_attention -------------------------------------------------------------
def _bool_mask(*shape, seed=3):
    m = torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) > 0.3
    m[..., 0] = True
    return m


SDPA = [
    ("plain", {}),
    ("bool_mask", dict(attn_mask=_bool_mask(3, 5))),
    ("float_mask", dict(attn_mask=_randn(2, 1, 3, 5, seed=4))),
    ("causal", dict(is_causal=True)),
    ("scale", dict(scale=0.37)),
    ("fully_masked_row", dict(attn_mask=torch.tensor([[True] * 5, [False] * 5, [True] * 5]))),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kw", [s[1] for s in SDPA], ids=[s[0] for s in SDPA])
def test_sdpa_matches_torch(kw, dtype):
    kw = {k: (v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
          for k, v in kw.items()}
    q, k, v = _req(2, 2, 3, 4, dtype=dtype), _req(2, 2, 5, 4, dtype=dtype, seed=1), \
        _req(2, 2, 5, 6, dtype=dtype, seed=2)
    _compare(TF.scaled_dot_product_attention, F.scaled_dot_product_attention, [q, k, v], kw,
             TOL[dtype])


def test_sdpa_gqa_broadcast_and_noncontiguous():
    q, k, v = _req(2, 4, 3, 4), _req(2, 2, 5, 4, seed=1), _req(2, 2, 5, 4, seed=2)
    _compare(TF.scaled_dot_product_attention, F.scaled_dot_product_attention, [q, k, v],
             dict(enable_gqa=True), 1e-5)
    # 2-D query against batched keys (broadcast), and transposed (non-contiguous) inputs
    q2 = _req(3, 4)
    kt = _randn(2, 4, 5, seed=5).transpose(-2, -1).requires_grad_()
    vt = _randn(2, 4, 5, seed=6).transpose(-2, -1).requires_grad_()
    _compare(TF.scaled_dot_product_attention, F.scaled_dot_product_attention, [q2, kt, vt], {},
             1e-5)


def test_sdpa_dropout_statistics():
    ember.manual_seed(0)
    p, length = 0.25, 40
    q = ember.zeros(8, length, 4)  # equal scores: every weight is 1/S
    v = ember.eye(length).expand(8, length, length)
    out = F.scaled_dot_product_attention(q, q, v, dropout_p=p).numpy() * length
    scale = 1.0 / (1.0 - p)
    assert np.all(np.isclose(out, 0.0) | np.isclose(out, scale, rtol=1e-5))
    assert abs(float(np.isclose(out, 0.0).mean()) - p) < 0.03  # 12800 draws
    same = F.scaled_dot_product_attention(q, q, v, dropout_p=0.0).numpy() * length
    np.testing.assert_allclose(same, np.ones_like(same), rtol=1e-5)  # dropout_p=0: exact


def test_sdpa_errors():
    q = ember.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q, q.double())
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.zeros(3, 3, dtype=ember.int32))
    with pytest.raises(RuntimeError, match="dropout probability"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=ember.ones(3, 3), is_causal=True)
    tq = torch.zeros(2, 3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        TF.scaled_dot_product_attention(tq, tq, tq, attn_mask=torch.ones(3, 3), is_causal=True)


# -- MultiheadAttention -----------------------------------------------------------------------
def _kpm(batch=2, src=5, as_float=False):
    m = torch.zeros(batch, src, dtype=torch.bool)
    m[0, -2:] = True
    m[1, -1] = True
    return torch.zeros(batch, src).masked_fill(m, float("-inf")) if as_float else m


MHA = [
    ("self", {}, {}, "self"),
    ("cross_batch_first", dict(batch_first=True), {}, "cross"),
    ("no_bias_per_head", dict(bias=False), dict(average_attn_weights=False), "cross"),
    ("bias_kv_zero_attn", dict(add_bias_kv=True, add_zero_attn=True),
     dict(key_padding_mask=_kpm()), "cross"),
    ("kdim_vdim", dict(kdim=3, vdim=5), dict(attn_mask=_bool_mask(4, 5, seed=8) == 0), "kv"),
    ("kpm_bool", {}, dict(key_padding_mask=_kpm()), "cross"),
    ("kpm_float_mask3d", {}, dict(key_padding_mask=_kpm(as_float=True),
                                  attn_mask=_randn(4, 4, 5, seed=9)), "cross"),
    ("causal_no_weights", {}, dict(attn_mask=tnn.Transformer.generate_square_subsequent_mask(5),
                                   is_causal=True, need_weights=False), "self"),
    ("kpm_no_weights", dict(batch_first=True), dict(key_padding_mask=_kpm(),
                                                    need_weights=False), "self"),
    ("unbatched", {}, dict(attn_mask=_bool_mask(5, 5, seed=2) == 0), "unbatched"),
]


def _mha_inputs(kind, batch_first, dtype, mha_kw):
    def seq(length, width, seed):
        shape = (2, length, width) if batch_first else (length, 2, width)
        return _req(*shape, dtype=dtype, seed=seed)
    if kind == "self":
        x = seq(5, 8, 0)
        return [x, x, x]
    if kind == "unbatched":
        x = _req(5, 8, dtype=dtype)
        return [x, x, x]
    return [seq(4, 8, 0), seq(5, mha_kw.get("kdim", 8), 1), seq(5, mha_kw.get("vdim", 8), 2)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("mha_kw,call_kw,kind", [m[1:] for m in MHA], ids=[m[0] for m in MHA])
def test_multihead_attention_matches_torch(mha_kw, call_kw, kind, dtype):
    tm, em = _pair("MultiheadAttention", 8, 2, dtype=dtype, **mha_kw)
    inputs = _mha_inputs(kind, mha_kw.get("batch_first", False), dtype, mha_kw)
    call_kw = {k: (v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
               for k, v in call_kw.items()}
    if kind in ("self", "unbatched"):  # self-attention: the same tensor three times
        x = inputs[0]
        ex = to_ember(x, True)
        t_out, e_out = _outputs(tm(x, x, x, **call_kw)), _outputs(em(ex, ex, ex, **{
            k: _conv(v) for k, v in call_kw.items()}))
        loss_t = loss_e = 0
        for i, (t, e) in enumerate(zip(t_out, e_out)):
            close(e, t, TOL[dtype], TOL[dtype], f"output {i}")
            g = _randn(*t.shape, dtype=dtype, seed=i + 1)
            loss_t, loss_e = loss_t + (t * g).sum(), loss_e + (e * to_ember(g)).sum()
        loss_t.backward()
        loss_e.backward()
        close(ex.grad, x.grad, TOL[dtype], TOL[dtype], "grad of x")
        tp = dict(tm.named_parameters())
        for name, p in em.named_parameters():
            close(p.grad, tp[name].grad, TOL[dtype], TOL[dtype], name)
        return
    _compare(tm, em, inputs, call_kw, TOL[dtype], params=(tm, em))


def test_multihead_attention_eval_ignores_dropout():
    tm, em = _pair("MultiheadAttention", 8, 2, dropout=0.5)
    tm.eval()
    em.eval()
    inputs = [_req(4, 2, 8), _req(5, 2, 8, seed=1), _req(5, 2, 8, seed=2)]
    _compare(tm, em, inputs, dict(key_padding_mask=_kpm()), 1e-5, params=(tm, em))


def test_multihead_attention_train_dropout_changes_weights():
    ember.manual_seed(0)
    em = nn.MultiheadAttention(8, 2, dropout=0.5)
    x = ember.randn(6, 2, 8)
    _, w = em(x, x, x, average_attn_weights=False)
    w = w.numpy()
    # dropped weights are exactly 0, kept ones are scaled so each row sums to ~2 in expectation
    assert 0.3 < float((w == 0).mean()) < 0.7
    em.eval()
    _, w_eval = em(x, x, x, average_attn_weights=False)
    np.testing.assert_allclose(w_eval.sum(-1).numpy(), np.ones((2, 2, 6)), rtol=1e-5)


def test_multihead_attention_layout_and_errors():
    for kw in ({}, dict(kdim=3, vdim=5, bias=False), dict(add_bias_kv=True)):
        tm, em = tnn.MultiheadAttention(8, 2, **kw), nn.MultiheadAttention(8, 2, **kw)
        assert list(em.state_dict()) == list(tm.state_dict())
        assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError, match="must be greater than 0"):
        nn.MultiheadAttention(0, 1)
    em = nn.MultiheadAttention(8, 2)
    x = ember.zeros(5, 2, 8)
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        em(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        em(x, x, x, attn_mask=ember.zeros(4, 5))
    with pytest.raises(AssertionError, match="only bool and floating types"):
        em(x, x, x, attn_mask=ember.zeros(5, 5, dtype=ember.int64))


# -- Transformer layers -----------------------------------------------------------------------
def _causal(n):
    return tnn.Transformer.generate_square_subsequent_mask(n)


ENCODER = [
    ("relu_post", dict(), {}),
    ("gelu_norm_first_bf", dict(activation="gelu", norm_first=True, batch_first=True),
     dict(src_key_padding_mask=_kpm())),
    ("callable_causal", dict(activation=TF.silu, layer_norm_eps=1e-3),
     dict(src_mask=_causal(5), is_causal=True)),
    ("masks_both", dict(), dict(src_mask=_causal(5), src_key_padding_mask=_kpm())),
    ("bool_mask_nobias", dict(bias=False), dict(src_mask=_causal(5).isinf())),
]


def _ember_activation(kw):
    return {**kw, "activation": F.silu} if kw.get("activation") is TF.silu else kw


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layer_kw,call_kw", [e[1:] for e in ENCODER], ids=[e[0] for e in ENCODER])
def test_encoder_layer_matches_torch(layer_kw, call_kw, dtype):
    torch.manual_seed(0)
    tm = tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **layer_kw).to(dtype)
    em = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, **_ember_activation(layer_kw))
    em = em.double() if dtype == torch.float64 else em
    copy_state(tm, em)
    shape = (2, 5, 8) if layer_kw.get("batch_first") else (5, 2, 8)
    call_kw = {k: (v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
               for k, v in call_kw.items()}
    _compare(tm, em, [_req(*shape, dtype=dtype)], call_kw, TOL[dtype], params=(tm, em))


@pytest.mark.parametrize("mode", ["eval_dropout", "unbatched"])
def test_encoder_layer_eval_and_unbatched(mode):
    torch.manual_seed(0)
    tm = tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.3 if mode == "eval_dropout" else 0.0)
    em = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.3 if mode == "eval_dropout" else 0.0)
    copy_state(tm, em)
    if mode == "eval_dropout":
        tm.eval()
        em.eval()
        x = _req(5, 2, 8)
    else:
        x = _req(5, 8)
    _compare(tm, em, [x], dict(src_mask=_causal(5)), 1e-5, params=(tm, em))


@pytest.mark.parametrize("is_causal", [None, True])
def test_encoder_stack_matches_torch(is_causal):
    torch.manual_seed(0)
    t_layer = tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    tm = tnn.TransformerEncoder(t_layer, 2, norm=tnn.LayerNorm(8), enable_nested_tensor=False)
    em = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                          batch_first=True), 2,
                               norm=nn.LayerNorm(8))
    copy_state(tm, em)
    assert list(em.state_dict()) == list(tm.state_dict())
    kw = dict(mask=_causal(5), src_key_padding_mask=_kpm(), is_causal=is_causal)
    _compare(tm, em, [_req(2, 5, 8)], kw, 1e-5, params=(tm, em))


def test_causal_mask_detection_and_generation():
    from ember.nn.modules.transformer import _detect_is_causal_mask
    mask = nn.Transformer.generate_square_subsequent_mask(4)
    close(mask, tnn.Transformer.generate_square_subsequent_mask(4), 0, 0, "mask")
    assert _detect_is_causal_mask(mask, None, 4) is True
    assert _detect_is_causal_mask(mask.isinf(), None, 4) is True
    assert _detect_is_causal_mask(ember.zeros(4, 4), None, 4) is False
    assert _detect_is_causal_mask(mask, False, 4) is False
    assert _detect_is_causal_mask(None, None, 4) is False


DECODER = [
    ("post", dict(), dict(tgt_mask=_causal(4), memory_key_padding_mask=_kpm())),
    ("norm_first_bf_gelu", dict(norm_first=True, batch_first=True, activation="gelu"),
     dict(tgt_mask=_causal(4), tgt_is_causal=True, tgt_key_padding_mask=_kpm(src=4),
          memory_mask=_bool_mask(4, 5, seed=1) == 0)),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("layer_kw,call_kw", [d[1:] for d in DECODER], ids=[d[0] for d in DECODER])
def test_decoder_layer_matches_torch(layer_kw, call_kw, dtype):
    tm, em = _pair("TransformerDecoderLayer", 8, 2, 16, dropout=0.0, dtype=dtype, **layer_kw)
    bf = layer_kw.get("batch_first", False)
    tgt = _req(*((2, 4, 8) if bf else (4, 2, 8)), dtype=dtype)
    mem = _req(*((2, 5, 8) if bf else (5, 2, 8)), dtype=dtype, seed=1)
    call_kw = {k: (v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() else v)
               for k, v in call_kw.items()}
    _compare(tm, em, [tgt, mem], call_kw, TOL[dtype], params=(tm, em))


def test_decoder_stack_and_transformer_match_torch():
    torch.manual_seed(0)
    tm = tnn.Transformer(8, 2, 1, 2, 16, dropout=0.0)
    em = nn.Transformer(8, 2, 1, 2, 16, dropout=0.0)
    assert list(em.state_dict()) == list(tm.state_dict())
    copy_state(tm, em)
    src, tgt = _req(5, 2, 8), _req(4, 2, 8, seed=1)
    kw = dict(tgt_mask=_causal(4), src_key_padding_mask=_kpm(), memory_key_padding_mask=_kpm())
    _compare(tm, em, [src, tgt], kw, 1e-5, params=(tm, em))
    with pytest.raises(RuntimeError, match="batch number of src and tgt"):
        em(ember.zeros(5, 2, 8), ember.zeros(4, 3, 8))


def test_transformer_layer_errors_and_layout():
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")
    em = nn.TransformerEncoderLayer(8, 2, 16)
    tm = tnn.TransformerEncoderLayer(8, 2, 16)
    assert [n for n, _ in em.named_parameters()] == [n for n, _ in tm.named_parameters()]
    x = ember.zeros(5, 2, 8)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        em(x, is_causal=True)


@pytest.mark.parametrize("case", ["bool", "float", "norm", "unaligned", "grad", "train",
                                  "no_nested"])
def test_encoder_nested_tensor_fast_path_zeros_padding(case):
    """torch's nested-tensor path (eval, no grad needed, batch_first, left-aligned key
    padding, no attention mask) leaves zeros at padded positions, before ``norm``; outside
    its conditions the padded positions are computed. ember matches both."""
    torch.manual_seed(0)
    kw = {"norm": (tnn.LayerNorm(8), nn.LayerNorm(8))} if case == "norm" else {}
    flag = {"enable_nested_tensor": case != "no_nested"}
    tm = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True),
                                2, norm=kw.get("norm", (None,))[0], **flag)
    em = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True), 2,
                               norm=kw.get("norm", (None, None))[1], **flag)
    if case != "train":  # training mode (dropout 0): no fast path
        tm.eval(), em.eval()
    if case == "norm":
        tnn.init.constant_(tm.norm.bias, 0.5)  # padded positions become norm(0) = bias
    copy_state(tm, em)
    x = _randn(2, 5, 8)
    mask = _kpm(as_float=case == "float")
    if case == "unaligned":
        mask = mask.flip(-1)  # padding first: not left aligned
    grad = case == "grad"
    with torch.set_grad_enabled(grad):
        t_out = tm(x, src_key_padding_mask=mask)
    with ember.set_grad_enabled(grad):
        e_out = em(to_ember(x), src_key_padding_mask=to_ember(mask))
    close(e_out, t_out, 1e-5, 1e-5, "fast path")
    fill = {"bool": 0.0, "float": 0.0, "norm": 0.5}.get(case)  # the premise about torch
    assert bool((t_out[0, -2:] == fill).all()) if fill is not None else \
        bool((t_out[0, -2:] != 0).all())


def test_encoder_nested_tensor_warning_like_torch():
    with pytest.warns(UserWarning) as t_rec:
        tnn.TransformerEncoder(tnn.TransformerEncoderLayer(8, 2, 16), 1)
    with pytest.warns(UserWarning) as e_rec:
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16), 1)
    assert [str(w.message) for w in e_rec] == [str(w.message) for w in t_rec]
    assert not nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, batch_first=True), 1,
                                     enable_nested_tensor=False).use_nested_tensor
    with pytest.warns(UserWarning, match="num_heads is odd"):
        nn.TransformerEncoder(nn.TransformerEncoderLayer(9, 3, 16, batch_first=True), 1)
