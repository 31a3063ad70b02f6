"""Factory operators: tensors from sizes, values or data.

Factories have no tensor arguments, so a call's key set holds only ``BackendSelect``; its
kernel reads ``device=`` and redispatches to that backend's kernel (PyTorch's BackendSelect).
``*_like`` factories are composites over the plain ones.
"""

from __future__ import annotations

import math

import numpy as np

from ember.core import dtype as dt
from ember.core.device import as_device
from ember.core.layout import normalize_shape
from ember.dispatch import DispatchKey, Tag, redispatch
from ember.dispatch.keys import BACKEND_KEY_OF_DEVICE
from ember.ops._define import Spec, composite, operator, tensor_method
from ember.tensor import Tensor

__all__ = ["empty", "empty_strided", "zeros", "ones", "full", "tensor", "as_tensor",
           "empty_like", "zeros_like", "ones_like", "full_like", "arange", "scalar_tensor",
           "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "data_shape_dtype"]

_FACTORY_KW = ", ScalarType? dtype=None, Layout? layout=None, Device? device=None, " \
              "bool? pin_memory=None, bool requires_grad=False"


def _backend_select(op, ks, *args, **kwargs):
    device = as_device(kwargs.get("device"))
    return redispatch(op, ks | (1 << BACKEND_KEY_OF_DEVICE[device.type]), *args, **kwargs)


def factory(schema: str, tags=()):
    """Declare a factory op: its Meta rule plus the BackendSelect kernel that routes by device."""

    def deco(rule):
        op = operator(schema, (Tag.factory, *tags), method=False)(rule)
        op.register(DispatchKey.BackendSelect, _backend_select, with_keyset=True)
        return op

    return deco


def _dtype_or_default(dtype) -> dt.DType:
    return dt.get_default_dtype() if dtype is None else dtype


def _shape_arg(size) -> tuple[int, ...]:
    shape = normalize_shape(size)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    return shape


@factory("empty.memory_format(SymInt[] size, *" + _FACTORY_KW + ", Tensor(a!)? out=None) -> Tensor")
def empty(*size, out=None, dtype=None, layout=None, device=None, pin_memory=None,
          requires_grad=False, memory_format=None):
    """An uninitialised tensor of ``size``.

    Example:
        >>> import ember
        >>> ember.empty(2, 3).shape
        ember.Size([2, 3])
    """
    return Spec(_shape_arg(size), _dtype_or_default(dtype))


@factory("empty_strided(SymInt[] size, SymInt[] stride, *" + _FACTORY_KW + ") -> Tensor")
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """An uninitialised tensor with explicit strides."""
    return Spec(_shape_arg(size), _dtype_or_default(dtype), tuple(stride))


@factory("zeros(SymInt[] size, *" + _FACTORY_KW + ", Tensor(a!)? out=None) -> Tensor")
def zeros(*size, out=None, dtype=None, layout=None, device=None, pin_memory=None,
          requires_grad=False):
    """A tensor of ``size`` filled with 0.

    Example:
        >>> import ember
        >>> ember.zeros(2)
        tensor([0., 0.])
    """
    return Spec(_shape_arg(size), _dtype_or_default(dtype))


@factory("ones(SymInt[] size, *" + _FACTORY_KW + ", Tensor(a!)? out=None) -> Tensor")
def ones(*size, out=None, dtype=None, layout=None, device=None, pin_memory=None,
         requires_grad=False):
    """A tensor of ``size`` filled with 1."""
    return Spec(_shape_arg(size), _dtype_or_default(dtype))


@factory("full(SymInt[] size, Scalar fill_value, *" + _FACTORY_KW + ", Tensor(a!)? out=None) "
         "-> Tensor")
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, pin_memory=None,
         requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it when not given)."""
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = dt.scalar_dtype(fill_value)
    return Spec(_shape_arg(tuple(size) if not isinstance(size, int) else (size,)), dtype)


@factory("scalar_tensor(Scalar s, *" + _FACTORY_KW + ") -> Tensor")
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """A 0-d tensor holding ``s`` (default dtype unless given)."""
    return Spec((), _dtype_or_default(dtype))


def data_shape_dtype(data, dtype) -> tuple[tuple[int, ...], dt.DType, np.ndarray | None]:
    """Shape, dtype and (for CPU) the NumPy array that ``tensor(data)`` should hold."""
    if isinstance(data, Tensor):
        return data._shape, dtype or data._dtype, None
    if isinstance(data, np.ndarray | np.generic):
        array = np.asarray(data)
        inferred = dt.from_numpy_dtype(array.dtype)
    else:
        array, inferred = _python_data(data)
    return tuple(array.shape), dtype or inferred, array


def _python_data(data):
    leaves = []

    def walk(x, depth):
        if isinstance(x, Tensor):
            leaves.append(x._dtype)
            return x.tolist()
        if isinstance(x, list | tuple):
            return [walk(v, depth + 1) for v in x]
        if isinstance(x, bool | int | float | np.generic):
            leaves.append(dt.scalar_dtype(x) if not isinstance(x, np.generic)
                          else dt.from_numpy_dtype(np.asarray(x).dtype))
            return x
        raise TypeError(f"Could not infer dtype of {type(x).__name__}")

    nested = walk(data, 0)
    inferred = None
    for d in leaves:
        inferred = d if inferred is None else _widen(inferred, d)
    inferred = inferred or dt.get_default_dtype()
    try:
        array = np.array(nested, dtype=np.float64 if inferred.is_floating_point else None)
    except ValueError as e:
        raise ValueError(f"expected sequence of equal-length lists: {e}") from None
    if array.dtype == object:
        raise ValueError("expected a rectangular nested sequence of numbers")
    return array, inferred


def _widen(a: dt.DType, b: dt.DType) -> dt.DType:
    if a.is_floating_point or b.is_floating_point:
        return a if a.is_floating_point and (not b.is_floating_point or a.itemsize >= b.itemsize) \
            else b if b.is_floating_point else a
    return dt.promote_types(a, b)


@factory("tensor(Any data, *" + _FACTORY_KW + ") -> Tensor")
def tensor(data, *, dtype=None, layout=None, device=None, pin_memory=None,
           requires_grad=False):
    """A new tensor holding a copy of ``data`` (nested lists, scalars, NumPy arrays, tensors).

    Python floats become the default dtype, ints ``int64``, bools ``bool``.

    Example:
        >>> import ember
        >>> ember.tensor([[1, 2], [3, 4]]).dtype
        ember.int64
    """
    shape, dtype, _ = data_shape_dtype(data, dtype)
    return Spec(shape, dtype)


@composite("as_tensor(Any data, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
           method=False)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Share memory with ``data`` when possible (a tensor or a NumPy array), else copy."""
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device) if (dtype or device) else data
    if isinstance(data, np.ndarray) and (device is None or as_device(device).type == "cpu"):
        from ember.tensor import from_numpy
        t = from_numpy(data)
        return t if dtype is None or dtype is t._dtype else t.to(dtype)
    return tensor(data, dtype=dtype, device=device)


@factory("arange.start_step(Scalar start, Scalar end, Scalar step=1, *" + _FACTORY_KW +
         ", Tensor(a!)? out=None) -> Tensor")
def arange(start, end=None, step=1, *, out=None, dtype=None, layout=None, device=None,
           pin_memory=None, requires_grad=False):
    """Values ``start, start+step, ...`` below ``end`` (``arange(end)`` starts at 0).

    The dtype is int64 when all bounds are integers, else the default dtype.
    """
    start, end, step = _arange_args(start, end, step)
    if dtype is None:
        dtype = dt.int64 if all(isinstance(v, int) for v in (start, end, step)) \
            else dt.get_default_dtype()
    return Spec((arange_length(start, end, step),), dtype)


def _arange_args(start, end, step):
    if end is None:
        start, end = 0, start
    vals = [v.item() if isinstance(v, Tensor) else v for v in (start, end, step)]
    start, end, step = vals
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if not all(math.isfinite(v) for v in (start, end)):
        raise RuntimeError(f"unsupported range: {start} -> {end}")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    return start, end, step


def arange_length(start, end, step) -> int:
    """Number of elements of ``arange(start, end, step)``."""
    return max(0, math.ceil((end - start) / step))


arange.normalize = _arange_args


# -- *_like and new_* ------------------------------------------------------------------------
def _like_kwargs(self: Tensor, dtype, device, requires_grad) -> dict:
    return {"dtype": dtype or self._dtype, "device": device or self._device,
            "requires_grad": requires_grad}


@composite("empty_like(Tensor self, *" + _FACTORY_KW + ", MemoryFormat? memory_format=None) "
           "-> Tensor", method=False)
def empty_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=False, memory_format=None) -> Tensor:
    """An uninitialised tensor with ``input``'s shape, dtype and device (unless overridden)."""
    return empty(input._shape, **_like_kwargs(input, dtype, device, requires_grad))


@composite("zeros_like(Tensor self, *" + _FACTORY_KW + ", MemoryFormat? memory_format=None) "
           "-> Tensor", method=False)
def zeros_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=False, memory_format=None) -> Tensor:
    """Zeros shaped like ``input``."""
    return zeros(input._shape, **_like_kwargs(input, dtype, device, requires_grad))


@composite("ones_like(Tensor self, *" + _FACTORY_KW + ", MemoryFormat? memory_format=None) "
           "-> Tensor", method=False)
def ones_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False, memory_format=None) -> Tensor:
    """Ones shaped like ``input``."""
    return ones(input._shape, **_like_kwargs(input, dtype, device, requires_grad))


@composite("full_like(Tensor self, Scalar fill_value, *" + _FACTORY_KW +
           ", MemoryFormat? memory_format=None) -> Tensor", method=False)
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False, memory_format=None) -> Tensor:
    """``fill_value`` shaped like ``input`` (``input``'s dtype unless given)."""
    return full(input._shape, fill_value, **_like_kwargs(input, dtype, device, requires_grad))


@tensor_method("new_empty")
def new_empty(self: Tensor, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uninitialised tensor of ``size`` with ``self``'s dtype and device by default."""
    return empty(*size, **_like_kwargs(self, dtype, device, requires_grad))


@tensor_method("new_zeros")
def new_zeros(self: Tensor, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros of ``size`` with ``self``'s dtype and device by default."""
    return zeros(*size, **_like_kwargs(self, dtype, device, requires_grad))


@tensor_method("new_ones")
def new_ones(self: Tensor, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones of ``size`` with ``self``'s dtype and device by default."""
    return ones(*size, **_like_kwargs(self, dtype, device, requires_grad))


@tensor_method("new_full")
def new_full(self: Tensor, size, fill_value, *, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``fill_value`` of ``size`` with ``self``'s dtype and device by default."""
    return full(size, fill_value, **_like_kwargs(self, dtype, device, requires_grad))


@tensor_method("new_tensor")
def new_tensor(self: Tensor, data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A copy of ``data`` with ``self``'s dtype and device by default."""
    return tensor(data, **_like_kwargs(self, dtype, device, requires_grad))

