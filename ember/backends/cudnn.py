"""``ember.backends.cudnn``: the cuDNN switches scripts set (``torch.backends.cudnn``).

``enabled``, ``benchmark``, ``deterministic``, ``allow_tf32`` and ``benchmark_limit`` are
module attributes, type-checked on assignment as torch's are (this module's class is swapped
for one with properties, as torch does). ember has no cuDNN (NOTE [Device namespaces without a
device] in ``ember.backends.cuda``): ``is_available()`` is False and ``version()`` None until a
CUDA backend that brings one is registered; the flags keep their values either way.
"""

from __future__ import annotations

import contextlib
import sys
import types

from ember.backends.cuda import check_bool, cuda_backend

# The flags ``enabled``, ``benchmark``, ``deterministic``, ``allow_tf32`` and
# ``benchmark_limit`` are module attributes served by ``_CudnnModule``.
__all__ = ["is_available", "version", "is_acceptable", "flags"]

# benchmark_limit is None until set, as in torch without cuDNN
_FLAGS = {"enabled": True, "benchmark": False, "deterministic": False, "allow_tf32": True,
          "benchmark_limit": None}
_SETTER = {"enabled": "set_enabled_cudnn", "benchmark": "set_benchmark_cudnn",
           "deterministic": "set_deterministic_cudnn", "allow_tf32": "set_allow_tf32_cublas"}


def _cudnn():
    backend = cuda_backend()
    return None if backend is None else backend.extra.get("cudnn")


def is_available() -> bool:
    """Whether cuDNN can be used (``torch.backends.cudnn.is_available``).

    Example:
        >>> import ember
        >>> ember.backends.cudnn.is_available()
        False
    """
    return _cudnn() is not None


def version() -> int | None:
    """cuDNN's version number, or None without cuDNN (``torch.backends.cudnn.version``)."""
    lib = _cudnn()
    return None if lib is None else lib.version()


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would serve ``tensor`` (a CUDA tensor of a cuDNN dtype, with cuDNN on)."""
    return bool(_FLAGS["enabled"] and tensor.is_cuda and is_available())


def _set(name: str, value) -> None:
    if name == "benchmark_limit":
        if type(value) is not int or value < 0:
            raise RuntimeError(f"set_cudnn_benchmark_limit expects a non-negative int, but got "
                               f"{value!r}")
        _FLAGS[name] = value
    else:
        _FLAGS[name] = check_bool(_SETTER[name], value)


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10,
          deterministic: bool = False, allow_tf32: bool = True):
    """Set every cuDNN flag inside a ``with`` block, restoring them on exit (as torch's).

    Example:
        >>> import ember
        >>> with ember.backends.cudnn.flags(enabled=False, benchmark=True):
        ...     ember.backends.cudnn.benchmark
        True
        >>> ember.backends.cudnn.benchmark
        False
    """
    saved = dict(_FLAGS)
    try:
        for name, value in (("enabled", enabled), ("benchmark", benchmark),
                            ("benchmark_limit", benchmark_limit),
                            ("deterministic", deterministic), ("allow_tf32", allow_tf32)):
            _set(name, value)
        yield
    finally:
        _FLAGS.update(saved)


class _CudnnModule(types.ModuleType):
    """This module, with its flags as type-checked properties."""

    def __getattr__(self, name: str):
        if name in _FLAGS:
            return _FLAGS[name]
        raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")

    def __setattr__(self, name: str, value) -> None:
        if name in _FLAGS:
            _set(name, value)
        else:
            super().__setattr__(name, value)


sys.modules[__name__].__class__ = _CudnnModule
