"""``Tensor.__getitem__`` / ``__setitem__``: basic indexing as views, advanced as copies.

Basic indices (ints, slices with positive steps, ``None``, ``...``) become a chain of
``select``/``slice``/``unsqueeze`` views. Any tensor, list or bool index makes the index
*advanced*: the basic part is still applied as views, then the advanced part gathers (copy)
through ``index`` or scatters through ``index_put_``.
"""

from __future__ import annotations

from ember.ops._define import tensor_method
from ember.ops.copy import copy_, fill_
from ember.ops.views import alias, select, unsqueeze
from ember.ops.views import slice as slice_op
from ember.tensor import Tensor

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


def _normalize(self: Tensor, index) -> tuple:
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple(int(i) if hasattr(i, "__index__") and not isinstance(i, Tensor | bool | int)
                  else i for i in index)
    return _expand_ellipsis(self, index)


@tensor_method("__getitem__")
def getitem(self: Tensor, index) -> Tensor:
    """``self[index]``: views for basic indices, a copy when any index is advanced."""
    index = _normalize(self, index)
    if all(_is_basic(i) for i in index):
        return basic_view(self, index)
    return _advanced_getitem(self, index)


@tensor_method("__setitem__")
def setitem(self: Tensor, index, value) -> None:
    """``self[index] = value``: writes into ``self``'s storage and bumps its version."""
    index = _normalize(self, index)
    if all(_is_basic(i) for i in index):
        target = basic_view(self, index)
        if isinstance(value, Tensor):
            copy_(target, value)
        else:
            fill_(target, value)
        return
    _advanced_setitem(self, index, value)


def _advanced_getitem(self: Tensor, index: tuple) -> Tensor:
    raise NotImplementedError("advanced indexing is not available yet")


def _advanced_setitem(self: Tensor, index: tuple, value) -> None:
    raise NotImplementedError("advanced indexing is not available yet")
