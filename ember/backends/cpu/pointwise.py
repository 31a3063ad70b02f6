"""CPU kernels of pointwise operators: one NumPy ufunc per op, driven by a table.

Kernels compute in ``compute_dtype`` (float32 for half types, like PyTorch's opmath) and
write straight into the output's memory when they can.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, compute_dtype, new_output, operand, run_ufunc
from ember.ops import pointwise as pw
from ember.ops._promotion import promoted_dtype
from ember.tensor import Tensor


def _relu(x, out, dtype=None, casting=None):
    return np.maximum(x, np.zeros((), x.dtype), out=out, dtype=dtype, casting=casting)


def _sigmoid(x, out, dtype=None, casting=None):
    # Stable form: exp(-|x|) never overflows.
    z = np.exp(-np.abs(np.asarray(x, dtype=dtype)))
    pos = 1.0 / (1.0 + z)
    np.copyto(out, np.where(np.asarray(x) >= 0, pos, z * pos), casting="unsafe")
    return out


UNARY_UFUNCS = {
    "neg": np.negative, "abs": np.absolute, "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "sigmoid": _sigmoid, "relu": _relu,
}

BINARY_UFUNCS = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "eq": np.equal,
    "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "maximum": np.maximum, "minimum": np.minimum,
}


def make_unary(name: str, ufunc):
    op = getattr(pw, name)
    kind = pw.UNARY[name][0]

    def kernel(self, *, out=None):
        comp, result = promoted_dtype(kind, self)
        o = new_output(self._shape, result, out, name)
        return run_ufunc(ufunc, (arr(self),), o, compute_dtype(comp))

    def kernel_(self):
        pw.INPLACE[name].meta_rule(self)
        comp, _ = promoted_dtype(kind, self)
        self._ver.value += 1
        return run_ufunc(ufunc, (arr(self),), self, compute_dtype(comp))

    op.register("CPU", kernel)
    pw.INPLACE[name].register("CPU", kernel_)


def make_binary(name: str, ufunc):
    op = getattr(pw, name)
    kind, _, has_alpha = pw.BINARY[name]

    def compute(input, other, alpha, out: Tensor) -> Tensor:
        comp, _ = promoted_dtype(kind, input, other)
        c = compute_dtype(comp)
        b = operand(other, c)
        if alpha != 1:
            b = np.multiply(b, alpha, dtype=c)
        return run_ufunc(ufunc, (arr(input), b), out, c)

    def kernel(input, other, *, alpha=1, out=None):
        spec = op.meta_rule(input, other)
        return compute(input, other, alpha, new_output(spec.shape, spec.dtype, out, name))

    def kernel_(self, other, *, alpha=1):
        pw.INPLACE[name].meta_rule(self, other)
        self._ver.value += 1
        return compute(self, other, alpha, self)

    if not has_alpha:
        def kernel(input, other, *, out=None):  # noqa: F811
            spec = op.meta_rule(input, other)
            return compute(input, other, 1, new_output(spec.shape, spec.dtype, out, name))

        def kernel_(self, other):  # noqa: F811
            pw.INPLACE[name].meta_rule(self, other)
            self._ver.value += 1
            return compute(self, other, 1, self)

    op.register("CPU", kernel)
    pw.INPLACE[name].register("CPU", kernel_)


for _name, _ufunc in UNARY_UFUNCS.items():
    make_unary(_name, _ufunc)
for _name, _ufunc in BINARY_UFUNCS.items():
    make_binary(_name, _ufunc)
