"""Shape-manipulation and sorting operators: joining, flipping, rolling, repeating, triangles,
diagonals, sorting, selection, uniqueness, counting and searching.

Each operator's Meta rule validates its arguments (PyTorch's messages) and predicts the output.
Ops whose output shape depends on the *values* of a tensor (``unique``, ``unique_consecutive``,
``bincount``, tensor-valued ``repeat_interleave`` without ``output_size``) are tagged
``data_dependent_output``; their Meta rule validates and then refuses, as torch does for meta
tensors, while their CPU kernels validate with the same helpers and compute the shape from data.
Joining ops that take a tensor list get a BackendSelect guard so that an empty list raises
PyTorch's error instead of a dispatch error. CPU kernels live in ember/backends/cpu/shape.py.
Derivative rules follow their ops (composites such as stack, rot90 and tile differentiate through
their parts); ops with integer outputs need none, ``histc`` records nothing, and the ``unique``
family and weighted ``bincount`` keep the fallback node whose backward raises, as torch's do.

This file is over 800 lines on purpose: it is one family of about forty operators whose rules
are short and independent; splitting it would scatter the family's shared validation helpers.
"""

from __future__ import annotations

import functools
import warnings
from collections import namedtuple
from functools import reduce

from ember.autograd.graph import SavedTensor
from ember.autograd.kernel import autograd_kernel
from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes as _broadcast
from ember.core.layout import canonical_dim, numel
from ember.dispatch import AliasKey, DispatchKey, Tag, redispatch
from ember.ops._define import Spec, composite, derivative, operator, tensor_method
from ember.ops._promotion import result_type
from ember.ops.creation import arange, empty, zeros
from ember.ops.pointwise import check_writable
from ember.ops.views import embed, expand, flatten, reshape, transpose, unsqueeze, view
from ember.tensor import Size, Tensor

__all__ = [
    "cat", "concat", "concatenate", "stack", "hstack", "vstack", "row_stack", "dstack",
    "column_stack", "flip", "fliplr", "flipud", "roll", "rot90", "repeat_interleave", "tile",
    "tril", "triu", "tril_", "triu_", "diag", "diag_embed", "diagflat", "trace", "cross",
    "meshgrid", "broadcast_tensors", "broadcast_shapes", "atleast_1d", "atleast_2d",
    "atleast_3d", "sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive",
    "bincount", "histc", "searchsorted", "bucketize",
]

_TN = {d.name: d.scalar_name for d in dt.ALL_DTYPES}


def _named(name: str):
    cls = namedtuple(name, ("values", "indices"))
    cls.__module__ = "ember.return_types"
    return cls


# torch.return_types equivalents
SortResult, TopkResult, KthvalueResult = _named("sort"), _named("topk"), _named("kthvalue")


def _not_implemented(kernel: str, d: dt.DType) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{_TN[d.name]}\'')


def _int_list(dims) -> tuple[int, ...]:
    """``dims`` given as an int, a sequence, or varargs holding one sequence."""
    if isinstance(dims, int):
        return (dims,)
    dims = tuple(dims)
    if len(dims) == 1 and not isinstance(dims[0], int):
        dims = tuple(dims[0])
    return tuple(int(d) for d in dims)


def _wrap_dims(dims, nd: int) -> tuple[int, ...]:
    out = tuple(canonical_dim(d, nd) for d in dims)
    seen = set()
    for d in out:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return out


def _guard_list(op, empty_error):
    """Route an op's calls through a BackendSelect check that its tensor list is non-empty."""

    def select(op_, ks, *args, **kwargs):
        tensors = args[0] if args else kwargs.get("tensors", ())
        if not isinstance(tensors, Tensor) and len(tensors) == 0:
            raise empty_error()
        return redispatch(op_, ks, *args, **kwargs)

    op.register(DispatchKey.BackendSelect, select, with_keyset=True)
    return op


class _EmptyListError(ValueError, RuntimeError):
    """Raised for an empty tensor list where torch raises ValueError (also a RuntimeError)."""


# -- joining -----------------------------------------------------------------------------------
def cat_spec(tensors, dim: int) -> tuple[tuple[int, ...], dt.DType]:
    """Shape and promoted dtype of ``cat``; tensors of shape ``(0,)`` are skipped (legacy)."""
    dtype = reduce(dt.promote_types, (t._dtype for t in tensors))
    for i, t in enumerate(tensors):
        if not t._shape:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               "concatenated")
    live = [(i, t) for i, t in enumerate(tensors) if t._shape != (0,)]
    if not live:
        canonical_dim(dim, 1)
        return (0,), dtype
    ref = live[0][1]._shape
    nd = len(ref)
    d = canonical_dim(dim, nd)
    total = 0
    for i, t in live:
        shape = t._shape
        if len(shape) != nd:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {nd} and "
                               f"{len(shape)}")
        for k in range(nd):
            if k != d and shape[k] != ref[k]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. "
                                   f"Expected size {ref[k]} but got size {shape[k]} for tensor "
                                   f"number {i} in the list.")
        total += shape[d]
    return ref[:d] + (total,) + ref[d + 1:], dtype


@operator("cat(Tensor[] tensors, int dim=0, *, Tensor(a!)? out=None) -> Tensor", method=False)
def cat(tensors, dim: int = 0, *, out=None):
    """Concatenate tensors along an existing ``dim`` (``torch.cat``).

    Inputs are promoted to a common dtype; 1-d empty tensors of shape ``(0,)`` are skipped
    (PyTorch's legacy rule). All other sizes must match except along ``dim``.

    Raises:
        ValueError: an empty list. RuntimeError: 0-d inputs or mismatched sizes.

    Example:
        >>> import ember
        >>> ember.cat([ember.ones(2, 3), ember.zeros(1, 3)]).shape
        ember.Size([3, 3])
    """
    shape, dtype = cat_spec(tensors, dim)
    if out is not None and not dt.can_cast(dtype, out._dtype):
        raise TypeError(f"torch.cat(): input types can't be cast to the desired output type "
                        f"{_TN[out._dtype.name]}")
    return Spec(shape, dtype)


_guard_list(cat, lambda: _EmptyListError("torch.cat(): expected a non-empty list of Tensors"))
concat = cat


def _list_shapes(ctx) -> list[tuple[int, ...]]:
    """Shapes of the tensors of an op whose only tensor argument is a list.

    ``ctx.shape_of`` knows single tensor arguments only; the node's input metadata holds the
    shape of every list element in order.
    """
    return [shape for shape, _ in ctx._node._in_meta]


@derivative(cat)
def _cat_backward(ctx, grad):
    # Each input gets its slice of grad; legacy (0,) inputs were skipped and get (0,) grads.
    d = canonical_dim(ctx.dim, grad.dim())
    grads, start = [], 0
    for shape in _list_shapes(ctx):
        if shape == (0,):
            grads.append(zeros((0,), dtype=grad.dtype, device=grad.device))
            continue
        grads.append(grad.narrow(d, start, shape[d]))
        start += shape[d]
    return [grads]


def concatenate(tensors, axis: int = 0, out=None) -> Tensor:
    """Alias of :func:`cat` with NumPy's ``axis`` name.

    Example:
        >>> ember.concatenate([ember.zeros(1, 2), ember.ones(2, 2)], axis=0).shape
        ember.Size([3, 2])
    """
    return cat(tensors, axis, out=out)


def _joiner(schema: str, name: str):
    """Declare a list-joining composite whose empty list raises "<name> expects ..."."""
    def error() -> RuntimeError:
        return RuntimeError(f"{name} expects a non-empty TensorList")

    def deco(fn):
        @functools.wraps(fn)
        def checked(tensors, *args, **kwargs):
            if len(tensors) == 0:  # reached directly when a higher key serves the composite
                raise error()
            return fn(tensors, *args, **kwargs)

        return _guard_list(composite(schema, method=False)(checked), error)
    return deco


@_joiner("stack(Tensor[] tensors, int dim=0, *, Tensor(a!)? out=None) -> Tensor", "stack")
def stack(tensors, dim: int = 0, *, out=None) -> Tensor:
    """Join equally shaped tensors along a new ``dim``.

    Shape: ``k`` tensors of shape ``S`` give ``S`` with ``k`` inserted at ``dim``.

    Example:
        >>> ember.stack([ember.tensor([1, 2]), ember.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]])
        >>> ember.stack([ember.zeros(2, 3)] * 4, dim=1).shape
        ember.Size([2, 4, 3])
    """
    tensors = list(tensors)
    first = tensors[0]._shape
    d = canonical_dim(dim, len(first) + 1)
    for i, t in enumerate(tensors[1:], 1):
        if t._shape != first:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(first)} at entry 0 and {list(t._shape)} at entry {i}")
    return cat([unsqueeze(t, d) for t in tensors], d, out=out)


@_joiner("hstack(Tensor[] tensors, *, Tensor(a!)? out=None) -> Tensor", "hstack")
def hstack(tensors, *, out=None) -> Tensor:
    """Concatenate column-wise: along dim 0 for 1-d inputs, else dim 1.

    Example:
        >>> ember.hstack([ember.tensor([1, 2]), ember.tensor([3])])
        tensor([1, 2, 3])
    """
    ts = atleast_1d(list(tensors))
    return cat(ts, 0 if ts[0].dim() == 1 else 1, out=out)


@_joiner("vstack(Tensor[] tensors, *, Tensor(a!)? out=None) -> Tensor", "vstack")
def vstack(tensors, *, out=None) -> Tensor:
    """Concatenate row-wise after making every input at least 2-d.

    Example:
        >>> ember.vstack([ember.tensor([1, 2]), ember.tensor([3, 4])])
        tensor([[1, 2],
                [3, 4]])
    """
    return cat(atleast_2d(list(tensors)), 0, out=out)


@_joiner("row_stack(Tensor[] tensors, *, Tensor(a!)? out=None) -> Tensor", "row_stack")
def row_stack(tensors, *, out=None) -> Tensor:
    """Alias of :func:`vstack`.

    Example:
        >>> ember.row_stack([ember.tensor([1, 2]), ember.tensor([3, 4])]).shape
        ember.Size([2, 2])
    """
    return cat(atleast_2d(list(tensors)), 0, out=out)


@_joiner("dstack(Tensor[] tensors, *, Tensor(a!)? out=None) -> Tensor", "dstack")
def dstack(tensors, *, out=None) -> Tensor:
    """Concatenate depth-wise (dim 2) after making every input at least 3-d.

    Example:
        >>> ember.dstack([ember.tensor([1, 2]), ember.tensor([3, 4])])
        tensor([[[1, 3],
                 [2, 4]]])
    """
    return cat(atleast_3d(list(tensors)), 2, out=out)


@_joiner("column_stack(Tensor[] tensors, *, Tensor(a!)? out=None) -> Tensor", "column_stack")
def column_stack(tensors, *, out=None) -> Tensor:
    """Stack as columns: 0-d and 1-d inputs become ``(numel, 1)``; then cat along dim 1.

    Example:
        >>> ember.column_stack([ember.tensor([1, 2]), ember.tensor([3, 4])])
        tensor([[1, 3],
                [2, 4]])
    """
    cols = [reshape(t, (t.numel(), 1)) if t.dim() <= 1 else t for t in tensors]
    return cat(cols, 1, out=out)


def _atleast(fn, tensors):
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    elif len(tensors) == 1:
        return fn(tensors[0])
    return tuple(fn(t) for t in tensors)


def _at1(t: Tensor) -> Tensor:
    return reshape(t, (1,)) if not t._shape else t


def _at2(t: Tensor) -> Tensor:
    nd = len(t._shape)
    return reshape(t, (1, 1)) if nd == 0 else unsqueeze(t, 0) if nd == 1 else t


def _at3(t: Tensor) -> Tensor:
    nd = len(t._shape)
    if nd == 0:
        return reshape(t, (1, 1, 1))
    if nd == 1:
        return unsqueeze(unsqueeze(t, 0), 2)
    return unsqueeze(t, 2) if nd == 2 else t


def atleast_1d(*tensors):
    """Each input viewed with at least 1 dim (inputs that have one are returned as is).

    Example:
        >>> ember.atleast_1d(ember.tensor(5))
        tensor([5])
    """
    return _atleast(_at1, tensors)


def atleast_2d(*tensors):
    """Each input viewed with at least 2 dims (1-d ``(n,)`` becomes ``(1, n)``).

    Example:
        >>> ember.atleast_2d(ember.tensor([1, 2])).shape
        ember.Size([1, 2])
    """
    return _atleast(_at2, tensors)


def atleast_3d(*tensors):
    """Each input viewed with at least 3 dims (``(n,)`` -> ``(1, n, 1)``, 2-d adds a last dim).

    Example:
        >>> [t.shape for t in ember.atleast_3d(ember.tensor(1), ember.zeros(2, 3))]
        [ember.Size([1, 1, 1]), ember.Size([2, 3, 1])]
    """
    return _atleast(_at3, tensors)


# -- broadcasting ------------------------------------------------------------------------------
def broadcast_shapes(*shapes) -> Size:
    """The broadcast of shapes given as ints or sequences, as an ``ember.Size``.

    Example:
        >>> ember.broadcast_shapes((2, 1), (3,), (1, 1, 1))
        ember.Size([1, 2, 3])
    """
    return Size(_broadcast(*((s,) if isinstance(s, int) else tuple(s) for s in shapes)))


@composite("broadcast_tensors(Tensor[] tensors) -> Tensor[]", method=False)
def broadcast_tensors(*tensors) -> tuple:
    """Expand every input to their common broadcast shape (views, stride 0 where expanded).

    Example:
        >>> a, b = ember.broadcast_tensors(ember.zeros(2, 1), ember.zeros(3))
        >>> a.shape, b.shape
        (ember.Size([2, 3]), ember.Size([2, 3]))
    """
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    shape = _broadcast(*(t._shape for t in tensors))
    return tuple(expand(t, shape) for t in tensors)


def _broadcast_tensors_empty(op, ks, *args, **kwargs):
    if not args or (len(args) == 1 and isinstance(args[0], list | tuple) and not args[0]):
        return ()
    return redispatch(op, ks, *args, **kwargs)


broadcast_tensors.register(DispatchKey.BackendSelect, _broadcast_tensors_empty, with_keyset=True)


@composite("meshgrid.indexing(Tensor[] tensors, *, str indexing) -> Tensor[]", method=False)
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids from 0-d/1-d tensors, as expanded views.

    ``indexing='ij'`` (the default, with a warning when omitted) gives shape
    ``(len(t0), len(t1), ...)``; ``'xy'`` swaps the first two output dims.

    Example:
        >>> xs, ys = ember.meshgrid(ember.tensor([1, 2, 3]), ember.tensor([4, 5]), indexing="ij")
        >>> xs
        tensor([[1, 1],
                [2, 2],
                [3, 3]])
        >>> ys
        tensor([[4, 5],
                [4, 5],
                [4, 5]])
    """
    if len(tensors) == 1 and isinstance(tensors[0], list | tuple):
        tensors = tuple(tensors[0])
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the "
                      "indexing argument.", UserWarning, stacklevel=3)
        indexing = "ij"
    elif indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but '
                           f'received: {indexing}')
    for t in tensors:
        if t._dtype is not tensors[0]._dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if len(t._shape) > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t}")
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) >= 2:
        order[0], order[1] = 1, 0
    sizes = [t.numel() for t in tensors]
    shape = tuple(sizes[i] for i in order)
    out = []
    for i, t in enumerate(tensors):
        axis = order.index(i)
        vshape = [1] * len(tensors)
        vshape[axis] = sizes[i]
        out.append(expand(view(t, tuple(vshape)), shape))
    return tuple(out)


_guard_list(meshgrid, lambda: RuntimeError("meshgrid expects a non-empty TensorList"))


# -- flip, roll, rotate ------------------------------------------------------------------------
def flip_dims(self: Tensor, args, dims) -> tuple[int, ...]:
    """Canonical dims of ``flip`` given as varargs or the ``dims`` keyword."""
    return _wrap_dims(_int_list(args if dims is None else dims), len(self._shape))


@operator("flip(Tensor self, int[] dims) -> Tensor")
def flip(self: Tensor, *args, dims=None):
    """Reverse the order of elements along ``dims`` (a copy).

    Example:
        >>> import ember
        >>> ember.tensor([1, 2, 3]).flip(0).tolist()
        [3, 2, 1]
    """
    flip_dims(self, args, dims)
    return Spec(self._shape, self._dtype)


@derivative(flip)
def _flip_backward(ctx, grad):
    return flip(grad, *ctx.args, dims=ctx.dims)


@composite("fliplr(Tensor self) -> Tensor")
def fliplr(self: Tensor) -> Tensor:
    """Flip dim 1 (left/right); needs at least 2 dims.

    Example:
        >>> ember.fliplr(ember.tensor([[1, 2], [3, 4]]))
        tensor([[2, 1],
                [4, 3]])
    """
    if len(self._shape) < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return flip(self, (1,))


@composite("flipud(Tensor self) -> Tensor")
def flipud(self: Tensor) -> Tensor:
    """Flip dim 0 (up/down); needs at least 1 dim.

    Example:
        >>> ember.flipud(ember.tensor([[1, 2], [3, 4]]))
        tensor([[3, 4],
                [1, 2]])
    """
    if not self._shape:
        raise RuntimeError("Input must be >= 1-d.")
    return flip(self, (0,))


def roll_args(self: Tensor, shifts, dims) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Validated ``(shifts, dims)`` of ``roll``; empty dims means "roll the flattened tensor"."""
    shifts = _int_list(shifts)
    dims = () if dims is None else _int_list(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if (dims or len(shifts) != 1) and len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, "
                           f"dims:{len(dims)}")
    nd = len(self._shape)
    if nd == 0 and dims:
        raise IndexError(f"Dimension specified as {dims[0]} but tensor has no dimensions")
    return shifts, tuple(canonical_dim(d, nd) for d in dims)


@operator("roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor")
def roll(self: Tensor, shifts, dims=None):
    """Rotate elements along ``dims`` by ``shifts`` (the flattened tensor when ``dims`` is None).

    Example:
        >>> import ember
        >>> ember.tensor([1, 2, 3]).roll(1).tolist()
        [3, 1, 2]
    """
    roll_args(self, shifts, dims)
    return Spec(self._shape, self._dtype)


@derivative(roll)
def _roll_backward(ctx, grad):
    return roll(grad, tuple(-s for s in _int_list(ctx.shifts)), ctx.dims)


@composite("rot90(Tensor self, int k=1, int[] dims=[0,1]) -> Tensor")
def rot90(self: Tensor, k: int = 1, dims=(0, 1)) -> Tensor:
    """Rotate by 90 degrees ``k`` times in the plane of ``dims`` (from dims[0] towards dims[1]).

    Like torch, odd ``k`` gives a transposed (non-contiguous) result.

    Example:
        >>> ember.rot90(ember.tensor([[1, 2], [3, 4]]))
        tensor([[2, 4],
                [1, 3]])
    """
    dims = tuple(dims)
    nd = len(self._shape)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    a, b = canonical_dim(dims[0], nd), canonical_dim(dims[1], nd)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {dims[0]} "
                           f"and dim1 = {dims[1]}")
    k %= 4
    if k == 1:
        return transpose(flip(self, (b,)), a, b)
    if k == 2:
        return flip(self, (a, b))
    if k == 3:
        return transpose(flip(self, (a,)), a, b)
    return flip(self, ())


# -- repeating ---------------------------------------------------------------------------------
def repeat_shape(self: Tensor, repeats) -> tuple[int, ...]:
    """Output shape of ``repeat``: ``self`` padded with leading 1-dims, times ``repeats``."""
    nd = len(self._shape)
    if len(repeats) < nd:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    padded = (1,) * (len(repeats) - nd) + self._shape
    shape = tuple(s * r for s, r in zip(padded, repeats))
    if any(r < 0 for r in repeats):
        bad = min(s for s in shape if s < 0) if any(s < 0 for s in shape) else min(repeats)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: "
                           f"{list(shape)}")
    return shape


@operator("repeat(Tensor self, SymInt[] repeats) -> Tensor")
def repeat(self: Tensor, *repeats):
    """Tile ``self`` ``repeats[i]`` times along each dim (``Tensor.repeat``).

    Shape: ``(1,)*(len(repeats)-ndim) + shape`` times ``repeats`` elementwise.

    Example:
        >>> ember.tensor([1, 2]).repeat(2, 2)
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
        >>> ember.zeros(2, 3).repeat(4, 1, 1).shape
        ember.Size([4, 2, 3])
    """
    return Spec(repeat_shape(self, _int_list(repeats)), self._dtype)


@derivative(repeat)
def _repeat_backward(ctx, grad):
    # Sum the copies: (r0*s0, r1*s1, ...) -> (r0, s0, r1, s1, ...) -> sum over the r's.
    repeats = _int_list(ctx.repeats)
    shape = ctx.shape_of("self")
    if not repeats:
        return grad
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    split = tuple(x for r, s in zip(repeats, padded) for x in (r, s))
    summed = grad.reshape(split).sum(tuple(range(0, len(split), 2)))
    return summed.reshape(shape)


@composite("tile(Tensor self, SymInt[] dims) -> Tensor")
def tile(self: Tensor, *dims) -> Tensor:
    """Like ``repeat``, but ``dims`` shorter than ``self.dim()`` is padded with leading ones.

    Example:
        >>> ember.tile(ember.tensor([1, 2]), (2, 2))
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    dims = _int_list(dims)
    dims = (1,) * (len(self._shape) - len(dims)) + dims
    return repeat(self, dims)


_INT_KINDS = (dt.int8, dt.int16, dt.int32, dt.int64)


def repeat_interleave_args(self: Tensor, repeats, dim, output_size):
    """Validate ``repeat_interleave``; returns ``(input, repeats, dim)`` with ``input`` the
    tensor to repeat (``arange`` length for the one-argument form) and ``dim`` canonical."""
    if repeats is None:  # one-argument form: self holds the repeats
        if self._dtype not in (dt.int32, dt.int64):
            raise _not_implemented("repeat_interleave_cpu", self._dtype)
        if len(self._shape) != 1:
            raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
        return None, self, 0
    if dim is None:
        shape = (numel(self._shape),)
        d = 0
    else:
        shape = self._shape
        d = canonical_dim(dim, len(shape))
    if isinstance(repeats, Tensor):
        if len(repeats._shape) > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        if repeats._dtype not in (dt.int32, dt.int64):
            raise _not_implemented("repeat_interleave_cpu", repeats._dtype)
        n = numel(repeats._shape)
        if n != 1 and n != shape[d]:
            raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                               f"repeats.size(0) = {n} and input.size({d}) = {shape[d]}")
    elif int(repeats) < 0:
        raise RuntimeError("Repeats must be non-negative")
    return shape, repeats, d


@operator("repeat_interleave.self_Tensor(Tensor self, Any repeats=None, int? dim=None, *, "
          "SymInt? output_size=None) -> Tensor", (Tag.data_dependent_output,))
def repeat_interleave(self: Tensor, repeats=None, dim=None, *, output_size=None):
    """Repeat each element (or slice along ``dim``) ``repeats`` times.

    ``repeats`` is an int or a 0-d/1-d integer tensor; with ``dim=None`` the input is flattened.
    The one-argument form ``repeat_interleave(repeats)`` repeats ``arange(len(repeats))``.
    A tensor ``repeats`` makes the output size data dependent: meta tensors need ``output_size``.

    Example:
        >>> ember.repeat_interleave(ember.tensor([1, 2]), 2)
        tensor([1, 1, 2, 2])
        >>> ember.tensor([1, 2]).repeat_interleave(ember.tensor([1, 3]))
        tensor([1, 2, 2, 2])
    """
    shape, reps, d = repeat_interleave_args(self, repeats, dim, output_size)
    if shape is not None and not isinstance(reps, Tensor):
        size = shape[d] * int(reps)
        if output_size is not None and output_size != size:
            raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {size} but "
                               f"got {output_size}")
        return Spec(shape[:d] + (size,) + shape[d + 1:], self._dtype)
    if output_size is None:
        raise RuntimeError("cannot repeat_interleave a meta tensor without output_size")
    if shape is None:
        return Spec((output_size,), reps._dtype)
    return Spec(shape[:d] + (output_size,) + shape[d + 1:], self._dtype)


@derivative(repeat_interleave, save=("repeats",))
def _repeat_interleave_backward(ctx, grad):
    # Each input slice receives the sum of its copies.
    shape = ctx.shape_of("self")
    dim = ctx.dim
    flat = (numel(shape),) if dim is None else tuple(shape)
    d = 0 if dim is None else canonical_dim(dim, len(shape))
    reps = ctx.repeats
    if isinstance(reps, Tensor):
        source = repeat_interleave(arange(flat[d], device=grad.device), reps)
        g = zeros(flat, dtype=grad.dtype, device=grad.device).index_add(d, source, grad)
        return g.reshape(shape), None
    split = flat[:d] + (flat[d], int(reps)) + flat[d + 1:]
    return grad.reshape(split).sum(d + 1).reshape(shape)


# -- triangles and diagonals -------------------------------------------------------------------
def _tri_check(name: str, self: Tensor) -> None:
    if len(self._shape) < 2:
        raise RuntimeError(f"{name}: input tensor must have at least 2 dimensions")


def _declare_tri(name: str, doc: str):
    def rule(self, diagonal=0, *, out=None):
        _tri_check(name, self)
        return Spec(self._shape, self._dtype)

    def rule_(self, diagonal=0):
        _tri_check(name, self)
        check_writable(self)
        return Spec(self._shape, self._dtype)

    summary, _, example = doc.partition("\n\n")
    rule.__doc__ = (summary + "\n\n    Shape: same as ``input`` (at least 2-d; batched over "
                    "leading dims).\n\n" + example)
    rule_.__doc__ = f"""In-place :func:`{name}`.

    Example:
        >>> x = ember.ones(2, 2)
        >>> ember.{name}_(x) is x, int(x.sum())
        (True, 3)
    """
    op = operator(f"{name}(Tensor self, int diagonal=0, *, Tensor(a!)? out=None) -> Tensor")(
        rule)
    op_ = operator(f"{name}_(Tensor(a!) self, int diagonal=0) -> Tensor(a!)", (Tag.inplace,))(
        rule_)
    return op, op_


tril, tril_ = _declare_tri("tril", """Zero the elements above the ``diagonal``-th diagonal.

    Example:
        >>> ember.tril(ember.ones(2, 3, dtype=ember.int64))
        tensor([[1, 0, 0],
                [1, 1, 0]])
    """)
triu, triu_ = _declare_tri("triu", """Zero the elements below the ``diagonal``-th diagonal.

    Example:
        >>> ember.triu(ember.ones(3, 2, dtype=ember.int64), diagonal=1)
        tensor([[0, 1],
                [0, 0],
                [0, 0]])
    """)


def _tri_backward(tri):
    """The rule of ``tril``/``triu`` and their in-place forms: keep the same triangle."""
    def rule(ctx, grad):
        return tri(grad, ctx.diagonal)
    return rule


for _op, _tri in ((tril, tril), (tril_, tril), (triu, triu), (triu_, triu)):
    derivative(_op)(_tri_backward(_tri))


def diag_embed_shape(self: Tensor, offset: int, dim1: int, dim2: int):
    """Output shape and canonical dims of ``diag_embed``."""
    nd = len(self._shape) + 1
    a, b = canonical_dim(dim1, nd), canonical_dim(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (self._shape[-1] if self._shape else 1) + abs(offset)
    shape = list(self._shape[:-1])
    shape.insert(min(a, b), n)
    shape.insert(max(a, b), n)
    return tuple(shape), a, b


@operator("diag_embed(Tensor self, int offset=0, int dim1=-2, int dim2=-1) -> Tensor")
def diag_embed(self: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """Matrices (in dims ``dim1``/``dim2``) whose ``offset`` diagonal is the last dim of input.

    Shape: ``(*, n)`` -> ``(*, n+|offset|, n+|offset|)`` with the new dims at ``dim1``/``dim2``.

    Example:
        >>> ember.diag_embed(ember.tensor([1, 2]))
        tensor([[1, 0],
                [0, 2]])
    """
    return Spec(diag_embed_shape(self, offset, dim1, dim2)[0], self._dtype)


@derivative(diag_embed)
def _diag_embed_backward(ctx, grad):
    return grad.diagonal(ctx.offset, ctx.dim1, ctx.dim2)


def diag_shape(self: Tensor, diagonal: int) -> tuple[int, ...]:
    """Output shape of ``diag``: 1-d -> square 2-d, 2-d -> 1-d diagonal."""
    nd = len(self._shape)
    if nd == 1:
        n = self._shape[0] + abs(diagonal)
        return (n, n)
    if nd != 2:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")
    r, c = self._shape
    n = min(r, c - diagonal) if diagonal >= 0 else min(r + diagonal, c)
    return (max(n, 0),)


@operator("diag(Tensor self, int diagonal=0, *, Tensor(a!)? out=None) -> Tensor")
def diag(self: Tensor, diagonal: int = 0, *, out=None):
    """A 1-d input becomes a 2-d matrix with it on the ``diagonal``; a 2-d input gives that
    diagonal as a 1-d copy.

    Example:
        >>> import ember
        >>> ember.diag(ember.tensor([1, 2])).tolist()
        [[1, 0], [0, 2]]
    """
    return Spec(diag_shape(self, diagonal), self._dtype)


@derivative(diag)
def _diag_backward(ctx, grad):
    if len(ctx.shape_of("self")) == 1:  # vector -> matrix: read the diagonal back
        return grad.diagonal(ctx.diagonal)
    return embed(grad, ctx, lambda z: z.diagonal(ctx.diagonal))


@composite("diagflat(Tensor self, int offset=0) -> Tensor")
def diagflat(self: Tensor, offset: int = 0) -> Tensor:
    """A 2-d matrix with the flattened input on its ``offset`` diagonal.

    Example:
        >>> ember.diagflat(ember.tensor([[1, 2]]), offset=1)
        tensor([[0, 1, 0],
                [0, 0, 2],
                [0, 0, 0]])
    """
    return diag(flatten(self), offset)


@operator("trace(Tensor self) -> Tensor")
def trace(self: Tensor):
    """Sum of the main diagonal of a matrix; integer inputs sum to int64.

    Example:
        >>> ember.trace(ember.arange(9).reshape(3, 3))
        tensor(12)
    """
    if self._dtype is dt.bool_:
        raise _not_implemented("trace", self._dtype)
    if len(self._shape) != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim "
                           f"{len(self._shape)}")
    return Spec((), self._dtype if self._dtype.is_differentiable else dt.int64)


@derivative(trace)
def _trace_backward(ctx, grad):
    return embed(grad, ctx, lambda z: z.diagonal())


_cross_warned = [False]


def cross_args(self: Tensor, other: Tensor, dim) -> tuple[tuple[int, ...], int]:
    """Broadcast shape and canonical dim of ``cross`` (``linalg.cross`` checks)."""
    if dim is None:
        if not _cross_warned[0]:
            _cross_warned[0] = True
            warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\n"
                          "Please either pass the dim explicitly or simply use "
                          "torch.linalg.cross.", UserWarning, stacklevel=4)
        dim = next((i for i, s in enumerate(self._shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    if len(self._shape) != len(other._shape):
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    d = canonical_dim(dim, len(self._shape))
    if self._shape[d] != 3 or other._shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{self._shape[d]} and {other._shape[d]}")
    shape = _broadcast(self._shape, other._shape)
    if self._dtype is dt.bool_:
        raise _not_implemented("cross", self._dtype)
    if other._dtype is not self._dtype:
        raise RuntimeError(f"expected scalar type {_TN[self._dtype.name]} but found "
                           f"{_TN[other._dtype.name]}")
    return shape, d


@operator("cross(Tensor self, Tensor other, int? dim=None, *, Tensor(a!)? out=None) -> Tensor")
def cross(self: Tensor, other: Tensor, dim=None, *, out=None):
    """Cross product of 3-vectors along ``dim`` (broadcasting the other dims).

    ``dim=None`` is deprecated torch behaviour: the first dim of size 3 of ``input``.

    Example:
        >>> ember.cross(ember.tensor([1.0, 0.0, 0.0]), ember.tensor([0.0, 1.0, 0.0]), dim=0)
        tensor([0., 0., 1.])
    """
    return Spec(cross_args(self, other, dim)[0], self._dtype)


@derivative(cross, save=("self", "other"))
def _cross_backward(ctx, grad):
    # d(a x b) = da x b + a x db, and <g, da x b> = <b x g, da>.
    a, b = ctx.self, ctx.other
    dim = ctx.dim
    if dim is None:  # the deprecated default: the first dim of size 3 of ``self``
        dim = next(i for i, s in enumerate(a.shape) if s == 3)
    need_a, need_b = ctx.needs_input_grad
    a, b = (t.conj_physical() if t.is_complex() else t for t in (a, b))  # torch's convention
    ga = cross(b, grad, dim) if need_a else None
    gb = cross(grad, a, dim) if need_b else None
    return ga, gb


# -- sorting and selection ---------------------------------------------------------------------
def _sort_dim(self: Tensor, dim: int) -> int:
    d = canonical_dim(dim, len(self._shape))
    if self._dtype.is_complex:  # torch's CPU sort has no order for complex numbers
        raise RuntimeError(" Sort does not support complex dtypes on CPU")
    return d


def _keep_indices(op) -> None:
    """Let ``op``'s derivative rule read its ``indices`` output as ``ctx.indices``.

    NOTE [Saving the indices output]
    The gradient of sort, topk and kthvalue flows back through the *indices* output alone.
    ``save=("result",)`` would keep every output (the values too, and the indices with the
    node re-attached as their history), so this wrapper saves just the indices on the node a
    call just recorded (version-checked and freed with the graph like any saved tensor)
    instead of recomputing it from a saved input. A node made by an earlier call already holds
    its indices, so an ``out=`` tensor that carries old history is left alone.
    """
    def kernel(op_, ks, *args, **kwargs):
        out = autograd_kernel(op_, ks, *args, **kwargs)
        node = out[0].grad_fn
        if type(node) is op_.derivative and node._bound is not None \
                and "indices" not in node._bound:
            node._bound["indices"] = SavedTensor(out[1])
        return out

    op.register(AliasKey.Autograd, kernel, with_keyset=True)
    op.derivative.saves_anything = True  # free the indices after backward; refuse a second


def _select_backward(ctx, grad: Tensor, dim: int, unsqueeze_dim: bool = False) -> Tensor:
    """Zeros shaped like ``self`` with ``grad`` scattered back to the saved ``indices``."""
    shape = ctx.shape_of("self")
    if not shape:  # a 0-d input is its own (only) selected element
        return grad
    d = canonical_dim(dim, len(shape))
    indices = ctx.indices
    if unsqueeze_dim:
        grad, indices = grad.unsqueeze(d), indices.unsqueeze(d)
    return zeros(shape, dtype=grad.dtype, device=grad.device).scatter(d, indices, grad)


@operator("sort.stable(Tensor self, *, bool? stable=False, int dim=-1, bool descending=False, "
          "Tensor(a!)? values=None, Tensor(b!)? indices=None) -> (Tensor values, "
          "Tensor indices)")
def sort(self: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False,
         out=None):
    """Sort along ``dim``; returns ``(values, indices)``. NaN sorts as the largest value.

    ``stable=True`` keeps equal elements in their original order (ember always sorts stably,
    so ties are ordered as with ``stable=True``).

    Example:
        >>> import ember
        >>> ember.sort(ember.tensor([3, 1, 2])).indices.tolist()
        [1, 2, 0]
    """
    _sort_dim(self, dim)
    return Spec(self._shape, self._dtype), Spec(self._shape, dt.int64)


sort.result_tuple = SortResult


@derivative(sort)
def _sort_backward(ctx, grad_values, grad_indices):
    return _select_backward(ctx, grad_values, ctx.dim)


_keep_indices(sort)


@composite("argsort.stable(Tensor self, *, bool stable, int dim=-1, bool descending=False, "
           "Tensor(a!)? out=None) -> Tensor")
def argsort(self: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False,
            out=None):
    """Indices that sort ``self`` along ``dim`` (``sort(...).indices``).

    Example:
        >>> ember.argsort(ember.tensor([3, 1, 2]))
        tensor([1, 2, 0])
        >>> ember.tensor([3, 1, 2]).argsort(descending=True)
        tensor([0, 2, 1])
    """
    if out is None:
        return sort(self, dim, descending, stable=stable)[1]
    values = empty(0, dtype=self._dtype, device=self._device)
    return sort(self, dim, descending, stable=stable, out=(values, out))[1]


@composite("msort(Tensor self, *, Tensor(a!)? out=None) -> Tensor")
def msort(self: Tensor, *, out=None) -> Tensor:
    """Sort along dim 0 and return the values.

    Example:
        >>> ember.msort(ember.tensor([[3, 1], [1, 2]]))
        tensor([[1, 1],
                [3, 2]])
    """
    if out is None:
        return sort(self, 0)[0]
    return sort(self, 0, out=(out, empty(0, dtype=dt.int64, device=self._device)))[0]


def topk_dim(self: Tensor, k: int, dim: int) -> int:
    """Canonical ``dim`` of ``topk`` after checking ``k`` against its size."""
    d = canonical_dim(dim, len(self._shape))
    size = self._shape[d] if self._shape else 1
    if not 0 <= k <= size:
        raise RuntimeError("selected index k out of range")
    if self._dtype is dt.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    if self._dtype.is_complex:
        raise RuntimeError(" topk does not support complex dtypes on CPU")
    return d


@operator("topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True, *, "
          "Tensor(a!)? values=None, Tensor(b!)? indices=None) -> (Tensor values, "
          "Tensor indices)")
def topk(self: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *,
         out=None):
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices.

    NaN counts as larger than every number. Results are always in sorted order; which of
    several equal elements is picked is implementation defined (as in torch).

    Example:
        >>> values, indices = ember.topk(ember.tensor([1.0, 5.0, 3.0, 4.0]), 2)
        >>> values, indices
        (tensor([5., 4.]), tensor([1, 3]))
    """
    d = topk_dim(self, k, dim)
    shape = self._shape[:d] + (k,) + self._shape[d + 1:] if self._shape else ()
    return Spec(shape, self._dtype), Spec(shape, dt.int64)


topk.result_tuple = TopkResult


@derivative(topk)
def _topk_backward(ctx, grad_values, grad_indices):
    return _select_backward(ctx, grad_values, ctx.dim)


_keep_indices(topk)


def kthvalue_dim(self: Tensor, k: int, dim: int) -> int:
    """Canonical ``dim`` of ``kthvalue`` after PyTorch's checks."""
    d = canonical_dim(dim, len(self._shape))
    size = self._shape[d] if self._shape else 1
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {d} to have non-zero size.")
    if not 1 <= k <= size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    if (self._dtype is dt.bool_ or self._dtype.is_complex) and self._shape:
        raise _not_implemented("kthvalue_cpu", self._dtype)
    return d


@operator("kthvalue(Tensor self, SymInt k, int dim=-1, bool keepdim=False, *, "
          "Tensor(a!)? values=None, Tensor(b!)? indices=None) -> (Tensor values, "
          "Tensor indices)")
def kthvalue(self: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """The ``k``-th smallest element along ``dim`` (1-based) and its index.

    Shape: ``dim`` removed (kept as size 1 with ``keepdim``).

    Example:
        >>> result = ember.kthvalue(ember.tensor([4.0, 1.0, 3.0]), 2)
        >>> result.values, result.indices
        (tensor(3.), tensor(2))
    """
    d = kthvalue_dim(self, k, dim)
    if not self._shape:
        shape = ()
    elif keepdim:
        shape = self._shape[:d] + (1,) + self._shape[d + 1:]
    else:
        shape = self._shape[:d] + self._shape[d + 1:]
    return Spec(shape, self._dtype), Spec(shape, dt.int64)


kthvalue.result_tuple = KthvalueResult


@derivative(kthvalue)
def _kthvalue_backward(ctx, grad_values, grad_indices):
    return _select_backward(ctx, grad_values, ctx.dim, unsqueeze_dim=not ctx.keepdim)


_keep_indices(kthvalue)


# -- uniqueness and counting (data-dependent output shapes) ------------------------------------
def _no_meta(name: str) -> NotImplementedError:
    return NotImplementedError(f"aten::{name}: attempted to run this operator with Meta tensors, "
                               "but its output shape depends on the input's values, so no Meta "
                               "kernel can predict it")


def unique_dtype_check(self: Tensor) -> None:
    """torch's unique kernels have no order for complex numbers."""
    if self._dtype.is_complex:
        raise _not_implemented("unique", self._dtype)


def unique_dim_check(self: Tensor, dim: int) -> int:
    """Canonical ``dim`` for ``unique(dim=...)``/``unique_consecutive(dim=...)``."""
    if self._dtype.is_complex:  # torch's unique kernels have no complex order (checked first)
        raise _not_implemented("unique_dim", self._dtype)
    if not self._shape:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    d = canonical_dim(dim, len(self._shape))
    if numel(self._shape) == 0 and self._shape[d] != 0:
        raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique "
                           "cannot be applied")
    return d


_DDO = (Tag.data_dependent_output,)


@operator("_unique2(Tensor self, bool sorted=True, bool return_inverse=False, "
          "bool return_counts=False) -> (Tensor, Tensor, Tensor)", _DDO, method=False)
def _unique2(self: Tensor, sorted: bool = True, return_inverse: bool = False,
             return_counts: bool = False):
    """Sorted unique elements, inverse indices (input's shape) and counts of the flattened input."""
    unique_dtype_check(self)
    raise _no_meta("_unique2")


@operator("unique_dim(Tensor self, int dim, bool sorted=True, bool return_inverse=False, "
          "bool return_counts=False) -> (Tensor, Tensor, Tensor)", _DDO, method=False)
def unique_dim(self: Tensor, dim: int, sorted: bool = True, return_inverse: bool = False,
               return_counts: bool = False):
    """Unique slices along ``dim`` (sorted lexicographically), inverse indices and counts."""
    unique_dim_check(self, dim)
    raise _no_meta("unique_dim")


@operator("unique_consecutive(Tensor self, bool return_inverse=False, bool return_counts=False, "
          "int? dim=None) -> (Tensor, Tensor, Tensor)", _DDO, method=False)
def _unique_consecutive(self: Tensor, return_inverse: bool = False,
                        return_counts: bool = False, dim=None):
    """Collapse runs of equal consecutive elements (or slices along ``dim``)."""
    if dim is not None:
        unique_dim_check(self, dim)
    else:
        unique_dtype_check(self)
    raise _no_meta("unique_consecutive")


def _pick(results, return_inverse: bool, return_counts: bool):
    out, inverse, counts = results
    if return_inverse and return_counts:
        return out, inverse, counts
    if return_inverse:
        return out, inverse
    if return_counts:
        return out, counts
    return out


@tensor_method("unique")
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,
           return_counts: bool = False, dim=None):
    """Unique elements of ``input`` (or unique slices along ``dim``), sorted.

    Returns the unique values, plus (when asked) ``inverse`` indices mapping each input element
    (slice) to its unique entry and the ``counts`` of each unique entry; NaNs are all distinct.
    The output size depends on the data, so meta tensors raise NotImplementedError.

    Example:
        >>> import ember
        >>> ember.unique(ember.tensor([3, 1, 3])).tolist()
        [1, 3]
    """
    if dim is None:
        res = _unique2(input, sorted, return_inverse, return_counts)
    else:
        res = unique_dim(input, dim, sorted, return_inverse, return_counts)
    return _pick(res, return_inverse, return_counts)


@tensor_method("unique_consecutive")
def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim=None):
    """Eliminate all but the first element of every run of equal consecutive elements.

    Returns like :func:`unique` (values, and optionally ``inverse`` and ``counts``).

    Example:
        >>> ember.unique_consecutive(ember.tensor([1, 1, 2, 2, 3, 1]))
        tensor([1, 2, 3, 1])
        >>> ember.unique_consecutive(ember.tensor([1, 1, 2]), return_counts=True)
        (tensor([1, 2]), tensor([2, 1]))
    """
    res = _unique_consecutive(input, return_inverse, return_counts, dim)
    return _pick(res, return_inverse, return_counts)


def bincount_check(self: Tensor, weights, minlength: int) -> dt.DType:
    """Static checks of ``bincount``; returns the output dtype."""
    if self._dtype.category != dt.INTEGRAL:
        raise _not_implemented("bincount_cpu", self._dtype)
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if len(self._shape) != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None or self._shape[0] == 0:
        return dt.int64
    if len(weights._shape) != 1 or weights._shape[0] != self._shape[0]:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    return dt.float32 if weights._dtype is dt.float32 else dt.float64


@operator("bincount(Tensor self, Tensor? weights=None, SymInt minlength=0) -> Tensor", _DDO)
def bincount(self: Tensor, weights=None, minlength: int = 0):
    """Count occurrences of each non-negative int (weighted sums with ``weights``).

    Shape: ``(max(max(input) + 1, minlength),)``; int64, or float32/float64 with weights
    (float32 weights stay float32, others give float64, as in torch).

    Example:
        >>> ember.bincount(ember.tensor([0, 2, 2, 3]))
        tensor([1, 0, 2, 1])
        >>> ember.bincount(ember.tensor([0, 1]), minlength=4)
        tensor([1, 1, 0, 0])
    """
    bincount_check(self, weights, minlength)
    raise _no_meta("bincount")


# -- histograms and searching ------------------------------------------------------------------
def histc_check(self: Tensor, bins: int, min, max) -> None:
    """Static checks of ``histc`` (the finite-range check needs data and runs in the kernel)."""
    if not self._dtype.is_floating_point:
        raise _not_implemented("histogram_cpu", self._dtype)
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")


@operator("histc(Tensor self, int bins=100, Scalar min=0, Scalar max=0, *, "
          "Tensor(a!)? out=None) -> Tensor")
def histc(self: Tensor, bins: int = 100, min=0, max=0, *, out=None):
    """Histogram of ``bins`` equal-width bins over ``[min, max]`` (the data's range when
    ``min == max``); elements outside are ignored. Float inputs only.

    Example:
        >>> ember.histc(ember.tensor([0.5, 1.5, 1.5, 3.5]), bins=4, min=0, max=4)
        tensor([1., 2., 0., 1.])
    """
    histc_check(self, bins, min, max)
    return Spec((bins,), self._dtype)


def _not_differentiable(op) -> None:
    """Outputs of ``op`` never require grad, even for float outputs of inputs that do (torch's
    ``output_differentiability: [False]``): its Autograd kernel records nothing."""
    def kernel(op_, ks, *args, **kwargs):
        return op_.lookup(ks)(*args, **kwargs)

    op.register(AliasKey.Autograd, kernel, with_keyset=True)


_not_differentiable(histc)


def searchsorted_check(seq: Tensor, values, out_int32: bool, right: bool, side, sorter, out):
    """Static checks of ``searchsorted``; returns the result dtype."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
    result = dt.int32 if out_int32 else dt.int64
    if out is not None and out._dtype is not result:
        raise RuntimeError(f"torch.searchsorted(): output tensor's dtype is wrong, it can only "
                           f"be Int(int32) or Long(int64) depending on whether out_int32 flag is "
                           f"True, but we got output tensor's dtype {_TN[out._dtype.name]} and "
                           f"out_int32 flag is {out_int32}")
    if not seq._shape:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive "
                           "dimension, but got 0 dimension")
    vshape = values._shape if isinstance(values, Tensor) else ()
    if len(seq._shape) != 1 and seq._shape[:-1] != vshape[:-1]:
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(seq._shape)} and input value tensor {list(vshape)}")
    if sorter is not None:
        if sorter._dtype is not dt.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but "
                               f"got {_TN[sorter._dtype.name]}")
        if sorter._shape != seq._shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq._shape)}and got sorter "
                               f"tensor {list(sorter._shape)}")
    has_values = numel(values._shape) if isinstance(values, Tensor) else 1
    common = result_type(seq, values)
    if has_values and (common is dt.bool_ or common.is_complex):  # no order for complex
        raise _not_implemented("searchsorted_out_cpu", common)
    return result


@operator("searchsorted.Tensor(Tensor sorted_sequence, Tensor self, *, bool out_int32=False, "
          "bool right=False, str? side=None, Tensor? sorter=None, Tensor(a!)? out=None) "
          "-> Tensor", method=False)
def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False,
                 right: bool = False, side=None, sorter=None, out=None):
    """Indices where ``input`` values would be inserted into the innermost dim of
    ``sorted_sequence`` to keep it sorted (first such index, or last with ``right``/``side``).

    ``sorted_sequence`` is 1-d, or shares ``input``'s leading dims. ``sorter`` gives the
    permutation that sorts an unsorted sequence. Shape: ``input``'s (0-d for a scalar).

    Example:
        >>> import ember
        >>> ember.searchsorted(ember.tensor([1, 3, 5]), ember.tensor([3, 6])).tolist()
        [1, 3]
    """
    result = searchsorted_check(sorted_sequence, input, out_int32, right, side, sorter, out)
    return Spec(input._shape if isinstance(input, Tensor) else (), result)


@operator("bucketize.Tensor(Tensor self, Tensor boundaries, *, bool out_int32=False, "
          "bool right=False, Tensor(a!)? out=None) -> Tensor", method=False)
def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False,
              out=None):
    """Bucket index of each ``input`` value among 1-d sorted ``boundaries``
    (``searchsorted(boundaries, input)``).

    Example:
        >>> ember.bucketize(ember.tensor([1, 4, 9]), ember.tensor([2, 4, 6]))
        tensor([0, 1, 3])
        >>> ember.bucketize(ember.tensor([1, 4, 9]), ember.tensor([2, 4, 6]), right=True)
        tensor([0, 2, 3])
    """
    if len(boundaries._shape) != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got "
                           f"dim({len(boundaries._shape)})")
    result = searchsorted_check(boundaries, input, out_int32, right, None, None, out)
    return Spec(input._shape if isinstance(input, Tensor) else (), result)
