"""Lowering for the C backend: graph nodes -> loop-level IR (``ir``), op decompositions
(``decomp``) and the fusion scheduler (``scheduler``)."""

from __future__ import annotations
