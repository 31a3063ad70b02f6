"""Zero-copy exchange with other array libraries: DLPack and the NumPy array protocol."""

from __future__ import annotations

__all__ = ["from_dlpack"]


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object that implements ``__dlpack__``."""
    raise NotImplementedError("from_dlpack is not available yet")
