"""RAdam (``torch.optim.RAdam``): Adam with a rectified adaptive learning rate; see
NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.ops.creation import zeros_like
from ember.optim.optimizer import (
    _Algorithm,
    adam_moments,
    apply_weight_decay,
    check_betas,
    check_lr,
    check_nonneg,
    descent_grad,
    scalar,
)
from ember.tensor import Tensor

__all__ = ["RAdam"]


class RAdam(_Algorithm):
    """RAdam (``torch.optim.RAdam``).

    Per parameter and step ``t``: ``m``, ``v`` as in Adam; ``rho_inf = 2 / (1 - beta2) - 1``,
    ``rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)``. While ``rho_t <= 5`` the update is plain
    momentum ``p -= lr * m / (1 - beta1^t)``; afterwards it is scaled by the adaptive rate
    ``sqrt(1 - beta2^t) / (sqrt(v) + eps)`` and the rectification term ``r_t``.
    State: ``step``, ``exp_avg``, ``exp_avg_sq``.

    Args:
        params: tensors or parameter groups.
        lr: learning rate (default 1e-3).
        betas: coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: weight decay (default 0).
        decoupled_weight_decay: decay the weights directly (RAdamW).
        maximize: maximize the objective.

    Raises:
        ValueError: an option out of range.

    Example:
        >>> import ember
        >>> w = ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.RAdam([w], lr=0.1)
        >>> w.grad = ember.ones(1); opt.step(); w
        tensor([-0.1000], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, eps, wd = scalar(group["lr"]), group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
        rho_inf = 2 / (1 - beta2) - 1
        for p in params:
            state = self._lazy_state(p, exp_avg=zeros_like, exp_avg_sq=zeros_like)
            g = descent_grad(p, maximize)
            m, v, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            step_t += 1
            step = step_t.item()
            g = apply_weight_decay(p, g, lr, wd, decoupled)
            adam_moments(m, v, g, beta1, beta2)
            bias_correction1 = 1 - beta1**step
            bias_correction2 = 1 - beta2**step
            corrected = m / bias_correction1
            rho_t = rho_inf - 2 * step * (beta2**step) / bias_correction2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                adaptive = (bias_correction2**0.5) / v.sqrt().add_(eps)
                p.add_(corrected * lr * adaptive * rect, alpha=-1.0)
            else:
                p.add_(corrected * lr, alpha=-1.0)
