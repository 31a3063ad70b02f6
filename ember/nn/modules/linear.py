"""Identity, Linear and Bilinear layers, initialised as torch initialises them."""

from __future__ import annotations

import math

from ember.nn import init
from ember.nn.functional import _core as F
from ember.nn.modules.module import Module
from ember.ops.creation import empty
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input; accepts and ignores any constructor arguments.

    Example:
        >>> import ember
        >>> x = ember.ones(2)
        >>> ember.nn.Identity(54, unused="x")(x) is x
        True
    """

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        return input


class Linear(Module):
    """``y = x W^T + b``.

    Weight and bias start as torch's: ``kaiming_uniform_(a=sqrt(5))`` for the weight, and
    ``U(-1/sqrt(in_features), 1/sqrt(in_features))`` for the bias.

    Shape: input ``(*, in_features)``, output ``(*, out_features)``.

    Example:
        >>> import ember
        >>> ember.nn.Linear(3, 2)(ember.ones(5, 3)).shape
        ember.Size([5, 2])
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in_features, device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input: Tensor) -> Tensor:
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Bilinear(Module):
    """``y = x1^T A x2 + b`` with ``A`` of shape ``(out, in1, in2)``.

    Shape: inputs ``(*, in1)`` and ``(*, in2)``, output ``(*, out)``.

    Example:
        >>> m = ember.nn.Bilinear(2, 3, 5)
        >>> m(ember.ones(4, 2), ember.ones(4, 3)).shape, m.weight.shape
        (ember.Size([4, 5]), ember.Size([5, 2, 3]))
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in1_features = in1_features
        self.in2_features = in2_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, device=device,
                                      dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
