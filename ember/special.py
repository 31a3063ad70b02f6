"""``ember.special``: the ``torch.special`` namespace.

Most names are ember's top-level functions under torch.special's spelling (``expit`` is
``sigmoid``, ``gammaln`` is ``lgamma``, ``multigammaln`` is ``mvlgamma``, ``gammainc`` is
``igamma``, ...). The Bessel, Airy, zeta, incomplete gamma and orthogonal polynomial
functions, ``erfcx``, ``ndtri``, ``i1``, ``i0e`` and ``i1e`` are operators of
ember.ops.special (NOTE [torch.special operators]); ``entr``, ``ndtr``, ``log_ndtr`` and
``xlog1py`` are composites of ember operators, so they differentiate and run on every backend.
"""

from __future__ import annotations

import math

from ember.ops.nn_ops import log_softmax, softmax
from ember.ops.numeric import sinc
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
from ember.ops.special import SPECIAL_OPS, i0, mvlgamma, polygamma, write_out, xlogy
from ember.tensor import Tensor

psi = digamma
gammaln = lgamma
multigammaln = mvlgamma

erfcx = SPECIAL_OPS["erfcx"]
ndtri = SPECIAL_OPS["ndtri"]
i1 = SPECIAL_OPS["i1"]
i0e = SPECIAL_OPS["i0e"]
i1e = SPECIAL_OPS["i1e"]
zeta = SPECIAL_OPS["zeta"]
gammainc = SPECIAL_OPS["gammainc"]
gammaincc = SPECIAL_OPS["gammaincc"]
airy_ai = SPECIAL_OPS["airy_ai"]
bessel_j0 = SPECIAL_OPS["bessel_j0"]
bessel_j1 = SPECIAL_OPS["bessel_j1"]
bessel_y0 = SPECIAL_OPS["bessel_y0"]
bessel_y1 = SPECIAL_OPS["bessel_y1"]
modified_bessel_i0 = SPECIAL_OPS["modified_bessel_i0"]
modified_bessel_i1 = SPECIAL_OPS["modified_bessel_i1"]
modified_bessel_k0 = SPECIAL_OPS["modified_bessel_k0"]
modified_bessel_k1 = SPECIAL_OPS["modified_bessel_k1"]
scaled_modified_bessel_k0 = SPECIAL_OPS["scaled_modified_bessel_k0"]
scaled_modified_bessel_k1 = SPECIAL_OPS["scaled_modified_bessel_k1"]
spherical_bessel_j0 = SPECIAL_OPS["spherical_bessel_j0"]
chebyshev_polynomial_t = SPECIAL_OPS["chebyshev_polynomial_t"]
chebyshev_polynomial_u = SPECIAL_OPS["chebyshev_polynomial_u"]
chebyshev_polynomial_v = SPECIAL_OPS["chebyshev_polynomial_v"]
chebyshev_polynomial_w = SPECIAL_OPS["chebyshev_polynomial_w"]
shifted_chebyshev_polynomial_t = SPECIAL_OPS["shifted_chebyshev_polynomial_t"]
shifted_chebyshev_polynomial_u = SPECIAL_OPS["shifted_chebyshev_polynomial_u"]
shifted_chebyshev_polynomial_v = SPECIAL_OPS["shifted_chebyshev_polynomial_v"]
shifted_chebyshev_polynomial_w = SPECIAL_OPS["shifted_chebyshev_polynomial_w"]
hermite_polynomial_h = SPECIAL_OPS["hermite_polynomial_h"]
hermite_polynomial_he = SPECIAL_OPS["hermite_polynomial_he"]
laguerre_polynomial_l = SPECIAL_OPS["laguerre_polynomial_l"]
legendre_polynomial_p = SPECIAL_OPS["legendre_polynomial_p"]

__all__ = ["digamma", "psi", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1",
           "gammaln", "gammainc", "gammaincc", "i0", "i0e", "i1", "i1e", "log1p",
           "log_softmax", "logit", "logsumexp", "multigammaln", "polygamma", "round",
           "softmax", "sinc", "xlogy", "entr", "ndtr", "ndtri", "log_ndtr", "xlog1py", "zeta",
           "airy_ai", *(n for n in SPECIAL_OPS if "bessel" in n or "polynomial" in n)]


def _float(x: Tensor) -> Tensor:
    from ember.core import dtype as dt
    return x if x.dtype.is_floating_point else x.to(dt.get_default_dtype())


def _no_complex(kernel: str, input) -> None:
    """torch's NotImplementedError for a kernel without complex types."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        from ember.ops.pointwise import not_implemented
        raise not_implemented(kernel, input.dtype)


def entr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Entropy terms ``-x log x``: 0 at 0, ``-inf`` for negative ``x`` (``special.entr``).

    Example:
        >>> ember.special.entr(ember.tensor([0.5]))
        tensor([0.3466])
    """
    _no_complex("entr_cpu", input)
    x = _float(input)
    value = where(x > 0, -xlogy(x, x), 0.0)
    return write_out(where(x < 0, -math.inf, value), out, "entr")


def ndtr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The standard normal CDF ``(1 + erf(x / sqrt 2)) / 2`` (``special.ndtr``).

    Example:
        >>> ember.special.ndtr(ember.tensor([1.0]))
        tensor([0.8413])
    """
    _no_complex("erf_vml_cpu", input)
    return write_out((1 + erf(_float(input) * (1 / math.sqrt(2)))) * 0.5, out, "ndtr")


def log_ndtr(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """``log(ndtr(x))``: ``log(erfcx(-x/sqrt 2) / 2) - x**2 / 2`` below -1 (no underflow
    however far out, as torch), ``log1p(-ndtr(-x))`` above, with ``ndtr(-x)`` from ``erfc``
    up to 0 and from ``erfcx(x/sqrt 2) exp(-x**2/2)`` beyond (tiny negative values, not 0,
    up to x = 38).

    Raises:
        NotImplementedError: half-precision input (as torch's kernel).

    Example:
        >>> ember.special.log_ndtr(ember.tensor([0.0]))
        tensor([-0.6931])
    """
    from ember.core import dtype as dt
    from ember.ops.pointwise import not_implemented
    if input.dtype in (dt.float16, dt.bfloat16) or input.dtype.is_complex:
        raise not_implemented("log_ndtr_cpu", input.dtype)
    x = _float(input)
    low, right = x < -1, x > 0
    # each branch sees a safe argument, so another branch's gradient is never NaN * 0
    t = where(low, x, -1.0)
    tail = (erfcx(t * (-1 / math.sqrt(2))) * 0.5).log() - t * t * 0.5
    m = where(low | right, -0.5, x)
    middle = (erfc(m * (1 / math.sqrt(2))) * -0.5).log1p()
    r = where(right, x, 1.0)
    upper = (erfcx(r * (1 / math.sqrt(2))) * (r * r * -0.5).exp() * -0.5).log1p()
    return write_out(where(low, tail, where(right, upper, middle)), out, "log_ndtr")


def xlog1py(input, other, *, out: Tensor | None = None) -> Tensor:
    """``input * log1p(other)``, 0 where ``input == 0`` and NaN where ``other`` is NaN.

    Example:
        >>> ember.special.xlog1py(ember.tensor([2.0]), ember.tensor([1.0]))
        tensor([1.3863])
    """
    from ember.ops._promotion import Promotion, promoted_dtype
    from ember.ops.special import _device_of, _tensor_of
    _, res = promoted_dtype(Promotion.INT_TO_FLOAT, input, other)
    if res.is_complex:
        from ember.ops.pointwise import not_implemented
        raise not_implemented("xlog1py_cpu", res)
    device = _device_of(input, other)
    x, y = _tensor_of(input, res, device), _tensor_of(other, res, device)
    value = where(x == 0, 0.0, x * log1p(y))
    return write_out(where(y.isnan(), y, value), out, "xlog1py")
