"""Op-table entries: addr, inner, dist, the window functions, asarray and frombuffer
(ember.ops.composites)."""

from __future__ import annotations

import numpy as np

import ember
from tests.opinfo import ALL, COMPLEX, FLOATS, NUMERIC, ErrorInput, OpInfo, SampleInput, make

LOOSE = {"float32": (2e-5, 2e-5), "float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1e-2),
         "complex64": (2e-5, 2e-5)}


def _fn(name):
    return lambda lib, *a, **k: getattr(lib, name)(*a, **k)


def _addr_samples(d):
    for lay in ("contiguous", "permuted", "strided", "expanded"):
        yield SampleInput((make((3, 4), d, layout=lay), make((3,), d), make((4,), d,
                                                                             layout="strided")),
                          {}, lay)
    yield SampleInput((make((4,), d), make((3,), d), make((4,), d)), {}, "broadcast row")
    yield SampleInput((make((), d), make((0,), d), make((4,), d)), {}, "empty")
    if d == "bool":
        kws = ({"beta": False}, {"alpha": False, "beta": True})
    elif d in FLOATS:
        kws = ({"beta": 0.5, "alpha": 2.0}, {"beta": 0}, {"alpha": -1})
    else:
        kws = ({"beta": 2, "alpha": 3}, {"beta": 0}, {"beta": 0.5})
    for kw in kws:
        yield SampleInput((make((3, 4), d), make((3,), d), make((4,), d)), kw, str(kw))
    if d in FLOATS[:2]:
        nan = ember.full((3, 4), float("nan"), dtype=getattr(ember, d))
        yield SampleInput((nan, make((3,), d), make((4,), d)), {"beta": 0}, "beta=0 skips nan")


def _addr_errors():
    yield ErrorInput(SampleInput((make((2, 3)), make((2, 2)), make((3,)))), RuntimeError,
                     "Expected 1-D argument vec1")
    yield ErrorInput(SampleInput((make((2, 3), "int64"), make((2,), "int64"),
                                  make((3,), "int64")), {"beta": 0.5}), RuntimeError,
                     "must not be a floating point")
    yield ErrorInput(SampleInput((make((2, 3)), make((2,)), make((3,))), {"alpha": True}),
                     RuntimeError, "Boolean alpha only supported")


def _inner_samples(d):
    for sa, sb in (((3,), (3,)), ((2, 3), (4, 3)), ((2, 1, 3), (3,)), ((), (2, 3)),
                   ((2, 0), (3, 0)), ((4,), ())):
        for lay in ("contiguous", "permuted", "strided"):
            la = lay if len(sa) >= 2 or lay != "permuted" else "contiguous"
            yield SampleInput((make(sa, d, layout=la), make(sb, d, layout="strided")), {},
                              f"{lay}{sa}x{sb}")


def _inner_errors():
    yield ErrorInput(SampleInput((make((2, 3)), make((2, 4)))), RuntimeError,
                     "the last dimension must match")


def _dist_samples(d):
    # p=0 is left out of float64 and complex128 (the gradient runs): torch's backward of a
    # 0-norm fails with an undefined-tensor error where ember returns zeros
    zero = (0,) if d not in ("float64", "complex128") else ()
    for p in (2, 1, 3.5, float("inf"), float("-inf"), *zero):
        for sa, sb in (((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((5,), ())):
            yield SampleInput((make(sa, d, layout="strided"), make(sb, d), p), {},
                              f"p={p}{sa}x{sb}")


def _window_samples(d):
    for n in (0, 1, 2, 5, 8):
        for periodic in (True, False):
            yield SampleInput((n, periodic), {"dtype": getattr(ember, d)}, f"{n}-{periodic}")


def _window_errors(name):
    def gen():
        yield ErrorInput(SampleInput((4,), {"dtype": ember.int64}), RuntimeError,
                         "expects floating point dtypes")
        yield ErrorInput(SampleInput((-1,), {}), RuntimeError, "non-negative window_length")
    return gen


def _asarray_samples(d):
    a = np.arange(6).reshape(2, 3)
    yield SampleInput(([[1, 2], [3, 4]],), {"dtype": getattr(ember, d)}, "nested list")
    yield SampleInput((3,), {}, "int")
    yield SampleInput((2.5,), {"dtype": getattr(ember, d)}, "float")
    yield SampleInput((a.T,), {}, "numpy transposed")
    yield SampleInput((make((3, 4), d, layout="strided"),), {}, "tensor")
    yield SampleInput((make((3, 4), d),), {"dtype": ember.float64}, "tensor converted")
    yield SampleInput((make((3, 4), d),), {"copy": True}, "tensor copied")


def _asarray_identity(lib, x):
    same = lib.asarray(x)
    copied = lib.asarray(x, copy=True)
    return same is x, copied is x, copied.data_ptr() == x.data_ptr(), copied


def _frombuffer_samples(d):
    itemsize = np.dtype(getattr(ember, d).np).itemsize
    raw = np.arange(48, dtype=np.uint8).tobytes()
    yield SampleInput((raw,), {"dtype": getattr(ember, d)}, "all")
    yield SampleInput((raw,), {"dtype": getattr(ember, d), "count": 3,
                               "offset": 2 * itemsize}, "count+offset")


def _frombuffer_fn(lib, data, **kw):
    raw = bytearray(data)  # a fresh writable buffer per library
    out = lib.frombuffer(raw, **kw)
    # the tensor aliases the buffer: a write to the buffer shows in it
    raw[kw.get("offset", 0)] ^= 0xFF
    return out.clone()


def _frombuffer_errors():
    yield ErrorInput(SampleInput((bytearray(b""),), {"dtype": ember.int16}), ValueError,
                     "must not be 0")
    yield ErrorInput(SampleInput((bytearray(b"abc"),), {"dtype": ember.int16}), ValueError,
                     "must be a multiple of element size")
    yield ErrorInput(SampleInput((bytearray(b"abcd"),), {"dtype": ember.int16, "offset": 4}),
                     ValueError, "must be non-negative")


OPS = [
    OpInfo("addr", _fn("addr"), _addr_samples, dtypes=ALL + COMPLEX, tol=LOOSE,
           errors=_addr_errors),
    OpInfo("inner", _fn("inner"), _inner_samples, dtypes=NUMERIC + COMPLEX, tol=LOOSE,
           errors=_inner_errors),
    OpInfo("dist", _fn("dist"), _dist_samples, dtypes=ALL + COMPLEX, tol=LOOSE),
    OpInfo("asarray", _fn("asarray"), _asarray_samples, dtypes=ALL, meta=False),
    OpInfo("asarray_identity", _asarray_identity,
           lambda d: [SampleInput((make((2, 3), d),), {}, "t")], dtypes=ALL, meta=False),
    OpInfo("frombuffer", _frombuffer_fn, _frombuffer_samples,
           dtypes=("float32", "float64", "float16", "int16", "int64", "uint8"), meta=False,
           errors=_frombuffer_errors),
]
for _w in ("hann_window", "hamming_window", "blackman_window", "bartlett_window",
           "kaiser_window"):
    # complex dtypes: torch fills lengths 0 and 1 and refuses longer ones (its complex arange)
    OPS.append(OpInfo(_w, _fn(_w), _window_samples, dtypes=FLOATS + COMPLEX, tol=LOOSE,
                      meta=False, errors=_window_errors(_w)))
OPS += [
    OpInfo("hamming_window_alpha_beta", lambda lib, n, p, **k: lib.hamming_window(
        n, p, 0.6, 0.3, **k), _window_samples, dtypes=FLOATS + COMPLEX, tol=LOOSE, meta=False),
    OpInfo("kaiser_window_beta", lambda lib, n, p, **k: lib.kaiser_window(n, p, 5.0, **k),
           _window_samples, dtypes=FLOATS + COMPLEX, tol=LOOSE, meta=False),
]


# -- torch.linalg composites ----------------------------------------------------------------------
def _linalg(name):
    return lambda lib, *a, **k: getattr(lib.linalg, name)(*a, **k)


def _vecdot_samples(d):
    for lay in ("contiguous", "permuted", "strided"):
        yield SampleInput((make((3, 4), d, layout=lay), make((4,), d)), {}, lay)
        yield SampleInput((make((3, 4), d, layout=lay), make((3, 4), d)), {"dim": 0}, f"{lay}0")


def _multi_dot_samples(d):
    yield SampleInput(([make((2, 3), d), make((3, 4), d, layout="permuted")],), {}, "2")
    yield SampleInput(([make((3,), d), make((3, 4), d), make((4, 2), d, layout="strided"),
                        make((2,), d)],), {}, "vector ends")
    yield SampleInput(([make((4,), d), make((4,), d)],), {}, "dot")


def _norm_samples(d):
    x = make((3, 4), d, layout="permuted")
    for args, kw in (((), {}), (("fro",), {}), (("nuc",), {}), ((float("inf"),), {}),
                     ((1,), {}), ((2, 1), {}), ((3.0, (0,)), {"keepdim": True}),
                     ((None, (0, 1)), {})):
        yield SampleInput((x, *args), kw, f"{args}{kw}")
    yield SampleInput((make((5,), d), 1.5), {}, "vector ord")
    yield SampleInput((make((2, 3, 4), d),), {}, "3d flatten")


def _vander_samples(d):
    for n in (None, 1, 3, 5):
        yield SampleInput((make((4,), d, low=-2, high=3),), {"N": n} if n else {}, f"N={n}")
    yield SampleInput((make((2, 3), d, layout="strided", low=-2, high=3),), {}, "batched")
    yield SampleInput((make((), d, low=-2, high=3),), {"N": 3}, "0-d")  # one point
    yield SampleInput((make((0,), d),), {"N": 2}, "empty")
    yield SampleInput((make((2, 0), d),), {"N": 3}, "empty-batched")


def _tensorinv_samples(d):
    a = make((6, 6), d) + ember.eye(6, dtype=getattr(ember, d)) * 4
    yield SampleInput((a.reshape(6, 2, 3), 1), {}, "ind1")
    yield SampleInput((a.reshape(2, 3, 6),), {"ind": 2}, "ind2")


def _tensorsolve_samples(d):
    a = make((6, 6), d) + ember.eye(6, dtype=getattr(ember, d)) * 4
    yield SampleInput((a.reshape(2, 3, 6), make((2, 3), d)), {}, "plain")
    yield SampleInput((a.reshape(6, 2, 3), make((6,), d)), {"dims": (0,)}, "dims")


def _cross_samples(d):
    yield SampleInput((make((4, 3), d), make((4, 3), d, layout="strided")), {}, "last")
    yield SampleInput((make((3, 5), d), make((3, 1), d)), {"dim": 0}, "dim0 broadcast")


OPS += [
    OpInfo("linalg.vecdot", _linalg("vecdot"), _vecdot_samples,
           dtypes=FLOATS + ("int64",) + COMPLEX,
           tol=LOOSE),
    OpInfo("linalg.multi_dot", _linalg("multi_dot"), _multi_dot_samples, dtypes=FLOATS[:2],
           tol=LOOSE),
    OpInfo("linalg.diagonal", _linalg("diagonal"),
           lambda d: [SampleInput((make((2, 3, 4), d, layout="permuted"),), kw)
                      for kw in ({}, {"offset": 1}, {"dim1": 0, "dim2": 2})],
           dtypes=ALL, is_view=True),
    OpInfo("linalg.cross", _linalg("cross"), _cross_samples,
           dtypes=FLOATS[:2] + ("int64",) + COMPLEX),
    OpInfo("linalg.norm", _linalg("norm"), _norm_samples, dtypes=FLOATS[:2],
           tol={"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}),
    OpInfo("linalg.vander", _linalg("vander"), _vander_samples, dtypes=FLOATS[:2] + ("int64",),
           tol=LOOSE),
    OpInfo("linalg.tensorinv", _linalg("tensorinv"), _tensorinv_samples, dtypes=FLOATS[:2],
           tol={"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}),
    OpInfo("linalg.tensorsolve", _linalg("tensorsolve"), _tensorsolve_samples,
           dtypes=FLOATS[:2], tol={"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}),
]


# -- older top-level linear algebra -------------------------------------------------------------
def _svd_fn(lib, x, *a):
    u, s, v = lib.svd(x, *a)
    if len(a) > 1 and not a[1]:  # compute_uv=False: zero-filled U and V
        return u, s, v
    return s, (u * s.unsqueeze(-2)) @ v.mT  # singular vectors are defined up to sign


def _qr_fn(lib, x, *a):
    q, r = x.qr(*a)
    return (q @ r), r.abs(), q.shape


def _matrices(d):
    for lay in ("contiguous", "permuted", "strided"):
        yield SampleInput((make((4, 3), d, layout=lay),), {}, f"tall-{lay}")
        yield SampleInput((make((2, 3, 5), d, layout=lay),), {}, f"batched-wide-{lay}")


def _svd_samples(d):
    for s in _matrices(d):
        yield s
        yield SampleInput(s.args + (False,), {}, s.name + "-full")
    yield SampleInput((make((4, 3), d), True, False), {}, "no-uv")


def _qr_samples(d):
    for s in _matrices(d):
        yield s
        yield SampleInput(s.args + (False,), {}, s.name + "-complete")


def _spd(d, batch=()):
    a = make((*batch, 4, 4), d)
    return a @ a.mT + ember.eye(4, dtype=getattr(ember, d)) * 4


def _chol_samples(d):
    yield SampleInput((_spd(d),), {}, "spd")
    yield SampleInput((_spd(d, (2,)), True), {}, "batched upper")


def _chol_factor_samples(d):
    for upper in (False, True):
        f = ember.linalg.cholesky(_spd(d), upper=upper)
        yield SampleInput((f, upper), {}, f"upper={upper}")
    for shape in ((0, 4), (3, 4), (0, 0), (2, 0, 0)):  # torch checks squareness first
        yield SampleInput((make(shape, d), False), {}, f"{list(shape)}")


def _chol_solve_samples(d):
    for upper in (False, True):
        f = ember.linalg.cholesky(_spd(d), upper=upper)
        yield SampleInput((make((4, 2), d), f, upper), {}, f"upper={upper}")


_LA_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-11)}
OPS += [
    OpInfo("svd", _svd_fn, _svd_samples, dtypes=FLOATS[:2], tol=_LA_TOL),
    OpInfo("qr", _qr_fn, _qr_samples, dtypes=FLOATS[:2], tol=_LA_TOL),
    OpInfo("cholesky", _fn("cholesky"), _chol_samples, dtypes=FLOATS[:2], tol=_LA_TOL),
    OpInfo("cholesky_inverse", _fn("cholesky_inverse"), _chol_factor_samples,
           dtypes=FLOATS[:2], tol=_LA_TOL),
    OpInfo("cholesky_solve", _fn("cholesky_solve"), _chol_solve_samples, dtypes=FLOATS[:2],
           tol=_LA_TOL),
    OpInfo("pinverse", _fn("pinverse"), _matrices, dtypes=FLOATS[:2], tol=_LA_TOL),
]
_BY_NAME = {info.name: info for info in OPS}
# torch's cholesky_inverse/solve differentiate through the factor as a triangle (they read
# one half); ember's composites differentiate L L^T, which gives the same values and a
# different gradient for the unread half: values only
_BY_NAME["cholesky_inverse"].grad = False
_BY_NAME["cholesky_solve"].grad = False
# finite differences of a non-symmetric perturbation are not what cholesky's (symmetrised)
# gradient gives; complete QR of a tall matrix has no gradient: compared with torch only
_BY_NAME["cholesky"].gradcheck = False
_BY_NAME["qr"].gradcheck = False


# -- deprecated norms, nonzero_static, empty_permuted -----------------------------------------
def _quiet(name):
    def fn(lib, *a, **k):
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return getattr(lib, name)(*a, **k)
    return fn


def _norm_except_samples(d):
    for lay in ("contiguous", "permuted", "strided"):
        for dim in (0, 1, 2, -1):
            yield SampleInput((make((3, 4, 5), d, layout=lay), 2, dim), {}, f"{lay}-{dim}")
    yield SampleInput((make((3, 4), d), 3, 1), {}, "pow3")


def _nonzero_static_samples(d):
    x = make((3, 4), d, low=-1, high=2)
    for size, fill in ((20, -1), (2, -1), (0, 7), (12, 5)):
        yield SampleInput((x,), {"size": size, "fill_value": fill}, f"{size}-{fill}")


def _empty_permuted_fn(lib, size, order, **kw):
    out = lib.empty_permuted(size, order, **kw)
    return tuple(out.shape), out.stride(), str(out.dtype).split(".")[-1]


OPS += [
    OpInfo("norm_except_dim", _fn("norm_except_dim"), _norm_except_samples, dtypes=FLOATS[:2],
           tol=LOOSE),
    OpInfo("frobenius_norm", _quiet("frobenius_norm"),
           lambda d: [SampleInput((make((3, 4, 5), d, layout="permuted"), dims, keep), {})
                      for dims in ((0, 1), (2,), (-1, 0)) for keep in (False, True)],
           dtypes=FLOATS[:2], tol=LOOSE),
    OpInfo("nuclear_norm", _quiet("nuclear_norm"),
           lambda d: [SampleInput((make((3, 4), d),), {}),
                      SampleInput((make((3, 4), d), True), {}),
                      SampleInput((make((3, 4, 5), d), (0, 2)), {})],
           dtypes=FLOATS[:2], tol={"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-11)}),
    OpInfo("nonzero_static", _fn("nonzero_static"), _nonzero_static_samples, dtypes=ALL,
           meta=False),
    OpInfo("empty_permuted", _empty_permuted_fn,
           lambda d: [SampleInput(((2, 3, 4), order), {"dtype": getattr(ember, d)})
                      for order in ((0, 1, 2), (0, 2, 1), (2, 0, 1))],
           dtypes=ALL, meta=False),
]
_BY_NAME = {info.name: info for info in OPS}
# nuclear norm: compared with torch's gradient; finite differences of a sum of singular values
# are not smooth enough near crossings for gradcheck
_BY_NAME["nuclear_norm"].gradcheck = False


def _gradient_samples(d):
    for lay in ("contiguous", "permuted", "strided"):
        x = make((4, 5), d, layout=lay)
        for kw in ({}, {"dim": 1}, {"spacing": 2.0}, {"spacing": [0.5, 3.0]},
                   {"edge_order": 2}, {"dim": (1, 0), "spacing": [2, 1], "edge_order": 2}):
            yield SampleInput((x,), kw, f"{lay}{kw}")
    coords = ember.tensor([0.0, 0.5, 1.75, 2.0, 4.0], dtype=getattr(ember, d)
                          if d in FLOATS else ember.float32)
    for order in (1, 2):
        yield SampleInput((make((3, 5), d),), {"spacing": (coords,), "dim": 1,
                                               "edge_order": order}, f"coords{order}")
    yield SampleInput((make((2,), d),), {"edge_order": 2}, "too short")
    yield SampleInput((make((3,), d),), {"edge_order": 3}, "bad order")


OPS.append(OpInfo("gradient", lambda lib, x, **k: lib.gradient(x, **k), _gradient_samples,
                  dtypes=FLOATS + ("int64",) + COMPLEX,
                  tol={"float32": (1e-5, 1e-5), "float16": (4e-3, 4e-3),
                       "bfloat16": (3e-2, 3e-2)}))


def _histogram_samples(d):
    for lay in ("contiguous", "permuted", "strided"):
        x = make((4, 6), d, layout=lay)
        for args, kw in (((), {}), ((7,), {}), ((5,), {"range": (-1.0, 2.0)}),
                         ((4,), {"density": True}), ((4,), {"weight": make((4, 6), d, low=0,
                                                                          high=2)}),
                         ((ember.tensor([-3.0, -1.0, 0.5, 3.0], dtype=getattr(ember, d)),),
                          {})):
            yield SampleInput((x, *args), kw, f"{lay}{args}{sorted(kw)}")
    yield SampleInput((ember.ones(3, dtype=getattr(ember, d)), 2), {}, "constant")
    empty = ember.zeros(0, dtype=getattr(ember, d))  # torch's edges then span [0, 1]
    yield SampleInput((empty, 5), {}, "empty")
    yield SampleInput((ember.zeros(2, 0, dtype=getattr(ember, d)), 3), {"range": (-1.0, 2.0)},
                      "empty-range")
    yield SampleInput((empty, ember.tensor([-1.0, 0.0, 2.5], dtype=getattr(ember, d))), {},
                      "empty-edges")


OPS.append(OpInfo("histogram", lambda lib, x, *a, **k: tuple(lib.histogram(x, *a, **k)),
                  _histogram_samples, dtypes=FLOATS + ("int64",), meta=False, tol=LOOSE))
OPS.append(OpInfo("histogram_method", lambda lib, x, *a, **k: tuple(x.histogram(*a, **k)),
                  _histogram_samples, dtypes=("float32",), meta=False, tol=LOOSE))
_BY_NAME = {info.name: info for info in OPS}
# torch marks histogram's outputs as requiring grad but has no formula; ember's are constants
_BY_NAME["histogram"].grad = False


# -- linalg: *_ex, solve_triangular, matrix_exp -------------------------------------------------
def _well_conditioned(d, batch=()):
    return make((*batch, 4, 4), d) + ember.eye(4, dtype=getattr(ember, d)) * 5


def _ex_samples(kind):
    def gen(d):
        if kind == "cholesky":
            yield SampleInput((_spd(d),), {}, "spd")
            yield SampleInput((_spd(d, (2,)),), {"upper": True}, "batched upper")
        elif kind == "inv":
            yield SampleInput((_well_conditioned(d),), {}, "plain")
            yield SampleInput((_well_conditioned(d, (3,)),), {}, "batched")
        else:
            yield SampleInput((_well_conditioned(d), make((4, 2), d)), {}, "matrix rhs")
            yield SampleInput((_well_conditioned(d, (2,)), make((2, 4), d)), {}, "vector rhs")
            yield SampleInput((_well_conditioned(d), make((3, 4), d)), {"left": False}, "right")
    return gen


def _singular_ex(lib, name, *args):
    out, info = getattr(lib.linalg, name)(*args)
    return bool(info.reshape(-1)[0] > 0), info.dtype == lib.int32


def _singular_samples(d):
    z = ember.zeros(3, 3, dtype=getattr(ember, d))
    yield SampleInput(("inv_ex", z), {}, "inv")
    yield SampleInput(("cholesky_ex", -ember.eye(3, dtype=getattr(ember, d))), {}, "chol")
    yield SampleInput(("solve_ex", z, ember.ones(3, 1, dtype=getattr(ember, d))), {}, "solve")


def _triangular_samples(d):
    a = _well_conditioned(d)
    for upper in (False, True):
        for left in (True, False):
            for unit in (False, True):
                b = make((4, 3), d) if left else make((3, 4), d)
                yield SampleInput((a, b), {"upper": upper, "left": left, "unitriangular": unit},
                                  f"u{upper}-l{left}-unit{unit}")
    yield SampleInput((_well_conditioned(d, (2,)), make((2, 4, 2), d, layout="strided")),
                      {"upper": True}, "batched")
    # broadcast batches, empty shapes, and a zero on the diagonal (inf/nan, no error)
    a = _well_conditioned(d)
    yield SampleInput((a.mT, make((3, 4, 2), d)), {"upper": True}, "broadcast-A")
    yield SampleInput((_well_conditioned(d, (2,)), make((4, 1), d)), {"upper": False},
                      "broadcast-B")
    yield SampleInput((make((0, 0), d), make((0, 3), d)), {"upper": False}, "empty")
    yield SampleInput((a, make((4, 0), d)), {"upper": True}, "no-columns")
    yield SampleInput((make((0, 4, 4), d), make((4, 2), d)), {"upper": True}, "empty-batch")
    yield SampleInput((make((3, 3), d) * ember.tensor([1.0, 0.0, 1.0], dtype=a.dtype),
                       make((3, 2), d)), {"upper": True}, "zero-pivot")


def _matrix_exp_samples(d):
    for scale in (0.1, 1.0, 4.0):
        yield SampleInput((make((3, 3), d) * scale,), {}, f"scale{scale}")
    yield SampleInput((make((2, 4, 4), d, layout="permuted"),), {}, "batched")
    yield SampleInput((make((1, 1), d),), {}, "1x1")


_EX_TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-11), "complex64": (1e-4, 1e-5),
           "complex128": (1e-9, 1e-11)}
OPS += [
    OpInfo("linalg.inv_ex", _linalg("inv_ex"), _ex_samples("inv"), dtypes=FLOATS[:2],
           tol=_EX_TOL),
    OpInfo("linalg.cholesky_ex", _linalg("cholesky_ex"), _ex_samples("cholesky"),
           dtypes=FLOATS[:2], tol=_EX_TOL),
    OpInfo("linalg.solve_ex", _linalg("solve_ex"), _ex_samples("solve"), dtypes=FLOATS[:2],
           tol=_EX_TOL),
    OpInfo("linalg_ex_failures", _singular_ex, _singular_samples, dtypes=FLOATS[:2],
           meta=False),
    OpInfo("linalg.solve_triangular", _linalg("solve_triangular"), _triangular_samples,
           dtypes=FLOATS[:2] + COMPLEX, tol=_EX_TOL),
    # meta=False: the number of squarings depends on the matrix's norm (data)
    OpInfo("linalg.matrix_exp", _linalg("matrix_exp"), _matrix_exp_samples, dtypes=FLOATS[:2],
           tol={"float32": (2e-5, 1e-5), "float64": (1e-10, 1e-12)}, meta=False),
]
_BY_NAME = {info.name: info for info in OPS}
_BY_NAME["histogram"].grad = False
_BY_NAME["nuclear_norm"].gradcheck = False
# cholesky_ex: as cholesky, finite differences of a non-symmetric perturbation differ from the
# symmetrised gradient
_BY_NAME["linalg.cholesky_ex"].gradcheck = False


def _triangular_solve_samples(d):
    a = _well_conditioned(d)
    for upper in (True, False):
        for transpose in (False, True):
            for unit in (False, True):
                yield SampleInput((make((4, 2), d), a, upper, transpose, unit), {},
                                  f"u{upper}-t{transpose}-unit{unit}")


OPS.append(OpInfo("triangular_solve", lambda lib, *a: tuple(_quiet("triangular_solve")(lib, *a)),
                  _triangular_solve_samples, dtypes=FLOATS[:2] + COMPLEX, tol=_EX_TOL))


def _cond_samples(d):
    a = _well_conditioned(d, (2,))
    # float64 runs the gradient comparison: torch 2.13's backward of cond through inv fails
    # ("modified by an inplace operation") for fro/inf/1 norms, so those are float32 only
    through_inv = ("fro", float("inf"), float("-inf"), 1, -1) if d != "float64" else ()
    for p in (None, 2, -2, "nuc", *through_inv):
        yield SampleInput((a, p), {}, f"p={p}")
    # empty matrices: zeros of the batch shape; non-square ones only for the 2-norms
    for shape in ((0, 0), (3, 0, 0), (4, 0), (2, 0, 4)):
        for p in (None, -2, "fro"):
            yield SampleInput((make(shape, d), p), {}, f"empty{list(shape)}-p={p}")


# complex64 only: torch's complex128 gradient of the non-2 norms fails (an in-place write to a
# saved inverse), where ember differentiates them
OPS.append(OpInfo("linalg.cond", _linalg("cond"), _cond_samples, dtypes=FLOATS[:2] + ("complex64",),
                  tol=_EX_TOL))


def _index_reduce_samples(d):
    for reduce in _INDEX_REDUCE_MODES:
        for include in (True, False):
            x = make((4, 3), d, layout="strided", low=-2, high=3)
            yield SampleInput((x, 0, ember.tensor([0, 2, 0]), make((3, 3), d, low=-2, high=3),
                               reduce), {"include_self": include}, f"{reduce}-{include}-dim0")
            yield SampleInput((x, 1, ember.tensor([2, 2]), make((4, 2), d, layout="permuted",
                                                               low=-2, high=3), reduce),
                              {"include_self": include}, f"{reduce}-{include}-dim1")


_INDEX_REDUCE_MODES = ("prod", "mean", "amax", "amin")


def _index_reduce_errors():
    yield ErrorInput(SampleInput((make((3,)), 0, ember.tensor([0]), make((1,)), "sum")),
                     RuntimeError, "Expected reduce to be one of")


def _index_reduce_fn(lib, x, *a, **k):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch: "index_reduce() is in beta"
        return lib.index_reduce(x, *a, **k)


def _index_reduce__fn(lib, x, *a, **k):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return x.clone().index_reduce_(*a, **k)


OPS += [
    OpInfo("index_reduce", _index_reduce_fn, _index_reduce_samples,
           dtypes=FLOATS + ("int64", "int32") + COMPLEX, tol=LOOSE, errors=_index_reduce_errors),
    # complex64 only: torch's in-place complex prod gradient is not conjugated (ember's is)
    OpInfo("index_reduce_", _index_reduce__fn, _index_reduce_samples,
           dtypes=("float32", "float64", "int64", "complex64"), tol=LOOSE),
]
