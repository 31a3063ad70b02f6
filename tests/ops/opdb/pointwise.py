"""Op-table entries: the pointwise family (unary, binary, in-place, scalar operands, out=)."""

from __future__ import annotations

import math

import numpy as np

import ember
from tests.opinfo import (
    ALL,
    BROADCAST_PAIRS,
    COMPLEX,
    FLOATS,
    ErrorInput,
    OpInfo,
    SampleInput,
    binary_samples,
    hostile,
    make,
    unary_samples,
)

# -- unary ------------------------------------------------------------------------------------
# name -> (low, high) of the sample values (None: the default range)
UNARY_DOMAINS = {
    "neg": None, "abs": None, "sign": None, "exp": None, "exp2": None, "expm1": None,
    "log": (0.05, 5), "log2": (0.05, 5), "log10": (0.05, 5), "log1p": (-0.9, 5),
    "sqrt": (0, 5), "rsqrt": (0.05, 5), "square": None, "reciprocal": None, "sin": None,
    "cos": None, "tan": (-1.4, 1.4), "asin": (-1, 1), "acos": (-1, 1), "atan": None,
    "sinh": None, "cosh": None, "tanh": None, "asinh": None, "acosh": (1, 5),
    "atanh": (-0.99, 0.99), "sigmoid": (-10, 10), "erf": None, "erfc": None,
    "erfinv": (-1, 1), "lgamma": (-4, 6), "digamma": (-4, 6), "floor": None, "ceil": None,
    "trunc": None, "frac": None, "relu": None, "bitwise_not": None, "logical_not": None,
    "isnan": None, "isinf": None, "isfinite": None, "isposinf": None, "isneginf": None,
}
NO_INPLACE = {"isnan", "isinf", "isfinite", "isposinf", "isneginf"}
# torch computes these in opmath with slightly different float32 algorithms
LOOSE = {"float32": (2e-5, 2e-5)}


def _unary(name, low_high):
    def gen(d):
        low, high = low_high or (None, None)
        if d not in FLOATS and low_high is not None:  # integer samples: the enclosing ints
            low, high = math.floor(low), max(math.ceil(high), math.floor(low) + 1)
        return unary_samples(d, low=low, high=high)
    return gen


def _fn(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _method_(name):
    return lambda lib, x, *a, **k: getattr(x, name + "_")(*a, **k)


def _special_values(d):
    """Edge values: 0, -0, +-inf, nan, poles, large magnitudes."""
    vals = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, -2.0, 0.5, -2.5, 1e-8, 30.0,
            -30.0, 100.0, 3.7, 0.999, -0.999]
    yield SampleInput((ember.tensor(vals, dtype=getattr(ember, d)),), {}, "special")


OPS: list[OpInfo] = []
for _name, _dom in UNARY_DOMAINS.items():
    # complex dtypes too: torch computes most of these in complex and refuses the rest
    OPS.append(OpInfo(_name, _fn(_name), _unary(_name, _dom), dtypes=ALL + COMPLEX, tol=LOOSE))
    OPS.append(OpInfo(_name + "_special", _fn(_name), _special_values, dtypes=FLOATS[:2],
                      tol={"float32": (1e-5, 1e-5), "float64": (1e-6, 1e-7)}))
    if _name not in NO_INPLACE:
        OPS.append(OpInfo(_name + "_", _method_(_name), _unary(_name, _dom),
                          dtypes=ALL + COMPLEX, tol=LOOSE))
    OPS.append(OpInfo(_name + "_method", lambda lib, x, _n=_name: getattr(x, _n)(),
                      _unary(_name, _dom), dtypes=("float32", "int64")))


def _with_kwargs(low=None, high=None, kw_list=({},)):
    def gen(d):
        for kw in kw_list:
            for s in unary_samples(d, low=low, high=high):
                yield SampleInput(s.args, dict(kw), f"{s.name}{kw}")
    return gen


def _round_samples(d):
    if d in FLOATS:
            yield SampleInput((ember.tensor([0.5, 1.5, 2.5, -0.5, -1.5, 0.25, 1.234567, -7.45,
                                         125.0], dtype=getattr(ember, d)),), {}, "halves")
    yield from _with_kwargs(-100, 100, ({}, {"decimals": 1}, {"decimals": 2},
                                        {"decimals": -1}))(d)


def _complex_non_finite(d):
    """Each part replaced on its own: NaN, +-inf and finite real and imaginary parts mixed."""
    parts = [np.nan, np.inf, -np.inf, 1.5]
    values = [complex(re, im) for re in parts for im in parts]
    for kw in ({}, {"nan": 2.0, "posinf": 1.0, "neginf": -3.0}):
        yield SampleInput((ember.tensor(values, dtype=getattr(ember, d)),), kw, f"parts{kw}")


OPS += [
    OpInfo("round", _fn("round"), _round_samples, dtypes=ALL, tol=LOOSE),
    OpInfo("round_", _method_("round"), _round_samples, dtypes=ALL, tol=LOOSE),
    OpInfo("logit", _fn("logit"), _with_kwargs(0.0, 1.0, ({}, {"eps": 0.1}, {"eps": -1.0})),
           dtypes=ALL, tol=LOOSE),
    OpInfo("logit_", _method_("logit"), _with_kwargs(0.0, 1.0, ({}, {"eps": 0.2})),
           dtypes=ALL, tol=LOOSE),
    OpInfo("nan_to_num", _fn("nan_to_num"), _with_kwargs(kw_list=({}, {"nan": 1.5},
                                                         {"posinf": 9.0, "neginf": -9.0})),
           dtypes=ALL + COMPLEX),
    OpInfo("nan_to_num_special", _fn("nan_to_num"),
           lambda d: [SampleInput((ember.tensor([np.nan, np.inf, -np.inf, 1.0],
                                                dtype=getattr(ember, d)),), kw)
                      for kw in ({}, {"nan": 2.0, "posinf": 1.0})], dtypes=FLOATS),
    OpInfo("nan_to_num_complex_special", _fn("nan_to_num"), _complex_non_finite,
           dtypes=COMPLEX),
    OpInfo("nan_to_num_", _method_("nan_to_num"), _with_kwargs(), dtypes=ALL + COMPLEX),
    OpInfo("positive", _fn("positive"), _unary("positive", None), dtypes=ALL),
    OpInfo("pos_op", lambda lib, x: +x, _unary("positive", None), dtypes=ALL),
    OpInfo("neg_op", lambda lib, x: -x, _unary("neg", None), dtypes=ALL),
    # ~float raises TypeError in torch (its __invert__ checks first); see test_pointwise_extra
    OpInfo("invert_op", lambda lib, x: ~x, _unary("bitwise_not", None),
           dtypes=("int8", "int16", "int32", "int64", "uint8", "bool") + COMPLEX),
    OpInfo("abs_op", lambda lib, x: abs(x), _unary("abs", None), dtypes=ALL),
]

# -- binary -----------------------------------------------------------------------------------
SCALAR_FIRST = {"add", "sub", "mul", "div", "floor_divide", "remainder", "pow", "bitwise_and",
                "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"}
NO_BINARY_INPLACE = {"maximum", "minimum", "fmax", "fmin"}
DIVISIONS = {"floor_divide", "remainder", "fmod"}


def _nonzero_rhs(samples):
    """Replace zeros of the right-hand tensor by ones (integer division by zero raises)."""
    for s in samples:
        if isinstance(s.args[1], ember.Tensor):
            _fill_zeros(s.args[1])
        yield s


def _shift_samples(d):
    yield from binary_samples(d, rhs_low=0, rhs_high=9)
    if d in ("int8", "int16", "int32", "int64", "uint8"):
        x = make((6,), d)
        yield SampleInput((x, ember.tensor([-1, 0, 7, 8, 40, 70], dtype=getattr(ember, d))
                           if d != "uint8" else ember.tensor([0, 7, 8, 9, 200, 3],
                                                             dtype=ember.uint8)), {}, "wide")


def _binary_gen(name):
    def gen(d):
        if name in ("bitwise_left_shift", "bitwise_right_shift"):
            return _shift_samples(d)
        if name in DIVISIONS:
            return _nonzero_rhs(binary_samples(d))
        if name == "pow":
            return binary_samples(d, low=-3, high=3, rhs_low=-3, rhs_high=4,
                                  scalars=(2, -1, 0.5, True, -2.5, 3))
        return binary_samples(d)
    return gen


def _mixed_samples(d):
    """``d`` against every other dtype, as a tensor, a 0-d tensor and a Python scalar."""
    # complex others too, except against float16, whose complex is torch's complex32 (chalf)
    for other in ALL + (COMPLEX if d != "float16" else ()):
        yield SampleInput((make((3, 4), d), make((4,), other)), {}, f"x{other}")
        yield SampleInput((make((3, 4), d, layout="strided"), make((), other)), {},
                          f"x0d{other}")
        yield SampleInput((make((), d), make((2, 3), other)), {}, f"0dx{other}")


def _fill_zeros(t):
    if t.numel():
        view = t.numpy()
        view[view == 0] = 1
    return t


def _scalar_first_samples(d):
    for s in (3, -2, 2.5, True, False, 0.5) + ((1 - 2j,) if d in COMPLEX else ()):
        x = _fill_zeros(make((3, 4), d, layout="strided", low=1, high=4))
        yield SampleInput((x, s), {}, f"{s!r}")


def _binary_tol(name):
    return {"float32": (2e-5, 2e-5), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2)} \
        if name in ("pow", "atan2", "hypot", "floor_divide", "remainder", "fmod") else {}


BINARY_NAMES = ["add", "sub", "mul", "div", "true_divide", "floor_divide", "remainder", "fmod",
                "pow", "atan2", "maximum", "minimum", "fmax", "fmin", "hypot", "copysign",
                "eq", "ne", "lt", "le", "gt", "ge", "greater", "less", "greater_equal",
                "less_equal", "not_equal", "logical_and", "logical_or", "logical_xor",
                "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift",
                "bitwise_right_shift", "multiply", "subtract", "divide", "arctan2"]
for _name in BINARY_NAMES:
    _tol = _binary_tol(_name)
    _meta = True
    OPS.append(OpInfo(_name, _fn(_name), _binary_gen(_name), dtypes=ALL + COMPLEX, tol=_tol))
    OPS.append(OpInfo(_name + "_mixed", _fn(_name),
                      lambda d, _n=_name: _nonzero_rhs(_mixed_samples(d)) if _n in DIVISIONS
                      else _mixed_samples(d), dtypes=ALL, tol=_tol))
    if _name not in NO_BINARY_INPLACE:
        OPS.append(OpInfo(_name + "_", _method_(_name), _binary_gen(_name),
                          dtypes=ALL + COMPLEX, tol=_tol))
    if _name in SCALAR_FIRST:
        OPS.append(OpInfo(_name + "_scalar_first", lambda lib, x, s, _n=_name:
                          getattr(lib, _n)(s, x), _scalar_first_samples, dtypes=ALL, tol=_tol))

# zero divisors: integer division raises ZeroDivisionError (data-dependent, so CPU only)
for _name in ("floor_divide", "remainder", "fmod"):
    OPS.append(OpInfo(_name + "_zero", _fn(_name),
                      lambda d: [SampleInput((make((4,), d), ember.zeros(4, dtype=getattr(
                          ember, d))), {}, "zeros")], dtypes=ALL, meta=False))


def _div_samples(d):
    for mode in (None, "trunc", "floor"):
        for s in _nonzero_rhs(binary_samples(d)):
            yield SampleInput(s.args, {"rounding_mode": mode}, f"{s.name}-{mode}")


OPS += [
    OpInfo("div_rounding", _fn("div"), _div_samples, dtypes=ALL),
    OpInfo("div_rounding_", _method_("div"), _div_samples, dtypes=ALL),
    OpInfo("add_alpha", lambda lib, a, b: lib.add(a, b, alpha=2), binary_samples, dtypes=ALL),
    OpInfo("sub_alpha", lambda lib, a, b: lib.sub(a, b, alpha=-3), binary_samples, dtypes=ALL),
    OpInfo("add_float_alpha", lambda lib, a, b: lib.add(a, b, alpha=0.5), binary_samples,
           dtypes=ALL),
    OpInfo("add_bool_alpha", lambda lib, a, b: lib.add(a, b, alpha=True), binary_samples,
           dtypes=ALL),
    OpInfo("add__alpha", lambda lib, a, b: a.add_(b, alpha=2), binary_samples, dtypes=ALL),
    OpInfo("rsub", lambda lib, a, b: lib.rsub(a, b), binary_samples, dtypes=ALL),
    OpInfo("rsub_alpha", lambda lib, a, b: lib.rsub(a, b, alpha=2), binary_samples,
           dtypes=ALL),
]

# Python operators, both operand orders
PY_OPS = {
    "op_add": lambda a, b: a + b, "op_sub": lambda a, b: a - b, "op_mul": lambda a, b: a * b,
    "op_truediv": lambda a, b: a / b, "op_floordiv": lambda a, b: a // b,
    "op_mod": lambda a, b: a % b, "op_pow": lambda a, b: a ** b,
    "op_and": lambda a, b: a & b, "op_or": lambda a, b: a | b, "op_xor": lambda a, b: a ^ b,
    "op_lshift": lambda a, b: a << b, "op_rshift": lambda a, b: a >> b,
    "op_eq": lambda a, b: a == b, "op_ne": lambda a, b: a != b, "op_lt": lambda a, b: a < b,
    "op_le": lambda a, b: a <= b, "op_gt": lambda a, b: a > b, "op_ge": lambda a, b: a >= b,
}
_PY_DIV = {"op_floordiv", "op_mod"}


def _py_samples(name):
    def gen(d):
        if name in ("op_lshift", "op_rshift"):
            yield from _shift_samples(d)
            return
        if name in _PY_DIV:
            yield from _nonzero_rhs(binary_samples(d, scalars=(2, -1.5, True)))
        else:
            yield from binary_samples(d, scalars=(2, -1.5, True, 0))
    return gen


def _reflected_samples(d):
    for s in (3, -2, 2.5, True, 0.5):
        x = _fill_zeros(make((3, 4), d, layout="strided", low=1, high=4))
        yield SampleInput((s, x), {}, f"{s!r}")


for _name, _op in PY_OPS.items():
    OPS.append(OpInfo(_name, lambda lib, a, b, _f=_op: _f(a, b), _py_samples(_name),
                      dtypes=ALL, tol=_binary_tol("pow")))
    OPS.append(OpInfo(_name + "_reflected", lambda lib, a, b, _f=_op: _f(a, b),
                      _reflected_samples, dtypes=ALL, tol=_binary_tol("pow")))

_IOPS = {"iadd": lambda a, b: a.__iadd__(b), "isub": lambda a, b: a.__isub__(b),
         "imul": lambda a, b: a.__imul__(b), "itruediv": lambda a, b: a.__itruediv__(b),
         "iand": lambda a, b: a.__iand__(b)}
for _name, _op in _IOPS.items():
    OPS.append(OpInfo(_name, lambda lib, a, b, _f=_op: _f(a, b), binary_samples, dtypes=ALL))


# -- ternary and friends ----------------------------------------------------------------------
def _where_samples(d):
    for sa, sb in BROADCAST_PAIRS:
        cond = make(sb, "bool", layout="strided")
        for lay, x in hostile(sa, d, layouts=("contiguous", "strided", "expanded")):
            yield SampleInput((cond, x, make(sb, d)), {}, f"{lay}{sa}x{sb}")
    c = make((3, 4), "bool")
    for s in (1, 2.5, True):
        yield SampleInput((c, make((3, 4), d), s), {}, f"other={s!r}")
        yield SampleInput((c, s, make((4,), d)), {}, f"input={s!r}")
    yield SampleInput((c, 1, 0), {}, "scalars")
    yield SampleInput((c, 1.0, 0), {}, "float-int scalars")
    yield SampleInput((make((3, 4), d), make((3, 4)), 0.0), {}, "non-bool condition")
    for other in ALL:
        yield SampleInput((c, make((3, 4), d), make((4,), other)), {}, f"mixed-{other}")


def _clamp_samples(d):
    for lay, x in hostile((3, 4), d):
        for lo, hi in ((-1, 2), (0.5, 2.5), (None, 1), (-1.5, None), (2, -1), (True, None)):
            yield SampleInput((x,), {"min": lo, "max": hi}, f"{lay}-{lo},{hi}")
        yield SampleInput((x,), {"min": make((4,), d), "max": make((3, 1), d)}, f"{lay}-tensors")
        yield SampleInput((x,), {"min": make((4,), d)}, f"{lay}-min-tensor")
        yield SampleInput((x,), {"max": make((), "float32")}, f"{lay}-max-0d-float")
    yield SampleInput((make((2, 3), d),), {}, "no-bounds")
    yield SampleInput((make((2, 3), d),), {"min": make((3,), d), "max": 2.5}, "mixed-bounds")
    yield SampleInput((make((2, 3), d),), {"min": make((), "int64"), "max": 2}, "0d-and-int")


def _clamp_inplace_samples(d):
    for lay, x in hostile((3, 4), d, writable=True):
        for lo, hi in ((-1, 2), (0.5, 2.5), (None, 1)):
            yield SampleInput((x,), {"min": lo, "max": hi}, f"{lay}-{lo},{hi}")
    yield SampleInput((make((3, 4), d, layout="expanded"),), {"min": 0}, "expanded")


def _clamp_one(kw):
    def gen(d):
        for lay, x in hostile((3, 4), d):
            for b in (1, -0.5, True, make((4,), d), make((3, 1), "float64")):
                yield SampleInput((x, b), {}, f"{lay}-{kw}")
    return gen


def _lerp_samples(d):
    for sa, sb in BROADCAST_PAIRS:
        for lay, x in hostile(sa, d, layouts=("contiguous", "strided", "expanded")):
            end = make(sb, d)
            yield SampleInput((x, end, 0.3), {}, f"{lay}{sa}x{sb}-0.3")
            yield SampleInput((x, end, 0.8), {}, f"{lay}{sa}x{sb}-0.8")
            yield SampleInput((x, end, make(sb, d, low=-0.5, high=1.5)), {}, f"{lay}-tensor-w")
    yield SampleInput((make((3,), d), make((3,), "float64"), 0.5), {}, "end-dtype")
    yield SampleInput((make((3,), d), make((3,), d), make((3,), "float64")), {}, "w-dtype")
    # a 0-d weight: of another floating dtype too (torch computes in input's dtype)
    for wd in ("float32", "float64", "int64") if d in FLOATS else ():
        yield SampleInput((make((3, 4), d, layout="permuted"), make((4,), d),
                           make((), wd, low=0, high=1)), {}, f"w-0d-{wd}")
    yield SampleInput((make((), d), make((), d), make((), d)), {}, "all-0d")
    yield SampleInput((make((0, 3), d), make((3,), d), make((), d)), {}, "empty")


def _lerp_inplace_samples(d):
    for lay, x in hostile((3, 4), d, writable=True):
        yield SampleInput((x, make((4,), d), 0.25), {}, lay)
        yield SampleInput((x, make((3, 4), d), make((3, 1), d, low=0, high=1)), {}, lay + "-w")


def _addc_samples(d):
    for sa, sb in BROADCAST_PAIRS:
        for lay, x in hostile(sa, d, layouts=("contiguous", "strided", "expanded")):
            t1 = make(sb, d)
            t2 = make(sb, d, low=1, high=4)
            yield SampleInput((x, t1, t2), {}, f"{lay}{sa}x{sb}")
            yield SampleInput((x, t1, t2), {"value": 2}, f"{lay}{sa}x{sb}-v2")
            yield SampleInput((x, t2, t1), {"value": 0.5}, f"{lay}{sa}x{sb}-v0.5")
    for other in ("float32", "int64", "bool", "float64"):
        yield SampleInput((make((3,), d), make((3,), other), make((3,), other, low=1, high=3)),
                          {}, f"mixed-{other}")


def _addc_inplace_samples(d):
    for lay, x in hostile((3, 4), d, writable=True):
        yield SampleInput((x, make((4,), d), make((3, 4), d, low=1, high=4)), {"value": 2}, lay)


def _isclose_samples(d):
    base = make((3, 4), d)
    for lay, x in hostile((3, 4), d):
        yield SampleInput((x, base), {}, lay)
        yield SampleInput((x, x), {}, lay + "-self")
    a = ember.tensor([1.0, np.nan, np.inf, -np.inf, 1.0, 0.0, 100.0, 1e-9])
    b = ember.tensor([1.0 + 1e-7, np.nan, np.inf, np.inf, 1.1, 1e-9, 100.001, 0.0])
    dd = getattr(ember, d)
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.1, "atol": 0.0}, {"rtol": 0, "atol": 0},
               {"atol": 0.5}):
        yield SampleInput((a.to(dd), b.to(dd)), kw, f"edge{kw}")
    yield SampleInput((make((4,), d), make((3, 1), d)), {"rtol": 0.5, "atol": 2}, "bcast")
    yield SampleInput((make((4,), d), make((4,), "float32" if d != "float32" else "float64")),
                      {}, "dtype-mismatch")


def _equal_samples(d):
    x = make((3, 4), d)
    yield SampleInput((x, x.clone()), {}, "same")
    yield SampleInput((x, make((3, 4), d)), {}, "different")
    yield SampleInput((x, x[:2]), {}, "shape")
    yield SampleInput((x, x.to(ember.float64)), {}, "dtype")
    yield SampleInput((make((0,), d), make((0,), d)), {}, "empty")


OPS += [
    OpInfo("where", _fn("where"), _where_samples, dtypes=ALL + COMPLEX),
    OpInfo("where_method", lambda lib, c, x, y: x.where(c, y),
           lambda d: (s for s in _where_samples(d) if isinstance(s.args[1], ember.Tensor)),
           dtypes=ALL + COMPLEX),
    OpInfo("clamp", _fn("clamp"), _clamp_samples, dtypes=ALL),
    OpInfo("clip", _fn("clip"), _clamp_samples, dtypes=ALL),
    OpInfo("clamp_", _method_("clamp"), _clamp_inplace_samples, dtypes=ALL),
    OpInfo("clip_", _method_("clip"), _clamp_inplace_samples, dtypes=ALL),
    OpInfo("clamp_min", _fn("clamp_min"), _clamp_one("min"), dtypes=ALL),
    OpInfo("clamp_max", _fn("clamp_max"), _clamp_one("max"), dtypes=ALL),
    OpInfo("clamp_min_", _method_("clamp_min"), _clamp_one("min"), dtypes=ALL),
    OpInfo("lerp", _fn("lerp"), _lerp_samples, dtypes=ALL + COMPLEX),
    OpInfo("lerp_", _method_("lerp"), _lerp_inplace_samples, dtypes=ALL + COMPLEX),
    OpInfo("addcmul", _fn("addcmul"), _addc_samples, dtypes=ALL + COMPLEX,
           tol={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}),
    OpInfo("addcdiv", _fn("addcdiv"), _addc_samples, dtypes=ALL + COMPLEX,
           tol={"float32": (2e-5, 2e-5), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}),
    OpInfo("addcmul_", _method_("addcmul"), _addc_inplace_samples, dtypes=ALL + COMPLEX,
           tol={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}),
    OpInfo("addcdiv_", _method_("addcdiv"), _addc_inplace_samples, dtypes=ALL + COMPLEX,
           tol={"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}),
    OpInfo("isclose", _fn("isclose"), _isclose_samples, dtypes=ALL + COMPLEX),
    OpInfo("allclose", _fn("allclose"), _isclose_samples, dtypes=ALL + COMPLEX, meta=False),
    OpInfo("equal", _fn("equal"), _equal_samples, dtypes=ALL + COMPLEX, meta=False),
]


# -- out= -------------------------------------------------------------------------------------
def _out_samples(d):
    a, b = make((3, 4), d), make((4,), d)
    for od in ("float32", "float64", "int64", "bool", d):
        yield SampleInput((a, b, ember.empty(3, 4, dtype=getattr(ember, od))), {}, f"out-{od}")
    yield SampleInput((a, b, ember.empty(0, dtype=getattr(ember, d))), {}, "resize-empty")
    yield SampleInput((a, b, ember.empty(2, 6, dtype=getattr(ember, d))), {}, "reshape-same-n")


OUT_OPS = {
    "add": lambda lib, a, b, out: lib.add(a, b, out=out),
    "div": lambda lib, a, b, out: lib.div(a, b, out=out),
    "eq": lambda lib, a, b, out: lib.eq(a, b, out=out),
    "logical_and": lambda lib, a, b, out: lib.logical_and(a, b, out=out),
    "exp": lambda lib, a, b, out: lib.exp(a, out=out),
    "isnan": lambda lib, a, b, out: lib.isnan(a, out=out),
    "where": lambda lib, a, b, out: lib.where(a > 0, a, b, out=out),
    "clamp": lambda lib, a, b, out: lib.clamp(a, 0, 1, out=out),
    "pow": lambda lib, a, b, out: lib.pow(a, 2, out=out),
    "round": lambda lib, a, b, out: lib.round(a, out=out),
}
for _name, _f in OUT_OPS.items():
    OPS.append(OpInfo(_name + "_out", lambda lib, a, b, out, _f=_f: (_f(lib, a, b, out), out),
                      _out_samples, dtypes=("float32", "int32", "bool")))


# -- error inputs -----------------------------------------------------------------------------
def _errors():
    f, i = make((2,)), make((3,), "int64")
    b = make((2,), "bool")

    def e(fn, *args, error=RuntimeError, match=None, **kw):
        return ErrorInput(SampleInput((fn, *args), kw), error, match)

    yield e("add", make((2, 3)), make((4, 3)),
            match=r"size of tensor a \(2\) must match the size of tensor b \(4\)")
    yield e("add_", make((3,), "int64"), 1.5,
            match="result type Float can't be cast to the desired output type Long")
    yield e("add_", make((2,)), make((3, 2)),
            match=r"output with shape \[2\] doesn't match the broadcast shape \[3, 2\]")
    yield e("add_", make((2, 3), layout="expanded"), 1,
            match="more than one element of the written-to tensor refers to a single memory")
    yield e("add", f, f, out=ember.empty(2, dtype=ember.int8),
            match="result type Float can't be cast to the desired output type Char")
    yield e("add", i, 2, alpha=1.5, match="alpha must not be a floating point")
    yield e("add", f, f, alpha=True, match="Boolean alpha only supported")
    yield e("sub", b, b, match="with two bool tensors is not supported")
    yield e("sub", f, True, match="with a bool tensor is not supported")
    yield e("neg", b, match="Negation, the `-` operator, on a bool tensor")
    yield e("div", f, f, rounding_mode="bad", match="rounding_mode to be one of")
    yield e("pow", i, -1, match="Integers to negative integer powers are not allowed")
    yield e("floor_divide", i, 0, match="ZeroDivisionError")
    yield e("remainder", i, ember.zeros(3, dtype=ember.int64), match="ZeroDivisionError")
    yield e("div", i, 0, rounding_mode="trunc", match="ZeroDivisionError")
    yield e("clamp", f, match="At least one of 'min' or 'max' must not be None")
    yield e("where", make((2,), "int64"), f, f, match="condition to be a boolean tensor")
    yield e("lerp", f, make((2,), "float64"), 0.5, match="expected dtype float32 for `end`")
    yield e("lerp", i, i, 0.5, error=NotImplementedError, match="not implemented for 'Long'")
    yield e("addcdiv", f, make((2,), "int64"), make((2,), "int64"),
            match="Integer division with addcdiv")
    yield e("isclose", f, make((2,), "float64"), match="Float did not match Double")
    yield e("isclose", f, f, rtol=-1.0, match="rtol must be greater than or equal to zero")
    yield e("maximum", f, 2, error=TypeError, match="must be Tensor, not int")
    yield e("eq", 2, f, error=TypeError, match="must be Tensor, not int")
    yield e("bitwise_and", f, f, error=NotImplementedError, match="not implemented for 'Float'")
    yield e("abs", b, error=NotImplementedError, match="not implemented for 'Bool'")
    yield e("frac", i, error=NotImplementedError, match="not implemented for 'Long'")
    yield e("exp_", i, match="result type Float can't be cast to the desired output type Long")
    yield e("hypot", i, i, error=NotImplementedError, match="not implemented for 'Long'")
    yield e("relu", b, match="Boolean inputs not supported for relu")
    yield e("positive", b, match="The `\\+` operator, on a bool tensor is not supported")
    yield e("clamp_", make((3,), "int64"), 0.5, 2,
            match="result type Float can't be cast to the desired output type")
    yield e("equal", f, 2, error=TypeError, match="must be Tensor, not int")


def _call(lib, name, *args, **kw):
    if name.endswith("_") and not hasattr(lib, name):
        return getattr(args[0], name)(*args[1:], **kw)
    return getattr(lib, name)(*args, **kw)


# half types: cancellation (a - b with a close to b) magnifies one rounding step
_HALF_TOL = {"float16": (1e-3, 2e-3), "bfloat16": (1.6e-2, 2e-2)}
for _info in OPS:
    _info.tol = {**_HALF_TOL, **_info.tol}



# -- gradients (tests/ops/test_ops_grad.py reads ``grad`` and ``gradcheck``) -----------------
_HALVES = ("float16", "bfloat16")


def _no_halves(samples):
    """Samples without half-precision tensors: torch's bfloat16 gradients have no NumPy
    conversion, and a float16 result of a float64 0-d operand differs from torch by 1 ulp
    in the forward kernel (see test_pointwise_extra's xfail), beyond the 1e-6 grad tolerance."""
    for s in samples:
        ts = [a for a in s.args if isinstance(a, ember.Tensor)]
        ts += [v for v in s.kwargs.values() if isinstance(v, ember.Tensor)]
        if not any(t.dtype.name in _HALVES for t in ts):
            yield s


def _no_bool_scalar(samples):
    """Samples without a Python bool operand: torch's backward of ``pow(True, x)`` fails an
    internal assert ("unknown ivalue tag 4"); ember gives the true gradient 0."""
    for s in samples:
        if not any(isinstance(a, bool) for a in s.args):
            yield s


# name -> sample filter: the gradients of these entries are compared on a float64 copy
# ("<name>_grad") without the samples torch cannot differentiate; forward tests keep them all.
# Entries whose float64 samples mix in half-precision tensors:
_GRAD_FILTERS = {n: _no_halves for n in [f"{n}_mixed" for n in BINARY_NAMES]
                 + ["where", "where_method"]}
_GRAD_FILTERS.update({"pow_scalar_first": _no_bool_scalar, "op_pow_reflected": _no_bool_scalar})
# torch 2.13 has no derivative for floor_divide, nor for remainder(Scalar, Tensor): both
# backwards refuse (ember's too, which the gradient test checks), so nothing to gradcheck.
_NO_FORMULA = {"floor_divide", "floor_divide_", "floor_divide_mixed",
               "floor_divide_scalar_first", "floor_divide_zero", "op_floordiv",
               "op_floordiv_reflected", "remainder_scalar_first", "op_mod_reflected"}
# Finite differences are meaningless at these samples: inf/NaN/poles (the *_special entries),
# float division by zero (NaN/inf values), negative bases to fractional powers (NaN; the
# pow_positive entry gradchecks pow instead).
_NOT_SMOOTH = {"remainder_zero", "fmod_zero", "pow", "op_pow", "pow_scalar_first",
               "op_pow_reflected"}
# torch's logical_*_ on a float leaf that requires grad silently overwrite it (the in-place
# op is invisible to its autograd); ember refuses like every other in-place op on a leaf.
_TORCH_QUIRK = {"logical_not_", "logical_and_", "logical_or_", "logical_xor_"}

_grad_variants = [
    OpInfo("pow_positive", _fn("pow"), lambda d: binary_samples(
        d, low=0.5, high=3, rhs_low=-3, rhs_high=4, scalars=(2, -1, 0.5, 0, -2.5)),
        dtypes=("float64",)),
]
for _info in OPS:
    _filter = _GRAD_FILTERS.get(_info.name)
    if _filter is not None:
        _info.grad = False
        _variant = OpInfo(_info.name + "_grad", _info.fn,
                          lambda d, _g=_info.samples, _f=_filter: _f(_g(d)), dtypes=("float64",))
        # the mixed samples have float32 leaves, and gradcheck needs every input in float64
        _variant.gradcheck = _info.name not in _NOT_SMOOTH and _filter is not _no_halves
        _grad_variants.append(_variant)
    if _info.name in _TORCH_QUIRK:
        _info.grad = False
    if _info.name in _NO_FORMULA or _info.name in _NOT_SMOOTH or \
            _info.name.endswith("_special"):
        _info.gradcheck = False
OPS += _grad_variants

OPS.append(OpInfo("pointwise_errors", _call, lambda d: [], dtypes=(), errors=_errors))
