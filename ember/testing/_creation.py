"""``make_tensor``: random test tensors of any ember dtype, like ``torch.testing.make_tensor``.

Values come from a NumPy ``default_rng`` seeded once per process, so a test run is
reproducible; ``seed`` restarts the stream. Bytes are allocated by ember (``ember.empty``), so
the tensors are ordinary ember tensors in every respect.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtype as dt
from ember.core.device import as_device
from ember.core.layout import normalize_shape
from ember.ops.creation import empty
from ember.tensor import numpy_view

__all__ = ["make_tensor", "seed"]

_rng = np.random.default_rng(0)


def seed(value: int = 0) -> None:
    """Restart ``make_tensor``'s random stream at ``value``."""
    global _rng
    _rng = np.random.default_rng(value)


def make_tensor(*shape, dtype: dt.DType, device="cpu", low: float | None = None,
                high: float | None = None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False):
    """A tensor of ``shape`` filled with values drawn uniformly from ``[low, high)``.

    Mirrors ``torch.testing.make_tensor``: default range ``[-9, 9)`` for floating dtypes and
    ``[-9, 10)`` for integral ones, clamped to the dtype's range (uint8 starts at 0); bool
    tensors are random True/False.

    Args:
        *shape: sizes as ints, or one sequence of ints.
        dtype: the ember dtype.
        device: ``"cpu"`` or ``"meta"`` (meta tensors have no values).
        low, high: the value interval (integral bounds are rounded up, ``high`` exclusive).
        requires_grad: make the result a leaf that requires grad (floating dtypes only).
        noncontiguous: return a non-contiguous view (stride 2 and offset 1 in the last dim)
            when the tensor has more than one element.
        exclude_zero: replace zeros by 1 (integral) or the dtype's ``tiny`` (floating).

    Raises:
        ValueError: ``low``/``high`` are NaN, empty or outside the dtype's range, or
            ``requires_grad`` is asked of a non-floating dtype.

    Example:
        >>> import ember
        >>> from ember.testing import make_tensor
        >>> make_tensor(2, 3, dtype=ember.int64, low=0, high=1).tolist()
        [[0, 0, 0], [0, 0, 0]]
    """
    shape = normalize_shape(shape) if shape else ()
    if requires_grad and not dtype.is_floating_point:
        raise ValueError("`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    noncontiguous = noncontiguous and math.prod(shape) > 1
    alloc_shape = (*shape[:-1], 2 * shape[-1]) if noncontiguous else shape
    out = empty(alloc_shape, dtype=dtype, device=device)
    if noncontiguous:
        out = out[..., 1::2]
    if as_device(device).type != "meta":
        numpy_view(out)[...] = _values(shape, dtype, low, high, exclude_zero)
    if requires_grad:
        out.requires_grad_(True)
    return out


def _bounds(dtype: dt.DType, low, high):
    """torch's rule: defaults, NaN/empty checks, clamp to the dtype, integral bounds ceiled."""
    if dtype is dt.bool_:
        lowest, highest, default = 0, 2, (0, 2)
    elif dtype.is_floating_point:
        info = dt.finfo(dtype)
        lowest, highest, default = info.min, info.max, (-9, 9)
    else:
        info = dt.iinfo(dtype)
        lowest, highest, default = info.min, info.max, (-9, 10)
    low = default[0] if low is None else low
    high = default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low >= high and not (low == high and dtype.is_floating_point):
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    if not dtype.is_floating_point:
        return math.ceil(low), math.ceil(high)
    return low, high


def _values(shape: tuple, dtype: dt.DType, low, high, exclude_zero: bool) -> np.ndarray:
    low, high = _bounds(dtype, low, high)
    if dtype.is_floating_point:
        if math.isinf(high - low):  # the span overflows: draw in halves, as torch does
            values = _rng.uniform(low / 2, high / 2, shape) * 2
        else:
            values = _rng.uniform(low, high, shape)
    else:
        values = _rng.integers(low, high, shape, dtype=np.int64, endpoint=False)
    values = np.asarray(values).astype(dtype.np)
    if exclude_zero:
        values[values == 0] = 1 if not dtype.is_floating_point else dt.finfo(dtype).tiny
    return values
