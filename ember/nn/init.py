"""``ember.nn.init``: in-place parameter initialisation, with torch's formulas and errors.

Every function fills its tensor in place under ``no_grad`` (so it works on leaves that require
grad), draws from the given ``generator`` (the default one when None) and returns the tensor.
"""

from __future__ import annotations

import math
import warnings

from ember.autograd.grad_mode import no_grad
from ember.ops.creation import empty, eye
from ember.ops.linalg import linalg_qr
from ember.ops.random import randperm
from ember.tensor import Tensor

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_",
           "zeros_", "eye_", "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_",
           "kaiming_normal_", "orthogonal_", "sparse_"]

_LINEAR_GAIN = {"linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                "conv_transpose3d", "sigmoid"}


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for ``nonlinearity`` (torch's table: relu sqrt(2), tanh 5/3, ...).

    Example:
        >>> from ember.nn.init import calculate_gain
        >>> round(calculate_gain("relu"), 4)
        1.4142
    """
    if nonlinearity in _LINEAR_GAIN:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, int | float):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fans(tensor: Tensor) -> tuple[int, int]:
    if tensor.dim() < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of U(a, b).

    Example:
        >>> w = ember.nn.init.uniform_(ember.empty(3, 5), a=-0.5, b=0.5)
        >>> bool((w >= -0.5).all() and (w < 0.5).all())
        True
    """
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of N(mean, std^2).

    Example:
        >>> w = ember.nn.init.normal_(ember.empty(100, 100), mean=1.0, std=0.5)
        >>> round(w.mean().item(), 1), round(w.std().item(), 1)
        (1.0, 0.5)
    """
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def _norm_cdf(x: float) -> float:
    return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with N(mean, std^2) samples truncated to [a, b] (inverse-CDF method, as torch).

    Example:
        >>> w = ember.nn.init.trunc_normal_(ember.empty(100), std=1.0, a=-0.5, b=0.5)
        >>> bool((w.abs() <= 0.5).all())
        True
    """
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. The "
                      "distribution of values may be incorrect.", stacklevel=2)
    with no_grad():
        lo, hi = _norm_cdf((a - mean) / std), _norm_cdf((b - mean) / std)
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
        return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``.

    Example:
        >>> ember.nn.init.constant_(ember.empty(2, 2), 0.5)
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
    """
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones.

    Example:
        >>> ember.nn.init.ones_(ember.empty(3))
        tensor([1., 1., 1.])
    """
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros.

    Example:
        >>> w = ember.ones(3, requires_grad=True)
        >>> ember.nn.init.zeros_(w)
        tensor([0., 0., 0.], requires_grad=True)
    """
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity matrix (ones on the main diagonal).

    Example:
        >>> ember.nn.init.eye_(ember.empty(2, 3))
        tensor([[1., 0., 0.],
                [0., 1., 0.]])
    """
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype))
    return tensor


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3/4/5-D convolution weight with the Dirac delta (identity convolution per group).

    Example:
        >>> w = ember.nn.init.dirac_(ember.empty(2, 2, 3))
        >>> w[:, :, 1], int(w.sum())
        (tensor([[1., 0.],
                [0., 1.]]), 2)
    """
    dims = tensor.dim()
    if dims not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    min_dim = min(out_per_group, tensor.shape[1])
    centre = tuple(s // 2 for s in tensor.shape[2:])
    with no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min_dim):
                tensor[(g * out_per_group + d, d, *centre)] = 1
    return tensor


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    Example:
        >>> w = ember.nn.init.xavier_uniform_(ember.empty(4, 8))  # bound sqrt(6 / (8 + 4))
        >>> bool(w.abs().max() <= 0.5 ** 0.5)
        True
    """
    fan_in, fan_out = _fans(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Glorot normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    Example:
        >>> w = ember.nn.init.xavier_normal_(ember.empty(100, 100))  # std sqrt(2 / 200)
        >>> round(w.std().item(), 1)
        0.1
    """
    fan_in, fan_out = _fans(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity) -> float | None:
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He uniform: U(-b, b) with ``b = gain * sqrt(3 / fan)`` (``a``: leaky_relu slope).

    Example:
        >>> import ember, math
        >>> w = ember.nn.init.kaiming_uniform_(ember.empty(4, 9), a=math.sqrt(5))
        >>> bool(w.abs().max() <= 1 / 3)
        True
    """
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """He normal: N(0, std^2) with ``std = gain / sqrt(fan)``.

    Example:
        >>> w = ember.nn.init.kaiming_normal_(ember.empty(50, 200))  # std sqrt(2 / fan_in)
        >>> round(w.std().item(), 1)
        0.1
    """
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """Fill with a (semi-)orthogonal matrix from the QR decomposition of a normal matrix.

    Example:
        >>> w = ember.nn.init.orthogonal_(ember.empty(3, 5))
        >>> ember.allclose(w @ w.T, ember.eye(3), atol=1e-5)
        True
    """
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = empty(rows, cols, dtype=tensor.dtype).normal_(0, 1, generator=generator)
        if rows < cols:
            flat = flat.t()
        q, r = linalg_qr(flat)
        q = q * r.diagonal().sign()  # a unique Q: diagonal of R made positive
        if rows < cols:
            q = q.t()
        tensor.view_as(q).copy_(q)
        tensor.mul_(gain)
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """A 2-D normal(0, std) matrix with ``ceil(sparsity * rows)`` zeros in each column.

    Example:
        >>> w = ember.nn.init.sparse_(ember.empty(10, 4), sparsity=0.5)
        >>> (w == 0).sum(dim=0)
        tensor([5, 5, 5, 5])
    """
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    n_zeros = int(math.ceil(sparsity * rows))
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            zero_rows = randperm(rows, generator=generator)[:n_zeros]
            tensor[zero_rows, c] = 0
    return tensor
