"""Linear-algebra operators: products and the ``ember.linalg`` decompositions.

Products (``matmul`` and its ``dot``/``mv``/``mm``/``bmm`` paths, the ``add*`` fused forms,
``einsum``, ``tensordot``) keep their inputs' single dtype, like PyTorch's BLAS paths; ``outer``
and ``kron`` promote like ``mul``. Decompositions accept float32/float64 only, and reject other
dtypes with the exception type PyTorch raises (``RuntimeError`` for its explicit checks,
``NotImplementedError`` where PyTorch reaches a kernel without that dtype). Each rule below
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
from ember.ops._define import Spec, Tag, composite, operator
from ember.ops.pointwise import check_writable
from ember.tensor import Tensor

__all__ = ["matmul", "mm", "bmm", "mv", "dot", "vdot", "outer", "ger", "addmm", "addmv",
           "addbmm", "baddbmm", "einsum", "tensordot", "kron", "det", "logdet", "slogdet",
           "inverse", "matrix_power"]


class LinAlgError(RuntimeError):
    """A linear-algebra routine failed on its input (singular, not positive-definite, ...).

    Subclasses ``RuntimeError`` like ``torch.linalg.LinAlgError``.
    """


# torch.return_types look-alikes
QRResult = namedtuple("linalg_qr", ["Q", "R"])
SVDResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
TorchSlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])

# -- shared checks -----------------------------------------------------------------------------
_TN = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
       "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte",
       "bool": "Bool"}
_CN = {"float32": "float", "float64": "double", "float16": "c10::Half",
       "bfloat16": "c10::BFloat16", "int8": "signed char", "int16": "short int", "int32": "int",
       "int64": "long int", "uint8": "unsigned char", "bool": "bool"}


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


def _floating(name: str, A: Tensor, half: str | None = None, empty_too: bool = False) -> None:
    """float32/float64 only; ``half``: torch's kernel name for a NotImplementedError on halfs
    (None: torch's explicit 'Low precision' RuntimeError). That kernel is reached only for
    non-empty inputs unless ``empty_too``."""
    d = A._dtype
    if not d.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {_tn(A)}")
    if d is dt.float16 or d is dt.bfloat16:
        if half is None:
            raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {_tn(A)}")
        if empty_too or A.numel():
            raise _not_implemented(half, A)


def _eigh_dtype(A: Tensor) -> None:
    if A._dtype is not dt.float32 and A._dtype is not dt.float64 and A.numel():
        raise _not_implemented("linalg_eigh_cpu", A)


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


@composite("_rmatmul(Tensor self, Tensor other) -> Tensor")
def _rmatmul(self, other):
    """``other @ self`` (the reflected ``__rmatmul__``)."""
    return matmul(other, self)


@operator("mm(Tensor self, Tensor mat2, *, Tensor(a!)? out=None) -> Tensor")
def mm(input, mat2, *, out=None):
    """Matrix product of two 2-d tensors, ``(n, m) @ (m, p) -> (n, p)`` (``torch.mm``)."""
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    _same_mm_dtype(input, mat2)
    shape = _mm_shape(input._shape, mat2._shape)
    _no_bool_gemm("addmm_impl_cpu_", input, shape, input._shape[1])
    return Spec(shape, input._dtype)


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
    """Batched matrix product, ``(b, n, m) @ (b, m, p) -> (b, n, p)`` (``torch.bmm``)."""
    shape = _bmm_shape(input, mat2)
    _no_bool_gemm("bmm", input, shape, input._shape[2])
    return Spec(shape, input._dtype)


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
    """Matrix-vector product, ``(n, m) @ (m,) -> (n,)`` (``torch.mv``)."""
    return Spec(_mv_shape(None, input, vec), input._dtype)


@operator("dot(Tensor self, Tensor tensor, *, Tensor(a!)? out=None) -> Tensor")
def dot(input, tensor, *, out=None):
    """Inner product of two 1-d tensors of equal length; a 0-d result (``torch.dot``)."""
    _dot_check("dot", input, tensor)
    return Spec((), input._dtype)


@operator("vdot(Tensor self, Tensor other, *, Tensor(a!)? out=None) -> Tensor")
def vdot(input, other, *, out=None):
    """Inner product conjugating ``input`` (the same as :func:`dot` for real tensors)."""
    _dot_check("dot", input, other)
    return Spec((), input._dtype)


@operator("outer(Tensor self, Tensor vec2, *, Tensor(a!)? out=None) -> Tensor")
def outer(input, vec2, *, out=None):
    """Outer product ``input[i] * vec2[j]``, promoting dtypes like ``mul`` (``torch.outer``).

    Shape: ``(n,), (m,) -> (n, m)``.
    """
    for t, name in ((input, "self"), (vec2, "vec2")):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {t.ndim}-D")
    return Spec(input._shape + vec2._shape, dt.promote_types(input._dtype, vec2._dtype))


@composite("ger(Tensor self, Tensor vec2) -> Tensor")
def ger(input, vec2):
    """Alias of :func:`outer`."""
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


@operator("kron(Tensor self, Tensor other, *, Tensor(a!)? out=None) -> Tensor")
def kron(input, other, *, out=None):
    """Kronecker product; the shorter shape is left-padded with ones (``torch.kron``).

    Shape: ``(a0, a1, ...), (b0, b1, ...) -> (a0*b0, a1*b1, ...)``.
    """
    n = max(input.ndim, other.ndim)
    sa = (1,) * (n - input.ndim) + input._shape
    sb = (1,) * (n - other.ndim) + other._shape
    return Spec(tuple(x * y for x, y in zip(sa, sb)),
                dt.promote_types(input._dtype, other._dtype))


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
    if d.category != dt.FLOATING and plan.sums_alone:
        d = dt.int64
    elif d is dt.bool_ and plan.contracts and math.prod(plan.shape):
        raise _not_implemented("bmm", ops[0])
    return Spec(plan.shape, d)


# -- ember.linalg: inverses and determinants ---------------------------------------------------
@operator("linalg_inv(Tensor A, *, Tensor(a!)? out=None) -> Tensor", method=False)
def linalg_inv(A, *, out=None):
    """Inverse of each square matrix of ``A`` (``torch.linalg.inv``).

    Raises:
        LinAlgError: a matrix is singular.
        RuntimeError: not a batch of square float32/float64 matrices.

    Shape: ``(*, n, n) -> (*, n, n)``.
    """
    _floating("linalg.inv", A)
    _square("linalg.inv", A)
    return Spec(A._shape, A._dtype)


@composite("inverse(Tensor self) -> Tensor")
def inverse(input):
    """Alias of ``ember.linalg.inv`` (``torch.inverse``)."""
    return linalg_inv(input)


@operator("linalg_det(Tensor A, *, Tensor(a!)? out=None) -> Tensor", method=False)
def linalg_det(A, *, out=None):
    """Determinant of each square matrix of ``A`` (``torch.linalg.det``).

    Shape: ``(*, n, n) -> (*)``.
    """
    _floating("linalg.det", A, "lu_cpu")
    _square("linalg.det", A)
    return Spec(A._shape[:-2], A._dtype)


@composite("det(Tensor self) -> Tensor")
def det(input):
    """Alias of ``ember.linalg.det`` (``torch.det``)."""
    return linalg_det(input)


@operator("linalg_slogdet(Tensor A, *, Tensor(a!)? out=None) -> (Tensor sign, Tensor logabsdet)",
          method=False)
def linalg_slogdet(A, *, out=None):
    """Sign and log of the absolute determinant, ``(sign, logabsdet)`` (a named tuple).

    A singular matrix gives ``sign = 0`` and ``logabsdet = -inf``, as ``torch.linalg.slogdet``.

    Shape: ``(*, n, n) -> (*), (*)``.
    """
    _floating("linalg.slogdet", A)
    _square("linalg.slogdet", A)
    return Spec(A._shape[:-2], A._dtype), Spec(A._shape[:-2], A._dtype)


linalg_slogdet.result_tuple = SlogdetResult


@composite("slogdet(Tensor self) -> (Tensor sign, Tensor logabsdet)")
def slogdet(input):
    """``ember.linalg.slogdet`` as ``torch.slogdet`` (named tuple ``slogdet``)."""
    return TorchSlogdetResult(*linalg_slogdet(input))


@operator("logdet(Tensor self) -> Tensor")
def logdet(input):
    """Log-determinant: NaN for a negative determinant, ``-inf`` for zero (``torch.logdet``).

    Shape: ``(*, n, n) -> (*)``.
    """
    _floating("logdet", input)
    _square("linalg.slogdet", input)
    return Spec(input._shape[:-2], input._dtype)


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
    """
    _floating("linalg.solve", A, "lu_cpu")
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


@operator("linalg_cholesky(Tensor A, *, bool upper=False, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_cholesky(A, *, upper=False, out=None):
    """Cholesky factor ``L`` (``A = L L^T``) or, with ``upper=True``, ``U`` (``A = U^T U``).

    Reads only the lower (``upper``: upper) triangle of ``A``, as ``torch.linalg.cholesky``.

    Raises:
        LinAlgError: a matrix is not positive-definite.

    Shape: ``(*, n, n) -> (*, n, n)``.
    """
    _floating("linalg.cholesky", A, "cholesky_cpu")
    _square("linalg.cholesky", A)
    return Spec(A._shape, A._dtype)


_QR_MODES = ("reduced", "complete", "r")


@operator("linalg_qr(Tensor A, str mode='reduced', *, Tensor(a!)? out=None) -> "
          "(Tensor Q, Tensor R)", method=False)
def linalg_qr(A, mode="reduced", *, out=None):
    """QR decomposition ``A = Q R`` (``torch.linalg.qr``); returns the named tuple ``(Q, R)``.

    ``mode``: ``'reduced'`` (``Q`` is ``(*, m, k)``, ``k = min(m, n)``), ``'complete'``
    (``Q`` is ``(*, m, m)``) or ``'r'`` (``Q`` is empty, ``R`` as in reduced).
    """
    if mode not in _QR_MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           "'reduced' (default), 'r', or 'complete'")
    _floating("linalg.qr", A, "geqrf_cpu", empty_too=True)
    _matrix_dims("linalg.qr", A)
    *batch, m, n = A._shape
    batch, k = tuple(batch), min(m, n)
    if mode == "r":
        return Spec((0,), A._dtype), Spec(batch + (k, n), A._dtype)
    cols = m if mode == "complete" else k
    return Spec(batch + (m, cols), A._dtype), Spec(batch + (cols, n), A._dtype)


linalg_qr.result_tuple = QRResult


def _svd_checks(A: Tensor) -> None:
    _floating("linalg.svd", A, "linalg_svd_cpu")
    _matrix_dims("linalg.svd", A)


@operator("linalg_svd(Tensor A, bool full_matrices=True, *, str? driver=None, "
          "Tensor(a!)? out=None) -> (Tensor U, Tensor S, Tensor Vh)", method=False)
def linalg_svd(A, full_matrices=True, *, driver=None, out=None):
    """Singular value decomposition ``A = U diag(S) Vh`` (``torch.linalg.svd``).

    ``S`` is descending; with ``full_matrices=False`` ``U`` is ``(*, m, k)`` and ``Vh``
    ``(*, k, n)`` (``k = min(m, n)``), else square.
    """
    _svd_checks(A)
    *batch, m, n = A._shape
    batch, k = tuple(batch), min(m, n)
    u, v = (m, n) if full_matrices else (k, k)
    return (Spec(batch + (m, u), A._dtype), Spec(batch + (k,), A._dtype),
            Spec(batch + (v, n), A._dtype))


linalg_svd.result_tuple = SVDResult


@operator("linalg_svdvals(Tensor A, *, str? driver=None, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_svdvals(A, *, driver=None, out=None):
    """Singular values of ``A``, descending (``torch.linalg.svdvals``).

    Shape: ``(*, m, n) -> (*, min(m, n))``.
    """
    _svd_checks(A)
    return Spec(A._shape[:-2] + (min(A._shape[-2:]),), A._dtype)


def _eigh_checks(A: Tensor, UPLO: str) -> None:
    _eigh_dtype(A)
    _square("linalg.eigh", A)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")


@operator("linalg_eigh(Tensor A, str UPLO='L', *, Tensor(a!)? out=None) -> "
          "(Tensor eigenvalues, Tensor eigenvectors)", method=False)
def linalg_eigh(A, UPLO="L", *, out=None):
    """Eigen-decomposition of symmetric matrices (``torch.linalg.eigh``).

    Reads only the ``UPLO`` triangle; eigenvalues ascend; eigenvector signs are
    implementation defined.

    Shape: ``(*, n, n) -> (*, n), (*, n, n)``.
    """
    _eigh_checks(A, UPLO)
    return Spec(A._shape[:-1], A._dtype), Spec(A._shape, A._dtype)


linalg_eigh.result_tuple = EighResult


@operator("linalg_eigvalsh(Tensor A, str UPLO='L', *, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_eigvalsh(A, UPLO="L", *, out=None):
    """Eigenvalues of symmetric matrices, ascending (``torch.linalg.eigvalsh``).

    Shape: ``(*, n, n) -> (*, n)``.
    """
    _eigh_checks(A, UPLO)
    return Spec(A._shape[:-1], A._dtype)


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
    """
    if A._dtype is not dt.float32 and A._dtype is not dt.float64:
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


@operator("linalg_pinv(Tensor A, *, Any atol=None, Any rtol=None, bool hermitian=False, "
          "Tensor(a!)? out=None) -> Tensor", method=False)
def linalg_pinv(A, *, atol=None, rtol=None, hermitian=False, out=None):
    """Moore-Penrose pseudo-inverse via the SVD (``hermitian``: the eigen-decomposition).

    Singular values at or below ``max(atol, rtol * S.max())`` are treated as zero, with
    :func:`linalg_matrix_rank`'s defaults (``torch.linalg.pinv``).

    Shape: ``(*, m, n) -> (*, n, m)``.
    """
    if A.ndim < 2 or A._dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"linalg.pinv({_tn(A)}{{{list(A._shape)}}}): expected a tensor with 2 "
                           "or more dimensions of float, double, cfloat or cdouble types")
    if hermitian:
        _square("linalg.eigh", A)
    _tolerance_args(atol, rtol)
    return Spec(A._shape[:-2] + (A._shape[-1], A._shape[-2]), A._dtype)


@operator("linalg_matrix_power(Tensor A, int n, *, Tensor(a!)? out=None) -> Tensor",
          method=False)
def linalg_matrix_power(A, n, *, out=None):
    """``A`` raised to the integer power ``n`` by repeated squaring; ``n = 0`` gives the
    identity, ``n < 0`` the power of the inverse (``torch.linalg.matrix_power``).

    Shape: ``(*, m, m) -> (*, m, m)``.
    """
    _square("linalg.matrix_power", A)
    if n < 0:
        _floating("linalg.inv", A)
    elif n >= 2:
        _no_bool_gemm("addmm_impl_cpu_", A, A._shape, A._shape[-1])
    return Spec(A._shape, A._dtype)


@composite("matrix_power(Tensor self, int n) -> Tensor")
def matrix_power(input, n):
    """Alias of ``ember.linalg.matrix_power`` (``torch.matrix_power``)."""
    return linalg_matrix_power(input, n)
