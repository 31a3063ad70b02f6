"""Loss modules: each stores its options and calls ``ember.nn.functional``.

Weighted losses register ``weight`` (and BCEWithLogitsLoss ``pos_weight``) as buffers, so
they follow ``to()`` and appear in ``state_dict``, as in torch.
"""

from __future__ import annotations

from ember.nn.functional import _core as F
from ember.nn.functional.ctc import ctc_loss
from ember.nn.modules.distance import PairwiseDistance
from ember.nn.modules.module import Module
from ember.tensor import Tensor

__all__ = ["L1Loss", "MSELoss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss",
           "BCELoss", "BCEWithLogitsLoss", "KLDivLoss", "MarginRankingLoss",
           "HingeEmbeddingLoss", "CosineEmbeddingLoss", "TripletMarginLoss", "SoftMarginLoss",
           "MultiMarginLoss", "MultiLabelSoftMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss"]
__all__ += ["CTCLoss"]
__all__ += ["MultiLabelMarginLoss", "TripletMarginWithDistanceLoss"]


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = F._legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class L1Loss(_Loss):
    """Mean (or sum) absolute error.

    Example:
        >>> import ember
        >>> ember.nn.L1Loss()(ember.tensor([1.0, -1.0]), ember.zeros(2)).item()
        1.0
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.l1_loss(input, target, reduction=self.reduction)


class MSELoss(_Loss):
    """Mean (or sum) squared error.

    Example:
        >>> ember.nn.MSELoss()(ember.tensor([1.0, 3.0]), ember.zeros(2))
        tensor(5.)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, L1 above.

    Example:
        >>> ember.nn.SmoothL1Loss(reduction="none")(ember.tensor([0.5, 3.0]), ember.zeros(2))
        tensor([0.1250, 2.5000])
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0) -> None:
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """Quadratic below ``delta``, ``delta``-scaled L1 above.

    Example:
        >>> ember.nn.HuberLoss(delta=2.0)(ember.tensor([0.5, 3.0]), ember.zeros(2))
        tensor(2.0625)
    """

    def __init__(self, reduction: str = "mean", delta: float = 1.0) -> None:
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """Negative log-likelihood of class indices given log-probabilities.

    Example:
        >>> loss = ember.nn.NLLLoss()
        >>> loss(ember.tensor([[-1.0, -2.0], [-3.0, -4.0]]), ember.tensor([1, 0]))
        tensor(2.5000)
    """

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """Cross entropy of logits against class indices or class probabilities.

    Example:
        >>> import ember
        >>> loss = ember.nn.CrossEntropyLoss()(ember.zeros(2, 4), ember.tensor([1, 2]))
        >>> round(loss.item(), 4)
        1.3863
    """

    def __init__(self, weight: Tensor | None = None, size_average=None,
                 ignore_index: int = -100, reduce=None, reduction: str = "mean",
                 label_smoothing: float = 0.0) -> None:
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """Binary cross entropy of probabilities.

    Example:
        >>> ember.nn.BCELoss()(ember.tensor([0.5, 0.5]), ember.tensor([1.0, 0.0]))
        tensor(0.6931)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """Binary cross entropy of logits (stable), with optional per-class ``pos_weight``.

    Example:
        >>> loss = ember.nn.BCEWithLogitsLoss(pos_weight=ember.tensor([2.0]))
        >>> loss(ember.zeros(2), ember.tensor([1.0, 0.0]))
        tensor(1.0397)
    """

    def __init__(self, weight: Tensor | None = None, size_average=None, reduce=None,
                 reduction: str = "mean", pos_weight: Tensor | None = None) -> None:
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """KL divergence; ``input`` holds log-probabilities (``log_target`` for the target too).

    Example:
        >>> loss = ember.nn.KLDivLoss(reduction="batchmean", log_target=True)
        >>> logp = ember.tensor([[0.25, 0.75]]).log()
        >>> loss(logp, logp)
        tensor(0.)
    """

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False) -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class _MarginLoss(_Loss):
    def __init__(self, margin: float = 0.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.margin = margin


class MarginRankingLoss(_MarginLoss):
    """``max(0, -y * (x1 - x2) + margin)``.

    Example:
        >>> loss = ember.nn.MarginRankingLoss(margin=0.5)
        >>> loss(ember.tensor([1.0, 2.0]), ember.tensor([2.0, 1.0]), ember.tensor([1.0, 1.0]))
        tensor(0.7500)
    """

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.margin_ranking_loss(input1, input2, target, margin=self.margin,
                                     reduction=self.reduction)


class HingeEmbeddingLoss(_MarginLoss):
    """``x`` for y = 1, ``max(0, margin - x)`` for y = -1.

    Example:
        >>> loss = ember.nn.HingeEmbeddingLoss(reduction="none")
        >>> loss(ember.tensor([0.25, 0.25]), ember.tensor([1.0, -1.0]))
        tensor([0.2500, 0.7500])
    """

    def __init__(self, margin: float = 1.0, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(margin, size_average, reduce, reduction)

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.hinge_embedding_loss(input, target, margin=self.margin,
                                      reduction=self.reduction)


class CosineEmbeddingLoss(_MarginLoss):
    """``1 - cos`` for y = 1, ``max(0, cos - margin)`` for y = -1.

    Example:
        >>> a, b = ember.tensor([[1.0, 0.0]]), ember.tensor([[0.0, 1.0]])
        >>> ember.nn.CosineEmbeddingLoss()(a, b, ember.tensor([-1]))
        tensor(0.)
    """

    def forward(self, input1: Tensor, input2: Tensor, target: Tensor) -> Tensor:
        return F.cosine_embedding_loss(input1, input2, target, margin=self.margin,
                                       reduction=self.reduction)


class TripletMarginLoss(_Loss):
    """``max(0, d(a, p) - d(a, n) + margin)``.

    Example:
        >>> a, p, n = ember.zeros(1, 2), ember.tensor([[3.0, 4.0]]), ember.tensor([[0.0, 1.0]])
        >>> ember.nn.TripletMarginLoss(eps=0.0)(a, p, n)
        tensor(5.)
    """

    def __init__(self, margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                 swap: bool = False, size_average=None, reduce=None,
                 reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginLoss: expected margin to be greater than 0, got "
                             f"{margin} instead")
        self.margin, self.p, self.eps, self.swap = margin, p, eps, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_loss(anchor, positive, negative, margin=self.margin, p=self.p,
                                     eps=self.eps, swap=self.swap, reduction=self.reduction)


class TripletMarginWithDistanceLoss(_Loss):
    """``max(0, margin + d(a, p) - d(a, n))`` with a caller-chosen distance ``d``.

    ``distance_function`` defaults to a :class:`PairwiseDistance` module (registered as a child,
    as in torch.nn.TripletMarginWithDistanceLoss); the arguments are keyword-only.

    Raises:
        ValueError: ``margin <= 0``.

    Example:
        >>> l1 = lambda x, y: (x - y).abs().sum(-1)
        >>> loss = ember.nn.TripletMarginWithDistanceLoss(distance_function=l1, margin=2.0)
        >>> loss(ember.zeros(1, 2), ember.tensor([[1.0, 1.0]]), ember.tensor([[3.0, 0.0]]))
        tensor(1.)
    """

    def __init__(self, *, distance_function=None, margin: float = 1.0, swap: bool = False,
                 reduction: str = "mean") -> None:
        super().__init__(reduction=reduction)
        if margin <= 0:
            raise ValueError(f"TripletMarginWithDistanceLoss: expected margin to be greater "
                             f"than 0, got {margin} instead")
        self.distance_function = (distance_function if distance_function is not None
                                  else PairwiseDistance())
        self.margin, self.swap = margin, swap

    def forward(self, anchor: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return F.triplet_margin_with_distance_loss(
            anchor, positive, negative, distance_function=self.distance_function,
            margin=self.margin, swap=self.swap, reduction=self.reduction)


class SoftMarginLoss(_Loss):
    """``log(1 + exp(-y * x))``.

    Example:
        >>> ember.nn.SoftMarginLoss()(ember.zeros(2), ember.tensor([1.0, -1.0]))
        tensor(0.6931)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.soft_margin_loss(input, target, reduction=self.reduction)


class MultiMarginLoss(_WeightedLoss):
    """Multi-class hinge loss.

    Example:
        >>> ember.nn.MultiMarginLoss()(ember.tensor([[0.5, 1.0, 0.0]]), ember.tensor([1]))
        tensor(0.1667)
    """

    def __init__(self, p: int = 1, margin: float = 1.0, weight: Tensor | None = None,
                 size_average=None, reduce=None, reduction: str = "mean") -> None:
        super().__init__(weight, size_average, reduce, reduction)
        if p not in (1, 2):
            raise ValueError("only p == 1 and p == 2 supported")
        self.p, self.margin = p, margin

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multi_margin_loss(input, target, p=self.p, margin=self.margin,
                                   weight=self.weight, reduction=self.reduction)


class MultiLabelMarginLoss(_Loss):
    """Multi-label hinge loss over the target indices before the first ``-1``.

    Example:
        >>> import ember
        >>> x = ember.tensor([[0.1, 0.2, 0.4, 0.8]])
        >>> round(ember.nn.MultiLabelMarginLoss()(x, ember.tensor([[3, 0, -1, 1]])).item(), 4)
        0.85
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_margin_loss(input, target, reduction=self.reduction)


class MultiLabelSoftMarginLoss(_WeightedLoss):
    """Per-label logistic loss averaged over classes.

    Example:
        >>> ember.nn.MultiLabelSoftMarginLoss()(ember.zeros(1, 3), ember.tensor([[1.0, 0.0, 1.0]]))
        tensor(0.6931)
    """

    def forward(self, input: Tensor, target: Tensor) -> Tensor:
        return F.multilabel_soft_margin_loss(input, target, weight=self.weight,
                                             reduction=self.reduction)


class PoissonNLLLoss(_Loss):
    """Poisson negative log-likelihood.

    Example:
        >>> ember.nn.PoissonNLLLoss()(ember.zeros(2), ember.tensor([1.0, 3.0]))
        tensor(1.)
    """

    def __init__(self, log_input: bool = True, full: bool = False, size_average=None,
                 eps: float = 1e-8, reduce=None, reduction: str = "mean") -> None:
        super().__init__(size_average, reduce, reduction)
        self.log_input, self.full, self.eps = log_input, full, eps

    def forward(self, log_input: Tensor, target: Tensor) -> Tensor:
        return F.poisson_nll_loss(log_input, target, log_input=self.log_input, full=self.full,
                                  eps=self.eps, reduction=self.reduction)


class GaussianNLLLoss(_Loss):
    """Gaussian negative log-likelihood with predicted variance.

    Example:
        >>> loss = ember.nn.GaussianNLLLoss()
        >>> loss(ember.tensor([1.0, 3.0]), ember.tensor([2.0, 1.0]), ember.ones(2))
        tensor(1.2500)
    """

    def __init__(self, *, full: bool = False, eps: float = 1e-6, reduction: str = "mean"
                 ) -> None:
        super().__init__(reduction=reduction)
        self.full, self.eps = full, eps

    def forward(self, input: Tensor, target: Tensor, var) -> Tensor:
        return F.gaussian_nll_loss(input, target, var, full=self.full, eps=self.eps,
                                   reduction=self.reduction)


class CTCLoss(_Loss):
    """Connectionist temporal classification loss (see :func:`ember.nn.functional.ctc_loss`).

    Shape: log_probs ``(T, N, C)`` or ``(T, C)``; targets ``(N, S)`` or
    ``(sum(target_lengths),)``; input_lengths and target_lengths ``(N,)``; output scalar, or
    ``(N,)`` with ``reduction='none'``.

    Example:
        >>> import ember
        >>> lp = ember.zeros(3, 1, 2).log_softmax(2)
        >>> round(ember.nn.CTCLoss()(lp, ember.tensor([[1]]), [3], [1]).item(), 4)
        0.2877
    """

    def __init__(self, blank: int = 0, reduction: str = "mean", zero_infinity: bool = False
                 ) -> None:
        super().__init__(reduction=reduction)
        self.blank = blank
        self.zero_infinity = zero_infinity

    def forward(self, log_probs: Tensor, targets: Tensor, input_lengths,
                target_lengths) -> Tensor:
        return ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank,
                        self.reduction, self.zero_infinity)
