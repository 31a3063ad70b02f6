"""Parameter: a Tensor that a module registers as a learnable weight (``torch.nn.Parameter``).

It lives here, below ``ember.nn``, because checkpoints (``ember.serialization``, a sibling of
``ember.nn``) must rebuild Parameters too; ``ember.nn.Parameter`` re-exports this class.
A Parameter is a leaf that shares its ``data``'s storage and version counter, like torch's
``Tensor._make_subclass(cls, data.detach(), requires_grad)``. Operations on a Parameter return
plain Tensors.
"""

from __future__ import annotations

from collections import OrderedDict

from ember.core import dtype as dt
from ember.tensor.tensor import Tensor, empty_tensor, make_tensor

__all__ = ["Parameter"]


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and shares ``data``'s memory.

    Args:
        data: the tensor to wrap (an empty float tensor when None); no copy is made.
        requires_grad: whether the parameter requires gradient (default True).

    Example:
        >>> import ember
        >>> from ember.tensor.parameter import Parameter
        >>> p = Parameter(ember.ones(2))
        >>> p.requires_grad, p.is_leaf
        (True, True)
    """

    __slots__ = ()

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty_tensor((0,), dt.get_default_dtype())
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: data must be a Tensor; got {type(data).__name__}")
        out = make_tensor(data._storage, data._shape, data._stride, data._offset, data._dtype,
                          data._device, version=data._ver, cls=cls)
        out._is_inference = data._is_inference
        if requires_grad:
            out.requires_grad_(True)
        return out

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass

    def __repr__(self, *, tensor_contents=None) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        plain = make_tensor(self._storage, self._shape, self._stride, self._offset, self._dtype,
                            self._device)
        out = type(self)(plain.clone(), self.requires_grad)
        memo[id(self)] = out
        return out

    def __reduce_ex__(self, protocol):
        plain = make_tensor(self._storage, self._shape, self._stride, self._offset, self._dtype,
                            self._device)
        return (_rebuild_parameter, (plain, self.requires_grad, OrderedDict()))


def _rebuild_parameter(data: Tensor, requires_grad: bool, backward_hooks) -> Parameter:
    """Plain-pickle reconstructor of a Parameter (hooks are not serialized, as in torch)."""
    return Parameter(data, requires_grad)
