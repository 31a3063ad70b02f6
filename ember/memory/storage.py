"""Storage: a contiguous block of bytes on a device, shared by every view of it.

NOTE [Storage owns bytes, not elements]
A Storage is untyped: tensors interpret its bytes through (dtype, shape, stride, offset). Its
data pointer is read once at creation and never changes, so ``data_ptr()`` is a cheap identity
for "same memory". On ``cpu`` the bytes are a NumPy ``uint8`` array aligned to 64 bytes; on
``meta`` there are no bytes at all, only a size. ``_owner`` keeps foreign memory alive (a
NumPy array passed to ``from_numpy``, a DLPack capsule's producer).
"""

from __future__ import annotations

import numpy as np

from ember.core.device import CPU, META, Device

__all__ = ["Storage", "UntypedStorage", "ALIGNMENT"]

ALIGNMENT = 64


def _aligned_bytes(nbytes: int) -> np.ndarray:
    raw = np.empty(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start:start + nbytes]


class Storage:
    """Untyped bytes on a device (``torch.UntypedStorage``).

    Args:
        nbytes: size in bytes.
        device: where the bytes live; ``meta`` storages hold no data.
    """

    __slots__ = ("_data", "_nbytes", "_device", "_ptr", "_owner", "__weakref__")

    def __init__(self, nbytes: int, device: Device = CPU):
        self._nbytes = nbytes
        self._device = device
        self._owner = None
        if device is META:
            self._data = None
            self._ptr = 0
        else:
            self._data = _aligned_bytes(nbytes)
            self._ptr = self._data.ctypes.data if nbytes else 0

    @classmethod
    def from_buffer(cls, data: np.ndarray, owner=None) -> Storage:
        """Wrap an existing 1-d ``uint8`` array without copying; ``owner`` is kept alive."""
        st = object.__new__(cls)
        st._data = data
        st._nbytes = data.nbytes
        st._device = CPU
        st._ptr = data.ctypes.data if data.nbytes else 0
        st._owner = owner
        return st

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
        return self._ptr

    def __len__(self) -> int:
        return self._nbytes

    def __repr__(self) -> str:
        return f"<ember.UntypedStorage nbytes={self._nbytes} device={self._device}>"


UntypedStorage = Storage
