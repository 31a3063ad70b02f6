"""Max, average and adaptive pooling (``torch.nn.functional``).

Wrappers over the pooling operators of ``ember.ops.conv`` (kernels registered by
``ember.nn.functional.conv``, see NOTE [Registering the conv family]).
"""

from __future__ import annotations

import ember.ops.conv as _ops
from ember.nn.functional import conv as _registers_kernels  # noqa: F401
from ember.tensor import Tensor

__all__ = ["max_pool1d", "max_pool2d", "max_pool1d_with_indices", "max_pool2d_with_indices",
           "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d_with_indices"]


def _stride(stride):
    return () if stride is None else stride


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """1-d max pooling returning ``(values, indices)``; see :func:`max_pool1d`."""
    return _ops.max_pool1d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                        ceil_mode)


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """1-d max pooling over ``(N, C, L)`` or ``(C, L)`` (``torch.nn.functional.max_pool1d``).

    Args:
        kernel_size, stride (default: kernel_size), padding (at most half the effective
        kernel), dilation: ints or 1-tuples.
        ceil_mode: round the output length up (windows may start inside the right padding).
        return_indices: also return the int64 positions of the maxima along ``L``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.max_pool1d(ember.tensor([[1., 3., 2., 5.]]), 2).tolist()
        [[3.0, 5.0]]
    """
    out = max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """2-d max pooling returning ``(values, indices)``; see :func:`max_pool2d`."""
    return _ops.max_pool2d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                        ceil_mode)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """2-d max pooling over ``(N, C, H, W)`` or ``(C, H, W)`` (``torch.nn.functional.max_pool2d``).

    Indices (``return_indices=True``) are flat positions in each ``H * W`` plane, as
    ``max_unpool2d`` expects.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.max_pool2d(ember.arange(16.).view(1, 1, 4, 4), 2).shape
        ember.Size([1, 1, 2, 2])
    """
    out = max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return out if return_indices else out[0]


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-d average pooling (``torch.nn.functional.avg_pool1d``).

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.avg_pool1d(ember.tensor([[1., 3., 2., 6.]]), 2).tolist()
        [[2.0, 4.0]]
    """
    return _ops.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-d average pooling (``torch.nn.functional.avg_pool2d``).

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.avg_pool2d(ember.ones(1, 1, 4, 4), 2, padding=1, count_include_pad=False).shape
        ember.Size([1, 1, 3, 3])
    """
    return _ops.avg_pool2d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad, divisor_override)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """1-d adaptive average pooling to ``output_size`` (``torch.nn.functional``)."""
    return _ops.adaptive_avg_pool1d(input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """2-d adaptive average pooling; ``None`` in ``output_size`` keeps that input size.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.adaptive_avg_pool2d(ember.ones(1, 3, 5, 7), (2, None)).shape
        ember.Size([1, 3, 2, 7])
    """
    return _ops.adaptive_avg_pool2d(input, output_size)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """1-d adaptive max pooling returning ``(values, indices)``."""
    return _ops.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """1-d adaptive max pooling (``torch.nn.functional.adaptive_max_pool1d``)."""
    out = _ops.adaptive_max_pool1d(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """2-d adaptive max pooling returning ``(values, indices)``."""
    return _ops.adaptive_max_pool2d(input, output_size)


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """2-d adaptive max pooling (``torch.nn.functional.adaptive_max_pool2d``).

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.adaptive_max_pool2d(ember.arange(16.).view(1, 4, 4), 2).tolist()
        [[[5.0, 7.0], [13.0, 15.0]]]
    """
    out = _ops.adaptive_max_pool2d(input, output_size)
    return out if return_indices else out[0]
