"""The functional ops torch also exposes at its top level (``torch.dropout``,
``torch.layer_norm``, ``torch.batch_norm``, ``torch.embedding``, ...), with torch's top-level
signatures, which are ATen's and differ from ``torch.nn.functional``'s: ``dropout(input, p,
train)`` has no defaults, ``batch_norm`` takes ``weight, bias`` before the running statistics,
``embedding`` takes the weight first, losses take ``reduction`` as an int (0 none, 1 mean,
2 sum). ``ember/__init__.py`` re-exports them; each calls the ``nn.functional`` function.
"""

from __future__ import annotations

import warnings

from ember.nn import functional as F
from ember.nn.functional import _core
from ember.tensor import Tensor

__all__ = [
    "dropout", "dropout_", "alpha_dropout", "alpha_dropout_", "feature_dropout",
    "feature_dropout_", "feature_alpha_dropout", "feature_alpha_dropout_", "layer_norm",
    "group_norm", "batch_norm", "instance_norm", "embedding", "cosine_similarity", "kl_div",
    "pairwise_distance", "pdist", "pixel_shuffle", "pixel_unshuffle", "channel_shuffle",
    "native_channel_shuffle", "celu_", "selu_", "rrelu", "rrelu_", "threshold", "threshold_",
    "prelu", "hardshrink", "bilinear", "binary_cross_entropy_with_logits",
    "cosine_embedding_loss", "hinge_embedding_loss", "margin_ranking_loss", "poisson_nll_loss",
    "triplet_margin_loss", "ctc_loss", "rms_norm",
]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(value) -> str:
    """ATen's int reduction (0 none, 1 mean, 2 sum); strings are accepted as well."""
    if isinstance(value, str):
        return value
    try:
        return _REDUCTIONS[value]
    except (KeyError, TypeError):
        raise ValueError(f"{value} is not a valid value for reduction") from None


# -- dropout ----------------------------------------------------------------------------------
def dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.dropout(input, p, training=train)`` (every argument required)."""
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`dropout`."""
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.alpha_dropout(input, p, training=train)``."""
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`alpha_dropout`."""
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels (dims 0 and 1 are kept per element; at least 2 dims)."""
    return _core._feature_dropout(input, p, train, False, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`feature_dropout`."""
    return _core._feature_dropout(input, p, train, True, False)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout of whole channels."""
    return _core._feature_dropout(input, p, train, False, True)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`feature_alpha_dropout`."""
    return _core._feature_dropout(input, p, train, True, True)


# -- normalisation ----------------------------------------------------------------------------
def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    """``nn.functional.layer_norm`` (``cudnn_enable`` is accepted and ignored)."""
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """``nn.functional.group_norm`` (``cudnn_enabled`` is accepted and ignored)."""
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """ATen's ``batch_norm``: ``weight, bias`` come before the running statistics."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight, bias, running_mean, running_var,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """ATen's ``instance_norm``: ``weight, bias`` come before the running statistics."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:
    """``nn.functional.rms_norm``."""
    return F.rms_norm(input, normalized_shape, weight, eps)


# -- embeddings and distances -----------------------------------------------------------------
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """ATen's ``embedding``: the weight first; a negative ``padding_idx`` means none."""
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``nn.functional.cosine_similarity``."""
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``nn.functional.pairwise_distance``."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """``nn.functional.pdist``."""
    return F.pdist(input, p)


def kl_div(input: Tensor, target: Tensor, reduction: int = 1, *,
           log_target: bool = False) -> Tensor:
    """ATen's ``kl_div``: ``reduction`` 1 is the mean over every element (no warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


# -- pixel and channel shuffles ---------------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``nn.functional.pixel_shuffle``."""
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``nn.functional.pixel_unshuffle``."""
    return F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``nn.functional.channel_shuffle``."""
    return F.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


# -- activations --------------------------------------------------------------------------------
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``."""
    return F.celu_(input, alpha)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``."""
    return F.selu_(input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, generator=None) -> Tensor:
    """``nn.functional.rrelu`` (``training`` defaults to False at the top level, as ATen)."""
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False, generator=None) -> Tensor:
    """In-place :func:`rrelu`."""
    return F.rrelu_(input, lower, upper, training)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``value`` where ``input <= threshold``, else ``input``."""
    return F.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`."""
    return F.threshold_(input, threshold, value)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``nn.functional.prelu``."""
    return F.prelu(input, weight)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``nn.functional.hardshrink``."""
    return F.hardshrink(input, lambd)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias=None) -> Tensor:
    """``nn.functional.bilinear``."""
    return F.bilinear(input1, input2, weight, bias)


# -- losses (reduction as ATen's int) ---------------------------------------------------------
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight=None,
                                     pos_weight=None, reduction: int = 1) -> Tensor:
    """``nn.functional.binary_cross_entropy_with_logits`` with an int ``reduction``."""
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 1) -> Tensor:
    """``nn.functional.cosine_embedding_loss`` with an int ``reduction``."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 1) -> Tensor:
    """``nn.functional.hinge_embedding_loss`` with an int ``reduction``."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 1) -> Tensor:
    """``nn.functional.margin_ranking_loss`` with an int ``reduction``."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """``nn.functional.poisson_nll_loss`` (every argument required; int ``reduction``)."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 1) -> Tensor:
    """``nn.functional.triplet_margin_loss`` with an int ``reduction``."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: int = 1, zero_infinity: bool = False) -> Tensor:
    """``nn.functional.ctc_loss`` with an int ``reduction``."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         reduction=_reduction(reduction), zero_infinity=zero_infinity)
