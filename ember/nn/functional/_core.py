"""``ember.nn.functional`` core: linear maps, activations, dropout, embeddings, normalisation,
losses and distances (torch.nn.functional's names, signatures, values and gradients).

Fused ops (softmax, activations) come from ``ember.ops.nn_ops``; the rest are composites of
differentiable ember ops that follow torch's formulas step for step, so their gradients are
torch's too. Convolution, pooling and attention functions live in sibling modules.

This file is over 800 lines because it is the whole non-convolutional functional surface; each
function is short.
"""

from __future__ import annotations

import math
import warnings

import ember.ops.nn_ops as nn_ops
from ember.autograd.grad_mode import is_grad_enabled, no_grad
from ember.backends.autocast import autocast_function
from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes, canonical_dim
from ember.dispatch.keys import DispatchKey
from ember.ops.creation import arange, ones_like, zeros
from ember.ops.linalg import addmm, matmul, mm
from ember.ops.pointwise import minimum, where
from ember.ops.reduction import linalg_vector_norm
from ember.tensor import Tensor

__all__ = [
    "linear", "bilinear", "relu", "relu_", "relu6", "leaky_relu", "leaky_relu_", "prelu", "rrelu",
    "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu", "mish", "sigmoid", "tanh",
    "hardtanh", "hardtanh_", "hardswish", "hardsigmoid", "softplus", "softsign", "softmax",
    "log_softmax", "softmin", "glu", "logsigmoid", "threshold", "threshold_", "hardshrink",
    "softshrink", "tanhshrink", "dropout", "dropout1d", "dropout2d", "dropout3d",
    "alpha_dropout", "feature_alpha_dropout", "embedding", "embedding_bag", "one_hot",
    "batch_norm", "layer_norm", "group_norm", "rms_norm", "instance_norm", "normalize",
    "cosine_similarity", "pairwise_distance", "mse_loss", "l1_loss", "smooth_l1_loss",
    "huber_loss", "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div",
    "nll_loss", "cross_entropy", "margin_ranking_loss", "hinge_embedding_loss",
    "cosine_embedding_loss", "triplet_margin_loss", "soft_margin_loss", "multi_margin_loss",
    "poisson_nll_loss", "gaussian_nll_loss", "multilabel_soft_margin_loss",
]
__all__ += ["rrelu_", "gumbel_softmax", "multilabel_margin_loss",
            "triplet_margin_with_distance_loss"]


# -- linear -----------------------------------------------------------------------------------
@autocast_function("lower")
def linear(input: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``input @ weight.T + bias``.

    Shape: input ``(*, in)``, weight ``(out, in)``, bias ``(out,)``, output ``(*, out)``.

    Example:
        >>> import ember
        >>> ember.nn.functional.linear(ember.ones(2, 3), ember.ones(4, 3)).shape
        ember.Size([2, 4])
    """
    if input.dim() == 2 and weight.dim() == 2:  # torch's graph: Addmm/MmBackward0, TBackward0
        return addmm(bias, input, weight.t()) if bias is not None else mm(input, weight.t())
    out = matmul(input, weight.t())
    return out + bias if bias is not None else out


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias: Tensor | None = None):
    """``y_k = x1^T W_k x2 + b_k``.

    Shape: input1 ``(*, in1)``, input2 ``(*, in2)``, weight ``(out, in1, in2)``, output
    ``(*, out)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.bilinear(ember.ones(4, 2), ember.ones(4, 3), ember.ones(5, 2, 3)).shape
        ember.Size([4, 5])
    """
    if input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    out_f, in1, in2 = weight.shape
    if input1.shape[-1] != in1 or input2.shape[-1] != in2:
        raise RuntimeError(f"bilinear(): input sizes do not match the weight: got "
                           f"{input1.shape[-1]} and {input2.shape[-1]}, expected {in1} and "
                           f"{in2}")
    lead = input1.shape[:-1]
    x1 = input1.reshape(-1, in1)
    x2 = input2.reshape(-1, in2)
    # (N, in1) @ (in1, out*in2) -> (N, out, in2), contracted with x2 over in2
    t = matmul(x1, weight.permute(1, 0, 2).reshape(in1, out_f * in2)).reshape(-1, out_f, in2)
    y = matmul(t, x2.unsqueeze(-1)).squeeze(-1)
    if bias is not None:
        y = y + bias
    return y.reshape(*lead, out_f)


# -- activations ------------------------------------------------------------------------------
def _inplace(input: Tensor, fn, *args) -> Tensor:
    """``input`` overwritten with ``fn(input)``; autograd sees the old value through a clone."""
    if is_grad_enabled() and input.requires_grad:
        return input.copy_(fn(input.clone(), *args))
    with no_grad():
        return input.copy_(fn(input, *args))


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.relu(ember.tensor([-1.0, 0.5, 2.0]))
        tensor([0.0000, 0.5000, 2.0000])
    """
    return input.relu_() if inplace else input.relu()


def relu_(input: Tensor) -> Tensor:
    """In-place :func:`relu`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([-1.0, 2.0])
        >>> F.relu_(x) is x, x.tolist()
        (True, [0.0, 2.0])
    """
    return input.relu_()


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """``min(max(input, 0), 6)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.relu6(ember.tensor([-1.0, 3.0, 8.0]))
        tensor([0., 3., 6.])
    """
    return hardtanh(input, 0.0, 6.0, inplace)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``negative_slope * input``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.leaky_relu(ember.tensor([-2.0, 3.0]), negative_slope=0.25)
        tensor([-0.5000,  3.0000])
    """
    if inplace:
        return _inplace(input, nn_ops.leaky_relu, negative_slope)
    return nn_ops.leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place :func:`leaky_relu`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([-2.0, 3.0])
        >>> F.leaky_relu_(x, 0.5) is x, x.tolist()
        (True, [-1.0, 3.0])
    """
    return leaky_relu(input, negative_slope, True)


@autocast_function("lower")
def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """Leaky ReLU with a learned slope: one value, or one per channel (dim 1).

    Shape: weight ``(1,)`` or ``(C,)``; output as input.

    Example:
        >>> import ember.nn.functional as F
        >>> F.prelu(ember.tensor([[-2.0, 3.0]]), ember.tensor([0.25]))
        tensor([[-0.5000,  3.0000]])
    """
    c = input.shape[1] if input.dim() >= 2 else 1  # below 2 dims there is one channel
    if weight.numel() != 1 and weight.numel() != c:
        raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                           f"parameter numbers = {weight.numel()} and channel size = {c}.")
    if input.dim() >= 2:
        weight = weight.reshape(weight.numel(), *([1] * (input.dim() - 2)))
    else:  # a single slope: the result keeps input's shape (0-d stays 0-d)
        weight = weight.reshape(())
    return where(input > 0, input, weight * input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, inplace: bool = False) -> Tensor:
    """Randomized leaky ReLU: slope ~ U(lower, upper) per element in training, else the mean.

    Example:
        >>> import ember.nn.functional as F
        >>> F.rrelu(ember.tensor([-1.0, 2.0]), lower=0.25, upper=0.75)
        tensor([-0.5000,  2.0000])
    """
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)
    slope = input.detach().new_empty(input.shape).uniform_(lower, upper)
    out = where(input >= 0, input, input * slope)
    return input.copy_(out) if inplace else out


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False) -> Tensor:
    """In-place :func:`rrelu` (torch.nn.functional.rrelu_): ``input`` is overwritten and returned.

    In training each negative element is scaled by a slope drawn from ``U(lower, upper)`` with
    ember's generator; in evaluation by ``(lower + upper) / 2``.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([-1.0, 2.0])
        >>> F.rrelu_(x, 0.25, 0.75) is x, x.tolist()
        (True, [-0.5, 2.0])
    """
    return rrelu(input, lower, upper, training, True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``input`` where positive, else ``alpha * (exp(input) - 1)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.elu(ember.tensor([-1.0, 2.0]))
        tensor([-0.6321,  2.0000])
    """
    if inplace:
        return _inplace(input, nn_ops.elu, alpha)
    return nn_ops.elu(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`elu`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([-1.0, 2.0])
        >>> F.elu_(x) is x, x
        (True, tensor([-0.6321,  2.0000]))
    """
    return elu(input, alpha, True)


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """Scaled ELU (self-normalising constants as torch).

    Example:
        >>> import ember.nn.functional as F
        >>> F.selu(ember.tensor([-1.0, 2.0]))
        tensor([-1.1113,  2.1014])
    """
    return _inplace(input, nn_ops.selu) if inplace else nn_ops.selu(input)


def selu_(input: Tensor) -> Tensor:
    """In-place :func:`selu`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([-1.0, 2.0])
        >>> F.selu_(x) is x, x
        (True, tensor([-1.1113,  2.1014]))
    """
    return selu(input, True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.celu(ember.tensor([-1.0, 2.0]), alpha=2.0)
        tensor([-0.7869,  2.0000])
    """
    return _inplace(input, nn_ops.celu, alpha) if inplace else nn_ops.celu(input, alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place :func:`celu`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([-1.0, 2.0])
        >>> F.celu_(x) is x, x
        (True, tensor([-0.6321,  2.0000]))
    """
    return celu(input, alpha, True)


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """``x * Phi(x)`` (exact) or torch's tanh approximation (``approximate='tanh'``).

    Example:
        >>> import ember.nn.functional as F
        >>> F.gelu(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.1587,  0.0000,  0.8413])
        >>> F.gelu(ember.tensor([-1.0, 0.0, 1.0]), approximate="tanh")
        tensor([-0.1588,  0.0000,  0.8412])
    """
    return nn_ops.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * sigmoid(x)``; complex inputs too, without autograd (as torch's).

    Example:
        >>> import ember.nn.functional as F
        >>> F.silu(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.2689,  0.0000,  0.7311])
    """
    if isinstance(input, Tensor) and input.dtype.is_complex:
        if input.requires_grad and is_grad_enabled():
            raise RuntimeError("silu does not support automatic differentiation for outputs "
                               "with complex dtype.")
        return input.mul_(input.sigmoid()) if inplace else input * input.sigmoid()
    return _inplace(input, nn_ops.silu) if inplace else nn_ops.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * tanh(softplus(x))``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.mish(ember.tensor([-1.0, 0.0, 1.0]))
        tensor([-0.3034,  0.0000,  0.8651])
    """
    return _inplace(input, nn_ops.mish) if inplace else nn_ops.mish(input)


def sigmoid(input: Tensor) -> Tensor:
    """Logistic sigmoid.

    Example:
        >>> import ember.nn.functional as F
        >>> F.sigmoid(ember.tensor([0.0, 2.0]))
        tensor([0.5000, 0.8808])
    """
    return input.sigmoid()


def tanh(input: Tensor) -> Tensor:
    """Hyperbolic tangent.

    Example:
        >>> import ember.nn.functional as F
        >>> F.tanh(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 0.7616])
    """
    return input.tanh()


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """``clamp(input, min_val, max_val)`` (zero gradient outside the open interval).

    Example:
        >>> import ember.nn.functional as F
        >>> F.hardtanh(ember.tensor([-3.0, 0.5, 3.0]))
        tensor([-1.0000,  0.5000,  1.0000])
    """
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _inplace(input, nn_ops.hardtanh, min_val, max_val)
    return nn_ops.hardtanh(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place :func:`hardtanh`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([-3.0, 0.5, 3.0])
        >>> F.hardtanh_(x, -2.0, 2.0) is x, x.tolist()
        (True, [-2.0, 0.5, 2.0])
    """
    return hardtanh(input, min_val, max_val, True)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """``x * relu6(x + 3) / 6``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.hardswish(ember.tensor([-1.0, 1.5, 4.0]))
        tensor([-0.3333,  1.1250,  4.0000])
    """
    return _inplace(input, nn_ops.hardswish) if inplace else nn_ops.hardswish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """``relu6(x + 3) / 6``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.hardsigmoid(ember.tensor([-4.0, 1.5, 4.0]))
        tensor([0.0000, 0.7500, 1.0000])
    """
    return _inplace(input, nn_ops.hardsigmoid) if inplace else nn_ops.hardsigmoid(input)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """``log(1 + exp(beta * x)) / beta``, linear above ``threshold``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.softplus(ember.tensor([0.0, 30.0]))
        tensor([ 0.6931, 30.0000])
    """
    return nn_ops.softplus(input, beta, threshold)


def softsign(input: Tensor) -> Tensor:
    """``x / (1 + |x|)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.softsign(ember.tensor([-3.0, 1.0]))
        tensor([-0.7500,  0.5000])
    """
    return input / (input.abs() + 1)


def logsigmoid(input: Tensor) -> Tensor:
    """``log(sigmoid(x))``, stable.

    Example:
        >>> import ember.nn.functional as F
        >>> F.logsigmoid(ember.tensor([0.0, -2.0]))
        tensor([-0.6931, -2.1269])
    """
    return nn_ops.log_sigmoid(input)


def _softmax_dim(name: str, ndim: int, stacklevel: int) -> int:
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call "
                  "to include dim=X as an argument.", stacklevel=stacklevel)
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: dt.DType | None = None) -> Tensor:
    """Softmax along ``dim`` (implicit dim with a warning when None, as torch).

    Example:
        >>> import ember.nn.functional as F
        >>> F.softmax(ember.tensor([[1.0, 1.0], [0.0, 2.0]]), dim=1)
        tensor([[0.5000, 0.5000],
                [0.1192, 0.8808]])
    """
    if dim is None:
        dim = _softmax_dim("softmax", input.dim(), _stacklevel)
    return nn_ops.softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
                dtype: dt.DType | None = None) -> Tensor:
    """Log-softmax along ``dim``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.log_softmax(ember.tensor([1.0, 1.0, 1.0, 1.0]), dim=0)
        tensor([-1.3863, -1.3863, -1.3863, -1.3863])
    """
    if dim is None:
        dim = _softmax_dim("log_softmax", input.dim(), _stacklevel)
    return nn_ops.log_softmax(input, dim, dtype)


def softmin(input: Tensor, dim: int | None = None, _stacklevel: int = 3,
            dtype: dt.DType | None = None) -> Tensor:
    """``softmax(-input)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.softmin(ember.tensor([0.0, 2.0]), dim=0)
        tensor([0.8808, 0.1192])
    """
    if dim is None:
        dim = _softmax_dim("softmin", input.dim(), _stacklevel)
    if dtype is not None:
        input = input.to(dtype)
    return nn_ops.softmax(-input, dim)


def gumbel_softmax(logits: Tensor, tau: float = 1.0, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1) -> Tensor:
    """A sample from the Gumbel-softmax (concrete) distribution over ``dim``.

    ``softmax((logits + g) / tau)`` with ``g = -log(E)``, ``E ~ Exp(1)`` drawn with ember's
    generator, as torch.nn.functional.gumbel_softmax. With ``hard=True`` the forward value is the
    exact one-hot of the soft sample's argmax while the gradient is the soft sample's
    (straight-through: ``y_hard - y_soft.detach() + y_soft``). ``eps`` is deprecated and unused.

    Shape: logits ``(*, C)`` (any shape); output as logits.

    Example:
        >>> import ember
        >>> y = ember.nn.functional.gumbel_softmax(ember.zeros(2, 3), hard=True)
        >>> y.sum(-1).tolist()
        [1.0, 1.0]
    """
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    gumbels = -logits.detach().new_empty(logits.shape).exponential_().log()  # ~Gumbel(0, 1)
    y_soft = softmax((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.detach().max(dim, keepdim=True)[1]
    y_hard = logits.detach().new_zeros(logits.shape).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


def glu(input: Tensor, dim: int = -1) -> Tensor:
    """Gated linear unit: ``a * sigmoid(b)`` for the halves ``a, b`` of ``dim``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.glu(ember.tensor([2.0, -4.0, 0.0, 2.0]))
        tensor([ 1.0000, -3.5232])
    """
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    d = canonical_dim(dim, input.dim())
    if input.shape[d] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {d} is size "
                           f"{input.shape[d]}")
    _no_complex_kernel("glu_cpu", input, empty_too=True)
    a, b = input.chunk(2, d)
    return a * b.sigmoid()


def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """``input`` where ``input > threshold``, else ``value``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.threshold(ember.tensor([0.5, 1.0, 3.0]), 1.0, -9.0)
        tensor([-9., -9.,  3.])
    """
    if inplace:
        return _inplace(input, lambda x: where(x > threshold, x, value))
    return where(input > threshold, input, value).to(input.dtype)


def threshold_(input: Tensor, threshold_: float, value: float) -> Tensor:
    """In-place :func:`threshold`.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([0.5, 1.0, 3.0])
        >>> F.threshold_(x, 1.0, -9.0) is x, x.tolist()
        (True, [-9.0, -9.0, 3.0])
    """
    return threshold(input, threshold_, value, True)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x`` where ``|x| > lambd``, else 0.

    Example:
        >>> import ember.nn.functional as F
        >>> F.hardshrink(ember.tensor([-1.0, 0.25, 2.0]))
        tensor([-1.,  0.,  2.])
    """
    return where((input >= -lambd) & (input <= lambd), 0.0, input)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``x - lambd`` above ``lambd``, ``x + lambd`` below ``-lambd``, else 0.

    Example:
        >>> import ember.nn.functional as F
        >>> F.softshrink(ember.tensor([-1.0, 0.25, 2.0]))
        tensor([-0.5000,  0.0000,  1.5000])
    """
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    shifted = where(input > lambd, input - lambd, input + lambd)
    return where((input >= -lambd) & (input <= lambd), 0.0, shifted)


def tanhshrink(input: Tensor) -> Tensor:
    """``x - tanh(x)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.tanhshrink(ember.tensor([0.0, 1.0]))
        tensor([0.0000, 0.2384])
    """
    return input - input.tanh()


# -- dropout ----------------------------------------------------------------------------------
def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _mask(input: Tensor, p: float, shape: tuple) -> Tensor:
    """A 0/1 keep-mask of ``shape`` from the bernoulli op (tagged random; the generator)."""
    return zeros(shape, dtype=input.dtype).bernoulli_(1.0 - p)


def _apply_mask(input: Tensor, mask: Tensor, p: float, inplace: bool) -> Tensor:
    scaled = mask * (1.0 / (1.0 - p)) if p < 1.0 else mask
    return input.mul_(scaled) if inplace else input * scaled


def dropout(input: Tensor, p: float = 0.5, training: bool = True,
            inplace: bool = False) -> Tensor:
    """Zero each element with probability ``p``; scale survivors by ``1/(1-p)`` (training only).

    Out of place this is the fused ``native_dropout`` (autograd keeps its 1-byte bool mask, a
    quarter of torch's float mask on the CPU); ``inplace=True`` multiplies ``input`` by a float
    mask. Both draw the same mask from the generator.

    Example:
        >>> import ember
        >>> x = ember.ones(4)
        >>> ember.nn.functional.dropout(x, 0.5, training=False) is x
        True
    """
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    if inplace or not input.dtype.is_floating_point:
        return _apply_mask(input, _mask(input, p, input.shape), p, inplace)
    return nn_ops.native_dropout(input, p, True)[0]  # the fused op: its saved mask is 1 byte


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool, alpha: bool):
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = (*input.shape[:2], *([1] * (input.dim() - 2)))
    if alpha:
        return _alpha(input, p, shape, inplace)
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    return _apply_mask(input, _mask(input, p, shape), p, inplace)


def _batched(fn, input: Tensor, batched_dim: int, *args):
    """Run a batched feature dropout on an unbatched input by adding a batch dimension."""
    if input.dim() == batched_dim - 1:
        return fn(input.unsqueeze(0), *args).squeeze(0)
    return fn(input, *args)


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` input with probability ``p``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.dropout1d(ember.ones(2, 3, 4), p=0.5).shape
        ember.Size([2, 3, 4])
        >>> F.dropout1d(ember.ones(2, 3, 4), training=False).equal(ember.ones(2, 3, 4))
        True
    """
    if input.dim() not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a "
                           f"{input.dim()}D input. Note that dropout1d exists to provide "
                           "channel-wise dropout on inputs with 1 spatial dimension, a channel "
                           "dimension, and an optional batch dimension (i.e. 2D or 3D inputs).")
    return _batched(_feature_dropout, input, 3, p, training, inplace, False)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, H, W)`` or ``(C, H, W)`` input with probability ``p``.

    Example:
        >>> import ember.nn.functional as F
        >>> y = F.dropout2d(ember.ones(2, 3, 4, 4), p=0.5)
        >>> bool(((y == 0) | (y == 2)).all())  # channels zeroed or scaled by 1 / (1 - p)
        True
    """
    if input.dim() not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is "
                      "deprecated and will result in an error in a future release. To retain "
                      "the behavior and silence this warning, please use dropout instead. Note "
                      "that dropout2d exists to provide channel-wise dropout on inputs with 2 "
                      "spatial dimensions, a channel dimension, and an optional batch dimension "
                      "(i.e. 3D or 4D inputs).", stacklevel=2)
    if input.dim() == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", stacklevel=2)
    return _feature_dropout(input, p, training, inplace, False)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True,
              inplace: bool = False) -> Tensor:
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input.

    Example:
        >>> import ember.nn.functional as F
        >>> F.dropout3d(ember.ones(2, 3, 2, 2, 2), p=0.25).shape
        ember.Size([2, 3, 2, 2, 2])
    """
    return _batched(_feature_dropout, input, 5, p, training, inplace, False)


_ALPHA = 1.7580993408473766  # -selu_scale * selu_alpha


def _alpha(input: Tensor, p: float, shape: tuple, inplace: bool) -> Tensor:
    if p == 1.0:
        return input.mul_(0.0) if inplace else input * 0.0
    keep = _mask(input, p, shape)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    noise = keep * a
    if inplace:
        return input.mul_(noise).add_(b)
    return input * noise + b


def alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                  inplace: bool = False) -> Tensor:
    """Dropout that keeps SELU's self-normalising mean and variance (training only).

    Example:
        >>> import ember.nn.functional as F
        >>> F.alpha_dropout(ember.ones(4), p=0.5, training=True).shape
        ember.Size([4])
        >>> F.alpha_dropout(ember.ones(4), p=0.5).tolist()  # identity when not training
        [1.0, 1.0, 1.0, 1.0]
    """
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    return _alpha(input, p, input.shape, inplace)


def feature_alpha_dropout(input: Tensor, p: float = 0.5, training: bool = False,
                          inplace: bool = False) -> Tensor:
    """Alpha dropout of whole channels.

    Example:
        >>> import ember.nn.functional as F
        >>> F.feature_alpha_dropout(ember.ones(2, 3, 4), p=0.5, training=True).shape
        ember.Size([2, 3, 4])
    """
    return _feature_dropout(input, p, training, inplace, True)


# -- embeddings -------------------------------------------------------------------------------
def _padding_idx(padding_idx, num: int):
    if padding_idx is None:
        return None
    if padding_idx > 0 and padding_idx >= num:
        raise AssertionError("Padding_idx must be within num_embeddings")
    if padding_idx < 0:
        if padding_idx < -num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx += num
    return padding_idx


def _check_indices(input: Tensor) -> None:
    if input.dtype not in (dt.int64, dt.int32):
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the "
                           f"following scalar types: Long, Int; but got {input.dtype} instead "
                           "(while checking arguments for embedding)")


def _renorm_(weight: Tensor, input: Tensor, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: rows used by ``input`` rescaled to norm <= max_norm."""
    with no_grad():
        rows = input.reshape(-1).unique()
        sel = weight.index_select(0, rows)
        norms = linalg_vector_norm(sel, norm_type, dim=-1, keepdim=True)
        scale = where(norms > max_norm, max_norm / (norms + 1e-7), 1.0).to(weight.dtype)
        weight.index_copy_(0, rows, sel * scale)


def _grad_scale(out: Tensor, scale: Tensor) -> Tensor:
    """``out``'s values with its gradient multiplied by ``scale`` (exact: adds a zero)."""
    d = out.detach()
    return d + (out - d) * scale


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None,
              max_norm: float | None = None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of ``weight`` picked by the integer ``input``.

    ``padding_idx`` rows get no gradient; ``max_norm`` renormalises the used rows of
    ``weight`` in place first; ``scale_grad_by_freq`` divides each row's gradient by its count
    in ``input``.

    Shape: input ``(*)``, weight ``(num, D)``, output ``(*, D)``.

    Example:
        >>> import ember.nn.functional as F
        >>> weight = ember.arange(6.0).reshape(3, 2)
        >>> F.embedding(ember.tensor([[2, 0]]), weight)
        tensor([[[4., 5.],
                 [0., 1.]]])
    """
    _check_indices(input)
    padding_idx = _padding_idx(padding_idx, weight.shape[0])
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    flat = input.reshape(-1)
    out = weight.index_select(0, flat)
    if padding_idx is not None and out.requires_grad:
        keep = (flat != padding_idx).unsqueeze(-1)
        out = where(keep, out, out.detach())
    if scale_grad_by_freq and out.requires_grad:
        counts = zeros(weight.shape[0], dtype=weight.dtype).index_add(
            0, flat, ones_like(flat, dtype=weight.dtype))
        out = _grad_scale(out, (1.0 / counts.index_select(0, flat)).unsqueeze(-1))
    return out.reshape(*input.shape, weight.shape[-1])


def _bag_ids(input: Tensor, offsets: Tensor, include_last_offset: bool) -> tuple[Tensor, int]:
    n = input.shape[0]
    offs = offsets.to(dt.int64)
    if include_last_offset:
        offs = offs[:-1]
    n_bags = offs.shape[0]
    if n_bags and offs[0].item() != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {offs[0].item()}")
    starts = zeros(n, dtype=dt.int64)
    if n_bags > 1:
        starts.index_add_(0, offs[1:].clamp(max=n - 1) if n else offs[1:],
                          (offs[1:] < n).to(dt.int64))
    return starts.cumsum(0), n_bags


def embedding_bag(input: Tensor, weight: Tensor, offsets: Tensor | None = None,
                  max_norm: float | None = None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights: Tensor | None = None, include_last_offset: bool = False,
                  padding_idx: int | None = None) -> Tensor:
    """Sums, means or maxima of bags of embeddings, without materialising each bag.

    Shape: input ``(B, N)`` (fixed-size bags, ``offsets`` None) or ``(L,)`` with ``offsets``
    ``(B,)`` (``B+1`` with ``include_last_offset``); output ``(B, D)``.

    Example:
        >>> import ember.nn.functional as F
        >>> weight = ember.arange(6.0).reshape(3, 2)
        >>> F.embedding_bag(ember.tensor([0, 2, 1]), weight, ember.tensor([0, 2]), mode="sum")
        tensor([[4., 6.],
                [2., 3.]])
    """
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max; got {mode}")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated "
                             "is a mini-batch of fixed length sequences. However, found offsets "
                             f"of type {type(offsets)}")
        b, n = input.shape
        offsets = arange(0, b * n, max(n, 1), dtype=dt.int64)[:b]
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.dim()}")
    padding_idx = _padding_idx(padding_idx, weight.shape[0])
    if max_norm is not None:
        _renorm_(weight, input, max_norm, norm_type)
    bag, n_bags = _bag_ids(input, offsets, include_last_offset)
    emb = embedding(input, weight, None, None, 2.0, scale_grad_by_freq)
    keep = ones_like(input, dtype=dt.bool_) if padding_idx is None else input != padding_idx
    kf = keep.to(weight.dtype).unsqueeze(-1)
    d = weight.shape[1]
    if mode == "max":
        return _bag_max(emb, keep, bag, n_bags, d)
    if per_sample_weights is not None:
        emb = emb * per_sample_weights.unsqueeze(-1)
    total = zeros(n_bags, d, dtype=emb.dtype).index_add(0, bag, emb * kf)
    if mode == "sum":
        return total
    count = zeros(n_bags, dtype=emb.dtype).index_add(0, bag, kf.squeeze(-1))
    return total / count.clamp(min=1).unsqueeze(-1)


def _bag_max(emb: Tensor, keep: Tensor, bag: Tensor, n_bags: int, d: int) -> Tensor:
    """Per bag and column, the first position holding the maximum is gathered, so (as in
    torch) ties send the whole gradient to that one position; empty bags give 0."""
    neg = where(keep.unsqueeze(-1), emb, -math.inf)
    idx = bag.unsqueeze(-1).expand(-1, d)  # (L, D) bag of each position
    init = zeros(n_bags, d, dtype=emb.dtype).fill_(-math.inf)
    with no_grad():
        best = init.scatter_reduce(0, idx, neg, "amax", include_self=True)  # (B, D)
        n = emb.shape[0]
        pos = arange(n, dtype=dt.int64).unsqueeze(-1).expand(-1, d)
        candidates = where(neg == best.index_select(0, bag), pos, n)
        first = zeros(n_bags, d, dtype=dt.int64).fill_(n).scatter_reduce(
            0, idx, candidates, "amin", include_self=True)  # (B, D); n for empty bags
    empty = best == -math.inf
    if n == 0:
        return where(empty, 0.0, best)
    return where(empty, 0.0, emb.gather(0, first.clamp(max=n - 1)))


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """int64 one-hot encoding: ``(*) -> (*, num_classes)`` (classes inferred when -1).

    Example:
        >>> import ember
        >>> ember.nn.functional.one_hot(ember.tensor([0, 2])).tolist()
        [[1, 0, 0], [0, 0, 1]]
    """
    if tensor.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(tensor.max().item()) + 1
    if tensor.numel():
        if tensor.min().item() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if tensor.max().item() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = zeros(*tensor.shape, num_classes, dtype=dt.int64)
    return out.scatter_(-1, tensor.unsqueeze(-1), 1)


# -- normalisation ----------------------------------------------------------------------------
def _verify_batch_size(shape) -> None:
    n = shape[0]
    for s in shape[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {shape}")


def _channel_view(t: Tensor, ndim: int) -> Tensor:
    """A per-channel vector ``(C,)`` shaped to broadcast over ``(N, C, *)``."""
    return t.reshape(-1, *([1] * (ndim - 2))) if ndim > 2 else t


def _affine(y: Tensor, weight, bias, view) -> Tensor:
    if weight is not None:
        y = y * view(weight)
    if bias is not None:
        y = y + view(bias)
    return y


def _no_complex_kernel(kernel: str, input: Tensor, empty_too: bool = False) -> None:
    """torch's NotImplementedError for a normalisation kernel without complex types (an empty
    input reaches only group norm's and glu's)."""
    if input.dtype.is_complex and (input.numel() or empty_too):
        raise NotImplementedError(f"\"{kernel}\" not implemented for "
                                  f"'{input.dtype.scalar_name}'")


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each channel (dim 1) by batch statistics (training) or running statistics.

    In training the running statistics, when given, are updated in place (also under
    ``no_grad``): ``running = (1 - momentum) * running + momentum * batch_stat`` with the
    unbiased batch variance; normalisation uses the biased one.

    Shape: input ``(N, C, *)``; running stats, weight, bias ``(C,)``.

    Example:
        >>> import ember.nn.functional as F
        >>> x = ember.tensor([[1.0, 10.0], [3.0, 20.0]])
        >>> mean, var = ember.zeros(2), ember.ones(2)
        >>> F.batch_norm(x, mean, var, training=True).round(decimals=3)
        tensor([[-1., -1.],
                [ 1.,  1.]])
        >>> mean  # running statistics updated in place (momentum 0.1)
        tensor([0.2000, 1.5000])
    """
    if training:
        _verify_batch_size(input.shape)
    elif running_mean is None or running_var is None:
        raise RuntimeError("running_mean must be defined in evaluation mode")
    _no_complex_kernel("batch_norm", input)
    if input.numel() == 0:  # torch's empty-input path: statistics untouched, channel 0 affine
        out = input.clone()
        out = out * weight[0] if weight is not None else out
        return out + bias[0] if bias is not None else out
    nd = input.dim()
    dims = (0, *range(2, nd))
    view = lambda t: _channel_view(t, nd)  # noqa: E731
    if training:
        mean = input.mean(dims)
        var = input.var(dims, correction=0)
        if running_mean is not None:
            _update_running(running_mean, running_var, mean, var, input.numel() // max(
                input.shape[1], 1), momentum)
    else:
        mean, var = running_mean, running_var
    y = (input - view(mean)) * view((var + eps).rsqrt())
    return _affine(y, weight, bias, view)


def _update_running(running_mean, running_var, mean, var, n: int, momentum: float) -> None:
    with no_grad():
        running_mean.mul_(1 - momentum).add_(mean.detach().to(running_mean.dtype) * momentum)
        unbiased = var.detach() * (n / (n - 1)) if n > 1 else var.detach()
        if running_var is not None:
            running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype) * momentum)


def instance_norm(input: Tensor, running_mean: Tensor | None = None,
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalise each (sample, channel) over its spatial dims.

    With running statistics and ``use_input_stats``, they are updated with the batch average of
    the per-instance statistics (as torch).

    Shape: input ``(N, C, *)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.instance_norm(ember.tensor([[[1.0, 3.0], [5.0, 9.0]]])).round(decimals=3)
        tensor([[[-1.,  1.],
                 [-1.,  1.]]])
    """
    _no_complex_kernel("batch_norm", input)
    if (weight is not None or bias is not None) and not input.shape[0] * input.shape[1]:
        # torch applies the affine through a batch norm over N * C channels, which fails so
        raise IndexError("select(): index 0 out of range for tensor of size [0] at dimension 0")
    if use_input_stats:
        spatial = 1
        for s in input.shape[2:]:
            spatial *= s
        if spatial == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {input.shape}")
    nd = input.dim()
    dims = tuple(range(2, nd))
    view = lambda t: _channel_view(t, nd)  # noqa: E731
    if use_input_stats:
        mean = input.mean(dims, keepdim=True)
        var = input.var(dims, correction=0, keepdim=True)
        if running_mean is not None:
            n = input.numel() // max(input.shape[0] * input.shape[1], 1)
            flat_m = mean.reshape(input.shape[0], -1).mean(0)
            flat_v = var.reshape(input.shape[0], -1)
            unbiased = (flat_v * (n / (n - 1)) if n > 1 else flat_v).mean(0)
            with no_grad():
                running_mean.mul_(1 - momentum).add_(flat_m.detach() * momentum)
                running_var.mul_(1 - momentum).add_(unbiased.detach() * momentum)
        y = (input - mean) * (var + eps).rsqrt()
    else:
        y = (input - view(running_mean)) * view((running_var + eps).rsqrt())
    return _affine(y, weight, bias, view)


def _norm_dims(input: Tensor, normalized_shape, op: str) -> tuple:
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.dim() < k or tuple(input.shape[-k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size"
                           f"{list(input.shape)}")
    return tuple(range(input.dim() - k, input.dim()))


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise over the trailing ``normalized_shape`` dims (biased variance), then affine.

    The fused ``native_layer_norm``: autograd keeps the input and the per-row mean and
    ``rstd``, not the intermediate tensors of a composite.
    Shape: input ``(*, *normalized_shape)``; weight and bias ``normalized_shape``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.layer_norm(ember.tensor([[1.0, 3.0], [0.0, 4.0]]), (2,)).round(decimals=3)
        tensor([[-1.,  1.],
                [-1.,  1.]])
    """
    dims = _norm_dims(input, normalized_shape, "layer_norm")
    shape = list(input.shape[dims[0]:])
    return nn_ops.native_layer_norm(input, shape, weight, bias, eps)[0]


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None,
             eps: float | None = None) -> Tensor:
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing dims (eps: the dtype's eps).

    Example:
        >>> import ember.nn.functional as F
        >>> F.rms_norm(ember.tensor([[3.0, -3.0]]), (2,)).round(decimals=3)
        tensor([[ 1., -1.]])
    """
    dims = _norm_dims(input, normalized_shape, "rms_norm")
    if eps is None:
        eps = dt.finfo(input.dtype).eps
    y = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return y * weight if weight is not None else y


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None,
               bias: Tensor | None = None, eps: float = 1e-5) -> Tensor:
    """Normalise groups of channels per sample, then a per-channel affine.

    Shape: input ``(N, C, *)`` with ``C`` divisible by ``num_groups``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.group_norm(ember.tensor([[1.0, 3.0, 5.0, 9.0]]), 2).round(decimals=3)
        tensor([[-1.,  1., -1.,  1.]])
    """
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.dim()}")
    n, c = input.shape[:2]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    _no_complex_kernel("GroupNormKernelImpl", input, empty_too=True)
    per_group = (c // num_groups) * math.prod(input.shape[2:])  # not -1: n may be 0
    g = input.reshape(n, num_groups, per_group)
    mean = g.mean(-1, keepdim=True)
    var = g.var(-1, correction=0, keepdim=True)
    y = ((g - mean) * (var + eps).rsqrt()).reshape(input.shape)
    nd = input.dim()
    return _affine(y, weight, bias, lambda t: _channel_view(t, nd))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12,
              out: Tensor | None = None) -> Tensor:
    """``input / max(||input||_p, eps)`` along ``dim``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.normalize(ember.tensor([[3.0, 4.0]]))
        tensor([[0.6000, 0.8000]])
    """
    denom = linalg_vector_norm(input, p, dim=dim, keepdim=True).clamp_min(eps)
    res = input / denom
    return out.copy_(res) if out is not None else res


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """Cosine of the angle between ``x1`` and ``x2`` along ``dim`` (broadcast); each norm is
    clamped to ``eps`` without affecting its gradient, as torch.

    Example:
        >>> import ember.nn.functional as F
        >>> F.cosine_similarity(ember.tensor([[1.0, 0.0]]), ember.tensor([[2.0, 0.0]]))
        tensor([1.])
    """
    common = dt.promote_types(x1.dtype, x2.dtype)
    if common.is_complex:
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{common.scalar_name}")
    x1, x2 = x1.broadcast_to(_bshape(x1, x2)), x2.broadcast_to(_bshape(x1, x2))
    n1 = _clamp_value(linalg_vector_norm(x1, 2, dim=dim, keepdim=True), eps)
    n2 = _clamp_value(linalg_vector_norm(x2, 2, dim=dim, keepdim=True), eps)
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def _bshape(a: Tensor, b: Tensor) -> tuple:
    return broadcast_shapes(a.shape, b.shape)


def _clamp_value(t: Tensor, eps: float) -> Tensor:
    """``t`` clamped below at ``eps`` in value only (gradient as if unclamped)."""
    return t + (t.detach().clamp_min(eps) - t.detach())


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``||x1 - x2 + eps||_p`` over the last dim.

    Example:
        >>> import ember.nn.functional as F
        >>> F.pairwise_distance(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]]), eps=0.0)
        tensor([5.])
    """
    return linalg_vector_norm(x1 - x2 + eps, p, dim=-1, keepdim=keepdim)


# -- losses -----------------------------------------------------------------------------------
def _legacy_reduction(size_average, reduce) -> str:
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='mean' instead." if reduce is not False else
                  "size_average and reduce args will be deprecated, please use "
                  "reduction='none' instead.", stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        return "mean"
    return "sum" if reduce else "none"


def _reduction(size_average, reduce, reduction: str) -> str:
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce)
    return reduction


def _reduce(loss: Tensor, reduction: str) -> Tensor:
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _check_target_size(name: str, input: Tensor, target: Tensor) -> None:
    if target.shape != input.shape:
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", stacklevel=3)


@autocast_function("fp32")
def mse_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
             reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Squared error ``(input - target)^2``, reduced.

    Example:
        >>> import ember
        >>> ember.nn.functional.mse_loss(ember.tensor([1.0, 3.0]), ember.zeros(2)).item()
        5.0
    """
    _check_target_size("mse_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    d = input - target
    loss = d * d
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function("fp32")
def l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
            reduction: str = "mean", weight: Tensor | None = None) -> Tensor:
    """Absolute error ``|input - target|``, reduced.

    Example:
        >>> import ember.nn.functional as F
        >>> F.l1_loss(ember.tensor([1.0, -3.0]), ember.zeros(2))
        tensor(2.)
    """
    _check_target_size("l1_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    loss = (input - target).abs()
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function("fp32")
def smooth_l1_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """Quadratic below ``beta`` (``0.5 d^2 / beta``), linear above (``|d| - 0.5 beta``).

    Example:
        >>> import ember.nn.functional as F
        >>> F.smooth_l1_loss(ember.tensor([0.5, 3.0]), ember.zeros(2), reduction="none")
        tensor([0.1250, 2.5000])
    """
    _check_target_size("smooth_l1_loss", input, target)
    reduction = _reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = (input - target).abs()
    if beta == 0:
        return _reduce(d, reduction)
    loss = where(d < beta, d * d * (0.5 / beta), d - 0.5 * beta)
    return _reduce(loss, reduction)


@autocast_function("fp32")
def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0,
               weight: Tensor | None = None) -> Tensor:
    """Quadratic below ``delta`` (``0.5 d^2``), linear above (``delta (|d| - 0.5 delta)``).

    Example:
        >>> import ember.nn.functional as F
        >>> F.huber_loss(ember.tensor([0.5, 3.0]), ember.zeros(2), reduction="none", delta=2.0)
        tensor([0.1250, 4.0000])
    """
    _check_target_size("huber_loss", input, target)
    d = (input - target).abs()
    loss = where(d < delta, d * d * 0.5, (d - 0.5 * delta) * delta)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function("fp32")
def binary_cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``-(t log x + (1 - t) log(1 - x))`` with logs clamped at -100 (as torch).

    Example:
        >>> import ember.nn.functional as F
        >>> F.binary_cross_entropy(ember.tensor([0.5, 0.5]), ember.tensor([1.0, 0.0]))
        tensor(0.6931)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the same "
                         "size.")
    if input.numel() and ((input.detach() < 0) | (input.detach() > 1)).any().item():
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_x = input.log().clamp_min(-100)
    log_1mx = (1 - input).log().clamp_min(-100)
    loss = -(target * log_x + (1 - target) * log_1mx)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function("fp32")
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor,
                                     weight: Tensor | None = None, size_average=None,
                                     reduce=None, reduction: str = "mean",
                                     pos_weight: Tensor | None = None) -> Tensor:
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from logits.

    ``pos_weight`` weights the positive term per class.

    Example:
        >>> import ember.nn.functional as F
        >>> F.binary_cross_entropy_with_logits(ember.zeros(2), ember.tensor([1.0, 0.0]))
        tensor(0.6931)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if target.shape != input.shape:
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    neg_log_sig = -nn_ops.log_sigmoid(input)
    if pos_weight is not None:
        log_weight = (pos_weight - 1) * target + 1
        loss = (1 - target) * input + log_weight * neg_log_sig
    else:
        loss = (1 - target) * input + neg_log_sig
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function("fp32")
def kl_div(input: Tensor, target: Tensor, size_average=None, reduce=None,
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Pointwise KL divergence ``target * (log target - input)`` (``input`` is log-probs).

    Example:
        >>> import ember.nn.functional as F
        >>> logp = ember.tensor([[0.5, 0.5]]).log()
        >>> F.kl_div(logp, ember.tensor([[0.5, 0.5]]), reduction="batchmean")
        tensor(0.)
    """
    if size_average is not None or reduce is not None:
        reduction = _legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns with "
                      "the KL div math definition.'mean' will be changed to behave the same as "
                      "'batchmean' in the next major release.", stacklevel=2)
    if input.dtype.is_complex or target.dtype.is_complex:
        raise RuntimeError("kl_div: Complex inputs not supported.")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        # xlogy(t, t) as torch: 0 at t == 0 (its target gradient there is NaN, as torch's)
        loss = where(target == 0, 0.0, target * target.log()) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.dim() else loss.sum()
    return _reduce(loss, reduction)


def _class_last(input: Tensor) -> Tensor:
    """``(N, C, d1, ...)`` -> ``(N, d1, ..., C)``; 1-D and 2-D inputs unchanged."""
    return input.movedim(1, -1) if input.dim() > 2 else input


def _check_nll(input: Tensor, target: Tensor) -> None:
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    if input.dim() >= 2 and input.shape[0] != (target.shape[0] if target.dim() else -1):
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target "
                         f"batch_size ({target.shape[0] if target.dim() else 0}).")
    if input.dim() > 2 and tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"Expected target size {[input.shape[0], *input.shape[2:]]}, got "
                           f"{list(target.shape)}")


_BATCHED_BIT = DispatchKey.Batched.bit


def _nll_parts(input, target, weight, ignore_index):
    """Per-element ``-w[t] * input[t]`` and the weights ``w[t]`` (0 where ignored)."""
    _check_nll(input, target)
    c = input.shape[1] if input.dim() >= 2 else input.shape[0]
    ignored = target == ignore_index
    safe = where(ignored, 0, target)
    # meta (compiler capture): no data; inside vmap (Batched key): values are per example
    if safe.numel() and safe.device.type != "meta" and not safe._ver.keys & _BATCHED_BIT:
        lo, hi = int(safe.min().item()), int(safe.max().item())
        if lo < 0 or hi >= c:
            raise IndexError(f"Target {hi if hi >= c else lo} is out of bounds.")
    x = _class_last(input)
    picked = x.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    if weight is not None:
        w = weight.index_select(0, safe.reshape(-1)).reshape(safe.shape)
        w = where(ignored, 0.0, w)
    else:
        w = (~ignored).to(input.dtype)
    return -picked * w, w


@autocast_function("fp32")
def nll_loss(input: Tensor, target: Tensor, weight: Tensor | None = None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of class indices given log-probabilities ``input``.

    ``mean`` divides by the total weight of the non-ignored targets.

    Shape: input ``(N, C)``, ``(C,)`` or ``(N, C, d1, ...)``; target ``(N)``, ``()`` or
    ``(N, d1, ...)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.nll_loss(ember.tensor([[-1.0, -2.0], [-3.0, -4.0]]), ember.tensor([1, 0]))
        tensor(2.5000)
    """
    reduction = _reduction(size_average, reduce, reduction)
    loss, w = _nll_parts(input, target, weight, ignore_index)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


@autocast_function("fp32")
def cross_entropy(input: Tensor, target: Tensor, weight: Tensor | None = None,
                  size_average=None, ignore_index: int = -100, reduce=None,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Tensor:
    """``nll_loss(log_softmax(input, 1), target)`` for class indices, or the soft-label cross
    entropy for class probabilities; ``label_smoothing`` mixes in the uniform distribution.

    Example:
        >>> import ember
        >>> x = ember.zeros(2, 4)
        >>> round(ember.nn.functional.cross_entropy(x, ember.tensor([0, 3])).item(), 4)
        1.3863
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    logp = nn_ops.log_softmax(input, class_dim)
    if target.dtype.is_floating_point:
        return _soft_cross_entropy(logp, target, weight, ignore_index, reduction,
                                   label_smoothing, class_dim)
    nll = nll_loss(logp, target, weight, None, ignore_index, None, reduction)
    if label_smoothing == 0.0:
        return nll
    ignored = target == ignore_index
    wv = _channel_view(weight, logp.dim()) if weight is not None and logp.dim() > 1 else weight
    smooth = -(logp * wv if weight is not None else logp).sum(class_dim)
    smooth = where(ignored, 0.0, smooth)
    if reduction == "mean":
        if weight is not None:
            denom = weight.index_select(0, target[~ignored].reshape(-1)).sum()
        else:
            denom = (~ignored).sum()
        ret = smooth.sum() / denom
    else:
        ret = _reduce(smooth, reduction)
    n = logp.shape[class_dim]
    return nll * (1 - label_smoothing) + ret * (label_smoothing / n)


def _soft_cross_entropy(logp, target, weight, ignore_index, reduction, ls, class_dim):
    if ignore_index != -100:
        raise RuntimeError("ignore_index is not supported for floating point target")
    if target.shape != logp.shape:
        raise RuntimeError(f"Expected floating point target to have the same shape as input; "
                           f"got {list(target.shape)} and {list(logp.shape)}")
    n = logp.shape[class_dim]
    if ls > 0:
        target = target * (1 - ls) + ls / n
    prod = logp * target
    if weight is not None:
        prod = prod * (_channel_view(weight, logp.dim()) if logp.dim() > 1 else weight)
    if reduction == "mean":
        return -prod.sum() / (logp.numel() // n if n else 0)
    if reduction == "sum":
        return -prod.sum()
    if reduction == "none":
        return -prod.sum(class_dim)
    raise ValueError(f"{reduction} is not a valid value for reduction")


@autocast_function("fp32")
def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``max(0, -target * (input1 - input2) + margin)``.

    Example:
        >>> import ember.nn.functional as F
        >>> x1, x2 = ember.tensor([1.0, 2.0]), ember.tensor([2.0, 1.0])
        >>> F.margin_ranking_loss(x1, x2, ember.tensor([1.0, 1.0]), reduction="none")
        tensor([1., 0.])
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() != target.dim():
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {input1.shape}, input2: {input2.shape}, "
                           f"target: {target.shape} ")
    loss = (-target * (input1 - input2) + margin).clamp_min(0)
    return _reduce(loss, reduction)


@autocast_function("fp32")
def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``x`` where target is 1, ``max(0, margin - x)`` where target is -1.

    Example:
        >>> import ember.nn.functional as F
        >>> y = ember.tensor([1.0, -1.0])
        >>> F.hinge_embedding_loss(ember.tensor([0.25, 0.25]), y, reduction="none")
        tensor([0.2500, 0.7500])
    """
    reduction = _reduction(size_average, reduce, reduction)
    margin_part = where(target != 1, (margin - input).clamp_min(0), 0.0)
    self_part = where(target != -1, input, 0.0)
    return _reduce(margin_part + self_part, reduction)


@autocast_function("fp32")
def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """``1 - cos(x1, x2)`` for target 1, ``max(0, cos(x1, x2) - margin)`` for target -1.

    Example:
        >>> import ember.nn.functional as F
        >>> a, b = ember.tensor([[1.0, 0.0]]), ember.tensor([[0.0, 1.0]])
        >>> F.cosine_embedding_loss(a, b, ember.tensor([1]))
        tensor(1.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if input1.dim() != input2.dim() or input1.dim() not in (1, 2):
        raise RuntimeError(f"cosine_embedding_loss : 1D or 2D input expected, got "
                           f"{input1.dim()}D and {input2.dim()}D")
    d = input1.dim() - 1
    eps = 1e-12
    prod = (input1 * input2).sum(d)
    m1 = (input1 * input1).sum(d) + eps
    m2 = (input2 * input2).sum(d) + eps
    cos = prod / (m1 * m2).sqrt()
    pos = where(target == 1, 1 - cos, 0.0)
    neg = where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(pos + neg, reduction)


@autocast_function("fp32")
def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """``max(0, d(a, p) - d(a, n) + margin)`` with ``d`` the pairwise p-norm distance.

    Example:
        >>> import ember.nn.functional as F
        >>> a, p, n = ember.zeros(1, 2), ember.tensor([[3.0, 4.0]]), ember.tensor([[0.0, 1.0]])
        >>> F.triplet_margin_loss(a, p, n, eps=0.0)
        tensor(5.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.dim()}D, "
                           f"positive {positive.dim()}D, and negative {negative.dim()}D inputs")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce((d_pos - d_neg + margin).clamp_min(0), reduction)


def triplet_margin_with_distance_loss(anchor: Tensor, positive: Tensor, negative: Tensor, *,
                                      distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean") -> Tensor:
    """``max(0, margin + d(a, p) - d(a, n))`` for a caller-chosen distance ``d``.

    ``distance_function(x1, x2)`` returns a tensor of distances (default
    :func:`pairwise_distance`); ``swap`` uses ``min(d(a, n), d(p, n))`` as the negative
    distance. Mirrors torch.nn.functional.triplet_margin_with_distance_loss.

    Raises:
        ValueError: an unknown ``reduction`` or ``margin <= 0``.
        RuntimeError: the three inputs differ in number of dimensions.

    Example:
        >>> import ember.nn.functional as F
        >>> a, p, n = ember.zeros(1, 2), ember.tensor([[3.0, 4.0]]), ember.tensor([[0.0, 1.0]])
        >>> l1 = lambda x, y: (x - y).abs().sum(-1)
        >>> F.triplet_margin_with_distance_loss(a, p, n, distance_function=l1)
        tensor(7.)
    """
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.dim() == positive.dim() == negative.dim():
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.dim()}D, "
                           f"positive {positive.dim()}D, and negative {negative.dim()}D inputs")
    dist = pairwise_distance if distance_function is None else distance_function
    d_pos = dist(anchor, positive)
    d_neg = dist(anchor, negative)
    if swap:
        d_neg = minimum(d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


@autocast_function("fp32")
def soft_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """``log(1 + exp(-target * input))``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.soft_margin_loss(ember.zeros(2), ember.tensor([1.0, -1.0]))
        tensor(0.6931)
    """
    reduction = _reduction(size_average, reduce, reduction)
    return _reduce((-target * input).exp().log1p(), reduction)


@autocast_function("fp32")
def multi_margin_loss(input: Tensor, target: Tensor, p: int = 1, margin: float = 1.0,
                      weight: Tensor | None = None, size_average=None, reduce=None,
                      reduction: str = "mean") -> Tensor:
    """Multi-class hinge: ``sum_{i != y} max(0, margin - x[y] + x[i])^p / C``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.multi_margin_loss(ember.tensor([[0.5, 1.0, 0.0]]), ember.tensor([1]))
        tensor(0.1667)
    """
    reduction = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else input.reshape(1, -1)
    t = target.reshape(-1)
    c = x.shape[1]
    xy = x.gather(1, t.unsqueeze(1))
    z = (x - xy + margin).clamp_min(0)
    if p == 2:
        z = z * z
    if weight is not None:
        z = z * weight.index_select(0, t).unsqueeze(1)
    not_target = arange(c).unsqueeze(0) != t.unsqueeze(1)
    loss = where(not_target, z, 0.0).sum(1) / c
    if input.dim() < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def _check_multilabel(input: Tensor, target: Tensor) -> int:
    """Validate multilabel_margin_loss's arguments; the number of classes ``C``."""
    shape = list(input.shape)
    if input.dim() > 2 or (input.dim() >= 1 and shape[-1] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, "
                           f"but got: {shape}")
    if target.shape != input.shape:
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: "
                           f"{shape}")
    if target.dtype != dt.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype}")
    c = shape[-1] if input.dim() else 1
    if target.numel() and ((target < -1) | (target >= c)).any().item():
        raise RuntimeError("argument #2 'target' is out of range")
    return c


@autocast_function("fp32")
def multilabel_margin_loss(input: Tensor, target: Tensor, size_average=None, reduce=None,
                           reduction: str = "mean") -> Tensor:
    """Multi-label hinge: ``sum_{j, i} max(0, 1 - (x[y_j] - x[i])) / C`` per sample.

    ``y_j`` runs over the leading target entries up to the first ``-1``; ``i`` over the classes
    that are not targets. A repeated target counts once per repetition, as in torch.

    Shape: input ``(C)`` or ``(N, C)``; target the same shape, int64; output ``()`` or ``(N)``
    with ``reduction='none'``, else ``()``.

    Raises:
        RuntimeError: a 3-d or empty-class input, a target of another shape or dtype, or a
            target value outside ``[-1, C)``.

    Example:
        >>> import ember.nn.functional as F
        >>> F.multilabel_margin_loss(ember.tensor([[0.5, 1.0, 0.0]]), ember.tensor([[1, -1, 0]]))
        tensor(0.1667)
    """
    reduction = _reduction(size_average, reduce, reduction)
    c = _check_multilabel(input, target)
    x = input.reshape(-1, c)                                     # (N, C)
    t = target.reshape(-1, c)                                    # (N, K=C)
    valid = (t == -1).cumsum(1) == 0                             # before the first -1
    safe_t = where(valid, t, 0)
    hit = (safe_t.unsqueeze(2) == arange(c)) & valid.unsqueeze(2)  # (N, K, C)
    is_target = hit.any(1)                                       # (N, C)
    xt = x.gather(1, safe_t)                                     # (N, K)
    z = (1 - xt.unsqueeze(2) + x.unsqueeze(1)).relu()            # (N, K, C); no grad at 0
    keep = valid.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = where(keep, z, 0.0).sum((1, 2)) / c                   # (N,)
    if input.dim() < 2:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


def multilabel_soft_margin_loss(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """Mean over classes of the binary logistic loss of each label.

    Example:
        >>> import ember.nn.functional as F
        >>> F.multilabel_soft_margin_loss(ember.zeros(1, 3), ember.tensor([[1.0, 0.0, 1.0]]))
        tensor(0.6931)
    """
    reduction = _reduction(size_average, reduce, reduction)
    loss = -(target * nn_ops.log_sigmoid(input) + (1 - target) * nn_ops.log_sigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(dim=input.dim() - 1) / input.shape[-1]
    return _reduce(loss, reduction)


@autocast_function("fp32")
def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None,
                     reduction: str = "mean") -> Tensor:
    """Poisson negative log-likelihood (``exp(input) - target * input`` for log inputs).

    Example:
        >>> import ember.nn.functional as F
        >>> F.poisson_nll_loss(ember.zeros(2), ember.tensor([1.0, 3.0]))
        tensor(1.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    loss = input.exp() - target * input if log_input else input - target * (input + eps).log()
    if full:
        safe = where(target > 1, target, 1.0)
        stirling = safe * safe.log() - safe + (safe * (2 * math.pi)).log() * 0.5
        loss = loss + where(target > 1, stirling, 0.0)
    return _reduce(loss, reduction)


def gaussian_nll_loss(input: Tensor, target: Tensor, var: Tensor | float, full: bool = False,
                      eps: float = 1e-6, reduction: str = "mean") -> Tensor:
    """``0.5 * (log(max(var, eps)) + (input - target)^2 / max(var, eps))`` (+ const if full).

    Example:
        >>> import ember.nn.functional as F
        >>> F.gaussian_nll_loss(ember.tensor([1.0, 3.0]), ember.tensor([2.0, 1.0]), ember.ones(2))
        tensor(1.2500)
    """
    if not isinstance(var, Tensor):
        var = ones_like(input) * var
    if var.dim() == input.dim() - 1 or (var.dim() == input.dim() and var.shape[-1] == 1
                                        and input.shape[-1] != 1):
        var = var.unsqueeze(-1) if var.dim() == input.dim() - 1 else var
    if (var.detach() < 0).any().item():
        raise ValueError("var has negative entry/entries")
    var = _clamp_min_nograd(var, eps)
    loss = 0.5 * (var.log() + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


def _clamp_min_nograd(t: Tensor, eps: float) -> Tensor:
    """torch clamps ``var`` in place under no_grad: values clamped, gradient unchanged."""
    return t + (t.detach().clamp_min(eps) - t.detach())

