"""Operators the autograd machinery needs, reached through the dispatcher by name.

autograd sits below ``ember.ops`` in the layering, so it never imports operator modules; it
looks operators up in the dispatcher's registry the first time it needs them.
"""

from __future__ import annotations

from functools import cache

from ember.dispatch import get_op

__all__ = ["op"]


@cache
def op(name: str):
    """The registered operator ``aten::<name>`` (first overload)."""
    return get_op(name)
