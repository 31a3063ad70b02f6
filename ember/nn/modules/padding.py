"""Padding layers: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and CircularPad (1-3d)."""

from __future__ import annotations

__all__: list[str] = []
