"""Memory formats and layouts as torch names them (``torch.channels_last``, ``torch.strided``).

ember tensors are strided; a memory format is a request about stride order. ``clone`` honours
``preserve_format`` (keep a dense input's strides) and ``contiguous_format``; ``channels_last``
and ``channels_last_3d`` are accepted wherever a ``memory_format`` argument is and give
row-major contiguous tensors (NHWC strides are not modelled).
"""

from __future__ import annotations

__all__ = ["memory_format", "layout", "contiguous_format", "channels_last", "channels_last_3d",
           "preserve_format", "legacy_contiguous_format", "strided"]


class memory_format:  # noqa: N801 (torch's name)
    """A memory format (``torch.memory_format``); the instances are module constants."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name  # pickles as the module constant


class layout:  # noqa: N801 (torch's name)
    """A tensor layout (``torch.layout``); ember has only ``strided``."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):
        return self.name


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = contiguous_format
strided = layout("strided")
