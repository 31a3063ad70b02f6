"""MultiheadAttention and the Transformer layers, with torch's parameter names and defaults.

Everything is composed from ember.nn.functional (attention, linear, layer_norm, dropout), so
state_dicts load across libraries and gradients come from the ops' derivative rules. torch's
inference fast paths (fused kernels, nested tensors) are numerically the same math except one:
torch's encoder with ``enable_nested_tensor`` under ``no_grad`` in eval writes zeros at padded
positions; ember always computes them (see the module tests).
"""

from __future__ import annotations

import copy
import warnings

from ember.autograd.grad_mode import is_grad_enabled
from ember.core import dtype as dt
from ember.nn import init
from ember.nn.functional import _core as F
from ember.nn.functional.attention import multi_head_attention_forward
from ember.nn.modules.container import ModuleList
from ember.nn.modules.dropout import Dropout
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module
from ember.nn.modules.normalization import LayerNorm
from ember.ops.creation import empty, full
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["MultiheadAttention", "TransformerEncoderLayer", "TransformerEncoder",
           "TransformerDecoderLayer", "TransformerDecoder", "Transformer"]


class NonDynamicallyQuantizableLinear(Linear):
    """torch's name for MultiheadAttention's ``out_proj`` (a plain Linear)."""


class MultiheadAttention(Module):
    """Multi-head attention, ``softmax(Q K^T / sqrt(d)) V`` per head, then ``out_proj``.

    Args:
        embed_dim: model width ``E``; num_heads: heads (``E`` must divide evenly).
        dropout: dropout on the attention weights (training only).
        bias: biases on the input and output projections.
        add_bias_kv: learnt ``bias_k``/``bias_v`` appended to the key/value sequences.
        add_zero_attn: a zero key/value appended after the projections.
        kdim, vdim: key/value widths (default ``E``); differing widths use separate
            ``q_proj_weight``/``k_proj_weight``/``v_proj_weight`` instead of the packed
            ``in_proj_weight`` ``(3E, E)`` (rows q, k, v, as torch).
        batch_first: ``(N, L, E)`` instead of ``(L, N, E)``.

    Shape: query ``(L, N, E)``, key ``(S, N, kdim)``, value ``(S, N, vdim)`` (or unbatched
    ``(L, E)``...); output ``(L, N, E)`` and weights ``(N, L, S)`` (per head
    ``(N, H, L, S)`` with ``average_attn_weights=False``).

    Example:
        >>> import ember, ember.nn
        >>> mha = ember.nn.MultiheadAttention(8, 2)
        >>> x = ember.randn(5, 3, 8)
        >>> out, w = mha(x, x, x)
        >>> tuple(out.shape), tuple(w.shape)
        ((5, 3, 8), (3, 5, 5))
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device=None,
                 dtype=None) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **fk))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **fk))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **fk))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **fk))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(empty(3 * embed_dim, **fk))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **fk)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **fk))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **fk))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            init.xavier_normal_(self.bias_v)

    def forward(self, query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Tensor | None = None, need_weights: bool = True,
                attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend ``query`` to ``key``/``value``; returns ``(output, weights or None)``.

        ``key_padding_mask`` ``(N, S)`` and ``attn_mask`` ``(L, S)``/``(N*H, L, S)``: boolean
        True (or float ``-inf``) = may not attend; float masks are added to the scores.
        ``is_causal`` is a hint that ``attn_mask`` is the causal mask (which must be given).
        """
        batched = query.dim() == 3
        if self.batch_first and batched:
            query, key, value = _seq_first(query, key, value)
        sep = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            use_separate_proj_weight=sep, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and batched:
            out = out.transpose(1, 0)  # (L, N, E) -> (N, L, E)
        return out, weights


def _seq_first(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``(N, L, E) -> (L, N, E)``, keeping ``query is key is value`` (self-attention) true."""
    q = query.transpose(1, 0)
    k = q if key is query else key.transpose(1, 0)
    v = k if value is key else value.transpose(1, 0)
    return q, k, v


# -- helpers shared by the transformer layers -------------------------------------------------
def _activation(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    if isinstance(activation, str):
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return activation


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
    """``(sz, sz)`` float mask: ``-inf`` above the diagonal, 0 on and below it."""
    return full((sz, sz), float("-inf"), device=device, dtype=dtype).triu(1)


def _detect_is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int | None):
    """torch's rule: an explicit ``is_causal`` wins; else a mask equal to the causal one is."""
    if is_causal is not None or mask is None:
        return bool(is_causal)
    sz = size if size is not None else mask.shape[-2]
    if mask.dtype == dt.bool_:
        causal = _generate_square_subsequent_mask(sz).isinf()
    else:
        causal = _generate_square_subsequent_mask(sz, dtype=mask.dtype)
    if tuple(mask.shape) != tuple(causal.shape):
        return False
    return bool((mask == causal).all())


def _seq_len(src: Tensor, batch_first: bool) -> int:
    return src.shape[0] if src.dim() == 2 else src.shape[1 if batch_first else 0]


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _ff_modules(layer: Module, d_model: int, dim_feedforward: int, dropout: float, bias: bool,
                fk: dict) -> None:
    layer.linear1 = Linear(d_model, dim_feedforward, bias=bias, **fk)
    layer.dropout = Dropout(dropout)
    layer.linear2 = Linear(dim_feedforward, d_model, bias=bias, **fk)


def _ff_block(layer: Module, x: Tensor, out_dropout: Module) -> Tensor:
    """``linear2(dropout(activation(linear1(x))))`` then the residual-branch dropout."""
    return out_dropout(layer.linear2(layer.dropout(layer.activation(layer.linear1(x)))))


def _attn_block(attn: Module, x: Tensor, mem: Tensor, mask, padding, is_causal: bool,
                out_dropout: Module) -> Tensor:
    out = attn(x, mem, mem, attn_mask=mask, key_padding_mask=padding, need_weights=False,
               is_causal=is_causal)[0]
    return out_dropout(out)


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual and LayerNorm.

    Post-norm (default): ``x = norm1(x + sa(x)); x = norm2(x + ff(x))``; with ``norm_first``:
    ``x = x + sa(norm1(x)); x = x + ff(norm2(x))``.

    Shape: src ``(S, N, E)`` (``(N, S, E)`` if batch_first, or unbatched ``(S, E)``) -> same.

    Example:
        >>> import ember, ember.nn
        >>> layer = ember.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
        >>> layer(ember.randn(5, 3, 8)).shape
        ember.Size([5, 3, 8])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **fk)
        _ff_modules(self, d_model, dim_feedforward, dropout, bias, fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation_relu_or_gelu = {"relu": 1, "gelu": 2}.get(activation, 0) \
            if isinstance(activation, str) else 0
        self.activation = _activation(activation)

    def forward(self, src: Tensor, src_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None, is_causal: bool = False) -> Tensor:
        """Masks as in :class:`MultiheadAttention` (True/-inf = may not attend)."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + _ff_block(self, self.norm2(x), self.dropout2)
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + _ff_block(self, x, self.dropout2))

    def _sa_block(self, x, mask, padding, is_causal):
        return _attn_block(self.self_attn, x, x, mask, padding, is_causal, self.dropout1)


class TransformerEncoder(Module):
    """``num_layers`` deep copies of ``encoder_layer`` applied in turn, then ``norm``.

    ``is_causal=None`` detects a causal ``mask`` (equal to
    :meth:`Transformer.generate_square_subsequent_mask`) as torch does.

    Example:
        >>> layer = ember.nn.TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16,
        ...                                          batch_first=True)
        >>> encoder = ember.nn.TransformerEncoder(layer, num_layers=2)
        >>> encoder(ember.randn(3, 5, 8)).shape  # (batch, sequence, d_model)
        ember.Size([3, 5, 8])
    """

    def __init__(self, encoder_layer: TransformerEncoderLayer, num_layers: int,
                 norm: Module | None = None, enable_nested_tensor: bool = True,
                 mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        why_not = _why_not_nested(encoder_layer)
        if enable_nested_tensor and why_not:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False "
                          f"because {why_not}", stacklevel=2)
        self.use_nested_tensor = enable_nested_tensor and not why_not
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """Run every layer with the same masks; shapes as :class:`TransformerEncoderLayer`.

        Where torch would run its nested-tensor inference path (``use_nested_tensor``, eval,
        batched input, a left-aligned ``src_key_padding_mask`` and no ``mask``, no parameter
        needing grad) the padded positions of the output are zeros before ``norm``, as torch's
        conversion back from the nested tensor leaves them; the other positions are the same
        either way.
        """
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        is_causal = _detect_is_causal_mask(mask, is_causal, _seq_len(src, batch_first))
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, is_causal=is_causal,
                        src_key_padding_mask=src_key_padding_mask)
        if self._nested_path(src, mask, src_key_padding_mask):
            padded = src_key_padding_mask if src_key_padding_mask.dtype is dt.bool_ else \
                src_key_padding_mask != 0
            out = out.masked_fill(padded.unsqueeze(-1), 0.0)
        return self.norm(out) if self.norm is not None else out

    def _nested_path(self, src: Tensor, mask, padding) -> bool:
        """torch's conditions for converting ``src`` to a nested tensor (TransformerEncoder)."""
        if not self.use_nested_tensor or not len(self.layers) or padding is None:
            return False
        first = self.layers[0]
        if first.training or src.dim() != 3 or mask is not None:
            return False
        if self.mask_check and not _left_aligned(padding):
            return False
        attn = first.self_attn
        params = (src, attn.in_proj_weight, attn.in_proj_bias, attn.out_proj.weight,
                  attn.out_proj.bias, first.norm1.weight, first.norm1.bias, first.norm2.weight,
                  first.norm2.bias, first.linear1.weight, first.linear1.bias,
                  first.linear2.weight, first.linear2.bias)
        return not (is_grad_enabled() and any(t is not None and t.requires_grad
                                              for t in params))


def _why_not_nested(layer) -> str:
    """torch's reason (empty when none) an encoder of ``layer`` cannot use nested tensors."""
    name = "encoder_layer"
    if not isinstance(layer, TransformerEncoderLayer):
        return f"{name} was not TransformerEncoderLayer"
    attn = layer.self_attn
    if layer.norm_first:
        return f"{name}.norm_first was True"
    if not attn.batch_first:
        return (f"{name}.self_attn.batch_first was not True(use batch_first for better "
                "inference performance)")
    if not attn._qkv_same_embed_dim:
        return f"{name}.self_attn._qkv_same_embed_dim was not True"
    if attn.in_proj_bias is None:
        return f"{name}.self_attn was passed bias=False"
    if not layer.activation_relu_or_gelu:
        return f"{name}.activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return f"{name}.norm1.eps was not equal to {name}.norm2.eps"
    if attn.num_heads % 2 == 1:
        return f"{name}.self_attn.num_heads is odd"
    return ""


def _left_aligned(padding: Tensor) -> bool:
    """Every row keeps a prefix and pads the rest (torch's ``mask_check``)."""
    keep = (padding == 0) if padding.dtype is not dt.bool_ else padding.logical_not()
    return bool((keep[..., 1:] <= keep[..., :-1]).all()) if keep.shape[-1] > 1 else True


class TransformerDecoderLayer(Module):
    """Self-attention, cross-attention over ``memory``, then feed-forward; residuals + norms.

    Shape: tgt ``(T, N, E)``, memory ``(S, N, E)`` (batch-first or unbatched alike) -> tgt's.

    Example:
        >>> import ember, ember.nn
        >>> layer = ember.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16)
        >>> layer(ember.randn(4, 3, 8), ember.randn(6, 3, 8)).shape
        ember.Size([4, 3, 8])
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **fk)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **fk)
        _ff_modules(self, d_model, dim_feedforward, dropout, bias, fk)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """Masks as in :class:`MultiheadAttention` (True/-inf = may not attend)."""
        x = tgt
        sa = (tgt_mask, tgt_key_padding_mask, tgt_is_causal)
        ca = (memory_mask, memory_key_padding_mask, memory_is_causal)
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *sa)
            x = x + self._mha_block(self.norm2(x), memory, *ca)
            return x + _ff_block(self, self.norm3(x), self.dropout3)
        x = self.norm1(x + self._sa_block(x, *sa))
        x = self.norm2(x + self._mha_block(x, memory, *ca))
        return self.norm3(x + _ff_block(self, x, self.dropout3))

    def _sa_block(self, x, mask, padding, is_causal):
        return _attn_block(self.self_attn, x, x, mask, padding, is_causal, self.dropout1)

    def _mha_block(self, x, mem, mask, padding, is_causal):
        return _attn_block(self.multihead_attn, x, mem, mask, padding, is_causal,
                           self.dropout2)


class TransformerDecoder(Module):
    """``num_layers`` deep copies of ``decoder_layer`` applied in turn, then ``norm``.

    Example:
        >>> layer = ember.nn.TransformerDecoderLayer(d_model=8, nhead=2, dim_feedforward=16)
        >>> decoder = ember.nn.TransformerDecoder(layer, num_layers=2)
        >>> decoder(ember.randn(4, 3, 8), ember.randn(5, 3, 8)).shape
        ember.Size([4, 3, 8])
    """

    def __init__(self, decoder_layer: TransformerDecoderLayer, num_layers: int,
                 norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False) -> Tensor:
        """Run every layer over ``memory``; shapes as :class:`TransformerDecoderLayer`."""
        batch_first = self.layers[0].self_attn.batch_first if len(self.layers) else False
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal,
                                               _seq_len(tgt, batch_first))
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask,
                        memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        return self.norm(out) if self.norm is not None else out


class Transformer(Module):
    """Encoder-decoder Transformer (``encoder`` and ``decoder`` each end in a LayerNorm).

    Every parameter with more than one dim is re-initialised with ``xavier_uniform_``, as torch.

    Shape: src ``(S, N, E)``, tgt ``(T, N, E)`` (batch-first or unbatched alike) -> tgt's.

    Example:
        >>> model = ember.nn.Transformer(d_model=8, nhead=2, num_encoder_layers=1,
        ...                              num_decoder_layers=1, dim_feedforward=16,
        ...                              batch_first=True)
        >>> model(ember.randn(3, 5, 8), ember.randn(3, 4, 8)).shape  # (batch, target, d_model)
        ember.Size([3, 4, 8])
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation="relu", custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        fk = {"device": device, "dtype": dtype}
        common = {"dim_feedforward": dim_feedforward, "dropout": dropout,
                  "activation": activation, "layer_norm_eps": layer_norm_eps,
                  "batch_first": batch_first, "norm_first": norm_first, "bias": bias, **fk}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, **common)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, **common)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **fk)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self.d_model = d_model
        self.nhead = nhead
        self.batch_first = batch_first
        for p in self.parameters():
            if p.dim() > 1:
                init.xavier_uniform_(p)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None,
                tgt_mask: Tensor | None = None, memory_mask: Tensor | None = None,
                src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encode ``src`` then decode ``tgt`` against the encoded memory."""
        batch_dim = 0 if self.batch_first else 1
        if src.dim() == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None) -> Tensor:
        """``(sz, sz)`` float causal mask: ``-inf`` above the diagonal, 0 elsewhere."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

