"""Functional forms of the pixel / channel shuffles, local response normalisation and ``pdist``.

Every function here is a composite of differentiable ember ops (reshape, permute, transpose,
pad, average pooling, index_select, vector norms), so autograd differentiates them without
rules of their own. Argument checks and messages follow torch's native kernels.
"""

from __future__ import annotations

import math

from ember.core.dtype import INTEGRAL
from ember.nn.functional.conv import pad
from ember.nn.functional.pooling import avg_pool2d
from ember.ops.creation import triu_indices
from ember.ops.reduction import linalg_vector_norm
from ember.tensor import Tensor

__all__ = ["pixel_shuffle", "pixel_unshuffle", "channel_shuffle", "local_response_norm",
           "pdist"]


def _int_arg(op: str, name: str, value, position: int = 2) -> int:
    """``value`` as an int, refusing floats and other types as torch's argument parser does
    (which takes a 0-d integer tensor as the int it holds)."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype.category == INTEGRAL:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be int, not "
                        f"{type(value).__name__}")
    return value


def _check_factor(op: str, input: Tensor, name: str, factor) -> int:
    factor = _int_arg(op, name, factor)
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive {name}, but got {factor}")
    return factor


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """Rearrange ``(*, C * r**2, H, W)`` into ``(*, C, H * r, W * r)`` (``F.pixel_shuffle``).

    Channel ``c * r * r + i * r + j`` of the input becomes the sub-pixel ``(i, j)`` of each
    ``r x r`` block of output channel ``c``, as torch orders it.

    Args:
        input: a tensor of at least 3 dims whose dim ``-3`` is divisible by ``r ** 2``.
        upscale_factor: ``r``, a positive int.

    Returns:
        A new tensor of shape ``(*, C, H * r, W * r)``.

    Raises:
        TypeError: ``upscale_factor`` is not an int.
        RuntimeError: fewer than 3 dims, ``r <= 0`` or channels not divisible by ``r ** 2``.

    Shape:
        ``(*, C * r**2, H, W) -> (*, C, H * r, W * r)``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.pixel_shuffle(ember.arange(4.).view(1, 4, 1, 1), 2).tolist()
        [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    r = _check_factor("pixel_shuffle", input, "upscale_factor", upscale_factor)
    *batch, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    nb = len(batch)
    x = input.reshape(*batch, c // (r * r), r, r, h, w)  # (*, C, r, r, H, W)
    x = x.permute(*range(nb), nb, nb + 3, nb + 1, nb + 4, nb + 2)  # (*, C, H, r, W, r)
    return x.reshape(*batch, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """Rearrange ``(*, C, H * r, W * r)`` into ``(*, C * r**2, H, W)`` (``F.pixel_unshuffle``).

    The exact inverse of :func:`pixel_shuffle` with the same ``r``.

    Args:
        input: a tensor of at least 3 dims whose last two dims are divisible by ``r``.
        downscale_factor: ``r``, a positive int.

    Returns:
        A new tensor of shape ``(*, C * r**2, H, W)``; an empty input comes back as a copy of
        its own shape, as torch's does.

    Raises:
        TypeError: ``downscale_factor`` is not an int.
        RuntimeError: fewer than 3 dims, ``r <= 0`` or height / width not divisible by ``r``.

    Shape:
        ``(*, C, H * r, W * r) -> (*, C * r**2, H, W)``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.pixel_unshuffle(ember.arange(4.).view(1, 1, 2, 2), 2).flatten().tolist()
        [0.0, 1.0, 2.0, 3.0]
    """
    r = _check_factor("pixel_unshuffle", input, "downscale_factor", downscale_factor)
    *batch, c, h, w = input.shape
    for name, dim, size in (("height", -2, h), ("width", -1, w)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({dim})={size} is not "
                               f"divisible by {r}")
    if not input.numel():
        return input.clone()  # torch hands an empty input back unchanged in shape
    nb = len(batch)
    x = input.reshape(*batch, c, h // r, r, w // r, r)  # (*, C, H, r, W, r)
    x = x.permute(*range(nb), nb, nb + 2, nb + 4, nb + 1, nb + 3)  # (*, C, r, r, H, W)
    return x.reshape(*batch, c * r * r, h // r, w // r)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Interleave the channels of ``groups`` groups (``F.channel_shuffle``, ShuffleNet).

    Channels ``(N, g * k, *)`` viewed as ``(N, g, k, *)`` are transposed to ``(N, k, g, *)``
    and flattened back, so output channel ``i * g + j`` is input channel ``j * k + i``.

    Args:
        input: a tensor ``(N, C, *)`` of more than 2 dims; ``C`` divisible by ``groups``.
        groups: the number of groups, a positive int.

    Returns:
        A new tensor of the input's shape.

    Raises:
        TypeError: ``groups`` is not an int.
        RuntimeError: 2 dims or fewer, ``groups <= 0`` or ``C`` not divisible by ``groups``.

    Shape:
        ``(N, C, *) -> (N, C, *)``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.channel_shuffle(ember.arange(4.).view(1, 4, 1), 2).flatten().tolist()
        [0.0, 2.0, 1.0, 3.0]
    """
    g = _int_arg("channel_shuffle", "groups", groups)
    if input.ndim <= 2:
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with "
                           f"sizes {list(input.shape)}")
    if g <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{g}")
    n, c, *rest = input.shape
    if c % g:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {g} groups.")
    x = input.reshape(n, g, c // g, *rest).transpose(1, 2)  # (N, g, k, *) -> (N, k, g, *)
    return x.reshape(n, c, *rest)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0) -> Tensor:
    """Normalise each channel by its neighbours' energy (``F.local_response_norm``, AlexNet).

    ``b_c = a_c / (k + alpha / size * sum_{c'} a_{c'}**2) ** beta`` with ``c'`` running over
    ``size`` channels around ``c`` (``size // 2`` before, ``(size - 1) // 2`` after; missing
    channels count as zero), computed as torch does: square, zero-pad the channel dim, average
    pool over it with a ``(size, 1)`` window, then scale, shift and raise to ``beta``. An empty
    input is returned as is.

    Args:
        input: a tensor ``(N, C, *)`` of at least 3 dims.
        size: the number of neighbouring channels in each window.
        alpha: multiplicative factor.
        beta: exponent.
        k: additive factor.

    Returns:
        A tensor of the input's shape.

    Raises:
        ValueError: fewer than 3 dims.

    Shape:
        ``(N, C, *) -> (N, C, *)``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.local_response_norm(ember.ones(1, 2, 1), 1, alpha=1.0, beta=1.0).flatten().tolist()
        [0.5, 0.5]
    """
    dim = input.ndim
    if dim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {dim} dimensions)")
    if input.numel() == 0:
        return input
    sizes = tuple(input.shape)
    rest = math.prod(sizes[2:])
    div = (input * input).reshape(sizes[0], 1, sizes[1], rest)  # (N, 1, C, L)
    div = pad(div, (0, 0, size // 2, (size - 1) // 2))
    div = avg_pool2d(div, (size, 1), stride=1).reshape(sizes)
    div = (div * alpha + k).pow(beta)
    return input / div


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """The ``p``-norm distance between every pair of rows, ``i < j`` (``F.pdist``).

    Pairs come in row-major order of the upper triangle (``(0, 1), (0, 2), ..., (1, 2), ...``),
    the order torch uses; ``p`` may be any non-negative number or ``inf``.

    Args:
        input: a floating-point tensor ``(N, M)``.
        p: the norm's order, ``>= 0``.

    Returns:
        A 1-d tensor of ``N * (N - 1) / 2`` distances.

    Raises:
        RuntimeError: not 2-d, not floating point, or ``p < 0``.

    Shape:
        ``(N, M) -> (N * (N - 1) / 2,)``.

    Example:
        >>> import ember
        >>> import ember.nn.functional as F
        >>> F.pdist(ember.tensor([[0., 0.], [3., 4.], [0., 1.]])).tolist()
        [5.0, 1.0, 4.242640495300293]
    """
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if not input.is_floating_point():
        raise RuntimeError("pdist only supports floating-point dtypes")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    n = input.shape[0]
    rows, cols = triu_indices(n, n, 1, device=input.device).unbind(0)  # (K,), (K,)
    diff = input.index_select(0, rows) - input.index_select(0, cols)  # (K, M)
    if p == 0:
        # the count of non-zero differences; spelt with sign so that, as in torch, the input
        # gets a zero gradient rather than none
        return diff.abs().sign().sum(1)
    return linalg_vector_norm(diff, p, dim=1)
