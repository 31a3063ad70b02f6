"""Adagrad (``torch.optim.Adagrad``) with learning-rate decay, an initial accumulator value,
weight decay and maximize; see NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.ops.creation import full_like
from ember.optim.optimizer import (
    _Algorithm,
    apply_weight_decay,
    check_lr,
    check_nonneg,
    descent_grad,
    scalar,
)
from ember.tensor import Tensor

__all__ = ["Adagrad"]


class Adagrad(_Algorithm):
    """Adagrad (``torch.optim.Adagrad``).

    Per parameter and step ``t``: ``s += g * g``, then ``p -= lr / (1 + (t - 1) * lr_decay) *
    g / (sqrt(s) + eps)``. State (created for every parameter at construction, like torch):
    ``step`` and ``sum`` (filled with ``initial_accumulator_value``).

    Args:
        params: tensors or parameter groups.
        lr: learning rate (default 1e-2).
        lr_decay: learning-rate decay (default 0).
        weight_decay: L2 penalty (default 0).
        initial_accumulator_value: start value of ``sum`` (default 0).
        eps: added to the denominator (default 1e-10).
        maximize: maximize the objective.

    Raises:
        ValueError: a negative option.

    Example:
        >>> import ember
        >>> w = ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.Adagrad([w], lr=0.5)
        >>> w.grad = ember.tensor([2.0]); opt.step(); w
        tensor([-0.5000], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-2, lr_decay: float = 0,
                 weight_decay: float = 0, initial_accumulator_value: float = 0,
                 eps: float = 1e-10, foreach: bool | None = None, *, maximize: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_nonneg("lr_decay value", lr_decay)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("initial_accumulator_value value", initial_accumulator_value)
        check_nonneg("epsilon value", eps)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._state(p)

    def _state(self, p: Tensor) -> dict[str, Tensor]:
        return self._lazy_state(
            p, sum=lambda t: full_like(t, self.defaults["initial_accumulator_value"]))

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, lr_decay, eps = scalar(group["lr"]), group["lr_decay"], group["eps"]
        wd, maximize = group["weight_decay"], group["maximize"]
        for p in params:
            state = self._state(p)
            step_t = state["step"]
            step_t += 1
            step = step_t.item()
            g = apply_weight_decay(p, descent_grad(p, maximize), lr, wd)
            clr = lr / (1 + (step - 1) * lr_decay)
            s = state["sum"]
            s.addcmul_(g, g, value=1)
            std = s.sqrt().add_(eps)
            p.addcdiv_(g, std, value=-clr)
