"""Activation modules: thin wrappers over ``ember.nn.functional`` with torch's reprs.

MultiheadAttention lives with the attention code in ``ember/nn/modules/transformer.py``.
"""

from __future__ import annotations

from ember.nn.functional import _core as F
from ember.nn.modules.module import Module
from ember.ops.creation import empty
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "PReLU", "RReLU", "ELU", "SELU", "CELU", "GELU",
           "SiLU", "Mish", "Sigmoid", "Tanh", "Hardtanh", "Hardswish", "Hardsigmoid",
           "Softplus", "Softsign", "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "GLU",
           "LogSigmoid", "Threshold", "Hardshrink", "Softshrink", "Tanhshrink"]


def _inplace_str(inplace: bool, lead: str = ", ") -> str:
    return f"{lead}inplace=True" if inplace else ""


class _Inplace(Module):
    """An activation whose only option is ``inplace``."""

    _fn = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class _Plain(Module):
    """An activation with no options."""

    _fn = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input)


class ReLU(_Inplace):
    """``max(x, 0)``.

    Example:
        >>> import ember
        >>> ember.nn.ReLU()(ember.tensor([-1.0, 2.0])).tolist()
        [0.0, 2.0]
    """

    _fn = staticmethod(F.relu)


class SELU(_Inplace):
    """Scaled ELU with torch's self-normalising constants.

    Example:
        >>> ember.nn.SELU()(ember.tensor([-1.0, 2.0]))
        tensor([-1.1113,  2.1014])
    """

    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    """``x * sigmoid(x)``.

    Example:
        >>> ember.nn.SiLU()(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2689,  0.0000,  0.7311])
    """

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """``x * tanh(softplus(x))``.

    Example:
        >>> ember.nn.Mish()(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.3034,  0.0000,  0.8651])
    """

    _fn = staticmethod(F.mish)


class Hardswish(_Inplace):
    """``x * relu6(x + 3) / 6``.

    Example:
        >>> ember.nn.Hardswish()(ember.tensor([-1.0, 1.5, 4.0]))
        tensor([-0.3333,  1.1250,  4.0000])
    """

    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Hardsigmoid(_Inplace):
    """``relu6(x + 3) / 6``.

    Example:
        >>> ember.nn.Hardsigmoid()(ember.tensor([-4.0, 1.5, 4.0]))
        tensor([0.0000, 0.7500, 1.0000])
    """

    _fn = staticmethod(F.hardsigmoid)

    def extra_repr(self) -> str:
        return ""


class Sigmoid(_Plain):
    """Logistic sigmoid.

    Example:
        >>> ember.nn.Sigmoid()(ember.tensor([0.0, 2.0]))
        tensor([0.5000, 0.8808])
    """

    _fn = staticmethod(F.sigmoid)


class Tanh(_Plain):
    """Hyperbolic tangent.

    Example:
        >>> ember.nn.Tanh()(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 0.7616])
    """

    _fn = staticmethod(F.tanh)


class Softsign(_Plain):
    """``x / (1 + |x|)``.

    Example:
        >>> ember.nn.Softsign()(ember.tensor([-3.0, 1.0]))
        tensor([-0.7500,  0.5000])
    """

    _fn = staticmethod(F.softsign)


class LogSigmoid(_Plain):
    """``log(sigmoid(x))``.

    Example:
        >>> ember.nn.LogSigmoid()(ember.tensor([0.0, -2.0]))
        tensor([-0.6931, -2.1269])
    """

    _fn = staticmethod(F.logsigmoid)


class Tanhshrink(_Plain):
    """``x - tanh(x)``.

    Example:
        >>> ember.nn.Tanhshrink()(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 0.2384])
    """

    _fn = staticmethod(F.tanhshrink)


class Hardtanh(Module):
    """``clamp(x, min_val, max_val)``.

    Example:
        >>> ember.nn.Hardtanh(-2.0, 2.0)(ember.tensor([-3.0, 0.5, 3.0]))
        tensor([-2.0000,  0.5000,  2.0000])
    """

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False
                 ) -> None:
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """``min(max(x, 0), 6)``.

    Example:
        >>> ember.nn.ReLU6()(ember.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return _inplace_str(self.inplace, "")


class LeakyReLU(Module):
    """``x`` if positive, else ``negative_slope * x``.

    Example:
        >>> ember.nn.LeakyReLU(0.25)(ember.tensor([-2.0, 3.0]))
        tensor([-0.5000,  3.0000])
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class PReLU(Module):
    """Leaky ReLU with a learned slope (``num_parameters`` 1 or the channel count).

    Shape: input ``(N, C, *)`` or any shape when ``num_parameters == 1``.

    Example:
        >>> m = ember.nn.PReLU(num_parameters=2, init=0.5)
        >>> m(ember.tensor([[-2.0, -4.0]])).tolist(), m.weight.shape
        ([[-1.0, -2.0]], ember.Size([2]))
    """

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        from ember.nn.init import constant_
        constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU (random slope in training, mean slope in eval).

    Example:
        >>> m = ember.nn.RReLU(0.25, 0.75).eval()  # the mean slope outside training
        >>> m(ember.tensor([-1.0, 2.0]))
        tensor([-0.5000,  2.0000])
    """

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False
                 ) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{_inplace_str(self.inplace)}"


class ELU(Module):
    """``x`` if positive, else ``alpha * (exp(x) - 1)``.

    Example:
        >>> ember.nn.ELU()(ember.tensor([-1.0, 2.0]))
        tensor([-0.6321,  2.0000])
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(ELU):
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Example:
        >>> ember.nn.CELU(alpha=2.0)(ember.tensor([-1.0, 2.0]))
        tensor([-0.7869,  2.0000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.celu(input, self.alpha, self.inplace)


class GELU(Module):
    """Gaussian error linear unit (``approximate='tanh'`` for the tanh form).

    Example:
        >>> ember.nn.GELU()(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1587,  0.0000,  0.8413])
        >>> ember.nn.GELU(approximate="tanh")(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1588,  0.0000,  0.8412])
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    """``log(1 + exp(beta * x)) / beta``.

    Example:
        >>> ember.nn.Softplus(beta=2.0)(ember.tensor([0.0, 30.0]))
        tensor([ 0.3466, 30.0000])
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input: Tensor) -> Tensor:
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class _DimActivation(Module):
    _fn = None

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def __setstate__(self, state) -> None:
        super().__setstate__(state)
        if not hasattr(self, "dim"):
            self.dim = None

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.dim, _stacklevel=5)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax(_DimActivation):
    """Softmax along ``dim``.

    Example:
        >>> ember.nn.Softmax(dim=1)(ember.tensor([[1.0, 1.0], [0.0, 2.0]]))
        tensor([[0.5000, 0.5000],
                [0.1192, 0.8808]])
    """

    _fn = staticmethod(F.softmax)


class LogSoftmax(_DimActivation):
    """Log-softmax along ``dim``.

    Example:
        >>> ember.nn.LogSoftmax(dim=0)(ember.tensor([1.0, 1.0, 1.0, 1.0]))
        tensor([-1.3863, -1.3863, -1.3863, -1.3863])
    """

    _fn = staticmethod(F.log_softmax)


class Softmin(_DimActivation):
    """Softmax of ``-x`` along ``dim``.

    Example:
        >>> ember.nn.Softmin(dim=0)(ember.tensor([0.0, 2.0]))
        tensor([0.8808, 0.1192])
    """

    _fn = staticmethod(F.softmin)


class Softmax2d(Module):
    """Softmax over channels at each spatial location of ``(N, C, H, W)`` or ``(C, H, W)``.

    Example:
        >>> y = ember.nn.Softmax2d()(ember.zeros(1, 4, 2, 2))  # over the channels of each pixel
        >>> y.shape, y[0, :, 0, 0]
        (ember.Size([1, 4, 2, 2]), tensor([0.2500, 0.2500, 0.2500, 0.2500]))
    """

    def forward(self, input: Tensor) -> Tensor:
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D "
                             "instead")
        return F.softmax(input, -3, _stacklevel=5)


class GLU(Module):
    """Gated linear unit over ``dim``.

    Example:
        >>> ember.nn.GLU()(ember.tensor([2.0, -4.0, 0.0, 2.0]))
        tensor([ 1.0000, -3.5232])
    """

    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input: Tensor) -> Tensor:
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Threshold(Module):
    """``x`` where ``x > threshold``, else ``value``.

    Example:
        >>> ember.nn.Threshold(1.0, -9.0)(ember.tensor([0.5, 1.0, 3.0]))
        tensor([-9., -9.,  3.])
    """

    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input: Tensor) -> Tensor:
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class Hardshrink(Module):
    """``x`` where ``|x| > lambd``, else 0.

    Example:
        >>> ember.nn.Hardshrink()(ember.tensor([-1.0, 0.25, 2.0]))
        tensor([-1.,  0.,  2.])
    """

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input: Tensor) -> Tensor:
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """Shrink toward 0 by ``lambd``.

    Example:
        >>> ember.nn.Softshrink()(ember.tensor([-1.0, 0.25, 2.0]))
        tensor([-0.5000,  0.0000,  1.5000])
    """

    def forward(self, input: Tensor) -> Tensor:
        return F.softshrink(input, self.lambd)

