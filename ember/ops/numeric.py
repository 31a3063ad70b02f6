"""Numerical utilities built from other ops (composites): differences and integration,
statistics (cov, corrcoef), set membership, combinatorics and matrix builders."""

from __future__ import annotations

__all__: list[str] = []
