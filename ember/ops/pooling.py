"""Pooling operators: max, average, adaptive and fractional max pooling; max unpooling.

Each primitive is declared once: schema, Meta rule (validation in PyTorch's order and words,
output Spec) and derivative rule. The 2-d and 3-d operators of a kind share one N-d Meta rule;
1-d forms are composites over the 2-d operators. The CPU kernels live in
``ember.backends.cpu.pooling``; the geometry helpers are ``ember.ops.conv``'s. LP pooling is a
composite in ``ember.nn.functional.pooling``.

NOTE [Pooling indices]
Max-style pooling returns, per output, the flat index of its maximum within its input plane
(``h * W + w`` in 2-d, ``(t * H + h) * W + w`` in 3-d), as PyTorch does, and ``max_unpool*``
reads the same indices. Every backward scatters through them with ``_max_pool_backward``
(3-d planes viewed as one flat dim, see ``_scatter_planes``), whose own derivative gathers
through them; unpooling scatters forwards and its derivative gathers (NOTE [Adjoint pairs]).
"""

from __future__ import annotations

import math

from ember.core import dtype as dt
from ember.ops._define import Spec, derivative, operator
from ember.ops.conv import _LEGACY, _floating, _shape_str, pool_out_size
from ember.ops.scatter_gather import gather
from ember.tensor import Tensor

# torch's top-level names; the rest (torch._C._nn's) are reached as ``ember.ops.pooling.<name>``
__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "max_pool1d_with_indices", "avg_pool1d",
           "adaptive_avg_pool1d", "adaptive_max_pool1d"]

_NUM = {1: "one", 2: "two", 3: "three"}
_DIMS = {2: ("H", "W"), 3: ("T", "H", "W")}
_FLOATS = ("float32", "float64", "float16", "bfloat16")


def _dtype_in(name: str, t: Tensor, allowed) -> None:
    if t._dtype.name not in allowed:
        raise NotImplementedError(f'"{name}" not implemented for \'{_LEGACY[t._dtype.name]}\'')


# -- window arguments and checks --------------------------------------------------------------
def _pool_params(name: str, nd: int, kernel_size, stride, padding, dilation=1):
    """kernel, stride (default: the kernel), padding and dilation as ``nd``-tuples."""
    verb = "be" if name == "avg_pool3d" else "either be"

    def norm(what, v, omitted=False, verb=verb):
        if isinstance(v, int):
            return (v,) * nd
        v = tuple(int(x) for x in v)
        if omitted and not v:
            return None
        if len(v) not in (1, nd):
            opt = "omitted, " if omitted else ""
            raise RuntimeError(f"{name}: {what} must {verb} {opt}a single int, or a tuple of "
                               f"{_NUM[nd]} ints")
        return v * nd if len(v) == 1 else v

    k = norm("kernel_size", kernel_size)
    s = norm("stride", stride if stride is not None else (), True) or k
    p = norm("padding", padding)
    d = norm("dilation", dilation, verb="be either")
    return k, s, p, d


def _check_ndim(x: Tensor, nd: int) -> None:
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected for "
                           "input")


def _named(prefix: str, values, nd: int) -> str:
    return " ".join(f"{prefix}{n}: {v}" for n, v in zip(_DIMS[nd], values))


def _check_pool(fn: str, x: Tensor, k, s, p, d, ceil_mode, avg3d: bool = False) -> tuple:
    """PyTorch's ``pooling_output_shape`` per dim, then its shape check; the output sizes."""
    nd = len(k)
    sizes = x._shape[-nd:]
    out = []
    for n, kk, ss, pp, dd in zip(sizes, k, s, p, d):
        if ss == 0:
            raise RuntimeError("stride should not be zero")
        if pp < 0:
            raise RuntimeError(f"pad must be non-negative, but got pad: {pp}")
        if pp > int(((kk - 1) * dd + 1) / 2):  # C++ division truncates towards zero
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={pp}, kernel_size={kk} and dilation={dd}")
        out.append(pool_out_size(n, kk, ss, pp, dd, ceil_mode))
    if any(v <= 0 for v in k):
        raise RuntimeError(f"kernel size should be greater than zero, but got "
                           f"{_named('k', k, nd)}")
    if any(v <= 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got {_named('d', s, nd)}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got "
                           f"{_named('dilation', d, nd)}")
    if nd == 2 and (x.ndim not in (3, 4) or 0 in x._shape[-3:]):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{_shape_str(x._shape)}")
    if nd == 3 and 0 in x._shape[-4:]:
        raise RuntimeError(f"{fn}(): Expected input's non-batch dimensions to have positive "
                           f"length, but input has a shape of {_shape_str(x._shape)} and "
                           "non-batch dimension 0 has length zero!")
    if avg3d and any(n < kk for n, kk in zip(sizes, k)):
        raise RuntimeError(f"input image ({_named('', sizes, 3)}) smaller than kernel size "
                           f"({_named('k', k, 3)})")
    if any(o < 1 for o in out):
        c = x._shape[-nd - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c, *sizes)))}). Calculated "
                           f"output size: ({'x'.join(map(str, (c, *out)))}). Output size is too "
                           "small")
    return tuple(out)


def _scatter_planes(grad: Tensor, indices: Tensor, input_shape, nd: int) -> Tensor:
    """``_max_pool_backward`` over ``nd``-d planes (NOTE [Pooling indices])."""
    input_shape = tuple(input_shape)
    if nd == 2:
        return _max_pool_backward(grad, indices, list(input_shape))
    lead = input_shape[:-nd]
    flat = [*lead, 1, math.prod(grad._shape[-nd:])]  # (..., T, H, W) -> (..., 1, T * H * W)
    out = _max_pool_backward(grad.reshape(flat), indices.reshape(flat),
                             [*lead, 1, math.prod(input_shape[-nd:])])
    return out.reshape(list(input_shape))


def _gather_planes(h: Tensor, indices: Tensor, nd: int) -> Tensor:
    """``h`` read through flat plane ``indices``: the adjoint of :func:`_scatter_planes`."""
    lead = h._shape[:-nd]
    flat = h.reshape([*lead, math.prod(h._shape[-nd:])])
    idx = indices.reshape([*indices._shape[:-nd], math.prod(indices._shape[-nd:])])
    return gather(flat, -1, idx).reshape(list(indices._shape))


# -- max pooling ------------------------------------------------------------------------------
def _max_pool_spec(nd: int, input, kernel_size, stride, padding, dilation, ceil_mode):
    name = f"max_pool{nd}d"
    k, s, p, d = _pool_params(name, nd, kernel_size, stride, padding, dilation)
    _check_ndim(input, nd)
    out = _check_pool(f"{name}_with_indices_out_cpu_template", input, k, s, p, d, ceil_mode)
    _dtype_in(name, input, tuple(n for n in _LEGACY if n != "bool" and "complex" not in n))
    shape = input._shape[:-nd] + out
    return Spec(shape, input._dtype), Spec(shape, dt.int64)


@operator("max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], "
          "int[2] padding=0, int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
          method=False)
def max_pool2d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """2-d max pooling returning values and the flat ``H * W`` index of each maximum.

    Ties keep the first maximum in window order; NaN wins, as in PyTorch.
    Shape: ``(N, C, H, W)`` or ``(C, H, W)`` -> ``(..., H_out, W_out)`` twice.

    Example:
        >>> import ember
        >>> x = ember.arange(16.).view(1, 4, 4)
        >>> v, i = ember.ops.pooling.max_pool2d_with_indices(x, [2, 2])
        >>> i.tolist()
        [[[5, 7], [13, 15]]]
    """
    return _max_pool_spec(2, input, kernel_size, stride, padding, dilation, ceil_mode)


@operator("max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], "
          "int[3] padding=0, int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)",
          method=False)
def max_pool3d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode=False):
    """3-d max pooling returning values and the flat ``T * H * W`` index of each maximum.

    Shape: ``(N, C, T, H, W)`` or ``(C, T, H, W)`` -> ``(..., T_out, H_out, W_out)`` twice.

    Example:
        >>> import ember
        >>> x = ember.arange(8.).view(1, 2, 2, 2)
        >>> ember.ops.pooling.max_pool3d_with_indices(x, 2)[1].tolist()
        [[[[7]]]]
    """
    return _max_pool_spec(3, input, kernel_size, stride, padding, dilation, ceil_mode)


@derivative(max_pool2d_with_indices, save=("result1",))
def _max_pool2d_backward(ctx, grad, grad_indices):
    return _scatter_planes(grad, ctx.result1, ctx.shape_of("input"), 2)


@derivative(max_pool3d_with_indices, save=("result1",))
def _max_pool3d_backward(ctx, grad, grad_indices):
    return _scatter_planes(grad, ctx.result1, ctx.shape_of("input"), 3)


@operator("_max_pool_backward(Tensor grad_output, Tensor indices, SymInt[] input_size) -> "
          "Tensor", method=False)
def _max_pool_backward(grad_output, indices, input_size):
    """Scatter-add ``grad_output`` into an ``input_size`` zero tensor through flat ``indices``
    over the last two dims (max pooling's backward)."""
    return Spec(tuple(input_size), grad_output._dtype)


@derivative(_max_pool_backward, save=("indices",))
def _max_pool_backward_backward(ctx, h):
    return _gather_planes(h, ctx.indices, min(h.ndim, 2)), None


def _one(name: str, what: str, v, allow_empty: bool = False):
    if isinstance(v, int):
        return v
    v = tuple(v)
    if allow_empty and not v:
        return None
    if len(v) != 1:
        raise RuntimeError(f"{name}() argument '{what}' should contain one int (got {len(v)})")
    return int(v[0])


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
                            ceil_mode: bool = False) -> tuple:
    """1-d max pooling with indices along ``L`` (``torch.max_pool1d_with_indices``).

    Shape: ``(N, C, L)`` or ``(C, L)`` -> ``(..., L_out)`` values and int64 indices.

    Example:
        >>> import ember
        >>> ember.max_pool1d_with_indices(ember.arange(4.).view(1, 4), 2)[1].tolist()
        [[1, 3]]
    """
    if input.ndim not in (2, 3):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{_shape_str(input._shape)}")
    k = _one("max_pool1d", "kernel_size", kernel_size)
    s = _one("max_pool1d", "stride", stride if stride is not None else (), True) or k
    p = _one("max_pool1d", "padding", padding)
    d = _one("max_pool1d", "dilation", dilation)
    v, i = max_pool2d_with_indices(input.unsqueeze(-2), [1, k], [1, s], [0, p], [1, d],
                                   ceil_mode)
    return v.squeeze(-2), i.squeeze(-2)


def max_pool1d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """1-d max pooling (``torch.max_pool1d``); see :func:`max_pool1d_with_indices`.

    Example:
        >>> ember.max_pool1d(ember.tensor([[1.0, 3.0, 2.0, 0.0]]), 2)
        tensor([[3., 2.]])
    """
    return max_pool1d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)[0]


def max_pool2d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """2-d max pooling (``torch.max_pool2d``); see :func:`max_pool2d_with_indices`.

    Example:
        >>> ember.max_pool2d(ember.arange(16.0).reshape(1, 4, 4), 2)
        tensor([[[ 5.,  7.],
                 [13., 15.]]])
    """
    return max_pool2d_with_indices(input, kernel_size, stride if stride is not None else (),
                                   padding, dilation, ceil_mode)[0]


def max_pool3d(input: Tensor, kernel_size, stride=(), padding=0, dilation=1,
               ceil_mode: bool = False) -> Tensor:
    """3-d max pooling (``torch.max_pool3d``); see :func:`max_pool3d_with_indices`.

    Example:
        >>> import ember
        >>> ember.max_pool3d(ember.ones(1, 4, 4, 4), 2).shape
        ember.Size([1, 2, 2, 2])
    """
    return max_pool3d_with_indices(input, kernel_size, stride if stride is not None else (),
                                   padding, dilation, ceil_mode)[0]


# -- average pooling --------------------------------------------------------------------------
def _avg_pool_spec(nd: int, input, kernel_size, stride, padding, ceil_mode, divisor_override):
    name = f"avg_pool{nd}d"
    k, s, p, _ = _pool_params(name, nd, kernel_size, stride, padding)
    if nd == 3:
        _check_ndim(input, 3)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    if input.ndim < nd + 1:
        n = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], "
                         f"but got {-nd - 1})")
    out = _check_pool(name, input, k, s, p, (1,) * nd, ceil_mode, nd == 3)
    if nd == 2:
        _dtype_in(name, input, _FLOATS + ("int64",))
    else:
        _dtype_in("avg_pool3d_out_frame", input, ("float32", "float64", "int64"))
    return Spec(input._shape[:-nd] + out, input._dtype)


@operator("avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
          "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> "
          "Tensor", method=False)
def avg_pool2d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-d average pooling (``torch.nn.functional.avg_pool2d``).

    The divisor is the window area clipped to the padded input (``count_include_pad``), or
    to the input itself, or ``divisor_override``.
    Shape: ``(N, C, H, W)`` or ``(C, H, W)`` -> ``(..., H_out, W_out)``.

    Example:
        >>> import ember
        >>> ember.ops.pooling.avg_pool2d(ember.arange(16.).view(1, 4, 4), 2).tolist()
        [[[2.5, 4.5], [10.5, 12.5]]]
    """
    return _avg_pool_spec(2, input, kernel_size, stride, padding, ceil_mode, divisor_override)


@operator("avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
          "bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None) -> "
          "Tensor", method=False)
def avg_pool3d(input, kernel_size, stride=(), padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-d average pooling (``torch.nn.functional.avg_pool3d``); divisors as :func:`avg_pool2d`.

    Shape: ``(N, C, T, H, W)`` or ``(C, T, H, W)`` -> ``(..., T_out, H_out, W_out)``.

    Example:
        >>> import ember
        >>> ember.ops.pooling.avg_pool3d(ember.arange(8.).view(1, 2, 2, 2), 2).tolist()
        [[[[3.5]]]]
    """
    return _avg_pool_spec(3, input, kernel_size, stride, padding, ceil_mode, divisor_override)


def _avg_pool_grad(ctx, grad, nd: int) -> Tensor:
    k, s, p, _ = _pool_params(f"avg_pool{nd}d", nd, ctx.kernel_size, ctx.stride, ctx.padding)
    return _avg_pool_backward(grad, list(ctx.shape_of("input")), list(k), list(s), list(p),
                              ctx.ceil_mode, ctx.count_include_pad, ctx.divisor_override)


@derivative(avg_pool2d)
def _avg_pool2d_backward(ctx, grad):
    return _avg_pool_grad(ctx, grad, 2)


@derivative(avg_pool3d)
def _avg_pool3d_backward(ctx, grad):
    return _avg_pool_grad(ctx, grad, 3)


@operator("_avg_pool_backward(Tensor grad_output, SymInt[] input_size, int[] kernel_size, "
          "int[] stride, int[] padding, bool ceil_mode, bool count_include_pad, "
          "int? divisor_override) -> Tensor", method=False)
def _avg_pool_backward(grad_output, input_size, kernel_size, stride, padding, ceil_mode,
                       count_include_pad, divisor_override):
    """The adjoint of :func:`avg_pool2d` / :func:`avg_pool3d` (one kernel entry per spatial
    dim): spread each output gradient over its window."""
    return Spec(tuple(input_size), grad_output._dtype)


@derivative(_avg_pool_backward)
def _avg_pool_backward_backward(ctx, h):
    pool = avg_pool2d if len(ctx.kernel_size) == 2 else avg_pool3d
    return pool(h, ctx.kernel_size, ctx.stride, ctx.padding, ctx.ceil_mode,
                ctx.count_include_pad, ctx.divisor_override)


def avg_pool1d(input: Tensor, kernel_size, stride=(), padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-d average pooling (``torch.avg_pool1d``): ``(N, C, L)`` or ``(C, L)``.

    Example:
        >>> import ember
        >>> ember.avg_pool1d(ember.arange(4.).view(1, 4), 2).tolist()
        [[0.5, 2.5]]
    """
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           "tensor for argument #1 'self' (while checking arguments for "
                           "avg_pool1d)")
    k = _one("avg_pool1d", "kernel_size", kernel_size)
    s = _one("avg_pool1d", "stride", stride if stride is not None else (), True) or k
    p = _one("avg_pool1d", "padding", padding)
    out = avg_pool2d(input.unsqueeze(-2), [1, k], [1, s], [0, p], ceil_mode, count_include_pad)
    return out.squeeze(-2)


# -- adaptive pooling -------------------------------------------------------------------------
def _check_adaptive(name: str, x: Tensor, output_size, nd: int, is_max: bool) -> tuple:
    sep = ": " if is_max else " "
    if x.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got"
                           f"{sep}{_shape_str(x._shape)}")
    out = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if is_max:
        _nonempty_planes(name, x)
    if len(out) != nd:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}"
                           if is_max else f"{name}: output_size must be {nd}")
    out = tuple(x._shape[x.ndim - nd + i] if o is None else int(o) for i, o in enumerate(out))
    if any(o < 0 for o in out):
        if is_max:
            shape = x._shape[:-nd] + out
            raise RuntimeError(f"Trying to create tensor with negative dimension "
                               f"{min(out)}: {_shape_str(shape)}")
        shown = ", ".join(map(str, out[:2])) + ("," + str(out[2]) if nd == 3 else "")
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 "
                           f"but received {{{shown}}}")
    if not is_max:  # torch's 1-d/2-d averages let zero channels through, its 3-d one not
        _nonempty_planes(name, x, nd if nd < 3 else None)
    return out


def _nonempty_planes(name: str, x: Tensor, nd: int | None = None) -> None:
    # ``nd``: check only the ``nd`` spatial dims
    for i in range(1 if nd is None else x.ndim - nd, x.ndim):
        if x._shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {_shape_str(x._shape)} with "
                               f"dimension {i} being empty")


def _adaptive_avg_spec(nd: int, input, output_size):
    name = f"adaptive_avg_pool{nd}d"
    out = _check_adaptive(name, input, output_size, nd, False)
    _floating(name if nd == 2 else name + "_cpu", input)
    return Spec(input._shape[:-nd] + out, input._dtype)


@operator("adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", method=False)
def adaptive_avg_pool2d(input, output_size):
    """2-d adaptive average pooling: window ``o`` covers ``[floor(o*n/out), ceil((o+1)*n/out))``.

    Shape: ``(N, C, H, W)`` or ``(C, H, W)`` -> ``(..., *output_size)``; ``None`` entries keep
    the input's size.

    Example:
        >>> import ember
        >>> ember.ops.pooling.adaptive_avg_pool2d(ember.arange(16.).view(1, 4, 4), 1).tolist()
        [[[7.5]]]
    """
    return _adaptive_avg_spec(2, input, output_size)


@operator("adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", method=False)
def adaptive_avg_pool3d(input, output_size):
    """3-d adaptive average pooling (windows as :func:`adaptive_avg_pool2d`, per dim).

    Shape: ``(N, C, T, H, W)`` or ``(C, T, H, W)`` -> ``(..., *output_size)``.

    Example:
        >>> import ember
        >>> ember.ops.pooling.adaptive_avg_pool3d(ember.arange(8.).view(1, 2, 2, 2), 1).tolist()
        [[[[3.5]]]]
    """
    return _adaptive_avg_spec(3, input, output_size)


@derivative(adaptive_avg_pool2d)
def _adaptive_avg_pool2d_backward(ctx, grad):
    return _adaptive_avg_pool_backward(grad, list(ctx.shape_of("input")), 2)


@derivative(adaptive_avg_pool3d)
def _adaptive_avg_pool3d_backward(ctx, grad):
    return _adaptive_avg_pool_backward(grad, list(ctx.shape_of("input")), 3)


@operator("_adaptive_avg_pool_backward(Tensor grad_output, SymInt[] input_size, int dims) -> "
          "Tensor", method=False)
def _adaptive_avg_pool_backward(grad_output, input_size, dims):
    """The adjoint of adaptive average pooling over the last ``dims`` dims."""
    return Spec(tuple(input_size), grad_output._dtype)


@derivative(_adaptive_avg_pool_backward)
def _adaptive_avg_pool_backward_backward(ctx, h):
    pool = adaptive_avg_pool2d if ctx.dims == 2 else adaptive_avg_pool3d
    return pool(h, list(ctx.shape_of("grad_output")[-ctx.dims:]))


def _adaptive_max_spec(nd: int, input, output_size):
    name = f"adaptive_max_pool{nd}d"
    out = _check_adaptive(name, input, output_size, nd, True)
    _floating(name if nd == 2 else name + "_cpu", input)
    shape = input._shape[:-nd] + out
    return Spec(shape, input._dtype), Spec(shape, dt.int64)


@operator("adaptive_max_pool2d(Tensor self, SymInt[2] output_size) -> (Tensor, Tensor)",
          method=False)
def adaptive_max_pool2d(input, output_size):
    """2-d adaptive max pooling returning values and flat ``H * W`` indices.

    Example:
        >>> import ember
        >>> x = ember.arange(16.).view(1, 4, 4)
        >>> ember.ops.pooling.adaptive_max_pool2d(x, 1)[1].tolist()
        [[[15]]]
    """
    return _adaptive_max_spec(2, input, output_size)


@operator("adaptive_max_pool3d(Tensor self, SymInt[3] output_size) -> (Tensor, Tensor)",
          method=False)
def adaptive_max_pool3d(input, output_size):
    """3-d adaptive max pooling returning values and flat ``T * H * W`` indices.

    Example:
        >>> import ember
        >>> x = ember.arange(8.).view(1, 2, 2, 2)
        >>> ember.ops.pooling.adaptive_max_pool3d(x, 1)[1].tolist()
        [[[[7]]]]
    """
    return _adaptive_max_spec(3, input, output_size)


@derivative(adaptive_max_pool2d, save=("result1",))
def _adaptive_max_pool2d_backward(ctx, grad, grad_indices):
    return _scatter_planes(grad, ctx.result1, ctx.shape_of("input"), 2)


@derivative(adaptive_max_pool3d, save=("result1",))
def _adaptive_max_pool3d_backward(ctx, grad, grad_indices):
    return _scatter_planes(grad, ctx.result1, ctx.shape_of("input"), 3)


def _adaptive_1d(name: str, input: Tensor, output_size) -> int:
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"{name})")
    return _one(name, "output_size", output_size)


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:
    """1-d adaptive average pooling (``torch.adaptive_avg_pool1d``): ``(N, C, L)`` or ``(C, L)``.

    Example:
        >>> import ember
        >>> ember.adaptive_avg_pool1d(ember.arange(4.).view(1, 4), 2).tolist()
        [[0.5, 2.5]]
    """
    o = _adaptive_1d("adaptive_avg_pool1d", input, output_size)
    return adaptive_avg_pool2d(input.unsqueeze(-2), [1, o]).squeeze(-2)


def adaptive_max_pool1d(input: Tensor, output_size) -> tuple:
    """1-d adaptive max pooling (``torch.adaptive_max_pool1d``): values and indices along L.

    Example:
        >>> import ember
        >>> ember.adaptive_max_pool1d(ember.arange(4.).view(1, 4), 2)[1].tolist()
        [[1, 3]]
    """
    o = _adaptive_1d("adaptive_max_pool1d", input, output_size)
    v, i = adaptive_max_pool2d(input.unsqueeze(-2), [1, o])
    return v.squeeze(-2), i.squeeze(-2)


# -- max unpooling ----------------------------------------------------------------------------
_SPATIAL = {2: "two elements (height, width)", 3: "three elements (depth, height, width)"}


def _unpool_spec(nd: int, input, indices, output_size, stride=None, padding=None):
    name = f"max_unpooling{nd}d"
    if indices._dtype is not dt.int64:
        raise RuntimeError("elements in indices should be type int64" +
                           (f" but got: {_LEGACY[indices._dtype.name]}" if nd == 2 else ""))
    out = tuple(int(v) for v in output_size)
    if nd == 3 and input.ndim not in (4, 5):
        raise RuntimeError(f"Input to {name} should be a 4d or 5d Tensor, but got a tensor with "
                           f"{input.ndim} dimensions.")
    if len(out) != nd:
        raise RuntimeError(f"There should be exactly {_SPATIAL[nd]} in output_size, but got "
                           f"{len(out)} elements.")
    for what, v in (("stride", stride), ("padding", padding)) if nd == 3 else ():
        if len(v) != 3:
            raise RuntimeError(f"There should be exactly {_SPATIAL[3]} in {what}, but got: "
                               f"{len(v)} elements.")
    if nd == 2 and input.ndim not in (3, 4):
        raise RuntimeError(f"Input to {name} should be a 3d or 4d Tensor, but got a tensor with "
                           f"{input.ndim} dimensions.")
    if input._shape != indices._shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({_shape_str(input._shape)}) but got indices tensor with shape: "
                           f"{_shape_str(indices._shape)}")
    for i in range(1, input.ndim):
        if input._shape[i] == 0:
            raise RuntimeError(f"{name}_forward_out_cpu(): Expected input to have non-zero "
                               f"size for non-batch dimensions, but got "
                               f"{_shape_str(input._shape)} with dimension {i} being empty.")
    if nd == 3 and any(int(s) <= 0 for s in stride):
        raise RuntimeError(f"strides should be greater than zero, but got stride: "
                           f"{_shape_str(stride)}")
    if any(o < 0 for o in out):
        raise RuntimeError(f"{name}(): output_size must contain non-negative spatial "
                           f"dimensions, but got output_size=({', '.join(map(str, out))})")
    _dtype_in(f"max_unpool{nd}d", input, _FLOATS)
    return Spec(input._shape[:-nd] + out, input._dtype)


@operator("max_unpool2d(Tensor self, Tensor indices, SymInt[2] output_size) -> Tensor",
          method=False)
def max_unpool2d(input, indices, output_size):
    """Scatter ``input`` into zeros of spatial size ``output_size`` at flat plane ``indices``
    (the inverse of :func:`max_pool2d_with_indices`; NOTE [Pooling indices]).

    Raises RuntimeError (on CPU) when an index lies outside the ``H_out * W_out`` plane.
    Shape: ``(N, C, H, W)`` or ``(C, H, W)`` -> ``(..., *output_size)``.

    Example:
        >>> import ember
        >>> v, i = ember.ops.pooling.max_pool2d_with_indices(ember.arange(4.).view(1, 2, 2), 2)
        >>> ember.ops.pooling.max_unpool2d(v, i, [2, 2]).tolist()
        [[[0.0, 0.0], [0.0, 3.0]]]
    """
    return _unpool_spec(2, input, indices, output_size)


@operator("max_unpool3d(Tensor self, Tensor indices, SymInt[3] output_size, SymInt[3] stride, "
          "SymInt[3] padding) -> Tensor", method=False)
def max_unpool3d(input, indices, output_size, stride, padding):
    """3-d max unpooling (:func:`max_unpool2d` over ``T * H * W`` planes); ``stride`` and
    ``padding`` are only validated, as in PyTorch.

    Example:
        >>> import ember
        >>> x = ember.arange(8.).view(1, 2, 2, 2)
        >>> v, i = ember.ops.pooling.max_pool3d_with_indices(x, 2)
        >>> ember.ops.pooling.max_unpool3d(v, i, [2, 2, 2], [2, 2, 2], [0, 0, 0]).sum().item()
        7.0
    """
    return _unpool_spec(3, input, indices, output_size, stride, padding)


@derivative(max_unpool2d, save=("indices",))
def _max_unpool2d_backward(ctx, grad):
    return _gather_planes(grad, ctx.indices, 2), None


@derivative(max_unpool3d, save=("indices",))
def _max_unpool3d_backward(ctx, grad):
    return _gather_planes(grad, ctx.indices, 3), None


# -- fractional max pooling -------------------------------------------------------------------
def _fractional_spec(nd: int, input, kernel_size, output_size, random_samples):
    name = f"fractional_max_pool{nd}d"
    fn = name + ("()" if nd == 2 else "_out()")
    what = "Int or tuple of Ints" if nd == 2 else "Int or tuple of three Ints"
    k, o = (_expand(f"{name}: {arg} must either be a single {what}", v, nd)
            for arg, v in (("kernel_size", kernel_size), ("output_size", output_size)))
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{fn}: Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{_shape_str(input._shape)}")
    for i in range(1, input.ndim):
        if input._shape[i] == 0:
            raise RuntimeError(f"{fn}: Expected input to have non-zero size for non-batch "
                               f"dimensions, but got{_shape_str(input._shape)} with dimension "
                               f"{i} being empty.")
    _check_samples(input, random_samples, nd)
    names = ("height", "width") if nd == 2 else ("time", "height", "width")
    for n, kk, oo, size in zip(names, k, o, input._shape[-nd:]):
        if oo + kk - 1 > size:
            raise RuntimeError(f"{fn}: pool {n} {kk} too large relative to input {n} {size}")
    _dtype_in(f"{name}_out_frame", input, _FLOATS)
    shape = input._shape[:-nd] + o
    return Spec(shape, input._dtype), Spec(shape, dt.int64)


def _expand(message: str, v, nd: int) -> tuple:
    """``v`` (an int or 1 or ``nd`` ints) as an ``nd``-tuple; RuntimeError(message) else."""
    if isinstance(v, int):
        return (v,) * nd
    v = tuple(int(x) for x in v)
    if len(v) not in (1, nd):
        raise RuntimeError(message)
    return v * nd if len(v) == 1 else v


def _check_samples(input: Tensor, samples: Tensor, nd: int) -> None:
    if samples._dtype is not input._dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    n = input._shape[0] if input.ndim == nd + 2 else 1
    c = input._shape[-nd - 1]
    if samples._shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples._shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples._shape[2] != nd:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {nd}; got "
                           f"{samples._shape[2]}.")


@operator("fractional_max_pool2d(Tensor self, int[2] kernel_size, int[2] output_size, "
          "Tensor random_samples) -> (Tensor, Tensor)", method=False)
def fractional_max_pool2d(input, kernel_size, output_size, random_samples):
    """Fractional max pooling (Graham, 2014) over pseudo-random ``kernel_size`` windows.

    Plane ``(n, c)`` draws its window starts from ``random_samples[n, c]`` (``[..., 0]`` for
    the width, ``[..., 1]`` for the height): ``start_i = int((i + u) * a) - int(u * a)`` with
    ``a = (in - k) / (out - 1)`` computed in the input's dtype, and the last window ending at
    the input's edge, as PyTorch. Returns values and flat ``H * W`` indices.

    Example:
        >>> import ember
        >>> u = ember.full((1, 1, 2), 0.5)
        >>> x = ember.arange(16.).view(1, 1, 4, 4)
        >>> ember.ops.pooling.fractional_max_pool2d(x, [2, 2], [2, 2], u)[1].tolist()
        [[[[5, 7], [13, 15]]]]
    """
    return _fractional_spec(2, input, kernel_size, output_size, random_samples)


@operator("fractional_max_pool3d(Tensor self, int[3] kernel_size, int[3] output_size, "
          "Tensor random_samples) -> (Tensor, Tensor)", method=False)
def fractional_max_pool3d(input, kernel_size, output_size, random_samples):
    """3-d fractional max pooling; samples ``[..., 0]``, ``[1]``, ``[2]`` drive T, H, W.

    Example:
        >>> import ember
        >>> u = ember.full((1, 1, 3), 0.5)
        >>> x = ember.arange(8.).view(1, 1, 2, 2, 2)
        >>> ember.ops.pooling.fractional_max_pool3d(x, [1, 1, 1], [1, 1, 1], u)[1].tolist()
        [[[[[7]]]]]
    """
    return _fractional_spec(3, input, kernel_size, output_size, random_samples)


@derivative(fractional_max_pool2d, save=("result1",))
def _fractional_max_pool2d_backward(ctx, grad, grad_indices):
    return _scatter_planes(grad, ctx.result1, ctx.shape_of("input"), 2), None


@derivative(fractional_max_pool3d, save=("result1",))
def _fractional_max_pool3d_backward(ctx, grad, grad_indices):
    return _scatter_planes(grad, ctx.result1, ctx.shape_of("input"), 3), None
