"""Pooling, unpooling, Fold/Unfold and upsampling layers (torch.nn's API); parameter-free
wrappers of the functional forms in ``ember.nn.functional.pooling`` and ``.conv``."""

from __future__ import annotations

from ember.nn.functional import conv as Fc
from ember.nn.functional import pooling as F
from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
           "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d",
           "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d", "FractionalMaxPool2d",
           "FractionalMaxPool3d", "Fold", "Unfold", "Upsample", "UpsamplingNearest2d",
           "UpsamplingBilinear2d"]


def _ntuple(v, n: int) -> tuple:
    return tuple(v) if isinstance(v, list | tuple) else (v,) * n


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


class MaxPool3d(_MaxPoolNd):
    """3-d max pooling (``torch.nn.MaxPool3d``); ``return_indices`` gives flat ``T * H * W``
    indices.

    Example:
        >>> import ember
        >>> ember.nn.MaxPool3d(2, stride=1)(ember.ones(1, 1, 3, 4, 5)).shape
        ember.Size([1, 1, 2, 3, 4])
    """

    _fn = staticmethod(F.max_pool3d)


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


class _AvgPoolNd(Module):
    _fn = None

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override: int | None = None) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.kernel_size, self.stride, self.padding,
                              self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd):
    """2-d average pooling (``torch.nn.AvgPool2d``), with ``divisor_override``.

    Example:
        >>> import ember
        >>> ember.nn.AvgPool2d(2)(ember.ones(1, 1, 4, 4)).shape
        ember.Size([1, 1, 2, 2])
    """

    _fn = staticmethod(F.avg_pool2d)


class AvgPool3d(_AvgPoolNd):
    """3-d average pooling (``torch.nn.AvgPool3d``); float32, float64 and int64 inputs.

    Example:
        >>> import ember
        >>> ember.nn.AvgPool3d(2, padding=1)(ember.ones(1, 1, 4, 4, 4)).shape
        ember.Size([1, 1, 3, 3, 3])
    """

    _fn = staticmethod(F.avg_pool3d)


class _Adaptive(Module):
    _fn = None
    _pickle_defaults = {"return_indices": False}

    def __init__(self, output_size, return_indices: bool = False) -> None:
        super().__init__()
        self.output_size = output_size
        self.return_indices = return_indices

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool1d(_Adaptive):
    """Adaptive 1-d average pooling to ``output_size`` (``torch.nn.AdaptiveAvgPool1d``).

    Example:
        >>> ember.nn.AdaptiveAvgPool1d(2)(ember.tensor([[[1.0, 2.0, 3.0, 5.0]]]))
        tensor([[[1.5000, 4.0000]]])
    """

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
    """Adaptive 1-d max pooling (``torch.nn.AdaptiveMaxPool1d``).

    Example:
        >>> ember.nn.AdaptiveMaxPool1d(2)(ember.tensor([[[1.0, 4.0, 3.0, 2.0]]]))
        tensor([[[4., 3.]]])
    """

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


class AdaptiveAvgPool3d(_Adaptive):
    """Adaptive 3-d average pooling (``torch.nn.AdaptiveAvgPool3d``); ``None`` keeps a size.

    Example:
        >>> import ember
        >>> ember.nn.AdaptiveAvgPool3d((1, None, 2))(ember.ones(2, 3, 5, 7, 4)).shape
        ember.Size([2, 3, 1, 7, 2])
    """

    def __init__(self, output_size) -> None:
        super().__init__(output_size)

    def forward(self, input: Tensor) -> Tensor:
        return F.adaptive_avg_pool3d(input, self.output_size)


class AdaptiveMaxPool3d(_Adaptive):
    """Adaptive 3-d max pooling (``torch.nn.AdaptiveMaxPool3d``), optionally with indices.

    Example:
        >>> import ember
        >>> ember.nn.AdaptiveMaxPool3d(2)(ember.ones(1, 3, 5, 7, 4)).shape
        ember.Size([1, 3, 2, 2, 2])
    """

    def forward(self, input: Tensor):
        return F.adaptive_max_pool3d(input, self.output_size, self.return_indices)


class _LPPoolNd(Module):
    _fn = None

    def __init__(self, norm_type: float, kernel_size, stride=None,
                 ceil_mode: bool = False) -> None:
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                              self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """1-d power-average pooling (``torch.nn.LPPool1d``); see ``F.lp_pool1d``.

    Example:
        >>> import ember
        >>> ember.nn.LPPool1d(2, 2)(ember.tensor([[3., 4., 1., 0.]])).tolist()
        [[5.0, 1.0]]
    """

    _fn = staticmethod(F.lp_pool1d)


class LPPool2d(_LPPoolNd):
    """2-d power-average pooling (``torch.nn.LPPool2d``); see ``F.lp_pool2d``.

    Example:
        >>> pool = ember.nn.LPPool2d(2, kernel_size=2)
        >>> pool(ember.tensor([[[[1.0, 1.0], [1.0, 2.0]]]]))  # sqrt(1 + 1 + 1 + 4)
        tensor([[[[2.6458]]]])
    """

    _fn = staticmethod(F.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """3-d power-average pooling (``torch.nn.LPPool3d``); see ``F.lp_pool3d``.

    Example:
        >>> ember.nn.LPPool3d(1, kernel_size=2)(ember.ones(1, 1, 2, 2, 2))  # a sum over each window
        tensor([[[[[8.]]]]])
    """

    _fn = staticmethod(F.lp_pool3d)


class _MaxUnpoolNd(Module):
    _fn = None
    _nd = 2

    def __init__(self, kernel_size, stride=None, padding=0) -> None:
        super().__init__()
        n = self._nd
        self.kernel_size = _ntuple(kernel_size, n)
        self.stride = _ntuple(stride if stride is not None else kernel_size, n)
        self.padding = _ntuple(padding, n)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:
        return type(self)._fn(input, indices, self.kernel_size, self.stride, self.padding,
                              output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """Partial inverse of ``MaxPool1d`` (``torch.nn.MaxUnpool1d``): ``forward(input, indices,
    output_size=None)``.

    Example:
        >>> import ember
        >>> v, i = ember.nn.MaxPool1d(2, return_indices=True)(ember.tensor([[1., 3., 2., 0.]]))
        >>> ember.nn.MaxUnpool1d(2)(v, i).tolist()
        [[0.0, 3.0, 2.0, 0.0]]
    """

    _nd = 1
    _fn = staticmethod(F.max_unpool1d)


class MaxUnpool2d(_MaxUnpoolNd):
    """Partial inverse of ``MaxPool2d`` (``torch.nn.MaxUnpool2d``).

    Example:
        >>> pool, unpool = ember.nn.MaxPool2d(2, return_indices=True), ember.nn.MaxUnpool2d(2)
        >>> x = ember.tensor([[[[1.0, 2.0], [4.0, 3.0]]]])
        >>> unpool(*pool(x))
        tensor([[[[0., 0.],
                  [4., 0.]]]])
    """

    _nd = 2
    _fn = staticmethod(F.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """Partial inverse of ``MaxPool3d`` (``torch.nn.MaxUnpool3d``).

    Example:
        >>> pool, unpool = ember.nn.MaxPool3d(2, return_indices=True), ember.nn.MaxUnpool3d(2)
        >>> x = ember.arange(8.0).reshape(1, 1, 2, 2, 2)
        >>> y = unpool(*pool(x))
        >>> y.shape, y.sum().item()
        (ember.Size([1, 1, 2, 2, 2]), 7.0)
    """

    _nd = 3
    _fn = staticmethod(F.max_unpool3d)


class _FractionalMaxPoolNd(Module):
    _fn = None
    _nd = 2

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples: Tensor | None = None) -> None:
        super().__init__()
        n, name = self._nd, type(self).__name__
        self.kernel_size = _ntuple(kernel_size, n)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, n) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, n) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             "ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input: Tensor):
        return type(self)._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                              self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """2-d fractional max pooling (``torch.nn.FractionalMaxPool2d``); see
    ``F.fractional_max_pool2d``. A ``_random_samples`` tensor becomes a buffer.

    Example:
        >>> import ember
        >>> ember.nn.FractionalMaxPool2d(3, output_ratio=0.5)(ember.ones(1, 2, 10, 9)).shape
        ember.Size([1, 2, 5, 4])
    """

    _nd = 2
    _fn = staticmethod(F.fractional_max_pool2d)


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """3-d fractional max pooling (``torch.nn.FractionalMaxPool3d``).

    Example:
        >>> pool = ember.nn.FractionalMaxPool3d(2, output_size=(2, 2, 2))
        >>> pool(ember.rand(1, 3, 5, 5, 5)).shape
        ember.Size([1, 3, 2, 2, 2])
    """

    _nd = 3
    _fn = staticmethod(F.fractional_max_pool3d)


class Fold(Module):
    """Combine sliding blocks into an image (``torch.nn.Fold``); see ``F.fold``.

    Example:
        >>> fold = ember.nn.Fold(output_size=(3, 3), kernel_size=2)
        >>> fold(ember.ones(1, 4, 4))  # overlapping blocks add up
        tensor([[[[1., 2., 1.],
                  [2., 4., 2.],
                  [1., 2., 1.]]]])
    """

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
    """Resize by ``size`` or ``scale_factor`` (``torch.nn.Upsample``); see ``F.interpolate``.

    Example:
        >>> ember.nn.Upsample(scale_factor=2)(ember.tensor([[[1.0, 2.0]]]))
        tensor([[[1., 1., 2., 2.]]])
        >>> up = ember.nn.Upsample(size=3, mode="linear", align_corners=True)
        >>> up(ember.tensor([[[0.0, 1.0]]]))
        tensor([[[0.0000, 0.5000, 1.0000]]])
    """

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
    """Nearest 2-d upsampling (``torch.nn.UpsamplingNearest2d``).

    Example:
        >>> ember.nn.UpsamplingNearest2d(scale_factor=2)(ember.tensor([[[[1.0, 2.0]]]])).shape
        ember.Size([1, 1, 2, 4])
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-d upsampling with ``align_corners=True`` (``torch.nn.UpsamplingBilinear2d``).

    Example:
        >>> ember.nn.UpsamplingBilinear2d(size=(1, 3))(ember.tensor([[[[0.0, 1.0]]]]))
        tensor([[[[0.0000, 0.5000, 1.0000]]]])
    """

    def __init__(self, size=None, scale_factor=None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
