"""Special and miscellaneous pointwise functions of torch's top level, and torch.special's
own operators.

``xlogy``, ``signbit``, ``sgn``, ``heaviside``, ``deg2rad``/``rad2deg``, ``float_power``,
``nextafter``, ``i0``, ``polygamma`` and ``mvlgamma``, with their in-place twins. Most are
composites of the pointwise family (their gradients follow from the ops they call, as torch's
own composites do); ``heaviside``, ``nextafter`` and ``i0`` need values NumPy gives directly and
are operators with CPU kernels in ``ember.backends.cpu.special``. Composites that torch runs in
opmath compute half types in float32 and round once, as torch does.

The Bessel, Airy, Hurwitz zeta, incomplete gamma (``igamma``/``igammac``) and orthogonal
polynomial functions, ``erfcx``, ``ndtri``, ``i1``, ``i0e`` and ``i1e`` are operators
``special_<name>`` (NOTE [torch.special operators]), collected in ``SPECIAL_OPS`` and
re-exported under torch's names by ``ember.special``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from ember.autograd.grad_mode import is_grad_enabled
from ember.core import dtype as dt
from ember.dispatch import FALLTHROUGH, AliasKey
from ember.ops._define import TENSOR_METHODS, Spec, Tag, composite, derivative, operator
from ember.ops._promotion import Promotion
from ember.ops.creation import arange, full, ones_like, zeros_like
from ember.ops.pointwise import (
    ANY,
    FLT,
    Binary,
    Unary,
    _grads,
    binary_plan,
    check_inplace,
    check_out,
    copysign,
    digamma,
    lgamma,
    unary_plan,
    where,
)
from ember.tensor import Tensor

__all__ = ["xlogy", "xlogy_", "signbit", "sgn", "heaviside", "deg2rad", "deg2rad_", "rad2deg",
           "rad2deg_", "float_power", "nextafter", "i0", "i0_", "polygamma", "mvlgamma"]

P = Promotion
_HALF = (dt.float16, dt.bfloat16)


# -- helpers ----------------------------------------------------------------------------------
def _tensor_of(x, dtype: dt.DType, device) -> Tensor:
    """``x`` as a tensor of ``dtype`` (Python scalars become 0-d tensors)."""
    if isinstance(x, Tensor):
        return x if x._dtype is dtype else x.to(dtype)
    return full((), x, dtype=dtype, device=device)


def _device_of(*args):
    return next(a._device for a in args if isinstance(a, Tensor))


def _opmath(d: dt.DType) -> dt.DType:
    """The dtype torch computes ``d`` in: float32 for half types."""
    return dt.float32 if d in _HALF else d


def _to_float(x: Tensor) -> Tensor:
    """Integral and bool tensors become the default float dtype (INT_TO_FLOAT promotion)."""
    return x if x._dtype.is_floating_point or x._dtype.is_complex else x.to(dt.get_default_dtype())


def write_out(result: Tensor, out: Tensor | None, name: str = "") -> Tensor:
    """``result``, or ``result`` copied into ``out`` (checked and resized as torch's ``out=``)."""
    if out is None:
        return result
    check_out(out, result._shape, result._dtype, name)
    if out._shape != result._shape:
        out.resize_(result._shape)
    return out.copy_(result)


# Docstring examples of the in-place twins: name -> (input data, further arguments).
_TWIN_EXAMPLES = {"xlogy_": ("[0.0, 2.0]", ", ember.tensor([3.0, 4.0])"),
                  "sgn_": ("[-2.0, 0.5]", ""), "deg2rad_": ("[180.0, 90.0]", ""),
                  "rad2deg_": ("[3.0, 1.5]", ""), "mvlgamma_": ("[2.5, 3.0]", ", 2")}


def _inplace_twin(fn: Callable, name: str) -> Callable:
    """The in-place twin of composite ``fn``: ``self.copy_(fn(self, ...))``.

    ``fn`` runs on a clone when autograd records, so the tensors its backward saves are not
    the ones the copy overwrites. The result must keep ``self``'s shape and cast to its dtype.
    """

    def twin(self: Tensor, *args, **kwargs) -> Tensor:
        if not isinstance(self, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(self).__name__}")
        src = self.clone() if is_grad_enabled() else self
        result = fn(src, *args, **kwargs)
        check_inplace(self, result._shape, result._dtype)
        return self.copy_(result)

    twin.__name__ = twin.__qualname__ = name
    twin.__doc__ = f"In-place :func:`{name[:-1]}`; bumps ``self``'s version once."
    if name in _TWIN_EXAMPLES:
        data, rest = _TWIN_EXAMPLES[name]
        twin.__doc__ += f"""

    Example:
        >>> x = ember.tensor({data})
        >>> expected = ember.{name[:-1]}(x{rest})
        >>> ember.{name}(x{rest}) is x, x.equal(expected)
        (True, True)
    """
    return twin


def _export_twin(fn: Callable, name: str) -> Callable:
    twin = _inplace_twin(fn, name)
    TENSOR_METHODS[name] = twin
    return twin


# -- xlogy --------------------------------------------------------------------------------------
XLOGY_ROW = Binary(P.INT_TO_FLOAT, ANY, True, True, True, "")


@operator("xlogy.Tensor(Tensor self, Tensor other, *, Tensor(a!)? out=None) -> Tensor",
          (Tag.pointwise,))
def xlogy(input, other, *, out=None):
    """``input * log(other)``, 0 where ``input == 0`` and NaN where ``other`` is NaN.

    Args:
        input, other: tensors or Python scalars (one must be a tensor), broadcast together;
            integers promote to the default float dtype. out: optional output tensor.

    Shape: the broadcast of ``input`` and ``other``.

    Example:
        >>> ember.xlogy(ember.tensor([0.0, 2.0]), ember.tensor([0.0, 1.0])).tolist()
        [0.0, 0.0]
    """
    shape, _, res = binary_plan("xlogy", XLOGY_ROW, input, other)
    if out is not None:
        check_out(out, shape, res)
    return Spec(shape, res)


@derivative(xlogy, save=("input", "other"))
def _xlogy_backward(ctx, grad):
    """torch's rule: ``xlogy(grad, other)`` zeroed where ``input == 0 and other <= 0``, and
    ``grad * input / other``."""
    x, y = ctx.input, ctx.other

    def d_input():
        g = xlogy(grad, y)
        return where((x == 0) & (y <= 0), 0.0, g) if isinstance(y, Tensor) else \
            (g if y > 0 else where(x == 0, 0.0, g))

    return _grads(ctx, d_input, lambda: grad * x / y)


xlogy_ = _export_twin(xlogy, "xlogy_")


# -- sign-like --------------------------------------------------------------------------------
@composite("signbit(Tensor self, *, Tensor(a!)? out=None) -> Tensor")
def signbit(input, *, out=None):
    """Whether the sign bit of each element is set (True for -0.0 and negative NaN).

    Shape: same as ``input``; the result is bool. Integers test ``input < 0``.

    Example:
        >>> ember.signbit(ember.tensor([-0.0, 0.0, -2.0])).tolist()
        [True, False, True]
    """
    _require("signbit", input)
    if input._dtype.is_floating_point:
        value = copysign(ones_like(input), input) < 0
    else:
        value = input < 0 if input._dtype is not dt.bool_ else zeros_like(input)
    return write_out(value, out, "signbit")


@composite("sgn(Tensor self, *, Tensor(a!)? out=None) -> Tensor")
def sgn(input, *, out=None):
    """``input / |input|`` extended to 0 at 0; for real tensors the same as :func:`sign`.

    Example:
        >>> ember.sgn(ember.tensor([-3.0, 0.0, 2.0])).tolist()
        [-1.0, 0.0, 1.0]
        >>> ember.sgn(ember.tensor([3 + 4j, 0j]))
        tensor([0.6000+0.8000j, 0.0000+0.0000j])
    """
    _require("sgn", input)
    if input._dtype.is_complex:
        from ember.ops.pointwise import _sgn
        return write_out(_sgn(input), out, "sgn")
    return write_out(input.sign(), out, "sgn")


sgn_ = _export_twin(sgn, "sgn_")


def _require(name: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


_HEAVISIDE = Binary(P.DEFAULT, ANY, False, False, True, "")


def heaviside_plan(input, values) -> tuple:
    """Plan of :func:`heaviside`: both tensors, one dtype (torch refuses mixed dtypes)."""
    if not isinstance(values, Tensor) and isinstance(input, Tensor):
        raise TypeError("heaviside(): argument 'values' (position 2) must be Tensor, not "
                        f"{type(values).__name__}")
    plan = binary_plan("heaviside", _HEAVISIDE, input, values)
    if input._dtype is not values._dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    return plan


@operator("heaviside(Tensor self, Tensor values, *, Tensor(a!)? out=None) -> Tensor",
          (Tag.pointwise,))
def heaviside(input, values, *, out=None):
    """The Heaviside step: 0 where ``input < 0``, ``values`` where ``input == 0``, 1 above.

    NaN inputs give 0 (torch's ``input > 0`` test). Not differentiable (torch has no formula).

    Args:
        input, values: tensors of one dtype, broadcast together. out: optional output.

    Shape: the broadcast of ``input`` and ``values``.

    Example:
        >>> ember.heaviside(ember.tensor([-1.0, 0.0, 2.0]), ember.tensor(0.5)).tolist()
        [0.0, 0.5, 1.0]
    """
    shape, _, res = heaviside_plan(input, values)
    if out is not None:
        check_out(out, shape, res)
    return Spec(shape, res)


@operator("heaviside_(Tensor(a!) self, Tensor values) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def heaviside_(self, values):
    """In-place :func:`heaviside`.

    Example:
        >>> x = ember.tensor([-1.0, 0.0, 2.0])
        >>> x.heaviside_(ember.tensor([0.5]))
        tensor([0.0000, 0.5000, 1.0000])
    """
    shape, _, res = heaviside_plan(self, values)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


# -- angles -------------------------------------------------------------------------------------
@composite("deg2rad(Tensor self, *, Tensor(a!)? out=None) -> Tensor")
def deg2rad(input, *, out=None):
    """Degrees to radians, ``input * pi / 180`` (integers become the default float dtype).

    Example:
        >>> ember.deg2rad(ember.tensor([180.0])).tolist()
        [3.1415927410125732]
    """
    _require("deg2rad", input)
    if input._dtype.is_complex:
        raise RuntimeError("deg2rad is not supported for complex tensors.")
    return write_out(_to_float(input) * (math.pi / 180.0), out, "deg2rad")


@composite("rad2deg(Tensor self, *, Tensor(a!)? out=None) -> Tensor")
def rad2deg(input, *, out=None):
    """Radians to degrees, ``input * 180 / pi`` (integers become the default float dtype).

    Example:
        >>> ember.rad2deg(ember.tensor([0.5])).tolist()
        [28.647890090942383]
    """
    _require("rad2deg", input)
    if input._dtype.is_complex:
        raise RuntimeError("rad2deg is not supported for complex tensors.")
    return write_out(_to_float(input) * (180.0 / math.pi), out, "rad2deg")


deg2rad_ = _export_twin(deg2rad, "deg2rad_")
rad2deg_ = _export_twin(rad2deg, "rad2deg_")


# -- float_power ------------------------------------------------------------------------------
@composite("float_power.Tensor_Tensor(Tensor self, Tensor exponent, *, Tensor(a!)? out=None) "
           "-> Tensor")
def float_power(input, exponent, *, out=None):
    """``input ** exponent`` computed in float64 (complex128 when either operand is complex),
    as ``torch.float_power``.

    Args:
        input, exponent: tensors or Python scalars (one a tensor), broadcast together.
        out: optional output tensor (must be float64).

    Example:
        >>> ember.float_power(ember.tensor([2]), 3).dtype
        ember.float64
    """
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        raise TypeError("float_power(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    res = _float_power_dtype(input, exponent)
    if out is not None and isinstance(out, Tensor) and out._dtype is not res:
        raise RuntimeError(f"the output given to float_power has dtype "
                           f"{out._dtype.scalar_name} but the operation's result requires "
                           f"dtype {res.scalar_name}")
    base = input.to(res) if isinstance(input, Tensor) else input
    exp = exponent.to(res) if isinstance(exponent, Tensor) else exponent
    if isinstance(base, Tensor):
        value = base.pow(exp)
    else:
        scalar = complex(base) if res.is_complex else float(base)
        value = full((), scalar, dtype=res, device=exp._device).pow(exp)
    return write_out(value, out, "float_power")


def _float_power_dtype(input, exponent) -> dt.DType:
    """float64, or complex128 when either operand is complex (torch's float_power)."""
    for v in (input, exponent):
        if (v._dtype.is_complex if isinstance(v, Tensor) else isinstance(v, complex)):
            return dt.complex128
    return dt.float64


def float_power_(self: Tensor, exponent) -> Tensor:
    """In-place :func:`float_power`; ``self`` must be float64 (complex128 with a complex
    operand).

    Example:
        >>> x = ember.tensor([2.0, 3.0], dtype=ember.float64)
        >>> ember.float_power_(x, 2) is x, x
        (True, tensor([4., 9.], dtype=ember.float64))
    """
    _require("float_power_", self)
    res = _float_power_dtype(self, exponent)
    if self._dtype is not res:
        raise RuntimeError(f"the base given to float_power_ has dtype {self._dtype.scalar_name} "
                           f"but the operation's result requires dtype {res.scalar_name}")
    return _inplace_twin(float_power, "float_power_")(self, exponent)


TENSOR_METHODS["float_power_"] = float_power_


# -- nextafter --------------------------------------------------------------------------------
_NEXTAFTER = Binary(P.DEFAULT, FLT, False, False, True, "")


@operator("nextafter(Tensor self, Tensor other, *, Tensor(a!)? out=None) -> Tensor",
          (Tag.pointwise,))
def nextafter(input, other, *, out=None):
    """The next representable value after ``input`` in the direction of ``other``.

    Floating dtypes only (torch: not implemented for integers). The gradient flows to
    ``input`` unchanged; ``other`` gets zeros, as torch.

    Shape: the broadcast of ``input`` and ``other``.

    Example:
        >>> ember.nextafter(ember.tensor([1.0]), ember.tensor([2.0])).item() > 1.0
        True
    """
    shape, _, res = binary_plan("nextafter", _NEXTAFTER, input, other)
    if out is not None:
        check_out(out, shape, res)
    return Spec(shape, res)


@operator("nextafter_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
          (Tag.pointwise, Tag.inplace))
def nextafter_(self, other):
    """In-place :func:`nextafter`.

    Example:
        >>> x = ember.tensor([1.0], dtype=ember.float64)
        >>> x.nextafter_(ember.tensor([2.0], dtype=ember.float64)).item() - 1.0 == 2.0 ** -52
        True
    """
    shape, _, res = binary_plan("nextafter", _NEXTAFTER, self, other)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


def _nextafter_backward(ctx, grad):
    """torch's rule: ``grad`` where ``input != other`` (zero where they are equal) for
    ``input``; zeros for ``other``."""
    needs = ctx.needs_input_grad
    d_input = where(ctx.input == ctx.other, 0.0, grad) if needs[0] else None
    return d_input, (zeros_like(grad) if needs[1] else None)


derivative(nextafter, save=("input", "other"))(_nextafter_backward)
derivative(nextafter_, save=("input", "other"), signature=nextafter.meta_rule)(
    _nextafter_backward)


# -- Bessel i0 ----------------------------------------------------------------------------------
_I0 = Unary(P.INT_TO_FLOAT, ANY, True, "")


@operator("i0(Tensor self, *, Tensor(a!)? out=None) -> Tensor", (Tag.pointwise,))
def i0(input, *, out=None):
    """Modified Bessel function of the first kind, order zero.

    Integers promote to the default float dtype; the gradient is ``special.i1(input)``.

    Example:
        >>> round(ember.i0(ember.tensor([1.0])).item(), 4)
        1.2661
    """
    shape, _, res = unary_plan("i0", _I0, input)
    if out is not None:
        check_out(out, shape, res)
    return Spec(shape, res)


@operator("i0_(Tensor(a!) self) -> Tensor(a!)", (Tag.pointwise, Tag.inplace))
def i0_(self):
    """In-place :func:`i0`.

    Example:
        >>> x = ember.tensor([0.0, 1.0])
        >>> x.i0_()
        tensor([1.0000, 1.2661])
    """
    shape, _, res = unary_plan("i0", _I0, self)
    check_inplace(self, shape, res)
    return Spec(self._shape, self._dtype)


def _i0_backward(ctx, grad):
    return grad * SPECIAL_OPS["i1"](ctx.input)  # torch's rule (declared below)


derivative(i0, save=("input",))(_i0_backward)
derivative(i0_, save=("input",), signature=i0.meta_rule)(_i0_backward)


# -- polygamma, mvlgamma ----------------------------------------------------------------------
# B_2k / (2k)! for the Euler-Maclaurin tail of the Hurwitz zeta sum
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510)
_EM_TERMS = tuple(b / math.factorial(2 * k + 2) for k, b in enumerate(_BERNOULLI))
_SHIFT = 16


def _hurwitz(s: int, x: Tensor) -> Tensor:
    """``sum_{k>=0} (x + k)**-s`` for integer ``s >= 2``: 16 terms, then Euler-Maclaurin.

    Exact to float64 rounding for ``x > -8`` (the tail starts at ``x + 16``); poles at the
    non-positive integers give inf, as torch's zeta.
    """
    acc = (x).pow(-s)
    for k in range(1, _SHIFT):
        acc = acc + (x + k).pow(-s)
    z = x + _SHIFT
    tail = z.pow(1 - s) * (1.0 / (s - 1)) + z.pow(-s) * 0.5
    rising = s  # s (s+1) ... (s + 2j - 2)
    for j, coef in enumerate(_EM_TERMS):
        tail = tail + z.pow(-s - 2 * j - 1) * (coef * rising)
        rising *= (s + 2 * j + 1) * (s + 2 * j + 2)
    return acc + tail


@composite("polygamma(int n, Tensor self, *, Tensor(a!)? out=None) -> Tensor", method=False)
def polygamma(n, input, *, out=None):
    """The ``n``-th derivative of :func:`digamma`.

    ``n = 0`` is digamma; higher orders are ``(-1)**(n+1) n! zeta(n + 1, input)``.
    Integers promote to the default float dtype.

    Raises:
        RuntimeError: ``n`` is negative.

    Example:
        >>> round(ember.polygamma(1, ember.tensor([1.0])).item(), 5)
        1.64493
    """
    if not isinstance(input, Tensor):
        raise TypeError("polygamma(): argument 'input' (position 2) must be Tensor, not "
                        f"{type(input).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = _to_float(input)
    res = x._dtype
    if res.is_complex and n:  # torch's trigamma and polygamma kernels have no complex types
        raise NotImplementedError(f"\"{'trigamma' if n == 1 else 'polygamma'}\" not "
                                  f"implemented for '{res.scalar_name}'")
    if n == 0:
        return write_out(digamma(x), out, "polygamma")
    x = x.to(_opmath(res))
    value = _hurwitz(n + 1, x)
    if n > 1:
        value = value * ((-1) ** (n + 1) * float(math.factorial(n)))
    return write_out(value if value._dtype is res else value.to(res), out, "polygamma")


def _polygamma_method(self: Tensor, n: int) -> Tensor:
    return polygamma(n, self)


def _polygamma_(self: Tensor, n: int) -> Tensor:
    return _inplace_twin(lambda x, m: polygamma(m, x), "polygamma_")(self, n)


TENSOR_METHODS["polygamma"] = _polygamma_method
TENSOR_METHODS["polygamma_"] = _polygamma_


@composite("mvlgamma(Tensor self, int p, *, Tensor(a!)? out=None) -> Tensor")
def mvlgamma(input, p, *, out=None):
    """Multivariate log-gamma of dimension ``p``:
    ``p (p - 1) / 4 log(pi) + sum_{i<p} lgamma(input - i / 2)``.

    Raises:
        RuntimeError: ``p < 1`` or a bool input.

    Example:
        >>> round(ember.mvlgamma(ember.tensor([2.5]), 2).item(), 3)
        0.857
    """
    _require("mvlgamma", input)
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if input._dtype is dt.bool_:
        raise RuntimeError("The input tensor may not be a boolean tensor.")
    x = _to_float(input)
    shifts = arange(-p / 2 + 0.5, 0.5, 0.5, dtype=x._dtype, device=x._device)
    value = lgamma(x.unsqueeze(-1) + shifts).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    return write_out(value, out, "mvlgamma")


mvlgamma_ = _export_twin(mvlgamma, "mvlgamma_")
__all__ += ["sgn_", "heaviside_", "nextafter_", "float_power_", "mvlgamma_"]


# -- torch.special's own operators ------------------------------------------------------------
# NOTE [torch.special operators]
# Each function below is one operator (``special_<name>``) with a CPU kernel in
# ember.backends.cpu.special that evaluates it in float64 (ember.backends.cpu._special_math)
# and rounds once. torch implements the Bessel, Airy, zeta and polynomial kernels for float32
# and float64 only (half types raise NotImplementedError) and gives them no derivative: their
# outputs never require grad. erfcx, ndtri, i1, i0e, i1e, zeta (in ``other``) and the
# incomplete gamma functions (in ``other``) are differentiable as in torch.
_INT_TO_FLOAT = Unary(P.INT_TO_FLOAT, ANY, False, "")
_SPECIAL_BINARY = Binary(P.INT_TO_FLOAT, ANY, True, True, False, "")
_IGAMMA = Binary(P.DEFAULT, FLT, False, False, False, "")


def _no_halves(name: str, res: dt.DType) -> None:
    if res in _HALF:
        from ember.ops.pointwise import not_implemented
        raise not_implemented(f"{name}_cpu", res)


def special_unary_plan(name: str, input, halves: bool) -> tuple:
    """(shape, compute, result) of a unary special function (integers become floats)."""
    plan = unary_plan(name, _INT_TO_FLOAT, input)
    if not halves:
        _no_halves(name, plan[2])
    return plan


def special_binary_plan(name: str, input, other) -> tuple:
    """(shape, compute, result) of ``zeta`` and the polynomials: tensors or scalars on either
    side, integers promoted to the default float, float32/float64 only."""
    plan = binary_plan(name, _SPECIAL_BINARY, input, other)
    _no_halves(name, plan[2])
    return plan


def igamma_plan(name: str, input, other) -> tuple:
    """(shape, compute, result) of ``gammainc``/``gammaincc``: two floating tensors."""
    for pos, (arg, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"special_{name}(): argument '{arg}' (position {pos}) must be "
                            f"Tensor, not {type(value).__name__}")
    return binary_plan(name, _IGAMMA, input, other)


def _declare_special(name: str, doc: str, *, halves: bool = False, binary: bool = False):
    """Declare operator ``special_<name>`` whose Meta rule checks and types its arguments."""
    kernel_name = {"gammainc": "igamma", "gammaincc": "igammac"}.get(name, name)
    if binary:
        args = "Tensor self, Tensor other" if name in ("zeta", "gammainc", "gammaincc") \
            else "Tensor x, Tensor n"
        plan = igamma_plan if name in ("gammainc", "gammaincc") else special_binary_plan

        def rule(input, other, *, out=None):
            shape, _, res = plan(kernel_name, input, other)
            if out is not None:
                check_out(out, shape, res)
            return Spec(shape, res)
    else:
        args = "Tensor self"

        def rule(input, *, out=None):
            shape, _, res = special_unary_plan(kernel_name, input, halves)
            if out is not None:
                check_out(out, shape, res)
            return Spec(shape, res)

    rule.__doc__ = doc
    rule.__name__ = rule.__qualname__ = name
    schema = f"special_{name}({args}, *, Tensor(a!)? out=None) -> Tensor"
    return operator(schema, (Tag.pointwise,), method=False)(rule)


_DIFFERENTIABLE = ("erfcx", "ndtri", "i1", "i0e", "i1e")


def _unary_doc(what: str, value: str, example: str) -> str:
    dtypes = "every floating dtype" if example in _HALF_OK \
        else "float32 and float64 (half types raise NotImplementedError, as torch)"
    grad = "Differentiable with torch's formula." if example in _DIFFERENTIABLE else \
        "Not differentiable, as in torch (the result never requires grad)."
    return f"""{what}

    torch.special.{example}: integers promote to the default float dtype; {dtypes},
    evaluated in float64 and rounded once. {grad}

    Shape: same as ``input``. ``out``: optional output tensor.

    Example:
        >>> round(ember.special.{example}(ember.tensor([1.0])).item(), 4)
        {value}
    """


def _polynomial_doc(what: str, name: str, printed: str) -> str:
    x = "0.75" if name.startswith("shifted") else "0.25"
    return f"""{what} of degree ``n`` at ``x``.

    ``x`` and ``n`` (tensors or numbers, broadcast together) promote to a float dtype;
    ``n`` is truncated to an integer and negative degrees give 0. Not differentiable, as in
    torch (the result never requires grad).

    Example:
        >>> ember.special.{name}(ember.tensor([{x}]), 3)
        {printed}
    """


UNARY_SPECIAL = {
    "erfcx": ("Scaled complementary error function ``exp(x**2) * erfc(x)``.", "0.4276"),
    "ndtri": ("Inverse of the standard normal CDF (``-inf`` at 0, ``inf`` at 1, NaN outside "
              "[0, 1]).", "inf"),
    "bessel_j0": ("Bessel function of the first kind, order 0.", "0.7652"),
    "bessel_j1": ("Bessel function of the first kind, order 1.", "0.4401"),
    "bessel_y0": ("Bessel function of the second kind, order 0 (``-inf`` at 0, NaN below).",
                  "0.0883"),
    "bessel_y1": ("Bessel function of the second kind, order 1 (``-inf`` at 0, NaN below).",
                  "-0.7812"),
    "modified_bessel_i0": ("Modified Bessel function of the first kind, order 0.", "1.2661"),
    "modified_bessel_i1": ("Modified Bessel function of the first kind, order 1.", "0.5652"),
    "modified_bessel_k0": ("Modified Bessel function of the second kind, order 0 (inf at 0, "
                           "NaN below).", "0.421"),
    "modified_bessel_k1": ("Modified Bessel function of the second kind, order 1 (inf at 0, "
                           "NaN below).", "0.6019"),
    "scaled_modified_bessel_k0": ("``exp(x) * modified_bessel_k0(x)``, finite for large x.",
                                  "1.1445"),
    "scaled_modified_bessel_k1": ("``exp(x) * modified_bessel_k1(x)``, finite for large x.",
                                  "1.6362"),
    "spherical_bessel_j0": ("Spherical Bessel function of the first kind, order 0: "
                            "``sin(x) / x``, 1 at 0.", "0.8415"),
    "airy_ai": ("Airy function Ai.", "0.1353"),
    "i1": ("Modified Bessel function of the first kind, order 1 (``special.i1``).", "0.5652"),
    "i0e": ("Exponentially scaled ``i0``: ``exp(-|x|) * i0(x)``.", "0.4658"),
    "i1e": ("Exponentially scaled ``i1``: ``exp(-|x|) * i1(x)``.", "0.2079"),
}
_HALF_OK = ("i1", "i0e", "i1e")
POLYNOMIALS = {
    "chebyshev_polynomial_t": ("Chebyshev polynomial of the first kind", "tensor([-0.6875])"),
    "chebyshev_polynomial_u": ("Chebyshev polynomial of the second kind", "tensor([-0.8750])"),
    "chebyshev_polynomial_v": ("Chebyshev polynomial of the third kind", "tensor([-0.1250])"),
    "chebyshev_polynomial_w": ("Chebyshev polynomial of the fourth kind", "tensor([-1.6250])"),
    "shifted_chebyshev_polynomial_t": ("Shifted Chebyshev polynomial of the first kind "
                                       "``T_n(2x - 1)``", "tensor([-1.])"),
    "shifted_chebyshev_polynomial_u": ("Shifted Chebyshev polynomial of the second kind "
                                       "``U_n(2x - 1)``", "tensor([-1.])"),
    "shifted_chebyshev_polynomial_v": ("Shifted Chebyshev polynomial of the third kind "
                                       "``V_n(2x - 1)``", "tensor([-1.])"),
    "shifted_chebyshev_polynomial_w": ("Shifted Chebyshev polynomial of the fourth kind "
                                       "``W_n(2x - 1)``", "tensor([-1.])"),
    "hermite_polynomial_h": ("Physicists' Hermite polynomial", "tensor([-2.8750])"),
    "hermite_polynomial_he": ("Probabilists' Hermite polynomial", "tensor([-0.7344])"),
    "laguerre_polynomial_l": ("Laguerre polynomial", "tensor([0.3411])"),
    "legendre_polynomial_p": ("Legendre polynomial", "tensor([-0.3359])"),
}

SPECIAL_OPS: dict = {}
for _name, (_what, _value) in UNARY_SPECIAL.items():
    SPECIAL_OPS[_name] = _declare_special(_name, _unary_doc(_what, _value, _name),
                                          halves=_name in _HALF_OK)
for _name, (_what, _value) in POLYNOMIALS.items():
    SPECIAL_OPS[_name] = _declare_special(_name, _polynomial_doc(_what, _name, _value),
                                          binary=True)
SPECIAL_OPS["zeta"] = _declare_special("zeta", """Hurwitz zeta function
    ``zeta(x, q) = sum_{k >= 0} (k + q) ** -x``.

    inf at ``x = 1`` and at the poles ``q = 0, -1, ...``; NaN for ``x < 1``. Differentiable
    in ``q`` only (torch has no derivative in ``x``). Tensors or numbers, broadcast.

    Example:
        >>> round(ember.special.zeta(ember.tensor([2.0]), 1.0).item(), 6)
        1.644934
    """, binary=True)
SPECIAL_OPS["gammainc"] = _declare_special("gammainc", """Regularized lower incomplete gamma
    function ``P(a, x)`` (``input`` is ``a``, ``other`` is ``x``; torch.igamma).

    Both arguments tensors of a floating dtype, broadcast. Differentiable in ``x`` only.

    Example:
        >>> round(ember.special.gammainc(ember.tensor([1.0]), ember.tensor([2.0])).item(), 4)
        0.8647
    """, binary=True)
SPECIAL_OPS["gammaincc"] = _declare_special("gammaincc", """Regularized upper incomplete
    gamma function ``Q(a, x) = 1 - P(a, x)`` (torch.igammac).

    Example:
        >>> round(ember.special.gammaincc(ember.tensor([1.0]), ember.tensor([2.0])).item(), 4)
        0.1353
    """, binary=True)


# module attributes (``special_bessel_j0``, ...), where the doctest collector finds them
globals().update({f"special_{name}": op for name, op in SPECIAL_OPS.items()})

# torch records nothing for these: autograd falls through, the output never requires grad
for _name in (*POLYNOMIALS, *(n for n in UNARY_SPECIAL if n not in _DIFFERENTIABLE)):
    SPECIAL_OPS[_name].register(AliasKey.Autograd, FALLTHROUGH)

_SQRT_2PI = math.sqrt(2 * math.pi)


@derivative(SPECIAL_OPS["erfcx"], save=("input", "result"))
def _erfcx_backward(ctx, grad):
    return grad * (2.0 * ctx.input * ctx.result - 2.0 / math.sqrt(math.pi))


@derivative(SPECIAL_OPS["ndtri"], save=("result",))
def _ndtri_backward(ctx, grad):
    return grad * _SQRT_2PI * (ctx.result.square() * 0.5).exp()


def _safe_nonzero(x: Tensor) -> tuple:
    """(|x| > eps, x with those tiny entries replaced by eps): torch's guard at 0."""
    eps = dt.finfo(x._dtype).eps
    big = x.abs() > eps
    return big, where(big, x, eps)


@derivative(SPECIAL_OPS["i1"], save=("input", "result"))
def _i1_backward(ctx, grad):
    big, safe = _safe_nonzero(ctx.input)
    return grad * where(big, i0(safe) - ctx.result / safe, 0.5)


@derivative(SPECIAL_OPS["i0e"], save=("input", "result"))
def _i0e_backward(ctx, grad):
    return grad * (SPECIAL_OPS["i1e"](ctx.input) - ctx.input.sign() * ctx.result)


@derivative(SPECIAL_OPS["i1e"], save=("input", "result"))
def _i1e_backward(ctx, grad):
    big, safe = _safe_nonzero(ctx.input)
    value = SPECIAL_OPS["i0e"](safe) - ctx.result * (safe.sign() + safe.reciprocal())
    return grad * where(big, value, 0.5)


def _no_derivative(what: str):
    raise NotImplementedError(f"the derivative for '{what}' is not implemented.")


@derivative(SPECIAL_OPS["zeta"], save=("input", "other"))
def _zeta_backward(ctx, grad):
    def d_other():
        return grad * -ctx.input * SPECIAL_OPS["zeta"](ctx.input + 1.0, ctx.other)
    return _grads(ctx, lambda: _no_derivative("zeta"), d_other)


def _igamma_grad(ctx, grad, sign: float) -> Tensor:
    a, x = ctx.input, ctx.other
    return grad * (sign * ((a - 1) * x.log() - x - lgamma(a)).exp())


@derivative(SPECIAL_OPS["gammainc"], save=("input", "other"))
def _gammainc_backward(ctx, grad):
    return _grads(ctx, lambda: _no_derivative("igamma: input"),
                  lambda: _igamma_grad(ctx, grad, 1.0))


@derivative(SPECIAL_OPS["gammaincc"], save=("input", "other"))
def _gammaincc_backward(ctx, grad):
    return _grads(ctx, lambda: _no_derivative("igammac: input"),
                  lambda: _igamma_grad(ctx, grad, -1.0))


igamma = SPECIAL_OPS["gammainc"]
igammac = SPECIAL_OPS["gammaincc"]
TENSOR_METHODS["igamma"] = igamma
TENSOR_METHODS["igammac"] = igammac
_TWIN_EXAMPLES.update({"igamma_": ("[1.0, 2.0]", ", ember.tensor([2.0, 1.0])"),
                       "igammac_": ("[1.0, 2.0]", ", ember.tensor([2.0, 1.0])")})
igamma_ = _export_twin(igamma, "igamma_")
igammac_ = _export_twin(igammac, "igammac_")
__all__ += ["igamma", "igammac", "igamma_", "igammac_"]
