"""The ``eager`` backend: run the graph's generated code with ember's own ops."""

from __future__ import annotations

from ember.compiler.backends import register_backend
from ember.compiler.graph import GraphModule

__all__ = ["eager"]


@register_backend("eager")
def eager(gm: GraphModule, example_inputs):
    """Return the GraphModule's ``forward``: every node is an ember op call (autograd records)."""
    return gm.forward
