"""A small GPT (decoder-only transformer) built from ember.nn, in the style of nanoGPT.

Token and position embeddings, ``n_layer`` pre-norm blocks (causal self-attention, then an MLP
with GELU), a final LayerNorm and a linear head whose weight is tied to the token embedding.
Used by ``ember.examples.charlm`` and ``bench/train.py``; everything here is plain ember.nn, so
the same code runs wherever ember's ops do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ember
import ember.nn as nn
import ember.nn.functional as F

__all__ = ["GPTConfig", "GPT"]


@dataclass(frozen=True)
class GPTConfig:
    """Model sizes: vocabulary, context length, depth, heads and width."""

    vocab_size: int
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128
    dropout: float = 0.0
    gelu: str = "tanh"  # GPT-2's approximation; "none" is the exact erf form


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention where position ``t`` sees positions ``<= t`` only."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        if cfg.n_embd % cfg.n_head:
            raise ValueError(f"GPT: n_embd must be divisible by n_head; got {cfg.n_embd} and "
                             f"{cfg.n_head}")
        self.n_head = cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.dropout = cfg.dropout
        self.resid_dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)  # (B, T, 3C) -> 3 x (B, T, C)
        q = q.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
        k = k.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
        v = v.view(B, T, self.n_head, hs).transpose(1, 2)  # (B, T, C) -> (B, nh, T, hs)
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, nh, T, hs) -> (B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """Position-wise feed-forward: ``C -> 4C -> GELU -> C``."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.gelu = nn.GELU(approximate=cfg.gelu)
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm residual block: ``x + attn(ln(x))``, then ``x + mlp(ln(x))``."""

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = MLP(cfg)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """A decoder-only transformer language model.

    Shape: ``idx (B, T)`` int64 with ``T <= block_size`` -> logits ``(B, T, vocab_size)``; with
    ``targets (B, T)`` also the mean cross-entropy loss (a 0-d tensor), else ``None``.

    Example:
        >>> import ember
        >>> from ember.examples.gpt import GPT, GPTConfig
        >>> m = GPT(GPTConfig(vocab_size=10, block_size=8, n_layer=1, n_head=2, n_embd=8))
        >>> logits, loss = m(ember.zeros(2, 8, dtype=ember.int64))
        >>> tuple(logits.shape), loss
        ((2, 8, 10), None)
    """

    def __init__(self, cfg: GPTConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying: one Parameter, counted once
        self.apply(self._init_weights)
        # GPT-2's scaled init of the projections that write into the residual stream
        for name, p in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)

    def forward(self, idx: ember.Tensor, targets: ember.Tensor | None = None):
        B, T = idx.shape
        if T > self.cfg.block_size:
            raise ValueError(f"GPT: sequence length {T} exceeds block_size "
                             f"{self.cfg.block_size}")
        pos = ember.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))  # (B, T, C) + (T, C) -> (B, T, C)
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))  # (B, T, C) -> (B, T, V)
        if targets is None:
            return logits, None
        V = logits.shape[-1]
        loss = F.cross_entropy(logits.view(B * T, V), targets.reshape(B * T))  # (B*T, V)
        return logits, loss

    @ember.no_grad()
    def generate(self, idx: ember.Tensor, max_new_tokens: int, temperature: float = 1.0,
                 generator: ember.Generator | None = None) -> ember.Tensor:
        """Extend ``idx (B, T)`` by ``max_new_tokens`` sampled tokens -> ``(B, T + n)``."""
        for _ in range(max_new_tokens):
            ctx = idx[:, -self.cfg.block_size:]  # (B, T) -> (B, min(T, block_size))
            logits, _ = self(ctx)
            logits = logits[:, -1, :] / temperature  # (B, T, V) -> (B, V)
            probs = F.softmax(logits, dim=-1)
            nxt = ember.multinomial(probs, 1, generator=generator)  # (B, V) -> (B, 1)
            idx = ember.cat([idx, nxt], dim=1)  # (B, T) -> (B, T + 1)
        return idx
