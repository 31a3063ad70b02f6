"""``Tensor.__getitem__`` / ``__setitem__``: basic indexing as views, advanced as copies.

Basic indices (ints, slices with positive steps, ``None``, ``...``) become a chain of
``select``/``slice``/``unsqueeze`` views. Any tensor, list or bool index makes the index
*advanced*: the basic part is still applied as views, then the advanced part gathers (copy)
through ``index`` or scatters through ``index_put_``.
"""

from __future__ import annotations

from ember.core import dtype as dt
from ember.dispatch import AliasKey
from ember.dispatch import dispatcher as _dispatcher
from ember.ops._define import tensor_method
from ember.ops.copy import copy_, fill_
from ember.ops.creation import empty, full, tensor, zeros
from ember.ops.pointwise import check_writable
from ember.ops.scatter_gather import index as index_op
from ember.ops.scatter_gather import index_put_, strip_leading_ones
from ember.ops.views import alias, reshape, select, unsqueeze
from ember.ops.views import slice as slice_op
from ember.tensor import Tensor, make_view

__all__ = ["getitem", "setitem"]

_BASIC = (int, slice, type(None), type(Ellipsis))


def _is_basic(idx) -> bool:
    return isinstance(idx, _BASIC) and not isinstance(idx, bool)


def _expand_ellipsis(self: Tensor, index: tuple) -> tuple:
    consumed = sum(1 for i in index if i is not None and i is not Ellipsis and
                   not isinstance(i, bool))
    consumed += sum(i.dim() - 1 for i in index
                    if isinstance(i, Tensor) and i._dtype.name in ("bool", "uint8"))
    if consumed > self.dim():
        raise IndexError(f"too many indices for tensor of dimension {self.dim()}")
    n_ell = sum(1 for i in index if i is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ell == 0:
        return index
    at = next(k for k, i in enumerate(index) if i is Ellipsis)
    return index[:at] + (slice(None),) * (self.dim() - consumed) + index[at + 1:]


def basic_view(self: Tensor, index: tuple) -> Tensor:
    """Apply a purely basic index as views."""
    result, dim = self, 0
    for idx in index:
        if idx is None:
            result = unsqueeze(result, dim)
            dim += 1
        elif isinstance(idx, int):
            result = select(result, dim, idx)
        elif isinstance(idx, slice):
            if idx.step is not None and idx.step <= 0:
                raise ValueError("step must be greater than zero")
            if idx != slice(None):
                result = slice_op(result, dim, idx.start, idx.stop, idx.step or 1)
            dim += 1
    return alias(result) if result is self else result


_SEQ_ITEMS = (Tensor, list, tuple, slice, type(None), type(Ellipsis))
_SKIP = object()  # a dim covered by the mask in an earlier slot


def _as_tuple(index) -> tuple:
    """PyTorch's ``treatSequenceAsTuple``: a short list holding sequences, tensors, slices,
    ``None`` or ``...`` is a tuple of indices (legacy NumPy); any other list is one index."""
    if isinstance(index, tuple):
        return index
    if isinstance(index, list) and len(index) < 32 and any(
            isinstance(i, _SEQ_ITEMS) for i in index):
        return tuple(index)
    return (index,)


def _convert(self: Tensor, i):
    """One index entry in canonical form: int, slice, None, ..., bool, or an index Tensor."""
    if isinstance(i, bool | int | slice) or i is None or i is Ellipsis:
        return i
    if isinstance(i, Tensor):
        if i.dim() == 0 and i._dtype is dt.bool_ and i._device.type != "meta":
            return bool(i.item())
        if i.dim() == 0 and i._dtype in _INT_DTYPES and i._device.type != "meta":
            return int(i.item())  # a 0-d integer tensor selects, like an int (a view)
        return i
    if isinstance(i, list | tuple):
        t = tensor(list(i)) if i else empty(0, dtype=dt.int64)
        return t.long() if t._dtype.is_floating_point else t
    if hasattr(i, "__index__"):
        return int(i)
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                     f"Variables are valid indices (got {type(i).__name__})")


_INT_DTYPES = (dt.int8, dt.int16, dt.int32, dt.int64, dt.uint8)


def _normalize(self: Tensor, index) -> tuple:
    index = tuple(_convert(self, i) for i in _as_tuple(index))
    return _expand_ellipsis(self, index)


# NOTE [Indexing fast paths]
# ``x[1:, ::2]`` and ``x[idx]`` are common enough that the general normalisation (list
# conversion, ellipsis expansion, one dispatch per indexed dim) dominates their cost. Two
# shortcuts produce exactly what the general path would:
# - ints and slices (exact ``int``/``slice``, ints in range, positive steps) compute the final
#   view's geometry in one pass, but only when the key set would reach the plain view kernels
#   of ``slice``/``select`` (no autograd, no dispatch mode, no override registered): the chain
#   of those kernels would build the same ``make_view`` of the same root.
# - one int64/int32 index tensor of dim >= 1 goes straight to ``index(self, [idx])``, the op
#   the general path ends in.
# Anything else (None, Ellipsis, bools, out-of-range ints, tensors that need autograd) takes
# the general path, which also raises the errors.
_SLICE_KERNEL = slice_op._alias[AliasKey.CompositeExplicitAutograd].fn
_SELECT_KERNEL = select._alias[AliasKey.CompositeExplicitAutograd].fn


def _fast_view(self: Tensor, items: tuple):
    """The view ``self[items]`` for a tuple of ints and slices, or None (NOTE above)."""
    shape, strides = self._shape, self._stride
    if len(items) > len(shape):
        return None
    st = _dispatcher._state
    ks = (self._ver.keys | st.included) & st.keep
    if slice_op.lookup(ks) is not _SLICE_KERNEL:
        return None
    out_shape, out_stride, offset, d, trivial = [], [], self._offset, 0, True
    for it in items:
        c = it.__class__
        size = shape[d]
        if c is slice:
            start, end, step = it.start, it.stop, it.step
            if step is None:
                step = 1
            elif step.__class__ is not int or step <= 0:
                return None
            if start is None:
                start = 0
            elif start.__class__ is not int:
                return None
            elif start < 0:
                start = max(start + size, 0)
            elif start > size:
                start = size
            if end is None:
                end = size
            elif end.__class__ is not int:
                return None
            elif end < 0:
                end += size
            end = min(max(end, start), size)
            if start or end != size or step != 1:
                trivial = False
            out_shape.append(max(0, (end - start + step - 1) // step))
            out_stride.append(strides[d] * step)
            offset += start * strides[d]
        elif c is int:
            if it < 0:
                it += size
            if not 0 <= it < size:
                return None
            if trivial and select.lookup(ks) is not _SELECT_KERNEL:
                return None
            trivial = False
            offset += it * strides[d]
        else:
            return None
        d += 1
    if trivial:
        return None  # the general path returns ``alias(self)``
    return make_view(self, tuple(out_shape) + shape[d:], tuple(out_stride) + strides[d:],
                     offset)


@tensor_method("__getitem__")
def getitem(self: Tensor, index) -> Tensor:
    """``self[index]``: views for basic indices, a copy when any index is advanced."""
    c = index.__class__
    if c is tuple or c is slice or c is int:
        out = _fast_view(self, index if c is tuple else (index,))
        if out is not None:
            return out
    elif isinstance(index, Tensor) and index._shape and self._shape and (
            index._dtype is dt.int64 or index._dtype is dt.int32):
        return index_op(self, [index])
    index = _normalize(self, index)
    if all(_is_basic(i) for i in index):
        return basic_view(self, index)
    return _advanced_getitem(self, index)


@tensor_method("__setitem__")
def setitem(self: Tensor, index, value) -> None:
    """``self[index] = value``: writes into ``self``'s storage and bumps its version once.

    ``value`` is a number or a tensor broadcastable to the indexed shape (leading size-1 dims
    are ignored). With basic indices (ints, slices, ``None``, ``...``) a tensor of another
    dtype is cast, as ``copy_`` does; with tensor indices it must have ``self``'s dtype, as in
    torch ("Index put requires the source and destination dtypes match").
    """
    index = _normalize(self, index)
    if all(_is_basic(i) for i in index):
        target = basic_view(self, index)
        check_writable(target)  # unlike fill_, assignment refuses overlapping targets (torch)
        if isinstance(value, Tensor):
            copy_(target, _trim(value, target.dim()))
        else:
            fill_(target, _check_value(self, value))
        return
    _advanced_setitem(self, index, value)


def _trim(value: Tensor, ndim: int) -> Tensor:
    """Drop leading size-1 dims of ``value`` beyond ``ndim`` (PyTorch's ``slicePrefix1sSize``)."""
    if value.dim() <= ndim:
        return value
    shape = strip_leading_ones(value._shape)
    return reshape(value, shape) if len(shape) < value.dim() else value


def _check_value(self: Tensor, value):
    if isinstance(value, bool | int | float | complex) or hasattr(value, "__float__"):
        return value
    raise TypeError(f"can't assign a {type(value).__name__} to a Tensor of dtype {self._dtype}")


def _split(self: Tensor, index: tuple) -> tuple[Tensor, list]:
    """Apply the basic part of ``index`` as views; return the view and ``index``'s list.

    Ints select and slices narrow (views); ``None`` and Python bools add a dim; a bool adds an
    index too (``[0]`` for True, ``[]`` for False), as PyTorch does. Each remaining dim of the
    view gets a slot: ``None`` or its index tensor (a k-dim mask covers k slots).
    """
    result, slots = self, []
    for idx in index:
        dim = len(slots)
        if isinstance(idx, bool):
            result = unsqueeze(result, dim)
            slots.append(zeros(1, dtype=dt.int64, device=self._device) if idx else
                         empty(0, dtype=dt.int64, device=self._device))
        elif isinstance(idx, Tensor):
            k = idx.dim() if idx._dtype in (dt.bool_, dt.uint8) else 1
            slots += [idx] + [_SKIP] * (k - 1)
        elif idx is None:
            result = unsqueeze(result, dim)
            slots.append(None)
        elif isinstance(idx, int):
            result = select(result, dim, idx)
        else:
            result = basic_view(result, (slice(None),) * dim + (idx,))
            slots.append(None)
    return result, [s for s in slots if s is not _SKIP]


def _advanced_getitem(self: Tensor, index: tuple) -> Tensor:
    view, indices = _split(self, index)
    return index_op(view, indices)


def _advanced_setitem(self: Tensor, index: tuple, value) -> None:
    view, indices = _split(self, index)
    if isinstance(value, Tensor):
        values = value  # index_put_ refuses another dtype with torch's message
    else:
        values = full((), _check_value(self, value), dtype=self._dtype, device=self._device)
    index_put_(view, indices, _trim(values, 0))
