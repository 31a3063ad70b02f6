"""CPU kernels of ``xlogy``, ``heaviside``, ``nextafter`` and ``i0`` (ember.ops.special).

The other special functions are composites and need no kernel. ``i0`` is NumPy's Chebyshev
evaluation in float64; ``nextafter`` on bfloat16 steps the bit pattern, as NumPy has no
bfloat16 ``nextafter``.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, ignore_fp_errors, new_output, write_result
from ember.backends.cpu.pointwise import _np
from ember.core import dtype as dt
from ember.ops import special as sp
from ember.ops.pointwise import binary_plan
from ember.tensor import Tensor


@sp.xlogy.impl("CPU")
def _xlogy(input, other, *, out=None):
    shape, comp, res = binary_plan("xlogy", sp.XLOGY_ROW, input, other)
    o = new_output(shape, res, out)
    with ignore_fp_errors():
        x, y = _np(input, comp), _np(other, comp)
        value = np.where((x == 0) & ~np.isnan(y), 0, x * np.log(y))
        return write_result(np.broadcast_to(value, shape), o)


def _heaviside_values(input: Tensor, values: Tensor) -> np.ndarray:
    x = arr(input)
    return np.where(x == 0, arr(values), x > 0)


@sp.heaviside.impl("CPU")
def _heaviside(input, values, *, out=None):
    shape, _, res = sp.heaviside_plan(input, values)
    o = new_output(shape, res, out)
    with ignore_fp_errors():
        return write_result(_heaviside_values(input, values), o)


@sp.heaviside_.impl("CPU")
def _heaviside_(self, values):
    sp.heaviside_.meta_rule(self, values)
    with ignore_fp_errors():
        result = _heaviside_values(self, values)
    self._ver.value += 1
    return write_result(result, self)


def _bf16_nextafter(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """nextafter on bfloat16 by stepping the 16-bit pattern (same rule as IEEE nextafter)."""
    x, y = np.broadcast_arrays(x.astype(np.float32), y.astype(np.float32))
    bits = x.astype(dt.bfloat16.np).view(np.int16).astype(np.int32)
    up = (y > x) == (x > 0)  # away from zero when moving in the sign's direction
    stepped = np.where(up, bits + 1, bits - 1)
    tiny = np.where(y > 0, 1, 0x8001)  # smallest subnormal toward y from +-0
    stepped = np.where(x == 0, tiny, stepped).astype(np.int32)
    out = (stepped & 0xFFFF).astype(np.uint16).view(dt.bfloat16.np).astype(np.float32)
    out = np.where(x == y, y, out)
    return np.where(np.isnan(x) | np.isnan(y), np.nan, out)


def _nextafter_values(input: Tensor, other: Tensor, comp: dt.DType) -> np.ndarray:
    a, b = arr(input), arr(other)
    if comp is dt.bfloat16:
        return _bf16_nextafter(a, b)
    return np.nextafter(a.astype(comp.np, copy=False), b.astype(comp.np, copy=False))


@sp.nextafter.impl("CPU")
def _nextafter(input, other, *, out=None):
    spec = sp.nextafter.meta_rule(input, other)
    o = new_output(spec.shape, spec.dtype, out)
    with ignore_fp_errors():
        return write_result(_nextafter_values(input, other, spec.dtype), o)


@sp.nextafter_.impl("CPU")
def _nextafter_(self, other):
    sp.nextafter_.meta_rule(self, other)
    with ignore_fp_errors():
        result = _nextafter_values(self, other, self._dtype)
    self._ver.value += 1
    return write_result(result, self)


def _i0_values(input: Tensor) -> np.ndarray:
    x = arr(input).astype(np.float64)
    return np.i0(x.reshape(-1)).reshape(x.shape) if x.size else x


@sp.i0.impl("CPU")
def _i0(input, *, out=None):
    spec = sp.i0.meta_rule(input)
    o = new_output(spec.shape, spec.dtype, out)
    with ignore_fp_errors():
        return write_result(_i0_values(input), o)


@sp.i0_.impl("CPU")
def _i0_(self):
    sp.i0_.meta_rule(self)
    with ignore_fp_errors():
        result = _i0_values(self)
    self._ver.value += 1
    return write_result(result, self)
