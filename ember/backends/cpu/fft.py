"""CPU kernels of the FFT primitives (ember.ops.fft) with ``numpy.fft``.

NumPy's pocketfft computes float32/complex64 in single precision and float64/complex128 in
double, as torch does; results land in outputs laid out as the Meta rules say. NumPy's
``norm=`` names a convention per direction, so each normalization code maps to the name that
divides by the same amount in the direction at hand (NOTE [FFT normalization codes]).
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, new_output, write_result
from ember.ops import fft as ops
from ember.tensor import empty_tensor

# code -> NumPy's norm name, for forward and inverse transforms
_NP_NORM = {True: ("backward", "ortho", "forward"), False: ("forward", "ortho", "backward")}


def _dims(x, dim) -> tuple:
    nd = len(x._shape)
    return tuple(d % nd for d in dim) if nd else ()


def _output(spec):
    return empty_tensor(spec.shape, spec.dtype, None, spec.stride)


def _c2c(a: np.ndarray, dims: tuple, normalization: int, forward: bool) -> np.ndarray:
    if not dims:
        return a
    fn = np.fft.fftn if forward else np.fft.ifftn
    return fn(a, axes=dims, norm=_NP_NORM[forward][normalization])


def _r2c(a: np.ndarray, dims: tuple, normalization: int, onesided: bool) -> np.ndarray:
    norm = _NP_NORM[True][normalization]
    if onesided:
        return np.fft.rfftn(a, axes=dims, norm=norm)
    return np.fft.fftn(a, axes=dims, norm=norm)


def _c2r(a: np.ndarray, dims: tuple, normalization: int, n: int) -> np.ndarray:
    a = _c2c(a, dims[:-1], normalization, False)
    return np.fft.irfft(a, n=n, axis=dims[-1], norm=_NP_NORM[False][normalization])


@ops._fft_c2c.impl("CPU")
def _fft_c2c(self, dim, normalization, forward):
    out = _output(ops._fft_c2c.meta_rule(self, dim, normalization, forward))
    if not out.numel():
        return out
    return write_result(_c2c(arr(self), _dims(self, dim), normalization, forward), out)


@ops._fft_r2c.impl("CPU")
def _fft_r2c(self, dim, normalization, onesided):
    out = _output(ops._fft_r2c.meta_rule(self, dim, normalization, onesided))
    if not out.numel():
        return out
    return write_result(_r2c(arr(self), _dims(self, dim), normalization, onesided), out)


@ops._fft_c2r.impl("CPU")
def _fft_c2r(self, dim, normalization, last_dim_size):
    out = _output(ops._fft_c2r.meta_rule(self, dim, normalization, last_dim_size))
    if not out.numel():
        return out
    return write_result(_c2r(arr(self), _dims(self, dim), normalization, int(last_dim_size)),
                        out)


@ops._fft_r2c_backward.impl("CPU")
def _fft_r2c_backward(grad, dim, normalization, onesided, last_dim_size):
    spec = ops._fft_r2c_backward.meta_rule(grad, dim, normalization, onesided, last_dim_size)
    out = new_output(spec.shape, spec.dtype)
    if not out.numel():
        return out
    dims, g = _dims(grad, dim), arr(grad)
    last = dims[-1]
    if onesided and g.shape[last] < last_dim_size:  # the dropped half: zero gradient
        pad = [(0, 0)] * g.ndim
        pad[last] = (0, int(last_dim_size) - g.shape[last])
        g = np.pad(g, pad)
    return write_result(_c2c(g, dims, normalization, False).real, out)


@ops._fft_c2r_backward.impl("CPU")
def _fft_c2r_backward(grad, dim, normalization):
    spec = ops._fft_c2r_backward.meta_rule(grad, dim, normalization)
    out = new_output(spec.shape, spec.dtype)
    if not out.numel():
        return out
    dims = _dims(grad, dim)
    g = _r2c(arr(grad), dims, normalization, True)
    n, half = grad._shape[dims[-1]], g.shape[dims[-1]]
    doubled = [slice(None)] * g.ndim
    doubled[dims[-1]] = slice(1, 1 + n - half)
    g[tuple(doubled)] *= 2
    return write_result(g, out)
