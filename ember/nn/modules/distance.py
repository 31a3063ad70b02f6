"""Distance layers: PairwiseDistance and CosineSimilarity."""

from __future__ import annotations

__all__: list[str] = []
