"""Storage: a contiguous block of bytes on a device, shared by every view of it.

NOTE [Storage owns bytes, not elements]
A Storage is untyped: tensors interpret its bytes through (dtype, shape, stride, offset). On
``cpu`` the bytes live in a NumPy array (``_buf``); a fresh tensor's storage may hold that
array typed and shaped as the tensor that asked for it, which saves a reinterpretation on
the hot path, and ``data`` gives the flat ``uint8`` view whenever bytes are wanted. On
``meta`` there are no bytes at all, only a size. The data pointer never changes; it is read
from NumPy once, on first request, and kept. ``_owner`` keeps foreign memory alive (a NumPy
array passed to ``from_numpy``, a DLPack producer).
"""

from __future__ import annotations

import numpy as np

from ember.core.device import CPU, META, Device

__all__ = ["Storage", "UntypedStorage"]


class Storage:
    """Untyped bytes on a device (``torch.UntypedStorage``).

    Args:
        nbytes: size in bytes.
        device: where the bytes live; ``meta`` storages hold no data.
    """

    __slots__ = ("_buf", "_bytes", "_nbytes", "_device", "_ptr", "_owner", "__weakref__")

    def __init__(self, nbytes: int, device: Device = CPU):
        self._nbytes = nbytes
        self._device = device
        self._owner = None
        self._ptr = None
        self._bytes = None
        self._buf = None if device is META else np.empty(nbytes, np.uint8)

    @classmethod
    def wrap(cls, buf: np.ndarray, owner=None) -> Storage:
        """A CPU storage over a C-contiguous NumPy array (any dtype/shape), without copying."""
        st = object.__new__(cls)
        st._buf = buf
        st._bytes = None
        st._nbytes = buf.nbytes
        st._device = CPU
        st._ptr = None
        st._owner = owner
        return st

    from_buffer = wrap

    @property
    def data(self) -> np.ndarray | None:
        """The bytes as a flat ``uint8`` NumPy array (None on meta)."""
        b = self._bytes
        if b is None and self._buf is not None:
            buf = self._buf
            b = self._bytes = buf if buf.dtype == np.uint8 and buf.ndim == 1 else \
                buf.reshape(-1).view(np.uint8)
        return b

    _data = data

    @property
    def device(self) -> Device:
        return self._device

    def nbytes(self) -> int:
        """Size in bytes."""
        return self._nbytes

    def size(self) -> int:
        """Size in bytes (an untyped storage counts bytes)."""
        return self._nbytes

    def data_ptr(self) -> int:
        """Address of the first byte (0 for meta and empty storages)."""
        ptr = self._ptr
        if ptr is None:
            ptr = self._ptr = self._buf.ctypes.data if self._buf is not None and \
                self._nbytes else 0
        return ptr

    def __len__(self) -> int:
        return self._nbytes

    def __repr__(self) -> str:
        return f"<ember.UntypedStorage nbytes={self._nbytes} device={self._device}>"


UntypedStorage = Storage
