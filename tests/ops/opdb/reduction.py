"""Op-table entries: the reduction family (sums, extrema, statistics, norms, scans, order stats).

Every entry runs over all ten dtypes: where torch refuses a dtype, ember must raise the same
exception type. Samples rotate through the hostile layouts per shape and add hand-made
tensors with ties, NaN and infinities. Where torch's index choice is implementation defined
(median/mode on ties) the entries compare the values exactly and the input values the
indices point at, instead of the indices themselves.
"""

import math

import numpy as np
import torch

import ember
from tests.opinfo import (
    ALL,
    COMPLEX,
    LAYOUTS,
    SHAPES,
    ErrorInput,
    OpInfo,
    SampleInput,
    binary_samples,
    make,
)

ALLC = ALL + COMPLEX  # where torch reduces complex (orderings refuse it, checked too)
INF = math.inf
NAN = math.nan


# -- samples ----------------------------------------------------------------------------------
def _special(dtype: str, finite: bool = False):
    """(3, 4) tensors with ties, NaN and +-inf (floats), and their transposed views."""
    if dtype == "bool":
        rows = [[True, False, True, False], [True, True, False, True], [False, False, False, True]]
    elif dtype in ("float32", "float64", "float16", "bfloat16") and not finite:
        rows = [[1.0, NAN, 3.0, 3.0], [2.0, 2.0, -INF, 0.0], [INF, 1.0, 1.0, NAN]]
    else:
        rows = [[1, 3, 3, 0], [2, 2, 5, 0], [7, 1, 1, 7]]
    d = getattr(ember, dtype)
    t = ember.tensor(rows, dtype=d)
    yield "special", t
    yield "special.T", t.t()
    if dtype not in ("bool",):
        ties = ember.tensor([[2, 1, 2, 1, 0], [0, 0, 3, 3, 3], [4, 4, 4, 4, 4]], dtype=d)
        yield "ties", ties


def _samples(variants, *, shapes=SHAPES, special=True, finite=False, low=None, high=None,
             layouts=LAYOUTS):
    """Per shape, each (args, kwargs) variant on a layout chosen in rotation; plus specials."""

    def gen(dtype):
        k = 0
        for shape in shapes:
            for args, kw in variants:
                lay = layouts[k % len(layouts)]
                k += 1
                if lay == "permuted" and len(shape) < 2:
                    lay = "strided"
                t = make(shape, dtype, layout=lay, low=low, high=high)
                yield SampleInput((t, *args), dict(kw), f"{lay}{list(shape)}{args}{kw}")
        if special:
            for name, t in _special(dtype, finite):
                for args, kw in variants:
                    yield SampleInput((t, *args), dict(kw), f"{name}{args}{kw}")

    return gen


DIMS = [((), {}), ((0,), {}), ((-1,), {"keepdim": True}), (((0, -1),), {}),
        ((None,), {"keepdim": True}), ((1,), {}), (((),), {})]
ONE_DIM = [((0,), {}), ((-1, True), {}), ((1,), {})]
NO_EXPAND = tuple(lay for lay in LAYOUTS if lay != "expanded")


def _lib_fn(name: str):
    def fn(lib, *args, **kwargs):
        return getattr(lib, name)(*args, **kwargs)

    fn.__name__ = name
    return fn


def _linalg(name: str):
    def fn(lib, *args, **kwargs):
        f = getattr(torch.linalg, name) if lib is torch else getattr(ember, f"linalg_{name}")
        return f(*args, **kwargs)

    return fn


def _as_f64(lib, t):
    if lib is torch:
        return t.detach().to(torch.float64).numpy()
    return np.asarray(t.detach().numpy()).astype(np.float64)


def _values_and_picked(name: str):
    """(values, input values at the returned indices): checks indices without fixing them."""

    def fn(lib, x, dim=-1, keepdim=False):
        values, indices = getattr(lib, name)(x, dim, keepdim)
        xv = _as_f64(lib, x)
        idx = _as_f64(lib, indices).astype(np.int64)
        if xv.ndim == 0:
            picked = xv.copy()
        else:
            d = dim % xv.ndim
            if not keepdim:
                idx = np.expand_dims(idx, d)
            picked = np.take_along_axis(xv, idx, d)
            if not keepdim:
                picked = np.squeeze(picked, d)
        return values, lib.tensor(picked, dtype=lib.float64)

    return fn


# -- error inputs -----------------------------------------------------------------------------
def _err(fn_args, error, match, **kwargs):
    return ErrorInput(SampleInput(fn_args, kwargs), error, match)


def _errors_dims():
    x = make((2, 3))
    yield _err((x, 2), IndexError,
               r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)")
    yield _err((x, (0, 0)), RuntimeError, "dim 0 appears multiple times in the list of dims")
    yield _err((make(()), 1), IndexError, r"expected to be in range of \[-1, 0\]")


def _errors_complex_nansum():
    yield _err((make((2, 3), "complex64"),), RuntimeError,
               "nansum on CPU does not support complex inputs")
    yield _err((make((2, 3), "complex128"), 1), RuntimeError,
               "nansum on CPU does not support complex inputs")


def _errors_complex_order(name, *args, **kwargs):
    """torch's order statistics refuse complex in their kernels' dtype dispatch."""
    def gen():
        for d in COMPLEX:
            yield _err((make((3, 2), d), *args), NotImplementedError,
                       f"not implemented for 'Complex{'Float' if d == 'complex64' else 'Double'}'",
                       **kwargs)
    return gen


def _errors_mean():
    yield from _errors_dims()
    yield _err((make((2, 3), "int64"),), RuntimeError,
               "mean\\(\\): could not infer output dtype. Input dtype must be either a floating "
               "point or complex dtype. Got: Long")
    yield _err((make((2, 3)), 0), RuntimeError, "Optional dtype must be .* Got: Long",
               dtype=ember.int64)


def _errors_max():
    yield _err((make((2, 0)),), RuntimeError,
               r"max\(\): Expected reduction dim to be specified for input.numel\(\) == 0")
    yield _err((make((2, 0)), 1), IndexError,
               r"max\(\): Expected reduction dim 1 to have non-zero size")
    yield _err((make((2, 3)), 2), IndexError, "Dimension out of range")


def _errors_amax():
    yield _err((make((2, 0)),), RuntimeError, "Expected reduction dim to be specified")
    yield _err((make((2, 0)), -1), IndexError,
               r"amax\(\): Expected reduction dim -1 to have non-zero size")
    yield from _errors_dims()


def _errors_argmax():
    yield _err((make((3,), "bool"),), RuntimeError, r"argmax\(\): does not support bool input")
    yield _err((make((0, 2)),), IndexError, "Expected reduction dim to be specified")
    yield _err((make((2, 3)), (0,)), TypeError, "must be int")


def _errors_var():
    x = make((2, 3))
    yield _err((x,), TypeError, "correction", correction="a")
    yield _err((x,), TypeError, "correction", correction=[1])
    yield _err((x, 0), TypeError, "unbiased and correction", unbiased=True, correction=1)
    yield _err((make((2, 3), "int32"),), RuntimeError,
               "std and var only support floating point and complex dtypes")
    yield _err((x, 5), IndexError, "Dimension out of range")


def _errors_quantile():
    x = make((2, 3), "float32")
    yield _err((x, 1.5), RuntimeError, r"q must be in the range \[0, 1\] but got 1.5")
    yield _err((x, ember.tensor([0.2, 1.5])), RuntimeError, r"q values must be in the range")
    yield _err((x, ember.tensor([[0.5]])), RuntimeError, "q must be a scalar or 1D tensor")
    yield _err((x, ember.tensor([0.5], dtype=ember.float64)), RuntimeError,
               "q tensor must be same dtype")
    yield _err((x, 0.5), RuntimeError, "interpolation must be one of", interpolation="foo")
    yield _err((make((0, 3)), 0.5), RuntimeError, "input tensor must be non-empty")
    yield _err((make((2, 3), "int64"), 0.5), RuntimeError, "must be either float or double")


def _errors_vector_norm():
    x = make((2, 3))
    yield _err((make((3,), "int64"),), RuntimeError, "Expected a floating point")
    yield _err((x,), RuntimeError, "convertible without narrowing", dtype=ember.float16)
    yield _err((x,), RuntimeError, "dtype should be floating point", dtype=ember.int64)
    yield _err((make((2, 0)), INF), RuntimeError, "cannot compute the inf norm on an empty")
    yield _err((make((2, 0)), -1, 1), RuntimeError, "cannot compute the -1 norm on the dim")
    yield _err((x, "fro"), TypeError, "must be Number")


def _errors_matrix_norm():
    x = make((2, 3))
    yield _err((make((3,)),), RuntimeError, "must have at least 2 dimensions")
    yield _err((x, 3), RuntimeError, "Order 3 not supported")
    yield _err((x, "abc"), RuntimeError, "Order abc not supported")
    yield _err((x,), RuntimeError, "dims must be different", dim=(0, 0))
    yield _err((make((2, 3), "float16"), 2), RuntimeError, "Low precision dtypes not supported")
    yield _err((make((2, 0)), -1), IndexError, "Expected reduction dim")
    yield _err((make((2, 3), "int32"),), RuntimeError, "Expected a floating point")


def _errors_scan():
    yield _err((make((2, 3)), 2), IndexError, "Dimension out of range")
    yield _err((make((2, 3)), (0,)), TypeError, "must be int")


def _errors_order():
    yield _err((make((2, 0)), 1), IndexError, r"Expected reduction dim 1 to have non-zero size")
    yield _err((make((3,), "bool"),), NotImplementedError, "not implemented for 'Bool'")


# -- entries ----------------------------------------------------------------------------------
SUM_VARIANTS = DIMS + [((0,), {"dtype": ember.float64}), ((), {"dtype": ember.int32}),
                       ((1, True), {"dtype": ember.float16})]
MEAN_VARIANTS = DIMS + [((0,), {"dtype": ember.float64})]
VAR_VARIANTS = DIMS[:6] + [
    ((0,), {"correction": 0}), ((None,), {"correction": 2.5, "keepdim": True}),
    ((-1, False, True), {}), ((False,), {}), ((0,), {"unbiased": False}),
    ((None,), {"correction": 7}), (((0, 1),), {"correction": -1}),
]
NORM_VARIANTS = [
    ((), {}), ((1,), {}), ((INF, 0), {}), ((-INF, -1, True), {}), ((0, (0,)), {}), ((3.5,), {}),
    ((-1, 0), {}), (("fro", (0, -1)), {}), (("nuc",), {}), ((2,), {"dtype": ember.float64}),
    ((None, 1), {}),
]
VNORM_VARIANTS = [
    ((), {}), ((1,), {}), ((INF,), {}), ((-INF, 0), {}), ((0, (0, -1)), {}),
    ((3.5, -1, True), {}), ((-1.5,), {}), ((2,), {"dtype": ember.float64}), ((2, ()), {}),
]
MATRIX_SHAPES = [(3, 4), (2, 3, 4), (4, 3), (2, 0), (0, 3), (3, 0, 2), (1, 1), (5,), ()]
MNORM_VARIANTS = [((o,), {}) for o in ("fro", "nuc", 1, -1, 2, -2, INF, -INF)] + [
    (("fro", (0, -1)), {}), ((1, (-1, 0), True), {}), ((-2, (-1, -2)), {"keepdim": True}),
    ((INF,), {"dtype": ember.float64}),
]
Q_VARIANTS = [
    ((0.3,), {}), ((0.5, 0), {}), ((1.0, -1, True), {}), ((0.0, None, True), {}),
    ((0.4,), {"interpolation": "nearest"}), ((0.25, 0), {"interpolation": "lower"}),
    ((0.6, -1), {"interpolation": "higher"}), ((0.7,), {"interpolation": "midpoint"}),
    ((0.5, 1), {}),
]


def _q_samples(dtype):
    """Quantile samples: scalar q variants plus 0-d and 1-d q tensors of the input's dtype."""
    yield from _samples(Q_VARIANTS)(dtype)
    d = getattr(ember, dtype)
    for i, shape in enumerate([(5,), (3, 4), (2, 1, 3), (1,), ()]):
        x = make(shape, dtype, layout=LAYOUTS[i % len(LAYOUTS)] if len(shape) >= 2 else "strided")
        q1 = ember.tensor([0.1, 0.5, 1.0, 0.0], dtype=d)
        q0 = ember.tensor(0.75, dtype=d)
        yield SampleInput((x, q1), {}, f"q1d{list(shape)}")
        yield SampleInput((x, q1, -1, True), {"interpolation": "nearest"}, f"q1d-dim{list(shape)}")
        yield SampleInput((x, q0, 0), {}, f"q0d{list(shape)}")
    for name, t in _special(dtype):
        q1 = ember.tensor([0.2, 0.9], dtype=d)
        yield SampleInput((t, q1, 1), {"interpolation": "linear"}, f"{name}-q1d")


def _out_samples(dtype):
    """out= variants: resized empty outs, right dtype."""
    x = make((3, 4), dtype, layout="strided")
    res = dtype if dtype in ("float32", "float64", "float16", "bfloat16") else "int64"
    yield SampleInput((x, 1), {"out": make((0,), res)}, "sum-out")
    yield SampleInput((x, 0, True), {"out": make((0,), res)}, "sum-out-keepdim")


def _max_out_samples(dtype):
    x = make((3, 4), dtype, layout="permuted")
    yield SampleInput((x, 1), {"out": (make((0,), dtype), make((0,), "int64"))}, "max-out")


def _binary_max(dtype):
    yield from binary_samples(dtype, scalars=())


SCAN_VARIANTS = [((0,), {}), ((-1,), {}), ((1,), {}), ((0,), {"dtype": ember.float64}),
                 ((-1,), {"dtype": ember.int32})]
SCAN_SHAPES = SHAPES + [(2, 6)]

OPS = [
    OpInfo("sum", _lib_fn("sum"), _samples(SUM_VARIANTS), dtypes=ALLC, errors=_errors_dims),
    OpInfo("sum_out", lambda lib, x, *a, **k: lib.sum(x, *a, **k), _out_samples, dtypes=ALL),
    OpInfo("sum_method", lambda lib, x, *a, **k: x.sum(*a, **k), _samples(DIMS[:4]),
           dtypes=("float32", "int16", "bool")),
    OpInfo("nansum", _lib_fn("nansum"), _samples(SUM_VARIANTS[:-1]), dtypes=ALL,
           errors=_errors_complex_nansum),
    OpInfo("mean", _lib_fn("mean"), _samples(MEAN_VARIANTS), dtypes=ALLC, errors=_errors_mean),
    OpInfo("nanmean", _lib_fn("nanmean"), _samples(MEAN_VARIANTS), dtypes=ALL,
           errors=_errors_complex_nansum),
    OpInfo("prod", _lib_fn("prod"),
           _samples([((), {}), ((0,), {}), ((-1, True), {}), ((1,), {"dtype": ember.float64}),
                     ((), {"dtype": ember.int32})], low=-2, high=3), dtypes=ALLC),
    OpInfo("max", _lib_fn("max"), _samples([((), {})] + ONE_DIM), dtypes=ALLC,
           errors=_errors_max),
    OpInfo("min", _lib_fn("min"), _samples([((), {})] + ONE_DIM), dtypes=ALLC),
    OpInfo("max_method", lambda lib, x, *a, **k: x.max(*a, **k), _samples(ONE_DIM[:2]),
           dtypes=("float32", "int64")),
    OpInfo("max_out", _lib_fn("max"), _max_out_samples, dtypes=ALL),
    OpInfo("max_binary", _lib_fn("max"), _binary_max, dtypes=ALL),
    OpInfo("min_binary", lambda lib, x, y: x.min(y), _binary_max, dtypes=("float32", "int8")),
    OpInfo("amax", _lib_fn("amax"), _samples(DIMS), dtypes=ALLC, errors=_errors_amax),
    OpInfo("amin", _lib_fn("amin"), _samples(DIMS), dtypes=ALL),
    OpInfo("aminmax", _lib_fn("aminmax"),
           _samples([((), {}), ((), {"dim": 0}), ((), {"dim": -1, "keepdim": True}),
                     ((), {"keepdim": True}), ((), {"dim": 1})]), dtypes=ALL,
           errors=_errors_complex_order("aminmax", dim=0)),
    OpInfo("argmax", _lib_fn("argmax"),
           _samples([((), {}), ((0,), {}), ((-1, True), {}), ((None, True), {}), ((1,), {})]),
           dtypes=ALLC, errors=_errors_argmax),
    OpInfo("argmin", _lib_fn("argmin"),
           _samples([((), {}), ((0,), {}), ((-1, True), {}), ((None, True), {}), ((1,), {})]),
           dtypes=ALL),
    OpInfo("var", _lib_fn("var"), _samples(VAR_VARIANTS), dtypes=ALLC, errors=_errors_var),
    OpInfo("std", _lib_fn("std"), _samples(VAR_VARIANTS), dtypes=ALLC),
    OpInfo("var_mean", _lib_fn("var_mean"), _samples(VAR_VARIANTS[:8]), dtypes=ALLC),
    OpInfo("std_mean", _lib_fn("std_mean"), _samples(VAR_VARIANTS[:8]), dtypes=ALLC),
    OpInfo("logsumexp", _lib_fn("logsumexp"),
           _samples([((0,), {}), ((-1, True), {}), (((0, -1),), {}), ((1,), {}), (((),), {})]),
           dtypes=ALLC),
    OpInfo("norm", _lib_fn("norm"), _samples(NORM_VARIANTS, finite=True), dtypes=ALL,
           tol={"float32": (1e-5, 1e-5)}),
    OpInfo("linalg_vector_norm", _linalg("vector_norm"), _samples(VNORM_VARIANTS), dtypes=ALLC,
           errors=_errors_vector_norm, tol={"float32": (1e-5, 1e-5)}),
    OpInfo("linalg_matrix_norm", _linalg("matrix_norm"),
           _samples(MNORM_VARIANTS, shapes=MATRIX_SHAPES, finite=True), dtypes=ALL,
           errors=_errors_matrix_norm, tol={"float32": (1e-4, 1e-5), "float64": (1e-7, 1e-9)}),
    OpInfo("all", _lib_fn("all"), _samples(DIMS), dtypes=ALL),
    OpInfo("any", _lib_fn("any"), _samples(DIMS), dtypes=ALL),
    OpInfo("count_nonzero", _lib_fn("count_nonzero"),
           _samples([((), {}), ((0,), {}), (((0, -1),), {}), ((-1,), {})]), dtypes=ALL),
    # finite specials: casting NaN/inf to an integer dtype= is implementation defined
    OpInfo("cumsum", _lib_fn("cumsum"), _samples(SCAN_VARIANTS, shapes=SCAN_SHAPES, finite=True),
           dtypes=ALLC, errors=_errors_scan),
    OpInfo("cumprod", _lib_fn("cumprod"),
           _samples(SCAN_VARIANTS, shapes=SCAN_SHAPES, low=-2, high=3, finite=True), dtypes=ALLC),
    OpInfo("cumsum_", lambda lib, x, *a: x.clone().cumsum_(*a),
           _samples([((0,), {}), ((-1,), {})]), dtypes=ALL),
    OpInfo("cumprod_", lambda lib, x, *a: x.clone().cumprod_(*a),
           _samples([((0,), {}), ((-1,), {})], low=-2, high=3), dtypes=ALL + COMPLEX),
    OpInfo("cummax", _lib_fn("cummax"), _samples(ONE_DIM[::2], shapes=SCAN_SHAPES), dtypes=ALL,
           errors=_errors_complex_order("cummax", 0)),
    OpInfo("cummin", _lib_fn("cummin"), _samples(ONE_DIM[::2], shapes=SCAN_SHAPES), dtypes=ALL,
           errors=_errors_complex_order("cummin", 0)),
    OpInfo("logcumsumexp", _lib_fn("logcumsumexp"), _samples(ONE_DIM[::2], shapes=SCAN_SHAPES),
           dtypes=ALLC),
    OpInfo("median", _lib_fn("median"), _samples([((), {})]), dtypes=ALL,
           errors=_errors_order),
    OpInfo("nanmedian", _lib_fn("nanmedian"), _samples([((), {})]), dtypes=ALL,
           errors=_errors_complex_order("nanmedian")),
    OpInfo("median_dim_complex", _lib_fn("median"), _samples([((), {})]), dtypes=(),
           errors=_errors_complex_order("median", 0)),
    # torch's median along a dim reads garbage from stride-0 (expanded) inputs, so those
    # layouts are checked against a contiguous copy in test_reduction_extra.py instead
    OpInfo("median_dim", _values_and_picked("median"), _samples(ONE_DIM, layouts=NO_EXPAND),
           dtypes=ALL, meta=False),
    OpInfo("nanmedian_dim", _values_and_picked("nanmedian"),
           _samples(ONE_DIM, layouts=NO_EXPAND), dtypes=ALL, meta=False),
    OpInfo("mode", _values_and_picked("mode"), _samples([((), {})] + ONE_DIM), dtypes=ALL,
           meta=False, errors=_errors_complex_order("mode", 0)),
    # shapes and dtypes of (values, indices), Meta against CPU
    OpInfo("median_dim_meta", lambda lib, x, *a: lib.median(x, *a), _samples(ONE_DIM),
           dtypes=ALL, compare_values=False),
    OpInfo("mode_meta", _lib_fn("mode"), _samples(ONE_DIM), dtypes=ALL, compare_values=False),
    OpInfo("quantile", _lib_fn("quantile"), _q_samples, dtypes=ALL, errors=_errors_quantile),
    OpInfo("nanquantile", _lib_fn("nanquantile"), _q_samples, dtypes=ALL),
]

# -- gradient-only entries (float64; test_ops_grad.py) ------------------------------------------
GRAD_SHAPES = [(5,), (3, 4), (2, 1, 3), (2, 3)]

OPS += [
    # the main var/std entries' smallest samples hold one element: NaN (dof <= 0) everywhere.
    # No expanded layout: a constant slice has std 0, where the gradient is undefined (torch's
    # Welford pass gets exactly 0 and masks it; a two-pass std may round to 1e-17 instead)
    OpInfo(f"{name}_grad", _lib_fn(name),
           _samples(VAR_VARIANTS[:7] + [((0,), {"correction": 0})], shapes=GRAD_SHAPES,
                    special=False, layouts=NO_EXPAND), dtypes=("float64",))
    for name in ("var", "std", "var_mean", "std_mean")
] + [
    # no expanded layout: its rank-deficient matrices make nuc/2/-2 non-differentiable
    # (the singular vectors of a zero singular value are arbitrary, so torch's and LAPACK's
    # signs differ)
    OpInfo("linalg_matrix_norm_grad", _linalg("matrix_norm"),
           _samples(MNORM_VARIANTS, shapes=[(3, 4), (2, 3, 4), (4, 3), (1, 1)], finite=True,
                    layouts=NO_EXPAND), dtypes=("float64",)),
]


def _entry(name: str) -> OpInfo:
    return next(info for info in OPS if info.name == name)


for _name in ("var", "std", "var_mean", "std_mean"):
    _entry(_name).gradcheck = False  # see the *_grad entries above
# nuc/2/-2 on expanded (rank-deficient) samples: see linalg_matrix_norm_grad
_entry("linalg_matrix_norm").grad = False
# median's index among ties (expanded layouts) is implementation defined, so is its gradient;
# median_dim (no expanded layouts) compares gradients
_entry("median_dim_meta").grad = False
