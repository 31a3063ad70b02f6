"""Errors of ember.distributed, named and nested as torch.distributed's.

``DistError`` subclasses ``RuntimeError`` so ``except RuntimeError`` written for torch keeps
working; a backend failure (a dead peer, a timeout, a collective mismatch) is a
``DistBackendError``, a store failure a ``DistStoreError``, a socket failure a
``DistNetworkError``.
"""

from __future__ import annotations

__all__ = ["DistError", "DistBackendError", "DistStoreError", "DistNetworkError"]


class DistError(RuntimeError):
    """Base of the distributed errors (``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """A collective failed: a peer died or raised, a timeout, a mismatch between ranks."""


class DistStoreError(DistError):
    """A key/value store operation failed or timed out (``torch.distributed.DistStoreError``)."""


class DistNetworkError(DistError):
    """A socket could not be opened, bound or reached (``torch.distributed.DistNetworkError``)."""
