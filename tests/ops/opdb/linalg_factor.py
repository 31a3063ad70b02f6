"""Op-table entries: LU (lu_factor(_ex), lu, lu_unpack, lu_solve, legacy torch.lu/lu_solve),
householder_product, ormqr and lstsq against torch.

LU factors are unique given LAPACK's pivoting rule (first entry of largest magnitude), so
``LU``, ``pivots``, ``P``, ``L`` and ``U`` are compared directly; inputs avoid near-ties. Inputs
are hostile (transposed, strided, offset, expanded batch), with wide, tall, batched, empty and
exactly singular matrices.
"""

from __future__ import annotations

import numpy as np

import ember
import ember.linalg  # noqa: F401
from tests.opinfo import COMPLEX, FLOATS, ErrorInput, OpInfo, SampleInput
from tests.ops.opdb.linalg import MAT_LAYOUTS, from_np, singular, well_conditioned

_RNG = np.random.default_rng(2024)
TOL = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9), "complex64": (1e-4, 1e-4),
       "complex128": (1e-9, 1e-9)}
F2 = FLOATS[:2]
LU_SHAPES = [(3, 3), (2, 4, 4), (3, 5), (5, 3), (2, 2, 4), (1, 1), (0, 3, 3), (3, 0), (0, 2)]


def _general(shape) -> np.ndarray:
    return _RNG.uniform(-2, 2, shape)


def _lu_inputs(dtype, shapes=LU_SHAPES):
    for shape in shapes:
        a = _general(shape)
        for lay in MAT_LAYOUTS:
            yield lay, shape, from_np(a, dtype, lay)
    yield "expanded", (3, 3, 3), from_np(_general((3, 3, 3)), dtype, "expanded")


def _lu_samples(kw=None):
    def gen(dtype):
        for lay, shape, a in _lu_inputs(dtype):
            yield SampleInput((a,), dict(kw or {}), f"{lay}{list(shape)}")
        yield SampleInput((from_np(singular((3, 3)), dtype),), dict(kw or {}), "singular")
        yield SampleInput((from_np(np.zeros((2, 2)), dtype),), dict(kw or {}), "zeros")
    return gen


def _unpack_samples(flag_sets):
    def gen(dtype):
        for lay, shape, a in _lu_inputs(dtype, [(3, 3), (2, 3, 5), (4, 2)]):
            LU, piv = ember.linalg.lu_factor_ex(a)[:2]
            LU = LU.detach()
            for flags in flag_sets:
                yield SampleInput((LU, piv, *flags), {}, f"{lay}{list(shape)}{flags}")
    return gen


def _lu_solve_samples(dtype):
    for shape, bshape in (((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1)), ((2, 3, 3), (3, 3)),
                          ((0, 2, 2), (0, 2, 1))):
        a = well_conditioned(shape)
        LU, piv = ember.linalg.lu_factor(from_np(a, dtype))[:2]
        for lay in MAT_LAYOUTS:
            lu_t = from_np(LU.numpy(), dtype, lay)
            for left in (True, False):
                b = _general(bshape if left else bshape[:-2] + bshape[-2:][::-1])
                for adjoint in (False, True):
                    yield SampleInput((lu_t, piv, from_np(b, dtype, "strided")),
                                      dict(left=left, adjoint=adjoint),
                                      f"{lay}{list(shape)}-left={left}-adj={adjoint}")


def _legacy_lu_solve_samples(dtype):
    a = well_conditioned((2, 3, 3))
    LU, piv = ember.linalg.lu_factor(from_np(a, dtype))[:2]
    for lay in MAT_LAYOUTS:
        yield SampleInput((from_np(_general((2, 3, 2)), dtype, lay), LU.detach(), piv), {}, lay)


def _householder_samples(dtype):
    for shape, k in (((4, 3), 3), ((4, 3), 2), ((2, 5, 2), 2), ((3, 3), 0), ((0, 2, 2), 2)):
        a = _general(shape)
        tau = _RNG.uniform(0, 2, shape[:-2] + (k,))
        for lay in MAT_LAYOUTS:
            yield SampleInput((from_np(a, dtype, lay), from_np(tau, dtype)), {},
                              f"{lay}{list(shape)}k{k}")


def _ormqr_samples(dtype):
    for shape, k in (((4, 3), 3), ((4, 2), 2), ((2, 3, 3), 3), ((2, 3, 3), 2)):
        a = _general(shape)
        tau = _RNG.uniform(0, 2, shape[:-2] + (k,))
        m = shape[-2]
        for left in (True, False):
            for transpose in (False, True):
                c = _general(shape[:-2] + ((m, 2) if left else (2, m)))
                for lay in ("contiguous", "permuted"):
                    yield SampleInput((from_np(a, dtype, lay), from_np(tau, dtype),
                                       from_np(c, dtype, "strided"), left, transpose), {},
                                      f"{lay}{list(shape)}-{left}-{transpose}")


LSTSQ_CASES = [((5, 3), (5, 2)), ((3, 5), (3, 2)), ((4, 4), (4, 1)), ((2, 5, 3), (2, 5, 2)),
               ((2, 5, 3), (5, 2)), ((5, 3), (5,))]


def _lstsq_empty_samples(dtype):
    yield from _lstsq_samples(dtype, [((0, 3), (0, 2)), ((3, 0), (3, 2))], extra=False)


def _lstsq_samples(dtype, cases=LSTSQ_CASES, extra=True):
    for (sa, sb) in cases:
        a, b = _general(sa), _general(sb)
        for lay in ("contiguous", "permuted", "strided"):
            for driver in (None, "gels", "gelsd", "gelss"):
                kw = {} if driver is None else {"driver": driver}
                yield SampleInput((from_np(a, dtype, lay), from_np(b, dtype, "strided")), kw,
                                  f"{lay}{list(sa)}{list(sb)}-{driver}")
    if not extra:
        return
    deficient = _general((5, 3))
    deficient[:, 2] = deficient[:, 1]
    for driver in ("gelsy", "gelsd"):
        yield SampleInput((from_np(deficient, dtype), from_np(_general((5, 2)), dtype)),
                          {"driver": driver}, f"rank-deficient-{driver}")
    yield SampleInput((from_np(_general((5, 3)), dtype), from_np(_general((5, 2)), dtype), 0.5),
                      {"driver": "gelsd"}, "rcond")


def _symmetric(shape) -> np.ndarray:
    a = _general(shape)
    return a + np.swapaxes(a, -1, -2)


def _ldl_samples(dtype):
    for shape in ((3, 3), (2, 5, 5), (1, 1), (0, 3, 3), (6, 6)):
        a = _symmetric(shape)
        for lay in MAT_LAYOUTS:
            yield SampleInput((from_np(a, dtype, lay),), {}, f"{lay}{list(shape)}")
    # 2x2 pivots (tiny diagonal), a non-symmetric input (lower triangle read), zeros
    yield SampleInput((from_np(np.array([[1e-3, 2.0, 3.0], [2.0, 1e-3, 1.0], [3.0, 1.0, 0.1]]),
                               dtype),), {}, "2x2-pivots")
    yield SampleInput((from_np(_general((4, 4)), dtype, "permuted"),), {}, "lower-only")
    yield SampleInput((from_np(np.zeros((2, 2)), dtype),), {}, "zeros")


def _ldl_solve_samples(dtype):
    for shape, bshape in (((3, 3), (3, 2)), ((2, 4, 4), (2, 4, 1)), ((2, 3, 3), (3, 2))):
        LD, piv, _ = ember.linalg.ldl_factor_ex(from_np(_symmetric(shape), dtype))
        for lay in ("contiguous", "permuted", "strided"):
            yield SampleInput((from_np(LD.numpy(), dtype, lay), piv,
                               from_np(_general(bshape), dtype, "strided")), {},
                              f"{lay}{list(shape)}")
    a = np.array([[1e-3, 2.0, 3.0], [2.0, 1e-3, 1.0], [3.0, 1.0, 0.1]])
    LD, piv, _ = ember.linalg.ldl_factor_ex(from_np(a, dtype))
    yield SampleInput((LD, piv, from_np(_general((3, 2)), dtype)), {}, "2x2-pivots")


def _errors():
    e = lambda args, kw, err, match=None: ErrorInput(SampleInput(args, kw), err, match)  # noqa
    yield e((ember.zeros(3),), {}, RuntimeError, "Expected tensor with 2 or more dimensions")
    yield e((ember.zeros(2, 2, dtype=ember.int64),), {}, NotImplementedError,
            '"lu_cpu" not implemented for \'Long\'')
    yield e((ember.zeros(2, 2, dtype=ember.float16),), {}, NotImplementedError, "lu_cpu")
    yield e((ember.eye(2),), {"pivot": False}, RuntimeError, "without pivoting")
    yield e((ember.zeros(2, 2),), {"check_errors": True}, RuntimeError,
            r"U\[1,1\] is zero")


def _lstsq_errors():
    e = lambda args, kw, match: ErrorInput(SampleInput(args, kw), RuntimeError, match)  # noqa
    a, b = ember.ones(5, 3), ember.ones(5, 2)
    yield e((a, b), {"driver": "foo"}, "should be one of")
    yield e((a, b.double()), {}, "same dtype")
    yield e((a.long(), b.long()), {}, "float and double")
    yield e((ember.ones(3), ember.ones(3)), {}, "at least 2 dimensions")
    yield e((a, ember.ones(4, 2)), {}, r"input.size\(-2\) should match")


def _lu_factor_errors():
    yield ErrorInput(SampleInput((ember.tensor([[1.0, 2.0], [2.0, 4.0]]),)), RuntimeError,
                     r"torch.linalg.lu_factor: U\[2,2\] is zero")


def _lu_solve_errors():
    LU, piv = ember.linalg.lu_factor(ember.eye(3))
    yield ErrorInput(SampleInput((LU, piv, ember.ones(2, 1))), RuntimeError,
                     "Incompatible shapes")
    yield ErrorInput(SampleInput((LU, piv.long(), ember.ones(3, 1))), RuntimeError, "int32")
    yield ErrorInput(SampleInput((LU, piv, ember.ones(3, 1, dtype=ember.float64))), RuntimeError,
                     "same dtype")


OPS = [
    OpInfo("linalg.lu_factor_ex", lambda lib, a, **k: lib.linalg.lu_factor_ex(a, **k),
           _lu_samples(), dtypes=F2 + COMPLEX, tol=TOL),
    OpInfo("linalg.lu_factor", lambda lib, a, **k: lib.linalg.lu_factor(a, **k),
           lambda d: [s for s in _lu_samples()(d) if s.name not in ("singular", "zeros")],
           dtypes=F2 + COMPLEX, tol=TOL),
    OpInfo("linalg.lu", lambda lib, a, **k: lib.linalg.lu(a, **k), _lu_samples(),
           dtypes=F2 + COMPLEX,
           tol=TOL),
    OpInfo("linalg.lu_pivot_kw", lambda lib, a, **k: lib.linalg.lu(a, **k),
           _lu_samples({"pivot": True}), dtypes=F2[1:] + COMPLEX, tol=TOL),
    OpInfo("lu_unpack", lambda lib, *a: lib.lu_unpack(*a), _unpack_samples([(True, True)]),
           dtypes=F2 + COMPLEX, tol=TOL),
    OpInfo("lu_unpack_flags", lambda lib, *a: lib.lu_unpack(*a),
           _unpack_samples([(False, True), (True, False)]), dtypes=F2 + COMPLEX, tol=TOL),
    OpInfo("linalg.lu_solve", lambda lib, *a, **k: lib.linalg.lu_solve(*a, **k),
           _lu_solve_samples, dtypes=F2 + COMPLEX, tol=TOL),
    OpInfo("lu", lambda lib, a: lib.lu(a), _lu_samples(), dtypes=F2 + COMPLEX, tol=TOL),
    OpInfo("lu_get_infos", lambda lib, a: a.lu(get_infos=True), _lu_samples(), dtypes=F2 + COMPLEX,
           tol=TOL),
    OpInfo("lu_solve", lambda lib, b, LU, piv: lib.lu_solve(b, LU, piv),
           _legacy_lu_solve_samples, dtypes=F2 + COMPLEX, tol=TOL),
    OpInfo("Tensor.lu_solve", lambda lib, b, LU, piv: b.lu_solve(LU, piv),
           _legacy_lu_solve_samples, dtypes=F2[1:] + COMPLEX, tol=TOL),
    OpInfo("linalg.householder_product",
           lambda lib, a, tau: lib.linalg.householder_product(a, tau), _householder_samples,
           dtypes=F2 + COMPLEX, tol=TOL),
    OpInfo("ormqr", lambda lib, *a: lib.ormqr(*a), _ormqr_samples, dtypes=F2 + COMPLEX, tol=TOL),
    # meta=False: which residuals exist depends on the computed rank (data)
    OpInfo("linalg.lstsq", lambda lib, *a, **k: tuple(lib.linalg.lstsq(*a, **k)),
           _lstsq_samples, dtypes=F2 + COMPLEX, tol=TOL, meta=False),
    OpInfo("linalg.lstsq_empty", lambda lib, *a, **k: tuple(lib.linalg.lstsq(*a, **k)),
           _lstsq_empty_samples, dtypes=F2 + COMPLEX, tol=TOL, meta=False),
    OpInfo("linalg.ldl_factor_ex", lambda lib, a: lib.linalg.ldl_factor_ex(a), _ldl_samples,
           dtypes=F2, tol=TOL),
    OpInfo("linalg.ldl_factor", lambda lib, a: lib.linalg.ldl_factor(a),
           lambda d: [s for s in _ldl_samples(d) if s.name != "zeros"], dtypes=F2, tol=TOL),
    OpInfo("linalg.ldl_solve", lambda lib, *a: lib.linalg.ldl_solve(*a), _ldl_solve_samples,
           dtypes=F2, tol=TOL),
    OpInfo("linalg.lstsq_errors", lambda lib, *a, **k: lib.linalg.lstsq(*a, **k), lambda d: [],
           dtypes=(), errors=_lstsq_errors),
    OpInfo("linalg.lu_factor_ex_errors", lambda lib, a, **k: lib.linalg.lu_factor_ex(a, **k),
           lambda d: [], dtypes=(), errors=_errors),
    OpInfo("linalg.lu_factor_errors", lambda lib, a: lib.linalg.lu_factor(a), lambda d: [],
           dtypes=(), errors=_lu_factor_errors),
    OpInfo("linalg.lu_solve_errors", lambda lib, *a: lib.linalg.lu_solve(*a), lambda d: [],
           dtypes=(), errors=_lu_solve_errors),
]

# torch's backward through the empty L/U of unpack_data=False fails inside triu ("input tensor
# must have at least 2 dimensions"); ember's gives the zero gradient: values only.
OPS[[i.name for i in OPS].index("lu_unpack_flags")].grad = False
# With n == 0, gels reports zero residuals while torch's gradient is that of |B|^2: finite
# differences of the zeros cannot agree, so the empty samples are compared with torch only.
OPS[[i.name for i in OPS].index("linalg.lstsq_empty")].gradcheck = False
# torch has no derivative for the LDL factorisation or solve, nor has ember: the gradient test
# checks that both refuse; there is nothing to gradcheck.
for _name in ("linalg.ldl_factor_ex", "linalg.ldl_factor", "linalg.ldl_solve"):
    OPS[[i.name for i in OPS].index(_name)].gradcheck = False
