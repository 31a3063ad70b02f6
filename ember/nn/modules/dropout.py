"""Dropout layers: active in training, identity in eval (``model.eval()``, not ``no_grad``)."""

from __future__ import annotations

from ember.nn.functional import _core as F
from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]


class _DropoutNd(Module):
    _fn = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero elements with probability ``p`` and scale the rest by ``1/(1-p)`` in training.

    Example:
        >>> import ember
        >>> d = ember.nn.Dropout(0.5).eval()
        >>> d(ember.ones(3)).tolist()
        [1.0, 1.0, 1.0]
    """

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)``/``(C, L)`` input in training.

    Example:
        >>> m = ember.nn.Dropout1d(p=0.5)
        >>> y = m(ember.ones(2, 3, 4))
        >>> bool(((y == 0) | (y == 2)).all())  # channels zeroed or scaled by 1 / (1 - p)
        True
        >>> m.eval()(ember.ones(2, 3, 4)).equal(ember.ones(2, 3, 4))  # identity in evaluation
        True
    """

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)``/``(C, H, W)`` input in training.

    Example:
        >>> y = ember.nn.Dropout2d(p=0.5)(ember.ones(2, 3, 4, 4))
        >>> bool(((y == 0) | (y == 2)).all())  # whole channels zeroed, the rest scaled by 2
        True
    """

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` input in training.

    Example:
        >>> ember.nn.Dropout3d(p=0.25)(ember.ones(2, 3, 2, 2, 2)).shape
        ember.Size([2, 3, 2, 2, 2])
    """

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout preserving SELU's self-normalising statistics.

    Example:
        >>> m = ember.nn.AlphaDropout(p=0.5)
        >>> m(ember.ones(4)).shape, m.eval()(ember.ones(4)).tolist()
        (ember.Size([4]), [1.0, 1.0, 1.0, 1.0])
    """

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels.

    Example:
        >>> ember.nn.FeatureAlphaDropout(p=0.5)(ember.ones(2, 3, 4)).shape
        ember.Size([2, 3, 4])
    """

    _fn = staticmethod(F.feature_alpha_dropout)
