"""The strong-Wolfe line search that ``LBFGS(line_search_fn="strong_wolfe")`` uses.

A search along a direction ``d`` from ``x``: first widen a trial step until an interval is
known to hold a point that meets the strong Wolfe conditions (Nocedal & Wright, Numerical
Optimization, algorithm 3.5), then shrink that interval by safeguarded cubic interpolation
until such a point is found (their algorithm 3.6, "zoom"). Step lengths, losses and
directional derivatives stay in whatever form the caller passes (Python numbers or 0-d
tensors), so that the arithmetic runs in the parameters' dtype. This module knows nothing about
optimizers: it sees a function of the step length only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ember.tensor import Tensor

__all__ = ["cubic_minimizer", "strong_wolfe"]


@dataclass
class _Trial:
    """One evaluated step length: ``t``, the loss ``f``, the gradient ``g`` and ``gtd``, the
    derivative of the loss along the search direction."""

    t: Any
    f: Any
    g: Tensor
    gtd: Any


def _sqrt(x: Any) -> Any:
    return x.sqrt() if isinstance(x, Tensor) else math.sqrt(x)


def cubic_minimizer(a: _Trial, b: _Trial, bounds: tuple[Any, Any] | None = None) -> Any:
    """The minimizer of the cubic through ``(a.t, a.f)`` and ``(b.t, b.f)`` with slopes
    ``a.gtd`` and ``b.gtd``, clamped to ``bounds`` (default: between ``a.t`` and ``b.t``);
    the middle of the bounds when the cubic has no minimizer."""
    lo, hi = bounds if bounds is not None else (min(a.t, b.t), max(a.t, b.t))
    if b.t < a.t:  # the formula below wants a.t <= b.t
        a, b = b, a
    d1 = a.gtd + b.gtd - 3 * (a.f - b.f) / (a.t - b.t)
    disc = d1 * d1 - a.gtd * b.gtd
    if not disc >= 0:  # no real minimizer (or a NaN): bisect
        return (lo + hi) / 2.0
    d2 = _sqrt(disc)
    t = b.t - (b.t - a.t) * ((b.gtd + d2 - d1) / (b.gtd - a.gtd + 2 * d2))
    return min(max(t, lo), hi)


class _Search:
    """The state of one search: the start point, the conditions and the evaluation budget."""

    def __init__(self, evaluate: Callable, start: _Trial, d: Tensor, c1: float, c2: float,
                 budget: int) -> None:
        self.evaluate, self.start, self.direction = evaluate, start, d
        self.d_norm = d.abs().max()
        self.c1, self.c2, self.budget = c1, c2, budget
        self.evals = 0
        self.iters = 0  # trials after the first, bounded by the budget

    def trial(self, t: Any) -> _Trial:
        f, g = self.evaluate(t)
        self.evals += 1
        return _Trial(t, f, g, g.dot(self.direction))

    def too_high(self, x: _Trial) -> Any:
        """The sufficient-decrease (Armijo) condition ``f(t) <= f(0) + c1 * t * f'(0)`` fails."""
        return x.f > self.start.f + self.c1 * x.t * self.start.gtd

    def curvature(self, x: _Trial) -> Any:
        """The strong curvature condition: ``|f'(t)| <= -c2 * f'(0)``."""
        return abs(x.gtd) <= -self.c2 * self.start.gtd


def _bracket(s: _Search, t: Any) -> tuple[list[_Trial], bool]:
    """Grow the step until an interval brackets a Wolfe point; return that interval (or the
    single accepted trial) and whether the search is already done."""
    prev, cur = s.start, s.trial(t)
    while s.iters < s.budget:
        if s.too_high(cur) or (s.iters > 1 and cur.f >= prev.f):
            return [prev, cur], False
        if s.curvature(cur):
            return [cur], True
        if cur.gtd >= 0:  # walked past a minimum
            return [prev, cur], False
        # extrapolate: somewhere between just beyond cur.t and ten times it
        bounds = (cur.t + 0.01 * (cur.t - prev.t), cur.t * 10)
        prev, cur = cur, s.trial(cubic_minimizer(prev, cur, bounds))
        s.iters += 1
    return [_Trial(0, s.start.f, s.start.g, s.start.gtd), cur], False


def _safeguarded(t: Any, interval: list[_Trial], stalled: bool) -> tuple[Any, bool]:
    """Keep a new trial away from the interval's ends: a ``t`` within a tenth of the width of
    an end is moved to that tenth when it lies on or outside an end, or when the previous trial
    was close to an end too. Returns the trial and whether this one was close."""
    lo, hi = min(x.t for x in interval), max(x.t for x in interval)
    margin = 0.1 * (hi - lo)
    if not min(hi - t, t - lo) < margin:
        return t, False
    if stalled or t >= hi or t <= lo:
        return (hi - margin if abs(t - hi) < abs(t - lo) else lo + margin), False
    return t, True


def _zoom(s: _Search, interval: list[_Trial], tolerance_change: float) -> _Trial:
    """Shrink ``interval`` (two trials, one of them the lowest loss seen) around a Wolfe point;
    return the best trial."""
    low = 0 if interval[0].f <= interval[-1].f else 1
    stalled = False
    while s.iters < s.budget:
        a, b = interval
        if abs(b.t - a.t) * s.d_norm < tolerance_change:
            break
        t, stalled = _safeguarded(cubic_minimizer(a, b), interval, stalled)
        new = s.trial(t)
        s.iters += 1
        high = 1 - low
        if s.too_high(new) or new.f >= interval[low].f:
            interval[high] = new
            low = 0 if interval[0].f <= interval[1].f else 1
            continue
        done = s.curvature(new)
        if not done and new.gtd * (interval[high].t - interval[low].t) >= 0:
            interval[high] = interval[low]  # the minimum lies on the other side of low
        interval[low] = new
        if done:
            break
    return interval[low]


def strong_wolfe(evaluate: Callable[[Any], tuple[Any, Tensor]], t: Any, d: Tensor, f: Any,
                 g: Tensor, gtd: Any, c1: float = 1e-4, c2: float = 0.9,
                 tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple[Any, Tensor, Any,
                                                                              int]:
    """Search along ``d`` for a step length meeting the strong Wolfe conditions.

    Args:
        evaluate: ``t -> (loss, flat gradient)`` at ``x + t * d``.
        t: the first trial step length.
        d: the search direction (flat).
        f, g, gtd: loss, flat gradient and ``g . d`` at ``t = 0`` (``gtd < 0``).
        c1, c2: the sufficient-decrease and curvature constants, ``0 < c1 < c2 < 1``.
        tolerance_change: stop once the interval moves the parameters less than this.
        max_ls: the most trials after the first.

    Returns:
        ``(loss, gradient, t, evaluations)`` of the step length found.
    """
    s = _Search(evaluate, _Trial(0, f, g.clone(), gtd), d, c1, c2, max_ls)
    interval, done = _bracket(s, t)
    best = interval[0] if done else _zoom(s, interval, tolerance_change)
    return best.f, best.g, best.t, s.evals
