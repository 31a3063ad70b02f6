"""CPU kernels of the distribution samplers: gamma, Dirichlet, Poisson and binomial draws over
the generator's Philox stream, and the implicit reparameterization gradients of gamma and beta.

NOTE [Rejection samplers in rounds]
Each rejection sampler runs in rounds: a round draws one batch of words for the elements still
pending (in row-major order of the output), accepts what it can and retries the rest in the
next round. The number of rounds and each round's draw depend only on the seed, the offset
and the parameters, so ``manual_seed`` reproduces every sample.

NOTE [Implicit reparameterization]
A sample ``x = F^-1(u; a)`` held at a fixed quantile ``u`` moves with the parameter as
``dx/da = -(dF/da)(x; a) / f(x; a)`` (Figurnov et al., "Implicit reparameterization
gradients"). ``dF/da`` comes from differentiating, in forward mode, the series or continued
fraction that evaluates the CDF (``_Dual`` carries value and derivative), so the gradient is
exact to float64 rounding; torch approximates the same quantity (its values agree to ~1e-3).
"""

from __future__ import annotations

import numpy as np

from ember.backends.cpu import _xp as xp
from ember.backends.cpu._util import arr, new_output
from ember.backends.cpu.pointwise import digamma64, lgamma64
from ember.backends.cpu.random import _gen, _store
from ember.core import dtype as dt
from ember.core.layout import numel
from ember.ops import random_dists as rd

_TINY = 1e-300
_EPS = 4e-16
_MAX_ITERATIONS = 100_000


# -- forward-mode numbers ---------------------------------------------------------------------
class _Dual:
    """An array value with its derivative along one parameter: just enough arithmetic for
    the continued fractions below."""

    __slots__ = ("v", "d")
    __array_ufunc__ = None  # ndarray op _Dual defers to _Dual's reflected method

    def __init__(self, v, d=0.0):
        self.v, self.d = v, d

    def __add__(self, o):
        o = _dual(o)
        return _Dual(self.v + o.v, self.d + o.d)

    __radd__ = __add__

    def __sub__(self, o):
        o = _dual(o)
        return _Dual(self.v - o.v, self.d - o.d)

    def __rsub__(self, o):
        return _dual(o) - self

    def __mul__(self, o):
        o = _dual(o)
        return _Dual(self.v * o.v, self.d * o.v + self.v * o.d)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = _dual(o)
        q = self.v / o.v
        return _Dual(q, (self.d - q * o.d) / o.v)

    def __rtruediv__(self, o):
        return _dual(o) / self

    def __neg__(self):
        return _Dual(-self.v, -self.d)

    def take(self, keep):
        return _Dual(_take(self.v, keep), _take(self.d, keep))


def _dual(o) -> _Dual:
    return o if isinstance(o, _Dual) else _Dual(o)


def _take(v, keep):
    return v[keep] if isinstance(v, np.ndarray) and v.ndim else v


def _nonzero(z: _Dual) -> _Dual:
    """Lentz's guard: a denominator that vanishes is replaced by a tiny number."""
    return _Dual(np.where(np.abs(z.v) < _TINY, _TINY, z.v), z.d)


def _lentz(state: dict, step, n: int) -> _Dual:
    """Run the modified Lentz recurrence ``step(state, i)`` (which returns the factor for
    ``h``) over ``n`` elements, retiring each element once its value and derivative settle."""
    value, deriv = np.empty(n), np.empty(n)
    live = np.arange(n)
    h = state.pop("h")
    for i in range(1, _MAX_ITERATIONS):
        f = step(state, i)
        h = h * f
        done = (np.abs(f.v - 1) <= _EPS) & (np.abs(f.d) <= _EPS * (np.abs(h.d / h.v) + 1))
        if done.any():
            value[live[done]], deriv[live[done]] = h.v[done], h.d[done]
            keep = ~done
            live, h = live[keep], h.take(keep)
            state = {k: (s.take(keep) if isinstance(s, _Dual) else _take(s, keep))
                     for k, s in state.items()}
        if not live.size:
            break
    value[live], deriv[live] = h.v, h.d
    return _Dual(value, deriv)


# -- gamma: sampling ----------------------------------------------------------------------------
def _marsaglia_tsang(g, alpha: np.ndarray) -> np.ndarray:
    """Gamma(alpha) samples for ``alpha >= 1`` (Marsaglia & Tsang's squeeze and log test),
    in rounds (NOTE [Rejection samplers in rounds])."""
    d = alpha - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    out = np.empty_like(alpha)
    live = np.arange(alpha.size)
    while live.size:
        n = live.size
        z = g.normal(n, dt.float64)
        u = 1.0 - g.uniform(n, dt.float64)  # (0, 1]
        y = 1.0 + c[live] * z
        v = y * y * y
        with np.errstate(divide="ignore", invalid="ignore"):
            ok = (y > 0) & ((u < 1.0 - 0.0331 * z ** 4) |
                            (np.log(u) < 0.5 * z * z + d[live] * (1.0 - v + np.log(v))))
        out[live[ok]] = d[live[ok]] * v[ok]
        live = live[~ok]
    return out


def standard_gamma(g, alpha: np.ndarray, tiny: float) -> np.ndarray:
    """Gamma(alpha, 1) samples (float64) of a float64 array, at least ``tiny`` as torch's.

    ``alpha < 1`` draws Gamma(alpha + 1) and scales it by ``U ** (1 / alpha)``; zero
    ``alpha`` gives ``tiny``, and so does NaN or a negative ``alpha``.
    """
    alpha = np.ascontiguousarray(alpha, np.float64).reshape(-1)
    valid = alpha > 0
    small = valid & (alpha < 1)
    scale = np.ones_like(alpha)
    if small.any():
        u = 1.0 - g.uniform(int(small.sum()), dt.float64)
        with np.errstate(under="ignore"):
            scale[small] = u ** (1.0 / alpha[small])
    boosted = np.where(small, alpha + 1.0, alpha)
    out = np.zeros_like(alpha)
    finite = valid & np.isfinite(alpha)
    out[finite] = _marsaglia_tsang(g, boosted[finite])
    out[valid & ~finite] = np.inf
    with np.errstate(under="ignore"):
        out *= scale
    return np.where(out > tiny, out, tiny)


# -- gamma: d sample / d alpha -----------------------------------------------------------------
def _gamma_series_grad(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dx/da`` for ``x < a + 1`` from ``P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n t_n`` with
    ``t_n = x^n / ((a + 1) ... (a + n))``: ``-(x / a) * sum_n t_n (log x - digamma(a+n+1))``.
    Elements retire (in batches) once their terms fall below float64 resolution."""
    total, weighted = np.ones_like(x), np.zeros_like(x)
    live = np.arange(x.size)
    state = [np.ones_like(x), np.zeros_like(x), x, a, total.copy(), weighted.copy()]
    for n in range(1, _MAX_ITERATIONS):
        t, harmonic, xl, al, tot, wsum = state
        t *= xl / (al + n)
        harmonic += 1.0 / (al + n)
        tot += t
        wsum += t * harmonic
        going = t * (1.0 + harmonic) > 1e-16 * tot
        done = int(going.size - np.count_nonzero(going))
        if done == going.size or done * 4 >= going.size:
            total[live], weighted[live] = tot, wsum
            live, state = live[going], [v[going] for v in state]
            if not live.size:
                break
    with np.errstate(divide="ignore", invalid="ignore"):
        return -(x / a) * (total * (np.log(x) - digamma64(a + 1.0)) - weighted)


def _gamma_upper_cf(a: np.ndarray, x: np.ndarray) -> _Dual:
    """``K`` and ``dK/da`` where ``Q(a, x) = x^a e^-x / Gamma(a) * K`` (Legendre's continued
    fraction, for ``x >= a + 1``)."""
    a = _Dual(a, np.ones_like(a))
    b = x + 1.0 - a
    state = {"a": a, "b": b, "c": _Dual(np.full_like(x, 1 / _TINY), np.zeros_like(x)),
             "d": 1.0 / _nonzero(b)}
    state["h"] = state["d"]

    def step(s, i):
        an = -i * (i - s["a"])
        s["b"] = s["b"] + 2.0
        s["d"] = 1.0 / _nonzero(an * s["d"] + s["b"])
        s["c"] = _nonzero(s["b"] + an / s["c"])
        return s["d"] * s["c"]

    return _lentz(state, step, x.size)


# Above this concentration the series and continued fraction need ~sqrt(alpha) terms; the
# Wilson-Hilferty cube-root normal quantile is then exact to ~1e-9 relative (error ~a^-1.5).
_WILSON_HILFERTY_ALPHA = 1e6


def _wilson_hilferty_grad(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``dx/da`` at fixed ``z`` of ``x = a w^3``, ``w = 1 - 1/(9a) + z / (3 sqrt(a))``."""
    z = 3.0 * np.sqrt(a) * (np.cbrt(x / a) - 1.0 + 1.0 / (9.0 * a))
    w = 1.0 - 1.0 / (9.0 * a) + z / (3.0 * np.sqrt(a))
    dw_da = 1.0 / (9.0 * a * a) - z / (6.0 * a ** 1.5)
    return w ** 3 + 3.0 * a * w * w * dw_da


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``d x / d alpha`` of standard gamma samples ``x`` (float64 arrays of one shape), by
    NOTE [Implicit reparameterization]; 0 where it is undefined (as torch's NaN -> 0)."""
    out = np.zeros_like(x)
    ok = (alpha > 0) & (x > 0) & np.isfinite(alpha) & np.isfinite(x)
    huge = ok & (alpha >= _WILSON_HILFERTY_ALPHA)
    if huge.any():
        out[huge] = _wilson_hilferty_grad(alpha[huge], x[huge])
    ok &= ~huge
    lower = ok & (x < alpha + 1.0)
    if lower.any():
        out[lower] = _gamma_series_grad(alpha[lower], x[lower])
    upper = ok & ~lower
    if upper.any():
        a, xu = alpha[upper], x[upper]
        k = _gamma_upper_cf(a, xu)
        out[upper] = xu * (k.v * (np.log(xu) - digamma64(a)) + k.d)
    return np.where(np.isnan(out), 0.0, out)


# -- beta: d sample / d alpha (for the Dirichlet) ------------------------------------------------
def _beta_cf(p: np.ndarray, q: np.ndarray, y: np.ndarray, wrt_p: bool) -> _Dual:
    """The incomplete beta continued fraction ``CF`` with ``I_y(p, q) = y^p (1-y)^q /
    (p B(p, q)) * CF`` and its derivative in ``p`` (``wrt_p``) or ``q``."""
    one = np.ones_like(y)
    p = _Dual(p, one if wrt_p else 0.0)
    q = _Dual(q, 0.0 if wrt_p else one)
    d = 1.0 / _nonzero(1.0 - (p + q) * y / (p + 1.0))
    state = {"p": p, "q": q, "y": y, "c": _Dual(one, np.zeros_like(y)), "d": d, "h": d}

    def step(s, m):
        p, q, y = s["p"], s["q"], s["y"]
        f = _Dual(1.0, 0.0)
        for aa in (m * (q - m) * y / ((p + (2 * m - 1)) * (p + 2 * m)),
                   -(p + m) * (p + q + m) * y / ((p + 2 * m) * (p + (2 * m + 1)))):
            s["d"] = 1.0 / _nonzero(1.0 + aa * s["d"])
            s["c"] = _nonzero(1.0 + aa / s["c"])
            f = f * s["d"] * s["c"]
        return f

    return _lentz(state, step, y.size)


def beta_grad_alpha(x: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``d x / d a`` of Beta(a, b) samples ``x`` at fixed ``b`` (NOTE [Implicit
    reparameterization]); ``_dirichlet_grad(x, a, a + b)`` is this over ``1 - x``."""
    out = np.zeros_like(x)
    ok = (x > 0) & (x < 1) & (a > 0) & (b > 0)
    direct = ok & (x < (a + 1.0) / (a + b + 2.0))
    dig = np.zeros_like(x)
    dig[ok] = digamma64(a[ok] + b[ok]) - digamma64(a[ok])
    if direct.any():
        xd, ad, bd = x[direct], a[direct], b[direct]
        cf = _beta_cf(ad, bd, xd, wrt_p=True)
        lead = np.log(xd) - 1.0 / ad + dig[direct]
        out[direct] = -xd * (1.0 - xd) / ad * (cf.v * lead + cf.d)
    mirror = ok & ~direct
    if mirror.any():
        xm, am, bm = x[mirror], a[mirror], b[mirror]
        cf = _beta_cf(bm, am, 1.0 - xm, wrt_p=False)
        out[mirror] = xm * (1.0 - xm) / bm * (cf.v * (np.log(xm) + dig[mirror]) + cf.d)
    return np.where(np.isnan(out), 0.0, out)


# -- Poisson and binomial ---------------------------------------------------------------------
def _inversion(g, first: np.ndarray, ratio, n_max=None) -> np.ndarray:
    """Discrete inversion by sequential search: ``P(0) = first``, ``P(k) = P(k-1) *
    ratio(k)``; one uniform per element (search stops at ``n_max`` when given)."""
    u = g.uniform(first.size, dt.float64)
    k = np.zeros_like(first)
    r = first.copy()
    live = np.arange(first.size)
    for _ in range(_MAX_ITERATIONS):
        more = (u[live] > r[live]) & (r[live] > 0)  # r underflows only far in the tail
        if n_max is not None:
            more &= k[live] < n_max[live]
        live = live[more]
        if not live.size:
            break
        u[live] -= r[live]
        k[live] += 1
        r[live] *= ratio(live, k[live])
    return k


def _ptrs(g, lam: np.ndarray) -> np.ndarray:
    """Poisson samples for ``lam >= 10``: Hoermann's transformed rejection (PTRS)."""
    slam, loglam = np.sqrt(lam), np.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = np.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    out = np.empty_like(lam)
    live = np.arange(lam.size)
    while live.size:
        n = live.size
        u = g.uniform(n, dt.float64) - 0.5
        v = g.uniform(n, dt.float64)
        us = 0.5 - np.abs(u)
        al, bl, lm = a[live], b[live], lam[live]
        k = np.floor((2.0 * al / us + bl) * u + lm + 0.43)
        fast = (us >= 0.07) & (v <= vr[live])
        with np.errstate(divide="ignore", invalid="ignore"):
            test = (np.log(v) + log_inv_alpha[live] - np.log(al / (us * us) + bl)
                    <= -lm + k * loglam[live] - lgamma64(np.maximum(k, 0.0) + 1.0))
        ok = fast | ((k >= 0) & ~((us < 0.013) & (v > us)) & test)
        out[live[ok]] = k[ok]
        live = live[~ok]
    return out


def poisson(g, rate: np.ndarray) -> np.ndarray:
    """Poisson(rate) counts (float64) of a float64 array: inversion below 10, PTRS above."""
    rate = np.ascontiguousarray(rate, np.float64).reshape(-1)
    out = np.zeros_like(rate)
    small = (rate > 0) & (rate < 10)
    if small.any():
        lam = rate[small]
        out[small] = _inversion(g, np.exp(-lam), lambda i, k: lam[i] / k)
    large = rate >= 10
    if large.any():
        out[large] = _ptrs(g, rate[large])
    return out


def _btrs(g, n: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Binomial samples for ``n p >= 10``, ``p <= 1/2``: Hoermann's BTRS."""
    q = 1.0 - p
    spq = np.sqrt(n * p * q)
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * p
    c = n * p + 0.5
    vr = 0.92 - 4.2 / b
    log_alpha = np.log((2.83 + 5.1 / b) * spq)
    lpq = np.log(p / q)
    m = np.floor((n + 1.0) * p)
    h = lgamma64(m + 1.0) + lgamma64(n - m + 1.0)
    out = np.empty_like(n)
    live = np.arange(n.size)
    while live.size:
        cnt = live.size
        u = g.uniform(cnt, dt.float64) - 0.5
        v = g.uniform(cnt, dt.float64)
        us = 0.5 - np.abs(u)
        al, bl, nl = a[live], b[live], n[live]
        k = np.floor((2.0 * al / us + bl) * u + c[live])
        inside = (k >= 0) & (k <= nl)
        fast = inside & (us >= 0.07) & (v <= vr[live])
        kc = np.clip(k, 0.0, nl)
        with np.errstate(divide="ignore", invalid="ignore"):
            test = (np.log(v) + log_alpha[live] - np.log(al / (us * us) + bl)
                    <= h[live] - lgamma64(kc + 1.0) - lgamma64(nl - kc + 1.0)
                    + (kc - m[live]) * lpq[live])
        ok = fast | (inside & test)
        out[live[ok]] = k[ok]
        live = live[~ok]
    return out


def binomial(g, count: np.ndarray, prob: np.ndarray) -> np.ndarray:
    """Binomial(count, prob) samples (float64); counts below 1 or probabilities at/below 0
    give 0, probabilities at/above 1 give ``count`` (torch does not validate either); NaN in
    either gives NaN."""
    n = np.floor(np.ascontiguousarray(count, np.float64).reshape(-1))
    p = np.ascontiguousarray(prob, np.float64).reshape(-1)
    out = np.zeros_like(n)
    ok = (n >= 1) & (p > 0)
    full = ok & (p >= 1)
    out[full] = n[full]
    ok &= ~full
    flip = p > 0.5
    pp = np.where(flip, 1.0 - p, p)
    small = ok & (n * pp < 10)
    if small.any():
        ns, ps = n[small], pp[small]
        s = ps / (1.0 - ps)
        out[small] = _inversion(g, np.exp(ns * np.log1p(-ps)),
                                lambda i, k: (ns[i] - k + 1.0) / k * s[i], n_max=ns)
    large = ok & ~small
    if large.any():
        out[large] = _btrs(g, n[large], pp[large])
    out = np.where(ok & flip, n - out, out)
    return np.where(np.isnan(n) | np.isnan(p), np.nan, out)


# -- kernels ----------------------------------------------------------------------------------
# The samplers and gradients compute on the host in float64 (the Philox draws are host
# arrays); a device tensor's values come over once and the result goes back once.
def _f64(t) -> np.ndarray:
    return np.asarray(xp.to_host(t, arr(t)), dtype=np.float64)


def _write(t, values: np.ndarray):
    if t._device.type == "cpu":
        return _store(t, values)
    if values.size:
        host = values.reshape(t._shape).astype(arr(t).dtype)
        arr(t)[...] = xp.from_host(t, host)
    return t


@rd._standard_gamma.impl("CPU")
def _standard_gamma_kernel(input, generator=None):
    spec = rd._standard_gamma.meta_rule(input, generator)
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype)
    tiny = float(dt.finfo(spec.dtype).tiny)
    return _write(t, standard_gamma(g, _f64(input), tiny))


@rd._standard_gamma_grad.impl("CPU")
def _standard_gamma_grad_kernel(input, output):
    spec = rd._standard_gamma_grad.meta_rule(input, output)
    t = new_output(spec.shape, spec.dtype)
    a = np.broadcast_to(_f64(input), spec.shape).reshape(-1)
    x = np.broadcast_to(_f64(output), spec.shape).reshape(-1)
    return _write(t, standard_gamma_grad(a, x))


@rd._sample_dirichlet.impl("CPU")
def _sample_dirichlet_kernel(input, generator=None):
    spec = rd._sample_dirichlet.meta_rule(input, generator)
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype)
    if not numel(spec.shape):
        return t
    gam = standard_gamma(g, _f64(input), float(np.finfo(np.float64).tiny))
    gam = gam.reshape(-1, spec.shape[-1]) if spec.shape else gam.reshape(1, 1)
    x = gam / gam.sum(axis=-1, keepdims=True)
    info = dt.finfo(spec.dtype)
    return _write(t, np.clip(x, float(info.tiny), 1.0 - float(info.eps) / 2))


@rd._dirichlet_grad.impl("CPU")
def _dirichlet_grad_kernel(x, alpha, total):
    spec = rd._dirichlet_grad.meta_rule(x, alpha, total)
    t = new_output(spec.shape, spec.dtype)
    xs, a, tot = (np.broadcast_to(_f64(v), spec.shape).reshape(-1) for v in (x, alpha, total))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _write(t, beta_grad_alpha(xs, a, tot - a) / (1.0 - xs))


@rd.poisson.impl("CPU")
def _poisson_kernel(input, generator=None):
    spec = rd.poisson.meta_rule(input, generator)
    rate = _f64(input)
    if rate.size and not bool((rate >= 0).all()):
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype)
    return _write(t, poisson(g, rate))


@rd.binomial.impl("CPU")
def _binomial_kernel(count, prob, generator=None):
    spec = rd.binomial.meta_rule(count, prob, generator)
    g = _gen(generator)
    t = new_output(spec.shape, spec.dtype)
    n = np.broadcast_to(_f64(count), spec.shape)
    p = np.broadcast_to(_f64(prob), spec.shape)
    return _write(t, binomial(g, n, p))
