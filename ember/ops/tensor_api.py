"""Tensor methods and predicates scripts reach for: ``type``, ``storage``, ``share_memory_``,
in-place views (``squeeze_``, ``t_``, ...), ``resize_``, ``set_``, ``ravel`` and the
``numel``/``is_*`` functions of torch's top level, and the real-number forms of the complex
API (``conj``, ``angle``, ...). Over 800 lines because it binds some sixty small methods,
each a few lines; torch's global switches and legacy classes are in ``toplevel.py``.

NOTE [In-place views]
``x.squeeze_()`` gives ``x`` the geometry of ``x.squeeze()``, in place. The view op runs as
usual (so autograd records its node), then ``x`` adopts the view's geometry and, when
recording, its ``grad_fn``: ``x`` now *is* that view, as in torch (``SqueezeBackward``). A leaf
that requires grad refuses, like every in-place op; the version counter is bumped.
"""

from __future__ import annotations

import builtins  # ``range`` below is torch's deprecated range
import math

from ember.autograd.grad_mode import is_grad_enabled
from ember.core import dtype as dt
from ember.core.layout import contiguous_strides, normalize_shape, storage_extent
from ember.core.memory_format import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    layout,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
    strided,
)
from ember.memory.storage import Storage
from ember.ops._define import composite, tensor_method
from ember.ops.views import squeeze, t, transpose, unsqueeze
from ember.tensor import Tensor
from ember.tensor.typed_storage import (
    LEGACY_STORAGE_TYPES,
    TypedStorage,
    is_shared,
    mark_shared,
    tensor_type_name,
)

__all__ = ["ravel", "numel", "is_tensor", "is_floating_point", "is_nonzero", "is_same_size",
           "is_storage", "TypedStorage", "UntypedStorage"]

UntypedStorage = Storage


# -- type ---------------------------------------------------------------------------------------
_BY_TYPE_NAME = {f"{d.scalar_name}Tensor": d for d in dt.ALL_DTYPES}


def _parse_type(name: str) -> dt.DType:
    parts = name.split(".")
    if len(parts) == 3 and parts[0] in ("torch", "ember") and parts[1] == "cuda":
        raise RuntimeError(f"type {name!r} needs CUDA, which this build of ember does not have; "
                           "use a CPU type such as 'torch.FloatTensor'")
    if len(parts) != 2 or parts[0] not in ("torch", "ember") or parts[1] not in _BY_TYPE_NAME:
        raise ValueError(f"invalid type: {name!r}")
    return _BY_TYPE_NAME[parts[1]]


@tensor_method("type")
def _type(self: Tensor, dtype=None, non_blocking: bool = False, **kwargs):
    """``t.type()`` is torch's type name (``'torch.FloatTensor'``); ``t.type(dtype)`` or
    ``t.type('torch.LongTensor')`` converts (``self`` when the dtype already matches).

    Raises:
        ValueError: an unknown type name. RuntimeError: a CUDA type name.

    Example:
        >>> ember.zeros(2).type(), ember.zeros(2).type(ember.int64).type()
        ('torch.FloatTensor', 'torch.LongTensor')
    """
    if dtype is None:
        return tensor_type_name(self._dtype, self._device)
    if isinstance(dtype, str):
        dtype = _parse_type(dtype)
    elif isinstance(dtype, type) and isinstance(getattr(dtype, "dtype", None), dt.DType):
        dtype = dtype.dtype  # a legacy class such as ember.LongTensor
    if not isinstance(dtype, dt.DType):
        raise TypeError(f"type(): argument 'dtype' must be a dtype or a type name, not "
                        f"{type(dtype).__name__}")
    return self if dtype is self._dtype else self.to(dtype, non_blocking=non_blocking)


# -- storage and sharing ----------------------------------------------------------------------
@tensor_method("storage")
def _storage(self: Tensor) -> TypedStorage:
    """The tensor's storage seen as elements of its dtype (``torch.TypedStorage``).

    Example:
        >>> ember.arange(3.0).storage().tolist()
        [0.0, 1.0, 2.0]
    """
    return TypedStorage(wrap_storage=self._storage, dtype=self._dtype)


@tensor_method("is_shared")
def _is_shared(self: Tensor) -> bool:
    """Whether this tensor's storage lives in shared memory (``torch.Tensor.is_shared``; NOTE
    [Shared storages] in ember/memory/storage.py).

    Example:
        >>> x = ember.ones(2)
        >>> x.is_shared(), x.share_memory_().is_shared()
        (False, True)
    """
    return is_shared(self._storage)


@tensor_method("share_memory_")
def _share_memory_(self: Tensor) -> Tensor:
    """Move the storage into shared memory and return ``self`` (``torch.Tensor.share_memory_``).

    A no-op when it is there already. Processes forked afterwards share the bytes: a write on
    either side shows on the other (NOTE [Shared storages] in ember/memory/storage.py).

    Example:
        >>> x = ember.ones(2)
        >>> x.share_memory_() is x, x.is_shared()
        (True, True)
    """
    mark_shared(self._storage)
    return self


def is_storage(obj) -> bool:
    """Whether ``obj`` is a storage (typed or untyped), as ``torch.is_storage``.

    Example:
        >>> x = ember.ones(2)
        >>> ember.is_storage(x.untyped_storage()), ember.is_storage(x)
        (True, False)
    """
    return isinstance(obj, TypedStorage | Storage)


# -- in-place views ---------------------------------------------------------------------------
def _check_leaf(self: Tensor) -> None:
    if is_grad_enabled() and self._requires_grad and self.grad_fn is None:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                           "operation.")


def _inplace_view(self: Tensor, make_view) -> Tensor:
    """``self`` takes the geometry and autograd history of ``make_view()`` (NOTE [In-place
    views]). The version is bumped first, so a node that saves ``self`` records the version
    that its backward will find."""
    _check_leaf(self)
    self._ver.value += 1
    view = make_view()
    self._set_meta(view._shape, view._stride, view._offset)
    if view.grad_fn is not None:
        self.grad_fn = view.grad_fn
        self._output_nr = view._output_nr
    return self


@tensor_method("squeeze_")
def squeeze_(self: Tensor, dim=None) -> Tensor:
    """In-place :func:`squeeze`: drops size-1 dims (all, or those in ``dim``).

    Example:
        >>> x = ember.zeros(2, 1, 3)
        >>> x.squeeze_(1) is x, x.shape
        (True, ember.Size([2, 3]))
    """
    return _inplace_view(self, lambda: squeeze(self, dim))


@tensor_method("unsqueeze_")
def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    """In-place :func:`unsqueeze`: inserts a size-1 dim at ``dim``.

    Example:
        >>> x = ember.zeros(2, 3)
        >>> x.unsqueeze_(0).shape
        ember.Size([1, 2, 3])
    """
    return _inplace_view(self, lambda: unsqueeze(self, dim))


@tensor_method("t_")
def t_(self: Tensor) -> Tensor:
    """In-place :func:`t` (tensors of at most 2 dims).

    Example:
        >>> x = ember.zeros(2, 3)
        >>> x.t_() is x, x.shape, x.stride()
        (True, ember.Size([3, 2]), (1, 3))
    """
    if self.dim() > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.dim()}D")
    return _inplace_view(self, lambda: t(self))


@tensor_method("transpose_")
def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """In-place :func:`transpose` of dims ``dim0`` and ``dim1``.

    Example:
        >>> x = ember.zeros(2, 3, 4)
        >>> x.transpose_(0, 2).shape
        ember.Size([4, 3, 2])
    """
    return _inplace_view(self, lambda: transpose(self, dim0, dim1))


@tensor_method("swapdims_")
def swapdims_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of :meth:`transpose_`.

    Example:
        >>> ember.zeros(2, 3).swapdims_(0, 1).shape
        ember.Size([3, 2])
    """
    return transpose_(self, dim0, dim1)


@tensor_method("swapaxes_")
def swapaxes_(self: Tensor, axis0: int, axis1: int) -> Tensor:
    """Alias of :meth:`transpose_`.

    Example:
        >>> ember.zeros(2, 3).swapaxes_(0, 1).shape
        ember.Size([3, 2])
    """
    return transpose_(self, axis0, axis1)


# -- resize_ and set_ -------------------------------------------------------------------------
@tensor_method("resize_")
def resize_(self: Tensor, *sizes, memory_format=None) -> Tensor:
    """Give ``self`` the shape ``sizes`` with contiguous strides, in place.

    Elements already in the storage keep their values; when the storage is too small, ``self``
    moves to a larger one holding a copy of the old bytes (new elements are uninitialised).
    Other views keep the old storage (torch grows the shared storage instead).

    Raises:
        RuntimeError: ``self`` requires grad, or a size is negative.

    Example:
        >>> ember.arange(6.0).resize_(2, 2).tolist()
        [[0.0, 1.0], [2.0, 3.0]]
    """
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = normalize_shape(sizes)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    if shape == self._shape:
        return self
    stride = contiguous_strides(shape)
    need = storage_extent(shape, stride, self._offset) * self._dtype.itemsize
    old = self._storage
    if need > old.nbytes():
        new = Storage(need, self._device)
        if old.data is not None and new.data is not None and old.nbytes():
            new.data[:old.nbytes()] = old.data
        self._storage = new
    self._set_meta(shape, stride, self._offset)
    self._ver.value += 1
    return self


@tensor_method("resize_as_")
def resize_as_(self: Tensor, the_template: Tensor, memory_format=None) -> Tensor:
    """``self.resize_(the_template.shape)``.

    Example:
        >>> x = ember.zeros(2)
        >>> ember.resize_as_(x, ember.zeros(2, 3)).shape
        ember.Size([2, 3])
    """
    if not isinstance(the_template, Tensor):
        raise TypeError(f"resize_as_(): argument 'the_template' (position 1) must be Tensor, "
                        f"not {type(the_template).__name__}")
    return resize_(self, the_template._shape)


def _set_dtype_check(self: Tensor, dtype: dt.DType) -> None:
    if dtype is not self._dtype:
        raise RuntimeError(f"Could not set tensor of type {dtype.scalar_name} to a tensor of "
                           f"type {self._dtype.scalar_name}")


@tensor_method("set_")
def set_(self: Tensor, source=None, storage_offset: int = 0, size=None, stride=None) -> Tensor:
    """Make ``self`` look at other memory, in place.

    ``set_()`` empties it; ``set_(tensor)`` shares ``tensor``'s storage and geometry;
    ``set_(storage, storage_offset, size, stride)`` views a storage (untyped or typed) with the
    given geometry (contiguous when ``stride`` is omitted; the whole storage when ``size`` is).

    Raises:
        RuntimeError: dtypes differ, or ``self`` is a leaf that requires grad.

    Example:
        >>> a = ember.zeros(1); b = ember.arange(4.0); a.set_(b).tolist()
        [0.0, 1.0, 2.0, 3.0]
    """
    _check_leaf(self)
    if source is None:
        storage, shape, stride_, offset = Storage(0, self._device), (0,), (1,), 0
    elif isinstance(source, Tensor):
        _set_dtype_check(self, source._dtype)
        storage, shape, stride_, offset = (source._storage, source._shape, source._stride,
                                           source._offset)
    elif isinstance(source, TypedStorage | Storage):
        if isinstance(source, TypedStorage):
            _set_dtype_check(self, source.dtype)
            source = source.untyped()
        storage, offset = source, storage_offset
        shape = normalize_shape((size,)) if size is not None else \
            (source.nbytes() // self._dtype.itemsize - offset,)
        stride_ = tuple(stride) if stride is not None else contiguous_strides(shape)
        need = storage_extent(shape, stride_, offset) * self._dtype.itemsize
        if need > source.nbytes():
            raise RuntimeError(f"setStorage: sizes {list(shape)}, strides {list(stride_)}, "
                               f"storage offset {offset}, and itemsize "
                               f"{self._dtype.itemsize} requiring a storage size of {need} are "
                               f"out of bounds for storage of size {source.nbytes()}")
    else:
        raise TypeError(f"set_(): argument 'source' must be Tensor or Storage, not "
                        f"{type(source).__name__}")
    self._storage = storage
    self._set_meta(shape, stride_, offset)
    self._ver.value += 1
    return self


# -- ravel and predicates ---------------------------------------------------------------------
@composite("ravel(Tensor(a) self) -> Tensor(a)")
def ravel(input: Tensor) -> Tensor:
    """The elements as a 1-d tensor: a view when the layout allows, otherwise a copy
    (``reshape(-1)`` of a contiguous tensor, as torch).

    Example:
        >>> ember.ravel(ember.zeros(2, 3)).shape
        ember.Size([6])
    """
    _require("ravel", input)
    return input.contiguous().view(-1)


def _require(name: str, x, arg: str = "input", pos: int = 1) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{type(x).__name__}")


def numel(input: Tensor) -> int:
    """Number of elements of ``input`` (``torch.numel``).

    Example:
        >>> ember.numel(ember.zeros(2, 3, 4))
        24
    """
    _require("numel", input)
    return input.numel()


def is_tensor(obj) -> bool:
    """Whether ``obj`` is an ember Tensor (``torch.is_tensor``).

    Example:
        >>> ember.is_tensor(ember.ones(1)), ember.is_tensor([1.0])
        (True, False)
    """
    return isinstance(obj, Tensor)


def is_floating_point(input: Tensor) -> bool:
    """Whether ``input``'s dtype is a floating type (``torch.is_floating_point``).

    Example:
        >>> ember.is_floating_point(ember.ones(1)), ember.is_floating_point(ember.tensor([1]))
        (True, False)
    """
    _require("is_floating_point", input)
    return input._dtype.is_floating_point


@tensor_method("is_nonzero")
def is_nonzero(input: Tensor) -> bool:
    """Whether a one-element tensor is nonzero.

    Raises:
        RuntimeError: ``input`` has no element or more than one.

    Example:
        >>> ember.is_nonzero(ember.tensor([0.5])), ember.is_nonzero(ember.tensor(0))
        (True, False)
    """
    _require("is_nonzero", input)
    n = input.numel()
    if n == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if n > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


@tensor_method("is_same_size")
def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether both tensors have the same shape.

    Example:
        >>> ember.ones(2, 3).is_same_size(ember.zeros(2, 3))
        True
    """
    _require("is_same_size", input)
    _require("is_same_size", other, "other", 2)
    return input._shape == other._shape


def is_signed(input: Tensor) -> bool:
    """Whether ``input``'s dtype is signed (``torch.is_signed``).

    Example:
        >>> ember.is_signed(ember.tensor([1])), ember.is_signed(ember.zeros(1, dtype=ember.uint8))
        (True, False)
    """
    _require("is_signed", input)
    return input.is_signed()


def is_inference(input: Tensor) -> bool:
    """Whether ``input`` was made in inference mode (``torch.is_inference``).

    Example:
        >>> with ember.inference_mode():
        ...     x = ember.ones(1)
        >>> ember.is_inference(x), ember.is_inference(ember.ones(1))
        (True, False)
    """
    _require("is_inference", input)
    return input.is_inference()


# -- small Tensor methods ---------------------------------------------------------------------
@tensor_method("as_strided_")
def as_strided_(self: Tensor, size, stride, storage_offset=None) -> Tensor:
    """In-place :func:`as_strided` (NOTE [In-place views]).

    Example:
        >>> x = ember.arange(6)
        >>> ember.as_strided_(x, (2, 2), (1, 2)) is x, x
        (True, tensor([[0, 2],
                [1, 3]]))
    """
    from ember.ops.views import alias, as_strided
    # as_strided's backward reads its saved input's geometry: give it an alias that keeps
    # the old geometry while ``self`` takes the new one
    return _inplace_view(self, lambda: as_strided(alias(self), size, stride, storage_offset))


@tensor_method("addr_")
def addr_(self: Tensor, vec1: Tensor, vec2: Tensor, *, beta=1, alpha=1) -> Tensor:
    """In-place :func:`addr`: ``self = beta * self + alpha * outer(vec1, vec2)``.

    Example:
        >>> x = ember.zeros(2, 2)
        >>> x.addr_(ember.tensor([1.0, 2.0]), ember.tensor([3.0, 4.0]))
        tensor([[3., 4.],
                [6., 8.]])
    """
    from ember.ops.composites import addr
    from ember.ops.pointwise import check_inplace
    result = addr(self.clone() if is_grad_enabled() else self, vec1, vec2, beta=beta,
                  alpha=alpha)
    check_inplace(self, result._shape, result._dtype)
    return self.copy_(result)


@tensor_method("fill_diagonal_")
def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal (all dims equal beyond 2-d) with ``fill_value``, in place.

    ``wrap=True`` restarts the diagonal every ``cols + 1`` rows of a tall matrix, as torch.

    Raises:
        RuntimeError: fewer than 2 dims, or unequal dims beyond 2-d.

    Example:
        >>> ember.zeros(3, 3).fill_diagonal_(5.0)
        tensor([[5., 0., 0.],
                [0., 5., 0.],
                [0., 0., 5.]])
    """
    from ember.ops.views import as_strided
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.dim() > 2 and len(set(self._shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = min(self._shape)
    step = sum(self._stride)
    if wrap and self.dim() == 2 and self._shape[0] > self._shape[1] + 1:
        rows, cols = self._shape
        # the diagonal restarts every cols + 1 rows; each block holds min(cols, rows left)
        for start in builtins.range(0, rows, cols + 1):
            length = min(cols, rows - start)
            as_strided(self, (length,), (step,), self._offset + start * self._stride[0]) \
                .fill_(fill_value)
        return self
    as_strided(self, (n,), (step,), self._offset).fill_(fill_value)
    return self


@tensor_method("sum_to_size")
def sum_to_size(self: Tensor, *size) -> Tensor:
    """Sum ``self`` down to the broadcast-compatible shape ``size``.

    Example:
        >>> ember.ones(2, 3).sum_to_size(1, 3)
        tensor([[2., 2., 2.]])
    """
    from ember.ops.views import sum_to_shape
    shape = normalize_shape(size)
    if len(shape) > self.dim() or any(s not in (1, t) for s, t in
                                      zip(shape[::-1], self._shape[::-1])):
        raise RuntimeError(f"size {{{', '.join(map(str, shape))}}} is not expandable to size "
                           f"{{{', '.join(map(str, self._shape))}}}.")
    return sum_to_shape(self, shape)


@tensor_method("is_set_to")
def is_set_to(self: Tensor, tensor: Tensor) -> bool:
    """Whether both tensors view the same memory with the same geometry.

    Example:
        >>> x = ember.ones(3)
        >>> x.is_set_to(x), x.is_set_to(x.view(3)), x.is_set_to(x.clone())
        (True, True, False)
    """
    return (self._storage is tensor._storage and self._offset == tensor._offset
            and self._shape == tensor._shape and self._stride == tensor._stride)


@tensor_method("new_empty_strided")
def new_empty_strided(self: Tensor, size, stride, *, dtype=None, device=None,
                      requires_grad: bool = False) -> Tensor:
    """An uninitialised tensor of ``size``/``stride`` with ``self``'s dtype and device.

    Example:
        >>> y = ember.ones(1, dtype=ember.float64).new_empty_strided((2, 3), (1, 2))
        >>> y.dtype, y.stride()
        (ember.float64, (1, 2))
    """
    from ember.ops.creation import empty_strided
    return empty_strided(size, stride, dtype=dtype or self._dtype,
                         device=device or self._device, requires_grad=requires_grad)


@tensor_method("new")
def new(self: Tensor, *args, **kwargs) -> Tensor:
    """torch's legacy constructor on an instance: ``t.new(2, 3)`` is uninitialised, ``t.new()``
    empty and ``t.new(data)`` a copy of ``data``, all with ``self``'s dtype.

    Example:
        >>> x = ember.ones(1, dtype=ember.float64)
        >>> x.new(2, 3).dtype, x.new([1, 2]), x.new().shape
        (ember.float64, tensor([1., 2.], dtype=ember.float64), ember.Size([0]))
    """
    from ember.ops.creation import empty, tensor
    dtype, device = kwargs.pop("dtype", self._dtype), kwargs.pop("device", self._device)
    if len(args) == 1 and not isinstance(args[0], int):
        return tensor(args[0], dtype=dtype, device=device)
    return empty(*args, dtype=dtype, device=device) if args else \
        empty(0, dtype=dtype, device=device)


@tensor_method("dim_order")
def dim_order(self: Tensor) -> tuple:
    """The dims from outermost to innermost in memory (largest stride first).

    Example:
        >>> ember.zeros(2, 3, 4).dim_order(), ember.zeros(2, 3, 4).permute(2, 0, 1).dim_order()
        ((0, 1, 2), (1, 2, 0))
    """
    return tuple(sorted(builtins.range(self.dim()), key=lambda i: -self._stride[i]))


@tensor_method("const_data_ptr")
def const_data_ptr(self: Tensor) -> int:
    """Same as :meth:`data_ptr`.

    Example:
        >>> x = ember.ones(2)
        >>> x.const_data_ptr() == x.data_ptr()
        True
    """
    return self.data_ptr()


@tensor_method("apply_")
def apply_(self: Tensor, callable) -> Tensor:
    """Replace each element ``x`` by ``callable(x)``, in place (Python speed; CPU only).

    Example:
        >>> ember.tensor([1.0, 2.0]).apply_(lambda v: v * 10)
        tensor([10., 20.])
    """
    from ember.ops.creation import tensor
    values = [callable(v) for v in self.reshape(-1).tolist()]
    return self.copy_(tensor(values, dtype=self._dtype).view(self._shape))


@tensor_method("map_")
def map_(self: Tensor, other: Tensor, callable) -> Tensor:
    """``self[i] = callable(self[i], other[i])`` with ``other`` broadcast, in place.

    Example:
        >>> ember.tensor([1.0, 2.0]).map_(ember.tensor([10.0, 20.0]), lambda a, b: a + b)
        tensor([11., 22.])
    """
    from ember.ops.creation import tensor
    b = other.expand(self._shape).reshape(-1).tolist()
    values = [callable(x, y) for x, y in zip(self.reshape(-1).tolist(), b)]
    return self.copy_(tensor(values, dtype=self._dtype).view(self._shape))


def _false_property(name: str, doc: str):
    prop = property(lambda self: False, doc=doc)
    prop.fget.__name__ = name
    return prop


# torch's layout and backend predicates, all False for ember's dense CPU/meta tensors
for _flag in ("is_sparse", "is_sparse_csr", "is_quantized", "is_nested", "is_mkldnn",
              "is_vulkan", "is_xla", "is_xpu", "is_ipu", "is_maia", "is_mtia", "is_mps"):
    if not hasattr(Tensor, _flag):
        setattr(Tensor, _flag, _false_property(_flag, f"False: ember has no {_flag[3:]} tensors."))
Tensor.output_nr = property(lambda self: self._output_nr, doc="Index among its node's outputs.")


# -- top-level helpers ------------------------------------------------------------------------
def typename(obj) -> str:
    """torch's type name of a tensor (``'torch.FloatTensor'``), else the Python type's name.

    Example:
        >>> ember.typename(ember.ones(1)), ember.typename(ember.tensor([1])), ember.typename(3)
        ('torch.FloatTensor', 'torch.LongTensor', 'int')
    """
    if isinstance(obj, Tensor):
        return obj.type()
    module = type(obj).__module__
    name = type(obj).__qualname__
    return name if module in ("builtins", None) else f"{module}.{name}"


def get_device(input: Tensor) -> int:
    """The device index of ``input``: -1 on the CPU.

    Example:
        >>> ember.get_device(ember.ones(1))
        -1
    """
    _require("get_device", input)
    return input.get_device()


def unravel_index(indices, shape) -> tuple:
    """Multi-dimensional indices of flat ``indices`` in a tensor of ``shape``.

    Raises:
        TypeError: ``indices`` is not an integer tensor.

    Example:
        >>> ember.unravel_index(ember.tensor([4, 5]), (2, 3))
        (tensor([1, 1]), tensor([1, 2]))
    """
    from ember.ops.creation import tensor
    if not isinstance(indices, Tensor):
        indices = tensor(indices)
    if indices._dtype.is_floating_point or indices._dtype.is_complex or \
            indices._dtype is dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices._dtype}")
    indices = indices.to(dt.int64)
    shape = normalize_shape((shape,)) if not isinstance(shape, int) else (shape,)
    out = []
    rest = indices
    for size in reversed(shape):
        out.append(rest.remainder(size))
        rest = rest.div(size, rounding_mode="floor")
    return tuple(reversed(out))


e = math.e
pi = math.pi
inf = math.inf
nan = math.nan
newaxis = None

__all__ += ["is_signed", "is_inference", "typename",
            "get_device", "unravel_index", "e", "pi", "inf", "nan", "newaxis"]


# -- Tensor extras ------------------------------------------------------------------------------

@tensor_method("adjoint")
def _adjoint(self: Tensor) -> Tensor:
    """The conjugate transpose of the last two dims (a view; the transpose for reals).

    Example:
        >>> ember.zeros(2, 3).adjoint().shape
        ember.Size([3, 2])
    """
    from ember.ops.views import adjoint
    return adjoint(self)


__all__ += ["as_strided_", "resize_as_"]


Tensor.layout = property(lambda self: strided, doc="The layout: always ``ember.strided``.")
__all__ += ["memory_format", "layout", "contiguous_format", "channels_last", "channels_last_3d",
            "preserve_format", "legacy_contiguous_format", "strided"]


@tensor_method("storage_type")
def storage_type(self: Tensor):
    """The legacy storage class of this tensor's dtype (``ember.FloatStorage``, ...)."""
    return LEGACY_STORAGE_TYPES[f"{self._dtype.scalar_name}Storage"]


@tensor_method("map2_")
def map2_(self: Tensor, x: Tensor, y: Tensor, callable) -> Tensor:
    """``self[i] = callable(self[i], x[i], y[i])`` with ``x``, ``y`` broadcast, in place."""
    from ember.ops.creation import tensor
    xs = x.expand(self._shape).reshape(-1).tolist()
    ys = y.expand(self._shape).reshape(-1).tolist()
    values = [callable(a, b, c) for a, b, c in zip(self.reshape(-1).tolist(), xs, ys)]
    return self.copy_(tensor(values, dtype=self._dtype).view(self._shape))




# -- deprecated non-in-place resize -----------------------------------------------------------
@tensor_method("resize")
def resize(self: Tensor, *sizes) -> Tensor:
    """Deprecated: ``self`` reshaped to ``sizes`` with the same number of elements (warns, as
    torch's non-in-place ``resize``).

    Raises:
        RuntimeError: the element count would change.
    """
    import warnings
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    shape = normalize_shape(sizes)
    n = math.prod(shape)
    if n != self.numel():
        raise RuntimeError(f"requested resize to {'x'.join(map(str, shape))} ({n} elements in "
                           f"total), but the given tensor has a size of "
                           f"{'x'.join(map(str, self._shape))} ({self.numel()} elements). "
                           "autograd's resize can only change the shape of a given tensor, "
                           "while preserving the number of elements. ")
    return self.contiguous().view(shape)


@tensor_method("resize_as")
def resize_as(self: Tensor, tensor: Tensor) -> Tensor:
    """Deprecated: ``self.resize(tensor.shape)`` (warns)."""
    import warnings
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return resize(self, tensor._shape)
