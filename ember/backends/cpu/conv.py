"""CPU kernels of convolution, pooling, padding, im2col/col2im and resampling (NumPy).

Convolution is im2col + GEMM: the padded input is viewed as ``(N, C, *kernel, *out)``
windows with ``as_strided`` (no copy), the view is materialised batch chunk by batch chunk
into one cache-sized column buffer and multiplied by the weight with BLAS GEMMs written
straight into the output (the weight gradient likewise, one GEMM per group and chunk summing
over images and pixels). col2im (transposed convolution,
fold, average-pooling backward) and max pooling loop over *kernel offsets* only: each step is
one vectorised NumPy operation over the whole batch; 2x2/stride-2 max pooling and the
backward of non-overlapping max pooling have branch-free fast paths (random masks make
masked copies and ``where`` several times slower than arithmetic). Half-precision inputs
compute in float32. Every kernel runs its operator's Meta rule first, so validation is shared
with the Meta backend.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

import ember.ops.conv as cv
from ember.backends.cpu._util import arr, compute_dtype, ignore_fp_errors, new_output
from ember.tensor import Tensor


# -- array helpers ----------------------------------------------------------------------------
def _src(t: Tensor, compute: np.dtype | None = None) -> np.ndarray:
    """``t``'s strided view in the compute dtype (a copy only for half types)."""
    a = arr(t)
    c = compute or compute_dtype(t._dtype)
    return a if a.dtype == c else a.astype(c)


def _land(result: np.ndarray, spec) -> Tensor:
    o = new_output(spec.shape, spec.dtype)
    if o.numel():
        np.copyto(arr(o), result.reshape(spec.shape), casting="unsafe")
    return o


def _empty_result(spec, *arrays) -> Tensor | None:
    """A zero-filled output when the output or any operand is empty (nothing to compute)."""
    if math.prod(spec.shape) and all(a.size for a in arrays):
        return None
    o = new_output(spec.shape, spec.dtype)
    arr(o)[...] = 0
    return o


def _padded(a: np.ndarray, pads, value=0) -> np.ndarray:
    """``a`` with ``pads`` ``[(lo, hi), ...]`` added around its trailing dims."""
    if not any(lo or hi for lo, hi in pads):
        return a
    nd = len(pads)
    shape = a.shape[:-nd] + tuple(n + lo + hi for n, (lo, hi) in zip(a.shape[-nd:], pads))
    out = np.full(shape, value, dtype=a.dtype)
    out[(Ellipsis,) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape[-nd:], pads))] = a
    return out


def _windows(xp: np.ndarray, kernel, stride, dilation, out) -> np.ndarray:
    """View ``(..., *sp)`` as ``(..., *kernel, *out)`` sliding windows (no copy)."""
    nd = len(kernel)
    st = xp.strides[-nd:]
    shape = xp.shape[:-nd] + tuple(kernel) + tuple(out)
    strides = xp.strides[:-nd] + tuple(s * d for s, d in zip(st, dilation)) + \
        tuple(s * k for s, k in zip(st, stride))
    return as_strided(xp, shape, strides, writeable=False)


def _offsets(kernel, stride, dilation, out):
    """For each kernel offset: its index tuple and the strided slices it touches."""
    for idx in itertools.product(*(range(k) for k in kernel)):
        yield idx, tuple(slice(i * d, i * d + s * (o - 1) + 1, s) if o else slice(0, 0)
                         for i, s, d, o in zip(idx, stride, dilation, out))


def _col2im_add(cols: np.ndarray, buf: np.ndarray, kernel, stride, dilation) -> None:
    """Add ``cols`` ``(..., *kernel, *out)`` into the padded image ``buf`` ``(..., *sp)``."""
    nd = len(kernel)
    out = cols.shape[-nd:]
    tail = (slice(None),) * nd
    for idx, sl in _offsets(kernel, stride, dilation, out):
        buf[(Ellipsis,) + sl] += cols[(Ellipsis,) + idx + tail]


# -- convolution ------------------------------------------------------------------------------
_CHUNK_BYTES = 4 << 20  # im2col in batch chunks of about this size: copy and GEMM stay in cache


def _chunks(n: int, per_item: int):
    """``(start, stop)`` batch ranges whose column matrices fit ``_CHUNK_BYTES``."""
    step = max(1, _CHUNK_BYTES // max(per_item, 1))
    return [(i, min(n, i + step)) for i in range(0, n, step)]


def _conv_forward(x, w, stride, padding, dilation, groups, out_sp, res) -> None:
    """``res`` ``(N, O, L)`` <- convolution of ``x`` ``(N, C, *sp)`` with ``w``.

    im2col + GEMM in batch chunks: each chunk's windows are copied into one reused column
    buffer (a few MiB, so the copy and the GEMM that reads it stay in cache) and multiplied
    by the weight straight into ``res``.
    """
    n, c = x.shape[:2]
    o, kernel = w.shape[0], w.shape[2:]
    ck = c // groups * math.prod(kernel)
    xp = _padded(x, [(p, p) for p in padding])
    win = _windows(xp, kernel, stride, dilation, out_sp)
    wg = w.reshape(groups, o // groups, ck)
    res = res.reshape(n, groups, o // groups, -1)
    per = c * math.prod(kernel) * math.prod(out_sp)
    chunks = _chunks(n, per * x.itemsize)
    buf = np.empty(per * (chunks[0][1] - chunks[0][0]), dtype=x.dtype)
    for lo, hi in chunks:
        cols = buf[:per * (hi - lo)].reshape(win[lo:hi].shape)
        np.copyto(cols, win[lo:hi])
        np.matmul(wg, cols.reshape(hi - lo, groups, ck, -1), out=res[lo:hi])


def _conv_transpose_direct(x, w, padding, dilation, groups, output_padding, out_sp,
                           res=None):
    """Stride-1 transposed convolution as a convolution with flipped, transposed weights
    (im2col + GEMM instead of GEMM + col2im), into ``res`` ``(N, C_out, L)`` if given."""
    c_in, cog, kernel = w.shape[0], w.shape[1], w.shape[2:]
    nd = len(kernel)
    wf = w.reshape((groups, c_in // groups, cog) + kernel).swapaxes(1, 2)
    wf = wf[(Ellipsis,) + (slice(None, None, -1),) * nd].reshape(
        (groups * cog, c_in // groups) + kernel)
    edge = [d * (k - 1) - p for d, k, p in zip(dilation, kernel, padding)]
    xp = _padded(x, [(e, e + op) for e, op in zip(edge, output_padding)])
    if res is None:
        res = np.empty((x.shape[0], groups * cog, math.prod(out_sp)), dtype=x.dtype)
    _conv_forward(xp, np.ascontiguousarray(wf), (1,) * nd, (0,) * nd, dilation, groups, out_sp,
                  res)
    return res.reshape(res.shape[:2] + tuple(out_sp))


def _direct_transpose(stride, padding, dilation, kernel) -> bool:
    """Whether a transposed convolution can run as a direct one (stride 1, no cropping)."""
    return all(s == 1 for s in stride) and all(
        d * (k - 1) >= p for d, k, p in zip(dilation, kernel, padding))


def _conv_transpose_forward(x, w, stride, padding, dilation, groups, output_padding, out_sp):
    """Transposed convolution of ``x`` ``(N, C_in, *in)`` with ``w`` ``(C_in, C_out/G, *k)``."""
    if _direct_transpose(stride, padding, dilation, w.shape[2:]):
        return _conv_transpose_direct(x, w, padding, dilation, groups, output_padding, out_sp)
    n, c_in = x.shape[:2]
    in_sp, kernel = x.shape[2:], w.shape[2:]
    cog = w.shape[1]
    kk = math.prod(kernel)
    xg = x.reshape(n, groups, c_in // groups, -1)
    wg = w.reshape(groups, c_in // groups, cog * kk)
    cols = np.matmul(wg.transpose(0, 2, 1), xg)  # (N, G, C_out/G * K, L_in)
    cols = cols.reshape((n, groups * cog) + tuple(kernel) + tuple(in_sp))
    full = [(i - 1) * s + d * (k - 1) + 1 for i, s, d, k in zip(in_sp, stride, dilation, kernel)]
    size = [max(f, p + o) for f, p, o in zip(full, padding, out_sp)]
    buf = np.zeros((n, groups * cog) + tuple(size), dtype=cols.dtype)
    _col2im_add(cols, buf, kernel, stride, dilation)
    return buf[(Ellipsis,) + tuple(slice(p, p + o) for p, o in zip(padding, out_sp))]


@cv.convolution.impl("CPU")
def _convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    spec = cv.convolution.meta_rule(input, weight, bias, stride, padding, dilation, transposed,
                                    output_padding, groups)
    nd = weight.ndim - 2
    stride, padding, dilation, output_padding = (
        cv.expand_param("p", v, nd) for v in (stride, padding, dilation, output_padding))
    c = compute_dtype(spec.dtype)
    x, w = _src(input, c), _src(weight, c)
    out_sp = spec.shape[2:]
    empty = _empty_result(spec, x, w)
    if empty is not None:
        if bias is not None and empty.numel():
            arr(empty)[...] = arr(bias).reshape((-1,) + (1,) * nd)
        return empty
    o = new_output(spec.shape, spec.dtype)
    direct = c == spec.dtype.np
    with ignore_fp_errors():
        if transposed and direct and bias is None and _direct_transpose(
                stride, padding, dilation, w.shape[2:]):
            _conv_transpose_direct(x, w, padding, dilation, groups, output_padding, out_sp,
                                   arr(o).reshape(spec.shape[:2] + (-1,)))
            return o
        if transposed:
            res = _conv_transpose_forward(x, w, stride, padding, dilation, groups,
                                          output_padding, out_sp)
            if bias is not None:
                res = res + _src(bias, c).reshape((-1,) + (1,) * nd)
            np.copyto(arr(o), res, casting="unsafe")
            return o
        res = arr(o).reshape(spec.shape[:2] + (-1,)) if direct else \
            np.empty(spec.shape[:2] + (math.prod(out_sp),), dtype=c)
        _conv_forward(x, w, stride, padding, dilation, groups, out_sp, res)
        if bias is not None:
            res += _src(bias, c)[:, None]
        if not direct:
            np.copyto(arr(o), res.reshape(spec.shape), casting="unsafe")
    return o


@cv._conv_weight_grad.impl("CPU")
def _conv_weight_grad(input, grad_output, weight_size, stride, padding, dilation, groups):
    spec = cv._conv_weight_grad.meta_rule(input, grad_output, weight_size, stride, padding,
                                          dilation, groups)
    nd = len(weight_size) - 2
    stride, padding, dilation = (cv.expand_param("p", v, nd) for v in
                                 (stride, padding, dilation))
    c = compute_dtype(spec.dtype)
    a, b = _src(input, c), _src(grad_output, c)
    empty = _empty_result(spec, a, b)
    if empty is not None:
        return empty
    n, ch = a.shape[:2]
    o, kernel = weight_size[0], tuple(weight_size[2:])
    out_sp = b.shape[2:]
    win = _windows(_padded(a, [(p, p) for p in padding]), kernel, stride, dilation, out_sp)
    # (N, C, *k, *out) -> per batch chunk (C, *k, nb, *out), a (G, C/G * K, nb * L) column
    # matrix: one GEMM per group and chunk sums over its images and pixels
    perm = (1,) + tuple(range(2, 2 + nd)) + (0,) + tuple(range(2 + nd, 2 + 2 * nd))
    ck = ch // groups * math.prod(kernel)
    per = ch * math.prod(kernel) * math.prod(out_sp)
    chunks = _chunks(n, per * a.itemsize)
    buf = np.empty(per * (chunks[0][1] - chunks[0][0]), dtype=a.dtype)
    gw = np.empty((groups, o // groups, ck), dtype=a.dtype)
    part = np.empty_like(gw)
    bg = b.reshape(n, groups, o // groups, -1)
    with ignore_fp_errors():
        for lo, hi in chunks:
            src = win[lo:hi].transpose(perm)
            cols = buf[:per * (hi - lo)].reshape(src.shape)
            np.copyto(cols, src)
            g = bg[lo:hi].transpose(1, 2, 0, 3).reshape(groups, o // groups, -1)
            np.matmul(g, cols.reshape(groups, ck, -1).transpose(0, 2, 1),
                      out=gw if lo == 0 else part)
            if lo:
                gw += part
    return _land(gw, spec)


# -- im2col / col2im --------------------------------------------------------------------------
@cv.im2col.impl("CPU")
def _im2col(input, kernel_size, dilation, padding, stride):
    spec = cv.im2col.meta_rule(input, kernel_size, dilation, padding, stride)
    k, d, p, s = cv._fold_params(kernel_size, dilation, padding, stride)
    a = _src(input)
    out = tuple(cv.conv_out_size(n, kk, ss, pp, dd)
                for n, kk, ss, pp, dd in zip(a.shape[-2:], k, s, p, d))
    win = _windows(_padded(a, [(v, v) for v in p]), k, s, d, out)
    return _land(win, spec)


@cv.col2im.impl("CPU")
def _col2im(input, output_size, kernel_size, dilation, padding, stride):
    spec = cv.col2im.meta_rule(input, output_size, kernel_size, dilation, padding, stride)
    k, d, p, s = cv._fold_params(kernel_size, dilation, padding, stride)
    size = spec.shape[-2:]
    out = tuple(cv.conv_out_size(n, kk, ss, pp, dd)
                for n, kk, ss, pp, dd in zip(size, k, s, p, d))
    a = _src(input)
    cols = a.reshape(spec.shape[:-2] + tuple(k) + out)
    buf = np.zeros(spec.shape[:-2] + tuple(n + 2 * v for n, v in zip(size, p)), dtype=a.dtype)
    with ignore_fp_errors():
        _col2im_add(cols, buf, k, s, d)
    return _land(buf[..., p[0]:p[0] + size[0], p[1]:p[1] + size[1]], spec)


# -- pooling ----------------------------------------------------------------------------------
def _extra(size: int, out: int, k: int, s: int, p: int, d: int) -> int:
    """Right-side padding that makes every (ceil-mode) window fit."""
    return max(p, (out - 1) * s + (k - 1) * d + 1 - size - p)


def _lowest(c: np.dtype):
    return -np.inf if c.kind == "f" else np.iinfo(c).min


def _max_pool(a: np.ndarray, k, s, p, d, out):
    """Values and flat indices of 2-d max pooling over the last two dims of ``a``.

    One ``np.maximum`` per kernel offset gives the values (NaN propagates); the index is the
    first offset equal to the maximum (PyTorch keeps the first of ties), found by walking the
    offsets backwards; windows holding NaN take the last NaN, as PyTorch's ``val > max ||
    isnan(val)`` loop does.
    """
    w = a.shape[-1]
    low = _lowest(a.dtype)
    pads = [(p[i], _extra(a.shape[-2 + i], out[i], k[i], s[i], p[i], d[i])) for i in range(2)]
    padded = any(lo or hi for lo, hi in pads)
    win = _windows(_padded(a, pads, low), k, s, d, out)
    rows = np.arange(out[0]) * s[0] - p[0]
    cols = np.arange(out[1]) * s[1] - p[1]
    offsets = list(itertools.product(range(k[0]), range(k[1])))
    best = win[..., 0, 0, :, :].copy()
    for i, j in offsets[1:]:
        np.maximum(best, win[..., i, j, :, :], out=best)
    # The winning offset's number (-1: none, i.e. an all-padding or all-lowest window),
    # updated arithmetically: masked copies of random masks are several times slower.
    small = np.int8 if len(offsets) < 64 else np.int32
    which = np.full(best.shape, -1, dtype=small)
    reached = best != low if padded else None
    for n in range(len(offsets) - 1, -1, -1):
        i, j = offsets[n]
        m = win[..., i, j, :, :] == best
        if reached is not None:
            m &= reached
        which += (small(n) - which) * m.view(np.int8)
    if a.dtype.kind == "f" and np.isnan(best).any():
        for n, (i, j) in enumerate(offsets):
            np.copyto(which, n, where=np.isnan(win[..., i, j, :, :]))
    kh = which // small(k[1])
    idx = (rows[:, None] * w + cols[None, :]) + kh.astype(np.int64) * (d[0] * w)
    idx += (which - kh * small(k[1])).astype(np.int64) * d[1]
    if padded:
        first = np.maximum(rows, 0)[:, None] * w + np.maximum(cols, 0)[None, :]
        np.copyto(idx, np.broadcast_to(first, idx.shape), where=which < 0)
    return best, idx


@cv.max_pool2d_with_indices.impl("CPU")
def _max_pool2d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                             ceil_mode=False):
    specs = cv.max_pool2d_with_indices.meta_rule(input, kernel_size, stride, padding, dilation,
                                                 ceil_mode)
    k, s, p, d = cv._pool_params("max_pool2d", kernel_size, stride, padding, dilation)
    a = _src(input)
    if input.numel() == 0:
        return _land(a, specs[0]), _land(a, specs[1])
    out = specs[0].shape[-2:]
    if k == (2, 2) and s == (2, 2) and p == (0, 0) and d == (1, 1) and all(out):
        res = _max_pool_2x2(a, specs)
        if res is not None:
            return res
    best, idx = _max_pool(a, k, s, p, d, out)
    return _land(best, specs[0]), _land(idx, specs[1])


def _block_planes(a: np.ndarray, oh: int, ow: int) -> np.ndarray:
    """Strided view ``(2, 2, ..., oh, ow)`` of ``a``'s 2x2 blocks: ``[i, j]`` is offset (i, j)."""
    st = a.strides
    return as_strided(a, (2, 2) + a.shape[:-2] + (oh, ow),
                      st[-2:] + st[:-2] + (2 * st[-2], 2 * st[-1]), writeable=False)


def _max_pool_2x2(a: np.ndarray, specs):
    """Non-overlapping 2x2 max pooling (the common case): the four block offsets are copied
    once into contiguous planes (stride-2 operands make every later NumPy pass several times
    slower), then the maximum of the row maxima and its index from two comparisons (ties
    keep the first in window order, as PyTorch), written into the outputs directly. None
    when the result holds NaN (PyTorch's NaN rule is left to the general kernel)."""
    oh, ow = specs[0].shape[-2:]
    w = a.shape[-1]
    planes = np.empty((2, 2) + a.shape[:-2] + (oh, ow), dtype=a.dtype)
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
    idx += (np.arange(oh) * (2 * w))[:, None] + np.arange(ow) * 2
    return vo, io


@cv._max_pool_backward.impl("CPU")
def _max_pool_backward(grad_output, indices, input_size):
    spec = cv._max_pool_backward.meta_rule(grad_output, indices, input_size)
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
    flat = (idx.reshape(rows, -1) + (np.arange(rows) * hw)[:, None]).ravel()
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
    local = idx - ((np.arange(oh) * (sh * w))[:, None] + np.arange(ow) * sw)
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
    blocks = as_strided(dst, dst.shape[:-2] + (oh, sh, ow, sw),
                        dst.strides[:-2] + (sh * w * it, w * it, sw * it, it))
    with ignore_fp_errors():
        for n, m in enumerate(masks):  # g * mask: masked copies are several times slower
            np.multiply(g, m, out=blocks[..., :, n // sw, :, n % sw], casting="unsafe")
        np.add(dst, 0, out=dst)  # -0.0 (negative gradient times 0) -> 0.0
    return o


def _avg_divisor(size, out, k, s, p, count_include_pad: bool) -> np.ndarray:
    """Per-output divisor along one dim (PyTorch's clipped window sizes)."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, size + p)
    if count_include_pad:
        return end - start
    return np.minimum(end, size) - np.maximum(start, 0)


def _avg_params(kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                size, out):
    k, s, p, _ = cv._pool_params("avg_pool2d", kernel_size, stride, padding)
    if divisor_override is not None:
        div = np.array(divisor_override)
    else:
        div = _avg_divisor(size[0], out[0], k[0], s[0], p[0], count_include_pad)[:, None] * \
            _avg_divisor(size[1], out[1], k[1], s[1], p[1], count_include_pad)[None, :]
    pads = [(p[i], _extra(size[i], out[i], k[i], s[i], p[i], 1)) for i in range(2)]
    return k, s, pads, div


def _divide(total: np.ndarray, div: np.ndarray) -> np.ndarray:
    if total.dtype.kind == "f":
        return total / div
    return np.sign(total) * (np.abs(total) // div)


@cv.avg_pool2d.impl("CPU")
def _avg_pool2d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None):
    spec = cv.avg_pool2d.meta_rule(input, kernel_size, stride, padding, ceil_mode,
                                   count_include_pad, divisor_override)
    a = _src(input)
    out = spec.shape[-2:]
    if input.numel() == 0:
        return _land(a, spec)
    k, s, pads, div = _avg_params(kernel_size, stride, padding, ceil_mode, count_include_pad,
                                  divisor_override, a.shape[-2:], out)
    win = _windows(_padded(a, pads), k, s, (1, 1), out)
    total = np.zeros(a.shape[:-2] + tuple(out), dtype=a.dtype)
    with ignore_fp_errors():
        for i, j in itertools.product(range(k[0]), range(k[1])):
            total += win[..., i, j, :, :]
        return _land(_divide(total, div), spec)


@cv._avg_pool_backward.impl("CPU")
def _avg_pool_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    spec = cv._avg_pool_backward.meta_rule(grad_output, input_size, kernel_size, stride,
                                           padding, ceil_mode, count_include_pad,
                                           divisor_override)
    g = _src(grad_output)
    size = tuple(input_size[-2:])
    k, s, pads, div = _avg_params(kernel_size, stride, padding, ceil_mode, count_include_pad,
                                  divisor_override, size, g.shape[-2:])
    buf = np.zeros(g.shape[:-2] + tuple(n + lo + hi for n, (lo, hi) in zip(size, pads)),
                   dtype=g.dtype)
    with ignore_fp_errors():
        gd = g / div
        cols = np.broadcast_to(gd[..., None, None, :, :], gd.shape[:-2] + tuple(k) + gd.shape[-2:])
        _col2im_add(cols, buf, k, s, (1, 1))
    (p0, _), (p1, _) = pads
    return _land(buf[..., p0:p0 + size[0], p1:p1 + size[1]], spec)


def _adaptive_index(n: int, out: int):
    """Window element indices ``(out, kmax)`` (clipped to the window end), validity, counts."""
    o = np.arange(out)
    start = (o * n) // out
    end = -((-(o + 1) * n) // out)
    kmax = int((end - start).max()) if out else 1
    idx = start[:, None] + np.arange(kmax)[None, :]
    valid = idx < end[:, None]
    return np.minimum(idx, end[:, None] - 1), valid, end - start


def _adaptive_gather(a: np.ndarray, out):
    (hi, hv, hc), (wi, wv, wc) = (_adaptive_index(n, o) for n, o in zip(a.shape[-2:], out))
    vals = a[..., hi[:, :, None, None], wi[None, None, :, :]]  # (..., oh, kh, ow, kw)
    return vals, (hi, hv, hc), (wi, wv, wc)


@cv.adaptive_avg_pool2d.impl("CPU")
def _adaptive_avg_pool2d(input, output_size):
    spec = cv.adaptive_avg_pool2d.meta_rule(input, output_size)
    a = _src(input)
    out = spec.shape[-2:]
    if math.prod(spec.shape) == 0:
        return _land(np.zeros(spec.shape, a.dtype), spec)
    vals, (_, hv, hc), (_, wv, wc) = _adaptive_gather(a, out)
    mask = hv[:, :, None, None] & wv[None, None, :, :]
    with ignore_fp_errors():
        total = np.where(mask, vals, 0).sum(axis=(-3, -1))
        return _land(total / (hc[:, None] * wc[None, :]), spec)


def _window_matrix(n: int, out: int, dtype) -> np.ndarray:
    """``(out, n)`` 0/1 matrix of adaptive windows divided by their sizes."""
    o = np.arange(out)
    start, end = (o * n) // out, -((-(o + 1) * n) // out)
    i = np.arange(n)
    m = (i[None, :] >= start[:, None]) & (i[None, :] < end[:, None])
    return (m / (end - start)[:, None]).astype(dtype)


@cv._adaptive_avg_pool_backward.impl("CPU")
def _adaptive_avg_pool_backward(grad_output, input_size):
    spec = cv._adaptive_avg_pool_backward.meta_rule(grad_output, input_size)
    g = _src(grad_output)
    (h, w), (oh, ow) = spec.shape[-2:], g.shape[-2:]
    mh, mw = _window_matrix(h, oh, g.dtype), _window_matrix(w, ow, g.dtype)
    with ignore_fp_errors():
        return _land(mh.T @ g @ mw, spec)


@cv.adaptive_max_pool2d.impl("CPU")
def _adaptive_max_pool2d(input, output_size):
    specs = cv.adaptive_max_pool2d.meta_rule(input, output_size)
    a = _src(input)
    out = specs[0].shape[-2:]
    if math.prod(specs[0].shape) == 0:
        return _land(np.zeros(specs[0].shape, a.dtype), specs[0]), \
            _land(np.zeros(specs[1].shape, np.int64), specs[1])
    vals, (hi, _, _), (wi, _, _) = _adaptive_gather(a, out)
    w = a.shape[-1]
    best = np.full(vals.shape[:-4] + tuple(out), -np.inf, dtype=a.dtype)
    idx = np.broadcast_to(hi[:, :1] * w + wi[None, :, 0], best.shape).copy()
    for i, j in itertools.product(range(hi.shape[1]), range(wi.shape[1])):
        v = vals[..., :, i, :, j]
        m = (v > best) | np.isnan(v)
        np.copyto(best, v, where=m)
        np.copyto(idx, np.broadcast_to(hi[:, i, None] * w + wi[None, :, j], idx.shape),
                  where=m)
    return _land(best, specs[0]), _land(idx, specs[1])


# -- padding ----------------------------------------------------------------------------------
def _pad_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Source index of every output position along one padded dim."""
    if mode == "circular":  # torch crops negative pads first, then wraps within the rest
        c0 = max(-lo, 0)
        m = n - c0 - max(-hi, 0)
        return np.arange(-max(lo, 0), m + max(hi, 0)) % m + c0
    i = np.arange(-lo, n + hi)
    if mode == "reflect":
        i = np.abs(i)
        return np.where(i >= n, 2 * (n - 1) - i, i)
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    return i  # constant: out-of-range positions are padding


def _pad_pairs(pad, ndim: int):
    """``(axis, lo, hi)`` for each padded dim, from the last dim backwards."""
    return [(ndim - 1 - i, pad[2 * i], pad[2 * i + 1]) for i in range(len(pad) // 2)]


@cv.pad.impl("CPU")
def _pad(input, pad, mode="constant", value=None):
    spec = cv.pad.meta_rule(input, pad, mode, value)
    a = arr(input)
    o = new_output(spec.shape, spec.dtype)
    dst = arr(o)
    if mode == "constant":
        dst[...] = np.array(0 if value is None else value).astype(dst.dtype, casting="unsafe") \
            if o.numel() else 0
        src, out = [slice(None)] * a.ndim, [slice(None)] * a.ndim
        for ax, lo, hi in _pad_pairs(pad, a.ndim):
            n = a.shape[ax]
            src[ax] = slice(max(-lo, 0), max(n - max(-hi, 0), max(-lo, 0)))
            out[ax] = slice(max(lo, 0), max(lo, 0) + max(0, n - max(-lo, 0) - max(-hi, 0)))
        if o.numel():
            dst[tuple(out)] = a[tuple(src)]
        return o
    for ax, lo, hi in _pad_pairs(pad, a.ndim):
        a = np.take(a, _pad_index(a.shape[ax], lo, hi, mode), axis=ax)
    np.copyto(dst, a)
    return o


def _scatter_matrix(src_index: np.ndarray, n: int, dtype, weights=None) -> np.ndarray:
    """``(len(src_index), n)`` matrix routing each output position to its source."""
    m = np.zeros((len(src_index), n), dtype=dtype)
    valid = (src_index >= 0) & (src_index < n)
    rows = np.arange(len(src_index))[valid]
    np.add.at(m, (rows, src_index[valid]), 1 if weights is None else weights[valid])
    return m


def _apply_along(g: np.ndarray, ax: int, m: np.ndarray) -> np.ndarray:
    """Contract ``g``'s axis ``ax`` (length ``m.shape[0]``) with ``m``: ``-> m.shape[1]``."""
    moved = np.moveaxis(g, ax, -1)
    return np.moveaxis(moved @ m, -1, ax)


@cv._pad_backward.impl("CPU")
def _pad_backward(grad_output, input_size, pad, mode):
    spec = cv._pad_backward.meta_rule(grad_output, input_size, pad, mode)
    g = _src(grad_output)
    with ignore_fp_errors():
        for ax, lo, hi in _pad_pairs(pad, g.ndim):
            n = input_size[ax]
            g = _apply_along(g, ax, _scatter_matrix(_pad_index(n, lo, hi, mode), n, g.dtype))
    return _land(g, spec)


# -- resampling -------------------------------------------------------------------------------
def _scale(n: int, out: int, scale) -> np.float32:
    """PyTorch's ``compute_scales_value`` in float32 (the kernels' index arithmetic)."""
    if scale is not None and scale > 0:
        return np.float32(1.0 / scale)
    return np.float32(n) / np.float32(out)


def _nearest_index(n: int, out: int, scale) -> np.ndarray:
    if out == n:
        return np.arange(out)
    if out == 2 * n:
        return np.arange(out) >> 1
    s = _scale(n, out, scale)
    return np.minimum(np.floor(np.arange(out, dtype=np.float32) * s).astype(np.int64), n - 1)


def _linear_taps(n: int, out: int, align_corners: bool, scale, c: np.dtype):
    """Left index, right index and their weights for each output position (one dim)."""
    if align_corners:
        s = c.type((n - 1) / (out - 1)) if out > 1 else c.type(0)
        src = s * np.arange(out, dtype=c)
    else:
        s = c.type(_scale(n, out, scale)) if c == np.float32 else (
            c.type(1.0 / scale) if scale is not None and scale > 0 else c.type(n / out))
        src = np.maximum(s * (np.arange(out, dtype=c) + c.type(0.5)) - c.type(0.5), 0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    lam1 = np.clip(src - i0, 0, 1).astype(c)
    i1 = i0 + (i0 < n - 1)
    return i0, i1, c.type(1) - lam1, lam1


@cv.upsample_nearest2d.impl("CPU")
def _upsample_nearest2d(input, output_size, scales_h=None, scales_w=None):
    spec = cv.upsample_nearest2d.meta_rule(input, output_size, scales_h, scales_w)
    a = arr(input)
    (h, w), (oh, ow) = a.shape[-2:], spec.shape[-2:]
    hi, wi = _nearest_index(h, oh, scales_h), _nearest_index(w, ow, scales_w)
    return _land(a[..., hi[:, None], wi[None, :]], spec)


@cv.upsample_bilinear2d.impl("CPU")
def _upsample_bilinear2d(input, output_size, align_corners, scales_h=None, scales_w=None):
    spec = cv.upsample_bilinear2d.meta_rule(input, output_size, align_corners, scales_h,
                                            scales_w)
    a = _src(input)
    c = a.dtype
    (h, w), (oh, ow) = a.shape[-2:], spec.shape[-2:]
    w0, w1, wl0, wl1 = _linear_taps(w, ow, align_corners, scales_w, c)
    h0, h1, hl0, hl1 = _linear_taps(h, oh, align_corners, scales_h, c)
    with ignore_fp_errors():
        rows = a[..., w0] * wl0 + a[..., w1] * wl1  # (..., H, OW)
        res = rows[..., h0, :] * hl0[:, None] + rows[..., h1, :] * hl1[:, None]
    return _land(res, spec)


def _resample_matrix(n: int, out: int, mode: str, align_corners: bool, scale, c) -> np.ndarray:
    if mode == "nearest":
        return _scatter_matrix(_nearest_index(n, out, scale), n, c)
    i0, i1, l0, l1 = _linear_taps(n, out, align_corners, scale, c)
    return _scatter_matrix(i0, n, c, l0) + _scatter_matrix(i1, n, c, l1)


@cv._upsample_backward.impl("CPU")
def _upsample_backward(grad_output, input_size, mode, align_corners, scales_h, scales_w):
    spec = cv._upsample_backward.meta_rule(grad_output, input_size, mode, align_corners,
                                           scales_h, scales_w)
    g = _src(grad_output)
    (h, w), (oh, ow) = spec.shape[-2:], g.shape[-2:]
    mh = _resample_matrix(h, oh, mode, align_corners, scales_h, g.dtype)
    mw = _resample_matrix(w, ow, mode, align_corners, scales_w, g.dtype)
    with ignore_fp_errors():
        return _land(mh.T @ g @ mw, spec)
