"""The interpolation modes of ``F.interpolate`` built from ember operators, one spatial dim at
a time: ``nearest`` and ``nearest-exact`` (an ``index_select``), ``linear``/``bilinear``/
``trilinear`` (two taps), ``bicubic`` (four taps, torch's cubic convolution with A = -0.75)
and ``area`` (adaptive average pooling). Separable resampling equals the multi-dimensional
one, and being made of differentiable operators it is differentiable to any order.

Source coordinates follow torch's ``area_pixel_compute_source_index`` rules, computed in the
input's compute precision (float32 for float32 and the half types, as torch's opmath), so
nearest indices agree with torch's at exact boundaries.
"""

from __future__ import annotations

import numpy as np

from ember.ops.creation import tensor
from ember.ops.pooling import adaptive_avg_pool1d, adaptive_avg_pool2d, adaptive_avg_pool3d
from ember.tensor import Tensor

_CUBIC_A = -0.75


def _scale(n_in: int, n_out: int, align_corners: bool, scale) -> float:
    """torch's ``area_pixel_compute_scale``: input pixels per output pixel."""
    if align_corners:
        return (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else n_in / n_out


def _real(x: Tensor):
    return np.float64 if x.dtype.itemsize == 8 else np.float32


def _nearest_index(n_in, n_out, scale, exact: bool, real) -> list[int]:
    s = real(_scale(n_in, n_out, False, scale))
    dst = np.arange(n_out, dtype=real)
    src = np.floor((dst + real(0.5)) * s) if exact else np.floor(dst * s)
    return np.minimum(src.astype(np.int64), n_in - 1).tolist()


def _source(n_in, n_out, align_corners, scale, cubic: bool, real) -> np.ndarray:
    s = real(_scale(n_in, n_out, align_corners, scale))
    dst = np.arange(n_out, dtype=real)
    if align_corners:
        return s * dst
    src = s * (dst + real(0.5)) - real(0.5)
    return src if cubic else np.maximum(src, real(0))


def _along(x: Tensor, dim: int, idx) -> Tensor:
    return x.index_select(dim, tensor(idx, device=x.device))


def _weights(w: np.ndarray, x: Tensor, dim: int) -> Tensor:
    """``w`` (out,) as a tensor broadcasting along ``dim`` of ``x``."""
    shape = [1] * x.ndim
    shape[dim] = len(w)
    return tensor(w.astype(np.float64), dtype=x.dtype, device=x.device).reshape(shape)


def _linear_1d(x, dim, n_out, align_corners, scale) -> Tensor:
    n_in = x.shape[dim]
    real = _real(x)
    src = _source(n_in, n_out, align_corners, scale, False, real)
    i0 = np.minimum(src.astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    lam = (src - i0.astype(real)).astype(real)
    a, b = _along(x, dim, i0.tolist()), _along(x, dim, i1.tolist())
    return a * _weights(1 - lam, x, dim) + b * _weights(lam, x, dim)


def _cubic_weights(t: np.ndarray) -> list[np.ndarray]:
    A = _CUBIC_A

    def near(d):  # |d| <= 1
        return ((A + 2) * d - (A + 3)) * d * d + 1

    def far(d):  # 1 < |d| < 2
        return ((A * d - 5 * A) * d + 8 * A) * d - 4 * A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _cubic_1d(x, dim, n_out, align_corners, scale) -> Tensor:
    n_in = x.shape[dim]
    real = _real(x)
    src = _source(n_in, n_out, align_corners, scale, True, real)
    base = np.floor(src)
    t = (src - base).astype(real)
    base = base.astype(np.int64)
    out = None
    for k, w in enumerate(_cubic_weights(t)):
        idx = np.clip(base - 1 + k, 0, n_in - 1).tolist()
        term = _along(x, dim, idx) * _weights(w.astype(real), x, dim)
        out = term if out is None else out + term
    return out


_AREA = {3: adaptive_avg_pool1d, 4: adaptive_avg_pool2d, 5: adaptive_avg_pool3d}


def resample(input: Tensor, out: list, scales: list, mode: str, align_corners) -> Tensor:
    """``input`` (N, C, *spatial) resampled to ``out`` by ``mode`` (see the module note)."""
    if mode == "area":
        return _AREA[input.ndim](input, out)
    if any(s == 0 for s in input.shape[1:]):  # an empty batch is fine
        raise RuntimeError(f"Non-empty {input.ndim}D data tensor expected but got a tensor "
                           f"with sizes {list(input.shape)}")
    x = input
    for i, (n_out, scale) in enumerate(zip(out, scales)):
        dim = i + 2
        if mode in ("nearest", "nearest-exact"):
            idx = _nearest_index(x.shape[dim], n_out, scale, mode == "nearest-exact", _real(x))
            x = _along(x, dim, idx)
        elif mode == "bicubic":
            x = _cubic_1d(x, dim, n_out, align_corners, scale)
        else:
            x = _linear_1d(x, dim, n_out, align_corners, scale)
    return x if x is not input else input.clone()


def _aa_filter(mode: str):
    if mode == "bilinear":
        return lambda x: np.maximum(1.0 - np.abs(x), 0.0)
    a = -0.5  # torch's antialiased bicubic uses Keys' a = -0.5

    def cubic(x):
        x = np.abs(x)
        near = ((a + 2) * x - (a + 3)) * x * x + 1
        far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
        return np.where(x < 1, near, np.where(x < 2, far, 0.0))
    return cubic


def _aa_matrix(n_in, n_out, align_corners, scale, mode, real) -> np.ndarray:
    """(n_out, n_in) weights of torch's antialiased resampling: the filter stretched by the
    scale when downsampling, each row normalised to sum 1."""
    s = real(_scale(n_in, n_out, align_corners, scale))
    interp = 2 if mode == "bilinear" else 4
    support = interp * 0.5 * s if s >= 1 else real(interp * 0.5)
    invscale = 1 / s if s >= 1 else real(1)
    W = np.zeros((n_out, n_in), dtype=real)
    filt = _aa_filter(mode)
    for i in range(n_out):
        center = s * (i + real(0.5))
        lo = max(int(center - support + real(0.5)), 0)
        hi = min(int(center + support + real(0.5)), n_in)
        w = filt((np.arange(lo, hi, dtype=real) - center + real(0.5)) * invscale).astype(real)
        total = w.sum()
        W[i, lo:hi] = w / total if total != 0 else w
    return W


def antialiased(input: Tensor, out: list, scales: list, mode: str, align_corners) -> Tensor:
    """torch's ``antialias=True`` resampling (bilinear/bicubic, 4-d), one dim at a time."""
    if mode not in ("bilinear", "bicubic") or input.ndim != 4:
        raise ValueError(f"Anti-alias option is restricted to bilinear and bicubic modes and "
                         f"requires a 4-D tensor as input; got mode {mode}")
    x = input
    for i, (n_out, scale) in enumerate(zip(out, scales)):
        dim = i + 2
        W = _aa_matrix(x.shape[dim], n_out, align_corners, scale, mode, _real(x))
        Wt = tensor(W.T.astype(np.float64), dtype=x.dtype, device=x.device)  # (in, out)
        x = (x.movedim(dim, -1) @ Wt).movedim(-1, dim)
    return x


__all__ = ["resample"]
