"""CPU kernels of factory operators."""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, arr_on, new_output
from ember.backends.cpu._xp import like
from ember.core import dtype as dt
from ember.ops import creation as cr
from ember.tensor import Tensor, empty_tensor


def _finish(t: Tensor, requires_grad: bool) -> Tensor:
    if requires_grad:
        t.requires_grad_(True)
    return t


def _filled(op, value_of):
    def kernel(*args, **kwargs):
        spec = op.meta_rule(*args, **kwargs)
        out = kwargs.get("out")
        t = new_output(spec.shape, spec.dtype, out) if out is not None else \
            empty_tensor(spec.shape, spec.dtype, stride=spec.stride)
        if t.numel():
            arr(t).fill(value_of(*args, **kwargs))
        return _finish(t, kwargs.get("requires_grad", False))

    op.register("CPU", kernel)


def _fill_value(size, fill_value, **_):
    return fill_value.item() if isinstance(fill_value, Tensor) else fill_value


def _empty_kernel(op):
    def kernel(*args, **kwargs):
        spec = op.meta_rule(*args, **kwargs)
        out = kwargs.get("out")
        if out is not None:
            return new_output(spec.shape, spec.dtype, out)
        t = empty_tensor(spec.shape, spec.dtype, stride=spec.stride)
        return _finish(t, kwargs.get("requires_grad", False))

    op.register("CPU", kernel)


_empty_kernel(cr.empty)
_empty_kernel(cr.empty_strided)
_filled(cr.zeros, lambda *a, **k: 0)
_filled(cr.ones, lambda *a, **k: 1)
_filled(cr.full, _fill_value)
_filled(cr.scalar_tensor, lambda s, **k: s.item() if isinstance(s, Tensor) else s)


@cr.tensor.impl("CPU")
def _tensor(data, *, dtype=None, layout=None, device=None, pin_memory=None,
            requires_grad=False):
    shape, dtype, array = cr.data_shape_dtype(data, dtype)
    cr.check_requires_grad(dtype, requires_grad)
    t = empty_tensor(shape, dtype)
    if array is None:  # data is a Tensor
        array = arr_on(data, t)
    if t.numel():
        np.copyto(arr(t), like(arr(t), array), casting="unsafe")
    return _finish(t, requires_grad)


@cr.arange.impl("CPU")
def _arange(start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
            pin_memory=None, requires_grad=False):
    spec = cr.arange.meta_rule(start, end, step, dtype=dtype, out=out)
    lo, _, st = cr.arange.normalize(start, end, step, spec.dtype)
    t = new_output(spec.shape, spec.dtype, out)
    n = spec.shape[0]
    if n:
        if spec.dtype.is_floating_point:  # torch accumulates in double
            values = lo + st * np.arange(n, dtype=np.float64)
        else:  # and in int64 for integer dtypes: the bounds and step are truncated first
            values = int(lo) + int(st) * np.arange(n, dtype=np.int64)
        np.copyto(arr(t), like(arr(t), values), casting="unsafe")
    return _finish(t, requires_grad)


def _linspace_values(start, end, steps: int, dtype: dt.DType):
    """torch's linspace: ``start + step*i`` for the first half, ``end - step*(steps-1-i)`` after.

    Floating dtypes compute in the dtype itself, rounding after every operation as c10's
    Half/BFloat16 arithmetic does; integer dtypes convert the bounds to the dtype first, step
    in float64 and truncate (torch's ``step_t = double`` for integral types).
    """
    if steps == 1:
        return np.full(1, start)
    if dtype.is_floating_point or dtype.is_complex:
        c = dtype.np.type
        lo, hi = c(start), c(end)
    else:
        c = np.float64
        lo, hi = c(int(start)), c(int(end))
    i = np.arange(steps)
    if dtype.is_complex:  # c10::complex divides and scales each part by a real number
        r = dtype.to_real().np.type
        with np.errstate(all="ignore"):
            diff = hi - lo
            step_re, step_im = diff.real / r(steps - 1), diff.imag / r(steps - 1)
            up, down = i.astype(r), (steps - 1 - i).astype(r)
            first = lo + (step_re * up + 1j * (step_im * up)).astype(c)
            second = hi - (step_re * down + 1j * (step_im * down)).astype(c)
        return np.where(i < steps // 2, first, second)
    step = (hi - lo) / c(steps - 1)
    with np.errstate(all="ignore"):
        return np.where(i < steps // 2, lo + step * i.astype(c),
                        hi - step * (steps - 1 - i).astype(c))


def _range_kernel(op, values):
    def kernel(start, end, steps, *args, out=None, dtype=None, layout=None, device=None,
               pin_memory=None, requires_grad=False, **extra):
        spec = op.meta_rule(start, end, steps, *args, out=out, dtype=dtype, **extra)
        s, e = cr.linspace.scalar(op.name, "start", start), cr.linspace.scalar(op.name, "end", end)
        if not spec.dtype.is_complex:  # a complex bound with no imaginary part (checked)
            s, e = (v.real if isinstance(v, complex) else v for v in (s, e))
        t = new_output(spec.shape, spec.dtype, out)
        if steps:
            np.copyto(arr(t), values(s, e, steps, spec.dtype, *args, **extra),
                      casting="unsafe")
        return _finish(t, requires_grad)

    op.register("CPU", kernel)


def _logspace_values(start, end, steps: int, dtype: dt.DType, base=10.0):
    """``base ** exponent`` in float64; exponents two-ended like linspace, stepped in float64.

    Complex dtypes step in the dtype and raise as ``std::pow(complex, complex)`` does:
    ``exp(exponent * log(base))``."""
    if dtype.is_complex:
        c = dtype.np.type
        exps = _linspace_values(start, end, steps, dtype).astype(c)
        with np.errstate(all="ignore"):
            return np.exp(exps * np.log(c(base)))
    if steps == 1:
        return np.power(np.float64(base), np.full(1, float(start)))
    conv = dtype.np.type if dtype.is_floating_point else int
    lo, hi = float(conv(start)), float(conv(end))
    i = np.arange(steps, dtype=np.float64)
    step = (hi - lo) / (steps - 1)
    with np.errstate(all="ignore"):
        return np.power(np.float64(base),
                        np.where(i < steps // 2, lo + step * i, hi - step * (steps - 1 - i)))


_range_kernel(cr.linspace, _linspace_values)
_range_kernel(cr.logspace, _logspace_values)


@cr.eye.impl("CPU")
def _eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, pin_memory=None,
         requires_grad=False):
    spec = cr.eye.meta_rule(n, m, out=out, dtype=dtype)
    t = new_output(spec.shape, spec.dtype, out)
    if t.numel():
        a = arr(t)
        a.fill(0)
        k = like(a, np.arange(min(spec.shape)))
        a[k, k] = 1
    return _finish(t, requires_grad)


def _tri_kernel(op, indices):
    def kernel(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=False):
        spec = op.meta_rule(row, col, offset, dtype=dtype)
        t = empty_tensor(spec.shape, spec.dtype)
        if t.numel():
            np.copyto(arr(t), like(arr(t), np.stack(indices(row, offset, col))), casting="unsafe")
        return _finish(t, requires_grad)

    op.register("CPU", kernel)


_tri_kernel(cr.tril_indices, np.tril_indices)
_tri_kernel(cr.triu_indices, np.triu_indices)
