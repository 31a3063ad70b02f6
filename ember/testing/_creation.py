"""``make_tensor``: random test tensors of any ember dtype, like ``torch.testing.make_tensor``.

Values come from ember's own random ops driven by a private ``Generator`` seeded with 0, so a
test run is reproducible and ``make_tensor`` never moves the global RNG; ``seed`` restarts the
stream. Bytes are allocated by ember, so the tensors are ordinary ember tensors in every respect.
"""

from __future__ import annotations

import math

from ember.core import dtype as dt
from ember.core.device import as_device
from ember.core.layout import normalize_shape
from ember.ops.creation import empty
from ember.ops.random import randint
from ember.tensor import Tensor, numpy_view
from ember.tensor.random import Generator

__all__ = ["make_tensor", "seed"]

_generator = Generator().manual_seed(0)


def seed(value: int = 0) -> None:
    """Restart ``make_tensor``'s random stream at ``value``."""
    _generator.manual_seed(value)


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
        out.copy_(_values(shape, dtype, low, high))
        out._ver.value = 0  # a fresh tensor, as torch's factories return
        if exclude_zero:
            values = numpy_view(out)
            values[values == 0] = dt.finfo(dtype).tiny if dtype.is_floating_point else 1
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


def _values(shape: tuple, dtype: dt.DType, low, high) -> Tensor:
    """A dense tensor of random values in ``[low, high)`` drawn from ``_generator``."""
    low, high = _bounds(dtype, low, high)
    if not dtype.is_floating_point:
        return randint(low, high, shape, generator=_generator, dtype=dt.int64).to(dtype)
    values = empty(shape, dtype=dt.float64)
    if math.isinf(high - low):  # the span overflows: draw in halves, as torch does
        return values.uniform_(low / 2, high / 2, generator=_generator).mul_(2).to(dtype)
    return values.uniform_(low, high, generator=_generator).to(dtype)
