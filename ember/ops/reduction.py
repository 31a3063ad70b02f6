"""Reduction operators: sums, means, extrema, statistics, norms, scans and order statistics.

Each operator is declared once with its Meta rule. Most rules delegate to a small *plan*
function that resolves ``dim`` into sorted canonical dims and returns ``(dims, Spec)``; the
CPU kernels call the same plan, so validation and shapes cannot disagree between backends.

NOTE [Reduction dims]
``dim=None`` reduces every dim; an empty ``dim`` list does too (torch's ``sum(x, ())``), except
for ``all``/``any`` where it reduces nothing. A 0-d tensor accepts ``dim`` 0 and -1 and
reduces nothing. Repeated dims raise ``RuntimeError`` and out-of-range ones ``IndexError``,
both with torch's messages. Integer and bool inputs of sum-like ops accumulate in int64.

Length: about 40 operators with their docstrings share the plans above them; split by
sub-family (statistics, norms, order statistics) if it grows further.

Over 800 lines because every reduction shares one planning helper (dims, keepdim, dtype) and
its rule sits next to it; splitting by sub-family (sums, extrema, statistics, scans) is next.
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from ember.autograd.grad_mode import is_grad_enabled
from ember.core import dtype as dt
from ember.core.layout import canonical_dim, numel
from ember.ops._define import Spec, Tag, composite, derivative, operator, tensor_method
from ember.ops.pointwise import _sgn, check_writable, maximum, minimum, where
from ember.tensor import Tensor

__all__ = [
    "sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "aminmax",
    "argmax", "argmin", "var", "std", "var_mean", "std_mean", "logsumexp", "norm",
    "linalg_vector_norm", "linalg_matrix_norm", "all", "any", "cumsum", "cumprod", "cummax",
    "cummin", "logcumsumexp", "count_nonzero", "median", "nanmedian", "mode", "quantile",
    "nanquantile", "return_types",
]

R = (Tag.reduction,)
_INF = math.inf


class return_types:  # noqa: N801  (torch.return_types)
    """Named tuples returned by multi-output reductions, like ``torch.return_types``.

    Example:
        >>> result = ember.max(ember.tensor([[1, 5], [7, 2]]), dim=1)
        >>> isinstance(result, ember.return_types.max), result.values, result.indices
        (True, tensor([5, 7]), tensor([1, 0]))
        >>> values, indices = result
    """

    max = namedtuple("max", ["values", "indices"])
    min = namedtuple("min", ["values", "indices"])
    median = namedtuple("median", ["values", "indices"])
    nanmedian = namedtuple("nanmedian", ["values", "indices"])
    mode = namedtuple("mode", ["values", "indices"])
    cummax = namedtuple("cummax", ["values", "indices"])
    cummin = namedtuple("cummin", ["values", "indices"])
    aminmax = namedtuple("aminmax", ["min", "max"])


_TN = {d.name: d.scalar_name for d in dt.ALL_DTYPES}


def tname(d: dt.DType) -> str:
    """torch's C++ name of a dtype (``Long``, ``Float``), as used in its messages."""
    return _TN[d.name]


# -- dims and shapes ---------------------------------------------------------------------------
def reduction_dims(shape: tuple, dim, empty_means_all: bool = True) -> tuple[int, ...]:
    """Sorted canonical dims that ``dim`` (None, int or sequence) reduces; see NOTE above."""
    nd = len(shape)
    if dim is None:
        return tuple(range(nd))
    if isinstance(dim, int) and not isinstance(dim, bool):
        d = canonical_dim(dim, nd)
        return (d,) if nd else ()
    if not isinstance(dim, list | tuple):
        raise TypeError(f"dim must be an int, a sequence of ints or None; got "
                        f"{type(dim).__name__}")
    if not dim:
        return tuple(range(nd)) if empty_means_all else ()
    seen = []
    for d in dim:
        if not isinstance(d, int) or isinstance(d, bool):
            raise TypeError(f"dim must be a sequence of ints; got {type(d).__name__}")
        c = canonical_dim(d, nd)
        if c in seen:
            raise RuntimeError(f"dim {c} appears multiple times in the list of dims")
        seen.append(c)
    return tuple(sorted(seen)) if nd else ()


def reduced_shape(shape: tuple, dims: tuple, keepdim: bool) -> tuple[int, ...]:
    """``shape`` with ``dims`` removed (or set to 1 when ``keepdim``)."""
    if keepdim:
        return tuple(1 if i in dims else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in dims)


def single_dim(name: str, shape: tuple, dim) -> int:
    """A canonical single ``dim`` (TypeError for tuples, like torch's int-only overloads)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{name}(): argument 'dim' must be int, not {type(dim).__name__}")
    return canonical_dim(dim, len(shape))


def _check_nonempty_dims(name: str, shape: tuple, dims, shown=None) -> None:
    for d in dims:
        if shape[d] == 0:
            raise IndexError(f"{name}(): Expected reduction dim {d if shown is None else shown} "
                             "to have non-zero size.")


def _require_tensor(name: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument 'input' must be Tensor, not {type(x).__name__}")


def _is_float(d: dt.DType) -> bool:
    """Floating or complex: the dtypes torch's float-only reductions accept."""
    return d.category >= dt.FLOATING


def _no_complex(name: str, input: Tensor, exc: type = NotImplementedError,
                message: str | None = None) -> None:
    """Refuse a complex input as torch does for orderings (max, min, argmax, sort, ...)."""
    if input._dtype.is_complex:
        raise exc(message or f'"{name}" not implemented for \'{tname(input._dtype)}\'')


# -- derivative helpers -----------------------------------------------------------------------
# NOTE [Reduction derivatives]
# Every rule first re-inserts the reduced dims as size 1 (``_restore``) so the gradient
# broadcasts against the input; ``dim=None`` and ``dim=()`` reduce everything (as the forward).
# Rules use ember ops only, so ``create_graph=True`` differentiates them again. Ties follow
# torch: full extrema (``max()``, ``median()``) and ``amax``/``amin``/inf-norms share the
# gradient evenly among tied elements; ops returning indices (``max(dim)``, ``median(dim)``,
# ``mode``, ``cummax``) send it to the returned index. Multi-output ops only keep their first
# saved ``(values, indices)`` outputs (``ctx.result`` is a tuple for multi-output ops).
def _restore(g: Tensor, shape: tuple, dims: tuple, keepdim: bool) -> Tensor:
    """``g`` with the reduced ``dims`` (sorted, canonical) of ``shape`` re-inserted as size 1."""
    if keepdim or not shape or len(g._shape) == len(shape):
        return g
    for d in dims:
        g = g.unsqueeze(d)
    return g


def _zeros(shape: tuple, like: Tensor) -> Tensor:
    from ember.ops.creation import zeros
    return zeros(shape, dtype=like._dtype, device=like._device)


def _scaled_mask(g: Tensor, mask: Tensor, dims) -> Tensor:
    """torch's ``scale_grad_by_count``: ``g`` shared evenly among ``mask``'s True elements."""
    count = mask.sum(dims, keepdim=True) if dims != () else mask.sum()
    return (g / count) * mask


def _evenly(grad: Tensor, x: Tensor, value: Tensor) -> Tensor:
    """torch's ``evenly_distribute_backward`` for 0-d extrema/medians (NaN picks the NaNs)."""
    mask = x.isnan() if bool(value.isnan().item()) else x == value
    return where(mask, grad / mask.sum(), 0.0)


def _select_backward(grad: Tensor, shape: tuple, dim: int, indices: Tensor,
                     keepdim: bool) -> Tensor:
    """Gradient of a value-selecting reduction: ``grad`` lands at ``indices`` along ``dim``."""
    if not shape:
        return grad
    from ember.ops.creation import arange
    d = canonical_dim(dim, len(shape))
    if not keepdim:
        grad, indices = grad.unsqueeze(d), indices.unsqueeze(d)
    pos = arange(shape[d], device=grad._device).view((-1,) + (1,) * (len(shape) - d - 1))
    return where(pos == indices, grad, 0.0).expand(shape)


def _reverse_cumsum(g: Tensor, d: int) -> Tensor:
    return g.flip((d,)).cumsum(d).flip((d,))


# -- sum-like ---------------------------------------------------------------------------------
def sum_plan(name: str, input: Tensor, dim, keepdim: bool, dtype, out) -> tuple[tuple, Spec]:
    """dims and Spec of sum/nansum/prod: int and bool accumulate into int64 unless ``dtype``."""
    _require_tensor(name, input)
    if name == "nansum":
        _refuse_complex_nansum(input)
    dims = reduction_dims(input._shape, dim)
    if dtype is not None:
        res = dtype
    elif out is not None:
        res = out._dtype
    else:
        res = input._dtype if _is_float(input._dtype) else dt.int64
    return dims, Spec(reduced_shape(input._shape, dims, keepdim), res)


@operator("sum.dim_IntList(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None, Tensor(a!)? out=None) -> Tensor", R)
def sum(input, dim=None, keepdim=False, *, dtype=None, out=None):  # noqa: A001
    """Sum of elements over ``dim`` (all dims when None).

    Integer and bool inputs give int64 unless ``dtype`` is given; float16/bfloat16 accumulate
    in float32 and round once. A 0-size reduction gives 0.

    Shape: ``input`` with ``dim`` removed (kept as size 1 when ``keepdim``).

    Example:
        >>> import ember
        >>> ember.tensor([[1, 2], [3, 4]]).sum(0).tolist()
        [4, 6]
    """
    return sum_plan("sum", input, dim, keepdim, dtype, out)[1]


@derivative(sum)
def _sum_backward(ctx, grad):
    shape = ctx.shape_of("input")
    if not grad._shape:  # a full reduction's 0-d gradient expands as it is: no unsqueezes
        return grad.expand(shape)
    dims = reduction_dims(shape, ctx.dim)
    return _restore(grad, shape, dims, ctx.keepdim).expand(shape)


@operator("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, "
          "Tensor(a!)? out=None) -> Tensor", R)
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero (otherwise as :func:`sum`).

    Shape: as :func:`sum`.

    Example:
        >>> ember.nansum(ember.tensor([1.0, float("nan"), 2.0]))
        tensor(3.)
    """
    return sum_plan("nansum", input, dim, keepdim, dtype, out)[1]


def _refuse_complex_nansum(input) -> None:
    if isinstance(input, Tensor) and input._dtype.is_complex:
        raise RuntimeError("nansum on CPU does not support complex inputs")


@derivative(nansum, save=("input",))
def _nansum_backward(ctx, grad):
    # torch multiplies by the not-NaN mask: NaN positions get zero
    return _sum_backward(ctx, grad) * ctx.input.isnan().logical_not()


@operator("prod.dim_int(Tensor self, int? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None, Tensor(a!)? out=None) -> Tensor", R)
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product of elements over one ``dim`` (all elements when omitted); empty product is 1.

    Integer and bool inputs give int64 unless ``dtype`` is given (wrapping on overflow).

    Shape: ``input`` with ``dim`` removed (size 1 when ``keepdim``); 0-d without ``dim``.

    Example:
        >>> ember.prod(ember.tensor([[1, 2], [3, 4]]))
        tensor(24)
        >>> ember.tensor([[1, 2], [3, 4]]).prod(dim=0)
        tensor([3, 8])
    """
    if dim is not None:
        single_dim("prod", input._shape, dim)
    return sum_plan("prod", input, dim, keepdim, dtype, out)[1]


def _prod_safe_zeros(grad: Tensor, x: Tensor, d: int) -> Tensor:
    """Products of all other elements along ``d`` via exclusive cumprods (zeros are fine)."""
    n = x._shape[d]
    if not numel(x._shape):
        return grad.expand(x._shape)
    from ember.ops.creation import ones
    from ember.ops.shape import cat
    ones_shape = x._shape[:d] + (1,) + x._shape[d + 1:]
    one = ones(ones_shape, dtype=x._dtype, device=x._device)
    before = cat([one, x.narrow(d, 0, n - 1)], d).cumprod(d)
    after = cat([one, x.narrow(d, 1, n - 1).flip((d,))], d).cumprod(d).flip((d,))
    return grad * (before * after)


@derivative(prod, save=("input", "result"))
def _prod_backward(ctx, grad):
    # torch's prod_backward: result / input without zeros, exclusive products otherwise
    x, result = ctx.input, ctx.result
    if x._dtype is not grad._dtype:
        x = x.to(grad._dtype)
    if x._dtype.is_complex:  # the rule is a product of the factors: conjugate them
        x, result = x.conj(), result.conj()
    shape = x._shape
    if not shape:
        return grad
    if ctx.dim is None:
        zeros_count = int((x == 0).sum().item())
        if zeros_count == 0:
            return grad * (result / x)
        if zeros_count > 1 and not is_grad_enabled():
            return _zeros(shape, grad)
        return _prod_safe_zeros(grad.reshape(()), x.reshape(-1), 0).view(shape)
    d = canonical_dim(ctx.dim, len(shape))
    if not ctx.keepdim:
        grad, result = grad.unsqueeze(d), result.unsqueeze(d)
    if not bool((x == 0).any().item()):
        return grad * (result / x)
    return _prod_safe_zeros(grad, x, d)


def mean_plan(name: str, input: Tensor, dim, keepdim: bool, dtype, out) -> tuple[tuple, Spec]:
    """dims and Spec of mean/nanmean: floating inputs (or a floating ``dtype``) only."""
    _require_tensor(name, input)
    if name == "nanmean":  # torch's nanmean is nansum / count
        _refuse_complex_nansum(input)
    if name == "nanmean" and not _is_float(input._dtype):
        raise RuntimeError("nanmean(): expected input to have floating point or complex "
                           f"dtype but got {tname(input._dtype)}")
    if dtype is not None and not _is_float(dtype):
        raise RuntimeError(f"{name}(): could not infer output dtype. Optional dtype must be "
                           f"either a floating point or complex dtype. Got: {tname(dtype)}")
    if dtype is None and not _is_float(input._dtype):
        raise RuntimeError(f"{name}(): could not infer output dtype. Input dtype must be either "
                           f"a floating point or complex dtype. Got: {tname(input._dtype)}")
    dims = reduction_dims(input._shape, dim)
    res = dtype or (out._dtype if out is not None else input._dtype)
    return dims, Spec(reduced_shape(input._shape, dims, keepdim), res)


@operator("mean.dim(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None, Tensor(a!)? out=None) -> Tensor", R)
def mean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Arithmetic mean over ``dim``; NaN for an empty reduction.

    Raises:
        RuntimeError: integer/bool input without a floating ``dtype`` (as torch).

    Shape: as :func:`sum`.

    Example:
        >>> x = ember.tensor([[1.0, 2.0], [3.0, 5.0]])
        >>> x.mean()
        tensor(2.7500)
        >>> ember.mean(x, dim=1, keepdim=True)
        tensor([[1.5000],
                [4.0000]])
    """
    return mean_plan("mean", input, dim, keepdim, dtype, out)[1]


@derivative(mean)
def _mean_backward(ctx, grad):
    shape = ctx.shape_of("input")
    dims = reduction_dims(shape, ctx.dim)
    return _restore(grad, shape, dims, ctx.keepdim).expand(shape) / _count(shape, dims)


def _count(shape: tuple, dims: tuple) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


@operator("nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None, Tensor(a!)? out=None) -> Tensor", R)
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements over ``dim`` (NaN when there are none).

    Shape: as :func:`sum`.

    Example:
        >>> ember.nanmean(ember.tensor([1.0, float("nan"), 2.0]))
        tensor(1.5000)
    """
    return mean_plan("nanmean", input, dim, keepdim, dtype, out)[1]


@derivative(nanmean, save=("input",))
def _nanmean_backward(ctx, grad):
    # torch's nanmean is nansum / count: an all-NaN slice gets NaN (inf * 0), NaNs get zero
    x = ctx.input
    dims = reduction_dims(x._shape, ctx.dim)
    valid = x.isnan().logical_not()
    count = valid.sum(dims, keepdim=True) if dims else valid.sum()
    return (_restore(grad, x._shape, dims, ctx.keepdim) / count) * valid


# -- extrema ----------------------------------------------------------------------------------
def extremum_all_spec(name: str, input: Tensor) -> Spec:
    """Spec of ``max(input)``-like full reductions: 0-d, RuntimeError when empty."""
    _require_tensor(name, input)
    if numel(input._shape) == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    _no_complex(f"{name}_all", input)
    return Spec((), input._dtype)


def extremum_dim_plan(name: str, input: Tensor, dim, keepdim: bool) -> tuple[int, tuple, tuple]:
    """(canonical dim, reduced dims, output shape) of max/min/median/mode along one dim."""
    _require_tensor(name, input)
    d = single_dim(name, input._shape, dim)
    dims = (d,) if input._shape else ()
    _check_nonempty_dims(name, input._shape, dims)
    if name in _KERNEL_REFUSALS:  # refused by the kernel's dtype dispatch, as torch
        _no_complex(_KERNEL_REFUSALS[name], input)
    _no_complex(name, input, RuntimeError, f"{name}(): does not support complex input")
    return d, dims, reduced_shape(input._shape, dims, keepdim)


_KERNEL_REFUSALS = {"median": "median_out", "nanmedian": "median_out", "mode": "mode_cpu"}


def _values_indices(name: str, input: Tensor, dim, keepdim: bool):
    shape = extremum_dim_plan(name, input, dim, keepdim)[2]
    return Spec(shape, input._dtype), Spec(shape, dt.int64)


@operator("max(Tensor self) -> Tensor", R, method=False)
def _max_all(input, *, out=None):
    """Largest element of ``input`` (NaN if any element is NaN), as a 0-d tensor."""
    return extremum_all_spec("max", input)


@operator("min(Tensor self) -> Tensor", R, method=False)
def _min_all(input, *, out=None):
    """Smallest element of ``input`` (NaN if any element is NaN), as a 0-d tensor."""
    return extremum_all_spec("min", input)


@derivative(_max_all, save=("input", "result"))
def _max_all_backward(ctx, grad):
    return _evenly(grad, ctx.input, ctx.result)


@derivative(_min_all, save=("input", "result"))
def _min_all_backward(ctx, grad):
    return _evenly(grad, ctx.input, ctx.result)


@operator("max.dim(Tensor self, int dim, bool keepdim=False) -> "
          "(Tensor values, Tensor indices)", R, method=False)
def _max_dim(input, dim, keepdim=False, *, out=None):
    """(values, indices) of the maximum along ``dim``; first occurrence, NaN wins."""
    return _values_indices("max", input, dim, keepdim)


@operator("min.dim(Tensor self, int dim, bool keepdim=False) -> "
          "(Tensor values, Tensor indices)", R, method=False)
def _min_dim(input, dim, keepdim=False, *, out=None):
    """(values, indices) of the minimum along ``dim``; first occurrence, NaN wins."""
    return _values_indices("min", input, dim, keepdim)


_max_dim.result_tuple = return_types.max
_min_dim.result_tuple = return_types.min


def _indices_backward(ctx, grad) -> Tensor:
    """Value-selecting backward from the saved ``(values, indices)`` outputs."""
    return _select_backward(grad, ctx.shape_of("input"), ctx.dim, ctx.result[1], ctx.keepdim)


@derivative(_max_dim, save=("result",))
def _max_dim_backward(ctx, grad, grad_indices):
    return _indices_backward(ctx, grad)


@derivative(_min_dim, save=("result",))
def _min_dim_backward(ctx, grad, grad_indices):
    return _indices_backward(ctx, grad)


def _extremum(all_op, dim_op, binary, input, dim, keepdim, other, out):
    if isinstance(dim, Tensor) or other is not None:
        return binary(input, other if other is not None else dim, out=out)
    if dim is None:
        if keepdim:
            raise TypeError(f"{all_op.name}() received an invalid combination of arguments: "
                            "keepdim needs dim")
        return all_op(input) if out is None else all_op(input, out=out)
    return dim_op(input, dim, keepdim) if out is None else dim_op(input, dim, keepdim, out=out)


@tensor_method("max")
def max(input, dim=None, keepdim=False, *, other=None, out=None):  # noqa: A001
    """torch.max: the largest element; ``(values, indices)`` along ``dim``; or elementwise.

    ``max(input)`` is 0-d (RuntimeError when empty); ``max(input, dim, keepdim=False)`` is a
    ``return_types.max`` named tuple (first index on ties, NaN propagates);
    ``max(input, other)`` is :func:`maximum`.

    Example:
        >>> import ember
        >>> ember.max(ember.tensor([[1., 5.], [7., 2.]]), 1).indices.tolist()
        [1, 0]
    """
    return _extremum(_max_all, _max_dim, maximum, input, dim, keepdim, other, out)


@tensor_method("min")
def min(input, dim=None, keepdim=False, *, other=None, out=None):  # noqa: A001
    """torch.min: the smallest element; ``(values, indices)`` along ``dim``; or elementwise.

    See :func:`max` for the three forms.

    Example:
        >>> x = ember.tensor([[4, 1], [2, 3]])
        >>> ember.min(x)
        tensor(1)
        >>> x.min(dim=1).indices
        tensor([1, 0])
        >>> ember.min(x, ember.tensor([3, 3]))
        tensor([[3, 1],
                [2, 3]])
    """
    return _extremum(_min_all, _min_dim, minimum, input, dim, keepdim, other, out)


def amax_plan(name: str, input: Tensor, dim, keepdim: bool) -> tuple[tuple, Spec]:
    """dims and Spec of amax/amin: no identity, so empty reductions raise like torch."""
    _require_tensor(name, input)
    unspecified = dim is None or (isinstance(dim, list | tuple) and not dim)
    if unspecified and numel(input._shape) == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    if not unspecified and input._shape:  # torch checks sizes before repeated dims
        for g in [dim] if isinstance(dim, int) else list(dim):
            _check_nonempty_dims(name, input._shape, (canonical_dim(g, len(input._shape)),),
                                 shown=g)
    dims = reduction_dims(input._shape, dim)
    shape = reduced_shape(input._shape, dims, keepdim)
    if numel(shape):  # like torch, an empty result runs no kernel and refuses nothing
        _no_complex(f"{name[1:]}_values_cpu" if name in ("amax", "amin") else name, input)
    return dims, Spec(shape, input._dtype)


@operator("amax(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def amax(input, dim=(), keepdim=False, *, out=None):
    """Maximum over ``dim`` (a dim or tuple; all when empty); NaN propagates.

    Shape: as :func:`sum`.

    Example:
        >>> ember.amax(ember.tensor([[4, 1], [2, 3]]), dim=0)
        tensor([4, 3])
    """
    return amax_plan("amax", input, dim, keepdim)[1]


def _amax_backward(ctx, grad):
    # torch's scale_grad_by_count: ties share evenly; a NaN result gives NaN (0 / 0) to the slice
    x = ctx.input
    dims = reduction_dims(x._shape, ctx.dim)
    mask = x == _restore(ctx.result, x._shape, dims, ctx.keepdim)
    return _scaled_mask(_restore(grad, x._shape, dims, ctx.keepdim), mask, dims)


derivative(amax, save=("input", "result"))(_amax_backward)


@operator("amin(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def amin(input, dim=(), keepdim=False, *, out=None):
    """Minimum over ``dim`` (a dim or tuple; all when empty); NaN propagates.

    Shape: as :func:`sum`.

    Example:
        >>> ember.amin(ember.tensor([[4, 1], [2, 3]]), dim=(0, 1))
        tensor(1)
    """
    return amax_plan("amin", input, dim, keepdim)[1]


derivative(amin, save=("input", "result"))(_amax_backward)


def aminmax_plan(input: Tensor, dim, keepdim: bool) -> tuple[tuple, tuple]:
    """dims and output shape of aminmax (one optional dim)."""
    _require_tensor("aminmax", input)
    if dim is None:
        if numel(input._shape) == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as "
                               "the operation has no identity.")
        dims = tuple(range(len(input._shape)))
    else:
        d = single_dim("aminmax", input._shape, dim)
        dims = (d,) if input._shape else ()
        for i in dims:
            if input._shape[i] == 0:
                raise IndexError(f"aminmax: Expected reduction dim {i} to have non-zero size.")
    _no_complex("aminmax_cpu", input)
    return dims, reduced_shape(input._shape, dims, keepdim)


@operator("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> "
          "(Tensor min, Tensor max)", R)
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """``(min, max)`` over ``dim`` (all elements when None) as ``return_types.aminmax``.

    Shape: both outputs are ``input`` reduced over ``dim``.

    Example:
        >>> result = ember.aminmax(ember.tensor([4, 1, 3]))
        >>> result.min, result.max
        (tensor(1), tensor(4))
    """
    shape = aminmax_plan(input, dim, keepdim)[1]
    return Spec(shape, input._dtype), Spec(shape, input._dtype)


aminmax.result_tuple = return_types.aminmax


@derivative(aminmax, save=("input", "result"))
def _aminmax_backward(ctx, grad_min, grad_max):
    x = ctx.input
    dims = reduction_dims(x._shape, ctx.dim)
    keep = ctx.keepdim
    lo, hi = (_restore(r, x._shape, dims, keep) for r in ctx.result)
    return (_scaled_mask(_restore(grad_min, x._shape, dims, keep), x == lo, dims)
            + _scaled_mask(_restore(grad_max, x._shape, dims, keep), x == hi, dims))


def argmax_plan(name: str, input: Tensor, dim, keepdim: bool) -> tuple[int | None, Spec]:
    """(canonical dim or None, Spec) of argmax/argmin."""
    _require_tensor(name, input)
    if input._dtype is dt.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    _no_complex(name, input, RuntimeError, f"{name}(): does not support complex input")
    shape = input._shape
    if dim is None:
        if numel(shape) == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        return None, Spec((1,) * len(shape) if keepdim else (), dt.int64)
    d = single_dim(name, shape, dim)
    dims = (d,) if shape else ()
    _check_nonempty_dims(name, shape, dims)
    return d, Spec(reduced_shape(shape, dims, keepdim), dt.int64)


@operator("argmax(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def argmax(input, dim=None, keepdim=False, *, out=None):
    """Index of the maximum along ``dim`` (of the flattened input when None); first on ties.

    Shape: ``input`` reduced over ``dim`` (0-d, or all ones with ``keepdim``, when None).

    Example:
        >>> ember.argmax(ember.tensor([[4, 1], [2, 3]]))
        tensor(0)
        >>> ember.argmax(ember.tensor([[4, 1], [2, 3]]), dim=1)
        tensor([0, 1])
    """
    return argmax_plan("argmax", input, dim, keepdim)[1]


@operator("argmin(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def argmin(input, dim=None, keepdim=False, *, out=None):
    """Index of the minimum along ``dim`` (of the flattened input when None); first on ties.

    Shape: as :func:`argmax`.

    Example:
        >>> ember.argmin(ember.tensor([[4, 1], [2, 3]]), dim=0)
        tensor([1, 0])
    """
    return argmax_plan("argmin", input, dim, keepdim)[1]


# -- variance ---------------------------------------------------------------------------------
def var_plan(name: str, input: Tensor, dim, unbiased, keepdim: bool, correction):
    """(dims, correction as a number, Spec) of var/std and their ``_mean`` twins."""
    _require_tensor(name, input)
    if isinstance(dim, bool):  # var(input, unbiased) overload
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments: both "
                        "unbiased and correction given")
    if correction is not None and not isinstance(correction, int | float):
        raise TypeError(f"{name}(): argument 'correction' must be Number, not "
                        f"{type(correction).__name__}")
    if not _is_float(input._dtype):
        raise RuntimeError("std and var only support floating point and complex dtypes")
    if correction is None:
        correction = 0 if unbiased is False else 1
    dims = reduction_dims(input._shape, dim)
    # a complex input has a real variance: the mean squared modulus of the deviations
    return dims, correction, Spec(reduced_shape(input._shape, dims, keepdim),
                                  input._dtype.to_real())


_VAR_SCHEMA = ("(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False"
               "{out}) -> {ret}")


@operator("var.correction" + _VAR_SCHEMA.format(out=", Tensor(a!)? out=None", ret="Tensor"), R)
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` with divisor ``max(N - correction, 0)`` (default correction 1).

    Accepts torch's forms ``var(x, unbiased)``, ``var(x, dim, unbiased, keepdim)`` and
    ``var(x, dim, *, correction, keepdim)``. ``correction >= N`` gives inf/nan like torch.

    Shape: as :func:`sum`.

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0, 4.0])
        >>> ember.var(x), x.var(correction=0)
        (tensor(1.6667), tensor(1.2500))
    """
    return var_plan("var", input, dim, unbiased, keepdim, correction)[2]


def _var_grad(grad: Tensor, x: Tensor, dim, unbiased, keepdim: bool, correction) -> Tensor:
    """torch's var_backward (``dim=None``: inf/NaN when the degrees of freedom are <= 0)."""
    if isinstance(dim, bool):  # var(input, unbiased) overload
        dim, unbiased = None, dim
    if correction is None:
        correction = 0 if unbiased is False else 1
    shape = x._shape
    if not shape or dim is None:
        dof = numel(shape) - correction
        if dof <= 0:
            return grad * where(x == x.mean(), math.nan, _INF)
        return (2.0 / dof) * grad * (x - x.mean())
    # torch counts only the listed dims here, so dim=() divides by 1 - correction
    dims = reduction_dims(shape, dim)
    listed = dims if (not isinstance(dim, list | tuple) or dim) else ()
    dof = _count(shape, listed) - correction
    factor = 2.0 / dof if dof else _INF
    return factor * _restore(grad, shape, dims, keepdim) * (x - x.mean(dims, keepdim=True))


@derivative(var, save=("input",))
def _var_backward(ctx, grad):
    return _var_grad(grad, ctx.input, ctx.dim, ctx.unbiased, ctx.keepdim, ctx.correction)


@operator("std.correction" + _VAR_SCHEMA.format(out=", Tensor(a!)? out=None", ret="Tensor"), R)
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation: the square root of :func:`var` (same arguments).

    Shape: as :func:`sum`.

    Example:
        >>> x = ember.tensor([1.0, 3.0])
        >>> ember.std(x), x.std(correction=0)
        (tensor(1.4142), tensor(1.))
    """
    return var_plan("std", input, dim, unbiased, keepdim, correction)[2]


def _std_grad(grad: Tensor, result: Tensor, ctx) -> Tensor:
    """torch's std_backward: var's gradient scaled by 1 / (2 std), zero where std is 0."""
    grad_var = where(result == 0, 0.0, grad / (result * 2))
    return _var_grad(grad_var, ctx.input, ctx.dim, ctx.unbiased, ctx.keepdim, ctx.correction)


@derivative(std, save=("input", "result"))
def _std_backward(ctx, grad):
    return _std_grad(grad, ctx.result, ctx)


@operator("var_mean.correction" + _VAR_SCHEMA.format(out="", ret="(Tensor, Tensor)"), R,
          method=False)
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim`` as a plain tuple (arguments as :func:`var`).

    Example:
        >>> ember.var_mean(ember.tensor([1.0, 2.0, 3.0, 4.0]))
        (tensor(1.6667), tensor(2.5000))
    """
    spec = var_plan("var_mean", input, dim, unbiased, keepdim, correction)[2]
    return spec, Spec(spec.shape, input._dtype)  # a complex input keeps a complex mean


def _mean_grad(grad: Tensor, ctx) -> Tensor:
    x = ctx.input
    dim = None if isinstance(ctx.dim, bool) else ctx.dim
    dims = reduction_dims(x._shape, dim)
    return _restore(grad, x._shape, dims, ctx.keepdim) / _count(x._shape, dims)


@derivative(var_mean, save=("input",))
def _var_mean_backward(ctx, grad_var, grad_mean):
    return (_var_grad(grad_var, ctx.input, ctx.dim, ctx.unbiased, ctx.keepdim, ctx.correction)
            + _mean_grad(grad_mean, ctx))


@operator("std_mean.correction" + _VAR_SCHEMA.format(out="", ret="(Tensor, Tensor)"), R,
          method=False)
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim`` as a plain tuple (arguments as :func:`var`).

    Example:
        >>> ember.std_mean(ember.tensor([1.0, 3.0]), correction=0)
        (tensor(1.), tensor(2.))
    """
    spec = var_plan("std_mean", input, dim, unbiased, keepdim, correction)[2]
    return spec, Spec(spec.shape, input._dtype)


@derivative(std_mean, save=("input", "result"))
def _std_mean_backward(ctx, grad_std, grad_mean):
    return _std_grad(grad_std, ctx.result[0], ctx) + _mean_grad(grad_mean, ctx)


# -- logsumexp --------------------------------------------------------------------------------
def float_result(d: dt.DType) -> dt.DType:
    """Integral and bool dtypes become the default float dtype (INT_TO_FLOAT)."""
    return d if _is_float(d) else dt.get_default_dtype()


@operator("logsumexp(Tensor self, int[1] dim, bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input)))`` over ``dim``, computed stably (max-shifted); -inf when empty.

    Shape: as :func:`sum`.

    Example:
        >>> ember.logsumexp(ember.tensor([[0.0, 0.0], [1.0, 1.0]]), dim=1)
        tensor([0.6931, 1.6931])
    """
    _require_tensor("logsumexp", input)
    # torch's quirk: an empty dim list reduces everything, then fails to squeeze the result
    if isinstance(dim, list | tuple) and not dim and not keepdim and numel(input._shape) and \
            input._shape:
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape "
                           f"{[1] * len(input._shape)}")
    dims = reduction_dims(input._shape, dim)
    return Spec(reduced_shape(input._shape, dims, keepdim), float_result(input._dtype))


@derivative(logsumexp, save=("input", "result"))
def _logsumexp_backward(ctx, grad):
    x = ctx.input
    dims = reduction_dims(x._shape, ctx.dim)
    keep = ctx.keepdim
    result = _restore(ctx.result, x._shape, dims, keep)
    weights = (x - result).exp()
    if weights._dtype.is_complex:  # conjugate Wirtinger convention
        weights = weights.conj()
    return _restore(grad, x._shape, dims, keep) * weights


# -- norms ------------------------------------------------------------------------------------
def _ord_text(ord) -> str:
    if ord in (_INF, -_INF):
        return "inf" if ord > 0 else "-inf"
    return str(int(ord)) if float(ord).is_integer() else str(ord)


def _check_norm_dtype(name: str, input: Tensor, dtype) -> dt.DType:
    if not _is_float(input._dtype):
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. "
                           f"Got {tname(input._dtype)}")
    if dtype is None:
        return input._dtype.to_real()
    if not _is_float(dtype):
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got "
                           f"{tname(dtype)}")
    if dt.promote_types(input._dtype, dtype) is not dtype:
        raise RuntimeError(f"{name}: the dtype of the input ({tname(input._dtype)}) should be "
                           f"convertible without narrowing to the specified dtype "
                           f"({tname(dtype)})")
    return dtype.to_real()


def vector_norm_plan(input: Tensor, ord, dim, keepdim: bool, dtype) -> tuple[tuple, Spec]:
    """dims and Spec of ``linalg.vector_norm``; no-identity orders refuse empty reductions."""
    name = "linalg.vector_norm"
    _require_tensor(name, input)
    if isinstance(ord, str) or not isinstance(ord, int | float):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, "
                        f"not {type(ord).__name__}")
    res = _check_norm_dtype(name, input, dtype)
    dims = reduction_dims(input._shape, dim)
    if ord < 0 or ord == _INF:
        if dim is None or (isinstance(dim, list | tuple) and not dim):
            if numel(input._shape) == 0:
                raise RuntimeError(f"{name} cannot compute the {_ord_text(ord)} norm on an "
                                   "empty tensor because the operation does not have an "
                                   "identity")
        else:
            for d in dims:
                if input._shape[d] == 0:
                    raise RuntimeError(f"{name} cannot compute the {_ord_text(ord)} norm on "
                                       f"the dimension {d}because this dimension is empty "
                                       "and the operation does not have an identity")
    return dims, Spec(reduced_shape(input._shape, dims, keepdim), res)


@operator("linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, "
          "*, ScalarType? dtype=None, Tensor(a!)? out=None) -> Tensor", R, method=False)
def linalg_vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None, out=None):
    """Vector ``ord``-norm over ``dim`` (all elements when None), as ``torch.linalg.vector_norm``.

    ``ord``: inf (max abs), -inf (min abs), 0 (count of non-zeros), other p:
    ``sum(|x|**p)**(1/p)``. Half inputs compute in float32.

    Shape: as :func:`sum`.

    Example:
        >>> ember.linalg.vector_norm(ember.tensor([3.0, -4.0]))
        tensor(5.)
        >>> ember.linalg.vector_norm(ember.tensor([3.0, -4.0]), ord=1)
        tensor(7.)
    """
    return vector_norm_plan(x, ord, dim, keepdim, dtype)[1]


def _pnorm_grad(grad: Tensor, x: Tensor, p: float, norm: Tensor, dims) -> Tensor | None:
    """torch's norm_backward; ``grad`` and ``norm`` already have the reduced dims restored."""
    if p == 0:
        return None
    sign = _sgn(x) if x._dtype.is_complex else None
    if p == 1:
        return (x.sign() if sign is None else sign) * grad
    if p == 2:
        return grad * where(norm == 0, 0.0, x / norm)
    ax = x.abs()
    if math.isinf(p):  # amax/amin of |x| respecting NaN: ties share evenly
        mask = (ax == norm).logical_or(ax.isnan())
        return (x.sign() if sign is None else sign) * _scaled_mask(grad, mask, dims)
    if p < 1:
        scaled = (x.sign() if sign is None else sign) * where(x == 0, 0.0, ax.pow(p - 1))
        return scaled * grad * norm.pow(1 - p)
    scale = where(norm == 0, 0.0, grad / norm.pow(p - 1))
    if p < 2:
        return (x.sign() if sign is None else sign) * ax.pow(p - 1) * scale
    return x * ax.pow(p - 2) * scale


@derivative(linalg_vector_norm, save=("x", "result"))
def _linalg_vector_norm_backward(ctx, grad):
    x = ctx.x
    dims = reduction_dims(x._shape, ctx.dim)
    keep = ctx.keepdim
    return _pnorm_grad(_restore(grad, x._shape, dims, keep), x, float(ctx.ord),
                       _restore(ctx.result, x._shape, dims, keep), dims)


def matrix_norm_plan(A: Tensor, ord, dim, keepdim: bool, dtype) -> tuple[tuple, Spec]:
    """(canonical (row, col) dims, Spec) of ``linalg.matrix_norm``."""
    name = "linalg.matrix_norm"
    _require_tensor(name, A)
    nd = len(A._shape)
    if nd < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    res = _check_norm_dtype(name, A, dtype)
    if len(dim) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got {tuple(dim)}")
    d0, d1 = canonical_dim(dim[0], nd), canonical_dim(dim[1], nd)
    if d0 == d1:
        raise RuntimeError(f"{name}: dims must be different. Got ({dim[0]}, {dim[1]})")
    if not _valid_matrix_ord(ord):
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    if ord in ("nuc", 2, -2) and res.itemsize == 2:
        raise RuntimeError(f"{name}: Low precision dtypes not supported. Got {tname(res)}")
    rows, cols = A._shape[d0], A._shape[d1]
    empty_axis = {-1: cols, -_INF: rows, -2: builtins.min(rows, cols)}.get(ord)
    if empty_axis == 0:
        raise IndexError(f"amin(): Expected reduction dim {-1 if ord == -2 else 0} to have "
                         "non-zero size.")
    dims = tuple(sorted((d0, d1)))
    return (d0, d1), Spec(reduced_shape(A._shape, dims, keepdim), res)


def _valid_matrix_ord(ord) -> bool:
    if isinstance(ord, str):
        return ord in ("fro", "nuc")
    if isinstance(ord, bool) or not isinstance(ord, int | float):
        return False
    return ord in (_INF, -_INF, 1, -1, 2, -2)


@operator("linalg_matrix_norm(Tensor self, Scalar ord='fro', int[] dim=[-2,-1], "
          "bool keepdim=False, *, ScalarType? dtype=None, Tensor(a!)? out=None) -> Tensor", R,
          method=False)
def linalg_matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None, out=None):
    """Matrix norm over the two ``dim`` axes, as ``torch.linalg.matrix_norm``.

    ``ord``: 'fro', 'nuc' (sum of singular values), 2/-2 (largest/smallest singular value),
    1/-1 (max/min column abs-sum), inf/-inf (max/min row abs-sum). Batched over other dims.

    Shape: ``A`` with both ``dim`` removed (size 1 when ``keepdim``).

    Example:
        >>> ember.linalg.matrix_norm(ember.tensor([[3.0, 0.0], [0.0, 4.0]]))
        tensor(5.)
        >>> ember.linalg.matrix_norm(ember.tensor([[3.0, 0.0], [0.0, 4.0]]), ord=1)
        tensor(4.)
    """
    return matrix_norm_plan(A, ord, dim, keepdim, dtype)[1]


def _svd_factors(a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Reduced ``U, S, Vh`` of a batch of matrices (last two dims) as constants.

    ember has no SVD operator, so the factors come from LAPACK through NumPy; they carry no
    history, so the matrix-norm rules that use them are not differentiable twice.
    """
    import numpy as np

    from ember.ops.creation import tensor
    from ember.ops.linalg import LinAlgError
    arr = np.asarray(a.detach().contiguous().numpy())
    if not np.isfinite(arr).all():
        raise LinAlgError("linalg.svd: The algorithm failed to converge because the input "
                          "matrix contained non-finite values.")
    try:
        u, s, vh = np.linalg.svd(arr, full_matrices=False)
    except np.linalg.LinAlgError as e:
        raise LinAlgError(f"linalg.svd: The algorithm failed to converge ({e}).") from None
    dtypes = (a._dtype, a._dtype.to_real(), a._dtype)  # complex matrices: real S
    return tuple(tensor(v, dtype=d, device=a._device) for v, d in zip((u, s, vh), dtypes))


def _svd_norm_grad(grad: Tensor, a: Tensor, ord) -> Tensor:
    """``U diag(gS) Vh`` (torch's svdvals backward) with gS from sum/amax/amin of S."""
    if is_grad_enabled():
        raise NotImplementedError(f"linalg_matrix_norm: double backward of the ord={ord!r} "
                                  "norm (through an SVD) is not implemented")
    u, s, vh = _svd_factors(a)
    g = grad.unsqueeze(-1)
    if ord == "nuc":
        gs = g.expand(s._shape)
    else:
        ext = s.amax(-1, keepdim=True) if ord == 2 else s.amin(-1, keepdim=True)
        gs = _scaled_mask(g, s == ext, -1)
    from ember.ops.linalg import matmul
    return matmul(u * gs.unsqueeze(-2), vh)


@derivative(linalg_matrix_norm, save=("A", "result"))
def _linalg_matrix_norm_backward(ctx, grad):
    # torch composes matrix_norm from vector_norm, amax/amin and svdvals; this follows it
    A, ord = ctx.A, ctx.ord
    (d0, d1), _ = matrix_norm_plan(A, ord, ctx.dim, ctx.keepdim, ctx.dtype)
    shape = A._shape
    if not numel(shape):
        return _zeros(shape, A)
    dims = tuple(sorted((d0, d1)))
    g = _restore(grad, shape, dims, ctx.keepdim)
    if ord == "fro":
        return _pnorm_grad(g, A, 2.0, _restore(ctx.result, shape, dims, ctx.keepdim), dims)
    if ord in ("nuc", 2, -2):
        am = A.movedim((d0, d1), (-2, -1))
        if not A._dtype.is_complex:
            am = am.to(g._dtype)
        gm = g.movedim((d0, d1), (-2, -1))[..., 0, 0]
        return _svd_norm_grad(gm, am, ord).movedim((-2, -1), (d0, d1))
    # 1/-1: max/min over d1 of column abs-sums over d0; inf/-inf: the same with d0, d1 swapped
    over, across = (d0, d1) if abs(ord) == 1 else (d1, d0)
    sums = A.detach().abs().sum(over, keepdim=True)
    ext = sums.amax(across, keepdim=True) if ord > 0 else sums.amin(across, keepdim=True)
    return (A.sgn() if A._dtype.is_complex else A.sign()) * _scaled_mask(g, sums == ext,
                                                                           (across,))


@composite("norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p='fro', int[1]? dim=None, "
           "bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: a vector norm of order ``p`` over ``dim``, or 'fro'/'nuc' matrix norms.

    ``p='fro'`` is the 2-norm over ``dim`` (all elements when None); ``p='nuc'`` is the
    nuclear norm over ``dim`` (the last two dims when None); a number ``p`` is
    :func:`linalg_vector_norm`.

    Shape: as :func:`sum`.

    Example:
        >>> ember.norm(ember.tensor([3.0, 4.0]))
        tensor(5.)
        >>> ember.tensor([[1.0, -2.0], [0.0, 3.0]]).norm(p=1, dim=0)
        tensor([1., 5.])
    """
    if p is None:
        p = "fro"
    if isinstance(p, str):
        if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
            return linalg_vector_norm(input, 2, dim, keepdim, dtype=dtype, out=out)
        mdim = tuple(range(input.dim())) if dim is None else dim
        return linalg_matrix_norm(input, p, mdim, keepdim, dtype=dtype, out=out)
    return linalg_vector_norm(input, p, dim, keepdim, dtype=dtype, out=out)


# -- all / any / count ------------------------------------------------------------------------
def bool_reduce_plan(name: str, input: Tensor, dim, keepdim: bool) -> tuple[tuple, Spec]:
    """dims and Spec of all/any: bool results, uint8 stays uint8; ``dim=()`` reduces nothing."""
    _require_tensor(name, input)
    dims = reduction_dims(input._shape, dim, empty_means_all=False)
    res = dt.uint8 if input._dtype is dt.uint8 else dt.bool_
    return dims, Spec(reduced_shape(input._shape, dims, keepdim), res)


@operator("all.dims(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
          "Tensor(a!)? out=None) -> Tensor", R)
def all(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """Whether every element over ``dim`` is non-zero (True when empty); uint8 gives uint8.

    Shape: as :func:`sum` (``dim=()`` reduces nothing).

    Example:
        >>> ember.all(ember.tensor([True, False]))
        tensor(False)
        >>> ember.tensor([[1, 0], [1, 1]]).all(dim=1)
        tensor([False,  True])
    """
    return bool_reduce_plan("all", input, dim, keepdim)[1]


@operator("any.dims(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
          "Tensor(a!)? out=None) -> Tensor", R)
def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """Whether some element over ``dim`` is non-zero (False when empty); uint8 gives uint8.

    Shape: as :func:`all`.

    Example:
        >>> ember.any(ember.tensor([0, 2]))
        tensor(True)
        >>> ember.tensor([[0, 0], [1, 0]]).any(dim=1)
        tensor([False,  True])
    """
    return bool_reduce_plan("any", input, dim, keepdim)[1]


@operator("count_nonzero.dim_IntList(Tensor self, int[1]? dim=None) -> Tensor", R)
def count_nonzero(input, dim=None):
    """Number of non-zero elements over ``dim`` (int or tuple; all when None), as int64.

    Shape: ``input`` with ``dim`` removed.

    Example:
        >>> ember.count_nonzero(ember.tensor([[0, 1], [2, 3]]))
        tensor(3)
        >>> ember.count_nonzero(ember.tensor([[0, 1], [2, 3]]), dim=0)
        tensor([1, 2])
    """
    _require_tensor("count_nonzero", input)
    dims = reduction_dims(input._shape, dim)
    return Spec(reduced_shape(input._shape, dims, False), dt.int64)


# -- scans ------------------------------------------------------------------------------------
def scan_plan(name: str, input: Tensor, dim, dtype, out) -> tuple[int | None, Spec]:
    """(canonical dim or None for 0-d, Spec) of cumsum/cumprod: ints accumulate in int64."""
    _require_tensor(name, input)
    d = single_dim(name, input._shape, dim)
    if dtype is not None:
        res = dtype
    elif out is not None:
        res = out._dtype
    else:
        res = input._dtype if _is_float(input._dtype) else dt.int64
    return (d if input._shape else None), Spec(input._shape, res)


@operator("cumsum(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!)? out=None) "
          "-> Tensor", R)
def cumsum(input, dim, *, dtype=None, out=None):
    """Cumulative sum along ``dim``; integer and bool inputs give int64 unless ``dtype``.

    Shape: same as ``input``.

    Example:
        >>> ember.cumsum(ember.tensor([1, 2, 3]), dim=0)
        tensor([1, 3, 6])
    """
    return scan_plan("cumsum", input, dim, dtype, out)[1]


def _cumsum_grad(ctx, grad, name: str) -> Tensor:
    shape = ctx.shape_of(name)
    if not shape:
        return grad
    return _reverse_cumsum(grad, canonical_dim(ctx.dim, len(shape)))


@derivative(cumsum)
def _cumsum_backward(ctx, grad):
    return _cumsum_grad(ctx, grad, "input")


@operator("cumprod(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!)? out=None) "
          "-> Tensor", R)
def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative product along ``dim``; integer and bool inputs give int64 unless ``dtype``.

    Shape: same as ``input``.

    Example:
        >>> ember.cumprod(ember.tensor([1, 2, 3]), dim=0)
        tensor([1, 2, 6])
    """
    return scan_plan("cumprod", input, dim, dtype, out)[1]


def _cumprod_grad(grad: Tensor, x: Tensor, dim: int, result: Tensor) -> Tensor:
    """torch's cumprod_backward: ``reverse_cumsum(result * grad) / x`` without zeros.

    With zeros and ``create_graph``, ``grad_x[k] = sum_{j >= k} grad[j] * prod_{i <= j, i != k}
    x[i]`` is built at once as an (n, n) table per slice (O(n^2) memory) that stays
    differentiable (torch also switches to an O(n^2) form there); otherwise the O(n) form.
    """
    shape = x._shape
    if numel(shape) <= 1:
        return grad
    d = canonical_dim(dim, len(shape))
    n = shape[d]
    if n == 1:
        return grad
    if x._dtype is not grad._dtype:
        x = x.to(grad._dtype)
    if not bool((x == 0).any().item()):
        return _reverse_cumsum(result * grad, d) / x
    from ember.ops.creation import arange
    k = arange(n, device=x._device)
    if not is_grad_enabled():
        return _cumprod_zeros_grad(grad, x, d, result, k)
    others = where(k.unsqueeze(-1) == k, 1.0, x.movedim(d, -1).unsqueeze(-2))  # [..., k, i]
    table = others.cumprod(-1)  # prod_{i <= j, i != k} x[i] at [..., k, j]
    g = grad.movedim(d, -1).unsqueeze(-2)
    return where(k.unsqueeze(-1) <= k, table * g, 0.0).sum(-1).movedim(-1, d)


def _cumprod_zeros_grad(grad: Tensor, x: Tensor, d: int, result: Tensor, k: Tensor) -> Tensor:
    """torch's O(n) first-order cumprod gradient for slices holding zeros.

    Before the first zero z1 the usual formula holds; at z1 the gradient is
    ``result[z1 - 1] * sum_{z1 <= j < z2} grad[j] * prod_{z1 < i <= j} x[i]``; after it, zero.
    Values past a zero never reach earlier positions (no NaN from ``0 * inf``), as in torch.
    """
    zeros_seen = (x == 0).cumsum(d)
    before = zeros_seen == 0
    out = where(before, _reverse_cumsum(where(before, result * grad, 0.0), d) / x, 0.0)
    run = zeros_seen == 1
    first_idx = run.to(dt.uint8).argmax(d, keepdim=True)
    pos = k.view((-1,) + (1,) * (len(x._shape) - d - 1))
    first = (pos == first_idx).logical_and(run)
    between = run.logical_and(first.logical_not())
    tail = (where(between, x, 1.0).cumprod(d) * where(run, grad, 0.0)).sum(d, keepdim=True)
    prev = where(first_idx == 0, 1.0, result.gather(d, (first_idx - 1).clamp(min=0)))
    return where(first, tail * prev, out)


@derivative(cumprod, save=("input", "result"))
def _cumprod_backward(ctx, grad):
    x, result = ctx.input, ctx.result
    if x._dtype.is_complex:  # a rule of products of the factors: conjugate them
        x, result, grad = x.conj(), result.conj(), grad.to(x._dtype)  # torch's casts
    return _cumprod_grad(grad, x, ctx.dim, result)


def _inplace_scan_spec(name: str, self: Tensor, dim, dtype) -> Spec:
    check_writable(self)
    if self._dtype is dt.bool_ and dtype is None and self._shape and numel(self._shape):
        raise NotImplementedError(f"\"{name[:-1]}_out_cpu\" not implemented for 'Bool'")
    spec = scan_plan(name, self, dim, dtype if dtype is not None else self._dtype, None)[1]
    return Spec(self._shape, self._dtype) if spec.dtype is self._dtype else spec


@operator("cumsum_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)",
          (Tag.reduction, Tag.inplace))
def cumsum_(self, dim, *, dtype=None):
    """In-place :func:`cumsum` (accumulates in ``self``'s dtype).

    Example:
        >>> x = ember.tensor([1, 2, 3])
        >>> x.cumsum_(0)
        tensor([1, 3, 6])
    """
    return _inplace_scan_spec("cumsum_", self, dim, dtype)


@derivative(cumsum_)
def _cumsum__backward(ctx, grad):
    return _cumsum_grad(ctx, grad, "self")


@operator("cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)",
          (Tag.reduction, Tag.inplace))
def cumprod_(self, dim, *, dtype=None):
    """In-place :func:`cumprod` (accumulates in ``self``'s dtype).

    Example:
        >>> x = ember.tensor([1.0, 2.0, 3.0])
        >>> x.cumprod_(0)
        tensor([1., 2., 6.])
    """
    return _inplace_scan_spec("cumprod_", self, dim, dtype)


@derivative(cumprod_, save=("self", "result"))
def _cumprod__backward(ctx, grad):
    x, result = ctx.self, ctx.result
    if x._dtype.is_complex:  # conjugated factors, as the out-of-place rule
        x, result = x.conj(), result.conj()
    return _cumprod_grad(grad, x, ctx.dim, result)


def _cum_extremum(name: str, input: Tensor, dim):
    _require_tensor(name, input)
    if not input._shape and dim not in (0, -1):
        raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
    if numel(input._shape):  # torch skips the dim check for empty inputs
        single_dim(name, input._shape, dim)
    _no_complex(f"{name}_cpu", input)
    return Spec(input._shape, input._dtype), Spec(input._shape, dt.int64)


@operator("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", R)
def cummax(input, dim, *, out=None):
    """Running maximum along ``dim`` and the index where it was (last) attained; NaN sticks.

    Shape: both outputs as ``input``.

    Example:
        >>> ember.cummax(ember.tensor([1, 3, 2]), dim=0).values
        tensor([1, 3, 3])
    """
    return _cum_extremum("cummax", input, dim)


@operator("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", R)
def cummin(input, dim, *, out=None):
    """Running minimum along ``dim`` and the index where it was (last) attained; NaN sticks.

    Shape: both outputs as ``input``.

    Example:
        >>> ember.cummin(ember.tensor([3, 1, 2]), dim=0).indices
        tensor([0, 1, 1])
    """
    return _cum_extremum("cummin", input, dim)


cummax.result_tuple = return_types.cummax
cummin.result_tuple = return_types.cummin


def _cum_extremum_backward(ctx, grad) -> Tensor:
    """torch's cummaxmin_backward: scatter-add ``grad`` to the running extremum's indices."""
    shape = ctx.shape_of("input")
    if not shape or not numel(shape):
        return grad
    return _zeros(shape, grad).scatter_add(ctx.dim, ctx.result[1], grad)


@derivative(cummax, save=("result",))
def _cummax_backward(ctx, grad, grad_indices):
    return _cum_extremum_backward(ctx, grad)


@derivative(cummin, save=("result",))
def _cummin_backward(ctx, grad, grad_indices):
    return _cum_extremum_backward(ctx, grad)


@operator("logcumsumexp(Tensor self, int dim, *, Tensor(a!)? out=None) -> Tensor", R)
def logcumsumexp(input, dim, *, out=None):
    """Running ``log(sum(exp(x)))`` along ``dim``, computed stably; floating or complex inputs.

    Raises:
        NotImplementedError: integer or bool input (as torch's CPU kernel).

    Shape: same as ``input``.

    Example:
        >>> ember.logcumsumexp(ember.tensor([1.0, 1.0, 1.0]), dim=0)
        tensor([1.0000, 1.6931, 2.0986])
    """
    _require_tensor("logcumsumexp", input)
    single_dim("logcumsumexp", input._shape, dim)
    if not _is_float(input._dtype):
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{tname(input._dtype)}'")
    return Spec(input._shape, input._dtype)


@derivative(logcumsumexp, save=("input", "result"))
def _logcumsumexp_backward(ctx, grad):
    # torch's formula: positive and negative parts of grad in log space, reverse-scanned
    x, result = ctx.input, ctx.result
    if not x._shape or not numel(x._shape):
        return grad
    d = canonical_dim(ctx.dim, len(x._shape))
    if x._dtype.is_complex:
        # d result_k / d x_j = exp(x_j - result_k) for j <= k (holomorphic); the gradient
        # multiplies by its conjugate and sums over k >= j
        later = (grad * (-result.conj()).exp()).flip((d,)).cumsum(d).flip((d,))
        return x.conj().exp() * later
    from ember.core.dtype import finfo
    lowest = finfo(grad._dtype).min
    log_abs = grad.abs().log()
    pos = where(grad > 0, log_abs, lowest)
    neg = where(grad < 0, log_abs, lowest)

    def reverse_lcse(t):
        return t.flip((d,)).logcumsumexp(d).flip((d,))

    return (reverse_lcse(pos - result) + x).exp() - (reverse_lcse(neg - result) + x).exp()


# -- order statistics -------------------------------------------------------------------------
def _check_sortable(name: str, input: Tensor) -> None:
    if input._dtype is dt.bool_:
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")
    _no_complex(name, input)


@operator("median(Tensor self) -> Tensor", R, method=False)
def _median_all(input):
    """Lower median of all elements (NaN if any is NaN; NaN when empty)."""
    _require_tensor("median", input)
    if numel(input._shape):
        _check_sortable("median_cpu", input)
    return Spec((), input._dtype)


@operator("nanmedian(Tensor self) -> Tensor", R, method=False)
def _nanmedian_all(input):
    """Lower median of the non-NaN elements (NaN when there are none)."""
    _require_tensor("nanmedian", input)
    if numel(input._shape):
        _check_sortable("median_cpu", input)
    return Spec((), input._dtype)


@derivative(_median_all, save=("input", "result"))
def _median_all_backward(ctx, grad):
    return _evenly(grad, ctx.input, ctx.result)


@derivative(_nanmedian_all, save=("input", "result"))
def _nanmedian_all_backward(ctx, grad):
    return _evenly(grad, ctx.input, ctx.result)


@operator("median.dim(Tensor self, int dim, bool keepdim=False) -> "
          "(Tensor values, Tensor indices)", R, method=False)
def _median_dim(input, dim, keepdim=False, *, out=None):
    """(values, indices) of the lower median along ``dim``; NaN propagates."""
    specs = _values_indices("median", input, dim, keepdim)
    _check_sortable("median_out", input)
    return specs


@operator("nanmedian.dim(Tensor self, int dim, bool keepdim=False) -> "
          "(Tensor values, Tensor indices)", R, method=False)
def _nanmedian_dim(input, dim, keepdim=False, *, out=None):
    """(values, indices) of the lower median of the non-NaN values along ``dim``."""
    specs = _values_indices("nanmedian", input, dim, keepdim)
    _check_sortable("median_out", input)
    return specs


_median_dim.result_tuple = return_types.median
_nanmedian_dim.result_tuple = return_types.nanmedian


@derivative(_median_dim, save=("result",))
def _median_dim_backward(ctx, grad, grad_indices):
    return _indices_backward(ctx, grad)


@derivative(_nanmedian_dim, save=("result",))
def _nanmedian_dim_backward(ctx, grad, grad_indices):
    return _indices_backward(ctx, grad)


def _median_router(all_op, dim_op, input, dim, keepdim, out):
    if dim is None:
        if keepdim:
            raise TypeError(f'{all_op.name}() missing 1 required positional arguments: "dim"')
        return all_op(input)
    return dim_op(input, dim, keepdim) if out is None else dim_op(input, dim, keepdim, out=out)


@tensor_method("median")
def median(input, dim=None, keepdim=False, *, out=None):
    """torch.median: lower median of all elements, or ``(values, indices)`` along ``dim``.

    The lower of the two middle values is returned for even counts; NaN propagates.

    Example:
        >>> import ember
        >>> ember.median(ember.tensor([4., 1., 3., 2.])).item()
        2.0
    """
    return _median_router(_median_all, _median_dim, input, dim, keepdim, out)


@tensor_method("nanmedian")
def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """torch.nanmedian: :func:`median` ignoring NaN values.

    Example:
        >>> ember.nanmedian(ember.tensor([1.0, float("nan"), 3.0, 2.0]))
        tensor(2.)
    """
    return _median_router(_nanmedian_all, _nanmedian_dim, input, dim, keepdim, out)


@operator("mode(Tensor self, int dim=-1, bool keepdim=False) -> "
          "(Tensor values, Tensor indices)", R)
def mode(input, dim=-1, keepdim=False, *, out=None):
    """Most frequent value along ``dim`` (smallest on ties) and an index where it occurs.

    Shape: both outputs are ``input`` reduced over ``dim``.

    Example:
        >>> ember.mode(ember.tensor([1, 2, 2, 3])).values
        tensor(2)
    """
    return _values_indices("mode", input, dim, keepdim)


mode.result_tuple = return_types.mode


@derivative(mode, save=("result",))
def _mode_backward(ctx, grad, grad_indices):
    return _indices_backward(ctx, grad)

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def quantile_plan(name: str, input: Tensor, q, dim, keepdim: bool, interpolation: str):
    """(dims, Spec) of quantile/nanquantile; a 1-d ``q`` adds a leading dim."""
    _require_tensor(name, input)
    if numel(input._shape) == 0:
        raise RuntimeError(f"{name}() input tensor must be non-empty")
    if isinstance(q, Tensor) and len(q._shape) > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    if input._dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if isinstance(q, Tensor) and q._dtype is not input._dtype:
        raise RuntimeError(f"{name}() q tensor must be same dtype as the input tensor")
    if not isinstance(q, Tensor) and not 0 <= q <= 1:
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {q}")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if dim is None:
        dims = tuple(range(len(input._shape)))
    else:
        d = single_dim(name, input._shape, dim)
        dims = (d,) if input._shape else ()
    shape = reduced_shape(input._shape, dims, keepdim)
    if isinstance(q, Tensor) and q._shape:
        shape = (q._shape[0], *shape)
    return dims, Spec(shape, input._dtype)


def _quantile_backward(ctx, grad, ignore_nan: bool):
    """Gradient of torch's sort-then-interpolate quantile.

    NOTE [Quantile gradient]
    torch sorts the reduced slice (NaN last, ties in input order for short rows), picks the
    values at ranks ``floor(r)`` and ``ceil(r)`` with ``r = q * (n - 1)`` (n counts non-NaN
    values for nanquantile; a slice holding NaN uses the last rank for quantile) and lerps
    them with weight ``r - floor(r)`` (0.5 for midpoint). So the input gets ``(1 - w) * grad``
    at the lower neighbour and ``w * grad`` at the upper one (all of it for lower / higher /
    nearest), and a tensor ``q`` gets ``grad * (upper - lower) * dr/dq`` for linear.
    """
    x, q = ctx.input.detach(), ctx.q
    shape, dim = x._shape, ctx.dim
    qt = q if isinstance(q, Tensor) else None
    # grad -> (*batch, nq): q's dim last, the reduced dims dropped
    g = grad.movedim(0, -1) if qt is not None and qt._shape else grad.unsqueeze(-1)
    if dim is None or not shape:
        rows, d = x.reshape(-1), None
        g = g.reshape(g._shape[-1])
    else:
        d = canonical_dim(dim, len(shape))
        rows = x.movedim(d, -1)
        if ctx.keepdim:
            g = g.squeeze(d)
    from ember.ops.creation import tensor
    from ember.ops.shape import argsort
    n = rows._shape[-1]
    order = argsort(rows, stable=True, dim=-1)
    srt = rows.gather(-1, order)
    qv = qt.detach().reshape(-1) if qt is not None else tensor([q], dtype=x._dtype)
    if ignore_nan:
        slope = srt.isnan().logical_not().sum(-1, keepdim=True) - 1
        rank = qv * slope
        fixed = rank < 0  # masked_fill'd ranks pass no gradient to q
        rank = where(fixed, 0.0, rank)
    else:
        fixed = srt.isnan().any(-1, keepdim=True)
        slope = n - 1
        rank = where(fixed, float(n - 1), qv * slope)
    how = ctx.interpolation
    if how == "lower":
        rank = rank.floor()
    elif how == "higher":
        rank = rank.ceil()
    elif how == "nearest":
        rank = rank.round()
    lo = rank.to(dt.int64)
    gs = _zeros(rows._shape, g)
    dq = None
    if how in ("linear", "midpoint"):
        hi = rank.ceil().to(dt.int64)
        w = rank - lo if how == "linear" else 0.5
        gs = gs.scatter_add(-1, lo, g * (1 - w)).scatter_add(-1, hi, g * w)
        if how == "linear" and qt is not None:
            dq = where(fixed, 0.0, g * (srt.gather(-1, hi) - srt.gather(-1, lo)) * slope)
            if dq.dim() > 1:
                dq = dq.sum(tuple(range(dq.dim() - 1)))
            dq = dq.reshape(qt._shape)
    else:
        gs = gs.scatter_add(-1, lo, g)
    gx = _zeros(rows._shape, g).scatter(-1, order, gs)
    gx = gx.reshape(shape) if d is None else gx.movedim(-1, d)
    return gx if qt is None else (gx, dq)


_Q_SCHEMA = ("(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, "
             "str interpolation='linear', Tensor(a!)? out=None) -> Tensor")


@operator("quantile" + _Q_SCHEMA, R)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``q``-quantiles (scalar or 1-d tensor) over ``dim`` (flattened when None).

    NaN in a reduced slice gives NaN. ``interpolation``: linear, lower, higher, midpoint,
    nearest (round half to even), as torch.

    Shape: ``input`` reduced over ``dim``, with ``len(q)`` prepended for a 1-d ``q``.

    Example:
        >>> ember.quantile(ember.tensor([1.0, 2.0, 3.0, 4.0]), 0.5)
        tensor(2.5000)
        >>> ember.quantile(ember.tensor([1.0, 2.0, 3.0, 4.0]), ember.tensor([0.0, 1.0]))
        tensor([1., 4.])
    """
    return quantile_plan("quantile", input, q, dim, keepdim, interpolation)[1]


@derivative(quantile, save=("input", "q"))
def _quantile_rule(ctx, grad):
    return _quantile_backward(ctx, grad, False)


@operator("nanquantile" + _Q_SCHEMA, R)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """:func:`quantile` ignoring NaN values (NaN when a slice has none).

    Shape: as :func:`quantile`.

    Example:
        >>> ember.nanquantile(ember.tensor([1.0, float("nan"), 3.0]), 0.5)
        tensor(2.)
    """
    return quantile_plan("nanquantile", input, q, dim, keepdim, interpolation)[1]


@derivative(nanquantile, save=("input", "q"))
def _nanquantile_rule(ctx, grad):
    return _quantile_backward(ctx, grad, True)
