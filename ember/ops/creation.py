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
from ember.errors import cuda_not_compiled
from ember.memory import devices as _devices
from ember.ops._define import Spec, composite, operator, tensor_method
from ember.tensor import Tensor

__all__ = ["empty", "empty_strided", "zeros", "ones", "full", "tensor", "as_tensor",
           "empty_like", "zeros_like", "ones_like", "full_like", "arange", "scalar_tensor",
           "new_empty", "new_zeros", "new_ones", "new_full", "new_tensor", "data_shape_dtype",
           "linspace", "logspace", "eye", "tril_indices", "triu_indices"]

_FACTORY_KW = ", ScalarType? dtype=None, Layout? layout=None, Device? device=None, " \
              "bool? pin_memory=None, bool requires_grad=False"


def _has_backend(name: str) -> bool:
    return any(b.name == name for b in _devices.registered_backends())


def _backend_select(op, ks, *args, **kwargs):
    device = as_device(kwargs.get("device"))
    # NOTE [Device namespaces without a device] in ember/backends/cuda.py
    if device.type == "cuda" and not _has_backend("cuda"):
        raise cuda_not_compiled()
    if kwargs.get("pin_memory") and not (_has_backend("cuda") or _has_backend("mps")):
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no "
                           "pinned memory allocator is available on this system.")
    return redispatch(op, ks | (1 << BACKEND_KEY_OF_DEVICE[device.type]), *args, **kwargs)


def factory(schema: str, tags=()):
    """Declare a factory op: its Meta rule plus the BackendSelect kernel that routes by device."""

    def deco(rule):
        op = operator(schema, (Tag.factory, *tags), method=False)(rule)
        op.register(DispatchKey.BackendSelect, _backend_select, with_keyset=True)
        return op

    return deco


def _dtype_or_default(dtype, out=None) -> dt.DType:
    """``dtype``, else ``out``'s dtype (torch's factories with ``out=``), else the default."""
    if dtype is not None:
        return dtype
    return out._dtype if out is not None else dt.get_default_dtype()


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
    return Spec(_shape_arg(size), _dtype_or_default(dtype, out))


@factory("empty_strided(SymInt[] size, SymInt[] stride, *" + _FACTORY_KW + ") -> Tensor")
def empty_strided(size, stride, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """An uninitialised tensor with explicit strides.

    Example:
        >>> x = ember.empty_strided((2, 3), (1, 2))
        >>> x.shape, x.stride()
        (ember.Size([2, 3]), (1, 2))
    """
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
    return Spec(_shape_arg(size), _dtype_or_default(dtype, out))


@factory("ones(SymInt[] size, *" + _FACTORY_KW + ", Tensor(a!)? out=None) -> Tensor")
def ones(*size, out=None, dtype=None, layout=None, device=None, pin_memory=None,
         requires_grad=False):
    """A tensor of ``size`` filled with 1.

    Example:
        >>> ember.ones(2, 3)
        tensor([[1., 1., 1.],
                [1., 1., 1.]])
        >>> ember.ones((2,), dtype=ember.int64)
        tensor([1, 1])
    """
    return Spec(_shape_arg(size), _dtype_or_default(dtype, out))


@factory("full(SymInt[] size, Scalar fill_value, *" + _FACTORY_KW + ", Tensor(a!)? out=None) "
         "-> Tensor")
def full(size, fill_value, *, out=None, dtype=None, layout=None, device=None, pin_memory=None,
         requires_grad=False):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it when not given).

    Example:
        >>> ember.full((2, 2), 0.5)
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
        >>> ember.full((3,), 7).dtype
        ember.int64
    """
    if isinstance(fill_value, Tensor):
        fill_value = fill_value.item()
    if dtype is None:
        dtype = out._dtype if out is not None else dt.scalar_dtype(fill_value)
    return Spec(_shape_arg(tuple(size) if not isinstance(size, int) else (size,)), dtype)


@factory("scalar_tensor(Scalar s, *" + _FACTORY_KW + ") -> Tensor")
def scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=None,
                  requires_grad=False):
    """A 0-d tensor holding ``s`` (default dtype unless given).

    Example:
        >>> ember.scalar_tensor(3)
        tensor(3.)
    """
    return Spec((), _dtype_or_default(dtype))


def data_shape_dtype(data, dtype) -> tuple[tuple[int, ...], dt.DType, np.ndarray | None]:
    """Shape, dtype and (for CPU) the NumPy array that ``tensor(data)`` should hold.

    Example:
        >>> from ember.ops.creation import data_shape_dtype
        >>> shape, dtype, array = data_shape_dtype([[1, 2], [3, 4]], None)
        >>> shape, dtype
        ((2, 2), ember.int64)
    """
    if isinstance(data, Tensor):
        return data._shape, dtype or data._dtype, None
    if isinstance(data, np.ndarray | np.generic):
        array = np.asarray(data)
        inferred = dt.from_numpy_dtype(array.dtype)
    else:
        array, inferred = _python_data(data, dtype)
    return tuple(array.shape), dtype or inferred, array


def _python_data(data, target: dt.DType | None = None):
    leaves: list[dt.DType] = []
    nested = _walk(data, leaves, 0)
    inferred = dt.get_default_dtype() if not leaves else leaves[0]
    for d in leaves[1:]:
        inferred = dt.promote_types(inferred, d)
    try:
        array = np.array(nested, dtype=np.float64 if inferred.is_floating_point else
                         np.complex128 if inferred.is_complex else None)
    except ValueError as e:
        raise ValueError(f"tensor: expected a rectangular nested sequence; {e}") from None
    except OverflowError:
        raise ValueError("tensor: Overflow when unpacking long long; an integer does not fit in "
                         "int64") from None
    if array.dtype == np.uint64 or (array.dtype == object and _has_big_int(nested)):
        raise ValueError("tensor: Overflow when unpacking long long; an integer does not fit in "
                         "int64")
    if array.dtype == object:
        raise ValueError("tensor: expected a rectangular nested sequence of numbers")
    if target is not None and target.category == dt.INTEGRAL and array.size and \
            not any(isinstance(v, np.ndarray) for v in _flat_items(data)):
        _check_fits(array, target)
    return array, inferred


def _flat_items(data):
    if isinstance(data, list | tuple):
        for v in data:
            yield from _flat_items(v)
    else:
        yield data


def _check_fits(array: np.ndarray, target: dt.DType) -> None:
    """torch's checked conversion of Python numbers to an integer dtype.

    Floats must be finite and inside the type's range; ints inside it (unsigned types also
    take negative ints down to ``-max``, which wrap).
    """
    info = dt.iinfo(target)
    lo = info.min if array.dtype.kind == "f" or target.is_signed else -info.max
    with np.errstate(invalid="ignore"):
        ok = (array >= lo) & (array <= info.max)
    if not bool(ok.all()):
        bad = array[~ok].reshape(-1)[0]
        raise RuntimeError(f"tensor: value cannot be converted to type {target.name} without "
                           f"overflow; got {bad}")


def _walk(x, leaves: list, depth: int):
    """Nested Python data -> nested lists of numbers; records each leaf's dtype in ``leaves``.

    Like torch: Python floats are the default dtype, ints int64, bools bool; NumPy scalars and
    arrays and one-element tensors keep their dtype; the result dtype promotes over all leaves.
    """
    if isinstance(x, Tensor):
        if x.numel() != 1:
            raise TypeError(f"tensor: only one-element tensors can be converted to a Python "
                            f"number inside a nested sequence; got shape {list(x.shape)} at "
                            f"dim {depth}\nhint: use ember.stack for a sequence of tensors")
        leaves.append(x._dtype)
        return x.reshape(()).item()
    if isinstance(x, np.ndarray):
        leaves.append(dt.from_numpy_dtype(x.dtype))
        return x.tolist()
    if isinstance(x, list | tuple):
        items = [_walk(v, leaves, depth + 1) for v in x]
        seq = [isinstance(v, list) for v in items]
        if any(seq) and not all(seq):
            raise TypeError(f"tensor: a nested sequence mixes numbers and sequences at dim "
                            f"{depth + 1}; got {type(x[seq.index(False)]).__name__}")
        return items
    if isinstance(x, np.generic):
        leaves.append(dt.from_numpy_dtype(np.asarray(x).dtype))
        return x.item()
    if isinstance(x, bool | int | float | complex):
        leaves.append(dt.scalar_dtype(x))
        return x
    raise TypeError(f"tensor: could not infer dtype of {type(x).__name__}")


def _has_big_int(nested) -> bool:
    if isinstance(nested, list):
        return any(_has_big_int(v) for v in nested)
    return isinstance(nested, int) and not -(1 << 63) <= nested < 1 << 63


@factory("tensor(Any data, *" + _FACTORY_KW + ") -> Tensor")
def tensor(data, *, dtype=None, layout=None, device=None, pin_memory=None,
           requires_grad=False):
    """A new tensor holding a copy of ``data`` (nested lists, scalars, NumPy arrays, tensors).

    Python floats become the default dtype, ints ``int64``, bools ``bool``; NumPy scalars,
    arrays and one-element tensors inside lists keep their dtype, and the result dtype promotes
    over all of them (``[1, 2.5, True]`` is float32). ``tensor([])`` is float32 of shape (0,).

    Raises:
        TypeError: data that is not numbers (or a list mixing numbers and lists).
        ValueError: ragged lists; integers beyond int64.
        RuntimeError: ``requires_grad=True`` with a non-floating dtype.

    Example:
        >>> import ember
        >>> ember.tensor([[1, 2], [3, 4]]).dtype
        ember.int64
    """
    shape, dtype, _ = data_shape_dtype(data, dtype)
    check_requires_grad(dtype, requires_grad)
    return Spec(shape, dtype)


def check_requires_grad(dtype: dt.DType, requires_grad: bool) -> None:
    """RuntimeError (torch's) for ``requires_grad=True`` on a non-floating dtype."""
    if requires_grad and not dtype.is_differentiable:
        raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                           "gradients")


@composite("as_tensor(Any data, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
           method=False)
def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Share memory with ``data`` when possible (a tensor or a NumPy array), else copy.

    Example:
        >>> import numpy as np
        >>> a = np.array([1.0, 2.0])
        >>> t = ember.as_tensor(a)
        >>> a[0] = 5.0
        >>> t  # shares the array's memory
        tensor([5., 2.], dtype=ember.float64)
    """
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

    Example:
        >>> ember.arange(5)
        tensor([0, 1, 2, 3, 4])
        >>> ember.arange(1, 2.5, 0.5)
        tensor([1.0000, 1.5000, 2.0000])
    """
    if any(_imaginary(v) for v in (start, end, step)):  # torch sizes the range in double
        raise RuntimeError("value cannot be converted to type double without overflow")
    start, end, step = _arange_args(start, end, step)
    if dtype is None:
        dtype = out._dtype if out is not None else dt.int64 \
            if all(isinstance(v, int) for v in (start, end, step)) else dt.get_default_dtype()
    if dtype.is_complex:  # torch's arange kernel has no complex types
        raise NotImplementedError(f"\"arange_cpu\" not implemented for '{dtype.scalar_name}'")
    start, end, step = _arange_cast(start, end, step, dtype)
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
    _check_arange_sign(start, end, step)
    return start, end, step


def _check_arange_sign(start, end, step) -> None:
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")


def _arange_cast(start, end, step, dtype: dt.DType):
    """int64 truncates start, end and step before sizing, like torch (whose other integer
    dtypes size the range from the exact bounds and truncate only start and step)."""
    if dtype is not dt.int64:
        return start, end, step
    start, end, step = int(start), int(end), int(step)
    if step == 0:
        raise ValueError(f"arange: step must be nonzero; the step truncates to 0 for {dtype}")
    _check_arange_sign(start, end, step)
    return start, end, step


def _arange_normalize(start, end, step, dtype: dt.DType):
    return _arange_cast(*_arange_args(start, end, step), dtype)


def arange_length(start, end, step) -> int:
    """Number of elements of ``arange(start, end, step)``."""
    return max(0, math.ceil((end - start) / step))


arange.normalize = _arange_normalize


# -- *_like and new_* ------------------------------------------------------------------------
def _like_kwargs(self: Tensor, dtype, device, requires_grad, pin_memory=None) -> dict:
    out = {"dtype": dtype or self._dtype, "device": device or self._device,
           "requires_grad": requires_grad}
    if pin_memory:
        out["pin_memory"] = pin_memory
    return out


@composite("empty_like(Tensor self, *" + _FACTORY_KW + ", MemoryFormat? memory_format=None) "
           "-> Tensor", method=False)
def empty_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=False, memory_format=None) -> Tensor:
    """An uninitialised tensor with ``input``'s shape, dtype and device (unless overridden).

    Example:
        >>> x = ember.empty_like(ember.zeros(2, 3, dtype=ember.int32))
        >>> x.shape, x.dtype
        (ember.Size([2, 3]), ember.int32)
    """
    return empty(input._shape, **_like_kwargs(input, dtype, device, requires_grad,
                                              pin_memory))


@composite("zeros_like(Tensor self, *" + _FACTORY_KW + ", MemoryFormat? memory_format=None) "
           "-> Tensor", method=False)
def zeros_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
               requires_grad=False, memory_format=None) -> Tensor:
    """Zeros shaped like ``input``.

    Example:
        >>> ember.zeros_like(ember.ones(2, 2))
        tensor([[0., 0.],
                [0., 0.]])
    """
    return zeros(input._shape, **_like_kwargs(input, dtype, device, requires_grad,
                                              pin_memory))


@composite("ones_like(Tensor self, *" + _FACTORY_KW + ", MemoryFormat? memory_format=None) "
           "-> Tensor", method=False)
def ones_like(input, *, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False, memory_format=None) -> Tensor:
    """Ones shaped like ``input``.

    Example:
        >>> ember.ones_like(ember.tensor([1, 2, 3]))
        tensor([1, 1, 1])
    """
    return ones(input._shape, **_like_kwargs(input, dtype, device, requires_grad,
                                             pin_memory))


@composite("full_like(Tensor self, Scalar fill_value, *" + _FACTORY_KW +
           ", MemoryFormat? memory_format=None) -> Tensor", method=False)
def full_like(input, fill_value, *, dtype=None, layout=None, device=None, pin_memory=None,
              requires_grad=False, memory_format=None) -> Tensor:
    """``fill_value`` shaped like ``input`` (``input``'s dtype unless given).

    Example:
        >>> ember.full_like(ember.tensor([1.0, 2.0]), 0.5)
        tensor([0.5000, 0.5000])
    """
    return full(input._shape, fill_value, **_like_kwargs(input, dtype, device, requires_grad,
                                                         pin_memory))


@tensor_method("new_empty")
def new_empty(self: Tensor, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uninitialised tensor of ``size`` with ``self``'s dtype and device by default.

    Example:
        >>> x = ember.ones(2, dtype=ember.float64)
        >>> y = x.new_empty(3, 4)
        >>> y.shape, y.dtype
        (ember.Size([3, 4]), ember.float64)
    """
    return empty(*size, **_like_kwargs(self, dtype, device, requires_grad))


@tensor_method("new_zeros")
def new_zeros(self: Tensor, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros of ``size`` with ``self``'s dtype and device by default.

    Example:
        >>> ember.tensor([1, 2]).new_zeros(3)
        tensor([0, 0, 0])
    """
    return zeros(*size, **_like_kwargs(self, dtype, device, requires_grad))


@tensor_method("new_ones")
def new_ones(self: Tensor, *size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones of ``size`` with ``self``'s dtype and device by default.

    Example:
        >>> ember.tensor([1.0], dtype=ember.float64).new_ones(2)
        tensor([1., 1.], dtype=ember.float64)
    """
    return ones(*size, **_like_kwargs(self, dtype, device, requires_grad))


@tensor_method("new_full")
def new_full(self: Tensor, size, fill_value, *, dtype=None, device=None,
             requires_grad=False) -> Tensor:
    """``fill_value`` of ``size`` with ``self``'s dtype and device by default.

    Example:
        >>> ember.tensor([1, 2]).new_full((2,), 9)
        tensor([9, 9])
    """
    return full(size, fill_value, **_like_kwargs(self, dtype, device, requires_grad))


@tensor_method("new_tensor")
def new_tensor(self: Tensor, data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A copy of ``data`` with ``self``'s dtype and device by default.

    Example:
        >>> ember.zeros(1, dtype=ember.float16).new_tensor([1.5, 2.0])
        tensor([1.5000, 2.0000], dtype=ember.float16)
    """
    return tensor(data, **_like_kwargs(self, dtype, device, requires_grad))



# -- ranges, identity, triangle indices -------------------------------------------------------
def _range_scalar(op: str, name: str, v, read: bool = True):
    if isinstance(v, Tensor):
        if v.ndim:
            raise RuntimeError(f"{op} only supports 0-dimensional start and end tensors, but got "
                               f"{name} with {v.ndim} dimension(s).")
        return v.item() if read else v
    return v


def _is_complex_scalar(v) -> bool:
    return v._dtype.is_complex if isinstance(v, Tensor) else isinstance(v, complex)


# the C++ scalar types torch names when a complex bound does not fit a real out= tensor
_SCALAR_CTYPE = {"float32": "float", "float64": "double", "float16": "c10::Half",
                 "bfloat16": "c10::BFloat16", "int64": "int64_t", "int32": "int",
                 "int16": "int16_t", "int8": "int8_t", "uint8": "uint8_t"}


def _imaginary(v) -> bool:
    if isinstance(v, Tensor):
        return v._dtype.is_complex and v._device.type != "meta" and v.imag.item() != 0
    return isinstance(v, complex) and v.imag != 0


def _range_spec(op: str, start, end, steps, dtype, out) -> Spec:
    _range_scalar(op, "start", start, read=False)
    _range_scalar(op, "end", end, read=False)
    if steps < 0:
        raise RuntimeError(f"{op}: number of steps must be non-negative; got {steps}")
    if _is_complex_scalar(start) or _is_complex_scalar(end):
        # a complex bound makes the default dtype's complex, and refuses a real dtype= (torch)
        inferred = dt.get_default_dtype().to_complex()
        if out is None and dtype is not None and not dtype.is_complex:
            raise RuntimeError(f"torch.{op}(): inferred dtype "
                               f"c10::complex<{'double' if inferred is dt.complex128 else 'float'}"
                               f"> can't be safely cast to passed dtype {dtype.scalar_name}")
        if out is not None and not out._dtype.is_complex and out._dtype is not dt.bool_ and \
                (_imaginary(start) or _imaginary(end)):
            raise RuntimeError(f"value cannot be converted to type "
                               f"{_SCALAR_CTYPE[out._dtype.name]} without overflow")
        dtype = dtype or (out._dtype if out is not None else inferred)
    dtype = dtype or (out._dtype if out is not None else dt.get_default_dtype())
    if dtype is dt.bool_ and steps > 1:  # torch fills 0 or 1 values without its kernel
        raise NotImplementedError(f"{op}: not implemented for 'Bool'")
    return Spec((steps,), dtype)


@factory("linspace(Scalar start, Scalar end, int steps, *" + _FACTORY_KW +
         ", Tensor(a!)? out=None) -> Tensor")
def linspace(start, end, steps, *, out=None, dtype=None, layout=None, device=None,
             pin_memory=None, requires_grad=False):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive (default dtype).

    Computed like torch: the first half counts up from ``start``, the second half down from
    ``end``, so both ends are exact; integer dtypes truncate each value toward zero. A complex
    ``start`` or ``end`` gives the default dtype's complex counterpart (complex64 under
    float32) and refuses a real ``dtype=``, as torch.

    Shape: ``(steps,)``.

    Raises:
        RuntimeError: negative ``steps``; ``start``/``end`` tensors that are not 0-d.

    Example:
        >>> import ember
        >>> ember.linspace(0, 1, 5).tolist()
        [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    return _range_spec("linspace", start, end, steps, dtype, out)


linspace.scalar = _range_scalar


@factory("logspace(Scalar start, Scalar end, int steps, float base=10.0, *" + _FACTORY_KW +
         ", Tensor(a!)? out=None) -> Tensor")
def logspace(start, end, steps, base=10.0, *, out=None, dtype=None, layout=None, device=None,
             pin_memory=None, requires_grad=False):
    """``base ** linspace(start, end, steps)`` (torch's two-ended exponents); complex bounds
    or a complex ``dtype`` give ``exp(exponent * log(base))`` in that dtype, as torch.

    Shape: ``(steps,)``.

    Example:
        >>> import ember
        >>> ember.logspace(0, 2, 3).tolist()
        [1.0, 10.0, 100.0]
    """
    return _range_spec("logspace", start, end, steps, dtype, out)


@factory("eye.m(SymInt n, SymInt? m=None, *" + _FACTORY_KW + ", Tensor(a!)? out=None) -> Tensor")
def eye(n, m=None, *, out=None, dtype=None, layout=None, device=None, pin_memory=None,
        requires_grad=False):
    """A 2-d tensor with ones on the diagonal and zeros elsewhere (``m`` columns, default ``n``).

    Shape: ``(n, m)``.

    Example:
        >>> import ember
        >>> ember.eye(2).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    m = n if m is None else m
    if n < 0:
        raise RuntimeError(f"eye: n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"eye: m must be greater or equal to 0, got {m}")
    return Spec((n, m), dtype or (out._dtype if out is not None else dt.get_default_dtype()))


def _tri_count(row: int, col: int, offset: int) -> int:
    """Number of ``(i, j)`` with ``i < row``, ``j < col`` and ``j - i <= offset``."""
    if row == 0 or col == 0:
        return 0
    per_row = np.clip(np.arange(row, dtype=np.int64) + offset + 1, 0, col)
    return int(per_row.sum())


def _tri_spec(op: str, row, col, offset, dtype, upper: bool) -> Spec:
    if row < 0:
        raise RuntimeError(f"{op}: row must be non-negative, got {row}")
    if col < 0:
        raise RuntimeError(f"{op}: col must be non-negative, got {col}")
    dtype = dtype or dt.int64
    if dtype is not dt.int64 and dtype is not dt.int32:
        raise NotImplementedError(f"{op}: not implemented for {dtype}; expected int32 or int64")
    count = row * col - _tri_count(row, col, offset - 1) if upper else \
        _tri_count(row, col, offset)
    return Spec((2, count), dtype)


@factory("tril_indices(int row, int col, int offset=0, *" +
         _FACTORY_KW.replace("dtype=None", "dtype=long") + ") -> Tensor")
def tril_indices(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=None,
                 requires_grad=False):
    """Row and column indices of the lower triangle of a ``row x col`` matrix.

    ``offset`` moves the diagonal (positive: above the main one). Indices are in row-major
    order; int64 unless ``dtype``.

    Shape: ``(2, count)``.

    Example:
        >>> import ember
        >>> ember.tril_indices(2, 2).tolist()
        [[0, 1, 1], [0, 0, 1]]
    """
    return _tri_spec("tril_indices", row, col, offset, dtype, False)


@factory("triu_indices(int row, int col, int offset=0, *" +
         _FACTORY_KW.replace("dtype=None", "dtype=long") + ") -> Tensor")
def triu_indices(row, col, offset=0, *, dtype=None, layout=None, device=None, pin_memory=None,
                 requires_grad=False):
    """Row and column indices of the upper triangle of a ``row x col`` matrix (``(2, count)``).

    Example:
        >>> import ember
        >>> ember.triu_indices(2, 2).tolist()
        [[0, 0, 1], [0, 1, 1]]
    """
    return _tri_spec("triu_indices", row, col, offset, dtype, True)
