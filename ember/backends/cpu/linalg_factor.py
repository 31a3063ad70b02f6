"""CPU kernels of the linalg_factor family: LU with partial pivoting (NumPy has no ``getrf``).

The factorisation is LAPACK's unblocked right-looking ``getf2``, vectorised over the batch:
one Python step per column (the pivot is the first entry of largest magnitude, as ``idamax``),
so pivots and ``info`` follow LAPACK's rules. Arrays come from the tensors' array module
(``array_module``); outputs from ``new_output``.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, array_module, new_output
from ember.ops import linalg_factor as lf


def _getf2(a: np.ndarray, xp) -> tuple[np.ndarray, np.ndarray]:
    """Factor the (B, m, n) float array ``a`` in place; ``(pivots (B, k) 1-based, info (B,))``."""
    nb, m, n = a.shape
    k = min(m, n)
    pivots = xp.zeros((nb, k), dtype=np.int32)
    info = xp.zeros((nb,), dtype=np.int32)
    batch = xp.arange(nb)
    for j in range(k):
        p = j + xp.argmax(xp.abs(a[:, j:, j]), axis=1)  # (B,) first largest, like idamax
        pivots[:, j] = p + 1
        pivot_val = a[batch, p, j]
        nonzero = pivot_val != 0
        info[(info == 0) & ~nonzero] = j + 1
        swap = nonzero & (p != j)
        if swap.any():
            rows_j, rows_p = a[swap, j, :].copy(), a[batch[swap], p[swap], :].copy()
            a[swap, j, :] = rows_p
            a[batch[swap], p[swap], :] = rows_j
        if j + 1 < m:
            scale = xp.where(nonzero, a[:, j, j], 1.0)  # a zero pivot's column is all zeros
            a[:, j + 1:, j] /= scale[:, None]
            if j + 1 < n:
                a[:, j + 1:, j + 1:] -= a[:, j + 1:, j:j + 1] * a[:, j:j + 1, j + 1:]
    return pivots, info


@lf.linalg_lu_factor_ex.impl("CPU")
def _linalg_lu_factor_ex(A, *, pivot=True, check_errors=False):
    specs = lf.linalg_lu_factor_ex.meta_rule(A, pivot=pivot, check_errors=check_errors)
    LU, pivots, info = (new_output(s.shape, s.dtype) for s in specs)
    m, n = A.shape[-2:]
    if LU.numel() == 0:
        if pivots.numel():  # (*, 0, n) or (*, m, 0) leave nothing to pivot: k == 0
            arr(pivots)[...] = 1
        arr(info)[...] = 0
        return lf.LUFactorExResult(LU, pivots, info)
    xp = array_module(A)
    work = xp.array(arr(A), copy=True).reshape(int(np.prod(A.shape[:-2])), m, n)  # (B, m, n)
    piv, inf = _getf2(work, xp)
    arr(LU)[...] = work.reshape(A.shape)
    arr(pivots)[...] = piv.reshape(pivots.shape)
    arr(info)[...] = inf.reshape(info.shape)
    if check_errors:
        lf._first_zero_pivot("torch.linalg.lu_factor_ex", info)
    return lf.LUFactorExResult(LU, pivots, info)


@lf._lu_pivots_to_permutation.impl("CPU")
def _lu_pivots_to_permutation(pivots, m):
    spec = lf._lu_pivots_to_permutation.meta_rule(pivots, m)
    out = new_output(spec.shape, spec.dtype)
    xp = array_module(pivots)
    nb = int(np.prod(pivots.shape[:-1]))
    piv = arr(pivots).reshape(nb, pivots.shape[-1]).astype(np.int64) - 1  # (B, k)
    perm = xp.broadcast_to(xp.arange(m), (piv.shape[0], m)).copy()
    batch = xp.arange(piv.shape[0])
    for i in range(piv.shape[1]):  # apply the interchanges in order
        target = piv[:, i]
        at_i, at_t = perm[:, i].copy(), perm[batch, target].copy()
        perm[:, i], perm[batch, target] = at_t, at_i
    arr(out)[...] = perm.reshape(spec.shape)
    return out


def _substitute(a: np.ndarray, b: np.ndarray, upper: bool, unit: bool, xp) -> np.ndarray:
    """``a^{-1} b`` for triangular ``a (*, n, n)``, ``b (*, n, k)`` (batches broadcast), row by
    row; zero pivots give inf/nan."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    n = a.shape[-1]
    x = xp.array(xp.broadcast_to(b, batch + b.shape[-2:]), copy=True)
    order = range(n - 1, -1, -1) if upper else range(n)
    with np.errstate(all="ignore"):
        for i in order:
            done = slice(i + 1, n) if upper else slice(0, i)
            row = a[..., i:i + 1, done]  # (*, 1, j)
            if row.shape[-1]:
                x[..., i:i + 1, :] -= xp.matmul(row, x[..., done, :])
            if not unit:
                x[..., i:i + 1, :] /= a[..., i:i + 1, i:i + 1]
    return x


@lf._linalg_triangular_solve.impl("CPU")
def _linalg_triangular_solve(A, B, upper, left, unitriangular):
    spec = lf._linalg_triangular_solve.meta_rule(A, B, upper, left, unitriangular)
    out = new_output(spec.shape, spec.dtype)
    if out.numel() == 0:
        return out
    xp = array_module(A)
    a, b = arr(A), arr(B)
    if left:
        x = _substitute(a, b, upper, unitriangular, xp)
    else:  # X A = B  <=>  A^T X^T = B^T
        x = xp.swapaxes(_substitute(xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2), not upper,
                                    unitriangular, xp), -1, -2)
    arr(out)[...] = x
    return out
