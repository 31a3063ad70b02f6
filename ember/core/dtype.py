"""dtypes and type promotion.

Owns the set of ember dtypes, ``promote_types`` (PyTorch's lattice), the Python-scalar rules of
``result_type`` (dimensioned tensors > zero-dim tensors > Python scalars, by category), and the
default dtype. Knows nothing about tensors beyond "a thing with ``dtype`` and ``ndim``".
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field

import ml_dtypes
import numpy as np

__all__ = [
    "DType", "float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64",
    "uint8", "bool_", "complex32", "complex64", "complex128", "promote_types", "can_cast",
    "get_default_dtype", "set_default_dtype", "finfo", "iinfo", "from_numpy_dtype", "ALL_DTYPES",
]

# Categories in promotion order (PyTorch: bool < integral < floating < complex).
BOOL, INTEGRAL, FLOATING, COMPLEX = 0, 1, 2, 3


@dataclass(frozen=True, eq=False, repr=False)
class DType:
    """An element type. Instances are singletons, compared by identity.

    ``is_complex`` dtypes hold (real, imag) pairs of their ``to_real()`` dtype; they are not
    floating point (``is_floating_point`` is False, as torch), but they are differentiable.

    Example:
        >>> ember.float32.itemsize, ember.float32.is_floating_point, ember.int64.is_signed
        (4, True, True)
        >>> ember.float32 is ember.float
        True
        >>> ember.complex64.is_complex, ember.complex64.to_real(), ember.cdouble.itemsize
        (True, ember.float32, 16)
    """

    name: str
    itemsize: int
    category: int
    is_signed: bool
    np: np.dtype = field(compare=False)

    is_floating_point: bool = field(init=False, compare=False)  # read on hot paths
    is_complex: bool = field(init=False, compare=False)
    # floating or complex: the dtypes whose tensors can require gradients
    is_differentiable: bool = field(init=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "is_floating_point", self.category == FLOATING)
        object.__setattr__(self, "is_complex", self.category == COMPLEX)
        object.__setattr__(self, "is_differentiable", self.category >= FLOATING)

    def to_real(self) -> DType:
        """The real dtype of a complex dtype's parts (complex64 -> float32); others: itself."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> DType:
        """The complex dtype of this floating dtype (float64 -> complex128, float16 ->
        complex32; bfloat16 -> complex64 as torch)."""
        if self.category == COMPLEX:
            return self
        try:
            return _TO_COMPLEX[self]
        except KeyError:
            raise TypeError(f"{self.name} has no complex counterpart") from None

    @property
    def scalar_name(self) -> str:
        """PyTorch's ScalarType name ("Float", "Long", ...), as used in error messages."""
        return _SCALAR_NAMES[self.name]

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return (_dtype_by_name, (self.name,))


float32 = DType("float32", 4, FLOATING, True, np.dtype(np.float32))
float64 = DType("float64", 8, FLOATING, True, np.dtype(np.float64))
float16 = DType("float16", 2, FLOATING, True, np.dtype(np.float16))
bfloat16 = DType("bfloat16", 2, FLOATING, True, np.dtype(ml_dtypes.bfloat16))
int8 = DType("int8", 1, INTEGRAL, True, np.dtype(np.int8))
int16 = DType("int16", 2, INTEGRAL, True, np.dtype(np.int16))
int32 = DType("int32", 4, INTEGRAL, True, np.dtype(np.int32))
int64 = DType("int64", 8, INTEGRAL, True, np.dtype(np.int64))
uint8 = DType("uint8", 1, INTEGRAL, False, np.dtype(np.uint8))
bool_ = DType("bool", 1, BOOL, False, np.dtype(np.bool_))
complex64 = DType("complex64", 8, COMPLEX, True, np.dtype(np.complex64))
complex128 = DType("complex128", 16, COMPLEX, True, np.dtype(np.complex128))
# NOTE [complex32]
# torch's chalf: (real, imag) pairs of float16, 4 bytes an element. NumPy has no such type, so
# ``np`` is the dtype its values are read as and computed in (complex64, torch's opmath), while
# ``itemsize`` is the storage's 4 bytes; ``ember.tensor.numpy_view`` decodes the pairs and
# writers encode them (NOTE [complex32 storage] in ember/tensor/tensor.py).
complex32 = DType("complex32", 4, COMPLEX, True, np.dtype(np.complex64))

_SCALAR_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half",
                 "bfloat16": "BFloat16", "int8": "Char", "int16": "Short", "int32": "Int",
                 "int64": "Long", "uint8": "Byte", "bool": "Bool", "complex32": "ComplexHalf",
                 "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}
_TO_REAL = {complex32: float16, complex64: float32, complex128: float64}
_TO_COMPLEX = {float16: complex32, float32: complex64, float64: complex128,
               bfloat16: complex64}  # as torch

ALL_DTYPES = (float32, float64, float16, bfloat16, int8, int16, int32, int64, uint8, bool_,
              complex32, complex64, complex128)
_BY_NAME = {d.name: d for d in ALL_DTYPES}
_BY_NP = {d.np: d for d in ALL_DTYPES if d is not complex32}  # NumPy has no complex32


def _dtype_by_name(name: str) -> DType:
    return _BY_NAME[name]


def from_numpy_dtype(npdtype) -> DType:
    """The ember dtype of a NumPy dtype; TypeError for types ember does not have."""
    try:
        return _BY_NP[np.dtype(npdtype)]
    except (KeyError, TypeError):
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(npdtype)}. The only supported types "
            "are: complex128, complex64, float64, float32, float16, bfloat16, int64, int32, "
            "int16, int8, uint8, and bool."
        ) from None


def _promote(a: DType, b: DType) -> DType:
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo.category == FLOATING:  # the parts must hold lo
            return _promote(hi, lo.to_complex())
        return hi
    if a.category == COMPLEX:
        return a if a.itemsize > b.itemsize else b
    if a.category == FLOATING:
        if {a, b} == {float16, bfloat16}:
            return float32
        return a if a.itemsize > b.itemsize else b
    # integral: uint8 mixed with a signed type needs a signed type wide enough for 0..255
    if a is uint8 or b is uint8:
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    return a if a.itemsize > b.itemsize else b


_PROMOTE = {(a, b): _promote(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_types(type1: DType, type2: DType) -> DType:
    """The smallest dtype both ``type1`` and ``type2`` convert to (``torch.promote_types``).

    Example:
        >>> ember.promote_types(ember.int32, ember.float16)
        ember.float16
        >>> ember.promote_types(ember.uint8, ember.int8)
        ember.int16
        >>> ember.promote_types(ember.float64, ember.complex64)
        ember.complex128
    """
    return _PROMOTE[type1, type2]


def can_cast(from_: DType, to: DType) -> bool:
    """Whether a cast is allowed under PyTorch's casting rules (no category downgrade).

    Example:
        >>> ember.can_cast(ember.int64, ember.float32), ember.can_cast(ember.float32, ember.int64)
        (True, False)
    """
    return from_.category <= to.category


_default_dtype = float32


def get_default_dtype() -> DType:
    """The dtype of floating tensors created from Python floats (``torch.get_default_dtype``).

    Example:
        >>> ember.get_default_dtype()
        ember.float32
    """
    return _default_dtype


def set_default_dtype(d: DType) -> None:
    """Set the default floating dtype; only float32/float64/float16/bfloat16 are allowed.

    Example:
        >>> ember.set_default_dtype(ember.float64)
        >>> ember.tensor([1.5]).dtype
        ember.float64
        >>> ember.set_default_dtype(ember.float32)
    """
    global _default_dtype
    if not isinstance(d, DType) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type; got {d}")
    _default_dtype = d


def default_complex_dtype() -> DType:
    """The dtype of tensors made from Python complex numbers: complex128 when the default
    dtype is float64, complex32 when it is float16, else complex64 (torch)."""
    return complex128 if _default_dtype is float64 else \
        complex32 if _default_dtype is float16 else complex64


def scalar_dtype(value) -> DType:
    """The dtype a Python scalar gets when it becomes a tensor (bool, int64, default float,
    default complex)."""
    if isinstance(value, builtins.bool | np.bool_):
        return bool_
    if isinstance(value, builtins.int | np.integer):
        return int64
    if isinstance(value, builtins.float | np.floating):
        return _default_dtype
    if isinstance(value, builtins.complex | np.complexfloating):
        return default_complex_dtype()
    raise TypeError(f"expected a Python scalar (bool, int, float or complex); got "
                    f"{type(value).__name__}")


def _combine_categories(higher: DType | None, lower: DType | None) -> DType | None:
    if higher is None:
        return lower
    if lower is None or higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        # a floating operand keeps its precision: float64 tensor * 1j is complex128
        return higher.to_complex() if higher.category == FLOATING else lower
    if higher.category == FLOATING:
        return higher
    if higher is bool_ or lower.category == FLOATING:
        return _PROMOTE[higher, lower]
    return higher


def result_type_of(dim_dtypes, zero_dim_dtypes, scalar_dtypes) -> DType:
    """PyTorch's ResultTypeState: promote within each priority class, then combine by category.

    Args:
        dim_dtypes: dtypes of tensors with ndim > 0.
        zero_dim_dtypes: dtypes of 0-d tensors.
        scalar_dtypes: dtypes of Python scalars (already mapped by :func:`scalar_dtype`).
    """
    states = []
    for group in (dim_dtypes, zero_dim_dtypes, scalar_dtypes):
        r = None
        for d in group:
            r = d if r is None else _PROMOTE[r, d]
        states.append(r)
    dim, zero, wrapped = states
    out = _combine_categories(dim, _combine_categories(zero, wrapped))
    if out is None:
        raise TypeError("result_type: expected at least one tensor or scalar argument")
    return out


class finfo:
    """Machine limits of a floating dtype (``torch.finfo``): bits, eps, max, min, tiny.

    A complex dtype gives the limits of its real parts, as torch.

    Example:
        >>> ember.finfo(ember.float16).max, ember.finfo(ember.float32).eps
        (65504.0, 1.1920928955078125e-07)
        >>> ember.finfo(ember.bfloat16).bits
        16
        >>> ember.finfo(ember.complex128).dtype
        'float64'
    """

    def __init__(self, type: DType | None = None):
        type = (type or _default_dtype).to_real()
        if not type.is_floating_point:
            raise TypeError(f"finfo: expected a floating point dtype; got {type}")
        info = ml_dtypes.finfo(type.np) if type is bfloat16 else np.finfo(type.np)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.eps = float(info.eps)
        self.max = float(info.max)
        self.min = float(info.min)
        self.tiny = float(info.tiny)
        self.smallest_normal = self.tiny
        self.resolution = 10.0 ** -int(info.precision)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution}, min={self.min:e}, max={self.max:e}, "
                f"eps={self.eps}, smallest_normal={self.tiny}, tiny={self.tiny}, "
                f"dtype={self.dtype})")


class iinfo:
    """Machine limits of an integral dtype (``torch.iinfo``): bits, min, max.

    Example:
        >>> ember.iinfo(ember.int8).min, ember.iinfo(ember.uint8).max
        (-128, 255)
    """

    def __init__(self, type: DType):
        if type.category != INTEGRAL:
            raise TypeError(f"iinfo: expected an integer dtype; got {type}")
        info = np.iinfo(type.np)
        self.dtype = type.name
        self.bits = type.itemsize * 8
        self.min = int(info.min)
        self.max = int(info.max)

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
