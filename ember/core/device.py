"""Devices: ``cpu`` (NumPy memory) and ``meta`` (shapes only, no data); ``cuda`` is reserved.

``Device`` instances are interned, so ``a is b`` whenever ``a == b``.
"""

from __future__ import annotations

__all__ = ["Device", "device", "as_device", "CPU", "META", "register_device_type"]

_KNOWN_TYPES = ["cpu", "cuda", "meta"]  # grows through register_device_type


def register_device_type(name: str) -> None:
    """Accept ``name`` as a device type (the device registry calls this for new backends)."""
    if name not in _KNOWN_TYPES:
        _KNOWN_TYPES.append(name)


class Device:
    """A device: ``type`` ('cpu', 'meta', 'cuda') and an optional ``index`` (``torch.device``).

    Example:
        >>> import ember
        >>> ember.device("cpu"), ember.device("meta").type
        (device(type='cpu'), 'meta')
    """

    __slots__ = ("type", "index")
    _interned: dict = {}

    def __new__(cls, type: str | Device, index: int | None = None):
        if isinstance(type, Device):
            return type
        key = (type, index)
        dev = cls._interned.get(key)
        if dev is not None:
            return dev
        if isinstance(type, str) and ":" in type and index is None:
            name, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            dev = cls(name, int(idx))
        else:
            if type not in _KNOWN_TYPES:
                raise RuntimeError(
                    f"Expected one of cpu, cuda, meta device type at start of device string: "
                    f"{type}"
                )
            if index is not None and (not isinstance(index, int) or index < 0):
                raise RuntimeError(f"Device index must not be negative; got {index}")
            dev = object.__new__(cls)
            object.__setattr__(dev, "type", type)
            object.__setattr__(dev, "index", index)
        cls._interned[key] = dev
        return dev

    def __setattr__(self, name, value):
        raise AttributeError("ember.device is immutable")

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = Device(other)
        return isinstance(other, Device) and self.type == other.type and self.index == other.index

    def __hash__(self) -> int:
        return hash((self.type, self.index))

    def __reduce__(self):
        return (Device, (self.type, self.index))


device = Device
CPU = Device("cpu")
META = Device("meta")


def as_device(d) -> Device:
    """Normalise ``None`` (cpu), a string, an int (cuda index) or a Device to a Device."""
    if d is None:
        return CPU
    if d.__class__ is Device:
        return d
    if isinstance(d, int):
        return Device("cuda", d)
    return Device(d)
