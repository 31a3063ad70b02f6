"""Estimated floating-point operations per operator call, for ``profile(with_flops=True)``.

torch's profiler counts FLOPs for a fixed set of operators only: matrix products (``mm``,
``addmm``, ``bmm``, ``baddbmm``: ``2 * M * K * N`` per matrix, the bias and scaling are not
counted), 2-d convolution (``2 * N * C_out * H_out * W_out * (C_in / groups) * kH * kW``) and
out-of-place ``mul``/``add`` (one per output element); every other operator reports 0. ember
counts the same operators with the same formulas. Two operators are single calls in ember where
torch splits them: ``matmul`` of two operands of at least 2 dims is counted as the ``mm``/``bmm``
torch would run (batch dims broadcast), and ``convolution`` with a 4-d weight, not transposed,
as torch's ``conv2d``; so a program's total is torch's total.
"""

from __future__ import annotations

from ember.tensor import Tensor

__all__ = ["flops_of"]


def _numel(shape) -> int:
    n = 1
    for s in shape:
        n *= s
    return n


def _mm(args, kwargs, out) -> int:
    a, b = args[0], args[1]
    return 2 * a.shape[0] * a.shape[1] * b.shape[1]


def _addmm(args, kwargs, out) -> int:
    return _mm(args[1:], kwargs, out)


def _bmm(args, kwargs, out) -> int:
    a, b = args[0], args[1]
    return 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]


def _baddbmm(args, kwargs, out) -> int:
    return _bmm(args[1:], kwargs, out)


def _matmul(args, kwargs, out) -> int:
    a, b = args[0], args[1]
    if a.dim() < 2 or b.dim() < 2:  # torch runs dot/mv here, which it does not count
        return 0
    return 2 * _numel(out.shape) * a.shape[-1]


def _convolution(args, kwargs, out) -> int:
    w = args[1] if len(args) > 1 else kwargs["weight"]
    transposed = args[6] if len(args) > 6 else kwargs.get("transposed", False)
    if w.dim() != 4 or transposed:
        return 0
    n, c_out, h_out, w_out = out.shape
    return 2 * n * c_out * h_out * w_out * w.shape[1] * w.shape[2] * w.shape[3]


def _pointwise(args, kwargs, out) -> int:
    return _numel(out.shape) if isinstance(out, Tensor) else 0


_RULES = {"mm": _mm, "addmm": _addmm, "bmm": _bmm, "baddbmm": _baddbmm, "matmul": _matmul,
          "convolution": _convolution, "mul": _pointwise, "add": _pointwise}


def flops_of(name: str, args: tuple, kwargs: dict, out) -> int:
    """torch's FLOP estimate for one call of operator ``name`` (0 for uncounted operators).

    Example:
        >>> a, b = ember.ones(8, 4), ember.ones(4, 6)
        >>> flops_of("mm", (a, b), {}, a @ b), flops_of("relu", (a,), {}, a.relu())
        (384, 0)
    """
    rule = _RULES.get(name)
    if rule is None:
        return 0
    return rule(args, kwargs, out)
