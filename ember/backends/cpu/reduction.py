"""CPU kernels of the reduction family (NumPy).

Every kernel runs its operator's plan from ``ember.ops.reduction`` (validation, dims, output
Spec), reads its input through the strided NumPy view, computes in the accumulation dtype
(float32 for half types, int64 for integers) and lands the result in a fresh or ``out=``
tensor with one cast. Empty outputs are allocated and returned before any NumPy reduction
runs, so reductions without an identity never see an empty array.
"""

from __future__ import annotations

import warnings

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
from ember.backends.cpu._xp import cast, like, module_of
from ember.core import dtype as dt
from ember.core.layout import numel
from ember.ops import reduction as red
from ember.ops.linalg import LinAlgError
from ember.tensor import Tensor, empty_tensor

_I64 = np.dtype(np.int64)
_F32 = np.dtype(np.float32)


# -- helpers ----------------------------------------------------------------------------------
def _acc(d: dt.DType) -> np.dtype:
    """Accumulation dtype of a result dtype: float32 for half types, int64 for the rest."""
    return compute_dtype(d) if d.is_differentiable else _I64


def _src(t: Tensor, cast: dt.DType | None = None) -> np.ndarray:
    """``t``'s strided view, converted to ``cast`` first (torch casts before reducing)."""
    a = arr(t)
    if cast is not None and cast is not t._dtype:
        if t._dtype.is_complex and not cast.is_complex:
            warnings.warn("Casting complex values to real discards the imaginary part",
                          UserWarning, stacklevel=4)
            a = a.real
        a = a.astype(cast.np)
    return a


def _wide(a: np.ndarray) -> np.ndarray:
    """Half-precision arrays widened to float32 (exact for comparisons and sorting)."""
    return a.astype(_F32) if a.dtype.itemsize == 2 and a.dtype.kind not in "iu" else a


def _land(result, spec, out: Tensor | None, name: str) -> Tensor:
    o = new_output(spec.shape, spec.dtype, out, name)
    if numel(spec.shape):
        if np.ndim(result):
            result = np.reshape(result, spec.shape)
        np.copyto(arr(o), result, casting="unsafe")
    return o


def _outs(out):
    return (None, None) if out is None else out


def _count(shape: tuple, dims: tuple) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _last(a: np.ndarray, d: int | None) -> np.ndarray:
    """``a`` with ``d`` moved last (a 0-d array becomes shape (1,))."""
    return a.reshape(1) if a.ndim == 0 else np.moveaxis(a, d, -1)


def _impl(op):
    def deco(fn):
        op.register("CPU", fn)
        return fn
    return deco




_ALL_DIMS = [tuple(range(n)) for n in range(65)]


# -- sum-like ---------------------------------------------------------------------------------
def _make_sum(name: str, np_fn, reduce_ufunc=None) -> None:
    op = getattr(red, name)

    @_impl(op)
    def kernel(input, dim=None, keepdim=False, *, dtype=None, out=None):
        if dim is None and reduce_ufunc is not None and out is None and dtype is None and \
                not keepdim and isinstance(input, Tensor):
            d = input._dtype
            shape = input._shape
            if (d is dt.float32 or d is dt.float64) and 0 not in shape:
                # Hot path ``x.sum()``: what the general path below does for a full
                # floating reduction (same dims, accumulating in the input's dtype).
                o = empty_tensor((), d)
                a = input._arr  # arr(input), arr(o) without the calls
                if a is None:
                    a = arr(input)
                dst = o._arr
                if dst is None:
                    dst = arr(o)
                nd = len(shape)
                token = _set_errstate(_IGNORE)
                try:
                    reduce_ufunc(a, axis=_ALL_DIMS[nd] if nd < 65 else tuple(range(nd)),
                                 dtype=d.np, keepdims=False, out=dst)
                finally:
                    _reset_errstate(token)
                return o
        dims, spec = red.sum_plan(name, input, dim, keepdim, dtype, out)
        if name == "prod" and dim is not None:
            red.single_dim("prod", input._shape, dim)
        if not numel(spec.shape):
            return _land(None, spec, out, name)
        a = _src(input, dtype)
        acc = _acc(spec.dtype)
        if reduce_ufunc is not None and a.dtype == acc:
            # Fast path: reduce straight into the output's memory.
            o = new_output(spec.shape, spec.dtype, out, name)
            dst = arr(o)
            if dst.dtype == acc:
                token = _set_errstate(_IGNORE)
                try:
                    reduce_ufunc(a, axis=dims, dtype=acc, keepdims=keepdim, out=dst)
                finally:
                    _reset_errstate(token)
                return o
        if name == "prod" and spec.dtype.itemsize == 2 and acc == _F32:
            acc = spec.dtype.np  # torch's half prod rounds after every multiply
            a = a.astype(acc, copy=False)
        elif a.dtype.itemsize == 2 and acc == _F32:
            a = a.astype(_F32)
        with ignore_fp_errors():
            r = np_fn(a, axis=dims, dtype=acc, keepdims=keepdim)
        return _land(r, spec, out, name)


_make_sum("sum", np.sum, np.add.reduce)
_make_sum("nansum", np.nansum)
_make_sum("prod", np.prod)


def _make_mean(name: str, skip_nan: bool) -> None:
    op = getattr(red, name)

    @_impl(op)
    def kernel(input, dim=None, keepdim=False, *, dtype=None, out=None):
        dims, spec = red.mean_plan(name, input, dim, keepdim, dtype, out)
        if not numel(spec.shape):
            return _land(None, spec, out, name)
        a = _src(input, dtype).astype(_acc(spec.dtype), copy=False)
        with ignore_fp_errors():
            if skip_nan:
                valid = ~np.isnan(a)
                s = np.sum(np.where(valid, a, 0), axis=dims, keepdims=keepdim)
                r = s / np.sum(valid, axis=dims, keepdims=keepdim)
            else:
                r = np.sum(a, axis=dims, keepdims=keepdim) / _count(a.shape, dims)
        return _land(r, spec, out, name)


_make_mean("mean", False)
_make_mean("nanmean", True)


# -- extrema ----------------------------------------------------------------------------------
def _make_extremum(name: str, reduce, arg) -> None:
    all_op = getattr(red, f"_{name}_all")
    dim_op = getattr(red, f"_{name}_dim")
    wrap = dim_op.result_tuple

    @_impl(all_op)
    def kernel_all(input, *, out=None):
        spec = red.extremum_all_spec(name, input)
        return _land(reduce(_wide(arr(input))), spec, out, name)

    @_impl(dim_op)
    def kernel_dim(input, dim, keepdim=False, *, out=None):
        d, dims, shape = red.extremum_dim_plan(name, input, dim, keepdim)
        vspec, ispec = red.Spec(shape, input._dtype), red.Spec(shape, dt.int64)
        vo, io = _outs(out)
        if not numel(shape) or not dims:
            v = _land(arr(input), vspec, vo, name)
            return _tuple(wrap, out, v, _land(0, ispec, io, name))
        a = _wide(arr(input))
        v = _land(reduce(a, axis=d, keepdims=keepdim), vspec, vo, name)
        i = _land(arg(a, axis=d, keepdims=keepdim), ispec, io, name)
        return _tuple(wrap, out, v, i)


def _tuple(wrap, out, *results):
    return wrap(*results) if wrap is not None and out is None else tuple(results)


_make_extremum("max", np.max, np.argmax)
_make_extremum("min", np.min, np.argmin)


def _make_amax(name: str, reduce) -> None:
    @_impl(getattr(red, name))
    def kernel(input, dim=(), keepdim=False, *, out=None):
        dims, spec = red.amax_plan(name, input, dim, keepdim)
        if not numel(spec.shape):
            return _land(None, spec, out, name)
        return _land(reduce(_wide(arr(input)), axis=dims, keepdims=keepdim), spec, out, name)


_make_amax("amax", np.max)
_make_amax("amin", np.min)


@_impl(red.aminmax)
def _aminmax(input, *, dim=None, keepdim=False, out=None):
    dims, shape = red.aminmax_plan(input, dim, keepdim)
    spec = red.Spec(shape, input._dtype)
    lo, hi = _outs(out)
    if not numel(shape):
        return _tuple(red.aminmax.result_tuple, out, _land(None, spec, lo, "aminmax"),
                      _land(None, spec, hi, "aminmax"))
    a = _wide(arr(input))
    mn = _land(np.min(a, axis=dims, keepdims=keepdim), spec, lo, "aminmax")
    mx = _land(np.max(a, axis=dims, keepdims=keepdim), spec, hi, "aminmax")
    return _tuple(red.aminmax.result_tuple, out, mn, mx)


def _make_argmax(name: str, arg) -> None:
    @_impl(getattr(red, name))
    def kernel(input, dim=None, keepdim=False, *, out=None):
        d, spec = red.argmax_plan(name, input, dim, keepdim)
        if not numel(spec.shape):
            return _land(None, spec, out, name)
        a = _wide(arr(input))
        if d is None or a.ndim == 0:
            return _land(arg(a.reshape(-1)), spec, out, name)
        return _land(arg(a, axis=d, keepdims=keepdim), spec, out, name)


_make_argmax("argmax", np.argmax)
_make_argmax("argmin", np.argmin)


# -- variance ---------------------------------------------------------------------------------
def _var_and_mean(input, dims, correction, keepdim):
    a = arr(input).astype(compute_dtype(input._dtype), copy=False)
    n = _count(a.shape, dims)
    with ignore_fp_errors():
        total = np.sum(a, axis=dims, keepdims=True)
        if a.dtype.kind == "c":  # each part divided as a real: complex division rounds more
            m = np.empty_like(total)
            m.real = total.real / n
            m.imag = total.imag / n
        else:
            m = total / n
        dev = a - m
        if a.dtype.kind == "c":  # the squared modulus: a real variance
            dev2 = dev.real * dev.real + dev.imag * dev.imag
        else:
            dev2 = dev * dev
        ss = np.sum(dev2, axis=dims, keepdims=keepdim)
        v = ss / ss.dtype.type(max(n - correction, 0))
        m = _welford_inf(a, dims, m)
    return v, m if keepdim else np.squeeze(m, axis=dims)


def _welford_inf(a: np.ndarray, dims: tuple, m: np.ndarray) -> np.ndarray:
    """The mean torch's Welford pass reports when a slice holds an infinity.

    NOTE [Welford and infinities]
    torch's var_mean/std_mean update a running mean; once it is infinite, every later element
    turns it into NaN. So a slice's mean is +-inf only when its single infinity comes last
    (in C order over the reduced dims), NaN otherwise; finite slices keep the two-pass mean.
    """
    infs = np.isinf(a)
    if not infs.any() or not dims:
        return m
    last = np.moveaxis(a, dims, range(a.ndim - len(dims), a.ndim))
    last = last.reshape(last.shape[:a.ndim - len(dims)] + (-1,))[..., -1]
    last = np.expand_dims(last, dims)
    count = np.sum(infs, axis=dims, keepdims=True)
    lone_last = (count == 1) & np.isinf(last)
    return np.where(count == 0, m, np.where(lone_last, last, np.nan)).astype(m.dtype)


def _make_var(name: str, root: bool, with_mean: bool) -> None:
    op = getattr(red, name)

    def compute(input, dim, unbiased, keepdim, correction, out):
        dims, corr, spec = red.var_plan(name, input, dim, unbiased, keepdim, correction)
        if not numel(spec.shape):
            v = m = None
        else:
            if _count(input._shape, dims) - corr <= 0:
                warnings.warn(f"{name}(): degrees of freedom is <= 0. Correction should be "
                              "strictly less than the reduction factor (input numel divided "
                              "by output numel).", UserWarning, stacklevel=3)
            v, m = _var_and_mean(input, dims, corr, keepdim)
            if root:
                v = np.sqrt(v)
        first = _land(v, spec, out, name)
        if not with_mean:
            return first
        return first, _land(m, red.Spec(spec.shape, input._dtype), None, name)

    if with_mean:
        def kernel(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
            return compute(input, dim, unbiased, keepdim, correction, None)
    else:
        def kernel(input, dim=None, unbiased=None, keepdim=False, *, correction=None,
                   out=None):
            return compute(input, dim, unbiased, keepdim, correction, out)
    op.register("CPU", kernel)


_make_var("var", False, False)
_make_var("std", True, False)
_make_var("var_mean", False, True)
_make_var("std_mean", True, True)


# -- logsumexp and norms ----------------------------------------------------------------------
@_impl(red.logsumexp)
def _logsumexp(input, dim, keepdim=False, *, out=None):
    spec = red.logsumexp.meta_rule(input, dim, keepdim)
    dims = red.reduction_dims(input._shape, dim)
    if not numel(spec.shape):
        return _land(None, spec, out, "logsumexp")
    a = arr(input).astype(compute_dtype(spec.dtype), copy=False)
    if _count(a.shape, dims) == 0:
        return _land(-np.inf, spec, out, "logsumexp")
    rnd = _rounder(spec.dtype)
    with ignore_fp_errors():  # torch runs amax, sub, exp, sum, log, add in the result dtype
        # complex: shifted by the largest real part alone (torch's amax of the real parts),
        # so the imaginary part of the result is the principal angle of the sum
        m = np.max(a.real if a.dtype.kind == "c" else a, axis=dims, keepdims=True)
        m = np.where(np.isinf(m), 0, m).astype(a.dtype)
        e = rnd(np.exp(rnd(a - m)))
        r = rnd(np.log(rnd(np.sum(e, axis=dims, keepdims=True)))) + m
    return _land(r, spec, out, "logsumexp")


def _rounder(d: dt.DType):
    """Round float32 intermediates to a half dtype (torch's op-by-op composites do)."""
    if d.itemsize != 2:
        return lambda x: x
    return lambda x: x.astype(d.np).astype(_F32)


def _vector_norm(a: np.ndarray, ord, dims: tuple, keepdim: bool) -> np.ndarray:
    a = np.abs(a)
    with ignore_fp_errors():
        if ord == np.inf:
            return np.max(a, axis=dims, keepdims=keepdim)
        if ord == -np.inf:
            return np.min(a, axis=dims, keepdims=keepdim)
        if ord == 0:
            return np.sum(a != 0, axis=dims, keepdims=keepdim).astype(a.dtype)
        if ord == 1:
            return np.sum(a, axis=dims, keepdims=keepdim)
        if ord == 2:
            return np.sqrt(np.sum(a * a, axis=dims, keepdims=keepdim))
        p = a.dtype.type(ord)
        return np.sum(a ** p, axis=dims, keepdims=keepdim) ** (a.dtype.type(1) / p)


@_impl(red.linalg_vector_norm)
def _linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    dims, spec = red.vector_norm_plan(x, ord, dim, keepdim, dtype)
    if not numel(spec.shape):
        return _land(None, spec, out, "linalg_vector_norm")
    if x._dtype.is_complex:  # the norm of the moduli, in the real dtype of the result
        a = np.abs(arr(x)).astype(compute_dtype(spec.dtype), copy=False)
    else:
        a = _src(x, spec.dtype).astype(compute_dtype(spec.dtype), copy=False)
    if _count(a.shape, dims) == 0:
        return _land(0, spec, out, "linalg_vector_norm")
    return _land(_vector_norm(a, ord, dims, keepdim), spec, out, "linalg_vector_norm")


def _matrix_norm(a: np.ndarray, ord) -> np.ndarray:
    """Norm over the last two axes of ``a`` (rows, cols), batched over the rest."""
    if ord == "fro":
        sq = a.real * a.real + a.imag * a.imag if a.dtype.kind == "c" else a * a
        return np.sqrt(np.sum(sq, axis=(-2, -1)))
    if ord in ("nuc", 2, -2):
        if not np.isfinite(a).all():
            raise LinAlgError("linalg.svd: The algorithm failed to converge because the input "
                               "matrix contained non-finite values.")
        s = np.linalg.svd(a, compute_uv=False)
        return np.sum(s, axis=-1) if ord == "nuc" else (s.max(-1) if ord == 2 else s.min(-1))
    a = np.abs(a)
    sums = np.sum(a, axis=-2) if ord in (1, -1) else np.sum(a, axis=-1)
    return sums.max(-1) if ord > 0 else sums.min(-1)


@_impl(red.linalg_matrix_norm)
def _linalg_matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    (d0, d1), spec = red.matrix_norm_plan(A, ord, dim, keepdim, dtype)
    if not numel(spec.shape):
        return _land(None, spec, out, "linalg_matrix_norm")
    if A._dtype.is_complex:  # singular values and moduli of the complex entries
        real = np.dtype(compute_dtype(spec.dtype))
        a = arr(A).astype(np.complex128 if real.itemsize == 8 else np.complex64, copy=False)
    else:
        a = _src(A, spec.dtype).astype(compute_dtype(spec.dtype), copy=False)
    a = np.moveaxis(a, (d0, d1), (-2, -1))
    if a.shape[-1] == 0 or a.shape[-2] == 0:
        return _land(0, spec, out, "linalg_matrix_norm")
    with ignore_fp_errors():
        return _land(_matrix_norm(a, ord), spec, out, "linalg_matrix_norm")


# -- all / any / count ------------------------------------------------------------------------
def _make_bool(name: str, reduce) -> None:
    @_impl(getattr(red, name))
    def kernel(input, dim=None, keepdim=False, *, out=None):
        dims, spec = red.bool_reduce_plan(name, input, dim, keepdim)
        if not numel(spec.shape):
            return _land(None, spec, out, name)
        nz = arr(input) != 0
        return _land(reduce(nz, axis=dims, keepdims=keepdim), spec, out, name)


_make_bool("all", np.all)
_make_bool("any", np.any)


@_impl(red.count_nonzero)
def _count_nonzero(input, dim=None):
    spec = red.count_nonzero.meta_rule(input, dim)
    dims = red.reduction_dims(input._shape, dim)
    if not numel(spec.shape):
        return _land(None, spec, None, "count_nonzero")
    return _land(np.sum(arr(input) != 0, axis=dims, dtype=_I64), spec, None, "count_nonzero")


# -- scans ------------------------------------------------------------------------------------
def _scan(input: Tensor, d, spec, np_fn, cast) -> np.ndarray | None:
    if not numel(spec.shape):
        return None
    a = _src(input, cast).astype(_acc(spec.dtype), copy=False)
    if d is None:
        return a
    with ignore_fp_errors():
        return np_fn(a, axis=d)


def _make_scan(name: str, np_fn) -> None:
    op = getattr(red, name)
    op_ = getattr(red, name + "_")

    @_impl(op)
    def kernel(input, dim, *, dtype=None, out=None):
        d, spec = red.scan_plan(name, input, dim, dtype, out)
        return _land(_scan(input, d, spec, np_fn, dtype), spec, out, name)

    @_impl(op_)
    def kernel_(self, dim, *, dtype=None):
        op_.meta_rule(self, dim, dtype=dtype)  # validates: writable self, castable dtype
        d, spec = red.scan_plan(name, self, dim, self._dtype, None)
        r = _scan(self, d, spec, np_fn, dtype)
        self._ver.value += 1
        if r is not None:
            np.copyto(arr(self), r, casting="unsafe")
        return self


_make_scan("cumsum", np.cumsum)
_make_scan("cumprod", np.cumprod)


def _cum_extremum(a: np.ndarray, is_max: bool) -> tuple[np.ndarray, np.ndarray]:
    """Running extremum along the last axis and the last index attaining it (NaN sticks)."""
    ufunc = np.maximum if is_max else np.minimum
    vals = ufunc.accumulate(a, axis=-1)
    prev = np.concatenate([vals[..., :1], vals[..., :-1]], axis=-1)
    take = (a >= prev) if is_max else (a <= prev)
    if a.dtype.kind == "f":
        take |= np.isnan(a)
    take[..., 0] = True
    pos = np.where(take, like(a, np.arange(a.shape[-1])), 0)
    return vals, np.maximum.accumulate(pos, axis=-1)


def _make_cum_extremum(name: str, is_max: bool) -> None:
    op = getattr(red, name)

    @_impl(op)
    def kernel(input, dim, *, out=None):
        vspec, ispec = op.meta_rule(input, dim)
        vo, io = _outs(out)
        if not numel(input._shape) or not input._shape:
            v = _land(arr(input), vspec, vo, name)
            return _tuple(op.result_tuple, out, v, _land(0, ispec, io, name))
        d = red.single_dim(name, input._shape, dim)
        vals, idx = _cum_extremum(np.moveaxis(_wide(arr(input)), d, -1), is_max)
        v = _land(np.moveaxis(vals, -1, d), vspec, vo, name)
        return _tuple(op.result_tuple, out, v, _land(np.moveaxis(idx, -1, d), ispec, io, name))


_make_cum_extremum("cummax", True)
_make_cum_extremum("cummin", False)


@_impl(red.logcumsumexp)
def _logcumsumexp(input, dim, *, out=None):
    spec = red.logcumsumexp.meta_rule(input, dim)
    if not numel(spec.shape) or not input._shape:
        return _land(arr(input), spec, out, "logcumsumexp")
    d = red.single_dim("logcumsumexp", input._shape, dim)
    a = arr(input).astype(compute_dtype(input._dtype), copy=False)
    with ignore_fp_errors():
        if a.dtype.kind == "c":
            return _land(_complex_logcumsumexp(a, d), spec, out, "logcumsumexp")
        return _land(np.logaddexp.accumulate(a, axis=d), spec, out, "logcumsumexp")


def _complex_logaddexp(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log(exp(x) + exp(y))`` of complex arrays, shifted by the operand of larger real part
    (torch's complex log-add-exp); a ``-inf`` real part adds nothing."""
    swap = y.real > x.real
    hi, lo = np.where(swap, y, x), np.where(swap, x, y)
    r = hi + np.log1p(np.exp(lo - hi))
    return np.where(np.isneginf(lo.real), hi, r)


def _complex_logcumsumexp(a: np.ndarray, d: int) -> np.ndarray:
    moved = np.moveaxis(a, d, 0)
    out = np.empty_like(moved)
    out[0] = moved[0]
    for i in range(1, moved.shape[0]):
        out[i] = _complex_logaddexp(out[i - 1], moved[i])
    return np.moveaxis(out, 0, d)


# -- order statistics -------------------------------------------------------------------------
def _sorted_last(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(stable argsort, sorted values) along the last axis; NaN sorts last."""
    order = np.argsort(a, axis=-1, kind="stable")
    return order, np.take_along_axis(a, order, -1)


def _pick(order, s, k):
    k = k[..., None]
    return np.take_along_axis(s, k, -1)[..., 0], np.take_along_axis(order, k, -1)[..., 0]


def _median_rows(a: np.ndarray, skip_nan: bool) -> tuple[np.ndarray, np.ndarray]:
    """Lower median (values, indices) of each row of ``a`` (last axis)."""
    order, s = _sorted_last(a)
    n = a.shape[-1]
    if a.dtype.kind != "f":
        k = module_of(a).full(a.shape[:-1], (n - 1) // 2)
        return _pick(order, s, k)
    nan = np.isnan(a)
    if skip_nan:
        k = np.maximum((np.sum(~nan, axis=-1) - 1) // 2, 0)
        return _pick(order, s, k)
    vals, idx = _pick(order, s, module_of(a).full(a.shape[:-1], (n - 1) // 2))
    has_nan = nan.any(axis=-1)
    return np.where(has_nan, np.nan, vals), np.where(has_nan, np.argmax(nan, axis=-1), idx)


# torch writes NaN into an empty median's result; these are what C's NaN casts leave there
_EMPTY_MEDIAN = {"int8": 0, "int16": 0, "uint8": 0, "int32": np.iinfo(np.int32).min,
                 "int64": np.iinfo(np.int64).min, "bool": True}


def _make_median(name: str, skip_nan: bool) -> None:
    all_op = getattr(red, f"_{name}_all")
    dim_op = getattr(red, f"_{name}_dim")

    @_impl(all_op)
    def kernel_all(input):
        spec = all_op.meta_rule(input)
        a = _wide(arr(input)).reshape(1, -1)
        if a.size == 0:
            return _land(_EMPTY_MEDIAN.get(input._dtype.name, np.nan), spec, None, name)
        return _land(_median_rows(a, skip_nan)[0], spec, None, name)

    @_impl(dim_op)
    def kernel_dim(input, dim, keepdim=False, *, out=None):
        vspec, ispec = dim_op.meta_rule(input, dim, keepdim)
        vo, io = _outs(out)
        if not numel(vspec.shape):
            return _tuple(dim_op.result_tuple, out, _land(None, vspec, vo, name),
                          _land(None, ispec, io, name))
        d = red.single_dim(name, input._shape, dim)
        vals, idx = _median_rows(_last(_wide(arr(input)), d), skip_nan)
        return _tuple(dim_op.result_tuple, out, _land(vals, vspec, vo, name),
                      _land(idx, ispec, io, name))


_make_median("median", False)
_make_median("nanmedian", True)


def _insertion_order(row: np.ndarray) -> np.ndarray:
    """The permutation libstdc++'s ``std::sort`` leaves on a short row holding NaN.

    NOTE [mode and NaN]
    torch's CPU mode sorts each row with ``std::sort`` and ``<``; NaN compares false both ways,
    so where NaNs end up depends on the algorithm. For rows of at most 16 elements that
    algorithm is a plain insertion sort, replayed here; longer rows use NumPy's order.
    """
    perm = list(range(len(row)))
    for i in range(1, len(row)):
        v = perm[i]
        if row[v] < row[perm[0]]:
            perm[1:i + 1] = perm[0:i]
            perm[0] = v
            continue
        j = i
        while row[v] < row[perm[j - 1]]:
            perm[j] = perm[j - 1]
            j -= 1
        perm[j] = v
    return np.asarray(perm)


def _mode_order(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order, s = _sorted_last(a)
    if a.dtype.kind != "f" or a.shape[-1] > 16:
        return order, s
    flat_a, flat_o = a.reshape(-1, a.shape[-1]), order.reshape(-1, a.shape[-1]).copy()
    for r in np.flatnonzero(np.isnan(flat_a).any(axis=-1)):
        flat_o[r] = like(flat_o, _insertion_order(flat_a[r]))
    order = flat_o.reshape(order.shape)
    return order, np.take_along_axis(a, order, -1)


def _mode_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Most frequent value of each row (first in sorted order on ties) and its last index."""
    order, s = _mode_order(a)
    n = a.shape[-1]
    starts = module_of(s).ones(s.shape, bool)
    starts[..., 1:] = s[..., 1:] != s[..., :-1]
    pos = like(s, np.arange(n))
    run_start = np.maximum.accumulate(np.where(starts, pos, 0), axis=-1)
    best = np.argmax(pos - run_start, axis=-1)
    return _pick(order, s, best)


@_impl(red.mode)
def _mode(input, dim=-1, keepdim=False, *, out=None):
    vspec, ispec = red.mode.meta_rule(input, dim, keepdim)
    vo, io = _outs(out)
    if not numel(vspec.shape):
        return _tuple(red.mode.result_tuple, out, _land(None, vspec, vo, "mode"),
                      _land(None, ispec, io, "mode"))
    d = red.single_dim("mode", input._shape, dim)
    vals, idx = _mode_rows(_last(_wide(arr(input)), d))
    return _tuple(red.mode.result_tuple, out, _land(vals, vspec, vo, "mode"),
                  _land(idx, ispec, io, "mode"))


def _lerp(a, b, w):
    # torch.lerp's two-sided form: exact at both ends.
    return np.where(w < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def _quantile_rows(s: np.ndarray, q: np.ndarray, k: np.ndarray, how: str) -> np.ndarray:
    """Quantiles ``q`` of sorted rows ``s`` whose first ``k`` values count; shape (..., nq)."""
    one = s.dtype.type(1)
    rank = q * np.maximum(k - one, 0).astype(s.dtype)[..., None]
    lo, hi = np.floor(rank), np.ceil(rank)
    if how in ("lower", "higher", "nearest"):
        pick = {"lower": lo, "higher": hi, "nearest": np.rint(rank)}[how]
        return np.take_along_axis(s, pick.astype(np.intp), -1)
    a = np.take_along_axis(s, lo.astype(np.intp), -1)
    b = np.take_along_axis(s, hi.astype(np.intp), -1)
    w = rank - lo if how == "linear" else np.full_like(rank, 0.5)
    return _lerp(a, b, w.astype(s.dtype))


def _make_quantile(name: str, skip_nan: bool) -> None:
    op = getattr(red, name)

    @_impl(op)
    def kernel(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
        spec = op.meta_rule(input, q, dim, keepdim, interpolation=interpolation)
        qv = cast(arr(q) if isinstance(q, Tensor) else like(arr(input), np.asarray(q)),
                  input._dtype.np).reshape(-1)
        if ((qv < 0) | (qv > 1)).any():
            raise RuntimeError(f"{name}() q values must be in the range [0, 1]")
        if not numel(spec.shape):
            return _land(None, spec, out, name)
        a = arr(input)
        a = a.reshape(-1) if dim is None else _last(a, red.single_dim(name, a.shape, dim))
        s = np.sort(a, axis=-1)
        nan = np.isnan(s)
        n = s.shape[-1]
        k = np.sum(~nan, axis=-1) if skip_nan else module_of(s).full(s.shape[:-1], n)
        with ignore_fp_errors():
            r = _quantile_rows(s, qv, k, interpolation)
            if skip_nan:
                r = np.where((k == 0)[..., None], np.nan, r)
            else:
                r = np.where(nan[..., -1:], np.nan, r)
        return _land(np.moveaxis(r, -1, 0), spec, out, name)


_make_quantile("quantile", False)
_make_quantile("nanquantile", True)
