"""Distance layers: PairwiseDistance and CosineSimilarity.

Thin modules over ``F.pairwise_distance`` and ``F.cosine_similarity``; like torch's they carry
their options as attributes and have no ``extra_repr``.
"""

from __future__ import annotations

from ember.nn.functional import _core as F
from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["PairwiseDistance", "CosineSimilarity"]


class PairwiseDistance(Module):
    """``||x1 - x2 + eps||_p`` over the last dim (``torch.nn.PairwiseDistance``).

    Args:
        p: the norm's order (stored as ``norm``, as torch does).
        eps: added to the difference to avoid a zero norm.
        keepdim: keep the reduced dim as size 1.

    Shape:
        ``(N, D)`` or ``(D,)`` pairs (broadcast) -> ``(N,)`` or ``()``; with ``keepdim``
        ``(N, 1)`` or ``(1,)``.

    Example:
        >>> import ember
        >>> ember.nn.PairwiseDistance(eps=0.)(ember.zeros(1, 2), ember.tensor([[3., 4.]]))
        tensor([5.])
    """

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm = p
        self.eps = eps
        self.keepdim = keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """Cosine similarity of ``x1`` and ``x2`` along ``dim`` (``torch.nn.CosineSimilarity``).

    Each norm is clamped below at ``eps``.

    Args:
        dim: the dim the similarity is taken over.
        eps: lower bound of each norm.

    Shape:
        ``(*1, D, *2)`` pairs (broadcast) -> ``(*1, *2)``.

    Example:
        >>> import ember
        >>> ember.nn.CosineSimilarity()(ember.tensor([[1., 0.]]), ember.tensor([[1., 1.]]))
        tensor([0.7071])
    """

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim = dim
        self.eps = eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        return F.cosine_similarity(x1, x2, self.dim, self.eps)
