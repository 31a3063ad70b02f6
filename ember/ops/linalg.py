"""Linear-algebra operators: products and the ``ember.linalg`` decompositions.

Products (``matmul`` and its ``dot``/``mv``/``mm``/``bmm`` paths, the ``add*`` fused forms,
``einsum``, ``tensordot``) keep their inputs' single dtype, like PyTorch's BLAS paths; ``outer``
and ``kron`` promote like ``mul``. Decompositions accept float32/float64 and complex64/complex128
(complex gradients by torch's conjugate convention), and reject other dtypes with the exception
type PyTorch raises (``RuntimeError`` for its explicit checks, ``NotImplementedError`` where
PyTorch reaches a kernel without that dtype). Each rule below
validates with PyTorch's messages and returns the output ``Spec``; CPU kernels live in
``ember/backends/cpu/linalg.py``. This file is long because each of ~30 operators needs its own
shape rule; the helpers at the top keep each rule short.
"""

from __future__ import annotations

import math
import string
from collections import namedtuple
from functools import lru_cache

from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes, canonical_dim, expand_geometry
from ember.ops._define import Spec, Tag, composite, derivative, operator
from ember.ops.pointwise import check_writable
from ember.tensor import Tensor

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "addmm", "addmv",
           "addbmm", "baddbmm", "einsum", "tensordot", "kron", "det", "logdet", "slogdet",
           "inverse", "matrix_power", "matrix_exp", "orgqr", "geqrf"]


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular, not positive-definite, ...).

    Subclasses ``RuntimeError`` like ``torch.linalg.LinAlgError``.

    Example:
        >>> try:
        ...     ember.linalg.inv(ember.zeros(2, 2))
        ... except ember.linalg.LinAlgError as e:
        ...     print(isinstance(e, RuntimeError))
        True
    """


# torch.return_types look-alikes
QRResult = namedtuple("linalg_qr", ["Q", "R"])
SVDResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
TorchSlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])

# -- shared checks -----------------------------------------------------------------------------
_TN = {d.name: d.scalar_name for d in dt.ALL_DTYPES}
_CN = {"float32": "float", "float64": "double", "float16": "c10::Half",
       "bfloat16": "c10::BFloat16", "int8": "signed char", "int16": "short int", "int32": "int",
       "int64": "long int", "uint8": "unsigned char", "bool": "bool",
       "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _tn(t: Tensor) -> str:
    return _TN[t._dtype.name]


def _mat(s: tuple) -> str:
    return "x".join(map(str, s))


def _not_implemented(kernel: str, t: Tensor) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{_tn(t)}\'')


def _need_tensor(op: str, name: str, pos: int, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def _no_bool(kernel: str, t: Tensor) -> None:
    if t._dtype is dt.bool_:
        raise _not_implemented(kernel, t)


def _no_bool_gemm(kernel: str, t: Tensor, shape: tuple, k: int) -> None:
    """GEMM paths refuse bool, except that an empty result or ``k == 0`` returns early."""
    if k and math.prod(shape):
        _no_bool(kernel, t)


def _same_mm_dtype(a: Tensor, b: Tensor) -> None:
    if a._dtype is not b._dtype:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: "
                           f"{_CN[a._dtype.name]} != {_CN[b._dtype.name]}")


def _expand_to(t: Tensor, target: tuple) -> None:
    """PyTorch's ``expand`` error when ``t`` cannot broadcast to ``target``."""
    expand_geometry(t._shape, t._stride, target)


def _mm_shape(a: tuple, b: tuple) -> tuple:
    if a[1] != b[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({_mat(a)} and {_mat(b)})")
    return (a[0], b[1])


def _dot_check(name: str, a: Tensor, b: Tensor) -> None:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    if a._dtype is not b._dtype:
        raise RuntimeError(f"{name} : expected both vectors to have same dtype, but found "
                           f"{_tn(a)} and {_tn(b)}")
    if a._shape[0] != b._shape[0]:
        n, m = a._shape[0], b._shape[0]
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to "
                           f"have the same number of elements, but got {n} and {m} elements "
                           "respectively")
    _no_bool("dot", a)


def _mv_check(inp_size: int, mat: tuple, vec: tuple) -> None:
    if mat[1] != vec[0]:
        raise RuntimeError(f"size mismatch, got input ({inp_size}), mat ({_mat(mat)}), "
                           f"vec ({vec[0]})")


def _bmm_check(b1: tuple, b2: tuple) -> None:
    if b2[0] != b1[0] or b2[1] != b1[2]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1[0]}, {b1[2]}] but got: [{b2[0]}, {b2[1]}].")


def _matmul_shape(a: Tensor, b: Tensor) -> tuple[tuple, str]:
    """Result shape of ``matmul`` and the torch kernel its path reaches (for dtype errors)."""
    da, db, sa, sb = a.ndim, b.ndim, a._shape, b._shape
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are "
                           f"{da}D and {db}D")
    if da == 1 and db == 1:
        _dot_check("dot", a, b)
        return (), "dot"
    _same_mm_dtype(a, b)
    if db == 1 and da >= 2:  # (*, m, k) @ (k,): folded into one matrix-vector product
        rows = math.prod(sa[:-1])
        _mv_check(rows, (rows, sa[-1]), sb)
        return sa[:-1], "addmv_impl_cpu"
    if db == 2 and da >= 2:  # (*, m, k) @ (k, p): folded into one matrix product
        rows = math.prod(sa[:-1])
        _mm_shape((rows, sa[-1]), sb)
        return sa[:-1] + sb[1:], "addmm_impl_cpu_"
    if da == 1 and db == 2:
        return _mm_shape((1,) + sa, sb)[1:], "addmm_impl_cpu_"
    a2 = sa if da >= 2 else (1,) + sa
    batch = broadcast_shapes(a2[:-2], sb[:-2])
    nb = math.prod(batch)
    _bmm_check((nb,) + a2[-2:], (nb,) + sb[-2:])
    return batch + a2[-2:-1] * (da >= 2) + sb[-1:], "bmm"


def _matrix_dims(name: str, A: Tensor) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")


def _square(name: str, A: Tensor) -> None:
    _matrix_dims(name, A)
    if A._shape[-1] != A._shape[-2]:
        raise RuntimeError(f"{name}: A must be batches of square matrices, but they are "
                           f"{A._shape[-2]} by {A._shape[-1]} matrices")


def _floating(name: str, A: Tensor, half: str | None = None, empty_too: bool = False,
              complex_ok: bool = False) -> None:
    """float32/float64 (and complex64/complex128 when ``complex_ok``); ``half``: torch's kernel
    name for a NotImplementedError on halfs (None: torch's explicit 'Low precision'
    RuntimeError). That kernel is reached only for non-empty inputs unless ``empty_too``."""
    d = A._dtype
    if d.is_complex:
        if complex_ok:
            return
        raise NotImplementedError(f"{name}: complex inputs are not supported by ember yet "
                                  "(torch supports them)")
    if not d.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_tn(A)}")
    if d is dt.float16 or d is dt.bfloat16:
        if half is None:
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {_tn(A)}")
        if empty_too or A.numel():
            raise _not_implemented(half, A)


_EIGH_DTYPES = (dt.float32, dt.float64, dt.complex64, dt.complex128)


def _eigh_dtype(A: Tensor) -> None:
    if A._dtype not in _EIGH_DTYPES and A.numel():
        raise _not_implemented("linalg_eigh_cpu", A)


# -- derivative helpers ------------------------------------------------------------------------
# NOTE [Linalg derivatives]
# Rules are written with ember ops only, so ``create_graph=True`` differentiates them again.
# Multi-output decompositions save ``A`` and recompute the (deterministic) factorisation in
# backward: a rule can save only the first output as "result", and the factors are needed.
def _lib():
    """Sibling operator families, imported on first use (they import this module's names)."""
    from ember.ops import creation, pointwise, shape

    return _Families(creation, pointwise, shape)


class _Families:
    """Attribute lookup across the creation, pointwise and shape families."""

    def __init__(self, *modules):
        self._modules = modules

    def __getattr__(self, name):
        for m in self._modules:
            if hasattr(m, name):
                return getattr(m, name)
        raise AttributeError(name)


def _scale(g: Tensor, s) -> Tensor:
    """``g * s``, skipping the multiply for ``s == 1`` (``beta``/``alpha`` of the add* ops)."""
    return g if s == 1 else g * s


def _fit(g: Tensor, shape: tuple) -> Tensor:
    """Sum (or expand) ``g``'s dims to ``shape`` of the same rank (size-1 broadcasting)."""
    dims = tuple(d for d, (n, s) in enumerate(zip(g.shape, shape)) if s == 1 and n != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
    return g if tuple(g.shape) == tuple(shape) else g.expand(shape)


def _eye_mask(n: int, device) -> Tensor:
    return _lib().eye(n, dtype=dt.bool_, device=device)


def _unit_diag(E: Tensor) -> Tensor:
    """``E`` with ones on the diagonal (the divisor of the decompositions' off-diagonal terms)."""
    return _lib().where(_eye_mask(E.shape[-1], E.device), 1.0, E)


def _mT_solve(A: Tensor, B: Tensor, left: bool = True) -> Tensor:
    """``A^{-H} B`` (``left``) or ``B A^{-H}`` (``A^{-T}`` for real ``A``)."""
    return linalg_solve(A.mH, B, left=left)


# -- products ----------------------------------------------------------------------------------
@operator("matmul(Tensor self, Tensor other, *, Tensor(a!)? out=None) -> Tensor")
def matmul(input, other, *, out=None):
    """Matrix product with broadcasting, as ``torch.matmul``.

    1-d @ 1-d is a dot product (0-d result); 2-d @ 1-d a matrix-vector product; a 1-d
    argument takes part as a row (left) or column (right) vector whose dimension is removed
    from the result; otherwise batch dimensions broadcast.

    Raises:
        RuntimeError: a 0-d argument, mismatched inner sizes or dtypes.
        NotImplementedError: bool tensors.

    Shape: ``(*, n, m) @ (*, m, p) -> (*, n, p)``.

    Example:
        >>> import ember
        >>> ember.matmul(ember.ones(2, 3), ember.ones(3)).tolist()
        [3.0, 3.0]
    """
    _need_tensor("matmul", "input", 1, input)
    _need_tensor("matmul", "other", 2, other)
    shape, kernel = _matmul_shape(input, other)
    _no_bool_gemm(kernel, input, shape, input._shape[-1] if kernel != "dot" else 1)
    return Spec(shape, input._dtype)


# NOTE [mm gradient layout]
# The gradient of an mm operand is computed in that operand's layout when the operand is a
# transposed contiguous matrix (column-major: strides ``(1, rows)``), as torch does:
# ``(mat2 @ grad^T)^T`` rather than ``grad @ mat2^T``. The usual such operand is
# ``weight.t()`` of a ``Linear``; its gradient then comes out of ``t``'s backward contiguous,
# with the weight's own layout, and the engine adopts it as ``weight.grad`` without a copy
# (NOTE [Stealing gradients] in ember/autograd/engine.py).
def _column_major(shape: tuple, stride: tuple) -> bool:
    return stride[0] == 1 and stride[1] == shape[0]


def _cj(t: Tensor) -> Tensor:
    """The conjugate of a complex tensor, else ``t`` (NOTE [Complex gradients])."""
    return t.conj() if t._dtype.is_complex else t


def mm_mat1_grad(grad: Tensor, mat2: Tensor, shape: tuple, stride: tuple) -> Tensor:
    """``grad @ mat2^T``, laid out like ``mat1`` (``shape``/``stride``) when that is
    column-major (NOTE [mm gradient layout])."""
    if _column_major(shape, stride):
        return mm(mat2, grad.mT).mT
    return mm(grad, mat2.mT)


def mm_mat2_grad(grad: Tensor, mat1: Tensor, shape: tuple, stride: tuple) -> Tensor:
    """``mat1^T @ grad``, laid out like ``mat2`` (``shape``/``stride``) when that is
    column-major (NOTE [mm gradient layout])."""
    if _column_major(shape, stride):
        return mm(grad.mT, mat1).mT
    return mm(mat1.mT, grad)


@derivative(matmul, save={"input": "other", "other": "input"}, strides=("input", "other"))
def _matmul_backward(ctx, grad):
    need_a, need_b = ctx.needs_input_grad
    a_shape, b_shape = ctx.shape_of("input"), ctx.shape_of("other")
    # each operand is saved only for the other's gradient; conjugated for complex operands
    # (NOTE [Complex gradients] in ember/ops/pointwise.py: the rules are linear in them)
    a = _cj(ctx.input) if need_b else None
    b = _cj(ctx.other) if need_a else None
    if len(a_shape) == 1 and len(b_shape) == 1:
        return grad * b if need_a else None, grad * a if need_b else None
    # Promote 1-d operands to matrices (a row on the left, a column on the right) and put
    # their removed dim back into grad; batch dims that broadcast are summed by the engine.
    a2 = None if a is None else a.unsqueeze(0) if a.ndim == 1 else a
    b2 = None if b is None else b.unsqueeze(-1) if b.ndim == 1 else b
    g = grad.unsqueeze(-2) if len(a_shape) == 1 else grad
    g = g.unsqueeze(-1) if len(b_shape) == 1 else g
    a2_shape = (1, *a_shape) if len(a_shape) == 1 else a_shape
    b2_shape = (*b_shape, 1) if len(b_shape) == 1 else b_shape
    (m, k), p = a2_shape[-2:], b2_shape[-1]
    ga = gb = None
    if len(a2_shape) == 2 and len(b2_shape) == 2:
        if need_a:
            ga = mm_mat1_grad(g, b2, a2_shape, ctx.stride_of("input")) if len(a_shape) == 2 \
                else mm(g, b2.mT)
        if need_b:
            gb = mm_mat2_grad(g, a2, b2_shape, ctx.stride_of("other")) if len(b_shape) == 2 \
                else mm(a2.mT, g)
    elif len(b2_shape) == 2:  # (*, m, k) @ (k, p): b's gradient folds the batch into the rows
        ga = matmul(g, b2.mT) if need_a else None
        if need_b:
            rows = a2.reshape(math.prod(a2_shape[:-1]), k)  # sizes, not numel // k: k may be 0
            g2 = g.reshape(math.prod(g.shape[:-1]), p)
            gb = mm_mat2_grad(g2, rows, b2_shape, ctx.stride_of("other")) \
                if len(b_shape) == 2 else mm(rows.mT, g2)
    elif len(a2_shape) == 2:  # (m, k) @ (*, k, p): a's gradient folds the batch into the columns
        if need_a:
            rest_b = math.prod(b2_shape[:-2]) * p
            rows = b2.movedim(-2, 0).reshape(k, rest_b)
            ga = mm(g.movedim(-2, 0).reshape(m, rest_b), rows.mT)
        gb = matmul(a2.mT, g) if need_b else None
    else:
        ga = matmul(g, b2.mT) if need_a else None
        gb = matmul(a2.mT, g) if need_b else None
    if ga is not None and len(a_shape) == 1:
        ga = ga.squeeze(-2)
    if gb is not None and len(b_shape) == 1:
        gb = gb.squeeze(-1)
    return ga, gb


@composite("_rmatmul(Tensor self, Tensor other) -> Tensor")
def _rmatmul(self, other):
    """``other @ self`` (the reflected ``__rmatmul__``)."""
    return matmul(other, self)


@operator("mm(Tensor self, Tensor mat2, *, Tensor(a!)? out=None) -> Tensor")
def mm(input, mat2, *, out=None):
    """Matrix product of two 2-d tensors, ``(n, m) @ (m, p) -> (n, p)`` (``torch.mm``).

    Example:
        >>> ember.mm(ember.tensor([[1.0, 2.0]]), ember.tensor([[3.0], [4.0]]))
        tensor([[11.]])
    """
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _same_mm_dtype(input, mat2)
    shape = _mm_shape(input._shape, mat2._shape)
    _no_bool_gemm("addmm_impl_cpu_", input, shape, input._shape[1])
    return Spec(shape, input._dtype)


@derivative(mm, save={"input": "mat2", "mat2": "input"}, strides=("input", "mat2"))
def _mm_backward(ctx, grad):
    need_a, need_b = ctx.needs_input_grad
    return (mm_mat1_grad(grad, _cj(ctx.mat2), ctx.shape_of("input"), ctx.stride_of("input"))
            if need_a else None,
            mm_mat2_grad(grad, _cj(ctx.input), ctx.shape_of("mat2"), ctx.stride_of("mat2"))
            if need_b else None)


def _bmm_shape(b1: Tensor, b2: Tensor) -> tuple:
    if b1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    _bmm_check(b1._shape, b2._shape)
    if b1._dtype is not b2._dtype:
        raise RuntimeError(f"expected scalar type {_tn(b1)} but found {_tn(b2)}")
    return b1._shape[:2] + b2._shape[2:]


@operator("bmm(Tensor self, Tensor mat2, *, Tensor(a!)? out=None) -> Tensor")
def bmm(input, mat2, *, out=None):
    """Batched matrix product, ``(b, n, m) @ (b, m, p) -> (b, n, p)`` (``torch.bmm``).

    Example:
        >>> ember.bmm(ember.ones(4, 2, 3), ember.ones(4, 3, 5)).shape
        ember.Size([4, 2, 5])
    """
    shape = _bmm_shape(input, mat2)
    _no_bool_gemm("bmm", input, shape, input._shape[2])
    return Spec(shape, input._dtype)


@derivative(bmm, save={"input": "mat2", "mat2": "input"})
def _bmm_backward(ctx, grad):
    need_a, need_b = ctx.needs_input_grad
    return (bmm(grad, _cj(ctx.mat2).mT) if need_a else None,
            bmm(_cj(ctx.input).mT, grad) if need_b else None)


def _mv_shape(inp: Tensor | None, mat: Tensor, vec: Tensor) -> tuple:
    self_dim = inp.ndim if inp is not None else 1
    if mat.ndim != 2 or vec.ndim != 1 or self_dim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {self_dim}, {mat.ndim}, "
                           f"{vec.ndim}")
    n = mat._shape[0]
    size = n if inp is None else inp.numel()
    if mat._shape[1] != vec._shape[0] or not (size == n or size == 1):
        _mv_check(size if inp is None or inp.ndim == 0 else inp._shape[0], mat._shape,
                  (-1,))
    d = (inp if inp is not None else vec)._dtype
    if not (d is mat._dtype is vec._dtype):
        names = ", ".join(_tn(t) for t in (inp if inp is not None else vec, mat))
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names}, "
                           f"and {_tn(vec)}")
    if inp is None:
        _no_bool_gemm("addmv_impl_cpu", mat, (n,), mat._shape[1])
    else:
        _fused_dtype(inp, mat, "addmv_impl_cpu", mat._shape[1])
    return (n,)


@operator("mv(Tensor self, Tensor vec, *, Tensor(a!)? out=None) -> Tensor")
def mv(input, vec, *, out=None):
    """Matrix-vector product, ``(n, m) @ (m,) -> (n,)`` (``torch.mv``).

    Example:
        >>> ember.mv(ember.tensor([[1.0, 2.0], [3.0, 4.0]]), ember.tensor([1.0, -1.0]))
        tensor([-1., -1.])
    """
    if input.ndim == 0:  # torch reads input.size(0) first
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    return Spec(_mv_shape(None, input, vec), input._dtype)


@derivative(mv, save={"input": "vec", "vec": "input"})
def _mv_backward(ctx, grad):
    need_a, need_v = ctx.needs_input_grad
    return (outer(grad, _cj(ctx.vec)) if need_a else None,
            mv(_cj(ctx.input).mT, grad) if need_v else None)


@operator("dot(Tensor self, Tensor tensor, *, Tensor(a!)? out=None) -> Tensor")
def dot(input, tensor, *, out=None):
    """Inner product of two 1-d tensors of equal length; a 0-d result (``torch.dot``).

    Example:
        >>> ember.dot(ember.tensor([1, 2, 3]), ember.tensor([4, 5, 6]))
        tensor(32)
    """
    _dot_check("dot", input, tensor)
    return Spec((), input._dtype)


@derivative(dot, save={"input": "tensor", "tensor": "input"})
def _dot_backward(ctx, grad):
    need_a, need_b = ctx.needs_input_grad
    return (grad * _cj(ctx.tensor) if need_a else None,
            grad * _cj(ctx.input) if need_b else None)


@operator("vdot(Tensor self, Tensor other, *, Tensor(a!)? out=None) -> Tensor")
def vdot(input, other, *, out=None):
    """Inner product conjugating ``input`` (the same as :func:`dot` for real tensors).

    Example:
        >>> ember.vdot(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
        tensor(11.)
    """
    _dot_check("dot", input, other)
    return Spec((), input._dtype)


@derivative(vdot, save={"input": "other", "other": "input"})
def _vdot_backward(ctx, grad):
    need_a, need_b = ctx.needs_input_grad
    # torch: d/dself = conj(grad) * other, d/dother = grad * self
    return (_cj(grad) * ctx.other if need_a else None, grad * ctx.input if need_b else None)


@operator("outer(Tensor self, Tensor vec2, *, Tensor(a!)? out=None) -> Tensor")
def outer(input, vec2, *, out=None):
    """Outer product ``input[i] * vec2[j]``, promoting dtypes like ``mul`` (``torch.outer``).

    Shape: ``(n,), (m,) -> (n, m)``.

    Example:
        >>> ember.outer(ember.tensor([1, 2]), ember.tensor([1, 10, 100]))
        tensor([[  1,  10, 100],
                [  2,  20, 200]])
    """
    for t, name in ((input, "self"), (vec2, "vec2")):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return Spec(input._shape + vec2._shape, dt.promote_types(input._dtype, vec2._dtype))


@derivative(outer, save={"input": "vec2", "vec2": "input"})
def _outer_backward(ctx, grad):
    need_a, need_b = ctx.needs_input_grad  # operands may have other dtypes than grad
    return (mv(grad, _cj(ctx.vec2).to(grad.dtype)) if need_a else None,
            mv(grad.mT, _cj(ctx.input).to(grad.dtype)) if need_b else None)


@composite("ger(Tensor self, Tensor vec2) -> Tensor")
def ger(input, vec2):
    """Alias of :func:`outer`.

    Example:
        >>> ember.ger(ember.tensor([1, 2]), ember.tensor([3, 4])).shape
        ember.Size([2, 2])
    """
    return outer(input, vec2)


def _fused_dtype(inp: Tensor, mat: Tensor, kernel: str, k: int,
                 what: str = "self and mat2") -> None:
    if inp._dtype is not mat._dtype:
        raise RuntimeError(f"{what} must have the same dtype, but got {_tn(inp)} and "
                           f"{_tn(mat)}")
    if mat._dtype is dt.bool_ and k == 0:  # torch then scales input by beta as a Long
        raise RuntimeError("result type Long can't be cast to the desired output type Bool")
    _no_bool(kernel, mat)


def _addmm_shape(input, mat1, mat2) -> tuple:
    for t, name in ((mat1, "mat1"), (mat2, "mat2")):
        if t.ndim != 2:
            raise RuntimeError(f"{name} must be a matrix, got {t.ndim}-D tensor")
    if mat1._dtype is not mat2._dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got {_tn(mat1)} and "
                           f"{_tn(mat2)}")
    shape = _mm_shape(mat1._shape, mat2._shape)
    _expand_to(input, shape)
    _fused_dtype(input, mat2, "addmm_impl_cpu_", mat1._shape[1])
    return shape


def _addbmm_shape(input, b1, b2) -> tuple:
    for t, name in ((b1, "batch1"), (b2, "batch2")):
        if t.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if b1._shape[0] != b2._shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{b1._shape[0]} and {b2._shape[0]}")
    if b1._shape[2] != b2._shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({_mat(b1._shape[1:])} and "
                           f"{_mat(b2._shape[1:])})")
    shape = (b1._shape[1], b2._shape[2])
    _expand_to(input, shape)
    _fused_dtype(input, b1, "addbmm_impl_cpu_", b1._shape[2], "self and batch1")
    return shape


def _baddbmm_shape(input, b1, b2) -> tuple:
    shape = _bmm_shape(b1, b2)
    _expand_to(input, shape)
    _fused_dtype(input, b1, "baddbmm_cpu", b1._shape[2], "self and batch1")
    return shape


FUSED_SHAPES = {"addmm": _addmm_shape, "addmv": lambda i, m, v: _mv_shape(i, m, v),
                "addbmm": _addbmm_shape, "baddbmm": _baddbmm_shape}
_FUSED_DOCS = {
    "addmm": ("mat1, Tensor mat2", "``beta * input + alpha * (mat1 @ mat2)``; "
              "``(n, m) @ (m, p)``, ``input`` broadcastable to ``(n, p)``."),
    "addmv": ("mat, Tensor vec", "``beta * input + alpha * (mat @ vec)``; "
              "``(n, m) @ (m,)``, ``input`` broadcastable to ``(n,)``."),
    "addbmm": ("batch1, Tensor batch2", "``beta * input + alpha * sum_b(batch1[b] @ batch2[b])``;"
               " ``(b, n, m) @ (b, m, p)``, ``input`` broadcastable to ``(n, p)``."),
    "baddbmm": ("batch1, Tensor batch2", "``beta * input + alpha * (batch1 @ batch2)``; "
                "``(b, n, m) @ (b, m, p)``, ``input`` broadcastable to ``(b, n, p)``."),
}
# Their docstring examples: (call, printed result).
_FUSED_EXAMPLES = {
    "addmm": ("ember.addmm(ember.ones(2, 2), ember.ones(2, 3), ember.ones(3, 2), beta=0.5)",
              "tensor([[3.5000, 3.5000],\n        [3.5000, 3.5000]])"),
    "addmv": ("ember.addmv(ember.tensor([1.0, 2.0]), ember.ones(2, 3), ember.ones(3), alpha=2)",
              "tensor([7., 8.])"),
    "addbmm": ("ember.addbmm(ember.zeros(2, 2), ember.ones(4, 2, 3), ember.ones(4, 3, 2))",
               "tensor([[12., 12.],\n        [12., 12.]])"),
    "baddbmm": ("ember.baddbmm(ember.zeros(4, 2, 2), ember.ones(4, 2, 3), ember.ones(4, 3, 2))"
                ".shape", "ember.Size([4, 2, 2])"),
}
# functional name -> in-place operator (filled below)
FUSED_INPLACE: dict[str, object] = {}


def _declare_fused(name: str):
    args, doc = _FUSED_DOCS[name]
    shape_of = FUSED_SHAPES[name]

    def rule(input, a, b, *, beta=1, alpha=1, out=None):
        return Spec(shape_of(input, a, b), input._dtype)

    def rule_(self, a, b, *, beta=1, alpha=1):
        shape = shape_of(self, a, b)
        if shape != self._shape:
            raise RuntimeError(f"Bad in-place call: input tensor size {list(self._shape)} and "
                               f"output tensor size {list(shape)} should match")
        check_writable(self)
        return Spec(shape, self._dtype)

    rule.__doc__ = (f"{doc}\n\nWith ``beta=0`` ``input`` is ignored (NaN in it does not "
                    "propagate); integer tensors truncate ``beta``/``alpha`` to integers, as "
                    f"``torch.{name}``.")
    call, result = _FUSED_EXAMPLES[name]
    rule.__doc__ += ("\n\nExample:\n    >>> " + call + "\n    "
                     + result.replace("\n", "\n    ") + "\n")
    rule_.__doc__ = f"In-place :func:`{name}`."
    tail = "Scalar beta=1, Scalar alpha=1"
    op = operator(f"{name}(Tensor self, Tensor {args}, *, {tail}, Tensor(a!)? out=None) "
                  "-> Tensor")(rule)
    op_ = operator(f"{name}_(Tensor(a!) self, Tensor {args}, *, {tail}) -> Tensor(a!)",
                   (Tag.inplace,))(rule_)
    FUSED_INPLACE[name] = op_
    return op


addmm = _declare_fused("addmm")
addmv = _declare_fused("addmv")
addbmm = _declare_fused("addbmm")
baddbmm = _declare_fused("baddbmm")


def _fused_input_grad(ctx, grad):
    return _scale(grad, ctx.beta) if ctx.needs_input_grad[0] else None


def _addmm_backward(ctx, grad):
    _, need_a, need_b = ctx.needs_input_grad
    return (_fused_input_grad(ctx, grad),
            _scale(mm_mat1_grad(grad, _cj(ctx.b), ctx.shape_of("a"), ctx.stride_of("a")),
                   ctx.alpha) if need_a else None,
            _scale(mm_mat2_grad(grad, _cj(ctx.a), ctx.shape_of("b"), ctx.stride_of("b")),
                   ctx.alpha) if need_b else None)


def _addmv_backward(ctx, grad):
    _, need_a, need_b = ctx.needs_input_grad
    return (_fused_input_grad(ctx, grad),
            _scale(outer(grad, _cj(ctx.b)), ctx.alpha) if need_a else None,
            _scale(mv(_cj(ctx.a).mT, grad), ctx.alpha) if need_b else None)


def _addbmm_backward(ctx, grad):
    _, need_a, need_b = ctx.needs_input_grad
    return (_fused_input_grad(ctx, grad),
            _scale(matmul(grad.unsqueeze(0), _cj(ctx.b).mT), ctx.alpha) if need_a else None,
            _scale(matmul(_cj(ctx.a).mT, grad), ctx.alpha) if need_b else None)


def _baddbmm_backward(ctx, grad):
    _, need_a, need_b = ctx.needs_input_grad
    return (_fused_input_grad(ctx, grad),
            _scale(bmm(grad, _cj(ctx.b).mT), ctx.alpha) if need_a else None,
            _scale(bmm(_cj(ctx.a).mT, grad), ctx.alpha) if need_b else None)


# The in-place forms share the rule: it reads only the two factors, never ``self``.
for _op, _rule in ((addmm, _addmm_backward), (addmv, _addmv_backward),
                   (addbmm, _addbmm_backward), (baddbmm, _baddbmm_backward)):
    # each factor is saved only for the other's gradient (torch's saves)
    _strides = ("a", "b") if _op is addmm else ()
    derivative(_op, save={"a": "b", "b": "a"}, strides=_strides)(_rule)
    derivative(FUSED_INPLACE[_op.name], save={"a": "b", "b": "a"}, strides=_strides)(_rule)


@operator("kron(Tensor self, Tensor other, *, Tensor(a!)? out=None) -> Tensor")
def kron(input, other, *, out=None):
    """Kronecker product; the shorter shape is left-padded with ones (``torch.kron``).

    Shape: ``(a0, a1, ...), (b0, b1, ...) -> (a0*b0, a1*b1, ...)``.

    Example:
        >>> ember.kron(ember.tensor([[1, 2]]), ember.tensor([[1], [10]]))
        tensor([[ 1,  2],
                [10, 20]])
    """
    n = max(input.ndim, other.ndim)
    sa = (1,) * (n - input.ndim) + input._shape
    sb = (1,) * (n - other.ndim) + other._shape
    return Spec(tuple(x * y for x, y in zip(sa, sb)),
                dt.promote_types(input._dtype, other._dtype))


@derivative(kron, save=("input", "other"))
def _kron_backward(ctx, grad):
    # Viewed as (a0, b0, a1, b1, ...), kron's result is an outer product of the padded inputs.
    a, b = ctx.input, ctx.other
    n = grad.ndim
    sa = (1,) * (n - a.ndim) + tuple(a.shape)
    sb = (1,) * (n - b.ndim) + tuple(b.shape)
    g = grad.reshape(tuple(x for pair in zip(sa, sb) for x in pair))
    la, lb = string.ascii_letters[:n], string.ascii_letters[n:2 * n]
    gl = "".join(x + y for x, y in zip(la, lb))
    need_a, need_b = ctx.needs_input_grad
    # the other factor conjugated (complex gradients by torch's convention)
    a, b = (t.conj_physical() if t.is_complex() else t for t in (a, b))
    ga = einsum(f"{gl},{lb}->{la}", g, b.to(grad.dtype).reshape(sb)) if need_a else None
    gb = einsum(f"{gl},{la}->{lb}", g, a.to(grad.dtype).reshape(sa)) if need_b else None
    return (None if ga is None else ga.reshape(a.shape),
            None if gb is None else gb.reshape(b.shape))


# -- tensordot ---------------------------------------------------------------------------------
def tensordot_dims(a: Tensor, b: Tensor, dims) -> tuple[list, list]:
    """The contracted dims of ``a`` and ``b`` (``dims``: an int or a pair of sequences)."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return list(range(-dims, 0)), list(range(dims))
    da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(da) != len(db):
        raise RuntimeError("both dimension lists should have same length")
    return da, db


@operator("tensordot(Tensor self, Tensor other, Any dims=2, *, Tensor(a!)? out=None) -> Tensor")
def tensordot(a, b, dims=2, out=None):
    """Sum of products over the dims ``dims`` of ``a`` and ``b`` (``torch.tensordot``).

    ``dims=k`` contracts the last ``k`` dims of ``a`` with the first ``k`` of ``b``; a pair
    ``([da...], [db...])`` names them. Contracted sizes must match (or be 1).

    Shape: the free dims of ``a`` followed by the free dims of ``b``.

    Example:
        >>> ember.tensordot(ember.ones(2, 3, 4), ember.ones(3, 4, 5)).shape
        ember.Size([2, 5])
        >>> ember.tensordot(ember.ones(2, 3), ember.ones(3, 2), dims=([1], [0]))
        tensor([[3., 3.],
                [3., 3.]])
    """
    da, db = tensordot_dims(a, b, dims)
    ca = [canonical_dim(d, a.ndim) for d in da]
    cb = [canonical_dim(d, b.ndim) for d in db]
    for x, y, i, j in zip(ca, cb, da, db):
        sx, sy = a._shape[x], b._shape[y]
        if sx != sy and sx != 1 and sy != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sx} "
                               f"in dim {i} and second has size {sy} in dim {j}")
    if a._dtype is not b._dtype:
        raise RuntimeError("both inputs should have same dtype")
    shape = tuple(s for i, s in enumerate(a._shape) if i not in ca) + \
        tuple(s for i, s in enumerate(b._shape) if i not in cb)
    k = math.prod(max(a._shape[x], b._shape[y]) for x, y in zip(ca, cb))
    _no_bool_gemm("addmm_impl_cpu_", a, shape, k)
    return Spec(shape, a._dtype)


@derivative(tensordot, save=("a", "b", "dims"))  # dims may be a (non-differentiable) tensor
def _tensordot_backward(ctx, grad):
    # As einsum: contracted pairs share a label, the free labels of a then b form the result.
    a, b = ctx.a, ctx.b
    da, db = tensordot_dims(a, b, ctx.dims)
    ca = [canonical_dim(d, a.ndim) for d in da]
    cb = [canonical_dim(d, b.ndim) for d in db]
    letters = iter(string.ascii_letters)
    ta, tb = [next(letters) for _ in range(a.ndim)], [""] * b.ndim
    for x, y in zip(ca, cb):
        tb[y] = ta[x]
    tb = [c or next(letters) for c in tb]
    out = "".join(c for i, c in enumerate(ta) if i not in ca) + \
        "".join(c for i, c in enumerate(tb) if i not in cb)
    grads = einsum_grads(f"{''.join(ta)},{''.join(tb)}->{out}", grad, [a, b],
                         ctx.needs_input_grad)
    return (*grads, None) if isinstance(ctx.dims, Tensor) else tuple(grads)


# -- einsum ------------------------------------------------------------------------------------
class EinsumPlan:
    """A parsed einsum call: an explicit NumPy equation, broadcast targets, result shape."""

    __slots__ = ("equation", "targets", "shape", "sums_alone", "contracts")

    def __init__(self, equation, targets, shape, sums_alone, contracts):
        self.equation, self.targets, self.shape = equation, targets, shape
        self.sums_alone, self.contracts = sums_alone, contracts


def _einsum_terms(lhs: str) -> list[list[str]]:
    """Labels of each operand's term; ``...`` becomes the single item ``'.'``."""
    terms, pos = [], 0
    for term in lhs.split(","):
        labels, i = [], 0
        while i < len(term):
            c = term[i]
            if c == ".":
                if "." in labels:
                    raise RuntimeError(f"einsum(): found '.' for operand {len(terms)} for "
                                       "which an ellipsis was already found")
                if term[i:i + 3] != "...":
                    raise RuntimeError(f"einsum(): found '.' for operand {len(terms)} that is "
                                       "not part of any ellipsis")
                labels.append(".")
                i += 3
                continue
            if c not in string.ascii_letters:
                raise RuntimeError(f"einsum(): invalid subscript given at index {pos + i} in "
                                   "the equation string, subscripts must be in [a-zA-Z]")
            labels.append(c)
            i += 1
        terms.append(labels)
        pos += len(term) + 1
    return terms


def _label_sizes(terms, shapes) -> tuple[dict, list]:
    sizes: dict[str, int] = {}
    ells = []
    for k, (labels, shape) in enumerate(zip(terms, shapes)):
        nlab = len(labels) - ("." in labels)
        if "." in labels:
            if nlab > len(shape):
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlab})"
                                   f" is more than the number of dimensions ({len(shape)}) for "
                                   f"operand {k}")
        elif nlab != len(shape):
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({nlab}) "
                               f"does not match the number of dimensions ({len(shape)}) for "
                               f"operand {k} and no ellipsis was given")
        nell = len(shape) - nlab
        dims, seen, j = [], {}, 0
        for lab in labels:
            if lab == ".":
                ells.append(shape[j:j + nell])
                j += nell
                continue
            size = shape[j]
            j += 1
            if lab in seen and seen[lab] != size:
                raise RuntimeError(f"einsum(): subscript {lab} is repeated for operand {k} but "
                                   f"the sizes don't match, {size} != {seen[lab]}")
            seen[lab] = size
            prev = sizes.get(lab)
            if prev is None or prev == 1:
                sizes[lab] = size
            elif size != 1 and size != prev:
                raise RuntimeError(f"einsum(): subscript {lab} has size {size} for operand {k} "
                                   f"which does not broadcast with previously seen size {prev}")
            dims.append(lab)
        if "." not in labels:
            ells.append(())
    return sizes, ells


@lru_cache(maxsize=256)
def einsum_plan(equation: str, shapes: tuple) -> EinsumPlan:
    """Parse ``equation`` for operands of ``shapes`` (cached: the hot path parses once)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = _einsum_terms(lhs)
    if len(terms) > len(shapes):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    if len(terms) < len(shapes):
        raise RuntimeError("einsum(): more operands were provided than specified in the "
                           "equation")
    sizes, ells = _label_sizes(terms, shapes)
    ell = broadcast_shapes(*ells)
    free = [c for c in string.ascii_letters if c not in sizes]
    ell_labels = free[len(free) - len(ell):] if ell else []
    counts = {lab: sum(t.count(lab) for t in terms) for lab in sizes}
    if arrow:
        out = _einsum_terms(rhs)[0]
        for lab in out:
            if lab != "." and out.count(lab) > 1:
                raise RuntimeError(f"einsum(): output subscript {lab} appears more than once in "
                                   "the output")
            if lab != "." and lab not in sizes:
                raise RuntimeError(f"einsum(): output subscript {lab} does not appear in the "
                                   "equation for any input operand")
    else:
        out = (["."] if any("." in t for t in terms) else []) + \
            sorted(lab for lab, n in counts.items() if n == 1)
    return _build_plan(terms, shapes, sizes, ell, ell_labels, out)


def _build_plan(terms, shapes, sizes, ell, ell_labels, out) -> EinsumPlan:
    def spell(labels, nell):
        return "".join("".join(ell_labels[len(ell_labels) - nell:]) if lab == "." else lab
                       for lab in labels)

    ins, targets = [], []
    for labels, shape in zip(terms, shapes):
        nell = len(shape) - (len(labels) - ("." in labels))
        ins.append(spell(labels, nell))
        targets.append(tuple(ell[ell_labels.index(c)] if c in ell_labels else sizes[c]
                             for c in ins[-1]))
    out_spelled = spell(out, len(ell))
    shape = tuple(ell[ell_labels.index(c)] if c in ell_labels else sizes[c] for c in out_spelled)
    # An operand "uses" a summed label when its dim has the label's full size (a size-1 dim
    # only broadcasts): torch sums a label used by one operand alone (promoting integers to
    # int64, like ``sum``) and contracts the others with ``bmm``.
    full = [{c: n for c, n in zip(s, t) if n == (ell[ell_labels.index(c)] if c in ell_labels
                                                 else sizes[c])} for s, t in zip(ins, shapes)]
    users = [sum(c in f for f in full) for c in dict.fromkeys("".join(ins))
             if c not in out_spelled]
    return EinsumPlan(",".join(ins) + "->" + out_spelled, tuple(targets), shape,
                      any(u == 1 for u in users), any(u > 1 for u in users))


def einsum_operands(operands) -> tuple:
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        return tuple(operands[0])
    return tuple(operands)


@operator("einsum(str equation, Tensor[] tensors, *, int[]? path=None) -> Tensor", method=False)
def einsum(equation, *operands):
    """Einstein summation over ``operands`` (varargs or one list), as ``torch.einsum``.

    Supports ``...`` (broadcast batch dims), implicit output (labels seen once, sorted, after
    the ellipsis dims), repeated labels (diagonals) and size-1 label broadcasting. Computes
    with ``numpy.einsum(..., optimize=True)`` (BLAS contractions).

    Raises:
        RuntimeError: malformed equations, operand/subscript count or size mismatches, mixed
            dtypes.

    Example:
        >>> import ember
        >>> ember.einsum("ij,jk->ik", ember.ones(2, 3), ember.ones(3, 4)).shape
        ember.Size([2, 4])
    """
    ops = einsum_operands(operands)
    if not ops:
        raise RuntimeError("einsum(): must provide at least one operand")
    plan = einsum_plan(equation, tuple(t._shape for t in ops))
    d = ops[0]._dtype
    for t in ops[1:]:
        if t._dtype is not d:
            raise RuntimeError(f"expected scalar type {_tn(ops[0])} but found {_tn(t)}")
    if d.category != dt.FLOATING and not d.is_complex and plan.sums_alone:
        d = dt.int64  # an integer sum widens, as torch's sum
    elif d is dt.bool_ and plan.contracts and math.prod(plan.shape):
        raise _not_implemented("bmm", ops[0])
    return Spec(plan.shape, d)


def einsum_grads(equation: str, grad: Tensor, ops, needs) -> list:
    """Gradients of ``einsum(equation, *ops)`` (an explicit equation without ``...``).

    Operand ``i``'s gradient is itself an einsum: of ``grad`` and the other operands, into
    ``i``'s labels. A label repeated in ``i``'s term (a diagonal) gets a fresh label tied to it
    by an identity matrix; a label summed in ``i`` alone is broadcast by a vector of ones;
    size-1 (broadcast) dims are summed back.
    """
    lhs, out = equation.split("->")
    terms = lhs.split(",")
    fresh = iter(c for c in string.ascii_letters if c not in equation)
    grads = []
    for i, (term, op) in enumerate(zip(terms, ops)):
        if not needs[i]:
            grads.append(None)
            continue
        others = [(t, o) for j, (t, o) in enumerate(zip(terms, ops)) if j != i]
        target, extra, seen = [], [], set()
        for pos, c in enumerate(term):
            if c in seen:
                new = next(fresh)
                target.append(new)
                extra.append((c + new, _lib().eye(op.shape[pos], dtype=grad.dtype,
                                                  device=grad.device)))
            else:
                seen.add(c)
                target.append(c)
        have = set(out).union(*(t for t, _ in others), *(t for t, _ in extra))
        for pos, c in enumerate(term):
            if c not in have:
                have.add(c)
                extra.append((c, _lib().ones(op.shape[pos], dtype=grad.dtype,
                                             device=grad.device)))
        # complex operands enter conjugated (torch's convention: grad * conj(d out / d op))
        others = [(t, o.conj_physical() if o.is_complex() else o) for t, o in others]
        parts = [(out, grad)] + others + extra
        eq = ",".join(t for t, _ in parts) + "->" + "".join(target)
        g = einsum(eq, *[o if o.dtype is grad.dtype else o.to(grad.dtype) for _, o in parts])
        grads.append(_fit(g, tuple(op.shape)))
    return grads


def _einsum_signature(equation, tensors, *rest):
    """Binds ``einsum(eq, a, b)`` (``tensors=a``, ``rest=(b,)``) and ``einsum(eq, [a, b])``."""


@derivative(einsum, save=("tensors", "rest"), signature=_einsum_signature)
def _einsum_backward(ctx, grad):
    first, rest = ctx.tensors, list(ctx.rest)
    ops = list(first) + rest if isinstance(first, list | tuple) else [first] + rest
    plan = einsum_plan(ctx.equation, tuple(tuple(t.shape) for t in ops))
    needs = ctx.needs_input_grad
    grads = einsum_grads(plan.equation, grad, ops, needs + (False,) * (len(ops) - len(needs)))
    if isinstance(first, list | tuple):
        return (grads,) if not rest else (grads[:len(first)], grads[len(first):])
    return (grads[0],) if not rest else (grads[0], grads[1:])


# -- ember.linalg: inverses and determinants ---------------------------------------------------
@operator("linalg_inv(Tensor A, *, Tensor(a!)? out=None) -> Tensor", method=False)
def linalg_inv(A, *, out=None):
    """Inverse of each square matrix of ``A`` (``torch.linalg.inv``).

    Raises:
        LinAlgError: a matrix is singular.
        RuntimeError: not a batch of square float32/float64 matrices.

    Shape: ``(*, n, n) -> (*, n, n)``.

    Example:
        >>> ember.linalg.inv(ember.tensor([[4.0, 2.0], [2.0, 2.0]]))
        tensor([[ 0.5000, -0.5000],
                [-0.5000,  1.0000]])
    """
    _floating("linalg.inv", A, complex_ok=True)
    _square("linalg.inv", A)
    return Spec(A._shape, A._dtype)


@derivative(linalg_inv, save=("result",))
def _linalg_inv_backward(ctx, grad):
    X = ctx.result  # d(A^-1) = -A^-1 dA A^-1; conjugate transposes for complex (torch)
    return -matmul(X.mH, matmul(grad, X.mH))


@composite("inverse(Tensor self) -> Tensor")
def inverse(input):
    """Alias of ``ember.linalg.inv`` (``torch.inverse``).

    Example:
        >>> ember.inverse(ember.tensor([[0.5]]))
        tensor([[2.]])
    """
    return linalg_inv(input)


@operator("linalg_det(Tensor A, *, Tensor(a!)? out=None) -> Tensor", method=False)
def linalg_det(A, *, out=None):
    """Determinant of each square matrix of ``A`` (``torch.linalg.det``).

    Shape: ``(*, n, n) -> (*)``.

    Example:
        >>> round(ember.linalg.det(ember.tensor([[2.0, 1.0], [1.0, 3.0]])).item(), 4)
        5.0
    """
    _floating("linalg.det", A, "lu_cpu", complex_ok=True)
    _square("linalg.det", A)
    return Spec(A._shape[:-2], A._dtype)


def _cofactors_svd(A: Tensor) -> Tensor:
    """The cofactor matrix ``det(A) A^{-T}`` through the SVD, defined for singular ``A`` too:
    ``A = U S Vh`` gives ``det(U) det(Vh) U diag(prod_{j != i} S_j) Vh``."""
    U, S, Vh = linalg_svd(A, full_matrices=False)
    n = S.shape[-1]
    others = _lib().where(_eye_mask(n, S.device), 1.0, S.unsqueeze(-2).expand(*S.shape, n))
    scale = (linalg_det(U) * linalg_det(Vh)).unsqueeze(-1) * others.prod(-1)
    return matmul(U * scale.unsqueeze(-2), Vh)


@derivative(linalg_det, save=("A", "result"))
def _linalg_det_backward(ctx, grad):
    A, d = ctx.A, ctx.result
    # det(A) A^{-T} for invertible matrices; a batch holding an exactly singular matrix (where
    # the inverse does not exist but the cofactors do) goes through the SVD.
    if A.numel() and bool((d == 0).any()):
        return grad.unsqueeze(-1).unsqueeze(-1) * _cofactors_svd(A)
    return (grad * _cj(d)).unsqueeze(-1).unsqueeze(-1) * linalg_inv(A).mH


@composite("det(Tensor self) -> Tensor")
def det(input):
    """Alias of ``ember.linalg.det`` (``torch.det``).

    Example:
        >>> round(ember.det(ember.tensor([[2.0, 1.0], [1.0, 3.0]])).item(), 4)
        5.0
    """
    return linalg_det(input)


@operator("linalg_slogdet(Tensor A, *, Tensor(a!)? out=None) -> (Tensor sign, Tensor logabsdet)",
          method=False)
def linalg_slogdet(A, *, out=None):
    """Sign and log of the absolute determinant, ``(sign, logabsdet)`` (a named tuple).

    A singular matrix gives ``sign = 0`` and ``logabsdet = -inf``, as ``torch.linalg.slogdet``.

    Shape: ``(*, n, n) -> (*), (*)``.

    Example:
        >>> sign, logabsdet = ember.linalg.slogdet(ember.tensor([[-2.0, 0.0], [0.0, 1.0]]))
        >>> sign, logabsdet
        (tensor(-1.), tensor(0.6931))
    """
    _floating("linalg.slogdet", A, complex_ok=True)
    _square("linalg.slogdet", A)
    return Spec(A._shape[:-2], A._dtype), Spec(A._shape[:-2], A._dtype.to_real())


@derivative(linalg_slogdet, save=("A",))
def _linalg_slogdet_backward(ctx, grad_sign, grad_logabsdet):
    # torch's: g A^{-H}, g = glogabsdet + i Im(gsign conj(sign)) for complex A (a real sign is
    # piecewise constant and carries no gradient).
    A = ctx.A
    if not A._dtype.is_complex:
        return grad_logabsdet.unsqueeze(-1).unsqueeze(-1) * linalg_inv(A).mT
    g = None if grad_logabsdet is None else grad_logabsdet.to(A._dtype)
    if grad_sign is not None:
        sign = linalg_slogdet(A)[0]
        turn = (grad_sign * sign.conj()).imag.to(A._dtype) * 1j
        g = turn if g is None else g + turn
    return g.unsqueeze(-1).unsqueeze(-1) * linalg_inv(A).mH


linalg_slogdet.result_tuple = SlogdetResult


@composite("slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)")
def slogdet(input):
    """``ember.linalg.slogdet`` as ``torch.slogdet`` (named tuple ``slogdet``).

    Example:
        >>> ember.slogdet(ember.tensor([[-2.0, 0.0], [0.0, 1.0]])).sign
        tensor(-1.)
    """
    return TorchSlogdetResult(*linalg_slogdet(input))


@operator("logdet(Tensor self) -> Tensor")
def logdet(input):
    """Log-determinant: NaN for a negative determinant, ``-inf`` for zero (``torch.logdet``).

    Shape: ``(*, n, n) -> (*)``.

    Example:
        >>> ember.logdet(ember.tensor([[2.0, 0.0], [0.0, 1.0]]))
        tensor(0.6931)
        >>> ember.logdet(ember.tensor([[-2.0, 0.0], [0.0, 1.0]]))
        tensor(nan)
    """
    _floating("logdet", input, complex_ok=True)
    _square("linalg.slogdet", input)
    return Spec(input._shape[:-2], input._dtype)


@derivative(logdet, save=("input", "result"))
def _logdet_backward(ctx, grad):
    # torch computes a real logdet as where(sign == -1, nan, logabsdet): a negative
    # determinant's NaN result gets a zero gradient. Complex: log(sign) + logabsdet, A^{-H}.
    if not ctx.input._dtype.is_complex:
        grad = _lib().where(ctx.result.isnan(), 0.0, grad)
    return grad.unsqueeze(-1).unsqueeze(-1) * linalg_inv(ctx.input).mH


# -- ember.linalg: solvers and factorizations --------------------------------------------------
def solve_is_vector(A: Tensor, B: Tensor) -> bool:
    """Whether ``B`` is a (batch of) vector(s), PyTorch's rule for ``linalg.solve``."""
    return B.ndim == 1 or (B.ndim == A.ndim - 1 and B._shape == A._shape[:-1])


@operator("linalg_solve(Tensor A, Tensor B, *, bool left=True, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_solve(A, B, *, left=True, out=None):
    """The solution ``X`` of ``A X = B`` (``left=False``: ``X A = B``), ``torch.linalg.solve``.

    ``B`` is a batch of vectors when it is 1-d or has ``A``'s shape minus the last dim; batch
    dims broadcast.

    Raises:
        LinAlgError: ``A`` is singular.
        RuntimeError: shapes or dtypes do not fit.

    Shape: ``(*, n, n), (*, n, k) -> (*, n, k)``; ``(*, n, n), (*, n) -> (*, n)``.

    Example:
        >>> A = ember.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> ember.linalg.solve(A, ember.tensor([1.0, 2.0]))
        tensor([0.5000, 0.5000])
    """
    _floating("linalg.solve", A, "lu_cpu", complex_ok=True)
    _square("linalg.solve", A)
    if A._dtype is not B._dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A "
                           f"of type {_tn(A)} and B of type {_tn(B)} instead")
    n = A._shape[-1]
    vector = solve_is_vector(A, B)
    mat = B._shape + (1,) if vector else B._shape
    rows = mat[-2] if left else mat[-1]
    if rows != n:
        eq = "AX = B" if left else "XA = B"
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation {eq} "
                           f"({n}x{n} and {_mat(mat[-2:])})")
    batch = broadcast_shapes(A._shape[:-2], mat[:-2])
    return Spec(batch + (mat[-2:-1] if vector else mat[-2:]), A._dtype)


@derivative(linalg_solve, save=("A", "result"))
def _linalg_solve_backward(ctx, grad):
    # AX = B: gB = A^{-T} g, gA = -gB X^T;  XA = B: gB = g A^{-T}, gA = -X^T gB.
    A, X, left = ctx.A, ctx.result, ctx.left
    gB = _mT_solve(A, grad, left)
    if not ctx.needs_input_grad[0]:
        return None, gB
    if solve_is_vector(A, X):  # batches of vectors: X and gB are (*, n)
        gA = -(gB.unsqueeze(-1) * _cj(X).unsqueeze(-2))
    else:
        gA = -matmul(gB, X.mH) if left else -matmul(X.mH, gB)
    return gA, gB


@operator("linalg_cholesky(Tensor A, *, bool upper=False, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_cholesky(A, *, upper=False, out=None):
    """Cholesky factor ``L`` (``A = L L^T``) or, with ``upper=True``, ``U`` (``A = U^T U``).

    Reads only the lower (``upper``: upper) triangle of ``A``, as ``torch.linalg.cholesky``.

    Raises:
        LinAlgError: a matrix is not positive-definite.

    Shape: ``(*, n, n) -> (*, n, n)``.

    Example:
        >>> ember.linalg.cholesky(ember.tensor([[4.0, 2.0], [2.0, 2.5]]))
        tensor([[2.0000, 0.0000],
                [1.0000, 1.2247]])
    """
    _floating("linalg.cholesky", A, "cholesky_cpu", complex_ok=True)
    _square("linalg.cholesky", A)
    return Spec(A._shape, A._dtype)


@derivative(linalg_cholesky, save=("result",))
def _linalg_cholesky_backward(ctx, grad):
    # A = L L^H: gA = sym(L^{-H} phi(L^H gL) L^{-1}), phi = lower triangle, halved diagonal.
    # The gradient is Hermitian (torch's convention), though the forward reads one triangle.
    # (mH is mT for real tensors.)
    L, gL = (ctx.result.mH, grad.mH) if ctx.upper else (ctx.result, grad)
    P = matmul(L.mH, gL)
    P = P.tril() - 0.5 * P.diagonal(0, -2, -1).diag_embed()
    S = _mT_solve(L, _mT_solve(L, P).mH).mH
    return 0.5 * (S + S.mH)


_QR_MODES = ("reduced", "complete", "r")


@operator("linalg_qr(Tensor A, str mode='reduced', *, Tensor(a!)? out=None) -> "
          "(Tensor Q, Tensor R)", method=False)
def linalg_qr(A, mode="reduced", *, out=None):
    """QR decomposition ``A = Q R`` (``torch.linalg.qr``); returns the named tuple ``(Q, R)``.

    ``mode``: ``'reduced'`` (``Q`` is ``(*, m, k)``, ``k = min(m, n)``), ``'complete'``
    (``Q`` is ``(*, m, m)``) or ``'r'`` (``Q`` is empty, ``R`` as in reduced).

    Example:
        >>> A = ember.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> Q, R = ember.linalg.qr(A)
        >>> Q.shape, R.shape, ember.allclose(Q @ R, A, atol=1e-5)
        (ember.Size([3, 2]), ember.Size([2, 2]), True)
    """
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    _floating("linalg.qr", A, "geqrf_cpu", empty_too=True, complex_ok=True)
    _matrix_dims("linalg.qr", A)
    *batch, m, n = A._shape
    batch, k = tuple(batch), min(m, n)
    if mode == "r":
        return Spec((0,), A._dtype), Spec(batch + (k, n), A._dtype)
    cols = m if mode == "complete" else k
    return Spec(batch + (m, cols), A._dtype), Spec(batch + (cols, n), A._dtype)


linalg_qr.result_tuple = QRResult


def _qr_tall_backward(Q: Tensor, R: Tensor, gQ: Tensor, gR: Tensor) -> Tensor:
    """QR backward for m >= n (``Q`` is ``m x n``, ``R`` is ``n x n``):
    ``gA = (gQ + Q copyltu(M)) R^{-H}`` with ``M = R gR^H - gQ^H Q``, ``copyltu`` the Hermitian
    matrix with ``M``'s strict lower triangle and the real part of its diagonal (LAPACK's ``R``
    has a real diagonal; ^H is ^T for real matrices)."""
    M = matmul(R, gR.mH) - matmul(gQ.mH, Q)
    low = M.tril(-1)
    diag = M.diagonal(0, -2, -1)
    if M._dtype.is_complex:
        diag = diag.real.to(M._dtype)
    M = low + low.mH + diag.diag_embed()
    return _mT_solve(R, gQ + matmul(Q, M), left=False)


@derivative(linalg_qr, save=("A",))
def _linalg_qr_backward(ctx, gQ, gR):
    A, mode = ctx.A, ctx.mode
    m, n = A.shape[-2:]
    if mode == "r":
        raise RuntimeError("The derivative of linalg.qr depends on Q, which is not computed when "
                           "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going "
                           "to differentiate through linalg.qr.")
    if mode == "complete" and m > n:
        raise RuntimeError("The QR decomposition is not differentiable when mode='complete' and "
                           "nrows > ncols.")
    Q, R = linalg_qr(A, mode)  # recomputed: LAPACK is deterministic (NOTE [Linalg derivatives])
    if m >= n:
        return _qr_tall_backward(Q, R, gQ, gR)
    # A = [X | Y] with X = Q U square and Y = Q V: V's gradient flows into Q as Y gV^T.
    gU, gV = gR.narrow(-1, 0, m), gR.narrow(-1, m, n - m)
    gX = _qr_tall_backward(Q, R.narrow(-1, 0, m), gQ + matmul(A.narrow(-1, m, n - m), gV.mH),
                           gU)
    return _lib().cat([gX, matmul(Q, gV)], -1)


def _svd_checks(A: Tensor) -> None:
    _floating("linalg.svd", A, "linalg_svd_cpu", complex_ok=True)
    _matrix_dims("linalg.svd", A)


@operator("linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None, "
          "Tensor(a!)? out=None) -> (Tensor U, Tensor S, Tensor Vh)", method=False)
def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    """Singular value decomposition ``A = U diag(S) Vh`` (``torch.linalg.svd``).

    ``S`` is descending; with ``full_matrices=False`` ``U`` is ``(*, m, k)`` and ``Vh``
    ``(*, k, n)`` (``k = min(m, n)``), else square.

    Example:
        >>> A = ember.tensor([[3.0, 0.0], [0.0, -2.5], [0.0, 0.0]])
        >>> U, S, Vh = ember.linalg.svd(A, full_matrices=False)
        >>> U.shape, S, Vh.shape
        (ember.Size([3, 2]), tensor([3.0000, 2.5000]), ember.Size([2, 2]))
    """
    _svd_checks(A)
    *batch, m, n = A._shape
    batch, k = tuple(batch), min(m, n)
    u, v = (m, n) if full_matrices else (k, k)
    return (Spec(batch + (m, u), A._dtype), Spec(batch + (k,), A._dtype.to_real()),
            Spec(batch + (v, n), A._dtype))


linalg_svd.result_tuple = SVDResult


def svd_backward(U: Tensor, S: Tensor, Vh: Tensor, gU, gS: Tensor, gVh) -> Tensor:
    """Gradient of ``A = U diag(S) Vh`` (reduced: ``k = min(m, n)`` columns).

    ``gA = U [diag(gS) + (F o (J - J^H)) S + S (F o (K - K^H))] Vh`` with ``J = U^H gU``,
    ``K = Vh gVh^H``, ``F_ij = 1 / (S_j^2 - S_i^2)`` off the diagonal; plus
    ``(I - U U^H) gU S^{-1} Vh`` for tall and ``U S^{-1} gVh (I - Vh^H Vh)`` for wide matrices.
    Complex: the diagonal also gets ``i Im(J_ii) / S_i`` (each pair's phase put on ``U``,
    torch's convention for losses that do not depend on it). Repeated singular values make
    the vectors' terms infinite, as in torch. ``gU``/``gVh`` None: only ``gS`` contributes.
    """
    if gU is None and gVh is None:
        return matmul(U * gS.to(U._dtype).unsqueeze(-2), Vh)
    m, n, k = U.shape[-2], Vh.shape[-1], S.shape[-1]
    S2 = S * S
    E = _unit_diag(S2.unsqueeze(-2) - S2.unsqueeze(-1))
    J = matmul(U.mH, gU)
    K = matmul(Vh, gVh.mH)
    inner = ((J - J.mH) / E) * S.unsqueeze(-2) + S.unsqueeze(-1) * ((K - K.mH) / E)
    diag = gS.to(U._dtype) if gS is not None else S.to(U._dtype) * 0
    if U._dtype.is_complex:
        im_u, im_v = J.diagonal(0, -2, -1).imag, K.diagonal(0, -2, -1).imag
        if bool(((im_u + im_v).abs() > 1e-2 + 1e-2 * im_v.abs()).any()):
            raise RuntimeError("svd_backward: The singular vectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified loss "
                               "function depends on this phase term, making it ill-defined.")
        diag = diag + im_u.to(U._dtype) * 1j / S
    inner = _lib().where(_eye_mask(k, U.device), diag.diag_embed(), inner)
    gA = matmul(matmul(U, inner), Vh)
    if m > k:
        gA = gA + matmul((gU - matmul(U, J)) / S.unsqueeze(-2), Vh)
    if n > k:
        gA = gA + matmul(U, (gVh - matmul(K.mH, Vh)) / S.unsqueeze(-1))
    return gA


@derivative(linalg_svd, save=("A",))
def _linalg_svd_backward(ctx, gU, gS, gVh):
    U, S, Vh = linalg_svd(ctx.A, ctx.full_matrices)  # recomputed (NOTE [Linalg derivatives])
    if ctx.full_matrices:  # the extra singular vectors are arbitrary: only k of them count
        k = S.shape[-1]
        U, gU = U.narrow(-1, 0, k), gU.narrow(-1, 0, k)
        Vh, gVh = Vh.narrow(-2, 0, k), gVh.narrow(-2, 0, k)
    return svd_backward(U, S, Vh, gU, gS, gVh)


@operator("linalg_svdvals(Tensor A, *, str? driver=None, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_svdvals(A, *, driver=None, out=None):
    """Singular values of ``A``, descending (``torch.linalg.svdvals``).

    Shape: ``(*, m, n) -> (*, min(m, n))``.

    Example:
        >>> ember.linalg.svdvals(ember.tensor([[0.0, 2.5], [-3.0, 0.0]]))
        tensor([3.0000, 2.5000])
    """
    _svd_checks(A)
    return Spec(A._shape[:-2] + (min(A._shape[-2:]),), A._dtype.to_real())


@derivative(linalg_svdvals, save=("A",))
def _linalg_svdvals_backward(ctx, grad):
    U, _, Vh = linalg_svd(ctx.A, full_matrices=False)
    return matmul(U * grad.to(U._dtype).unsqueeze(-2), Vh)


def _eigh_checks(A: Tensor, UPLO: str) -> None:
    _eigh_dtype(A)
    _square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@operator("linalg_eigh(Tensor A, str UPLO='L', *, Tensor(a!)? out=None) -> "
          "(Tensor eigenvalues, Tensor eigenvectors)", method=False)
def linalg_eigh(A, UPLO="L", *, out=None):
    """Eigen-decomposition of symmetric (complex: Hermitian) matrices (``torch.linalg.eigh``).

    Reads only the ``UPLO`` triangle; eigenvalues ascend; eigenvector signs are
    implementation defined.

    Shape: ``(*, n, n) -> (*, n), (*, n, n)``.

    Example:
        >>> L, Q = ember.linalg.eigh(ember.tensor([[2.5, 1.0], [1.0, 2.5]]))
        >>> L, Q.shape
        (tensor([1.5000, 3.5000]), ember.Size([2, 2]))
    """
    _eigh_checks(A, UPLO)  # Hermitian matrices have real eigenvalues
    return Spec(A._shape[:-1], A._dtype.to_real()), Spec(A._shape, A._dtype)


linalg_eigh.result_tuple = EighResult


@derivative(linalg_eigh, save=("A",))
def _linalg_eigh_backward(ctx, gL, gV):
    # gA = V (diag(gL) + F o skew(V^H gV)) V^H, F_ij = 1 / (L_j - L_i): Hermitian, like
    # torch's (the forward reads one triangle; mH is mT for real tensors). For complex V the
    # loss must not depend on the eigenvectors' phases: Im diag(V^H gV) = 0, checked as torch.
    L, V = linalg_eigh(ctx.A, ctx.UPLO)  # recomputed (NOTE [Linalg derivatives])
    if gV is None:
        return _eigvalsh_grad(gL, V)
    K = matmul(V.mH, gV)
    if K._dtype.is_complex and bool((K.diagonal(0, -2, -1).imag.abs() > 1e-2).any()):
        raise RuntimeError("linalg_eigh_backward: The eigenvectors in the complex case are "
                           "specified up to multiplication by e^{i phi}. The specified loss "
                           "function depends on this quantity, so it is ill-defined.")
    inner = 0.5 * (K - K.mH) / _unit_diag(L.unsqueeze(-2) - L.unsqueeze(-1))
    if gL is not None:
        inner = inner + gL.diag_embed()
    return matmul(matmul(V, inner), V.mH)


def _eigvalsh_grad(grad: Tensor, V: Tensor) -> Tensor:
    return matmul(V * grad.to(V._dtype).unsqueeze(-2), V.mH)


@operator("linalg_eigvalsh(Tensor A, str UPLO='L', *, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues of symmetric matrices, ascending (``torch.linalg.eigvalsh``).

    Shape: ``(*, n, n) -> (*, n)``.

    Example:
        >>> ember.linalg.eigvalsh(ember.tensor([[2.5, 1.0], [1.0, 2.5]]))
        tensor([1.5000, 3.5000])
    """
    _eigh_checks(A, UPLO)
    return Spec(A._shape[:-1], A._dtype.to_real())


@derivative(linalg_eigvalsh, save=("A",))
def _linalg_eigvalsh_backward(ctx, grad):
    _, V = linalg_eigh(ctx.A, ctx.UPLO)
    return _eigvalsh_grad(grad, V)


def _eig_checks(name: str, A: Tensor) -> None:
    _square(name, A)
    d = A._dtype
    if d is dt.float16 or d is dt.bfloat16:
        raise _not_implemented("linalg_eig_out_cpu", A)
    if not (d.is_floating_point or d.is_complex):
        raise RuntimeError(f"Unknown Complex ScalarType for {_tn(A)}")


def _eig_dtype(A: Tensor):
    return A._dtype if A._dtype.is_complex else A._dtype.to_complex()


@operator("linalg_eig(Tensor A, *, Tensor(a!)? out=None) -> "
          "(Tensor eigenvalues, Tensor eigenvectors)", method=False)
def linalg_eig(A, *, out=None):
    """Eigen-decomposition of general square matrices (``torch.linalg.eig``).

    Outputs are complex for real and complex inputs alike (LAPACK ``geev``): ``A V = V diag(L)``,
    each eigenvector of unit 2-norm; their order and phases are implementation defined, so a
    loss differentiated through the eigenvectors must not depend on the phases (torch raises
    otherwise, and so does ember). Raises ``RuntimeError`` on infs or NaNs, like torch.

    Shape: ``(*, n, n) -> (*, n), (*, n, n)``.

    Example:
        >>> L, V = ember.linalg.eig(ember.tensor([[2.0, 0.0], [0.0, 3.0]]))
        >>> L
        tensor([2.+0.j, 3.+0.j])
        >>> V.dtype
        ember.complex64
    """
    _eig_checks("linalg.eig", A)
    c = _eig_dtype(A)
    return Spec(A._shape[:-1], c), Spec(A._shape, c)


linalg_eig.result_tuple = EigResult


def _eig_grad(A: Tensor, L: Tensor, V: Tensor, gL, gV) -> Tensor:
    # torch's linalg_eig_backward: gA = V^{-H} (diag(gL) + (V^H gV - V^H V Re diag(V^H gV))
    # / conj(L_j - L_i)) V^H, the real part for a real A.
    VH = V.mH
    if gV is None:
        gA = linalg_solve(VH, gL.unsqueeze(-1) * VH)
    else:
        K = matmul(VH, gV)
        d = K.diagonal(0, -2, -1)
        if bool((d.imag.abs() > 1e-2).any()):
            raise RuntimeError("linalg_eig_backward: The eigenvectors in the complex case are "
                               "specified up to multiplication by e^{i phi}. The specified loss "
                               "function depends on this quantity, so it is ill-defined.")
        K = K - matmul(VH, V * d.real.to(V._dtype).unsqueeze(-2))
        Lc = L.conj()
        K = K / _unit_diag(Lc.unsqueeze(-2) - Lc.unsqueeze(-1))
        diag = gL.diag_embed() if gL is not None else _lib().zeros_like(K)
        K = _lib().where(_eye_mask(K.shape[-1], K.device), diag, K)
        gA = linalg_solve(VH, matmul(K, VH))
    return gA if A._dtype.is_complex else gA.real


@derivative(linalg_eig, save=("A",))
def _linalg_eig_backward(ctx, gL, gV):
    L, V = linalg_eig(ctx.A)  # recomputed (NOTE [Linalg derivatives])
    return _eig_grad(ctx.A, L, V, gL, gV)


@operator("linalg_eigvals(Tensor A, *, Tensor(a!)? out=None) -> Tensor", method=False)
def linalg_eigvals(A, *, out=None):
    """Eigenvalues of general square matrices, complex (``torch.linalg.eigvals``).

    The order is LAPACK ``geev``'s, as in torch. Shape: ``(*, n, n) -> (*, n)``.

    Example:
        >>> ember.linalg.eigvals(ember.tensor([[0.0, -1.0], [1.0, 0.0]]))
        tensor([0.+1.j, 0.-1.j])
    """
    _eig_checks("linalg.eigvals", A)
    return Spec(A._shape[:-1], _eig_dtype(A))


@derivative(linalg_eigvals, save=("A",))
def _linalg_eigvals_backward(ctx, grad):
    L, V = linalg_eig(ctx.A)
    return _eig_grad(ctx.A, L, V, grad, None)


def _tolerance_args(atol, rtol) -> None:
    for t in (atol, rtol):
        if isinstance(t, Tensor) and not t._dtype.is_floating_point:
            raise RuntimeError("atol and rtol must be floating point tensors")


@operator("linalg_matrix_rank(Tensor A, *, Any atol=None, Any rtol=None, bool hermitian=False, "
          "Any tol=None, Tensor(a!)? out=None) -> Tensor", method=False)
def linalg_matrix_rank(A, *, atol=None, rtol=None, hermitian=False, tol=None, out=None):
    """Numerical rank: the count of singular values above ``max(atol, rtol * S.max())``.

    Without tolerances ``rtol = eps * max(m, n)``; an ``atol > 0`` alone sets ``rtol = 0``;
    ``tol`` is the legacy ``atol`` (as ``torch.linalg.matrix_rank``). ``hermitian=True`` uses
    the eigenvalues' magnitudes.

    Shape: ``(*, m, n) -> (*)``, int64.

    Example:
        >>> ember.linalg.matrix_rank(ember.tensor([[1.0, 2.0], [2.0, 4.0]]))
        tensor(1)
    """
    if A._dtype not in _EIGH_DTYPES:
        if rtol is None and tol is None:  # torch needs eps for the default rtol first
            raise RuntimeError("This function doesn't handle types other than float and double")
        if A.numel():
            _eigh_dtype(A) if hermitian else _svd_checks(A)
    if A.ndim < 2:
        raise RuntimeError("torch.linalg.matrix_rank: The input tensor input must have at least "
                           "2 dimensions.")
    if hermitian:
        _square("linalg.eigh", A)
    _tolerance_args(atol, rtol)
    return Spec(A._shape[:-2], dt.int64)


@operator("linalg_pinv(Tensor A, Any rcond=None, bool hermitian=False, *, Any atol=None, "
          "Any rtol=None, Tensor(a!)? out=None) -> Tensor", method=False)
def linalg_pinv(A, rcond=None, hermitian=False, *, atol=None, rtol=None, out=None):
    """Moore-Penrose pseudo-inverse via the SVD (``hermitian``: the eigen-decomposition).

    Singular values at or below ``max(atol, rtol * S.max())`` are treated as zero, with
    :func:`linalg_matrix_rank`'s defaults (``torch.linalg.pinv``). The positional ``rcond``
    (a float or a tensor) is torch's legacy form: ``atol=0, rtol=rcond``. Tolerances given as
    tensors broadcast with the batch dims and get no gradient.

    Shape: ``(*, m, n) -> (*, n, m)``.

    Example:
        >>> ember.linalg.pinv(ember.tensor([[1.0], [1.0]]))
        tensor([[0.5000, 0.5000]])
    """
    if A.ndim < 2 or A._dtype not in _EIGH_DTYPES:
        raise RuntimeError(f"linalg.pinv({_tn(A)}{{{list(A._shape)}}}): expected a tensor with 2 "
                           "or more dimensions of float, double, cfloat or cdouble types")
    if hermitian:
        _square("linalg.eigh", A)
    _tolerance_args(atol, rtol if rcond is None else rcond)
    return Spec(A._shape[:-2] + (A._shape[-1], A._shape[-2]), A._dtype)


def pinv_tolerances(rcond, atol, rtol) -> tuple:
    """``(atol, rtol)`` of a ``linalg_pinv`` call (the legacy ``rcond`` is ``rtol``, atol 0)."""
    return (atol, rtol) if rcond is None else (0.0, rcond)


def _tensor_args(ctx, names) -> list:
    """A ``None`` gradient slot for each argument of ``names`` that was given as a tensor."""
    out = []
    for name in names:
        try:
            ctx.shape_of(name)
        except KeyError:
            continue
        out.append(None)
    return out


@derivative(linalg_pinv, save=("A", "result"))
def _linalg_pinv_backward(ctx, grad):
    return (_pinv_grad(ctx, grad), *_tensor_args(ctx, ("rcond", "atol", "rtol")))


def _pinv_grad(ctx, grad):
    # For locally constant rank, X = A^+ has dX = -X dA X + X X^H dA^H (I - A X)
    # + (I - X A) dA^H X^H X, so gA = -X^H g X^H + (I - A X) g^H X X^H + X^H X g^H (I - X A)
    # (^H is ^T for real A); the identities are distributed so no eye is built.
    A, X = ctx.A, ctx.result
    gT = grad.mH
    XXt, XtX = matmul(X, X.mH), matmul(X.mH, X)
    t2 = matmul(gT, XXt)
    t2 = t2 - matmul(A, matmul(X, t2))
    t3 = matmul(XtX, gT)
    t3 = t3 - matmul(matmul(t3, X), A)
    return t2 + t3 - matmul(X.mH, matmul(grad, X.mH))


@operator("linalg_matrix_power(Tensor A, int n, *, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_matrix_power(A, n, *, out=None):
    """``A`` raised to the integer power ``n`` by repeated squaring; ``n = 0`` gives the
    identity, ``n < 0`` the power of the inverse (``torch.linalg.matrix_power``); real and
    complex floating matrices take negative powers, integer ones only ``n >= 0``.

    Shape: ``(*, m, m) -> (*, m, m)``.

    Example:
        >>> ember.linalg.matrix_power(ember.tensor([[1, 1], [0, 1]]), 3)
        tensor([[1, 3],
                [0, 1]])
    """
    _square("linalg.matrix_power", A)
    if n < 0:
        _floating("linalg.inv", A, complex_ok=True)
    elif n >= 2:
        _no_bool_gemm("addmm_impl_cpu_", A, A._shape, A._shape[-1])
    return Spec(A._shape, A._dtype)


def _power_backward(B: Tensor, grad: Tensor, n: int) -> Tensor:
    """Gradient of ``B^n`` (``n >= 1``): ``sum_k (B^H)^k g (B^H)^(n-1-k)`` (``^H`` is ``^T``
    for real ``B``; complex gradients by torch's conjugate convention)."""
    Bt = B.mH
    powers = [None, Bt]  # (B^T)^j for j >= 1; j = 0 is the identity
    for _ in range(n - 2):
        powers.append(matmul(powers[-1], Bt))
    total = None
    for k in range(n):
        term = grad if k == 0 else matmul(powers[k], grad)
        term = term if k == n - 1 else matmul(term, powers[n - 1 - k])
        total = term if total is None else total + term
    return total


@derivative(linalg_matrix_power, save=("A",))
def _linalg_matrix_power_backward(ctx, grad):
    A, n = ctx.A, ctx.n
    if n == 0:
        return _lib().zeros_like(A)
    if n > 0:
        return _power_backward(A, grad, n)
    B = linalg_inv(A)  # A^n = (A^-1)^|n|, and d(A^-1) = -A^-1 dA A^-1
    gB = _power_backward(B, grad, -n)
    return -matmul(B.mH, matmul(gB, B.mH))


@composite("matrix_power(Tensor self, int n) -> Tensor")
def matrix_power(input, n):
    """Alias of ``ember.linalg.matrix_power`` (``torch.matrix_power``).

    Example:
        >>> ember.matrix_power(ember.tensor([[4.0, 2.0], [2.0, 2.0]]), -1)
        tensor([[ 0.5000, -0.5000],
                [-0.5000,  1.0000]])
    """
    return linalg_matrix_power(input, n)


# -- matrix exponential and Householder reflectors (composites) --------------------------------
# NOTE [matrix_exp by scaling and squaring]
# exp(A) = exp(A / 2^s)^(2^s): ``s`` is chosen so that ||A / 2^s||_1 <= 1/2, where a Taylor
# polynomial of degree 18 (float64) or 12 (lower precisions) is below the dtype's rounding;
# the polynomial is evaluated by Horner's rule and then squared ``s`` times. Being made of
# matmuls and adds, it is differentiable (to any order) with no rule of its own; the gradient
# is the exact gradient of the approximant, accurate to the same precision. ``s`` is read from
# the data (one host sync), as any adaptive matrix_exp must.
_EXPM_THETA = 0.5


def _expm_squarings(A: Tensor) -> int:
    if A.numel() == 0 or A.device.type == "meta":
        return 0
    norm = A.detach().abs().sum(-2).max().item()  # the largest 1-norm in the batch
    if not math.isfinite(norm):
        return 0
    return max(0, math.ceil(math.log2(norm / _EXPM_THETA))) if norm > _EXPM_THETA else 0


@composite("matrix_exp(Tensor self) -> Tensor")
def matrix_exp(input):
    """The matrix exponential ``sum_k A^k / k!`` of each square matrix (``torch.matrix_exp``).

    Computed by scaling and squaring over a Taylor polynomial (NOTE [matrix_exp by scaling and
    squaring]); differentiable.

    Shape: ``(*, n, n) -> (*, n, n)``.

    Example:
        >>> import ember
        >>> ember.matrix_exp(ember.zeros(2, 2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    _square("linalg.matrix_exp", input)
    if not input._dtype.is_floating_point:
        raise RuntimeError("linalg.matrix_exp: Expected a floating point or complex tensor as "
                           f"input. Got {_tn(input)}")
    s = _expm_squarings(input)
    B = input / (2.0 ** s) if s else input
    eye = _lib().eye(input.shape[-1], dtype=input.dtype, device=input.device)
    degree = 18 if input._dtype is dt.float64 else 12
    P = eye + B / degree
    for k in range(degree - 1, 0, -1):
        P = eye + matmul(B, P) / k
    for _ in range(s):
        P = matmul(P, P)
    return P


@composite("linalg_matrix_exp(Tensor A) -> Tensor", method=False)
def linalg_matrix_exp(A):
    """Alias of :func:`matrix_exp` (``torch.linalg.matrix_exp``)."""
    return matrix_exp(A)


def _householder_checks(input: Tensor, tau: Tensor) -> None:
    name = "torch.linalg.householder_product"
    if input.ndim < 2:
        raise RuntimeError(f"{name}: input must have at least 2 dimensions.")
    if input.shape[-2] < input.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-2] must be greater than or equal to "
                           "input.shape[-1]")
    if input.shape[-1] < tau.shape[-1]:
        raise RuntimeError(f"{name}: input.shape[-1] must be greater than or equal to "
                           "tau.shape[-1]")
    if tau.ndim != input.ndim - 1:
        raise RuntimeError(f"{name}: Expected tau to have one dimension less than input, but got "
                           f"tau.ndim equal to {tau.ndim} and input.ndim is equal to {input.ndim}")
    if tuple(tau.shape[:-1]) != tuple(input.shape[:-2]):
        raise RuntimeError(f"{name}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau._dtype is not input._dtype:
        raise RuntimeError(f"{name}: tau dtype {_tn(tau)} does not match input dtype "
                           f"{_tn(input)}")
    if input._dtype not in (dt.float32, dt.float64, dt.complex64, dt.complex128):
        raise _not_implemented("orgqr_cpu", input)


@composite("linalg_householder_product(Tensor input, Tensor tau) -> Tensor", method=False)
def linalg_householder_product(input, tau):
    """The first ``n`` columns of ``H_1 H_2 ... H_k`` with ``H_i = I - tau_i v_i v_i^T``
    (``torch.linalg.householder_product``); ``v_i`` is column ``i`` of ``input`` below the
    diagonal, with an implicit 1 on it (LAPACK's ``orgqr``). Differentiable.

    Shape: ``input (*, m, n)``, ``tau (*, k)`` with ``m >= n >= k`` -> ``(*, m, n)``.

    Example:
        >>> import ember
        >>> import ember.ops.linalg as la
        >>> la.linalg_householder_product(ember.zeros(2, 2), ember.tensor([2.0, 0.0])).tolist()
        [[-1.0, 0.0], [0.0, 1.0]]
    """
    _householder_checks(input, tau)
    m, n = input.shape[-2:]
    lib = _lib()
    eye = lib.eye(m, n, dtype=input.dtype, device=input.device)
    V = input.tril(-1) + eye  # (*, m, n): the reflectors, unit diagonal
    # (*, m, n); with no reflectors Q is still an output of input (zero gradient), as torch's
    Q = (input * 0 if tau.shape[-1] == 0 else lib.zeros_like(input)) + eye
    for i in range(tau.shape[-1] - 1, -1, -1):  # Q = H_i Q, innermost reflector first
        v = V[..., i:i + 1]  # (*, m, 1)
        t = tau[..., i:i + 1].unsqueeze(-1)  # (*, 1, 1)
        Q = Q - matmul(v * t, matmul(v.mH, Q))  # H = I - tau v v^H (v^T when real)
    return Q


@composite("orgqr(Tensor self, Tensor input2) -> Tensor")
def orgqr(input, tau):
    """Alias of :func:`linalg_householder_product` (``torch.orgqr``).

    Example:
        >>> A = ember.tensor([[3.0, 1.0], [4.0, 2.0]])
        >>> Q = ember.orgqr(*ember.geqrf(A))
        >>> ember.allclose(Q.mT @ Q, ember.eye(2), atol=1e-6)
        True
    """
    return linalg_householder_product(input, tau)


GeqrfResult = namedtuple("geqrf", ["a", "tau"])


def _reflector(x: Tensor):
    """LAPACK's ``larfg`` for the columns ``x`` (*, p): ``(beta, tau, v_tail)`` with
    ``(I - tau v v^T) x = beta e_1``, ``v = (1, v_tail)``; no reflection (tau 0) when the tail
    of ``x`` is already zero."""
    lib = _lib()
    alpha, tail = x[..., 0], x[..., 1:]
    tail_sq = (tail * tail).sum(-1)
    keep = tail_sq == 0
    norm = (alpha * alpha + tail_sq).sqrt()
    beta = lib.where(alpha >= 0, -norm, norm)
    safe_beta = lib.where(keep, 1.0, beta)
    tau = lib.where(keep, 0.0, (beta - alpha) / safe_beta)
    scale = 1.0 / lib.where(keep, 1.0, alpha - beta)  # the tail is zero where ``keep``
    return lib.where(keep, alpha, beta), tau, tail * scale.unsqueeze(-1)


@composite("geqrf(Tensor self) -> (Tensor a, Tensor tau)")
def geqrf(input):
    """QR decomposition in LAPACK's compact form (``torch.geqrf``): ``R`` on and above the
    diagonal of ``a``, the Householder vectors below it, their scales in ``tau``; feed both to
    :func:`linalg_householder_product` for ``Q``. Not differentiable (as in torch): the
    outputs never require grad.

    Shape: ``(*, m, n) -> a (*, m, n), tau (*, min(m, n))``.

    Example:
        >>> a, tau = ember.geqrf(ember.tensor([[3.0, 1.0], [4.0, 2.0]]))
        >>> a.shape, tau.shape
        (ember.Size([2, 2]), ember.Size([2]))
    """
    if input.ndim < 2:
        raise RuntimeError("torch.geqrf: input must have at least 2 dimensions.")
    if input._dtype not in (dt.float32, dt.float64):
        raise _not_implemented("geqrf_cpu", input)
    from ember.autograd.grad_mode import no_grad

    m, n = input.shape[-2:]
    k = min(m, n)
    with no_grad():
        A = input.clone()
        taus = []
        for j in range(k):
            beta, tau, v_tail = _reflector(A[..., j:, j])
            v = _lib().cat([_lib().ones_like(beta).unsqueeze(-1), v_tail], -1)  # (*, m - j)
            rest = A[..., j:, j + 1:]  # (*, m - j, n - j - 1)
            w = matmul(v.unsqueeze(-2), rest)  # (*, 1, n - j - 1)
            A[..., j:, j + 1:] = rest - (tau.unsqueeze(-1) * v).unsqueeze(-1) * w
            A[..., j, j] = beta
            A[..., j + 1:, j] = v_tail
            taus.append(tau)
        tau = _lib().stack(taus, -1) if taus else input.new_zeros(input.shape[:-2] + (0,))
    return GeqrfResult(A, tau)
