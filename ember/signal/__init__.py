"""``ember.signal``: the ``torch.signal`` namespace (window functions in ``windows``)."""

from __future__ import annotations

from ember.signal import windows as windows

__all__ = ["windows"]
