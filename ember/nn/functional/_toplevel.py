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
from ember.ops._define import tensor_method
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
    """``nn.functional.dropout(input, p, training=train)`` (every argument required).

    Example:
        >>> ember.dropout(ember.ones(4), 0.5, False)  # train=False: unchanged
        tensor([1., 1., 1., 1.])
        >>> y = ember.dropout(ember.ones(100), 0.5, True)
        >>> bool(((y == 0) | (y == 2)).all())
        True
    """
    return F.dropout(input, p, train)


def dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`dropout`.

    Example:
        >>> x = ember.ones(4)
        >>> ember.dropout_(x, 0.25, True) is x
        True
    """
    return F.dropout(input, p, train, inplace=True)


def alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """``nn.functional.alpha_dropout(input, p, training=train)``.

    Example:
        >>> ember.alpha_dropout(ember.ones(3), 0.5, False)
        tensor([1., 1., 1.])
    """
    return F.alpha_dropout(input, p, train)


def alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`alpha_dropout`.

    Example:
        >>> x = ember.ones(3)
        >>> ember.alpha_dropout_(x, 0.5, True) is x
        True
    """
    return F.alpha_dropout(input, p, train, inplace=True)


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Dropout of whole channels (dims 0 and 1 are kept per element; at least 2 dims).

    Example:
        >>> y = ember.feature_dropout(ember.ones(2, 3, 4), 0.5, True)
        >>> bool((y.amax(dim=2) == y.amin(dim=2)).all())  # whole channels kept or zeroed
        True
    """
    return _core._feature_dropout(input, p, train, False, False)


def feature_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`feature_dropout`.

    Example:
        >>> x = ember.ones(2, 3, 4)
        >>> ember.feature_dropout_(x, 0.5, True) is x
        True
    """
    return _core._feature_dropout(input, p, train, True, False)


def feature_alpha_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Alpha dropout of whole channels.

    Example:
        >>> ember.feature_alpha_dropout(ember.ones(2, 3, 4), 0.5, True).shape
        ember.Size([2, 3, 4])
    """
    return _core._feature_dropout(input, p, train, False, True)


def feature_alpha_dropout_(input: Tensor, p: float, train: bool) -> Tensor:
    """In-place :func:`feature_alpha_dropout`.

    Example:
        >>> x = ember.ones(2, 3, 4)
        >>> ember.feature_alpha_dropout_(x, 0.5, True) is x
        True
    """
    return _core._feature_dropout(input, p, train, True, True)


# -- normalisation ----------------------------------------------------------------------------
def layer_norm(input: Tensor, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True) -> Tensor:
    """``nn.functional.layer_norm`` (``cudnn_enable`` is accepted and ignored).

    Example:
        >>> ember.layer_norm(ember.tensor([[1.0, 3.0]]), [2]).round(decimals=3)
        tensor([[-1.,  1.]])
    """
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input: Tensor, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True) -> Tensor:
    """``nn.functional.group_norm`` (``cudnn_enabled`` is accepted and ignored).

    Example:
        >>> ember.group_norm(ember.tensor([[1.0, 3.0, 5.0, 9.0]]), 2).round(decimals=3)
        tensor([[-1.,  1., -1.,  1.]])
    """
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input: Tensor, weight, bias, running_mean, running_var, training: bool,
               momentum: float, eps: float, cudnn_enabled: bool) -> Tensor:
    """ATen's ``batch_norm``: ``weight, bias`` come before the running statistics.

    Example:
        >>> x = ember.tensor([[1.0, 10.0], [3.0, 20.0]])
        >>> mean, var = ember.zeros(2), ember.ones(2)
        >>> ember.batch_norm(x, None, None, mean, var, True, 0.1, 1e-5, False).round(decimals=3)
        tensor([[-1., -1.],
                [ 1.,  1.]])
    """
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight, bias, running_mean, running_var,
                  use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool) -> Tensor:
    """ATen's ``instance_norm``: ``weight, bias`` come before the running statistics.

    Example:
        >>> x = ember.tensor([[[1.0, 3.0], [5.0, 9.0]]])
        >>> ember.instance_norm(x, None, None, None, None, True, 0.1, 1e-5, False).round(decimals=3)
        tensor([[[-1.,  1.],
                 [-1.,  1.]]])
    """
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def rms_norm(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:
    """``nn.functional.rms_norm``.

    Example:
        >>> ember.rms_norm(ember.tensor([[3.0, -3.0]]), [2]).round(decimals=3)
        tensor([[ 1., -1.]])
    """
    return F.rms_norm(input, normalized_shape, weight, eps)


# -- embeddings and distances -----------------------------------------------------------------
def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1,
              scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """ATen's ``embedding``: the weight first; a negative ``padding_idx`` means none.

    Example:
        >>> weight = ember.arange(6.0).reshape(3, 2)
        >>> ember.embedding(weight, ember.tensor([2, 0]))
        tensor([[4., 5.],
                [0., 1.]])
    """
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                       scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """``nn.functional.cosine_similarity``.

    Example:
        >>> ember.cosine_similarity(ember.tensor([[1.0, 0.0]]), ember.tensor([[2.0, 0.0]]))
        tensor([1.])
    """
    return F.cosine_similarity(x1, x2, dim, eps)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """``nn.functional.pairwise_distance``.

    Example:
        >>> ember.pairwise_distance(ember.tensor([[0.0, 0.0]]), ember.tensor([[3.0, 4.0]]), eps=0.0)
        tensor([5.])
    """
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def pdist(input: Tensor, p: float = 2.0) -> Tensor:
    """``nn.functional.pdist``.

    Example:
        >>> ember.pdist(ember.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]))
        tensor([ 5., 10.,  5.])
    """
    return F.pdist(input, p)


def kl_div(input: Tensor, target: Tensor, reduction: int = 0, *,
           log_target: bool = False) -> Tensor:
    """ATen's ``kl_div``: ``reduction`` 1 is the mean over every element (no warning).

    Example:
        >>> logp = ember.tensor([0.5, 0.5]).log()
        >>> ember.kl_div(logp, ember.tensor([0.5, 0.5]), 2)  # reduction 2: sum
        tensor(0.)
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


# -- pixel and channel shuffles ---------------------------------------------------------------
def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """``nn.functional.pixel_shuffle``.

    Example:
        >>> ember.pixel_shuffle(ember.arange(4.0).reshape(1, 4, 1, 1), 2)
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """``nn.functional.pixel_unshuffle``.

    Example:
        >>> ember.pixel_unshuffle(ember.arange(4.0).reshape(1, 1, 2, 2), 2).flatten()
        tensor([0., 1., 2., 3.])
    """
    return F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """``nn.functional.channel_shuffle``.

    Example:
        >>> ember.channel_shuffle(ember.arange(4.0).reshape(1, 4, 1, 1), 2).flatten()
        tensor([0., 2., 1., 3.])
    """
    return F.channel_shuffle(input, groups)


native_channel_shuffle = channel_shuffle


# -- activations --------------------------------------------------------------------------------
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place ``celu``.

    Example:
        >>> x = ember.tensor([-1.0, 2.0])
        >>> ember.celu_(x) is x, x
        (True, tensor([-0.6321,  2.0000]))
    """
    return F.celu_(input, alpha)


def selu_(input: Tensor) -> Tensor:
    """In-place ``selu``.

    Example:
        >>> x = ember.tensor([-1.0, 2.0])
        >>> ember.selu_(x) is x, x
        (True, tensor([-1.1113,  2.1014]))
    """
    return F.selu_(input)


def rrelu(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
          training: bool = False, generator=None) -> Tensor:
    """``nn.functional.rrelu`` (``training`` defaults to False at the top level, as ATen).

    Example:
        >>> ember.rrelu(ember.tensor([-1.0, 2.0]), 0.25, 0.75)
        tensor([-0.5000,  2.0000])
    """
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1.0 / 8, upper: float = 1.0 / 3,
           training: bool = False, generator=None) -> Tensor:
    """In-place :func:`rrelu`.

    Example:
        >>> x = ember.tensor([-1.0, 2.0])
        >>> ember.rrelu_(x, 0.25, 0.75) is x, x.tolist()
        (True, [-0.5, 2.0])
    """
    return F.rrelu_(input, lower, upper, training)


def threshold(input: Tensor, threshold: float, value: float) -> Tensor:
    """``value`` where ``input <= threshold``, else ``input``.

    Example:
        >>> ember.threshold(ember.tensor([0.5, 1.0, 3.0]), 1.0, -9.0)
        tensor([-9., -9.,  3.])
    """
    return F.threshold(input, threshold, value)


def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place :func:`threshold`.

    Example:
        >>> x = ember.tensor([0.5, 1.0, 3.0])
        >>> ember.threshold_(x, 1.0, -9.0) is x, x.tolist()
        (True, [-9.0, -9.0, 3.0])
    """
    return F.threshold_(input, threshold, value)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """``nn.functional.prelu``.

    Example:
        >>> ember.prelu(ember.tensor([[-2.0, 3.0]]), ember.tensor([0.25]))
        tensor([[-0.5000,  3.0000]])
    """
    return F.prelu(input, weight)


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """``nn.functional.hardshrink``.

    Example:
        >>> ember.hardshrink(ember.tensor([-1.0, 0.25, 2.0]))
        tensor([-1.,  0.,  2.])
    """
    return F.hardshrink(input, lambd)


def bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias=None) -> Tensor:
    """``nn.functional.bilinear``.

    Example:
        >>> ember.bilinear(ember.ones(4, 2), ember.ones(4, 3), ember.ones(5, 2, 3)).shape
        ember.Size([4, 5])
    """
    return F.bilinear(input1, input2, weight, bias)


# -- losses (reduction as ATen's int) ---------------------------------------------------------
def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight=None,
                                     pos_weight=None, reduction: int = 0) -> Tensor:
    """``nn.functional.binary_cross_entropy_with_logits`` with an int ``reduction``.

    Example:
        >>> target = ember.tensor([1.0, 0.0])
        >>> ember.binary_cross_entropy_with_logits(ember.zeros(2), target, reduction=1)
        tensor(0.6931)
    """
    return F.binary_cross_entropy_with_logits(input, target, weight,
                                              reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: int = 0) -> Tensor:
    """``nn.functional.cosine_embedding_loss`` with an int ``reduction``.

    Example:
        >>> a, b = ember.tensor([[1.0, 0.0]]), ember.tensor([[0.0, 1.0]])
        >>> ember.cosine_embedding_loss(a, b, ember.tensor([1]), 0.0, 1)  # reduction 1: mean
        tensor(1.)
    """
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0,
                         reduction: int = 0) -> Tensor:
    """``nn.functional.hinge_embedding_loss`` with an int ``reduction``.

    Example:
        >>> x, y = ember.tensor([0.25, 0.25]), ember.tensor([1.0, -1.0])
        >>> ember.hinge_embedding_loss(x, y, 1.0, 0)  # reduction 0: none
        tensor([0.2500, 0.7500])
    """
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: int = 0) -> Tensor:
    """``nn.functional.margin_ranking_loss`` with an int ``reduction``.

    Example:
        >>> x1, x2 = ember.tensor([1.0, 2.0]), ember.tensor([2.0, 1.0])
        >>> ember.margin_ranking_loss(x1, x2, ember.tensor([1.0, 1.0]), 0.0, 0)  # reduction 0: none
        tensor([1., 0.])
    """
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: int) -> Tensor:
    """``nn.functional.poisson_nll_loss`` (every argument required; int ``reduction``).

    Example:
        >>> ember.poisson_nll_loss(ember.zeros(2), ember.tensor([1.0, 3.0]), True, False, 1e-8, 1)
        tensor(1.)
    """
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2.0, eps: float = 1e-6,
                        swap: bool = False, reduction: int = 0) -> Tensor:
    """``nn.functional.triplet_margin_loss`` with an int ``reduction``.

    Example:
        >>> a, p, n = ember.zeros(1, 2), ember.tensor([[3.0, 4.0]]), ember.tensor([[0.0, 1.0]])
        >>> ember.triplet_margin_loss(a, p, n, eps=0.0, reduction=1)
        tensor(5.)
    """
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: int = 0, zero_infinity: bool = False) -> Tensor:
    """``nn.functional.ctc_loss`` with an int ``reduction``.

    Example:
        >>> log_probs = ember.randn(6, 2, 4).log_softmax(2)  # (T, N, C)
        >>> targets = ember.tensor([[1, 2], [3, 3]])
        >>> loss = ember.ctc_loss(log_probs, targets, [6, 6], [2, 2], reduction=0)
        >>> loss.shape, bool((loss > 0).all())
        (ember.Size([2]), True)
    """
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                         reduction=_reduction(reduction), zero_infinity=zero_infinity)


# -- grid sampling (ATen's int modes) ------------------------------------------------------------
_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input: Tensor, grid: Tensor, interpolation_mode: int, padding_mode: int,
                 align_corners: bool) -> Tensor:
    """``nn.functional.grid_sample`` with ATen's int modes (interpolation 0 bilinear,
    1 nearest, 2 bicubic; padding 0 zeros, 1 border, 2 reflection).

    Example:
        >>> x = ember.arange(4.0).reshape(1, 1, 2, 2)
        >>> theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> identity = ember.affine_grid_generator(theta, (1, 1, 2, 2), False)
        >>> ember.grid_sampler(x, identity, 0, 0, False)  # bilinear, zero padding
        tensor([[[[0., 1.],
                  [2., 3.]]]])
    """
    return F.grid_sample(input, grid, _INTERPOLATION[interpolation_mode],
                         _PADDING[padding_mode], align_corners)


grid_sampler_2d = grid_sampler
grid_sampler_3d = grid_sampler


def affine_grid_generator(theta: Tensor, size, align_corners: bool) -> Tensor:
    """``nn.functional.affine_grid`` (every argument required).

    Example:
        >>> theta = ember.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])  # the identity transform
        >>> ember.affine_grid_generator(theta, (1, 1, 2, 2), True)
        tensor([[[[-1., -1.],
                  [ 1., -1.]],
        <BLANKLINE>
                 [[-1.,  1.],
                  [ 1.,  1.]]]])
    """
    return F.affine_grid(theta, list(size), align_corners)


__all__ += ["grid_sampler", "grid_sampler_2d", "grid_sampler_3d", "affine_grid_generator"]


# torch has these two as Tensor methods too; they are bound here, next to the functions
@tensor_method("hardshrink")
def _hardshrink_method(self: Tensor, lambd: float = 0.5) -> Tensor:
    """``Tensor.hardshrink(lambd)``: :func:`hardshrink` of ``self``."""
    return F.hardshrink(self, lambd)


@tensor_method("prelu")
def _prelu_method(self: Tensor, weight: Tensor) -> Tensor:
    """``Tensor.prelu(weight)``: :func:`prelu` of ``self``."""
    return F.prelu(self, weight)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float,
                      norm_type: float) -> Tensor:
    """Rescale, in place, the rows of ``weight`` that ``indices`` uses so that their
    ``norm_type``-norm is at most ``max_norm`` (ATen's ``embedding_renorm_``; no autograd).

    Example:
        >>> w = ember.ones(3, 4)
        >>> ember.embedding_renorm_(w, ember.tensor([0]), 1.0, 2.0)[0].norm().item() <= 1.0
        True
    """
    _core._renorm_(weight, indices, max_norm, norm_type)
    return weight


__all__ += ["embedding_renorm_"]
