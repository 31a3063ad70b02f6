"""Op-table entries of the fused ReLU gradient ``threshold_backward`` and of the 2x2/stride-2
max-pool fast path (ties, NaN, -inf, odd sizes), against torch."""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as TF

import ember
import ember.ops.conv as C
import ember.ops.nn_ops as N
from tests.opinfo import BROADCAST_PAIRS, FLOATS, OpInfo, SampleInput, make


def _is_torch(lib) -> bool:
    return lib is torch


def _threshold_backward(lib, g, x, threshold):
    if _is_torch(lib):
        return torch.ops.aten.threshold_backward(g, x, threshold)
    return N.threshold_backward(g, x, threshold)


def _with_specials(t: ember.Tensor) -> ember.Tensor:
    """A copy of ``t`` holding NaN, +-inf, -0.0 and exact zeros where it has room."""
    a = t.detach().numpy().copy()
    flat = a.reshape(-1)
    for i, v in enumerate((np.nan, np.inf, -np.inf, -0.0, 0.0)[:flat.size]):
        flat[(7 * i) % flat.size] = v
    return ember.tensor(a)


def _threshold_samples(dtype: str):
    for sa, sb in BROADCAST_PAIRS:
        for lay in ("contiguous", "permuted", "strided", "expanded"):
            la = lay if len(sa) >= 2 or lay != "permuted" else "contiguous"
            lb = lay if len(sb) >= 2 or lay != "permuted" else "contiguous"
            g, x = make(sa, dtype, layout=la), make(sb, dtype, layout=lb)
            for thr in (0, 0.25):
                yield SampleInput((g, x, thr), {}, f"{lay}{list(sa)}{list(sb)} t={thr}")
    g, x = make((4, 5), dtype), make((4, 5), dtype)
    if dtype != "float64":  # float64 runs gradcheck: no NaN there
        yield SampleInput((_with_specials(g), x, 0), {}, "special grad")
        yield SampleInput((g, _with_specials(x), 0), {}, "special input")


def _pool_fn(lib, x):
    if _is_torch(lib):
        return TF.max_pool2d(x, 2, return_indices=True)
    return C.max_pool2d_with_indices(x, [2, 2])


def _pool_samples(dtype: str):
    rng = np.random.default_rng(5)
    for shape in ((2, 3, 6, 8), (3, 7, 5), (1, 1, 2, 2)):
        ties = rng.integers(-2, 2, shape).astype(np.float32)
        yield SampleInput((ember.tensor(ties).to(getattr(ember, dtype)),), {}, f"ties{shape}")
        for lay in ("contiguous", "permuted", "strided"):
            yield SampleInput((make(shape, dtype, layout=lay),), {}, f"{lay}{shape}")
    if dtype != "float64":
        nan = rng.standard_normal((2, 2, 4, 6)).astype(np.float32)
        nan[0, 0, 0, 1] = nan[0, 0, 1, 0] = nan[1, 1, 3, 5] = np.nan
        nan[1, 0] = -np.inf
        yield SampleInput((ember.tensor(nan).to(getattr(ember, dtype)),), {}, "nan/-inf")


OPS = [
    OpInfo("threshold_backward", _threshold_backward, _threshold_samples, FLOATS),
    OpInfo("max_pool2d_2x2_fast_path", _pool_fn, _pool_samples, FLOATS),
]
