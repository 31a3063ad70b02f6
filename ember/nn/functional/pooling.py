"""Max, average, adaptive, LP and fractional max pooling and max unpooling
(``torch.nn.functional``).

Wrappers over the pooling operators of ``ember.ops.pooling`` (kernels registered by
``ember.nn.functional.conv``, see NOTE [Registering the conv family]): argument handling in
torch's style (defaults, output sizes, ``output_ratio``, random samples) lives here. LP pooling
is a composite of average (or, for an infinite norm, max) pooling.
"""

from __future__ import annotations

import math

import ember.ops.pooling as _ops
from ember.autograd.grad_mode import is_grad_enabled
from ember.nn.functional import conv as _registers_kernels  # noqa: F401
from ember.ops.random import rand
from ember.tensor import Tensor

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices",
           "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
           "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_unpool1d", "max_unpool2d", "max_unpool3d", "fractional_max_pool2d",
           "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices"]


def _stride(stride):
    return () if stride is None else stride


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """1-d max pooling returning ``(values, indices)``; see :func:`max_pool1d`.

    Example:
        >>> import ember.nn.functional as F
        >>> F.max_pool1d_with_indices(ember.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        (tensor([[[3., 2.]]]), tensor([[[1, 2]]]))
    """
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
    """2-d max pooling returning ``(values, indices)``; see :func:`max_pool2d`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.arange(16.0).reshape(1, 1, 4, 4)
        >>> values, indices = F.max_pool2d_with_indices(x, 2)
        >>> values.flatten().tolist(), indices.flatten().tolist()
        ([5.0, 7.0, 13.0, 15.0], [5, 7, 13, 15])
    """
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


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    """3-d max pooling returning ``(values, indices)``; see :func:`max_pool3d`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> values, indices = F.max_pool3d_with_indices(x, 2)
        >>> values.flatten().tolist(), indices.flatten().tolist()
        ([7.0], [7])
    """
    return _ops.max_pool3d_with_indices(input, kernel_size, _stride(stride), padding, dilation,
                                        ceil_mode)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,
               ceil_mode: bool = False, return_indices: bool = False):
    """3-d max pooling over ``(N, C, T, H, W)`` or ``(C, T, H, W)``
    (``torch.nn.functional.max_pool3d``); indices are flat ``T * H * W`` positions.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.max_pool3d(ember.ones(1, 1, 4, 5, 6), 2, ceil_mode=True).shape
        ember.Size([1, 1, 2, 3, 3])
    """
    out = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
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


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-d average pooling (``torch.nn.functional.avg_pool3d``); float32, float64 and int64.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.avg_pool3d(ember.ones(1, 1, 4, 4, 4), 2, divisor_override=4).sum().item()
        16.0
    """
    return _ops.avg_pool3d(input, kernel_size, _stride(stride), padding, ceil_mode,
                           count_include_pad, divisor_override)


def _with_default(output_size, input: Tensor):
    """torch's ``_list_with_default``: ``None`` entries of a sequence take the input's size."""
    if isinstance(output_size, int):
        return output_size
    size = list(output_size)
    if input.dim() <= len(size):
        raise ValueError(f"Input dimension should be at least {len(size) + 1}")
    return [d if v is None else v for v, d in zip(size, input.shape[-len(size):])]


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """1-d adaptive average pooling to ``output_size`` (``torch.nn.functional``).

    Example:
        >>> import ember.nn.functional as F
        >>> F.adaptive_avg_pool1d(ember.tensor([[[1.0, 2.0, 3.0, 5.0]]]), 2)
        tensor([[[1.5000, 4.0000]]])
    """
    return _ops.adaptive_avg_pool1d(input, output_size)


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:
    """2-d adaptive average pooling; ``None`` in ``output_size`` keeps that input size.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.adaptive_avg_pool2d(ember.ones(1, 3, 5, 7), (2, None)).shape
        ember.Size([1, 3, 2, 7])
    """
    return _ops.adaptive_avg_pool2d(input, _with_default(output_size, input))


def adaptive_avg_pool3d(input: Tensor, output_size) -> Tensor:
    """3-d adaptive average pooling; ``None`` in ``output_size`` keeps that input size.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.adaptive_avg_pool3d(ember.ones(1, 3, 5, 7, 4), (2, None, 1)).shape
        ember.Size([1, 3, 2, 7, 1])
    """
    return _ops.adaptive_avg_pool3d(input, _with_default(output_size, input))


def adaptive_max_pool1d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """1-d adaptive max pooling returning ``(values, indices)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.adaptive_max_pool1d_with_indices(ember.tensor([[[1.0, 4.0, 3.0, 2.0]]]), 2)
        (tensor([[[4., 3.]]]), tensor([[[1, 2]]]))
    """
    return _ops.adaptive_max_pool1d(input, output_size)


def adaptive_max_pool1d(input: Tensor, output_size, return_indices: bool = False):
    """1-d adaptive max pooling (``torch.nn.functional.adaptive_max_pool1d``).

    Example:
        >>> import ember.nn.functional as F
        >>> F.adaptive_max_pool1d(ember.tensor([[[1.0, 4.0, 3.0, 2.0]]]), 1)
        tensor([[[4.]]])
    """
    out = _ops.adaptive_max_pool1d(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool2d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """2-d adaptive max pooling returning ``(values, indices)``.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.arange(16.0).reshape(1, 4, 4)
        >>> values, indices = F.adaptive_max_pool2d_with_indices(x, 1)
        >>> values.flatten().tolist(), indices.flatten().tolist()
        ([15.0], [15])
    """
    return _ops.adaptive_max_pool2d(input, _with_default(output_size, input))


def adaptive_max_pool2d(input: Tensor, output_size, return_indices: bool = False):
    """2-d adaptive max pooling (``torch.nn.functional.adaptive_max_pool2d``).

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.adaptive_max_pool2d(ember.arange(16.).view(1, 4, 4), 2).tolist()
        [[[5.0, 7.0], [13.0, 15.0]]]
    """
    out = adaptive_max_pool2d_with_indices(input, output_size)
    return out if return_indices else out[0]


def adaptive_max_pool3d_with_indices(input: Tensor, output_size, return_indices: bool = True):
    """3-d adaptive max pooling returning ``(values, indices)``.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.arange(8.0).reshape(1, 2, 2, 2)
        >>> values, indices = F.adaptive_max_pool3d_with_indices(x, (1, 1, 2))
        >>> values.flatten().tolist(), indices.flatten().tolist()
        ([6.0, 7.0], [6, 7])
    """
    return _ops.adaptive_max_pool3d(input, _with_default(output_size, input))


def adaptive_max_pool3d(input: Tensor, output_size, return_indices: bool = False):
    """3-d adaptive max pooling (``torch.nn.functional.adaptive_max_pool3d``).

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.adaptive_max_pool3d(ember.arange(8.).view(1, 2, 2, 2), 1).tolist()
        [[[[7.0]]]]
    """
    out = adaptive_max_pool3d_with_indices(input, output_size)
    return out if return_indices else out[0]


# -- LP pooling -------------------------------------------------------------------------------
def _lp_pool(nd: int, input: Tensor, norm_type, kernel_size, stride, ceil_mode: bool):
    if isinstance(norm_type, int | float) and math.isinf(norm_type):
        pool = (max_pool1d, max_pool2d, max_pool3d)[nd - 1]
        if norm_type > 0:  # the limit p -> inf: the largest magnitude
            return pool(input.abs(), kernel_size, stride, 0, ceil_mode=ceil_mode)
        return -pool(-input.abs(), kernel_size, stride, 0, ceil_mode=ceil_mode)
    if nd == 1:
        if not isinstance(kernel_size, int):
            raise TypeError(f"mul(): argument 'other' (position 1) must be Tensor, not "
                            f"{type(kernel_size).__name__}")
        area = kernel_size
    else:
        area = math.prod(_tuple(kernel_size, nd, unpack=True))
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[nd - 1]
    out = pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # sign * relu(|.|) is the identity with a zero gradient where a window sums to zero
    return (out.sign() * out.abs().relu()).mul(area).pow(1.0 / norm_type)


def _tuple(v, n: int, unpack: bool = False) -> tuple:
    if not isinstance(v, list | tuple):
        return (v,) * n
    if unpack and len(v) != n:  # torch unpacks the kernel size as a tuple of n
        raise ValueError(f"not enough values to unpack (expected {n}, got {len(v)})"
                         if len(v) < n else f"too many values to unpack (expected {n})")
    return tuple(v)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: int, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """1-d power-average pooling: ``(sum over the window of x^p)^(1/p)``
    (``torch.nn.functional.lp_pool1d``).

    Computed as torch does, from average pooling of ``x^p`` times the window size (so
    ``ceil_mode``'s partial windows are scaled to full size); ``norm_type=inf`` is max pooling
    of ``|x|`` (``-inf``: the smallest ``|x|``).

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.lp_pool1d(ember.tensor([[3., 4., 1., 0.]]), 2, 2).tolist()
        [[5.0, 1.0]]
    """
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """2-d power-average pooling (``torch.nn.functional.lp_pool2d``); see :func:`lp_pool1d`.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.lp_pool2d(ember.ones(1, 4, 4), 1, 2).tolist()
        [[[4.0, 4.0], [4.0, 4.0]]]
    """
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None,
              ceil_mode: bool = False) -> Tensor:
    """3-d power-average pooling (``torch.nn.functional.lp_pool3d``); see :func:`lp_pool1d`.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.lp_pool3d(ember.ones(1, 2, 2, 2), 2, 2).item()
        2.8284270763397217
    """
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# -- max unpooling ----------------------------------------------------------------------------
def _unpool_args(nd: int, input: Tensor, kernel_size, stride, padding, output_size):
    """kernel, stride, padding as ``nd``-tuples and the output size (torch's defaults/checks)."""
    k = _tuple(kernel_size, nd)
    s = _tuple(stride, nd) if stride is not None else k
    p = _tuple(padding, nd)
    default = [(input.shape[input.dim() - nd + d] - 1) * s[d] + k[d] - 2 * p[d]
               for d in range(nd)]
    if output_size is None:
        return k, s, p, default
    if len(output_size) == nd + 2:
        output_size = output_size[2:]
    if len(output_size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(nd):
        lo, hi = default[d] - s[d], default[d] + s[d]
        if not lo < output_size[d] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f"{lo} and {hi})")
    return k, s, p, [int(v) for v in output_size]


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of :func:`max_pool1d`: values back at their indices, zeros elsewhere.

    Shape: ``(N, C, L)`` or ``(C, L)`` -> ``(..., L_out)``, ``L_out = (L - 1) * stride + kernel
    - 2 * padding`` unless ``output_size`` (within one stride of it) says otherwise.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> v, i = F.max_pool1d(ember.tensor([[1., 3., 2., 0.]]), 2, return_indices=True)
        >>> F.max_unpool1d(v, i, 2).tolist()
        [[0.0, 3.0, 2.0, 0.0]]
    """
    *_, size = _unpool_args(1, input, kernel_size, stride, padding, output_size)
    return _ops.max_unpool2d(input.unsqueeze(-1), indices.unsqueeze(-1), size + [1]).squeeze(-1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of :func:`max_pool2d` (``torch.nn.functional.max_unpool2d``); see
    :func:`max_unpool1d`.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> v, i = F.max_pool2d(ember.ones(1, 4, 4), 2, return_indices=True)
        >>> F.max_unpool2d(v, i, 2, output_size=(5, 5)).shape
        ember.Size([1, 5, 5])
    """
    *_, size = _unpool_args(2, input, kernel_size, stride, padding, output_size)
    return _ops.max_unpool2d(input, indices, size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0,
                 output_size=None) -> Tensor:
    """Partial inverse of :func:`max_pool3d` (``torch.nn.functional.max_unpool3d``).

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> v, i = F.max_pool3d(ember.ones(1, 4, 4, 4), 2, return_indices=True)
        >>> F.max_unpool3d(v, i, 2).shape
        ember.Size([1, 4, 4, 4])
    """
    _, s, p, size = _unpool_args(3, input, kernel_size, stride, padding, output_size)
    return _ops.max_unpool3d(input, indices, size, list(s), list(p))


# -- fractional max pooling -------------------------------------------------------------------
def _fractional(nd: int, input: Tensor, kernel_size, output_size, output_ratio, samples):
    name = f"fractional_max_pool{nd}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        if nd == 2 and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or tuple "
                             "of Ints.")
        ratio = _tuple(output_ratio, nd)
        output_size = [int(input.shape[input.dim() - nd + d] * ratio[d]) for d in range(nd)]
    if samples is None:
        n = 1 if input.dim() == nd + 1 else input.size(0)
        if not input.dtype.is_floating_point:
            raise NotImplementedError(f'"check_uniform_bounds" not implemented for '
                                      f"'{input.dtype.scalar_name}'")
        samples = rand(n, input.size(-nd - 1), nd, dtype=input.dtype, device=input.device)
    elif samples.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{name}' is not differentiable with respect to "
                           "argument 'random_samples'. This input cannot have requires_grad "
                           "True.")
    op = _ops.fractional_max_pool2d if nd == 2 else _ops.fractional_max_pool3d
    return op(input, kernel_size, output_size, samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None):
    """2-d fractional max pooling returning ``(values, indices)``; see
    :func:`fractional_max_pool2d`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.arange(25.0).reshape(1, 1, 5, 5)
        >>> values, indices = F.fractional_max_pool2d_with_indices(x, 2, output_size=2)
        >>> values.shape, ember.equal(values, x.flatten()[indices])  # indices into each plane
        (ember.Size([1, 1, 2, 2]), True)
    """
    return _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """2-d fractional max pooling (``torch.nn.functional.fractional_max_pool2d``).

    Args:
        kernel_size: window size (int or pair).
        output_size: ``(H_out, W_out)``; or ``output_ratio`` of the input size (a pair).
        return_indices: also return the flat ``H * W`` index of each maximum.
        _random_samples: ``(N, C, 2)`` samples in ``[0, 1)`` that place the windows (drawn
            from ember's generator when None); equal samples give torch's windows exactly.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.fractional_max_pool2d(ember.ones(1, 2, 9, 9), 2, output_ratio=(0.5, 0.5)).shape
        ember.Size([1, 2, 4, 4])
    """
    out = _fractional(2, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None,
                                       output_ratio=None, return_indices: bool = False,
                                       _random_samples: Tensor | None = None):
    """3-d fractional max pooling returning ``(values, indices)``.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.rand(1, 1, 5, 5, 5)
        >>> values, indices = F.fractional_max_pool3d_with_indices(x, 2, output_ratio=0.5)
        >>> values.shape, indices.dtype
        (ember.Size([1, 1, 2, 2, 2]), ember.int64)
    """
    return _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """3-d fractional max pooling (``torch.nn.functional.fractional_max_pool3d``); samples
    ``(N, C, 3)``; see :func:`fractional_max_pool2d`.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.fractional_max_pool3d(ember.ones(1, 1, 6, 6, 6), 2, output_size=3).shape
        ember.Size([1, 1, 3, 3, 3])
    """
    out = _fractional(3, input, kernel_size, output_size, output_ratio, _random_samples)
    return out if return_indices else out[0]
