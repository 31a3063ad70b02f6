"""Functional forms of the pixel / channel shuffles and local response normalisation."""

from __future__ import annotations

__all__: list[str] = []
