"""Pointwise operators: one row per op in the tables below, plus the irregular ones by hand.

Every pointwise op broadcasts its tensor arguments and computes in the promoted dtype of its
``Promotion`` kind; each functional op ``f`` with a torch in-place twin gets ``f_``, whose
result must keep ``self``'s shape and be castable to its dtype. A row's ``cats`` are the dtype
categories its kernel computes in; others raise ``NotImplementedError`` naming the kernel, as
torch's dispatch macros do. Plans (``unary_plan``, ``binary_plan``, ...) return
``(shape, compute dtype, result dtype)``: Meta rules wrap them in a ``Spec`` and CPU kernels
call them directly, so validation is written once.

This file is over 800 lines because it declares ~90 operators with their aliases; the tables
keep each one to a row.
"""

from __future__ import annotations

import builtins
import cmath
import math
from collections.abc import Callable
from typing import NamedTuple

from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes, has_internal_overlap
from ember.ops._define import (
    TENSOR_METHODS,
    Spec,
    Tag,
    composite,
    derivative,
    operator,
    tensor_method,
)
from ember.ops._promotion import Promotion, promoted_dtype
from ember.ops.creation import zeros_like
from ember.tensor import Tensor, numpy_view

__all__: list[str] = []  # filled as ops are declared

P = Promotion
_B, _I, _F, _C = dt.BOOL, dt.INTEGRAL, dt.FLOATING, dt.COMPLEX
ANY = frozenset((_B, _I, _F))
NUM = frozenset((_I, _F))
FLT = frozenset((_F,))
BITS = frozenset((_B, _I))
INT = frozenset((_I,))
ALL = frozenset((_B, _I, _F, _C))  # complex too
NUMC = frozenset((_I, _F, _C))
_SCALARS = (bool, int, float, builtins.complex)

# Ops that refuse complex operands with their own torch message (others get the dispatch
# macro's "not implemented for 'ComplexFloat'"): name -> (exception, message).
COMPLEX_ERRORS = {
    "sign": (NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex "
                                  "numbers. Please use torch.sgn instead."),
    "floor": (NotImplementedError, "floor is not supported for complex inputs"),
    "ceil": (NotImplementedError, "ceil is not supported for complex inputs"),
    "trunc": (NotImplementedError, "trunc is not supported for complex inputs"),
    "relu": (NotImplementedError, "clamp is not supported for complex types"),
    "isposinf": (RuntimeError, "isposinf does not support complex inputs."),
    "isneginf": (RuntimeError, "isneginf does not support complex inputs."),
    "maximum": (RuntimeError, "maximum not implemented for complex tensors."),
    "minimum": (RuntimeError, "minimum not implemented for complex tensors."),
    "fmax": (RuntimeError, "fmax not implemented for complex tensors."),
    "fmin": (RuntimeError, "fmin not implemented for complex tensors."),
}

_TN = {d.name: d.scalar_name for d in dt.ALL_DTYPES}

_NEG_BOOL = ("Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
             "to invert a mask, use the `~` or `logical_not()` operator instead.")
_SUB_BOOL2 = ("Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
              "`^` or `logical_xor()` operator instead.")
_SUB_BOOL = ("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
             "trying to invert a mask, use the `~` or `logical_not()` operator instead.")


class Unary(NamedTuple):
    """A unary table row: promotion, accepted compute categories, in-place twin, doc."""

    kind: Promotion | str
    cats: frozenset
    inplace: bool
    doc: str
    bool_error: str | None = None  # RuntimeError text for bool input (else NotImplementedError)


class Binary(NamedTuple):
    """A binary table row: promotion, categories, which scalars torch accepts, alpha, doc."""

    kind: Promotion
    cats: frozenset
    scalar_other: bool
    scalar_self: bool
    inplace: bool
    doc: str
    alpha: bool = False


class Grad(NamedTuple):
    """A table row's derivative rule: ``rule(ctx, grad)`` and the tensors it reads."""

    save: tuple | dict  # a dict saves conditionally (NOTE [Conditional saves])
    rule: Callable


_LN2, _LN10 = math.log(2.0), math.log(10.0)
_TWO_OVER_SQRTPI, _SQRTPI_OVER_TWO = 2.0 / math.sqrt(math.pi), math.sqrt(math.pi) / 2.0

U = Unary
UNARY = {
    "neg": U(P.DEFAULT, NUMC, True, "Negation, ``-input``.", _NEG_BOOL),
    "abs": U(P.DEFAULT, NUMC, True, "Absolute value."),
    "sign": U(P.DEFAULT, ANY, True, "Sign: -1, 0 or 1 (0 for NaN, like torch)."),
    "exp": U(P.INT_TO_FLOAT, ALL, True, "Exponential, ``e**input``."),
    "exp2": U(P.INT_TO_FLOAT, ALL, True, "Base-2 exponential, ``2**input``."),
    "expm1": U(P.INT_TO_FLOAT, ALL, True, "``exp(input) - 1``, accurate near 0."),
    "log": U(P.INT_TO_FLOAT, ALL, True, "Natural logarithm."),
    "log2": U(P.INT_TO_FLOAT, ALL, True, "Base-2 logarithm."),
    "log10": U(P.INT_TO_FLOAT, ALL, True, "Base-10 logarithm."),
    "log1p": U(P.INT_TO_FLOAT, ALL, True, "``log(1 + input)``, accurate near 0."),
    "sqrt": U(P.INT_TO_FLOAT, ALL, True, "Square root."),
    "rsqrt": U(P.INT_TO_FLOAT, ALL, True, "Reciprocal square root ``1 / sqrt(input)``."),
    "square": U("square", ALL, True, "``input * input`` (bool becomes int64, as ``pow(x, 2)``)."),
    "reciprocal": U(P.INT_TO_FLOAT, ALL, True, "``1 / input``."),
    "sin": U(P.INT_TO_FLOAT, ALL, True, "Sine."),
    "cos": U(P.INT_TO_FLOAT, ALL, True, "Cosine."),
    "tan": U(P.INT_TO_FLOAT, ALL, True, "Tangent."),
    "asin": U(P.INT_TO_FLOAT, ALL, True, "Inverse sine."),
    "acos": U(P.INT_TO_FLOAT, ALL, True, "Inverse cosine."),
    "atan": U(P.INT_TO_FLOAT, ALL, True, "Inverse tangent."),
    "sinh": U(P.INT_TO_FLOAT, ALL, True, "Hyperbolic sine."),
    "cosh": U(P.INT_TO_FLOAT, ALL, True, "Hyperbolic cosine."),
    "tanh": U(P.INT_TO_FLOAT, ALL, True, "Hyperbolic tangent."),
    "asinh": U(P.INT_TO_FLOAT, ALL, True, "Inverse hyperbolic sine."),
    "acosh": U(P.INT_TO_FLOAT, ALL, True, "Inverse hyperbolic cosine."),
    "atanh": U(P.INT_TO_FLOAT, ALL, True, "Inverse hyperbolic tangent."),
    "sigmoid": U(P.INT_TO_FLOAT, ALL, True, "Logistic sigmoid ``1 / (1 + exp(-input))``."),
    "erf": U(P.INT_TO_FLOAT, ANY, True, "Gauss error function."),
    "erfc": U(P.INT_TO_FLOAT, ANY, True, "Complementary error function ``1 - erf(input)``."),
    "erfinv": U(P.INT_TO_FLOAT, ANY, True, "Inverse error function (±inf at ±1, NaN outside)."),
    "lgamma": U(P.INT_TO_FLOAT, ANY, True, "``log(|Gamma(input)|)``."),
    "digamma": U(P.INT_TO_FLOAT, ANY, True, "Logarithmic derivative of Gamma (-inf at 0)."),
    "floor": U(P.DEFAULT, NUM, True, "Largest integer not above ``input`` (ints unchanged)."),
    "ceil": U(P.DEFAULT, NUM, True, "Smallest integer not below ``input`` (ints unchanged)."),
    "trunc": U(P.DEFAULT, NUM, True, "Rounds toward zero (ints unchanged)."),
    "frac": U(P.DEFAULT, FLT, True, "Fractional part ``input - trunc(input)``."),
    "relu": U(P.DEFAULT, NUM, True, "Rectified linear unit ``max(input, 0)``.",
              "Boolean inputs not supported for relu"),
    "bitwise_not": U(P.DEFAULT, BITS, True, "Bitwise NOT (logical NOT for bool)."),
    "logical_not": U(P.ALWAYS_BOOL, ALL, True, "Elementwise ``not input`` (bool result)."),
    "isnan": U(P.ALWAYS_BOOL, ALL, False, "Whether each element is NaN."),
    "isinf": U(P.ALWAYS_BOOL, ALL, False, "Whether each element is +inf or -inf."),
    "isfinite": U(P.ALWAYS_BOOL, ALL, False, "Whether each element is finite."),
    "isposinf": U(P.ALWAYS_BOOL, ANY, False, "Whether each element is +inf."),
    "isneginf": U(P.ALWAYS_BOOL, ANY, False, "Whether each element is -inf."),
}

# Derivative rules of the unary rows, keyed like UNARY (NOTE [Recording an op]): each returns
# the gradient of ``self``; formulas follow torch's so that 0, inf and NaN inputs give torch's
# values. Rules that only need the output save "result" instead of ``self``.
_ZERO = Grad((), lambda c, g: zeros_like(g))  # piecewise constant: torch returns zeros
_SELF, _RESULT = ("self",), ("result",)
def _tanh_grad(g: Tensor, result: Tensor) -> Tensor:
    """``g * (1 - result * result)``, the saved output unpacked once."""
    return g * _cj(1 - result * result)


def _relu_grad(grad: Tensor, result: Tensor) -> Tensor:
    """ReLU's gradient as the fused ``threshold_backward(grad, result, 0)`` (declared in
    ember.ops.nn_ops, which imports this module: hence the import here)."""
    from ember.ops.nn_ops import threshold_backward

    return threshold_backward(grad, result, 0)


def _cj(t: Tensor) -> Tensor:
    """The conjugate of a complex tensor, else ``t`` itself.

    NOTE [Complex gradients]
    torch's convention: a complex input's gradient is the conjugate Wirtinger derivative of a
    real loss, so for a holomorphic ``f`` the rule is ``grad * conj(f'(z))``. Each rule below
    writes its derivative factor ``d`` as ``_cj(d)``: nothing changes for real tensors (one
    attribute read), and complex ones get torch's values.
    """
    return t.conj() if t._dtype.is_complex else t


def _sgn(z: Tensor) -> Tensor:
    """``z / |z|`` of a complex tensor, 0 where ``z == 0`` (torch.sgn)."""
    a = z.abs()
    return where(a == 0, 0.0, z / where(a == 0, 1.0, a))


def _acosh_factor(x: Tensor) -> Tensor:
    """torch's acosh derivative: ``(x^2 - 1)^-1/2`` for reals (finite below -1 too), and
    ``conj((x + 1)^-1/2 (x - 1)^-1/2)`` for complex (the principal branches)."""
    if x._dtype.is_complex:
        return ((x + 1).rsqrt() * (x - 1).rsqrt()).conj()
    return (x * x - 1).rsqrt()


def _abs_grad(g: Tensor, x: Tensor) -> Tensor:
    return g * (_sgn(x) if x._dtype.is_complex else x.sign())


UNARY_GRADS = {
    "neg": Grad((), lambda c, g: -g),
    "abs": Grad(_SELF, lambda c, g: _abs_grad(g, c.self)),
    "sign": _ZERO,
    "exp": Grad(_RESULT, lambda c, g: g * _cj(c.result)),
    "exp2": Grad(_RESULT, lambda c, g: g * _cj(c.result * _LN2)),
    "expm1": Grad(_RESULT, lambda c, g: g * _cj(c.result + 1)),
    "log": Grad(_SELF, lambda c, g: g / _cj(c.self)),
    "log2": Grad(_SELF, lambda c, g: g / _cj(c.self * _LN2)),
    "log10": Grad(_SELF, lambda c, g: g / _cj(c.self * _LN10)),
    "log1p": Grad(_SELF, lambda c, g: g / _cj(c.self + 1)),
    "sqrt": Grad(_RESULT, lambda c, g: g / _cj(c.result * 2)),
    "rsqrt": Grad(_RESULT, lambda c, g: g * _cj(c.result.pow(3) * -0.5)),
    "square": Grad(_SELF, lambda c, g: g * _cj(c.self * 2)),
    "reciprocal": Grad(_RESULT, lambda c, g: -g * _cj(c.result * c.result)),
    "sin": Grad(_SELF, lambda c, g: g * _cj(c.self.cos())),
    "cos": Grad(_SELF, lambda c, g: g * -_cj(c.self.sin())),
    "tan": Grad(_RESULT, lambda c, g: g * _cj(c.result * c.result + 1)),
    "asin": Grad(_SELF, lambda c, g: g * _cj((1 - c.self * c.self).rsqrt())),
    "acos": Grad(_SELF, lambda c, g: -g * _cj((1 - c.self * c.self).rsqrt())),
    "atan": Grad(_SELF, lambda c, g: g / _cj(c.self * c.self + 1)),
    "sinh": Grad(_SELF, lambda c, g: g * _cj(c.self.cosh())),
    "cosh": Grad(_SELF, lambda c, g: g * _cj(c.self.sinh())),
    "tanh": Grad(_RESULT, lambda c, g: _tanh_grad(g, c.result)),
    "asinh": Grad(_SELF, lambda c, g: g * _cj((c.self * c.self + 1).rsqrt())),
    "acosh": Grad(_SELF, lambda c, g: g * _acosh_factor(c.self)),
    "atanh": Grad(_SELF, lambda c, g: g / _cj(1 - c.self * c.self)),
    "sigmoid": Grad(_RESULT, lambda c, g: g * _cj((1 - c.result) * c.result)),
    "erf": Grad(_SELF, lambda c, g: g * (-(c.self * c.self)).exp() * _TWO_OVER_SQRTPI),
    "erfc": Grad(_SELF, lambda c, g: g * (-(c.self * c.self)).exp() * -_TWO_OVER_SQRTPI),
    "erfinv": Grad(_RESULT, lambda c, g: g * (c.result * c.result).exp() * _SQRTPI_OVER_TWO),
    "lgamma": Grad(_SELF, lambda c, g: g * c.self.digamma()),
    "digamma": Grad(_SELF, lambda c, g: g * _trigamma(c.self)),
    "floor": _ZERO,
    "ceil": _ZERO,
    "trunc": _ZERO,
    "frac": Grad((), lambda c, g: g),
    "relu": Grad(_RESULT, lambda c, g: _relu_grad(g, c.result)),
    "logical_not_": _ZERO,  # in-place twin only: writes 0/1 floats into a float ``self``
}  # bitwise_not, logical_not and the is* tests have integer/bool results: no rule

Bn = Binary
BINARY = {
    "add": Bn(P.DEFAULT, ALL, True, True, True,
              "Adds ``other`` (scaled by ``alpha``) to ``input``.", alpha=True),
    "sub": Bn(P.DEFAULT, ALL, True, True, True,
              "Subtracts ``other`` (scaled by ``alpha``) from ``input``.", alpha=True),
    "mul": Bn(P.DEFAULT, ALL, True, True, True, "Multiplies ``input`` by ``other``."),
    "floor_divide": Bn(P.DEFAULT, NUM, True, True, True,
                       "Division rounded toward -inf (ints stay ints; ZeroDivisionError on 0)."),
    "remainder": Bn(P.DEFAULT, NUM, True, True, True,
                    "Python-style modulus: the result has the sign of ``other``."),
    "fmod": Bn(P.DEFAULT, NUM, True, False, True,
               "C-style remainder: the result has the sign of ``input``."),
    "pow": Bn(P.DEFAULT, ALL, True, True, True,
              "``input ** exponent``; either side may be a scalar."),
    "atan2": Bn(P.INT_TO_FLOAT, ANY, False, False, True,
                "Quadrant-aware ``atan(input / other)``."),
    "maximum": Bn(P.DEFAULT, ANY, False, False, False, "Elementwise maximum (NaN propagates)."),
    "minimum": Bn(P.DEFAULT, ANY, False, False, False, "Elementwise minimum (NaN propagates)."),
    "fmax": Bn(P.DEFAULT, ANY, False, False, False, "Elementwise maximum ignoring NaN."),
    "fmin": Bn(P.DEFAULT, ANY, False, False, False, "Elementwise minimum ignoring NaN."),
    "hypot": Bn(P.DEFAULT, FLT, False, False, True, "``sqrt(input**2 + other**2)``."),
    "copysign": Bn(P.INT_TO_FLOAT, ANY, True, False, True,
                   "Magnitude of ``input`` with the sign of ``other``."),
    "eq": Bn(P.ALWAYS_BOOL, ALL, True, False, True, "Elementwise ``input == other``."),
    "ne": Bn(P.ALWAYS_BOOL, ALL, True, False, True, "Elementwise ``input != other``."),
    "lt": Bn(P.ALWAYS_BOOL, ANY, True, False, True, "Elementwise ``input < other``."),
    "le": Bn(P.ALWAYS_BOOL, ANY, True, False, True, "Elementwise ``input <= other``."),
    "gt": Bn(P.ALWAYS_BOOL, ANY, True, False, True, "Elementwise ``input > other``."),
    "ge": Bn(P.ALWAYS_BOOL, ANY, True, False, True, "Elementwise ``input >= other``."),
    "logical_and": Bn(P.ALWAYS_BOOL, ALL, False, False, True, "Elementwise logical AND."),
    "logical_or": Bn(P.ALWAYS_BOOL, ALL, False, False, True, "Elementwise logical OR."),
    "logical_xor": Bn(P.ALWAYS_BOOL, ALL, False, False, True, "Elementwise logical XOR."),
    "bitwise_and": Bn(P.DEFAULT, BITS, True, True, True, "Bitwise AND (ints and bool)."),
    "bitwise_or": Bn(P.DEFAULT, BITS, True, True, True, "Bitwise OR (ints and bool)."),
    "bitwise_xor": Bn(P.DEFAULT, BITS, True, True, True, "Bitwise XOR (ints and bool)."),
    "bitwise_left_shift": Bn(P.DEFAULT, INT, True, True, True,
                             "``input << other`` (0 when shifting by >= the bit width)."),
    "bitwise_right_shift": Bn(P.DEFAULT, INT, True, True, True,
                              "Arithmetic ``input >> other``."),
}

# Derivative rules of the binary rows, keyed like BINARY. Either operand may be a Python
# scalar (no gradient); ``_grads`` returns one gradient per tensor operand and evaluates only
# those that are needed. In-place twins bind their arguments by the functional signature, so
# ``ctx.input`` is ``self`` there too.
_IO = ("input", "other")
BINARY_GRADS = {
    "add": Grad((), lambda c, g: _add_grad(c, g, False)),
    "sub": Grad((), lambda c, g: _add_grad(c, g, True)),
    # each operand is saved only for the other's gradient, as torch (``w * 2.0`` saves none)
    "mul": Grad({"input": "other", "other": "input"}, lambda c, g: _mul_grad(c, g)),
    # floor_divide has no rule: torch has no formula for it and its backward refuses.
    "remainder": Grad(_IO, lambda c, g: _remainder_grad(c, g)),
    "fmod": Grad(_IO, lambda c, g: _grads(c, lambda: g, lambda: -g * div(
        c.input, c.other, rounding_mode="trunc"))),
    "pow": Grad(_IO, lambda c, g: _grads(c, lambda: _pow_base_grad(g, c.input, c.other),
                                         lambda: _pow_exponent_grad(g, c.input, c.other))),
    "atan2": Grad(_IO, lambda c, g: _atan2_grad(c, g)),
    "maximum": Grad(_IO, lambda c, g: _extremum_grad(c, g, True)),
    "minimum": Grad(_IO, lambda c, g: _extremum_grad(c, g, False)),
    "fmax": Grad(_IO, lambda c, g: _fextremum_grad(c, g, c.input >= c.other)),
    "fmin": Grad(_IO, lambda c, g: _fextremum_grad(c, g, c.input <= c.other)),
    "hypot": Grad(_IO, lambda c, g: _hypot_grad(c, g)),
    "copysign": Grad(("input", "result"), lambda c, g: _grads(
        c, lambda: g * where(c.input == 0, 0.0, c.result / c.input),
        lambda: zeros_like(g))),
}  # comparisons, logical_* and bitwise_* have integer/bool results: no rule
# ... but their in-place twins on a float tensor write 0/1 floats, with zero gradients (torch
# records EqBackward1 etc. for eq_..ge_). A key ending in "_" applies to the in-place twin only.
_ZERO2 = Grad((), lambda c, g: _grads(c, lambda: zeros_like(g), lambda: zeros_like(g)))
BINARY_GRADS.update({f"{n}_": _ZERO2 for n in ("eq", "ne", "lt", "le", "gt", "ge", "logical_and",
                                                "logical_or", "logical_xor")})

# functional op name -> its in-place twin (filled as the tables are declared)
INPLACE: dict[str, object] = {}


# Docstring examples of the table rows: name -> (input data, further arguments, printed result,
# printed ``input`` after the in-place twin when that differs). Inputs are chosen so that the
# printout (4 decimals) is the same on every CPU: no result is a rounding tie or a near-zero.
_EXAMPLES = {
    "neg": ("[-1.5, 2.0]", "", "tensor([ 1.5000, -2.0000])"),
    "abs": ("[-1.5, 2.0]", "", "tensor([1.5000, 2.0000])"),
    "sign": ("[-3.0, 0.0, 2.5]", "", "tensor([-1.,  0.,  1.])"),
    "exp": ("[0.0, 1.0]", "", "tensor([1.0000, 2.7183])"),
    "exp2": ("[0.0, 0.5]", "", "tensor([1.0000, 1.4142])"),
    "expm1": ("[0.0, 1.0]", "", "tensor([0.0000, 1.7183])"),
    "log": ("[0.5, 2.0]", "", "tensor([-0.6931,  0.6931])"),
    "log2": ("[0.5, 3.0]", "", "tensor([-1.0000,  1.5850])"),
    "log10": ("[0.5, 2.0]", "", "tensor([-0.3010,  0.3010])"),
    "log1p": ("[0.0, 1.0]", "", "tensor([0.0000, 0.6931])"),
    "sqrt": ("[4.0, 2.0]", "", "tensor([2.0000, 1.4142])"),
    "rsqrt": ("[4.0, 0.25]", "", "tensor([0.5000, 2.0000])"),
    "square": ("[-1.5, 2.0]", "", "tensor([2.2500, 4.0000])"),
    "reciprocal": ("[4.0, -0.5]", "", "tensor([ 0.2500, -2.0000])"),
    "sin": ("[0.0, 1.0]", "", "tensor([0.0000, 0.8415])"),
    "cos": ("[0.0, 1.0]", "", "tensor([1.0000, 0.5403])"),
    "tan": ("[0.0, 1.0]", "", "tensor([0.0000, 1.5574])"),
    "asin": ("[0.0, 1.0]", "", "tensor([0.0000, 1.5708])"),
    "acos": ("[0.5, 0.0]", "", "tensor([1.0472, 1.5708])"),
    "atan": ("[0.0, 1.0]", "", "tensor([0.0000, 0.7854])"),
    "sinh": ("[0.0, 1.0]", "", "tensor([0.0000, 1.1752])"),
    "cosh": ("[0.0, 1.0]", "", "tensor([1.0000, 1.5431])"),
    "tanh": ("[0.0, 1.0]", "", "tensor([0.0000, 0.7616])"),
    "asinh": ("[0.0, 1.0]", "", "tensor([0.0000, 0.8814])"),
    "acosh": ("[2.0, 3.0]", "", "tensor([1.3170, 1.7627])"),
    "atanh": ("[0.0, 0.5]", "", "tensor([0.0000, 0.5493])"),
    "sigmoid": ("[0.0, 2.0]", "", "tensor([0.5000, 0.8808])"),
    "erf": ("[0.0, 1.0]", "", "tensor([0.0000, 0.8427])"),
    "erfc": ("[0.0, 1.0]", "", "tensor([1.0000, 0.1573])"),
    "erfinv": ("[-0.5, 0.5]", "", "tensor([-0.4769,  0.4769])"),
    "lgamma": ("[0.5, 3.0]", "", "tensor([0.5724, 0.6931])"),
    "digamma": ("[1.0, 2.0]", "", "tensor([-0.5772,  0.4228])"),
    "floor": ("[-1.5, 2.5]", "", "tensor([-2.,  2.])"),
    "ceil": ("[-1.5, 2.5]", "", "tensor([-1.,  3.])"),
    "trunc": ("[-1.5, 2.5]", "", "tensor([-1.,  2.])"),
    "frac": ("[-1.5, 2.25]", "", "tensor([-0.5000,  0.2500])"),
    "relu": ("[-1.0, 2.0]", "", "tensor([0., 2.])"),
    "bitwise_not": ("[0, 5]", "", "tensor([-1, -6])"),
    "logical_not": ("[0.0, 2.0]", "", "tensor([ True, False])", "tensor([1., 0.])"),
    "isnan": ("[1.0, float('inf'), float('nan')]", "", "tensor([False, False,  True])"),
    "isinf": ("[1.0, float('inf'), float('nan')]", "", "tensor([False,  True, False])"),
    "isfinite": ("[1.0, float('inf'), float('nan')]", "", "tensor([ True, False, False])"),
    "isposinf": ("[1.0, float('inf'), float('-inf')]", "", "tensor([False,  True, False])"),
    "isneginf": ("[1.0, float('inf'), float('-inf')]", "", "tensor([False, False,  True])"),
    "add": ("[1, 2]", ", ember.tensor([10, 20]), alpha=2", "tensor([21, 42])"),
    "sub": ("[5, 7]", ", ember.tensor([1, 2])", "tensor([4, 5])"),
    "mul": ("[1.5, 2.0]", ", 2", "tensor([3., 4.])"),
    "floor_divide": ("[7, -7]", ", 2", "tensor([ 3, -4])"),
    "remainder": ("[7, -7]", ", 3", "tensor([1, 2])"),
    "fmod": ("[7, -7]", ", 3", "tensor([ 1, -1])"),
    "pow": ("[2.0, 3.0]", ", 2", "tensor([4., 9.])"),
    "atan2": ("[1.0, -1.0]", ", ember.tensor([1.0, 1.0])", "tensor([ 0.7854, -0.7854])"),
    "maximum": ("[1, 5]", ", ember.tensor([3, 2])", "tensor([3, 5])"),
    "minimum": ("[1, 5]", ", ember.tensor([3, 2])", "tensor([1, 2])"),
    "fmax": ("[float('nan'), 1.0]", ", ember.tensor([2.0, float('nan')])", "tensor([2., 1.])"),
    "fmin": ("[float('nan'), 1.0]", ", ember.tensor([2.0, float('nan')])", "tensor([2., 1.])"),
    "hypot": ("[3.0, 5.0]", ", ember.tensor([4.0, 12.0])", "tensor([ 5., 13.])"),
    "copysign": ("[1.5, 2.0]", ", ember.tensor([-1.0, 1.0])", "tensor([-1.5000,  2.0000])"),
    "eq": ("[1, 2, 3]", ", ember.tensor([1, 0, 3])", "tensor([ True, False,  True])",
           "tensor([1, 0, 1])"),
    "ne": ("[1, 2, 3]", ", ember.tensor([1, 0, 3])", "tensor([False,  True, False])",
           "tensor([0, 1, 0])"),
    "lt": ("[1, 2, 3]", ", 2", "tensor([ True, False, False])", "tensor([1, 0, 0])"),
    "le": ("[1, 2, 3]", ", 2", "tensor([ True,  True, False])", "tensor([1, 1, 0])"),
    "gt": ("[1, 2, 3]", ", 2", "tensor([False, False,  True])", "tensor([0, 0, 1])"),
    "ge": ("[1, 2, 3]", ", 2", "tensor([False,  True,  True])", "tensor([0, 1, 1])"),
    "logical_and": ("[True, True, False]", ", ember.tensor([True, False, False])",
                    "tensor([ True, False, False])"),
    "logical_or": ("[True, True, False]", ", ember.tensor([True, False, False])",
                   "tensor([ True,  True, False])"),
    "logical_xor": ("[True, True, False]", ", ember.tensor([True, False, False])",
                    "tensor([False,  True, False])"),
    "bitwise_and": ("[12, 10]", ", 6", "tensor([4, 2])"),
    "bitwise_or": ("[12, 10]", ", 6", "tensor([14, 14])"),
    "bitwise_xor": ("[12, 10]", ", 6", "tensor([10, 12])"),
    "bitwise_left_shift": ("[1, 3]", ", 2", "tensor([ 4, 12])"),
    "bitwise_right_shift": ("[-8, 16]", ", 2", "tensor([-2,  4])"),
}


def _example(name: str, inplace: bool = False) -> str:
    """The ``Example:`` section of a table op's docstring (of its in-place twin if asked)."""
    row = _EXAMPLES.get(name)
    if row is None:
        return ""
    data, rest, result = row[:3]
    if not inplace:
        return f"""
    Example:
        >>> ember.{name}(ember.tensor({data}){rest})
        {result}
    """
    return f"""

    Example:
        >>> x = ember.tensor({data})
        >>> ember.{name}_(x{rest}) is x
        True
        >>> x
        {row[3] if len(row) > 3 else result}
    """


# -- validation helpers -----------------------------------------------------------------------
def not_implemented(kernel: str, d: dt.DType) -> NotImplementedError:
    """torch's "not implemented for 'Bool'" error for a kernel that lacks dtype ``d``."""
    return NotImplementedError(f'"{kernel}" not implemented for \'{_TN[d.name]}\'')


def _type_error(op: str, arg: str, pos: int, value) -> TypeError:
    return TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not "
                     f"{type(value).__name__}")


def _check_scalar(op: str, arg: str, pos: int, value) -> None:
    if not isinstance(value, _SCALARS):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor or Number, "
                        f"not {type(value).__name__}")


def check_writable(t: Tensor) -> None:
    """RuntimeError when several elements of ``t`` share memory (an expanded tensor)."""
    if has_internal_overlap(t._shape, t._stride) and 0 not in t._shape:
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")


def check_inplace(self: Tensor, shape: tuple, result: dt.DType) -> None:
    """An in-place result must be writable, keep ``self``'s shape and cast to its dtype."""
    check_writable(self)
    if shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    if not dt.can_cast(result, self._dtype):
        raise RuntimeError(f"result type {_TN[result.name]} can't be cast to the desired "
                           f"output type {_TN[self._dtype.name]}")


# How an op treats ``out=``'s dtype: castable (default), exactly the result's, bool only, or
# no ``out`` argument at all (torch's structured kernels differ here).
OUT_RULES = {"neg": "exact", "abs": "exact", "sign": "exact", "floor": "exact",
             "ceil": "exact", "trunc": "exact", "frac": "exact", "bitwise_not": "exact",
             "round": "exact", "clamp_scalar": "exact", "nan_to_num": "exact",
             "where": "exact", "relu": "none", "isnan": "none", "isinf": "none",
             "isfinite": "none", "isposinf": "bool", "isneginf": "bool"}


def check_out(out, shape: tuple, result: dt.DType, name: str = "") -> None:
    """``out=`` must be a tensor the result can be cast to (its shape is resized)."""
    if not isinstance(out, Tensor):
        raise TypeError(f"argument 'out' must be Tensor, not {type(out).__name__}")
    rule = OUT_RULES.get(name)
    if rule is not None and out._dtype is not result:
        if rule == "exact":
            raise RuntimeError(f"Found dtype {_TN[out._dtype.name]} but expected "
                               f"{_TN[result.name]}")
        if rule == "bool":
            raise RuntimeError(f"{name} does not support non-boolean outputs.")
    if not dt.can_cast(result, out._dtype):
        raise RuntimeError(f"result type {_TN[result.name]} can't be cast to the desired "
                           f"output type {_TN[out._dtype.name]}")


def _spec(plan: tuple, out, name: str = "") -> Spec:
    if out is not None:
        check_out(out, plan[0], plan[2], name)
    return Spec(plan[0], plan[2])


def inplace_spec(name: str, self: Tensor, spec: Spec) -> Spec:
    """Check that an in-place op's result fits ``self``: same shape, castable dtype."""
    check_inplace(self, spec.shape, spec.dtype)
    return Spec(self._shape, self._dtype)


# -- plans: (shape, compute dtype, result dtype) ----------------------------------------------
def unary_plan(name: str, row: Unary, self) -> tuple:
    """Validate a unary op's input; return its (shape, compute, result) dtypes."""
    if not isinstance(self, Tensor):
        raise _type_error(name, "input", 1, self)
    if row.kind == "square":
        comp, res = promoted_dtype(P.DEFAULT, self, 2)
    else:
        comp, res = promoted_dtype(row.kind, self)
    if comp.category not in row.cats:
        if row.bool_error and comp is dt.bool_:
            raise RuntimeError(row.bool_error)
        raise _refused(name, comp)
    if name == "abs" and comp.category == _C:
        return self._shape, comp, comp.to_real()
    return self._shape, comp, res


def _refused(name: str, comp: dt.DType) -> Exception:
    """The error for an op whose kernel lacks the compute dtype ``comp``."""
    if comp.category == _C and name in COMPLEX_ERRORS:
        exc, message = COMPLEX_ERRORS[name]
        return exc(message)
    return not_implemented(f"{name}_cpu", comp)


def unary_spec(kind: Promotion, self: Tensor) -> Spec:
    """Spec of a unary pointwise op of promotion ``kind`` on ``self`` (no dtype checks)."""
    return Spec(self._shape, promoted_dtype(kind, self)[1])


def binary_plan(name: str, row: Binary, input, other) -> tuple:
    """Validate a binary op's operands (tensor or scalar, per ``row``); return its plan."""
    if isinstance(input, Tensor):
        if isinstance(other, Tensor):
            shape = input._shape if input._shape == other._shape else \
                broadcast_shapes(input._shape, other._shape)
        else:
            if not row.scalar_other:
                raise _type_error(name, "other", 2, other)
            _check_scalar(name, "other", 2, other)
            shape = input._shape
    elif isinstance(other, Tensor) and row.scalar_self:
        _check_scalar(name, "self", 1, input)
        shape = other._shape
    else:
        raise _type_error(name, "input", 1, input)
    comp, res = promoted_dtype(row.kind, input, other)
    if comp.category not in row.cats:
        raise _refused(name, comp)
    if comp is dt.complex32:  # only a complex32 tensor operand routes the op to its kernels
        raise NotImplementedError(
            f"{name}: a float16 tensor with a complex Python scalar gives complex32, which "
            "ember computes only when a complex32 tensor is an operand\nhint: convert the "
            "tensor first, e.g. x.to(ember.complex32)")
    check = _BINARY_CHECKS.get(name)
    if check is not None:
        check(input, other, comp)
    return shape, comp, res


def binary_spec(kind: Promotion, input, other) -> Spec:
    """Spec of a binary pointwise op: broadcast shape, promoted dtype (no dtype checks)."""
    if not isinstance(input, Tensor):
        raise _type_error("binary op", "input", 1, input)
    shape = broadcast_shapes(input._shape, other._shape) if isinstance(other, Tensor) \
        else input._shape
    return Spec(shape, promoted_dtype(kind, input, other)[1])


def _is_bool(x) -> bool:
    return x._dtype is dt.bool_ if isinstance(x, Tensor) else isinstance(x, bool)


def _check_sub(input, other, comp) -> None:
    if _is_bool(input) and _is_bool(other):
        raise RuntimeError(_SUB_BOOL2)
    if _is_bool(input) or _is_bool(other):
        raise RuntimeError(_SUB_BOOL)


def _check_pow(input, other, comp) -> None:
    if comp is dt.bool_ and (isinstance(other, Tensor) or not isinstance(input, Tensor)):
        raise not_implemented("pow", comp)
    if comp.category == _I and not isinstance(other, Tensor | bool) and \
            isinstance(other, int) and other < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")


_BINARY_CHECKS = {"sub": _check_sub, "pow": _check_pow}


def check_alpha(alpha, result: dt.DType) -> None:
    """torch's rules for ``alpha`` of add/sub: no bool alpha for non-bool, no float for ints."""
    if isinstance(alpha, bool):
        if result is not dt.bool_:
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
    elif isinstance(alpha, builtins.complex):
        if result.category != _C:
            raise RuntimeError("For non-complex input tensors, argument alpha must not be a "
                               "complex number.")
    elif isinstance(alpha, float) and result.category < _F:
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating "
                           "point number.")
    elif not isinstance(alpha, int | float):
        raise TypeError(f"alpha must be a Number, not {type(alpha).__name__}")


# -- derivative helpers -----------------------------------------------------------------------
def _is_tensor_arg(ctx, name: str) -> bool:
    try:
        ctx.shape_of(name)
    except KeyError:
        return False
    return True


def _grads(ctx, *thunks, names=_IO) -> tuple:
    """One gradient per tensor argument among ``names`` (Python scalars get none).

    ``thunks[i]()`` computes the gradient of ``names[i]``; it runs only when that input
    needs a gradient (None otherwise), so e.g. ``log`` of a base is never taken needlessly.
    """
    needs = ctx.needs_input_grad
    out = []
    for name, thunk in zip(names, thunks):
        if _is_tensor_arg(ctx, name):
            out.append(thunk() if needs[len(out)] else None)
    return tuple(out)


def _pair(needs: tuple, grad_input, grad_other) -> tuple:
    """What ``_grads`` returns for ``(input, other)`` given ``ctx.tensor_needs(*_IO)`` and the
    two gradients (computed only where needed by the caller)."""
    ni, no = needs
    if ni is None:
        return (grad_other,)
    if no is None:
        return (grad_input,)
    return (grad_input, grad_other)


def _add_grad(c, g: Tensor, negate: bool) -> tuple:
    """add/sub: ``g`` for ``input``, ``(-)g * alpha`` for ``other`` (each only when needed)."""
    needs = c.tensor_needs("input", "other")
    return _pair(needs, g if needs[0] else None,
                 _scale(-g if negate else g, c.alpha) if needs[1] else None)


def _mul_grad(c, g: Tensor) -> tuple:
    """mul: ``g * other`` for ``input``, ``g * input`` for ``other`` (each only when needed)."""
    needs = c.tensor_needs("input", "other")
    return _pair(needs, g * _cj_any(c.other) if needs[0] else None,
                 g * _cj_any(c.input) if needs[1] else None)


def _cj_any(x):
    """:func:`_cj` of a tensor or a Python scalar operand."""
    if isinstance(x, Tensor):
        return x.conj() if x._dtype.is_complex else x
    return x.conjugate() if isinstance(x, builtins.complex) else x


def _scale(g: Tensor, factor) -> Tensor:
    return g if factor == 1 else g * _cj_any(factor)


def _derive(op, op_=None, *, save=()):
    """Register the decorated rule for ``op`` and for its in-place twin ``op_``.

    The twin binds its arguments by ``op``'s signature, so one rule reads ``ctx.input`` for
    both (the in-place ``self`` is cloned before the op when saved).
    """

    def deco(rule: Callable) -> Callable:
        derivative(op, save=save)(rule)
        if op_ is not None:
            derivative(op_, save=save, signature=op.meta_rule)(rule)
        return rule

    return deco


def _pow_base_grad(g: Tensor, base: Tensor, exponent) -> Tensor:
    """d/dbase of ``base ** exponent``: ``exponent * base ** (exponent - 1)``, 0 where the
    exponent is 0 (so ``d/dx x**0 = 0`` even at ``x = 0``, as torch)."""
    if not isinstance(exponent, Tensor):
        if exponent == 0:
            return zeros_like(g)
        return g * _cj_any(exponent * base.pow(exponent - 1))
    # a bool exponent tensor makes ``exponent - 1`` raise, as in torch's backward
    return where(exponent == 0, 0.0, g * _cj_any(exponent * base.pow(exponent - 1)))


def _remainder_grad(ctx, g: Tensor) -> tuple:
    a = ctx.input
    if not isinstance(a, Tensor):  # torch's remainder(Scalar, Tensor) has no formula
        raise RuntimeError("derivative for aten::remainder is not implemented")
    return _grads(ctx, lambda: g, lambda: -g * a.div(ctx.other, rounding_mode="floor"))


def _scalar_log(x) -> float:
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _pow_exponent_grad(g: Tensor, base, exponent: Tensor) -> Tensor:
    """d/dexponent of ``base ** exponent``: ``result * log(base)``, 0 where ``base == 0`` and
    ``exponent >= 0`` (torch's masking; negative bases give NaN)."""
    result = base ** exponent
    if isinstance(base, Tensor):
        if base._dtype.is_complex or exponent._dtype.is_complex:  # torch: 0 where base == 0
            log = base.to(result._dtype).log()  # a real base's log in complex: -2 has one
            return g * _cj_any(where(base == 0, 0.0, result * log))
        return g * where((base == 0) & (exponent >= 0), 0.0, result * base.log())
    if isinstance(base, builtins.complex) or exponent._dtype.is_complex:
        log = cmath.log(base) if base != 0 else 0.0
        return g * _cj_any(result * log)
    if base == 0:
        return g * where(exponent >= 0, 0.0, result * -math.inf)
    return g * (result * _scalar_log(base))


def _atan2_grad(ctx, g: Tensor) -> tuple:
    a, b = ctx.input, ctx.other
    denom = a * a + b * b
    recip = where(denom == 0, 0.0, denom.reciprocal())  # torch: 0 at (0, 0), not NaN
    return _grads(ctx, lambda: g * b * recip, lambda: g * -a * recip)


def _extremum_grad(ctx, g: Tensor, maximum: bool) -> tuple:
    """maximum/minimum: the winner gets ``g``, ties split it half/half (NaN: both get it)."""
    a, b = ctx.input, ctx.other
    shared = where(a == b, g / 2, g)
    input_loses, other_loses = (a < b, a > b) if maximum else (a > b, a < b)
    return _grads(ctx, lambda: where(input_loses, 0.0, shared),
                  lambda: where(other_loses, 0.0, shared))


def _fextremum_grad(ctx, g: Tensor, input_wins: Tensor) -> tuple:
    """fmax/fmin: ``input`` gets ``g`` where it wins or ``other`` is NaN, ``other`` elsewhere."""
    to_input = input_wins | ctx.other.isnan()
    return _grads(ctx, lambda: where(to_input, g, 0.0), lambda: where(to_input, 0.0, g))


def _hypot_grad(ctx, g: Tensor) -> tuple:
    a, b = ctx.input, ctx.other
    result = a.hypot(b)
    return _grads(ctx, lambda: g * a / result, lambda: g * b / result)


# -- declaring the tables ---------------------------------------------------------------------
def _export(name: str, fn) -> None:
    globals()[name] = fn
    __all__.append(name)


def _declare_unary(name: str, row: Unary):
    def rule(self, *, out=None):
        return _spec(unary_plan(name, row, self), out, name)

    if OUT_RULES.get(name) == "none":
        def rule(self):  # noqa: F811
            return _spec(unary_plan(name, row, self), None)

    rule.__doc__ = f"""{row.doc}

    Args:
        input: a tensor. out: optional output tensor (resized; result dtype must cast to it).

    Shape: same as ``input``. Dtypes follow ``torch.{name}``.
    """ + _example(name)
    out_arg = "" if OUT_RULES.get(name) == "none" else ", *, Tensor(a!)? out=None"
    op = operator(f"{name}(Tensor self{out_arg}) -> Tensor", (Tag.pointwise,))(rule)
    _export(name, op)
    if row.inplace:
        def rule_(self):
            shape, comp, res = unary_plan(name, row, self)
            if name == "abs" and comp.is_complex:  # |z| is real: it cannot stay in place
                raise RuntimeError("In-place abs is not supported for complex tensors.")
            check_inplace(self, shape, res)
            return Spec(self._shape, self._dtype)

        rule_.__doc__ = (f"In-place :func:`{name}`; bumps ``self``'s version once."
                         + _example(name, inplace=True))
        op_ = operator(f"{name}_(Tensor(a!) self) -> Tensor(a!)",
                       (Tag.pointwise, Tag.inplace))(rule_)
        INPLACE[name] = op_
        _export(name + "_", op_)
    _register_grads(UNARY_GRADS, name, op, row.inplace)


def _declare_binary(name: str, row: Binary):
    if row.alpha:
        def rule(input, other, *, alpha=1, out=None):
            plan = binary_plan(name, row, input, other)
            check_alpha(alpha, plan[2])
            return _spec(plan, out)

        def rule_(self, other, *, alpha=1):
            shape, _, res = binary_plan(name, row, self, other)
            check_alpha(alpha, res)
            check_inplace(self, shape, res)
            return Spec(self._shape, self._dtype)
    else:
        def rule(input, other, *, out=None):
            return _spec(binary_plan(name, row, input, other), out)

        def rule_(self, other):
            shape, _, res = binary_plan(name, row, self, other)
            check_inplace(self, shape, res)
            return Spec(self._shape, self._dtype)

    extra = ", Scalar alpha=1" if row.alpha else ""
    rule.__doc__ = f"""{row.doc}

    Args:
        input, other: tensors{' or Python scalars' if row.scalar_other else ''}, broadcast
            together. out: optional output tensor.

    Shape: the broadcast of ``input`` and ``other``. Dtypes follow ``torch.{name}``.
    """ + _example(name)
    rule_.__doc__ = (f"In-place :func:`{name}`; bumps ``self``'s version once."
                     + _example(name, inplace=True))
    op = operator(f"{name}.Tensor(Tensor self, Tensor other, *{extra}, Tensor(a!)? out=None) "
                  "-> Tensor", (Tag.pointwise,))(rule)
    _export(name, op)
    if row.inplace:
        op_ = operator(f"{name}_.Tensor(Tensor(a!) self, Tensor other, *{extra}) -> Tensor(a!)",
                       (Tag.pointwise, Tag.inplace))(rule_)
        INPLACE[name] = op_
        _export(name + "_", op_)
    _register_grads(BINARY_GRADS, name, op, row.inplace)


def _register_grads(table: dict, name: str, op, inplace: bool) -> None:
    """Register a table row's derivative rule for the op and its in-place twin."""
    grad = table.get(name)
    if grad is not None:
        _derive(op, INPLACE[name] if inplace else None, save=grad.save)(grad.rule)
    grad_ = table.get(name + "_")
    if grad_ is not None:
        derivative(INPLACE[name], save=grad_.save, signature=op.meta_rule)(grad_.rule)


for _name, _row in UNARY.items():
    _declare_unary(_name, _row)
for _name, _row in BINARY.items():
    _declare_binary(_name, _row)
# torch's pow overloads name the operands self/exponent and take Scalars there:
# ``grad_fn._saved_exponent`` is 2 for ``x ** 2``, not a tensor.
for _cls in (pow.derivative, INPLACE["pow"].derivative):
    _cls.schema_names = {"self": "input", "exponent": "other"}
    _cls.schema_types = {}


# -- irregular ops ----------------------------------------------------------------------------
_ROUNDING = (None, "trunc", "floor")


def div_plan(input, other, rounding_mode) -> tuple:
    """Plan of :func:`div`: true division promotes ints to float; rounded division does not."""
    if rounding_mode not in _ROUNDING:
        raise RuntimeError("div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    row = _DIV_ROWS[rounding_mode]
    return binary_plan("div" if rounding_mode is None else f"div_{rounding_mode}", row,
                       input, other)


_DIV_ROWS = {None: Bn(P.INT_TO_FLOAT, ALL, True, True, True, ""),
             "trunc": Bn(P.DEFAULT, NUM, True, True, True, ""),
             "floor": Bn(P.DEFAULT, NUM, True, True, True, "")}


@operator("div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode=None, "
          "Tensor(a!)? out=None) -> Tensor", (Tag.pointwise,))
def div(input, other, *, rounding_mode=None, out=None):
    """Divides ``input`` by ``other``.

    ``rounding_mode=None`` is true division (ints become the default float dtype);
    ``'trunc'`` rounds toward zero and ``'floor'`` toward -inf, keeping integer dtypes
    (integer division by zero raises ``RuntimeError: ZeroDivisionError``, like torch).

    Shape: the broadcast of ``input`` and ``other``.

    Example:
        >>> ember.div(ember.tensor([3, -3]), 2, rounding_mode="floor").tolist()
        [1, -2]
    """
    return _spec(div_plan(input, other, rounding_mode), out)


@operator("div_.Tensor_mode(Tensor(a!) self, Tensor other, *, str? rounding_mode=None) -> "
          "Tensor(a!)", (Tag.pointwise, Tag.inplace))
def div_(self, other, *, rounding_mode=None):
    """In-place :func:`div`.

    Example:
        >>> x = ember.tensor([3.0, -3.0])
        >>> x.div_(2, rounding_mode="floor")
        tensor([ 1., -2.])
    """
    shape, _, res = div_plan(self, other, rounding_mode)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


INPLACE["div"] = div_


@_derive(div, div_, save={"input": "other", "other": None})  # torch's saves
def _div_backward(ctx, grad):
    if ctx.rounding_mode is not None:  # piecewise constant: zeros, as torch
        return _grads(ctx, lambda: zeros_like(grad), lambda: zeros_like(grad))
    b = ctx.other
    needs = ctx.tensor_needs("input", "other")
    return _pair(needs, grad / _cj_any(b) if needs[0] else None,
                 -grad * _cj_any((ctx.input / b) / b) if needs[1] else None)


__all__ += ["div", "div_"]


def _scalar_exponent(exponent) -> bool:
    return not isinstance(exponent, Tensor)


@operator("round.decimals(Tensor self, *, int decimals=0, Tensor(a!)? out=None) -> Tensor",
          (Tag.pointwise,))
def round(input, *, decimals=0, out=None):  # noqa: A001
    """Rounds to ``decimals`` decimal places, halves to even (``torch.round``).

    Integer tensors are returned unchanged for ``decimals=0`` and rejected otherwise.

    Shape: same as ``input``.

    Example:
        >>> ember.round(ember.tensor([0.5, 1.5, 2.25], dtype=ember.float64), decimals=1).tolist()
        [0.5, 1.5, 2.2]
    """
    return _spec(round_plan(input, decimals), out, "round")


def round_plan(input, decimals) -> tuple:
    """Plan of :func:`round`."""
    plan = unary_plan("round", _ROUND_ROW, input)
    if decimals != 0 and plan[1].category != _F:
        raise not_implemented("round_cpu", plan[1])
    return plan


_ROUND_ROW = U(P.DEFAULT, NUM, True, "")


@operator("round_.decimals(Tensor(a!) self, *, int decimals=0) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def round_(self, *, decimals=0):
    """In-place :func:`round`.

    Example:
        >>> x = ember.tensor([0.25, 1.5, 2.5])
        >>> ember.round_(x) is x, x
        (True, tensor([0., 2., 2.]))
    """
    shape, _, res = round_plan(self, decimals)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


@_derive(round, round_)
def _round_backward(ctx, grad):
    return zeros_like(grad)  # piecewise constant: zeros, as torch


_LOGIT_ROW = U(P.INT_TO_FLOAT, ANY, True, "")


@operator("logit(Tensor self, float? eps=None, *, Tensor(a!)? out=None) -> Tensor",
          (Tag.pointwise,))
def logit(input, eps=None, *, out=None):
    """``log(p / (1 - p))``; with ``eps``, ``p`` is first clamped to ``[eps, 1 - eps]``.

    Shape: same as ``input``. Integer inputs give the default float dtype.

    Example:
        >>> ember.logit(ember.tensor([0.5])).tolist()
        [0.0]
    """
    return _spec(unary_plan("logit", _LOGIT_ROW, input), out)


@operator("logit_(Tensor(a!) self, float? eps=None) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def logit_(self, eps=None):
    """In-place :func:`logit`.

    Example:
        >>> x = ember.tensor([0.25, 0.75])
        >>> x.logit_()
        tensor([-1.0986,  1.0986])
    """
    shape, _, res = unary_plan("logit", _LOGIT_ROW, self)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


@_derive(logit, logit_, save=("input",))
def _logit_backward(ctx, grad):
    """``grad / (x (1 - x))``; outside ``[eps, 1 - eps]`` 0 (with eps >= 0), else NaN
    outside ``[0, 1]`` (torch treats a negative eps as no eps)."""
    x, eps = ctx.input, ctx.eps
    g = grad / (x * (1 - x))
    if eps is None or eps < 0:
        return where((x < 0) | (x > 1), math.nan, g)
    return where((x < eps) | (x > 1 - eps), 0.0, g)


_ANY_ROW = U(P.DEFAULT, ALL, True, "")  # complex: each part replaced on its own


@operator("nan_to_num(Tensor self, float? nan=None, float? posinf=None, float? neginf=None, *, "
          "Tensor(a!)? out=None) -> Tensor", (Tag.pointwise,))
def nan_to_num(input, nan=0.0, posinf=None, neginf=None, *, out=None):
    """Replaces NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf``.

    The infinities default to the dtype's largest and lowest finite values; integer and bool
    tensors are copied unchanged.

    Shape: same as ``input``.

    Example:
        >>> ember.nan_to_num(ember.tensor([float("nan"), 1.0])).tolist()
        [0.0, 1.0]
    """
    plan = unary_plan("nan_to_num", _ANY_ROW, input)
    if out is not None and out._dtype is not plan[2]:
        raise RuntimeError(f"nan_to_num: dtype of out: {_TN[out._dtype.name]} should be same as "
                           f"input: {_TN[plan[2].name]}")
    return _spec(plan, out)


@operator("nan_to_num_(Tensor(a!) self, float? nan=None, float? posinf=None, "
          "float? neginf=None) -> Tensor(a!)", (Tag.pointwise, Tag.inplace))
def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    """In-place :func:`nan_to_num` (a no-op without overlap checks for non-float, as torch).

    Example:
        >>> x = ember.tensor([float("nan"), float("inf"), 1.0])
        >>> x.nan_to_num_(nan=0.0, posinf=9.0)
        tensor([0., 9., 1.])
    """
    if self._dtype.is_differentiable:
        check_inplace(self, self._shape, self._dtype)
    return Spec(self._shape, self._dtype)


@_derive(nan_to_num, nan_to_num_, save=("input",))
def _nan_to_num_backward(ctx, grad):
    return grad * ctx.input.isfinite()  # replaced elements are constants


__all__ += ["round", "round_", "logit", "logit_", "nan_to_num", "nan_to_num_"]


# -- where, clamp, lerp, addcmul/addcdiv ------------------------------------------------------
def where_plan(condition, input, other) -> tuple:
    """Plan of :func:`where`: broadcast of all three; result_type of ``input`` and ``other``."""
    if not isinstance(condition, Tensor):
        raise _type_error("where", "condition", 1, condition)
    if condition._dtype is not dt.bool_ and condition._dtype is not dt.uint8:
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_TN[condition._dtype.name]}")
    shapes = [condition._shape]
    for pos, (arg, x) in enumerate((("input", input), ("other", other)), 2):
        if isinstance(x, Tensor):
            shapes.append(x._shape)
        else:
            _check_scalar("where", arg, pos, x)
    shape = broadcast_shapes(*shapes)
    comp, res = promoted_dtype(P.DEFAULT, input, other)
    return shape, comp, res


@operator("where.self(Tensor condition, Tensor? self=None, Tensor? other=None, *, "
          "Tensor(a!)? out=None) -> Tensor", (Tag.pointwise,), method=False)
def where(condition, input=None, other=None, *, out=None):
    """Elements of ``input`` where ``condition`` is True, else of ``other``.

    ``input`` and ``other`` may be Python scalars; the result dtype is their
    ``result_type``. (``where(condition)`` alone is ``nonzero(condition, as_tuple=True)``.)

    Shape: the broadcast of the three arguments.

    Example:
        >>> ember.where(ember.tensor([True, False]), 1.0, 0).tolist()
        [1.0, 0.0]
    """
    if input is None and other is None:
        raise NotImplementedError("where(condition) has a data-dependent shape; it needs data")
    plan = where_plan(condition, input, other)
    if out is not None and out._dtype is not plan[2]:
        raise RuntimeError(f"Expected out type to be {_TN[plan[2].name]} but got "
                           f"{_TN[out._dtype.name]}")
    return _spec(plan, out)


@tensor_method("where")
def _where_method(self: Tensor, condition: Tensor, other) -> Tensor:
    """``Tensor.where(condition, other)`` = ``where(condition, self, other)``."""
    return where(condition, self, other)


@derivative(where, save=("condition",))
def _where_backward(ctx, grad):
    cond = ctx.condition
    return _grads(ctx, lambda: None, lambda: where(cond, grad, 0.0),
                  lambda: where(cond, 0.0, grad), names=("condition", "input", "other"))


def _clamp_bound(x):
    # torch's scalar overload accepts a 0-d tensor as a Scalar
    return x.item() if isinstance(x, Tensor) and not x._shape else x


def clamp_plan(name: str, input, min, max) -> tuple:  # noqa: A002
    """Plan of :func:`clamp` and friends: result_type of the input and the given bounds."""
    if not isinstance(input, Tensor):
        raise _type_error(name, "input", 1, input)
    if min is None and max is None:
        raise RuntimeError(f"{name}: At least one of 'min' or 'max' must not be None")
    shapes = [input._shape]
    for pos, (arg, b) in enumerate((("min", min), ("max", max)), 2):
        if isinstance(b, Tensor):
            shapes.append(b._shape)
        elif b is not None:
            _check_scalar(name, arg, pos, b)
    comp, res = promoted_dtype(P.DEFAULT, input, min, max)
    if comp.category == _C:
        raise NotImplementedError("clamp is not supported for complex types")
    if comp is dt.bool_:
        tensors = isinstance(min, Tensor) + isinstance(max, Tensor)
        if tensors != 1 or (min is not None and max is not None):
            raise not_implemented(f"{name}_scalar_cpu" if not tensors else "clamp_cpu", comp)
    return broadcast_shapes(*shapes), comp, res


def clamp_out_rule(min, max) -> str:  # noqa: A002
    """The Scalar overloads of clamp need ``out`` of exactly the result dtype."""
    return "clamp" if isinstance(min, Tensor) or isinstance(max, Tensor) else "clamp_scalar"


def clamp_args(min, max) -> tuple:  # noqa: A002
    """torch picks the Scalar overload or the Tensor overload; mixing a dimensioned tensor
    bound with a Python number matches neither (TypeError). A 0-d tensor passes as a Scalar
    (on meta, where it has no value, it stays a tensor)."""
    if isinstance(min, Tensor) != isinstance(max, Tensor) and min is not None and \
            max is not None:
        t = min if isinstance(min, Tensor) else max
        if t._shape:
            raise TypeError("clamp() received an invalid combination of arguments - got "
                            "(Tensor, min=Tensor, max=Number); expected both bounds to be "
                            "Tensors or both Numbers")
        if t._device.type != "meta":
            min, max = _clamp_bound(min), _clamp_bound(max)
    return min, max


@operator("clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None, *, "
          "Tensor(a!)? out=None) -> Tensor", (Tag.pointwise,))
def clamp(input, min=None, max=None, *, out=None):  # noqa: A002
    """Clamps every element into ``[min, max]`` (``min(max(input, min), max)``).

    Bounds may be Python scalars or tensors (broadcast), either may be None but not both.
    When ``min > max`` the result is ``max``, as in torch; NaN propagates.

    Shape: the broadcast of ``input`` and the tensor bounds.

    Example:
        >>> ember.clamp(ember.tensor([-2, 0, 5]), 0, 3).tolist()
        [0, 0, 3]
    """
    min, max = clamp_args(min, max)
    return _spec(clamp_plan("clamp", input, min, max), out, clamp_out_rule(min, max))


@operator("clamp_.Tensor(Tensor(a!) self, Tensor? min=None, Tensor? max=None) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def clamp_(self, min=None, max=None):  # noqa: A002
    """In-place :func:`clamp`.

    Example:
        >>> x = ember.tensor([-2.0, 0.5, 3.0])
        >>> ember.clamp_(x, min=-1.0, max=1.0) is x, x
        (True, tensor([-1.0000,  0.5000,  1.0000]))
    """
    min, max = clamp_args(min, max)
    shape, _, res = clamp_plan("clamp", self, min, max)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


def _clamp_grads(ctx, grad, lo, hi, names) -> tuple:
    """torch's clamp gradients: ``input`` gets ``grad`` where ``lo <= x <= hi`` (boundaries
    included); a tensor bound gets it where it is the result (``min`` only when
    ``min < max``, ``max`` also wherever ``max < min``); NaN anywhere gives 0 to all."""
    x = ctx.input
    if lo is not None and hi is not None:
        keep = (x >= lo) & (x <= hi)
        to_lo = lambda: where((x < lo) & (lo < hi), grad, 0.0)  # noqa: E731
        to_hi = lambda: where((x > hi) | (hi < lo), grad, 0.0)  # noqa: E731
    elif lo is not None:
        keep, to_lo, to_hi = x >= lo, lambda: where(x < lo, grad, 0.0), None
    else:
        keep, to_lo, to_hi = x <= hi, None, lambda: where(x > hi, grad, 0.0)
    thunks = {"min": to_lo, "max": to_hi}
    return _grads(ctx, lambda: where(keep, grad, 0.0), *(thunks[n] for n in names[1:]),
                  names=names)


@_derive(clamp, clamp_, save=("input", "min", "max"))
def _clamp_backward(ctx, grad):
    return _clamp_grads(ctx, grad, ctx.min, ctx.max, ("input", "min", "max"))


@operator("clamp_min.Tensor(Tensor self, Tensor min, *, Tensor(a!)? out=None) -> Tensor",
          (Tag.pointwise,))
def clamp_min(input, min, *, out=None):  # noqa: A002
    """``clamp(input, min=min)``. Shape: the broadcast of ``input`` and ``min``.

    Example:
        >>> ember.clamp_min(ember.tensor([-2.0, 0.5]), 0.0)
        tensor([0.0000, 0.5000])
    """
    return _spec(clamp_plan("clamp_min", input, min, None), out, clamp_out_rule(min, None))


@operator("clamp_min_.Tensor(Tensor(a!) self, Tensor min) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def clamp_min_(self, min):  # noqa: A002
    """In-place :func:`clamp_min`.

    Example:
        >>> x = ember.tensor([-2, 5])
        >>> x.clamp_min_(0)
        tensor([0, 5])
    """
    shape, _, res = clamp_plan("clamp_min", self, min, None)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


@_derive(clamp_min, clamp_min_, save=("input", "min"))
def _clamp_min_backward(ctx, grad):
    return _clamp_grads(ctx, grad, ctx.min, None, ("input", "min"))


@operator("clamp_max.Tensor(Tensor self, Tensor max, *, Tensor(a!)? out=None) -> Tensor",
          (Tag.pointwise,))
def clamp_max(input, max, *, out=None):  # noqa: A002
    """``clamp(input, max=max)``. Shape: the broadcast of ``input`` and ``max``.

    Example:
        >>> ember.clamp_max(ember.tensor([-2.0, 0.5]), 0.0)
        tensor([-2.,  0.])
    """
    return _spec(clamp_plan("clamp_max", input, None, max), out, clamp_out_rule(None, max))


@operator("clamp_max_.Tensor(Tensor(a!) self, Tensor max) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def clamp_max_(self, max):  # noqa: A002
    """In-place :func:`clamp_max`.

    Example:
        >>> x = ember.tensor([-2, 5])
        >>> x.clamp_max_(1)
        tensor([-2,  1])
    """
    shape, _, res = clamp_plan("clamp_max", self, None, max)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


@_derive(clamp_max, clamp_max_, save=("input", "max"))
def _clamp_max_backward(ctx, grad):
    return _clamp_grads(ctx, grad, None, ctx.max, ("input", "max"))


def lerp_plan(input, end, weight) -> tuple:
    """Plan of :func:`lerp`: floating only; ``end`` (and a tensor weight) match ``input``."""
    if not isinstance(input, Tensor):
        raise _type_error("lerp", "input", 1, input)
    if not isinstance(end, Tensor):
        raise _type_error("lerp", "end", 2, end)
    shapes = [input._shape, end._shape]
    d = input._dtype
    for arg, x in (("end", end), ("weight", weight)):
        if isinstance(x, Tensor):
            # torch lets a 0-d weight of another dtype through (the compute dtype is input's),
            # but no other mismatch
            zero_d_weight = arg == "weight" and not x._shape
            if x._dtype is not d and not zero_d_weight:
                raise RuntimeError(f"lerp: expected dtype {d.name} for `{arg}` but got dtype "
                                   f"{x._dtype.name}")
            shapes.append(x._shape)
    if not isinstance(weight, Tensor):
        _check_scalar("lerp", "weight", 3, weight)
    if d.category not in (_F, _C):
        raise not_implemented("lerp_kernel_scalar", d)
    return broadcast_shapes(*shapes), d, d


@operator("lerp.Tensor(Tensor self, Tensor end, Tensor weight, *, Tensor(a!)? out=None) -> "
          "Tensor", (Tag.pointwise,))
def lerp(input, end, weight, *, out=None):
    """Linear interpolation ``input + weight * (end - input)`` (scalar or tensor weight).

    Shape: the broadcast of the three arguments. Floating or complex dtypes; all must match.

    Example:
        >>> ember.lerp(ember.tensor([0.0]), ember.tensor([10.0]), 0.25).tolist()
        [2.5]
    """
    return _spec(lerp_plan(input, end, weight), out)


@operator("lerp_.Tensor(Tensor(a!) self, Tensor end, Tensor weight) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def lerp_(self, end, weight):
    """In-place :func:`lerp`.

    Example:
        >>> x = ember.tensor([0.0, 2.0])
        >>> x.lerp_(ember.tensor([4.0, 4.0]), 0.25)
        tensor([1.0000, 2.5000])
    """
    shape, _, res = lerp_plan(self, end, weight)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


@_derive(lerp, lerp_, save=("input", "end", "weight"))
def _lerp_backward(ctx, grad):
    w = ctx.weight
    if grad._dtype.is_complex:  # conjugate Wirtinger: the gradient multiplies by conj(d/dz)
        w = w.conj() if isinstance(w, Tensor) else w.conjugate()
        return _grads(ctx, lambda: grad * (1 - w), lambda: grad * w,
                      lambda: grad * (ctx.end - ctx.input).conj(),
                      names=("input", "end", "weight"))
    return _grads(ctx, lambda: grad * (1 - w), lambda: grad * w,
                  lambda: grad * (ctx.end - ctx.input), names=("input", "end", "weight"))


def addc_plan(name: str, input, tensor1, tensor2, value) -> tuple:
    """Plan of :func:`addcmul` / :func:`addcdiv`: result_type of the three tensors."""
    for pos, (arg, x) in enumerate((("input", input), ("tensor1", tensor1),
                                    ("tensor2", tensor2)), 1):
        if not isinstance(x, Tensor):
            raise _type_error(name, arg, pos, x)
    _check_scalar(name, "value", 4, value)
    if name == "addcdiv" and tensor1._dtype.category not in (_F, _C) and \
            tensor2._dtype.category not in (_F, _C):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a "
                           "future release addcdiv will perform a true division of tensor1 and "
                           "tensor2. The historic addcdiv behavior can be implemented as "
                           "(input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) "
                           "for integer inputs and as (input + value * tensor1 / tensor2) for "
                           "float inputs. The future addcdiv behavior is just the latter "
                           "implementation: (input + value * tensor1 / tensor2), for all dtypes.")
    comp, res = promoted_dtype(P.DEFAULT, input, tensor1, tensor2)
    if comp is dt.bool_:
        raise not_implemented(f"{name}_cpu_out", comp)
    return broadcast_shapes(input._shape, tensor1._shape, tensor2._shape), comp, res


def _declare_addc(name: str, doc: str):
    def rule(input, tensor1, tensor2, *, value=1, out=None):
        return _spec(addc_plan(name, input, tensor1, tensor2, value), out)

    def rule_(self, tensor1, tensor2, *, value=1):
        shape, _, res = addc_plan(name, self, tensor1, tensor2, value)
        check_inplace(self, shape, res)
        return Spec(self._shape, self._dtype)

    rule.__doc__ = doc
    rule_.__doc__ = f"""In-place :func:`{name}`.

    Example:
        >>> x, t1, t2 = ember.ones(2), ember.tensor([1.0, 2.0]), ember.tensor([4.0, 8.0])
        >>> expected = ember.{name}(x, t1, t2, value=0.5)
        >>> ember.{name}_(x, t1, t2, value=0.5) is x, x.equal(expected)
        (True, True)
    """
    op = operator(f"{name}(Tensor self, Tensor tensor1, Tensor tensor2, *, Scalar value=1, "
                  "Tensor(a!)? out=None) -> Tensor", (Tag.pointwise,))(rule)
    op_ = operator(f"{name}_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, "
                   "Scalar value=1) -> Tensor(a!)", (Tag.pointwise, Tag.inplace))(rule_)
    INPLACE[name] = op_
    _export(name, op)
    _export(name + "_", op_)
    _derive(op, op_, save=("tensor1", "tensor2"))(_ADDC_GRADS[name])


def _conj_factors(ctx):
    """tensor1, tensor2 and value, conjugated when the gradient is complex (the conjugate
    Wirtinger convention multiplies the gradient by conj of each partial derivative)."""
    t1, t2 = (t.conj() if t._dtype.is_complex else t for t in (ctx.tensor1, ctx.tensor2))
    return t1, t2, ctx.value.conjugate()


def _addcmul_backward(ctx, grad):
    t1, t2, _ = _conj_factors(ctx)
    value = ctx.value  # _scale conjugates it
    return _grads(ctx, lambda: grad, lambda: _scale(grad * t2, value),
                  lambda: _scale(grad * t1, value), names=_ADDC_ARGS)


def _addcdiv_backward(ctx, grad):
    t1, t2, value = _conj_factors(ctx)
    return _grads(ctx, lambda: grad, lambda: grad * (value / t2),
                  lambda: -grad * (value * t1 / (t2 * t2)), names=_ADDC_ARGS)


_ADDC_ARGS = ("input", "tensor1", "tensor2")
_ADDC_GRADS = {"addcmul": _addcmul_backward, "addcdiv": _addcdiv_backward}


_declare_addc("addcmul", """``input + value * tensor1 * tensor2``.

    ``value`` is cast to the result dtype first (2.5 becomes 2 for integer results, as in
    torch). Shape: the broadcast of the three tensors.

    Example:
        >>> ember.addcmul(ember.ones(2), ember.ones(2), ember.ones(2), value=3).tolist()
        [4.0, 4.0]
    """)
_declare_addc("addcdiv", """``input + value * tensor1 / tensor2``.

    Integer ``tensor1`` and ``tensor2`` are rejected (torch removed integer addcdiv).
    Shape: the broadcast of the three tensors.

    Example:
        >>> ember.addcdiv(ember.ones(2), ember.ones(2), ember.ones(2) * 4).tolist()
        [1.25, 1.25]
    """)
__all__ += ["where", "clamp", "clamp_", "clamp_min", "clamp_min_", "clamp_max", "clamp_max_",
            "lerp", "lerp_"]


# -- closeness --------------------------------------------------------------------------------
def isclose_plan(input, other, rtol, atol) -> tuple:
    """Plan of :func:`isclose`: same dtypes, non-negative tolerances, bool result."""
    if not isinstance(input, Tensor):
        raise _type_error("isclose", "input", 1, input)
    if not isinstance(other, Tensor):
        raise _type_error("isclose", "other", 2, other)
    if input._dtype is not other._dtype:
        raise RuntimeError(f"{_TN[input._dtype.name]} did not match {_TN[other._dtype.name]}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    return broadcast_shapes(input._shape, other._shape), input._dtype, dt.bool_


@operator("isclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, "
          "bool equal_nan=False) -> Tensor", (Tag.pointwise,))
def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Whether ``|input - other| <= atol + rtol * |other|`` elementwise (torch's formula).

    Equal elements (infinities included) are always close; NaNs are close to each other only
    with ``equal_nan``. Both tensors must have the same dtype.

    Shape: the broadcast of ``input`` and ``other``; bool result.

    Example:
        >>> ember.isclose(ember.tensor([1.0]), ember.tensor([1.0 + 1e-9])).tolist()
        [True]
    """
    return Spec(*isclose_plan(input, other, rtol, atol)[::2])


@composite("allclose(Tensor self, Tensor other, float rtol=1e-05, float atol=1e-08, "
           "bool equal_nan=False) -> bool")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """Whether every element of :func:`isclose` is True (a Python bool).

    Example:
        >>> ember.allclose(ember.tensor([1.0]), ember.tensor([1.0]))
        True
    """
    return bool(numpy_view(isclose(input, other, rtol, atol, equal_nan)).all())


@composite("equal(Tensor self, Tensor other) -> bool")
def equal(input, other) -> bool:
    """True when both tensors have the same shape and equal elements (a Python bool).

    Dtypes may differ; values are compared after promotion (NaN is never equal).

    Example:
        >>> ember.equal(ember.tensor([1, 2]), ember.tensor([1.0, 2.0]))
        True
    """
    if not isinstance(input, Tensor):
        raise _type_error("equal", "input", 1, input)
    if not isinstance(other, Tensor):
        raise _type_error("equal", "other", 2, other)
    if input._shape != other._shape:
        return False
    return bool(numpy_view(eq(input, other)).all())  # noqa: F821 (declared by the table)


__all__ += ["isclose", "allclose", "equal"]


# -- composites: positive, rsub, reverse operands ---------------------------------------------
@composite("positive(Tensor(a) self) -> Tensor(a)")
def positive(input):
    """Returns ``input`` itself (``+input``); bool tensors are rejected like torch.

    Example:
        >>> x = ember.tensor([1, -2]); ember.positive(x) is x
        True
    """
    if not isinstance(input, Tensor):
        raise _type_error("positive", "input", 1, input)
    if input._dtype is dt.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


@composite("rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", method=False)
def rsub(input, other, *, alpha=1):
    """``other - alpha * input`` (the reflected subtraction behind ``2 - x``).

    Example:
        >>> ember.rsub(ember.tensor([1, 2]), 5).tolist()
        [4, 3]
    """
    return sub(other, input, alpha=alpha)  # noqa: F821 (declared by the table)


__all__ += ["positive", "rsub"]


@composite("_trigamma(Tensor self) -> Tensor", method=False)
def _trigamma(input):
    """Trigamma ``polygamma(1, input)``, the derivative of :func:`digamma` (internal).

    Written with ember ops, so it runs on every backend and is itself differentiable (double
    backward of digamma). Below 0.5 the reflection ``pi**2 / sin(pi x)**2 - trigamma(1 - x)``
    is used (torch's values at the poles: huge or inf); above, six steps of the recurrence
    ``trigamma(y) = 1 / y**2 + trigamma(y + 1)`` and the asymptotic series
    ``1/z + 1/(2 z**2) + sum B_2k / z**(2k+1)``.
    """
    reflect = input < 0.5
    y = where(reflect, 1 - input, input)
    acc = (y * y).reciprocal()
    for k in range(1, 6):
        acc = acc + ((y + k) * (y + k)).reciprocal()
    z = y + 6
    iz2 = (z * z).reciprocal()
    series = iz2 * (1 / 6 - iz2 * (1 / 30 - iz2 * (1 / 42 - iz2 * (1 / 30 - iz2 * 5 / 66))))
    psi = acc + (1 + (0.5 / z) + series) / z
    s = (where(reflect, input, 0.5) * math.pi).sin()  # 0.5: no poles in the unused branch
    return where(reflect, math.pi ** 2 / (s * s) - psi, psi)


def _reflect(op_name: str):
    def method(self: Tensor, other):
        if not isinstance(other, Tensor | bool | int | float | builtins.complex):
            return NotImplemented
        return globals()[op_name](other, self)

    method.__name__ = method.__qualname__ = f"_r{op_name}"
    method.__doc__ = f"``other {op_name} self`` for Python's reflected operator protocol."
    return method


def _reflect_commutative(op_name: str):
    def method(self: Tensor, other):
        if not isinstance(other, Tensor | bool | int | float | builtins.complex):
            return NotImplemented
        return globals()[op_name](self, other)

    method.__doc__ = f"``other {op_name} self`` (commutative, so computed as ``self op other``)."
    return method


TENSOR_METHODS["rsub"] = lambda self, other, alpha=1: rsub(self, other, alpha=alpha)
for _meth, _op in {"_radd": "add", "_rmul": "mul", "_rand": "bitwise_and",
                   "_ror": "bitwise_or", "_rxor": "bitwise_xor"}.items():
    TENSOR_METHODS[_meth] = _reflect_commutative(_op)
for _meth, _op in {"_rdiv": "div", "_rfloordiv": "floor_divide", "_rremainder": "remainder",
                   "_rpow": "pow", "_rlshift": "bitwise_left_shift",
                   "_rrshift": "bitwise_right_shift"}.items():
    TENSOR_METHODS[_meth] = _reflect(_op)


# -- torch's aliases --------------------------------------------------------------------------
ALIASES = {
    "negative": "neg", "absolute": "abs", "arcsin": "asin", "arccos": "acos", "arctan": "atan",
    "arcsinh": "asinh", "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2",
    "fix": "trunc", "clip": "clamp", "multiply": "mul", "subtract": "sub", "divide": "div",
    "true_divide": "div", "greater": "gt", "less": "lt", "greater_equal": "ge",
    "less_equal": "le", "not_equal": "ne",
}
for _alias, _target in ALIASES.items():
    _export(_alias, globals()[_target])
    TENSOR_METHODS[_alias] = globals()[_target]
    if _target + "_" in globals():
        _export(_alias + "_", globals()[_target + "_"])
        TENSOR_METHODS[_alias + "_"] = globals()[_target + "_"]


# -- complex construction and parts -----------------------------------------------------------
def _complex_operands(name: str, a, b, names=("real", "imag")) -> None:
    for i, (t, arg) in enumerate(((a, names[0]), (b, names[1])), 1):
        if not isinstance(t, Tensor):
            raise _type_error(name, arg, i, t)
    if a._dtype is not b._dtype and a._dtype.is_floating_point and b._dtype.is_floating_point:
        raise RuntimeError(f"Expected object of scalar type {_TN[a._dtype.name]} but got scalar "
                           f"type {_TN[b._dtype.name]} for second argument")
    ok = (dt.float16, dt.float32, dt.float64)
    if a._dtype not in ok or b._dtype not in ok:
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{_TN[a._dtype.name]} and {_TN[b._dtype.name]}")


@composite("complex(Tensor real, Tensor imag, *, Tensor(a!)? out=None) -> Tensor", method=False)
def complex(real: Tensor, imag: Tensor, *, out=None) -> Tensor:  # noqa: A001
    """``real + 1j * imag`` from two float16, float32 or float64 tensors, broadcast
    (torch.complex; float16 parts give complex32).

    Raises:
        RuntimeError: the dtypes differ, or are not float32/float64 (torch's messages).

    Example:
        >>> ember.complex(ember.tensor([1.0, 2.0]), ember.tensor([3.0, -4.0]))
        tensor([1.+3.j, 2.-4.j])
    """
    from ember.ops.shape import broadcast_tensors, stack
    from ember.ops.special import write_out
    from ember.ops.views import view_as_complex
    _complex_operands("complex", real, imag)
    value = view_as_complex(stack(broadcast_tensors(real, imag), -1))
    return write_out(value, out, "complex")


@composite("polar(Tensor abs, Tensor angle, *, Tensor(a!)? out=None) -> Tensor", method=False)
def polar(abs: Tensor, angle: Tensor, *, out=None) -> Tensor:  # noqa: A002
    """``abs * exp(1j * angle)`` from float32 (or float64) tensors, broadcast (torch.polar).

    Example:
        >>> ember.polar(ember.tensor([2.0]), ember.tensor([0.0]))
        tensor([2.+0.j])
    """
    from ember.ops.special import write_out
    _complex_operands("polar", abs, angle, ("abs", "angle"))
    if abs._dtype is dt.float16:  # torch's CPU has no complex32 polar kernel
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    value = complex(abs * angle.cos(), abs * angle.sin())
    return write_out(value, out, "polar")


@composite("angle(Tensor self, *, Tensor(a!)? out=None) -> Tensor")
def angle(input: Tensor, *, out=None) -> Tensor:
    """The argument of each element in radians: ``atan2(imag, real)`` for complex tensors;
    for real ones pi for negative values, 0 otherwise, NaN for NaN (torch.angle).

    Integers promote to the default float dtype; for real inputs the gradient is zero, as torch.

    Example:
        >>> ember.angle(ember.tensor([-2.0, 0.0, 3.0]))
        tensor([3.1416, 0.0000, 0.0000])
        >>> ember.angle(ember.tensor([1j, -1 + 0j]))
        tensor([1.5708, 3.1416])
    """
    from ember.ops.special import write_out
    from ember.ops.views import imag, real
    if not isinstance(input, Tensor):
        raise _type_error("angle", "input", 1, input)
    if input._dtype.is_complex:
        return write_out(imag(input).atan2(real(input)), out, "angle")
    x = input if input._dtype.is_floating_point else input.to(dt.get_default_dtype())
    value = where(x < 0, math.pi, 0.0).to(x._dtype)
    value = where(x.isnan(), x * 0, value)  # NaN stays NaN; the gradient is zero everywhere
    return write_out(value, out, "angle")


@composite("isreal(Tensor self) -> Tensor")
def isreal(input: Tensor) -> Tensor:
    """Whether each element is real: its imaginary part is 0 (always True for real dtypes).

    Example:
        >>> ember.isreal(ember.tensor([1 + 0j, 1j]))
        tensor([ True, False])
    """
    from ember.ops.creation import ones_like
    from ember.ops.views import imag
    if not isinstance(input, Tensor):
        raise _type_error("isreal", "input", 1, input)
    if input._dtype.is_complex:
        return imag(input) == 0
    return ones_like(input, dtype=dt.bool_)


__all__ += ["complex", "polar", "angle", "isreal"]
