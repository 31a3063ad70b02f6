"""Attention: ``scaled_dot_product_attention`` and ``multi_head_attention_forward``.

Both are composites of differentiable ember ops (matmul/bmm/baddbmm, softmax, where, dropout),
so autograd, the meta device and every dtype come for free. Mask conventions differ and follow
torch exactly: in ``scaled_dot_product_attention`` a boolean ``attn_mask`` marks the positions
that *take part*; in multi-head attention boolean masks mark the positions to *ignore*.
"""

from __future__ import annotations

import math

from ember.backends.autocast import autocast_function
from ember.core import dtype as dt
from ember.nn.functional._core import dropout, linear, softmax
from ember.ops.creation import ones, zeros
from ember.ops.linalg import baddbmm, bmm, matmul
from ember.ops.pointwise import where
from ember.ops.shape import cat, repeat_interleave
from ember.tensor import Tensor

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]

_NEG_INF = float("-inf")


# -- scaled dot-product attention -------------------------------------------------------------
def _check_sdpa(query: Tensor, key: Tensor, value: Tensor, attn_mask, dropout_p: float,
                is_causal: bool) -> None:
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {query.dtype} key.dtype: {key.dtype} and value.dtype: "
                           f"{value.dtype} instead.")
    mask_dtype = attn_mask.dtype if attn_mask is not None else dt.bool_
    if mask_dtype != dt.bool_ and not mask_dtype.is_floating_point:
        raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {attn_mask.dtype} and  query.dtype: "
                           f"{query.dtype} instead.")
    if attn_mask is not None and is_causal:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if dropout_p < 0.0 or dropout_p > 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")


def _masked_softmax(scores: Tensor) -> Tensor:
    """Softmax over the last dim whose fully masked (all ``-inf``) rows give zeros, not NaN.

    torch's math kernel does the same (``_safe_softmax``): such rows attend to nothing.
    The row is set to 0 before the softmax so no NaN ever reaches the backward pass.
    """
    dead = scores.amax(-1, keepdim=True) == _NEG_INF
    return softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)


def _gqa(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """Repeat key/value heads (dim -3) so ``Hq`` query heads share ``Hkv`` key/value heads."""
    hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
    if hq % hk or hq % hv:
        raise RuntimeError(f"scaled_dot_product_attention: number of heads in key and value "
                           f"must divide the number of heads in query (enable_gqa=True); got "
                           f"query {hq}, key {hk}, value {hv}")
    return (repeat_interleave(key, hq // hk, dim=-3),
            repeat_interleave(value, hq // hv, dim=-3))


@autocast_function("lower")
def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor,
                                 attn_mask: Tensor | None = None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` with optional dropout on the attention weights.

    Args:
        query, key, value: ``(..., L, E)``, ``(..., S, E)``, ``(..., S, Ev)``; leading dims
            broadcast.
        attn_mask: boolean (True = may attend) or float (added to the scores), broadcastable
            to ``(..., L, S)``.
        dropout_p: dropout probability applied to the attention weights (always applied when
            > 0, as torch; pass ``0.0`` in eval).
        is_causal: mask out the strict upper triangle (top-left aligned ``L x S``); not
            together with ``attn_mask`` (RuntimeError, as torch's differentiable path).
        scale: defaults to ``1/sqrt(E)``.
        enable_gqa: allow fewer key/value heads (dim -3) than query heads.

    Returns: ``(..., L, Ev)``. Rows where every key is masked give zeros, as torch's kernels.

    Example:
        >>> import ember, ember.nn.functional as F
        >>> q = ember.ones(2, 3, 4)
        >>> F.scaled_dot_product_attention(q, q, q, is_causal=True).shape
        ember.Size([2, 3, 4])
    """
    _check_sdpa(query, key, value, attn_mask, dropout_p, is_causal)
    if enable_gqa:
        key, value = _gqa(query, key, value)
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    # (..., L, E) @ (..., E, S); scaling q is cheaper than scaling the scores when E < S
    scores = matmul(query * scale, key.transpose(-2, -1))
    if is_causal:  # top-left aligned: every row keeps key 0, so no row is fully masked
        attn_mask = ones(query.shape[-2], key.shape[-2], dtype=dt.bool_,
                         device=query.device).tril()
    if attn_mask is not None:
        if attn_mask.dtype == dt.bool_:
            scores = where(attn_mask, scores, _NEG_INF)
        else:
            scores = scores + attn_mask
    attn = softmax(scores, -1) if attn_mask is None or is_causal else _masked_softmax(scores)
    if dropout_p > 0.0:
        attn = dropout(attn, dropout_p, training=True)
    return matmul(attn, value)  # (..., L, S) @ (..., S, Ev)


# -- multi-head attention ---------------------------------------------------------------------
def _canonical_mask(mask: Tensor | None, name: str, dtype) -> Tensor | None:
    """A boolean mask (True = ignore) as an additive float mask; float masks pass through."""
    if mask is None:
        return None
    if mask.dtype == dt.bool_:
        return zeros(mask.shape, dtype=dtype).masked_fill(mask, _NEG_INF)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    """``linear`` over the last dim as one 2-D GEMM (``(L, N, E) -> (L*N, E)``): NumPy's
    batched matmul against a broadcast, transposed weight is far slower than a single GEMM."""
    lead = x.shape[:-1]
    return linear(x.reshape(-1, x.shape[-1]), w, b).reshape(*lead, w.shape[0])


def _in_projection(query, key, value, w, b, sep) -> tuple[Tensor, Tensor, Tensor]:
    """Project q, k, v: one GEMM for self-attention with a packed weight, three otherwise."""
    bq = bk = bv = None
    if b is not None:
        bq, bk, bv = b.chunk(3)
    if sep is not None:
        wq, wk, wv = sep
    else:
        if query is key and key is value:
            # (L, N, E) @ (E, 3E) -> (L, N, 3E) -> three (L, N, E)
            return tuple(_linear(query, w, b).chunk(3, -1))
        wq, wk, wv = w.chunk(3)
    return _linear(query, wq, bq), _linear(key, wk, bk), _linear(value, wv, bv)


def _check_attn_mask(attn_mask: Tensor, tgt_len: int, src_len: int, bh: int) -> Tensor:
    if attn_mask.dim() == 2:
        if tuple(attn_mask.shape) != (tgt_len, src_len):
            raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should "
                               f"be {(tgt_len, src_len)}.")
        return attn_mask.unsqueeze(0)
    if attn_mask.dim() == 3:
        if tuple(attn_mask.shape) != (bh, tgt_len, src_len):
            raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should "
                               f"be {(bh, tgt_len, src_len)}.")
        return attn_mask
    raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")


def _pad_col(mask: Tensor | None) -> Tensor | None:
    """Append one zero column (a key every query may attend) to an additive mask."""
    if mask is None:
        return None
    return cat([mask, zeros((*mask.shape[:-1], 1), dtype=mask.dtype)], -1)


def _heads(x: Tensor, bh: int, head_dim: int) -> Tensor:
    """``(S, N, E) -> (N*H, S, head_dim)``."""
    return x.reshape(x.shape[0], bh, head_dim).transpose(0, 1)


def _unbatched(query, key, value, key_padding_mask):
    if query.dim() == 3:
        return False, query, key, value, key_padding_mask
    if query.dim() != 2:
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received "
                             f"{query.dim()}-D query tensor")
    kpm = key_padding_mask.unsqueeze(0) if key_padding_mask is not None else None
    return True, query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1), kpm


def _merge_padding(attn_mask, kpm, bsz: int, num_heads: int, src_len: int):
    """Fold the ``(N, S)`` key padding mask into the ``(N*H, L|1, S)`` attention mask."""
    if kpm is None:
        return attn_mask
    if tuple(kpm.shape) != (bsz, src_len):
        raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but got "
                             f"{tuple(kpm.shape)}")
    # (N, S) -> (N, H, 1, S) -> (N*H, 1, S)
    kpm = kpm.reshape(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1)
    kpm = kpm.reshape(bsz * num_heads, 1, src_len)
    return kpm if attn_mask is None else attn_mask + kpm


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor,
                                 embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Tensor | None, in_proj_bias: Tensor | None,
                                 bias_k: Tensor | None, bias_v: Tensor | None,
                                 add_zero_attn: bool, dropout_p: float,
                                 out_proj_weight: Tensor, out_proj_bias: Tensor | None,
                                 training: bool = True, key_padding_mask: Tensor | None = None,
                                 need_weights: bool = True, attn_mask: Tensor | None = None,
                                 use_separate_proj_weight: bool = False,
                                 q_proj_weight: Tensor | None = None,
                                 k_proj_weight: Tensor | None = None,
                                 v_proj_weight: Tensor | None = None,
                                 static_k: Tensor | None = None, static_v: Tensor | None = None,
                                 average_attn_weights: bool = True, is_causal: bool = False):
    """torch's multi-head attention on sequence-first inputs.

    Shape: query ``(L, N, E)`` (or unbatched ``(L, E)``), key ``(S, N, kdim)``, value
    ``(S, N, vdim)``; ``key_padding_mask`` ``(N, S)`` (True/-inf = ignore that key);
    ``attn_mask`` ``(L, S)`` or ``(N*num_heads, L, S)`` (True/-inf = may not attend).

    Returns: ``(attn_output (L, N, E), attn_weights)``; the weights are ``(N, L, S)`` averaged
    over heads, ``(N, num_heads, L, S)`` if not ``average_attn_weights``, or None if not
    ``need_weights``.

    Example:
        >>> import ember.nn.functional as F
        >>> E, heads = 4, 2
        >>> q = ember.randn(3, 1, E)  # (L, N, E)
        >>> out, weights = F.multi_head_attention_forward(
        ...     q, q, q, E, heads, ember.randn(3 * E, E), ember.zeros(3 * E), None, None,
        ...     False, 0.0, ember.randn(E, E), ember.zeros(E))
        >>> out.shape, weights.shape
        (ember.Size([3, 1, 4]), ember.Size([1, 3, 3]))
    """
    unbatched, query, key, value, key_padding_mask = _unbatched(query, key, value,
                                                                key_padding_mask)
    tgt_len, bsz, embed_dim = query.shape
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but "
                             f"got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the "
                           "Transformer module method `generate_square_subsequent_mask` to "
                           "create this mask.")
    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
    sdpa_causal = is_causal and key_padding_mask is None and not need_weights
    attn_mask = None if sdpa_causal else _canonical_mask(attn_mask, "attn_mask", query.dtype)
    bh = bsz * num_heads
    sep = (q_proj_weight, k_proj_weight, v_proj_weight) if use_separate_proj_weight else None
    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, sep)
    if attn_mask is not None:
        attn_mask = _check_attn_mask(attn_mask, tgt_len, key.shape[0], bh)
    if bias_k is not None and bias_v is not None:
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])  # (S, N, E) -> (S+1, N, E)
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask, key_padding_mask = _pad_col(attn_mask), _pad_col(key_padding_mask)
    q = _heads(q, bh, head_dim)
    k = _heads(k, bh, head_dim) if static_k is None else static_k
    v = _heads(v, bh, head_dim) if static_v is None else static_v
    if add_zero_attn:
        k = cat([k, zeros((bh, 1, head_dim), dtype=k.dtype)], 1)
        v = cat([v, zeros((bh, 1, head_dim), dtype=v.dtype)], 1)
        attn_mask, key_padding_mask = _pad_col(attn_mask), _pad_col(key_padding_mask)
    src_len = k.shape[1]
    attn_mask = _merge_padding(attn_mask, key_padding_mask, bsz, num_heads, src_len)
    if not training:
        dropout_p = 0.0
    if need_weights:
        out, weights = _attend_with_weights(q, k, v, attn_mask, dropout_p)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
    else:
        out, weights = _attend_fused(q, k, v, attn_mask, dropout_p, sdpa_causal, bsz), None
    # (N*H, L, hd) -> (L, N*H, hd) -> (L*N, E) -> out_proj -> (L, N, E)
    out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
    out = linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, -1)
    if unbatched:
        out = out.squeeze(1)
        weights = weights.squeeze(0) if weights is not None else None
    return out, weights


def _attend_with_weights(q, k, v, attn_mask, dropout_p):
    """Explicit weights: ``softmax(q/sqrt(hd) k^T + mask)``, as torch's need_weights path."""
    q = q * math.sqrt(1.0 / q.shape[-1])
    kt = k.transpose(-2, -1)  # (N*H, hd, S)
    scores = bmm(q, kt) if attn_mask is None else baddbmm(attn_mask, q, kt)
    weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return bmm(weights, v), weights


def _attend_fused(q, k, v, attn_mask, dropout_p, is_causal, bsz):
    """The need_weights=False path: scaled_dot_product_attention per (N, H) pair."""
    bh, tgt_len, head_dim = q.shape
    heads = bh // bsz
    if attn_mask is not None:  # (1|N*H, L|1, S) -> (1|N, 1|H, L|1, S)
        if attn_mask.shape[0] == 1:
            attn_mask = attn_mask.unsqueeze(0)
        else:
            attn_mask = attn_mask.reshape(bsz, heads, -1, attn_mask.shape[-1])
    q = q.reshape(bsz, heads, tgt_len, head_dim)
    k = k.reshape(bsz, heads, k.shape[1], head_dim)
    v = v.reshape(bsz, heads, v.shape[1], head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    return out.reshape(bh, tgt_len, head_dim)
