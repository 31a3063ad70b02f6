"""``torch._logging``'s spelling: ``set_logs(graph_breaks=True, recompiles=True, ...)``."""

from __future__ import annotations

from ember.compiler.logs import set_logs

__all__ = ["set_logs"]
