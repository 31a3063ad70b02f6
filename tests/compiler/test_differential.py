"""Differential tests of the backends: random pointwise/reduction expression trees over random
shapes, broadcasts and strides (slices, transposes, expands), in float32/64, int32/64, bool,
bfloat16 and float16, with NaN/inf, zero-size and 0-d tensors: the C backend equals the NumPy
backend equals eager ember.

Tolerances follow from the computation: exact ops (integer arithmetic, comparisons, casts,
max/min, where) must match exactly; each float op is within a few ulps of eager (libm and
libmvec differ from NumPy's transcendental functions by up to ~4 ulp), growing with the depth of
the tree; reductions reorder additions (error ~ n ulp of the sum of magnitudes); half dtypes are
rounded by eager after every op, which the C kernels reproduce (so only transcendentals differ,
by one half-precision ulp)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember.compiler import cc, make_fx
from ember.compiler.backends import compile_graph

pytestmark = [pytest.mark.skipif(cc.compiler() is None, reason="needs gcc"),
              pytest.mark.usefixtures("isolated_kernel_cache")]

SETTINGS = settings(max_examples=15, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])




FLOAT_UNARY = ["neg", "abs", "exp", "log", "tanh", "sigmoid", "relu", "sqrt", "sin", "cos",
               "floor", "ceil", "square", "reciprocal", "erf", "log1p", "expm1", "rsqrt"]
EXACT_UNARY = {"neg", "abs", "relu", "floor", "ceil", "square"}
FLOAT_BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow2", "where_gt",
                "eq_float", "clamp"]
INT_UNARY = ["neg", "abs", "relu", "square"]
INT_BINARY = ["add", "sub", "mul", "maximum", "minimum", "where_gt", "eq_float", "floordiv",
              "remainder", "to_float_div"]
REDUCTIONS = ["sum", "mean", "amax", "amin", "softmax", "log_softmax"]
ULP = {ember.float32: 2.0 ** -23, ember.float64: 2.0 ** -52, ember.bfloat16: 2.0 ** -7,
       ember.float16: 2.0 ** -10}


def _apply_unary(name, x):
    if name == "square":
        return x * x
    return getattr(x, name)()


def _apply_binary(name, x, y):
    if name == "pow2":
        return x ** 2 + y
    if name == "where_gt":
        return ember.where(x > y, x, y * 2)
    if name == "eq_float":
        return (x == y).to(x.dtype) + x
    if name == "clamp":
        return x.clamp(-1, 1) - y
    if name == "floordiv":
        return x // y
    if name == "remainder":
        return x % y
    if name == "to_float_div":
        return x / y
    return getattr(ember, name)(x, y)


def _apply_reduction(name, x, dim, keepdim):
    if name in ("softmax", "log_softmax"):
        return getattr(x, name)(dim)
    return getattr(x, name)(dim, keepdim=keepdim)


@st.composite
def programs(draw, ints=False):
    """A list of steps over 2 inputs: ('u', op, i) | ('b', op, i, j) | ('r', op, i, dim,
    keepdim); each step's result is appended to the value list."""
    steps = []
    n = 2
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["u", "b", "b", "r"] if not ints else ["u", "b", "b"]))
        if kind == "u":
            steps.append(("u", draw(st.sampled_from(INT_UNARY if ints else FLOAT_UNARY)),
                          draw(st.integers(0, n - 1))))
        elif kind == "b":
            steps.append(("b", draw(st.sampled_from(INT_BINARY if ints else FLOAT_BINARY)),
                          draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))))
        else:
            steps.append(("r", draw(st.sampled_from(REDUCTIONS)), draw(st.integers(0, n - 1)),
                          draw(st.sampled_from([-1, 0, None])), draw(st.booleans())))
        n += 1
    return steps


def run_program(steps, a, b):
    vals = [a, b]
    out = []
    for s in steps:
        if s[0] == "u":
            v = _apply_unary(s[1], vals[s[2]])
        elif s[0] == "b":
            x, y = vals[s[2]], vals[s[3]]
            v = _apply_binary(s[1], x, y)
        else:
            x = vals[s[2]]
            dim = s[3]
            if x.ndim == 0 or (dim is not None and x.shape[dim] == 0 and s[1] in ("amax", "amin")):
                v = x * 1
            elif dim is None and s[1] in ("softmax", "log_softmax"):
                v = getattr(x, s[1])(-1)
            elif dim is None:
                v = getattr(x, s[1])() if s[1] not in ("amax", "amin") or x.numel() else x * 1
            else:
                v = _apply_reduction(s[1], x, dim, s[4])
        vals.append(v)
        out.append(v)
    return tuple(out)


def _inputs(draw_shape, layout, dtype, special, seed):
    """Two inputs of broadcast-compatible shapes in ``layout``; NaN/inf when ``special``."""
    rng = np.random.default_rng(seed)
    rows, cols = draw_shape

    def make(shape):
        if dtype in (ember.int32, ember.int64):
            arr = rng.integers(-5, 6, size=shape)
        elif dtype is ember.bool:
            arr = rng.integers(0, 2, size=shape).astype(bool)
        else:
            arr = rng.standard_normal(shape) * 2
            if special and arr.size:
                flat = arr.reshape(-1)
                for v in (np.nan, np.inf, -np.inf, 0.0):
                    flat[rng.integers(0, flat.size)] = v
        return ember.tensor(arr).to(dtype)

    if layout == "scalar":
        return make(()), make((rows, cols))
    if layout == "transposed":
        return make((cols, rows)).t(), make((rows, cols))
    if layout == "sliced":
        return make((rows, 2 * cols + 1))[:, 1::2], make((rows, cols))
    if layout == "broadcast":
        return make((rows, 1)), make((1, cols))
    if layout == "expanded":
        return make((cols,)).expand(rows, cols), make((rows, cols))
    return make((rows, cols)), make((rows, cols))


def _tolerance(steps, dtype):
    """(rtol, atol) for a program: exact unless an inexact float op runs."""
    if dtype in (ember.int32, ember.int64, ember.bool):
        return 0.0, 0.0
    inexact = sum(1 for s in steps if (s[0] == "u" and s[1] not in EXACT_UNARY) or
                  (s[0] == "b" and s[1] in ("div", "pow2")) or s[0] == "r")
    reds = sum(1 for s in steps if s[0] == "r")
    ulp = ULP[dtype]
    if dtype in (ember.bfloat16, ember.float16):
        # eager rounds each op; the kernels round at the same places, so only libm differs
        return 2 * ulp * (1 + inexact), 2 * ulp * (1 + inexact)
    return 64 * ulp * (1 + inexact) * (1 + 8 * reds), 64 * ulp * (1 + inexact) * (1 + 64 * reds)


def _compare(got, want, rtol, atol, what):
    assert type(got) is ember.Tensor, what
    assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape), what
    g, w = got.numpy(), want.numpy()
    if got.dtype.is_floating_point:
        g, w = g.astype(np.float64), w.astype(np.float64)
        same_nan = np.isnan(g) == np.isnan(w)
        assert same_nan.all(), f"{what}: NaN positions differ"
        fin = ~np.isnan(w)
        inf = np.isinf(w) & fin
        assert (g[inf] == w[inf]).all(), f"{what}: infinities differ"
        m = fin & ~np.isinf(w)
        # magnitudes: a value computed from large terms carries their rounding error
        scale = np.maximum(np.abs(w[m]), 1.0)
        err = np.abs(g[m] - w[m])
        assert (err <= atol * scale + rtol * np.abs(w[m])).all(), \
            f"{what}: max error {err.max() if err.size else 0} (rtol {rtol}, atol {atol})"
    else:
        assert (g == w).all(), f"{what}: values differ"


def _check_program(steps, a, b, rtol, atol):
    try:
        want = run_program(steps, a, b)
    except RuntimeError as e:      # integer division by zero: every backend raises the same
        gm = make_fx(lambda x, y: run_program(steps, x, y))(a, b)
        for backend in ("numpy", "c"):
            with pytest.raises(RuntimeError, match=str(e).split(":")[0]):
                compile_graph(gm.graph, [a, b], backend)(a, b)
        return
    gm = make_fx(lambda x, y: run_program(steps, x, y))(a, b)
    ref = compile_graph(gm.graph, [a, b], "numpy")(a, b)
    got = compile_graph(gm.graph, [a, b], "c")(a, b)
    for i, (g, r, w) in enumerate(zip(got, ref, want, strict=True)):
        _compare(r, w, rtol, atol, f"numpy backend, output {i} of {steps}")
        _compare(g, w, rtol, atol, f"c backend, output {i} of {steps}")


SHAPES = st.tuples(st.sampled_from([0, 1, 3, 4, 7]), st.sampled_from([1, 2, 5, 8, 33]))
LAYOUTS = st.sampled_from(["contiguous", "transposed", "sliced", "broadcast", "expanded",
                           "scalar"])


@SETTINGS
@given(programs(), SHAPES, LAYOUTS, st.sampled_from([ember.float32, ember.float64]),
       st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_float_programs(steps, shape, layout, dtype, special, seed):
    a, b = _inputs(shape, layout, dtype, special, seed)
    _check_program(steps, a, b, *_tolerance(steps, dtype))


@SETTINGS
@given(programs(ints=True), SHAPES, LAYOUTS, st.sampled_from([ember.int32, ember.int64]),
       st.integers(0, 2 ** 32 - 1))
def test_integer_programs_including_division_by_zero(steps, shape, layout, dtype, seed):
    a, b = _inputs(shape, layout, dtype, False, seed)
    _check_program(steps, a, b, 0.0, 0.0)


@SETTINGS
@given(programs(), SHAPES, LAYOUTS, st.sampled_from([ember.bfloat16, ember.float16]),
       st.booleans(), st.integers(0, 2 ** 32 - 1))
def test_half_precision_programs(steps, shape, layout, dtype, special, seed):
    a, b = _inputs(shape, layout, dtype, special, seed)
    _check_program(steps, a, b, *_tolerance(steps, dtype))


@SETTINGS
@given(SHAPES, LAYOUTS, st.integers(0, 2 ** 32 - 1))
def test_bool_programs(shape, layout, seed):
    a, b = _inputs(shape, layout, ember.bool, False, seed)

    def f(x, y):
        z = ember.where(x, y, ~y)
        return (z & x) | (y ^ z), (x == y), z.to(ember.float32) * 2 - x.to(ember.float32)

    want = f(a, b)
    gm = make_fx(f)(a, b)
    for backend in ("numpy", "c"):
        got = compile_graph(gm.graph, [a, b], backend)(a, b)
        for g, w in zip(got, want, strict=True):
            _compare(g, w, 0.0, 0.0, backend)


@pytest.mark.parametrize("dtype", [ember.float32, ember.bfloat16])
def test_zero_d_and_zero_size(dtype):
    x0 = ember.tensor(1.5).to(dtype)
    xe = ember.randn(0, 4).to(dtype)
    xr = ember.randn(3, 0).to(dtype)

    def f(a, b, c):
        return (a.exp() * 2, (b * a).tanh(), b.sum(-1), c.sum(-1), (c + 1).relu(),
                b.softmax(-1))

    want = f(x0, xe, xr)
    gm = make_fx(f)(x0, xe, xr)
    for backend in ("numpy", "c"):
        got = compile_graph(gm.graph, [x0, xe, xr], backend)(x0, xe, xr)
        for g, w in zip(got, want, strict=True):
            _compare(g, w, 4 * ULP[dtype], 4 * ULP[dtype], backend)
