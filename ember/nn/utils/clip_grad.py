"""Gradient clipping (torch.nn.utils.clip_grad_*), in place and under ``no_grad``."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable

from ember.autograd.grad_mode import no_grad
from ember.ops.creation import tensor
from ember.ops.reduction import linalg_vector_norm
from ember.ops.shape import stack
from ember.tensor import Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm",
           "clip_grads_with_norm_"]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def get_total_norm(tensors: Iterable[Tensor] | Tensor, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """The ``norm_type``-norm of all ``tensors`` together (as if concatenated).

    Example:
        >>> from ember.nn.utils import get_total_norm
        >>> get_total_norm([ember.tensor([3.0]), ember.tensor([4.0])])
        tensor(5.)
        >>> get_total_norm([ember.tensor([3.0]), ember.tensor([-4.0])], norm_type=float("inf"))
        tensor(4.)
    """
    tensors = [t for t in _as_list(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = [linalg_vector_norm(t, norm_type) for t in tensors]
        total = linalg_vector_norm(stack(norms), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from "
                           "`parameters` is non-finite, so it cannot be clipped. To disable "
                           "this error and scale the gradients by the non-finite norm anyway, "
                           "set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach=None) -> None:
    """Scale gradients by ``min(1, max_norm / (total_norm + 1e-6))`` in place.

    Example:
        >>> from ember.nn.utils import clip_grads_with_norm_, get_total_norm
        >>> p = ember.nn.Parameter(ember.zeros(2))
        >>> p.grad = ember.tensor([3.0, 4.0])
        >>> clip_grads_with_norm_([p], 1.0, get_total_norm([p.grad]))
        >>> p.grad
        tensor([0.6000, 0.8000])
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Rescale gradients so their total ``norm_type``-norm is at most ``max_norm``.

    Returns:
        The total norm before clipping (a 0-d tensor).

    Example:
        >>> import ember
        >>> p = ember.nn.Parameter(ember.ones(4))
        >>> p.grad = ember.full((4,), 3.0)
        >>> round(ember.nn.utils.clip_grad_norm_([p], 1.0).item(), 4)
        6.0
    """
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite)
    clip_grads_with_norm_(params, max_norm, total)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated alias of :func:`clip_grad_norm_`.

    Example:
        >>> import warnings
        >>> from ember.nn.utils import clip_grad_norm
        >>> p = ember.nn.Parameter(ember.zeros(2))
        >>> p.grad = ember.tensor([3.0, 4.0])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", FutureWarning)
        ...     clip_grad_norm([p], 1.0)
        tensor(5.)
    """
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient into ``[-clip_value, clip_value]`` in place.

    Example:
        >>> from ember.nn.utils import clip_grad_value_
        >>> p = ember.nn.Parameter(ember.zeros(3))
        >>> p.grad = ember.tensor([-3.0, 0.5, 3.0])
        >>> clip_grad_value_([p], 1.0)
        >>> p.grad
        tensor([-1.0000,  0.5000,  1.0000])
    """
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
