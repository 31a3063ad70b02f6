"""Autocast-aware custom Functions: ``custom_fwd`` and ``custom_bwd`` (``torch.amp``'s)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from ember.backends.autocast import cast_floating
from ember.dispatch.autocast import autocast, get_autocast_dtype, is_autocast_enabled

__all__ = ["custom_fwd", "custom_bwd"]


def custom_fwd(fwd: Callable | None = None, *, device_type: str,
               cast_inputs=None) -> Callable:
    """Decorate a custom ``Function``'s ``forward`` so its backward sees the same autocast state.

    With ``cast_inputs`` (a floating dtype) and autocast on, the forward's floating tensor
    arguments are cast to it and the forward runs with autocast off; without it, the forward
    runs in the surrounding autocast state. Either way ``custom_bwd`` restores that state.

    Example:
        >>> import ember
        >>> from ember.amp import custom_bwd, custom_fwd
        >>> class Square(ember.autograd.Function):
        ...     @staticmethod
        ...     @custom_fwd(device_type="cpu", cast_inputs=ember.float32)
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @custom_bwd(device_type="cpu")
        ...     def backward(ctx, g):
        ...         return 2 * ctx.saved_tensors[0] * g
        >>> with ember.autocast("cpu"):
        ...     Square.apply(ember.ones(2, dtype=ember.bfloat16)).dtype
        ember.float32
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        autocast_on = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if autocast_on:
            with autocast(device_type=device_type, enabled=False):
                args, kwargs = cast_floating(args, kwargs, cast_inputs, device_type)
                return fwd(*args, **kwargs)
        return fwd(*args, **kwargs)
    return decorate_fwd


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """Decorate a custom ``Function``'s ``backward`` to run in the autocast state its
    ``custom_fwd`` forward ran in.

    Example:
        >>> class Scale(ember.autograd.Function):
        ...     @staticmethod
        ...     @ember.amp.custom_fwd(device_type="cpu")
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     @ember.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, grad):
        ...         return grad * 2
        >>> x = ember.ones(2, requires_grad=True)
        >>> with ember.autocast("cpu"):
        ...     Scale.apply(x).sum().backward()
        >>> x.grad
        tensor([2., 2.])
    """
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)
    return decorate_bwd
