"""Operators: scatter_gather family (declared here; CPU kernels in ember/backends/cpu/scatter_gather.py)."""

from __future__ import annotations

__all__: list[str] = []
