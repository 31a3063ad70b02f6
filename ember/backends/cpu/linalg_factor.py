"""CPU kernels of the linalg_factor family: LU with partial pivoting (NumPy has no ``getrf``),
real and complex.

The factorisation is LAPACK's unblocked right-looking ``getf2``, vectorised over the batch:
one Python step per column (the pivot is the first entry of largest magnitude, as ``idamax``),
so pivots and ``info`` follow LAPACK's rules. LU and the triangular solves take their array
module from the tensors (``array_module``); the LDL factorisation's pivot search is scalar
code on host NumPy arrays (it cannot run on another array module as it is). Outputs come from
``new_output``.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu._util import arr, new_output
from ember.backends.cpu._xp import array_module
from ember.ops import linalg_factor as lf


def _getf2(a: np.ndarray, xp) -> tuple[np.ndarray, np.ndarray]:
    """Factor the (B, m, n) float array ``a`` in place; ``(pivots (B, k) 1-based, info (B,))``."""
    nb, m, n = a.shape
    k = min(m, n)
    pivots = xp.zeros((nb, k), dtype=np.int32)
    info = xp.zeros((nb,), dtype=np.int32)
    batch = xp.arange(nb)
    for j in range(k):
        col = a[:, j:, j]  # complex: |re| + |im|, as izamax
        mag = xp.abs(col.real) + xp.abs(col.imag) if col.dtype.kind == "c" else xp.abs(col)
        p = j + xp.argmax(mag, axis=1)  # (B,) first largest, like idamax
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
                pivot = a[..., i:i + 1, i:i + 1]
                x[..., i:i + 1, :] /= pivot
                if x.dtype.kind == "c":  # a complex division by zero is NaN+NaNj, as ztrsm's
                    x[..., i:i + 1, :] = xp.where(pivot == 0, complex(np.nan, np.nan),
                                                  x[..., i:i + 1, :])
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


# -- LDL: LAPACK's sytf2 / sytrs with the lower triangle, one matrix at a time -----------------
_BK_ALPHA = (1.0 + 17.0 ** 0.5) / 8.0  # Bunch-Kaufman's growth bound


def _bk_pivot(a: np.ndarray, k: int) -> tuple[int, int]:
    """``(kp, kstep)``: the row to swap into place and the block size at column ``k``."""
    n = a.shape[0]
    absakk = abs(a[k, k])
    imax = k + 1 + int(np.argmax(np.abs(a[k + 1:, k]))) if k + 1 < n else k
    colmax = abs(a[imax, k]) if k + 1 < n else 0.0
    if max(absakk, colmax) == 0 or absakk >= _BK_ALPHA * colmax:
        return k, 1
    rowmax = np.max(np.abs(a[imax, k:imax]))
    if imax + 1 < n:
        rowmax = max(rowmax, np.max(np.abs(a[imax + 1:, imax])))
    if absakk >= _BK_ALPHA * colmax * (colmax / rowmax):
        return k, 1
    if abs(a[imax, imax]) >= _BK_ALPHA * rowmax:
        return imax, 1
    return imax, 2


def _swap_sym(a: np.ndarray, k: int, kk: int, kp: int, kstep: int) -> None:
    """Interchange rows and columns ``kk`` and ``kp`` of the lower trailing matrix."""
    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    mid = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = mid
    a[kk, kk], a[kp, kp] = a[kp, kp], a[kk, kk]
    if kstep == 2:
        a[k + 1, k], a[kp, k] = a[kp, k], a[k + 1, k]


def _sytf2(a: np.ndarray) -> tuple[np.ndarray, int]:
    n = a.shape[0]
    piv = np.zeros(n, dtype=np.int32)
    info, k = 0, 0
    while k < n:
        kp, kstep = _bk_pivot(a, k)
        if max(abs(a[k, k]), np.max(np.abs(a[k + 1:, k]), initial=0.0)) == 0 and info == 0:
            info = k + 1
        kk = k + kstep - 1
        if kp != kk:
            _swap_sym(a, k, kk, kp, kstep)
        if kstep == 1:
            if k + 1 < n and a[k, k] != 0:
                x = a[k + 1:, k].copy()
                a[k + 1:, k + 1:] -= np.tril(np.outer(x, x) / a[k, k])
                a[k + 1:, k] = x / a[k, k]
            piv[k] = kp + 1
        else:
            if k + 2 < n:
                d21 = a[k + 1, k]
                d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
                t = (1.0 / (d11 * d22 - 1.0)) / d21
                wk = t * (d11 * a[k + 2:, k] - a[k + 2:, k + 1])
                wkp1 = t * (d22 * a[k + 2:, k + 1] - a[k + 2:, k])
                upd = np.outer(a[k + 2:, k], wk) + np.outer(a[k + 2:, k + 1], wkp1)
                a[k + 2:, k + 2:] -= np.tril(upd)
                a[k + 2:, k], a[k + 2:, k + 1] = wk, wkp1
            piv[k] = piv[k + 1] = -(kp + 1)
        k += kstep
    return piv, info


@lf.linalg_ldl_factor_ex.impl("CPU")
def _linalg_ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    specs = lf.linalg_ldl_factor_ex.meta_rule(A, hermitian=hermitian, check_errors=check_errors)
    LD, pivots, info = (new_output(s.shape, s.dtype) for s in specs)
    n = A.shape[-1]
    nb = int(np.prod(A.shape[:-2]))
    src = np.tril(arr(A)).reshape(nb, n, n).astype(arr(A).dtype)
    ld, pv, inf = arr(LD).reshape(nb, n, n), arr(pivots).reshape(nb, n), arr(info).reshape(nb)
    with np.errstate(all="ignore"):
        for b in range(nb):
            work = src[b].copy()
            pv[b], inf[b] = _sytf2(work)
            ld[b] = np.tril(work)
    if check_errors and nb and inf.max() > 0:
        raise RuntimeError("torch.linalg.ldl_factor_ex: The factorization could not be "
                           "completed because the input is not invertible.")
    return lf.LDLFactorExResult(LD, pivots, info)


def _sytrs(a: np.ndarray, piv: np.ndarray, b: np.ndarray) -> None:
    """Solve in place ``A X = b`` from ``sytf2``'s lower factorisation."""
    n, k = a.shape[0], 0
    while k < n:  # L D y = b
        if piv[k] > 0:
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            b[k + 1:] -= np.outer(a[k + 1:, k], b[k])
            b[k] /= a[k, k]
            k += 1
        else:
            kp = -piv[k] - 1
            b[[k + 1, kp]] = b[[kp, k + 1]]
            b[k + 2:] -= np.outer(a[k + 2:, k], b[k]) + np.outer(a[k + 2:, k + 1], b[k + 1])
            akm1k = a[k + 1, k]
            akm1, ak = a[k, k] / akm1k, a[k + 1, k + 1] / akm1k
            denom = akm1 * ak - 1.0
            bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
            b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
            k += 2
    k = n - 1
    while k >= 0:  # L^T P^T x = y
        if piv[k] > 0:
            b[k] -= a[k + 1:, k] @ b[k + 1:]
            kp = piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 1
        else:
            b[k] -= a[k + 1:, k] @ b[k + 1:]
            b[k - 1] -= a[k + 1:, k - 1] @ b[k + 1:]
            kp = -piv[k] - 1
            b[[k, kp]] = b[[kp, k]]
            k -= 2


@lf.linalg_ldl_solve.impl("CPU")
def _linalg_ldl_solve(LD, pivots, B, *, hermitian=False):
    spec = lf.linalg_ldl_solve.meta_rule(LD, pivots, B, hermitian=hermitian)
    out = new_output(spec.shape, spec.dtype)
    if out.numel() == 0:
        return out
    batch, n = spec.shape[:-2], LD.shape[-1]
    ld = np.broadcast_to(arr(LD), batch + (n, n)).reshape(-1, n, n)
    pv = np.broadcast_to(arr(pivots), batch + (n,)).reshape(-1, n)
    x = np.array(np.broadcast_to(arr(B), spec.shape), copy=True).reshape(-1, *spec.shape[-2:])
    with np.errstate(all="ignore"):
        for b in range(x.shape[0]):
            _sytrs(ld[b], pv[b], x[b])
    arr(out)[...] = x.reshape(spec.shape)
    return out
