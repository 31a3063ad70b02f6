"""Orthogonal polynomials of torch.special on float64 NumPy arrays: ``p(x, n)``.

``n`` is truncated to an integer; negative (or NaN) degrees give 0, as torch. Inside
(-1, 1) the Chebyshev families of high degree use their trigonometric forms
(``T_n(cos t) = cos(n t)``, DLMF 18.5.1-4); otherwise the three-term recurrences of DLMF
table 18.9.1 run to the largest degree present, masked per element.
"""

from __future__ import annotations

import numpy as np

__all__ = ["POLYNOMIALS"]


def _degrees(n) -> np.ndarray:
    bad = ~np.isfinite(n) | (n < -2.0**62) | (n > 2.0**62)
    return np.where(bad, -1, np.trunc(np.where(bad, 0.0, n))).astype(np.int64)


def _recurrence(x, n, first, step):
    """p_n(x) from p_0 = 1, p_1 = ``first(x)``, p_{k+1} = ``step(x, k, p_k, p_{k-1})``."""
    p = np.ones_like(x)
    q = first(x)
    out = np.where(n == 0, p, q)
    top = int(n.max()) if n.size else 0
    with np.errstate(all="ignore"):
        for k in range(1, top):
            r = step(x, k, q, p)
            p, q = q, r
            out = np.where(n == k + 1, r, out)
            if k > 64 and not np.isfinite(q[n > k + 1]).any():
                out = np.where(n > k + 1, np.nan, out)
                break
    return out


def _chebyshev_step(x, k, q, p):
    return (x + x) * q - p


def _finish(value, n):
    return np.where(n < 0, 0.0, value)


def _trig_or_recur(x, n, threshold, trig, first, at_ends):
    inside = (np.abs(x) < 1.0) & (n > threshold)
    with np.errstate(all="ignore"):
        theta = np.arccos(np.where(inside, x, 0.0))
        trig_value = trig(theta, n.astype(np.float64))
    looped = np.where(inside, 0, n)
    value = _recurrence(x, looped, first, _chebyshev_step)
    value = np.where(inside, trig_value, value)
    value = at_ends(x, n, value)
    return _finish(value, n)


def chebyshev_t(x, n):
    n = _degrees(n)

    def ends(x, n, v):
        return np.where(np.abs(x) == 1.0, np.where((x > 0) | (n % 2 == 0), 1.0, -1.0), v)

    return _trig_or_recur(x, n, 6, lambda t, m: np.cos(m * t), lambda x: x, ends)


def chebyshev_u(x, n):
    n = _degrees(n)

    def trig(t, m):
        s = np.sin(t)
        return np.where(s != 0, np.sin((m + 1) * t) / s, (m + 1) * np.cos((m + 1) * t) / np.cos(t))

    def ends(x, n, v):
        end = np.where((x > 0) | (n % 2 == 0), n + 1.0, -(n + 1.0))
        return np.where(np.abs(x) == 1.0, end, v)

    return _trig_or_recur(x, n, 8, trig, lambda x: x + x, ends)


def chebyshev_v(x, n):
    n = _degrees(n)

    def trig(t, m):
        return np.cos((m + 0.5) * t) / np.cos(0.5 * t)

    def ends(x, n, v):
        end = np.where(x > 0, 1.0, np.where(n % 2 == 0, n + n + 1.0, -(n + n + 1.0)))
        return np.where(np.abs(x) == 1.0, end, v)

    return _trig_or_recur(x, n, 8, trig, lambda x: x + x - 1.0, ends)


def chebyshev_w(x, n):
    n = _degrees(n)

    def trig(t, m):
        return np.sin((m + 0.5) * t) / np.sin(0.5 * t)

    def ends(x, n, v):
        end = np.where(x > 0, n + n + 1.0, np.where(n % 2 == 0, 1.0, -1.0))
        return np.where(np.abs(x) == 1.0, end, v)

    return _trig_or_recur(x, n, 8, trig, lambda x: x + x + 1.0, ends)


def _shifted(fn):
    def shifted(x, n):
        return fn(x + x - 1.0, n)
    return shifted


def hermite_h(x, n):
    n = _degrees(n)
    value = _recurrence(x, np.maximum(n, 0), lambda x: x + x,
                        lambda x, k, q, p: (x + x) * q - (k + k) * p)
    return _finish(value, n)


def hermite_he(x, n):
    n = _degrees(n)
    value = _recurrence(x, np.maximum(n, 0), lambda x: x.copy(),
                        lambda x, k, q, p: x * q - k * p)
    return _finish(value, n)


def laguerre_l(x, n):
    n = _degrees(n)
    value = _recurrence(x, np.maximum(n, 0), lambda x: 1.0 - x,
                        lambda x, k, q, p: ((k + k + 1.0 - x) * q - k * p) / (k + 1.0))
    value = np.where(x == 0, 1.0, value)
    return _finish(value, n)


def legendre_p(x, n):
    n = _degrees(n)
    value = _recurrence(x, np.maximum(n, 0), lambda x: x.copy(),
                        lambda x, k, q, p: ((k + k + 1.0) * x * q - k * p) / (k + 1.0))
    end = np.where((x > 0) | (n % 2 == 0), 1.0, -1.0)
    value = np.where(np.abs(x) == 1.0, end, value)
    return _finish(value, n)


POLYNOMIALS = {
    "chebyshev_polynomial_t": chebyshev_t, "chebyshev_polynomial_u": chebyshev_u,
    "chebyshev_polynomial_v": chebyshev_v, "chebyshev_polynomial_w": chebyshev_w,
    "shifted_chebyshev_polynomial_t": _shifted(chebyshev_t),
    "shifted_chebyshev_polynomial_u": _shifted(chebyshev_u),
    "shifted_chebyshev_polynomial_v": _shifted(chebyshev_v),
    "shifted_chebyshev_polynomial_w": _shifted(chebyshev_w),
    "hermite_polynomial_h": hermite_h, "hermite_polynomial_he": hermite_he,
    "laguerre_polynomial_l": laguerre_l, "legendre_polynomial_p": legendre_p,
}
