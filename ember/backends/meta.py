"""The Meta backend: every operator's output shape, strides and dtype, with no data.

The Meta kernels themselves are made by a dispatcher-wide fallback from each operator's shape
rule (``ember/ops/_meta.py``), so an operator has one the moment it is declared. This module
keeps the names older code imports.
"""

from __future__ import annotations

from ember.ops._meta import materialize, meta_kernel

__all__ = ["materialize", "meta_kernel", "register_meta_kernels"]


def register_meta_kernels() -> None:
    """Nothing to do: the Meta fallback serves every operator with a shape rule."""
