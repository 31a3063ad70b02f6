"""``ember.masked``: torch.masked's reductions and normalisations with a boolean ``mask``.

Masked-out elements are replaced by the operation's identity (0 for sums, 1 for products,
-inf for maxima and softmax, ...) before the ordinary operator runs, so the results (nan for
a mean over nothing, -inf for its maximum) and the gradients (zero at masked-out elements)
are torch's. ``mask`` broadcasts to ``input``; ``None`` keeps everything.
"""

from __future__ import annotations

import math

from ember.core import dtype as dt
from ember.ops.creation import ones_like
from ember.ops.numeric import logaddexp as _logaddexp
from ember.ops.pointwise import where
from ember.ops.reduction import linalg_vector_norm
from ember.tensor import Tensor

__all__ = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "log_softmax",
           "logaddexp", "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax",
           "softmin", "std", "sum", "var"]


def _mask(input: Tensor, mask) -> Tensor:
    if mask is None:
        return ones_like(input, dtype=dt.bool_)
    if mask.dtype is not dt.bool_:
        raise ValueError(f"masked: mask must be a bool tensor, got {mask.dtype}")
    return mask.expand(input.shape)


def _fill(input: Tensor, mask, value) -> Tensor:
    return where(_mask(input, mask), input, value)


def _cast(input: Tensor, dtype) -> Tensor:
    return input if dtype is None else input.to(dtype)


def _extreme(input: Tensor, low: bool, mask=None):
    if input.dtype.is_complex:
        if mask is not None:  # torch.masked looks the fill up with iinfo, which refuses
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        return 0  # unused: the reduction itself refuses complex input, as torch's
    if input.dtype.is_floating_point:
        return -math.inf if low else math.inf
    info = dt.iinfo(input.dtype)
    return info.min if low else info.max


def _dims(input: Tensor, dim):
    return tuple(range(input.ndim)) if dim is None else dim


def sum(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:  # noqa: A001
    """Sum over ``dim`` of the elements where ``mask`` is true (``torch.masked.sum``).

    Example:
        >>> import ember.masked
        >>> x, m = ember.tensor([[1.0, 2.0], [3.0, 4.0]]), ember.tensor([[True, False]])
        >>> ember.masked.sum(x, 1, mask=m).tolist()
        [1.0, 3.0]
    """
    return _fill(_cast(input, dtype), mask, 0).sum(_dims(input, dim), keepdim=keepdim)


def prod(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """Product over ``dim`` of the unmasked elements (``torch.masked.prod``).

    Example:
        >>> import ember.masked
        >>> ember.masked.prod(ember.tensor([2.0, 3.0]), 0, mask=ember.tensor([True, False]))
        tensor(2.)
    """
    x = _fill(_cast(input, dtype), mask, 1)
    if dim is None:
        return x.prod() if not keepdim else x.reshape(-1).prod(0).reshape([1] * x.ndim)
    for d in sorted((dim,) if isinstance(dim, int) else dim, reverse=True):
        x = x.prod(d, keepdim=keepdim)
    return x


def amax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """Maximum over ``dim`` of the unmasked elements; -inf (the dtype's minimum) where none.

    Example:
        >>> import ember.masked
        >>> ember.masked.amax(ember.tensor([2.0, 3.0]), 0, mask=ember.tensor([True, False]))
        tensor(2.)
    """
    x = _cast(input, dtype)
    return _fill(x, mask, _extreme(x, True, mask)).amax(_dims(x, dim), keepdim=keepdim)


def amin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """Minimum over ``dim`` of the unmasked elements; inf (the dtype's maximum) where none.

    Example:
        >>> import ember.masked
        >>> ember.masked.amin(ember.tensor([2.0, 3.0]), 0, mask=ember.tensor([False, True]))
        tensor(3.)
    """
    x = _cast(input, dtype)
    return _fill(x, mask, _extreme(x, False, mask)).amin(_dims(x, dim), keepdim=keepdim)


def argmax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """Index of the largest unmasked element along ``dim``, in ``input``'s dtype (as torch).

    Example:
        >>> import ember.masked
        >>> ember.masked.argmax(ember.tensor([5.0, 3.0]), 0, mask=ember.tensor([False, True]))
        tensor(1.)
    """
    x = _cast(input, dtype)
    out = _fill(x, mask, _extreme(x, True, mask)).argmax(dim, keepdim=keepdim)
    return out.to(x.dtype)


def argmin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """Index of the smallest unmasked element along ``dim``, in ``input``'s dtype.

    Example:
        >>> import ember.masked
        >>> ember.masked.argmin(ember.tensor([1.0, 3.0]), 0, mask=ember.tensor([False, True]))
        tensor(1.)
    """
    x = _cast(input, dtype)
    out = _fill(x, mask, _extreme(x, False, mask)).argmin(dim, keepdim=keepdim)
    return out.to(x.dtype)


def _count(input: Tensor, dim, keepdim: bool, mask) -> Tensor:
    return _mask(input, mask).sum(_dims(input, dim), keepdim=keepdim)


def mean(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask=None) -> Tensor:
    """Mean of the unmasked elements over ``dim``; nan where there are none.

    Example:
        >>> import ember.masked
        >>> ember.masked.mean(ember.tensor([1.0, 3.0, 9.0]), 0,
        ...                   mask=ember.tensor([True, True, False]))
        tensor(2.)
    """
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, dim, keepdim, mask)


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None,
           mask=None) -> Tensor:
    """Lower median of the unmasked elements along ``dim``; nan where there are none.

    Example:
        >>> import ember.masked
        >>> ember.masked.median(ember.tensor([1.0, 3.0, 9.0]), 0,
        ...                     mask=ember.tensor([True, True, False]))
        tensor(1.)
    """
    x = _cast(input, dtype)
    return _fill(x, mask, math.nan).nanmedian(dim, keepdim=keepdim)[0]


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None,
              mask=None) -> Tensor:
    """``log(sum(exp(x)))`` of the unmasked elements; -inf where there are none.

    Example:
        >>> import ember.masked
        >>> ember.masked.logsumexp(ember.tensor([0.0, 5.0]), 0, mask=ember.tensor([True, False]))
        tensor(0.)
    """
    x = _cast(input, dtype)
    return _fill(x, mask, -math.inf).logsumexp(_dims(x, dim), keepdim=keepdim)


def norm(input: Tensor, ord=2.0, dim=None, *, keepdim: bool = False, dtype=None,
         mask=None) -> Tensor:
    """Vector ``ord``-norm of the unmasked elements (masked-out ones count as 0, or as inf
    for ``ord=-inf``).

    Example:
        >>> import ember.masked
        >>> ember.masked.norm(ember.tensor([3.0, 4.0, 9.0]), 2.0, 0,
        ...                   mask=ember.tensor([True, True, False]))
        tensor(5.)
    """
    x = _cast(input, dtype)
    fill = math.inf if ord == -math.inf else 0
    return linalg_vector_norm(_fill(x, mask, fill), ord, _dims(x, dim), keepdim=keepdim)


def var(input: Tensor, dim=None, unbiased: bool | None = None, *, keepdim: bool = False,
        dtype=None, mask=None) -> Tensor:
    """Variance of the unmasked elements (``unbiased``: divided by count - 1); nan where the
    divisor is not positive.

    Example:
        >>> import ember.masked
        >>> ember.masked.var(ember.tensor([1.0, 3.0, 9.0]), 0, False,
        ...                  mask=ember.tensor([True, True, False]))
        tensor(1.)
    """
    x = _cast(input, dtype)
    m = _mask(x, mask)
    count = _count(x, dim, True, m)
    centre = sum(x, dim, keepdim=True, mask=m) / count
    d = x - centre
    sq = d * d.conj() if d.is_complex() else d ** 2  # |d|^2, kept complex as torch.masked
    total = where(m, sq, 0).sum(_dims(x, dim), keepdim=keepdim)
    count = count if keepdim else count.squeeze(_dims(x, dim))
    divisor = count - 1 if unbiased or unbiased is None else count
    return where(divisor > 0, total / divisor.to(total.dtype), math.nan)


def std(input: Tensor, dim=None, unbiased: bool | None = None, *, keepdim: bool = False,
        dtype=None, mask=None) -> Tensor:
    """Square root of :func:`var`.

    Example:
        >>> import ember.masked
        >>> ember.masked.std(ember.tensor([1.0, 3.0, 9.0]), 0, False,
        ...                  mask=ember.tensor([True, True, False]))
        tensor(1.)
    """
    return var(input, dim, unbiased, keepdim=keepdim, dtype=dtype, mask=mask).sqrt()


def softmax(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """Softmax along ``dim`` over the unmasked elements (0 at the others; nan where none).

    Example:
        >>> import ember.masked
        >>> ember.masked.softmax(ember.tensor([1.0, 1.0, 5.0]), 0,
        ...                      mask=ember.tensor([True, True, False])).tolist()
        [0.5, 0.5, 0.0]
    """
    x = _cast(input, dtype)
    return _fill(x, mask, _extreme(x, True, mask)).softmax(dim)


def log_softmax(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """Log-softmax along ``dim`` over the unmasked elements (-inf at the others).

    Example:
        >>> import ember.masked
        >>> ember.masked.log_softmax(ember.tensor([1.0, 1.0, 5.0]), 0,
        ...                          mask=ember.tensor([True, True, False]))[0].item() < 0
        True
    """
    x = _cast(input, dtype)
    return _fill(x, mask, _extreme(x, True, mask)).log_softmax(dim)


def softmin(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """Softmin along ``dim`` over the unmasked elements.

    Example:
        >>> import ember.masked
        >>> ember.masked.softmin(ember.tensor([1.0, 1.0, 5.0]), 0,
        ...                      mask=ember.tensor([True, True, False])).tolist()
        [0.5, 0.5, 0.0]
    """
    x = _cast(input, dtype)
    return _fill(-x, mask, _extreme(x, True, mask)).softmax(dim)


def cumsum(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """Cumulative sum along ``dim`` with masked-out elements counted as 0.

    Example:
        >>> import ember.masked
        >>> ember.masked.cumsum(ember.tensor([1.0, 2.0, 3.0]), 0,
        ...                     mask=ember.tensor([True, False, True])).tolist()
        [1.0, 1.0, 4.0]
    """
    return _fill(_cast(input, dtype), mask, 0).cumsum(dim)


def cumprod(input: Tensor, dim: int, *, dtype=None, mask=None) -> Tensor:
    """Cumulative product along ``dim`` with masked-out elements counted as 1.

    Example:
        >>> import ember.masked
        >>> ember.masked.cumprod(ember.tensor([2.0, 5.0, 3.0]), 0,
        ...                      mask=ember.tensor([True, False, True])).tolist()
        [2.0, 2.0, 6.0]
    """
    return _fill(_cast(input, dtype), mask, 1).cumprod(dim)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None,
              mask=None) -> Tensor:
    """Unmasked elements divided by their masked ``ord``-norm along ``dim`` (0 elsewhere).

    Example:
        >>> import ember.masked
        >>> ember.masked.normalize(ember.tensor([3.0, 4.0, 9.0]), 2.0, 0,
        ...                        mask=ember.tensor([True, True, False])).tolist()
        [0.6000000238418579, 0.800000011920929, 0.0]
    """
    x = _cast(input, dtype)
    n = norm(x, ord, dim, keepdim=True, mask=mask)
    return _fill(x, mask, 0) / n.clamp(min=eps)


def logaddexp(input: Tensor, other: Tensor, *, dtype=None, input_mask=None,
              other_mask=None) -> Tensor:
    """``log(exp(input) + exp(other))`` with masked-out elements of either taken as -inf.

    Example:
        >>> import ember.masked
        >>> ember.masked.logaddexp(ember.tensor([0.0]), ember.tensor([0.0]),
        ...                        other_mask=ember.tensor([False]))
        tensor([0.])
    """
    x, y = _cast(input, dtype), _cast(other, dtype)
    return _logaddexp(_fill(x, input_mask, _extreme(x, True, input_mask)),
                      _fill(y, other_mask, _extreme(y, True, other_mask)))
