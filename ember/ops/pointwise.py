"""Pointwise operators: one row per op in the tables below, plus the irregular ones by hand.

Every pointwise op broadcasts its tensor arguments and computes in the promoted dtype of
``Promotion`` kind; each functional op ``f`` has an in-place twin ``f_`` whose result must
keep ``self``'s shape and be castable to its dtype.
"""

from __future__ import annotations

from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes, has_internal_overlap
from ember.ops._define import TENSOR_METHODS, Spec, Tag, operator
from ember.ops._promotion import Promotion, promoted_dtype
from ember.tensor import Tensor

__all__: list[str] = []  # filled from the tables below

P = Promotion

# name -> (promotion kind, one-line doc). Kernels live in ember/backends/cpu/pointwise.py.
UNARY = {
    "neg": (P.DEFAULT, "Negation, ``-input``."),
    "abs": (P.DEFAULT, "Absolute value."),
    "exp": (P.INT_TO_FLOAT, "Exponential, ``e**input``."),
    "log": (P.INT_TO_FLOAT, "Natural logarithm."),
    "sqrt": (P.INT_TO_FLOAT, "Square root."),
    "sin": (P.INT_TO_FLOAT, "Sine."),
    "cos": (P.INT_TO_FLOAT, "Cosine."),
    "tanh": (P.INT_TO_FLOAT, "Hyperbolic tangent."),
    "sigmoid": (P.INT_TO_FLOAT, "Logistic sigmoid ``1 / (1 + exp(-input))``."),
    "relu": (P.DEFAULT, "Rectified linear unit ``max(input, 0)``."),
}

# name -> (promotion kind, one-line doc, takes alpha)
BINARY = {
    "add": (P.DEFAULT, "Adds ``other`` (scaled by ``alpha``) to ``input``.", True),
    "sub": (P.DEFAULT, "Subtracts ``other`` (scaled by ``alpha``) from ``input``.", True),
    "mul": (P.DEFAULT, "Multiplies ``input`` by ``other``.", False),
    "eq": (P.ALWAYS_BOOL, "Elementwise ``input == other``.", False),
    "ne": (P.ALWAYS_BOOL, "Elementwise ``input != other``.", False),
    "lt": (P.ALWAYS_BOOL, "Elementwise ``input < other``.", False),
    "le": (P.ALWAYS_BOOL, "Elementwise ``input <= other``.", False),
    "gt": (P.ALWAYS_BOOL, "Elementwise ``input > other``.", False),
    "ge": (P.ALWAYS_BOOL, "Elementwise ``input >= other``.", False),
    "maximum": (P.DEFAULT, "Elementwise maximum (NaN propagates).", False),
    "minimum": (P.DEFAULT, "Elementwise minimum (NaN propagates).", False),
}

# functional op -> its in-place twin (filled as the tables are declared)
INPLACE: dict[str, object] = {}


def unary_spec(kind: Promotion, self: Tensor) -> Spec:
    """Spec of a unary pointwise op on ``self``."""
    _, result = promoted_dtype(kind, self)
    return Spec(self._shape, result)


def binary_spec(kind: Promotion, input, other) -> Spec:
    """Spec of a binary pointwise op: broadcast shape, promoted dtype."""
    if not isinstance(input, Tensor):
        raise TypeError(f"expected a Tensor as first argument; got {type(input).__name__}")
    shape = broadcast_shapes(input._shape, other._shape) if isinstance(other, Tensor) \
        else input._shape
    _, result = promoted_dtype(kind, input, other)
    return Spec(shape, result)


def inplace_spec(name: str, self: Tensor, spec: Spec) -> Spec:
    """Check that an in-place op's result fits ``self``: same shape, castable dtype."""
    check_writable(self)
    if spec.shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast "
                           f"shape {list(spec.shape)}")
    if not dt.can_cast(spec.dtype, self._dtype):
        raise RuntimeError(f"result type {_TN[spec.dtype.name]} can't be cast to the desired "
                           f"output type {_TN[self._dtype.name]}")
    return Spec(self._shape, self._dtype)


def check_writable(t: Tensor) -> None:
    """RuntimeError when several elements of ``t`` share memory (an expanded tensor)."""
    if has_internal_overlap(t._shape, t._stride):
        raise RuntimeError("unsupported operation: more than one element of the written-to "
                           "tensor refers to a single memory location. Please clone() the "
                           "tensor before performing the operation.")


_TN = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
       "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte",
       "bool": "Bool"}


def _declare_unary(name: str, kind: Promotion, doc: str):
    def rule(self, *, out=None):
        return unary_spec(kind, self)

    rule.__doc__ = f"{doc}\n\nShape: same as ``input``."
    op = operator(f"{name}(Tensor self, *, Tensor(a!)? out=None) -> Tensor", (Tag.pointwise,))(
        rule)

    def rule_(self):
        return inplace_spec(name + "_", self, unary_spec(kind, self))

    rule_.__doc__ = f"In-place :func:`{name}`."
    op_ = operator(f"{name}_(Tensor(a!) self) -> Tensor(a!)", (Tag.pointwise, Tag.inplace))(
        rule_)
    INPLACE[name] = op_
    return op, op_


def _declare_binary(name: str, kind: Promotion, doc: str, alpha: bool):
    extra = ", Scalar alpha=1" if alpha else ""
    if alpha:
        def rule(input, other, *, alpha=1, out=None):
            return binary_spec(kind, input, other)

        def rule_(self, other, *, alpha=1):
            return inplace_spec(name + "_", self, binary_spec(kind, self, other))
    else:
        def rule(input, other, *, out=None):
            return binary_spec(kind, input, other)

        def rule_(self, other):
            return inplace_spec(name + "_", self, binary_spec(kind, self, other))

    rule.__doc__ = f"{doc}\n\nShape: the broadcast of ``input`` and ``other``."
    rule_.__doc__ = f"In-place :func:`{name}`."
    op = operator(f"{name}.Tensor(Tensor self, Tensor other, *{extra}, Tensor(a!)? out=None) "
                  "-> Tensor", (Tag.pointwise,))(rule)
    op_ = operator(f"{name}_.Tensor(Tensor(a!) self, Tensor other, *{extra}) -> Tensor(a!)",
                   (Tag.pointwise, Tag.inplace))(rule_)
    INPLACE[name] = op_
    return op, op_


for _name, (_kind, _doc) in UNARY.items():
    globals()[_name], globals()[_name + "_"] = _declare_unary(_name, _kind, _doc)
    __all__ += [_name, _name + "_"]

for _name, (_kind, _doc, _alpha) in BINARY.items():
    globals()[_name], globals()[_name + "_"] = _declare_binary(_name, _kind, _doc, _alpha)
    __all__ += [_name, _name + "_"]

# torch's aliases
TENSOR_METHODS["negative"] = globals()["neg"]
TENSOR_METHODS["greater"] = globals()["gt"]
TENSOR_METHODS["less"] = globals()["lt"]
TENSOR_METHODS["multiply"] = globals()["mul"]
TENSOR_METHODS["subtract"] = globals()["sub"]
