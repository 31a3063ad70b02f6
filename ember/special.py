"""``ember.special``: the ``torch.special`` namespace (re-exports and a few composites).

Most names are ember's top-level functions under torch.special's spelling (``expit`` is
``sigmoid``, ``gammaln`` is ``lgamma``, ``multigammaln`` is ``mvlgamma``, ...); ``entr``,
``ndtr``, ``log_ndtr``, ``xlog1py``, ``i1``, ``i0e`` and ``i1e`` are small composites of ember
operators, so they differentiate and run on every backend. Bessel, zeta and orthogonal
polynomial families are not built.
"""

from __future__ import annotations

import math

from ember.ops.nn_ops import log_softmax, softmax
from ember.ops.pointwise import (
    digamma,
    erf,
    erfc,
    erfinv,
    exp2,
    expm1,
    lgamma,
    log1p,
    logit,
    where,
)
from ember.ops.pointwise import round as round  # noqa: A004
from ember.ops.pointwise import sigmoid as expit
from ember.ops.reduction import logsumexp
from ember.ops.special import _i1, i0, mvlgamma, polygamma, xlogy
from ember.tensor import Tensor

__all__ = ["digamma", "psi", "erf", "erfc", "erfinv", "exp2", "expit", "expm1", "gammaln",
           "i0", "i0e", "i1", "i1e", "log1p", "log_softmax", "logit", "logsumexp",
           "multigammaln", "polygamma", "round", "softmax", "xlogy", "entr", "ndtr", "log_ndtr",
           "xlog1py"]

psi = digamma
gammaln = lgamma
multigammaln = mvlgamma


def _float(x: Tensor) -> Tensor:
    from ember.core import dtype as dt
    return x if x.dtype.is_floating_point else x.to(dt.get_default_dtype())


def entr(input: Tensor) -> Tensor:
    """Entropy terms ``-x log x``: 0 at 0, ``-inf`` for negative ``x`` (``special.entr``)."""
    x = _float(input)
    value = where(x > 0, -xlogy(x, x), 0.0)
    return where(x < 0, -math.inf, value)


def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF ``(1 + erf(x / sqrt 2)) / 2`` (``special.ndtr``)."""
    return (1 + erf(_float(input) * (1 / math.sqrt(2)))) * 0.5


def log_ndtr(input: Tensor) -> Tensor:
    """``log(ndtr(x))``: through ``erfc`` down to -10 (float32) or -20 (float64), below by the
    asymptotic series ``-x**2/2 - log(-x) - log(2 pi)/2 + log(1 - 1/x**2 + 3/x**4 - ...)``.

    Raises:
        NotImplementedError: half-precision input (as torch's kernel).
    """
    from ember.core import dtype as dt
    from ember.ops.pointwise import not_implemented
    if input.dtype in (dt.float16, dt.bfloat16):
        raise not_implemented("log_ndtr_cpu", input.dtype)
    x = _float(input)
    cut = -10.0 if x.dtype is dt.float32 else -20.0
    direct = (erfc(where(x < cut, 0.0, x) * (-1 / math.sqrt(2))) * 0.5).log()
    t = where(x < cut, x, cut)
    inv2 = (t * t).reciprocal()
    series = 1 - inv2 * (1 - inv2 * (3 - inv2 * (15 - inv2 * 105)))
    tail = -(t * t) * 0.5 - (-t).log() - 0.5 * math.log(2 * math.pi) + series.log()
    return where(x < cut, tail, direct)


def xlog1py(input, other) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` and NaN where ``other`` is NaN."""
    from ember.ops._promotion import Promotion, promoted_dtype
    from ember.ops.special import _device_of, _tensor_of
    _, res = promoted_dtype(Promotion.INT_TO_FLOAT, input, other)
    device = _device_of(input, other)
    x, y = _tensor_of(input, res, device), _tensor_of(other, res, device)
    value = where(x == 0, 0.0, x * log1p(y))
    return where(y.isnan(), y, value)


def i1(input: Tensor) -> Tensor:
    """Modified Bessel function of the first kind, order one (``special.i1``)."""
    return _i1(_float(input))


def i0e(input: Tensor) -> Tensor:
    """Exponentially scaled ``i0``: ``i0(x) * exp(-|x|)``."""
    x = _float(input)
    return i0(x) * (-x.abs()).exp()


def i1e(input: Tensor) -> Tensor:
    """Exponentially scaled ``i1``: ``i1(x) * exp(-|x|)``."""
    x = _float(input)
    return _i1(x) * (-x.abs()).exp()
