"""``ember.backends.mps``: whether Apple's Metal device exists (``torch.backends.mps``).

ember has no MPS backend, so both answers are False unless an ``"mps"`` backend descriptor is
registered (NOTE [Device namespaces without a device] in ``ember.backends.cuda``).
"""

from __future__ import annotations

__all__ = ["is_available", "is_built", "mps_backend"]


def mps_backend():
    """The registered ``"mps"`` backend descriptor, or None."""
    from ember.memory import devices

    for backend in devices.registered_backends():
        if backend.name == "mps":
            return backend
    return None


def is_built() -> bool:
    """Whether ember has an MPS backend (``torch.backends.mps.is_built``).

    Example:
        >>> import ember
        >>> ember.backends.mps.is_built()
        False
    """
    return mps_backend() is not None


def is_available() -> bool:
    """Whether an MPS device can be used (``torch.backends.mps.is_available``)."""
    return mps_backend() is not None
