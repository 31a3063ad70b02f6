"""Convolution, padding, im2col/col2im and resampling operators, and the geometry helpers
(output sizes, argument normalisation, dtype checks) that the pooling family shares.

Each primitive is declared once: schema, Meta rule (validation with PyTorch's messages, output
Spec) and derivative rule. The CPU kernels live in ``ember.backends.cpu.conv``; pooling is
declared in ``ember.ops.pooling``.

NOTE [Adjoint pairs]
Most operators here and in ``ember.ops.pooling`` are linear in their tensor input (average
pooling, padding, im2col, resampling) or bilinear (convolution). Each linear op ``F`` comes with
a private op ``F^T`` (``_avg_pool_backward``, ``_pad_backward``, ``col2im`` for ``im2col`` ...):
the derivative of ``F`` is ``F^T`` and the derivative of ``F^T`` is ``F`` again, so gradients of
any order are ember ops. Convolution's input gradient is a transposed convolution; its weight
gradient is ``_conv_weight_grad`` (bilinear in input and grad_output), whose own derivatives are
convolutions. Max pooling's backward scatters through the saved indices; its derivative
gathers through them (NOTE [Pooling indices]).

Convolution is N-d throughout (1-3 spatial dims share every declaration and kernel).
"""

from __future__ import annotations

from ember.core import dtype as dt
from ember.ops._define import Spec, derivative, operator
from ember.tensor import Tensor

# torch's top-level names; the rest (torch._C._nn's) are reached as ``ember.ops.conv.<name>``
__all__ = ["convolution", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "constant_pad_nd"]

_LEGACY = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
           "int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long",
           "bool": "Bool", "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


# -- geometry helpers (pure) ------------------------------------------------------------------
def expand_param(name: str, value, n: int, what: str = "convolution dimensions") -> tuple:
    """``value`` (an int or a sequence of 1 or ``n`` ints) as an ``n``-tuple of ints."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the {what}, but got {name}={list(value)}")
    return value


def conv_out_size(size: int, k: int, s: int, p: int, d: int) -> int:
    """Output length of a convolution along one dim."""
    return (size + 2 * p - d * (k - 1) - 1) // s + 1


def conv_transpose_out_size(size: int, k: int, s: int, p: int, d: int, op: int) -> int:
    """Output length of a transposed convolution along one dim."""
    return (size - 1) * s - 2 * p + d * (k - 1) + op + 1


def pool_out_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """Output length of a pooling window along one dim (PyTorch's ``pooling_output_shape``)."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def adaptive_bounds(size: int, out: int, o: int) -> tuple[int, int]:
    """``[start, end)`` of adaptive window ``o`` of ``out`` over ``size`` elements."""
    return (o * size) // out, -((-(o + 1) * size) // out)


def _shape_str(shape) -> str:
    return "[" + ", ".join(str(s) for s in shape) + "]"


def _tensor_type(t: Tensor) -> str:
    return f"torch.{_LEGACY[t._dtype.name]}Tensor"


def _not_bool(name: str, t: Tensor) -> None:
    if t._dtype is dt.bool_:
        raise NotImplementedError(f'"{name}" not implemented for \'Bool\'')


def _floating(name: str, t: Tensor, complex_ok: bool = False) -> None:
    if not (t._dtype.is_floating_point or (complex_ok and t._dtype.is_complex)):
        raise NotImplementedError(f'"{name}" not implemented for '
                                  f"'{_LEGACY[t._dtype.name]}'")


# -- convolution ------------------------------------------------------------------------------
def _check_conv_params(stride, padding, dilation, groups) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("non-positive dilation is not supported")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")


def _conv_kernel_name(nd: int, transposed: bool, dilation) -> str:
    """The name PyTorch's CPU kernel gives in dtype errors."""
    if transposed:
        return f"slow_conv_transpose{max(nd, 2)}d_out_cpu"
    if any(d != 1 for d in dilation):
        return "slow_conv_dilated<>"
    return "compute_columns3d" if nd == 3 else "slow_conv2d_cpu"


def _check_conv_dtypes(input: Tensor, weight: Tensor, bias, kernel: str) -> None:
    if input._dtype is not weight._dtype:
        raise RuntimeError(f"Input type ({_tensor_type(input)}) and weight type "
                           f"({_tensor_type(weight)}) should be the same or input should be a "
                           "MKLDNN tensor and weight is a dense tensor")
    if bias is not None and bias._dtype is not input._dtype:
        raise RuntimeError(f"Input type ({input._dtype.scalar_name.lower()}) and bias type "
                           f"({bias._dtype.scalar_name.lower()}) should be the same")
    _not_bool(kernel, input)


def _check_conv_channels(input, weight, bias, transposed: bool, groups: int) -> int:
    """Validate channel counts; return the number of output channels.

    An input with no channels gives an output with none (torch returns ``(N, 0, *out)``
    whatever the weight's output channels; the bias is still checked against them).
    """
    ws, xs = weight._shape, input._shape
    if ws[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size [{_shape_str(ws)}] "
                           "instead")
    if ws[0] == 0:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least "
                           f"{groups} at dimension 0, but got weight of size "
                           f"{_shape_str(ws)} instead")
    if transposed:
        if xs[1] != ws[0]:
            raise RuntimeError(f"Given transposed=1, weight of size {_shape_str(ws)}, expected "
                               f"input{_shape_str(xs)} to have {ws[0]} channels, but got "
                               f"{xs[1]} channels instead")
        out_c = ws[1] * groups
    else:
        if xs[1] != ws[1] * groups:
            raise RuntimeError(f"Given groups={groups}, weight of size {_shape_str(ws)}, "
                               f"expected input{_shape_str(xs)} to have {ws[1] * groups} "
                               f"channels, but got {xs[1]} channels instead")
        out_c = ws[0]
    if bias is not None and (bias.ndim != 1 or bias._shape[0] != out_c):
        raise RuntimeError(f"Given weight of size {_shape_str(ws)}, expected bias to be "
                           f"1-dimensional with {out_c} elements, but got bias of size "
                           f"{_shape_str(bias._shape)} instead")
    return out_c if xs[1] else 0


def _conv_spatial(input, kernel, stride, padding, dilation, transposed, output_padding):
    sizes = input._shape[2:]
    if transposed:
        for op, s, d in zip(output_padding, stride, dilation):
            if op >= s and op >= d:
                raise RuntimeError(
                    "output padding must be smaller than either stride or dilation, but got "
                    + _op_msg(output_padding, stride, dilation))
        out = tuple(conv_transpose_out_size(n, k, s, p, d, op) for n, k, s, p, d, op in
                    zip(sizes, kernel, stride, padding, dilation, output_padding))
    else:
        padded = tuple(n + 2 * p for n, p in zip(sizes, padding))
        eff = tuple(d * (k - 1) + 1 for k, d in zip(kernel, dilation))
        if any(a < b for a, b in zip(padded, eff)):
            raise RuntimeError(f"Calculated padded input size per channel: ({_x(padded)}). "
                               f"Kernel size: ({_x(eff)}). Kernel size can't be greater than "
                               "actual input size")
        out = tuple(conv_out_size(n, k, s, p, d) for n, k, s, p, d in
                    zip(sizes, kernel, stride, padding, dilation))
    if any(o < 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({_x(sizes)}). Calculated output "
                           f"size per channel: ({_x(out)}). Output size is too small")
    return out


def _x(t) -> str:
    return " x ".join(str(v) for v in t)


def _op_msg(op, s, d) -> str:
    names = ("height", "width") if len(op) == 2 else ("width",) if len(op) == 1 else \
        ("depth", "height", "width")
    parts = [f"output_padding_{n}: {v}" for n, v in zip(names, op)]
    parts += [f"stride_{n}: {v}" for n, v in zip(names, s)]
    parts += [f"dilation_{n}: {v}" for n, v in zip(names, d)]
    return " ".join(parts)


@operator("convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, "
          "SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, "
          "SymInt groups) -> Tensor", method=False)
def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding,
                groups):
    """N-d (1-3 spatial dims) convolution or transposed convolution (``torch.convolution``).

    Args:
        input: ``(N, C_in, *spatial)``.
        weight: ``(C_out, C_in / groups, *kernel)``; transposed: ``(C_in, C_out / groups,
            *kernel)``.
        bias: ``(C_out,)`` or None.
        stride, padding, dilation, output_padding: one int per spatial dim.
        transposed: compute the transposed convolution (the input gradient of a convolution).
        groups: channel groups.

    Returns:
        ``(N, C_out, *out)`` with ``out = (n + 2p - d(k - 1) - 1) // s + 1`` per dim, or
        ``(n - 1)s - 2p + d(k - 1) + output_padding + 1`` when transposed.

    Example:
        >>> import ember
        >>> ember.convolution(ember.ones(1, 1, 4, 4), ember.ones(1, 1, 3, 3), None, [1, 1],
        ...                   [0, 0], [1, 1], False, [0, 0], 1).shape
        ember.Size([1, 1, 2, 2])
    """
    nd = weight.ndim - 2
    if input.ndim != weight.ndim:
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-"
                           f"dimensional weight {_shape_str(weight._shape)}, but got "
                           f"{input.ndim}-dimensional input of size {_shape_str(input._shape)} "
                           "instead")
    stride, padding, dilation = (expand_param(n, v, nd) for n, v in
                                 (("stride", stride), ("padding", padding),
                                  ("dilation", dilation)))
    output_padding = expand_param("output_padding", output_padding, nd)
    _check_conv_params(stride, padding, dilation, groups)
    _check_conv_dtypes(input, weight, bias, _conv_kernel_name(nd, transposed, dilation))
    out_c = _check_conv_channels(input, weight, bias, transposed, groups)
    out = _conv_spatial(input, weight._shape[2:], stride, padding, dilation, transposed,
                        output_padding)
    return Spec((input._shape[0], out_c) + out, input._dtype)


def _grad_input_padding(in_size, out_size, kernel, stride, padding, dilation) -> list:
    """output_padding that makes a transposed convolution reproduce ``in_size`` exactly."""
    return [n - conv_transpose_out_size(o, k, s, p, d, 0) for n, o, k, s, p, d in
            zip(in_size, out_size, kernel, stride, padding, dilation)]


def _narrow_to(t: Tensor, spatial: tuple) -> Tensor:
    """``t`` cut down to ``spatial`` trailing sizes (no-op when it already has them)."""
    for i, n in enumerate(spatial):
        d = t.ndim - len(spatial) + i
        if t._shape[d] != n:
            t = t.narrow(d, 0, n)
    return t


def _conv_input_grad(g: Tensor, weight: Tensor, in_shape, stride, padding, dilation, groups,
                     transposed: bool) -> Tensor:
    nd = len(in_shape) - 2
    stride, padding, dilation = (expand_param("p", v, nd) for v in (stride, padding, dilation))
    if transposed:
        out = convolution(g, weight, None, stride, padding, dilation, False, [0] * nd, groups)
        return _narrow_to(out, in_shape[2:])
    op = _grad_input_padding(in_shape[2:], g._shape[2:], weight._shape[2:], stride, padding,
                             dilation)
    return convolution(g, weight, None, stride, padding, dilation, True, op, groups)


@derivative(convolution, save=("input", "weight"))
def _convolution_backward(ctx, grad):
    needs = ctx.needs_input_grad
    x, w, t = ctx.input, ctx.weight, ctx.transposed
    args = (ctx.stride, ctx.padding, ctx.dilation)
    if not x._shape[1]:  # no input channels, an empty output: zero gradients (as torch)
        gb = w.new_zeros((w._shape[1] * ctx.groups if t else w._shape[0],))
        return (x.new_zeros(x._shape) if needs[0] else None,
                w.new_zeros(w._shape) if needs[1] else None,
                *((gb if needs[2] else None,) if len(needs) == 3 else ()))
    # complex: each gradient pairs grad with the other operand conjugated (torch's convention)
    x, w = (v.conj_physical() if v._dtype.is_complex else v for v in (x, w))
    gx = _conv_input_grad(grad, w, x._shape, *args, ctx.groups, t) if needs[0] else None
    gw = None
    if needs[1]:
        a, b = (grad, x) if t else (x, grad)
        gw = _conv_weight_grad(a, b, list(w._shape), *args, ctx.groups)
    if len(needs) == 2:
        return gx, gw
    gb = grad.sum([0, *range(2, grad.ndim)]) if needs[2] else None
    return gx, gw, gb


@operator("_conv_weight_grad(Tensor input, Tensor grad_output, SymInt[] weight_size, "
          "SymInt[] stride, SymInt[] padding, SymInt[] dilation, SymInt groups) -> Tensor",
          method=False)
def _conv_weight_grad(input, grad_output, weight_size, stride, padding, dilation, groups):
    """Gradient of a convolution's weight: ``sum_n grad_output[n] (x) im2col(input[n])``.

    ``input`` ``(N, C, *in)``, ``grad_output`` ``(N, O, *out)``; the result has
    ``weight_size`` ``(O, C / groups, *kernel)``. Windows beyond ``grad_output``'s extent are
    ignored, so a transposed convolution's weight gradient is ``_conv_weight_grad(grad, x)``.
    """
    return Spec(tuple(weight_size), input._dtype)


@derivative(_conv_weight_grad, save=("input", "grad_output"))
def _conv_weight_grad_backward(ctx, h):
    a, b = ctx.input, ctx.grad_output
    args = (ctx.stride, ctx.padding, ctx.dilation)
    nd = a.ndim - 2
    ga = gb = None
    if ctx.needs_input_grad[0]:
        op = _grad_input_padding(a._shape[2:], b._shape[2:], h._shape[2:],
                                 *(expand_param("p", v, nd) for v in args))
        ga = convolution(b, h, None, *args, True, op, ctx.groups)
    if ctx.needs_input_grad[1]:
        gb = _narrow_to(convolution(a, h, None, *args, False, [0] * nd, ctx.groups),
                        b._shape[2:])
    return ga, gb


def _same_padding(name: str, weight: Tensor, stride, dilation, nd: int):
    """``padding='same'``: symmetric padding plus the extra right-side amount per dim."""
    if any(s != 1 for s in stride):
        raise RuntimeError("padding='same' is not supported for strided convolutions")
    total = [d * (k - 1) for k, d in zip(weight._shape[2:], dilation)]
    return [t // 2 for t in total], [t - 2 * (t // 2) for t in total]


def _conv_nd(name: str, nd: int, input, weight, bias, stride, padding, dilation, groups):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {_shape_str(input._shape)}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    stride = expand_param("stride", stride, nd)
    dilation = expand_param("dilation", dilation, nd)
    if isinstance(padding, str):
        if padding == "valid":
            padding = [0] * nd
        elif padding == "same":
            padding, extra = _same_padding(name, weight, stride, dilation, nd)
            if any(extra) and weight.ndim == x.ndim:
                pads = [v for e in reversed(extra) for v in (0, e)]
                x = constant_pad_nd(x, pads, 0)
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    out = convolution(x, weight, bias, stride, padding, dilation, False, [0] * nd, groups)
    return out if batched else out.squeeze(0)


def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """1-d convolution over ``(N, C_in, L)`` or unbatched ``(C_in, L)`` (``torch.conv1d``).

    ``padding`` may be an int, a 1-tuple, ``'valid'`` or ``'same'`` (stride 1 only).
    Shape: weight ``(C_out, C_in / groups, k)`` -> ``(N, C_out, L_out)``.

    Example:
        >>> import ember
        >>> ember.conv1d(ember.ones(1, 2, 5), ember.ones(3, 2, 3), padding="same").shape
        ember.Size([1, 3, 5])
    """
    return _conv_nd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """2-d convolution over ``(N, C_in, H, W)`` or unbatched ``(C_in, H, W)`` (``torch.conv2d``).

    ``padding`` may be an int, a pair, ``'valid'`` or ``'same'`` (stride 1 only).
    Shape: weight ``(C_out, C_in / groups, kH, kW)`` -> ``(N, C_out, H_out, W_out)``.

    Example:
        >>> import ember
        >>> ember.conv2d(ember.ones(1, 1, 5, 5), ember.ones(2, 1, 3, 3), stride=2).shape
        ember.Size([1, 2, 2, 2])
    """
    return _conv_nd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
           dilation=1, groups: int = 1) -> Tensor:
    """3-d convolution over ``(N, C_in, T, H, W)`` or unbatched ``(C_in, T, H, W)``
    (``torch.conv3d``); ``padding`` as :func:`conv2d`.

    Shape: weight ``(C_out, C_in / groups, kT, kH, kW)`` -> ``(N, C_out, T_out, H_out, W_out)``.

    Example:
        >>> import ember
        >>> ember.conv3d(ember.ones(1, 2, 4, 5, 6), ember.ones(3, 2, 3, 3, 3), padding=1).shape
        ember.Size([1, 3, 4, 5, 6])
    """
    return _conv_nd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose_nd(name, nd, input, weight, bias, stride, padding, output_padding, groups,
                       dilation):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input to "
                           f"{name}, but got input of size: {_shape_str(input._shape)}")
    batched = input.ndim == nd + 2
    x = input if batched else input.unsqueeze(0)
    out = convolution(x, weight, bias, expand_param("stride", stride, nd),
                      expand_param("padding", padding, nd),
                      expand_param("dilation", dilation, nd), True,
                      expand_param("output_padding", output_padding, nd), groups)
    return out if batched else out.squeeze(0)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-d transposed convolution (``torch.conv_transpose1d``).

    Shape: input ``(N, C_in, L)``, weight ``(C_in, C_out / groups, k)`` ->
    ``(N, C_out, (L - 1)s - 2p + d(k - 1) + output_padding + 1)``.

    Example:
        >>> import ember
        >>> ember.conv_transpose1d(ember.ones(1, 2, 4), ember.ones(2, 3, 3), stride=2).shape
        ember.Size([1, 3, 9])
    """
    return _conv_transpose_nd("conv_transpose1d", 1, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-d transposed convolution (``torch.conv_transpose2d``), the adjoint of ``conv2d``.

    Shape: input ``(N, C_in, H, W)``, weight ``(C_in, C_out / groups, kH, kW)`` ->
    ``(N, C_out, H_out, W_out)``.

    Example:
        >>> import ember
        >>> ember.conv_transpose2d(ember.ones(1, 2, 3, 3), ember.ones(2, 1, 2, 2)).shape
        ember.Size([1, 1, 4, 4])
    """
    return _conv_transpose_nd("conv_transpose2d", 2, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1,
                     padding=0, output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-d transposed convolution (``torch.conv_transpose3d``), the adjoint of ``conv3d``.

    Shape: input ``(N, C_in, T, H, W)``, weight ``(C_in, C_out / groups, kT, kH, kW)`` ->
    ``(N, C_out, T_out, H_out, W_out)``.

    Example:
        >>> import ember
        >>> ember.conv_transpose3d(ember.ones(1, 2, 2, 2, 2), ember.ones(2, 1, 2, 2, 2)).shape
        ember.Size([1, 1, 3, 3, 3])
    """
    return _conv_transpose_nd("conv_transpose3d", 3, input, weight, bias, stride, padding,
                              output_padding, groups, dilation)


# -- im2col / col2im --------------------------------------------------------------------------
def _fold_params(kernel_size, dilation, padding, stride):
    k = expand_param("kernel_size", kernel_size, 2)
    d = expand_param("dilation", dilation, 2)
    p = expand_param("padding", padding, 2)
    s = expand_param("stride", stride, 2)
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{k[0]} kernel_width: {k[1]}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {s[0]} "
                           f"stride_width: {s[1]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{d[0]} dilation_width: {d[1]}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {p[0]} "
                           f"pad_width: {p[1]}")
    return k, d, p, s


def _blocks(spatial, k, d, p, s, name: str) -> tuple:
    blocks = tuple(conv_out_size(n, kk, ss, pp, dd)
                   for n, kk, ss, pp, dd in zip(spatial, k, s, p, d))
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given {name}=({spatial[0]}, {spatial[1]}), kernel_size=({k[0]}, "
                           f"{k[1]}), dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), "
                           f"calculated shape of the array of sliding blocks as ({blocks[0]}, "
                           f"{blocks[1]}), but its components must be at least one.")
    return blocks


@operator("im2col(Tensor self, SymInt[2] kernel_size, SymInt[2] dilation, SymInt[2] padding, "
          "SymInt[2] stride) -> Tensor", method=False)
def im2col(input, kernel_size, dilation, padding, stride):
    """Sliding local blocks of a batched ``(N, C, H, W)`` or unbatched ``(C, H, W)`` input.

    Returns ``(N, C * kH * kW, L)`` with ``L`` blocks, as ``torch.nn.functional.unfold``.

    Example:
        >>> import ember
        >>> ember.ops.conv.im2col(ember.ones(1, 2, 4, 4), [2, 2], [1, 1], [0, 0], [1, 1]).shape
        ember.Size([1, 8, 9])
    """
    k, d, p, s = _fold_params(kernel_size, dilation, padding, stride)
    if input.ndim not in (3, 4) or 0 in input._shape[-3:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor input with possible 0 batch "
                           f"size and non-zero dimensions for input, but got: "
                           f"{_shape_str(input._shape)}")
    _floating("im2col_out_cpu", input, complex_ok=True)
    blocks = _blocks(input._shape[-2:], k, d, p, s, "input with spatial size")
    c = input._shape[-3]
    return Spec(input._shape[:-3] + (c * k[0] * k[1], blocks[0] * blocks[1]), input._dtype)


@operator("col2im(Tensor self, SymInt[2] output_size, SymInt[2] kernel_size, "
          "SymInt[2] dilation, SymInt[2] padding, SymInt[2] stride) -> Tensor", method=False)
def col2im(input, output_size, kernel_size, dilation, padding, stride):
    """Sum sliding local blocks back into an image (``torch.nn.functional.fold``).

    Shape: ``(N, C * kH * kW, L)`` or ``(C * kH * kW, L)`` -> ``(N, C, *output_size)``.

    Example:
        >>> import ember
        >>> cols = ember.ones(1, 8, 9)
        >>> ember.ops.conv.col2im(cols, [4, 4], [2, 2], [1, 1], [0, 0], [1, 1]).shape
        ember.Size([1, 2, 4, 4])
    """
    out = expand_param("output_size", output_size, 2)
    k, d, p, s = _fold_params(kernel_size, dilation, padding, stride)
    if input.ndim not in (2, 3) or 0 in input._shape[-2:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           "batch size and non-zero dimensions for input, but got: "
                           f"{_shape_str(input._shape)}")
    _floating("col2im_out_cpu", input, complex_ok=True)
    kk = k[0] * k[1]
    rows, length = input._shape[-2:]
    if rows % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={rows} and "
                           f"kernel_size=({k[0]}, {k[1]}).")
    blocks = _blocks(out, k, d, p, s, "output_size")
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(f"Given output_size=({out[0]}, {out[1]}), kernel_size=({k[0]}, "
                           f"{k[1]}), dilation=({d[0]}, {d[1]}), padding=({p[0]}, {p[1]}), "
                           f"stride=({s[0]}, {s[1]}), expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={length}.")
    return Spec(input._shape[:-2] + (rows // kk,) + out, input._dtype)


@derivative(im2col)
def _im2col_backward(ctx, grad):
    size = ctx.shape_of("input")[-2:]
    return col2im(grad, list(size), ctx.kernel_size, ctx.dilation, ctx.padding, ctx.stride)


@derivative(col2im)
def _col2im_backward(ctx, grad):
    return im2col(grad, ctx.kernel_size, ctx.dilation, ctx.padding, ctx.stride)


# -- padding ----------------------------------------------------------------------------------
PAD_MODES = ("constant", "reflect", "replicate", "circular")


def _check_pad(input: Tensor, pad, mode: str, value) -> tuple:
    pad = tuple(int(v) for v in pad)
    if mode not in PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {input.ndim}")
    if mode == "constant":
        return pad
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    n = len(pad) // 2
    if n not in (1, 2, 3) or input.ndim not in (n + 1, n + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    _check_nonconstant(input, pad, mode, n)
    return pad


def _check_nonconstant(input: Tensor, pad: tuple, mode: str, n: int) -> None:
    shape = input._shape
    if any(s == 0 for s in shape[1:]) or (input.ndim == n + 1 and shape[0] == 0):
        raise RuntimeError(f"Expected {n + 1}D or {n + 2}D (batch mode) tensor with possibly 0 "
                           "batch size and other non-zero dimensions for input, but got: "
                           f"{_shape_str(shape)}")
    for i in range(n):
        size = shape[input.ndim - 1 - i]
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (lo >= size or hi >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                               f"at dimension {input.ndim - 1 - i} of input "
                               f"{_shape_str(shape)}")
        if mode == "circular" and (lo > size or hi > size):
            raise RuntimeError("Padding value causes wrapping around more than once.")


def pad_shape(shape: tuple, pad: tuple) -> tuple:
    """``shape`` after ``pad`` (pairs from the last dim backwards)."""
    out = list(shape)
    for i in range(len(pad) // 2):
        out[len(shape) - 1 - i] += pad[2 * i] + pad[2 * i + 1]
    return tuple(out)


@operator("pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor",
          method=False)
def pad(input, pad, mode="constant", value=None):
    """Pad the last ``len(pad) // 2`` dims (``torch.nn.functional.pad``).

    ``pad`` lists ``(left, right)`` pairs starting from the last dim; negative values crop.
    Modes: ``constant`` (``value``, default 0, any number of dims), ``reflect`` (mirror without
    the edge), ``replicate`` (repeat the edge), ``circular`` (wrap) on the last 1-3 dims.

    Example:
        >>> import ember
        >>> ember.ops.conv.pad(ember.tensor([[1., 2., 3.]]), [2, 1], "reflect").tolist()
        [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0]]
    """
    p = _check_pad(input, pad, mode, value)
    shape = pad_shape(input._shape, p)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"The input size {min(input._shape)}, plus negative padding "
                           f"{min(p)} resulted in a negative output size, which is invalid. "
                           "Check dimension of your input.")
    return Spec(shape, input._dtype)


@derivative(pad)
def _pad_derivative(ctx, grad):
    return _pad_backward(grad, list(ctx.shape_of("input")), ctx.pad, ctx.mode)


@operator("_pad_backward(Tensor grad_output, SymInt[] input_size, SymInt[] pad, str mode) -> "
          "Tensor", method=False)
def _pad_backward(grad_output, input_size, pad, mode):
    """The adjoint of :func:`pad`: each padded element's gradient returns to its source."""
    return Spec(tuple(input_size), grad_output._dtype)


@derivative(_pad_backward)
def _pad_backward_backward(ctx, h):
    return pad(h, ctx.pad, ctx.mode, None)


_pad_op = pad


def constant_pad_nd(input: Tensor, pad, value=0) -> Tensor:
    """Constant padding of the last ``len(pad) // 2`` dims (``torch.constant_pad_nd``).

    Example:
        >>> ember.constant_pad_nd(ember.tensor([[1, 2]]), [1, 0, 0, 1], value=9)
        tensor([[9, 1, 2],
                [9, 9, 9]])
    """
    return _pad_op(input, list(pad), "constant", value)


# -- resampling -------------------------------------------------------------------------------
def _check_upsample(name: str, x: Tensor, output_size) -> tuple:
    out = tuple(int(v) for v in output_size)
    if len(out) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(out)}")
    if x.ndim != 4:
        raise RuntimeError(f"It is expected input_size equals to 4, but got size {x.ndim}")
    if any(s <= 0 for s in x._shape[2:]) or any(o <= 0 for o in out):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"(H: {x._shape[2]}, W: {x._shape[3]}) output (H: {out[0]}, W: "
                           f"{out[1]})")
    _floating(name, x)
    return out


@operator("upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
          "float? scales_w=None) -> Tensor", method=False)
def upsample_nearest2d(input, output_size, scales_h=None, scales_w=None):
    """Nearest-neighbour resize of ``(N, C, H, W)``: ``src = floor(dst * scale)``.

    ``scale`` is ``1 / scales_*`` when given, else ``in / out`` (computed in float32 as torch).

    Example:
        >>> import ember
        >>> ember.ops.conv.upsample_nearest2d(ember.arange(4.).view(1, 1, 2, 2), [4, 4]).shape
        ember.Size([1, 1, 4, 4])
    """
    out = _check_upsample("upsample_nearest2d", input, output_size)
    return Spec(input._shape[:2] + out, input._dtype)


@operator("upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, "
          "float? scales_h=None, float? scales_w=None) -> Tensor", method=False)
def upsample_bilinear2d(input, output_size, align_corners, scales_h=None, scales_w=None):
    """Bilinear resize of ``(N, C, H, W)`` (PyTorch's source-index and lambda rules).

    Example:
        >>> import ember
        >>> x = ember.arange(4.).view(1, 1, 2, 2)
        >>> ember.ops.conv.upsample_bilinear2d(x, [3, 3], True)[0, 0, 1]
        tensor([1.0000, 1.5000, 2.0000])
    """
    out = _check_upsample("upsample_bilinear2d", input, output_size)
    return Spec(input._shape[:2] + out, input._dtype)


@derivative(upsample_nearest2d)
def _upsample_nearest2d_backward(ctx, grad):
    return _upsample_backward(grad, list(ctx.shape_of("input")), "nearest", False,
                              ctx.scales_h, ctx.scales_w)


@derivative(upsample_bilinear2d)
def _upsample_bilinear2d_backward(ctx, grad):
    return _upsample_backward(grad, list(ctx.shape_of("input")), "bilinear", ctx.align_corners,
                              ctx.scales_h, ctx.scales_w)


@operator("_upsample_backward(Tensor grad_output, SymInt[] input_size, str mode, "
          "bool align_corners, float? scales_h, float? scales_w) -> Tensor", method=False)
def _upsample_backward(grad_output, input_size, mode, align_corners, scales_h, scales_w):
    """The adjoint of :func:`upsample_nearest2d` / :func:`upsample_bilinear2d`."""
    return Spec(tuple(input_size), grad_output._dtype)


@derivative(_upsample_backward)
def _upsample_backward_backward(ctx, h):
    size = list(ctx.shape_of("grad_output")[2:])
    if ctx.mode == "nearest":
        return upsample_nearest2d(h, size, ctx.scales_h, ctx.scales_w)
    return upsample_bilinear2d(h, size, ctx.align_corners, ctx.scales_h, ctx.scales_w)


_MOVED = frozenset({"max_pool1d", "max_pool2d", "max_pool1d_with_indices",
                    "max_pool2d_with_indices", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
                    "adaptive_avg_pool2d", "adaptive_max_pool1d", "adaptive_max_pool2d"})


def __getattr__(name: str):
    # pooling moved to ember.ops.pooling; its former spellings here keep working
    if name in _MOVED:
        import ember.ops.pooling as pooling

        return getattr(pooling, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
