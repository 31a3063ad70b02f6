"""Adadelta (``torch.optim.Adadelta``) with weight decay and maximize; see
NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.ops.creation import zeros_like
from ember.optim.optimizer import (
    _Algorithm,
    apply_weight_decay,
    check_lr,
    check_nonneg,
    descent_grad,
    scalar,
)
from ember.tensor import Tensor

__all__ = ["Adadelta"]


class Adadelta(_Algorithm):
    """Adadelta (``torch.optim.Adadelta``).

    Per parameter: ``v = rho * v + (1 - rho) * g * g``, ``delta = sqrt(u + eps) / sqrt(v +
    eps) * g``, ``u = rho * u + (1 - rho) * delta * delta``, then ``p -= lr * delta``. State:
    ``step``, ``square_avg`` (``v``) and ``acc_delta`` (``u``).

    Args:
        params: tensors or parameter groups.
        lr: coefficient that scales ``delta`` (default 1.0).
        rho: running-average coefficient (default 0.9).
        eps: added inside both square roots (default 1e-6).
        weight_decay: L2 penalty (default 0).
        maximize: maximize the objective.

    Raises:
        ValueError: a negative lr, eps or weight_decay, or rho outside [0, 1].

    Example:
        >>> import ember
        >>> w = ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.Adadelta([w], rho=0.0, eps=1.0)
        >>> w.grad = ember.tensor([3.0]); opt.step(); w
        tensor([-0.9487], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1.0, rho: float = 0.9,
                 eps: float = 1e-6, weight_decay: float = 0, foreach: bool | None = None, *,
                 capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonneg("epsilon value", eps)
        check_nonneg("weight_decay value", weight_decay)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, rho, eps = scalar(group["lr"]), group["rho"], group["eps"]
        wd, maximize = group["weight_decay"], group["maximize"]
        for p in params:
            state = self._lazy_state(p, square_avg=zeros_like, acc_delta=zeros_like)
            v, u = state["square_avg"], state["acc_delta"]
            state["step"] += 1
            g = apply_weight_decay(p, descent_grad(p, maximize), lr, wd)
            v.mul_(rho).addcmul_(g, g, value=1 - rho)
            std = v.add(eps).sqrt_()
            delta = u.add(eps).sqrt_().div_(std).mul_(g)
            u.mul_(rho).addcmul_(delta, delta, value=1 - rho)
            p.add_(delta, alpha=-lr)
