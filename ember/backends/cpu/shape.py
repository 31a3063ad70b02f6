"""CPU kernels of the shape family."""

from __future__ import annotations
