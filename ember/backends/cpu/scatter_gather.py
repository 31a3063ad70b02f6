"""CPU kernels of the scatter_gather family."""

from __future__ import annotations
