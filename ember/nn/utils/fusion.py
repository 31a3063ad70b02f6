"""Fold an eval-mode BatchNorm into the preceding convolution or linear layer
(``torch.nn.utils.fusion``): ``bn(conv(x)) == fused(x)`` with the running statistics baked in.
"""

from __future__ import annotations

import copy

from ember.nn.modules.module import Module
from ember.ops.creation import ones_like, zeros_like
from ember.tensor import Tensor
from ember.tensor.parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]


def _require(condition: bool, message: str) -> None:
    if not condition:  # torch asserts these, so callers catch AssertionError
        raise AssertionError(message)


def fuse_conv_bn_eval(conv: Module, bn: Module, transpose: bool = False) -> Module:
    """A copy of ``conv`` whose weight and bias also apply ``bn`` (both in eval mode).

    Args:
        conv: a convolution (``transpose``: a transposed one, output channels on dim 1).
        bn: the BatchNorm applied to ``conv``'s output, with running statistics.

    Returns:
        The fused convolution; ``conv`` and ``bn`` are unchanged.

    Raises:
        AssertionError: a module is in training mode or ``bn`` tracks no running statistics.

    Example:
        >>> import ember
        >>> conv, bn = ember.nn.Conv2d(2, 3, 3).eval(), ember.nn.BatchNorm2d(3).eval()
        >>> x = ember.randn(1, 2, 5, 5)
        >>> fused = ember.nn.utils.fuse_conv_bn_eval(conv, bn)
        >>> bool(ember.allclose(fused(x), bn(conv(x)), atol=1e-5))
        True
    """
    _require(not (conv.training or bn.training), "Fusion only for eval!")
    fused = copy.deepcopy(conv)
    _require(bn.running_mean is not None and bn.running_var is not None,
             "bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w: Tensor, conv_b: Tensor | None, bn_rm: Tensor, bn_rv: Tensor,
                         bn_eps: float, bn_w: Tensor | None, bn_b: Tensor | None,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """The fused convolution's ``(weight, bias)`` as Parameters, in the conv's dtypes.

    ``weight = conv_w * bn_w / sqrt(bn_rv + eps)`` per output channel and
    ``bias = (conv_b - bn_rm) * bn_w / sqrt(bn_rv + eps) + bn_b``; a missing ``conv_b``,
    ``bn_w`` or ``bn_b`` counts as 0, 1 and 0.

    Example:
        >>> from ember.nn.utils import fuse_conv_bn_weights
        >>> w, b = fuse_conv_bn_weights(ember.ones(2, 1, 1, 1), None,  # conv weight, bias
        ...                             ember.zeros(2), ember.ones(2), 0.0,  # bn mean, var, eps
        ...                             ember.full((2,), 2.0), ember.ones(2))  # bn weight, bias
        >>> w.flatten().tolist(), b.tolist()
        ([2.0, 2.0], [1.0, 1.0])
    """
    w_dtype = conv_w.dtype
    b_dtype = conv_b.dtype if conv_b is not None else w_dtype
    conv_b = zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt_var = (bn_rv + bn_eps).rsqrt()
    channel = [1, -1] if transpose else [-1, 1]
    shape = channel + [1] * (conv_w.ndim - 2)  # the output channels of the weight
    fused_w = (conv_w * (bn_w * rsqrt_var).reshape(shape)).to(dtype=w_dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt_var * bn_w + bn_b).to(dtype=b_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear: Module, bn: Module) -> Module:
    """A copy of ``linear`` whose weight and bias also apply ``bn`` (both in eval mode).

    ``bn.num_features`` must equal ``linear.out_features`` or be 1.

    Raises:
        AssertionError: a module is in training mode, the feature counts do not fit, or ``bn``
            tracks no running statistics.

    Example:
        >>> from ember.nn.utils import fuse_linear_bn_eval
        >>> linear, bn = ember.nn.Linear(3, 2).eval(), ember.nn.BatchNorm1d(2).eval()
        >>> fused = fuse_linear_bn_eval(linear, bn)
        >>> x = ember.randn(4, 3)
        >>> type(fused).__name__, ember.allclose(fused(x), bn(linear(x)), atol=1e-5)
        ('Linear', True)
    """
    _require(not (linear.training or bn.training), "Fusion only for eval!")
    fused = copy.deepcopy(linear)
    _require(linear.out_features == bn.num_features or bn.num_features == 1,
             "To fuse, linear.out_features == bn.num_features or bn.num_features == 1, got "
             f"linear.out_features={linear.out_features} and bn.num_features={bn.num_features}")
    _require(bn.running_mean is not None and bn.running_var is not None,
             "bn.running_mean and bn.running_var must not be None")
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w: Tensor, linear_b: Tensor | None, bn_rm: Tensor,
                           bn_rv: Tensor, bn_eps: float, bn_w: Tensor, bn_b: Tensor
                           ) -> tuple[Parameter, Parameter]:
    """The fused linear layer's ``(weight, bias)`` as Parameters, in the layer's dtypes:
    ``weight = linear_w * scale[:, None]``, ``bias = (linear_b - bn_rm) * scale + bn_b`` with
    ``scale = bn_w / sqrt(bn_rv + eps)``; a missing ``linear_b`` counts as 0.

    Example:
        >>> from ember.nn.utils import fuse_linear_bn_weights
        >>> w, b = fuse_linear_bn_weights(ember.ones(2, 3), ember.zeros(2),  # linear weight, bias
        ...                               ember.ones(2), ember.ones(2), 0.0,  # bn mean, var, eps
        ...                               ember.full((2,), 2.0), ember.zeros(2))  # bn weight, bias
        >>> w.tolist(), b.tolist()
        ([[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]], [-2.0, -2.0])
    """
    w_dtype = linear_w.dtype
    b_dtype = linear_b.dtype if linear_b is not None else w_dtype
    linear_b = zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1).to(dtype=w_dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(dtype=b_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)
