"""Spatial sampling: ``grid_sample`` and ``affine_grid`` (``torch.nn.functional``).

Both are composites of differentiable ember ops, so autograd gives gradients w.r.t. ``input``,
``grid`` and ``theta``. ``grid_sample`` reads each output point through a few *taps* per
spatial dimension (1 for nearest, 2 for linear, 4 for cubic), each an integer position with a
weight; the taps of all dimensions combine as an outer product into ``K`` flat input positions
that one ``gather`` fetches and one weighted sum reduces. Coordinates are computed as torch's
CPU kernels compute them (NOTE [Sampling coordinates as torch computes them]).
"""

from __future__ import annotations

import math
import warnings

from ember.backends.autocast import autocast_function
from ember.core import dtype as dt
from ember.ops.creation import linspace, ones, zeros
from ember.ops.linalg import matmul
from ember.ops.pointwise import fmod, where
from ember.ops.shape import stack
from ember.tensor import Tensor

__all__ = ["grid_sample", "affine_grid"]

_MODES = ("bilinear", "nearest", "bicubic")
_PADDINGS = ("zeros", "border", "reflection")
_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to "
                  "align_corners=False since 1.3.0. Please specify align_corners=True if the old "
                  "behavior is desired. See the documentation of grid_sample for details.")
_UNIT_SIZE_WARNING = ("Since version 1.3.0, affine_grid behavior has changed for unit-size grids "
                      "when align_corners=True. This is not an intended use case of affine_grid. "
                      "See the documentation of affine_grid for details.")
_INT_MAX_M1, _INT_MIN = float(2**31 - 2), float(-(2**31))


def _resolve_align(align_corners: bool | None) -> bool:
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=3)
        return False
    return bool(align_corners)


# NOTE [Sampling coordinates as torch computes them]
# torch samples 4-D input with a fused (SIMD) CPU kernel and 5-D input with a scalar one; they
# agree in exact arithmetic but not always in rounding or on non-finite grid values, and
# nearest mode (round half to even) turns a last-bit difference into a different pixel, so
# each path is followed here (``fused`` = 4-D):
# - unnormalize: ``(g + 1) * S / 2 - 0.5`` (``(g + 1) * (S - 1) / 2`` with align_corners); the
#   kernels' groupings differ only by exact halvings, so they round alike.
# - border clip to [0, S - 1]: points on or beyond a border get no gradient in both; NaN goes to
#   0 in the fused kernel and to S - 1 in the scalar one.
# - reflection: fold |x - low| into one period (fused: ``a - trunc(a / p) * p``, scalar:
#   ``fmod``; they differ for far points in float32), mirror the second half, then clip; with
#   align_corners and S == 1 the coordinate is 0.
# - the scalar kernel then maps non-finite or out-of-int-range coordinates to -100 (a zero
#   tap under zeros padding); the fused kernel lets a NaN weight reach the output.
# - linear weights: fused ``1 - (x - floor(x))``, scalar ``floor(x) + 1 - x``.
# - bicubic unnormalizes only; padding applies to each integer tap, so the grid's gradient
#   comes from the cubic weights alone.
def _unnormalize(x: Tensor, size: int, align_corners: bool) -> Tensor:
    if align_corners:
        return (x + 1) * ((size - 1) / 2)
    return (x + 1) * (size / 2) - 0.5


def _clip(x: Tensor, size: int, fused: bool) -> Tensor:
    hi = float(size - 1)
    if fused:
        return where(x > 0, where(x < hi, x, hi), 0.0)
    return where(x < hi, where(x <= 0, 0.0, x), hi)


def _zero_link(x: Tensor, value: float) -> Tensor:
    """``value`` everywhere with a zero gradient to ``x``: torch's grid grad is zeros, not None."""
    return where(zeros(x.shape, dtype=dt.bool_), x, value)


def _reflect(x: Tensor, size: int, align_corners: bool, fused: bool) -> Tensor:
    if align_corners and size == 1:
        return _zero_link(x, 0.0)
    low, period = (0.0, 2.0 * (size - 1)) if align_corners else (-0.5, 2.0 * size)
    shifted = x - low
    folded = where(shifted < 0, -shifted, shifted)
    if fused:  # the fused kernel's ``a - trunc(a / period) * period`` rounds differently
        extra = folded - (folded.detach() / period).trunc() * period
    else:
        extra = fmod(folded, period)
    mirrored = period - extra
    return where(extra > mirrored, mirrored, extra) + low


def _pad(x: Tensor, size: int, padding_mode: str, align_corners: bool, fused: bool) -> Tensor:
    if padding_mode == "border":
        return _clip(x, size, fused)
    if padding_mode == "reflection":
        return _clip(_reflect(x, size, align_corners, fused), size, fused)
    return x


def _int_safe(x: Tensor) -> Tensor:
    """The scalar kernel's guard: non-finite or out-of-int-range coordinates become -100."""
    ok = x.isfinite() & (x <= _INT_MAX_M1) & (x >= _INT_MIN)
    return where(ok, x, -100.0)


# -- taps of one spatial dimension: positions (no grad) and weights, both (N, 1, k, P) ---------
def _cubic_weights(t: Tensor) -> list[Tensor]:
    """Keys' cubic convolution weights (A = -0.75) of the taps at -1, 0, 1, 2 from ``floor``."""
    def near(s):  # |s| <= 1
        return (1.25 * s - 2.25) * s * s + 1

    def far(s):  # 1 < |s| < 2
        return ((-0.75 * s + 3.75) * s - 6.0) * s + 3.0

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(x: Tensor, size: int, mode: str, padding_mode: str, align_corners: bool,
          fused: bool) -> tuple[Tensor, Tensor]:
    x = _unnormalize(x, size, align_corners)
    if mode == "bicubic":
        low = x.detach().floor()
        pos = stack([low - 1, low, low + 1, low + 2], 2)
        pos = _pad(pos, size, padding_mode, align_corners, fused)
        return pos, stack(_cubic_weights(x - low), 2)
    x = _pad(x, size, padding_mode, align_corners, fused)
    if not fused:
        x = _int_safe(x)
    if mode == "nearest":
        return x.detach().round().unsqueeze(2), _zero_link(x, 1.0).unsqueeze(2)
    low = x.detach().floor()
    w_high = x - low
    w_low = 1 - w_high if fused else (low + 1) - x  # NOTE [Sampling coordinates as torch ...]
    return stack([low, low + 1], 2), stack([w_low, w_high], 2)


def _outer(dim: int, ndim: int, t: Tensor) -> Tensor:
    """(N, 1, k, P) -> (N, 1, 1.., k, ..1, P) with k on axis ``2 + dim`` of ``ndim`` tap axes."""
    shape = [t.shape[0], 1] + [1] * ndim + [t.shape[-1]]
    shape[2 + dim] = t.shape[2]
    return t.reshape(shape)


def _sample(input: Tensor, grid: Tensor, mode: str, padding_mode: str,
            align_corners: bool) -> Tensor:
    n, c, spatial = input.shape[0], input.shape[1], tuple(input.shape[2:])
    out_spatial, nd = tuple(grid.shape[1:-1]), len(spatial)
    points = math.prod(out_spatial)
    fused = nd == 2
    index = mask = weight = None
    stride = 1
    for d in reversed(range(nd)):  # grid[..., 0] is x, the last spatial dimension
        x = grid[..., nd - 1 - d].reshape(n, 1, points)
        pos, w = _taps(x, spatial[d], mode, padding_mode, align_corners, fused)
        inside = (pos >= 0) & (pos <= spatial[d] - 1)  # NaN is outside
        pos = where(inside, pos, 0.0).long() * stride
        pos, inside, w = (_outer(d, nd, t) for t in (pos, inside, w))
        index = pos if index is None else index + pos
        mask = inside if mask is None else mask & inside
        weight = w if weight is None else weight * w
        stride *= spatial[d]
    taps = math.prod(index.shape[2:-1])
    # (N, C, *S) -> (N, C, L); gather (N, C, K * P) -> (N, C, K, P) -> sum over K
    flat = input.reshape(n, c, stride)
    values = flat.gather(2, index.reshape(n, 1, taps * points).expand(n, c, taps * points))
    values = where(mask.reshape(n, 1, taps * points), values, 0.0)
    out = (values.reshape(n, c, taps, points) * weight.reshape(n, 1, taps, points)).sum(2)
    return out.reshape(n, c, *out_spatial)


def _check_sample_args(input: Tensor, grid: Tensor, mode: str) -> None:
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(input.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in "
                           f"last dimension, but got grid with sizes {list(grid.shape)}")
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {list(input.shape)} with "
                               f"dimension {i} being empty")
    want = 4 if input.dim() == 4 else 5
    if input.dim() != want or grid.dim() != want:
        raise RuntimeError(f"grid_sampler(): expected {want}D input and grid with same number of "
                           f"dimensions, but got input with sizes {list(input.shape)} and grid "
                           f"with sizes {list(grid.shape)}")
    if want == 5 and mode == "bicubic":
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"grid_sampler: not implemented for {input.dtype}; expected "
                                  f"a floating point input")
    if input.dtype != grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected scalar type {input.dtype} but found "
                           f"{grid.dtype}; input and grid must have the same dtype")


@autocast_function("fp32")
def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear",
                padding_mode: str = "zeros", align_corners: bool | None = None) -> Tensor:
    """Sample ``input`` at the normalized locations in ``grid`` (``torch.nn.functional``).

    ``grid[..., 0]`` is x (width), ``grid[..., 1]`` is y and, for 5-D input, ``grid[..., 2]``
    is z; -1 and 1 are the outer edges of the corner pixels (their centres with
    ``align_corners=True``). Values, gradients (w.r.t. ``input`` and ``grid``) and nearest's
    round-half-to-even follow torch's CPU kernels.

    Args:
        input: ``(N, C, H, W)`` or ``(N, C, D, H, W)``, floating point.
        grid: ``(N, H_out, W_out, 2)`` or ``(N, D_out, H_out, W_out, 3)``, same dtype.
        mode: ``'bilinear'`` (trilinear for 5-D), ``'nearest'`` or ``'bicubic'`` (4-D only;
            Keys' cubic with ``A = -0.75``).
        padding_mode: ``'zeros'``, ``'border'`` or ``'reflection'`` for points outside.
        align_corners: see above; ``None`` means ``False`` and warns, as torch.

    Returns:
        ``(N, C, H_out, W_out)`` or ``(N, C, D_out, H_out, W_out)``.

    Raises:
        ValueError: unknown ``mode`` or ``padding_mode``.
        RuntimeError: mismatched batch sizes, wrong grid last dimension or rank, empty input
            spatial dimensions, bicubic on 5-D input, different dtypes.

    Example:
        >>> import ember, ember.nn.functional as F
        >>> img = ember.arange(4.).view(1, 1, 2, 2)
        >>> F.grid_sample(img, ember.zeros(1, 1, 1, 2), align_corners=False).tolist()
        [[[[1.5]]]]
    """
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    align_corners = _resolve_align(align_corners)
    _check_sample_args(input, grid, mode)
    return _sample(input, grid, mode, padding_mode, align_corners)


# -- affine_grid ------------------------------------------------------------------------------
def _line(n: int, dtype: dt.DType, align_corners: bool) -> Tensor:
    """torch's ``linspace_from_neg_one``: pixel-centre coordinates along one axis."""
    if n <= 1:
        return zeros(n, dtype=dtype)
    r = linspace(-1, 1, n, dtype=dtype)
    return r if align_corners else r * (n - 1) / n


def _check_theta(theta: Tensor, size: tuple) -> None:
    if not theta.dtype.is_floating_point:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    rows = len(size) - 2
    if theta.dim() != 3 or tuple(theta.shape[1:]) != (rows, rows + 1):
        raise ValueError(f"Expected a batch of {rows}D affine matrices of shape "
                         f"Nx{rows}x{rows + 1} for size {size}. Got {theta.shape}.")


def affine_grid(theta: Tensor, size, align_corners: bool | None = None) -> Tensor:
    """The sampling grid of a batch of affine maps, for :func:`grid_sample`.

    Output point ``p`` (normalized coordinates ``(x, y[, z], 1)``) maps to ``theta @ p``.
    Differentiable w.r.t. ``theta``. Mirrors ``torch.nn.functional.affine_grid``.

    Args:
        theta: ``(N, 2, 3)`` for a 4-D ``size``, ``(N, 3, 4)`` for a 5-D one; floating point.
        size: the target output size ``(N, C, H, W)`` or ``(N, C, D, H, W)``.
        align_corners: as in :func:`grid_sample`; ``None`` means ``False`` and warns.

    Returns:
        ``(N, H, W, 2)`` or ``(N, D, H, W, 3)``, theta's dtype.

    Raises:
        ValueError: non-float theta, wrong theta shape, non-positive sizes.
        NotImplementedError: ``size`` of length other than 4 or 5.
        RuntimeError: theta's batch differs from ``size[0]``.

    Example:
        >>> import ember, ember.nn.functional as F
        >>> theta = ember.tensor([[[1., 0., 0.], [0., 1., 0.]]])
        >>> F.affine_grid(theta, (1, 1, 2, 2), align_corners=False)[0, 0].tolist()
        [[-0.5, -0.5], [0.5, -0.5]]
    """
    align_corners = _resolve_align(align_corners)
    size = tuple(int(s) for s in size)
    _check_theta(theta, size)
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn(_UNIT_SIZE_WARNING, stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    if theta.shape[0] != size[0]:
        raise RuntimeError(f"affine_grid: expected one affine matrix per batch element; got "
                           f"theta of shape {list(theta.shape)} for size {list(size)}")
    nd = len(spatial)
    # coordinate columns x, y[, z], 1, each broadcast over the output grid (*spatial)
    lines = [_line(s, theta.dtype, align_corners) for s in reversed(spatial)]
    columns = []
    for k, line in enumerate(lines):
        shape = [1] * nd
        shape[nd - 1 - k] = spatial[nd - 1 - k]
        columns.append(line.reshape(shape).expand(*spatial))
    columns.append(ones(spatial, dtype=theta.dtype))
    base = stack(columns, -1).reshape(math.prod(spatial), nd + 1)
    # (L, nd + 1) @ (N, nd + 1, nd) -> (N, L, nd)
    return matmul(base, theta.transpose(1, 2)).reshape(size[0], *spatial, nd)
