"""Tensor: metadata over a Storage.

NOTE [Tensor anatomy]
A tensor is ``(storage, shape, stride, offset, dtype, device)``: element ``[i0, ..., ik]``
lives at ``offset + sum(i_d * stride_d)`` elements into the storage. Views share the storage
and the *version counter* of their base; ``_base`` points at the root tensor that owns the
storage (never at an intermediate view). ``_keys``, the dispatch key set, lives on the version
counter, shared with the views.
``_meta_key`` caches (shape, stride, dtype, device, requires_grad) for guards; the few
operations that change metadata in place call ``_set_meta`` so the cache stays true.

This class knows no operators: ``Tensor.add`` and friends are attached by ``ember.ops``
when ember is imported, and call the dispatcher.
"""

from __future__ import annotations

import warnings

import numpy as np

from ember.core import dtype as dt
from ember.core.device import CPU, META, Device
from ember.core.layout import contiguous_strides, is_contiguous, numel, storage_extent
from ember.dispatch import dispatcher as _dispatcher
from ember.dispatch.keys import (
    AUTOGRAD_KEY_OF_DEVICE,
    INFERENCE_TENSOR_KEYS,
    TENSOR_KEYS,
    DispatchKey,
)
from ember.memory.devices import get_backend, guard_state
from ember.memory.storage import Storage, export_array, new_cpu_array

_CHALF = dt.complex32
_CHALF_KEY = DispatchKey.ComplexHalf.bit

__all__ = ["Tensor", "Size", "VersionCounter", "make_tensor", "empty_tensor", "make_view",
           "from_numpy", "numpy_view", "physical_view", "store_resolved"]


class Size(tuple):
    """A tensor's shape: a tuple of ints that prints like ``ember.Size([2, 3])``.

    Example:
        >>> s = ember.zeros(2, 3).shape
        >>> s, s.numel(), s[1], isinstance(s, tuple)
        (ember.Size([2, 3]), 6, 3, True)
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    def numel(self) -> int:
        return numel(self)

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    def __add__(self, other):
        return Size(tuple.__add__(self, tuple(other)))


class VersionCounter:
    """State shared by a tensor and all its views: the version and the dispatch key set.

    ``value`` is bumped by every in-place write. ``keys`` is the dispatch key set of every
    tensor sharing this counter (see NOTE [Autograd keys are earned] in ember/dispatch/keys.py).
    """

    __slots__ = ("value", "keys")

    def __init__(self, value: int = 0, keys: int = 0):
        self.value = value
        self.keys = keys


_NO_ACCELERATOR = "Cannot access accelerator device when none is available."


def _accelerator():
    """The registered accelerator backend descriptor (``cuda``, then ``mps``), or None.

    NOTE [Device namespaces without a device] in ``ember.backends.cuda``.
    """
    from ember.memory import devices

    found = {b.name: b for b in devices.registered_backends()}
    return found.get("cuda") or found.get("mps")


class Tensor:
    """An n-dimensional array over shared storage, with PyTorch's API.

    Create tensors with factories (``ember.tensor``, ``ember.zeros``, ...). ``Tensor(*sizes)``
    and ``Tensor(data)`` work like torch's legacy constructor (float32).

    Example:
        >>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        >>> y = (x * x).sum()
        >>> y.backward()
        >>> x.grad, x.shape, x.dtype
        (tensor([[2., 4.],
                [6., 8.]]), ember.Size([2, 2]), ember.float32)
        >>> ember.Tensor(2, 3).shape  # the legacy constructor: float32, uninitialised
        ember.Size([2, 3])
    """

    __slots__ = ("_storage", "_shape", "_stride", "_offset", "_dtype", "_device",
                 "_ver", "_base", "_requires_grad", "_grad", "grad_fn", "_output_nr", "_arr",
                 "_mkey", "_is_inference", "__dict__", "__weakref__")

    # Set on few tensors (leaves with hooks, views made in no_grad): class-level defaults, so
    # ``make_tensor`` does not store them for every tensor; a tensor that sets one keeps it in
    # its instance dict.
    _hooks = None
    _retains_grad = False
    _accum = None
    _post_hooks = None
    _creation_meta = 0  # 1: output of a multi-view op, 2: view made in no_grad mode
    _is_conj = False  # NOTE [The conjugation bit]
    _is_neg = False  # NOTE [The negative bit]

    def __new__(cls, *args, **kwargs):
        if not args and not kwargs:
            return _dispatcher.get_op("aten::empty")(0)
        if len(args) == 1 and not isinstance(args[0], int):
            return _dispatcher.get_op("aten::tensor")(args[0], dtype=dt.float32)
        return _dispatcher.get_op("aten::empty")(*args, dtype=dt.float32)

    # -- metadata ----------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The size of each dimension, as an ``ember.Size``.

        Example:
            >>> ember.zeros(2, 3).shape
            ember.Size([2, 3])
        """
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """The shape as ``ember.Size``, or the size of one ``dim``.

        Example:
            >>> x = ember.zeros(2, 3)
            >>> x.size(), x.size(1), x.size(-1)
            (ember.Size([2, 3]), 3, 3)
        """
        if dim is None:
            return Size(self._shape)
        return self._shape[_wrap(dim, len(self._shape))]

    def stride(self, dim: int | None = None):
        """Strides in elements, or the stride of one ``dim``.

        Example:
            >>> x = ember.zeros(2, 3)
            >>> x.stride(), x.t().stride(), x.stride(1)
            ((3, 1), (1, 3), 1)
        """
        if dim is None:
            return self._stride
        return self._stride[_wrap(dim, len(self._shape))]

    def storage_offset(self) -> int:
        """Offset of element 0 into the storage, in elements.

        Example:
            >>> ember.arange(6)[2:].storage_offset()
            2
        """
        return self._offset

    def dim(self) -> int:
        """Number of dimensions (``ndim``, ``ndimension()``).

        Example:
            >>> ember.zeros(2, 3, 4).dim(), ember.zeros(2, 3, 4).ndimension()
            (3, 3)
        """
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        """Number of dimensions (a property).

        Example:
            >>> ember.zeros(2, 3).ndim
            2
        """
        return len(self._shape)

    def numel(self) -> int:
        """Number of elements (``nelement()``).

        Example:
            >>> ember.zeros(2, 3).numel(), ember.zeros(2, 3).nelement()
            (6, 6)
        """
        return numel(self._shape)

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element.

        Example:
            >>> ember.ones(1).element_size(), ember.ones(1, dtype=ember.float16).element_size()
            (4, 2)
        """
        return self._dtype.itemsize

    @property
    def itemsize(self) -> int:
        """Bytes per element (a property).

        Example:
            >>> ember.ones(1, dtype=ember.float64).itemsize
            8
        """
        return self._dtype.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes the elements take (``numel() * itemsize``).

        Example:
            >>> ember.ones(2, 3).nbytes
            24
        """
        return numel(self._shape) * self._dtype.itemsize

    @property
    def dtype(self) -> dt.DType:
        """The element type.

        Example:
            >>> ember.tensor([1, 2]).dtype, ember.tensor([1.0]).dtype, ember.tensor([True]).dtype
            (ember.int64, ember.float32, ember.bool)
        """
        return self._dtype

    @property
    def device(self) -> Device:
        """The device the tensor's storage lives on.

        Example:
            >>> ember.ones(2).device, ember.ones(2, device="meta").device
            (device(type='cpu'), device(type='meta'))
        """
        return self._device

    @property
    def is_meta(self) -> bool:
        """Whether the tensor lives on the ``meta`` device (shapes, no data).

        Example:
            >>> ember.empty(3, device="meta").is_meta
            True
        """
        return self._device is META

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor lives on the CPU.

        Example:
            >>> ember.ones(1).is_cpu, ember.ones(1, device="meta").is_cpu
            (True, False)
        """
        return self._device is CPU

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor lives on a CUDA device.

        Example:
            >>> ember.ones(1).is_cuda
            False
        """
        return self._device.type == "cuda"

    def cuda(self, device=None, non_blocking: bool = False, memory_format=None) -> Tensor:
        """This tensor on a CUDA device (``torch.Tensor.cuda``); ``self`` if already there.

        ``device`` is an index, a string or a Device (None: the current CUDA device). Without
        a CUDA backend this raises torch's ``AssertionError`` ("not compiled with CUDA
        enabled"; NOTE [Device namespaces without a device] in ``ember.backends.cuda``).
        """
        if device is None:
            target = Device("cuda")
        elif isinstance(device, int):
            if _accelerator() is None:  # torch selects the device first, and fails there
                raise RuntimeError(_NO_ACCELERATOR)
            target = Device("cuda", device)
        else:
            target = Device(device)
            if target.type != "cuda":
                raise RuntimeError(f"Invalid device, must be cuda device; got {target}")
        if self._device.type == "cuda" and (target.index is None or target == self._device):
            return self
        return self.to(target, non_blocking=non_blocking)

    def pin_memory(self, device=None) -> Tensor:
        """A copy in page-locked host memory for fast copies to an accelerator.

        The accelerator's backend descriptor pins (its ``extra["pin_memory"]`` hook; a backend
        without one gives a plain contiguous copy). Without an accelerator backend this raises
        torch's ``RuntimeError``.

        Example:
            >>> try:  # page-locked memory needs an accelerator
            ...     ember.ones(2).pin_memory()
            ... except RuntimeError as e:
            ...     print(e)
            Cannot access accelerator device when none is available.
        """
        backend = _accelerator()
        if backend is None:
            raise RuntimeError(_NO_ACCELERATOR)
        hook = backend.extra.get("pin_memory")
        return hook(self) if hook is not None else self.clone()

    def is_pinned(self, device=None) -> bool:
        """Whether this tensor lives in page-locked host memory (the accelerator backend's
        ``extra["is_pinned"]`` hook says; False without one).

        Example:
            >>> ember.ones(1).is_pinned()
            False
        """
        backend = _accelerator()
        hook = None if backend is None else backend.extra.get("is_pinned")
        return bool(hook(self)) if hook is not None else False

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating-point type.

        Example:
            >>> ember.ones(1).is_floating_point(), ember.tensor([1]).is_floating_point()
            (True, False)
        """
        return self._dtype.is_floating_point

    def is_complex(self) -> bool:
        """Whether the dtype is complex (complex64 or complex128).

        Example:
            >>> ember.ones(1).is_complex(), ember.tensor([1j]).is_complex()
            (False, True)
        """
        return self._dtype.is_complex

    def is_signed(self) -> bool:
        """Whether the dtype is signed.

        Example:
            >>> ember.tensor([1]).is_signed(), ember.tensor([1], dtype=ember.uint8).is_signed()
            (True, False)
        """
        return self._dtype.is_signed

    def get_device(self) -> int:
        """The device index: -1 for CPU tensors, as torch.

        Example:
            >>> ember.ones(1).get_device()
            -1
        """
        return -1 if self._device.type == "cpu" else (self._device.index or 0)

    def is_contiguous(self, memory_format=None) -> bool:
        """PyTorch's rule: size-1 dims may have any stride; empty tensors are contiguous.

        Example:
            >>> x = ember.zeros(2, 3)
            >>> x.is_contiguous(), x.t().is_contiguous()
            (True, False)
        """
        return is_contiguous(self._shape, self._stride)

    def untyped_storage(self) -> Storage:
        """The untyped storage (bytes) under the tensor, shared with its views.

        Example:
            >>> x = ember.arange(4, dtype=ember.int32)
            >>> s = x[2:].untyped_storage()
            >>> s.nbytes(), s.data_ptr() == x.untyped_storage().data_ptr()
            (16, True)
        """
        return self._storage

    def data_ptr(self) -> int:
        """Address of element 0 (storage pointer plus offset in bytes).

        Example:
            >>> x = ember.arange(4)
            >>> x[1:].data_ptr() - x.data_ptr() == x.element_size()
            True
        """
        return self._storage.data_ptr() + self._offset * self._dtype.itemsize

    @property
    def _version(self) -> int:
        if self._is_inference:
            raise RuntimeError("Inference tensors do not track version counter.")
        return self._ver.value

    @property
    def _keys(self) -> int:
        """This tensor's dispatch key set (shared with its views)."""
        return self._ver.keys

    def _bump_version(self) -> None:
        self._ver.value += 1

    def _is_view(self) -> bool:
        return self._base is not None

    def is_inference(self) -> bool:
        """Whether the tensor was created in ``inference_mode``.

        Example:
            >>> with ember.inference_mode():
            ...     x = ember.ones(1)
            >>> x.is_inference(), ember.ones(1).is_inference()
            (True, False)
        """
        return self._is_inference

    @property
    def data(self) -> Tensor:
        """The same memory outside autograd, with a version counter of its own (torch's .data).

        Example:
            >>> w = ember.ones(2, requires_grad=True)
            >>> _ = w.data.mul_(3)  # changes w without autograd recording it
            >>> w.data.requires_grad, w
            (False, tensor([3., 3.], requires_grad=True))
        """
        out = make_tensor(self._storage, self._shape, self._stride, self._offset, self._dtype,
                          self._device)
        out._is_inference = self._is_inference
        if self._is_conj:
            out._is_conj = True
        if self._is_neg:
            out._is_neg = True
        return out

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        self._storage, self._dtype, self._device = value._storage, value._dtype, value._device
        self._ver.keys |= TENSOR_KEYS[value._device.type]
        self._set_meta(value._shape, value._stride, value._offset)

    @property
    def grad(self) -> Tensor | None:
        """The accumulated gradient of a leaf (None until a backward reaches it).

        Example:
            >>> x = ember.tensor([1.0, 2.0], requires_grad=True)
            >>> x.grad is None
            True
            >>> (x * x).sum().backward(); x.grad
            tensor([2., 4.])
        """
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                                f"type {type(value).__name__}")
            if value._dtype is not self._dtype:
                raise TypeError("assigned grad has data of a different type")
            if value._device != self._device:
                raise RuntimeError("assigned grad has data located on a different device")
            if value._shape != self._shape:
                raise RuntimeError("assigned grad has data of a different size")
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        """Whether autograd records operations on this tensor; settable on leaves.

        Example:
            >>> x = ember.ones(2)
            >>> x.requires_grad
            False
            >>> x.requires_grad = True
            >>> (x * 2).requires_grad
            True
        """
        return self._requires_grad or self.grad_fn is not None

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self.requires_grad_(value)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set ``requires_grad`` on a leaf; only floating tensors can require gradients.

        Example:
            >>> x = ember.ones(2).requires_grad_()
            >>> x.requires_grad, x.requires_grad_(False).requires_grad
            (True, False)
        """
        if requires_grad and not self._dtype.is_differentiable:
            raise RuntimeError("only Tensors of floating point and complex dtype can require "
                               "gradients")
        if requires_grad and self._is_inference and not _dispatcher.dispatch_state().inference:
            raise RuntimeError("Setting requires_grad=True on inference tensor outside "
                               "InferenceMode is not allowed.")
        if self.grad_fn is not None and not requires_grad:
            raise RuntimeError("you can only change requires_grad flags of leaf variables. If "
                               "you want to use a computed variable in a subgraph that doesn't "
                               "require differentiation use var_no_grad = var.detach().")
        self._requires_grad = bool(requires_grad)
        if requires_grad:
            self._ver.keys |= 1 << AUTOGRAD_KEY_OF_DEVICE[self._device.type]
        self._mkey = None
        return self

    @property
    def is_leaf(self) -> bool:
        """Whether the tensor has no ``grad_fn`` (created by the user, not by a recorded op).

        Example:
            >>> x = ember.ones(2, requires_grad=True)
            >>> x.is_leaf, (x * 2).is_leaf, ember.ones(2).is_leaf
            (True, False, True)
        """
        return self.grad_fn is None

    @property
    def _meta_key(self) -> tuple:
        key = self._mkey
        if key is None:
            key = self._mkey = (self._shape, self._stride, self._dtype, self._device,
                                self._requires_grad)
        return key

    def _set_meta(self, shape, stride, offset) -> None:
        """Change this tensor's geometry in place (``as_strided_``, ``set_``, ``squeeze_``)."""
        self._shape, self._stride, self._offset = tuple(shape), tuple(stride), offset
        self._arr = None
        self._mkey = None

    # -- data access --------------------------------------------------------------------------
    def numpy(self, *, force: bool = False) -> np.ndarray:
        """A NumPy array sharing this tensor's memory (the array keeps the storage alive).

        Example:
            >>> x = ember.tensor([1.0, 2.0])
            >>> a = x.numpy()
            >>> a[0] = 5.0  # shares memory with x
            >>> x, a.dtype
            (tensor([5., 2.]), dtype('float32'))
        """
        if self._device is not CPU:
            raise TypeError(f"can't convert {self._device.type} device type tensor to numpy. "
                            "Use Tensor.cpu() to copy the tensor to host memory first.")
        if self._requires_grad and not force:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if self._dtype is _CHALF:
            raise TypeError("Got unsupported ScalarType ComplexHalf")
        if self._is_conj or self._is_neg:
            if not force:
                _refuse_bits(self)
            return numpy_view(self)
        return user_array(self)

    def __array__(self, dtype=None, copy=None):
        if self._dtype is _CHALF:
            raise TypeError("Got unsupported ScalarType ComplexHalf")
        _refuse_bits(self)
        arr = user_array(self)
        return arr if dtype is None else arr.astype(dtype)

    def item(self):
        """The value of a one-element tensor as a Python number.

        Example:
            >>> ember.tensor([[2.5]]).item(), ember.tensor(3).item()
            (2.5, 3)
        """
        if numel(self._shape) != 1:
            raise RuntimeError(f"a Tensor with {numel(self._shape)} elements cannot be "
                               "converted to Scalar")
        value = numpy_view(self).reshape(()).item() if self._dtype is not dt.bfloat16 else \
            float(numpy_view(self).reshape(()))
        return value

    def tolist(self):
        """Nested Python lists of Python numbers (a scalar for a 0-d tensor).

        Example:
            >>> ember.tensor([[1, 2], [3, 4]]).tolist()
            [[1, 2], [3, 4]]
            >>> ember.tensor(0.5).tolist()
            0.5
        """
        if self._device is META:
            raise NotImplementedError("Cannot copy out of meta tensor; no data!")
        arr = numpy_view(self)
        if self._dtype is dt.bfloat16:
            arr = arr.astype(np.float32)
        return arr.tolist()

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if numel(self._shape) != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __index__(self) -> int:
        if self._dtype.is_floating_point or numel(self._shape) != 1:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self, *, tensor_contents=None) -> str:
        from ember.tensor.printing import tensor_repr
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if not self._shape and self._device is not META:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    def __dlpack__(self, stream=None, **kwargs):
        """A DLPack capsule sharing this tensor's memory (every ember dtype, bfloat16 included)."""
        if self._requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use "
                               "tensor.detach()")
        from ember.tensor.interop import to_dlpack
        return to_dlpack(self, **kwargs)

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU

    def __reduce_ex__(self, protocol):
        return (from_numpy, (np.array(numpy_view(self)),))

    def __deepcopy__(self, memo):
        out = self.clone()
        memo[id(self)] = out
        return out


def _wrap(dim: int, ndim: int) -> int:
    from ember.core.layout import canonical_dim
    return canonical_dim(dim, ndim)


_dispatcher.set_tensor_type(Tensor)
_new = object.__new__
_guard = guard_state


def make_tensor(storage: Storage, shape: tuple, stride: tuple, offset: int, dtype: dt.DType,
                device: Device, *, base: Tensor | None = None, version: VersionCounter = None,
                cls: type = Tensor) -> Tensor:
    """The fast internal constructor: no validation, no allocation."""
    t = _new(cls)
    t._storage = storage
    t._shape = shape
    t._stride = stride
    t._offset = offset
    t._dtype = dtype
    t._device = device
    if version is None:  # a new counter, built without a call to ``__init__``
        version = _new(VersionCounter)
        version.value = 0
        if _dispatcher._state.inference:
            t._is_inference = True
            version.keys = INFERENCE_TENSOR_KEYS[device.type]
        else:
            t._is_inference = False
            version.keys = TENSOR_KEYS[device.type]
    else:
        t._is_inference = _dispatcher._state.inference
    if dtype is _CHALF:  # NOTE [complex32 storage]; a view of a float16 base gives it the key
        version.keys |= _CHALF_KEY
    t._ver = version
    t._base = base
    t._requires_grad = False
    t._grad = None
    t.grad_fn = None
    t._output_nr = 0
    t._arr = None
    t._mkey = None
    return t


def empty_tensor(shape: tuple, dtype: dt.DType, device: Device | None = None,
                 stride: tuple | None = None) -> Tensor:
    """A new tensor with fresh storage (contiguous unless ``stride`` is given).

    ``device`` None means the allocation device: ``cpu``, or the device whose borrowed kernel
    is running (NOTE [Kernels are found by the registry] in ember/memory/devices.py).
    """
    if device is None:
        device = _guard.device
    if stride is None:
        if device is CPU and dtype is not _CHALF:
            # Hot path: a block from the caching allocator, typed as the tensor's own array.
            n = dtype.itemsize
            for d in shape:
                n *= d
            st, buf = new_cpu_array(n, shape, dtype.np)
            # make_tensor(st, shape, contiguous_strides(shape), 0, dtype, CPU), inlined
            t = _new(Tensor)
            t._storage = st
            t._shape = shape
            t._stride = contiguous_strides(shape)
            t._offset = 0
            t._dtype = dtype
            t._device = CPU
            version = _new(VersionCounter)
            version.value = 0
            if _dispatcher._state.inference:
                t._is_inference = True
                version.keys = INFERENCE_TENSOR_KEYS["cpu"]
            else:
                t._is_inference = False
                version.keys = TENSOR_KEYS["cpu"]
            t._ver = version
            t._base = None
            t._requires_grad = False
            t._grad = None
            t.grad_fn = None
            t._output_nr = 0
            t._arr = buf
            t._mkey = None
            return t
        stride = contiguous_strides(shape)
    # int(): symbolic sizes of the compiler (int subclasses) stop at the allocator
    nbytes = int(storage_extent(shape, stride, 0)) * dtype.itemsize
    return make_tensor(Storage(nbytes, device), shape, stride, 0, dtype, device)


def make_view(src: Tensor, shape: tuple, stride: tuple, offset: int,
              dtype: dt.DType | None = None) -> Tensor:
    """A view of ``src``'s storage: shares the storage and the version counter."""
    root = src._base if src._base is not None else src
    out = make_tensor(src._storage, shape, stride, offset, dtype or src._dtype, src._device,
                      base=root, version=src._ver)
    out._is_inference = src._is_inference
    if src._is_conj:
        out._is_conj = True
    if src._is_neg:
        out._is_neg = True
    return out


def _refuse_bits(t: Tensor) -> None:
    """torch's ``numpy()`` refusal of a tensor whose values are not its stored ones."""
    if t._is_conj:
        raise RuntimeError("Can't call numpy() on Tensor that has conjugate bit set. "
                           "Use tensor.resolve_conj().numpy() instead.")
    if t._is_neg:
        raise RuntimeError("Can't call numpy() on Tensor that has negative bit set. "
                           "Use tensor.resolve_neg().numpy() instead.")


# NOTE [The conjugation bit]
# ``conj()`` of a complex tensor is a view with ``_is_conj`` set (in its instance dict; the
# class default is False): the same storage, whose values read as the conjugates of what is
# stored. Views of it inherit the bit. Kernels never see the bit: ``numpy_view`` hands them a
# conjugated copy (never cached, so it is fresh whenever read) and kernels that write into a
# tensor with the bit write the conjugates (``copy_``; in-place ops go through it). Real
# tensors never carry the bit, and the cached-array fast path below never reads it.

# NOTE [The negative bit]
# torch's second lazy bit: a view whose values read as the negations of what is stored
# (``_neg_view``). ``x.conj().imag`` is such a view of ``x``'s imaginary parts, which is how
# writes through it reach ``x`` with the sign applied. It is built exactly like the
# conjugation bit (``_is_neg`` in the instance dict, inherited by views, resolved by
# ``numpy_view``, honoured by writers through ``physical_view``) and composes with it: a
# complex tensor may carry both, and then reads ``-conj(stored)``. Any dtype but bool may carry
# it (uint8 wraps, as torch's negation does).


def numpy_view(t: Tensor) -> np.ndarray:
    """The array over ``t``'s memory (cached on the tensor; kernels use this).

    A NumPy array on ``cpu``; on another device, an array of its backend's array module
    (``DeviceBackend.as_array``; NOTE [Backend descriptors] in ember/memory/devices.py).
    """
    arr = t._arr
    if arr is None:
        dev = t._device
        if dev is META:
            raise RuntimeError("Tensor on the meta device has no data; this operation needs data")
        item = t._dtype.itemsize
        shape, stride = t._shape, t._stride
        if t._dtype is _CHALF:
            return _resolved(_chalf_pairs(t), t._is_conj, t._is_neg, chalf=True)
        if 0 in shape:  # no elements
            arr = np.empty(shape, t._dtype.np) if dev is CPU else \
                get_backend(dev.type).array_module.empty(shape, t._dtype.np)
        else:
            n = len(stride)  # byte strides; the common ranks without a comprehension frame
            strides = (stride[0] * item, stride[1] * item) if n == 2 else \
                (stride[0] * item,) if n == 1 else [s * item for s in stride]
            if dev is CPU:
                arr = np.ndarray(shape, t._dtype.np, buffer=t._storage._buf,
                                 offset=t._offset * item, strides=strides)
            else:
                arr = get_backend(dev.type).as_array(t._storage._buf, shape, t._dtype.np,
                                                     t._offset * item, tuple(strides))
        if t._is_conj or t._is_neg:
            return _resolved(arr, t._is_conj, t._is_neg)
        t._arr = arr
    return arr


# NOTE [complex32 storage]
# A complex32 (chalf) element is two float16s, (real, imag), and NumPy has no type for it:
# ``_chalf_pairs`` is the storage seen as float16 with a trailing dim of 2 (strides in
# float16 units, as ``view_as_real``). Kernels read a chalf tensor as a fresh complex64 array
# (``numpy_view``, never cached, like a tensor with lazy bits), and writers encode through
# ``store_resolved``, rounding each part to float16 (torch's rounding: to nearest even).
# Operators reach chalf tensors through the ``ComplexHalf`` dispatch key
# (ember/backends/complex32.py), which computes torch's supported set in complex64.


_chalf_warned = False


def warn_chalf() -> None:
    """torch's once-per-process warning on the first complex32 tensor a user makes (factories
    and casts call it; internal probes do not)."""
    global _chalf_warned
    if _chalf_warned:
        return
    _chalf_warned = True
    warnings.warn("ComplexHalf support is experimental and many operators don't support it "
                  "yet.", UserWarning, stacklevel=3)


def _chalf_pairs(t: Tensor) -> np.ndarray:
    """The float16 (real, imag) pairs under a complex32 tensor (writable), shaped
    ``(*t.shape, 2)``."""
    shape, stride = t._shape, t._stride
    if t._device is not CPU:
        raise RuntimeError(f"complex32 tensors are supported on cpu only; got {t._device.type}")
    if 0 in shape:
        return np.empty((*shape, 2), np.float16)
    return np.ndarray((*shape, 2), np.float16, buffer=t._storage._buf, offset=t._offset * 4,
                      strides=(*(s * 4 for s in stride), 2))


def _resolved(arr, conj: bool, neg: bool, chalf: bool = False):
    """A fresh read-only array of the values a tensor with these bits reads (``chalf``: ``arr``
    holds complex32 pairs, decoded to complex64)."""
    if neg and arr.dtype == np.bool_:
        raise NotImplementedError("\"neg_cpu\" not implemented for 'Bool'")
    if chalf:
        out = np.empty(arr.shape[:-1], np.complex64)
        out.real, out.imag = arr[..., 0], arr[..., 1]
        arr = out
    elif conj or neg:
        out = np.empty(arr.shape, arr.dtype) if isinstance(arr, np.ndarray) else arr.copy()
    if conj:
        np.conjugate(arr, out=out)
    if neg:
        np.negative(out if conj else arr, out=out)
    if isinstance(out, np.ndarray):
        out.flags.writeable = False  # a write here would be lost: writers use physical_view
    return out


def physical_view(t: Tensor) -> np.ndarray:
    """The array over ``t``'s memory as stored, ignoring the conjugation and negative bits
    (writers of such views use it; NOTE [The conjugation bit], NOTE [The negative bit]); for a
    complex32 tensor, its float16 pairs (NOTE [complex32 storage])."""
    if t._dtype is _CHALF:
        return _chalf_pairs(t)
    conj, neg = t._is_conj, t._is_neg
    if not conj and not neg:
        return numpy_view(t)
    d = t.__dict__
    d["_is_conj"] = d["_is_neg"] = False
    try:
        arr = numpy_view(t)
    finally:
        t._arr = None
        d["_is_conj"], d["_is_neg"] = conj, neg
    return arr


def store_resolved(t: Tensor, values) -> None:
    """Write ``values`` (what ``t`` should read) into ``t``'s memory, undoing its bits."""
    dst = physical_view(t)
    if t._is_conj:
        values = np.conjugate(values)
    if t._is_neg:
        values = np.negative(values)
    if t._dtype is _CHALF:  # each part rounded to float16 (NOTE [complex32 storage])
        values = np.broadcast_to(np.asarray(values), t._shape)
        with np.errstate(over="ignore", invalid="ignore"):
            dst[..., 0] = values.real
            dst[..., 1] = values.imag if np.iscomplexobj(values) else 0
        return
    dst[...] = values


array_view = numpy_view  # the device-neutral name


def user_array(t: Tensor) -> np.ndarray:
    """A NumPy array over ``t``'s memory for a user: it keeps the storage's block allocated.

    See NOTE [Arrays handed to users keep the block] in ember/memory/storage.py.
    """
    if t._device is CPU and numel(t._shape):
        item = t._dtype.itemsize
        arr = export_array(t._storage, t._shape, t._dtype.np, t._offset * item,
                           tuple(s * item for s in t._stride))
        if arr is not None:
            return arr
    return numpy_view(t)


def from_numpy(arr: np.ndarray) -> Tensor:
    """A tensor sharing ``arr``'s memory (``torch.from_numpy``); writes show up on both sides.

    The memory stays NumPy's: it is not counted by ``ember.memory`` statistics (NOTE [Foreign
    memory] in ember/memory/storage.py).

    Raises:
        TypeError: the dtype has no ember equivalent.
        ValueError: a stride is negative or not a multiple of the element size.

    Example:
        >>> import numpy as np
        >>> a = np.arange(3, dtype=np.int64)
        >>> t = ember.from_numpy(a)
        >>> t[0] = 7
        >>> a, t.dtype
        (array([7, 1, 2]), ember.int64)
    """
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(arr).__name__})")
    dtype = dt.from_numpy_dtype(arr.dtype)
    item = dtype.itemsize
    if any(s < 0 for s in arr.strides):
        raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                         "with negative strides are not currently supported. (You can probably "
                         "work around this by making a copy of your array  with array.copy().) ")
    if any(s % item for s in arr.strides):
        raise ValueError("given numpy array strides not a multiple of the element byte size. "
                         "Copy the numpy array to reallocate the memory.")
    shape = tuple(arr.shape)
    stride = tuple(s // item for s in arr.strides)
    extent = storage_extent(shape, stride, 0) * item
    if extent:
        # A 1-d byte view over the whole extent whose base chain keeps ``arr`` alive.
        flat = np.lib.stride_tricks.as_strided(arr, shape=(extent // item,), strides=(item,))
        raw = flat.view(np.uint8)
    else:
        raw = np.empty(0, np.uint8)
    storage = Storage.wrap(raw, owner=arr)
    return make_tensor(storage, shape, stride, 0, dtype, CPU)
