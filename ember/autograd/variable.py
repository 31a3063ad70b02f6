"""``Variable``: the pre-1.0 wrapper that is now a plain Tensor (``torch.autograd.Variable``).

Old scripts write ``Variable(x, requires_grad=True)`` and ``isinstance(x, Variable)``; both
keep working: the call returns a new leaf over ``x``'s memory (as ``x.detach()``, with the
flag set) and every Tensor is an instance.
"""

from __future__ import annotations

from ember.tensor import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor)

    def __call__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if data is None:
            from ember.core import dtype as dt
            from ember.tensor import empty_tensor
            return empty_tensor((0,), dt.get_default_dtype())
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        return out.requires_grad_(True) if requires_grad else out


class Variable(metaclass=_VariableMeta):
    """``Variable(data, requires_grad=False)``: a new leaf sharing ``data``'s memory.

    Example:
        >>> v = ember.autograd.Variable(ember.zeros(2), requires_grad=True); v.is_leaf
        True
    """


class _ExecutionEngine:
    """``Variable._execution_engine``: torch's handle on the autograd engine, for
    ``queue_callback`` (what DDP-style code calls to run something at the end of backward)."""

    @staticmethod
    def queue_callback(callback) -> None:
        """Run ``callback()`` when the current backward pass finishes (inside backward only)."""
        from ember.autograd.engine import queue_callback
        queue_callback(callback)


Variable._execution_engine = _ExecutionEngine()
