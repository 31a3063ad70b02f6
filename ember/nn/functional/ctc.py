"""``ember.nn.functional.ctc_loss``: connectionist temporal classification, as torch's.

The negative log-likelihood is a composite of differentiable ember ops: the CTC forward (alpha)
recursion in log space, one step per time frame, vectorised over the batch and the extended
label sequence ``blank, l1, blank, l2, ..., blank`` (length ``2S + 1``). Argument checks follow
torch's CPU kernel in order, type and message.

# NOTE [CTC gradient as torch computes it]
torch's ``ctc_loss`` backward does not return the derivative of the loss with respect to
``log_probs``: it returns Graves' eq. 16, ``exp(log_probs) - posterior``, the derivative with
respect to the *logits* when ``log_probs = log_softmax(logits)`` (through log_softmax both give
the same result, since the ``exp(log_probs)`` term sums to one over classes). Frames past a
sample's input length get 0, and a sample whose loss is infinite gets NaN at every frame of its
input unless ``zero_infinity`` zeroes it. The composite gives the true derivative (the
``-posterior`` part); ``_TorchCTCGrad`` adds the ``exp(log_probs)`` part and the NaNs, so
gradients equal torch's.
"""

from __future__ import annotations

import math

from ember.autograd.function import Function
from ember.backends.autocast import autocast_function
from ember.core import dtype as dt
from ember.ops.creation import arange, full, tensor
from ember.ops.pointwise import where
from ember.ops.shape import cat, stack
from ember.tensor import Tensor

__all__ = ["ctc_loss"]

_INF = math.inf
_FROM = " (while checking arguments for ctc_loss_allocate_outputs)"


@autocast_function("fp32")
def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths, target_lengths,
             blank: int = 0, reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """Connectionist temporal classification loss (``torch.nn.functional.ctc_loss``).

    The loss of a sample is ``-log p(target | log_probs)``, summed over every alignment of the
    target with the input frames (a label may repeat across frames; ``blank`` separates labels
    and must sit between two equal consecutive labels). Impossible alignments (input too short)
    give ``inf``.

    Args:
        log_probs: log-probabilities over classes (normally a ``log_softmax`` output), float32
            or float64.
        targets: class indices, padded ``(N, S)`` or concatenated ``(sum(target_lengths),)``
            (converted to int64; values past a sample's target length are never read).
        input_lengths: frames used per sample (``<= T``), an integer tensor or a sequence of ints.
        target_lengths: target length per sample, an integer tensor or a sequence of ints (both
            lengths tensors, or both sequences).
        blank: index of the blank class.
        reduction: ``'none'`` (per-sample losses), ``'sum'``, or ``'mean'`` (each loss divided by
            its target length clamped at 1, then the batch mean).
        zero_infinity: replace infinite losses (and their gradients) by 0.

    Returns:
        The loss: ``(N,)`` for ``'none'`` (``()`` for unbatched input), else a scalar.

    Raises:
        RuntimeError: bad shapes, lengths or ``blank`` (torch's messages), non-integral length
            tensors, empty ``log_probs``, targets outside ``[0, C)`` (torch reads past memory).
        NotImplementedError: ``log_probs`` not float32/float64.
        ValueError: unknown ``reduction``. TypeError: lengths of mixed or wrong kinds.

    Shape: log_probs ``(T, N, C)`` or ``(T, C)``; targets ``(N, S)``, ``(sum(target_lengths),)``
    or ``(S,)`` unbatched; input_lengths and target_lengths ``(N,)``.

    The gradient with respect to ``log_probs`` is torch's, see NOTE [CTC gradient as torch
    computes it] in this module.

    Example:
        >>> import ember
        >>> lp = ember.zeros(3, 1, 2).log_softmax(2)
        >>> loss = ember.nn.functional.ctc_loss(lp, ember.tensor([[1]]), [3], [1], reduction="sum")
        >>> round(loss.item(), 4)  # 6 of the 8 paths collapse to [1]: -log(6/8)
        0.2877
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    in_lens, tg_lens = _lengths(input_lengths, target_lengths)
    if log_probs.dtype not in (dt.float32, dt.float64):
        raise NotImplementedError(f"\"ctc_loss_cpu\" not implemented for "
                                  f"'{log_probs.dtype.scalar_name}'")
    if log_probs.numel() == 0:
        raise RuntimeError("log_probs tensor must not be empty")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else log_probs.unsqueeze(1)  # (T, C) -> (T, 1, C)
    _check_args(lp, targets, in_lens, tg_lens, blank)
    labels = _labels(targets.to(dt.int64), tg_lens, blank, lp.shape[2])
    nll = _neg_log_likelihood(lp, labels, in_lens, tg_lens, blank)
    valid = arange(lp.shape[0]).reshape(-1, 1, 1) < tensor(in_lens).reshape(1, -1, 1)
    nll = _TorchCTCGrad.apply(nll, lp, valid, zero_infinity)
    if zero_infinity:
        nll = where(nll == _INF, 0.0, nll)
    if reduction == "mean":
        return (nll / tensor(tg_lens, dtype=nll.dtype).clamp_min(1)).mean()
    if reduction == "sum":
        return nll.sum()
    return nll if batched else nll.squeeze(0)


# -- arguments --------------------------------------------------------------------------------
def _length_tensor(name: str, t: Tensor) -> list[int]:
    if t.dtype.is_floating_point or t.dtype is dt.bool_:
        raise RuntimeError(f"{name} must be integral")
    return [int(v) for v in t.reshape(-1).tolist()]


def _length_list(name: str, seq) -> list[int]:
    out = []
    for v in seq:
        if isinstance(v, Tensor) and v.numel() == 1 and not v.dtype.is_floating_point:
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"ctc_loss(): {name} must be a tuple of ints; got an element of "
                            f"type {type(v).__name__}")
        out.append(v)
    return out


def _lengths(input_lengths, target_lengths) -> tuple[list[int], list[int]]:
    """Both lengths as lists of ints: both tensors (integral) or both sequences of ints."""
    if isinstance(input_lengths, Tensor) and isinstance(target_lengths, Tensor):
        return (_length_tensor("input_lengths", input_lengths),
                _length_tensor("target_lengths", target_lengths))
    if isinstance(input_lengths, list | tuple) and isinstance(target_lengths, list | tuple):
        return (_length_list("input_lengths", input_lengths),
                _length_list("target_lengths", target_lengths))
    raise TypeError(f"ctc_loss(): input_lengths and target_lengths must both be tensors or both "
                    f"be tuples of ints; got {type(input_lengths).__name__} and "
                    f"{type(target_lengths).__name__}")


def _check_args(lp: Tensor, targets: Tensor, in_lens: list, tg_lens: list, blank: int) -> None:
    """torch's checks, in its order (the first failing one raises)."""
    if lp.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {lp.dim()}-dimensional "
                           f"tensor for argument #1 'log_probs'{_FROM}")
    if targets.dim() not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional "
                           f"tensor for argument #2 'targets'{_FROM}")
    t_max, n, c = lp.shape
    if not 0 <= blank < c:
        raise RuntimeError("blank must be in label range")
    if len(in_lens) != n:
        raise RuntimeError("input_lengths must be of size batch_size")
    if len(tg_lens) != n:
        raise RuntimeError("target_lengths must be of size batch_size")
    for v in tg_lens:
        _at_least_zero("target_lengths", v)
    want = sum(tg_lens) if targets.dim() == 1 else n
    if targets.shape[0] != want:
        raise RuntimeError(f"Expected tensor to have size {want} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets'{_FROM}")
    if targets.dim() == 2 and targets.shape[1] < max(tg_lens):
        raise RuntimeError(f"Expected tensor to have size at least {max(tg_lens)} at dimension "
                           f"1, but got size {targets.shape[1]} for argument #2 'targets'{_FROM}")
    for v in in_lens:
        _at_least_zero("input_lengths", v)
        if v > t_max:
            raise RuntimeError(f"Expected input_lengths to have value at most {t_max}, but got "
                               f"value {v}{_FROM}")


def _at_least_zero(name: str, v: int) -> None:
    if v < 0:
        raise RuntimeError(f"Expected {name} to have value at least 0, but got value {v}{_FROM}")


def _labels(targets: Tensor, tg_lens: list, blank: int, num_classes: int) -> Tensor:
    """Targets as a padded ``(N, S_max)`` int64 tensor, ``blank`` past each target's length."""
    n, s_max = len(tg_lens), max(tg_lens)
    lens = tensor(tg_lens).reshape(n, 1)
    j = arange(s_max).reshape(1, s_max)
    used = j < lens                                                         # (N, S_max)
    if targets.dim() == 2:
        padded = targets[:, :s_max]
    else:
        starts = tensor([sum(tg_lens[:b]) for b in range(n)]).reshape(n, 1)
        flat_idx = where(used, starts + j, 0)                               # (N, S_max)
        padded = targets.index_select(0, flat_idx.reshape(-1)).reshape(n, s_max) \
            if targets.numel() else full((n, s_max), blank, dtype=dt.int64)
    if used.any().item():
        seen = padded[used]
        lo, hi = int(seen.min().item()), int(seen.max().item())
        if lo < 0 or hi >= num_classes:
            bad = lo if lo < 0 else hi
            raise RuntimeError(f"ctc_loss: target value {bad} is out of range; expected class "
                               f"indices in [0, {num_classes})")
    return where(used, padded, blank)


# -- the alpha recursion ----------------------------------------------------------------------
def _log_sum_exp(*terms: Tensor) -> Tensor:
    """``log(sum(exp(terms)))`` elementwise, max-shifted as torch's kernel; -inf where every term
    is -inf, with a zero (never NaN) gradient there."""
    stacked = stack(terms)                                                  # (k, ...)
    m = stacked.detach().amax(0)
    finite = m != -_INF
    shift = where(finite, m, 0.0)
    total = (stacked - shift).exp().sum(0)
    return where(finite, where(finite, total, 1.0).log() + shift, -_INF)


def _neg_log_likelihood(lp: Tensor, labels: Tensor, in_lens: list, tg_lens: list,
                        blank: int) -> Tensor:
    """Per-sample ``-log p(target)`` of ``(T, N, C)`` log-probs: the CTC alpha recursion."""
    t_max, n, _ = lp.shape
    s_max = labels.shape[1]
    width = 2 * s_max + 1
    blanks = full((n, s_max), blank, dtype=dt.int64)
    ext = cat([stack([blanks, labels], 2).reshape(n, 2 * s_max),           # (N, 2S + 1)
               full((n, 1), blank, dtype=dt.int64)], 1)
    no_skip = full((n, min(2, width)), False, dtype=dt.bool_)
    skip = cat([no_skip, ext[:, 2:] != ext[:, :-2]], 1)                     # s-2 -> s allowed
    lp_ext = lp.gather(2, ext.unsqueeze(0).expand(t_max, n, width))        # (T, N, 2S + 1)
    # a virtual frame -1 with all mass on state 0 makes frame 0 an ordinary step
    alpha = where(arange(width) == 0, 0.0, -_INF).to(lp.dtype).expand(n, width)
    pad = full((n, 2), -_INF, dtype=lp.dtype)
    lens = tensor(in_lens).reshape(n, 1)
    for t in range(max(in_lens)):
        shifted = cat([pad, alpha], 1)                                      # (N, 2S + 3)
        from_skip = where(skip, shifted[:, :width], -_INF)
        step = _log_sum_exp(alpha, shifted[:, 1:width + 1], from_skip) + lp_ext[t]
        alpha = where(t < lens, step, alpha)                                # frozen past length
    ends = tensor(tg_lens).reshape(n, 1)
    last = alpha.gather(1, 2 * ends)
    before = where(ends > 0, alpha.gather(1, (2 * ends - 1).clamp_min(0)), -_INF)
    return -_log_sum_exp(last, before).reshape(n)


class _TorchCTCGrad(Function):
    """Identity on the per-sample losses whose backward adds torch's extra gradient terms to
    ``log_probs``: see NOTE [CTC gradient as torch computes it]."""

    @staticmethod
    def forward(ctx, nll: Tensor, log_probs: Tensor, valid: Tensor, zero_infinity: bool):
        ctx.save_for_backward(log_probs)
        ctx.valid = valid                                                   # (T, N, 1) t < len
        ctx.poison = None if zero_infinity else (nll == _INF).reshape(1, -1, 1)
        return nll.clone()

    @staticmethod
    def backward(ctx, grad: Tensor):
        (log_probs,) = ctx.saved_tensors
        extra = where(ctx.valid, log_probs.exp() * grad.reshape(1, -1, 1), 0.0)
        if ctx.poison is not None:
            extra = where(ctx.valid & ctx.poison, math.nan, extra)
        return grad, extra, None, None
