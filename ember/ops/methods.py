"""Python's operator protocol on ``Tensor``: comparisons and ``~`` that need more than an op.

``TENSOR_METHODS`` binds each entry onto ``Tensor`` as it is written (NOTE [A declared
operator is complete] in ember/ops/_define.py); ``Tensor`` itself never imports ops.
"""

from __future__ import annotations

from ember.ops._define import DUNDERS, PROPERTIES, TENSOR_METHODS, bind_method
from ember.tensor import Tensor

__all__ = ["bind_tensor_methods", "DUNDERS", "PROPERTIES"]

_OPERANDS = (Tensor, bool, int, float, complex)


def _protocol_comparison(name: str):
    def compare(self: Tensor, other):
        if not isinstance(other, _OPERANDS):
            return NotImplemented  # ``x == None`` falls back to identity, as in torch
        return TENSOR_METHODS[name](self, other)

    compare.__name__ = f"__{name}__"
    return compare


def _invert(self: Tensor) -> Tensor:
    if self._dtype.is_floating_point or self._dtype.is_complex:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return TENSOR_METHODS["bitwise_not"](self)


TENSOR_METHODS["_eq"] = _protocol_comparison("eq")
TENSOR_METHODS["_ne"] = _protocol_comparison("ne")
TENSOR_METHODS["_invert"] = _invert


def bind_tensor_methods() -> None:
    """Bind every entry of ``TENSOR_METHODS`` again (entries bind as they are written)."""
    for name, fn in TENSOR_METHODS.items():
        bind_method(name, fn)
