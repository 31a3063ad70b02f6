"""Padding layers: ZeroPad, ConstantPad, ReflectionPad, ReplicationPad and CircularPad (1-3d).

Each layer stores ``padding`` as a tuple of ``(left, right)`` pairs starting from the last dim
and calls ``F.pad`` with its mode; shape checks and their messages come from ``F.pad`` except
for the circular layers, which check the input's dimensionality first, as torch's do.
"""

from __future__ import annotations

from collections.abc import Iterable

from ember.nn.functional import conv as Fc
from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d", "ConstantPad2d",
           "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d",
           "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d", "ZeroPad1d", "ZeroPad2d",
           "ZeroPad3d"]


def _expand(padding, dims: int) -> tuple:
    """``padding`` as a tuple: an iterable as given (its length is checked by ``F.pad``, as in
    torch), a single number repeated ``2 * dims`` times."""
    if isinstance(padding, Iterable) and not isinstance(padding, str):
        return tuple(padding)
    return (padding,) * (2 * dims)


def _pad(input: Tensor, padding: tuple, mode: str, value: float | None = None) -> Tensor:
    # torch's argument parser refuses non-int pads before the kernel runs; F.pad truncates them
    for pos, v in enumerate(padding):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but "
                            f"found element of type {type(v).__name__} at pos {pos}")
    return Fc.pad(input, padding, mode, value)


class _PadNd(Module):
    """Shared body: ``dims`` padded trailing dims, an ``F.pad`` mode, the padding tuple."""

    dims = 1
    mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        self.padding = _expand(padding, self.dims)

    def forward(self, input: Tensor) -> Tensor:
        return _pad(input, self.padding, self.mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        return _pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with a constant (``torch.nn.ConstantPad1d``).

    Args:
        padding: an int for both sides, or ``(left, right)``; negative values crop.
        value: the fill value.

    Shape:
        ``(C, W)`` or ``(N, C, W)`` -> ``W + left + right`` in the last dim (any leading dims
        are accepted, as in torch).

    Example:
        >>> import ember
        >>> ember.nn.ConstantPad1d((1, 0), 9.)(ember.ones(1, 2)).tolist()
        [[9.0, 1.0, 1.0]]
    """

    dims = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with a constant (``torch.nn.ConstantPad2d``).

    Args:
        padding: an int for all sides, or ``(left, right, top, bottom)``; negative values crop.
        value: the fill value.

    Shape:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``(.., H + top + bottom, W + left + right)``.

    Example:
        >>> import ember
        >>> ember.nn.ConstantPad2d(1, 2.)(ember.ones(1, 1, 1)).shape
        ember.Size([1, 3, 3])
    """

    dims = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with a constant (``torch.nn.ConstantPad3d``).

    Args:
        padding: an int for all sides, or ``(left, right, top, bottom, front, back)``;
            negative values crop.
        value: the fill value.

    Shape:
        ``(C, D, H, W)`` or ``(N, C, D, H, W)`` -> each of ``D, H, W`` grows by its two pads.

    Example:
        >>> import ember
        >>> ember.nn.ConstantPad3d(1, 0.5)(ember.ones(1, 1, 1, 1)).shape
        ember.Size([1, 3, 3, 3])
    """

    dims = 3


class ZeroPad1d(ConstantPad1d):
    """Pad the last dim with zeros (``torch.nn.ZeroPad1d``); see :class:`ConstantPad1d`.

    Example:
        >>> import ember
        >>> ember.nn.ZeroPad1d(1)(ember.ones(1, 1)).tolist()
        [[0.0, 1.0, 0.0]]
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pad the last 2 dims with zeros (``torch.nn.ZeroPad2d``); see :class:`ConstantPad2d`.

    Example:
        >>> import ember
        >>> ember.nn.ZeroPad2d((1, 0, 0, 1))(ember.ones(1, 1, 1)).tolist()
        [[[0.0, 1.0], [0.0, 0.0]]]
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pad the last 3 dims with zeros (``torch.nn.ZeroPad3d``); see :class:`ConstantPad3d`.

    Example:
        >>> import ember
        >>> ember.nn.ZeroPad3d((1, 1, 0, 0, 0, 0))(ember.ones(1, 1, 1, 1)).shape
        ember.Size([1, 1, 1, 3])
    """

    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pad the last dim with its mirror image, edge excluded (``torch.nn.ReflectionPad1d``).

    Args:
        padding: an int for both sides, or ``(left, right)``; each must be smaller than the
            padded dim; negative values crop.

    Shape:
        ``(C, W)`` or ``(N, C, W)`` -> ``(.., W + left + right)``.

    Example:
        >>> import ember
        >>> ember.nn.ReflectionPad1d(2)(ember.tensor([[1., 2., 3.]])).tolist()
        [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]
    """

    dims, mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Reflection padding of the last 2 dims (``torch.nn.ReflectionPad2d``).

    Args:
        padding: an int for all sides, or ``(left, right, top, bottom)``.

    Shape:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``(.., H + top + bottom, W + left + right)``.

    Example:
        >>> import ember
        >>> ember.nn.ReflectionPad2d(1)(ember.ones(1, 2, 2)).shape
        ember.Size([1, 4, 4])
    """

    dims, mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Reflection padding of the last 3 dims (``torch.nn.ReflectionPad3d``).

    Args:
        padding: an int for all sides, or ``(left, right, top, bottom, front, back)``.

    Shape:
        ``(C, D, H, W)`` or ``(N, C, D, H, W)`` -> each of ``D, H, W`` grows by its two pads.

    Example:
        >>> import ember
        >>> ember.nn.ReflectionPad3d(1)(ember.ones(1, 2, 2, 2)).shape
        ember.Size([1, 4, 4, 4])
    """

    dims, mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Pad the last dim by repeating its edge values (``torch.nn.ReplicationPad1d``).

    Args:
        padding: an int for both sides, or ``(left, right)``; negative values crop.

    Shape:
        ``(C, W)`` or ``(N, C, W)`` -> ``(.., W + left + right)``.

    Example:
        >>> import ember
        >>> ember.nn.ReplicationPad1d((2, 1))(ember.tensor([[1., 2.]])).tolist()
        [[1.0, 1.0, 1.0, 2.0, 2.0]]
    """

    dims, mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Replication padding of the last 2 dims (``torch.nn.ReplicationPad2d``).

    Args:
        padding: an int for all sides, or ``(left, right, top, bottom)``.

    Shape:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``(.., H + top + bottom, W + left + right)``.

    Example:
        >>> import ember
        >>> ember.nn.ReplicationPad2d(1)(ember.ones(1, 1, 1)).shape
        ember.Size([1, 3, 3])
    """

    dims, mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Replication padding of the last 3 dims (``torch.nn.ReplicationPad3d``).

    Args:
        padding: an int for all sides, or ``(left, right, top, bottom, front, back)``.

    Shape:
        ``(C, D, H, W)`` or ``(N, C, D, H, W)`` -> each of ``D, H, W`` grows by its two pads.

    Example:
        >>> import ember
        >>> ember.nn.ReplicationPad3d(1)(ember.ones(1, 1, 1, 1)).shape
        ember.Size([1, 3, 3, 3])
    """

    dims, mode = 3, "replicate"


class _CircularPadNd(_PadNd):
    mode = "circular"

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim not in (self.dims + 1, self.dims + 2):
            raise ValueError(f"expected {self.dims + 1}D or {self.dims + 2}D input (got "
                             f"{input.ndim}D input)")
        return super().forward(input)


class CircularPad1d(_CircularPadNd):
    """Pad the last dim by wrapping around (``torch.nn.CircularPad1d``).

    Args:
        padding: an int for both sides, or ``(left, right)``; at most the padded dim's size
            (one wrap); negative values crop.

    Raises:
        ValueError: the input is not 2-d or 3-d.

    Shape:
        ``(C, W)`` or ``(N, C, W)`` -> ``(.., W + left + right)``.

    Example:
        >>> import ember
        >>> ember.nn.CircularPad1d((1, 2))(ember.tensor([[1., 2., 3.]])).tolist()
        [[3.0, 1.0, 2.0, 3.0, 1.0, 2.0]]
    """

    dims = 1


class CircularPad2d(_CircularPadNd):
    """Circular padding of the last 2 dims (``torch.nn.CircularPad2d``).

    Args:
        padding: an int for all sides, or ``(left, right, top, bottom)``.

    Raises:
        ValueError: the input is not 3-d or 4-d.

    Shape:
        ``(C, H, W)`` or ``(N, C, H, W)`` -> ``(.., H + top + bottom, W + left + right)``.

    Example:
        >>> import ember
        >>> ember.nn.CircularPad2d(1)(ember.ones(1, 2, 2)).shape
        ember.Size([1, 4, 4])
    """

    dims = 2


class CircularPad3d(_CircularPadNd):
    """Circular padding of the last 3 dims (``torch.nn.CircularPad3d``).

    Args:
        padding: an int for all sides, or ``(left, right, top, bottom, front, back)``.

    Raises:
        ValueError: the input is not 4-d or 5-d.

    Shape:
        ``(C, D, H, W)`` or ``(N, C, D, H, W)`` -> each of ``D, H, W`` grows by its two pads.

    Example:
        >>> import ember
        >>> ember.nn.CircularPad3d(1)(ember.ones(1, 1, 1, 1)).shape
        ember.Size([1, 3, 3, 3])
    """

    dims = 3
