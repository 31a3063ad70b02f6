"""Flatten and Unflatten."""

from __future__ import annotations

from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flatten dims ``start_dim..end_dim`` into one.

    Example:
        >>> import ember
        >>> ember.nn.Flatten()(ember.zeros(2, 3, 4)).shape
        ember.Size([2, 12])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1) -> None:
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input: Tensor) -> Tensor:
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into ``unflattened_size``.

    Example:
        >>> import ember
        >>> ember.nn.Unflatten(1, (2, 3))(ember.zeros(4, 6)).shape
        ember.Size([4, 2, 3])
    """

    def __init__(self, dim: int | str, unflattened_size) -> None:
        super().__init__()
        if not isinstance(unflattened_size, list | tuple):
            raise TypeError(f"unflattened_size must be tuple of ints, but found type "
                            f"{type(unflattened_size).__name__}")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
