"""Lazy layers: shapes inferred from the first input (LazyLinear, LazyConv*, LazyBatchNorm*, ...)."""

from __future__ import annotations

__all__: list[str] = []
