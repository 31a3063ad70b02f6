"""Sources: Python expressions that re-read a value from a frame's state at run time.

Capture names every value it reads from outside the frame by the expression that reaches it
(``L[0]``, ``L[0].layers[3].weight``, ``G['SCALE']``, ``L[2].cell_contents``), relative to
``L`` (the driver's frame state: localsplus followed by the value stack) and ``G`` (the
frame's globals). Guards check values through these expressions, and segment exits use them
to re-read unchanged inputs instead of holding references to them.
"""

from __future__ import annotations

import sys

__all__ = ["attr_source", "item_source", "global_source"]


def attr_source(base: str, name: str) -> str:
    """``base.name`` (``getattr`` form for names that are not identifiers)."""
    if name.isidentifier() and not name.startswith("__"):
        return f"{base}.{name}"
    return f"getattr({base}, {name!r})"


def item_source(base: str, key) -> str:
    """``base[key]`` for a constant key."""
    return f"{base}[{key!r}]"


def global_source(frame_globals: dict, root_globals: dict, name: str) -> str | None:
    """``G['name']`` for the root frame's module; for another module (an inlined function's)
    the expression goes through ``sys.modules``; None when the module cannot be named."""
    if frame_globals is root_globals:
        return f"G[{name!r}]"
    mod = frame_globals.get("__name__")
    m = sys.modules.get(mod) if isinstance(mod, str) else None
    if m is not None and getattr(m, "__dict__", None) is frame_globals:
        return f"__import__('sys').modules[{mod!r}].__dict__[{name!r}]"
    return None
