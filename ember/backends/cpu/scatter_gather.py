"""CPU kernels of the scatter_gather family: NumPy fancy indexing and ``ufunc.at``.

Every kernel runs its operator's Meta rule (or check) first. A functional op copies ``self``
into its output and runs the same core as its in-place twin on that copy; in-place kernels
bump ``self``'s version once and write through ``arr(self)``, a strided view of its memory.
Accumulating cores compute half types in float32 (PyTorch's opmath) and cast back.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._accumulate import add_rows
from ember.backends.cpu._util import arr, arr_on, new_output
from ember.backends.cpu._xp import array_module, cast, module_of, ufunc_at  # noqa: F401
from ember.core.layout import canonical_dim, numel
from ember.ops import scatter_gather as sg
from ember.tensor import Tensor, empty_tensor

_HALF = (np.dtype(np.float16), sg.dt.bfloat16.np)
_F32 = np.dtype(np.float32)
_UFUNC = {None: None, "add": np.add, "multiply": np.multiply, "sum": np.add, "mean": np.add,
          "prod": np.multiply, "amax": np.maximum, "amin": np.minimum}


# -- helpers -----------------------------------------------------------------------------------
def _as1d(a: np.ndarray) -> np.ndarray:
    """0-d arrays as 1-d views (PyTorch treats a scalar as a 1-element vector here)."""
    return a.reshape(1) if a.ndim == 0 else a


def _grid(idx: np.ndarray, dim: int) -> tuple:
    """Index arrays addressing ``target[..., idx[i, j, ...], ...]`` at every position of idx."""
    key = list(module_of(idx).indices(idx.shape, sparse=True))
    key[dim] = idx
    return tuple(key)


def _at(ufunc, target: np.ndarray, key, values) -> None:
    """``target[key] (op)= values`` with repeats accumulating; half types via float32."""
    if ufunc is None:
        target[key] = values
        return
    xp = module_of(target)
    if target.dtype not in _HALF:
        ufunc_at(xp, ufunc, target, key, cast(values, target.dtype))
        return
    tmp = target.astype(_F32)
    ufunc_at(xp, ufunc, tmp, key, cast(values, _F32))
    np.copyto(target, tmp, casting="unsafe")


def _scalar(value, dtype: np.dtype):
    """A scattered scalar (number or 0-d tensor) cast to ``dtype``, as PyTorch converts it."""
    if isinstance(value, Tensor):
        value = arr(value).reshape(()).item() if value._dtype is not sg.dt.bfloat16 \
            else float(arr(value).reshape(()))
    with np.errstate(all="ignore"):
        return np.array(value).astype(dtype)[()]  # a NumPy scalar: any array module takes it


def _copy_of(self: Tensor, shape: tuple, out, name: str) -> Tensor:
    o = new_output(shape, self._dtype, out, name)
    if numel(shape):
        np.copyto(arr(o), arr(self), casting="unsafe")
    return o


def _inplace(self: Tensor) -> np.ndarray:
    self._ver.value += 1
    return arr(self)


def _check_flat(idx: np.ndarray, n: int) -> None:
    if idx.size and (idx.min() < -n or idx.max() >= n):
        bad = idx.reshape(-1)[np.argmax(((idx < -n) | (idx >= n)).reshape(-1))]
        raise IndexError(f"out of range: tried to access index {int(bad)} on a tensor of {n} "
                         "elements.")


# -- gather / scatter --------------------------------------------------------------------------
@sg.gather.impl("CPU")
def _gather(self, dim, index, *, sparse_grad=False, out=None):
    spec = sg.gather.meta_rule(self, dim, index)
    o = new_output(spec.shape, spec.dtype, out, "gather")
    if numel(index._shape):
        np.copyto(_as1d(arr(o)), gather_values(arr(self), canonical_dim(dim, self.dim()),
                                               arr(index)))
    return o


def gather_values(src: np.ndarray, dim: int, idx: np.ndarray) -> np.ndarray:
    """``gather``'s values as a fresh array shaped like ``idx`` (1-d when ``idx`` is 0-d):
    ``out[i][j] = src[idx[i][j]][j]`` for ``dim`` 0; out-of-range indices raise."""
    src, idx = _as1d(src), _as1d(idx)
    sg.check_bounds(idx, src.shape[dim], dim)
    return src[_grid(idx, dim)]


def scatter_add_values(target: np.ndarray, dim: int, idx: np.ndarray, src: np.ndarray) -> None:
    """``target[idx[i][j]][j] += src[i][j]`` (for ``dim`` 0) in place, repeats accumulating in
    index order; ``src`` is read over ``idx``'s extent. Out-of-range indices raise."""
    idx = _as1d(idx)
    if idx.size == 0:
        return
    t = _as1d(target)
    sg.check_bounds(idx, t.shape[dim], dim)
    _at(np.add, t, _grid(idx, dim), _as1d(src)[tuple(slice(0, s) for s in idx.shape)])


def _scatter_into(target: np.ndarray, dim: int, index: Tensor, src, reduce) -> None:
    """Core of scatter/scatter_add: ``src`` (tensor or scalar) into ``target`` along ``dim``."""
    idx = _as1d(arr(index))
    if idx.size == 0:
        return
    t = _as1d(target)
    sg.check_bounds(idx, t.shape[dim], dim)
    if isinstance(src, Tensor):
        vals = _as1d(arr(src))[tuple(slice(0, s) for s in idx.shape)]
    else:
        vals = _scalar(src, t.dtype)
    _at(_UFUNC[reduce], t, _grid(idx, dim), vals)


def _scatter_args(self, dim, src, value):
    return canonical_dim(dim, self.dim()), sg.scatter_source(src, value)


@sg.scatter.impl("CPU")
def _scatter(self, dim, index, src=None, *, value=None, reduce=None, out=None):
    spec = sg.scatter.meta_rule(self, dim, index, src, value=value, reduce=reduce)
    o = _copy_of(self, spec.shape, out, "scatter")
    dim, source = _scatter_args(self, dim, src, value)
    _scatter_into(arr(o), dim, index, source, reduce)
    return o


@sg.scatter_.impl("CPU")
def _scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    sg.scatter_.meta_rule(self, dim, index, src, value=value, reduce=reduce)
    dim, source = _scatter_args(self, dim, src, value)
    _scatter_into(_inplace(self), dim, index, source, reduce)
    return self


@sg.scatter_add.impl("CPU")
def _scatter_add(self, dim, index, src, *, out=None):
    spec = sg.scatter_add.meta_rule(self, dim, index, src)
    o = _copy_of(self, spec.shape, out, "scatter_add")
    scatter_add_values(arr(o), canonical_dim(dim, self.dim()), arr(index), arr(src))
    return o


@sg.scatter_add_.impl("CPU")
def _scatter_add_(self, dim, index, src):
    sg.scatter_add_.meta_rule(self, dim, index, src)
    scatter_add_values(_inplace(self), canonical_dim(dim, self.dim()), arr(index), arr(src))
    return self


def _identity(reduce: str, dtype: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "b":
        return reduce == "amin"
    big = np.inf if dtype.kind == "f" else np.iinfo(dtype).max
    lowest = -np.inf if dtype.kind == "f" else np.iinfo(dtype).min
    return lowest if reduce == "amax" else big


def _scatter_reduce_into(target: np.ndarray, dim: int, index: Tensor, src: Tensor, reduce: str,
                         include_self: bool) -> None:
    idx = _as1d(arr(index))
    if idx.size == 0:
        return
    t = _as1d(target)
    sg.check_bounds(idx, t.shape[dim], dim)
    key = _grid(idx, dim)
    work = t.astype(_F32) if t.dtype in _HALF else t
    vals = _as1d(arr(src))[tuple(slice(0, s) for s in idx.shape)].astype(work.dtype)
    if not include_self:
        work[key] = _identity(reduce, work.dtype)
    ufunc_at(module_of(work), _UFUNC[reduce], work, key, vals)
    if reduce == "mean":
        counts = module_of(t).full(t.shape, int(include_self), np.int64)
        ufunc_at(module_of(t), np.add, counts, key, 1)
        divide = np.divide if work.dtype.kind in "fc" else np.floor_divide
        divide(work, counts, out=work, where=counts > 0, casting="unsafe")
    if work is not t:
        np.copyto(t, work, casting="unsafe")


@sg.scatter_reduce.impl("CPU")
def _scatter_reduce(self, dim, index, src, reduce, *, include_self=True, out=None):
    spec = sg.scatter_reduce.meta_rule(self, dim, index, src, reduce)
    o = _copy_of(self, spec.shape, out, "scatter_reduce")
    _scatter_reduce_into(arr(o), canonical_dim(dim, self.dim()), index, src, reduce,
                         include_self)
    return o


@sg.scatter_reduce_.impl("CPU")
def _scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    sg.scatter_reduce_.meta_rule(self, dim, index, src, reduce)
    _scatter_reduce_into(_inplace(self), canonical_dim(dim, self.dim()), index, src, reduce,
                         include_self)
    return self


# -- index_* along one dim ---------------------------------------------------------------------
def _dim_key(t: np.ndarray, dim: int, index: Tensor, **bounds) -> tuple:
    """``(:, ..., idx)`` addressing ``index`` along ``dim`` of ``t``, bounds checked."""
    idx = _as1d(arr(index))
    sg.check_bounds(idx, t.shape[dim], dim, **bounds)
    return (slice(None),) * dim + (idx,)


@sg.index_select.impl("CPU")
def _index_select(self, dim, index, *, out=None):
    spec = sg.index_select.meta_rule(self, dim, index)
    o = new_output(spec.shape, spec.dtype, out, "index_select")
    dim = canonical_dim(dim, self.dim())
    src, idx = _as1d(arr(self)), _as1d(arr(index))
    if idx.size and (idx.min() < 0 or idx.max() >= src.shape[dim]):
        raise IndexError("index out of range in self")
    if numel(spec.shape):
        np.copyto(_as1d(arr(o)), np.take(src, idx, axis=dim))
    return o


def index_add_values(target: np.ndarray, dim: int, idx: np.ndarray, source: np.ndarray,
                     alpha=1) -> None:
    """``target.index_add_(dim, idx, source, alpha=alpha)`` on arrays: slice ``k`` of
    ``source`` along ``dim`` (times ``alpha``) added to slice ``idx[k]`` of ``target``, in
    increasing ``k`` (rows in C where it applies, NOTE in ember/backends/cpu/_accumulate.py).
    Out-of-range indices raise."""
    t, idx = _as1d(target), _as1d(idx)
    sg.check_bounds(idx, t.shape[dim], dim)
    vals = _as1d(source).reshape(t.shape[:dim] + idx.shape + t.shape[dim + 1:])
    if alpha != 1:
        vals = vals.astype(_F32) * alpha if vals.dtype in _HALF else vals * alpha
    if not add_rows(t, dim, idx, vals):
        _at(np.add, t, (slice(None),) * dim + (idx,), vals)


@sg.index_add.impl("CPU")
def _index_add(self, dim, index, source, *, alpha=1, out=None):
    spec = sg.index_add.meta_rule(self, dim, index, source)
    o = _copy_of(self, spec.shape, out, "index_add")
    index_add_values(arr(o), canonical_dim(dim, self.dim()), arr(index), arr(source), alpha)
    return o


@sg.index_add_.impl("CPU")
def _index_add_(self, dim, index, source, *, alpha=1):
    sg.index_add_.meta_rule(self, dim, index, source)
    index_add_values(_inplace(self), canonical_dim(dim, self.dim()), arr(index), arr(source),
                     alpha)
    return self


def _index_copy_into(target: np.ndarray, dim: int, index: Tensor, source: Tensor) -> None:
    t = _as1d(target)
    key = _dim_key(t, dim, index, error=IndexError, prefix="index_copy_(): ")
    t[key] = _as1d(arr(source)).reshape(t[key].shape)


@sg.index_copy.impl("CPU")
def _index_copy(self, dim, index, source, *, out=None):
    spec = sg.index_copy.meta_rule(self, dim, index, source)
    o = _copy_of(self, spec.shape, out, "index_copy")
    _index_copy_into(arr(o), canonical_dim(dim, self.dim()), index, source)
    return o


@sg.index_copy_.impl("CPU")
def _index_copy_(self, dim, index, source):
    sg.index_copy_.meta_rule(self, dim, index, source)
    _index_copy_into(_inplace(self), canonical_dim(dim, self.dim()), index, source)
    return self


def _index_fill_into(target: np.ndarray, dim: int, index: Tensor, value) -> None:
    t = _as1d(target)
    t[_dim_key(t, dim, index, negative=True, error=IndexError)] = _scalar(value, t.dtype)


@sg.index_fill.impl("CPU")
def _index_fill(self, dim, index, value):
    spec = sg.index_fill.meta_rule(self, dim, index, value)
    o = _copy_of(self, spec.shape, None, "index_fill")
    _index_fill_into(arr(o), canonical_dim(dim, self.dim()), index, value)
    return o


@sg.index_fill_.impl("CPU")
def _index_fill_(self, dim, index, value):
    sg.index_fill_.meta_rule(self, dim, index, value)
    _index_fill_into(_inplace(self), canonical_dim(dim, self.dim()), index, value)
    return self


_INT64, _INT32 = sg.dt.int64, sg.dt.int32


# -- index / index_put -------------------------------------------------------------------------
def _numpy_key(self: Tensor, entries) -> tuple[tuple, tuple]:
    """NumPy index tuple for validated ``entries`` and the indexed (result) shape."""
    key, dims = [], []
    for d, t in entries:
        key += [slice(None)] * (d - len(key))
        a = arr_on(t, self)
        if sg._is_mask(t):
            if a.ndim == 0:
                continue  # a 0-d mask selects nothing extra (PyTorch's expandTensors)
            parts = np.nonzero(a)
        else:
            parts = (a,)
        for p in parts:
            dims.append((len(key), p.shape))
            key.append(p)
    if not dims:
        return tuple(key), self._shape
    shape = sg.advanced_shape(self._shape, dims)
    if not numel(shape):
        return tuple(key), shape  # an empty result reads nothing: torch checks no bounds
    for d, p in enumerate(key):
        if not isinstance(p, slice):
            sg.check_bounds(p, self._shape[d], d, negative=True, error=IndexError)
    return tuple(key), shape


@sg.index.impl("CPU")
def _index(self, indices):
    if indices.__class__ is list and len(indices) == 1 and self._shape:
        t = indices[0]
        if isinstance(t, Tensor) and (t._dtype is _INT64 or t._dtype is _INT32):
            # ``x[idx]`` hot path: one index tensor on dim 0 is a ``take`` along it
            a = arr(t) if t._device is self._device else arr_on(t, self)
            shape = t._shape + self._shape[1:]
            o = empty_tensor(shape, self._dtype)
            if numel(shape):
                try:
                    np.take(arr(self), a, axis=0, out=arr(o))
                except IndexError:
                    # torch's message for the first bad index
                    sg.check_bounds(a, self._shape[0], 0, negative=True, error=IndexError)
                    raise
            return o
    key, shape = _numpy_key(self, sg.index_entries(self, indices))
    o = new_output(shape, self._dtype)
    if numel(shape):
        np.copyto(arr(o), arr(self)[key])
    return o


def _index_put_into(self: Tensor, target: np.ndarray, indices, values: Tensor, accumulate):
    key, shape = _numpy_key(self, sg.index_entries(self, indices))
    sg.check_values_shape(values._shape, shape)
    if numel(shape):
        _at(np.add if accumulate else None, target, key, arr(values))


@sg.index_put.impl("CPU")
def _index_put(self, indices, values, accumulate=False):
    spec = sg.index_put.meta_rule(self, indices, values)
    o = _copy_of(self, spec.shape, None, "index_put")
    _index_put_into(self, arr(o), indices, values, accumulate)
    return o


@sg.index_put_.impl("CPU")
def _index_put_(self, indices, values, accumulate=False):
    sg.index_put_.meta_rule(self, indices, values)
    _index_put_into(self, _inplace(self), indices, values, accumulate)
    return self


# -- masked_* ----------------------------------------------------------------------------------
def _masked_fill_into(target: np.ndarray, mask: Tensor, value) -> None:
    if target.size:
        m = np.broadcast_to(arr(mask), target.shape)
        np.copyto(target, _scalar(value, target.dtype), where=m)


@sg.masked_fill.impl("CPU")
def _masked_fill(self, mask, value):
    spec = sg.masked_fill.meta_rule(self, mask, value)
    o = _copy_of(self, spec.shape, None, "masked_fill")
    _masked_fill_into(arr(o), mask, value)
    return o


@sg.masked_fill_.impl("CPU")
def _masked_fill_(self, mask, value):
    sg.masked_fill_.meta_rule(self, mask, value)
    _masked_fill_into(_inplace(self), mask, value)
    return self


def _masked_scatter_into(target: np.ndarray, mask: Tensor, source: Tensor) -> None:
    m = np.broadcast_to(arr(mask), target.shape)
    n = int(np.count_nonzero(m))
    if numel(source._shape) < n:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    if n:
        target[m] = arr(source).reshape(-1)[:n]


@sg.masked_scatter.impl("CPU")
def _masked_scatter(self, mask, source):
    spec = sg.masked_scatter.meta_rule(self, mask, source)
    o = _copy_of(self, spec.shape, None, "masked_scatter")
    _masked_scatter_into(arr(o), mask, source)
    return o


@sg.masked_scatter_.impl("CPU")
def _masked_scatter_(self, mask, source):
    sg.masked_scatter_.meta_rule(self, mask, source)
    _masked_scatter_into(_inplace(self), mask, source)
    return self


@sg.masked_select.impl("CPU")
def _masked_select(self, mask, *, out=None):
    shape = sg.masked_select_check(self, mask)
    m = np.broadcast_to(arr(mask), shape)
    values = np.broadcast_to(arr(self), shape)[m]
    o = new_output(values.shape, self._dtype, out, "masked_select")
    if values.size:
        np.copyto(arr(o), values)
    return o


# -- nonzero / take / put ----------------------------------------------------------------------
@sg.nonzero_op.impl("CPU")
def _nonzero(self, *, out=None):
    sg._check_tensor(self, "nonzero")
    where = np.argwhere(arr(self) != 0)
    o = new_output(where.shape, sg.dt.int64, out, "nonzero")
    if where.size:
        np.copyto(arr(o), where)
    return o


@sg.take.impl("CPU")
def _take(self, index, *, out=None):
    spec = sg.take.meta_rule(self, index)
    o = new_output(spec.shape, spec.dtype, out, "take")
    idx = arr(index)
    _check_flat(idx, numel(self._shape))
    if idx.size:
        np.copyto(arr(o), arr(self).reshape(-1)[idx])
    return o


def _put_into(target: np.ndarray, index: Tensor, source: Tensor, accumulate) -> None:
    idx = arr(index).reshape(-1)
    n = target.size
    _check_flat(idx, n)
    if idx.size:
        t = _as1d(target)
        key = np.unravel_index(idx % n, t.shape)
        _at(np.add if accumulate else None, t, key, arr(source).reshape(-1))


@sg.put.impl("CPU")
def _put(self, index, source, accumulate=False):
    spec = sg.put.meta_rule(self, index, source)
    o = _copy_of(self, spec.shape, None, "put")
    _put_into(arr(o), index, source, accumulate)
    return o


@sg.put_.impl("CPU")
def _put_(self, index, source, accumulate=False):
    sg.put_.meta_rule(self, index, source)
    _put_into(_inplace(self), index, source, accumulate)
    return self
