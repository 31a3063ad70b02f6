"""Out-of-tree devices, the way torch offers PrivateUse1: rename it, then register a backend.

NOTE [Adding a device from outside ember]
``rename_privateuse1_backend("npu")`` names the ``PrivateUse1`` device type; a
``DeviceBackend`` registered under that name (``register_backend``) gives it an array module,
a raw memory provider for its caching allocator, and kernels: its own, registered per operator
at the ``PrivateUse1`` key, or the CPU kernels (``kernels_from="cpu"``) when its array module
speaks NumPy's API. From then on ``ember.ones(2, device="npu")``, autograd, ``memory_stats(
device="npu")`` and ``Tensor.npu()`` work like on any built-in device.
"""

from __future__ import annotations

import sys

from ember.memory.devices import DeviceBackend, device_module, get_backend, privateuse1_name
from ember.memory.devices import register_backend as _register_backend
from ember.memory.devices import rename_privateuse1_backend as _rename

__all__ = ["DeviceBackend", "rename_privateuse1_backend", "register_backend", "get_backend",
           "generate_methods_for_privateuse1_backend", "privateuse1_name"]


def rename_privateuse1_backend(backend_name: str) -> None:
    """Name the PrivateUse1 device type (``torch.utils.rename_privateuse1_backend``).

    Args:
        backend_name: the new device type name, e.g. ``"npu"``; it can be set once.

    Raises:
        RuntimeError: already renamed to another name, or a built-in device type's name.

    Example:
        >>> import ember
        >>> isinstance(ember.utils.privateuse1_name(), str)  # "privateuseone" until renamed
        True
    """
    _rename(backend_name)


def register_backend(backend: DeviceBackend, *, methods: bool = True) -> DeviceBackend:
    """Register ``backend`` as the backend of device type ``backend.name``.

    Args:
        backend: the descriptor (NOTE [Backend descriptors] in ``ember/memory/devices.py``).
            ``dispatch_key="PrivateUse1"`` for an out-of-tree device, named first with
            :func:`rename_privateuse1_backend`.
        methods: also add ``Tensor.<name>()`` and ``Tensor.is_<name>``
            (:func:`generate_methods_for_privateuse1_backend`).

    Returns:
        The backend.

    Raises:
        RuntimeError: the device type already has a backend, or the PrivateUse1 name differs.

    Example (the README's "Adding a device" registers a NumPy-backed device this way):
        >>> import ember
        >>> cpu = ember.utils.get_backend("cpu")
        >>> cpu.dispatch_key, cpu.array_module.__name__
        ('CPU', 'numpy')
    """
    _register_backend(backend)
    if methods:
        generate_methods_for_privateuse1_backend(backend.name)
    package = sys.modules["ember"]
    if not hasattr(package, backend.name):  # ember.<name>.synchronize() and friends
        mod = device_module(backend.name)
        setattr(package, backend.name, mod)
        sys.modules[mod.__name__] = mod
    return backend


def generate_methods_for_privateuse1_backend(name: str | None = None) -> None:
    """Add ``Tensor.<name>()`` (a copy to that device) and ``Tensor.is_<name>`` (torch's
    ``generate_methods_for_privateuse1_backend``); the name defaults to PrivateUse1's."""
    from ember.tensor import Tensor

    name = name or privateuse1_name()
    get_backend(name)  # the device type must exist

    def to_device(self, device=None, non_blocking: bool = False):
        target = name if device is None else f"{name}:{device}" if isinstance(device, int) \
            else device
        return self.to(target, non_blocking=non_blocking)

    to_device.__name__ = name
    to_device.__doc__ = f"This tensor on the {name!r} device (a copy unless already there)."
    if not hasattr(Tensor, name):
        setattr(Tensor, name, to_device)
    if not hasattr(Tensor, f"is_{name}"):
        setattr(Tensor, f"is_{name}", property(lambda self: self._device.type == name))
