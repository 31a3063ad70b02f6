"""Python dispatch modes: objects that see every operator call below autograd.

A mode is entered with ``with``; entering pushes it on the thread's mode stack and adds the
``Python`` key to the included set, so every call reaches the Python fallback, which hands it
to the innermost mode (see NOTE [Python dispatch modes] in ``dispatcher.py``). Tracers, FLOP
counters and profilers are modes.
"""

from __future__ import annotations

from ember.dispatch.dispatcher import _PYTHON_BIT, dispatch_state

__all__ = ["DispatchMode", "current_modes"]


class DispatchMode:
    """Base class of dispatch modes (``TorchDispatchMode``): override ``__ember_dispatch__``.

    Example:
        >>> import ember
        >>> class Names(DispatchMode):
        ...     def __init__(self): self.seen = []
        ...     def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        ...         self.seen.append(func.short_name)
        ...         return func(*args, **(kwargs or {}))
        >>> with Names() as m:
        ...     _ = ember.ones(2) + 1
        >>> m.seen
        ['ones.default', 'add.Tensor']
    """

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        return func(*args, **(kwargs or {}))

    def __enter__(self):
        st = dispatch_state()
        st.modes.append(self)
        st.included |= _PYTHON_BIT
        return self

    def __exit__(self, *exc):
        st = dispatch_state()
        if not st.modes or st.modes[-1] is not self:
            raise RuntimeError("DispatchMode.__exit__: modes must be exited in reverse order")
        st.modes.pop()
        if not st.modes:
            st.included &= ~_PYTHON_BIT
        return False


def current_modes() -> tuple[DispatchMode, ...]:
    """The active modes, outermost first."""
    return tuple(dispatch_state().modes)
