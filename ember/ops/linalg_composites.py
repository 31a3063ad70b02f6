"""Composites of torch.linalg and of torch's older top-level linear algebra: ``vecdot``,
``multi_dot``, ``diagonal``, ``cross``, ``norm``, ``cond``, ``vander``, ``tensorinv``,
``tensorsolve``, the ``*_ex`` forms with info codes, ``solve_triangular``, ``matrix_exp``, and
``qr``/``svd``/``cholesky``/``cholesky_inverse``/``cholesky_solve``/``pinverse``/
``triangular_solve``. Written with ember's linalg operators, so gradients and every backend
follow; ``ember/linalg.py`` re-exports the ``linalg_*`` names under torch.linalg's.
"""

from __future__ import annotations

import math

from ember.core import dtype as dt
from ember.ops._define import TENSOR_METHODS, composite
from ember.ops.composites import _out, _require
from ember.ops.creation import ones, tensor, zeros
from ember.ops.reduction import linalg_vector_norm
from ember.tensor import Tensor

__all__: list[str] = []


# -- torch.linalg composites --------------------------------------------------------------------
@composite("linalg_vecdot(Tensor x, Tensor y, *, int dim=-1, Tensor(a!)? out=None) -> Tensor",
           method=False)
def linalg_vecdot(x, y, *, dim: int = -1, out=None):
    """Dot products of ``x`` and ``y`` (broadcast) along ``dim`` (``torch.linalg.vecdot``);
    complex ``x`` is conjugated, ``sum(conj(x) * y)``.

    Example:
        >>> ember.linalg.vecdot(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
        tensor(11.)
    """
    _require("linalg.vecdot", x, "x")
    _require("linalg.vecdot", y, "y", 2)
    if not (x._dtype.is_floating_point or x._dtype.is_complex):
        raise RuntimeError("linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {x._dtype.scalar_name}")
    if x._dtype is not y._dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {x._dtype.scalar_name} and y of type "
                           f"{y._dtype.scalar_name} instead")
    return _out(((x.conj() if x._dtype.is_complex else x) * y).sum(dim), out)


@composite("linalg_multi_dot(Tensor[] tensors, *, Tensor(a!)? out=None) -> Tensor",
           method=False)
def linalg_multi_dot(tensors, *, out=None):
    """The matrix product of a chain (``torch.linalg.multi_dot``): the first tensor may be
    1-d (a row) and the last 1-d (a column); the others are 2-d.

    Example:
        >>> ember.linalg.multi_dot([ember.ones(2), ember.ones(2, 3), ember.ones(3)])
        tensor(6.)
    """
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    for i, t_ in enumerate(tensors):
        allowed = (1, 2) if i in (0, len(tensors) - 1) else (2,)
        if t_.ndim not in allowed:
            where = "first" if i == 0 else "last" if i == len(tensors) - 1 else None
            msg = (f"multi_dot(): the {where} tensor must be 1D or 2D but got {t_.ndim}D"
                   if where else f"multi_dot(): tensor {i} must be 2D but got {t_.ndim}D")
            raise RuntimeError(msg)
    result = tensors[0]
    for t_ in tensors[1:]:
        result = result @ t_
    return _out(result, out)


@composite("linalg_diagonal(Tensor(a) A, *, int offset=0, int dim1=-2, int dim2=-1) -> "
           "Tensor(a)", method=False)
def linalg_diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """The diagonals of the matrices of ``A`` (a view; ``torch.linalg.diagonal``).

    Example:
        >>> ember.linalg.diagonal(ember.arange(8).reshape(2, 2, 2))
        tensor([[0, 3],
                [4, 7]])
    """
    _require("linalg.diagonal", A, "A")
    return A.diagonal(offset, dim1, dim2)


@composite("linalg_cross(Tensor self, Tensor other, *, int dim=-1, Tensor(a!)? out=None) -> "
           "Tensor", method=False)
def linalg_cross(input, other, *, dim: int = -1, out=None):
    """Cross products of 3-vectors along ``dim`` (default -1), broadcasting the rest.

    Example:
        >>> ember.linalg.cross(ember.tensor([1.0, 0.0, 0.0]), ember.tensor([0.0, 1.0, 0.0]))
        tensor([0., 0., 1.])
    """
    from ember.ops.shape import cross
    return cross(input, other, dim, out=out)


@composite("linalg_norm(Tensor self, Scalar? ord=None, int[1]? dim=None, bool keepdim=False, "
           "*, ScalarType? dtype=None) -> Tensor", method=False)
def linalg_norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None, out=None):
    """A vector or matrix norm (``torch.linalg.norm``): a vector norm over ``dim`` when it is
    an int (or over everything when ``dim`` and ``ord`` are None), a matrix norm over a pair.

    Example:
        >>> ember.linalg.norm(ember.tensor([[3.0, 0.0], [0.0, 4.0]]))
        tensor(5.)
    """
    from ember.ops.reduction import linalg_matrix_norm
    _require("linalg.norm", A, "A")
    if isinstance(dim, int):
        dim = (dim,)
    if dim is None and ord is not None:
        if A.ndim not in (1, 2):
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {A.ndim}D.")
        dim = tuple(range(A.ndim))
    if dim is not None and len(dim) == 2:
        value = linalg_matrix_norm(A, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    else:
        value = linalg_vector_norm(A, 2 if ord is None else ord, dim, keepdim, dtype=dtype)
    return _out(value, out)


@composite("linalg_vander(Tensor x, *, SymInt? N=None) -> Tensor", method=False)
def linalg_vander(x, *, N=None):
    """Vandermonde matrix ``x[..., i] ** j`` for ``j < N`` (``torch.linalg.vander``).

    Example:
        >>> ember.linalg.vander(ember.tensor([2, 3])).tolist()
        [[1, 2], [1, 3]]
    """
    from ember.ops.shape import cat
    _require("linalg.vander", x, "x")
    if x.ndim == 0:  # torch reads a 0-d x as one point
        x = x.reshape(1)
    n = x._shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    x = x if x._dtype is not dt.bool_ else x.to(dt.int64)
    first = ones((*x._shape, 1), dtype=x._dtype, device=x._device)
    powers = x.unsqueeze(-1).expand(*x._shape, n - 1).cumprod(-1)
    return cat([first, powers], -1)


@composite("linalg_tensorinv(Tensor self, int ind=2) -> Tensor", method=False)
def linalg_tensorinv(A, ind: int = 2):
    """The inverse of ``A`` for ``tensordot`` over its first ``ind`` dims
    (``torch.linalg.tensorinv``).

    Example:
        >>> A = (ember.eye(6) * 2).reshape(2, 3, 6)
        >>> Ainv = ember.linalg.tensorinv(A, ind=2)
        >>> Ainv.shape, ember.allclose(ember.tensordot(A, Ainv, 1).reshape(6, 6), ember.eye(6))
        (ember.Size([6, 2, 3]), True)
    """
    from ember.ops.linalg import linalg_inv
    _require("linalg.tensorinv", A, "A")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape, in_shape = A._shape[:ind], A._shape[ind:]
    rows, cols = math.prod(out_shape), math.prod(in_shape)
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement "
                           "prod(self.shape[ind:]) == prod(self.shape[:ind]), but got "
                           f"{cols} != {rows}")
    return linalg_inv(A.reshape(rows, cols)).reshape(*in_shape, *out_shape)


@composite("linalg_tensorsolve(Tensor self, Tensor other, int[]? dims=None) -> Tensor",
           method=False)
def linalg_tensorsolve(A, B, dims=None):
    """The ``X`` with ``tensordot(A, X, X.ndim) == B`` (``torch.linalg.tensorsolve``).

    Example:
        >>> A = ember.eye(6).reshape(2, 3, 6) * 2
        >>> X = ember.linalg.tensorsolve(A, ember.ones(2, 3))
        >>> X.shape, X
        (ember.Size([6]), tensor([0.5000, 0.5000, 0.5000, 0.5000, 0.5000, 0.5000]))
    """
    from ember.ops.linalg import linalg_solve
    _require("linalg.tensorsolve", A, "A")
    _require("linalg.tensorsolve", B, "B", 2)
    if dims is not None:
        dims = [d % A.ndim for d in dims]
        keep = [d for d in range(A.ndim) if d not in dims]
        A = A.permute(*keep, *dims)
    x_shape = A._shape[B.ndim:]
    rows, cols = math.prod(B._shape), math.prod(x_shape)
    if rows != cols:
        raise RuntimeError("Expected self to satisfy the requirement "
                           "prod(self.shape[other.ndim:]) == prod(self.shape[:other.ndim]), "
                           f"but got {cols} != {rows}")
    return linalg_solve(A.reshape(rows, cols), B.reshape(rows)).reshape(x_shape)


# -- torch's older top-level linear algebra (forms of torch.linalg) ---------------------------
@composite("qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)")
def qr(input, some: bool = True):
    """QR decomposition: ``linalg.qr`` with ``mode='reduced'`` (``some``) or ``'complete'``.

    Example:
        >>> A = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> Q, R = ember.qr(A)
        >>> Q.shape, R.shape, ember.allclose(Q @ R, A, atol=1e-5)
        (ember.Size([3, 2]), ember.Size([2, 2]), True)
    """
    from ember.ops.linalg import linalg_qr
    _require("qr", input)
    return linalg_qr(input, "reduced" if some else "complete")


@composite("svd(Tensor self, bool some=True, bool compute_uv=True) -> "
           "(Tensor U, Tensor S, Tensor V)")
def svd(input, some: bool = True, compute_uv: bool = True):
    """Singular value decomposition returning ``V`` (not ``Vh``), as torch's ``svd``.

    ``compute_uv=False`` returns zero-filled full-size ``U`` and ``V``, as torch.

    Example:
        >>> A = ember.tensor([[3.0, 0.0], [0.0, -2.5], [0.0, 0.0]])
        >>> U, S, V = ember.svd(A)
        >>> U.shape, S, V.shape, ember.allclose(U @ ember.diag(S) @ V.mT, A, atol=1e-5)
        (ember.Size([3, 2]), tensor([3.0000, 2.5000]), ember.Size([2, 2]), True)
    """
    from ember.ops.linalg import linalg_svd, linalg_svdvals
    _require("svd", input)
    if not compute_uv:
        m, n = input._shape[-2:]
        batch = input._shape[:-2]
        u = zeros((*batch, m, m), dtype=input._dtype, device=input._device)
        v = zeros((*batch, n, n), dtype=input._dtype, device=input._device)
        return u, linalg_svdvals(input), v
    u, s, vh = linalg_svd(input, full_matrices=not some)
    return u, s, vh.mT


@composite("cholesky(Tensor self, bool upper=False) -> Tensor")
def cholesky(input, upper: bool = False):
    """Cholesky factor of a symmetric positive-definite matrix (``linalg.cholesky``).

    Example:
        >>> ember.cholesky(ember.tensor([[4.0, 2.0], [2.0, 2.5]]))
        tensor([[2.0000, 0.0000],
                [1.0000, 1.2247]])
    """
    from ember.ops.linalg import linalg_cholesky
    _require("cholesky", input)
    return linalg_cholesky(input, upper=upper)


@composite("cholesky_inverse(Tensor self, bool upper=False) -> Tensor")
def cholesky_inverse(input, upper: bool = False):
    """The inverse of ``A`` from its Cholesky factor (``L L^T`` or ``U^T U``).

    Example:
        >>> L = ember.tensor([[2.0, 0.0], [1.0, 1.5]])
        >>> ember.allclose(ember.cholesky_inverse(L) @ (L @ L.mT), ember.eye(2), atol=1e-5)
        True
    """
    from ember.ops.linalg import linalg_inv
    _require("cholesky_inverse", input)
    if input.ndim >= 2 and input._shape[-1] != input._shape[-2]:
        raise RuntimeError(f"cholesky_inverse: A must be batches of square matrices, but they "
                           f"are {input._shape[-2]} by {input._shape[-1]} matrices")
    return linalg_inv(input.mT @ input if upper else input @ input.mT)


@composite("cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor")
def cholesky_solve(input, input2, upper: bool = False):
    """Solve ``A X = input`` given the Cholesky factor ``input2`` of ``A``.

    Example:
        >>> L = ember.tensor([[2.0, 0.0], [0.0, 4.0]])  # A = L L^T = diag(4, 16)
        >>> ember.cholesky_solve(ember.tensor([[4.0], [8.0]]), L)
        tensor([[1.0000],
                [0.5000]])
    """
    from ember.ops.linalg import linalg_solve
    _require("cholesky_solve", input)
    _require("cholesky_solve", input2, "input2", 2)
    a = input2.mT @ input2 if upper else input2 @ input2.mT
    return linalg_solve(a, input)


@composite("pinverse(Tensor self, float rcond=1e-15) -> Tensor")
def pinverse(input, rcond: float = 1e-15):
    """Pseudo-inverse: ``linalg.pinv`` with singular values below ``rcond * max`` dropped.

    Example:
        >>> ember.pinverse(ember.tensor([[1.0], [1.0]]))
        tensor([[0.5000, 0.5000]])
    """
    from ember.ops.linalg import linalg_pinv
    _require("pinverse", input)
    return linalg_pinv(input, rtol=rcond)


__all__ += ["qr", "svd", "cholesky", "cholesky_inverse", "cholesky_solve", "pinverse"]


# -- torch.linalg: *_ex forms, solve_triangular, matrix_exp -----------------------------------
def _ex(op, A: Tensor, *rest, check_errors: bool = False) -> tuple:
    """``(result, info)``: ``info`` is 0 per matrix that succeeded and 1 (ember does not report
    LAPACK's failing pivot) per matrix that failed, whose result is NaN; with
    ``check_errors`` the first failure raises, as torch."""
    from ember.ops.creation import full
    from ember.ops.linalg import LinAlgError
    from ember.ops.shape import stack
    batch = A._shape[:-2]
    try:
        return op(A, *rest), zeros(batch, dtype=dt.int32, device=A._device)
    except LinAlgError:
        if check_errors:
            raise
    mats = A.reshape(-1, *A._shape[-2:])
    results, infos = [], []
    for i in range(mats._shape[0]):
        try:
            results.append(op(mats[i], *rest))
            infos.append(0)
        except LinAlgError:
            shape = op(ones_like_identity(mats[i]), *rest)._shape
            results.append(full(shape, math.nan, dtype=A._dtype, device=A._device))
            infos.append(1)
    out = stack(results).reshape(*batch, *results[0]._shape)
    return out, tensor(infos, dtype=dt.int32, device=A._device).reshape(batch)


def ones_like_identity(m: Tensor) -> Tensor:
    """An identity matrix shaped like the square ``m`` (a stand-in that never fails)."""
    from ember.ops.creation import eye
    return eye(m._shape[-1], dtype=m._dtype, device=m._device)


def linalg_inv_ex(A, *, check_errors: bool = False) -> tuple:
    """``(inverse, info)`` (``torch.linalg.inv_ex``): no error on a singular matrix unless
    ``check_errors``; see :func:`_ex` for ``info``."""
    from ember.ops.linalg import linalg_inv
    _require("linalg.inv_ex", A, "A")
    return _ex(linalg_inv, A, check_errors=check_errors)


def linalg_cholesky_ex(A, *, upper: bool = False, check_errors: bool = False) -> tuple:
    """``(L, info)`` (``torch.linalg.cholesky_ex``): no error on a matrix that is not positive
    definite unless ``check_errors``."""
    from ember.ops.linalg import linalg_cholesky
    _require("linalg.cholesky_ex", A, "A")
    return _ex(lambda m: linalg_cholesky(m, upper=upper), A, check_errors=check_errors)


def linalg_solve_ex(A, B, *, left: bool = True, check_errors: bool = False) -> tuple:
    """``(result, info)`` (``torch.linalg.solve_ex``): no error on a singular ``A`` unless
    ``check_errors``."""
    from ember.ops.linalg import linalg_solve
    _require("linalg.solve_ex", A, "A")
    if not left:
        out, info = linalg_solve_ex(A.mT, B.mT, check_errors=check_errors)
        return out.mT, info
    try:
        return linalg_solve(A, B), zeros(A._shape[:-2], dtype=dt.int32, device=A._device)
    except RuntimeError:
        if check_errors:
            raise
    inv, info = linalg_inv_ex(A)
    vector = B.ndim == A.ndim - 1
    out = (inv @ (B.unsqueeze(-1) if vector else B))
    return (out.squeeze(-1) if vector else out), info


def linalg_solve_triangular(A, B, *, upper: bool, left: bool = True,
                            unitriangular: bool = False, out=None) -> Tensor:
    """Solve ``A X = B`` (``X A = B`` when ``left=False``) for triangular ``A``; only the
    triangle named by ``upper`` is read, with a unit diagonal when ``unitriangular``
    (``torch.linalg.solve_triangular``).

    Example:
        >>> A = ember.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> ember.linalg.solve_triangular(A, ember.tensor([[2.0], [3.0]]), upper=False).tolist()
        [[1.0], [2.0]]
    """
    from ember.ops.linalg_factor import _linalg_triangular_solve
    _require("linalg.solve_triangular", A, "A")
    _require("linalg.solve_triangular", B, "B", 2)
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    return _out(_linalg_triangular_solve(A, B, upper, left, unitriangular), out)


_EXP_TERMS = 18


def linalg_matrix_exp(A) -> Tensor:
    """The matrix exponential ``sum A**k / k!`` (``torch.linalg.matrix_exp``), by scaling and
    squaring: ``A / 2**s`` has norm below 1/2, its Taylor series to degree 18 is exact to
    float64 rounding, then ``s`` squarings.

    Example:
        >>> ember.linalg.matrix_exp(ember.zeros(2, 2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    from ember.ops.creation import eye
    _require("linalg.matrix_exp", A, "A")
    if A.ndim < 2 or A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"linalg.matrix_exp: A must be batches of square matrices, but they "
                           f"are {A._shape[-2] if A.ndim > 1 else 1} by {A._shape[-1]} matrices")
    if not (A._dtype.is_floating_point or A._dtype.is_complex):
        raise RuntimeError(f"linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {A._dtype.scalar_name}")
    if A.numel() == 0:
        return A.clone()
    norm = linalg_vector_norm(A.detach(), 1, (-2, -1)).max().item()  # >= the 1-norm's bound
    s = max(0, math.ceil(math.log2(norm / 0.5))) if norm > 0.5 else 0
    scaled = A * (1.0 / 2 ** s) if s else A
    ident = eye(A._shape[-1], dtype=A._dtype, device=A._device).expand(A._shape)
    result, term = ident, ident
    for k in range(1, _EXP_TERMS + 1):
        term = (term @ scaled) * (1.0 / k)
        result = result + term
    for _ in range(s):
        result = result @ result
    return result


def triangular_solve(input, A, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> tuple:
    """Deprecated: ``(linalg.solve_triangular(A or A^T, input), A.clone())`` (warns, as
    torch's ``triangular_solve``)."""
    import warnings
    warnings.warn("ember.triangular_solve is deprecated in favor of "
                  "ember.linalg.solve_triangular and will be removed in a future release.",
                  UserWarning, stacklevel=2)
    _require("triangular_solve", input)
    _require("triangular_solve", A, "A", 2)
    coefficient = A.mT if transpose else A
    solution = linalg_solve_triangular(coefficient, input, upper=upper != transpose,
                                       unitriangular=unitriangular)
    return solution, A.clone()


TENSOR_METHODS["triangular_solve"] = triangular_solve
__all__ += ["triangular_solve"]


@composite("linalg_cond(Tensor self, Scalar? p=None) -> Tensor", method=False)
def linalg_cond(A, p=None, *, out=None):
    """The condition number of ``A`` in the norm ``p`` (``torch.linalg.cond``): the ratio of
    the largest to the smallest singular value for ``p`` in (None, 2, -2, inverted for -2),
    else ``norm(A, p) * norm(inv(A), p)`` for ``'fro'``, ``'nuc'``, inf, -inf, 1, -1.

    Example:
        >>> ember.linalg.cond(ember.tensor([[2.0, 0.0], [0.0, 1.0]]))
        tensor(2.)
    """
    from ember.ops.linalg import linalg_inv, linalg_svdvals
    from ember.ops.reduction import linalg_matrix_norm
    _require("linalg.cond", A, "A")
    if A.ndim < 2:
        raise RuntimeError("linalg.cond: The input tensor A must have at least 2 dimensions.")
    m, n = A._shape[-2:]
    if p not in (None, 2, -2) and m != n:
        raise RuntimeError(f"linalg.cond(ord={p}): A must be batches of square matrices, but "
                           f"they are {m} by {n} matrices")
    if m == 0 or n == 0:  # torch: zeros of the batch shape (real), not differentiable
        real = A._dtype.to_real() if A._dtype.is_complex else A._dtype
        return _out(zeros(A._shape[:-2], dtype=real, device=A._device), out)
    if p in (None, 2, -2):
        s = linalg_svdvals(A)
        big, small = s[..., 0], s[..., -1]
        return _out(small / big if p == -2 else big / small, out)
    return _out(linalg_matrix_norm(A, p) * linalg_matrix_norm(linalg_inv(A), p), out)


