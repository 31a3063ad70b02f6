"""RMSprop (``torch.optim.RMSprop``) with centering, momentum, weight decay and maximize; see
NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.ops.creation import zeros_like
from ember.optim.optimizer import _Algorithm, check_lr, check_nonneg, new_step, scalar
from ember.tensor import Tensor

__all__ = ["RMSprop"]


class RMSprop(_Algorithm):
    """RMSprop (``torch.optim.RMSprop``).

    Per parameter: ``v = alpha * v + (1 - alpha) * g * g``; centered keeps ``ga = lerp(ga, g,
    1 - alpha)`` and uses ``avg = sqrt(v - ga * ga)``, else ``avg = sqrt(v)``; then ``avg +=
    eps`` and either ``b = momentum * b + g / avg; p -= lr * b`` or ``p -= lr * g / avg``.
    State: ``step``, ``square_avg`` (and ``momentum_buffer``, ``grad_avg``).

    Args:
        params: tensors or parameter groups.
        lr: learning rate (default 1e-2).
        alpha: smoothing constant (default 0.99).
        eps: added to the denominator (default 1e-8).
        weight_decay: L2 penalty (default 0).
        momentum: momentum factor (default 0).
        centered: normalize by an estimate of the gradient's variance.
        maximize: maximize the objective.

    Raises:
        ValueError: a negative lr, eps, momentum, weight_decay or alpha.

    Example:
        >>> import ember
        >>> w = ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.RMSprop([w], lr=0.01, alpha=0.75)
        >>> w.grad = ember.ones(1); opt.step(); w
        tensor([-0.0200], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0, momentum: float = 0,
                 centered: bool = False, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        check_nonneg("alpha value", alpha)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay,
                    "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def _state(self, p: Tensor, group: dict[str, Any]) -> dict[str, Tensor]:
        state = self.state[p]
        if not state:
            state["step"] = new_step()
            state["square_avg"] = zeros_like(p)
            if group["momentum"] > 0:
                state["momentum_buffer"] = zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
        return state

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, alpha, eps = scalar(group["lr"]), group["alpha"], group["eps"]
        wd, momentum = group["weight_decay"], group["momentum"]
        centered, maximize = group["centered"], group["maximize"]
        for p in params:
            state = self._state(p, group)
            g = -p.grad if maximize else p.grad
            state["step"] += 1
            if wd != 0:
                g = g.add(p, alpha=wd)
            v = state["square_avg"]
            v.mul_(alpha).addcmul_(g, g, value=1 - alpha)
            if centered:
                ga = state["grad_avg"]
                ga.lerp_(g, 1 - alpha)
                avg = v.addcmul(ga, ga, value=-1).sqrt_()
            else:
                avg = v.sqrt()
            avg.add_(eps)
            if momentum > 0:
                buf = state["momentum_buffer"]
                buf.mul_(momentum).addcdiv_(g, avg)
                p.add_(buf, alpha=-lr)
            else:
                p.addcdiv_(g, avg, value=-lr)
