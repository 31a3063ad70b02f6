"""Adamax (``torch.optim.Adamax``): Adam with an infinity-norm second moment; see
NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.ops.creation import zeros_like
from ember.ops.pointwise import maximum
from ember.optim.optimizer import (
    _Algorithm,
    apply_weight_decay,
    check_betas,
    check_lr,
    check_nonneg,
    descent_grad,
    scalar,
)
from ember.tensor import Tensor

__all__ = ["Adamax"]


class Adamax(_Algorithm):
    """Adamax (``torch.optim.Adamax``).

    Per parameter and step ``t``: ``m = lerp(m, g, 1 - beta1)``, ``u = max(beta2 * u, |g| +
    eps)``, ``p -= lr / (1 - beta1^t) * m / u``. State: ``step``, ``exp_avg``, ``exp_inf``.

    Args:
        params: tensors or parameter groups.
        lr: learning rate (default 2e-3).
        betas: coefficients (default (0.9, 0.999)).
        eps: added to ``|g|`` (default 1e-8).
        weight_decay: L2 penalty (default 0).
        maximize: maximize the objective.

    Raises:
        ValueError: an option out of range.

    Example:
        >>> import ember
        >>> w = ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.Adamax([w], lr=0.5)
        >>> w.grad = ember.tensor([2.0]); opt.step(); w
        tensor([-0.5000], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *,
                 maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, eps, wd = scalar(group["lr"]), group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        maximize = group["maximize"]
        for p in params:
            state = self._lazy_state(p, exp_avg=zeros_like, exp_inf=zeros_like)
            g = descent_grad(p, maximize)
            m, u, step_t = state["exp_avg"], state["exp_inf"], state["step"]
            step_t += 1
            g = apply_weight_decay(p, g, lr, wd)
            m.lerp_(g, 1 - beta1)
            maximum(u.mul_(beta2), g.abs().add_(eps), out=u)
            clr = lr / (1 - beta1 ** step_t.item())
            p.addcdiv_(m, u, value=-clr)
