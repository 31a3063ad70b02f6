"""CPU kernels of ember/ops/nn_ops.py: softmax, log_softmax and the fused activations.

Every kernel runs its op's Meta rule first, reads the input through its strided NumPy view,
computes in the op-math dtype (float32 for half types) and writes a fresh contiguous output.
"""

from __future__ import annotations

import math

import numpy as np

import ember.ops.nn_ops as nn
from ember.backends.cpu._util import arr, compute_dtype, ignore_fp_errors, new_output
from ember.backends.cpu.pointwise import erfc64
from ember.core.layout import canonical_dim
from ember.tensor import Tensor

_F64 = np.dtype(np.float64)


def _land(spec, values) -> Tensor:
    out = new_output(spec.shape, spec.dtype)
    if values.size:
        np.copyto(arr(out), values, casting="unsafe")
    return out


def _softmax_kernel(op, log: bool):
    def kernel(input, dim, dtype=None):
        spec = op.meta_rule(input, dim, dtype)
        a = arr(input).astype(compute_dtype(spec.dtype), copy=False)
        if a.size == 0:
            return new_output(spec.shape, spec.dtype)
        axis = canonical_dim(dim, a.ndim) if a.ndim else None
        with ignore_fp_errors():
            m = np.max(a, axis=axis, keepdims=True)
            m = np.where(np.isfinite(m), m, 0).astype(a.dtype, copy=False)
            shifted = a - m
            e = np.exp(shifted)
            s = np.sum(e, axis=axis, keepdims=True)
            r = shifted - np.log(s) if log else e / s
        return _land(spec, r)

    return kernel


nn.softmax.register("CPU", _softmax_kernel(nn.softmax, False))
nn.log_softmax.register("CPU", _softmax_kernel(nn.log_softmax, True))


# -- activations ------------------------------------------------------------------------------
def _erf_fast(x: np.ndarray) -> np.ndarray:
    """erf to float32 accuracy: Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7), in float64."""
    ax = np.abs(x).astype(_F64)
    t = 1.0 / (1.0 + 0.3275911 * ax)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027
                                                                         + t * 1.061405429))))
    return np.copysign(1.0 - poly * np.exp(-ax * ax), x)


_SQRT_HALF = math.sqrt(0.5)
_BETA = math.sqrt(2.0 / math.pi)


def _gelu(a, approximate="none"):
    if approximate == "tanh":
        inner = _BETA * (a + 0.044715 * a * a * a)
        return 0.5 * a * (1 + np.tanh(inner))
    return a * _cdf(a)


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_KAPPA = 0.044715


def _cdf(a):
    if a.dtype == _F64:
        return 0.5 * erfc64(-a * _SQRT_HALF)
    return (0.5 * (1 + _erf_fast(a * _SQRT_HALF))).astype(a.dtype)


def _gelu_backward_kernel(grad_output, input, *, approximate="none"):
    spec = nn.gelu_backward.meta_rule(grad_output, input, approximate=approximate)
    a = arr(input).astype(compute_dtype(spec.dtype), copy=False)
    g = arr(grad_output).astype(a.dtype, copy=False)
    with ignore_fp_errors():
        if approximate == "tanh":
            x_sq = a * a
            t = np.tanh(_BETA * (a + _KAPPA * x_sq * a))
            right = 0.5 * a * (1 - t * t) * (_BETA * (1 + 3 * _KAPPA * x_sq))
            d = 0.5 * (1 + t) + right
        else:
            d = _cdf(a) + a * np.exp(-0.5 * a * a) * _INV_SQRT_2PI
        return _land(spec, g * d)


nn.gelu_backward.register("CPU", _gelu_backward_kernel)


def _sigmoid(a):
    return 0.5 * np.tanh(0.5 * a) + 0.5


def _softplus(a, beta=1, threshold=20):
    bx = a * beta
    return np.where(bx > threshold, a, np.logaddexp(0, bx) / beta)


def _elu(a, alpha=1.0, scale=1.0, input_scale=1.0):
    return np.where(a > 0, a * scale, np.expm1(a * input_scale) * (alpha * scale))


def _hardtanh(a, min_val=-1.0, max_val=1.0):
    return np.minimum(np.maximum(a, min_val), max_val)


_ACTS = {
    nn.gelu: _gelu,
    nn.silu: lambda a: a * _sigmoid(a),
    nn.mish: lambda a: a * np.tanh(_softplus(a)),
    nn.softplus: _softplus,
    nn.elu: _elu,
    nn.leaky_relu: lambda a, negative_slope=0.01: np.where(a > 0, a, a * negative_slope),
    nn.hardtanh: _hardtanh,
    nn.hardswish: lambda a: a * np.minimum(np.maximum(a + 3, 0), 6) / 6,
    nn.hardsigmoid: lambda a: np.minimum(np.maximum(a + 3, 0), 6) / 6,
    nn.log_sigmoid: lambda a: -np.logaddexp(0, -a),
}


def _act_kernel(op, fn):
    def kernel(input, *args, **kwargs):
        spec = op.meta_rule(input, *args, **kwargs)
        a = arr(input)
        if a.dtype.kind == "f":
            a = a.astype(compute_dtype(spec.dtype), copy=False)
        with ignore_fp_errors():
            return _land(spec, fn(a, *args, **kwargs))

    return kernel


for _op, _fn in _ACTS.items():
    _op.register("CPU", _act_kernel(_op, _fn))


@nn.threshold_backward.impl("CPU")
def _threshold_backward(grad_output, input, threshold):
    """``grad * (input > threshold)`` in one multiply (masked copies of a random mask are
    several times slower); ``+ 0`` turns the ``-0.0`` of masked negative gradients into
    PyTorch's ``0.0``, and masked non-finite gradients (``inf * 0``) are zeroed afterwards."""
    spec = nn.threshold_backward.meta_rule(grad_output, input, threshold)
    o = new_output(spec.shape, spec.dtype)
    if not o.numel():
        return o
    dst, g = arr(o), arr(grad_output)
    with ignore_fp_errors():
        keep = np.less_equal(arr(input), threshold)
        # NaN inputs keep their gradient, as in PyTorch (0-d: NumPy returns a scalar)
        keep = np.logical_not(keep, out=keep) if keep.ndim else ~keep
        if dst.dtype not in _NATIVE:
            np.copyto(dst, np.where(keep, g, 0), casting="unsafe")
            return o
        np.multiply(g, keep, out=dst, casting="unsafe")
        np.add(dst, 0, out=dst)
        if np.isnan(dst).any():
            np.copyto(dst, 0, where=~keep)
    return o


_NATIVE = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))
