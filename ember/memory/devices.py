"""The device registry: one backend descriptor per device type, found by name, loaded lazily.

NOTE [Backend descriptors]
A ``DeviceBackend`` says everything the layers below the kernels need to know about a device
type: its array module (``numpy``; ``cupy`` for a CUDA device), its raw memory provider (the
``alloc``/``free`` of device bytes that the caching allocator carves segments from), the
name of its runtime dispatch key, how to view its bytes as an array, its ``synchronize`` and
stream hooks, and where its kernels live. ``cpu`` and ``meta`` are built in; any other type
is registered with ``register_backend`` (``ember.utils.register_backend``), or is named in
``_LAZY`` and imported the first time something asks for it. Layers above this one reach a
device's memory through ``get_backend(device.type)`` (``cpu`` keeps an inlined fast path).

NOTE [Kernels are found by the registry]
A backend names the module that registers its kernels (``kernels``: ``"ember.backends.cpu"``).
The dispatcher imports it the first time an operator's table needs a kernel for that
backend's key (``kernel_modules``), so ``import ember.ops`` alone already gives every operator
a CPU kernel, and nothing depends on which package imported the CPU backend first. A backend
whose array module speaks NumPy's API may instead borrow another backend's kernels
(``kernels_from="cpu"``): the dispatcher then calls the CPU kernel under a device guard
(``allocation_device``), so the outputs it allocates come from this device's allocator.

Why the registry finds kernels, rather than ``ember.ops`` or ``ember`` importing the CPU
backend: ``ember.ops`` (L6) may not import ``ember.backends`` (L7), and an import made by
whichever package happens to load first is exactly the order dependence that left families
unregistered before. Asking at the first dispatch for a key is the one moment that always
comes before a kernel is needed, costs nothing afterwards (the operator's table caches the
kernel), and works the same for a device added at run time. The family list itself lives
once, in ``ember.ops.FAMILIES``; the CPU package registers the family modules it has.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import numpy as np

from ember.core import device as _device
from ember.core.device import CPU, META, Device

__all__ = ["DeviceBackend", "register_backend", "get_backend", "registered_backends",
           "kernel_modules", "rename_privateuse1_backend", "privateuse1_name",
           "allocation_device", "device_guard", "numpy_as_array", "on_register", "guard_state",
           "guarded", "numpy_to_host", "array_module_of", "device_module"]


def numpy_as_array(buf, shape: tuple, npdtype, byte_offset: int, byte_strides) -> np.ndarray:
    """A NumPy array of ``shape`` over the flat byte buffer ``buf`` (NumPy-like devices)."""
    return np.ndarray(shape, npdtype, buffer=buf, offset=byte_offset, strides=byte_strides)


def _noop(*args, **kwargs) -> None:
    return None


def numpy_to_host(array, non_blocking: bool = False) -> np.ndarray:
    """A host NumPy copy of a device array (NumPy-like devices: the bytes are host bytes)."""
    return np.array(array, copy=True, subok=False)


@dataclass(eq=False)
class DeviceBackend:
    """What ember needs to know about one device type (NOTE [Backend descriptors]).

    This is the stable interface a device plugs into; every field but ``name`` and
    ``dispatch_key`` has a default that suits a synchronous, NumPy-like device.

    Args:
        name: the device type (``"cpu"``, ``"cuda"``, a renamed PrivateUse1 backend).
        dispatch_key: name of its runtime backend key (``"CPU"``, ``"CUDA"``, ``"PrivateUse1"``).
        array_module: the module kernels compute with (``numpy``; ``cupy``; None for ``meta``).
            Kernels read it from here (``ember.backends.cpu._xp.array_module``), never by name.
        memory: raw memory provider: ``alloc(nbytes) -> (buffer, address)`` and
            ``free(buffer)``; the caching allocator gets its segments from it. ``buffer`` is a
            flat ``uint8`` array of ``array_module`` (a storage's bytes are a slice of it).
        as_array: ``(buffer, shape, npdtype, byte_offset, byte_strides) -> array``, a strided
            array of ``array_module`` over a block's bytes.
        capacity: device memory in bytes (None: the machine's physical memory).
        kernels: module whose import registers this backend's kernels.
        kernels_from: device type whose kernels this backend reuses (same array API); kernel
            details the array modules spell differently are named helpers in
            ``ember/backends/cpu/_xp.py`` (``xp.register_helpers``).
        synchronize: ``() -> None``, waits for the device's queued work (a no-op on
            synchronous devices). ``ember.<name>.synchronize()`` and every blocking copy to the
            host (``Tensor.to("cpu")``, ``.item()``) call it.
        current_stream: ``() -> stream``, the stream kernels and copies are queued on (None on
            stream-less devices); ``ember.<name>.current_stream()`` returns it.
        to_host: ``(array, non_blocking) -> numpy.ndarray``, a host copy of a device array
            queued on ``current_stream()`` (CuPy: ``array.get(stream, blocking=...)``). With
            ``non_blocking`` False the copy kernel calls ``synchronize`` after it.
        from_host: ``(numpy_array, non_blocking) -> array``, a device array holding a host
            array's values (CuPy: ``cupy.asarray`` on the current stream); None: the array
            module's ``asarray``.
        autograd_key: name of its autograd key (default ``"Autograd" + dispatch_key``).
        extra: free-form hooks for device namespaces (``device_count``, ``set_device``...).

    Example:
        >>> cpu = get_backend("cpu")
        >>> cpu.array_module.__name__, cpu.dispatch_key, cpu.current_stream() is None
        ('numpy', 'CPU', True)
    """

    name: str
    dispatch_key: str
    array_module: ModuleType | None = np
    memory: Any = None
    as_array: Callable = numpy_as_array
    capacity: int | None = None
    kernels: str | None = None
    kernels_from: str | None = None
    synchronize: Callable[[], None] = _noop
    current_stream: Callable[[], Any] = _noop
    to_host: Callable = numpy_to_host
    from_host: Callable | None = None
    autograd_key: str = ""
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.autograd_key:
            self.autograd_key = "Autograd" + self.dispatch_key
        if self.from_host is None and self.array_module is not None:
            asarray = self.array_module.asarray  # looked up once, not per copy
            self.from_host = lambda array, non_blocking=False: asarray(array)

    @property
    def has_data(self) -> bool:
        """Whether tensors of this device hold bytes (False for ``meta``)."""
        return self.array_module is not None


_BACKENDS: dict[str, DeviceBackend] = {}
# Device types whose descriptor a module registers when imported (NOTE [Backend descriptors]).
_LAZY: dict[str, str] = {"cuda": "ember.cuda"}
_LISTENERS: list[Callable[[DeviceBackend], None]] = []
_MODULES: dict[str, ModuleType | None] = {}  # device type -> array module (hot path)
_MISSING = object()
_PRIVATEUSE1 = ["privateuseone"]


def on_register(fn: Callable[[DeviceBackend], None]) -> None:
    """Call ``fn(backend)`` for every backend registered now and later (upper layers' tables)."""
    _LISTENERS.append(fn)
    for b in list(_BACKENDS.values()):
        fn(b)


def register_backend(backend: DeviceBackend) -> DeviceBackend:
    """Make ``backend.name`` a device type served by ``backend`` (replaces nothing).

    Raises:
        RuntimeError: the device type already has a backend, or a PrivateUse1 backend is
            registered under a name other than the one ``rename_privateuse1_backend`` gave.
    """
    name = backend.name
    if name in _BACKENDS:
        raise RuntimeError(f"register_backend: device type {name!r} already has a backend")
    if backend.dispatch_key == "PrivateUse1" and name != _PRIVATEUSE1[0]:
        raise RuntimeError(
            f"register_backend: the PrivateUse1 backend is named {_PRIVATEUSE1[0]!r}; got "
            f"{name!r}\nhint: call ember.utils.rename_privateuse1_backend({name!r}) first")
    _device.register_device_type(name)
    _BACKENDS[name] = backend
    _MODULES[name] = backend.array_module
    for fn in _LISTENERS:
        fn(backend)
    return backend


def get_backend(name: str | Device) -> DeviceBackend:
    """The backend of a device type (importing its module the first time it is asked for)."""
    if not isinstance(name, str):
        name = name.type
    b = _BACKENDS.get(name)
    if b is not None:
        return b
    module = _LAZY.get(name)
    if module is not None:
        importlib.import_module(module)
        b = _BACKENDS.get(name)
        if b is not None:
            return b
    raise RuntimeError(f"ember: no backend is registered for device type {name!r}; known: "
                       f"{', '.join(_BACKENDS)}")


def array_module_of(device: Device):
    """The array module of ``device``'s backend (``numpy`` on cpu; None on meta).

    Read from a per-type cache filled at registration, so kernels pay one dict lookup.
    """
    if device is CPU:
        return np
    xp = _MODULES.get(device.type, _MISSING)
    return get_backend(device.type).array_module if xp is _MISSING else xp


def device_module(name: str) -> ModuleType:
    """A ``torch.cuda``-like namespace for device type ``name`` (``ember.<name>`` of a
    registered PrivateUse1 device, as ``torch._register_device_module`` gives torch one).

    Its ``synchronize`` and ``current_stream`` call the descriptor's hooks at call time (so a
    backend can swap them), ``is_available`` and ``device_count`` read ``extra`` hooks.
    """
    mod = ModuleType(f"ember.{name}", f"The {name!r} device's namespace (synchronize, "
                                      "streams, device count).")

    def synchronize(device=None) -> None:
        """Wait for the device's queued work (the descriptor's ``synchronize``)."""
        get_backend(name).synchronize()

    def current_stream(device=None):
        """The stream kernels are queued on (the descriptor's ``current_stream``)."""
        return get_backend(name).current_stream()

    def device_count() -> int:
        """How many devices of this type there are (``extra["device_count"]``, default 1)."""
        return get_backend(name).extra.get("device_count", lambda: 1)()

    def is_available() -> bool:
        """Whether the device can be used (``extra["is_available"]``, default True)."""
        return get_backend(name).extra.get("is_available", lambda: True)()

    for fn in (synchronize, current_stream, device_count, is_available):
        fn.__module__ = mod.__name__
        setattr(mod, fn.__name__, fn)
    mod.__all__ = ["synchronize", "current_stream", "device_count", "is_available"]
    return mod


def registered_backends() -> list[DeviceBackend]:
    """Every registered backend, in registration order."""
    return list(_BACKENDS.values())


def kernel_modules(dispatch_key: str) -> list[str]:
    """Modules to import so that ``dispatch_key``'s kernels are registered.

    A backend that borrows another's kernels (``kernels_from``) needs that backend's modules.
    """
    mods: list[str] = []
    for b in list(_BACKENDS.values()):
        if b.dispatch_key != dispatch_key:
            continue
        src = _BACKENDS.get(b.kernels_from) if b.kernels_from else None
        for m in (b.kernels, src.kernels if src is not None else None):
            if m and m not in mods:
                mods.append(m)
    return mods


def privateuse1_name() -> str:
    """The device type name of the PrivateUse1 backend (``"privateuseone"`` until renamed)."""
    return _PRIVATEUSE1[0]


def rename_privateuse1_backend(name: str) -> None:
    """Name the PrivateUse1 device type ``name`` (``torch.utils.rename_privateuse1_backend``).

    As in torch, the name can be set once; setting the same name again is allowed.

    Raises:
        RuntimeError: it was already renamed to another name, or ``name`` is a built-in type.
    """
    if not isinstance(name, str) or not name.isidentifier():
        raise RuntimeError(f"rename_privateuse1_backend: expected an identifier; got {name!r}")
    current = _PRIVATEUSE1[0]
    if current == name:
        return
    if current != "privateuseone":
        raise RuntimeError(f"torch.register_privateuse1_backend() has already been set! Current "
                           f"backend: {current}")
    if name in _BACKENDS or name in _LAZY or name in ("cuda", "cpu", "meta"):
        raise RuntimeError(f"rename_privateuse1_backend: {name!r} is a built-in device type")
    _PRIVATEUSE1[0] = name


# -- the device guard ----------------------------------------------------------------------
class _Guard(threading.local):
    device: Device = CPU


_guard = _Guard()
guard_state = _guard  # read directly on the hot path (``empty_tensor``)


def allocation_device() -> Device:
    """The device a kernel's unplaced outputs are allocated on (cpu unless a guard is set)."""
    return _guard.device


class device_guard:
    """Context manager: kernels allocate unplaced outputs on ``device`` (torch's DeviceGuard)."""

    __slots__ = ("device", "_saved")

    def __init__(self, device: Device):
        self.device = device

    def __enter__(self):
        self._saved = _guard.device
        _guard.device = self.device

    def __exit__(self, *exc):
        _guard.device = self._saved


def guarded(device: Device, fn: Callable) -> Callable:
    """``fn`` run with ``device`` as the allocation device (a borrowed kernel)."""
    g = _guard

    def call(*args, **kwargs):
        saved = g.device
        g.device = device
        try:
            return fn(*args, **kwargs)
        finally:
            g.device = saved

    call.__wrapped__ = fn
    return call


# -- the built-in backends ---------------------------------------------------------------------
def _builtin() -> None:
    from ember.memory.allocator import ALLOCATORS
    from ember.memory.config import UNLIMITED
    register_backend(DeviceBackend("cpu", "CPU", np, ALLOCATORS["cpu"].backend,
                                   kernels="ember.backends.cpu"))
    register_backend(DeviceBackend("meta", "Meta", None, ALLOCATORS["meta"].backend,
                                   as_array=_no_data, capacity=UNLIMITED))


def _no_data(*args):
    raise RuntimeError("Tensor on the meta device has no data; this operation needs data")


_builtin()
assert get_backend(CPU) is _BACKENDS["cpu"] and get_backend(META) is _BACKENDS["meta"]
