"""Operators: shape family (declared here; CPU kernels in ember/backends/cpu/shape.py)."""

from __future__ import annotations

__all__: list[str] = []
