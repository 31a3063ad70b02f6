"""Dispatch keys and key sets.

NOTE [Key sets are ints]
A dispatch key is a bit; a key set is an ``int`` bitmask. Bit position *is* priority: the
highest set bit of a call's key set selects the kernel, so picking a kernel is
``ks.bit_length() - 1``. The order is PyTorch's relative order (a subset of its keys):
backends (CPU < CUDA < PrivateUse1 < Meta) < BackendSelect < Python < ADInplaceOrView
< Autograd<Backend> < Batched < Autocast<Backend> < ComplexHalf (ember's own: complex32
tensors carry it; NOTE [The ComplexHalf key] in ember/backends/complex32.py). ``Batched``
serves ``ember.func.vmap``
(NOTE [Batched sits above autograd] in ember/func/_batched.py). ``PrivateUse1`` serves a
device type registered from outside ember (``ember.utils.rename_privateuse1_backend``). Alias
keys (``Autograd``, ``CompositeExplicitAutograd``, ``CompositeImplicitAutograd``) exist only for
registration and expand to runtime keys.
"""

from __future__ import annotations

from enum import IntEnum
from types import SimpleNamespace

from ember.memory import devices as _devices

__all__ = ["DispatchKey", "AliasKey", "keyset", "key_names", "highest_key"]


class DispatchKey(IntEnum):
    """Runtime dispatch keys; the value is the bit position (higher = dispatched first)."""

    CPU = 0
    CUDA = 1
    PrivateUse1 = 2
    Meta = 3
    BackendSelect = 4
    Python = 5
    ADInplaceOrView = 6
    AutogradCPU = 7
    AutogradCUDA = 8
    AutogradPrivateUse1 = 9
    AutogradMeta = 10
    Batched = 11
    AutocastCPU = 12
    AutocastCUDA = 13
    ComplexHalf = 14  # ember's own: NOTE [The ComplexHalf key] in ember/backends/complex32.py

    @property
    def bit(self) -> int:
        return 1 << self.value


class AliasKey(IntEnum):
    """Registration-only keys that stand for several runtime keys."""

    Autograd = 100
    CompositeExplicitAutograd = 101
    CompositeImplicitAutograd = 102


def keyset(*keys: DispatchKey) -> int:
    """The bitmask of ``keys``."""
    ks = 0
    for k in keys:
        ks |= 1 << k
    return ks


K = DispatchKey
BACKEND_KEYS = (K.CPU, K.CUDA, K.PrivateUse1, K.Meta)
AUTOGRAD_KEYS = (K.AutogradCPU, K.AutogradCUDA, K.AutogradPrivateUse1, K.AutogradMeta)
AUTOCAST_KEYS = (K.AutocastCPU, K.AutocastCUDA)
BACKENDS_MASK = keyset(*BACKEND_KEYS)
AUTOGRAD_MASK = keyset(*AUTOGRAD_KEYS)
AUTOCAST_MASK = keyset(*AUTOCAST_KEYS)
ALL_KEYS_MASK = (1 << (max(K) + 1)) - 1
# Keys a Python dispatch mode sits below: while a mode handles an op, these stay excluded.
ABOVE_PYTHON_MASK = ALL_KEYS_MASK & ~((1 << (K.Python + 1)) - 1)

ALIAS_EXPANSION = {
    AliasKey.Autograd: AUTOGRAD_KEYS,
    AliasKey.CompositeExplicitAutograd: BACKEND_KEYS,
    AliasKey.CompositeImplicitAutograd: BACKEND_KEYS + AUTOGRAD_KEYS,
}

# NOTE [Autograd keys are earned]
# A fresh tensor carries its backend key and ADInplaceOrView. The Autograd<Backend> key joins
# its key set (which lives on the version counter shared with its views, so a view sees it
# too) once the tensor requires grad or gets a grad_fn. Calls on tensors that never touch
# autograd therefore skip the autograd kernel altogether; the kernel itself still checks
# ``requires_grad`` exactly, so an extra key (e.g. on a ``detach()`` that shares the counter)
# only costs time, never correctness.
# Device type -> keys, filled from the device registry (ember/memory/devices.py) as backends
# register, so a device added at run time gets its entries before its first tensor exists.
TENSOR_KEYS: dict[str, int] = {}
INFERENCE_TENSOR_KEYS: dict[str, int] = {}
AUTOGRAD_KEY_OF_DEVICE: dict[str, DispatchKey] = {}
BACKEND_KEY_OF_DEVICE: dict[str, DispatchKey] = {}


def _add_device(backend) -> None:
    backend_key, autograd_key = K[backend.dispatch_key], K[backend.autograd_key]
    name = backend.name
    TENSOR_KEYS[name] = keyset(backend_key, K.ADInplaceOrView)
    INFERENCE_TENSOR_KEYS[name] = keyset(backend_key)
    AUTOGRAD_KEY_OF_DEVICE[name] = autograd_key
    BACKEND_KEY_OF_DEVICE[name] = backend_key


_add_device(SimpleNamespace(name="cuda", dispatch_key="CUDA", autograd_key="AutogradCUDA"))
_devices.on_register(_add_device)


def highest_key(ks: int) -> DispatchKey:
    """The key that wins for key set ``ks`` (its highest bit)."""
    return DispatchKey(ks.bit_length() - 1)


def key_names(ks: int) -> list[str]:
    """Names of the keys in ``ks``, highest priority first."""
    return [k.name for k in sorted(DispatchKey, reverse=True) if ks >> k & 1]


def parse_key(name) -> DispatchKey | AliasKey:
    """A key from its name (``"CPU"``, ``"Autograd"``, ...) or the key itself."""
    if isinstance(name, DispatchKey | AliasKey):
        return name
    if name in DispatchKey.__members__:
        return DispatchKey[name]
    if name in AliasKey.__members__:
        return AliasKey[name]
    raise ValueError(f"unknown dispatch key {name!r}; expected one of "
                     f"{[*DispatchKey.__members__, *AliasKey.__members__]}")
