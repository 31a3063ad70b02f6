"""CPU kernels of convolution, padding, im2col/col2im and resampling (NumPy), and the window
helpers the pooling kernels (``ember.backends.cpu.pooling``) share.

Convolution is im2col + GEMM in 1-3 spatial dims: the padded input is viewed as
``(N, C, *kernel, *out)`` windows with ``as_strided`` (no copy), the view is materialised batch
chunk by batch chunk into one cache-sized column buffer and multiplied by the weight with BLAS
GEMMs written straight into the output (the weight gradient likewise, one GEMM per group and
chunk summing over images and pixels). col2im (transposed convolution, fold, average-pooling
backward) loops over *kernel offsets* only: each step is one vectorised NumPy operation over
the whole batch. Half-precision inputs compute in float32. Every kernel runs its operator's
Meta rule first, so validation is shared with the Meta backend.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

import ember.ops.conv as cv
from ember.backends.cpu import _xp as xpm
from ember.backends.cpu._util import arr, compute_dtype, ignore_fp_errors, new_output
from ember.backends.cpu._xp import like, module_of
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
    out = module_of(a).full(shape, value, dtype=a.dtype)
    out[(Ellipsis,) + tuple(slice(lo, lo + n) for n, (lo, _) in zip(a.shape[-nd:], pads))] = a
    return out


def _windows(xp: np.ndarray, kernel, stride, dilation, out) -> np.ndarray:
    """View ``(..., *sp)`` as ``(..., *kernel, *out)`` sliding windows (no copy)."""
    nd = len(kernel)
    st = xp.strides[-nd:]
    shape = xp.shape[:-nd] + tuple(kernel) + tuple(out)
    strides = xp.strides[:-nd] + tuple(s * d for s, d in zip(st, dilation)) + \
        tuple(s * k for s, k in zip(st, stride))
    return xpm.as_strided(module_of(xp), xp, shape, strides, writeable=False)


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
    buf = module_of(x).empty(per * (chunks[0][1] - chunks[0][0]), dtype=x.dtype)
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
        res = module_of(x).empty((x.shape[0], groups * cog, math.prod(out_sp)), dtype=x.dtype)
    _conv_forward(xp, module_of(wf).ascontiguousarray(wf), (1,) * nd, (0,) * nd, dilation,
                  groups, out_sp, res)
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
    buf = module_of(cols).zeros((n, groups * cog) + tuple(size), dtype=cols.dtype)
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
            module_of(x).empty(spec.shape[:2] + (math.prod(out_sp),), dtype=c)
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
    buf = module_of(a).empty(per * (chunks[0][1] - chunks[0][0]), dtype=a.dtype)
    gw = module_of(a).empty((groups, o // groups, ck), dtype=a.dtype)
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
    buf = module_of(a).zeros(spec.shape[:-2] + tuple(n + 2 * v for n, v in zip(size, p)),
                             dtype=a.dtype)
    with ignore_fp_errors():
        _col2im_add(cols, buf, k, s, d)
    return _land(buf[..., p[0]:p[0] + size[0], p[1]:p[1] + size[1]], spec)


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
        dst[...] = np.array(0 if value is None else value).astype(dst.dtype, casting="unsafe")[()] \
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
        a = np.take(a, like(a, _pad_index(a.shape[ax], lo, hi, mode)), axis=ax)
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
            g = _apply_along(g, ax, like(g, _scatter_matrix(_pad_index(n, lo, hi, mode), n,
                                                            g.dtype)))
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
    hi, wi = like(a, _nearest_index(h, oh, scales_h)), like(a, _nearest_index(w, ow, scales_w))
    return _land(a[..., hi[:, None], wi[None, :]], spec)


@cv.upsample_bilinear2d.impl("CPU")
def _upsample_bilinear2d(input, output_size, align_corners, scales_h=None, scales_w=None):
    spec = cv.upsample_bilinear2d.meta_rule(input, output_size, align_corners, scales_h,
                                            scales_w)
    a = _src(input)
    c = a.dtype
    (h, w), (oh, ow) = a.shape[-2:], spec.shape[-2:]
    w0, w1, wl0, wl1 = (like(a, t) for t in _linear_taps(w, ow, align_corners, scales_w, c))
    h0, h1, hl0, hl1 = (like(a, t) for t in _linear_taps(h, oh, align_corners, scales_h, c))
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
    mh = like(g, _resample_matrix(h, oh, mode, align_corners, scales_h, g.dtype))
    mw = like(g, _resample_matrix(w, ow, mode, align_corners, scales_w, g.dtype))
    with ignore_fp_errors():
        return _land(mh.T @ g @ mw, spec)
