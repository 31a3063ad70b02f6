"""Op-table entries: the linalg family (products, einsum, tensordot, kron, ember.linalg).

Products run on every dtype (bool must fail like torch). Decompositions are compared through
quantities that do not depend on LAPACK's sign and basis choices: reconstructions (``Q R``,
``U diag(S) Vh``, ``V diag(w) V^T``), orthogonality (``Q^T Q``) and sign-free factors
(``|R|``, ``S``, eigenvalues). Inputs are hostile: transposed, strided, offset, expanded batch
dims, 0-size batches and size-1 dims.
"""

from __future__ import annotations

import math

import numpy as np

import ember
import ember.linalg  # noqa: F401  (binds ember.linalg even before ember/__init__ imports it)
from tests.opinfo import ALL, COMPLEX, FLOATS, ErrorInput, OpInfo, SampleInput, make

_RNG = np.random.default_rng(4321)
PAIR_LAYOUTS = (("contiguous", "contiguous"), ("permuted", "strided"), ("strided", "permuted"),
                ("offset", "expanded"), ("expanded", "offset"))
PRODUCT_TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "float16": (1e-3, 1e-3),
               "bfloat16": (1.6e-2, 1e-2), "complex64": (1e-5, 1e-5),
               "complex128": (1e-10, 1e-10)}
DECOMP_TOL = {"float32": (1e-4, 1e-4), "float64": (1e-9, 1e-9), "complex64": (1e-4, 1e-4),
              "complex128": (1e-9, 1e-9)}


def _lay(layout: str, shape) -> str:
    return "contiguous" if layout == "permuted" and len(shape) < 2 else layout


def _pairs(shape_pairs, extra=((), {}), layouts=PAIR_LAYOUTS):
    """Samples of two operands in each pair of layouts; ``extra``: (args, kwargs) appended."""
    def gen(dtype):
        args, kwargs = extra
        for sa, sb in shape_pairs:
            for la, lb in layouts:
                a = make(sa, dtype, layout=_lay(la, sa))
                b = make(sb, dtype, layout=_lay(lb, sb))
                yield SampleInput((a, b, *args), dict(kwargs), f"{la}{list(sa)}x{lb}{list(sb)}")
    return gen


# -- ember tensors of chosen values in hostile layouts -----------------------------------------
ALL_C = ALL + COMPLEX  # products, inv, det and solve take complex matrices as torch


def from_np(a: np.ndarray, dtype: str, layout: str = "contiguous") -> ember.Tensor:
    """An ember tensor equal to ``a`` whose memory has ``layout`` (see ``tests.opinfo.make``)."""
    d = ember.bool if dtype == "bool" else getattr(ember, dtype)
    a = np.asarray(a, dtype=np.float64)
    vals = a.astype(bool) if dtype == "bool" else a
    if dtype in COMPLEX:  # each entry turned by a random phase: moduli (and dominance) kept
        vals = a * np.exp(1j * _RNG.uniform(-np.pi, np.pi, a.shape))
    if layout == "permuted":
        rev = tuple(reversed(range(a.ndim)))
        return ember.tensor(np.ascontiguousarray(vals.transpose(rev)), dtype=d).permute(*rev)
    if layout == "strided":
        big = np.zeros(tuple(2 * s for s in a.shape), vals.dtype)
        big[tuple(slice(None, None, 2) for _ in a.shape)] = vals
        return ember.tensor(big, dtype=d)[tuple(slice(None, None, 2) for _ in a.shape)]
    if layout == "offset":
        flat = np.concatenate([np.zeros(3, vals.dtype), vals.ravel()])
        return ember.tensor(flat, dtype=d)[3:].view(a.shape)
    if layout == "expanded":  # the first batch element broadcast over the batch
        return ember.tensor(vals[:1], dtype=d).expand(*a.shape)
    return ember.tensor(vals, dtype=d)


MAT_LAYOUTS = ("contiguous", "permuted", "strided", "offset")


def _expand_batch(a: np.ndarray) -> np.ndarray:
    return np.broadcast_to(a[:1], a.shape).copy()


def well_conditioned(shape) -> np.ndarray:
    """Diagonally dominant square matrices (invertible, modest condition number)."""
    n = shape[-1]
    return _RNG.uniform(-1, 1, shape) + n * np.eye(n)


def spd(shape) -> np.ndarray:
    x = _RNG.uniform(-1, 1, shape)
    return x @ np.swapaxes(x, -1, -2) + shape[-1] * np.eye(shape[-1])


def singular(shape, repeats: int = 1) -> np.ndarray:
    """Exactly singular matrices: the last ``repeats`` rows are zero (LU then finds an exactly
    zero pivot, so ``det == 0``); rank ``n - repeats``."""
    a = _RNG.uniform(-2, 2, shape)
    a[..., shape[-2] - repeats:, :] = 0.0
    return a


def rank_deficient(shape, rank: int, symmetric: bool = False) -> np.ndarray:
    *batch, m, n = shape
    x = _RNG.uniform(-2, 2, (*batch, m, rank))
    if symmetric:
        return x @ np.swapaxes(x, -1, -2)
    return x @ _RNG.uniform(-2, 2, (*batch, rank, n))


SQUARE_SHAPES = [(3, 3), (2, 4, 4), (1, 1), (0, 3, 3), (0, 0), (3, 1, 2, 2)]


def matrix_samples(values, shapes=SQUARE_SHAPES, args=(), kwargs=None):
    """Each shape's ``values(shape)`` in every layout, plus an expanded batch for batches."""
    def gen(dtype):
        for shape in shapes:
            a = values(shape)
            for lay in MAT_LAYOUTS:
                yield SampleInput((from_np(a, dtype, lay), *args), dict(kwargs or {}),
                                  f"{lay}{list(shape)}{args}{kwargs or ''}")
            if len(shape) > 2 and shape[0] > 1:
                yield SampleInput((from_np(_expand_batch(a), dtype, "expanded"), *args),
                                  dict(kwargs or {}), f"expanded{list(shape)}{args}")
    return gen


def _chain(*gens):
    def gen(dtype):
        for g in gens:
            yield from g(dtype)
    return gen


# -- products ----------------------------------------------------------------------------------
MATMUL_PAIRS = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
                ((5, 2, 3), (5, 3, 4)), ((2, 1, 2, 3), (4, 3, 2)), ((0, 2, 3), (3, 4)),
                ((2, 0), (0, 3)), ((1, 1), (1, 1)), ((0,), (0,)), ((3, 1, 2), (1, 2, 0)),
                ((5, 5, 0), (0, 5)), ((5, 0, 3), (3, 5)), ((5, 2, 3), (3, 0)), ((0, 2), (2,))]


def _fused_samples(in_shapes, a_shape, b_shape):
    scalars = [dict(), dict(beta=0.5, alpha=2), dict(beta=0, alpha=-1), dict(beta=1.7, alpha=2.5)]

    def gen(dtype):
        for s in in_shapes:
            for (la, lb), kw in zip(PAIR_LAYOUTS[:4], scalars):
                inp = make(s, dtype, layout=_lay(la, s))
                yield SampleInput((inp, make(a_shape, dtype, layout=_lay(lb, a_shape)),
                                   make(b_shape, dtype, layout=_lay(la, b_shape))), kw,
                                  f"{list(s)}{kw}")
        if dtype in ("float32", "float64"):  # beta=0 must ignore NaN in input
            nan = ember.full(a_shape[:-1] + b_shape[-1:] if len(a_shape) == 3 and
                             len(in_shapes[0]) == 3 else in_shapes[0], math.nan,
                             dtype=getattr(ember, dtype))
            yield SampleInput((nan, make(a_shape, dtype), make(b_shape, dtype)),
                              dict(beta=0, alpha=1.5), "nan-input-beta0")
    return gen


def _fused_entry(name, in_shapes, a_shape, b_shape):
    return [
        OpInfo(name, lambda lib, i, a, b, **kw: getattr(lib, name)(i, a, b, **kw),
               _fused_samples(in_shapes, a_shape, b_shape), dtypes=ALL_C, tol=PRODUCT_TOL),
        OpInfo(name + "_method_", lambda lib, i, a, b, **kw: getattr(i.clone(), name + "_")(
            a, b, **kw), _fused_samples(in_shapes[-1:], a_shape, b_shape), dtypes=ALL,
            tol=PRODUCT_TOL),
    ]


def _mixed_dtype_pairs(shapes):
    def gen(dtype):
        for sa, sb in shapes:
            for other in ("float64", "int64", "bool", "float16"):
                yield SampleInput((make(sa, dtype), make(sb, other, layout="strided")), {},
                                  f"{dtype}x{other}")
    return gen


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]), ("...ij,...jk", [(5, 2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]), ("ii", [(3, 3)]), ("i,j->ij", [(3,), (4,)]), ("ij->ji", [(2, 3)]),
    ("i,i->", [(4,), (4,)]), ("...i,...i->...", [(2, 1, 4), (3, 4)]),
    ("ij,jk", [(2, 1), (3, 4)]), ("ij->j", [(2, 3)]), ("bij,bkj->bik", [(0, 2, 3), (0, 4, 3)]),
    ("i,i,i->i", [(3,), (3,), (3,)]), ("...ij->j", [(2, 3, 4)]), ("a B, B c -> c a",
                                                                  [(2, 3), (3, 2)]),
]


def _einsum_samples(dtype):
    for eq, shapes in EINSUM_CASES:
        for la, lb in PAIR_LAYOUTS[:3]:
            ops = [make(s, dtype, layout=_lay(la if i % 2 == 0 else lb, s))
                   for i, s in enumerate(shapes)]
            yield SampleInput((eq, *ops), {}, f"{eq!r}{la}")
    yield SampleInput(("ij,jk->ik", [make((2, 3), dtype), make((3, 4), dtype)]), {}, "list")


TENSORDOT_CASES = [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 5), 1), ((2, 3), (4, 5), 0),
                   ((2, 3, 4), (4, 3), ([1, 2], [1, 0])), ((2, 1), (3, 5), 1),
                   ((0, 3), (3, 2), 1), ((3,), (3,), ([0], [0])), ((2, 3), (2, 3), 2)]


def _tensordot_samples(dtype):
    # torch's bool tensordot raises or not depending on the layout; bool checks contiguous only
    layouts = PAIR_LAYOUTS[:1] if dtype == "bool" else PAIR_LAYOUTS[:3]
    for sa, sb, dims in TENSORDOT_CASES:
        for la, lb in layouts:
            yield SampleInput((make(sa, dtype, layout=_lay(la, sa)),
                               make(sb, dtype, layout=_lay(lb, sb)), dims), {},
                              f"{list(sa)}{list(sb)}{dims}")


KRON_LAYOUTS = (("contiguous", "contiguous"), ("offset", "expanded"), ("expanded", "offset"))
KRON_PAIRS = [((2, 3), (4, 2)), ((2, 3), (4,)), ((), (3,)), ((2, 1, 3), (2, 2)), ((0, 2), (3, 1)),
              ((1,), (1,))]


def _power_samples(dtype):
    for n in (0, 1, 2, 3, -1, -2):
        yield from matrix_samples(well_conditioned, [(3, 3), (2, 2, 2), (0, 2, 2)],
                                  args=(n,))(dtype)


PRODUCTS = [
    OpInfo("matmul", lambda lib, a, b: lib.matmul(a, b), _pairs(MATMUL_PAIRS), dtypes=ALL_C,
           tol=PRODUCT_TOL),
    OpInfo("matmul_operator", lambda lib, a, b: a @ b, _pairs(MATMUL_PAIRS[3:5]), dtypes=ALL_C,
           tol=PRODUCT_TOL),
    OpInfo("matmul_method_out", lambda lib, a, b: lib.matmul(a, b, out=lib.empty(0, dtype=a.dtype)),
           _pairs(MATMUL_PAIRS[:6]), dtypes=ALL, tol=PRODUCT_TOL, meta=False),
    OpInfo("matmul_mixed", lambda lib, a, b: lib.matmul(a, b),
           _mixed_dtype_pairs([((2, 3), (3, 4)), ((3,), (3,)), ((2, 3), (3,)),
                               ((2, 2, 3), (2, 3, 4))]), dtypes=("float32", "int32")),
    OpInfo("mm", lambda lib, a, b: a.mm(b), _pairs([((2, 3), (3, 4)), ((0, 3), (3, 2)),
                                                   ((2, 0), (0, 2)), ((1, 1), (1, 1))]),
           dtypes=ALL_C, tol=PRODUCT_TOL),
    OpInfo("bmm", lambda lib, a, b: lib.bmm(a, b), _pairs([((4, 2, 3), (4, 3, 5)),
                                                          ((0, 2, 3), (0, 3, 1)),
                                                          ((1, 1, 1), (1, 1, 1))]),
           dtypes=ALL_C, tol=PRODUCT_TOL),
    OpInfo("mv", lambda lib, a, b: lib.mv(a, b), _pairs([((2, 3), (3,)), ((0, 3), (3,)),
                                                       ((3, 0), (0,)), ((), (3,)),
                                                       ((3,), (3,))]), dtypes=ALL_C,
           tol=PRODUCT_TOL),
    OpInfo("dot", lambda lib, a, b: lib.dot(a, b), _pairs([((5,), (5,)), ((0,), (0,)),
                                                          ((1,), (1,))]), dtypes=ALL_C,
           tol=PRODUCT_TOL),
    OpInfo("vdot", lambda lib, a, b: a.vdot(b), _pairs([((5,), (5,))]), dtypes=ALL_C,
           tol=PRODUCT_TOL),
    OpInfo("outer", lambda lib, a, b: lib.outer(a, b), _pairs([((3,), (4,)), ((0,), (2,))]),
           dtypes=ALL_C),
    OpInfo("ger", lambda lib, a, b: a.ger(b), _pairs([((3,), (4,))]), dtypes=ALL),
    OpInfo("outer_promotes", lambda lib, a, b: lib.outer(a, b),
           _mixed_dtype_pairs([((3,), (4,))]), dtypes=("float32", "int32", "bool")),
    *_fused_entry("addmm", [(4,), (1, 4), (), (2, 4)], (2, 3), (3, 4)),
    *_fused_entry("addmv", [(1,), (), (2,)], (2, 3), (3,)),
    *_fused_entry("addbmm", [(4,), (2, 1), (2, 4)], (5, 2, 3), (5, 3, 4)),
    *_fused_entry("baddbmm", [(4,), (1, 2, 4), (5, 2, 4)], (5, 2, 3), (5, 3, 4)),
    OpInfo("einsum", lambda lib, eq, *ops: lib.einsum(eq, *ops), _einsum_samples,
           dtypes=ALL_C, tol=PRODUCT_TOL),
    OpInfo("tensordot", lambda lib, a, b, dims: lib.tensordot(a, b, dims), _tensordot_samples,
           dtypes=ALL_C, tol=PRODUCT_TOL),
    # torch 2.13's kron raises "view size is not compatible" on permuted/strided inputs;
    # tests/ops/test_linalg_extra.py checks those layouts against torch on dense copies.
    OpInfo("kron", lambda lib, a, b: lib.kron(a, b), _pairs(KRON_PAIRS, layouts=KRON_LAYOUTS),
           dtypes=ALL_C),
    OpInfo("kron_promotes", lambda lib, a, b: a.kron(b), _mixed_dtype_pairs([((2, 2), (3,))]),
           dtypes=("float32", "int32", "bool") + COMPLEX),
    OpInfo("matrix_power", lambda lib, a, n: lib.linalg.matrix_power(a, n), _power_samples,
           dtypes=ALL_C, tol={"float32": (1e-4, 1e-4), "float64": (1e-10, 1e-10),
                              "float16": (4e-3, 1e-2), "bfloat16": (3e-2, 5e-2),
                              "complex64": (1e-4, 1e-4), "complex128": (1e-10, 1e-10)}),
    OpInfo("matrix_power_method", lambda lib, a, n: a.matrix_power(n),
           matrix_samples(well_conditioned, [(2, 3, 3)], args=(3,)), dtypes=("float32",
                                                                                "int64")),
]


# -- decompositions ----------------------------------------------------------------------------
# Gradients are compared through gauge-invariant functions only: |Q|, |R|, |U|, |Vh| and |V|
# do not depend on LAPACK's sign choices (distinct singular/eigen values). Outputs that check
# the forward only are computed from detached factors.
def _qr_fn(lib, a, mode="reduced"):
    q, r = lib.linalg.qr(a, mode=mode)
    if mode == "r":
        return q, r.abs()
    return q @ r, q.detach().mT @ q.detach(), r.abs(), q.abs()


def _svd_fn(lib, a, full_matrices=True):
    u, s, vh = lib.linalg.svd(a, full_matrices=full_matrices)
    k = s.shape[-1]
    uk, vk = u[..., :k], vh[..., :k, :]
    rebuilt = (uk * s.unsqueeze(-2)) @ vk
    # with full_matrices the extra singular vectors are an arbitrary basis: forward only
    ortho = (u.detach().mT @ u.detach(), vh.detach() @ vh.detach().mT)
    return rebuilt, s, *ortho, uk.abs(), vk.abs(), (uk * s.unsqueeze(-2)) @ uk.mT


def _eigh_fn(lib, a, UPLO="L"):
    w, v = lib.linalg.eigh(a, UPLO=UPLO)
    return w, (v * w.unsqueeze(-2)) @ v.mT, v.detach().mT @ v.detach(), v.abs()


def _sym(a):
    return a + a.mT


RECT_SHAPES = [(4, 3), (3, 5), (2, 4, 4), (3, 1, 3, 2), (1, 1), (0, 3), (3, 0), (0, 2, 2)]
WIDE_SHAPES = [s for s in RECT_SHAPES if s[-2] <= s[-1]]
TALL_SHAPES = [s for s in RECT_SHAPES if s[-2] > s[-1]]


def _solve_samples(dtype):
    cases = [((3, 3), (3,), {}), ((3, 3), (3, 2), {}), ((2, 3, 3), (3,), {}),
             ((2, 3, 3), (2, 3), {}), ((2, 3, 3), (3, 4), {}), ((2, 1, 3, 3), (4, 3, 2), {}),
             ((3, 3), (2, 3), dict(left=False)), ((0, 3, 3), (3, 1), {}), ((1, 1), (1,), {})]
    for sa, sb, kw in cases:
        a, b = well_conditioned(sa), _RNG.uniform(-3, 3, sb)
        for la, lb in (("contiguous", "contiguous"), ("permuted", "strided"),
                       ("strided", "permuted"), ("offset", "offset")):
            yield SampleInput((from_np(a, dtype, la), from_np(b, dtype, _lay(lb, sb))), kw,
                              f"{la}{list(sa)}x{lb}{list(sb)}{kw}")
    a = _expand_batch(well_conditioned((3, 2, 2)))
    yield SampleInput((from_np(a, dtype, "expanded"), from_np(np.ones((3, 2)), dtype)), {},
                      "expanded-batch")


def _rank_samples(dtype):
    shapes = [(5, 4), (2, 4, 6), (0, 3), (3, 0), (2, 3, 3)]
    for shape in shapes:
        a = rank_deficient(shape, 2) if 0 not in shape else np.zeros(shape)
        for lay in MAT_LAYOUTS:
            yield SampleInput((from_np(a, dtype, lay),), {}, f"{lay}{list(shape)}")
    a = rank_deficient((2, 4, 4), 3, symmetric=True)
    yield SampleInput((from_np(a, dtype, "permuted"),), dict(hermitian=True), "hermitian")
    a = rank_deficient((3, 4), 3)
    for kw in (dict(atol=1e-2), dict(rtol=0.3), dict(atol=0.5, rtol=0.01), dict(tol=1.0)):
        yield SampleInput((from_np(a, dtype, "strided"),), kw, str(kw))


def _pinv_samples(dtype):
    for shape in [(4, 3), (3, 5), (2, 3, 3), (0, 3)]:
        a = _RNG.uniform(-3, 3, shape) + (2 * np.eye(*shape[-2:]) if 0 not in shape else 0)
        for lay in MAT_LAYOUTS:
            yield SampleInput((from_np(a, dtype, lay),), {}, f"{lay}{list(shape)}")
    yield SampleInput((from_np(rank_deficient((5, 4), 2), dtype, "permuted"),), {}, "rank2")
    yield SampleInput((from_np(spd((2, 3, 3)), dtype, "strided"),), dict(hermitian=True),
                      "hermitian")
    yield SampleInput((from_np(rank_deficient((4, 4), 2), dtype),), dict(atol=1e-3, rtol=0.0),
                      "atol")
    # tolerances as 0-d / batched tensors, and torch's positional (rcond, hermitian) form
    fd = ember.float64 if dtype not in ("float32", "float64") else getattr(ember, dtype)
    a = _RNG.uniform(-3, 3, (3, 4))
    yield SampleInput((from_np(a, dtype, "permuted"),), dict(rtol=ember.tensor(0.1, dtype=fd)),
                      "rtol-0d-tensor")
    yield SampleInput((from_np(_RNG.uniform(-3, 3, (2, 3, 4)), dtype),),
                      dict(atol=ember.tensor([1e-3, 1e-2], dtype=fd)),
                      "atol-batch-tensor")
    yield SampleInput((from_np(a, dtype, "strided"), 0.2), {}, "rcond-positional")
    yield SampleInput((from_np(a, dtype), ember.tensor(0.2, dtype=fd)), {}, "rcond-tensor")
    yield SampleInput((from_np(np.zeros((3, 0)), dtype), 1e-5), {}, "empty-rcond")
    yield SampleInput((from_np(spd((2, 3, 3)), dtype), 1e-5, True), {}, "rcond-hermitian")


def _symmetric_or_not(shape):
    return _RNG.uniform(-3, 3, shape)  # eigh reads one triangle only


DECOMPS = [
    OpInfo("linalg.inv", lambda lib, a: lib.linalg.inv(a), matrix_samples(well_conditioned),
           dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("inverse", lambda lib, a: a.inverse(), matrix_samples(well_conditioned, [(2, 3, 3)]),
           dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("linalg.det", lambda lib, a: lib.linalg.det(a),
           matrix_samples(lambda s: _RNG.uniform(-2, 2, s)), dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("det", lambda lib, a: a.det(), matrix_samples(well_conditioned, [(2, 3, 3)]),
           dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("linalg.slogdet", lambda lib, a: lib.linalg.slogdet(a),
           matrix_samples(lambda s: _RNG.uniform(-2, 2, s)), dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("linalg.slogdet_singular", lambda lib, a: lib.linalg.slogdet(a),
           matrix_samples(lambda s: np.ones(s), [(3, 3)]), dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("slogdet", lambda lib, a: lib.slogdet(a),
           matrix_samples(lambda s: _RNG.uniform(-2, 2, s), [(2, 3, 3)]), dtypes=ALL_C,
           tol=DECOMP_TOL),
    OpInfo("logdet", lambda lib, a: a.logdet(),
           matrix_samples(lambda s: _RNG.uniform(-2, 2, s)), dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("logdet_singular", lambda lib, a: a.logdet(),
           matrix_samples(lambda s: np.zeros(s), [(2, 2)]), dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("linalg.det_singular", lambda lib, a: lib.linalg.det(a),
           matrix_samples(singular, [(3, 3), (2, 4, 4), (1, 1), (2, 2)]), dtypes=FLOATS,
           tol=DECOMP_TOL),
    OpInfo("linalg.det_rank_n_minus_2", lambda lib, a: lib.linalg.det(a),
           matrix_samples(lambda s: singular(s, 2), [(4, 4), (2, 5, 5)]), dtypes=("float64",),
           tol=DECOMP_TOL),
    OpInfo("linalg.solve", lambda lib, a, b, **kw: lib.linalg.solve(a, b, **kw), _solve_samples,
           dtypes=ALL_C, tol=DECOMP_TOL),
    OpInfo("linalg.cholesky", lambda lib, a, **kw: lib.linalg.cholesky(a, **kw),
           _chain(matrix_samples(spd), matrix_samples(spd, kwargs=dict(upper=True))),
           dtypes=ALL, tol=DECOMP_TOL),
    OpInfo("linalg.qr", _qr_fn,
           _chain(matrix_samples(lambda s: _RNG.uniform(-3, 3, s), RECT_SHAPES),
                  matrix_samples(lambda s: _RNG.uniform(-3, 3, s), WIDE_SHAPES,
                                 args=("complete",))), dtypes=ALL, tol=DECOMP_TOL),
    # torch's backward refuses mode='r' and mode='complete' with more rows than columns
    # (tests/ops/test_linalg_extra.py checks ember raises the same): forward only here.
    OpInfo("linalg.qr_not_differentiable", _qr_fn,
           _chain(matrix_samples(lambda s: _RNG.uniform(-3, 3, s), TALL_SHAPES,
                                 args=("complete",)),
                  matrix_samples(lambda s: _RNG.uniform(-3, 3, s), RECT_SHAPES[:4],
                                 args=("r",))), dtypes=ALL, tol=DECOMP_TOL),
    OpInfo("linalg.svd", _svd_fn,
           _chain(matrix_samples(lambda s: _RNG.uniform(-3, 3, s), RECT_SHAPES),
                  matrix_samples(lambda s: _RNG.uniform(-3, 3, s), RECT_SHAPES,
                                 args=(False,))), dtypes=ALL, tol=DECOMP_TOL),
    OpInfo("linalg.svdvals", lambda lib, a: lib.linalg.svdvals(a),
           matrix_samples(lambda s: _RNG.uniform(-3, 3, s), RECT_SHAPES), dtypes=ALL,
           tol=DECOMP_TOL),
    OpInfo("linalg.eigh", _eigh_fn,
           _chain(matrix_samples(_symmetric_or_not), matrix_samples(_symmetric_or_not,
                                                                    args=("U",))),
           dtypes=ALL, tol=DECOMP_TOL),
    OpInfo("linalg.eigvalsh", lambda lib, a, *u: lib.linalg.eigvalsh(a, *u),
           _chain(matrix_samples(_symmetric_or_not), matrix_samples(_symmetric_or_not,
                                                                    args=("U",))),
           dtypes=ALL, tol=DECOMP_TOL),
    OpInfo("linalg.matrix_rank", lambda lib, a, **kw: lib.linalg.matrix_rank(a, **kw),
           _rank_samples, dtypes=ALL),
    OpInfo("linalg.pinv", lambda lib, a, *args, **kw: lib.linalg.pinv(a, *args, **kw),
           _pinv_samples,
           dtypes=ALL, tol=DECOMP_TOL),
]


_BY_NAME = {info.name: info for info in DECOMPS}
# torch's slogdet/logdet gradients at singular matrices are the inf/NaN of a triangular solve
# with a zero pivot (ember's inverse raises LinAlgError there): forward only.
_BY_NAME["linalg.slogdet_singular"].grad = False
_BY_NAME["logdet_singular"].grad = False
_BY_NAME["linalg.qr_not_differentiable"].grad = False
# At an exactly singular matrix of rank n-1 ember's det gradient is the (nonzero) cofactor
# matrix; torch 2.13 returns zeros there (det * A^{-T} with det == 0). test_linalg_extra.py
# checks ember's against the cofactors and gradcheck; rank <= n-2 (zero cofactors) is compared
# with torch by linalg.det_rank_n_minus_2.
_BY_NAME["linalg.det_singular"].grad = False
# eigh, eigvalsh and cholesky read one triangle, but their gradient is torch's symmetric one, so
# finite differences on a raw (non-symmetric) input disagree with it off the diagonal; the
# *_symmetrized entries below run gradcheck on symmetrised inputs instead.
for _name in ("linalg.eigh", "linalg.eigvalsh", "linalg.cholesky"):
    _BY_NAME[_name].gradcheck = False


# -- gradient entries: small inputs, so that gradcheck (which takes the smallest samples) sees
# real matrices rather than 1x1 ones ------------------------------------------------------------
def _uniform(shape):
    return _RNG.uniform(-3, 3, shape)


SMALL_SQUARE = [(2, 2), (3, 3), (2, 3, 3)]
SMALL_RECT = [(3, 2), (2, 3), (2, 3, 2)]
F64 = ("float64",)


def _small_power_samples(dtype):
    for n in (2, 3, -2):
        yield from matrix_samples(well_conditioned, SMALL_SQUARE[:2], args=(n,))(dtype)


def _small_solve_samples(dtype):
    for sa, sb, kw in (((3, 3), (3, 2), {}), ((2, 2), (2,), {}), ((2, 2), (3, 2), dict(left=False))):
        a, b = well_conditioned(sa), _RNG.uniform(-3, 3, sb)
        yield SampleInput((from_np(a, dtype, "permuted"), from_np(b, dtype, _lay("strided", sb))),
                          kw, f"{list(sa)}x{list(sb)}{kw}")


GRAD_ENTRIES = [
    OpInfo("linalg.eigh_symmetrized", lambda lib, a, *u: _eigh_fn(lib, _sym(a), *u),
           _chain(matrix_samples(_uniform, SMALL_SQUARE),
                  matrix_samples(_uniform, SMALL_SQUARE[:1], args=("U",))), dtypes=F64,
           tol=DECOMP_TOL),
    OpInfo("linalg.eigvalsh_symmetrized", lambda lib, a, *u: lib.linalg.eigvalsh(_sym(a), *u),
           _chain(matrix_samples(_uniform, SMALL_SQUARE),
                  matrix_samples(_uniform, SMALL_SQUARE[:1], args=("U",))), dtypes=F64,
           tol=DECOMP_TOL),
    OpInfo("linalg.cholesky_symmetrized",
           lambda lib, a, **kw: lib.linalg.cholesky(_sym(a), **kw),
           _chain(matrix_samples(spd, SMALL_SQUARE),
                  matrix_samples(spd, SMALL_SQUARE[:1], kwargs=dict(upper=True))),
           dtypes=F64, tol=DECOMP_TOL),
    OpInfo("linalg.qr_small", _qr_fn,
           _chain(matrix_samples(_uniform, SMALL_RECT + SMALL_SQUARE[1:2]),
                  matrix_samples(_uniform, [(2, 3)], args=("complete",))), dtypes=F64,
           tol=DECOMP_TOL),
    OpInfo("linalg.svd_small", _svd_fn,
           _chain(matrix_samples(_uniform, SMALL_RECT, args=(False,)),
                  matrix_samples(_uniform, SMALL_RECT[:2])), dtypes=F64, tol=DECOMP_TOL),
    OpInfo("linalg.svdvals_small", lambda lib, a: lib.linalg.svdvals(a),
           matrix_samples(_uniform, SMALL_RECT), dtypes=F64, tol=DECOMP_TOL),
    OpInfo("linalg.pinv_small", lambda lib, a, **kw: lib.linalg.pinv(a, **kw),
           matrix_samples(_uniform, SMALL_RECT), dtypes=F64, tol=DECOMP_TOL),
    OpInfo("linalg.inv_small", lambda lib, a: lib.linalg.inv(a),
           matrix_samples(well_conditioned, SMALL_SQUARE), dtypes=F64, tol=DECOMP_TOL),
    OpInfo("linalg.det_small", lambda lib, a: lib.linalg.det(a),
           matrix_samples(_uniform, SMALL_SQUARE), dtypes=F64, tol=DECOMP_TOL),
    OpInfo("linalg.slogdet_small", lambda lib, a: lib.linalg.slogdet(a),
           matrix_samples(_uniform, SMALL_SQUARE), dtypes=F64 + ("complex128",), tol=DECOMP_TOL),
    OpInfo("logdet_small", lambda lib, a: lib.logdet(a), matrix_samples(spd, SMALL_SQUARE),
           dtypes=F64, tol=DECOMP_TOL),
    OpInfo("linalg.solve_small", lambda lib, a, b, **kw: lib.linalg.solve(a, b, **kw),
           _small_solve_samples, dtypes=F64, tol=DECOMP_TOL),
    OpInfo("matrix_power_small", lambda lib, a, n: lib.linalg.matrix_power(a, n),
           _small_power_samples, dtypes=F64 + ("complex128",), tol=DECOMP_TOL),
]


# -- errors ------------------------------------------------------------------------------------
def _e(*shapes, dtype="float32"):
    return [make(s, dtype) for s in shapes]


def _product_errors():
    def err(args, match, kwargs=None, error=RuntimeError):
        return ErrorInput(SampleInput(tuple(args), kwargs or {}), error, match)

    yield err(_e((), (2, 3)), r"both arguments to matmul need to be at least 1D, but they are "
                              r"0D and 2D")
    yield err(_e((2, 3), (4, 5)), r"mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x5\)")
    yield err(_e((3,), (4,)), r"inconsistent tensor size, expected tensor \[3\] and src \[4\]")
    yield err(_e((2, 3), (4,)), r"size mismatch, got input \(2\), mat \(2x3\), vec \(4\)")
    yield err(_e((3,), (4, 5)), r"shapes cannot be multiplied \(1x3 and 4x5\)")
    yield err(_e((5, 2, 3), (4, 3, 5)), r"The size of tensor a \(5\) must match")
    yield err(_e((5, 2, 3), (5, 4, 5)), r"Expected size for first two dimensions of batch2")
    yield err(_e((5, 2, 3), (4,)), r"size mismatch, got input \(10\), mat \(10x3\)")
    yield err([make((2, 3)), make((3, 4), "float64")], r"same dtype")
    yield err(_e((2, 3), (3, 4), dtype="bool"), r'"addmm_impl_cpu_" not implemented for '
                                                r"'Bool'", error=NotImplementedError)


def _products_fn(lib, which, *args, **kwargs):
    return getattr(lib, which)(*args, **kwargs)


def _named_errors():
    def err(which, args, match, kwargs=None, error=RuntimeError):
        return ErrorInput(SampleInput((which, *args), kwargs or {}), error, match)

    yield err("mm", _e((3,), (3, 4)), "self must be a matrix")
    yield err("mm", _e((2, 3), (4, 5)), r"shapes cannot be multiplied \(2x3 and 4x5\)")
    yield err("bmm", _e((2, 3), (3, 4)), "batch1 must be a 3D tensor")
    yield err("bmm", _e((2, 2, 3), (3, 3, 4)), r"batch2 tensor to be: \[2, 3\] but got: \[3, 3\]")
    yield err("mv", _e((2, 3), (3, 1)), "vector \\+ matrix @ vector expected, got 1, 2, 2")
    yield err("dot", _e((3, 1), (3,)), "1D tensors expected, but got 2D and 1D tensors")
    yield err("dot", [make((3,)), make((3,), "float64")], "dot : expected both vectors to have "
                                                         "same dtype, but found Float and Double")
    yield err("vdot", _e((3,), (4,)), "inconsistent tensor size")
    yield err("outer", _e((3, 1), (4,)), "outer: Expected 1-D argument self, but got 2-D")
    yield err("addmm", _e((3, 4), (2, 3), (3, 4)), r"The expanded size of the tensor \(2\) must "
                                                   r"match the existing size \(3\)")
    yield err("addmm", _e((2, 4), (2,), (3, 4)), "mat1 must be a matrix, got 1-D tensor")
    yield err("addmm", [make((2, 4), "float64"), make((2, 3), "float64"), make((3, 4))],
              "mat1 and mat2 must have the same dtype")
    yield err("addmv", _e((5,), (2, 3), (3,)), r"size mismatch, got input \(5\), mat \(2x3\)")
    yield err("addmv", _e((2, 1), (2, 3), (3,)), "vector \\+ matrix @ vector expected, got 2")
    yield err("addbmm", _e((2, 4), (5, 2, 3), (4, 3, 4)), "batch1 and batch2 must have same "
                                                         "number of batches, got 5 and 4")
    yield err("addbmm", _e((2, 4), (5, 2, 3), (5, 4, 4)), r"Incompatible matrix sizes for bmm "
                                                         r"\(2x3 and 4x4\)")
    yield err("baddbmm", _e((6, 2, 4), (5, 2, 3), (5, 3, 4)), "expanded size of the tensor")
    yield err("tensordot", _e((2, 3), (4, 5)) + [1], "contracted dimensions need to match, but "
                                                    "first has size 3 in dim -1 and second has "
                                                    "size 4 in dim 0")
    yield err("tensordot", _e((2, 3), (3, 5)) + [([1, 0], [0])], "both dimension lists should "
                                                                "have same length")
    yield err("tensordot", _e((2, 3), (3, 5)) + [-1], "tensordot expects dims >= 0")
    yield err("tensordot", _e((2, 3), (3, 5)) + [3], "tensordot expects dims < ndim_a or ndim_b")
    yield err("tensordot", _e((2, 3), (3, 5)) + [([1], [5])], "Dimension out of range",
              error=IndexError)
    for eq, shapes, match in [
        ("ij,jk->ik", [(2, 3)], "fewer operands were provided"),
        ("ij", [(3, 4), (3, 4)], "more operands were provided"),
        ("ijk,jk->ik", [(2, 3), (3, 4)], r"number of subscripts in the equation \(3\) does not "
                                         r"match the number of dimensions \(2\) for operand 0"),
        ("ij,jk->ik", [(2, 3), (4, 4)], "subscript j has size 4 for operand 1 which does not "
                                        "broadcast with previously seen size 3"),
        ("ii", [(3, 4)], "subscript i is repeated for operand 0 but the sizes don't match"),
        ("ij->ii", [(3, 4)], "output subscript i appears more than once"),
        ("ij->k", [(3, 4)], "output subscript k does not appear in the equation"),
        ("i1->i", [(3, 4)], "invalid subscript given at index 1"),
        ("i...j...", [(3, 4)], "an ellipsis was already found"),
    ]:
        yield err("einsum", [eq, *_e(*shapes)], match)
    yield err("einsum", ["ij,jk", make((2, 3)), make((3, 4), "float64")], "expected scalar type")


def _linalg_fn(lib, which, *args, **kwargs):
    return getattr(lib.linalg, which)(*args, **kwargs)


def _linalg_errors():
    def err(which, args, match, kwargs=None, error=RuntimeError):
        return ErrorInput(SampleInput((which, *args), kwargs or {}), error, match)

    for name in ("inv", "det", "slogdet", "cholesky", "eigh", "eigvalsh", "matrix_power"):
        args = [make((3,))] + ([2] if name == "matrix_power" else [])
        prefix = "eigh" if name == "eigvalsh" else name  # torch names eigh in both
        yield err(name, args, f"linalg.{prefix}: The input tensor A must have at least 2 dim")
        args = [make((2, 3))] + ([2] if name == "matrix_power" else [])
        yield err(name, args, "A must be batches of square matrices, but they are 2 by 3 matrices")
    yield err("svd", [make((3,))], "linalg.svd: The input tensor A must have at least 2")
    yield err("qr", [make((3,))], "linalg.qr: The input tensor A must have at least 2")
    yield err("qr", [make((3, 3)), "bad"], "qr received unrecognized mode 'bad' but expected")
    yield err("eigh", [make((3, 3)), "X"], "Expected UPLO argument to be 'L' or 'U', but got X")
    yield err("inv", [from_np(np.ones((3, 3)), "float32")],
              "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed")
    yield err("inv", [from_np(np.stack([np.eye(2), np.zeros((2, 2))]), "float64")],
              r"\(Batch element 1\): The diagonal element 1 is zero")
    yield err("inv", [make((3, 3), "int32")], "Expected a floating point or complex tensor as "
                                              "input. Got Int")
    yield err("inv", [make((3, 3), "float16")], "Low precision dtypes not supported. Got Half")
    yield err("det", [make((3, 3), "float16")], '"lu_cpu" not implemented for \'Half\'',
              error=NotImplementedError)
    yield err("eigh", [make((3, 3), "int64")], '"linalg_eigh_cpu" not implemented for \'Long\'',
              error=NotImplementedError)
    yield err("cholesky", [from_np(-np.eye(3), "float32")], r"not positive-definite \(the "
                                                           r"leading minor of order 1")
    yield err("cholesky", [from_np(np.stack([np.eye(3), np.diag([1, 1, -1.0])]), "float64")],
              r"\(Batch element 1\): .*leading minor of order 3 is not positive-definite")
    yield err("solve", [from_np(np.ones((3, 3)), "float32"), make((3,))],
              "The solver failed because the input matrix is singular")
    yield err("solve", [make((3, 3)), make((4, 2))], r"Incompatible shapes of A and B for the "
                                                     r"equation AX = B \(3x3 and 4x2\)")
    yield err("solve", [make((3, 3)), make((3,))], r"equation XA = B \(3x3 and 3x1\)",
              dict(left=False))
    yield err("solve", [make((3, 3)), make((3,), "float64")], "Expected A and B to have the same "
                                                              "dtype")
    yield err("matrix_rank", [make((3,))], "must have at least 2 dimensions")
    yield err("matrix_rank", [make((3, 3), "int32")], "doesn't handle types other than float")
    yield err("pinv", [make((3,))], r"linalg.pinv\(Float\{\[3\]\}\): expected a tensor with 2 "
                                    r"or more dimensions")
    yield err("matrix_power", [make((3, 3), "int32"), -1], "linalg.inv: Expected a floating")


def _singular_errors_are_linalg_errors():
    # LinAlgError subclasses RuntimeError in both libraries.
    yield ErrorInput(SampleInput((from_np(np.zeros((2, 2)), "float64"),)), RuntimeError,
                     "singular")


ERRORS = [
    OpInfo("matmul_errors", lambda lib, a, b: lib.matmul(a, b), lambda d: [], dtypes=(),
           errors=_product_errors),
    OpInfo("product_errors", _products_fn, lambda d: [], dtypes=(), errors=_named_errors),
    OpInfo("linalg_errors", _linalg_fn, lambda d: [], dtypes=(), errors=_linalg_errors),
    OpInfo("linalg_error_class", lambda lib, a: lib.linalg.inv(a), lambda d: [], dtypes=(),
           errors=_singular_errors_are_linalg_errors),
]

OPS = PRODUCTS + DECOMPS + GRAD_ENTRIES + ERRORS
