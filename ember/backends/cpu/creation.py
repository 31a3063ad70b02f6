"""CPU kernels of factory operators."""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, new_output
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
    t = empty_tensor(shape, dtype)
    if array is None:  # data is a Tensor
        array = arr(data)
    if t.numel():
        np.copyto(arr(t), array, casting="unsafe")
    return _finish(t, requires_grad)


@cr.arange.impl("CPU")
def _arange(start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
            pin_memory=None, requires_grad=False):
    spec = cr.arange.meta_rule(start, end, step, dtype=dtype)
    lo, _, st = cr.arange.normalize(start, end, step)
    t = new_output(spec.shape, spec.dtype, out)
    n = spec.shape[0]
    if n:
        values = lo + st * np.arange(n, dtype=np.float64 if spec.dtype.is_floating_point
                                     else np.int64)
        np.copyto(arr(t), values, casting="unsafe")
    return _finish(t, requires_grad)
