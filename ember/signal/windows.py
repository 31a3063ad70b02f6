"""``ember.signal.windows``: the window functions of ``torch.signal.windows``.

Each returns a 1-d tensor of ``M`` points, symmetric (``sym=True``, for filter design) or
periodic (``sym=False``: the first ``M`` points of an ``M + 1``-point window, for spectral
analysis), built from ember operators in the requested floating dtype.
"""

from __future__ import annotations

import math

from ember.core import dtype as dt
from ember.ops.creation import arange, ones, zeros
from ember.ops.special import i0
from ember.tensor import Tensor

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _points(name: str, M: int, sym: bool, dtype, device, requires_grad):
    """``(n, N, early)``: sample indices, the window's denominator span, or a finished window
    for ``M <= 1``."""
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    dtype = dt.get_default_dtype() if dtype is None else dtype
    if dtype not in (dt.float32, dt.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: torch.{dtype.name}")
    if M <= 1:
        make = zeros if M == 0 else ones
        return None, None, make(M, dtype=dtype, device=device).requires_grad_(requires_grad)
    n = arange(M, dtype=dtype, device=device)
    return n, (M - 1 if sym else M), None


def _done(w: Tensor, requires_grad: bool) -> Tensor:
    return w.detach().requires_grad_(requires_grad) if requires_grad else w


def general_cosine(M: int, *, a, sym: bool = True, dtype=None, layout=None, device=None,
                   requires_grad: bool = False) -> Tensor:
    """``sum_k (-1)^k a[k] cos(2 pi k n / N)`` (``torch.signal.windows.general_cosine``).

    Example:
        >>> import ember.signal
        >>> ember.signal.windows.general_cosine(3, a=[0.5, 0.5]).tolist()
        [0.0, 1.0, 0.0]
    """
    a = list(a)
    if not a:
        raise ValueError("Coefficients cannot be empty")
    n, N, early = _points("general_cosine", M, sym, dtype, device, requires_grad)
    if early is not None:
        return early
    k = n * (2 * math.pi / N)
    w = n * 0 + a[0]
    for i, c in enumerate(a[1:], 1):
        w = w + ((-1) ** i * c) * (k * i).cos()
    return _done(w, requires_grad)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype=None, layout=None,
                    device=None, requires_grad: bool = False) -> Tensor:
    """``alpha - (1 - alpha) cos(2 pi n / N)`` (``torch.signal.windows.general_hamming``).

    Example:
        >>> import ember.signal
        >>> [round(v, 4) for v in ember.signal.windows.general_hamming(3).tolist()]
        [0.08, 1.0, 0.08]
    """
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
         requires_grad: bool = False) -> Tensor:
    """The Hann window, ``general_hamming`` with ``alpha = 0.5``.

    Example:
        >>> import ember.signal
        >>> ember.signal.windows.hann(3).tolist()
        [0.0, 1.0, 0.0]
    """
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, device=device,
                           requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The Hamming window, ``general_hamming`` with ``alpha = 0.54``.

    Example:
        >>> import ember.signal
        >>> [round(v, 2) for v in ember.signal.windows.hamming(3).tolist()]
        [0.08, 1.0, 0.08]
    """
    return general_hamming(M, alpha=0.54, sym=sym, dtype=dtype, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The Blackman window, ``general_cosine`` with ``a = [0.42, 0.5, 0.08]``.

    Example:
        >>> import ember.signal
        >>> [round(v, 4) + 0.0 for v in ember.signal.windows.blackman(3).tolist()]  # +0.0: no -0.0
        [0.0, 1.0, 0.0]
    """
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The minimum 4-term Blackman-Harris window of Nuttall.

    Example:
        >>> import ember.signal
        >>> round(ember.signal.windows.nuttall(3)[1].item(), 4)
        1.0
    """
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The triangular window ``1 - |2 n / N - 1|``.

    Example:
        >>> import ember.signal
        >>> ember.signal.windows.bartlett(5).tolist()
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    n, N, early = _points("bartlett", M, sym, dtype, device, requires_grad)
    if early is not None:
        return early
    return _done(1 - (n * (2.0 / N) - 1).abs(), requires_grad)


def cosine(M: int, *, sym: bool = True, dtype=None, layout=None, device=None,
           requires_grad: bool = False) -> Tensor:
    """The sine window ``sin(pi (n + 0.5) / (N + 1))``.

    Example:
        >>> import ember.signal
        >>> [round(v, 4) for v in ember.signal.windows.cosine(3).tolist()]
        [0.5, 1.0, 0.5]
    """
    n, N, early = _points("cosine", M, sym, dtype, device, requires_grad)
    if early is not None:
        return early
    return _done(((n + 0.5) * (math.pi / (N + 1))).sin(), requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype=None, layout=None,
             device=None, requires_grad: bool = False) -> Tensor:
    """``exp(-((n - N/2) / std)^2 / 2)``.

    Raises:
        ValueError: ``std <= 0``.

    Example:
        >>> import ember.signal
        >>> [round(v, 4) for v in ember.signal.windows.gaussian(3).tolist()]
        [0.6065, 1.0, 0.6065]
    """
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    n, N, early = _points("gaussian", M, sym, dtype, device, requires_grad)
    if early is not None:
        return early
    return _done((((n - N / 2) * (1.0 / std)) ** 2 * -0.5).exp(), requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype=None, layout=None, device=None, requires_grad: bool = False) -> Tensor:
    """``exp(-|n - center| / tau)``, centred at ``N/2`` by default.

    Raises:
        ValueError: ``tau <= 0``, or ``center`` given for a symmetric window.

    Example:
        >>> import ember.signal
        >>> [round(v, 4) for v in ember.signal.windows.exponential(3).tolist()]
        [0.3679, 1.0, 0.3679]
    """
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    n, N, early = _points("exponential", M, sym, dtype, device, requires_grad)
    if early is not None:
        return early
    c = N / 2 if center is None else center
    return _done(((n - c).abs() * (-1.0 / tau)).exp(), requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype=None, layout=None,
           device=None, requires_grad: bool = False) -> Tensor:
    """``i0(beta sqrt(1 - ((n - N/2) / (N/2))^2)) / i0(beta)``.

    Raises:
        ValueError: ``beta < 0``.

    Example:
        >>> import ember.signal
        >>> ember.signal.windows.kaiser(3, beta=0.0).tolist()
        [1.0, 1.0, 1.0]
    """
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    n, N, early = _points("kaiser", M, sym, dtype, device, requires_grad)
    if early is not None:
        return early
    r = (n - N / 2) * (2.0 / N)
    arg = ((1 - r * r).clamp(min=0.0)).sqrt() * beta
    return _done(i0(arg) / i0(arg.new_full((), beta)), requires_grad)
