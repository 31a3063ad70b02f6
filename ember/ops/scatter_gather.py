"""Gather/scatter, index_* and masked_* operators, ``index``/``index_put`` and ``nonzero``.

Each operator's Meta rule validates its arguments with PyTorch's messages and predicts the
output; CPU kernels (ember/backends/cpu/scatter_gather.py) run the same rule first. Operators
whose output shape depends on the data (``nonzero``, ``masked_select``, ``index`` with a boolean
mask) are tagged ``data_dependent_output``: their Meta rule validates and then raises
``NotImplementedError``, as PyTorch's meta tensors do.

NOTE [Index validation]
Each op checks its index dtype and bounds the way PyTorch 2.13 does, including which of them
accept int32 indices (gather, scatter*, index_select, index_add, index, index_put) and which
accept negative indices (index_fill, take, put, index, index_put). Bounds need data, so they are
checked by the CPU kernels (:func:`check_bounds`), never by the Meta rules.

Over 800 lines because the index ops share one validation vocabulary with torch's messages;
splitting scatter/gather from index/masked ops is next.
"""

from __future__ import annotations

import numpy as np

from ember.autograd.grad_mode import is_grad_enabled
from ember.autograd.graph import Node, gradient_edge
from ember.autograd.kernel import mark_requires_grad
from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes, canonical_dim, numel
from ember.ops._define import Spec, Tag, composite, derivative, operator, tensor_method
from ember.ops.creation import ones, zeros
from ember.ops.pointwise import _TN, check_writable, lt, where
from ember.ops.shape import cat
from ember.ops.views import sum_to_shape
from ember.tensor import Tensor

__all__ = [
    "gather", "scatter", "scatter_", "scatter_add", "scatter_add_", "scatter_reduce",
    "scatter_reduce_", "index_select", "index_add", "index_add_", "index_copy", "index_copy_",
    "index_fill", "index_fill_", "index_put", "index_put_", "masked_fill", "masked_fill_",
    "masked_scatter", "masked_scatter_", "masked_select", "nonzero", "argwhere", "take",
    "take_along_dim", "put", "put_",
]

_INT_INDEX = (dt.int32, dt.int64)
_DD = Tag.data_dependent_output
_INPLACE = (Tag.inplace,)
_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


# -- shared checks -----------------------------------------------------------------------------
def _nd(t: Tensor) -> int:
    """PyTorch's ``ensure_nonempty_dim``: a 0-d tensor counts as 1-d."""
    return max(len(t._shape), 1)


def _size(t: Tensor, d: int) -> int:
    return t._shape[d] if t._shape else 1


def _check_tensor(x, name: str, what: str = "input") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{what}' must be Tensor, not {type(x).__name__}")


def check_bounds(values: np.ndarray, size: int, dim: int, *, negative: bool = False,
                 error: type = RuntimeError, prefix: str = "") -> None:
    """Raise ``error`` (PyTorch's gist) when an index is outside ``[0, size)``.

    ``negative`` also admits ``[-size, 0)``. Reports the first offending index in C order.
    """
    if values.size == 0:
        return
    low = -size if negative else 0
    lo, hi = values.min(), values.max()
    if lo >= low and hi < size:
        return
    bad = values.reshape(-1)[np.argmax(((values < low) | (values >= size)).reshape(-1))]
    raise error(f"{prefix}index {int(bad)} is out of bounds for dimension {dim} with size {size}")


def _scatter_shape_check(name: str, self: Tensor, dim: int, index: Tensor, src) -> None:
    empty = numel(index._shape) == 0  # torch checks nothing about an empty index
    if index._dtype not in _INT_INDEX and not empty:
        raise RuntimeError(f"{name}(): Expected dtype int32/int64 for index")
    if _nd(index) != _nd(self) and not empty:
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor):
        if _nd(src) != _nd(self) and not empty:
            raise RuntimeError("Index tensor must have the same number of dimensions as src "
                               "tensor")
        if src._dtype is not self._dtype:
            raise RuntimeError(f"{name}(): Expected self.dtype to be equal to src.dtype")
    if numel(index._shape) == 0:
        return
    for d in range(_nd(self)):
        too_big = d != dim and _size(index, d) > _size(self, d)
        if too_big or (isinstance(src, Tensor) and _size(index, d) > _size(src, d)):
            tail = f" and to be no larger size than src {list(src._shape)}" \
                if isinstance(src, Tensor) else ""
            raise RuntimeError(f"Expected index {list(index._shape)} to be no larger than self "
                               f"{list(self._shape)} apart from dimension {dim}{tail}")


def _inplace_spec(self: Tensor) -> Spec:
    check_writable(self)
    return Spec(self._shape, self._dtype)


# -- derivative helpers ------------------------------------------------------------------------
def _zeros_of(ctx, name: str, grad: Tensor) -> Tensor:
    """Zeros shaped like tensor argument ``name``, in ``grad``'s dtype and device."""
    return zeros(ctx.shape_of(name), dtype=grad.dtype, device=grad.device)


def _is_input(ctx, name: str) -> bool:
    """Whether argument ``name`` was a tensor (so the rule owes it a gradient slot)."""
    try:
        ctx.shape_of(name)
    except KeyError:
        return False
    return True


def _needs(ctx, k: int) -> bool:
    """Whether the ``k``-th tensor input (negative: from the end) needs a gradient."""
    return ctx.needs_input_grad[k]


def _list_input(ctx, n_plain: int) -> bool:
    """Whether the ``Tensor?[]`` argument counted as tensor inputs (it does unless it holds
    ``None`` entries), given ``n_plain`` plain tensor inputs besides it."""
    return len(ctx.needs_input_grad) > n_plain


def _pad_to(grad: Tensor, shape: tuple) -> Tensor:
    """``grad`` written into the leading corner of zeros shaped ``shape`` (``src`` larger than
    ``index`` along some dim: its other elements were never read)."""
    if tuple(grad._shape) == tuple(shape):
        return grad
    out = zeros(shape, dtype=grad.dtype, device=grad.device)
    region = out
    for d, n in enumerate(grad._shape):
        region = region.narrow(d, 0, n)
    region.copy_(grad)
    return out


# -- gather / scatter --------------------------------------------------------------------------
@operator("gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, "
          "Tensor(a!)? out=None) -> Tensor")
def gather(self, dim, index, *, sparse_grad=False, out=None):
    """Gather values along ``dim``: ``out[i][j] = self[index[i][j]][j]`` for ``dim=0``.

    Args:
        self: source tensor.
        dim: the axis to index along.
        index: int64/int32 indices, same number of dims as ``self`` and no larger than it
            along every other dim.

    Returns:
        A tensor of ``index``'s shape and ``self``'s dtype.

    Raises:
        RuntimeError: wrong index dtype, rank or size, or an index out of bounds.

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).gather(1, ember.tensor([[0, 0], [1, 0]])).tolist()
        [[1, 1], [4, 3]]
    """
    _check_tensor(self, "gather")
    dim = canonical_dim(dim, self.dim())
    if numel(index._shape):  # torch checks nothing about an empty index
        if index._dtype not in _INT_INDEX:
            raise RuntimeError("gather(): Expected dtype int32/int64 for index")
        if _nd(index) != _nd(self):
            raise RuntimeError("Index tensor must have the same number of dimensions as input "
                               "tensor")
        for d in range(_nd(self)):
            if d != dim and _size(index, d) > _size(self, d):
                raise RuntimeError(f"Size does not match at dimension {d} expected index "
                                   f"{list(index._shape)} to be no larger than self "
                                   f"{list(self._shape)} apart from dimension {dim}")
    return Spec(index._shape, self._dtype)


@derivative(gather, save=("index",))
def _gather_backward(ctx, grad):
    # duplicate indices read one element several times: their gradients add up
    return _zeros_of(ctx, "self", grad).scatter_add(ctx.dim, ctx.index, grad), None


def _scatter_rule(name: str, self, dim, index, src, reduce, legacy: bool) -> int:
    _check_tensor(self, name)
    dim = canonical_dim(dim, self.dim())
    _scatter_shape_check("scatter", self, dim, index, src)
    if legacy and reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if not legacy and reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    if not legacy and reduce == "mean" and self._dtype is dt.bool_:
        raise NotImplementedError('"scatter_gather_tensor_cpu_reduce_mean" not implemented '
                                  "for 'Bool'")
    return dim


def scatter_source(src, value):
    """The value scattered: the ``src`` tensor, else the ``value`` scalar (or 0-d tensor)."""
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    return src if src is not None else value


@operator("scatter.src(Tensor self, int dim, Tensor index, Tensor src, *, Scalar? value=None, "
          "str? reduce=None, Tensor(a!)? out=None) -> Tensor")
def scatter(self, dim, index, src=None, *, value=None, reduce=None, out=None):
    """Out-of-place :func:`scatter_`: a copy of ``self`` with ``src`` (or ``value``) scattered.

    ``self[index[i][j]][j] = src[i][j]`` for ``dim=0``; ``reduce='add'``/``'multiply'``
    combines instead of overwriting. Duplicate indices without ``reduce``: the last write wins.

    Shape: same as ``self``; ``index`` no larger than ``self`` (except along ``dim``) and ``src``.

    Example:
        >>> ember.zeros(2, 3).scatter(1, ember.tensor([[2], [0]]), 1.0).tolist()
        [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    """
    _scatter_rule("scatter", self, dim, index, scatter_source(src, value), reduce, True)
    return Spec(self._shape, self._dtype)


def _scatter_backward(ctx, grad):
    """self: ``grad`` with the overwritten positions zeroed; src: ``grad`` read back at index.

    (A scalar ``value`` gets nothing; torch has no formula for ``reduce=``, nor have we.)
    """
    if ctx.reduce is not None:
        raise RuntimeError("derivative for aten::scatter is not implemented")
    grads = [grad.scatter(ctx.dim, ctx.index, 0) if _needs(ctx, 0) else None, None]
    if _is_input(ctx, "src"):
        grads.append(_pad_to(grad.gather(ctx.dim, ctx.index), ctx.shape_of("src"))
                     if _needs(ctx, 2) else None)
    if _is_input(ctx, "value"):
        grads.append(None)
    return tuple(grads)


derivative(scatter, save=("index",))(_scatter_backward)


@operator("scatter_.src(Tensor(a!) self, int dim, Tensor index, Tensor src, *, "
          "Scalar? value=None, str? reduce=None) -> Tensor(a!)", _INPLACE)
def scatter_(self, dim, index, src=None, *, value=None, reduce=None):
    """In-place :func:`scatter`.

    Example:
        >>> x = ember.zeros(3)
        >>> x.scatter_(0, ember.tensor([2, 0]), ember.tensor([5.0, 6.0]))
        tensor([6., 0., 5.])
    """
    _scatter_rule("scatter", self, dim, index, scatter_source(src, value), reduce, True)
    return _inplace_spec(self)


derivative(scatter_, save=("index",))(_scatter_backward)


@operator("scatter_add(Tensor self, int dim, Tensor index, Tensor src, *, "
          "Tensor(a!)? out=None) -> Tensor")
def scatter_add(self, dim, index, src, *, out=None):
    """A copy of ``self`` with ``src`` added at ``index`` along ``dim`` (duplicates accumulate).

    Shape: same as ``self``.

    Example:
        >>> ember.zeros(3).scatter_add(0, ember.tensor([0, 0, 2]), ember.ones(3)).tolist()
        [2.0, 0.0, 1.0]
    """
    _check_tensor(src, "scatter_add", "src")
    _scatter_rule("scatter_add", self, dim, index, src, None, True)
    return Spec(self._shape, self._dtype)


@derivative(scatter_add, save=("index",))
def _scatter_add_backward(ctx, grad):
    src = _pad_to(grad.gather(ctx.dim, ctx.index), ctx.shape_of("src")) \
        if _needs(ctx, 2) else None
    return grad, None, src


@operator("scatter_add_(Tensor(a!) self, int dim, Tensor index, Tensor src) -> Tensor(a!)",
          _INPLACE)
def scatter_add_(self, dim, index, src):
    """In-place :func:`scatter_add`.

    Example:
        >>> x = ember.zeros(3)
        >>> x.scatter_add_(0, ember.tensor([1, 1, 2]), ember.ones(3))
        tensor([0., 2., 1.])
    """
    _check_tensor(src, "scatter_add_", "src")
    _scatter_rule("scatter_add", self, dim, index, src, None, True)
    return _inplace_spec(self)


derivative(scatter_add_, save=("index",))(_scatter_add_backward)


@operator("scatter_reduce.two(Tensor self, int dim, Tensor index, Tensor src, str reduce, *, "
          "bool include_self=True, Tensor(a!)? out=None) -> Tensor")
def scatter_reduce(self, dim, index, src, reduce, *, include_self=True, out=None):
    """Reduce ``src`` into a copy of ``self`` at ``index`` along ``dim``.

    ``reduce`` is ``sum``, ``prod``, ``mean``, ``amax`` or ``amin``; ``include_self=False``
    leaves the original values of scattered-to positions out of the reduction. Integer
    ``mean`` rounds down, as in PyTorch.

    Shape: same as ``self``.

    Example:
        >>> ember.zeros(2).scatter_reduce(0, ember.tensor([0, 0]), ember.tensor([3., 5.]),
        ...                               "amax", include_self=False).tolist()
        [5.0, 0.0]
    """
    _check_tensor(src, "scatter_reduce", "src")
    _scatter_rule("scatter_reduce", self, dim, index, src, reduce, False)
    _no_complex_extremum(self, reduce)
    no_complex_autograd("scatter_reduce", self, src)
    return Spec(self._shape, self._dtype)


def no_complex_autograd(name: str, *tensors: Tensor) -> None:
    """torch records no gradient for this op's complex outputs: it refuses at the call."""
    if tensors[0]._dtype.is_complex and is_grad_enabled() and \
            any(t.requires_grad for t in tensors):
        raise RuntimeError(f"{name} does not support automatic differentiation for outputs "
                           f"with complex dtype.")


def _no_complex_extremum(self: Tensor, reduce: str) -> None:
    """torch's amax/amin scatter kernels have no order for complex numbers."""
    if reduce in ("amax", "amin") and self._dtype.is_complex:
        raise NotImplementedError(f"\"scatter_gather_tensor_cpu_reduce_{reduce}\" not "
                                  f"implemented for '{self._dtype.scalar_name}'")


_PROD_DOUBLE = ("scatter_reduce(): Double backward is unsupported for src when >1 zeros in src "
                "are scattered to the same position.")


class _DoubleBackwardError(Node):
    """History of a gradient that cannot be differentiated again (torch's ``Error`` node)."""

    __slots__ = ()

    def apply(self, grads):
        raise RuntimeError(_PROD_DOUBLE)


def _no_double_backward(g: Tensor) -> Tensor:
    if not is_grad_enabled() or g.grad_fn is None:
        return g
    node = _DoubleBackwardError()
    node.next_functions = (gradient_edge(g),)
    node._in_meta = ((g._shape, g._dtype),)
    out = g.detach()
    mark_requires_grad(out, node, 0)
    return out


def _scatter_reduce_backward(ctx, grad):
    """torch's formulas: ``sum`` passes ``grad`` through, ``mean`` divides by the count,
    ``prod`` divides the product by each factor (zeros handled exactly), ``amax``/``amin``
    share ``grad`` evenly among the elements equal to the result."""
    dim, index, reduce = ctx.dim, ctx.index, ctx.reduce
    if reduce == "sum":
        g_self, g_src = grad, grad.gather(dim, index)
    elif reduce == "mean":
        n = (ones if ctx.include_self else zeros)(grad.shape, dtype=grad.dtype,
                                                  device=grad.device)
        n = n.scatter_add(dim, index, ones(ctx.shape_of("src"), dtype=grad.dtype,
                                           device=grad.device))
        n = n.masked_fill(n == 0, 1)
        g_self, g_src = grad / n, grad.gather(dim, index) / n.gather(dim, index)
    elif reduce == "prod":
        g_self, g_src = _prod_backward(ctx, grad)
    else:
        self, src, result = ctx.self, ctx.src, ctx.result
        value = result.gather(dim, index)
        self_is = self == result
        src_is = src == value
        count = self_is.to(grad.dtype).scatter_add(dim, index, src_is.to(grad.dtype))
        share = grad / count
        g_self, g_src = self_is * share, src_is * share.gather(dim, index)
    if not ctx.include_self:
        g_self = g_self.scatter(dim, index, 0)
    return g_self, None, _pad_to(g_src, ctx.shape_of("src"))


def _prod_backward(ctx, grad):
    dim, index, inc = ctx.dim, ctx.index, ctx.include_self
    self, src, result = ctx.self, ctx.src, ctx.result
    if self._dtype.is_complex:  # products of the other factors, conjugated (torch's rule)
        self, src, result = self.conj(), src.conj(), result.conj()
    masked_self = self.masked_fill(self == 0, 1)
    g_self = grad * masked_self.scatter_reduce(dim, index, src, "prod", include_self=inc) \
        / masked_self
    src_zero = src == 0
    count = grad.dtype.to_real() if grad.dtype.is_complex else grad.dtype
    zeros_at = zeros(self.shape, dtype=count, device=grad.device).scatter_add(
        dim, index, src_zero.to(count)).gather(dim, index)
    single = src_zero & (zeros_at == 1)
    masked_src_result = self.scatter_reduce(dim, index, src.masked_fill(single, 1), "prod",
                                            include_self=inc)
    g_src = where(single, (grad * masked_src_result).gather(dim, index),
                  (grad * result).gather(dim, index) / src.masked_fill(src_zero, 1))
    if bool((zeros_at > 1).any()):
        g_src = _no_double_backward(g_src)
    return g_self, g_src


derivative(scatter_reduce, save=("self", "index", "src", "result"))(_scatter_reduce_backward)


@operator("scatter_reduce_.two(Tensor(a!) self, int dim, Tensor index, Tensor src, str reduce, "
          "*, bool include_self=True) -> Tensor(a!)", _INPLACE)
def scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """In-place :func:`scatter_reduce`.

    Example:
        >>> x = ember.tensor([1.0, 1.0])
        >>> x.scatter_reduce_(0, ember.tensor([0, 0, 1]), ember.tensor([3.0, 5.0, 0.5]), "amax")
        tensor([5., 1.])
    """
    _check_tensor(src, "scatter_reduce_", "src")
    _scatter_rule("scatter_reduce", self, dim, index, src, reduce, False)
    _no_complex_extremum(self, reduce)
    return _inplace_spec(self)


derivative(scatter_reduce_, save=("self", "index", "src", "result"))(_scatter_reduce_backward)


# -- index_* along one dim ---------------------------------------------------------------------
def _dim_and_shape(self: Tensor, dim: int, n: int) -> tuple[int, tuple]:
    dim = canonical_dim(dim, self.dim())
    shape = self._shape[:dim] + (n,) + self._shape[dim + 1:] if self._shape else ()
    return dim, shape


@operator("index_select(Tensor self, int dim, Tensor index, *, Tensor(a!)? out=None) -> Tensor")
def index_select(self, dim, index, *, out=None):
    """Select entries of ``self`` along ``dim`` at the positions in the 1-d ``index``.

    Shape: ``self``'s shape with ``dim`` replaced by ``index.numel()``.

    Raises:
        IndexError: ``index`` is not a vector or holds an index out of range.

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).index_select(1, ember.tensor([1])).tolist()
        [[2], [4]]
    """
    _check_tensor(self, "index_select")
    if index.dim() > 1:
        raise IndexError("index_select(): Index is supposed to be a vector")
    if index._dtype not in _INT_INDEX:
        raise RuntimeError("index_select(): Expected dtype int32 or int64 for index")
    n = numel(index._shape)
    if not self._shape and n != 1:
        raise RuntimeError(f"index_select(): Index to scalar can have only 1 value, got {n} "
                           "value(s)")
    return Spec(_dim_and_shape(self, dim, n)[1], self._dtype)


@derivative(index_select, save=("index",))
def _index_select_backward(ctx, grad):
    return _zeros_of(ctx, "self", grad).index_add(ctx.dim, ctx.index, grad), None


def _source_check(name: str, self: Tensor, dim: int, index: Tensor, source: Tensor) -> int:
    dim = canonical_dim(dim, self.dim())
    if source._dtype is not self._dtype:
        if name == "index_copy_":
            raise RuntimeError(f"index_copy_(): self and source expected to have the same "
                               f"dtype, but got (self) {_TN[self._dtype.name]} and (source) "
                               f"{_TN[source._dtype.name]}")
        raise RuntimeError(f"{name}(): self ({_TN[self._dtype.name]}) and source "
                           f"({_TN[source._dtype.name]}) must have the same scalar type")
    n, self_s, src_s = numel(index._shape), self._shape or (1,), source._shape or (1,)
    if len(src_s) == len(self_s) and src_s[dim] != n:
        if name == "index_copy_":
            raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to "
                             f"source.size(dim) ({src_s[dim]})")
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to "
                           f"source.size(dim): ({src_s[dim]}), for dim: {dim}")
    if src_s != _with(self_s, dim, n):
        raise RuntimeError(f"source tensor shape must match self tensor shape, excluding the "
                           f"specified dimension. Got self.shape = {list(self._shape)} "
                           f"source.shape = {list(source._shape)}")
    return dim


def _index_add_rule(self, dim, index, source, name="index_add_"):
    _check_tensor(self, name)
    if index.dim() > 1:
        raise IndexError(f"index_add_(): Index is supposed to be a vector, but got dim: "
                         f"{index.dim()} with type: {_TN[index._dtype.name]} and size: "
                         f"{list(index._shape)}")
    if index._dtype not in _INT_INDEX:
        raise RuntimeError(f"index_add_(): Expected dtype int32/int64 for index but got: "
                           f"{_TN[index._dtype.name]}")
    return _source_check("index_add_", self, dim, index, source)


@operator("index_add(Tensor self, int dim, Tensor index, Tensor source, *, Scalar alpha=1, "
          "Tensor(a!)? out=None) -> Tensor")
def index_add(self, dim, index, source, *, alpha=1, out=None):
    """A copy of ``self`` with ``alpha * source`` added at ``index`` along ``dim``.

    Duplicate indices accumulate. ``source`` has ``self``'s shape except ``index.numel()``
    entries along ``dim``.

    Shape: same as ``self``.

    Example:
        >>> ember.zeros(3).index_add(0, ember.tensor([0, 0]), ember.ones(2), alpha=2).tolist()
        [4.0, 0.0, 0.0]
    """
    _index_add_rule(self, dim, index, source)
    return Spec(self._shape, self._dtype)


def _index_add_backward(ctx, grad):
    source = None
    if _needs(ctx, 2):
        source = grad.index_select(ctx.dim, ctx.index.reshape(-1))
        if ctx.alpha != 1:
            source = source * ctx.alpha
    return grad, None, source


derivative(index_add, save=("index",))(_index_add_backward)


@operator("index_add_(Tensor(a!) self, int dim, Tensor index, Tensor source, *, "
          "Scalar alpha=1) -> Tensor(a!)", _INPLACE)
def index_add_(self, dim, index, source, *, alpha=1):
    """In-place :func:`index_add`.

    Example:
        >>> x = ember.zeros(2, 2)
        >>> x.index_add_(0, ember.tensor([1, 1]), ember.ones(2, 2))
        tensor([[0., 0.],
                [2., 2.]])
    """
    _index_add_rule(self, dim, index, source)
    return _inplace_spec(self)


derivative(index_add_, save=("index",))(_index_add_backward)


def _index_copy_rule(self, dim, index, source):
    _check_tensor(self, "index_copy_")
    if index.dim() > 1:
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got "
                         f"{index.dim()})")
    if index._dtype is not dt.int64:
        raise RuntimeError(f"index_copy_(): Expected a long tensor for index, but got "
                           f"{_TN[index._dtype.name]}")
    dim = canonical_dim(dim, self.dim())
    if source.dim() == self.dim() and self._shape:
        for d in range(self.dim()):
            if d != dim and source._shape[d] != self._shape[d]:
                raise RuntimeError(f"index_copy_(): Source/destination tensor must have same "
                                   f"slice shapes. Destination slice shape: "
                                   f"{_slice_text(self, dim)} at dimension {dim} and source "
                                   f"slice shape: {_slice_text(source, dim)} at dimension "
                                   f"{dim}.")
    return _source_check("index_copy_", self, dim, index, source)


def _slice_text(t: Tensor, dim: int) -> str:
    return ", ".join(str(s) for d, s in enumerate(t._shape) if d != dim)


@operator("index_copy(Tensor self, int dim, Tensor index, Tensor source, *, "
          "Tensor(a!)? out=None) -> Tensor")
def index_copy(self, dim, index, source, *, out=None):
    """A copy of ``self`` whose entries at ``index`` along ``dim`` come from ``source``.

    Shape: same as ``self``.

    Example:
        >>> ember.zeros(3).index_copy(0, ember.tensor([2]), ember.tensor([5.])).tolist()
        [0.0, 0.0, 5.0]
    """
    _index_copy_rule(self, dim, index, source)
    return Spec(self._shape, self._dtype)


def _index_copy_backward(ctx, grad):
    g_self = grad.index_fill(ctx.dim, ctx.index, 0) if _needs(ctx, 0) else None
    g_source = grad.index_select(ctx.dim, ctx.index.reshape(-1)) if _needs(ctx, 2) else None
    return g_self, None, g_source


derivative(index_copy, save=("index",))(_index_copy_backward)


@operator("index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source) -> Tensor(a!)",
          _INPLACE)
def index_copy_(self, dim, index, source):
    """In-place :func:`index_copy`.

    Example:
        >>> x = ember.zeros(3)
        >>> x.index_copy_(0, ember.tensor([2, 0]), ember.tensor([5.0, 6.0]))
        tensor([6., 0., 5.])
    """
    _index_copy_rule(self, dim, index, source)
    return _inplace_spec(self)


derivative(index_copy_, save=("index",))(_index_copy_backward)


def _index_fill_rule(self, dim, index, value):
    _check_tensor(self, "index_fill_")
    if index._dtype is not dt.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if index.dim() > 1:
        raise RuntimeError("Index has to be a vector/scalar")
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    return canonical_dim(dim, self.dim())


@operator("index_fill.int_Scalar(Tensor self, int dim, Tensor index, Scalar value) -> Tensor")
def index_fill(self, dim, index, value):
    """A copy of ``self`` filled with ``value`` at ``index`` along ``dim`` (negatives wrap).

    Shape: same as ``self``.

    Example:
        >>> ember.zeros(3).index_fill(0, ember.tensor([-1]), 7.0).tolist()
        [0.0, 0.0, 7.0]
    """
    _index_fill_rule(self, dim, index, value)
    return Spec(self._shape, self._dtype)


def _index_fill_backward(ctx, grad):
    """self: ``grad`` with the filled positions zeroed; a 0-d tensor ``value``: the sum of
    ``grad`` over the filled positions, each counted once (duplicates and negative aliases
    included, which torch's formula trips over)."""
    g_self = grad.index_fill(ctx.dim, ctx.index, 0)
    if not _is_input(ctx, "value"):
        return g_self, None
    return g_self, None, (grad - g_self).sum()


derivative(index_fill, save=("index",))(_index_fill_backward)


@operator("index_fill_.int_Scalar(Tensor(a!) self, int dim, Tensor index, Scalar value) "
          "-> Tensor(a!)", _INPLACE)
def index_fill_(self, dim, index, value):
    """In-place :func:`index_fill`.

    Example:
        >>> x = ember.zeros(2, 3)
        >>> x.index_fill_(1, ember.tensor([0, 2]), -1.0)
        tensor([[-1.,  0., -1.],
                [-1.,  0., -1.]])
    """
    _index_fill_rule(self, dim, index, value)
    return _inplace_spec(self)


derivative(index_fill_, save=("index",))(_index_fill_backward)


# -- index / index_put (advanced indexing) -----------------------------------------------------
def _is_mask(t) -> bool:
    return isinstance(t, Tensor) and (t._dtype is dt.bool_ or t._dtype is dt.uint8)


def index_entries(self: Tensor, indices) -> list[tuple[int, object]]:
    """Validate ``indices`` (PyTorch's ``Tensor?[]``) into ``(first dim, index)`` pairs.

    ``None`` entries are dropped; a boolean mask of ``k`` dims covers ``k`` dims of ``self``.
    """
    if not isinstance(indices, list | tuple):
        raise TypeError(f"index(): indices must be a list or tuple of tensors; got "
                        f"{type(indices).__name__}")
    if not indices:
        raise IndexError("at least one index must be provided")
    entries, d = [], 0
    for t in indices:
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(f"index(): expected Tensor or None in indices; got "
                            f"{type(t).__name__}")
        if t is not None and not (_is_mask(t) or t._dtype in _INT_INDEX):
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        if t is not None:
            entries.append((d, t))
        d += t.dim() if _is_mask(t) else 1
    if d > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()} (got {d})")
    for d, t in entries:
        if _is_mask(t):
            _check_mask(self, d, t)
    return entries


def _check_mask(self: Tensor, d: int, mask: Tensor) -> None:
    for j, s in enumerate(mask._shape):
        if s != self._shape[d + j]:
            raise IndexError(f"The shape of the mask {list(mask._shape)} at index {j} does not "
                             f"match the shape of the indexed tensor {list(self._shape)} at "
                             f"index {d + j}")


def advanced_shape(self_shape: tuple, dims: list[tuple[int, tuple]]) -> tuple:
    """Result shape of indexing ``self_shape`` with index arrays at single dims.

    ``dims`` holds ``(dim, index shape)`` per indexed dim (masks already split per dim). The
    broadcast index shape replaces adjacent indexed dims in place; separated ones go first
    (NumPy's rule, which PyTorch follows).
    """
    try:
        bshape = broadcast_shapes(*(s for _, s in dims))
    except RuntimeError:
        shapes = ", ".join(str(list(s)) for _, s in dims)
        raise IndexError(f"shape mismatch: indexing tensors could not be broadcast together "
                         f"with shapes {shapes}") from None
    at = [d for d, _ in dims]
    rest = [s for d, s in enumerate(self_shape) if d not in at]
    if at == list(range(at[0], at[0] + len(at))):
        return tuple(self_shape[:at[0]]) + bshape + tuple(self_shape[at[-1] + 1:])
    return bshape + tuple(rest)


def _static_dims(entries) -> list[tuple[int, tuple]]:
    """Per-dim index shapes when no mask is involved (Meta); NotImplementedError otherwise."""
    if any(_is_mask(t) for _, t in entries):
        raise NotImplementedError("index: indexing with a boolean mask has a data-dependent "
                                  "output shape, which meta tensors cannot predict")
    return [(d, t._shape) for d, t in entries]


@operator("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", (_DD,), method=False)
def index(self, indices):
    """Advanced indexing, the op behind ``self[tensor_index]``; always a copy.

    Args:
        self: the indexed tensor.
        indices: one entry per dim of ``self``: ``None`` (keep the dim), an int64/int32 index
            tensor (negative values wrap), or a bool mask covering as many dims as it has.

    Returns:
        The gathered values; index tensors broadcast together, and the broadcast shape replaces
        the indexed dims in place if they are adjacent, else comes first.

    Raises:
        IndexError: bad index dtype, too many indices, mask shape mismatch, indices that don't
            broadcast, or an index out of bounds.
        NotImplementedError: on meta tensors when a mask is involved (data-dependent shape).

    Example:
        >>> from ember.ops.scatter_gather import index
        >>> index(ember.arange(6).view(2, 3), [None, ember.tensor([2, 0])]).tolist()
        [[2, 0], [5, 3]]
    """
    _check_tensor(self, "index")
    entries = index_entries(self, indices)
    return Spec(advanced_shape(self._shape, _static_dims(entries)), self._dtype)


@derivative(index, save=("indices",))
def _index_backward(ctx, grad):
    # duplicate indices read one element several times: accumulate
    g = index_put(_zeros_of(ctx, "self", grad), ctx.indices, grad, True)
    return (g, None) if _list_input(ctx, 1) else g


def _index_put_rule(self, indices, values):
    _check_tensor(self, "index_put_")
    entries = index_entries(self, indices)
    if values._dtype is not self._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_TN[self._dtype.name]} for the destination and "
                           f"{_TN[values._dtype.name]} for the source.")
    if not any(_is_mask(t) for _, t in entries):
        check_values_shape(values._shape, advanced_shape(self._shape, _static_dims(entries)))
    return entries


def check_values_shape(values_shape: tuple, target: tuple) -> None:
    """``values`` must broadcast to the indexed shape."""
    if len(values_shape) > len(target) or any(
            v not in (1, t) for v, t in zip(reversed(values_shape), reversed(target))):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values_shape)} cannot "
                           f"be broadcast to indexing result of shape {list(target)}")


def strip_leading_ones(shape: tuple) -> tuple:
    """``shape`` without its leading size-1 dims (PyTorch's ``slicePrefix1sSize``)."""
    k = 0
    while k < len(shape) and shape[k] == 1:
        k += 1
    return tuple(shape[k:])


@operator("index_put(Tensor self, Tensor?[] indices, Tensor values, bool accumulate=False) "
          "-> Tensor")
def index_put(self, indices, values, accumulate=False):
    """A copy of ``self`` with ``values`` written (or added, ``accumulate=True``) at ``indices``.

    ``indices`` follow :func:`index`; ``values`` must have ``self``'s dtype and broadcast to
    the indexed shape. Without ``accumulate``, duplicate indices: the last write wins.

    Shape: same as ``self``.

    Example:
        >>> ember.zeros(3).index_put((ember.tensor([0, 0]),), ember.tensor(1.),
        ...                          accumulate=True).tolist()
        [2.0, 0.0, 0.0]
    """
    _index_put_rule(self, indices, values)
    return Spec(self._shape, self._dtype)


def _index_put_backward(ctx, grad):
    """self: ``grad`` (accumulate) or ``grad`` with the written positions zeroed; values:
    ``grad`` at the indexed positions, summed down to ``values``' shape."""
    indices = ctx.indices
    g_self = g_values = None
    if _needs(ctx, 0):
        g_self = grad if ctx.accumulate else index_put(
            grad, indices, zeros((), dtype=grad.dtype, device=grad.device), False)
    if _needs(ctx, -1):
        g_values = sum_to_shape(index(grad, indices), ctx.shape_of("values"))
    return (g_self, None, g_values) if _list_input(ctx, 2) else (g_self, g_values)


derivative(index_put, save=("indices",))(_index_put_backward)


@operator("index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, "
          "bool accumulate=False) -> Tensor(a!)", _INPLACE)
def index_put_(self, indices, values, accumulate=False):
    """In-place :func:`index_put` (what ``self[indices] = values`` runs).

    Example:
        >>> x = ember.zeros(3)
        >>> x.index_put_((ember.tensor([0, 0, 2]),), ember.tensor([1.0, 2.0, 3.0]), accumulate=True)
        tensor([3., 0., 3.])
    """
    _index_put_rule(self, indices, values)
    return _inplace_spec(self)


derivative(index_put_, save=("indices",))(_index_put_backward)


# -- masked_* ----------------------------------------------------------------------------------
_CTYPE = {"float32": "float", "float64": "double", "float16": "c10::Half",
          "bfloat16": "c10::BFloat16", "int8": "signed char", "int16": "short", "int32": "int",
          "int64": "long int", "uint8": "unsigned char", "bool": "bool"}


def _masked_fill_rule(self, mask, value) -> tuple:
    _check_tensor(self, "masked_fill")
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_fill_ only supports boolean masks, but got mask with dtype "
                           f"{_CTYPE[mask._dtype.name]}")
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.dim()} dimension(s).")
    if not self._dtype.is_complex and _has_imaginary_part(value):
        raise RuntimeError(f"value cannot be converted to type "
                           f"{_SCALAR_CTYPE.get(self._dtype.name, self._dtype.name)} without "
                           f"overflow")
    return broadcast_shapes(self._shape, mask._shape)


# the C++ scalar types torch names when a complex fill value does not fit a real tensor
_SCALAR_CTYPE = {"float32": "float", "float64": "double", "int64": "int64_t",
                 "int32": "int", "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t"}


def _has_imaginary_part(value) -> bool:
    if isinstance(value, Tensor):
        return (value._dtype.is_complex and value._device.type != "meta"
                and bool(value.imag.item() != 0))
    return type(value).__name__ == "complex" and value.imag != 0


def _inplace_broadcast(self: Tensor, shape: tuple) -> Spec:
    if shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast "
                           f"shape {list(shape)}")
    return _inplace_spec(self)


@operator("masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor")
def masked_fill(self, mask, value):
    """A copy of ``self`` with ``value`` where the bool ``mask`` (broadcast) is True.

    Shape: the broadcast of ``self`` and ``mask``.

    Example:
        >>> ember.zeros(3).masked_fill(ember.tensor([True, False, True]), 2.0).tolist()
        [2.0, 0.0, 2.0]
    """
    return Spec(_masked_fill_rule(self, mask, value), self._dtype)


def _masked_fill_backward(ctx, grad):
    g_self = grad.masked_fill(ctx.mask, 0) if _needs(ctx, 0) else None
    if not _is_input(ctx, "value"):
        return g_self, None
    return g_self, None, masked_select(grad, ctx.mask).sum() if _needs(ctx, 2) else None


derivative(masked_fill, save=("mask",))(_masked_fill_backward)


@operator("masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value) -> Tensor(a!)",
          _INPLACE)
def masked_fill_(self, mask, value):
    """In-place :func:`masked_fill`; ``mask`` must broadcast to ``self``'s shape.

    Example:
        >>> x = ember.tensor([1.0, -2.0, 3.0])
        >>> x.masked_fill_(x < 0, 0.0)
        tensor([1., 0., 3.])
    """
    return _inplace_broadcast(self, _masked_fill_rule(self, mask, value))


derivative(masked_fill_, save=("mask",))(_masked_fill_backward)


def _masked_scatter_rule(self, mask, source, inplace: bool) -> tuple:
    _check_tensor(self, "masked_scatter")
    if mask._dtype is not dt.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {_TN[mask._dtype.name]}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got{_TN[self._dtype.name]} and {_TN[source._dtype.name]}")
    if inplace and mask.dim() > self.dim():
        raise RuntimeError(f"masked_scatter_: mask of shape {list(mask._shape)} cannot be "
                           f"expanded to self of shape {list(self._shape)}")
    return broadcast_shapes(self._shape, mask._shape)


@operator("masked_scatter(Tensor self, Tensor mask, Tensor source) -> Tensor")
def masked_scatter(self, mask, source):
    """A copy of ``self`` whose masked positions take ``source``'s leading values in order.

    Shape: the broadcast of ``self`` and ``mask``; ``source`` needs at least as many elements
    as ``mask`` has True entries.

    Example:
        >>> ember.zeros(3).masked_scatter(ember.tensor([True, False, True]),
        ...                               ember.tensor([1., 2.])).tolist()
        [1.0, 0.0, 2.0]
    """
    return Spec(_masked_scatter_rule(self, mask, source, False), self._dtype)


def _masked_scatter_backward(ctx, grad):
    """source: ``grad`` at the masked positions, in order, zero-padded to ``source``'s size."""
    mask = ctx.mask
    g_self = grad.masked_fill(mask, 0) if _needs(ctx, 0) else None
    g_source = None
    if _needs(ctx, 2):
        shape = ctx.shape_of("source")
        picked = masked_select(grad, mask)
        rest = numel(shape) - picked.numel()
        if rest > 0:
            picked = cat([picked, zeros(rest, dtype=grad.dtype, device=grad.device)])
        g_source = picked.reshape(shape)
    return g_self, None, g_source


derivative(masked_scatter, save=("mask",))(_masked_scatter_backward)


@operator("masked_scatter_(Tensor(a!) self, Tensor mask, Tensor source) -> Tensor(a!)",
          _INPLACE)
def masked_scatter_(self, mask, source):
    """In-place :func:`masked_scatter`.

    Example:
        >>> x = ember.zeros(4)
        >>> x.masked_scatter_(ember.tensor([True, False, True, False]), ember.tensor([1.0, 2.0]))
        tensor([1., 0., 2., 0.])
    """
    return _inplace_broadcast(self, _masked_scatter_rule(self, mask, source, True))


derivative(masked_scatter_, save=("mask",))(_masked_scatter_backward)


def _data_dependent(name: str):
    raise NotImplementedError(f"{name}: the output shape depends on the input's values, which "
                              "meta tensors do not have (data-dependent output)")


def masked_select_check(self, mask) -> tuple:
    """Validate :func:`masked_select`'s arguments; returns the broadcast shape."""
    _check_tensor(self, "masked_select")
    if mask._dtype is not dt.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return broadcast_shapes(self._shape, mask._shape)


@operator("masked_select(Tensor self, Tensor mask, *, Tensor(a!)? out=None) -> Tensor", (_DD,))
def masked_select(self, mask, *, out=None):
    """The 1-d tensor of ``self``'s values where ``mask`` (broadcast together) is True.

    Raises:
        NotImplementedError: on meta tensors (data-dependent output shape).

    Example:
        >>> ember.tensor([1, 2, 3]).masked_select(ember.tensor([True, False, True])).tolist()
        [1, 3]
    """
    masked_select_check(self, mask)
    _data_dependent("masked_select")


@derivative(masked_select, save=("mask",))
def _masked_select_backward(ctx, grad):
    mask = ctx.mask
    shape = broadcast_shapes(ctx.shape_of("self"), mask._shape)
    return zeros(shape, dtype=grad.dtype, device=grad.device).masked_scatter(mask, grad), None


# -- nonzero / argwhere / where(cond) ----------------------------------------------------------
@operator("nonzero(Tensor self, *, Tensor(a!)? out=None) -> Tensor", (_DD,), method=False)
def nonzero_op(self, *, out=None):
    """Indices of the non-zero elements as an int64 ``(n, self.dim())`` tensor."""
    _check_tensor(self, "nonzero")
    _data_dependent("nonzero")


@tensor_method("nonzero")
def nonzero(input: Tensor, *, out=None, as_tuple: bool = False):
    """Indices of ``input``'s non-zero elements, in C order.

    Args:
        input: any tensor.
        as_tuple: return one 1-d int64 tensor per dim instead of an ``(n, ndim)`` tensor
            (a 0-d input is treated as 1-d, as in PyTorch).

    Returns:
        An int64 ``(n, input.dim())`` tensor, or a tuple of ``n``-element tensors.

    Raises:
        NotImplementedError: on meta tensors (data-dependent output shape).

    Example:
        >>> ember.tensor([[0, 1], [2, 0]]).nonzero().tolist()
        [[0, 1], [1, 0]]
    """
    if not as_tuple:
        return nonzero_op(input, out=out) if out is not None else nonzero_op(input)
    flat = nonzero_op(input.reshape(1) if input.dim() == 0 else input)
    return flat.unbind(1)


@composite("argwhere(Tensor self) -> Tensor", tags=(_DD,))
def argwhere(self: Tensor) -> Tensor:
    """``nonzero(self)``: the ``(n, self.dim())`` int64 indices of non-zero elements.

    Example:
        >>> ember.argwhere(ember.tensor([0, 3, 4])).tolist()
        [[1], [2]]
    """
    return nonzero_op(self)


def where_condition(condition: Tensor) -> tuple:
    """``where(condition)`` with one argument: ``nonzero(condition, as_tuple=True)``."""
    return nonzero(condition, as_tuple=True)


# -- take / put / take_along_dim ---------------------------------------------------------------
@operator("take(Tensor self, Tensor index, *, Tensor(a!)? out=None) -> Tensor")
def take(self, index, *, out=None):
    """Elements of ``self`` viewed as 1-d (C order) at ``index``; negative indices wrap.

    Shape: ``index``'s shape.

    Example:
        >>> ember.tensor([[1, 2], [3, 4]]).take(ember.tensor([0, -1])).tolist()
        [1, 4]
    """
    _check_tensor(self, "take")
    if index._dtype is not dt.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got "
                           f"{_TN[index._dtype.name]}")
    return Spec(index._shape, self._dtype)


@derivative(take, save=("index",))
def _take_backward(ctx, grad):
    return put(_zeros_of(ctx, "self", grad), ctx.index, grad, True), None


def _put_rule(self, index, source):
    _check_tensor(self, "put_")
    if index._dtype is not dt.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got "
                           f"{_TN[index._dtype.name]}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {_TN[self._dtype.name]} and source.dtype = "
                           f"{_TN[source._dtype.name]}")
    if numel(source._shape) != numel(index._shape):
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {numel(source._shape)}, "
                         f"index.numel() = {numel(index._shape)}")


@operator("put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor")
def put(self, index, source, accumulate=False):
    """A copy of ``self`` (viewed as 1-d) with ``source`` written or added at ``index``.

    Shape: same as ``self``.

    Example:
        >>> ember.zeros(2, 2).put(ember.tensor([3]), ember.tensor([9.])).tolist()
        [[0.0, 0.0], [0.0, 9.0]]
    """
    _put_rule(self, index, source)
    return Spec(self._shape, self._dtype)


def _put_backward(ctx, grad):
    index = ctx.index
    g_self = g_source = None
    if _needs(ctx, 0):
        g_self = grad if ctx.accumulate else put(grad, index, _zeros_of(ctx, "source", grad))
    if _needs(ctx, 2):
        g_source = grad.take(index).reshape(ctx.shape_of("source"))
    return g_self, None, g_source


derivative(put, save=("index",))(_put_backward)


@operator("put_(Tensor(a!) self, Tensor index, Tensor source, bool accumulate=False) "
          "-> Tensor(a!)", _INPLACE)
def put_(self, index, source, accumulate=False):
    """In-place :func:`put`.

    Example:
        >>> x = ember.zeros(2, 2)
        >>> x.put_(ember.tensor([3, 0]), ember.tensor([1.0, 2.0]))
        tensor([[2., 0.],
                [0., 1.]])
    """
    _put_rule(self, index, source)
    return _inplace_spec(self)


derivative(put_, save=("index",))(_put_backward)


@composite("take_along_dim(Tensor self, Tensor indices, int? dim=None, *, "
           "Tensor(a!)? out=None) -> Tensor")
def take_along_dim(self: Tensor, indices: Tensor, dim=None, *, out=None) -> Tensor:
    """Gather along ``dim`` after broadcasting ``self`` and ``indices`` in the other dims.

    ``dim=None`` indexes ``self`` flattened with ``indices`` flattened (both must be
    viewable as 1-d, as in PyTorch).

    Shape: the broadcast of both, with ``indices``' size along ``dim``.

    Example:
        >>> ember.tensor([[10, 30, 20]]).take_along_dim(ember.tensor([[0, 2, 1]]), 1).tolist()
        [[10, 20, 30]]
    """
    from ember.ops.views import expand, view
    if indices._dtype is not dt.int64:
        raise RuntimeError(f"take_along_dim(): dtype of indices should be Long but got "
                           f"{_TN[indices._dtype.name]}")
    kw = {"out": out} if out is not None else {}
    if dim is None:
        return gather(view(self, -1), 0, view(indices, -1), **kw)  # view, as PyTorch
    dim = canonical_dim(dim, self.dim())
    if self.dim():  # along a dim, negative indices count from the end (as torch wraps them)
        indices = where(lt(indices, 0), indices + self._shape[dim], indices)
    if self.dim() != indices.dim():
        raise RuntimeError(f"take_along_dim(): input and indices should have the same number "
                           f"of dimensions, but got {self.dim()} dimensions for input, and "
                           f"{indices.dim()} dimensions for indices")
    shape = list(broadcast_shapes(_with(self._shape, dim, 1), _with(indices._shape, dim, 1)))
    self_b = expand(self, _with(tuple(shape), dim, self._shape[dim]))
    indices_b = expand(indices, _with(tuple(shape), dim, indices._shape[dim]))
    return gather(self_b, dim, indices_b, **kw)


def _with(shape: tuple, dim: int, size: int) -> tuple:
    return tuple(shape[:dim]) + (size,) + tuple(shape[dim + 1:]) if shape else shape
