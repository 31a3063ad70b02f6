"""Zero-copy exchange with other array libraries through DLPack.

``from_dlpack`` imports any CPU ``__dlpack__`` producer (NumPy, PyTorch, ember itself) and
``to_dlpack`` exports an ember tensor; both share memory, never copy. Importing reads the
capsule's ``DLTensor`` directly (so every ember dtype, bfloat16 included, arrives writable);
exporting uses NumPy's exporter and adds what it lacks, bfloat16.

NOTE [DLPack capsule ownership]
An imported capsule is read but not renamed "used_...": it stays the producer's, and its own
destructor calls the producer's deleter when the capsule dies. The capsule is kept alive by a
small buffer object at the root of the storage's NumPy ``base`` chain, so it dies only after
the last tensor or array that can see the memory.

NOTE [bfloat16 over DLPack]
NumPy refuses to export ``ml_dtypes.bfloat16``. ``to_dlpack`` exports the same bytes as uint16
and rewrites the fresh, still unconsumed capsule's ``DLDataType`` to bfloat16 (same size);
data pointer, shape, strides and deleter stay untouched.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ember.core import dtype as dt
from ember.core.device import CPU
from ember.core.layout import contiguous_strides, storage_extent
from ember.memory.storage import Storage

__all__ = ["from_dlpack", "to_dlpack"]

# DLDataTypeCode values and flags (dlpack.h).
_DL_INT, _DL_UINT, _DL_FLOAT, _DL_BFLOAT, _DL_BOOL = 0, 1, 2, 4, 6
_DL_CPU = 1
_FLAG_READ_ONLY = 1
_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
_DTYPES = {
    (_DL_INT, 8): dt.int8, (_DL_INT, 16): dt.int16, (_DL_INT, 32): dt.int32,
    (_DL_INT, 64): dt.int64, (_DL_UINT, 8): dt.uint8, (_DL_FLOAT, 16): dt.float16,
    (_DL_FLOAT, 32): dt.float32, (_DL_FLOAT, 64): dt.float64, (_DL_BFLOAT, 16): dt.bfloat16,
    (_DL_BOOL, 8): dt.bool_,
}
_CODE_NAMES = {_DL_INT: "int", _DL_UINT: "uint", _DL_FLOAT: "float", 3: "opaque handle",
               _DL_BFLOAT: "bfloat", 5: "complex", _DL_BOOL: "bool"}


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device_type", ctypes.c_int32),
                ("device_id", ctypes.c_int32), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensorVersioned(ctypes.Structure):
    # DLPack >= 1.0: the DLTensor comes after version, manager_ctx, deleter and flags.
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _DLTensor)]


_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype, _get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype, _get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]


def _dl_tensor(capsule) -> tuple[_DLTensor, int]:
    """The ``DLTensor`` inside an unconsumed DLPack capsule (legacy or versioned), and flags."""
    name = _get_name(capsule)
    if name not in (_LEGACY, _VERSIONED):
        raise ValueError(f"from_dlpack: expected an unconsumed DLPack capsule; got a capsule "
                         f"named {name!r} (a capsule can be consumed only once)")
    ptr = _get_pointer(capsule, name)
    if name == _VERSIONED:
        managed = _DLManagedTensorVersioned.from_address(ptr)
        return managed.dl_tensor, managed.flags
    return _DLTensor.from_address(ptr), 0  # a DLManagedTensor starts with its DLTensor


class _CapsuleBuffer:
    """Bytes of a capsule's memory as a NumPy buffer; keeps the capsule alive.

    NOTE [DLPack capsule ownership]
    """

    def __init__(self, capsule, address: int, nbytes: int, readonly: bool):
        self.capsule = capsule
        self.__array_interface__ = {"data": (address, readonly), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}


def _is_capsule(obj) -> bool:
    return type(obj).__name__ == "PyCapsule"


def _check_cpu(kind: int) -> None:
    if kind != _DL_CPU:
        raise RuntimeError(f"from_dlpack: only CPU memory (DLPack device type {_DL_CPU}) can be "
                           f"imported; got device type {kind}")


def _dl_dtype(info: _DLTensor) -> dt.DType:
    code, bits, lanes = info.dtype.code, info.dtype.bits, info.dtype.lanes
    found = _DTYPES.get((code, bits)) if lanes == 1 else None
    if found is None:
        kind = _CODE_NAMES.get(code, f"code {code}")
        raise TypeError(f"from_dlpack: unsupported DLPack dtype {kind}{bits}"
                        f"{f'x{lanes}' if lanes != 1 else ''}; ember supports float64, float32, "
                        "float16, bfloat16, int64, int32, int16, int8, uint8 and bool")
    return found


def _capsule_tensor(capsule):
    """An ember tensor over a capsule's memory (NOTE [DLPack capsule ownership])."""
    from ember.tensor.tensor import make_tensor
    info, flags = _dl_tensor(capsule)
    _check_cpu(info.device_type)
    dtype = _dl_dtype(info)
    shape = tuple(info.shape[i] for i in range(info.ndim))
    if info.strides:
        stride = tuple(info.strides[i] for i in range(info.ndim))
    else:
        stride = contiguous_strides(shape)
    if any(s < 0 for s in stride):
        raise ValueError(f"from_dlpack: negative strides are not supported; got {stride}")
    nbytes = storage_extent(shape, stride, 0) * dtype.itemsize
    if nbytes:
        address = (info.data or 0) + info.byte_offset
        holder = _CapsuleBuffer(capsule, address, nbytes, bool(flags & _FLAG_READ_ONLY))
        raw = np.asarray(holder)
    else:
        raw = np.empty(0, np.uint8)
    return make_tensor(Storage.from_buffer(raw, owner=capsule), shape, stride, 0, dtype, CPU)


def _producer_capsule(obj):
    device = getattr(obj, "__dlpack_device__", None)
    if device is not None:
        _check_cpu(int(device()[0]))
    try:  # a versioned capsule can say "read-only"; a legacy one cannot
        return obj.__dlpack__(max_version=(1, 0))
    except TypeError:
        return obj.__dlpack__()


def from_dlpack(ext_tensor):
    """A tensor sharing memory with a DLPack producer (``torch.from_dlpack``).

    Args:
        ext_tensor: an object with ``__dlpack__`` (a NumPy array, a torch CPU tensor, an ember
            tensor, ...) or an unconsumed DLPack capsule.

    Returns:
        An ember tensor on ``cpu`` with the producer's shape, strides and dtype; writes on
        either side are visible on the other.

    Raises:
        TypeError: the dtype has no ember equivalent (complex, uint16, ...).
        ValueError: a stride is negative, or the capsule was already consumed.
        RuntimeError: the memory is not on the CPU.

    Example:
        >>> import numpy as np, ember
        >>> a = np.arange(3.0)
        >>> t = ember.from_dlpack(a)
        >>> a[0] = 7.0
        >>> t
        tensor([7., 1., 2.], dtype=ember.float64)
    """
    from ember.tensor.tensor import Tensor
    if isinstance(ext_tensor, Tensor):
        capsule = to_dlpack(ext_tensor, max_version=(1, 0))
    elif _is_capsule(ext_tensor):
        capsule = ext_tensor
    elif hasattr(ext_tensor, "__dlpack__"):
        capsule = _producer_capsule(ext_tensor)
    else:
        raise TypeError(f"from_dlpack: expected an object with __dlpack__ or a DLPack capsule; "
                        f"got {type(ext_tensor).__name__}")
    return _capsule_tensor(capsule)


def to_dlpack(tensor, **kwargs):
    """A DLPack capsule sharing ``tensor``'s memory (every ember dtype, bfloat16 included).

    ``kwargs`` are NumPy's ``__dlpack__`` keywords (``max_version``, ``dl_device``, ``copy``).

    Raises:
        RuntimeError: the tensor requires grad, or lives on a device without data (meta).
        BufferError: the tensor has the conjugate or negative bit set (torch refuses the
            former; ember refuses both rather than export stored values that read otherwise).
    """
    from ember.tensor.tensor import user_array
    if tensor._requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    if tensor._device.type != "cpu":
        raise RuntimeError(f"to_dlpack: only cpu tensors can be exported; got a "
                           f"{tensor._device.type} tensor")
    if tensor._is_conj or tensor._is_neg:  # DLPack has no bits: the stored values would leak
        raise BufferError("Can't export tensors with the "
                          f"{'conjugate' if tensor._is_conj else 'negative'} bit set")
    kwargs.pop("stream", None)
    arr = user_array(tensor)  # its base holds the storage: the block outlives the capsule's use
    if tensor._dtype is not dt.bfloat16:
        return arr.__dlpack__(**kwargs)
    capsule = arr.view(np.uint16).__dlpack__(**kwargs)
    _dl_tensor(capsule)[0].dtype.code = _DL_BFLOAT  # NOTE [bfloat16 over DLPack]
    return capsule
