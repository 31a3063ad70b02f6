"""``Tensor.storage()``: an untyped Storage seen as elements of one dtype (torch.TypedStorage).

A TypedStorage holds no bytes of its own: it reads and writes the untyped Storage it wraps, so
a write through it shows in every tensor over that storage. ``share_memory_`` moves a CPU
storage's bytes into shared memory and every tensor over it drops its cached array (NOTE
[Shared storages] in ember/memory/storage.py).
"""

from __future__ import annotations

import gc

import numpy as np

from ember.core import dtype as dt
from ember.memory.storage import Storage

__all__ = ["TypedStorage", "is_shared", "mark_shared", "storage_type_name", "tensor_type_name"]

def is_shared(storage: Storage) -> bool:
    """Whether ``storage``'s bytes live in shared memory (NOTE [Shared storages])."""
    return storage.is_shared()


def mark_shared(storage: Storage) -> None:
    """Move ``storage`` into shared memory and drop the arrays tensors cached over its old
    bytes (NOTE [Shared storages] in ember/memory/storage.py)."""
    if storage.is_shared():
        return
    storage.share_memory_()
    for holder in gc.get_referrers(storage):  # rare and one-off, like torch's copy into shm
        if getattr(holder, "_storage", None) is storage and hasattr(holder, "_arr"):
            holder._arr = None


def _type_prefix(device) -> str:
    return "torch." if device.type == "cpu" else f"torch.{device.type}."


def tensor_type_name(dtype: dt.DType, device) -> str:
    """torch's legacy type name of a tensor, e.g. ``'torch.FloatTensor'``."""
    return f"{_type_prefix(device)}{dtype.scalar_name}Tensor"


def storage_type_name(dtype: dt.DType, device) -> str:
    """torch's legacy type name of a typed storage: ``'torch.FloatStorage'``."""
    return f"{_type_prefix(device)}{dtype.scalar_name}Storage"


class TypedStorage:
    """Elements of ``dtype`` over an untyped :class:`Storage` (``torch.TypedStorage``).

    Args:
        wrap_storage: the untyped storage to view.
        dtype: the element type.

    Example:
        >>> t = ember.tensor([1.0, 2.0]); s = t.storage(); s[0] = 5.0; t.tolist()
        [5.0, 2.0]
    """

    is_sparse = False

    def __init__(self, *, wrap_storage: Storage, dtype: dt.DType):
        self._untyped_storage = wrap_storage
        self.dtype = dtype

    @property
    def device(self):
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    def untyped(self) -> Storage:
        """The untyped storage underneath."""
        return self._untyped_storage

    def size(self) -> int:
        """Number of elements."""
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    __len__ = size

    def nbytes(self) -> int:
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        return self._untyped_storage.data_ptr()

    def type(self) -> str:
        """torch's legacy name, e.g. ``'torch.FloatStorage'``."""
        return storage_type_name(self.dtype, self.device)

    def is_shared(self) -> bool:
        return is_shared(self._untyped_storage)

    def share_memory_(self) -> TypedStorage:
        mark_shared(self._untyped_storage)
        return self

    def _array(self) -> np.ndarray:
        raw = self._untyped_storage.data
        if raw is None:
            raise NotImplementedError("Not available for 'meta' device type")
        n = self.size()
        return raw[:n * self.dtype.itemsize].view(self.dtype.np)

    def _index(self, idx: int) -> int:
        n = self.size()
        if not isinstance(idx, int):
            raise RuntimeError(f"can't index a {type(self).__name__} with "
                               f"{type(idx).__name__}")
        if not -n <= idx < n:
            raise IndexError(f"index {idx} out of range for storage of size {n}")
        return idx % n if n else idx

    def __getitem__(self, idx: int):
        return self._array()[self._index(idx)].item()

    def __setitem__(self, idx: int, value) -> None:
        self._array()[self._index(idx)] = value

    def __iter__(self):
        return iter(self.tolist())

    def tolist(self) -> list:
        """The elements as Python numbers."""
        return [v.item() for v in self._array()] if self.dtype is dt.bfloat16 else \
            self._array().tolist()

    def fill_(self, value) -> TypedStorage:
        self._array()[...] = value
        return self

    def copy_(self, source: TypedStorage, non_blocking: bool = False) -> TypedStorage:
        """Copy ``source``'s elements (same size; cast to this dtype)."""
        src = source._array() if isinstance(source, TypedStorage) else np.asarray(source)
        if src.size != self.size():
            raise RuntimeError(f"size mismatch, {self.size()} != {src.size}")
        self._array()[...] = src.reshape(-1)
        return self

    def cpu(self) -> TypedStorage:
        return self

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist()) if self.device.type != "meta" else \
            " ..."
        return (f"{body}\n[ember.storage.TypedStorage(dtype=ember.{self.dtype.name}, "
                f"device={self.device}) of size {self.size()}]")


class _LegacyStorageType(type):
    """The metaclass of ``ember.FloatStorage`` and its siblings: ``isinstance`` checks the
    dtype of a :class:`TypedStorage`; calling the class makes one (``FloatStorage(3)``
    uninitialised, ``LongStorage([1, 2])`` from data, ``FloatStorage()`` empty)."""

    dtype: dt.DType

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, TypedStorage) and obj.dtype is cls.dtype

    def __call__(cls, data=0, *, device=None) -> TypedStorage:
        from ember.core.device import CPU, as_device
        dev = as_device(device) if device is not None else CPU
        values = None if isinstance(data, int) else np.asarray(data, dtype=cls.dtype.np)
        n = data if values is None else values.size
        storage = TypedStorage(wrap_storage=Storage(n * cls.dtype.itemsize, dev),
                               dtype=cls.dtype)
        if values is not None and n:
            storage._array()[...] = values.reshape(-1)
        return storage

    def __repr__(cls) -> str:
        return f"<class 'ember.{cls.__name__}'>"


def _legacy_storage_doc(d: dt.DType) -> str:
    name = f"{d.scalar_name}Storage"
    return (f"torch's legacy ``{name}``: a :class:`TypedStorage` of {d!r}.\n\n"
            f"Example:\n    >>> s = ember.{name}(3)\n"
            f"    >>> s.size(), s.dtype, isinstance(s, ember.{name})\n"
            f"    (3, {d!r}, True)\n")


LEGACY_STORAGE_TYPES = {
    f"{d.scalar_name}Storage": _LegacyStorageType(f"{d.scalar_name}Storage", (),
                                                  {"dtype": d, "__module__": "ember",
                                                   "__doc__": _legacy_storage_doc(d)})
    for d in dt.ALL_DTYPES if d is not dt.complex32}  # torch has no ComplexHalfStorage
globals().update(LEGACY_STORAGE_TYPES)
__all__ += list(LEGACY_STORAGE_TYPES)
