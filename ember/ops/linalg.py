"""Operators: linalg family (declared here; CPU kernels in ember/backends/cpu/linalg.py)."""

from __future__ import annotations

__all__: list[str] = []
