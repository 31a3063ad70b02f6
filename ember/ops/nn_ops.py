"""Neural-network operators that need a fused kernel: softmax, log_softmax and activations.

Each op is declared once here: schema, Meta rule (validation with torch's messages), docstring
and derivative rule written with ember ops (so double backward works). CPU kernels live in
ember/backends/cpu/nn_ops.py. Everything else in ``ember.nn.functional`` (norms, losses,
embedding, dropout, distances) is a composite of differentiable ops whose values and gradients
match torch's, so it needs no declaration here. In-place activation variants are composites in
``ember.nn.functional`` as well.
"""

from __future__ import annotations

import math

from ember.autograd.grad_mode import is_grad_enabled
from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes, canonical_dim
from ember.ops._define import Spec, Tag, derivative, operator
from ember.ops._promotion import result_type
from ember.ops.pointwise import _TN, where
from ember.tensor import Tensor

__all__ = ["softmax", "log_softmax", "celu", "selu", "native_dropout", "native_layer_norm"]

_P = (Tag.pointwise,)


def _require_tensor(op: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(x).__name__}")


# torch's CPU kernels that refuse complex inputs (NotImplementedError naming the kernel)
_COMPLEX_KERNELS = {"elu": "elu_cpu", "leaky_relu": "leaky_relu_cpu",
                    "log_sigmoid_forward": "log_sigmoid_cpu", "gelu": "GeluKernelImpl",
                    "gelu_backward": "GeluKernelImpl", "softplus": "softplus_cpu",
                    "mish": "mish_cpu", "hardswish": "hardswish_cpu",
                    "hardsigmoid": "hardsigmoid_cpu", "silu": "silu_cpu"}


def _require_float(op: str, d: dt.DType) -> None:
    if d.is_complex and op in _COMPLEX_KERNELS:
        raise NotImplementedError(f'"{_COMPLEX_KERNELS[op]}" not implemented for '
                                  f'\'{_TN[d.name]}\'')
    if not d.is_floating_point:
        raise RuntimeError(f'"{op}" not implemented for \'{_TN[d.name]}\'')


# -- softmax family -------------------------------------------------------------------------
def _softmax_spec(op: str, input, dim, dtype) -> Spec:
    _require_tensor(op, input)
    d = canonical_dim(dim, input.dim())
    out = dtype if dtype is not None else input._dtype
    if not out.is_floating_point and input.numel():  # torch returns an empty input unchecked
        # torch's kernel for the last dim (and 0-d/1-d inputs), its general kernel otherwise
        kernel = f"{op}_lastdim_kernel_impl" if d == max(input.dim() - 1, 0) else \
            f"{op}_kernel_impl"
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_TN[out.name]}\'')
    return Spec(input._shape, out)


@operator("softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
def softmax(input, dim, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed max-shifted (torch.softmax).

    ``dtype`` casts the input first (e.g. float16 computed and returned as float32).

    Shape: output as input.

    Example:
        >>> import ember
        >>> ember.softmax(ember.tensor([0.0, 0.0]), 0).tolist()
        [0.5, 0.5]
    """
    return _softmax_spec("softmax", input, dim, dtype)


@operator("log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor")
def log_softmax(input, dim, dtype=None):
    """``x - logsumexp(x)`` along ``dim`` (torch.log_softmax), stable for large inputs.

    Shape: output as input.

    Example:
        >>> import ember
        >>> round(ember.log_softmax(ember.tensor([0.0, 0.0]), 0)[0].item(), 4)
        -0.6931
    """
    return _softmax_spec("log_softmax", input, dim, dtype)


def _dim_of(ctx) -> int:
    return canonical_dim(ctx.dim, len(ctx.shape_of("input")))


@derivative(softmax, save=("result",))
def _softmax_backward(ctx, grad):
    y = ctx.result
    d = _dim_of(ctx)
    g = y * (grad - (grad * y).sum(d, keepdim=True))
    return g.to(ctx.dtype_of("input"))


@derivative(log_softmax, save=("result",))
def _log_softmax_backward(ctx, grad):
    y = ctx.result
    d = _dim_of(ctx)
    g = grad - y.exp() * grad.sum(d, keepdim=True)
    return g.to(ctx.dtype_of("input"))


# -- activations ------------------------------------------------------------------------------
def _act_spec(op: str, input) -> Spec:
    _require_tensor(op, input)
    _require_float(op, input._dtype)
    return Spec(input._shape, input._dtype)


_GELU_MODES = ("none", "tanh")


@operator("gelu(Tensor self, *, str approximate='none') -> Tensor", _P, method=False)
def gelu(input, *, approximate="none"):
    """Gaussian error linear unit ``x * Phi(x)``; ``approximate='tanh'`` uses torch's tanh form.

    Example:
        >>> import ember
        >>> from ember.ops.nn_ops import gelu
        >>> round(gelu(ember.tensor([1.0])).item(), 4)
        0.8413
    """
    if approximate not in _GELU_MODES:
        raise RuntimeError(f"approximate argument must be either none or tanh.; got "
                           f"{approximate!r}")
    return _act_spec("gelu", input)


_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_GELU_BETA = math.sqrt(2.0 / math.pi)
_GELU_KAPPA = 0.044715


@derivative(gelu, save=("input",))
def _gelu_backward(ctx, grad):
    return gelu_backward(grad, ctx.input, approximate=ctx.approximate)


@operator("gelu_backward(Tensor grad_output, Tensor self, *, str approximate='none') -> Tensor",
          _P, method=False)
def gelu_backward(grad_output, input, *, approximate="none"):
    """``grad_output * gelu'(input)``: gelu's gradient as one fused kernel."""
    _require_tensor("gelu_backward", input)
    if grad_output._shape != input._shape:
        raise RuntimeError(f"gelu_backward: grad_output shape {list(grad_output._shape)} does "
                           f"not match input shape {list(input._shape)}")
    return _act_spec("gelu_backward", input)


@derivative(gelu_backward, save=("grad_output", "input"))
def _gelu_double_backward(ctx, grad):
    x = ctx.input
    approximate = ctx.approximate
    d_grad_output = gelu_backward(grad, x, approximate=approximate)
    return d_grad_output, grad * ctx.grad_output * _gelu_second(x, approximate)


def _gelu_second(x: Tensor, approximate: str) -> Tensor:
    """``gelu''(x)``: ``phi(x) (2 - x^2)`` exactly; the tanh form's own second derivative."""
    if approximate == "tanh":
        x_sq = x * x
        du = (x_sq * (3 * _GELU_KAPPA) + 1) * _GELU_BETA
        t = ((x + x_sq * x * _GELU_KAPPA) * _GELU_BETA).tanh()
        d2u = x * (6 * _GELU_KAPPA * _GELU_BETA)
        return (1 - t * t) * (du + x * 0.5 * (d2u - t * du * du * 2))
    pdf = (x * x * -0.5).exp() * _INV_SQRT_2PI
    return pdf * (2 - x * x)


@operator("silu(Tensor self) -> Tensor", _P, method=False)
def silu(input):
    """Sigmoid linear unit ``x * sigmoid(x)`` (swish)."""
    return _act_spec("silu", input)


@derivative(silu, save=("input",))
def _silu_backward(ctx, grad):
    x = ctx.input
    s = x.sigmoid()
    return grad * s * (1 + x * (1 - s))


@operator("mish(Tensor self) -> Tensor", _P, method=False)
def mish(input):
    """``x * tanh(softplus(x))``."""
    return _act_spec("mish", input)


@derivative(mish, save=("input",))
def _mish_backward(ctx, grad):
    x = ctx.input
    s = x.sigmoid()
    t = softplus(x).tanh()
    return grad * (t + x * s * (1 - t * t))


@operator("softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", _P,
          method=False)
def softplus(input, beta=1, threshold=20):
    """``log(1 + exp(beta * x)) / beta``; linear where ``beta * x > threshold``."""
    return _act_spec("softplus", input)


@derivative(softplus, save=("input",))
def _softplus_backward(ctx, grad):
    bx = ctx.input * ctx.beta
    return where(bx > ctx.threshold, grad, grad * bx.sigmoid())


@operator("elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor",
          _P, method=False)
def elu(input, alpha=1.0, scale=1.0, input_scale=1.0):
    """``scale * x`` for ``x > 0``, else ``scale * alpha * (exp(input_scale * x) - 1)``."""
    return _act_spec("elu", input)


@derivative(elu, save=("input",))
def _elu_backward(ctx, grad):
    x = ctx.input
    neg = (x * ctx.input_scale).exp() * (ctx.input_scale * ctx.alpha * ctx.scale)
    return where(x > 0, grad * ctx.scale, grad * neg)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor) -> Tensor:
    """Scaled ELU with torch's constants (alpha 1.6733, scale 1.0507).

    Example:
        >>> ember.selu(ember.tensor([-1.0, 2.0]))
        tensor([-1.1113,  2.1014])
    """
    return elu(input, _SELU_ALPHA, _SELU_SCALE, 1.0)


def celu(input: Tensor, alpha: float = 1.0) -> Tensor:
    """``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``.

    Example:
        >>> ember.celu(ember.tensor([-1.0, 2.0]), alpha=2.0)
        tensor([-0.7869,  2.0000])
    """
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError")
    return elu(input, alpha, 1.0, 1.0 / alpha)


@operator("threshold_backward(Tensor grad_output, Tensor self, Scalar threshold) -> Tensor", _P,
          method=False)
def threshold_backward(grad_output, input, threshold):
    """``0 where input <= threshold, else grad_output`` (torch.ops.aten.threshold_backward).

    ReLU's (and threshold's) gradient as one fused kernel; ``input`` is the forward's input
    or, for ReLU, its result (the two agree on ``> 0``). NaN in ``input`` passes the
    gradient through; NaN in ``grad_output`` is zeroed where masked, as in PyTorch. Shapes
    broadcast; the dtype is the promotion of both.
    """
    _require_tensor("threshold_backward", grad_output)
    _require_tensor("threshold_backward", input)
    if grad_output._dtype is dt.bool_ or input._dtype is dt.bool_:
        raise RuntimeError('"threshold_backward" not implemented for \'Bool\'')
    for t in (grad_output, input):
        if t._dtype.is_complex:
            raise NotImplementedError(f'"threshold_cpu" not implemented for '
                                      f'\'{_TN[t._dtype.name]}\'')
    if grad_output._shape == input._shape:
        shape = input._shape
    else:
        shape = broadcast_shapes(grad_output._shape, input._shape)
    return Spec(shape, result_type(grad_output, input))


@derivative(threshold_backward, save=("input",))
def _threshold_backward_backward(ctx, h):
    return threshold_backward(h, ctx.input, ctx.threshold), None


@operator("leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", _P, method=False)
def leaky_relu(input, negative_slope=0.01):
    """``x`` for ``x > 0``, else ``negative_slope * x``."""
    return _act_spec("leaky_relu", input)


@derivative(leaky_relu, save=("input",))
def _leaky_relu_backward(ctx, grad):
    return where(ctx.input > 0, grad, grad * ctx.negative_slope)


@operator("hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", _P,
          method=False)
def hardtanh(input, min_val=-1.0, max_val=1.0):
    """``clamp(x, min_val, max_val)`` with zero gradient outside the open interval."""
    _require_tensor("hardtanh", input)
    if input._dtype is dt.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if input._dtype.is_complex:  # torch's hardtanh is a clamp
        raise NotImplementedError("clamp is not supported for complex types")
    return Spec(input._shape, input._dtype)


@derivative(hardtanh, save=("input",))
def _hardtanh_backward(ctx, grad):
    x = ctx.input
    return where((x <= ctx.min_val) | (x >= ctx.max_val), 0.0, grad)


@operator("hardswish(Tensor self) -> Tensor", _P, method=False)
def hardswish(input):
    """``x * relu6(x + 3) / 6``."""
    return _act_spec("hardswish", input)


@derivative(hardswish, save=("input",))
def _hardswish_backward(ctx, grad):
    x = ctx.input
    mid = grad * (x / 3 + 0.5)
    return where(x <= -3, 0.0, where(x < 3, mid, grad))


@operator("hardsigmoid(Tensor self) -> Tensor", _P, method=False)
def hardsigmoid(input):
    """``relu6(x + 3) / 6``."""
    return _act_spec("hardsigmoid", input)


@derivative(hardsigmoid, save=("input",))
def _hardsigmoid_backward(ctx, grad):
    x = ctx.input
    return where((x > -3) & (x < 3), grad / 6, 0.0)


@operator("log_sigmoid(Tensor self) -> Tensor", _P, method=False)
def log_sigmoid(input):
    """``log(sigmoid(x)) = -softplus(-x)``, stable for large ``|x|``."""
    return _act_spec("log_sigmoid_forward", input)


@derivative(log_sigmoid, save=("input",))
def _log_sigmoid_backward(ctx, grad):
    return grad * (-ctx.input).sigmoid()


# -- dropout ----------------------------------------------------------------------------------
def _dropout_scale(p: float, train) -> float:
    """The survivors' factor: ``1 / (1 - p)`` in training (0 for ``p == 1``), else 1."""
    if train is False:
        return 1.0
    return 0.0 if p == 1 else 1.0 / (1.0 - p)


@operator("native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)",
          (Tag.random,), method=False)
def native_dropout(input, p, train):
    """Dropout as one fused op (``torch.native_dropout``): ``(output, mask)``.

    In training (``train`` True or None) ``mask`` is a bool keep-mask drawn with probability
    ``1 - p`` and ``output = input * mask / (1 - p)`` (0 for ``p == 1``); otherwise ``output``
    is a copy and ``mask`` all True. Autograd saves the 1-byte mask, not a float one.
    Shape: ``input``'s, twice (an empty input's mask has ``input``'s dtype, as in torch).

    Example:
        >>> import ember
        >>> out, mask = ember.native_dropout(ember.ones(4), 0.5, False)
        >>> mask.tolist()
        [True, True, True, True]
    """
    _require_tensor("native_dropout", input)
    if not 0 <= 1 - p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p}")
    if not input._dtype.is_floating_point and train is not False:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{_TN[input._dtype.name]}")
    mask_dtype = dt.bool_ if input.numel() else input._dtype
    return Spec(input._shape, input._dtype), Spec(input._shape, mask_dtype)


@derivative(native_dropout, save=("result1",))
def _native_dropout_backward(ctx, grad, grad_mask):
    return native_dropout_backward(grad, ctx.result[1], _dropout_scale(ctx.p, ctx.train))


@operator("native_dropout_backward(Tensor grad_output, Tensor mask, float scale) -> Tensor",
          method=False)
def native_dropout_backward(grad_output, mask, scale):
    """``grad_output * mask * scale``: native_dropout's gradient (mask broadcast, any dtype)."""
    _require_tensor("native_dropout_backward", grad_output)
    _require_tensor("native_dropout_backward", mask)
    shape = broadcast_shapes(grad_output._shape, mask._shape)
    return Spec(shape, result_type(grad_output, mask))


@derivative(native_dropout_backward, save=("mask",))
def _native_dropout_backward_backward(ctx, grad):
    return native_dropout_backward(grad, ctx.mask, ctx.scale), None


# -- layer norm -------------------------------------------------------------------------------
def _layer_norm_shape(input, normalized_shape) -> tuple:
    shape = tuple(normalized_shape)
    k = len(shape)
    if k == 0 or input.dim() < k or tuple(input._shape[-k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(str(s) for s in shape)}], but got input of size"
                           f"{list(input._shape)}")
    return shape


@operator("native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, "
          "Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)", method=False)
def native_layer_norm(input, normalized_shape, weight, bias, eps):
    """Layer norm as one fused op (``torch.native_layer_norm``): ``(out, mean, rstd)``.

    ``out = (x - mean) * rstd * weight + bias`` over the trailing ``normalized_shape`` dims
    (biased variance, ``rstd = 1 / sqrt(var + eps)``). ``mean`` and ``rstd`` have ``input``'s
    shape with those dims set to 1 and never require grad; autograd saves only ``input``,
    ``mean`` and ``rstd``.

    Example:
        >>> x = ember.tensor([[1.0, 3.0]])
        >>> out, mean, rstd = ember.native_layer_norm(x, [2], None, None, 0.0)
        >>> out, mean, rstd
        (tensor([[-1.,  1.]]), tensor([[2.]]), tensor([[1.]]))
    """
    _require_tensor("native_layer_norm", input)
    shape = _layer_norm_shape(input, normalized_shape)
    if not input._dtype.is_floating_point:
        raise NotImplementedError(f"\"LayerNormKernelImpl\" not implemented for "
                                  f"'{_TN[input._dtype.name]}'")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is None:
            continue
        if tuple(t._shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t._shape)} and normalized_shape = "
                               f"{list(shape)}")
        if t._dtype is not input._dtype:
            raise RuntimeError(f"mixed dtype (CPU): expect parameter to have scalar type of "
                               f"{_TN[input._dtype.name]}")
    stats = input._shape[:input.dim() - len(shape)] + (1,) * len(shape)
    return (Spec(input._shape, input._dtype), Spec(stats, input._dtype),
            Spec(stats, input._dtype))


@derivative(native_layer_norm, save=("input", "weight", "bias", "result1", "result2"),
            nondifferentiable_outputs=(1, 2))
def _native_layer_norm_backward(ctx, grad, grad_mean, grad_rstd):
    x, w, b = ctx.input, ctx.weight, ctx.bias
    k = len(ctx.normalized_shape)
    dims = list(range(x.dim() - k, x.dim()))
    batch = list(range(x.dim() - k))
    if is_grad_enabled():  # create_graph: the statistics' dependence on x is differentiated
        mean = x.mean(dims, keepdim=True)
        rstd = (x.var(dims, correction=0, keepdim=True) + ctx.eps).rsqrt()
    else:
        _, mean, rstd = ctx.result
    xhat = (x - mean) * rstd
    gw = grad * w if w is not None else grad
    c1 = (gw * xhat).mean(dims, keepdim=True)
    c2 = gw.mean(dims, keepdim=True)
    grad_input = (gw - c2 - xhat * c1) * rstd
    grads = [grad_input]  # one per tensor argument given (weight, bias may be None)
    if w is not None:  # sum(dim=[]) would reduce every dim: no batch dims, no sum
        grads.append((grad * xhat).sum(batch) if batch else grad * xhat)
    if b is not None:
        grads.append(grad.sum(batch) if batch else grad)
    return tuple(grads)
