"""Op-table entries: linalg.eig and linalg.eigvals (complex results for real and complex input),
and the complex forms of linalg.qr, svd, svdvals, pinv and matrix_exp.

LAPACK builds may order the eigenvalues differently and each eigenvector is defined up to a
phase, so entries compare quantities free of both: the reconstruction ``V diag(L) V^{-1}``,
per-row sums weighted by ``|V|^2`` and symmetric functions of the eigenvalues. Their gradients
pass through both outputs and are compared with torch's and by gradcheck.
"""

from __future__ import annotations

import numpy as np

import ember
from tests.opinfo import ALL, COMPLEX, ErrorInput, OpInfo, SampleInput
from tests.ops.opdb.linalg import (
    DECOMP_TOL,
    RECT_SHAPES,
    SMALL_RECT,
    SQUARE_SHAPES,
    _chain,
    from_np,
    matrix_samples,
)

_RNG = np.random.default_rng(2468)
SMALL = [(2, 2), (3, 3), (2, 3, 3)]


def _general(shape) -> np.ndarray:
    return _RNG.uniform(-3, 3, shape)


def _eig_fn(lib, a):
    L, V = lib.linalg.eig(a)
    rebuilt = (V * L.unsqueeze(-2)) @ lib.linalg.inv(V)
    weighted = ((V.abs() ** 2) * (L.real + L.abs()).unsqueeze(-2)).sum(-1)
    return rebuilt, weighted


def _eigvals_fn(lib, a):
    L = lib.linalg.eigvals(a)
    return L.sum(-1), (L * L).sum(-1), L.abs().sum(-1)


def _svd_fn(lib, a, *args):
    # complex singular vectors carry a phase each: compare phase-free quantities only
    u, s, vh = lib.linalg.svd(a, *args)
    k = s.shape[-1]
    uk, vk = u[..., :k], vh[..., :k, :]
    rebuilt = (uk * s.unsqueeze(-2)) @ vk
    ortho = (u.detach().mH @ u.detach(), vh.detach() @ vh.detach().mH)
    return rebuilt, s, *ortho, uk.abs(), vk.abs(), (uk * s.unsqueeze(-2)) @ uk.mH


def _pinv_samples(dtype):
    yield from _chain(matrix_samples(_general, RECT_SHAPES),
                      matrix_samples(_general, SMALL_RECT))(dtype)
    for shape in ((3, 3), (2, 4, 4)):  # Hermitian: phases turn only the strict upper triangle
        x = _general(shape) + 1j * _general(shape)
        h = np.triu(x, 1) + np.swapaxes(np.triu(x, 1), -1, -2).conj()
        h = h + np.diag(_general(shape[-1:]))
        yield SampleInput((ember.tensor(h, dtype=getattr(ember, dtype)),), {"hermitian": True},
                          f"hermitian{shape}")


def _qr_fn(lib, a, mode="reduced"):
    q, r = lib.linalg.qr(a, mode=mode)
    if mode == "r":
        return q, r.abs()
    return q @ r, q.detach().mH @ q.detach(), r, q


def _errors():
    yield ErrorInput(SampleInput((from_np(np.ones((2, 3)), "float64"),)), RuntimeError,
                     "must be batches of square matrices, but they are 2 by 3 matrices")
    yield ErrorInput(SampleInput((from_np(np.ones(3), "float64"),)), RuntimeError,
                     "must have at least 2 dimensions")
    yield ErrorInput(SampleInput((from_np(np.ones((3, 3)), "int64"),)), RuntimeError,
                     "Unknown Complex ScalarType for Long")


OPS = [
    # meta=False: the number of squarings depends on the matrix's norm (data)
    OpInfo("linalg.matrix_exp_complex", lambda lib, a: lib.linalg.matrix_exp(a),
           _chain(matrix_samples(lambda s: _RNG.uniform(-1, 1, s), SQUARE_SHAPES),
                  matrix_samples(_general, [(3, 3), (2, 2, 2)])),
           dtypes=COMPLEX, tol=DECOMP_TOL, meta=False),
    # LAPACK's complex QR is unique (real diagonal of R), so Q and R are compared as they are
    OpInfo("linalg.qr_complex", _qr_fn,
           _chain(matrix_samples(_general, RECT_SHAPES), matrix_samples(_general, SMALL_RECT),
                  matrix_samples(_general, RECT_SHAPES[:4], args=("r",))),
           dtypes=COMPLEX, tol=DECOMP_TOL),
    OpInfo("linalg.pinv_complex", lambda lib, a, **kw: lib.linalg.pinv(a, **kw), _pinv_samples,
           dtypes=COMPLEX, tol=DECOMP_TOL),
    OpInfo("linalg.svd_complex", _svd_fn,
           _chain(matrix_samples(_general, RECT_SHAPES), matrix_samples(_general, SMALL_RECT),
                  matrix_samples(_general, RECT_SHAPES, args=(False,))),
           dtypes=COMPLEX, tol=DECOMP_TOL),
    OpInfo("linalg.svdvals_complex", lambda lib, a: lib.linalg.svdvals(a),
           _chain(matrix_samples(_general, RECT_SHAPES), matrix_samples(_general, SMALL_RECT)),
           dtypes=COMPLEX, tol=DECOMP_TOL),
    OpInfo("linalg.eig", _eig_fn,
           _chain(matrix_samples(_general, SQUARE_SHAPES), matrix_samples(_general, SMALL)),
           dtypes=ALL + COMPLEX, errors=_errors, tol=DECOMP_TOL),
    OpInfo("linalg.eigvals", _eigvals_fn,
           _chain(matrix_samples(_general, SQUARE_SHAPES), matrix_samples(_general, SMALL)),
           dtypes=ALL + COMPLEX, errors=_errors, tol=DECOMP_TOL),
]
