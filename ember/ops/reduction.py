"""Operators: reduction family (declared here; CPU kernels in ember/backends/cpu/reduction.py)."""

from __future__ import annotations

__all__: list[str] = []
