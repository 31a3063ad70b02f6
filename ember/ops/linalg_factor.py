"""LU factorisation and what is built on it: ``linalg.lu_factor(_ex)``, ``linalg.lu``,
``lu_unpack``, ``linalg.lu_solve`` and the legacy ``torch.lu``/``torch.lu_solve``; Householder
products applied to a matrix (``ormqr``); least squares (``linalg.lstsq``).

One primitive carries the data: ``linalg_lu_factor_ex`` (LAPACK's ``getrf`` layout: ``L``
below the diagonal with an implicit unit diagonal, ``U`` on and above it, 1-based int32 row
interchanges). Everything else is composed of differentiable ember operators, so gradients
through ``lu_unpack``, ``lu_solve`` and ``lstsq`` are the derivatives of the same functions
torch differentiates. CPU kernels: ember/backends/cpu/linalg_factor.py.
"""

from __future__ import annotations

from collections import namedtuple

from ember.core import dtype as dt
from ember.ops._define import Spec, composite, derivative, operator
from ember.ops.linalg import _not_implemented, _tn, matmul
from ember.tensor import Tensor

__all__ = ["lu", "lu_solve", "lu_unpack", "ormqr"]

LUFactorExResult = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUFactorResult = namedtuple("linalg_lu_factor", ["LU", "pivots"])
LUResult = namedtuple("linalg_lu", ["P", "L", "U"])
LUUnpackResult = namedtuple("lu_unpack", ["P", "L", "U"])
LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def _lib():
    from ember.ops import creation, linalg, linalg_composites, pointwise, shape

    class _Families:
        def __getattr__(self, name):
            for m in (creation, pointwise, shape, linalg, linalg_composites):
                if hasattr(m, name):
                    return getattr(m, name)
            raise AttributeError(name)

    return _Families()


# -- triangular solves ----------------------------------------------------------------------
@operator("_linalg_triangular_solve(Tensor A, Tensor B, bool upper, bool left, "
          "bool unitriangular) -> Tensor", method=False)
def _linalg_triangular_solve(A, B, upper, left, unitriangular):
    """``X`` with ``A X = B`` (``X A = B`` when not ``left``) by substitution, reading one
    triangle of ``A`` (unit diagonal when ``unitriangular``). A zero on the diagonal gives
    inf/nan, as LAPACK's ``trsm`` (and torch): no error.

    Shape: ``A (*, n, n)``, ``B (*, n, k)`` (``(*, k, n)`` when not ``left``); batch dims
    broadcast.

    Example:
        >>> from ember.ops.linalg_factor import _linalg_triangular_solve
        >>> A = ember.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> _linalg_triangular_solve(A, ember.tensor([[2.0], [3.0]]), False, True, False)
        tensor([[1.],
                [2.]])
    """
    from ember.core.layout import broadcast_shapes
    n = A._shape[-1]
    if A.ndim < 2 or A._shape[-2] != n:
        raise RuntimeError(f"linalg.solve_triangular: A must be batches of square matrices, "
                           f"but they are {A._shape[-2] if A.ndim > 1 else 1} by {n} matrices")
    if (B._shape[-2] if left else B._shape[-1]) != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]})")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, "
                           f"but found A of type {_tn(A)} and B of type {_tn(B)} instead")
    if A._dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise _not_implemented("triangular_solve_cpu", A)
    batch = broadcast_shapes(A._shape[:-2], B._shape[:-2])
    return Spec(tuple(batch) + B._shape[-2:], B._dtype)


def _triangle(G: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    off = 1 if unitriangular else 0
    return G.triu(off) if upper else G.tril(-off)


@derivative(_linalg_triangular_solve, save=("A", "result"))
def _linalg_triangular_solve_backward(ctx, grad):
    # X = A^{-1} B: gB = A^{-H} g; gA = -gB X^H on A's triangle (X A = B: gA = -X^H gB);
    # ^H is ^T for real tensors (complex gradients by torch's conjugate convention)
    A, X = ctx.A, ctx.result
    upper, left, unit = ctx.upper, ctx.left, ctx.unitriangular
    gB = _linalg_triangular_solve(A.mH, grad, not upper, left, unit)
    gA = None
    if ctx.needs_input_grad[0]:
        gA = _triangle(-(matmul(gB, X.mH) if left else matmul(X.mH, gB)), upper, unit)
    return gA, gB


# -- the primitive --------------------------------------------------------------------------
def _lu_checks(name: str, A, pivot: bool) -> None:
    if not isinstance(A, Tensor):
        raise TypeError(f"{name}(): argument 'A' (position 1) must be Tensor, not "
                        f"{type(A).__name__}")
    if A.ndim < 2:
        raise RuntimeError(f"torch.lu_factor: Expected tensor with 2 or more dimensions. Got "
                           f"size: {list(A._shape)} instead")
    if A._dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise _not_implemented("lu_cpu", A)
    if not pivot:
        raise RuntimeError("linalg.lu_factor: LU without pivoting is not implemented on the CPU")


@operator("linalg_lu_factor_ex(Tensor A, *, bool pivot=True, bool check_errors=False) -> "
          "(Tensor LU, Tensor pivots, Tensor info)", method=False)
def linalg_lu_factor_ex(A, *, pivot=True, check_errors=False):
    """LU factorisation with partial pivoting in LAPACK's compact form
    (``torch.linalg.lu_factor_ex``): ``A = P L U``.

    ``LU`` holds ``L`` below the diagonal (unit diagonal implied) and ``U`` on and above it;
    ``pivots[i]`` (1-based, int32) is the row swapped with row ``i``; ``info`` is 0, or the
    1-based index of the first zero pivot of ``U`` (``check_errors`` raises then).

    Shape: ``(*, m, n)`` -> ``LU (*, m, n)``, ``pivots (*, min(m, n))``, ``info (*)``.

    Raises:
        RuntimeError: fewer than 2 dims, ``pivot=False`` (not on the CPU, as torch), a zero
            pivot with ``check_errors``.
        NotImplementedError: dtypes other than float32/float64/complex64/complex128 (complex
            pivots by LAPACK's |re| + |im| rule).

    Example:
        >>> LU, pivots, info = ember.linalg.lu_factor_ex(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots.tolist(), info.item()
        ([2, 2], 0)
    """
    _lu_checks("linalg_lu_factor_ex", A, pivot)
    m, n = A._shape[-2:]
    batch = A._shape[:-2]
    return (Spec(A._shape, A._dtype), Spec(batch + (min(m, n),), dt.int32),
            Spec(batch, dt.int32))


linalg_lu_factor_ex.result_tuple = LUFactorExResult


def _lu_factors(LU: Tensor, k: int):
    """``(L, U)`` of a compact LU: ``L (*, m, k)`` unit lower, ``U (*, k, n)`` upper."""
    lib = _lib()
    m = LU.shape[-2]
    L = LU[..., :, :k].tril(-1) + lib.eye(m, k, dtype=LU.dtype, device=LU.device)
    return L, LU[..., :k, :].triu()


# NOTE [LU derivative]
# With A = P L U, dA = P (dL U + L dU), so P^T dA = dL U + L dU; L^{-1} P^T dA U^{-1} splits
# into a strictly lower part (L^{-1} dL) and an upper part (dU U^{-1}). Pulling a cotangent
# (gL, gU) back gives, for square A, gA = P L^{-H} (tril_{-1}(L^H gL) + triu(gU U^H)) U^{-H}
# (^H is ^T for real A; complex gradients by torch's conjugate convention).
# Wide A (m < n, U = [U1 U2]): U2's gradient passes straight through L^{-T}; the first block
# solves against U1. Tall A (m > n, L = [L1; L2]) is the transpose of the wide case.
def _lu_backward(P, L, U, gL, gU):
    lib = _lib()
    solve = lib.linalg_solve_triangular
    m, n = L.shape[-2], U.shape[-1]
    k = min(m, n)
    if m <= n:
        phi = matmul(L.mH, gL) - (matmul(gU.triu(), U.mH) if m < n else 0)
        if m == n:
            phi = phi.tril(-1) + matmul(gU, U.mH).triu()
            gA = solve(U.mH, phi, upper=False, left=False)
        else:
            U1, gU1 = U[..., :, :k], gU[..., :, :k]
            gA = solve(U1.mH, phi.tril(-1), upper=False, left=False)
            gA = lib.cat([gA + gU1.triu(), gU[..., :, k:]], -1)
        gA = solve(L.mH, gA, upper=True, unitriangular=True)
    else:
        L1, gL1 = L[..., :k, :], gL[..., :k, :]
        phi = (matmul(gU, U.mH) - matmul(L.mH, gL.tril(-1))).triu()
        gA = solve(L1.mH, phi, upper=True, unitriangular=True)
        gA = lib.cat([gA + gL1.tril(-1), gL[..., k:, :]], -2)
        gA = solve(U.mH, gA, upper=False, left=False)
    return matmul(P, gA)


@derivative(linalg_lu_factor_ex, save=("result",), nondifferentiable_outputs=(1, 2))
def _linalg_lu_factor_ex_backward(ctx, gLU, g_pivots, g_info):
    LU, pivots, _ = ctx.result
    m, n = LU.shape[-2:]
    k = min(m, n)
    P, L, U = lu_unpack(LU, pivots)
    return _lu_backward(P, L, U, gLU[..., :, :k].tril(-1), gLU[..., :k, :].triu())


@operator("_lu_pivots_to_permutation(Tensor pivots, int m) -> Tensor", method=False)
def _lu_pivots_to_permutation(pivots, m):
    """``perm`` with ``(P^T A)[i] = A[perm[i]]`` for LAPACK's row interchanges ``pivots``
    (applied in order); int64.

    Example:
        >>> from ember.ops.linalg_factor import _lu_pivots_to_permutation
        >>> _lu_pivots_to_permutation(ember.tensor([2, 2], dtype=ember.int32), 2).tolist()
        [1, 0]
    """
    return Spec(pivots._shape[:-1] + (m,), dt.int64)


# -- composites on the factorisation ---------------------------------------------------------
def _first_zero_pivot(name: str, info: Tensor) -> None:
    """torch's error for a singular ``U`` (``check_errors``); meta tensors hold no info."""
    if info.device.type == "meta" or info.numel() == 0:
        return
    bad = int(info.max().item())
    if bad > 0:
        raise RuntimeError(f"{name}: U[{bad},{bad}] is zero and using it on lu_solve would "
                           "result in a division by zero. If you still want to perform the "
                           "factorization, consider calling linalg.lu(A, pivot) or "
                           "linalg.lu_factor_ex(A, pivot)")


@composite("linalg_lu_factor(Tensor A, *, bool pivot=True) -> (Tensor LU, Tensor pivots)",
           method=False)
def linalg_lu_factor(A, *, pivot=True):
    """``(LU, pivots)`` of :func:`linalg_lu_factor_ex`, raising on a zero pivot of ``U``
    (``torch.linalg.lu_factor``).

    Example:
        >>> LU, pivots = ember.linalg.lu_factor(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> LU.tolist()
        [[3.0, 4.0], [0.3333333432674408, 0.6666666269302368]]
    """
    LU, pivots, info = linalg_lu_factor_ex(A, pivot=pivot)
    _first_zero_pivot("torch.linalg.lu_factor", info)
    return LUFactorResult(LU, pivots)


@composite("lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
           "bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)", method=False)
def lu_unpack(LU_data, LU_pivots, unpack_data=True, unpack_pivots=True):
    """``(P, L, U)`` with ``A = P L U`` from a compact LU (``torch.lu_unpack``); the parts not
    asked for are empty tensors. Differentiable in ``LU_data``.

    Shape: ``LU (*, m, n)`` -> ``P (*, m, m)``, ``L (*, m, k)``, ``U (*, k, n)``,
    ``k = min(m, n)``.

    Example:
        >>> LU, piv = ember.linalg.lu_factor(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> ember.lu_unpack(LU, piv).P.tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    lib = _lib()
    if LU_pivots._dtype is not dt.int32:
        raise RuntimeError("torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of "
                           "torch.int32 dtype.\nNote: this function is intended to be used "
                           "with the output produced by torch.linalg.lu_factor")
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    if unpack_data:
        L, U = _lu_factors(LU_data, k)
    else:  # empty, but outputs of LU_data all the same (they require grad when it does)
        L = U = LU_data.reshape(-1)[:0]
    if not unpack_pivots:
        return LUUnpackResult(lib.empty(0, dtype=LU_data.dtype, device=LU_data.device), L, U)
    perm = _lu_pivots_to_permutation(LU_pivots, m)  # (*, m)
    rows = lib.arange(m, device=LU_data.device)
    P = lib.eq(perm.unsqueeze(-2), rows.unsqueeze(-1)).to(LU_data.dtype)  # P[i, j] = perm[j]==i
    return LUUnpackResult(P, L, U)


@composite("linalg_lu(Tensor A, *, bool pivot=True) -> (Tensor P, Tensor L, Tensor U)",
           method=False)
def linalg_lu(A, *, pivot=True):
    """``(P, L, U)`` with ``A = P L U`` (``torch.linalg.lu``): ``L`` unit lower triangular
    ``(*, m, k)``, ``U`` upper ``(*, k, n)``, ``P`` a permutation matrix. Differentiable,
    also at singular ``A`` (the factorisation exists; the gradient solves with ``U``).

    Example:
        >>> P, L, U = ember.linalg.lu(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> (P @ L @ U).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    LU, pivots, _ = linalg_lu_factor_ex(A, pivot=pivot)
    return LUResult(*lu_unpack(LU, pivots))


def _lu_solve_checks(LU, pivots, B, left: bool) -> None:
    if LU.ndim < 2 or B.ndim < 2:
        raise RuntimeError("linalg.lu_solve: The input tensors must have at least 2 dimensions.")
    if LU._shape[-1] != LU._shape[-2]:
        raise RuntimeError(f"linalg.lu_solve: A must be batches of square matrices, but they "
                           f"are {LU._shape[-2]} by {LU._shape[-1]} matrices")
    n = LU._shape[-1]
    if (B._shape[-2] if left else B._shape[-1]) != n:
        side = "rows" if left else "columns"
        raise RuntimeError(f"linalg.lu_solve: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{B._shape[-2]}x{B._shape[-1]}); B's {side} must equal {n}")
    if LU._dtype is not B._dtype:
        raise RuntimeError(f"linalg.lu_solve: Expected LU and B to have the same dtype, but "
                           f"found LU of type {_tn(LU)} and B of type {_tn(B)} instead")
    if pivots._dtype is not dt.int32:
        raise RuntimeError("linalg.lu_solve: pivots should be a Tensor of scalar type int32")


@composite("linalg_lu_solve(Tensor LU, Tensor pivots, Tensor B, *, bool left=True, "
           "bool adjoint=False) -> Tensor", method=False)
def linalg_lu_solve(LU, pivots, B, *, left=True, adjoint=False):
    """Solve ``A X = B`` (``X A = B`` when not ``left``; ``A^H`` for ``adjoint``) given
    ``A``'s compact LU (``torch.linalg.lu_solve``). Differentiable in ``LU`` and ``B``.

    Shape: ``LU (*, n, n)``, ``B (*, n, k)`` (``(*, k, n)`` when not ``left``); batch dims
    broadcast.

    Example:
        >>> A = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> LU, piv = ember.linalg.lu_factor(A)
        >>> ember.linalg.lu_solve(LU, piv, ember.tensor([[5.0], [11.0]])).tolist()
        [[1.0], [2.0]]
    """
    _lu_solve_checks(LU, pivots, B, left)
    solve = _lib().linalg_solve_triangular
    P, L, U = lu_unpack(LU, pivots)
    if left and not adjoint:  # X = U^{-1} L^{-1} P^T B
        X = solve(L, matmul(P.mT, B), upper=False, unitriangular=True)
        return solve(U, X, upper=True)
    if left:  # A^T X = B: X = P L^{-T} U^{-T} B
        X = solve(U.mH, B, upper=False)
        return matmul(P, solve(L.mH, X, upper=True, unitriangular=True))
    if not adjoint:  # X A = B: X = B U^{-1} L^{-1} P^T
        X = solve(U, B, upper=True, left=False)
        return matmul(solve(L, X, upper=False, left=False, unitriangular=True), P.mT)
    # X A^T = B: X = B P L^{-T} U^{-T}
    X = solve(L.mH, matmul(B, P), upper=True, left=False, unitriangular=True)
    return solve(U.mH, X, upper=False, left=False)


@composite("lu(Tensor A, bool pivot=True, bool get_infos=False) -> Tensor[]", method="lu")
def lu(A, pivot=True, get_infos=False):
    """Deprecated ``torch.lu``: ``(LU, pivots)``, plus ``info`` with ``get_infos``; a singular
    ``A`` is no error (as :func:`linalg_lu_factor_ex`).

    Example:
        >>> LU, pivots = ember.lu(ember.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots.tolist()
        [2, 2]
    """
    LU, pivots, info = linalg_lu_factor_ex(A, pivot=pivot)
    return (LU, pivots, info) if get_infos else (LU, pivots)


@composite("lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor",
           method="lu_solve")
def lu_solve(b, LU_data, LU_pivots):
    """Deprecated ``torch.lu_solve(b, LU, pivots)``: :func:`linalg_lu_solve` ``(LU, pivots, b)``.

    Example:
        >>> LU, piv = ember.linalg.lu_factor(ember.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> ember.lu_solve(ember.tensor([[2.0], [4.0]]), LU, piv).tolist()
        [[1.0], [1.0]]
    """
    return linalg_lu_solve(LU_data, LU_pivots, b)


# -- Householder products applied to a matrix -------------------------------------------------
@composite("ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, "
           "bool transpose=False) -> Tensor", method="ormqr")
def ormqr(input, tau, other, left=True, transpose=False):
    """``Q C``, ``Q^H C``, ``C Q`` or ``C Q^H`` (``^T`` when real) for the full ``m x m``
    ``Q = H_1 ... H_k`` of Householder reflectors stored as by :func:`geqrf` (``torch.ormqr``,
    LAPACK's ``ormqr``/``unmqr``). Differentiable in all three tensors.

    Shape: ``input (*, m, k)``... reflectors in its columns, ``tau (*, k)``, ``other (*, m, p)``
    (``(*, p, m)`` when not ``left``) -> as ``other``.

    Example:
        >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> R = ember.ormqr(a, tau, ember.tensor([[3.0, 1.0], [4.0, 2.0]]), transpose=True)
        >>> round(R[1, 0].item(), 5)
        0.0
    """
    _ormqr_checks(input, tau, other, left)
    lib = _lib()
    m = other.shape[-2] if left else other.shape[-1]
    k = tau.shape[-1]
    eye = lib.eye(m, input.shape[-1], dtype=input.dtype, device=input.device)
    V = input.tril(-1) + eye  # (*, m, n) reflectors with unit diagonal
    # Q C applies H_k first (innermost); Q^T C applies H_1 first; on the right, reversed.
    order = range(k - 1, -1, -1) if left != transpose else range(k)
    C = other
    for i in order:
        v = V[..., :, i:i + 1]  # (*, m, 1)
        t = tau[..., i:i + 1].unsqueeze(-1)  # (*, 1, 1)
        if transpose and t.is_complex():  # Q^H: each H_i^H = I - conj(tau_i) v v^H
            t = t.conj()
        C = C - matmul(v * t, matmul(v.mH, C)) if left else C - matmul(matmul(C, v), v.mH * t)
    return C


def _ormqr_checks(input, tau, other, left: bool) -> None:
    if input.ndim < 2 or other.ndim < 2:
        raise RuntimeError("torch.ormqr: input must have at least 2 dimensions.")
    m = other.shape[-2] if left else other.shape[-1]
    if input.shape[-2] != m:
        raise RuntimeError(f"torch.ormqr: other.shape[{-2 if left else -1}] must be equal to "
                           f"input.shape[-2]")
    if tau.shape[-1] != min(m, input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to "
                           f"min(other.shape[{-2 if left else -1}], input.shape[-1])")
    if tau.shape[-1] > input.shape[-1]:
        raise RuntimeError("torch.ormqr: tau.shape[-1] must be less than or equal to "
                           "input.shape[-1]")
    if tau.shape[-1] > m:
        raise RuntimeError("torch.ormqr: input.shape[-2] must be greater than or equal to "
                           "tau.shape[-1]")
    for name, t in (("tau", tau), ("other", other)):
        if t._dtype is not input._dtype:
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same "
                               f"dtype, but input has dtype {input._dtype.name} and {name} "
                               f"has dtype {t._dtype.name}")
    if input._dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise _not_implemented("ormqr_cpu", input)


# -- least squares -------------------------------------------------------------------------
_LSTSQ_DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_checks(A, B, driver) -> None:
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.lstsq: input must have at least 2 dimensions.")
    if B.ndim < 1:
        raise RuntimeError("torch.linalg.lstsq: other must have at least 1 dimension.")
    if A._dtype is not B._dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {_tn(A)} and other's dtype {_tn(B)}")
    if A._dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise RuntimeError("This function doesn't handle types other than float and double")
    if driver not in _LSTSQ_DRIVERS:
        raise RuntimeError("torch.linalg.lstsq: parameter `driver` should be one of "
                           "(gels, gelsy, gelsd, gelss)")


@composite("linalg_lstsq(Tensor A, Tensor B, float? rcond=None, *, str? driver=None) -> "
           "(Tensor solution, Tensor residuals, Tensor rank, Tensor singular_values)",
           method=False)
def linalg_lstsq(A, B, rcond=None, *, driver=None):
    """Least-squares solution of ``A X = B`` (``torch.linalg.lstsq``), minimum-norm when
    ``A`` is rank deficient: singular values at or below ``rcond * S.max()`` (default
    ``eps * max(m, n)``) count as zero.

    What the CPU drivers return, as torch: ``residuals`` (squared residual norms per column)
    when ``m > n`` for ``gels``, ``gelsd`` and ``gelss`` (only at full rank for the latter
    two), else empty; ``rank`` for all but ``gels``; ``singular_values`` for ``gelsd`` and
    ``gelss`` (not differentiable). ``solution`` and ``residuals`` are differentiable (the
    solution's gradient is that of ``pinv(A) @ B``). Complex ``A`` and ``B`` give a complex
    solution with real ``residuals`` (squared moduli) and ``singular_values``, as torch.

    Shape: ``A (*, m, n)``, ``B (*, m, k)`` or ``(*, m)`` -> ``solution (*, n, k)`` or
    ``(*, n)``; batch dims broadcast.

    Example:
        >>> A = ember.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        >>> ember.linalg.lstsq(A, ember.tensor([[1.0], [1.0], [2.0]])).solution.tolist()
        [[1.0], [1.0]]
    """
    driver = "gelsy" if driver is None else driver
    _lstsq_checks(A, B, driver)
    lib = _lib()
    vector = B.ndim == A.ndim - 1
    B2 = B.unsqueeze(-1) if vector else B
    m, n = A._shape[-2:]
    if B2._shape[-2] != m:
        raise RuntimeError("torch.linalg.lstsq: input.size(-2) should match other.size(-2)")
    given = rcond is not None and rcond >= 0
    if not given:
        rcond = dt.finfo(A._dtype).eps * max(m, n)
    X = matmul(lib.linalg_pinv(A, rtol=rcond), B2)  # (*, n, k)
    if given:  # torch differentiates pinv(A) @ B with pinv's default cut, whatever rcond is
        Y = matmul(lib.linalg_pinv(A), B2)
        X = X.detach() + (Y - Y.detach())
    real = A._dtype.to_real() if A._dtype.is_complex else A._dtype
    empty = lib.empty(0, dtype=real, device=A._device)
    rank = lib.linalg_matrix_rank(A, rtol=rcond) if driver != "gels" else \
        lib.empty(0, dtype=dt.int64, device=A._device)
    full = driver == "gels" or (rank.numel() > 0 and bool((rank == n).all()))
    if m > n and driver != "gelsy" and full:
        diff = matmul(A, X) - B2
        residuals = ((diff.real ** 2 + diff.imag ** 2) if diff.is_complex() else diff ** 2).sum(-2)
        if n == 0 and driver == "gels":  # gels leaves them at zero; torch's gradient remains
            residuals = residuals - residuals.detach()
    else:  # empty, yet an output of A and B (it requires grad when they do, as torch's)
        residuals = A.reshape(-1)[:0] + B2.reshape(-1)[:0]
        residuals = residuals.real if residuals.is_complex() else residuals
    singular_values = lib.linalg_svdvals(A.detach()) if driver in ("gelsd", "gelss") else empty
    return LstsqResult(X.squeeze(-1) if vector else X, residuals, rank, singular_values)



# -- LDL (Bunch-Kaufman) -------------------------------------------------------------------
LDLFactorExResult = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
LDLFactorResult = namedtuple("linalg_ldl_factor", ["LD", "pivots"])


def _ldl_checks(name: str, A) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"torch.linalg.{name}: The input tensor A must have at least 2 "
                           f"dimensions.")
    if A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"torch.linalg.{name}: A must be batches of square matrices, but "
                           f"they are {A._shape[-2]} by {A._shape[-1]} matrices")
    if A._dtype not in (dt.float32, dt.float64):
        raise _not_implemented("ldl_factor_cpu", A)


@operator("linalg_ldl_factor_ex(Tensor self, *, bool hermitian=False, bool check_errors=False) "
          "-> (Tensor LD, Tensor pivots, Tensor info)", method=False)
def linalg_ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """``A = P L D L^T P^T`` of a symmetric matrix by Bunch-Kaufman pivoting
    (``torch.linalg.ldl_factor_ex``, LAPACK's ``sytrf`` with the lower triangle): ``LD``
    holds ``L`` below the diagonal and the 1x1/2x2 blocks of ``D``; ``pivots`` are LAPACK's
    (1-based; a negative pair marks a 2x2 block); ``info`` the first zero pivot (1-based).
    Only the lower triangle of ``A`` is read. Not differentiable (as in torch).

    Shape: ``(*, n, n)`` -> ``LD (*, n, n)``, ``pivots (*, n)`` int32, ``info (*)`` int32.

    Example:
        >>> LD, pivots, info = ember.linalg.ldl_factor_ex(ember.tensor([[4.0, 2.0], [2.0, 3.0]]))
        >>> LD.tolist(), pivots.tolist()
        ([[4.0, 0.0], [0.5, 2.0]], [1, 2])
    """
    _ldl_checks("ldl_factor_ex", A)
    return (Spec(A._shape, A._dtype), Spec(A._shape[:-1], dt.int32),
            Spec(A._shape[:-2], dt.int32))


@composite("linalg_ldl_factor(Tensor self, *, bool hermitian=False) -> "
           "(Tensor LD, Tensor pivots)", method=False)
def linalg_ldl_factor(A, *, hermitian=False):
    """``(LD, pivots)`` of :func:`linalg_ldl_factor_ex`, raising where it reports an error
    (``torch.linalg.ldl_factor``).

    Example:
        >>> ember.linalg.ldl_factor(ember.tensor([[4.0, 2.0], [2.0, 3.0]])).pivots.tolist()
        [1, 2]
    """
    LD, pivots, info = linalg_ldl_factor_ex(A, hermitian=hermitian)
    if info.device.type != "meta" and info.numel() and int(info.max().item()) > 0:
        raise RuntimeError("torch.linalg.ldl_factor: The factorization could not be "
                           "completed because the input is not invertible.")
    return LDLFactorResult(LD, pivots)


@operator("linalg_ldl_solve(Tensor LD, Tensor pivots, Tensor B, *, bool hermitian=False) -> "
          "Tensor", method=False)
def linalg_ldl_solve(LD, pivots, B, *, hermitian=False):
    """Solve ``A X = B`` from ``A``'s LDL factorisation (``torch.linalg.ldl_solve``, LAPACK's
    ``sytrs``). Not differentiable (as in torch).

    Shape: ``LD (*, n, n)``, ``B (*, n, k)`` -> ``(*, n, k)``; batch dims broadcast.

    Example:
        >>> A = ember.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> LD, piv = ember.linalg.ldl_factor(A)
        >>> ember.linalg.ldl_solve(LD, piv, ember.tensor([[6.0], [5.0]])).tolist()
        [[1.0], [1.0]]
    """
    from ember.core.layout import broadcast_shapes
    if LD.ndim < 2 or B.ndim < 2:
        raise RuntimeError("torch.linalg.ldl_solve: LD and B must have at least 2 dimensions")
    n = LD._shape[-1]
    if LD._shape[-2] != n:
        raise RuntimeError("torch.linalg.ldl_solve: LD must be batches of square matrices")
    if B._shape[-2] != n:
        raise RuntimeError(f"torch.linalg.ldl_solve: Incompatible shapes of LD and B: "
                           f"{n}x{n} and {B._shape[-2]}x{B._shape[-1]}")
    if LD._dtype is not B._dtype:
        raise RuntimeError(f"torch.linalg.ldl_solve: Expected LD and B to have the same dtype, "
                           f"but got {_tn(LD)} and {_tn(B)}")
    if pivots._dtype is not dt.int32:
        raise RuntimeError("torch.linalg.ldl_solve: Expected pivots to be integers. Got "
                           f"{_tn(pivots)}")
    batch = broadcast_shapes(LD._shape[:-2], B._shape[:-2])
    return Spec(tuple(batch) + B._shape[-2:], B._dtype)
