"""CPU kernels of the random family: NumPy math over the generator's Philox draws.

Every kernel validates (its op's Meta rule) before drawing, so a rejected call leaves the
generator where it was. Values are produced in row-major logical order of the output and
written through ``arr`` (strided views are fine); see NOTE [Philox streams] for which words
each element uses.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, compute_dtype, ignore_fp_errors, new_output
from ember.core import dtype as dt
from ember.core.layout import numel
from ember.ops import nn_ops
from ember.ops import random as rd
from ember.tensor import Tensor
from ember.tensor.random import Generator, default_generator, uniform_threshold


def _gen(generator) -> Generator:
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"expected an ember.Generator for generator=; got "
                        f"{type(generator).__name__}")
    if generator.device.type != "cpu":
        raise RuntimeError(f"Expected a 'cpu' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def _store(t: Tensor, values: np.ndarray) -> Tensor:
    if values.size:
        with np.errstate(all="ignore"):
            np.copyto(arr(t), values.reshape(t._shape), casting="unsafe")
    return t


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def _complex_parts(sample, g: Generator, n: int, dtype: dt.DType, *args):
    """``n`` complex values whose (real, imag) pairs are ``2n`` draws of ``sample(*args)``."""
    parts = np.asarray(sample(g, 2 * n, dtype.to_real(), *args), np.float64)
    return parts.view(np.complex128)


def _uniform(g: Generator, n: int, dtype: dt.DType, low: float = 0.0, high: float = 1.0):
    if dtype.is_complex:  # torch: each part uniform in [low, high)
        return _complex_parts(_uniform, g, n, dtype, low, high)
    u = g.uniform(n, dtype)
    if low == 0.0 and high == 1.0:
        return u
    return low + (high - low) * u.astype(np.float64)


def _normal(g: Generator, n: int, dtype: dt.DType, mean=0.0, std=1.0):
    if dtype.is_complex:  # torch: each part N(mean, std^2 / 2), so E|z - mean|^2 = std^2
        z = _complex_parts(_normal, g, n, dtype) * (std * 0.5 ** 0.5)
        return z + complex(mean, mean) if mean else z
    return g.normal(n, dtype) * std + mean


# -- factories -----------------------------------------------------------------------------
def _float_factory(op, sample):
    def kernel(*size, generator=None, out=None, dtype=None, layout=None, device=None,
               pin_memory=None, requires_grad=False):
        spec = op.meta_rule(*size, out=out, dtype=dtype)
        g = _gen(generator)
        t = new_output(spec.shape, spec.dtype, out)
        _store(t, sample(g, numel(spec.shape), spec.dtype))
        return _finish(t, requires_grad)

    op.register("CPU", kernel)


_float_factory(rd.rand, _uniform)
_float_factory(rd.randn, _normal)


@rd.randint.impl("CPU")
def _randint(low=None, high=None, size=None, *, generator=None, out=None, dtype=None,
             layout=None, device=None, pin_memory=None, requires_grad=False):
    spec = rd.randint.meta_rule(low, high, size, out=out, dtype=dtype)
    lo, hi, _ = rd.randint.normalize(low, high, size)
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype, out)
    _store(t, g.integers(numel(spec.shape), lo, hi))
    return _finish(t, requires_grad)


@rd.randperm.impl("CPU")
def _randperm(n, *, generator=None, out=None, dtype=None, layout=None, device=None,
              pin_memory=None, requires_grad=False):
    spec = rd.randperm.meta_rule(n, out=out, dtype=dtype)
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype, out)
    # Sorting n random 64-bit keys gives a uniform permutation (ties have probability ~0).
    _store(t, np.argsort(g.uint64(n), kind="stable"))
    return _finish(t, requires_grad)


@rd.normal_float_float.impl("CPU")
def _normal_ff(mean, std, size, *, generator=None, out=None, dtype=None, layout=None,
               device=None, pin_memory=None, requires_grad=False):
    spec = rd.normal_float_float.meta_rule(mean, std, size, out=out, dtype=dtype)
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype, out)
    _store(t, _normal(g, numel(spec.shape), spec.dtype, mean, std))
    return _finish(t, requires_grad)


# -- normal from tensors ---------------------------------------------------------------------
def _f64(x, shape) -> np.ndarray | float:
    if isinstance(x, Tensor):  # complex means stay complex
        wide = np.complex128 if x._dtype.is_complex else np.float64
        return np.broadcast_to(arr(x).astype(wide), shape)
    return float(x)


def _check_std_elements(std) -> None:
    if isinstance(std, Tensor) and std.numel() and not bool((arr(std) >= 0).all()):
        raise RuntimeError("normal expects all elements of std >= 0.0")


def _normal_tensor_kernel(op):
    def kernel(mean, std, *, generator=None, out=None):
        spec = op.meta_rule(mean, std, out=out)
        _check_std_elements(std)
        g = _gen(generator)
        t = new_output(spec.shape, spec.dtype, out)
        n = numel(spec.shape)
        # complex: unit E|z|^2, each part N(0, 1/2), then scaled and shifted (torch's order)
        z = (_normal(g, n, spec.dtype) if spec.dtype.is_complex else
             g.normal(n, spec.dtype)).reshape(spec.shape)
        return _store(t, z * _f64(std, spec.shape) + _f64(mean, spec.shape))

    op.register("CPU", kernel)


for _op in (rd.normal_tensor_tensor, rd.normal_tensor_float, rd.normal_float_tensor):
    _normal_tensor_kernel(_op)


# -- bernoulli and multinomial ---------------------------------------------------------------
def _bernoulli_values(g: Generator, p, shape, dtype: dt.DType) -> np.ndarray:
    n = numel(shape)
    if dtype is not dt.float64:
        # Same bits as the float comparison below; NOTE [Bernoulli thresholds].
        threshold = uniform_threshold(p)
        if threshold is not None:
            return g.bernoulli_words(n, threshold).reshape(shape)
    u = g.uniform(n, dt.float64 if dtype is dt.float64 else dt.float32)
    return u.reshape(shape) < p


def _check_probs(p: np.ndarray) -> None:
    if p.size and not bool(((p >= 0) & (p <= 1)).all()):
        raise RuntimeError("bernoulli: expected all probabilities p_in to satisfy "
                           "0 <= p_in <= 1; got values outside [0, 1]")


@rd.bernoulli_tensor.impl("CPU")
def _bernoulli(input, *, generator=None, out=None):
    spec = rd.bernoulli_tensor.meta_rule(input)
    p = arr(input).astype(np.float64)
    _check_probs(p)
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype, out)
    return _store(t, _bernoulli_values(g, p, spec.shape, input._dtype))


@rd.bernoulli_p.impl("CPU")
def _bernoulli_p(input, p, *, generator=None):
    spec = rd.bernoulli_p.meta_rule(input, p)
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype)
    return _store(t, _bernoulli_values(g, p, spec.shape, input._dtype))


@rd.multinomial.impl("CPU")
def _multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    spec = rd.multinomial.meta_rule(input, num_samples, replacement)
    probs = arr(input).astype(np.float64).reshape(-1, input._shape[-1])  # (N, C)
    if probs.size and not bool((np.isfinite(probs) & (probs >= 0)).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if probs.shape[0] and not bool((probs.sum(axis=1) > 0).all()):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype, out)
    pick = _with_replacement if replacement else _without_replacement
    return _store(t, pick(g, probs, num_samples))


def _with_replacement(g: Generator, probs: np.ndarray, k: int) -> np.ndarray:
    # (N, C) probabilities -> (N, k) indices by inverting each row's CDF.
    cdf = np.cumsum(probs, axis=1)
    cdf /= cdf[:, -1:]
    u = g.uniform(probs.shape[0] * k, dt.float64).reshape(-1, k)
    last = probs.shape[1] - 1 - np.argmax(probs[:, ::-1] > 0, axis=1)  # last nonzero category
    out = np.empty(u.shape, np.int64)
    for r in range(probs.shape[0]):
        out[r] = np.minimum(np.searchsorted(cdf[r], u[r], side="right"), last[r])
    return out


def _without_replacement(g: Generator, probs: np.ndarray, k: int) -> np.ndarray:
    # The exponential race: category c finishes at E_c / p_c with E_c ~ Exp(1); the first k
    # finishers are a weighted sample without replacement. Zero-probability ones come last.
    u = g.uniform(probs.size, dt.float64).reshape(probs.shape)
    with np.errstate(divide="ignore"):
        keys = -np.log1p(-u) / probs
    return np.argsort(keys, axis=1, kind="stable")[:, :k]


# -- in-place fills --------------------------------------------------------------------------
def _inplace(op, sample):
    """Register ``op``'s kernel: validate, draw ``sample(g, self, *args)``, write, bump once."""

    def kernel(self, *args, generator=None, **kwargs):
        op.meta_rule(self, *args, **kwargs)
        g = _gen(generator)
        values = sample(g, self, *args, **kwargs)
        self._ver.value += 1
        return _store(self, values)

    op.register("CPU", kernel)


def _n(t: Tensor) -> int:
    return numel(t._shape)


def _uniform_fill(g, self, from_=0.0, to=1.0):
    return _uniform(g, _n(self), self._dtype, from_, to)


def _normal_fill(g, self, mean=0.0, std=1.0):
    return _normal(g, _n(self), self._dtype, mean, std)


def _exponential_fill(g, self, lambd=1.0):
    return -np.log1p(-g.uniform(_n(self), self._dtype).astype(np.float64)) / lambd


def _geometric_fill(g, self, p):
    u = g.uniform(_n(self), dt.float64)
    return np.maximum(np.ceil(np.log1p(-u) / np.log1p(-p)), 1.0)


def _cauchy_fill(g, self, median=0.0, sigma=1.0):
    u = g.uniform(_n(self), self._dtype).astype(np.float64)
    return median + sigma * np.tan(np.pi * (u - 0.5))


def _log_normal_fill(g, self, mean=1.0, std=2.0):
    return np.exp(_normal(g, _n(self), self._dtype, mean, std))


def _bernoulli_float_fill(g, self, p=0.5):
    return _bernoulli_values(g, p, self._shape, self._dtype)


def _bernoulli_tensor_fill(g, self, p):
    probs = np.broadcast_to(arr(p).astype(np.float64), self._shape)
    _check_probs(probs)
    return _bernoulli_values(g, probs, self._shape, self._dtype)


def _random_fill(g, self, from_, to):
    lo, hi = rd.random_bounds(self._dtype, from_, to, _n(self))
    return g.integers(_n(self), lo, hi)


for _op, _sample in ((rd.uniform_, _uniform_fill), (rd.normal_, _normal_fill),
                     (rd.exponential_, _exponential_fill), (rd.geometric_, _geometric_fill),
                     (rd.cauchy_, _cauchy_fill), (rd.log_normal_, _log_normal_fill),
                     (rd.bernoulli_float_, _bernoulli_float_fill),
                     (rd.bernoulli_tensor_, _bernoulli_tensor_fill),
                     (rd.random_from_, _random_fill)):
    _inplace(_op, _sample)


# -- dropout ---------------------------------------------------------------------------------
@nn_ops.native_dropout.impl("CPU")
def _native_dropout(input, p, train):
    """One draw of the keep-mask (the stream of ``bernoulli_(1 - p)`` in ``input``'s dtype,
    so the masks equal the composite dropout's), then ``input * mask * scale`` in place."""
    out_spec, mask_spec = nn_ops.native_dropout.meta_rule(input, p, train)
    out = new_output(out_spec.shape, out_spec.dtype)
    mask = new_output(mask_spec.shape, mask_spec.dtype)
    if not out.numel():
        return out, mask
    a, dst, keep = arr(input), arr(out), arr(mask)
    if train is False:
        keep.fill(True)
        np.copyto(dst, a)
        return out, mask
    np.copyto(keep, _bernoulli_values(default_generator, 1.0 - p, out_spec.shape,
                                      input._dtype))
    c = compute_dtype(out_spec.dtype)
    with ignore_fp_errors():
        if dst.dtype == c:
            np.multiply(a, keep, out=dst)
            dst *= c.type(nn_ops._dropout_scale(p, train))
        else:  # half types: one rounding of the float32 product, as torch's opmath
            np.copyto(dst, a.astype(c) * keep * c.type(nn_ops._dropout_scale(p, train)),
                      casting="unsafe")
    return out, mask


@nn_ops.native_dropout_backward.impl("CPU")
def _native_dropout_backward(grad_output, mask, scale):
    spec = nn_ops.native_dropout_backward.meta_rule(grad_output, mask, scale)
    out = new_output(spec.shape, spec.dtype)
    if not out.numel():
        return out
    c = compute_dtype(spec.dtype)
    dst = arr(out)
    with ignore_fp_errors():
        if dst.dtype == c:
            np.multiply(arr(grad_output), arr(mask), out=dst, dtype=c, casting="unsafe")
            dst *= c.type(scale)
        else:
            np.copyto(dst, arr(grad_output).astype(c) * arr(mask) * c.type(scale),
                      casting="unsafe")
    return out
