"""Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d (torch.nn's API).

Weights start as torch's: ``kaiming_uniform_(a=sqrt(5))``, bias ``U(-1/sqrt(fan_in),
1/sqrt(fan_in))``. Non-zero padding modes pad explicitly (``F.pad``) and convolve unpadded.
"""

from __future__ import annotations

import math

from ember.nn import init
from ember.nn.functional import conv as F
from ember.nn.modules.module import Module
from ember.ops.creation import empty
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d",
           "ConvTranspose3d"]

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}
_PADDING_STRINGS = {"same", "valid"}


def _ntuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, list | tuple) else (v,) * n


class _ConvNd(Module):
    """Shared parameters, checks, initialisation and repr of the convolution layers."""

    _nd = 2

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding,
                 dilation, transposed: bool, output_padding, groups: int, bias: bool,
                 padding_mode: str, device=None, dtype=None) -> None:
        super().__init__()
        n = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.kernel_size, self.stride = _ntuple(kernel_size, n), _ntuple(stride, n)
        self.dilation, self.output_padding = _ntuple(dilation, n), _ntuple(output_padding, n)
        if isinstance(padding, str):
            if padding not in _PADDING_STRINGS:
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{_PADDING_STRINGS}")
            if padding == "same" and any(s != 1 for s in self.stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            self.padding = padding
        else:
            self.padding = _ntuple(padding, n)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {_PADDING_MODES}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.transposed, self.groups, self.padding_mode = transposed, groups, padding_mode
        self._reversed_padding_repeated_twice = self._explicit_padding()
        shape = (in_channels, out_channels // groups) if transposed else \
            (out_channels, in_channels // groups)
        self.weight = Parameter(empty(*shape, *self.kernel_size, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _explicit_padding(self) -> list:
        """``F.pad`` amounts (last dim first) equivalent to ``self.padding``."""
        if self.padding == "valid":
            return [0, 0] * self._nd
        out = []
        for i in reversed(range(self._nd)):
            if self.padding == "same":
                total = self.dilation[i] * (self.kernel_size[i] - 1)
                out += [total // 2, total - total // 2]
            else:
                out += [self.padding[i], self.padding[i]]
        return out

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        n = self._nd
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * n:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    _fn = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         False, 0, groups, bias, padding_mode, device, dtype)

    def _conv_forward(self, input: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(padded, weight, bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, weight, bias, self.stride, self.padding, self.dilation, self.groups)

    def forward(self, input: Tensor) -> Tensor:
        return self._conv_forward(input, self.weight, self.bias)


class Conv1d(_Conv):
    """1-d convolution layer (``torch.nn.Conv1d``).

    Args:
        in_channels, out_channels: channel counts (both divisible by ``groups``).
        kernel_size, stride, padding (int, tuple, ``'same'`` or ``'valid'``), dilation.
        groups: blocked connections; bias: learnable bias; padding_mode: ``'zeros'``,
        ``'reflect'``, ``'replicate'`` or ``'circular'``.

    Shape: ``(N, C_in, L)`` or ``(C_in, L)`` -> ``(N, C_out, L_out)``.

    Example:
        >>> import ember
        >>> ember.nn.Conv1d(2, 4, 3, padding=1)(ember.ones(1, 2, 5)).shape
        ember.Size([1, 4, 5])
    """

    _nd = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    """2-d convolution layer (``torch.nn.Conv2d``); arguments as :class:`Conv1d`.

    Shape: ``(N, C_in, H, W)`` or ``(C_in, H, W)`` -> ``(N, C_out, H_out, W_out)``.

    Example:
        >>> import ember
        >>> ember.nn.Conv2d(1, 8, 3, stride=2)(ember.ones(2, 1, 9, 9)).shape
        ember.Size([2, 8, 4, 4])
    """

    _nd = 2
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    """3-d convolution layer (``torch.nn.Conv3d``); arguments as :class:`Conv1d`.

    Shape: ``(N, C_in, T, H, W)`` or ``(C_in, T, H, W)`` -> ``(N, C_out, T_out, H_out, W_out)``.

    Example:
        >>> import ember
        >>> ember.nn.Conv3d(2, 4, 3, padding=1)(ember.ones(1, 2, 4, 5, 6)).shape
        ember.Size([1, 4, 4, 5, 6])
    """

    _nd = 3
    _fn = staticmethod(F.conv3d)


class _ConvTranspose(_ConvNd):
    _fn = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None) -> None:
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{self.__class__.__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         True, output_padding, groups, bias, padding_mode, device, dtype)

    def _output_padding(self, input: Tensor, output_size) -> tuple:
        """output_padding that yields ``output_size`` (torch's ``_ConvTransposeNd`` rule)."""
        if output_size is None:
            return self.output_padding
        n = self._nd
        lead = 2 if input.ndim == n + 2 else 1
        size = list(output_size)
        if len(size) == lead + n:
            size = size[lead:]
        if len(size) != n:
            raise ValueError(f"ConvTranspose{n}D: for {input.ndim}D input, output_size must "
                             f"have {n} or {lead + n} elements (got {len(size)})")
        lo = [(input.shape[d + lead] - 1) * self.stride[d] - 2 * self.padding[d] +
              self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(n)]
        hi = [lo[d] + self.stride[d] - 1 for d in range(n)]
        if any(s < a or s > b for s, a, b in zip(size, lo, hi)):
            raise ValueError(f"requested an output size of {size}, but valid sizes range "
                             f"from {lo} to {hi} (for an input of {input.shape[lead:]})")
        return tuple(s - a for s, a in zip(size, lo))

    def forward(self, input: Tensor, output_size=None) -> Tensor:
        op = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, op,
                              self.groups, self.dilation)


class ConvTranspose1d(_ConvTranspose):
    """1-d transposed convolution layer (``torch.nn.ConvTranspose1d``).

    Weight ``(C_in, C_out / groups, k)``; ``forward(input, output_size=None)`` picks
    ``output_padding`` to reach ``output_size``.

    Example:
        >>> import ember
        >>> ember.nn.ConvTranspose1d(2, 3, 3, stride=2)(ember.ones(1, 2, 4)).shape
        ember.Size([1, 3, 9])
    """

    _nd = 1
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTranspose):
    """2-d transposed convolution layer (``torch.nn.ConvTranspose2d``).

    Example:
        >>> import ember
        >>> m = ember.nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1)
        >>> m(ember.ones(1, 4, 5, 5), output_size=[10, 10]).shape
        ember.Size([1, 2, 10, 10])
    """

    _nd = 2
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTranspose):
    """3-d transposed convolution layer (``torch.nn.ConvTranspose3d``).

    Example:
        >>> import ember
        >>> m = ember.nn.ConvTranspose3d(2, 3, 3, stride=2)
        >>> m(ember.ones(1, 2, 2, 3, 4), output_size=[6, 8, 10]).shape
        ember.Size([1, 3, 6, 8, 10])
    """

    _nd = 3
    _fn = staticmethod(F.conv_transpose3d)
