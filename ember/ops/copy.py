"""Copying and conversion: ``copy_``, ``clone``, ``contiguous``, ``to`` and dtype shorthands.

``contiguous()`` and ``to()`` return ``self`` when nothing would change; ``clone()`` keeps a
dense input's strides (PyTorch's ``preserve_format``) and makes anything else contiguous.
"""

from __future__ import annotations

from ember.core import dtype as dt
from ember.core.device import as_device
from ember.core.layout import broadcast_shapes, is_non_overlapping_and_dense
from ember.core.memory_format import preserve_format
from ember.ops._define import Spec, Tag, composite, derivative, operator, tensor_method
from ember.ops.pointwise import check_writable
from ember.tensor import Tensor

__all__ = ["copy_", "clone", "contiguous", "to", "type_as", "fill_", "zero_"]


@operator("copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)",
          (Tag.inplace,))
def copy_(self: Tensor, src, non_blocking: bool = False):
    """Copy ``src`` (broadcast, cast) into ``self``; bumps ``self``'s version.

    Example:
        >>> x = ember.zeros(2, 3)
        >>> x.copy_(ember.tensor([1, 2, 3]))  # broadcast and cast
        tensor([[1., 2., 3.],
                [1., 2., 3.]])
    """
    check_writable(self)
    if isinstance(src, Tensor):
        shape = broadcast_shapes(self._shape, src._shape)
        if shape != self._shape:
            raise RuntimeError(f"copy_: the shape of src {list(src._shape)} must be "
                               f"broadcastable to the shape of self {list(self._shape)}")
    return Spec(self._shape, self._dtype)


def _copy_meta(self: Tensor, src, non_blocking=False):
    if self._device.type != "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    self._ver.value += 1
    return self


copy_.register("Meta", _copy_meta)


@derivative(copy_)
def _copy_backward(ctx, grad):
    # self's old values are overwritten: no gradient flows to them.
    return None, grad


@operator("fill_.Scalar(Tensor(a!) self, Scalar value) -> Tensor(a!)",
          (Tag.inplace, Tag.pointwise))
def fill_(self: Tensor, value):
    """Fill ``self`` with ``value`` (a number or a 0-d tensor); expanded tensors are allowed.

    Example:
        >>> ember.empty(3).fill_(0.5)
        tensor([0.5000, 0.5000, 0.5000])
    """
    if isinstance(value, Tensor) and value.dim() != 0:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.dim()} dimensions.")
    return Spec(self._shape, self._dtype)


@derivative(fill_)
def _fill_backward(ctx, grad):
    if len(ctx.needs_input_grad) == 2:  # value was a 0-d tensor
        return None, grad.sum()
    return None


@composite("zero_(Tensor(a!) self) -> Tensor(a!)", tags=(Tag.inplace,))
def zero_(self: Tensor) -> Tensor:
    """Fill ``self`` with zeros.

    Example:
        >>> x = ember.ones(2)
        >>> ember.zero_(x) is x, x
        (True, tensor([0., 0.]))
    """
    return fill_(self, 0)


@composite("clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor")
def clone(self: Tensor, *, memory_format=None) -> Tensor:
    """A copy with its own storage (dense strides kept, others made contiguous).

    Example:
        >>> x = ember.ones(2, requires_grad=True)
        >>> y = x.clone()
        >>> y.data_ptr() != x.data_ptr(), y.requires_grad
        (True, True)
    """
    from ember.ops.creation import empty, empty_strided
    if (memory_format is None or memory_format is preserve_format) and \
            is_non_overlapping_and_dense(self._shape, self._stride):
        out = empty_strided(self._shape, self._stride, dtype=self._dtype, device=self._device)
    else:
        out = empty(self._shape, dtype=self._dtype, device=self._device)
    return _fresh(copy_(out, self))


def _fresh(out: Tensor) -> Tensor:
    """A new tensor that was just filled starts at version 0 (its counter is not shared)."""
    out._ver.value = 0
    return out


@tensor_method("contiguous")
def contiguous(self: Tensor, memory_format=None) -> Tensor:
    """``self`` if already contiguous, else a contiguous copy.

    Example:
        >>> x = ember.arange(6).reshape(2, 3).t()
        >>> y = x.contiguous()
        >>> x.is_contiguous(), y.is_contiguous(), y.stride(), ember.equal(x, y)
        (False, True, (2, 1), True)
    """
    if self.is_contiguous():
        return self
    return clone(self, memory_format="contiguous_format")


@composite("_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, "
           "Device? device=None, bool? pin_memory=None, bool non_blocking=False, "
           "MemoryFormat? memory_format=None) -> Tensor", method=False)
def _to_copy(self: Tensor, *, dtype=None, layout=None, device=None, pin_memory=None,
             non_blocking=False, memory_format=None) -> Tensor:
    """A copy of ``self`` with another dtype and/or device."""
    from ember.ops.creation import empty, empty_strided
    dtype = dtype or self._dtype
    device = as_device(device) if device is not None else self._device
    if self._device.type == "meta" and device.type != "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data! Please consider "
                                  "using torch.empty_like(...) instead to allocate a tensor "
                                  "with the same shape on another device."
                                  .replace("torch.", "ember."))
    if is_non_overlapping_and_dense(self._shape, self._stride):
        out = empty_strided(self._shape, self._stride, dtype=dtype, device=device)
    else:
        out = empty(self._shape, dtype=dtype, device=device)
    # copy_ runs on meta too (a no-op there), so graph capture on meta tensors records it
    return _fresh(copy_(out, self, non_blocking))


def _parse_to(args, kwargs):
    dtype = kwargs.pop("dtype", None)
    device = kwargs.pop("device", None)
    for a in args:
        if isinstance(a, dt.DType):
            dtype = a
        elif isinstance(a, Tensor):
            dtype, device = a._dtype, a._device
        elif a is not None:
            device = a
    return dtype, device


@tensor_method("to")
def to(self: Tensor, *args, copy: bool = False, non_blocking: bool = False,
       memory_format=None, **kwargs) -> Tensor:
    """Convert to a dtype and/or device: ``to(dtype)``, ``to(device)``, ``to(other)``.

    Returns ``self`` when nothing changes and ``copy`` is False.

    Example:
        >>> x = ember.tensor([1.5, -2.0])
        >>> x.to(ember.int64), x.to("meta").device
        (tensor([ 1, -2]), device(type='meta'))
        >>> x.to(ember.float32) is x  # already so: no copy
        True
    """
    dtype, device = _parse_to(args, kwargs)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    device = as_device(device) if device is not None else self._device
    dtype = dtype or self._dtype
    if not copy and dtype is self._dtype and device == self._device:
        return self
    return _to_copy(self, dtype=dtype, device=device, non_blocking=non_blocking)


@tensor_method("type_as")
def type_as(self: Tensor, other: Tensor) -> Tensor:
    """``self.to(other.dtype)``.

    Example:
        >>> ember.tensor([1.5, 2.5]).type_as(ember.tensor([1]))
        tensor([1, 2])
    """
    return to(self, other._dtype)


def _converter(d: dt.DType):
    def convert(self: Tensor, memory_format=None) -> Tensor:
        return to(self, d)

    convert.__doc__ = f"``self.to({d})``."
    return convert


for _name, _d in {"float": dt.float32, "double": dt.float64, "half": dt.float16,
                  "bfloat16": dt.bfloat16, "long": dt.int64, "int": dt.int32,
                  "short": dt.int16, "char": dt.int8, "byte": dt.uint8, "bool": dt.bool_}.items():
    tensor_method(_name)(_converter(_d))


@tensor_method("cpu")
def cpu(self: Tensor) -> Tensor:
    """``self.to("cpu")``.

    Example:
        >>> x = ember.ones(2)
        >>> x.cpu() is x
        True
    """
    return to(self, "cpu")
