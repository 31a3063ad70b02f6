"""Batching rules for pooling, upsampling, unfolding and padding.

These kernels take an optional leading batch dim before the channels. The vmap batch joins
the example's own batch dim (or becomes it) so the kernel sees the rank it accepts.
"""

from __future__ import annotations

import math

from ember.func._batched import front, wrap
from ember.func._rules import RULES, _arg, _only_self_batched
from ember.tensor import Tensor


def _folded(op, info, args, kwargs, max_rank: int):
    """``op`` on the value with its leading dims merged until it has at most ``max_rank``."""
    v = front(args[0])
    lead = v.shape[:max(1, v.dim() - max_rank + 1)]
    if len(lead) > 1:
        v = v.reshape(math.prod(lead), *v.shape[len(lead):])
    out = op(v, *args[1:], **kwargs)

    def unfold(o):
        return wrap(o.reshape(*lead, *o.shape[1:]) if len(lead) > 1 else o, 0, info.level)

    return unfold(out) if isinstance(out, Tensor) else tuple(unfold(o) for o in out)


def _spatial(spatial: int, exact: bool = False):
    """Kernels over ``spatial`` trailing dims after (batch, channels); ``exact``: the example
    must have both."""
    def rule(op, info, args, kwargs):
        if not _only_self_batched(args, kwargs, info.level):
            return NotImplemented
        if args[0].dim() < spatial + 1 or (exact and args[0].dim() != spatial + 2):
            return NotImplemented  # the per-example call raises torch's error
        return _folded(op, info, args, kwargs, spatial + 2)

    return rule


for _name, _n in (("avg_pool2d", 2), ("max_pool2d_with_indices", 2), ("adaptive_avg_pool2d", 2),
                  ("adaptive_max_pool2d", 2), ("avg_pool3d", 3), ("max_pool3d_with_indices", 3),
                  ("adaptive_avg_pool3d", 3), ("adaptive_max_pool3d", 3), ("im2col", 2)):
    RULES[_name] = _spatial(_n)
for _name in ("upsample_bilinear2d", "upsample_nearest2d"):
    RULES[_name] = _spatial(2, exact=True)


def _pad(op, info, args, kwargs):
    """``pad``: constant padding takes any rank; the other modes (batch, channels, dims)."""
    if not _only_self_batched(args, kwargs, info.level):
        return NotImplemented
    _, mode = _arg(op, args, kwargs, "mode")
    _, pad = _arg(op, args, kwargs, "pad")
    if mode == "constant":
        return wrap(op(front(args[0]), *args[1:], **kwargs), 0, info.level)
    spatial = len(pad) // 2
    if args[0].dim() < spatial + 1:
        return NotImplemented
    return _folded(op, info, args, kwargs, spatial + 2)


RULES["pad"] = _pad
