"""torch's top-level odds and ends: global switches (deterministic algorithms, warn-always,
float32 matmul precision, anomaly mode), the deprecated ``range`` and autocast spellings,
top-level forms of in-place Tensor methods (``fill_``, ``zero_``, ...), the legacy typed tensor
and storage classes (``FloatTensor``, ``LongStorage``, ...), ``set_default_tensor_type`` and
``to_dlpack``. Nothing here is an operator kernel: these are thin Python over ember's ops.
"""

from __future__ import annotations

import math

from ember.core import dtype as dt
from ember.ops.tensor_api import _parse_type, _require
from ember.tensor import Tensor
from ember.tensor.typed_storage import LEGACY_STORAGE_TYPES

__all__: list[str] = []


# -- top-level forms of Tensor methods ------------------------------------------------------
# (``as_strided_`` and ``resize_as_`` above serve both as methods and as functions)
def fill(input: Tensor, value) -> Tensor:
    """A new tensor like ``input`` filled with ``value`` (differentiable in a 0-d ``value``).

    Example:
        >>> ember.fill(ember.zeros(2, 2), 0.5)
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
    """
    _require("fill", input)
    return input.clone().fill_(value)


def fill_(input: Tensor, value) -> Tensor:
    """``input.fill_(value)``.

    Example:
        >>> x = ember.zeros(3)
        >>> ember.fill_(x, 7) is x, x
        (True, tensor([7., 7., 7.]))
    """
    return input.fill_(value)


def zero_(input: Tensor) -> Tensor:
    """``input.zero_()``.

    Example:
        >>> x = ember.ones(2)
        >>> ember.zero_(x) is x, x
        (True, tensor([0., 0.]))
    """
    return input.zero_()


def detach_(input: Tensor) -> Tensor:
    """``input.detach_()``.

    Example:
        >>> y = ember.ones(2, requires_grad=True) * 2
        >>> ember.detach_(y) is y, y.requires_grad
        (True, False)
    """
    return input.detach_()


def addmv_(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1) -> Tensor:
    """``input.addmv_(mat, vec, beta=beta, alpha=alpha)``.

    Example:
        >>> x = ember.ones(2)
        >>> ember.addmv_(x, ember.ones(2, 3), ember.ones(3), alpha=2) is x, x
        (True, tensor([7., 7.]))
    """
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


def range(start, end, step=1, *, dtype=None, device=None,  # noqa: A001
          requires_grad: bool = False) -> Tensor:
    """torch's deprecated ``range``: like ``arange`` but ``end`` is included (warns).

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     print(ember.range(1, 4))  # the end is included
        tensor([1., 2., 3., 4.])
    """
    import warnings

    from ember.ops.creation import arange
    warnings.warn("ember.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "ember.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    count = int(math.floor((end - start) / step)) + 1
    out = arange(count, dtype=dtype or dt.get_default_dtype(), device=device) * step + start
    return out.requires_grad_(True) if requires_grad else out


# -- global switches ----------------------------------------------------------------------------
# ember's kernels are deterministic and its float32 matmul is full precision, so these switches
# record what a script asks and report it back, as torch's do; none changes a result.
_SWITCHES = {"deterministic": False, "warn_only": False, "warn_always": False,
             "matmul_precision": "highest"}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Record the deterministic-algorithms switch (ember's kernels are always deterministic).

    Example:
        >>> ember.use_deterministic_algorithms(True)
        >>> ember.are_deterministic_algorithms_enabled()
        True
        >>> ember.use_deterministic_algorithms(False)
    """
    _SWITCHES["deterministic"], _SWITCHES["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether :func:`use_deterministic_algorithms` was turned on.

    Example:
        >>> ember.are_deterministic_algorithms_enabled()
        False
    """
    return _SWITCHES["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode only warns.

    Example:
        >>> ember.use_deterministic_algorithms(True, warn_only=True)
        >>> ember.is_deterministic_algorithms_warn_only_enabled()
        True
        >>> ember.use_deterministic_algorithms(False)
    """
    return _SWITCHES["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """``'default'``/0 off, ``'warn'``/1 warn only, ``'error'``/2 deterministic.

    Raises:
        RuntimeError: an unknown mode.

    Example:
        >>> ember.set_deterministic_debug_mode("error")
        >>> ember.are_deterministic_algorithms_enabled()
        True
        >>> ember.set_deterministic_debug_mode("default")
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """0, 1 or 2, as set by :func:`set_deterministic_debug_mode`.

    Example:
        >>> ember.set_deterministic_debug_mode("warn")
        >>> ember.get_deterministic_debug_mode()
        1
        >>> ember.set_deterministic_debug_mode(0)
    """
    if not _SWITCHES["deterministic"]:
        return 0
    return 1 if _SWITCHES["warn_only"] else 2


def set_warn_always(b: bool) -> None:
    """Record whether warnings that torch issues once should repeat.

    Example:
        >>> ember.set_warn_always(True)
        >>> ember.is_warn_always_enabled()
        True
        >>> ember.set_warn_always(False)
    """
    _SWITCHES["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether :func:`set_warn_always` is on.

    Example:
        >>> ember.is_warn_always_enabled()
        False
    """
    return _SWITCHES["warn_always"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record ``'highest'``, ``'high'`` or ``'medium'`` (ember always computes in float32).

    Other values warn and change nothing, as torch.

    Example:
        >>> ember.set_float32_matmul_precision("high")
        >>> ember.get_float32_matmul_precision()
        'high'
        >>> ember.set_float32_matmul_precision("highest")
    """
    import warnings
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", UserWarning,
                      stacklevel=2)
        return
    _SWITCHES["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """The value last set by :func:`set_float32_matmul_precision` (``'highest'``).

    Example:
        >>> ember.get_float32_matmul_precision()
        'highest'
    """
    return _SWITCHES["matmul_precision"]


def set_flush_denormal(mode: bool) -> bool:
    """Whether flushing denormals could be set: False, NumPy gives no control over it.

    Example:
        >>> ember.set_flush_denormal(True)  # not supported: NumPy gives no control over it
        False
    """
    return False


def is_anomaly_enabled() -> bool:
    """Whether autograd's anomaly detection is on.

    Example:
        >>> ember.is_anomaly_enabled()
        False
    """
    from ember.autograd import anomaly
    return anomaly.is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward outputs for NaN.

    Example:
        >>> with ember.autograd.detect_anomaly(check_nan=False):
        ...     print(ember.is_anomaly_enabled(), ember.is_anomaly_check_nan_enabled())
        True False
    """
    from ember.autograd import anomaly
    return anomaly.is_anomaly_check_nan_enabled()


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """Turn autograd's anomaly detection on or off for this thread.

    Example:
        >>> ember.set_anomaly_enabled(True)
        >>> ember.is_anomaly_enabled()
        True
        >>> ember.set_anomaly_enabled(False)
    """
    from ember.autograd import anomaly
    anomaly._state.enabled, anomaly._state.check_nan = bool(enabled), bool(check_nan)


has_lapack = True  # NumPy's LAPACK
has_mkl = False
has_openmp = False
has_spectral = False


__all__ += ["fill", "fill_", "zero_", "detach_", "addmv_", "range",
            "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
            "is_deterministic_algorithms_warn_only_enabled", "set_deterministic_debug_mode",
            "get_deterministic_debug_mode", "set_warn_always", "is_warn_always_enabled",
            "set_float32_matmul_precision", "get_float32_matmul_precision",
            "set_flush_denormal", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
            "set_anomaly_enabled", "has_lapack", "has_mkl", "has_openmp", "has_spectral"]


# -- legacy typed tensor classes ----------------------------------------------------------------
class tensortype(type):
    """The metaclass of ``ember.FloatTensor`` and its siblings (torch's ``tensortype``).

    ``isinstance(t, ember.FloatTensor)`` is true for CPU float32 tensors; calling the class is
    torch's legacy constructor with that dtype: ``LongTensor(2, 3)`` (uninitialised),
    ``LongTensor([1, 2])`` (a copy of the data), ``LongTensor()`` (empty).
    """

    dtype: dt.DType

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj._dtype is cls.dtype and obj._device.type == "cpu"

    def __call__(cls, *args, device=None):
        from ember.ops.creation import empty, tensor
        if len(args) == 1 and isinstance(args[0], Tensor):
            src = args[0]
            if src._dtype is not cls.dtype:
                raise TypeError(f"expected {cls.dtype} (got {src._dtype})")
            return src
        if len(args) == 1 and not isinstance(args[0], int):
            return tensor(args[0], dtype=cls.dtype, device=device)
        return empty(*args, dtype=cls.dtype, device=device) if args else \
            empty(0, dtype=cls.dtype, device=device)

    def __repr__(cls) -> str:
        return f"<class 'ember.{cls.__name__}'>"


LEGACY_TENSOR_TYPES = {}
for _d in dt.ALL_DTYPES:
    _name = f"{_d.scalar_name}Tensor"
    _doc = (f"torch's legacy ``{_name}``: ``isinstance`` accepts CPU {_d!r} tensors; calling "
            f"it builds one.\n\nExample:\n    >>> ember.{_name}(2, 3).shape, "
            f"ember.{_name}([1]).dtype\n    (ember.Size([2, 3]), {_d!r})\n"
            f"    >>> isinstance(ember.zeros(1, dtype={_d!r}), ember.{_name})\n    True\n")
    LEGACY_TENSOR_TYPES[_name] = tensortype(_name, (), {"dtype": _d, "__module__": "ember",
                                                         "__doc__": _doc})
    globals()[_name] = LEGACY_TENSOR_TYPES[_name]
    __all__.append(_name)


def set_default_tensor_type(t) -> None:
    """Set the default float dtype from a legacy type (``ember.DoubleTensor``) or its name
    (``'torch.DoubleTensor'``), as torch's deprecated ``set_default_tensor_type``.

    Raises:
        TypeError: the type is not a floating type.

    Example:
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.set_default_tensor_type(ember.DoubleTensor)
        >>> ember.get_default_dtype(), ember.tensor([1.5]).dtype
        (ember.float64, ember.float64)
        >>> ember.set_default_dtype(ember.float32)
    """
    import warnings

    from ember.core.dtype import set_default_dtype
    warnings.warn("ember.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "ember.set_default_dtype() and ember.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    dtype = _parse_type(t) if isinstance(t, str) else getattr(t, "dtype", None)
    if not isinstance(dtype, dt.DType) or not dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(dtype)


__all__ += ["set_default_tensor_type"]

globals().update(LEGACY_STORAGE_TYPES)
__all__ += list(LEGACY_STORAGE_TYPES)



# -- deprecated autocast spellings, DLPack, legacy storage helpers ------------------------------
def _autocast_deprecated(old: str, new: str) -> None:
    import warnings
    warnings.warn(f"ember.{old}() is deprecated. Please use ember.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated: ``is_autocast_enabled('cpu')``."""
    from ember.dispatch.autocast import is_autocast_enabled
    _autocast_deprecated("is_autocast_cpu_enabled", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated: ``set_autocast_enabled('cpu', enabled)``."""
    from ember.dispatch.autocast import set_autocast_enabled
    _autocast_deprecated("set_autocast_cpu_enabled", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """Deprecated: ``get_autocast_dtype('cpu')``."""
    from ember.dispatch.autocast import get_autocast_dtype
    _autocast_deprecated("get_autocast_cpu_dtype", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype) -> None:
    """Deprecated: ``set_autocast_dtype('cpu', dtype)``."""
    from ember.dispatch.autocast import set_autocast_dtype
    _autocast_deprecated("set_autocast_cpu_dtype", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def to_dlpack(tensor: Tensor):
    """A DLPack capsule over ``tensor``'s memory (``torch.to_dlpack``; the consumer owns it)."""
    _require("to_dlpack", tensor, "tensor")
    return tensor.__dlpack__()


__all__ += ["is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype",
            "set_autocast_cpu_dtype", "to_dlpack"]
