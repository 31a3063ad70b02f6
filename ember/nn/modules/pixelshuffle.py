"""PixelShuffle, PixelUnshuffle and ChannelShuffle.

This file also holds local response normalisation (``LocalResponseNorm``), whose functional
form lives beside the shuffles in ``ember.nn.functional.vision``.
"""

from __future__ import annotations

from ember.nn.functional import vision as Fv
from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle", "LocalResponseNorm"]


class PixelShuffle(Module):
    """Move channels into space: ``(*, C * r**2, H, W) -> (*, C, H * r, W * r)``.

    Mirrors ``torch.nn.PixelShuffle``; see :func:`ember.nn.functional.pixel_shuffle`.

    Args:
        upscale_factor: ``r``, a positive int.

    Shape:
        ``(*, C * r**2, H, W) -> (*, C, H * r, W * r)``, ``*`` any number of leading dims.

    Example:
        >>> import ember
        >>> ember.nn.PixelShuffle(2)(ember.zeros(1, 8, 3, 3)).shape
        ember.Size([1, 2, 6, 6])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return Fv.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """Move space into channels: ``(*, C, H * r, W * r) -> (*, C * r**2, H, W)``.

    Mirrors ``torch.nn.PixelUnshuffle``, the inverse of :class:`PixelShuffle`.

    Args:
        downscale_factor: ``r``, a positive int.

    Shape:
        ``(*, C, H * r, W * r) -> (*, C * r**2, H, W)``.

    Example:
        >>> import ember
        >>> ember.nn.PixelUnshuffle(2)(ember.zeros(1, 2, 6, 6)).shape
        ember.Size([1, 8, 3, 3])
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        return Fv.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups (``torch.nn.ChannelShuffle``).

    Args:
        groups: the number of groups; must divide the channel count.

    Shape:
        ``(N, C, *) -> (N, C, *)``, at least 3 dims.

    Example:
        >>> import ember
        >>> ember.nn.ChannelShuffle(2)(ember.arange(4.).view(1, 4, 1)).flatten().tolist()
        [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        return Fv.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class LocalResponseNorm(Module):
    """Local response normalisation across channels (``torch.nn.LocalResponseNorm``).

    ``b_c = a_c * (k + alpha / size * sum of a_{c'}**2 over size neighbouring channels) **
    -beta``; see :func:`ember.nn.functional.local_response_norm`.

    Args:
        size: the number of neighbouring channels in each window.
        alpha: multiplicative factor.
        beta: exponent.
        k: additive factor.

    Shape:
        ``(N, C, *) -> (N, C, *)``, at least 3 dims.

    Example:
        >>> import ember
        >>> ember.nn.LocalResponseNorm(2)(ember.ones(2, 4, 3, 3)).shape
        ember.Size([2, 4, 3, 3])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return Fv.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
