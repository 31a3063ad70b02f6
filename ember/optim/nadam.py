"""NAdam (``torch.optim.NAdam``): Adam with Nesterov momentum and momentum decay; see
NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.core import dtype as dt
from ember.ops.creation import tensor, zeros_like
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

__all__ = ["NAdam"]


def _one_float32(_p: Tensor) -> Tensor:
    return tensor(1.0, dtype=dt.float32)  # torch keeps mu_product as a float32 0-d tensor


class NAdam(_Algorithm):
    """NAdam (``torch.optim.NAdam``).

    Per parameter and step ``t``: ``mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay))``,
    ``mu_product *= mu_t`` (a float32 0-d state tensor, as torch keeps it); ``m``, ``v`` as in
    Adam; ``d = sqrt(v / (1 - beta2^t)) + eps``; ``p -= lr * (1 - mu_t) / (1 - mu_product) * g
    / d + lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / d``. State: ``step``,
    ``mu_product``, ``exp_avg``, ``exp_avg_sq``.

    Args:
        params: tensors or parameter groups.
        lr: learning rate (default 2e-3).
        betas: coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: weight decay (default 0).
        momentum_decay: momentum decay psi (default 4e-3).
        decoupled_weight_decay: decay the weights directly (NAdamW).
        maximize: maximize the objective.

    Raises:
        ValueError: an option out of range.

    Example:
        >>> import ember
        >>> w = ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.NAdam([w], lr=0.1)
        >>> w.grad = ember.ones(1); opt.step(); round(w.item(), 4)
        -0.1056
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 2e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("momentum_decay value", momentum_decay)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, eps, wd = scalar(group["lr"]), group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        psi, decoupled = group["momentum_decay"], group["decoupled_weight_decay"]
        maximize = group["maximize"]
        for p in params:
            state = self._lazy_state(p, mu_product=_one_float32, exp_avg=zeros_like,
                                     exp_avg_sq=zeros_like)
            g = descent_grad(p, maximize)
            m, v, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            mu_product = state["mu_product"]
            step_t += 1
            step = step_t.item()
            bias_correction2 = 1 - beta2**step
            g = apply_weight_decay(p, g, lr, wd, decoupled)
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
            mu_product *= mu
            adam_moments(m, v, g, beta1, beta2)
            denom = v.div(bias_correction2).sqrt().add_(eps)
            mu_prod = mu_product.item()
            p.addcdiv_(g, denom, value=-lr * (1.0 - mu) / (1.0 - mu_prod))
            p.addcdiv_(m, denom, value=(-lr * mu_next) / (1.0 - mu_prod * mu_next))
