"""Pooling layers and Fold/Unfold (torch.nn's API); parameter-free wrappers of the
functional forms in ``ember.nn.functional.pooling`` and ``ember.nn.functional.conv``."""

from __future__ import annotations

from ember.nn.functional import conv as Fc
from ember.nn.functional import pooling as F
from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d", "AdaptiveAvgPool1d",
           "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Fold", "Unfold",
           "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class _MaxPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding, self.dilation,
                              ceil_mode=self.ceil_mode, return_indices=self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """1-d max pooling (``torch.nn.MaxPool1d``): ``(N, C, L)`` or ``(C, L)``.

    Example:
        >>> import ember
        >>> ember.nn.MaxPool1d(2)(ember.tensor([[1., 3., 2., 5.]])).tolist()
        [[3.0, 5.0]]
    """

    _fn = staticmethod(F.max_pool1d)


class MaxPool2d(_MaxPoolNd):
    """2-d max pooling (``torch.nn.MaxPool2d``); ``return_indices`` gives flat ``H * W`` indices.

    Example:
        >>> import ember
        >>> ember.nn.MaxPool2d(2, ceil_mode=True)(ember.ones(1, 1, 5, 5)).shape
        ember.Size([1, 1, 3, 3])
    """

    _fn = staticmethod(F.max_pool2d)


class AvgPool1d(Module):
    """1-d average pooling (``torch.nn.AvgPool1d``).

    Example:
        >>> import ember
        >>> ember.nn.AvgPool1d(2)(ember.tensor([[1., 3., 2., 6.]])).tolist()
        [[2.0, 4.0]]
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad = count_include_pad

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """2-d average pooling (``torch.nn.AvgPool2d``), with ``divisor_override``.

    Example:
        >>> import ember
        >>> ember.nn.AvgPool2d(2)(ember.ones(1, 1, 4, 4)).shape
        ember.Size([1, 1, 2, 2])
    """

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class _Adaptive(Module):
    _fn = None

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Adaptive 1-d average pooling to ``output_size`` (``torch.nn.AdaptiveAvgPool1d``)."""

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool1d(input, self.output_size)


class AdaptiveAvgPool2d(_Adaptive):
    """Adaptive 2-d average pooling (``torch.nn.AdaptiveAvgPool2d``); ``None`` keeps a size.

    Example:
        >>> import ember
        >>> ember.nn.AdaptiveAvgPool2d((1, 1))(ember.ones(2, 3, 5, 7)).shape
        ember.Size([2, 3, 1, 1])
    """

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool2d(input, self.output_size)


class AdaptiveMaxPool1d(_Adaptive):
    """Adaptive 1-d max pooling (``torch.nn.AdaptiveMaxPool1d``)."""

    def forward(self, input: Tensor):
        return F.adaptive_max_pool1d(input, self.output_size, self.return_indices)


class AdaptiveMaxPool2d(_Adaptive):
    """Adaptive 2-d max pooling (``torch.nn.AdaptiveMaxPool2d``), optionally with indices.

    Example:
        >>> import ember
        >>> ember.nn.AdaptiveMaxPool2d(2)(ember.ones(1, 3, 5, 7)).shape
        ember.Size([1, 3, 2, 2])
    """

    def forward(self, input: Tensor):
        return F.adaptive_max_pool2d(input, self.output_size, self.return_indices)


class Fold(Module):
    """Combine sliding blocks into an image (``torch.nn.Fold``); see ``F.fold``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return Fc.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                       self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """Extract sliding blocks (``torch.nn.Unfold``); see ``F.unfold``.

    Example:
        >>> import ember
        >>> ember.nn.Unfold(2)(ember.ones(1, 3, 4, 4)).shape
        ember.Size([1, 12, 9])
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1) -> None:
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input: Tensor) -> Tensor:
        return Fc.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Upsample(Module):
    """Resize by ``size`` or ``scale_factor`` (``torch.nn.Upsample``); see ``F.interpolate``."""

    def __init__(self, size=None, scale_factor=None, mode: str = "nearest",
                 align_corners: bool | None = None,
                 recompute_scale_factor: bool | None = None) -> None:
        super().__init__()
        self.size, self.scale_factor = size, scale_factor
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        return Fc.interpolate(input, self.size, self.scale_factor, self.mode,
                              self.align_corners,
                              recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        what = f"scale_factor={float(self.scale_factor)}" if self.scale_factor is not None \
            else f"size={self.size}"
        return f"{what}, mode='{self.mode}'"


class UpsamplingNearest2d(Upsample):
    """Nearest 2-d upsampling (``torch.nn.UpsamplingNearest2d``)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-d upsampling with ``align_corners=True`` (``torch.nn.UpsamplingBilinear2d``)."""

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
