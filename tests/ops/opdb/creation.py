"""Op-table entries: factories (values vs torch) and random ops (shape/dtype/device only).

Factories take no tensor input, so each sample's first argument is a 0-d *reference* tensor
whose only job is to carry the device: ``fn`` passes ``device=ref.device``, so the op table's
Meta-vs-CPU test (which swaps tensors for meta tensors) reaches the factory's Meta kernel too.
"""

import numpy as np

import ember
from tests.opinfo import (
    ALL,
    COMPLEX,
    FLOATS,
    INTS,
    NUMERIC,
    SHAPES,
    ErrorInput,
    OpInfo,
    SampleInput,
    hostile,
    make,
)


def _dt(name):
    return ember.bool if name == "bool" else getattr(ember, name)


def _ref():
    return make((), "float32")


def _factory(name, arg_lists, *, with_dtype=True):
    """Samples ``(ref, *args)`` for each args tuple, with ``dtype=`` of the tested dtype."""
    def gen(dtype):
        for args in arg_lists(dtype) if callable(arg_lists) else arg_lists:
            kwargs = {"dtype": _dt(dtype)} if with_dtype else {}
            yield SampleInput((_ref(), *args), kwargs, f"{name}{args}")
    return gen


def _on(fn_name):
    return lambda lib, ref, *a, **k: getattr(lib, fn_name)(*a, device=ref.device, **k)


def _errors(cases):
    def gen():
        for args, kwargs, err, match in cases:
            yield ErrorInput(SampleInput((_ref(), *args), kwargs), err, match)
    return gen


# -- deterministic factories -----------------------------------------------------------------
def _linspace_args(dtype):
    if dtype == "uint8":
        return [(0, 10, 5), (0, 10, 4), (10, 0, 4), (2, 1, 5), (0, 255, 7), (0, 1, 1), (3, 4, 0)]
    args = [(0, 10, 5), (0, 10, 4), (10, 0, 4), (-3, 10, 7), (1, 3, 5), (0.5, 9.9, 5),
            (-0.5, -9.9, 5), (-2.5, 7.25, 11), (0, 1, 1), (0, 1, 0),
            (ember.tensor(1.5), ember.tensor(-2.0), 6)]
    if dtype in COMPLEX:  # complex bounds: each part stepped on its own, as c10::complex
        args += _COMPLEX_BOUNDS
    # Long half-precision ranges would depend on torch's SIMD width (its vectorised path
    # steps from each chunk's first value); 32-bit and wider agree to tolerance regardless.
    return args + ([(-1, 1, 100), (3, -7, 1000)] if dtype not in ("float16", "bfloat16") else [])


_COMPLEX_BOUNDS = [(0, 1 + 1j, 5), (1j, 2, 4), (-0.7 + 0.1j, 2.3 - 3.3j, 100), (2 - 1j, 2 - 1j, 3),
                   (ember.tensor(1 + 2j), ember.tensor(-2.0 + 0j), 6), (1 + 1j, -1, 1)]


def _logspace_args(dtype):
    if dtype in INTS:
        return [(0, 2, 3), (0, 3, 4, 2), (1, 0, 2), (0, 1, 1), (0, 2, 0)]
    args = [(0, 2, 3), (-1, 1, 5), (0, 3, 4, 2), (0.5, 1.5, 7, 3.0), (0, 1, 1, 2.0),
            (1, -1, 10, 0.5), (0, 2, 0)]
    if dtype in COMPLEX:  # exp(exponent * log(base)) in the complex dtype; negative bases too
        args += [(0, 1 + 1j, 5), (1j, 2, 4, 2.0), (-0.7 + 0.1j, 1.3 - 2.3j, 30, 1.7),
                 (0.5j, 2, 5, -2.0), (1 + 1j, -1, 1)]
    return args


def _complex_bound_samples(name):
    """Complex bounds with no dtype: the default dtype's complex (complex64), as torch."""
    def gen(dtype):
        for args in [a[:3] for a in _COMPLEX_BOUNDS]:
            yield SampleInput((_ref(), *args), {}, f"{name}{args}")
    return gen


_COMPLEX_BOUND_ERRORS = [
    ((1j, 2, 3), {"dtype": ember.float32}, RuntimeError,
     r"inferred dtype c10::complex<float> can't be safely cast to passed dtype Float"),
    ((1j, 2, 3), {"dtype": ember.int64}, RuntimeError, "can't be safely cast to passed dtype Long"),
]


_EYE = [(3,), (2, 3), (4, 1), (0,), (3, 0), (1, 1)]
_TRI = [(3, 3), (3, 4, 1), (4, 3, -1), (0, 3), (3, 3, 10), (3, 3, -10), (1, 1), (5, 2, -2),
        (2, 5, 3)]

_TENSOR_DATA = [
    [], [[], []], 3.5, 7, True, [1, 2.5, True], [True, 2], [[1, 2], [3, 4]], (1, 2),
    [[True, False]], [[1.5], [2]], [float("inf"), float("-inf")], [0, -1],
    np.float32(2.5), np.int32(-2), np.array(5), [np.float32(2.5), 1], [np.float64(2.5), 1],
    [np.int16(2), 1], [np.int16(2), np.int8(1)],
    [np.array([1, 2]), np.array([3, 4])], [np.array([1.0, 2]), np.array([3, 4])],
]


def _has_np_float(data):
    if isinstance(data, list | tuple):
        return any(_has_np_float(v) for v in data)
    return isinstance(data, np.floating)


def _tensor_samples(with_dtype):
    def gen(dtype):
        for data in _TENSOR_DATA:
            if with_dtype and dtype not in FLOATS and _has_np_float(data):
                continue  # torch refuses NumPy float scalars in lists for integer dtypes
            kwargs = {"dtype": _dt(dtype)} if with_dtype else {}
            yield SampleInput((_ref(), data), kwargs, f"tensor({data!r})")
        for lay, t in hostile((2, 3), "float32" if not with_dtype else dtype):
            yield SampleInput((_ref(), t), {}, f"tensor(tensor {lay})")
    return gen


def _tensors_in_lists(dtype):
    """One-element tensors inside lists are numbers of their dtype (CPU only: values needed)."""
    for d in ("float64", "float16", "int8", "int16", "bool"):
        yield SampleInput((_ref(), [make((), d), make((), d)]), {}, f"tensor([0-d {d}] * 2)")
        yield SampleInput((_ref(), [make((), d), 2.0]), {}, f"tensor([0-d {d}, 2.0])")
        yield SampleInput((_ref(), [make((), d), 2]), {}, f"tensor([0-d {d}, 2])")
    yield SampleInput((_ref(), [make((1,), "int64")]), {}, "tensor([1-elem tensor])")


def _shape_samples(dtype):
    for shape in SHAPES:
        yield SampleInput((_ref(), shape), {"dtype": _dt(dtype)}, f"{list(shape)}")


def _out_samples(dtype):
    """zeros/ones with out= of the result's shape (torch cannot resize the harness's tensors;
    ember's resizing of out= is new_output's, tested with it)."""
    for shape in ((2, 3), (4,), (0,)):
        for lay in ("contiguous", "strided", "permuted"):
            if lay == "permuted" and len(shape) < 2:
                continue
            yield SampleInput((_ref(), shape), {"out": make(shape, dtype, layout=lay)},
                              f"{list(shape)}->out {lay}")


def _arange_args(dtype):
    if dtype == "uint8":
        return [(5,), (1, 7), (0, 10, 3)]
    return [(5,), (1, 7), (0, 10, 3), (10, 0, -2), (-1.5, 2.5, 0.5), (0, 1, 0.1)]


FACTORY_OPS = [
    OpInfo("linspace", _on("linspace"), _factory("linspace", _linspace_args),
           dtypes=ALL + COMPLEX,
           errors=_errors([
               ((0, 1, -1), {}, RuntimeError, "number of steps must be non-negative"),
               ((ember.tensor([0.0]), 1, 5), {}, RuntimeError, "0-dimensional"),
               ((0, 1, 5), {"dtype": ember.bool}, NotImplementedError, "Bool"),
               *_COMPLEX_BOUND_ERRORS])),
    OpInfo("linspace_complex_bounds", _on("linspace"), _complex_bound_samples("linspace"),
           dtypes=("complex64",)),
    OpInfo("logspace_complex_bounds", _on("logspace"), _complex_bound_samples("logspace"),
           dtypes=("complex64",)),
    OpInfo("linspace_out", lambda lib, ref, *a, **k: lib.linspace(*a, **k),
           lambda d: (SampleInput((_ref(), 0, 1, 5), {"out": make((5,), d)}, "out"),
                      SampleInput((_ref(), 0, 1, 5), {"out": make((5,), d, layout="strided")},
                                  "out strided")),
           dtypes=FLOATS + COMPLEX, meta=False),
    OpInfo("logspace", _on("logspace"), _factory("logspace", _logspace_args),
           dtypes=NUMERIC + COMPLEX,
           errors=_errors([
               ((0, 1, -1), {}, RuntimeError, "number of steps must be non-negative"),
               *_COMPLEX_BOUND_ERRORS])),
    OpInfo("eye", _on("eye"), _factory("eye", _EYE), dtypes=ALL,
           errors=_errors([((-1,), {}, RuntimeError, "n must be greater or equal to 0"),
                                  ((2, -1), {}, RuntimeError, "m must be greater or equal")])),
    OpInfo("eye_out", lambda lib, ref, *a, **k: lib.eye(*a, **k),
           lambda d: (SampleInput((_ref(), 3), {"out": make((3, 3), d)}, "out"),
                      SampleInput((_ref(), 2, 4), {"out": make((2, 4), d, layout="strided")},
                                  "out strided"),
                      SampleInput((_ref(), 3, 2), {"out": make((3, 2), d, layout="permuted")},
                                  "out permuted")),
           dtypes=ALL, meta=False),
    OpInfo("tril_indices", _on("tril_indices"), _factory("tril_indices", _TRI),
           dtypes=INTS + ("float32", "bool"), meta=False,
           errors=_errors([
               ((-1, 3), {}, RuntimeError, "row must be non-negative"),
               ((3, -2), {}, RuntimeError, "col must be non-negative")])),
    OpInfo("triu_indices", _on("triu_indices"), _factory("triu_indices", _TRI),
           dtypes=INTS + ("float32",)),
    OpInfo("tril_indices_meta", _on("tril_indices"), _factory("tril_indices", _TRI),
           dtypes=("int32", "int64")),
    OpInfo("tensor", _on("tensor"), _tensor_samples(True), dtypes=ALL,
           errors=_errors([
               (([1, 2],), {"requires_grad": True}, RuntimeError, "floating point"),
               (([[1, 2], [3]],), {}, ValueError, None),
               (([1, [2]],), {}, TypeError, "mixes numbers and sequences"),
               (("a",), {}, TypeError, "could not infer dtype"),
               ((2 ** 70,), {}, ValueError, "Overflow"),
               (([2 ** 63],), {}, ValueError, "Overflow"),
               (([make((2,), "int64")],), {}, TypeError, "one-element tensors")])),
    OpInfo("tensor_infer", _on("tensor"), _tensor_samples(False), dtypes=("float32",)),
    OpInfo("tensor_of_tensors", _on("tensor"), _tensors_in_lists, dtypes=("float32",),
           meta=False),
    OpInfo("zeros", _on("zeros"), _shape_samples, dtypes=ALL),
    OpInfo("ones", _on("ones"), _shape_samples, dtypes=ALL),
    OpInfo("full", lambda lib, ref, s, **k: lib.full(s, 3, device=ref.device, **k),
           _shape_samples, dtypes=ALL),
    OpInfo("empty", _on("empty"), _shape_samples, dtypes=ALL, compare_values=False),
    OpInfo("zeros_out", lambda lib, ref, s, out: lib.zeros(s, out=out), _out_samples,
           dtypes=ALL, meta=False),
    OpInfo("ones_out", lambda lib, ref, s, out: lib.ones(s, out=out), _out_samples,
           dtypes=ALL, meta=False),
    OpInfo("arange", _on("arange"), _factory("arange", _arange_args), dtypes=NUMERIC + COMPLEX,
           errors=_errors([((1j, 3), {}, RuntimeError, "cannot be converted to type double")])),
]


# -- random factories and ops (values are ember's own: compare shape/dtype/device) ----------------
def _rand_shapes(dtype):
    for shape in ((), (0,), (3,), (2, 3), (2, 0, 4)):
        yield SampleInput((_ref(), *shape), {"dtype": _dt(dtype)}, f"{list(shape)}")
    yield SampleInput((_ref(), (2, 3)), {"dtype": _dt(dtype)}, "tuple(2, 3)")


def _randint_samples(dtype):
    lo = 0 if dtype in ("uint8", "bool") else -3
    for args in ((lo, 2, (3,)), (2, (2, 3)), (lo, 2, ()), (0, 2, (0, 4))):
        yield SampleInput((_ref(), *args), {"dtype": _dt(dtype)}, f"randint{args}")
    yield SampleInput((_ref(), 0, 2, (4,)), {}, "randint default dtype")


def _randperm_samples(dtype):
    for n in (0, 1, 5, 100):
        yield SampleInput((_ref(), n), {"dtype": _dt(dtype)}, f"randperm({n})")


def _like_samples(dtype):
    for shape in ((), (0,), (3,), (2, 3)):
        for lay, t in hostile(shape, dtype, layouts=("contiguous", "permuted", "expanded")):
            yield SampleInput((t,), {}, f"{lay}{list(shape)}")


def _normal_samples(dtype):
    for sa, sb in (((3, 4), (3, 4)), ((3, 1), (4,)), ((), ()), ((0, 2), (2,))):
        mean = make(sa, dtype, layout="strided" if sa else "contiguous")
        std = make(sb, dtype, low=0.5, high=2.0)
        yield SampleInput((mean, std), {}, f"TT{list(sa)}x{list(sb)}")
        yield SampleInput((mean, 2.0), {}, f"Tf{list(sa)}")
        yield SampleInput((1.5, std), {}, f"fT{list(sb)}")
    yield SampleInput((make((2, 3), dtype), make((2, 3), "float64", low=0.5)), {}, "TT mixed")
    yield SampleInput((make((2,), "float32"), 1.0), {"out": make((2,), dtype)}, "Tf out")


def _normal_ff_samples(dtype):
    for size in ((2, 3), (0,), ()):
        yield SampleInput((_ref(), 2.0, 3.0, size), {"dtype": _dt(dtype)}, f"ff{list(size)}")


def _prob_samples(dtype, **kwargs):
    for shape in SHAPES:
        for lay, t in hostile(shape, dtype, low=0.0, high=1.0,
                              layouts=("contiguous", "permuted", "strided", "expanded")):
            yield SampleInput((t,), dict(kwargs), f"{lay}{list(shape)}")


def _bernoulli_p_samples(dtype):
    for s in _prob_samples(dtype):
        yield SampleInput((*s.args, 0.3), {}, s.name)


def _multinomial_samples(dtype):
    for shape in ((5,), (3, 4), (1, 1), (0, 3)):
        for lay, t in hostile(shape, dtype, low=0.1, high=1.0,
                              layouts=("contiguous", "permuted", "strided", "expanded")):
            for n, repl in ((1, False), (3, True), (7, True), (min(shape[-1], 2), False)):
                yield SampleInput((t, n, repl), {}, f"{lay}{list(shape)} n={n} repl={repl}")
    yield SampleInput((make((4,), dtype, low=0.1, high=1.0), 4), {}, "all without replacement")


def _inplace_samples(*args, low=None, high=None):
    def gen(dtype):
        for shape in SHAPES:
            for lay, t in hostile(shape, dtype, low=low, high=high):
                yield SampleInput((t, *args), {}, f"{lay}{list(shape)}{args}")
    return gen


def _random_samples(dtype):
    bounds = [(), (3,), (1, 5), (0, None)] if dtype != "bool" else [(), (2,), (0, 2)]
    for b in bounds:
        yield from _inplace_samples(*b)(dtype)


def _bernoulli_tensor_samples(dtype):
    for shape in ((3, 4), (2, 1, 3), (0,)):
        for lay, t in hostile(shape, dtype, writable=True):
            p = make(shape[-1:], "float32", low=0.0, high=1.0)
            yield SampleInput((t, p), {}, f"{lay}{list(shape)} p{list(p.shape)}")


RANDOM_OPS = [
    OpInfo("rand", _on("rand"), _rand_shapes, dtypes=ALL, compare_values=False,
           errors=_errors([((2, -1), {}, RuntimeError, "negative dimension")])),
    OpInfo("randn", _on("randn"), _rand_shapes, dtypes=ALL, compare_values=False),
    OpInfo("randint", _on("randint"), _randint_samples, dtypes=ALL + COMPLEX, compare_values=False,
           errors=_errors([
               ((5, 5, (3,)), {}, RuntimeError, "expects 'from' to be less than 'to'"),
               ((6, 5, (3,)), {}, RuntimeError, "from=6 >= to=5"),
               ((0, (3,)), {}, RuntimeError, "from=0 >= to=0"),
               ((-1, 5, (3,)), {"dtype": ember.uint8}, RuntimeError, "from is out of bounds"),
               ((0, 300, (3,)), {"dtype": ember.uint8}, RuntimeError, "to - 1 is out of bounds"),
               ((0, 3, (3,)), {"dtype": ember.bool}, RuntimeError, "out of bounds for bool")])),
    OpInfo("randperm", _on("randperm"), _randperm_samples, dtypes=NUMERIC + ("bool",) + COMPLEX,
           compare_values=False,
           errors=_errors([
               ((-1,), {}, RuntimeError, "negative dimension"),
               ((300,), {"dtype": ember.uint8}, RuntimeError, "too large")])),
    OpInfo("rand_like", lambda lib, x: lib.rand_like(x), _like_samples, dtypes=ALL,
           compare_values=False),
    OpInfo("randn_like", lambda lib, x: lib.randn_like(x), _like_samples, dtypes=ALL,
           compare_values=False),
    OpInfo("randint_like", lambda lib, x: lib.randint_like(x, 2), _like_samples,
           dtypes=ALL + COMPLEX,
           compare_values=False),
    OpInfo("randint_like_low", lambda lib, x: lib.randint_like(x, 0, 2, dtype=lib.int64),
           _like_samples, dtypes=ALL, compare_values=False),
    OpInfo("normal", lambda lib, m, s, **k: lib.normal(m, s, **k), _normal_samples,
           dtypes=ALL + COMPLEX,
           compare_values=False,
           errors=lambda: [
               ErrorInput(SampleInput((make((3,)), -1.0)), RuntimeError, "std >= 0.0"),
               ErrorInput(SampleInput((make((3,)), ember.tensor([1.0, -1, 1]))), RuntimeError,
                          "all elements of std >= 0.0"),
               ErrorInput(SampleInput((make((3,)), make((4,)))), RuntimeError,
                          "must match the size"),
               ErrorInput(SampleInput((make((3,), "int64"), 1.0)), NotImplementedError, "Long"),
               ErrorInput(SampleInput((2.0, make((3,), "int64", low=1))), NotImplementedError,
                          "Long")]),
    OpInfo("normal_float_float", lambda lib, ref, *a, **k: lib.normal(*a, device=ref.device,
                                                                       **k),
           _normal_ff_samples, dtypes=ALL, compare_values=False,
           errors=_errors([((0.0, -1.0, (3,)), {}, RuntimeError, "std >= 0.0")])),
    OpInfo("bernoulli", lambda lib, x: lib.bernoulli(x), _prob_samples, dtypes=ALL,
           compare_values=False,
           errors=lambda: [
               ErrorInput(SampleInput((ember.tensor([0.5, 2.0]),)), RuntimeError, "p_in"),
               ErrorInput(SampleInput((ember.tensor([0.5, -1.0]),)), RuntimeError, "p_in")]),
    OpInfo("bernoulli_p", lambda lib, x, p: lib.bernoulli(x, p), _bernoulli_p_samples,
           dtypes=ALL + COMPLEX, compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((2,)), 2.0)), RuntimeError,
                                      r"bernoulli_ expects p to be in \[0, 1\]")]),
    OpInfo("bernoulli_method", lambda lib, x: x.bernoulli(), _prob_samples, dtypes=FLOATS,
           compare_values=False),
    OpInfo("multinomial", lambda lib, x, *a: lib.multinomial(x, *a), _multinomial_samples,
           dtypes=ALL, compare_values=False,
           errors=lambda: [
               ErrorInput(SampleInput((ember.tensor([-1.0, 2.0]), 1)), RuntimeError,
                          "probability tensor contains"),
               ErrorInput(SampleInput((ember.tensor([1.0, float("nan")]), 1)), RuntimeError,
                          "probability tensor contains"),
               ErrorInput(SampleInput((ember.tensor([0.0, 0.0]), 1)), RuntimeError,
                          "sum of probabilities <= 0"),
               ErrorInput(SampleInput((ember.tensor([1.0, 0.0]), 3)), RuntimeError,
                          "without replacement"),
               ErrorInput(SampleInput((ember.tensor([1.0, 0.0]), 0, True)), RuntimeError,
                          "n_sample <= 0"),
               ErrorInput(SampleInput((ember.ones(2, 2, 2), 1)), RuntimeError, "1 or 2 dim"),
               ErrorInput(SampleInput((ember.tensor(1.0), 1)), RuntimeError, "1 or 2 dim"),
               ErrorInput(SampleInput((ember.tensor([1, 2]), 1)), RuntimeError,
                          "floating-point")]),
    OpInfo("multinomial_method", lambda lib, x: x.multinomial(2),
           lambda d: (SampleInput((make((3, 5), d, low=0.1, high=1.0),), {}, "3x5"),),
           dtypes=FLOATS, compare_values=False),
    OpInfo("uniform_", lambda lib, x, *a: x.uniform_(*a), _inplace_samples(-2.0, 3.0),
           dtypes=ALL + COMPLEX, compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((3,)), 2.0, 1.0)), RuntimeError,
                                      r"\[from, to\) range")]),
    OpInfo("normal_", lambda lib, x, *a: x.normal_(*a), _inplace_samples(1.0, 0.5),
           dtypes=ALL + COMPLEX,
           compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((3,)), 0.0, -1.0)), RuntimeError,
                                      "std >= 0.0")]),
    OpInfo("random_", lambda lib, x, *a: x.random_(*a), _random_samples, dtypes=ALL + COMPLEX,
           compare_values=False,
           errors=lambda: [
               ErrorInput(SampleInput((make((3,)), 5, 5)), RuntimeError, "from=5 >= to=5"),
               ErrorInput(SampleInput((make((3,)), 0)), RuntimeError, "from=0 >= to=0"),
               ErrorInput(SampleInput((make((3,), "uint8"), -1, 5)), RuntimeError,
                          "from is out of bounds"),
               ErrorInput(SampleInput((make((3,), "int8"), 0, 129)), RuntimeError,
                          "to - 1 is out of bounds"),
               ErrorInput(SampleInput((make((3,), "bool"), 0, 3)), RuntimeError,
                          "out of bounds for bool")]),
    OpInfo("exponential_", lambda lib, x, *a: x.exponential_(*a), _inplace_samples(2.0),
           dtypes=ALL, compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((3,)), 0.0)), RuntimeError,
                                      "lambda > 0.0")]),
    OpInfo("geometric_", lambda lib, x, *a: x.geometric_(*a), _inplace_samples(0.3),
           dtypes=ALL + COMPLEX, compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((3,)), 1.0)), RuntimeError,
                                      r"p to be in \(0, 1\)")]),
    OpInfo("cauchy_", lambda lib, x, *a: x.cauchy_(*a), _inplace_samples(0.0, 2.0),
           dtypes=ALL, compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((3,)), 0.0, -1.0)), RuntimeError,
                                      "sigma > 0.0")]),
    OpInfo("log_normal_", lambda lib, x, *a: x.log_normal_(*a), _inplace_samples(0.0, 0.5),
           dtypes=ALL, compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((3,)), 0.0, 0.0)), RuntimeError,
                                      "std > 0.0")]),
    OpInfo("bernoulli_", lambda lib, x, *a: x.bernoulli_(*a), _inplace_samples(0.25),
           dtypes=ALL + COMPLEX, compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((3,)), 1.5)), RuntimeError,
                                      r"expects p to be in \[0, 1\]")]),
    OpInfo("bernoulli_tensor_", lambda lib, x, p: x.bernoulli_(p), _bernoulli_tensor_samples,
           dtypes=ALL + COMPLEX, compare_values=False,
           errors=lambda: [
               ErrorInput(SampleInput((make((3,)), ember.tensor([0.2, 0.3, 2.0]))),
                          RuntimeError, "p_in"),
               ErrorInput(SampleInput((make((3,)), make((2,)))), RuntimeError,
                          "expanded size")]),
]

OPS = FACTORY_OPS + RANDOM_OPS
