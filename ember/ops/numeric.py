"""Numerical utilities built from other ops (composites): differences and integration,
statistics (cov, corrcoef), distances, set membership, combinatorics, matrix builders and
pointwise helpers (logaddexp, sinc, ldexp, frexp, gcd, lcm).

Every function here is a ``composite``: it validates its arguments with PyTorch's messages and
then calls other ember operators only, so autograd, Meta tensors and dispatch modes see the ops
it is made of. Validation that needs tensor *values* (``cov``'s weight checks) reads them.
"""

from __future__ import annotations

import builtins
import itertools
import math
import warnings
from collections import namedtuple

from ember.core import dtype as dt
from ember.core.layout import broadcast_shapes, canonical_dim
from ember.ops._define import composite
from ember.ops._promotion import result_type
from ember.ops.copy import clone, copy_
from ember.ops.creation import ones, scalar_tensor, tensor, zeros
from ember.ops.linalg import matmul, mm
from ember.ops.pointwise import (
    _TN,
    abs,
    check_inplace,
    clamp_min,
    eq,
    exp,
    exp2,
    floor,
    gt,
    isinf,
    isnan,
    log,
    log1p,
    log2,
    logical_xor,
    maximum,
    pow,
    remainder,
    sin,
    sqrt,
    where,
)
from ember.ops.reduction import amax, any, cumprod, cumsum, linalg_vector_norm, sum
from ember.ops.shape import cat, flip, meshgrid, stack
from ember.ops.views import expand, flatten, narrow, reshape, select, transpose, unsqueeze, view
from ember.tensor import Tensor

__all__ = [
    "diff", "trapezoid", "trapz", "cumulative_trapezoid", "cov", "corrcoef", "cdist", "renorm",
    "isin", "cartesian_prod", "combinations", "block_diag", "vander", "chain_matmul",
    "logaddexp", "logaddexp2", "sinc", "ldexp", "frexp", "gcd", "lcm", "sinc_", "ldexp_",
    "gcd_", "lcm_",
]

# pylint: disable=redefined-builtin


def _wrap(dim: int, nd: int) -> int:
    return canonical_dim(dim, nd)


def _not_implemented(kernel: str, d: dt.DType) -> NotImplementedError:
    return NotImplementedError(f'"{kernel}" not implemented for \'{d.scalar_name}\'')


# -- differences and integration ----------------------------------------------------------------
def _diff_check_other(self: Tensor, other: Tensor | None, dim: int) -> None:
    if other is None:
        return
    d = _wrap(dim, self.dim())
    if other.dim() != self.dim():
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(other.dim()):
        if i != d and other.shape[i] != self.shape[i]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input "
                f"except along the differencing dimension; input.size({i}) = {self.shape[i]}, "
                f"but got tensor.size({i}) = {other.shape[i]}")


@composite("diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) "
           "-> Tensor")
def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The ``n``-th forward difference along ``dim``: ``out[i] = x[i+1] - x[i]``, repeated.

    ``prepend``/``append`` (same number of dims, same sizes except along ``dim``) are
    concatenated first (with type promotion). ``n`` larger than the size gives an empty dim;
    ``n=0`` returns a copy (ignoring prepend/append, as torch does). bool inputs use xor.

    Shape: ``input`` with ``dim`` shrunk by ``n`` (clamped at 0).

    Raises:
        RuntimeError: 0-d input, negative ``n``, incompatible prepend/append.

    Example:
        >>> import ember
        >>> ember.diff(ember.tensor([1, 4, 9, 16])).tolist()
        [3, 5, 7]
    """
    if input.dim() < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    _diff_check_other(input, prepend, dim)
    _diff_check_other(input, append, dim)
    if n == 0:
        return clone(input)
    d = _wrap(dim, input.dim())
    if prepend is not None or append is not None:
        parts = [t for t in (prepend, input, append) if t is not None]
        input = cat(parts, d)
    length = input.shape[d] - 1
    out = input
    for _ in range(min(n, input.shape[d])):
        hi, lo = narrow(out, d, 1, length), narrow(out, d, 0, length)
        out = logical_xor(hi, lo) if out.dtype is dt.bool_ else hi - lo
        length -= 1
    return out


def _x_spacing(name: str, y: Tensor, x: Tensor, d: int) -> Tensor:
    """``x``'s differences along ``d``, shaped to broadcast against ``y``'s differences."""
    if x.dim() == 1:
        if x.shape[0] != y.shape[d]:
            raise RuntimeError(f"{name}: There must be one `x` value for each sample point")
        shape = [1] * y.dim()
        shape[d] = x.shape[0]
        x = view(x, tuple(shape))
    elif x.dim() < y.dim():
        x = view(x, (1,) * (y.dim() - x.dim()) + tuple(x.shape))
    size = x.shape[d]
    return narrow(x, d, min(size, 1), max(size - 1, 0)) - narrow(x, d, 0, max(size - 1, 0))


def _check_dx(name: str, dx) -> float:
    if isinstance(dx, bool) or isinstance(dx, complex) or (
            isinstance(dx, Tensor) and (dx.dtype is dt.bool_ or dx.dtype.is_complex)):
        raise RuntimeError(f"{name}: Currently, we only support dx as a real number.")
    return float(dx)


def _trapezoid(name: str, y: Tensor, x, dx, dim: int) -> Tensor:
    if x is not None and dx is not None:
        raise TypeError(f"{name}() received an invalid combination of arguments: pass either "
                        "`x` or `dx`, not both")
    d = _wrap(dim, y.dim())
    if y.shape[d] == 0:
        shape = tuple(s for i, s in enumerate(y.shape) if i != d)
        return zeros(shape, dtype=y.dtype, device=y.device)
    if x is None:
        if y.dtype is dt.bool_:
            raise RuntimeError(f"{name}: received a bool input for `y`, but bool is not "
                               "supported")
        step = _check_dx(name, 1 if dx is None else dx)
        # (sum - (first + last) / 2) * dx: each inner sample counts fully, the ends half
        ends = select(y, d, 0) + select(y, d, -1)
        return (sum(y, d) - ends * 0.5) * step
    if y.dtype is dt.bool_ or x.dtype is dt.bool_:
        raise RuntimeError(f"{name}: received a bool input for `x` or `y`, but bool is not "
                           "supported")
    spacing = _x_spacing(name, y, x, d)
    length = y.shape[d] - 1
    pairs = narrow(y, d, 0, length) + narrow(y, d, 1, length)
    return sum(spacing * pairs, d) / 2.0


@composite("trapezoid.x(Tensor y, Tensor? x=None, *, Scalar? dx=None, int dim=-1) -> Tensor",
           method=False)
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Integrate ``y`` along ``dim`` with the trapezoidal rule.

    Sample spacing is ``dx`` (a real number, default 1) or given by the sample points ``x``
    (1-D with one point per sample, or broadcastable against ``y`` after differencing along
    ``dim``). An empty ``dim`` integrates to zeros. Integer inputs give floating results.

    Shape: ``y`` with ``dim`` removed.

    Raises:
        IndexError: ``dim`` out of range (also for 0-d ``y``).
        RuntimeError: bool inputs, a mismatched 1-D ``x``, a non-real ``dx``.

    Example:
        >>> import ember
        >>> ember.trapezoid(ember.tensor([1.0, 2.0, 3.0])).item()
        4.0
    """
    return _trapezoid("trapezoid", y, x, dx, dim)


@composite("trapz.x(Tensor y, Tensor? x=None, *, Scalar? dx=None, int dim=-1) -> Tensor",
           method=False)
def trapz(y: Tensor, x: Tensor | None = None, *, dx=None, dim: int = -1) -> Tensor:
    """Alias of :func:`trapezoid` (torch.trapz).

    Example:
        >>> ember.trapz(ember.tensor([1.0, 2.0, 3.0]))
        tensor(4.)
        >>> ember.trapz(ember.tensor([1.0, 2.0, 3.0]), dx=0.5)
        tensor(2.)
    """
    return _trapezoid("trapezoid", y, x, dx, dim)


@composite("cumulative_trapezoid.x(Tensor y, Tensor? x=None, *, Scalar? dx=None, int dim=-1) "
           "-> Tensor", method=False)
def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx=None,
                         dim: int = -1) -> Tensor:
    """Running trapezoidal integral of ``y`` along ``dim`` (see :func:`trapezoid`).

    Shape: ``y`` with ``dim`` one shorter (an empty ``dim`` stays empty).

    Raises:
        IndexError: 0-d ``y`` or ``dim`` out of range.
        RuntimeError: bool inputs, a mismatched 1-D ``x``, a non-real ``dx``.

    Example:
        >>> import ember
        >>> ember.cumulative_trapezoid(ember.tensor([1.0, 2.0, 3.0])).tolist()
        [1.5, 4.0]
    """
    if x is not None and dx is not None:
        raise TypeError("cumulative_trapezoid() received an invalid combination of arguments: "
                        "pass either `x` or `dx`, not both")
    if y.dim() == 0:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    d = _wrap(dim, y.dim())
    size = y.shape[d]
    pairs = narrow(y, d, 0, max(size - 1, 0)) + narrow(y, d, min(size, 1), max(size - 1, 0))
    if x is None:
        if y.dtype is dt.bool_:
            raise RuntimeError("cumulative_trapezoid: received a bool input for `y`, but bool "
                               "is not supported")
        step = _check_dx("cumulative_trapezoid", 1 if dx is None else dx)
        return cumsum(pairs * (step / 2.0), d)
    if y.dtype is dt.bool_ or x.dtype is dt.bool_:
        raise RuntimeError("cumulative_trapezoid: received a bool input for `x` or `y`, but "
                           "bool is not supported")
    spacing = _x_spacing("cumulative_trapezoid", y, x, d)
    return cumsum(spacing * pairs / 2.0, d)


# -- statistics ---------------------------------------------------------------------------------
def _check_weights(kind: str, w: Tensor, observations: int, integral: bool) -> None:
    if w.dim() > 1:
        raise RuntimeError(f"cov(): expected {kind} to have one or fewer dimensions but got "
                           f"{kind} with {w.dim()} dimensions")
    ok = (not w.dtype.is_floating_point and not w.dtype.is_complex and w.dtype is not dt.bool_
          ) if integral else w.dtype.is_floating_point
    if not ok:
        want = "integral" if integral else "floating point"
        raise RuntimeError(f"cov(): expected {kind} to have {want} dtype but got {kind} with "
                           f"{w.dtype.scalar_name} dtype")
    if w.numel() != observations:
        raise RuntimeError(f"cov(): expected {kind} to have the same numel as there are "
                           f"observations in the input but got {w.numel()} != {observations}")
    if observations and bool((w < 0).any()):
        raise RuntimeError(f"cov(): {kind} cannot be negative")


@composite("cov(Tensor self, *, int correction=1, Tensor? fweights=None, Tensor? aweights=None) "
           "-> Tensor")
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """Covariance matrix of the variables in the rows of ``input`` (observations in columns).

    ``fweights`` (integral) are observation counts and ``aweights`` (floating) importance
    weights; ``correction`` is subtracted from the (weighted) number of observations (1:
    Bessel's correction). Non-positive degrees of freedom warn and give inf/nan, as in torch.

    Shape: ``(V, N) -> (V, V)``; a 1-D input or a single variable gives a 0-d result.

    Raises:
        RuntimeError: more than 2 dims, bool input, malformed or negative weights, weights
            summing to zero.

    Example:
        >>> import ember
        >>> ember.cov(ember.tensor([1.0, 2.0, 4.0])).item() > 2.33
        True
    """
    if input.dim() > 2:
        raise RuntimeError("cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.dim()} dimensions")
    if input.dtype is dt.bool_:
        raise RuntimeError("cov(): bool dtype is not supported for input")
    x = reshape(input, (1, -1)) if input.dim() < 2 else input
    observations = x.shape[1]
    w = None
    if fweights is not None:
        _check_weights("fweights", fweights, observations, integral=True)
        w = fweights
    if aweights is not None:
        _check_weights("aweights", aweights, observations, integral=False)
        w = aweights if w is None else w * aweights
    if w is None:
        w_sum = scalar_tensor(observations, dtype=dt.int64, device=input.device)
    else:
        w_sum = sum(w)
        if not bool(w_sum != 0):
            raise RuntimeError("cov(): weights sum to zero, can't be normalized")
    avg = sum(x if w is None else x * w, 1) / w_sum
    if w is not None and correction != 0 and aweights is not None:
        norm_factor = w_sum - correction * sum(w * aweights) / w_sum
    else:
        norm_factor = w_sum - correction
    if bool(norm_factor <= 0):
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less "
                      "than the number of observations.", UserWarning, stacklevel=3)
        norm_factor = norm_factor * 0
    centred = x - unsqueeze(avg, 1)
    other = transpose(centred if w is None else centred * w, 0, 1)
    c = mm(centred, other.conj() if other.dtype.is_complex else other)
    return (c / norm_factor).squeeze()


@composite("corrcoef(Tensor self) -> Tensor")
def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in the rows of ``input``.

    The covariance (:func:`cov`) normalised by the standard deviations and clipped to
    ``[-1, 1]``; a single variable gives ``c / c`` (1, or nan for a zero/nan variance).

    Shape: ``(V, N) -> (V, V)``; 1-D input gives a 0-d result.

    Raises:
        RuntimeError: more than 2 dims (and :func:`cov`'s errors).

    Example:
        >>> import ember
        >>> ember.corrcoef(ember.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))[0, 1].item()
        -1.0
    """
    if input.dim() > 2:
        raise RuntimeError("corrcoef(): expected input to have two or fewer dimensions but got "
                           f"an input with {input.dim()} dimensions")
    c = cov(input)
    if c.dim() == 0:
        return c / c
    std = sqrt(c.diagonal())
    c = c / view(std, (-1, 1))
    c = c / view(std, (1, -1))
    if c.dtype.is_complex:  # torch clips the real and imaginary parts each
        from ember.ops.pointwise import complex as make_complex
        return make_complex(c.real.clamp(-1, 1), c.imag.clamp(-1, 1))
    return c.clamp(-1, 1)


# -- distances ------------------------------------------------------------------------------------
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
                "donot_use_mm_for_euclid_dist")


def _euclid_mm(x1: Tensor, x2: Tensor) -> Tensor:
    """Euclidean distances through one matmul: ``|a|^2 - 2 a.b + |b|^2`` (torch's mm path)."""
    n1 = sum(x1 * x1, -1, keepdim=True)                          # (..., R1, 1)
    n2 = sum(x2 * x2, -1, keepdim=True)                          # (..., R2, 1)
    a = cat([x1 * -2, n1, ones(n1.shape, dtype=n1.dtype)], -1)   # (..., R1, M+2)
    b = cat([x2, ones(n2.shape, dtype=n2.dtype), n2], -1)        # (..., R2, M+2)
    return sqrt(clamp_min(matmul(a, transpose(b, -1, -2)), 1e-30))


def _masked_pow(base: Tensor, exponent: float) -> Tensor:
    """``base ** exponent`` for ``base >= 0`` that is 0 with a zero gradient where base is 0."""
    positive = gt(base, 0)
    safe = where(positive, base, 1.0)
    return where(positive, pow(safe, exponent), 0.0)


def _cdist_direct(x1: Tensor, x2: Tensor, p: float) -> Tensor:
    diffs = abs(unsqueeze(x1, -2) - unsqueeze(x2, -3))           # (..., R1, R2, M)
    if p == 0:  # a count; still differentiable (zero gradients), as torch's CdistBackward0
        return sum(gt(diffs, 0).to(x1.dtype), -1) + sum(diffs * 0.0, -1)
    if p == math.inf:
        return amax(diffs, -1) if diffs.shape[-1] else sum(diffs, -1)
    if p == 1:
        return sum(diffs, -1)
    return _masked_pow(sum(_masked_pow(diffs, p), -1), 1.0 / p)


@composite("cdist(Tensor x1, Tensor x2, float p=2, str? compute_mode=None) -> Tensor",
           method=False)
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """p-norm distances between each pair of row vectors of ``x1`` and ``x2``.

    ``p=0`` counts differing coordinates, ``p=inf`` takes the largest difference. For ``p=2``
    ``compute_mode`` picks torch's matmul formula (``use_mm_for_euclid_dist``, or
    ``..._if_necessary`` when either side has more than 25 rows) or the direct differences
    (``donot_use_mm_for_euclid_dist``). Batch dims broadcast. Gradients are 0 where a distance
    is 0.

    Shape: ``(*B1, R1, M)``, ``(*B2, R2, M)`` -> ``(*broadcast(B1, B2), R1, R2)``.

    Raises:
        RuntimeError: fewer than 2 dims, different column counts or dtypes, non-floating
            dtypes, negative ``p``.
        ValueError: an unknown ``compute_mode``.

    Example:
        >>> import ember
        >>> ember.cdist(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]])).item()
        5.0
    """
    if compute_mode is None:
        compute_mode = _CDIST_MODES[0]
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    for name, t in (("X1", x1), ("X2", x2)):
        if t.dim() < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{t.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: "
                               f"{t.dtype.scalar_name}")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype.scalar_name} but found "
                           f"{x2.dtype.scalar_name}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    batch = tuple(broadcast_shapes(tuple(x1.shape[:-2]), tuple(x2.shape[:-2])))
    x1 = expand(x1, batch + tuple(x1.shape[-2:]))
    x2 = expand(x2, batch + tuple(x2.shape[-2:]))
    r1, r2 = x1.shape[-2], x2.shape[-2]
    use_mm = compute_mode == _CDIST_MODES[1] or (compute_mode == _CDIST_MODES[0]
                                                 and (r1 > 25 or r2 > 25))
    if p == 2 and use_mm and r1 and r2 and x1.shape[-1]:
        return _euclid_mm(x1, x2)
    return _cdist_direct(x1, x2, float(p))


@composite("renorm(Tensor self, Scalar p, int dim, Scalar maxnorm) -> Tensor")
def renorm(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """Rescale each slice ``input.select(dim, i)`` whose ``p``-norm exceeds ``maxnorm``.

    Such a slice is multiplied by ``maxnorm / (norm + 1e-7)``; the others are unchanged.

    Shape: as ``input`` (at least 2 dims).

    Raises:
        RuntimeError: ``p <= 0``, ``maxnorm < 0``, fewer than 2 dims.
        IndexError: ``dim`` out of range.

    Example:
        >>> import ember
        >>> ember.renorm(ember.tensor([[3.0, 4.0], [0.3, 0.4]]), 2, 0, 1.0)[1].tolist()
        [0.30000001192092896, 0.4000000059604645]
    """
    if not p > 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} "
                           "dimensions")
    d = _wrap(dim, input.dim())
    others = tuple(i for i in range(input.dim()) if i != d)
    norm = linalg_vector_norm(input, p, others, keepdim=True)
    factor = where(gt(norm, maxnorm), maxnorm / (norm + 1e-7), 1.0)
    return input * factor


# -- membership and combinatorics ---------------------------------------------------------------
@composite("isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, "
           "bool invert=False) -> Tensor", method=False)
def isin(elements, test_elements, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each element of ``elements`` occurs in ``test_elements`` (bool).

    Either argument may be a Python scalar (not both); values compare after type promotion;
    nan is never found. ``assume_unique`` is accepted for compatibility and changes nothing;
    ``invert=True`` negates the result.

    Shape: ``elements``' shape (0-d for a scalar ``elements``).

    Raises:
        RuntimeError: bool inputs.

    Example:
        >>> import ember
        >>> ember.isin(ember.tensor([1, 2, 3]), ember.tensor([2, 5])).tolist()
        [False, True, False]
    """
    for t in (elements, test_elements):
        if (t.dtype if isinstance(t, Tensor) else dt.scalar_dtype(t)) is dt.bool_:
            raise RuntimeError("Unsupported input type encountered for isin(): Bool")
    if not isinstance(elements, Tensor):
        elements = scalar_tensor(elements, dtype=dt.scalar_dtype(elements),
                                 device=test_elements.device)
    if isinstance(test_elements, Tensor):
        found = any(eq(unsqueeze(elements, -1), flatten(test_elements)), -1)
    else:
        found = eq(elements, test_elements)
    return found.logical_not() if invert else found


def _tensor_args(args: tuple) -> list:
    if len(args) == 1 and isinstance(args[0], list | tuple):
        return list(args[0])
    return list(args)


@composite("cartesian_prod(Tensor[] tensors) -> Tensor", method=False)
def cartesian_prod(*tensors: Tensor) -> Tensor:
    """Cartesian product of 1-D tensors, one tuple per row (``itertools.product`` order).

    A single tensor is returned as is. All inputs share one dtype.

    Shape: ``(N1 * N2 * ... * Nk, k)``; ``(N1,)`` for one input.

    Raises:
        RuntimeError: no inputs, an input that is not 1-D, mixed dtypes.

    Example:
        >>> import ember
        >>> ember.cartesian_prod(ember.tensor([1, 2]), ember.tensor([3, 4])).tolist()
        [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    tensors = _tensor_args(tensors)
    for t in tensors:
        if t.dim() != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    grids = meshgrid(*tensors, indexing="ij")
    return stack([flatten(g) for g in grids], 1)


@composite("combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor",
           method=False)
def combinations(input: Tensor, r: int = 2, with_replacement: bool = False) -> Tensor:
    """Length-``r`` combinations of the elements of a 1-D tensor (``itertools`` order).

    ``with_replacement=True`` allows repeated elements. ``r=0`` gives an empty 1-D tensor.

    Shape: ``(C, r)`` where C is the number of combinations.

    Raises:
        RuntimeError: ``input`` not 1-D, negative ``r``.

    Example:
        >>> import ember
        >>> ember.combinations(ember.tensor([1, 2, 3])).tolist()
        [[1, 2], [1, 3], [2, 3]]
    """
    if input.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return zeros((0,), dtype=input.dtype, device=input.device)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = [i for combo in pick(range(input.shape[0]), r) for i in combo]
    index = tensor(rows, dtype=dt.int64, device=input.device)
    return reshape(input.index_select(0, index), (-1, r))                 # (C * r,) -> (C, r)


@composite("block_diag(Tensor[] tensors) -> Tensor", method=False)
def block_diag(*tensors: Tensor) -> Tensor:
    """Block-diagonal matrix with the inputs on its diagonal, zeros elsewhere.

    A 0-d input is a ``(1, 1)`` block and a 1-D input of size n a ``(1, n)`` block; the result
    has the promoted dtype of all inputs. No inputs give a ``(1, 0)`` tensor.

    Shape: ``(sum of rows, sum of columns)``.

    Raises:
        RuntimeError: an input with more than 2 dims.

    Example:
        >>> import ember
        >>> ember.block_diag(ember.tensor([[1]]), ember.tensor([2, 3])).tolist()
        [[1, 0, 0], [0, 2, 3]]
    """
    tensors = _tensor_args(tensors)
    for i, t in enumerate(tensors):
        if t.dim() > 2:
            raise RuntimeError("torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                               f"Input {i} has {t.dim()} dimensions")
    if not tensors:
        return zeros((1, 0))
    out_dtype = result_type(*tensors) if len(tensors) > 1 else tensors[0].dtype
    device = tensors[0].device
    blocks = [reshape(t, (1, -1) if t.dim() < 2 else tuple(t.shape)).to(out_dtype)
              for t in tensors]
    total = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        h, w = b.shape
        parts = [zeros((h, left), dtype=out_dtype, device=device), b,
                 zeros((h, total - left - w), dtype=out_dtype, device=device)]
        rows.append(cat(parts, 1))                                    # (h, total)
        left += w
    return cat(rows, 0)


@composite("vander(Tensor x, int? N=None, bool increasing=False) -> Tensor", method=False)
def vander(x: Tensor, N: int | None = None, increasing: bool = False) -> Tensor:
    """Vandermonde matrix: column j is ``x ** (N - 1 - j)`` (``x ** j`` when increasing).

    Integer and bool inputs give int64 (powers accumulate with cumprod); ``N`` defaults to
    ``len(x)``.

    Shape: ``(len(x), N)``.

    Raises:
        RuntimeError: ``x`` not 1-D, negative ``N``.

    Example:
        >>> import ember
        >>> ember.vander(ember.tensor([2, 3]), N=3).tolist()
        [[4, 2, 1], [9, 3, 1]]
    """
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    out_dtype = dt.promote_types(x.dtype, dt.int64)
    m = x.shape[0]
    cols = [ones((m, min(n, 1)), dtype=out_dtype, device=x.device)]
    if n > 1:
        powers = expand(unsqueeze(x.to(out_dtype), 1), (m, n - 1))          # (m, n - 1)
        cols.append(cumprod(powers, 1))
    result = cat(cols, 1)
    return result if increasing else flip(result, (1,))


_CHAIN_WARNED = [False]


@composite("chain_matmul(Tensor[] matrices) -> Tensor", method=False)
def chain_matmul(*matrices: Tensor) -> Tensor:
    """Matrix product of a chain of 2-D tensors (deprecated in torch: ``linalg.multi_dot``).

    The product is evaluated in the order that needs the fewest scalar multiplications; one
    matrix is returned as a copy. Warns once that it is deprecated, as torch does.

    Shape: ``(a, b), (b, c), ..., (y, z) -> (a, z)``.

    Raises:
        RuntimeError: no matrices, an input that is not 2-D, mismatched inner sizes.

    Example:
        >>> import ember, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     ember.chain_matmul(ember.ones(2, 3), ember.ones(3, 1)).tolist()
        [[3.0], [3.0]]
    """
    if not _CHAIN_WARNED[0]:
        _CHAIN_WARNED[0] = True
        warnings.warn("torch.chain_matmul is deprecated and will be removed in a future PyTorch "
                      "release. Use torch.linalg.multi_dot instead, which accepts a list of two "
                      "or more tensors rather than multiple parameters.", UserWarning,
                      stacklevel=3)
    mats = _tensor_args(matrices)
    for m in mats:
        if m.dim() != 2:
            raise RuntimeError(f"Tensor dimension is {m.dim()}, expected 2 instead.")
    if not mats:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    if len(mats) == 1:
        return clone(mats[0])
    for i in range(len(mats) - 1):
        if mats[i].shape[1] != mats[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes "
                               f"{list(mats[i].shape)} and {list(mats[i + 1].shape)} cannot be "
                               "multiplied")
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    return _chain(mats, _chain_order(dims), 0, len(mats) - 1)


def _chain_order(dims: list[int]) -> dict:
    """Split points of the cheapest parenthesisation (the classic O(n^3) dynamic program)."""
    n = len(dims) - 1
    cost = {(i, i): 0 for i in range(n)}
    split = {}
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i, j], split[i, j] = min(
                (cost[i, k] + cost[k + 1, j] + dims[i] * dims[k + 1] * dims[j + 1], k)
                for k in range(i, j))
    return split


def _chain(mats: list, split: dict, i: int, j: int) -> Tensor:
    if i == j:
        return mats[i]
    k = split[i, j]
    return mm(_chain(mats, split, i, k), _chain(mats, split, k + 1, j))


# -- pointwise helpers ----------------------------------------------------------------------------
def _require_float(kernel: str, *tensors: Tensor) -> dt.DType:
    res = result_type(*tensors)
    if not res.is_floating_point:
        raise _not_implemented(kernel, res)
    return res


def _logaddexp_complex(a: Tensor, b: Tensor, res: dt.DType) -> Tensor:
    """torch's complex log-add-exp: shifted by the operand of larger real part (the second on
    ties), ``log1p(exp(min - max)) + max``; a NaN part anywhere gives NaN+NaNj; equal infinite
    real parts give the smaller operand (-inf) or ``log(exp(min) + exp(max))`` (+inf)."""
    a, b = a.to(res), b.to(res)
    swap = a.real < b.real
    lo, hi = where(swap, a, b), where(swap, b, a)
    out = log1p(exp(lo - hi)) + hi
    lo_re, hi_re = lo.real, hi.real
    infinite = isinf(lo_re) & eq(lo_re, hi_re)
    out = where(infinite & (lo_re < 0), lo, out)
    out = where(infinite & (lo_re > 0), log(exp(lo) + exp(hi)), out)
    nan = isnan(a.real) | isnan(a.imag) | isnan(b.real) | isnan(b.imag)
    return where(nan, complex(math.nan, math.nan), out)


def _logaddexp(kernel: str, a: Tensor, b: Tensor, exp_fn, scale: float) -> Tensor:
    if kernel == "logaddexp_cpu" and result_type(a, b).is_complex:
        return _logaddexp_complex(a, b, result_type(a, b))
    _require_float(kernel, a, b)
    big = maximum(a, b)
    # log(e^a + e^b) = max + log1p(e^-|a-b|); equal infinities would give inf - inf = nan
    out = big + log1p(exp_fn(-abs(a - b))) * scale
    return where(isinf(a) & eq(a, b), a, out)


@composite("logaddexp(Tensor self, Tensor other) -> Tensor")
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` without overflow, elementwise with broadcasting.

    Equal infinities give that infinity; nan propagates. Floating and complex inputs (complex
    as torch: shifted by the operand of larger real part; ``logaddexp2`` refuses complex).

    Raises:
        NotImplementedError: integer or bool inputs (torch's ``"logaddexp_cpu"`` message).

    Example:
        >>> import ember
        >>> round(ember.logaddexp(ember.tensor(0.0), ember.tensor(0.0)).item(), 4)
        0.6931
    """
    return _logaddexp("logaddexp_cpu", input, other, exp, 1.0)


@composite("logaddexp2(Tensor self, Tensor other) -> Tensor")
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)`` without overflow (see :func:`logaddexp`).

    Example:
        >>> import ember
        >>> ember.logaddexp2(ember.tensor(1.0), ember.tensor(1.0)).item()
        2.0
    """
    return _logaddexp("logaddexp2_cpu", input, other, exp2, 1.0 / math.log(2.0))


@composite("sinc(Tensor self) -> Tensor")
def sinc(input: Tensor) -> Tensor:
    """Normalised sinc ``sin(pi x) / (pi x)``, 1 at 0; integer inputs give the default float.

    Example:
        >>> import ember
        >>> ember.sinc(ember.tensor([0.0, 0.5])).tolist()[0]
        1.0
    """
    inexact = input.dtype.is_floating_point or input.dtype.is_complex
    x = input if inexact else input.to(dt.get_default_dtype())
    zero = eq(x, 0)
    scaled = where(zero, 1.0, x) * math.pi
    return where(zero, 1.0, sin(scaled) / scaled)


@composite("ldexp.Tensor(Tensor self, Tensor other) -> Tensor")
def ldexp(input: Tensor, other: Tensor) -> Tensor:
    """``input * 2 ** other``; integer operands give the default float dtype.

    Example:
        >>> import ember
        >>> ember.ldexp(ember.tensor([1.0]), ember.tensor([3])).tolist()
        [8.0]
    """
    return input * pow(2.0, other)


FrexpResult = namedtuple("frexp", ("mantissa", "exponent"))
FrexpResult.__module__ = "ember.return_types"


@composite("frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)")
def frexp(input: Tensor) -> FrexpResult:
    """Split ``input`` into ``mantissa * 2 ** exponent`` with ``0.5 <= |mantissa| < 1``.

    Zeros, infinities and nan give exponent 0 and mantissa equal to the input. The exponent
    is int32; the mantissa has ``input``'s dtype and carries the gradient ``grad / 2**exp``.

    Raises:
        RuntimeError: non-floating input.

    Example:
        >>> import ember
        >>> m, e = ember.frexp(ember.tensor([8.0]))
        >>> m.tolist(), e.tolist()
        ([0.5], [4])
    """
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    x = input.detach()
    finite = x.isfinite() & (x != 0)
    mag = where(finite, abs(x), 1.0)
    e = floor(log2(mag)) + 1
    # log2 may round across a power of two; one correction step each way makes it exact
    m = _scale_down(mag, e)
    e = where(m >= 1, e + 1, where(m < 0.5, e - 1, e))
    e = where(finite, e, 0.0)
    return FrexpResult(_scale_down(input, e), e.to(dt.int32))


def _scale_down(x: Tensor, e: Tensor) -> Tensor:
    """``x / 2**e`` for integral ``e``, exact: two power-of-two factors, each inside the dtype's
    range (one factor would overflow for the largest values and underflow for subnormals)."""
    half = floor(e / 2)
    return x / pow(2.0, half) / pow(2.0, e - half)


def _gcd(kernel: str, a: Tensor, b: Tensor) -> Tensor:
    res = result_type(a, b)
    if res.is_floating_point or res.is_complex or res is dt.bool_:
        raise _not_implemented(kernel, res)
    a, b = abs(a.to(res)), abs(b.to(res))
    a, b = broadcast_tensors_pair(a, b)
    # Euclid, all elements at once: (a, b) <- (b % a, a) until every a is 0
    while bool(any(a != 0)):
        nonzero = a != 0
        safe = where(nonzero, a, 1)
        a, b = where(nonzero, remainder(b, safe), 0), where(nonzero, a, b)
    return b


def broadcast_tensors_pair(a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
    shape = broadcast_shapes(tuple(a.shape), tuple(b.shape))
    return expand(a, shape), expand(b, shape)


@composite("gcd(Tensor self, Tensor other) -> Tensor")
def gcd(input: Tensor, other: Tensor) -> Tensor:
    """Greatest common divisor, elementwise with broadcasting, always >= 0 (``gcd(0, 0) = 0``).

    Raises:
        NotImplementedError: floating or bool inputs (torch's ``"gcd_cpu"`` message).

    Example:
        >>> import ember
        >>> ember.gcd(ember.tensor([12, -18]), ember.tensor([18, 12])).tolist()
        [6, 6]
    """
    return _gcd("gcd_cpu", input, other)


@composite("lcm(Tensor self, Tensor other) -> Tensor")
def lcm(input: Tensor, other: Tensor) -> Tensor:
    """Least common multiple, elementwise with broadcasting, >= 0 (0 when either is 0).

    Raises:
        NotImplementedError: floating or bool inputs (torch's ``"lcm_cpu"`` message).

    Example:
        >>> import ember
        >>> ember.lcm(ember.tensor([4, 6]), ember.tensor([6, 0])).tolist()
        [12, 0]
    """
    g = _gcd("lcm_cpu", input, other)
    res = g.dtype
    zero = eq(g, 0)
    safe = where(zero, 1, g)
    return where(zero, 0, abs((input.to(res) // safe) * other.to(res)))


# -- in-place forms ------------------------------------------------------------------------
def _assign(self: Tensor, fn, *args, kernel: str | None = None) -> Tensor:
    """``self`` overwritten with ``fn(self, *args)`` (torch's in-place variant checks). When
    autograd records, ``fn`` reads a clone, so what it saves is not the tensor overwritten."""
    result = fn(clone(self) if self.requires_grad else self, *args)
    if kernel is not None and not dt.can_cast(result.dtype, self.dtype):
        raise RuntimeError(f"{kernel} can't be cast to the desired output type "
                           f"{_TN[self.dtype.name]}")
    check_inplace(self, tuple(result.shape), result.dtype)
    return copy_(self, result)


@composite("sinc_(Tensor(a!) self) -> Tensor(a!)")
def sinc_(input: Tensor) -> Tensor:
    """In-place :func:`sinc` (``Tensor.sinc_``); integer tensors cannot hold the result.

    Example:
        >>> x = ember.tensor([0.0, 0.5])
        >>> ember.sinc_(x) is x, x
        (True, tensor([1.0000, 0.6366]))
    """
    return _assign(input, sinc)


@composite("ldexp_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`ldexp` (``Tensor.ldexp_``).

    Example:
        >>> x = ember.tensor([1.0, 3.0])
        >>> x.ldexp_(ember.tensor([2, -1]))
        tensor([4.0000, 1.5000])
    """
    return _assign(input, ldexp, other, kernel="ldexp")


@composite("gcd_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`gcd` (``Tensor.gcd_``).

    Example:
        >>> x = ember.tensor([12, 9])
        >>> x.gcd_(ember.tensor([8, 6]))
        tensor([4, 3])
    """
    return _assign(input, gcd, other)


@composite("lcm_(Tensor(a!) self, Tensor other) -> Tensor(a!)")
def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """In-place :func:`lcm` (``Tensor.lcm_``).

    Example:
        >>> x = ember.tensor([4, 3])
        >>> x.lcm_(ember.tensor([6, 5]))
        tensor([12, 15])
    """
    return _assign(input, lcm, other)


@composite("renorm_(Tensor(a!) self, Scalar p, int dim, Scalar maxnorm) -> Tensor(a!)")
def renorm_(input: Tensor, p, dim: int, maxnorm) -> Tensor:
    """In-place :func:`renorm` (``Tensor.renorm_``; no ``ember.renorm_``, as in torch).

    Example:
        >>> x = ember.tensor([[3.0, 4.0], [0.3, 0.4]])
        >>> x.renorm_(2, 0, 1.0)  # rows with a 2-norm above 1 scaled down to 1
        tensor([[0.6000, 0.8000],
                [0.3000, 0.4000]])
    """
    return _assign(input, renorm, p, dim, maxnorm)
