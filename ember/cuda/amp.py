"""``ember.cuda.amp``: torch.cuda.amp's deprecated spellings of ``ember.amp`` for ``"cuda"``.

Each warns ``FutureWarning`` with torch's message, then behaves as ``ember.amp``'s object for
device ``"cuda"``: without a CUDA backend, ``autocast`` and ``GradScaler`` disable themselves
with torch's ``UserWarning``, so ``scaler.scale(loss)`` returns ``loss`` and
``scaler.step(opt)`` just steps, as on a CPU-only torch.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable

from ember.amp import GradScaler as _GradScaler
from ember.amp import autocast as _autocast
from ember.amp import custom_bwd as _custom_bwd
from ember.amp import custom_fwd as _custom_fwd
from ember.core import dtype as dt

__all__ = ["autocast", "GradScaler", "custom_fwd", "custom_bwd"]


class autocast(_autocast):  # noqa: N801  (torch's name)
    """``ember.amp.autocast("cuda", ...)`` under torch.cuda.amp's deprecated name.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     with ember.cuda.amp.autocast():
        ...         ember.is_autocast_enabled("cuda")
        False
    """

    def __init__(self, enabled: bool = True, dtype: dt.DType = dt.float16,
                 cache_enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.autocast(args...)` is deprecated. Please use "
                      "`torch.amp.autocast('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """``ember.amp.GradScaler("cuda", ...)`` under torch.cuda.amp's deprecated name.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.cuda.amp.GradScaler().is_enabled()
        False
    """

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        warnings.warn("`torch.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`torch.amp.GradScaler('cuda', args...)` instead.", FutureWarning,
                      stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def custom_fwd(fwd: Callable | None = None, *, cast_inputs=None) -> Callable:
    """``ember.amp.custom_fwd(..., device_type="cuda")`` (deprecated; warns FutureWarning)."""
    warnings.warn("`torch.cuda.amp.custom_fwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_fwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    if fwd is None:
        return functools.partial(_custom_fwd, device_type="cuda", cast_inputs=cast_inputs)
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd: Callable) -> Callable:
    """``ember.amp.custom_bwd(..., device_type="cuda")`` (deprecated; warns FutureWarning)."""
    warnings.warn("`torch.cuda.amp.custom_bwd(args...)` is deprecated. Please use "
                  "`torch.amp.custom_bwd(args..., device_type='cuda')` instead.", FutureWarning,
                  stacklevel=2)
    return _custom_bwd(bwd, device_type="cuda")
