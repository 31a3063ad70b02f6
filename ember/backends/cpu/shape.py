"""CPU kernels of the shape family: joining, flipping, repeating, triangles, diagonals, sorting,
uniqueness, counting and searching, over NumPy strided views.

Sorting is always stable (``np.argsort(kind="stable")``); descending order is a stable ascending
sort of the reversed input, reversed back, so ties keep their input order and NaN (which NumPy
sorts last) counts as the largest value, as in torch. bfloat16 keys are widened to float32
(exactly) before sorting or comparing.
"""

from __future__ import annotations

import math

import numpy as np

from ember.backends.cpu._util import arr, compute_dtype, new_output
from ember.backends.cpu._xp import argsort, like, module_of
from ember.core import dtype as dt
from ember.core.layout import canonical_dim
from ember.ops import shape as sh
from ember.ops._promotion import result_type
from ember.ops.views import diagonal
from ember.tensor import Tensor, make_view


def _out(spec, out, name):
    return new_output(spec.shape, spec.dtype, out, name)


def _put(o: Tensor, value) -> Tensor:
    """Write a NumPy result (or scalar) into ``o``'s memory, casting as needed."""
    if o.numel():
        np.copyto(arr(o), value, casting="unsafe")
    return o


def _keys(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float32) if a.dtype == dt.bfloat16.np else a


def _at_least_1d(t: Tensor) -> np.ndarray:
    a = arr(t)
    return a.reshape(1) if not t._shape else a


# -- joining -----------------------------------------------------------------------------------
@sh.cat.impl("CPU")
def _cat(tensors, dim=0, *, out=None):
    tensors = list(tensors)
    o = _out(sh.cat.meta_rule(tensors, dim, out=out), out, "cat")
    if not o.numel():
        return o
    d = canonical_dim(dim, len(o._shape))
    dst, start = arr(o), 0
    for t in tensors:
        if t._shape == (0,) or not t.numel():
            continue
        n = t._shape[d]
        np.copyto(dst[(slice(None),) * d + (slice(start, start + n),)], arr(t), casting="unsafe")
        start += n
    return o


# -- flip, roll, repeat ------------------------------------------------------------------------
@sh.flip.impl("CPU")
def _flip(self, *args, dims=None):
    axes = sh.flip_dims(self, args, dims)
    o = new_output(self._shape, self._dtype, None, "flip")
    src = arr(self)
    return _put(o, np.flip(src, axes) if axes and self._shape else src)


@sh.roll.impl("CPU")
def _roll(self, shifts, dims=None):
    shifts, axes = sh.roll_args(self, shifts, dims)
    o = new_output(self._shape, self._dtype, None, "roll")
    if not o.numel():
        return o
    src = arr(self)
    if not axes:
        return _put(o, np.roll(src.reshape(-1), shifts[0]).reshape(self._shape))
    return _put(o, np.roll(src, shifts, axes))


@sh.repeat.impl("CPU")
def _repeat(self, *repeats):
    reps = sh._int_list(repeats)
    o = new_output(sh.repeat_shape(self, reps), self._dtype, None, "repeat")
    if not o.numel():
        return o
    src = arr(self).reshape((1,) * (len(reps) - len(self._shape)) + self._shape)
    return _put(o, np.tile(src, reps))


def _nonneg_repeats(reps: Tensor) -> np.ndarray:
    r = arr(reps).astype(np.int64).reshape(-1)
    if (r < 0).any():
        raise RuntimeError("repeats can not be negative")
    return r


@sh.repeat_interleave.impl("CPU")
def _repeat_interleave(self, repeats=None, dim=None, *, output_size=None):
    if dim is not None and not self._shape:
        raise IndexError(f"Dimension out of range (expected to be in range of [-1, 0], but got "
                         f"{dim})")
    shape, reps, d = sh.repeat_interleave_args(self, repeats, dim, output_size)
    if shape is None:
        res, dtype = np.repeat(np.arange(reps._shape[0]), _nonneg_repeats(reps)), reps._dtype
    else:
        r = _nonneg_repeats(reps) if isinstance(reps, Tensor) else int(reps)
        res, dtype = np.repeat(arr(self).reshape(shape), r, axis=d), self._dtype
    if output_size is not None and res.shape[d] != output_size:
        if isinstance(reps, Tensor):
            raise RuntimeError("allocated size does not match required size")
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {res.shape[d]} "
                           f"but got {output_size}")
    return _put(new_output(res.shape, dtype, None, "repeat_interleave"), res)


# -- triangles and diagonals -------------------------------------------------------------------
def _tri_mask(shape, k: int, lower: bool) -> np.ndarray:
    r, c = shape[-2:]
    return np.tri(r, c, k, dtype=bool) if lower else ~np.tri(r, c, k - 1, dtype=bool)


def _make_tri(op, op_, lower: bool):
    def kernel(self, diagonal=0, *, out=None):
        o = _out(op.meta_rule(self, diagonal), out, op.name)
        if not o.numel():
            return o
        src = arr(self)
        return _put(o, np.where(_tri_mask(self._shape, diagonal, lower), src,
                                np.zeros((), src.dtype)))

    def kernel_(self, diagonal=0):
        op_.meta_rule(self, diagonal)
        self._ver.value += 1
        if self.numel():
            keep = _tri_mask(self._shape, diagonal, lower)
            np.copyto(arr(self), 0, casting="unsafe", where=~keep)
        return self

    op.register("CPU", kernel)
    op_.register("CPU", kernel_)


_make_tri(sh.tril, sh.tril_, True)
_make_tri(sh.triu, sh.triu_, False)


def _embed(self: Tensor, o: Tensor, offset: int, a: int, b: int) -> Tensor:
    """Zero ``o`` and write ``self``'s last dim onto its ``offset`` diagonal of dims a, b."""
    if not o.numel():
        return o
    arr(o).fill(0)
    if self.numel():
        target = make_view(o, *diagonal.geometry(o, offset, a, b))
        np.copyto(arr(target), arr(self), casting="unsafe")
    return o


@sh.diag_embed.impl("CPU")
def _diag_embed(self, offset=0, dim1=-2, dim2=-1):
    shape, a, b = sh.diag_embed_shape(self, offset, dim1, dim2)
    return _embed(self, new_output(shape, self._dtype, None, "diag_embed"), offset, a, b)


@sh.diag.impl("CPU")
def _diag(self, diagonal=0, *, out=None):
    o = _out(sh.diag.meta_rule(self, diagonal), out, "diag")
    if len(self._shape) == 1:
        return _embed(self, o, diagonal, 0, 1)
    return _put(o, np.diagonal(arr(self), diagonal))


@sh.trace.impl("CPU")
def _trace(self):
    spec = sh.trace.meta_rule(self)
    acc = compute_dtype(spec.dtype) if spec.dtype.is_differentiable else np.int64
    o = new_output((), spec.dtype, None, "trace")
    with np.errstate(all="ignore"):
        np.copyto(arr(o), np.trace(arr(self), dtype=acc), casting="unsafe")
    return o


@sh.cross.impl("CPU")
def _cross(self, other, dim=None, *, out=None):
    shape, d = sh.cross_args(self, other, dim)
    o = new_output(shape, self._dtype, out, "cross")
    if not o.numel():
        return o
    a, b = np.broadcast_to(arr(self), shape), np.broadcast_to(arr(other), shape)
    x = [np.take(a, i, axis=d) for i in range(3)]
    y = [np.take(b, i, axis=d) for i in range(3)]
    # torch computes in the element type itself (no opmath), rounding after each operation
    with np.errstate(all="ignore"):
        res = np.stack([x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2],
                        x[0] * y[1] - x[1] * y[0]], axis=d)
    return _put(o, res)


# -- sorting and selection ---------------------------------------------------------------------
def stable_argsort(a: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Stable argsort along ``axis``; NaN is the largest value; ties keep input order."""
    keys = _keys(a)
    if not descending:
        return np.argsort(keys, axis=axis, kind="stable")
    n = keys.shape[axis]
    idx = np.argsort(np.flip(keys, axis), axis=axis, kind="stable")
    return (n - 1) - np.flip(idx, axis)


def _pair_out(shape, dtype, out, name):
    vo, io = out if out is not None else (None, None)
    return new_output(shape, dtype, vo, name), new_output(shape, dt.int64, io, name)


def _pair(op, values, indices, out):
    return (values, indices) if out is not None else op.result_tuple(values, indices)


@sh.sort.impl("CPU")
def _sort(self, dim=-1, descending=False, *, stable=False, out=None):
    sh.sort.meta_rule(self, dim)
    d = canonical_dim(dim, len(self._shape))
    vo, io = _pair_out(self._shape, self._dtype, out, "sort")
    if self.numel():
        src = _at_least_1d(self)
        idx = stable_argsort(src, d, descending)
        _put(io, idx.reshape(self._shape))
        _put(vo, np.take_along_axis(src, idx, d).reshape(self._shape))
    return _pair(sh.sort, vo, io, out)


@sh.topk.impl("CPU")
def _topk(self, k, dim=-1, largest=True, sorted=True, *, out=None):
    spec = sh.topk.meta_rule(self, k, dim)[0]
    d = sh.topk_dim(self, k, dim)
    vo, io = _pair_out(spec.shape, self._dtype, out, "topk")
    if vo.numel():
        src = _at_least_1d(self)
        # a 0-d input yields its element whatever k is (torch's behaviour)
        keep = np.arange(k if self._shape else 1)
        idx = np.take(stable_argsort(src, d, largest), keep, axis=d)
        _put(io, idx.reshape(spec.shape))
        _put(vo, np.take_along_axis(src, idx, d).reshape(spec.shape))
    return _pair(sh.topk, vo, io, out)


@sh.kthvalue.impl("CPU")
def _kthvalue(self, k, dim=-1, keepdim=False, *, out=None):
    spec = sh.kthvalue.meta_rule(self, k, dim, keepdim)[0]
    d = sh.kthvalue_dim(self, k, dim)
    vo, io = _pair_out(spec.shape, self._dtype, out, "kthvalue")
    if vo.numel():
        src = _at_least_1d(self)
        idx = np.take(stable_argsort(src, d, False), [k - 1], axis=d)
        _put(io, idx.reshape(spec.shape))
        _put(vo, np.take_along_axis(src, idx, d).reshape(spec.shape))
    return _pair(sh.kthvalue, vo, io, out)


# -- uniqueness and counting -------------------------------------------------------------------
def _groups(rows: np.ndarray, order: np.ndarray):
    """Group flags of ``rows[order]`` (a new group where a row differs from the previous one;
    NaN never equals NaN), the group of each original row, and the group sizes."""
    n = rows.shape[0]
    s = rows[order]
    xp = module_of(rows)
    flags = xp.ones(n, bool)
    if n > 1:
        diff = s[1:] != s[:-1]
        flags[1:] = diff.any(axis=tuple(range(1, diff.ndim))) if diff.ndim > 1 else diff
    group = xp.empty(n, np.int64)
    group[order] = np.cumsum(flags) - 1
    starts = np.flatnonzero(flags)
    counts = np.diff(np.append(starts, n))
    return flags, group, counts


def _tensor(values: np.ndarray, dtype: dt.DType, name: str) -> Tensor:
    return _put(new_output(values.shape, dtype, None, name), values)


def _unique_rows(self: Tensor, d: int | None, sort: bool, name: str):
    """(unique, inverse, counts) of the elements (``d`` None) or the slices along ``d``."""
    src = arr(self).reshape(-1) if d is None else np.moveaxis(arr(self), d, 0)
    rows = _keys(src).reshape(src.shape[0], math.prod(src.shape[1:]))
    n = rows.shape[0]
    xp = module_of(rows)
    if not sort:
        order = like(rows, np.arange(n))
    elif d is None:
        order = argsort(xp, rows[:, 0], stable=True) if n else like(rows, np.arange(0))
    else:
        order = np.lexsort(rows.T[::-1]) if rows.shape[1] else like(rows, np.arange(n))
    flags, group, counts = _groups(rows, order)
    uniq = src[order][flags]
    if d is not None:
        uniq = np.moveaxis(uniq, 0, d)
    inverse = group.reshape(self._shape) if d is None else group
    return (_tensor(uniq, self._dtype, name), _tensor(inverse, dt.int64, name),
            _tensor(counts, dt.int64, name))


@sh._unique2.impl("CPU")
def _unique2_cpu(self, sorted=True, return_inverse=False, return_counts=False):
    sh.unique_dtype_check(self)
    return _unique_rows(self, None, True, "unique")


@sh.unique_dim.impl("CPU")
def _unique_dim_cpu(self, dim, sorted=True, return_inverse=False, return_counts=False):
    return _unique_rows(self, sh.unique_dim_check(self, dim), True, "unique")


@sh._unique_consecutive.impl("CPU")
def _unique_consecutive_cpu(self, return_inverse=False, return_counts=False, dim=None):
    if dim is None:
        sh.unique_dtype_check(self)
    d = None if dim is None else sh.unique_dim_check(self, dim)
    return _unique_rows(self, d, False, "unique_consecutive")


@sh.bincount.impl("CPU")
def _bincount(self, weights=None, minlength=0):
    dtype = sh.bincount_check(self, weights, minlength)
    x = arr(self)
    if x.size == 0:
        return _tensor(np.zeros(minlength, np.int64), dt.int64, "bincount")
    if x.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    w = None if weights is None else arr(weights).astype(np.float64)
    return _tensor(np.bincount(x.astype(np.int64), w, minlength), dtype, "bincount")


# -- histograms and searching ------------------------------------------------------------------
def _fmt(v: float) -> str:
    return f"{v:g}" if math.isfinite(v) else str(v)


def _histc_range(x: np.ndarray, lo: float, hi: float) -> tuple[float, float]:
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{_fmt(lo)}, {_fmt(hi)}] is not finite")
    return lo, hi


@sh.histc.impl("CPU")
def _histc(self, bins=100, min=0, max=0, *, out=None):
    o = _out(sh.histc.meta_rule(self, bins, min, max), out, "histc")
    x = arr(self).reshape(-1)
    lo, hi = _histc_range(x, float(min), float(max))
    left, right = x.dtype.type(lo), x.dtype.type(hi)
    inside = x[(x >= left) & (x <= right)]
    # torch's linear binning, in the element type: (x - left) * bins / (right - left)
    with np.errstate(all="ignore"):
        pos = ((inside - left) * bins / (right - left)).astype(np.int64)
    pos = np.minimum(pos, bins - 1)
    return _put(o, np.bincount(pos, minlength=bins))


def _bsearch(bd: np.ndarray, v: np.ndarray, right: bool) -> np.ndarray:
    """Row-wise binary search of ``v`` (rows, m) in ``bd`` (rows, n), with torch's comparisons:
    lower bound moves right while ``!(b >= v)``, upper bound while ``!(b > v)``."""
    rows, n = bd.shape
    lo = np.zeros(v.shape, np.int64)
    hi = np.full(v.shape, n, np.int64)
    r = np.arange(rows)[:, None]
    while True:
        active = lo < hi
        if not active.any():
            return lo
        mid = (lo + hi) >> 1
        mv = bd[r, np.minimum(mid, n - 1)]
        go = ~(mv > v) if right else ~(mv >= v)
        lo = np.where(active & go, mid + 1, lo)
        hi = np.where(active & ~go, mid, hi)


def _search(seq: Tensor, values, right: bool, sorter, o: Tensor) -> Tensor:
    if not o.numel():
        return o
    c = compute_dtype(result_type(seq, values))
    bd = arr(seq).astype(c)
    n = seq._shape[-1]
    if sorter is not None:
        s = arr(sorter)
        if s.size and (s.min() < 0 or s.max() >= n):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        bd = np.take_along_axis(bd, s, -1)
    v = np.asarray(arr(values) if isinstance(values, Tensor) else values).astype(c)
    rows = 1 if bd.ndim == 1 else math.prod(seq._shape[:-1])
    if n == 0:
        return _put(o, 0)
    res = _bsearch(bd.reshape(rows, n), v.reshape(rows, -1), right)
    return _put(o, res.reshape(o._shape))


@sh.searchsorted.impl("CPU")
def _searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None,
                  sorter=None, out=None):
    spec = sh.searchsorted.meta_rule(sorted_sequence, input, out_int32=out_int32, right=right,
                                     side=side, sorter=sorter, out=out)
    o = _out(spec, out, "searchsorted")
    return _search(sorted_sequence, input, right or side == "right", sorter, o)


@sh.bucketize.impl("CPU")
def _bucketize(input, boundaries, *, out_int32=False, right=False, out=None):
    spec = sh.bucketize.meta_rule(input, boundaries, out_int32=out_int32, right=right, out=out)
    return _search(boundaries, input, right, None, _out(spec, out, "bucketize"))
