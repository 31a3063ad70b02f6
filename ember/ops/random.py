"""Operators: random family (declared here; CPU kernels in ember/backends/cpu/random.py)."""

from __future__ import annotations

__all__: list[str] = []
