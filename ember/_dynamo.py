"""``torch._dynamo``'s spellings for scripts written against torch: ``explain``, ``reset``,
``config``, ``disable``, ``allow_in_graph``, ``list_backends``, ``OptimizedModule``,
``mark_dynamic``."""

from __future__ import annotations

from ember.compiler import (
    OptimizedModule,
    allow_in_graph,
    config,
    disable,
    explain,
    is_compiling,
    list_backends,
    register_backend,
    reset,
)
from ember.compiler import compile as optimize  # noqa: F401
from ember.compiler.shapes import mark_dynamic

__all__ = ["explain", "reset", "config", "disable", "allow_in_graph", "list_backends",
           "register_backend", "OptimizedModule", "is_compiling", "mark_dynamic"]
