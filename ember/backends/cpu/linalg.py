"""CPU kernels of the linalg family: NumPy's BLAS (``matmul``) and LAPACK (``numpy.linalg``).

Every kernel reads its inputs through ``arr`` (strided views: NumPy copies to dense itself
when BLAS/LAPACK need it) and writes into the tensor from ``new_output``; products go straight
into the output's memory with ``out=`` when the output has the computation dtype. Half types
compute in float32 and round once at the end, like PyTorch's opmath. The Meta rule of each op
(``ember/ops/linalg.py``) runs first, so every error is raised before any work.
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu import _blas
from ember.backends.cpu._util import arr, compute_dtype, new_output, run_ufunc
from ember.backends.cpu._xp import cast, from_host, module_of, to_host
from ember.core import dtype as dt
from ember.ops import linalg as la
from ember.tensor import Tensor


def _in(t: Tensor, c: np.dtype) -> np.ndarray:
    """``t``'s strided NumPy view in dtype ``c`` (a converted copy only when dtypes differ)."""
    a = arr(t)
    return a if a.dtype == c else a.astype(c)


def _land(result, o: Tensor) -> Tensor:
    np.copyto(arr(o), result, casting="unsafe")
    return o


def _out(spec, out=None, name: str = "op") -> Tensor:
    return new_output(spec.shape, spec.dtype, out, name)


def _outs(specs, out) -> tuple:
    outs = out if out is not None else (None,) * len(specs)
    return tuple(new_output(s.shape, s.dtype, o) for s, o in zip(specs, outs))


# -- products ----------------------------------------------------------------------------------
def _product_into(x: np.ndarray, y: np.ndarray, o: Tensor) -> Tensor:
    """``x @ y`` written into ``o``: straight into its memory when dtypes allow. Every product
    is ``blas.gemm`` (MKL when installed, else ``np.matmul``: NOTE [GEMM provider])."""
    dst = arr(o)
    gemm = _blas.gemm
    if x.ndim > 2 and y.ndim == 2 and dst.flags.c_contiguous:
        # NOTE [Batched times matrix]: NumPy's batched matmul loops without BLAS when an
        # operand is strided (a transposed weight); one 2-D GEMM over the flattened batch is
        # 50-100x faster and gives the same values.
        rows = int(np.prod(x.shape[:-1]))  # not -1: a size-0 reshape cannot infer it
        flat = dst.reshape(rows, dst.shape[-1])
        x2 = x.reshape(rows, x.shape[-1])
        if dst.dtype == x.dtype:
            gemm(x2, y, flat)
        else:
            np.copyto(flat, gemm(x2, y), casting="unsafe")
        return o
    if dst.dtype == x.dtype and dst.ndim:
        gemm(x, y, dst)
    else:
        np.copyto(dst, gemm(x, y), casting="unsafe")
    return o


def _binary_product(op):
    rule = op.meta_rule

    def kernel(input, other, *, out=None):
        spec = rule(input, other)
        o = _out(spec, out, op.name)
        c = compute_dtype(spec.dtype)
        return _product_into(_in(input, c), _in(other, c), o)

    op.register("CPU", kernel)


for _op in (la.matmul, la.mm, la.bmm, la.mv, la.dot):
    _binary_product(_op)


@la.vdot.impl("CPU")
def _vdot(input, other, *, out=None):
    spec = la.vdot.meta_rule(input, other)
    o = _out(spec, out, "vdot")
    c = compute_dtype(spec.dtype)
    x = _in(input, c)
    return _product_into(np.conj(x) if x.dtype.kind == "c" else x, _in(other, c), o)


@la.outer.impl("CPU")
def _outer(input, vec2, *, out=None):
    spec = la.outer.meta_rule(input, vec2)
    o = _out(spec, out, "outer")
    return run_ufunc(np.multiply, (arr(input)[:, None], arr(vec2)[None, :]), o,
                     compute_dtype(spec.dtype))


@la.kron.impl("CPU")
def _kron(input, other, *, out=None):
    spec = la.kron.meta_rule(input, other)
    c = compute_dtype(spec.dtype)
    return _land(np.kron(_in(input, c), _in(other, c)), _out(spec, out, "kron"))


def _gemm_product(x, y, out=None):
    return _blas.gemm(x, y, out)


def _addbmm_product(x, y, out=None):
    b, n, k = x.shape
    # (b, n, k) -> (n, b*k) against (b*k, p): one GEMM sums over the batch
    return _blas.gemm(x.transpose(1, 0, 2).reshape(n, b * k), y.reshape(b * k, y.shape[2]),
                      out)


FUSED_PRODUCTS = {"addmm": _gemm_product, "addmv": _gemm_product, "baddbmm": _gemm_product,
                  "addbmm": _addbmm_product}


def _fused_compute(prod, input: Tensor, a: Tensor, b: Tensor, beta, alpha, o: Tensor) -> Tensor:
    """``beta * input + alpha * prod(a, b)`` into ``o``; ``beta == 0`` never reads ``input``."""
    c = compute_dtype(o._dtype)
    if o._dtype.category < dt.FLOATING:  # integer scalars truncate, then wrap like the dtype
        beta, alpha = int(beta), int(alpha)
    dst = arr(o)
    # The product may land in ``o`` first only when that cannot clobber ``input``.
    direct = dst.dtype == c and dst.ndim and input._storage is not o._storage
    work = prod(_in(a, c), _in(b, c), dst if direct else None)
    with np.errstate(all="ignore"):
        if alpha != 1:
            np.multiply(work, cast(alpha, c), out=work, casting="unsafe")
        if beta != 0:
            addend = _in(input, c)
            if beta != 1:
                addend = np.multiply(addend, cast(beta, c), dtype=c,
                                     casting="unsafe")
            np.add(work, addend, out=work, casting="unsafe")
    if work is not dst:
        np.copyto(dst, work, casting="unsafe")
    return o


def _addbmm_half(input: Tensor, a: Tensor, b: Tensor, beta, alpha, o: Tensor) -> Tensor:
    """Half-type addbmm as PyTorch runs it: one rounded ``addmm_`` per batch element."""
    c = compute_dtype(o._dtype)
    x, y = _in(a, c), _in(b, c)
    acc = np.zeros(o._shape, c) if beta == 0 else \
        np.multiply(_in(input, c), beta, dtype=c) * np.ones(o._shape, c)
    if x.shape[0] == 0:
        return _land(acc, o)
    for i in range(x.shape[0]):
        acc = (acc + alpha * np.matmul(x[i], y[i])).astype(o._dtype.np).astype(c)
    return _land(acc, o)


def _register_fused(name: str) -> None:
    op, op_ = getattr(la, name), la.FUSED_INPLACE[name]
    prod = FUSED_PRODUCTS[name]

    def compute(input, a, b, beta, alpha, o):
        if name == "addbmm" and o._dtype in (dt.float16, dt.bfloat16):
            return _addbmm_half(input, a, b, beta, alpha, o)
        return _fused_compute(prod, input, a, b, beta, alpha, o)

    def kernel(input, a, b, *, beta=1, alpha=1, out=None):
        spec = op.meta_rule(input, a, b)
        return compute(input, a, b, beta, alpha, _out(spec, out, name))

    def kernel_(self, a, b, *, beta=1, alpha=1):
        op_.meta_rule(self, a, b)
        self._ver.value += 1
        return compute(self, a, b, beta, alpha, self)

    op.register("CPU", kernel)
    op_.register("CPU", kernel_)


for _name in la.FUSED_SHAPES:
    _register_fused(_name)


@la.tensordot.impl("CPU")
def _tensordot(a, b, dims=2, out=None):
    spec = la.tensordot.meta_rule(a, b, dims)
    da, db = la.tensordot_dims(a, b, dims)
    ca = [d % a.ndim for d in da]
    cb = [d % b.ndim for d in db]
    c = compute_dtype(spec.dtype)
    x, y = _in(a, c), _in(b, c)
    # size-1 contracted dims broadcast against the other side (as in torch)
    sx, sy = list(x.shape), list(y.shape)
    for i, j in zip(ca, cb):
        sx[i] = sy[j] = max(sx[i], sy[j])
    x, y = np.broadcast_to(x, sx), np.broadcast_to(y, sy)
    return _land(np.tensordot(x, y, axes=(ca, cb)), _out(spec, out, "tensordot"))


@la.einsum.impl("CPU")
def _einsum(equation, *operands, path=None):
    spec = la.einsum.meta_rule(equation, *operands)
    ops = la.einsum_operands(operands)
    plan = la.einsum_plan(equation, tuple(t._shape for t in ops))
    c = compute_dtype(spec.dtype)
    arrays = [np.broadcast_to(_in(t, c), target) for t, target in zip(ops, plan.targets)]
    return _land(np.einsum(plan.equation, *arrays, optimize=len(arrays) > 1), _out(spec))


# -- failures ----------------------------------------------------------------------------------
def _batch_failure(name: str, a: np.ndarray, fails, message) -> la.LinAlgError:
    """LinAlgError naming the first failing matrix of the batch ``a`` (error path only)."""
    mats = a.reshape((-1,) + a.shape[-2:])
    for i, m in enumerate(mats):
        detail = fails(m)
        if detail is not None:
            where = f"(Batch element {i}): " if a.ndim > 2 else ""
            return la.LinAlgError(f"{name}: {where}{message.format(detail)}")
    return la.LinAlgError(f"{name}: {message.format('?')}")


def _zero_pivot(m: np.ndarray):
    """1-based index of the first exactly-zero pivot of LU with partial pivoting (as getrf)."""
    u = np.array(m, dtype=np.complex128 if np.iscomplexobj(m) else np.float64)
    n = u.shape[0]
    for k in range(n):
        p = k + int(np.argmax(np.abs(u[k:, k])))
        if u[p, k] == 0:
            return k + 1
        u[[k, p]] = u[[p, k]]
        u[k + 1:] -= np.outer(u[k + 1:, k] / u[k, k], u[k])
    return None


def _not_pd_order(m: np.ndarray):
    for k in range(1, m.shape[0] + 1):
        try:
            np.linalg.cholesky(m[:k, :k])
        except np.linalg.LinAlgError:
            return k
    return None


_SINGULAR_INV = ("The diagonal element {} is zero, the inversion could not be completed "
                 "because the input matrix is singular.")
_NOT_PD = ("The factorization could not be completed because the input is not "
           "positive-definite (the leading minor of order {} is not positive-definite).")


def _inv_array(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:
        raise _batch_failure("linalg.inv", a, _zero_pivot, _SINGULAR_INV) from None


# -- ember.linalg ------------------------------------------------------------------------------
@la.linalg_inv.impl("CPU")
def _linalg_inv(A, *, out=None):
    o = _out(la.linalg_inv.meta_rule(A), out, "linalg_inv")
    a = arr(A)
    return _land(_inv_array(a), o) if a.size else o


@la.linalg_det.impl("CPU")
def _linalg_det(A, *, out=None):
    o = _out(la.linalg_det.meta_rule(A), out, "linalg_det")
    return _land(np.linalg.det(_in(A, compute_dtype(A._dtype))), o) if o.numel() else o


@la.linalg_slogdet.impl("CPU")
def _linalg_slogdet(A, *, out=None):
    sign, logabs = _outs(la.linalg_slogdet.meta_rule(A), out)
    if sign.numel():
        s, v = np.linalg.slogdet(arr(A))
        _land(s, sign)
        _land(v, logabs)
    return la.SlogdetResult(sign, logabs)


@la.logdet.impl("CPU")
def _logdet(input):
    o = _out(la.logdet.meta_rule(input))
    if o.numel():
        s, v = np.linalg.slogdet(arr(input))
        if np.iscomplexobj(s):  # log(sign) + logabsdet; a zero determinant: -inf+nanj as torch
            with np.errstate(divide="ignore", invalid="ignore"):
                _land(np.where(s == 0, complex(-np.inf, np.nan), np.log(s) + v), o)
        else:
            _land(np.where(s < 0, np.nan, v), o)
    return o


@la.linalg_solve.impl("CPU")
def _linalg_solve(A, B, *, left=True, out=None):
    o = _out(la.linalg_solve.meta_rule(A, B, left=left), out, "linalg_solve")
    if not o.numel():
        return o
    vector = la.solve_is_vector(A, B)
    a, b = arr(A), arr(B)
    if vector:
        b = b[..., None]
    if not left:  # X A = B  <=>  A^T X^T = B^T
        a, b = np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)
    try:
        x = np.linalg.solve(a, b)
    except np.linalg.LinAlgError:
        raise _batch_failure("torch.linalg.solve", a, _zero_pivot,
                             "The solver failed because the input matrix is singular.") from None
    if not left:
        x = np.swapaxes(x, -1, -2)
    return _land(x[..., 0] if vector else x, o)


@la.linalg_cholesky.impl("CPU")
def _linalg_cholesky(A, *, upper=False, out=None):
    o = _out(la.linalg_cholesky.meta_rule(A, upper=upper), out, "linalg_cholesky")
    if not o.numel():
        return o
    # NumPy reads the lower triangle; the upper factor is the lower one of A^H, transposed
    # back (A^T and no conjugation for real A).
    a = arr(A)
    if upper:
        a = np.swapaxes(a, -1, -2)
        a = a.conj() if a.dtype.kind == "c" else a
    try:
        low = np.linalg.cholesky(a)
    except np.linalg.LinAlgError:
        raise _batch_failure("linalg.cholesky", a, _not_pd_order, _NOT_PD) from None
    if upper:
        low = np.swapaxes(low, -1, -2)
        low = low.conj() if low.dtype.kind == "c" else low
    return _land(low, o)


def _eye_into(o: Tensor) -> Tensor:
    """Fill ``o`` (``(*, m, n)``) with identity matrices."""
    dst = arr(o)
    if dst.size:
        dst[...] = module_of(dst).eye(dst.shape[-2], dst.shape[-1], dtype=dst.dtype)
    return o


@la.linalg_qr.impl("CPU")
def _linalg_qr(A, mode="reduced", *, out=None):
    q, r = _outs(la.linalg_qr.meta_rule(A, mode), out)
    a = arr(A)
    if a.size == 0:
        if mode != "r":
            _eye_into(q)
        arr(r)[...] = 0
    elif mode == "r":
        _land(np.linalg.qr(a, mode="r"), r)
    else:
        qa, ra = np.linalg.qr(a, mode=mode)
        _land(qa, q)
        _land(ra, r)
    return la.QRResult(q, r)


@la.linalg_svd.impl("CPU")
def _linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    u, s, vh = _outs(la.linalg_svd.meta_rule(A, full_matrices), out)
    a = arr(A)
    if a.size == 0:
        _eye_into(u)
        _eye_into(vh)
    else:
        ua, sa, va = np.linalg.svd(a, full_matrices=full_matrices)
        _land(ua, u)
        _land(sa, s)
        _land(va, vh)
    return la.SVDResult(u, s, vh)


@la.linalg_svdvals.impl("CPU")
def _linalg_svdvals(A, *, driver=None, out=None):
    o = _out(la.linalg_svdvals.meta_rule(A), out, "linalg_svdvals")
    return _land(np.linalg.svd(arr(A), compute_uv=False), o) if o.numel() else o


@la.linalg_eigh.impl("CPU")
def _linalg_eigh(A, UPLO="L", *, out=None):
    w, v = _outs(la.linalg_eigh.meta_rule(A, UPLO), out)
    if v.numel():
        wa, va = np.linalg.eigh(arr(A), UPLO=UPLO)
        _land(wa, w)
        _land(va, v)
    return la.EighResult(w, v)


@la.linalg_eigvalsh.impl("CPU")
def _linalg_eigvalsh(A, UPLO="L", *, out=None):
    o = _out(la.linalg_eigvalsh.meta_rule(A, UPLO), out, "linalg_eigvalsh")
    return _land(np.linalg.eigvalsh(arr(A), UPLO=UPLO), o) if o.numel() else o


@la.linalg_eig.impl("CPU")
def _linalg_eig(A, *, out=None):
    # geev is LAPACK-only: a device tensor is decomposed on the host (to_host/from_host)
    w, v = _outs(la.linalg_eig.meta_rule(A), out)
    if v.numel():
        a = to_host(A, arr(A))
        if not np.isfinite(a).all():
            raise RuntimeError("torch.linalg.eig: input tensor should not contain infs or NaNs.")
        wa, va = np.linalg.eig(a)
        _land(from_host(A, wa.astype(w._dtype.np)), w)
        _land(from_host(A, va.astype(v._dtype.np)), v)
    return la.EigResult(w, v)


@la.linalg_eigvals.impl("CPU")
def _linalg_eigvals(A, *, out=None):
    o = _out(la.linalg_eigvals.meta_rule(A), out, "linalg_eigvals")
    if not o.numel():
        return o
    a = to_host(A, arr(A))
    if not np.isfinite(a).all():  # torch does not check here: NaN where LAPACK would fail
        return _land(from_host(A, np.full(o.shape, np.nan, o._dtype.np)), o)
    return _land(from_host(A, np.linalg.eigvals(a).astype(o._dtype.np)), o)


def _tolerance(s: np.ndarray, shape: tuple, atol, rtol) -> np.ndarray:
    """``max(atol, rtol * s.max(-1))`` with PyTorch's defaults (see ``linalg_matrix_rank``)."""
    def value(x):
        return arr(x) if isinstance(x, Tensor) else x

    atol_v, rtol_v = value(atol), value(rtol)
    default = np.finfo(s.dtype).eps * max(shape[-2:])
    if rtol_v is None:
        rtol_v = default if atol_v is None else np.where(np.asarray(atol_v) > 0, 0.0, default)
    smax = s.max(axis=-1, initial=0.0)
    return np.maximum(0.0 if atol_v is None else atol_v, np.multiply(rtol_v, smax))


def _singular_values(a: np.ndarray, hermitian: bool) -> np.ndarray:
    if hermitian:
        return np.abs(np.linalg.eigvalsh(a))
    return np.linalg.svd(a, compute_uv=False)


@la.linalg_matrix_rank.impl("CPU")
def _linalg_matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    spec = la.linalg_matrix_rank.meta_rule(A, atol=atol, rtol=rtol, hermitian=hermitian,
                                           tol=tol)
    o = _out(spec, out, "linalg_matrix_rank")
    if tol is not None:
        atol, rtol = tol, 0.0
    a = arr(A)
    if not o.numel():
        return o
    if 0 in a.shape[-2:]:
        arr(o)[...] = 0
        return o
    s = _singular_values(a, hermitian)
    cut = _tolerance(s, a.shape, atol, rtol)
    return _land(np.count_nonzero(s > np.asarray(cut)[..., None], axis=-1), o)


@la.linalg_pinv.impl("CPU")
def _linalg_pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    spec = la.linalg_pinv.meta_rule(A, rcond, hermitian, atol=atol, rtol=rtol)
    o = _out(spec, out, "linalg_pinv")
    atol, rtol = la.pinv_tolerances(rcond, atol, rtol)
    a = arr(A)
    if a.size == 0:
        arr(o)[...] = 0
        return o
    with np.errstate(divide="ignore"):
        if hermitian:
            w, v = np.linalg.eigh(a)
            keep = np.abs(w) > np.asarray(_tolerance(np.abs(w), a.shape, atol, rtol))[..., None]
            inv = np.where(keep, 1 / w, 0).astype(a.dtype)
            # (*, n, n) * (*, 1, n) @ (*, n, n): V diag(1/w) V^H
            return _land(np.matmul(v * inv[..., None, :], np.swapaxes(v, -1, -2).conj()), o)
        u, s, vh = np.linalg.svd(a, full_matrices=False)
        keep = s > np.asarray(_tolerance(s, a.shape, atol, rtol))[..., None]
        inv = np.where(keep, 1 / s, 0).astype(a.dtype)
        # (*, n, k) * (*, 1, k) @ (*, k, m): Vh^H diag(1/S) U^H
        return _land(np.matmul(np.swapaxes(vh, -1, -2).conj() * inv[..., None, :],
                               np.swapaxes(u, -1, -2).conj()), o)


@la.linalg_matrix_power.impl("CPU")
def _linalg_matrix_power(A, n, *, out=None):
    o = _out(la.linalg_matrix_power.meta_rule(A, n), out, "linalg_matrix_power")
    if n == 0:
        return _eye_into(o)
    c = compute_dtype(A._dtype)
    a = _in(A, c)
    if n < 0:
        a, n = _inv_array(a) if a.size else a, -n
    rounded = c != A._dtype.np  # half types round every product, like torch's half matmul

    def mul(x, y):
        r = np.matmul(x, y)
        return r.astype(A._dtype.np).astype(c) if rounded else r

    z = result = None
    while n > 0:  # binary exponentiation in PyTorch's order
        bit, n = n % 2, n // 2
        z = a if z is None else mul(z, z)
        if bit:
            result = z if result is None else mul(result, z)
    return _land(result, o)
