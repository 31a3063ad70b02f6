"""AdaptiveLogSoftmaxWithLoss: the efficient softmax of Grave et al. for large vocabularies.

The layout is torch's (a ``head`` Linear over the shortlist plus one logit per cluster, and a
``tail`` ModuleList of ``Sequential(Linear, Linear)`` projections without bias), so state
dicts move between the two libraries unchanged. Everything is a composite of differentiable
ember ops; rows are routed to clusters with ``index_select`` / ``index_copy``.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Sequence

from ember.nn.functional import _core as F
from ember.nn.modules.container import ModuleList, Sequential
from ember.nn.modules.linear import Linear
from ember.nn.modules.module import Module
from ember.ops.reduction import argmax
from ember.ops.shape import cat
from ember.tensor import Tensor

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


def _check_cutoffs(cutoffs: list, n_classes: int) -> None:
    if len(cutoffs) == 0:
        raise ValueError("cutoffs should be a sequence of length larger than 0")
    if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
            or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
        raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in "
                         "an increasing order, where each value is between 1 and n_classes-1")


def _check_forward(input: Tensor, target: Tensor) -> None:
    if target.dim() == 1:
        if input.shape[0] != target.shape[0]:
            raise RuntimeError("Input and target should have the same size in the batch "
                               "dimension.")
        if input.dim() != 2:
            raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs "
                               f"with size {input.shape}")
    elif target.dim() == 0:
        if input.dim() != 1:
            raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs "
                               f"with size {input.shape}")
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")


class AdaptiveLogSoftmaxWithLoss(Module):
    """Adaptive softmax (torch.nn.AdaptiveLogSoftmaxWithLoss).

    Classes below ``cutoffs[0]`` (the shortlist) are scored by ``head`` directly; each cluster
    ``[cutoffs[i], cutoffs[i+1])`` gets one head logit and a tail projection
    ``in_features -> in_features // div_value**(i+1) -> cluster size``.

    Args:
        in_features: features per example.
        n_classes: number of classes.
        cutoffs: increasing, unique integers in ``[1, n_classes - 1]``.
        div_value: shrink factor of each successive cluster's hidden size.
        head_bias: give ``head`` a bias.

    Returns:
        ``forward`` returns ``(output, loss)``: the target log-probabilities ``(N,)`` (or ``()``)
        and their negated mean.

    Raises:
        ValueError: invalid ``cutoffs``.
        RuntimeError: mismatched input/target shapes or targets outside ``[0, n_classes)``.

    Shape: input ``(N, in_features)`` or ``(in_features,)``; target ``(N,)`` or ``()``.

    Example:
        >>> import ember
        >>> m = ember.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 7])
        >>> m(ember.randn(3, 8), ember.tensor([0, 5, 9])).output.shape
        ember.Size([3])
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int],
                 div_value: float = 4.0, head_bias: bool = False, device=None,
                 dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        _check_cutoffs(cutoffs, n_classes)
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hsz = int(in_features // (div_value ** (i + 1)))
            osz = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hsz, bias=False, **kw),
                                        Linear(hsz, osz, bias=False, **kw)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        _check_forward(input_, target_)
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)      # (N, in_features)
        target = target_ if batched else target_.unsqueeze(0)   # (N,)
        output = input.new_zeros(target.shape[0])
        gather_inds = target.new_zeros(target.shape[0])
        bounds = [0] + self.cutoffs
        used = 0
        for i, (low, high) in enumerate(zip(bounds, bounds[1:])):
            rows = ((target >= low) & (target < high)).nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            rel = target.index_select(0, rows) - low
            if i == 0:
                gather_inds = gather_inds.index_copy(0, rows, rel)
            else:
                logp = F.log_softmax(self.tail[i - 1](input.index_select(0, rows)), dim=1)
                gather_inds = gather_inds.index_fill(0, rows, self.shortlist_size + i - 1)
                output = output.index_copy(0, rows, logp.gather(1, rel.unsqueeze(1)).squeeze(1))
            used += rows.numel()
        if used != target.shape[0]:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values "
                               f"in range [{target.min().item()}, {target.max().item()}] were "
                               f"found. ")
        head_logprob = F.log_softmax(self.head(input), dim=1)
        output = output + head_logprob.gather(1, gather_inds.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """Log-probabilities of all ``n_classes`` from the input and the head's output."""
        head_logprob = F.log_softmax(head_output, dim=1)          # (N, head_size)
        parts = [head_logprob[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster_logprob = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster_logprob
                         + head_logprob[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)                                      # (N, n_classes)

    def log_prob(self, input: Tensor) -> Tensor:
        """Log-probabilities of every class.

        Shape: input ``(N, in_features)``; output ``(N, n_classes)``.
        """
        return self._get_full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each example (``log_prob(input).argmax(1)``, computed
        from the head alone where the head's best entry is a shortlist class).

        Shape: input ``(N, in_features)``; output ``(N,)`` int64.
        """
        head_output = self.head(input)
        output = argmax(head_output, dim=1)
        outside = output >= self.shortlist_size
        if not outside.any().item():
            return output
        if outside.all().item():
            return argmax(self._get_full_log_prob(input, head_output), dim=1)
        rows = outside.nonzero().reshape(-1)
        log_prob = self._get_full_log_prob(input.index_select(0, rows),
                                           head_output.index_select(0, rows))
        return output.index_copy(0, rows, argmax(log_prob, dim=1))
