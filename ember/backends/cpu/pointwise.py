"""CPU kernels of pointwise operators: one NumPy function per op, driven by tables.

Kernels compute in ``compute_dtype`` (float32 for half types, like PyTorch's opmath) and
write straight into the output's memory when a ufunc can. Same-dtype tensor pairs of plain
ufunc ops take a short path that skips promotion (the ``a + b`` hot path). NumPy has no
erf/erfinv/lgamma/digamma: they are implemented below in float64 (series, continued fraction,
Lanczos, Newton and asymptotic expansions), vectorised.

Over 800 lines because the special functions (erf, lgamma, digamma) live with the tables that
use them; moving them to their own module is next.
"""

from __future__ import annotations

import math

import numpy as np

from ember.backends.cpu._util import (
    _IGNORE,
    _reset_errstate,
    _set_errstate,
    arr,
    compute_dtype,
    ignore_fp_errors,
    new_output,
)
from ember.backends.cpu._xp import cast, module_of
from ember.core import dtype as dt
from ember.core.device import CPU
from ember.core.layout import broadcast_shapes
from ember.memory.devices import guard_state
from ember.ops import pointwise as pw
from ember.ops._promotion import Promotion
from ember.tensor import Tensor, empty_tensor

_BOOL = np.dtype(np.bool_)
_F64 = np.dtype(np.float64)


def _np(x, comp: dt.DType):
    """A NumPy operand in ``comp``'s compute dtype: a tensor's strided view or a cast scalar.

    Operands of another dtype are first cast to ``comp`` itself (rounding to half precision
    when ``comp`` is a half type), as torch's TensorIterator does before its opmath.
    """
    c = compute_dtype(comp)
    if not isinstance(x, Tensor):
        # Python scalars enter as opmath values, never rounded to half first (torch); as a
        # NumPy scalar, which every array module takes (a 0-d array would be a host array)
        a = np.asarray(x)
        return (a.astype(c) if a.dtype != c else a)[()]
    a = arr(x)
    if x._device is not guard_state.device and not x._shape and x._device is CPU:
        a = a[()]  # a CPU 0-d tensor with another device's tensors: a scalar, as in torch
    if a.dtype != comp.np:
        a = a.astype(comp.np)
    return a if a.dtype == c else a.astype(c)


def _relu(x, out=None):
    """``max(x, 0)`` with NaN kept (a ufunc-like callable: writes into ``out``).

    NOTE [relu against a zeros block]
    NumPy's ``maximum`` takes its SIMD loop only when both operands are arrays of the same
    shape; against a broadcast 0-d zero it runs ~3x slower. So ``x`` is compared with a
    read-only zeros view of its own shape (cached per dtype and shape, carved from one shared
    block), or chunk by chunk for large contiguous inputs. Same values, NaN and -inf results.
    """
    z = _ZERO_VIEWS.get((x.dtype, x.shape))
    if z is not None and type(x) is np.ndarray:
        return np.maximum(x, z, out=out)
    if type(x) is not np.ndarray:  # a device array: the zeros blocks are host memory
        return np.maximum(x, x.dtype.type(0), out=out)
    return _relu_slow(x, out)


def _relu_slow(x, out):
    block = _ZERO_BLOCKS.get(x.dtype)
    if block is None:
        block = _ZERO_BLOCKS[x.dtype] = np.zeros(_ZERO_BLOCK, x.dtype)
        block.flags.writeable = False
    n = x.size
    if n <= _ZERO_BLOCK:
        z = block[:n].reshape(x.shape)
        if len(_ZERO_VIEWS) < 4096:
            _ZERO_VIEWS[x.dtype, x.shape] = z
        return np.maximum(x, z, out=out)
    if out is None:
        out = np.empty(x.shape, x.dtype)
    if x.flags.c_contiguous and out.flags.c_contiguous and out.dtype == x.dtype:
        xf, of = x.reshape(-1), out.reshape(-1)
        for i in range(0, n, _ZERO_BLOCK):
            j = min(i + _ZERO_BLOCK, n)
            np.maximum(xf[i:j], block[:j - i], out=of[i:j])
        return out
    return np.maximum(x, block[:1].reshape(()), out=out)


_ZERO_BLOCK = 1 << 16
_ZERO_BLOCKS: dict = {}  # dtype -> a read-only block of zeros
_ZERO_VIEWS: dict = {}  # (dtype, shape) -> a zeros view of that shape (small tensors)


def _land(fn, ufunc: bool, ops: tuple, dst: np.ndarray, natural: np.dtype) -> None:
    """Compute ``fn(*ops)`` into ``dst``: directly for a ufunc whose natural dtype matches."""
    with ignore_fp_errors():
        if ufunc and dst.dtype == natural:
            fn(*ops, out=dst)
        else:
            np.copyto(dst, fn(*ops), casting="unsafe")


def _no_zero(b) -> None:
    if (b == 0).any():
        raise RuntimeError("ZeroDivisionError")


# -- special functions (float64 in, float64 out) ----------------------------------------------
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_ERF_CUT = 2.0


def _erf_small(x):
    # erf(x) = 2/sqrt(pi) exp(-x^2) sum_n (2x^2)^n x / (2n+1)!!: positive terms, no cancellation
    x2 = x * x
    term = x.copy()
    total = x.copy()
    for n in range(1, 48):
        term *= (2.0 / (2 * n + 1)) * x2
        total += term
    return _TWO_OVER_SQRT_PI * np.exp(-x2) * total


def _erfc_large(x):
    # Laplace's continued fraction erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + ...)))
    f = x.copy()
    for k in range(80, 0, -1):
        f = x + (0.5 * k) / f
    return np.exp(-x * x) / (math.sqrt(math.pi) * f)


def _erf_parts(x):
    """(erf(|x|), erfc(|x|)) with full relative precision of each where it matters."""
    ax = np.abs(x)
    small = ax < _ERF_CUT
    erf = np.empty_like(ax)
    erfc = np.empty_like(ax)
    if small.any():
        e = _erf_small(ax[small])
        erf[small], erfc[small] = e, 1.0 - e
    big = ~small
    if big.any():
        c = _erfc_large(np.where(np.isnan(ax[big]), 3.0, ax[big]))
        c = np.where(np.isnan(ax[big]), np.nan, c)
        erf[big], erfc[big] = 1.0 - c, c
    return erf, erfc


def erf64(x):
    """Gauss error function of a float64 array."""
    x = cast(x, _F64)
    return np.copysign(_erf_parts(x)[0], x)


def erfc64(x):
    """Complementary error function of a float64 array (accurate in the far tail)."""
    x = cast(x, _F64)
    erf, erfc = _erf_parts(x)
    return np.where(x < 0, 1.0 + erf, erfc)


def erfinv64(y):
    """Inverse error function: Winitzki's closed form refined by Newton steps on erf/erfc."""
    y = cast(y, _F64)
    ay = np.abs(y)
    inside = ay < 1
    a = np.where(inside, ay, 0.5)
    w = np.log((1.0 - a) * (1.0 + a))
    k = 2.0 / (math.pi * 0.147) + 0.5 * w
    x = np.sqrt(np.sqrt(k * k - w / 0.147) - k)
    q = 1.0 - a
    tail = a > 0.5
    for _ in range(4):
        erf, erfc = _erf_parts(x)
        err = np.where(tail, q - erfc, erf - a)
        x = x - err / (_TWO_OVER_SQRT_PI * np.exp(-x * x))
    x = np.where(inside, x, np.where(ay == 1, np.inf, np.nan))
    return np.copysign(x, y)


# Lanczos approximation, g = 7, n = 9 (the widely published coefficient set)
_LANCZOS_G = 7.0
_LANCZOS = (0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
            -176.61502916214059, 12.507343278686905, -0.13857109526572012,
            9.9843695780195716e-6, 1.5056327351493116e-7)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _lgamma_pos(x):
    # valid for x >= 0.5
    z = x - 1.0
    s = np.full_like(z, _LANCZOS[0])
    for i in range(1, 9):
        s += _LANCZOS[i] / (z + i)
    t = z + _LANCZOS_G + 0.5
    r = _HALF_LOG_2PI + (z + 0.5) * np.log(t) - t + np.log(s)
    return np.where(np.isinf(x), np.inf, r)


def _sinpi(x):
    """sin(pi x) with exact argument reduction (x - 2 round(x/2) is exact)."""
    r = x - 2.0 * np.round(0.5 * x)
    return np.sin(math.pi * r)


def lgamma64(x):
    """log|Gamma(x)| of a float64 array (inf at non-positive integers and +-inf)."""
    x = cast(x, _F64)
    out = np.empty_like(x)
    pos = x >= 0.5
    if pos.any():
        out[pos] = _lgamma_pos(x[pos])
    neg = ~pos
    if neg.any():
        xn = x[neg]
        refl = np.log(math.pi / np.abs(_sinpi(xn))) - _lgamma_pos(1.0 - xn)
        pole = (xn == np.floor(xn)) | np.isinf(xn)
        out[neg] = np.where(pole, np.inf, refl)
    return out


# asymptotic series of digamma: -sum B_2k / (2k x^2k)
_DIGAMMA_ASYM = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)


def _digamma_pos(x):
    # x > 0: recur up to x >= 10, then the asymptotic expansion
    acc = np.zeros_like(x)
    x = x.copy()
    for _ in range(10):
        low = x < 10
        if not low.any():
            break
        acc -= np.where(low, 1.0 / x, 0.0)
        x = np.where(low, x + 1.0, x)
    inv2 = 1.0 / (x * x)
    poly = np.zeros_like(x)
    for c in reversed(_DIGAMMA_ASYM):
        poly = (poly + c) * inv2
    return acc + np.log(x) - 0.5 / x - poly


def digamma64(x):
    """Digamma of a float64 array: -inf at +0, +inf at -0, NaN at negative integers."""
    x = cast(x, _F64)
    out = np.empty_like(x)
    pos = x > 0
    if pos.any():
        out[pos] = _digamma_pos(x[pos])
    neg = ~pos
    if neg.any():
        xn = x[neg]
        safe = np.where(xn == np.floor(xn), 0.5, xn)
        refl = _digamma_pos(1.0 - safe) - math.pi / np.tan(math.pi * (safe - np.round(safe)))
        refl = np.where(xn == np.floor(xn), np.nan, refl)
        refl = np.where(xn == 0, np.copysign(np.inf, -xn), refl)
        out[neg] = np.where(np.isnan(xn), np.nan, refl)
    return out


def _f64(fn):
    return lambda x: fn(x.astype(_F64))


# -- unary functions --------------------------------------------------------------------------
def _sign(x):
    if x.dtype.kind == "b":
        return x
    return (x > 0).astype(x.dtype) - (x < 0)


def _int_identity(ufunc):
    return lambda x: x if x.dtype.kind in "iub" else ufunc(x)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _log1p(x):
    """log1p; complex as c10's: the modulus's log through log1p(x (2 + x) + y^2) when
    ``|z| < 0.5`` (exact for tiny ``z``), the angle ``atan2(y, 1 + x)``."""
    if x.dtype.kind != "c":
        return np.log1p(x)
    re, im = x.real, x.imag
    with np.errstate(all="ignore"):
        theta = np.arctan2(im, re + 1)
        r = re * (2 + re) + im * im
        small = np.abs(x) < 0.5
        modulus = np.where(small, np.where(r == 0, re, 0.5 * np.log1p(r)),
                           np.log(np.hypot(re + 1, im)))
    out = np.empty(x.shape, x.dtype)
    out.real, out.imag = modulus, theta
    return out


def _reciprocal(x):
    """1 / x; a complex zero gives inf+nanj as c10's complex division (NumPy: nan+nanj)."""
    if x.dtype.kind == "c":
        with np.errstate(all="ignore"):
            return np.divide(x.dtype.type(1), x)
    return np.reciprocal(x)


def _isposinf(x):
    return np.isinf(x) & (x > 0)


def _isneginf(x):
    return np.isinf(x) & (x < 0)


# name -> (function, is a ufunc that accepts out=)
UNARY_FNS = {
    "neg": (np.negative, True), "abs": (np.absolute, True), "sign": (_sign, False),
    "exp": (np.exp, True), "exp2": (np.exp2, True), "expm1": (np.expm1, True),
    "log": (np.log, True), "log2": (np.log2, True), "log10": (np.log10, True),
    "log1p": (_log1p, False), "sqrt": (np.sqrt, True),
    "rsqrt": (lambda x: 1.0 / np.sqrt(x), False), "square": (np.square, True),
    "reciprocal": (_reciprocal, False), "sin": (np.sin, True), "cos": (np.cos, True),
    "tan": (np.tan, True), "asin": (np.arcsin, True), "acos": (np.arccos, True),
    "atan": (np.arctan, True), "sinh": (np.sinh, True), "cosh": (np.cosh, True),
    "tanh": (np.tanh, True), "asinh": (np.arcsinh, True), "acosh": (np.arccosh, True),
    "atanh": (np.arctanh, True), "sigmoid": (_sigmoid, False), "erf": (_f64(erf64), False),
    "erfc": (_f64(erfc64), False), "erfinv": (_f64(erfinv64), False),
    "lgamma": (_f64(lgamma64), False), "digamma": (_f64(digamma64), False),
    "floor": (_int_identity(np.floor), False), "ceil": (_int_identity(np.ceil), False),
    "trunc": (_int_identity(np.trunc), False), "frac": (lambda x: x - np.trunc(x), False),
    "relu": (_relu, True), "bitwise_not": (np.invert, True),
    "logical_not": (np.logical_not, True), "isnan": (np.isnan, True),
    "isinf": (np.isinf, True), "isfinite": (np.isfinite, True),
    "isposinf": (_isposinf, False), "isneginf": (_isneginf, False),
}


def _unary_fast_table(name: str, row) -> dict:
    """dtype -> result dtype for inputs that a ufunc handles with no promotion or checks."""
    fast = {}
    for d in dt.ALL_DTYPES:
        if d is dt.float16 or d is dt.bfloat16:
            continue
        try:
            _, comp, res = pw.unary_plan(name, row, empty_tensor((1,), d))
        except (RuntimeError, TypeError):
            continue
        if comp is d:
            fast[d] = res
    return fast


def make_unary(name: str, fn, ufunc: bool) -> None:
    """Register the CPU kernels of unary op ``name`` (and its in-place twin)."""
    row = pw.UNARY[name]
    plan = pw.unary_plan
    bool_out = row.kind is Promotion.ALWAYS_BOOL

    op = getattr(pw, name)
    fast = _unary_fast_table(name, row) if ufunc else {}
    real_of_complex = name == "abs"

    def kernel(self, *, out=None):
        if out is None and isinstance(self, Tensor):
            res = fast.get(self._dtype)
            if res is not None:  # see NOTE [Pointwise hot path]
                o = empty_tensor(self._shape, res)
                a = self._arr  # arr(self) / arr(o), without the calls when cached
                if a is None:
                    a = arr(self)
                dst = o._arr
                if dst is None:
                    dst = arr(o)
                token = _set_errstate(_IGNORE)
                try:
                    fn(a, out=dst)
                finally:
                    _reset_errstate(token)
                return o
        if out is not None:
            op.meta_rule(self, out=out)
        shape, comp, res = plan(name, row, self)
        o = new_output(shape, res, out, name)
        _land(fn, ufunc, (_np(self, comp),), arr(o), _BOOL if bool_out else compute_dtype(comp))
        return o

    def kernel_no_out(self):
        return kernel(self)

    def kernel_(self):
        shape, comp, res = plan(name, row, self)
        if real_of_complex and comp.is_complex:  # |z| is real: it cannot stay in place
            raise RuntimeError(f"In-place {name} is not supported for complex tensors.")
        pw.check_inplace(self, shape, res)
        self._ver.value += 1
        _land(fn, ufunc, (_np(self, comp),), arr(self), _BOOL if bool_out else compute_dtype(comp))
        return self

    op.register("CPU", kernel_no_out if pw.OUT_RULES.get(name) == "none" else kernel)
    if row.inplace:
        pw.INPLACE[name].register("CPU", kernel_)


# -- binary functions -------------------------------------------------------------------------
def _floor_divide(a, b):
    if a.dtype.kind in "iu":
        _no_zero(b)
    return np.floor_divide(a, b)


def _remainder(a, b):
    if a.dtype.kind in "iu":
        _no_zero(b)
    return np.remainder(a, b)


def _fmod(a, b):
    if a.dtype.kind in "iu":
        _no_zero(b)
    return np.fmod(a, b)


def _trunc_divide(a, b):
    if a.dtype.kind not in "iu":
        return np.trunc(a / b)
    _no_zero(b)
    q = np.floor_divide(a, b)
    return q + ((np.remainder(a, b) != 0) & ((a < 0) != (b < 0)))


def _pow(a, b):
    kind = a.dtype.kind
    if kind == "b":  # only a scalar bool exponent gets here: x**True = x, x**False = 1
        return a if b else np.ones_like(a)
    if kind in "iu" and (b < 0).any():
        neg = b < 0
        r = np.power(a, np.where(neg, 0, b).astype(a.dtype))
        odd = (b % 2) != 0
        special = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0))
        return np.where(neg, special, r).astype(a.dtype)
    if kind == "f" and np.ndim(b) == 0:  # torch's scalar-exponent special cases, same roundings
        if b == 3:  # NumPy's power has no cube path: its generic loop is ~20x slower
            return a * a * a
        if b == -2:
            return 1 / (a * a)
    if kind == "c":
        return _complex_pow(a, b)
    return np.power(a, b)


def _complex_pow(a, b):
    """``a ** b`` with torch's zero base: ``exp(b * log(0))``, ``log(0) = -inf``.

    So ``0 ** b`` is 0 when ``b.real > 0``, ``inf+nanj`` when ``b.real < 0``, and NaN for a
    tensor exponent of 0 (a scalar 0 exponent gives 1, as NumPy).
    """
    r = np.power(a, b)
    zero = a == 0
    if not zero.any():
        return r
    b_real = np.real(b)
    r = np.where(zero & (b_real < 0), r.dtype.type(complex(np.inf, np.nan)), r)
    if np.ndim(b):
        r = np.where(zero & (b == 0), r.dtype.type(complex(np.nan, np.nan)), r)
    return r


def _shift(left: bool):
    def shift(a, b):
        bits = a.dtype.itemsize * 8
        bad = (b < 0) | (b >= bits)
        xp = module_of(a)
        s = xp.where(bad, 0, b).astype(a.dtype)
        r = np.left_shift(a, s) if left else np.right_shift(a, s)
        if not bad.any():
            return r
        fill = 0 if left else xp.where(a < 0, -1, 0)
        return np.where(bad, fill, r).astype(a.dtype)

    return shift


BINARY_FNS = {
    "add": (np.add, True), "sub": (np.subtract, True), "mul": (np.multiply, True),
    "floor_divide": (_floor_divide, False), "remainder": (_remainder, False),
    "fmod": (_fmod, False), "pow": (_pow, False), "atan2": (np.arctan2, True),
    "maximum": (np.maximum, True), "minimum": (np.minimum, True), "fmax": (np.fmax, True),
    "fmin": (np.fmin, True), "hypot": (np.hypot, True), "copysign": (np.copysign, True),
    "eq": (np.equal, True), "ne": (np.not_equal, True), "lt": (np.less, True),
    "le": (np.less_equal, True), "gt": (np.greater, True), "ge": (np.greater_equal, True),
    "logical_and": (np.logical_and, True), "logical_or": (np.logical_or, True),
    "logical_xor": (np.logical_xor, True), "bitwise_and": (np.bitwise_and, True),
    "bitwise_or": (np.bitwise_or, True), "bitwise_xor": (np.bitwise_xor, True),
    "bitwise_left_shift": (_shift(True), False), "bitwise_right_shift": (_shift(False), False),
}


def _scalar_caster(d: dt.DType):
    npd = d.np
    if d.category == dt.FLOATING:
        return npd.type
    return lambda v: np.asarray(v).astype(npd)[()]  # wraps out-of-range ints like torch


def _fast_tables(name: str, row, ufunc: bool) -> tuple[dict, dict]:
    """Operand kinds whose result needs no promotion, checks or casts (the hot path).

    Returns ``{dtype: result}`` for same-dtype tensor pairs and
    ``{(dtype, scalar type): (result, scalar caster)}`` for a tensor with a Python scalar.
    """
    pairs, scalars = {}, {}
    if not ufunc:
        return pairs, scalars
    for d in dt.ALL_DTYPES:
        if d is dt.float16 or d is dt.bfloat16:
            continue
        probe = empty_tensor((1,), d)
        for other, key in ((probe, None), (True, bool), (2, int), (2.5, float)):
            try:
                _, comp, res = pw.binary_plan(name, row, probe, other)
            except (RuntimeError, TypeError):
                continue
            if comp is not d:
                continue
            if key is None:
                pairs[d] = res
            else:
                scalars[d, key] = (res, _scalar_caster(d))
    return pairs, scalars


def _make_fast(fn, pairs: dict, scalars: dict):
    """The hot path of a binary ufunc ``fn`` over the operand kinds of ``_fast_tables``."""

    def fast(input, other):
        # NOTE [Pointwise hot path]: same-dtype pairs and tensor-scalar calls of plain ufuncs
        # skip promotion and validation (their results were probed at import); None: slow path.
        d = input._dtype
        if isinstance(other, Tensor):
            if other._dtype is not d or other._device is not input._device:
                return None
            res = pairs.get(d)
            if res is None:
                return None
            shape = input._shape
            if shape != other._shape:
                shape = broadcast_shapes(shape, other._shape)
            b = other._arr
            if b is None:
                b = arr(other)
        else:
            hit = scalars.get((d, other.__class__))
            if hit is None:
                return None
            res, cast = hit
            shape = input._shape
            b = cast(other)
        o = empty_tensor(shape, res)
        a = input._arr  # arr(input) and arr(o) without the calls when the views are cached
        if a is None:
            a = arr(input)
        dst = o._arr
        if dst is None:
            dst = arr(o)
        if d.category < dt.FLOATING:  # integer ufuncs raise no floating-point flags
            fn(a, b, out=dst)
            return o
        token = _set_errstate(_IGNORE)
        try:
            fn(a, b, out=dst)
        finally:
            _reset_errstate(token)
        return o

    return fast


def make_binary(name: str, fn, ufunc: bool) -> None:
    """Register the CPU kernels of binary op ``name`` (and its in-place twin)."""
    row = pw.BINARY[name]
    plan = pw.binary_plan
    natural_bool = row.kind is Promotion.ALWAYS_BOOL
    pairs, scalars = _fast_tables(name, row, ufunc)
    fast = _make_fast(fn, pairs, scalars)

    def compute(input, other, alpha, dst: np.ndarray, comp: dt.DType) -> None:
        b = _np(other, comp)
        if alpha != 1 or alpha.__class__ is not int:
            pw.check_alpha(alpha, comp)
            b = b * _np(alpha, comp)
        _land(fn, ufunc, (_np(input, comp), b), dst,
              _BOOL if natural_bool else compute_dtype(comp))

    def slow(input, other, alpha, out):
        shape, comp, res = plan(name, row, input, other)
        if out is not None:
            pw.check_out(out, shape, res, name)
        o = new_output(shape, res, out, name)
        compute(input, other, alpha, arr(o), comp)
        return o

    def kernel(input, other, *, alpha=1, out=None):
        if out is None and alpha.__class__ is int and alpha == 1 and isinstance(input, Tensor):
            o = fast(input, other)
            if o is not None:
                return o
        return slow(input, other, alpha, out)

    def kernel_noalpha(input, other, *, out=None):
        if out is None and isinstance(input, Tensor):
            o = fast(input, other)
            if o is not None:
                return o
        return slow(input, other, 1, out)

    def kernel_(self, other, *, alpha=1):
        shape, comp, res = plan(name, row, self, other)
        pw.check_inplace(self, shape, res)
        self._ver.value += 1
        compute(self, other, alpha, arr(self), comp)
        return self

    def kernel_noalpha_(self, other):
        return kernel_(self, other)

    getattr(pw, name).register("CPU", kernel if row.alpha else kernel_noalpha)
    if row.inplace:
        pw.INPLACE[name].register("CPU", kernel_ if row.alpha else kernel_noalpha_)


for _name, (_fn, _ufunc) in UNARY_FNS.items():
    make_unary(_name, _fn, _ufunc)
for _name, (_fn, _ufunc) in BINARY_FNS.items():
    make_binary(_name, _fn, _ufunc)


# -- irregular ops ----------------------------------------------------------------------------
_DIV_FNS = {None: (np.true_divide, True), "trunc": (_trunc_divide, False),
            "floor": (_floor_divide, False)}


def _div_fn(rounding_mode, comp: dt.DType):
    if rounding_mode == "trunc" and (comp is dt.float16 or comp is dt.bfloat16):
        # torch truncates the quotient after rounding it to the half type
        return (lambda a, b: np.trunc((a / b).astype(comp.np).astype(a.dtype))), False
    return _DIV_FNS[rounding_mode]


def _div_fast():
    """``_make_fast`` for true division, probed through ``div_plan`` like ``_fast_tables``."""
    pairs, scalars = {}, {}
    for d in dt.ALL_DTYPES:
        if d is dt.float16 or d is dt.bfloat16:
            continue
        probe = empty_tensor((1,), d)
        for other, key in ((probe, None), (True, bool), (2, int), (2.5, float)):
            try:
                _, comp, res = pw.div_plan(probe, other, None)
            except (RuntimeError, TypeError):
                continue
            if comp is not d:
                continue
            if key is None:
                pairs[d] = res
            else:
                scalars[d, key] = (res, _scalar_caster(d))
    return _make_fast(np.true_divide, pairs, scalars)


_true_divide_fast = _div_fast()


@pw.div.impl("CPU")
def div_kernel(input, other, *, rounding_mode=None, out=None):
    if out is None and rounding_mode is None and isinstance(input, Tensor):
        o = _true_divide_fast(input, other)  # see NOTE [Pointwise hot path]
        if o is not None:
            return o
    shape, comp, res = pw.div_plan(input, other, rounding_mode)
    o = new_output(shape, res, out, "div")
    fn, ufunc = _div_fn(rounding_mode, comp)
    _land(fn, ufunc, (_np(input, comp), _np(other, comp)), arr(o), compute_dtype(comp))
    return o


@pw.div_.impl("CPU")
def div_kernel_(self, other, *, rounding_mode=None):
    shape, comp, res = pw.div_plan(self, other, rounding_mode)
    pw.check_inplace(self, shape, res)
    self._ver.value += 1
    fn, ufunc = _div_fn(rounding_mode, comp)
    _land(fn, ufunc, (_np(self, comp), _np(other, comp)), arr(self), compute_dtype(comp))
    return self


def _unary_like(op, op_, plan, compute) -> None:
    """Register kernels of an op computed by ``compute(x_in_compute_dtype, res, *args)``."""

    def kernel(input, *args, out=None, **kwargs):
        if out is not None:
            op.meta_rule(input, *args, out=out, **kwargs)
        shape, comp, res = plan(input, *args, **kwargs)
        o = new_output(shape, res, out, op.name)
        with ignore_fp_errors():
            np.copyto(arr(o), compute(_np(input, comp), res, *args, **kwargs),
                      casting="unsafe")
        return o

    def kernel_(self, *args, **kwargs):
        op_.meta_rule(self, *args, **kwargs)
        _, comp, res = plan(self, *args, **kwargs)
        self._ver.value += 1
        with ignore_fp_errors():
            np.copyto(arr(self), compute(_np(self, comp), res, *args, **kwargs),
                      casting="unsafe")
        return self

    op.register("CPU", kernel)
    op_.register("CPU", kernel_)


def _round(x, res, decimals=0):
    if x.dtype.kind in "iub":
        return x
    if decimals == 0:
        return np.rint(x)
    ten = x.dtype.type(10.0 ** abs(decimals))
    return np.rint(x / ten) * ten if decimals < 0 else np.rint(x * ten) / ten


def _logit(x, res, eps=None):
    # torch evaluates logit of half types in their own precision, rounding ``x / (1 - x)``
    half = res.np if res is dt.float16 or res is dt.bfloat16 else None
    if eps is not None and eps >= 0:
        lo, hi = (eps, 1.0 - eps) if half is None else \
            (float(half.type(eps)), float(half.type(1.0 - half.type(eps))))
        x = np.clip(x, lo, hi)
    ratio = x / (1.0 - x)
    if half is not None:
        ratio = ratio.astype(half).astype(x.dtype)
    return np.log(ratio)


def _nan_to_num(x, res, nan=0.0, posinf=None, neginf=None):
    if x.dtype.kind in "iub":
        return x
    info = dt.finfo(res.to_real() if res.is_complex else res)
    return np.nan_to_num(x, nan=0.0 if nan is None else nan,
                         posinf=info.max if posinf is None else posinf,
                         neginf=info.min if neginf is None else neginf)


_unary_like(pw.round, pw.round_, lambda x, decimals=0: pw.round_plan(x, decimals), _round)
_unary_like(pw.logit, pw.logit_, lambda x, eps=None: pw.unary_plan("logit", pw._LOGIT_ROW, x),
            _logit)
_unary_like(pw.nan_to_num, pw.nan_to_num_,
            lambda x, *a, **k: pw.unary_plan("nan_to_num", pw._ANY_ROW, x), _nan_to_num)


# -- where, clamp, lerp, addcmul/addcdiv, isclose ---------------------------------------------
@pw.where.impl("CPU")
def where_kernel(condition, input=None, other=None, *, out=None):
    if input is None and other is None:
        from ember.ops.scatter_gather import where_condition
        return where_condition(condition)
    if out is not None:
        pw.where.meta_rule(condition, input, other, out=out)
    shape, comp, res = pw.where_plan(condition, input, other)
    o = new_output(shape, res, out, "where")
    picked = np.where(arr(condition), _np(input, comp), _np(other, comp))
    np.copyto(arr(o), picked, casting="unsafe")
    return o


def _clamp(x, comp, lo, hi):
    with ignore_fp_errors():
        if lo is not None:
            x = np.maximum(x, _np(lo, comp))
        if hi is not None:
            x = np.minimum(x, _np(hi, comp))
    return x


def _register_clamp(op, op_, name: str, bounds) -> None:
    def kernel(input, *args, out=None, **kwargs):
        if out is not None:
            op.meta_rule(input, *args, out=out, **kwargs)
        lo, hi = bounds(*args, **kwargs)
        shape, comp, res = pw.clamp_plan(name, input, lo, hi)
        o = new_output(shape, res, out, name)
        np.copyto(arr(o), _clamp(_np(input, comp), comp, lo, hi), casting="unsafe")
        return o

    def kernel_(self, *args, **kwargs):
        lo, hi = bounds(*args, **kwargs)
        shape, comp, res = pw.clamp_plan(name, self, lo, hi)
        pw.check_inplace(self, shape, res)
        self._ver.value += 1
        np.copyto(arr(self), _clamp(_np(self, comp), comp, lo, hi), casting="unsafe")
        return self

    op.register("CPU", kernel)
    op_.register("CPU", kernel_)


_register_clamp(pw.clamp, pw.clamp_, "clamp", lambda min=None, max=None: pw.clamp_args(min, max))
_register_clamp(pw.clamp_min, pw.clamp_min_, "clamp_min", lambda min: (min, None))
_register_clamp(pw.clamp_max, pw.clamp_max_, "clamp_max", lambda max: (None, max))


def _lerp(x, e, w):
    diff = e - x
    near_start = np.abs(w) < 0.5  # torch picks the formula by the weight's modulus
    if not isinstance(w, np.ndarray) or w.ndim == 0:
        return x + w * diff if near_start else e - diff * (1 - w)
    return np.where(near_start, x + w * diff, e - diff * (1 - w))


def _lerp_compute(input, end, weight, dst) -> None:
    comp = input._dtype
    if (not isinstance(weight, Tensor) and dst.ndim and dst.dtype == comp.np
            and comp.is_floating_point and comp.itemsize >= 4
            and isinstance(end, Tensor) and end._dtype is comp and end._shape == dst.shape):
        # Hot path (optimizers): one scratch buffer, every step written with ``out=``.
        x, e = arr(input), arr(end)
        with ignore_fp_errors():
            diff = np.subtract(e, x)
            if weight < 0.5:
                np.multiply(diff, comp.np.type(weight), out=diff)
                np.add(x, diff, out=dst)
            else:
                np.multiply(diff, comp.np.type(1 - weight), out=diff)
                np.subtract(e, diff, out=dst)
        return
    w = _np(weight, comp)
    with ignore_fp_errors():
        np.copyto(dst, _lerp(_np(input, comp), _np(end, comp), w), casting="unsafe")


@pw.lerp.impl("CPU")
def lerp_kernel(input, end, weight, *, out=None):
    shape, _, res = pw.lerp_plan(input, end, weight)
    o = new_output(shape, res, out, "lerp")
    _lerp_compute(input, end, weight, arr(o))
    return o


@pw.lerp_.impl("CPU")
def lerp_kernel_(self, end, weight):
    shape, _, res = pw.lerp_plan(self, end, weight)
    pw.check_inplace(self, shape, res)
    self._ver.value += 1
    _lerp_compute(self, end, weight, arr(self))
    return self


_ADDC = {"addcmul": np.multiply, "addcdiv": np.true_divide}


def _register_addc(name: str) -> None:
    combine = _ADDC[name]

    def compute(input, t1, t2, value, comp, dst) -> None:
        c = compute_dtype(comp)
        if (dst.ndim and comp.is_floating_point and dst.dtype == c and t1._dtype is comp
                and t2._dtype is comp
                and t1._shape == dst.shape and t2._shape == dst.shape
                and (not isinstance(input, Tensor) or input._dtype is comp)):
            # Hot path (optimizers): (value * t1) op t2, then + input, in one scratch buffer.
            with ignore_fp_errors():
                tmp = np.multiply(arr(t1), c.type(value))
                combine(tmp, arr(t2), out=tmp)
                np.add(_np(input, comp), tmp, out=dst)
            return
        with ignore_fp_errors():
            r = _np(input, comp) + combine(_np(value, comp) * _np(t1, comp), _np(t2, comp))
            np.copyto(dst, r, casting="unsafe")

    def kernel(input, tensor1, tensor2, *, value=1, out=None):
        shape, comp, res = pw.addc_plan(name, input, tensor1, tensor2, value)
        o = new_output(shape, res, out, name)
        compute(input, tensor1, tensor2, value, comp, arr(o))
        return o

    def kernel_(self, tensor1, tensor2, *, value=1):
        shape, comp, res = pw.addc_plan(name, self, tensor1, tensor2, value)
        pw.check_inplace(self, shape, res)
        self._ver.value += 1
        compute(self, tensor1, tensor2, value, comp, arr(self))
        return self

    getattr(pw, name).register("CPU", kernel)
    pw.INPLACE[name].register("CPU", kernel_)


_register_addc("addcmul")
_register_addc("addcdiv")


@pw.isclose.impl("CPU")
def isclose_kernel(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    shape, d, _ = pw.isclose_plan(input, other, rtol, atol)
    o = empty_tensor(shape, dt.bool_)
    a, b = arr(input), arr(other)
    with ignore_fp_errors():
        close = a == b
        if d.category in (dt.FLOATING, dt.COMPLEX):
            c = compute_dtype(d)
            a, b = a.astype(c), b.astype(c)
            if equal_nan:  # a complex NaN: either part
                close |= np.isnan(a) & np.isnan(b)
        else:  # torch measures integer distances in the default float dtype
            a, b = a.astype(np.float32), b.astype(np.float32)
        if rtol or atol:
            # torch: allowed = atol + |rtol * other| in a float dtype; actual = |self - other|
            # (moduli for complex)
            fl = a.real.dtype if a.dtype.kind in "fc" else np.dtype(np.float32)
            scaled = fl.type(rtol) * (b if b.dtype.kind == "c" else b.astype(fl))
            allowed = fl.type(atol) + np.abs(scaled)
            actual = np.abs(a - b)
            close |= np.isfinite(actual) & (actual <= allowed)
    np.copyto(arr(o), close)
    return o
