"""Forward-mode AD with dual tensors (``torch.autograd.forward_ad``).

NOTE [Forward AD is a dispatch mode]
Inside ``dual_level()`` a dispatch mode sees every operator call. A tensor made by
``make_dual(primal, tangent)`` carries its tangent (per level); when an operator's inputs carry
tangents, the mode computes the output's tangent by the operator's JVP rule and attaches it.
Rules: view operators apply the same view to the tangent; operators linear in their tensors
(``add``, ``sum``, ``cat``, ...) apply themselves to the tangents; a few common ones have
explicit rules (``mul``, ``div``, ``matmul``, ``exp``, ``tanh``, ...). Every other operator gets
its JVP from its reverse-mode derivative formula: with ``u`` a dummy cotangent,
``v = vjp(u) = J^T u`` is linear in ``u``, so ``d<v, t>/du = J t``: two backward passes
through the formulas ember already declares (they are written with ember operators, so they
are differentiable). Tensors without tangents pay nothing beyond the mode's scan.
"""

from __future__ import annotations

import threading
from collections import namedtuple

from ember.autograd import engine as _engine
from ember.autograd import grad_mode
from ember.dispatch.dispatcher import dispatch_state, get_op
from ember.dispatch.keys import AUTOGRAD_MASK
from ember.dispatch.modes import DispatchMode
from ember.tensor import Tensor

__all__ = ["dual_level", "make_dual", "unpack_dual", "enter_dual_level", "exit_dual_level",
           "UnpackedDualTensor"]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _State(threading.local):
    def __init__(self):
        self.levels: list[int] = []
        self.mode: _ForwardMode | None = None


_state = _State()


def enter_dual_level() -> int:
    """Start a new forward-AD level; returns it (``dual_level`` calls this)."""
    level = len(_state.levels)
    _state.levels.append(level)
    if _state.mode is None:
        _state.mode = _ForwardMode().__enter__()
    return level


def exit_dual_level(*, level: int | None = None) -> None:
    """Leave the innermost level; its tangents are no longer seen."""
    if not _state.levels:
        raise RuntimeError("Trying to exit a forward AD level that was not entered")
    top = _state.levels[-1]
    if level is not None and level != top:
        raise RuntimeError(f"Trying to exit a forward AD level that was not the last one that "
                           f"was created. This is not supported; got level {level}, innermost "
                           f"is {top}")
    _state.levels.pop()
    if not _state.levels and _state.mode is not None:
        mode, _state.mode = _state.mode, None
        mode.__exit__(None, None, None)


class dual_level:
    """Context manager for a forward-AD level (``torch.autograd.forward_ad.dual_level``).

    Example:
        >>> import ember.autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     x = fwAD.make_dual(ember.tensor([1.0, 2.0]), ember.tensor([1.0, 0.0]))
        ...     fwAD.unpack_dual((x * x).sum()).tangent
        tensor(2.)
    """

    def __enter__(self) -> int:
        self.level = enter_dual_level()
        return self.level

    def __exit__(self, *exc) -> bool:
        exit_dual_level(level=self.level)
        return False


def _current(level: int | None, what: str) -> int:
    if not _state.levels:
        raise RuntimeError(f"Trying to {what} for forward AD but no level exists, make sure to "
                           f"enter_dual_level() first.")
    return _state.levels[-1] if level is None else level


def _tangent_of(t: Tensor, level: int):
    d = t.__dict__.get("_fw_tangents")
    return None if d is None else d.get(level)


def _set_tangent(t: Tensor, level: int, tangent: Tensor) -> None:
    d = t.__dict__.get("_fw_tangents")
    if d is None:
        d = t.__dict__["_fw_tangents"] = {}
    d[level] = tangent


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A view of ``tensor`` carrying ``tangent`` at the current level (``make_dual``).

    Raises:
        RuntimeError: outside ``dual_level``; a tangent of another shape (torch's messages).
    """
    level = _current(level, "create a dual Tensor")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError(f"Trying to set a forward gradient that has a different size than "
                           f"that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    if not (tensor.dtype.is_floating_point and tangent.dtype.is_floating_point):
        raise ValueError(f"Expected both the primal and the tangent to be floating point; got "
                         f"{tensor.dtype} and {tangent.dtype}")
    out = get_op("aten::alias")(tensor)
    _set_tangent(out, level, tangent)
    return out


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of a dual tensor; tangent None when it has none (``unpack_dual``).

    Outside any level every tensor unpacks to ``(tensor, None)``.
    """
    if not _state.levels:
        return UnpackedDualTensor(tensor, None)
    level = _state.levels[-1] if level is None else level
    tangent = _tangent_of(tensor, level)
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_plain_alias(tensor), tangent)


def _plain_alias(t: Tensor) -> Tensor:
    out = get_op("aten::alias")(t)
    out.__dict__.pop("_fw_tangents", None)
    return out


# -- JVP rules --------------------------------------------------------------------------------
def _zeros_like(t: Tensor) -> Tensor:
    return get_op("aten::zeros_like")(t)


def _linear(func, args, kwargs, tangent_args, tangent_kwargs):
    """An operator linear in its tensors: the operator applied to the tangents."""
    return func(*tangent_args, **tangent_kwargs)


def _mul(func, args, kwargs, ta, tk):
    a, b = args[0], args[1]
    t = None
    if ta[0] is not None:
        t = ta[0] * b
    if isinstance(b, Tensor) and ta[1] is not None:
        t = a * ta[1] if t is None else t + a * ta[1]
    return t


def _div(func, args, kwargs, ta, tk):
    a, b = args[0], args[1]
    t = ta[0] / b if ta[0] is not None else None
    if isinstance(b, Tensor) and ta[1] is not None:
        term = a * ta[1] / (b * b)
        t = -term if t is None else t - term
    return t


def _matmul(func, args, kwargs, ta, tk):
    a, b = args[0], args[1]
    t = func(ta[0], b) if ta[0] is not None else None
    if ta[1] is not None:
        t = func(a, ta[1]) if t is None else t + func(a, ta[1])
    return t


def _unary(deriv):
    def rule(func, args, kwargs, ta, tk, out=None):
        return ta[0] * deriv(args[0], out)
    rule.needs_out = True
    return rule


_RULES = {
    "mul": _mul, "div": _div, "matmul": _matmul, "mm": _matmul, "bmm": _matmul, "mv": _matmul,
    "exp": _unary(lambda x, y: y),
    "tanh": _unary(lambda x, y: 1 - y * y),
    "sigmoid": _unary(lambda x, y: y * (1 - y)),
    "sin": _unary(lambda x, y: x.cos()),
    "cos": _unary(lambda x, y: -x.sin()),
    "log": _unary(lambda x, y: 1 / x),
    "relu": _unary(lambda x, y: (x > 0).to(x.dtype)),
    "sqrt": _unary(lambda x, y: 0.5 / y),
}
_LINEAR = frozenset({"add", "sub", "neg", "sum", "mean", "clone", "cat", "stack", "alias",
                     "contiguous", "_to_copy", "detach_copy", "view_copy"})


class _ForwardMode(DispatchMode):
    """Carries tangents through operators (NOTE [Forward AD is a dispatch mode])."""

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        level = _state.levels[-1]
        ta = [_tangent_arg(a, level) for a in args]
        tk = {k: _tangent_arg(v, level) for k, v in kwargs.items()}
        if all(t is None for t in ta) and all(t is None for t in tk.values()):
            return func(*args, **kwargs)
        if func.name == "detach":  # detach keeps the primal only, as in torch
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        tangent = self._tangent(func, args, kwargs, ta, tk, out)
        target = args[0] if func._is_inplace else out
        _attach(target, tangent, level)
        return out

    def _tangent(self, func, args, kwargs, ta, tk, out):
        name = func.name
        if name in ("add", "sub") and len(args) > 1 and not isinstance(args[1], Tensor):
            return ta[0]
        if func._is_view or name in _LINEAR:
            fill = [_fill(t, a) for t, a in zip(ta, args)]
            fk = {k: _fill(t, kwargs[k]) for k, t in tk.items()}
            return _linear(func, args, kwargs, fill, fk)
        rule = _RULES.get(name)
        if rule is not None and not func._is_inplace:
            if getattr(rule, "needs_out", False):
                return rule(func, args, kwargs, ta, tk, out)
            return rule(func, args, kwargs, ta, tk)
        return _from_vjp(func, args, kwargs, ta, tk)


def _tangent_arg(a, level: int):
    if isinstance(a, Tensor):
        return _tangent_of(a, level)
    if a.__class__ is list or a.__class__ is tuple:
        ts = [_tangent_of(t, level) if isinstance(t, Tensor) else None for t in a]
        return ts if any(t is not None for t in ts) else None
    return None


def _fill(t, a):
    """The tangent of argument ``a`` (zeros for a tensor without one); non-tensors as they are."""
    if isinstance(a, Tensor):
        return t if t is not None else _zeros_like(a)
    if a.__class__ is list or a.__class__ is tuple:
        if t is None:
            return a
        return type(a)(tt if tt is not None else (_zeros_like(x) if isinstance(x, Tensor) else x)
                       for tt, x in zip(t, a))
    return a


def _attach(out, tangent, level: int) -> None:
    if isinstance(out, Tensor) and isinstance(tangent, Tensor):
        if out.dtype.is_floating_point:
            _set_tangent(out, level, tangent)
    elif isinstance(out, list | tuple) and isinstance(tangent, list | tuple):
        for o, t in zip(out, tangent):
            _attach(o, t, level)


def _from_vjp(func, args, kwargs, ta, tk):
    """The JVP from the operator's derivative formula (two backward passes)."""
    st = dispatch_state()
    saved_keep, saved_grad = st.keep, grad_mode._grad.enabled
    st.keep |= AUTOGRAD_MASK
    grad_mode._grad.enabled = True
    try:
        leaves, tangents = [], []

        def leafify(a, t):
            if isinstance(a, Tensor) and t is not None:
                leaf = a.detach().requires_grad_()
                leaves.append(leaf)
                tangents.append(t)
                return leaf.clone() if func._is_inplace else leaf
            if (a.__class__ is list or a.__class__ is tuple) and t is not None:
                return type(a)(leafify(x, tt) for x, tt in zip(a, t))
            return a

        a2 = [leafify(a, t) for a, t in zip(args, ta)]
        k2 = {k: leafify(v, tk[k]) for k, v in kwargs.items()}
        out = func(*a2, **k2)
        outs = [o for o in (out if isinstance(out, list | tuple) else [out])]
        diff = [o for o in outs if isinstance(o, Tensor) and o.requires_grad]
        if not diff:
            return None
        us = [_zeros_like(o).requires_grad_() for o in diff]
        gs = _engine.grad(diff, leaves, us, create_graph=True, allow_unused=True)
        pairs = [(g, t) for g, t in zip(gs, tangents) if g is not None and g.requires_grad]
        if not pairs:
            jv = [None] * len(us)
        else:
            jv = _engine.grad([g for g, _ in pairs], us, [t for _, t in pairs],
                              allow_unused=True)
        res, k = [], 0
        for o in outs:
            if isinstance(o, Tensor) and o.requires_grad:
                j = jv[k]
                res.append((j if j is not None else _zeros_like(o)).detach())
                k += 1
            else:
                res.append(None)
        return res if isinstance(out, list | tuple) else res[0]
    finally:
        st.keep, grad_mode._grad.enabled = saved_keep, saved_grad
