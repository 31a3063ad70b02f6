"""Autocast state and the ``autocast`` context manager (``torch.amp.autocast``).

Owns the thread-local autocast state per device type (enabled, lower-precision dtype), the
weight-cast cache and the nesting count, and turns the ``Autocast<Backend>`` dispatch keys on
and off with it. What each operator does under autocast (cast to the lower precision, to
float32, or to the widest input type) is the autocast backend's business
(``ember.backends.autocast``); this module knows no operator.

NOTE [Autocast keys]
While autocast is off for a device type, its key is neither included nor kept, so no call pays
for it. Turning it on adds the key to the thread's included set and lifts it from the excluded
set: every call then reaches ``Autocast<Backend>`` first, where operators without a policy fall
through and the listed ones cast their arguments and continue below the key with it excluded,
so the operators they are made of do not cast again.
"""

from __future__ import annotations

import functools
import threading
import warnings
import weakref

from ember.core import dtype as dt
from ember.dispatch import dispatcher
from ember.dispatch.keys import DispatchKey

__all__ = [
    "autocast", "is_autocast_enabled", "set_autocast_enabled", "get_autocast_dtype",
    "set_autocast_dtype", "is_autocast_cache_enabled", "set_autocast_cache_enabled",
    "clear_autocast_cache", "autocast_increment_nesting", "autocast_decrement_nesting",
    "is_autocast_available", "AUTOCAST_KEY",
]

# The device types autocast knows; only "cpu" has tensors in ember today.
AUTOCAST_KEY = {"cpu": DispatchKey.AutocastCPU, "cuda": DispatchKey.AutocastCUDA}
_SUPPORTED = {"cpu": (dt.bfloat16, dt.float16), "cuda": (dt.float16, dt.bfloat16)}


class _AutocastState(threading.local):
    def __init__(self):
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": dt.bfloat16, "cuda": dt.float16}
        self.cache_enabled = True
        self.nesting = 0
        self.cache: dict[int, tuple] = {}  # id(leaf) -> (weakref to leaf, its cast)


_state = _AutocastState()


def autocast_state() -> _AutocastState:
    """The calling thread's autocast state (for the autocast backend)."""
    return _state


def _device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in AUTOCAST_KEY:
        raise RuntimeError(f"autocast: unsupported device type {device_type!r}; expected one "
                           f"of {sorted(AUTOCAST_KEY)}")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether ember can autocast on ``device_type``: ``"cpu"``, and ``"cuda"`` once a CUDA
    backend is registered.

    Example:
        >>> ember.amp.is_autocast_available("cpu")
        True
    """
    if device_type == "cuda":
        from ember.memory import devices
        return any(b.name == "cuda" for b in devices.registered_backends())
    return device_type == "cpu"


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for ``device_type`` (no argument: ``"cuda"``, as torch).

    Example:
        >>> ember.is_autocast_enabled("cpu")
        False
        >>> with ember.autocast("cpu"):
        ...     print(ember.is_autocast_enabled("cpu"))
        True
    """
    return _state.enabled[_device_type("cuda" if device_type is None else device_type)]


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turn autocast on or off for ``device_type`` (``torch.set_autocast_enabled``).

    Example:
        >>> ember.set_autocast_enabled("cpu", True)
        >>> (ember.ones(2, 2) @ ember.ones(2, 2)).dtype
        ember.bfloat16
        >>> ember.set_autocast_enabled("cpu", False)
        >>> (ember.ones(2, 2) @ ember.ones(2, 2)).dtype
        ember.float32
    """
    device_type = _device_type(device_type)
    _state.enabled[device_type] = bool(enabled)
    bit = 1 << AUTOCAST_KEY[device_type]
    ds = dispatcher.dispatch_state()
    if enabled:
        ds.included |= bit
        ds.keep |= bit
    else:
        ds.included &= ~bit
        ds.keep &= ~bit


def get_autocast_dtype(device_type: str) -> dt.DType:
    """The lower-precision dtype autocast uses on ``device_type`` (CPU: bfloat16).

    Example:
        >>> ember.get_autocast_dtype("cpu")
        ember.bfloat16
    """
    return _state.dtype[_device_type(device_type)]


def set_autocast_dtype(device_type: str, dtype: dt.DType) -> None:
    """Set the lower-precision dtype of ``device_type``'s autocast.

    Example:
        >>> ember.set_autocast_dtype("cpu", ember.float16)
        >>> with ember.autocast("cpu"):
        ...     print((ember.ones(2, 2) @ ember.ones(2, 2)).dtype)
        ember.float16
        >>> ember.set_autocast_dtype("cpu", ember.bfloat16)
    """
    _state.dtype[_device_type(device_type)] = dtype


def is_autocast_cache_enabled() -> bool:
    """Whether casts of leaf weights are cached inside autocast regions.

    Example:
        >>> ember.is_autocast_cache_enabled()
        True
        >>> with ember.autocast("cpu", cache_enabled=False):
        ...     print(ember.is_autocast_cache_enabled())
        False
    """
    return _state.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turn the weight-cast cache on or off.

    Example:
        >>> ember.set_autocast_cache_enabled(False); ember.is_autocast_cache_enabled()
        False
        >>> ember.set_autocast_cache_enabled(True)
    """
    _state.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop every cached weight cast (done when the outermost autocast region exits).

    Example:
        >>> ember.clear_autocast_cache()  # what leaving the outermost autocast region does
    """
    _state.cache.clear()


def autocast_increment_nesting() -> int:
    """Count one more autocast region; returns the new depth.

    Example:
        >>> ember.autocast_increment_nesting()
        1
        >>> ember.autocast_decrement_nesting()
        0
    """
    _state.nesting += 1
    return _state.nesting


def autocast_decrement_nesting() -> int:
    """Count one autocast region less; returns the new depth.

    Example:
        >>> with ember.autocast("cpu"):
        ...     depth = ember.autocast_increment_nesting()
        ...     print(depth, ember.autocast_decrement_nesting())
        2 1
    """
    _state.nesting -= 1
    return _state.nesting


def cached_cast_lookup(t) -> object | None:
    """The cached cast of leaf ``t``, or None."""
    hit = _state.cache.get(id(t))
    if hit is not None and hit[0]() is t:
        return hit[1]
    return None


def cache_cast(t, cast) -> None:
    """Remember ``cast`` as ``t``'s cast until the outermost autocast region exits."""
    _state.cache[id(t)] = (weakref.ref(t), cast)


class autocast:  # noqa: N801  (torch's name)
    """Run a region with operators in mixed precision (``torch.autocast``).

    Inside, matrix products and convolutions run in the lower-precision dtype (CPU default
    ``bfloat16``; ``float16`` also allowed), precision-sensitive operators (losses, most linear
    algebra, ``prod``, some paddings) in float32, and ``cat``/``stack``/``index_copy`` in the
    widest floating input type; everything else runs in its inputs' dtype. Casts of leaf
    tensors that require grad (weights) are cached until the outermost region exits. Usable
    as a context manager or a decorator; regions nest, and ``enabled=False`` turns autocast
    off inside an enclosing region.

    Args:
        device_type: ``"cpu"`` (``"cuda"`` is accepted and disabled with a warning: ember has
            no CUDA backend).
        dtype: the lower-precision dtype (default: ``get_autocast_dtype(device_type)``).
        enabled: whether autocast is on inside the region.
        cache_enabled: cache weight casts (default: ``is_autocast_cache_enabled()``).

    Raises:
        ValueError: ``device_type`` is not a string.

    Example:
        >>> import ember
        >>> a = ember.ones(2, 2)
        >>> with ember.autocast("cpu"):
        ...     (a @ a).dtype, (a + a).dtype
        (ember.bfloat16, ember.float32)
    """

    def __init__(self, device_type: str, dtype: dt.DType | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device = _device_type(device_type)
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else bool(cache_enabled)
        self._enabled = bool(enabled)
        if self._enabled and not is_autocast_available(self.device):
            warnings.warn(f"{self.device.upper()} is not available. Disabling autocast.",
                          UserWarning, stacklevel=2)
            self._enabled = False
        if self._enabled and self.fast_dtype not in _SUPPORTED[self.device]:
            names = ", ".join(f"ember.{d}" for d in _SUPPORTED[self.device])
            warnings.warn(f"In {self.device.upper()} autocast, but the target dtype is not "
                          f"supported. Disabling autocast.\n{self.device.upper()} Autocast "
                          f"only supports dtypes of {names} currently.", UserWarning,
                          stacklevel=2)
            self._enabled = False

    def __enter__(self):
        self._prev = (is_autocast_enabled(self.device), get_autocast_dtype(self.device),
                      is_autocast_cache_enabled())
        set_autocast_enabled(self.device, self._enabled)
        set_autocast_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, *exc) -> None:
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        enabled, dtype, cache_enabled = self._prev
        set_autocast_enabled(self.device, enabled)
        set_autocast_dtype(self.device, dtype)
        set_autocast_cache_enabled(cache_enabled)

    def __call__(self, fn):
        @functools.wraps(fn)
        def decorated(*args, **kwargs):
            with autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return fn(*args, **kwargs)
        return decorated

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled}, cache_enabled={self._cache_enabled})")
