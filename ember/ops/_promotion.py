"""Type promotion for operator Meta rules (``torch.result_type`` and TensorIterator's kinds)."""

from __future__ import annotations

from enum import Enum

from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes
from ember.tensor import Tensor

__all__ = ["result_type", "Promotion", "promoted_dtype", "broadcast_args_shape", "is_scalar"]

_SCALAR_TYPES = (bool, int, float, complex)


def is_scalar(x) -> bool:
    return isinstance(x, _SCALAR_TYPES) and not isinstance(x, Tensor)


def result_type(*args) -> dt.DType:
    """The dtype an operation on ``args`` (tensors and Python scalars) computes in.

    Dimensioned tensors outrank 0-d tensors, which outrank Python scalars; a lower-ranked
    operand only matters when it is of a higher category (bool < int < float), as in torch.

    Example:
        >>> ember.result_type(ember.tensor([1, 2]), 1.5)
        ember.float32
        >>> ember.result_type(ember.tensor([1.0], dtype=ember.float16), ember.tensor(1.0))
        ember.float16
    """
    if len(args) == 2:
        a, b = args
        if a.__class__ is b.__class__ is Tensor and a._dtype is b._dtype:
            return a._dtype
    dims, zeros, scalars = [], [], []
    for a in args:
        if isinstance(a, Tensor):
            (dims if a._shape else zeros).append(a._dtype)
        elif a is not None:
            scalars.append(dt.scalar_dtype(a))
    return dt.result_type_of(dims, zeros, scalars)


class Promotion(Enum):
    """How an op's output dtype follows its inputs (TensorIterator's promotion kinds)."""

    DEFAULT = 0          # result_type of the inputs
    INT_TO_FLOAT = 1     # integral/bool results become the default float dtype
    ALWAYS_BOOL = 2      # comparisons
    BOOL_TO_LONG = 3     # sum-like: bool becomes int64
    NO_PROMOTE = 4       # the first input's dtype


def promoted_dtype(kind: Promotion, *args) -> tuple[dt.DType, dt.DType]:
    """(computation dtype, result dtype) for ``args`` under ``kind``."""
    common = result_type(*args)
    if kind is Promotion.DEFAULT:
        return common, common
    if kind is Promotion.INT_TO_FLOAT and common.category < dt.FLOATING:
        common = dt.get_default_dtype()
    if kind is Promotion.ALWAYS_BOOL:
        return common, dt.bool_
    if kind is Promotion.BOOL_TO_LONG and common.category < dt.FLOATING:
        return dt.int64, dt.int64
    return common, common


def broadcast_args_shape(*args) -> tuple[int, ...]:
    """The broadcast shape of the tensor arguments among ``args`` (scalars are shape ())."""
    return broadcast_shapes(*(a._shape for a in args if isinstance(a, Tensor)))
