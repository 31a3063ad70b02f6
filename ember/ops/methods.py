"""Binds operators onto ``Tensor``: methods by name, and Python's operator protocol.

Runs once, after every operator family is imported. ``Tensor`` itself never imports ops.
"""

from __future__ import annotations

from ember.ops._define import TENSOR_METHODS
from ember.tensor import Tensor

__all__ = ["bind_tensor_methods", "DUNDERS", "PROPERTIES"]

# Python protocol -> method name (bound only when that method exists)
DUNDERS = {
    "__add__": "add", "__sub__": "sub", "__mul__": "mul", "__truediv__": "div",
    "__floordiv__": "floor_divide", "__mod__": "remainder", "__pow__": "pow",
    "__matmul__": "matmul", "__and__": "bitwise_and", "__or__": "bitwise_or",
    "__xor__": "bitwise_xor", "__lshift__": "bitwise_left_shift",
    "__rshift__": "bitwise_right_shift", "__neg__": "neg", "__abs__": "abs",
    "__invert__": "_invert", "__pos__": "positive",
    "__eq__": "_eq", "__ne__": "_ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt",
    "__ge__": "ge",
    "__iadd__": "add_", "__isub__": "sub_", "__imul__": "mul_", "__itruediv__": "div_",
    "__ifloordiv__": "floor_divide_", "__imod__": "remainder_", "__ipow__": "pow_",
    "__iand__": "bitwise_and_", "__ior__": "bitwise_or_", "__ixor__": "bitwise_xor_",
    "__ilshift__": "bitwise_left_shift_", "__irshift__": "bitwise_right_shift_",
    "__radd__": "_radd", "__rmul__": "_rmul", "__rsub__": "rsub", "__rtruediv__": "_rdiv",
    "__rfloordiv__": "_rfloordiv", "__rmod__": "_rremainder", "__rpow__": "_rpow",
    "__rmatmul__": "_rmatmul", "__rand__": "_rand", "__ror__": "_ror", "__rxor__": "_rxor",
    "__rlshift__": "_rlshift", "__rrshift__": "_rrshift",
}

# attribute -> method computing it (exposed as read-only properties)
PROPERTIES = {"T": "T", "mT": "mT", "H": "T", "mH": "mT", "real": "_real"}


_OPERANDS = (Tensor, bool, int, float, complex)


def _protocol_comparison(name: str):
    def compare(self: Tensor, other):
        if not isinstance(other, _OPERANDS):
            return NotImplemented  # ``x == None`` falls back to identity, as in torch
        return TENSOR_METHODS[name](self, other)

    compare.__name__ = f"__{name}__"
    return compare


def _invert(self: Tensor) -> Tensor:
    if self._dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return TENSOR_METHODS["bitwise_not"](self)


TENSOR_METHODS["_eq"] = _protocol_comparison("eq")
TENSOR_METHODS["_ne"] = _protocol_comparison("ne")
TENSOR_METHODS["_invert"] = _invert


def bind_tensor_methods() -> None:
    """Attach every registered method, protocol and property to ``Tensor``."""
    for name, fn in TENSOR_METHODS.items():
        if name in PROPERTIES.values() and name in ("T", "mT"):
            continue
        setattr(Tensor, name, fn)
    for dunder, name in DUNDERS.items():
        fn = TENSOR_METHODS.get(name)
        if fn is not None:
            setattr(Tensor, dunder, fn)
    for attr, name in PROPERTIES.items():
        fn = TENSOR_METHODS.get(name)
        if fn is not None:
            setattr(Tensor, attr, property(fn))
    Tensor.__hash__ = Tensor.__hash__  # keep identity hashing after __eq__ is bound
