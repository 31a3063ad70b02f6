"""The operator behind each allocation, for ``ember.memory.record_history``.

NOTE [Memory history] in ember/memory/history.py: the allocator (L2) cannot see the dispatcher
(L3), so this module registers two hooks. While recording is on, a dispatch mode that notes the
running operator in a thread-local sits on the recording thread's mode stack, and the
allocator asks ``current_op()`` for every block it hands out. The mode only exists while
recording: the dispatcher's hot path is untouched otherwise.
"""

from __future__ import annotations

import threading

from ember import memory
from ember.dispatch.dispatcher import _PYTHON_BIT, dispatch_state
from ember.dispatch.modes import DispatchMode

__all__ = ["OpContextMode", "current_op"]

_local = threading.local()


def current_op() -> str | None:
    """The operator running on this thread (innermost), while recording; else None."""
    return getattr(_local, "op", None)


class OpContextMode(DispatchMode):
    """A dispatch mode that keeps ``current_op()`` true during each operator call."""

    def __ember_dispatch__(self, func, types, args=(), kwargs=None):
        outer = getattr(_local, "op", None)
        _local.op = func.short_name
        try:
            return func(*args, **(kwargs or {}))
        finally:
            _local.op = outer


_mode: OpContextMode | None = None


def _enable() -> None:
    global _mode
    if _mode is None:
        _mode = OpContextMode()
        _mode.__enter__()


def _disable() -> None:
    """Take the mode off the stack even if modes entered later are still active."""
    global _mode
    mode, _mode = _mode, None
    if mode is None:
        return
    st = dispatch_state()
    for i in range(len(st.modes) - 1, -1, -1):
        if st.modes[i] is mode:
            del st.modes[i]
            break
    if not st.modes:
        st.included &= ~_PYTHON_BIT


memory.set_context_provider(current_op)
memory.register_history_hooks(_enable, _disable)
