"""CPU kernels of ember/ops/nn_ops.py: softmax, log_softmax and the fused activations.

Every kernel runs its op's Meta rule first, reads the input through its strided NumPy view,
computes in the op-math dtype (float32 for half types) and writes a fresh contiguous output.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import ember.ops.nn_ops as nn
from ember.backends.cpu._util import arr, compute_dtype, ignore_fp_errors, new_output, workspace
from ember.backends.cpu.pointwise import erfc64
from ember.core.layout import canonical_dim
from ember.tensor import Tensor

_F64 = np.dtype(np.float64)


def _land(spec, values) -> Tensor:
    out = new_output(spec.shape, spec.dtype)
    if values.size:
        np.copyto(arr(out), values, casting="unsafe")
    return out


def _target(spec, compute: np.dtype):
    """``(output, array to compute into, workspace storage or None)`` for a fused kernel: the
    output's own array when it has the compute dtype, else workspace to cast from at the end."""
    out = new_output(spec.shape, spec.dtype)
    dst = arr(out)
    if dst.dtype == compute:
        return out, dst, None
    st, buf = workspace(spec.shape, compute)
    return out, buf, st


def _finish(out: Tensor, r: np.ndarray, st) -> Tensor:
    if st is not None:
        np.copyto(arr(out), r, casting="unsafe")
    return out


def _softmax_kernel(op, log: bool):
    def kernel(input, dim, dtype=None):
        spec = op.meta_rule(input, dim, dtype)
        c = compute_dtype(spec.dtype)
        a = arr(input)
        if input._dtype.is_complex and not spec.dtype.is_complex and a.size:
            warnings.warn("Casting complex values to real discards the imaginary part",
                          UserWarning, stacklevel=3)
            a = a.real
        a = a.astype(c, copy=False)
        if a.size == 0:
            return new_output(spec.shape, spec.dtype)
        axis = canonical_dim(dim, a.ndim) if a.ndim else None
        out, r, st = _target(spec, c)
        with ignore_fp_errors():  # passes in place: NOTE [Kernel workspace]
            # as in torch, a row with an infinite maximum becomes nan (inf - inf)
            np.subtract(a, np.max(a, axis=axis, keepdims=True), out=r)
            if log:
                e_st, e = workspace(r.shape, c)
                np.exp(r, out=e)
                s = np.sum(e, axis=axis, keepdims=True)
                del e, e_st
                r -= np.log(s)  # s is a NumPy scalar, not an array, for a 0-d input
            else:
                np.exp(r, out=r)
                r /= np.sum(r, axis=axis, keepdims=True)
        return _finish(out, r, st)

    return kernel


nn.softmax.register("CPU", _softmax_kernel(nn.softmax, False))
nn.log_softmax.register("CPU", _softmax_kernel(nn.log_softmax, True))


# -- activations ------------------------------------------------------------------------------
_SQRT_HALF = math.sqrt(0.5)
_BETA = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_KAPPA = 0.044715
# Abramowitz & Stegun 7.1.26: erfc(y) = t * P(t) * exp(-y**2), t = 1 / (1 + p y), y >= 0,
# with |error| < 1.5e-7: float32 accuracy (float64 inputs take erfc64 instead).
_AS_P = 0.3275911
_AS_POLY = (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592)


def _phi_into(a, phi, e, w) -> None:
    """``phi = Phi(a)`` (the normal CDF) and ``e = exp(-a**2 / 2)``, in place; ``w`` is
    scratch. All three arrays have ``a``'s shape and the compute dtype."""
    if a.dtype == _F64:
        np.copyto(phi, 0.5 * erfc64(-a * _SQRT_HALF))
        np.multiply(a, a, out=e)
        e *= -0.5
        np.exp(e, out=e)
        return
    np.multiply(a, _SQRT_HALF, out=w)
    np.abs(w, out=w)  # y = |a| / sqrt(2)
    np.multiply(w, w, out=e)
    np.negative(e, out=e)
    np.exp(e, out=e)  # exp(-y**2) = exp(-a**2 / 2)
    w *= _AS_P
    w += 1.0
    np.reciprocal(w, out=w)  # t
    np.multiply(w, _AS_POLY[0], out=phi)
    for c in _AS_POLY[1:]:
        phi += c
        phi *= w
    phi *= e  # erfc(y)
    phi *= -0.5
    phi += 0.5  # erf(y) / 2 >= 0
    np.copysign(phi, a, out=phi)
    phi += 0.5  # Phi(a) = 1/2 + sign(a) erf(|a| / sqrt(2)) / 2


def _tanh_sigmoid_into(a, s) -> None:
    """``s = sigmoid(2 z) = (1 + tanh z) / 2`` with ``z = beta (a + kappa a**3)``, in place.
    The sigmoid form has no cancellation where ``tanh z`` is near -1; exp overflow gives 0."""
    np.multiply(a, a, out=s)
    s *= -2.0 * _BETA * _KAPPA
    s += -2.0 * _BETA
    s *= a  # -2 z
    np.exp(s, out=s)
    s += 1.0
    np.reciprocal(s, out=s)


def _gelu_kernel(input, *, approximate="none"):
    """gelu in place in its output (NOTE [Kernel workspace]): ``a * Phi(a)``, or torch's tanh
    form ``a (1 + tanh z) / 2`` evaluated as ``a * sigmoid(2 z)``."""
    spec = nn.gelu.meta_rule(input, approximate=approximate)
    c = compute_dtype(spec.dtype)
    a = arr(input).astype(c, copy=False)
    out, r, st = _target(spec, c)
    if a.size == 0:
        return out
    with ignore_fp_errors():
        if approximate == "tanh":
            _tanh_sigmoid_into(a, r)
        else:
            e_st, e = workspace(a.shape, c)
            w_st, w = workspace(a.shape, c)
            _phi_into(a, r, e, w)
            del e, w, e_st, w_st
        r *= a
    return _finish(out, r, st)


nn.gelu.register("CPU", _gelu_kernel)


def _gelu_backward_kernel(grad_output, input, *, approximate="none"):
    """``g * gelu'(a)`` in place (NOTE [Kernel workspace]). tanh form: with ``s = sigmoid(2 z)``,
    ``gelu'(a) = s + 2 beta a (1 + 3 kappa a**2) s (1 - s)``; exact: ``Phi(a) + a phi(a)``."""
    spec = nn.gelu_backward.meta_rule(grad_output, input, approximate=approximate)
    c = compute_dtype(spec.dtype)
    a = arr(input).astype(c, copy=False)
    g = arr(grad_output).astype(c, copy=False)
    out, r, st = _target(spec, c)
    if a.size == 0:
        return out
    s_st, s = workspace(a.shape, c)
    w_st, w = workspace(a.shape, c)
    with ignore_fp_errors():
        if approximate == "tanh":
            _tanh_sigmoid_into(a, s)
            np.multiply(a, a, out=w)
            w *= 3.0 * _KAPPA
            w += 1.0
            w *= a
            w *= 2.0 * _BETA  # 2 beta a (1 + 3 kappa a**2)
            np.multiply(s, s, out=r)
            np.subtract(s, r, out=r)  # s (1 - s)
            r *= w
            r += s
        else:
            _phi_into(a, s, r, w)  # s = Phi(a), r = exp(-a**2 / 2)
            r *= a
            r *= _INV_SQRT_2PI
            r += s
        r *= g
    del s, w, s_st, w_st
    return _finish(out, r, st)


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


@nn.native_layer_norm.impl("CPU")
def _native_layer_norm(input, normalized_shape, weight, bias, eps):
    """Statistics in the op-math dtype, then the normalisation and the affine in place in the
    output (NOTE [Kernel workspace])."""
    out_spec, stat_spec, _ = nn.native_layer_norm.meta_rule(input, normalized_shape, weight,
                                                            bias, eps)
    c = compute_dtype(out_spec.dtype)
    out, r, st = _target(out_spec, c)
    mean_t, rstd_t = new_output(stat_spec.shape, stat_spec.dtype), \
        new_output(stat_spec.shape, stat_spec.dtype)
    a = arr(input).astype(c, copy=False)
    if a.size == 0:
        return out, mean_t, rstd_t
    axes = tuple(range(a.ndim - len(normalized_shape), a.ndim))
    with ignore_fp_errors():
        mean = np.mean(a, axis=axes, keepdims=True)
        np.subtract(a, mean, out=r)
        var_st, sq = workspace(r.shape, c)
        np.multiply(r, r, out=sq)
        var = np.mean(sq, axis=axes, keepdims=True)
        del sq, var_st
        rstd = 1.0 / np.sqrt(var + c.type(eps))
        r *= rstd
        if weight is not None:
            r *= arr(weight).astype(c, copy=False)
        if bias is not None:
            r += arr(bias).astype(c, copy=False)
        np.copyto(arr(mean_t), mean, casting="unsafe")
        np.copyto(arr(rstd_t), rstd, casting="unsafe")
    return _finish(out, r, st), mean_t, rstd_t
