"""LayerNorm, GroupNorm and RMSNorm."""

from __future__ import annotations

from ember.nn import init
from ember.nn.functional import _core as F
from ember.nn.modules.module import Module
from ember.ops.creation import empty
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm"]


def _shape(normalized_shape) -> tuple:
    if isinstance(normalized_shape, int):
        return (normalized_shape,)
    return tuple(normalized_shape)


def _register_affine(m: Module, shape: tuple, affine: bool, bias: bool, device, dtype) -> None:
    """``weight`` (ones) and ``bias`` (zeros, unless ``bias=False``) of ``shape`` when
    ``affine``; otherwise both are registered as None, as torch does."""
    m.register_parameter("weight", Parameter(empty(shape, device=device, dtype=dtype))
                         if affine else None)
    m.register_parameter("bias", Parameter(empty(shape, device=device, dtype=dtype))
                         if affine and bias else None)
    _reset_affine(m)


def _reset_affine(m: Module) -> None:
    if m.weight is not None:
        init.ones_(m.weight)
    if m.bias is not None:
        init.zeros_(m.bias)


class LayerNorm(Module):
    """Normalise over the trailing ``normalized_shape`` dims, then an elementwise affine.

    Example:
        >>> import ember
        >>> ember.nn.LayerNorm(4)(ember.randn(2, 4)).shape
        ember.Size([2, 4])
    """

    _pickle_defaults = {"_bias_flag": lambda m: m._parameters.get("bias") is not None}

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self._bias_flag = bias
        _register_affine(self, self.normalized_shape, elementwise_affine, bias, device, dtype)

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}, "
                f"bias={self._bias_flag and self.elementwise_affine}")


class GroupNorm(Module):
    """Normalise groups of channels per sample, then a per-channel affine.

    Example:
        >>> m = ember.nn.GroupNorm(2, 4)
        >>> m(ember.tensor([[1.0, 3.0, 5.0, 9.0]])).detach().round(decimals=3)
        tensor([[-1.,  1., -1.,  1.]])
    """

    _pickle_defaults = {"_bias_flag": lambda m: m._parameters.get("bias") is not None}

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine, self._bias_flag = eps, affine, bias
        _register_affine(self, (num_channels,), affine, bias, device, dtype)

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self._bias_flag and self.affine}")


class RMSNorm(Module):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims.

    Example:
        >>> m = ember.nn.RMSNorm(2)
        >>> m(ember.tensor([[3.0, -3.0]])).detach().round(decimals=3)
        tensor([[ 1., -1.]])
    """

    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")
