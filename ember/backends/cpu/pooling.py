"""CPU kernels of the pooling family (NumPy).

Max and average pooling view the padded input as ``(..., *kernel, *out)`` windows with
``as_strided`` (no copy; ``ember.backends.cpu.conv``'s helpers) and loop over *kernel offsets*
only: each step is one vectorised NumPy operation over every plane, in 1-3 spatial dims alike.
Adaptive and fractional pooling gather their windows (of varying starts) with one fancy index
and scan them with PyTorch's ``val > max || isnan(val)`` rule. 2x2/stride-2 max pooling and the
backward of non-overlapping max pooling have branch-free fast paths (random masks make masked
copies and ``where`` several times slower than arithmetic). Half-precision inputs compute in
float32. Every kernel runs its operator's Meta rule first, so validation is shared with the
Meta backend.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

import ember.ops.pooling as pl
from ember.backends.cpu import _xp as xpm
from ember.backends.cpu._util import arr, ignore_fp_errors, new_output
from ember.backends.cpu._xp import like, module_of
from ember.backends.cpu.conv import (
    _apply_along,
    _col2im_add,
    _empty_result,
    _land,
    _padded,
    _src,
    _windows,
)
from ember.tensor import Tensor


# -- shared helpers ---------------------------------------------------------------------------
def _extra(size: int, out: int, k: int, s: int, p: int, d: int) -> int:
    """Right-side padding that makes every (ceil-mode) window fit."""
    return max(p, (out - 1) * s + (k - 1) * d + 1 - size - p)


def _lowest(c: np.dtype):
    return -np.inf if c.kind == "f" else np.iinfo(c).min


def _plane_strides(sizes) -> tuple:
    """Row-major strides of a plane: a flat index is ``sum(i_d * stride_d)``."""
    return tuple(math.prod(sizes[d + 1:]) for d in range(len(sizes)))


def _outer(per_dim, combine=np.add):
    """Combine per-dim arrays ``(..., o_d)`` into one ``(..., o_0, ..., o_{n-1})`` grid."""
    nd, total = len(per_dim), None
    for d, v in enumerate(per_dim):
        v = v.reshape(v.shape[:-1] + (1,) * d + v.shape[-1:] + (1,) * (nd - 1 - d))
        total = v if total is None else combine(total, v)
    return total


def _tail(nd: int) -> tuple:
    return (slice(None),) * nd


# -- max pooling ------------------------------------------------------------------------------
def _max_pool(a: np.ndarray, k, s, p, d, out):
    """Values and flat plane indices of N-d max pooling over the last ``len(k)`` dims.

    One ``np.maximum`` per kernel offset gives the values (NaN propagates); the index is the
    first offset equal to the maximum (PyTorch keeps the first of ties), found by walking the
    offsets backwards; windows holding NaN take the last NaN, as PyTorch's ``val > max ||
    isnan(val)`` loop does; windows of nothing but padding and lowest values take their first
    in-bounds element, PyTorch's starting index.
    """
    nd = len(k)
    sizes = a.shape[-nd:]
    low = _lowest(a.dtype)
    pads = [(p[i], _extra(sizes[i], out[i], k[i], s[i], p[i], d[i])) for i in range(nd)]
    padded = any(lo or hi for lo, hi in pads)
    win = _windows(_padded(a, pads, low), k, s, d, out)
    offsets = list(itertools.product(*(range(v) for v in k)))

    def at(o):
        return win[(Ellipsis,) + o + _tail(nd)]

    best = at(offsets[0]).copy()
    for o in offsets[1:]:
        np.maximum(best, at(o), out=best)
    # The winning offset's number (-1: none, i.e. an all-padding or all-lowest window),
    # updated arithmetically: masked copies of random masks are several times slower.
    small = np.int8 if len(offsets) < 64 else np.int32
    which = module_of(best).full(best.shape, -1, dtype=small)
    reached = best != low if padded else None
    for n in range(len(offsets) - 1, -1, -1):
        m = at(offsets[n]) == best
        if reached is not None:
            m &= reached
        which += (small(n) - which) * m.view(np.int8)
    if a.dtype.kind == "f" and np.isnan(best).any():
        for n, o in enumerate(offsets):
            np.copyto(which, n, where=np.isnan(at(o)))
    st = _plane_strides(sizes)
    starts = [np.arange(o) * ss - pp for o, ss, pp in zip(out, s, p)]
    idx = like(best, np.broadcast_to(_outer([b * t for b, t in zip(starts, st)]),
                                     best.shape).astype(np.int64))
    rem = which.astype(np.int64)
    for i in reversed(range(nd)):  # the offset number -> one offset per dim
        idx += (rem % k[i]) * (d[i] * st[i])
        rem //= k[i]
    if padded:
        first = [np.where(b < 0, b + (-b + dd - 1) // dd * dd, b) * t
                 for b, dd, t in zip(starts, d, st)]
        np.copyto(idx, like(idx, np.broadcast_to(_outer(first), idx.shape)), where=which < 0)
    return best, idx


def _max_pool_nd(op, nd: int, input, kernel_size, stride, padding, dilation, ceil_mode):
    specs = op.meta_rule(input, kernel_size, stride, padding, dilation, ceil_mode)
    k, s, p, d = pl._pool_params(f"max_pool{nd}d", nd, kernel_size, stride, padding, dilation)
    a = _src(input)
    if input.numel() == 0:
        return _land(a, specs[0]), _land(a, specs[1])
    out = specs[0].shape[-nd:]
    if nd == 2 and k == (2, 2) and s == (2, 2) and p == (0, 0) and d == (1, 1) and all(out):
        res = _max_pool_2x2(a, specs)
        if res is not None:
            return res
    best, idx = _max_pool(a, k, s, p, d, out)
    return _land(best, specs[0]), _land(idx, specs[1])


@pl.max_pool2d_with_indices.impl("CPU")
def _max_pool2d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                             ceil_mode=False):
    return _max_pool_nd(pl.max_pool2d_with_indices, 2, input, kernel_size, stride, padding,
                        dilation, ceil_mode)


@pl.max_pool3d_with_indices.impl("CPU")
def _max_pool3d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                             ceil_mode=False):
    return _max_pool_nd(pl.max_pool3d_with_indices, 3, input, kernel_size, stride, padding,
                        dilation, ceil_mode)


def _block_planes(a: np.ndarray, oh: int, ow: int) -> np.ndarray:
    """Strided view ``(2, 2, ..., oh, ow)`` of ``a``'s 2x2 blocks: ``[i, j]`` is offset (i, j)."""
    st = a.strides
    return xpm.as_strided(module_of(a), a, (2, 2) + a.shape[:-2] + (oh, ow),
                          st[-2:] + st[:-2] + (2 * st[-2], 2 * st[-1]), writeable=False)


def _max_pool_2x2(a: np.ndarray, specs):
    """Non-overlapping 2x2 max pooling (the common case): the four block offsets are copied
    once into contiguous planes (stride-2 operands make every later NumPy pass several times
    slower), then the maximum of the row maxima and its index from two comparisons (ties
    keep the first in window order, as PyTorch), written into the outputs directly. None
    when the result holds NaN (PyTorch's NaN rule is left to the general kernel)."""
    oh, ow = specs[0].shape[-2:]
    w = a.shape[-1]
    planes = module_of(a).empty((2, 2) + a.shape[:-2] + (oh, ow), dtype=a.dtype)
    np.copyto(planes, _block_planes(a, oh, ow))
    (v00, v01), (v10, v11) = planes
    top, bot = np.maximum(v00, v01), np.maximum(v10, v11)
    vo = new_output(specs[0].shape, specs[0].dtype)
    direct = vo._dtype.np == a.dtype
    best = np.maximum(top, bot, out=arr(vo).reshape(top.shape) if direct else None)
    if a.dtype.kind == "f" and np.isnan(best).any():
        return None
    if not direct:
        np.copyto(arr(vo), best.reshape(specs[0].shape), casting="unsafe")
    row = np.greater(bot, top)
    col = np.less(v00, v01)  # the column of the winner: row 0's or (where row) row 1's
    col ^= row & (col ^ np.less(v10, v11))
    io = new_output(specs[1].shape, specs[1].dtype)
    idx = arr(io).reshape(row.shape)
    np.multiply(row, w, out=idx)
    idx += col
    idx += like(idx, (np.arange(oh) * (2 * w))[:, None] + np.arange(ow) * 2)
    return vo, io


@pl._max_pool_backward.impl("CPU")
def _max_pool_backward(grad_output, indices, input_size):
    spec = pl._max_pool_backward.meta_rule(grad_output, indices, input_size)
    g = _src(grad_output)
    idx = arr(indices)
    empty = _empty_result(spec, g)
    if empty is not None:
        return empty
    if len(spec.shape) >= 2 and g.ndim >= 2 and g.size:
        o = _max_pool_backward_blocks(g, idx, spec)
        if o is not None:
            return o
    hw = math.prod(spec.shape[-2:]) if len(spec.shape) >= 2 else 1
    rows = math.prod(spec.shape[:-2])
    flat = (idx.reshape(rows, -1) + like(idx, (np.arange(rows) * hw)[:, None])).ravel()
    res = np.bincount(flat, weights=g.reshape(-1).astype(np.float64), minlength=rows * hw)
    return _land(res, spec)


def _max_pool_backward_blocks(g: np.ndarray, idx: np.ndarray, spec) -> Tensor | None:
    """Max-pool backward without a scatter when every index lies in its own disjoint
    ``sh x sw`` block (``sh = H // H_out``; the usual kernel == stride pooling): one masked
    copy per block offset into a strided view of the zeroed result. None when some index
    lies outside its block (overlapping or padded windows), for the general scatter."""
    (h, w), (oh, ow) = spec.shape[-2:], g.shape[-2:]
    sh, sw = h // oh, w // ow
    if sh * sw > 16 or g.shape[:-2] != tuple(spec.shape[:-2]):
        return None
    local = idx - like(idx, (np.arange(oh) * (sh * w))[:, None] + np.arange(ow) * sw)
    masks = [np.equal(local, i * w + j) for i in range(sh) for j in range(sw)]
    if sum(np.count_nonzero(m) for m in masks) != local.size:
        return None
    if g.dtype.kind == "f" and not np.isfinite(g).all():
        return None  # inf * 0 would leak into the other block positions
    o = new_output(spec.shape, spec.dtype)
    dst = arr(o)
    if h != oh * sh or w != ow * sw:
        dst[...] = 0
    it = dst.itemsize
    blocks = xpm.as_strided(module_of(dst), dst, dst.shape[:-2] + (oh, sh, ow, sw),
                            dst.strides[:-2] + (sh * w * it, w * it, sw * it, it))
    with ignore_fp_errors():
        for n, m in enumerate(masks):  # g * mask: masked copies are several times slower
            np.multiply(g, m, out=blocks[..., :, n // sw, :, n % sw], casting="unsafe")
        np.add(dst, 0, out=dst)  # -0.0 (negative gradient times 0) -> 0.0
    return o


# -- average pooling --------------------------------------------------------------------------
def _avg_divisor(size, out, k, s, p, count_include_pad: bool) -> np.ndarray:
    """Per-output divisor along one dim (PyTorch's clipped window sizes)."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if count_include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


def _avg_params(k, s, p, count_include_pad, divisor_override, size, out):
    """Padding ``[(lo, hi), ...]`` that fits every window, and the divisor of every output."""
    if divisor_override is not None:
        div = np.array(divisor_override)
    else:
        div = _outer([_avg_divisor(*a, count_include_pad) for a in zip(size, out, k, s, p)],
                     np.multiply)
    return [(pp, _extra(n, o, kk, ss, pp, 1)) for n, o, kk, ss, pp in zip(size, out, k, s, p)], div


def _divide(total: np.ndarray, div: np.ndarray) -> np.ndarray:
    if total.dtype.kind == "f":
        return total / div
    return np.sign(total) * (np.abs(total) // div)


def _avg_pool_nd(op, nd: int, input, kernel_size, stride, padding, ceil_mode,
                 count_include_pad, divisor_override):
    spec = op.meta_rule(input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override)
    a = _src(input)
    out = spec.shape[-nd:]
    if input.numel() == 0:
        return _land(a, spec)
    k, s, p, _ = pl._pool_params(f"avg_pool{nd}d", nd, kernel_size, stride, padding)
    pads, div = _avg_params(k, s, p, count_include_pad, divisor_override, a.shape[-nd:], out)
    div = like(a, div)
    win = _windows(_padded(a, pads), k, s, (1,) * nd, out)
    total = module_of(a).zeros(a.shape[:-nd] + tuple(out), dtype=a.dtype)
    with ignore_fp_errors():
        for o in itertools.product(*(range(v) for v in k)):  # PyTorch's summation order
            total += win[(Ellipsis,) + o + _tail(nd)]
        return _land(_divide(total, div), spec)


@pl.avg_pool2d.impl("CPU")
def _avg_pool2d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    return _avg_pool_nd(pl.avg_pool2d, 2, input, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override)


@pl.avg_pool3d.impl("CPU")
def _avg_pool3d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    return _avg_pool_nd(pl.avg_pool3d, 3, input, kernel_size, stride, padding, ceil_mode,
                        count_include_pad, divisor_override)


@pl._avg_pool_backward.impl("CPU")
def _avg_pool_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    spec = pl._avg_pool_backward.meta_rule(grad_output, input_size, kernel_size, stride,
                                           padding, ceil_mode, count_include_pad,
                                           divisor_override)
    g = _src(grad_output)
    nd = len(kernel_size)
    size, k = tuple(input_size[-nd:]), tuple(kernel_size)
    pads, div = _avg_params(k, tuple(stride), tuple(padding), count_include_pad,
                            divisor_override, size, g.shape[-nd:])
    buf = module_of(g).zeros(g.shape[:-nd] + tuple(n + lo + hi for n, (lo, hi) in zip(size, pads)),
                             dtype=g.dtype)
    with ignore_fp_errors():
        gd = g / like(g, div)
        spread = gd.reshape(gd.shape[:-nd] + (1,) * nd + gd.shape[-nd:])
        _col2im_add(np.broadcast_to(spread, gd.shape[:-nd] + k + gd.shape[-nd:]), buf, k,
                    tuple(stride), (1,) * nd)
    crop = tuple(slice(lo, lo + n) for (lo, _), n in zip(pads, size))
    return _land(buf[(Ellipsis,) + crop], spec)


# -- adaptive pooling -------------------------------------------------------------------------
def _adaptive_index(n: int, out: int):
    """Window element indices ``(out, kmax)`` (clipped to the window end), validity, counts."""
    o = np.arange(out)
    start = (o * n) // out
    end = -((-(o + 1) * n) // out)
    kmax = int((end - start).max()) if out else 1
    idx = start[:, None] + np.arange(kmax)[None, :]
    valid = idx < end[:, None]
    return np.minimum(idx, end[:, None] - 1), valid, end - start


def _spread(per_dim, lead: int = 0) -> tuple:
    """Per-dim ``(*lead, o_d, k_d)`` arrays shaped to index ``(..., o_0, k_0, o_1, k_1, ...)``."""
    nd = len(per_dim)
    return tuple(v.reshape(v.shape[:lead] + (1, 1) * d + v.shape[lead:] + (1, 1) * (nd - 1 - d))
                 for d, v in enumerate(per_dim))


def _window_sum_axes(nd: int) -> tuple:
    return tuple(range(-2 * nd + 1, 0, 2))  # the k_d axes of (..., o_0, k_0, o_1, k_1, ...)


@pl.adaptive_avg_pool2d.impl("CPU")
def _adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(pl.adaptive_avg_pool2d.meta_rule(input, output_size), input, 2)


@pl.adaptive_avg_pool3d.impl("CPU")
def _adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(pl.adaptive_avg_pool3d.meta_rule(input, output_size), input, 3)


def _adaptive_avg(spec, input: Tensor, nd: int) -> Tensor:
    a = _src(input)
    if math.prod(spec.shape) == 0:
        return _land(module_of(a).zeros(spec.shape, a.dtype), spec)
    dims = [tuple(like(a, v) for v in _adaptive_index(n, o))
            for n, o in zip(a.shape[-nd:], spec.shape[-nd:])]
    vals = a[(Ellipsis,) + _spread([i for i, _, _ in dims])]
    mask = functools.reduce(np.logical_and, np.broadcast_arrays(*_spread([v for _, v, _ in dims])))
    with ignore_fp_errors():
        total = np.where(mask, vals, 0).sum(axis=_window_sum_axes(nd))
        return _land(total / _outer([c for _, _, c in dims], np.multiply), spec)


def _window_matrix(n: int, out: int, dtype) -> np.ndarray:
    """``(out, n)`` 0/1 matrix of adaptive windows divided by their sizes."""
    o = np.arange(out)
    start, end = (o * n) // out, -((-(o + 1) * n) // out)
    i = np.arange(n)
    m = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return (m / (end - start)[:, None]).astype(dtype)


@pl._adaptive_avg_pool_backward.impl("CPU")
def _adaptive_avg_pool_backward(grad_output, input_size, dims):
    spec = pl._adaptive_avg_pool_backward.meta_rule(grad_output, input_size, dims)
    g = _src(grad_output)
    with ignore_fp_errors():
        for ax in range(g.ndim - dims, g.ndim):
            g = _apply_along(g, ax, like(g, _window_matrix(spec.shape[ax], g.shape[ax], g.dtype)))
    return _land(g, spec)


def _window_argmax(vals: np.ndarray, pos, sizes):
    """Max and flat plane index of each window of ``vals`` ``(..., o_0, k_0, o_1, k_1, ...)``
    by PyTorch's scan: start at ``-inf`` and the window's first element, take ``val > max ||
    isnan(val)`` in window order. ``pos[d]`` ``(..., o_d, k_d)``: the input coordinates along
    dim ``d`` of every window element."""
    st = _plane_strides(sizes)

    def flat(j):
        return _outer([p[..., jj] * t for p, jj, t in zip(pos, j, st)])

    shape = vals.shape[:-2 * len(pos)] + tuple(p.shape[-2] for p in pos)
    best = module_of(vals).full(shape, -np.inf, dtype=vals.dtype)
    idx = np.broadcast_to(flat((0,) * len(pos)), shape).astype(np.int64)
    for j in itertools.product(*(range(p.shape[-1]) for p in pos)):
        v = vals[(Ellipsis,) + tuple(x for jj in j for x in (slice(None), jj))]
        m = (v > best) | np.isnan(v)
        np.copyto(best, v, where=m)
        np.copyto(idx, np.broadcast_to(flat(j), shape), where=m)
    return best, idx


def _empty_pair(specs, dtype):
    return _land(np.zeros(specs[0].shape, dtype), specs[0]), \
        _land(np.zeros(specs[1].shape, np.int64), specs[1])


def _adaptive_max(specs, input: Tensor, nd: int):
    a = _src(input)
    if math.prod(specs[0].shape) == 0:
        return _empty_pair(specs, a.dtype)
    pos = [like(a, _adaptive_index(n, o)[0]) for n, o in zip(a.shape[-nd:], specs[0].shape[-nd:])]
    best, idx = _window_argmax(a[(Ellipsis,) + _spread(pos)], pos, a.shape[-nd:])
    return _land(best, specs[0]), _land(idx, specs[1])


@pl.adaptive_max_pool2d.impl("CPU")
def _adaptive_max_pool2d(input, output_size):
    return _adaptive_max(pl.adaptive_max_pool2d.meta_rule(input, output_size), input, 2)


@pl.adaptive_max_pool3d.impl("CPU")
def _adaptive_max_pool3d(input, output_size):
    return _adaptive_max(pl.adaptive_max_pool3d.meta_rule(input, output_size), input, 3)


# -- fractional max pooling -------------------------------------------------------------------
def _intervals(u: np.ndarray, n: int, out: int, k: int) -> np.ndarray:
    """Window starts ``(..., out)`` from samples ``u`` ``(...)``, in ``u``'s dtype as PyTorch:
    ``int((i + u) * alpha) - int(u * alpha)``, ``alpha = (n - k) / (out - 1)``; the last
    window ends at the input's edge."""
    last = module_of(u).full(u.shape + (1,), n - k, dtype=np.int64)
    if out == 1:
        return last
    c = u.dtype.type
    alpha = c(n - k) / c(out - 1)
    i = like(u, np.arange(out - 1).astype(u.dtype))
    starts = ((i + u[..., None]) * alpha).astype(np.int64) - \
        (u * alpha).astype(np.int64)[..., None]
    return np.concatenate([starts, last], axis=-1)


def _fractional(op, nd: int, input, kernel_size, output_size, random_samples):
    specs = op.meta_rule(input, kernel_size, output_size, random_samples)
    a = _src(input)
    if math.prod(specs[0].shape) == 0:
        return _empty_pair(specs, a.dtype)
    x = a if a.ndim == nd + 2 else a[None]
    k, out, sizes = pl._expand("", kernel_size, nd), specs[0].shape[-nd:], x.shape[-nd:]
    u = arr(random_samples)[:x.shape[0]]
    order = (1, 0) if nd == 2 else (0, 1, 2)  # 2-d samples are (width, height)
    with ignore_fp_errors():
        pos = [_intervals(u[..., order[d]], sizes[d], out[d], k[d])[..., None]
               + like(u, np.arange(k[d]))
               for d in range(nd)]  # (N, C, o_d, k_d)
    n, c = x.shape[:2]
    planes = (like(x, np.arange(n).reshape((n, 1) + (1,) * 2 * nd)),
              like(x, np.arange(c).reshape((1, c) + (1,) * 2 * nd)))
    best, idx = _window_argmax(x[planes + _spread(pos, 2)], pos, sizes)
    if a.ndim == nd + 1:
        best, idx = best[0], idx[0]
    return _land(best, specs[0]), _land(idx, specs[1])


@pl.fractional_max_pool2d.impl("CPU")
def _fractional_max_pool2d(input, kernel_size, output_size, random_samples):
    return _fractional(pl.fractional_max_pool2d, 2, input, kernel_size, output_size,
                       random_samples)


@pl.fractional_max_pool3d.impl("CPU")
def _fractional_max_pool3d(input, kernel_size, output_size, random_samples):
    return _fractional(pl.fractional_max_pool3d, 3, input, kernel_size, output_size,
                       random_samples)


# -- max unpooling ----------------------------------------------------------------------------
def _unpool(spec, input: Tensor, indices: Tensor, nd: int) -> Tensor:
    o = new_output(spec.shape, spec.dtype)
    dst = arr(o)
    dst[...] = 0
    if input.numel() == 0:
        return o
    out = spec.shape[-nd:]
    rows = math.prod(spec.shape[:-nd])
    idx = arr(indices).reshape(rows, -1)
    bad = (idx < 0) | (idx >= math.prod(out))
    if bad.any():
        raise RuntimeError(f"Found an invalid max index: {idx[bad][0]} (output volumes are of "
                           f"size {'x'.join(map(str, out))})")
    dst.reshape(rows, -1)[like(idx, np.arange(rows)[:, None]), idx] = arr(input).reshape(rows, -1)
    return o


@pl.max_unpool2d.impl("CPU")
def _max_unpool2d(input, indices, output_size):
    return _unpool(pl.max_unpool2d.meta_rule(input, indices, output_size), input, indices, 2)


@pl.max_unpool3d.impl("CPU")
def _max_unpool3d(input, indices, output_size, stride, padding):
    spec = pl.max_unpool3d.meta_rule(input, indices, output_size, stride, padding)
    return _unpool(spec, input, indices, 3)
