"""Op-table entries: the distribution samplers (shape/dtype only: their values are ember's own
draws; tests/distributions/test_samplers.py checks them statistically) and the implicit
reparameterization gradients (values against torch).

torch approximates ``_standard_gamma_grad`` and ``_dirichlet_grad`` (rational and asymptotic
fits, relative error up to ~1.2e-3 on its own test points); ember evaluates them exactly, so
those entries compare with rtol 5e-3.
"""

import ember
from tests.opinfo import ErrorInput, OpInfo, SampleInput, hostile, make

_FD = ("float32", "float64")
_APPROX = {"float32": (5e-3, 1e-6), "float64": (5e-3, 1e-12)}
_LAYOUTS = ("contiguous", "permuted", "strided", "expanded")


def _positive_samples(dtype):
    for shape in ((), (0,), (5,), (3, 4), (2, 1, 3)):
        for lay, t in hostile(shape, dtype, low=0.2, high=6.0, layouts=_LAYOUTS):
            yield SampleInput((t,), {}, f"{lay}{list(shape)}")


def _binomial_samples(dtype):
    for sa, sb in (((3, 4), (3, 4)), ((3, 1), (4,)), ((), ()), ((0, 2), (2,))):
        count = make(sa, dtype, low=0.0, high=40.0, layout="strided" if sa else "contiguous")
        prob = make(sb, dtype, low=0.0, high=1.0)
        yield SampleInput((count.floor(), prob), {}, f"{list(sa)}x{list(sb)}")


def _gamma_grad_samples(dtype):
    for sa, sx in (((3, 4), (3, 4)), ((4, 1), (5,)), ((), ()), ((0,), (0,))):
        for lay, alpha in hostile(sa, dtype, low=0.1, high=12.0, layouts=_LAYOUTS):
            x = make(sx, dtype, low=0.05, high=15.0)
            yield SampleInput((alpha, x), {}, f"{lay}{list(sa)}x{list(sx)}")


def _dirichlet_grad_samples(dtype):
    for shape in ((3, 4), (5,), (), (0, 2)):
        for lay, x in hostile(shape, dtype, low=0.02, high=0.98, layouts=_LAYOUTS):
            alpha = make(shape, dtype, low=0.2, high=8.0)
            total = alpha + make(shape, dtype, low=0.2, high=8.0)
            yield SampleInput((x, alpha, total), {}, f"{lay}{list(shape)}")


def _errors():
    return [
        ErrorInput(SampleInput((ember.tensor([1.0, -1.0]),)), RuntimeError,
                   "invalid Poisson rate"),
        ErrorInput(SampleInput((ember.tensor([1, 2]),)), NotImplementedError, "Long"),
    ]


OPS = [
    OpInfo("_standard_gamma", lambda lib, a: lib._standard_gamma(a), _positive_samples,
           dtypes=_FD + ("float16", "bfloat16", "int64"), compare_values=False,
           errors=lambda: [ErrorInput(SampleInput((make((2,), "float16", low=1.0),)),
                                      NotImplementedError, "gamma_cpu")]),
    OpInfo("_sample_dirichlet", lambda lib, a: lib._sample_dirichlet(a), _positive_samples,
           dtypes=_FD + ("float16",), compare_values=False),
    OpInfo("poisson", lambda lib, a: lib.poisson(a), _positive_samples,
           dtypes=_FD + ("float16", "bfloat16", "int64"), compare_values=False,
           errors=_errors),
    OpInfo("binomial", lambda lib, n, p: lib.binomial(n, p), _binomial_samples,
           dtypes=_FD + ("bfloat16",), compare_values=False,
           errors=lambda: [
               ErrorInput(SampleInput((ember.tensor([1, 2]), ember.tensor([0.5, 0.5]))),
                          ValueError, "floating-point dtypes for count"),
               ErrorInput(SampleInput((ember.tensor([1.0]), ember.tensor([1]))), ValueError,
                          "floating-point dtypes for prob"),
               ErrorInput(SampleInput((ember.ones(3), ember.ones(3, dtype=ember.float64))),
                          RuntimeError, "Found dtype Double but expected Float")]),
    OpInfo("_standard_gamma_grad", lambda lib, a, x: lib._standard_gamma_grad(a, x),
           _gamma_grad_samples, dtypes=_FD + ("float16",), tol=_APPROX),
    OpInfo("_dirichlet_grad", lambda lib, x, a, t: lib._dirichlet_grad(x, a, t),
           _dirichlet_grad_samples, dtypes=_FD, tol=_APPROX),
]

for _info in OPS:  # random values (samplers) or no derivative in torch (the gradients)
    _info.grad = False
