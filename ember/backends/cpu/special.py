"""CPU kernels of ``xlogy``, ``heaviside``, ``nextafter``, ``i0`` and torch.special's
operators (ember.ops.special); the numerical methods live in ``_special_math`` and
``_orthogonal_polynomials``. ``i0`` is NumPy's Chebyshev evaluation in float64;
``nextafter`` on bfloat16 steps the bit pattern, as NumPy has no bfloat16 ``nextafter``.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu import _special_math as sm
from ember.backends.cpu._orthogonal_polynomials import POLYNOMIALS
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


# -- torch.special's operators (NOTE [torch.special operators]) -------------------------------
def _as64(x, like) -> np.ndarray:
    """A float64 array of tensor ``x``, or Python scalar ``x`` filled in ``like``'s shape (on
    ``like``'s array module: no host array meets a device array)."""
    if isinstance(x, Tensor):
        return arr(x).astype(np.float64)
    return np.full_like(arr(like), x, dtype=np.float64)


_UNARY_MATH = {
    "erfcx": sm.erfcx, "ndtri": sm.ndtri,
    "bessel_j0": sm.bessel_j0, "bessel_j1": sm.bessel_j1,
    "bessel_y0": sm.bessel_y0, "bessel_y1": sm.bessel_y1,
    "modified_bessel_i0": lambda x: sm.bessel_i(x, 0, False),
    "modified_bessel_i1": lambda x: sm.bessel_i(x, 1, False),
    "modified_bessel_k0": lambda x: sm.bessel_k(x, 0, False),
    "modified_bessel_k1": lambda x: sm.bessel_k(x, 1, False),
    "scaled_modified_bessel_k0": lambda x: sm.bessel_k(x, 0, True),
    "scaled_modified_bessel_k1": lambda x: sm.bessel_k(x, 1, True),
    "spherical_bessel_j0": sm.spherical_j0, "airy_ai": sm.airy_ai,
    "i1": lambda x: sm.bessel_i(x, 1, False),
    "i0e": lambda x: sm.bessel_i(x, 0, True),
    "i1e": lambda x: sm.bessel_i(x, 1, True),
}
_BINARY_MATH = {**POLYNOMIALS, "zeta": sm.zeta, "gammainc": sm.gammainc,
                "gammaincc": sm.gammaincc}


def _nan_at_inf(fn):
    """torch's Cephes-based kernels give NaN at +-inf for these functions."""
    def wrapped(x):
        return np.where(np.isinf(x), np.nan, fn(x))
    return wrapped


for _name in ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0",
              "modified_bessel_i1", "airy_ai", "i1"):
    _UNARY_MATH[_name] = _nan_at_inf(_UNARY_MATH[_name])


def _unary_kernel(op, fn):
    def kernel(input, *, out=None):
        spec = op.meta_rule(input, out=out)
        o = new_output(spec.shape, spec.dtype, out)
        with ignore_fp_errors():
            x = _as64(input, input)
            value = fn(x.reshape(-1)).reshape(x.shape) if x.size else x
            return write_result(value, o)
    return kernel


def _binary_kernel(op, fn):
    def kernel(input, other, *, out=None):
        spec = op.meta_rule(input, other, out=out)
        o = new_output(spec.shape, spec.dtype, out)
        with ignore_fp_errors():
            x = _as64(input, other)
            y = _as64(other, input)
            x, y = np.broadcast_arrays(x, y)
            value = fn(x.reshape(-1), y.reshape(-1)).reshape(x.shape) if x.size else x
            return write_result(np.broadcast_to(value, spec.shape), o)
    return kernel


for _name, _fn in _UNARY_MATH.items():
    sp.SPECIAL_OPS[_name].impl("CPU")(_unary_kernel(sp.SPECIAL_OPS[_name], _fn))
for _name, _fn in _BINARY_MATH.items():
    sp.SPECIAL_OPS[_name].impl("CPU")(_binary_kernel(sp.SPECIAL_OPS[_name], _fn))
