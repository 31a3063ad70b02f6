"""View operators: O(1) new geometry over the same storage, never a copy.

Each view op is declared with its *geometry rule* (tuples in, ``(shape, stride, offset)``
out); a single composite kernel applies it on every backend, so CPU and Meta agree by
construction. Ops that may copy (``reshape``, ``flatten``) and multi-view ops (``split``,
``chunk``, ``unbind``) are composites of the primitive views.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtype as dt
from ember.core.layout import (
    canonical_dim,
    expand_geometry,
    infer_size,
    normalize_shape,
    numel,
    storage_extent,
    view_strides,
)
from ember.dispatch import AliasKey, Tag, define
from ember.ops._define import TENSOR_METHODS, composite, derivative, tensor_method
from ember.tensor import Tensor, make_tensor, make_view

__all__ = [
    "view", "view_as", "reshape", "reshape_as", "flatten", "unflatten", "transpose", "swapaxes",
    "swapdims", "t", "permute", "movedim", "moveaxis", "expand", "expand_as", "broadcast_to",
    "narrow", "select", "slice", "squeeze", "unsqueeze", "diagonal", "unfold", "as_strided",
    "split", "split_with_sizes", "tensor_split", "chunk", "unbind", "alias", "detach",
    "hsplit", "vsplit", "dsplit", "adjoint", "view_as_dtype",
]


def view_operator(schema: str, *, method: str | bool = True, tags=()):
    """Declare a view op from its geometry rule: ``(self, *args) -> (shape, stride, offset)``."""

    def deco(geometry):
        op = define(schema, (Tag.view, *tags), geometry.__doc__)
        op.geometry = geometry
        op.__module__ = __name__

        def kernel(self, *args, **kwargs):
            shape, stride, offset = geometry(self, *args, **kwargs)
            # make_view(self, shape, stride, offset), one frame shallower
            out = make_tensor(self._storage, shape, stride, offset, self._dtype, self._device,
                              base=self._base if self._base is not None else self,
                              version=self._ver)
            out._is_inference = self._is_inference
            if self._is_conj:
                out._is_conj = True
            if self._is_neg:
                out._is_neg = True
            return out

        op.register(AliasKey.CompositeExplicitAutograd, kernel)
        if method:
            TENSOR_METHODS[op.name if method is True else method] = op
        return op

    return deco


def _sizes(args) -> tuple[int, ...]:
    return normalize_shape(args)


# -- reshaping ---------------------------------------------------------------------------------
@view_operator("view(Tensor(a) self, SymInt[] size) -> Tensor(a)")
def view(self: Tensor, *shape):
    """View ``self`` with a new shape (one ``-1`` inferred) without copying.

    Raises:
        RuntimeError: the strides cannot express the new shape ("Use .reshape(...) instead").

    Example:
        >>> x = ember.arange(6)
        >>> x.view(2, 3)
        tensor([[0, 1, 2],
                [3, 4, 5]])
        >>> ember.view(x, (3, -1)).shape
        ember.Size([3, 2])
    """
    shape = infer_size(_sizes(shape), numel(self._shape))
    stride = view_strides(self._shape, self._stride, shape)
    if stride is None:
        raise RuntimeError(
            "view size is not compatible with input tensor's size and stride (at least one "
            "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return shape, stride, self._offset


@derivative(view)
def _view_backward(ctx, grad):
    return grad.reshape(ctx.shape_of("self"))


def view_as_dtype(self: Tensor, dtype: dt.DType) -> Tensor:
    """Reinterpret the bytes as ``dtype`` (``Tensor.view(dtype)``); the last dim rescales.

    Example:
        >>> ember.tensor([1.0]).view(ember.int32)
        tensor([1065353216], dtype=ember.int32)
    """
    old, new = self._dtype.itemsize, dtype.itemsize
    shape, stride, offset = list(self._shape), list(self._stride), self._offset
    if old == new:
        return make_view(self, self._shape, self._stride, offset, dtype)
    if not shape:
        raise RuntimeError("self.dim() cannot be 0 to view "
                           f"{self._dtype} as {dtype} (different element sizes)")
    if stride[-1] != 1:
        raise RuntimeError("self.stride(-1) must be 1 to view "
                           f"{self._dtype} as {dtype} (different element sizes)")
    if new > old:
        ratio = new // old
        if shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} to view "
                               f"{self._dtype} as {dtype} (different element sizes), but got "
                               f"{shape[-1]}")
        if offset % ratio or any(s % ratio for s in stride[:-1]):
            raise RuntimeError(f"self.storage_offset() and strides must be divisible by {ratio} "
                               f"to view {self._dtype} as {dtype} (different element sizes)")
        shape[-1] //= ratio
        stride = [s // ratio for s in stride[:-1]] + [1]
        offset //= ratio
    else:
        ratio = old // new
        shape[-1] *= ratio
        stride = [s * ratio for s in stride[:-1]] + [1]
        offset *= ratio
    return make_view(self, tuple(shape), tuple(stride), offset, dtype)


@tensor_method("view")
def _tensor_view(self: Tensor, *shape):
    """``Tensor.view``: ``view(*shape)`` (one ``-1`` inferred), or ``view(dtype)`` to
    reinterpret the bytes.

    Example:
        >>> x = ember.arange(6)
        >>> x.view(2, 3).shape, x.view(-1, 2).shape
        (ember.Size([2, 3]), ember.Size([3, 2]))
        >>> ember.tensor([1.0]).view(ember.int32)
        tensor([1065353216], dtype=ember.int32)
    """
    if len(shape) == 1 and isinstance(shape[0], dt.DType):
        return view_as_dtype(self, shape[0])
    return view(self, *shape)


@composite("view_as(Tensor(a) self, Tensor other) -> Tensor(a)")
def view_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.view(other.shape)``.

    Example:
        >>> ember.arange(4).view_as(ember.zeros(2, 2))
        tensor([[0, 1],
                [2, 3]])
    """
    return view(self, other._shape)


@composite("reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)")
def reshape(self: Tensor, *shape) -> Tensor:
    """A view with the new shape when strides allow it, otherwise a contiguous copy.

    Example:
        >>> x = ember.arange(6).reshape(2, 3)
        >>> x.t().reshape(6)  # not viewable: copied
        tensor([0, 3, 1, 4, 2, 5])
    """
    shape = infer_size(_sizes(shape), numel(self._shape))
    if view_strides(self._shape, self._stride, shape) is not None:
        return view(self, shape)
    return view(self.clone(memory_format=None).contiguous(), shape)


@composite("reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)")
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.reshape(other.shape)``.

    Example:
        >>> ember.arange(4).reshape_as(ember.zeros(2, 2)).shape
        ember.Size([2, 2])
    """
    return reshape(self, other._shape)


@composite("flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)")
def flatten(self: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Merge dims ``start_dim..end_dim`` into one (a view when possible; 0-d becomes 1-d).

    Example:
        >>> ember.zeros(2, 3, 4).flatten(1).shape
        ember.Size([2, 12])
        >>> ember.flatten(ember.zeros(2, 3, 4)).shape
        ember.Size([24])
    """
    nd = len(self._shape)
    s, e = canonical_dim(start_dim, nd), canonical_dim(end_dim, nd)  # 0-d: dims 0 / -1 only
    if nd == 0:
        return reshape(self, (1,))
    if s > e:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if s == e:
        return self
    shape = self._shape[:s] + (math.prod(self._shape[s:e + 1]),) + self._shape[e + 1:]
    return reshape(self, shape)


@composite("unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)")
def unflatten(self: Tensor, dim: int, sizes) -> Tensor:
    """Split ``dim`` into ``sizes`` (one ``-1`` allowed).

    Example:
        >>> ember.zeros(2, 12).unflatten(1, (3, -1)).shape
        ember.Size([2, 3, 4])
    """
    d = canonical_dim(dim, len(self._shape))
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    sizes = infer_size(sizes, self._shape[d]) if -1 in sizes else sizes
    if math.prod(sizes) != self._shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({self._shape[d]}) in the input tensor")
    return view(self, self._shape[:d] + sizes + self._shape[d + 1:])


# -- permutations ------------------------------------------------------------------------------
@view_operator("transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)")
def transpose(self: Tensor, dim0: int, dim1: int):
    """Swap two dims (strides swap with them).

    Example:
        >>> x = ember.arange(6).reshape(2, 3)
        >>> ember.transpose(x, 0, 1)
        tensor([[0, 3],
                [1, 4],
                [2, 5]])
        >>> x.transpose(0, 1).stride()
        (1, 3)
    """
    nd = len(self._shape)
    a, b = canonical_dim(dim0, nd), canonical_dim(dim1, nd)
    if nd == 0:  # dims 0 and -1 name the 0-d tensor itself
        return (), (), self._offset
    shape, stride = list(self._shape), list(self._stride)
    shape[a], shape[b] = shape[b], shape[a]
    stride[a], stride[b] = stride[b], stride[a]
    return tuple(shape), tuple(stride), self._offset


@derivative(transpose)
def _transpose_backward(ctx, grad):
    return grad.transpose(ctx.dim0, ctx.dim1)


swapaxes = swapdims = transpose
TENSOR_METHODS["swapaxes"] = TENSOR_METHODS["swapdims"] = transpose


@view_operator("t(Tensor(a) self) -> Tensor(a)")
def t(self: Tensor):
    """Transpose a matrix (0-d and 1-d tensors are returned as views of themselves).

    Example:
        >>> ember.arange(6).reshape(2, 3).t().shape
        ember.Size([3, 2])
    """
    nd = len(self._shape)
    if nd > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {nd}D")
    return self._shape[::-1], self._stride[::-1], self._offset


@derivative(t)
def _t_backward(ctx, grad):
    return grad.t()


@view_operator("permute(Tensor(a) self, int[] dims) -> Tensor(a)")
def permute(self: Tensor, *dims):
    """Reorder dims: output dim i is input dim ``dims[i]``.

    Example:
        >>> ember.zeros(2, 3, 4).permute(2, 0, 1).shape
        ember.Size([4, 2, 3])
    """
    dims = _sizes(dims)
    nd = len(self._shape)
    if len(dims) != nd:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {nd} is not equal to len(dims) = {len(dims)}"
                           .replace("(sparse_coo)", ""))
    dims = tuple(canonical_dim(d, nd) for d in dims)
    if len(set(dims)) != nd:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return (tuple(self._shape[d] for d in dims), tuple(self._stride[d] for d in dims),
            self._offset)


@derivative(permute)
def _permute_backward(ctx, grad):
    dims = _sizes(ctx.dims)
    nd = len(dims)
    inverse = [0] * nd
    for i, d in enumerate(dims):
        inverse[canonical_dim(d, nd)] = i
    return grad.permute(inverse)


@composite("movedim.intlist(Tensor(a) self, int[] source, int[] destination) -> Tensor(a)")
def movedim(self: Tensor, source, destination) -> Tensor:
    """Move dims ``source`` to positions ``destination``; the others keep their order.

    Example:
        >>> ember.movedim(ember.zeros(2, 3, 4), 0, -1).shape
        ember.Size([3, 4, 2])
    """
    nd = len(self._shape)
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    src = [canonical_dim(d, nd) for d in src]
    dst = [canonical_dim(d, nd) for d in dst]
    if len(set(src)) != len(src) or len(set(dst)) != len(dst):
        raise RuntimeError("movedim: repeated dim in `source` or `destination`")
    order = [None] * nd
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(nd) if d not in src)
    order = [o if o is not None else next(rest) for o in order]
    return permute(self, order)


moveaxis = movedim
TENSOR_METHODS["moveaxis"] = movedim


@tensor_method("T")
def _T(self: Tensor) -> Tensor:
    """``Tensor.T`` (and ``H`` for real tensors): all dims reversed.

    Example:
        >>> ember.zeros(2, 3, 4).T.shape
        ember.Size([4, 3, 2])
    """
    return permute(self, tuple(range(len(self._shape) - 1, -1, -1)))


@tensor_method("mT")
def _mT(self: Tensor) -> Tensor:
    """``Tensor.mT`` (and ``mH`` for real tensors): the last two dims swapped.

    Example:
        >>> ember.zeros(5, 2, 3).mT.shape
        ember.Size([5, 3, 2])
    """
    if len(self._shape) < 2:
        raise RuntimeError("tensor.mT is only supported on matrices or batches of matrices. "
                           f"Got {len(self._shape)}-D tensor.")
    return transpose(self, -2, -1)


def adjoint(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (``mT`` for real tensors): a view, lazily
    conjugated for complex tensors (``Tensor.mH``; ``Tensor.H`` for matrices).

    Example:
        >>> ember.adjoint(ember.arange(6).reshape(2, 3)).shape
        ember.Size([3, 2])
        >>> ember.tensor([[1j, 2]]).mH
        tensor([[0.-1.j],
                [2.-0.j]])
    """
    t = _mT(self)
    return conj(t) if t._dtype.is_complex else t


def _H(self: Tensor) -> Tensor:
    if len(self._shape) not in (0, 2):
        raise RuntimeError("tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{len(self._shape)}-D tensor. For batches of matrices, consider "
                           "using tensor.mH")
    t = _T(self)
    return conj(t) if t._dtype.is_complex else t


Tensor.mH = property(adjoint, doc="The conjugate transpose of the last two dims (a view).")
Tensor.H = property(_H, doc="The conjugate transpose of a matrix (a view).")


# -- broadcasting ------------------------------------------------------------------------------
@view_operator("expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)")
def expand(self: Tensor, *sizes, implicit: bool = False):
    """Broadcast size-1 dims to ``sizes`` with stride 0 (``-1`` keeps a size).

    Example:
        >>> ember.tensor([[1], [2]]).expand(2, 3)
        tensor([[1, 1, 1],
                [2, 2, 2]])
        >>> ember.tensor([1, 2]).expand(3, -1).stride()
        (0, 1)
    """
    shape, stride = expand_geometry(self._shape, self._stride, _sizes(sizes))
    return shape, stride, self._offset


@derivative(expand)
def _expand_backward(ctx, grad):
    return sum_to_shape(grad, ctx.shape_of("self"))


@composite("expand_as(Tensor(a) self, Tensor other) -> Tensor(a)")
def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.expand(other.shape)``.

    Example:
        >>> ember.tensor([1, 2]).expand_as(ember.zeros(3, 2)).shape
        ember.Size([3, 2])
    """
    return expand(self, other._shape)


@composite("broadcast_to(Tensor(a) self, SymInt[] size) -> Tensor(a)")
def broadcast_to(self: Tensor, size) -> Tensor:
    """``self.expand(size)``.

    Example:
        >>> ember.broadcast_to(ember.tensor([1, 2]), (2, 2))
        tensor([[1, 2],
                [1, 2]])
    """
    return expand(self, tuple(size))


# -- slicing -----------------------------------------------------------------------------------
@view_operator("narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)")
def narrow(self: Tensor, dim: int, start: int, length: int):
    """Elements ``start .. start+length`` of ``dim``.

    Example:
        >>> ember.narrow(ember.arange(6), 0, 2, 3)
        tensor([2, 3, 4])
    """
    if not self._shape:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    d = canonical_dim(dim, len(self._shape))
    size = self._shape[d]
    start = int(start)
    if start < 0:
        start += size
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    if not (0 <= start <= size) or start + length > size:
        raise IndexError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    shape = self._shape[:d] + (length,) + self._shape[d + 1:]
    return shape, self._stride, self._offset + start * self._stride[d]


@derivative(narrow, save=("start",))
def _narrow_backward(ctx, grad):
    start = ctx.start  # torch's narrow.Tensor overload: a 0-d tensor, not differentiable
    g = embed(grad, ctx, lambda z: narrow(z, ctx.dim, int(start), ctx.length))
    return (g, None) if isinstance(start, Tensor) else g


@view_operator("select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)")
def select(self: Tensor, dim: int, index: int):
    """Index ``dim`` at ``index``; the dim disappears.

    Example:
        >>> ember.arange(6).reshape(2, 3).select(1, 2)
        tensor([2, 5])
    """
    nd = len(self._shape)
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = canonical_dim(dim, nd)
    size = self._shape[d]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {d} with size {size}")
    if index < 0:
        index += size
    return (self._shape[:d] + self._shape[d + 1:], self._stride[:d] + self._stride[d + 1:],
            self._offset + index * self._stride[d])


@derivative(select)
def _select_backward(ctx, grad):
    return embed(grad, ctx, lambda z: select(z, ctx.dim, ctx.index))


@view_operator("slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, "
               "SymInt step=1) -> Tensor(a)", method=False)
def slice(self: Tensor, dim: int = 0, start=None, end=None, step: int = 1):
    """``self[..., start:end:step, ...]`` on ``dim`` (positive steps only, bounds clamped).

    Example:
        >>> ember.slice(ember.arange(10), 0, 1, 8, 3)
        tensor([1, 4, 7])
    """
    d = canonical_dim(dim, len(self._shape))
    if step <= 0:
        raise ValueError("step must be greater than zero")
    size = self._shape[d]
    start, end, _ = _clamp_slice(start, end, size)
    length = max(0, (end - start + step - 1) // step)
    shape = self._shape[:d] + (length,) + self._shape[d + 1:]
    stride = self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1:]
    return shape, stride, self._offset + start * self._stride[d]


@derivative(slice)
def _slice_backward(ctx, grad):
    return embed(grad, ctx, lambda z: slice(z, ctx.dim, ctx.start, ctx.end, ctx.step))


def _clamp_slice(start, end, size):
    start = 0 if start is None else int(start)
    end = size if end is None else int(end)
    if start < 0:
        start += size
    if end < 0:
        end += size
    start = min(max(start, 0), size)
    end = min(max(end, start), size)
    return start, end, size


@view_operator("squeeze.dims(Tensor(a) self, int[]? dim=None) -> Tensor(a)")
def squeeze(self: Tensor, dim=None):
    """Drop size-1 dims (all of them, or those of ``dim`` that have size 1).

    Example:
        >>> ember.zeros(2, 1, 3, 1).squeeze().shape
        ember.Size([2, 3])
        >>> ember.zeros(2, 1, 3, 1).squeeze(1).shape
        ember.Size([2, 3, 1])
    """
    nd = len(self._shape)
    if dim is None:
        keep = [i for i in range(nd) if self._shape[i] != 1]
    else:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        drop = {canonical_dim(d, nd) for d in dims}
        keep = [i for i in range(nd) if i not in drop or self._shape[i] != 1]
    return (tuple(self._shape[i] for i in keep), tuple(self._stride[i] for i in keep),
            self._offset)


@derivative(squeeze)
def _squeeze_backward(ctx, grad):
    return grad.reshape(ctx.shape_of("self"))


@view_operator("unsqueeze(Tensor(a) self, int dim) -> Tensor(a)")
def unsqueeze(self: Tensor, dim: int):
    """Insert a size-1 dim at ``dim``.

    Example:
        >>> ember.tensor([1, 2]).unsqueeze(0)
        tensor([[1, 2]])
        >>> ember.tensor([1, 2]).unsqueeze(-1).shape
        ember.Size([2, 1])
    """
    nd = len(self._shape)
    d = canonical_dim(dim, nd + 1)
    inner = self._stride[d] * self._shape[d] if d < nd else 1
    return (self._shape[:d] + (1,) + self._shape[d:], self._stride[:d] + (inner,) +
            self._stride[d:], self._offset)


@derivative(unsqueeze)
def _unsqueeze_backward(ctx, grad):
    return grad.reshape(ctx.shape_of("self"))


@view_operator("diagonal(Tensor(a) self, int offset=0, int dim1=0, int dim2=1) -> Tensor(a)")
def diagonal(self: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1):
    """The diagonal of dims ``dim1``/``dim2`` (shifted by ``offset``) as a new last dim.

    Example:
        >>> ember.arange(9).reshape(3, 3).diagonal()
        tensor([0, 4, 8])
        >>> ember.arange(9).reshape(3, 3).diagonal(offset=1)
        tensor([1, 5])
    """
    nd = len(self._shape)
    a, b = canonical_dim(dim1, nd), canonical_dim(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    start = self._offset
    if offset >= 0:
        length = max(min(self._shape[a], self._shape[b] - offset), 0)
        start += offset * self._stride[b] if length else 0
    else:
        length = max(min(self._shape[a] + offset, self._shape[b]), 0)
        start -= offset * self._stride[a] if length else 0
    rest = [i for i in range(nd) if i not in (a, b)]
    shape = tuple(self._shape[i] for i in rest) + (length,)
    stride = tuple(self._stride[i] for i in rest) + (self._stride[a] + self._stride[b],)
    return shape, stride, start


@derivative(diagonal)
def _diagonal_backward(ctx, grad):
    return embed(grad, ctx, lambda z: diagonal(z, ctx.offset, ctx.dim1, ctx.dim2))


@view_operator("unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)")
def unfold(self: Tensor, dimension: int, size: int, step: int):
    """Windows of ``size`` every ``step`` along ``dimension``, as a new last dim.

    Example:
        >>> ember.arange(5).unfold(0, 2, 1)
        tensor([[0, 1],
                [1, 2],
                [2, 3],
                [3, 4]])
    """
    nd = len(self._shape)
    d = canonical_dim(dimension, nd) if nd else 0
    dim_size = self._shape[d] if nd else 1
    if size > dim_size:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {dim_size} but size is "
                           f"{size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if not nd:
        return (size,), (1,), self._offset
    count = (dim_size - size) // step + 1
    shape = self._shape[:d] + (count,) + self._shape[d + 1:] + (size,)
    stride = (self._stride[:d] + (self._stride[d] * step,) + self._stride[d + 1:] +
              (self._stride[d],))
    return shape, stride, self._offset


@derivative(unfold)
def _unfold_backward(ctx, grad):
    # Windows overlap when step < size: every window element adds into its source.
    from ember.ops.creation import zeros
    shape = ctx.shape_of("self")
    out = zeros(shape, dtype=grad.dtype, device=grad.device)
    if not shape:
        return out.add_(grad.sum())
    d = canonical_dim(ctx.dimension, len(shape))
    count = grad.shape[d]
    for k in range(ctx.size):
        if count:
            target = slice(out, d, k, k + ctx.step * (count - 1) + 1, ctx.step)
            target.add_(grad.select(-1, k))
    return out


@view_operator("as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, "
               "SymInt? storage_offset=None) -> Tensor(a)")
def as_strided(self: Tensor, size, stride, storage_offset=None):
    """A view with explicit geometry over the same storage (bounds-checked).

    Example:
        >>> ember.as_strided(ember.arange(6), (2, 2), (1, 2))
        tensor([[0, 2],
                [1, 3]])
    """
    size, stride = tuple(size), tuple(stride)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise RuntimeError("as_strided: negative sizes or strides are not supported")
    offset = self._offset if storage_offset is None else storage_offset
    need = storage_extent(size, stride, offset) * self._dtype.itemsize
    have = self._storage._nbytes
    if need > have:
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, "
            f"and itemsize {self._dtype.itemsize} requiring a storage size of {need} are out "
            f"of bounds for storage of size {have}")
    return size, stride, offset


@derivative(as_strided, save=("self",))
def _as_strided_backward(ctx, grad):
    # Scatter-add through storage positions: right even when the view overlaps itself.
    from ember.ops.creation import tensor, zeros
    src = ctx.self
    out_pos = _positions(grad.shape, _sizes(ctx.stride),
                         src.storage_offset() if ctx.storage_offset is None
                         else ctx.storage_offset)
    in_pos = _positions(src.shape, src.stride(), src.storage_offset())
    extent = max(max(out_pos, default=0), max(in_pos, default=0)) + 1
    flat = zeros(extent, dtype=grad.dtype, device=grad.device)
    flat = flat.index_add(0, tensor(out_pos), grad.reshape(-1))
    return flat[tensor(in_pos)].reshape(src.shape)


@view_operator("alias(Tensor(a) self) -> Tensor(a)")
def alias(self: Tensor):
    """A view of the whole tensor.

    Example:
        >>> x = ember.tensor([1, 2])
        >>> y = ember.alias(x)
        >>> y is x, y.data_ptr() == x.data_ptr()
        (False, True)
    """
    return self._shape, self._stride, self._offset


@derivative(alias)
def _alias_backward(ctx, grad):
    return grad


# -- multi-view ops ----------------------------------------------------------------------------
def _at_least_1d(t: Tensor, message: str) -> None:
    if not t._shape:
        raise RuntimeError(message)


@composite("split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]")
def split(self: Tensor, split_size_or_sections, dim: int = 0):
    """Pieces of ``split_size`` along ``dim`` (the last may be smaller), or given section sizes.

    Example:
        >>> [p.tolist() for p in ember.arange(5).split(2)]
        [[0, 1], [2, 3], [4]]
        >>> [p.tolist() for p in ember.split(ember.arange(5), [1, 4])]
        [[0], [1, 2, 3, 4]]
    """
    if not isinstance(split_size_or_sections, int):
        return split_with_sizes(self, split_size_or_sections, dim)
    _at_least_1d(self, "split expects at least a 1-dimensional tensor")
    d = canonical_dim(dim, len(self._shape))
    size, step = self._shape[d], split_size_or_sections
    if step < 0 or (step == 0 and size != 0):
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got "
                           f"dimension size of {size}")
    if size == 0:
        return _multi_view((narrow(self, d, 0, 0),), "SplitBackward0")
    return _multi_view(tuple(narrow(self, d, s, min(step, size - s))
                             for s in range(0, size, step)), "SplitBackward0")


@composite("split_with_sizes(Tensor(a) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]")
def split_with_sizes(self: Tensor, split_sizes, dim: int = 0):
    """Pieces of the given sizes along ``dim`` (they must sum to its size).

    Example:
        >>> [p.shape for p in ember.zeros(5, 2).split_with_sizes([2, 3])]
        [ember.Size([2, 2]), ember.Size([3, 2])]
    """
    _at_least_1d(self, "split expects at least a 1-dimensional tensor")
    d = canonical_dim(dim, len(self._shape))
    sizes = [int(s) for s in split_sizes]
    if sum(sizes) != self._shape[d] or any(s < 0 for s in sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{self._shape[d]} (input tensor's size at dimension {dim}), but got "
                           f"split_sizes={sizes}")
    out, start = [], 0
    for s in sizes:
        out.append(narrow(self, d, start, s))
        start += s
    return _multi_view(tuple(out), "SplitWithSizesBackward0")


@composite("tensor_split.sections(Tensor(a) self, SymInt sections, int dim=0) -> Tensor(a)[]")
def tensor_split(self: Tensor, indices_or_sections, dim: int = 0):
    """Split into ``n`` nearly equal parts, or at the given indices (``torch.tensor_split``).

    Example:
        >>> [p.tolist() for p in ember.arange(5).tensor_split(3)]
        [[0, 1], [2, 3], [4]]
        >>> [p.tolist() for p in ember.arange(5).tensor_split([1, 3])]
        [[0], [1, 2], [3, 4]]
    """
    _at_least_1d(self, "tensor_split expected at least a 1-dimensional tensor, but got a "
                       "tensor with 0 dims")
    d = canonical_dim(dim, len(self._shape))
    size = self._shape[d]
    if isinstance(indices_or_sections, Tensor):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        n = indices_or_sections
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        base, extra = divmod(size, n)
        bounds, start = [], 0
        for i in range(n):
            start += base + (1 if i < extra else 0)
            bounds.append(start)
        bounds = bounds[:-1]
    else:
        bounds = [int(i) for i in indices_or_sections]
    out, prev = [], 0
    for b in [*bounds, size]:
        lo, hi = min(max(prev, 0), size), min(max(b, 0), size)
        out.append(narrow(self, d, lo, max(hi - lo, 0)))
        prev = b if b > prev else prev
    return tuple(out)


@composite("chunk(Tensor(a) self, int chunks, int dim=0) -> Tensor(a)[]")
def chunk(self: Tensor, chunks: int, dim: int = 0):
    """At most ``chunks`` pieces of size ``ceil(n / chunks)`` along ``dim``.

    Example:
        >>> [p.tolist() for p in ember.arange(5).chunk(2)]
        [[0, 1, 2], [3, 4]]
    """
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    _at_least_1d(self, "chunk expects at least a 1-dimensional tensor")
    d = canonical_dim(dim, len(self._shape))
    size = self._shape[d]
    step = max(-(-size // chunks), 1) if size else 0
    if size == 0:
        return split(self, 0, d) if chunks == 1 else tuple(narrow(self, d, 0, 0)
                                                           for _ in range(chunks))
    return split(self, step, d)


@composite("unbind.int(Tensor(a) self, int dim=0) -> Tensor(a)[]")
def unbind(self: Tensor, dim: int = 0):
    """All slices along ``dim`` (the dim removed).

    Example:
        >>> ember.unbind(ember.tensor([[1, 2], [3, 4]]))
        (tensor([1, 2]), tensor([3, 4]))
    """
    if not self._shape:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = canonical_dim(dim, len(self._shape))
    return _multi_view(tuple(select(self, d, i) for i in range(self._shape[d])),
                       "UnbindBackward0")


def _split_along(self: Tensor, sections, dim: int, name: str, min_dim: int):
    if len(self._shape) < min_dim:
        raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dim} dimension, "
                           f"but got a tensor with {len(self._shape)} dimensions!"
                           .replace("torch.", ""))
    if isinstance(sections, int) and self._shape[dim] % sections:
        raise RuntimeError(f"{name} attempted to split along dimension {dim}, but the size of "
                           f"the dimension {self._shape[dim]} is not divisible by the split_size "
                           f"{sections}!")
    return tensor_split(self, sections, dim)


@tensor_method("hsplit")
def hsplit(self: Tensor, sections):
    """Split along dim 1 (dim 0 for 1-d tensors).

    Example:
        >>> [p.shape for p in ember.zeros(2, 4).hsplit(2)]
        [ember.Size([2, 2]), ember.Size([2, 2])]
    """
    return _split_along(self, sections, 1 if len(self._shape) > 1 else 0, "hsplit", 1)


@tensor_method("vsplit")
def vsplit(self: Tensor, sections):
    """Split along dim 0 of a tensor with at least 2 dims.

    Example:
        >>> [p.shape for p in ember.zeros(4, 2).vsplit([1])]
        [ember.Size([1, 2]), ember.Size([3, 2])]
    """
    return _split_along(self, sections, 0, "vsplit", 2)


@tensor_method("dsplit")
def dsplit(self: Tensor, sections):
    """Split along dim 2 of a tensor with at least 3 dims.

    Example:
        >>> [p.shape for p in ember.zeros(2, 2, 6).dsplit(3)]
        [ember.Size([2, 2, 2]), ember.Size([2, 2, 2]), ember.Size([2, 2, 2])]
    """
    return _split_along(self, sections, 2, "dsplit", 3)


# -- detach ------------------------------------------------------------------------------------
@composite("detach(Tensor(a) self) -> Tensor(a)")
def detach(self: Tensor) -> Tensor:
    """A tensor sharing storage and version counter, outside autograd (not a view).

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = (x * 2).detach()
        >>> y.requires_grad, y.grad_fn is None
        (False, True)
    """
    from ember.tensor import make_tensor
    out = make_tensor(self._storage, self._shape, self._stride, self._offset, self._dtype,
                      self._device, version=self._ver)
    out._is_inference = self._is_inference
    if self._is_conj:
        out._is_conj = True
    if self._is_neg:
        out._is_neg = True
    return out



def _multi_view(outs: tuple, node_name: str) -> tuple:
    """Flag views that come from a multi-view op: autograd forbids modifying them in place."""
    for i, o in enumerate(outs):
        if o.grad_fn is not None:
            o._creation_meta = 1
            o.__dict__["_view_op"] = (node_name, i)
    return outs


# -- derivative helpers ------------------------------------------------------------------------
def sum_to_shape(grad: Tensor, shape: tuple) -> Tensor:
    """Sum ``grad`` over the dims that broadcasting added or expanded to reach ``shape``."""
    lead = grad.dim() - len(shape)
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape)
                                      if s == 1 and grad.shape[lead + i] != 1)
    if dims:
        grad = grad.sum(dims, keepdim=True)
    return grad.reshape(shape) if tuple(grad.shape) != tuple(shape) else grad


def embed(grad: Tensor, ctx, view_of) -> Tensor:
    """Zeros shaped like the input, with ``grad`` written into the region ``view_of`` picks."""
    from ember.ops.creation import zeros
    out = zeros(ctx.shape_of("self"), dtype=grad.dtype, device=grad.device)
    view_of(out).copy_(grad)
    return out


def _positions(shape, stride, offset) -> list[int]:
    """Storage position of every element of a strided view, in row-major order."""
    pos = np.full(tuple(shape), offset, dtype=np.int64)
    for d, (n, st) in enumerate(zip(shape, stride)):
        pos += (np.arange(n, dtype=np.int64) * st).reshape((n,) + (1,) * (len(shape) - d - 1))
    return pos.reshape(-1).tolist()


# -- complex views -----------------------------------------------------------------------------
# NOTE [Complex views]
# A complex tensor's storage holds (real, imag) pairs: ``view_as_real`` sees them as a trailing
# dim of 2 over the real dtype (strides doubled), ``view_as_complex`` the reverse; ``real`` and
# ``imag`` select one half. All four share storage and version counter with their input, so
# writing ``x.real[0] = 1`` changes ``x``, as torch.
def _dtype_view_operator(schema: str, doc: str):
    """Declare a view op whose geometry rule also gives the output dtype."""

    def deco(geometry):
        op = define(schema, (Tag.view,), doc)
        op.geometry = geometry
        op.__module__ = __name__

        def kernel(self, *args, **kwargs):
            shape, stride, offset, dtype = geometry(self, *args, **kwargs)
            return make_view(self, shape, stride, offset, dtype)

        op.register(AliasKey.CompositeExplicitAutograd, kernel)
        return op

    return deco


def _view_as_real_doc() -> str:
    return """A real view of a complex tensor: a trailing dim of size 2 holds (real, imag).

    Raises:
        RuntimeError: ``self`` is not complex, or carries an unresolved conjugation bit.

    Example:
        >>> ember.view_as_real(ember.tensor([1 + 2j, 3 - 4j]))
        tensor([[ 1.,  2.],
                [ 3., -4.]])
    """


@_dtype_view_operator("view_as_real(Tensor(a) self) -> Tensor(a)", _view_as_real_doc())
def view_as_real(self: Tensor):
    if not self._dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if self._is_conj:
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To "
                           "resolve the conjugate tensor so you can view it as real, use "
                           "self.resolve_conj()")
    return (self._shape + (2,), tuple(s * 2 for s in self._stride) + (1,), self._offset * 2,
            self._dtype.to_real())


@derivative(view_as_real)
def _view_as_real_backward(ctx, grad):
    return view_as_complex(grad.contiguous())


def _view_as_complex_doc() -> str:
    return """A complex view of a real tensor whose last dim (size 2, stride 1) holds (real, imag).

    float16 gives complex32, float32 complex64, float64 complex128.

    Raises:
        RuntimeError: a dtype other than float16/float32/float64, a last dim that is not of
            size 2 and stride 1, other strides or the storage offset odd (torch's messages).

    Example:
        >>> ember.view_as_complex(ember.tensor([[1.0, 2.0], [3.0, -4.0]]))
        tensor([1.+2.j, 3.-4.j])
    """


@_dtype_view_operator("view_as_complex(Tensor(a) self) -> Tensor(a)", _view_as_complex_doc())
def view_as_complex(self: Tensor):
    d = self._dtype
    if d is not dt.float32 and d is not dt.float64 and d is not dt.float16:
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, "
                           f"but got a tensor of scalar type: {d.scalar_name}")
    if not self._shape:
        raise RuntimeError("Input tensor must have one or more dimensions")
    if self._shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if self._stride[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in self._stride[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if self._offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    return (self._shape[:-1], tuple(s // 2 for s in self._stride[:-1]), self._offset // 2,
            d.to_complex())


@derivative(view_as_complex)
def _view_as_complex_backward(ctx, grad):
    return view_as_real(grad.contiguous().resolve_conj())


@composite("real(Tensor(a) self) -> Tensor(a)", method=False)
def real(input: Tensor) -> Tensor:
    """The real part: a real view of a complex tensor, ``input`` itself for a real one (torch).

    Example:
        >>> x = ember.tensor([1 + 2j, 3 - 4j])
        >>> ember.real(x)
        tensor([1., 3.])
        >>> ember.real(x).data_ptr() == x.data_ptr()
        True
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"real(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input._dtype.is_complex:
        return input
    if input._is_conj:  # the stored values: same real parts
        input = _conj(input)
    return select(view_as_real(input), -1, 0)


@composite("imag(Tensor(a) self) -> Tensor(a)", method=False)
def imag(input: Tensor) -> Tensor:
    """The imaginary part of a complex tensor, as a real view (``torch.imag``).

    On a tensor with the lazy conjugation bit the result is a view of the stored imaginary
    parts with the negative bit set (``is_neg()``; NOTE [The negative bit] in
    ember/tensor/tensor.py), as torch: it reads the negated parts, and writes through it reach
    ``input`` with the sign applied.

    Raises:
        RuntimeError: ``input`` is not complex.

    Example:
        >>> x = ember.tensor([1 + 2j, 3 - 4j])
        >>> ember.imag(x)
        tensor([ 2., -4.])
        >>> y = x.conj().imag
        >>> y, y.is_neg()
        (tensor([-2.,  4.]), True)
        >>> _ = y.fill_(1.0); x
        tensor([1.-1.j, 3.-1.j])
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"imag(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input._dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    if input._is_conj:  # the stored parts, read negated
        return select(_neg_view(view_as_real(_conj(input))), -1, 1)
    return select(view_as_real(input), -1, 1)


def _set_part(part):
    def setter(self: Tensor, value) -> None:
        part(self).copy_(value)  # a negative-bit part stores the negations, as torch
    return setter


Tensor.real = property(real, _set_part(real), doc="The real part (a view for complex tensors).")
Tensor.imag = property(imag, _set_part(imag), doc="The imaginary part of a complex tensor, as "
                                                   "a real view.")
__all__ += ["view_as_real", "view_as_complex", "real", "imag"]


# -- the conjugation bit (NOTE [The conjugation bit] in ember/tensor/tensor.py) ----------------
def _conj_doc() -> str:
    return """A view of ``self`` with the conjugation bit flipped (no copy; torch's ``_conj``)."""


@_dtype_view_operator("_conj(Tensor(a) self) -> Tensor(a)", _conj_doc())
def _conj(self: Tensor):
    return self._shape, self._stride, self._offset, self._dtype


def _conj_kernel(self: Tensor) -> Tensor:
    out = make_view(self, self._shape, self._stride, self._offset)
    out._is_conj = not self._is_conj
    return out


_conj.register(AliasKey.CompositeExplicitAutograd, _conj_kernel)


@derivative(_conj)
def _conj_backward(ctx, grad):
    return grad.conj()


@composite("conj(Tensor(a) self) -> Tensor(a)")
def conj(input: Tensor) -> Tensor:
    """The complex conjugate as a lazy view (``is_conj()`` True; shares storage, no copy).

    A real tensor is its own conjugate: ``conj`` returns ``input`` itself, as torch.

    Example:
        >>> x = ember.tensor([1 + 2j, 3 - 4j])
        >>> y = x.conj()
        >>> y, y.is_conj(), y.data_ptr() == x.data_ptr()
        (tensor([1.-2.j, 3.+4.j]), True, True)
        >>> r = ember.tensor([1.0]); r.conj() is r
        True
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"conj(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input._dtype.is_complex:
        return input
    return _conj(input)


@composite("resolve_conj(Tensor(a) self) -> Tensor(a)")
def resolve_conj(input: Tensor) -> Tensor:
    """``input`` itself without the conjugation bit; a conjugated view is materialised into a
    new tensor holding its values (a negative bit it also carries is resolved too, as torch).

    Example:
        >>> y = ember.tensor([1 + 2j]).conj()
        >>> z = y.resolve_conj()
        >>> z, z.is_conj(), y.is_conj()
        (tensor([1.-2.j]), False, True)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"resolve_conj(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input._is_conj:
        return input
    return input.clone()


@composite("conj_physical(Tensor self) -> Tensor")
def conj_physical(input: Tensor) -> Tensor:
    """The complex conjugate computed eagerly into a new tensor (``input`` itself for reals).

    Example:
        >>> z = ember.conj_physical(ember.tensor([1 + 2j]))
        >>> z, z.is_conj()
        (tensor([1.-2.j]), False)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"conj_physical(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input._dtype.is_complex:
        return input
    return _conj(input).clone()


@tensor_method("conj_physical_")
def conj_physical_(input: Tensor) -> Tensor:
    """In-place :func:`conj_physical`: conjugates the stored values (nothing for reals).

    Example:
        >>> x = ember.tensor([1 + 2j])
        >>> x.conj_physical_() is x, x
        (True, tensor([1.-2.j]))
    """
    if input._dtype.is_complex:
        input.copy_(_conj(input))
    return input


# -- the negative bit (NOTE [The negative bit] in ember/tensor/tensor.py) ----------------------
def _neg_view_doc() -> str:
    return """A view of ``self`` with the negative bit flipped: it reads ``-self``, shares storage,
    and writes through it store the negations (``torch._neg_view``).

    Example:
        >>> x = ember.tensor([1.0, -2.0])
        >>> y = ember._neg_view(x)
        >>> y, y.is_neg(), y.data_ptr() == x.data_ptr()
        (tensor([-1.,  2.]), True, True)
    """


@_dtype_view_operator("_neg_view(Tensor(a) self) -> Tensor(a)", _neg_view_doc())
def _neg_view(self: Tensor):
    return self._shape, self._stride, self._offset, self._dtype


def _neg_view_kernel(self: Tensor) -> Tensor:
    out = make_view(self, self._shape, self._stride, self._offset)
    out._is_neg = not self._is_neg
    return out


_neg_view.register(AliasKey.CompositeExplicitAutograd, _neg_view_kernel)
TENSOR_METHODS["_neg_view"] = _neg_view


@derivative(_neg_view)
def _neg_view_backward(ctx, grad):
    return grad.neg()


@composite("resolve_neg(Tensor(a) self) -> Tensor(a)")
def resolve_neg(input: Tensor) -> Tensor:
    """``input`` itself without the negative bit; a view with the bit is materialised into a
    new tensor holding its values (a conjugation bit it also carries is resolved too, as torch).

    Example:
        >>> y = ember.tensor([1 + 2j, 3 - 4j]).conj().imag
        >>> z = y.resolve_neg()
        >>> z, z.is_neg(), y.is_neg()
        (tensor([-2.,  4.]), False, True)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"resolve_neg(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if not input._is_neg:
        return input
    return input.clone()


@tensor_method("is_neg")
def is_neg(input: Tensor) -> bool:
    """Whether ``input`` is a lazily negated view (its negative bit).

    Example:
        >>> x = ember.tensor([1 + 2j])
        >>> ember.is_neg(x), ember.is_neg(x.conj().imag), ember.is_neg(x.conj().real)
        (False, True, False)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"is_neg(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input._is_neg


@tensor_method("is_conj")
def is_conj(input: Tensor) -> bool:
    """Whether ``input`` is a lazily conjugated view (its conjugation bit).

    Example:
        >>> x = ember.tensor([1j])
        >>> ember.is_conj(x), ember.is_conj(x.conj()), ember.is_conj(x.conj().conj())
        (False, True, False)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"is_conj(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input._is_conj


def is_complex(input: Tensor) -> bool:
    """Whether ``input``'s dtype is complex (``torch.is_complex``).

    Example:
        >>> ember.is_complex(ember.ones(1)), ember.is_complex(ember.tensor([1j]))
        (False, True)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"is_complex(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return input._dtype.is_complex


@tensor_method("chalf")
def _chalf(self: Tensor) -> Tensor:
    """``self.to(ember.complex32)``: (real, imag) pairs of float16.

    Example:
        >>> ember.tensor([1.5 - 2j]).chalf()
        tensor([1.5000-2.j], dtype=ember.complex32)
    """
    return self.to(dt.complex32)


@tensor_method("cfloat")
def _cfloat(self: Tensor) -> Tensor:
    """``self.to(ember.complex64)``.

    Example:
        >>> ember.tensor([1.0]).cfloat()
        tensor([1.+0.j])
    """
    return self.to(dt.complex64)


@tensor_method("cdouble")
def _cdouble(self: Tensor) -> Tensor:
    """``self.to(ember.complex128)``.

    Example:
        >>> ember.tensor([1.0]).cdouble().dtype
        ember.complex128
    """
    return self.to(dt.complex128)


__all__ += ["conj", "resolve_conj", "conj_physical", "conj_physical_", "is_conj", "is_complex",
            "_neg_view", "resolve_neg", "is_neg"]
