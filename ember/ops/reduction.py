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
"""

from __future__ import annotations

import builtins
import math
from collections import namedtuple

from ember.core import dtype as dt
from ember.core.layout import canonical_dim, numel
from ember.ops._define import Spec, Tag, composite, operator, tensor_method
from ember.ops.pointwise import check_writable, maximum, minimum
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
    """Named tuples returned by multi-output reductions, like ``torch.return_types``."""

    max = namedtuple("max", ["values", "indices"])
    min = namedtuple("min", ["values", "indices"])
    median = namedtuple("median", ["values", "indices"])
    nanmedian = namedtuple("nanmedian", ["values", "indices"])
    mode = namedtuple("mode", ["values", "indices"])
    cummax = namedtuple("cummax", ["values", "indices"])
    cummin = namedtuple("cummin", ["values", "indices"])
    aminmax = namedtuple("aminmax", ["min", "max"])


_TN = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
       "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long", "uint8": "Byte",
       "bool": "Bool"}


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
    return d.category == dt.FLOATING


# -- sum-like ---------------------------------------------------------------------------------
def sum_plan(name: str, input: Tensor, dim, keepdim: bool, dtype, out) -> tuple[tuple, Spec]:
    """dims and Spec of sum/nansum/prod: int and bool accumulate into int64 unless ``dtype``."""
    _require_tensor(name, input)
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


@operator("nansum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None, "
          "Tensor(a!)? out=None) -> Tensor", R)
def nansum(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Sum treating NaN as zero (otherwise as :func:`sum`).

    Shape: as :func:`sum`.
    """
    return sum_plan("nansum", input, dim, keepdim, dtype, out)[1]


@operator("prod.dim_int(Tensor self, int? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None, Tensor(a!)? out=None) -> Tensor", R)
def prod(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Product of elements over one ``dim`` (all elements when omitted); empty product is 1.

    Integer and bool inputs give int64 unless ``dtype`` is given (wrapping on overflow).

    Shape: ``input`` with ``dim`` removed (size 1 when ``keepdim``); 0-d without ``dim``.
    """
    if dim is not None:
        single_dim("prod", input._shape, dim)
    return sum_plan("prod", input, dim, keepdim, dtype, out)[1]


def mean_plan(name: str, input: Tensor, dim, keepdim: bool, dtype, out) -> tuple[tuple, Spec]:
    """dims and Spec of mean/nanmean: floating inputs (or a floating ``dtype``) only."""
    _require_tensor(name, input)
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
    """
    return mean_plan("mean", input, dim, keepdim, dtype, out)[1]


@operator("nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
          "ScalarType? dtype=None, Tensor(a!)? out=None) -> Tensor", R)
def nanmean(input, dim=None, keepdim=False, *, dtype=None, out=None):
    """Mean of the non-NaN elements over ``dim`` (NaN when there are none).

    Shape: as :func:`sum`.
    """
    return mean_plan("nanmean", input, dim, keepdim, dtype, out)[1]


# -- extrema ----------------------------------------------------------------------------------
def extremum_all_spec(name: str, input: Tensor) -> Spec:
    """Spec of ``max(input)``-like full reductions: 0-d, RuntimeError when empty."""
    _require_tensor(name, input)
    if numel(input._shape) == 0:
        raise RuntimeError(f"{name}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    return Spec((), input._dtype)


def extremum_dim_plan(name: str, input: Tensor, dim, keepdim: bool) -> tuple[int, tuple, tuple]:
    """(canonical dim, reduced dims, output shape) of max/min/median/mode along one dim."""
    _require_tensor(name, input)
    d = single_dim(name, input._shape, dim)
    dims = (d,) if input._shape else ()
    _check_nonempty_dims(name, input._shape, dims)
    return d, dims, reduced_shape(input._shape, dims, keepdim)


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
    return dims, Spec(reduced_shape(input._shape, dims, keepdim), input._dtype)


@operator("amax(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def amax(input, dim=(), keepdim=False, *, out=None):
    """Maximum over ``dim`` (a dim or tuple; all when empty); NaN propagates.

    Shape: as :func:`sum`.
    """
    return amax_plan("amax", input, dim, keepdim)[1]


@operator("amin(Tensor self, int[1] dim=[], bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def amin(input, dim=(), keepdim=False, *, out=None):
    """Minimum over ``dim`` (a dim or tuple; all when empty); NaN propagates.

    Shape: as :func:`sum`.
    """
    return amax_plan("amin", input, dim, keepdim)[1]


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
    return dims, reduced_shape(input._shape, dims, keepdim)


@operator("aminmax(Tensor self, *, int? dim=None, bool keepdim=False) -> "
          "(Tensor min, Tensor max)", R)
def aminmax(input, *, dim=None, keepdim=False, out=None):
    """``(min, max)`` over ``dim`` (all elements when None) as ``return_types.aminmax``.

    Shape: both outputs are ``input`` reduced over ``dim``.
    """
    shape = aminmax_plan(input, dim, keepdim)[1]
    return Spec(shape, input._dtype), Spec(shape, input._dtype)


aminmax.result_tuple = return_types.aminmax


def argmax_plan(name: str, input: Tensor, dim, keepdim: bool) -> tuple[int | None, Spec]:
    """(canonical dim or None, Spec) of argmax/argmin."""
    _require_tensor(name, input)
    if input._dtype is dt.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
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
    """
    return argmax_plan("argmax", input, dim, keepdim)[1]


@operator("argmin(Tensor self, int? dim=None, bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def argmin(input, dim=None, keepdim=False, *, out=None):
    """Index of the minimum along ``dim`` (of the flattened input when None); first on ties.

    Shape: as :func:`argmax`.
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
    return dims, correction, Spec(reduced_shape(input._shape, dims, keepdim), input._dtype)


_VAR_SCHEMA = ("(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False"
               "{out}) -> {ret}")


@operator("var.correction" + _VAR_SCHEMA.format(out=", Tensor(a!)? out=None", ret="Tensor"), R)
def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Variance over ``dim`` with divisor ``max(N - correction, 0)`` (default correction 1).

    Accepts torch's forms ``var(x, unbiased)``, ``var(x, dim, unbiased, keepdim)`` and
    ``var(x, dim, *, correction, keepdim)``. ``correction >= N`` gives inf/nan like torch.

    Shape: as :func:`sum`.
    """
    return var_plan("var", input, dim, unbiased, keepdim, correction)[2]


@operator("std.correction" + _VAR_SCHEMA.format(out=", Tensor(a!)? out=None", ret="Tensor"), R)
def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None, out=None):
    """Standard deviation: the square root of :func:`var` (same arguments).

    Shape: as :func:`sum`.
    """
    return var_plan("std", input, dim, unbiased, keepdim, correction)[2]


@operator("var_mean.correction" + _VAR_SCHEMA.format(out="", ret="(Tensor, Tensor)"), R,
          method=False)
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(var, mean)`` over ``dim`` as a plain tuple (arguments as :func:`var`)."""
    spec = var_plan("var_mean", input, dim, unbiased, keepdim, correction)[2]
    return spec, spec


@operator("std_mean.correction" + _VAR_SCHEMA.format(out="", ret="(Tensor, Tensor)"), R,
          method=False)
def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """``(std, mean)`` over ``dim`` as a plain tuple (arguments as :func:`var`)."""
    spec = var_plan("std_mean", input, dim, unbiased, keepdim, correction)[2]
    return spec, spec


# -- logsumexp --------------------------------------------------------------------------------
def float_result(d: dt.DType) -> dt.DType:
    """Integral and bool dtypes become the default float dtype (INT_TO_FLOAT)."""
    return d if _is_float(d) else dt.get_default_dtype()


@operator("logsumexp(Tensor self, int[1] dim, bool keepdim=False, *, Tensor(a!)? out=None) "
          "-> Tensor", R)
def logsumexp(input, dim, keepdim=False, *, out=None):
    """``log(sum(exp(input)))`` over ``dim``, computed stably (max-shifted); -inf when empty.

    Shape: as :func:`sum`.
    """
    _require_tensor("logsumexp", input)
    # torch's quirk: an empty dim list reduces everything, then fails to squeeze the result
    if isinstance(dim, list | tuple) and not dim and not keepdim and numel(input._shape) and \
            input._shape:
        raise RuntimeError(f"output with shape [] doesn't match the broadcast shape "
                           f"{[1] * len(input._shape)}")
    dims = reduction_dims(input._shape, dim)
    return Spec(reduced_shape(input._shape, dims, keepdim), float_result(input._dtype))


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
        return input._dtype
    if not _is_float(dtype):
        raise RuntimeError(f"{name}: dtype should be floating point or complex, but got "
                           f"{tname(dtype)}")
    if dt.promote_types(input._dtype, dtype) is not dtype:
        raise RuntimeError(f"{name}: the dtype of the input ({tname(input._dtype)}) should be "
                           f"convertible without narrowing to the specified dtype "
                           f"({tname(dtype)})")
    return dtype


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
    """
    return vector_norm_plan(x, ord, dim, keepdim, dtype)[1]


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
    """
    return matrix_norm_plan(A, ord, dim, keepdim, dtype)[1]


@composite("norm.ScalarOpt_dim_dtype(Tensor self, Scalar? p='fro', int[1]? dim=None, "
           "bool keepdim=False, *, ScalarType? dtype=None) -> Tensor")
def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """torch.norm: a vector norm of order ``p`` over ``dim``, or 'fro'/'nuc' matrix norms.

    ``p='fro'`` is the 2-norm over ``dim`` (all elements when None); ``p='nuc'`` is the
    nuclear norm over ``dim`` (the last two dims when None); a number ``p`` is
    :func:`linalg_vector_norm`.

    Shape: as :func:`sum`.
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
    """
    return bool_reduce_plan("all", input, dim, keepdim)[1]


@operator("any.dims(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
          "Tensor(a!)? out=None) -> Tensor", R)
def any(input, dim=None, keepdim=False, *, out=None):  # noqa: A001
    """Whether some element over ``dim`` is non-zero (False when empty); uint8 gives uint8.

    Shape: as :func:`all`.
    """
    return bool_reduce_plan("any", input, dim, keepdim)[1]


@operator("count_nonzero.dim_IntList(Tensor self, int[1]? dim=None) -> Tensor", R)
def count_nonzero(input, dim=None):
    """Number of non-zero elements over ``dim`` (int or tuple; all when None), as int64.

    Shape: ``input`` with ``dim`` removed.
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
    """
    return scan_plan("cumsum", input, dim, dtype, out)[1]


@operator("cumprod(Tensor self, int dim, *, ScalarType? dtype=None, Tensor(a!)? out=None) "
          "-> Tensor", R)
def cumprod(input, dim, *, dtype=None, out=None):
    """Cumulative product along ``dim``; integer and bool inputs give int64 unless ``dtype``.

    Shape: same as ``input``.
    """
    return scan_plan("cumprod", input, dim, dtype, out)[1]


def _inplace_scan_spec(name: str, self: Tensor, dim, dtype) -> Spec:
    check_writable(self)
    if self._dtype is dt.bool_ and dtype is None and self._shape and numel(self._shape):
        raise NotImplementedError(f"\"{name[:-1]}_out_cpu\" not implemented for 'Bool'")
    spec = scan_plan(name, self, dim, dtype if dtype is not None else self._dtype, None)[1]
    return Spec(self._shape, self._dtype) if spec.dtype is self._dtype else spec


@operator("cumsum_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)",
          (Tag.reduction, Tag.inplace))
def cumsum_(self, dim, *, dtype=None):
    """In-place :func:`cumsum` (accumulates in ``self``'s dtype)."""
    return _inplace_scan_spec("cumsum_", self, dim, dtype)


@operator("cumprod_(Tensor(a!) self, int dim, *, ScalarType? dtype=None) -> Tensor(a!)",
          (Tag.reduction, Tag.inplace))
def cumprod_(self, dim, *, dtype=None):
    """In-place :func:`cumprod` (accumulates in ``self``'s dtype)."""
    return _inplace_scan_spec("cumprod_", self, dim, dtype)


def _cum_extremum(name: str, input: Tensor, dim):
    _require_tensor(name, input)
    if not input._shape and dim not in (0, -1):
        raise IndexError(f"{name}(): Expected reduction dim -1 or 0 for scalar but got {dim}")
    if numel(input._shape):  # torch skips the dim check for empty inputs
        single_dim(name, input._shape, dim)
    return Spec(input._shape, input._dtype), Spec(input._shape, dt.int64)


@operator("cummax(Tensor self, int dim) -> (Tensor values, Tensor indices)", R)
def cummax(input, dim, *, out=None):
    """Running maximum along ``dim`` and the index where it was (last) attained; NaN sticks.

    Shape: both outputs as ``input``.
    """
    return _cum_extremum("cummax", input, dim)


@operator("cummin(Tensor self, int dim) -> (Tensor values, Tensor indices)", R)
def cummin(input, dim, *, out=None):
    """Running minimum along ``dim`` and the index where it was (last) attained; NaN sticks.

    Shape: both outputs as ``input``.
    """
    return _cum_extremum("cummin", input, dim)


cummax.result_tuple = return_types.cummax
cummin.result_tuple = return_types.cummin


@operator("logcumsumexp(Tensor self, int dim, *, Tensor(a!)? out=None) -> Tensor", R)
def logcumsumexp(input, dim, *, out=None):
    """Running ``log(sum(exp(x)))`` along ``dim``, computed stably; floating inputs only.

    Raises:
        NotImplementedError: integer or bool input (as torch's CPU kernel).

    Shape: same as ``input``.
    """
    _require_tensor("logcumsumexp", input)
    single_dim("logcumsumexp", input._shape, dim)
    if not _is_float(input._dtype):
        raise NotImplementedError(f'"logcumsumexp_out_cpu" not implemented for '
                                  f"'{tname(input._dtype)}'")
    return Spec(input._shape, input._dtype)


# -- order statistics -------------------------------------------------------------------------
def _check_sortable(name: str, input: Tensor) -> None:
    if input._dtype is dt.bool_:
        raise NotImplementedError(f"\"{name}\" not implemented for 'Bool'")


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
    """torch.nanmedian: :func:`median` ignoring NaN values."""
    return _median_router(_nanmedian_all, _nanmedian_dim, input, dim, keepdim, out)


@operator("mode(Tensor self, int dim=-1, bool keepdim=False) -> "
          "(Tensor values, Tensor indices)", R)
def mode(input, dim=-1, keepdim=False, *, out=None):
    """Most frequent value along ``dim`` (smallest on ties) and an index where it occurs.

    Shape: both outputs are ``input`` reduced over ``dim``.
    """
    return _values_indices("mode", input, dim, keepdim)


mode.result_tuple = return_types.mode

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


_Q_SCHEMA = ("(Tensor self, Tensor q, int? dim=None, bool keepdim=False, *, "
             "str interpolation='linear', Tensor(a!)? out=None) -> Tensor")


@operator("quantile" + _Q_SCHEMA, R)
def quantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """``q``-quantiles (scalar or 1-d tensor) over ``dim`` (flattened when None).

    NaN in a reduced slice gives NaN. ``interpolation``: linear, lower, higher, midpoint,
    nearest (round half to even), as torch.

    Shape: ``input`` reduced over ``dim``, with ``len(q)`` prepended for a 1-d ``q``.
    """
    return quantile_plan("quantile", input, q, dim, keepdim, interpolation)[1]


@operator("nanquantile" + _Q_SCHEMA, R)
def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear", out=None):
    """:func:`quantile` ignoring NaN values (NaN when a slice has none).

    Shape: as :func:`quantile`.
    """
    return quantile_plan("nanquantile", input, q, dim, keepdim, interpolation)[1]
