"""ASGD (``torch.optim.ASGD``), averaged stochastic gradient descent with a decaying step size
and weight decay; see NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.core import dtype as dt
from ember.ops.creation import tensor, zeros_like
from ember.optim.optimizer import (
    _Algorithm,
    apply_weight_decay,
    check_lr,
    check_nonneg,
    descent_grad,
    scalar,
)
from ember.tensor import Tensor

__all__ = ["ASGD"]


def _scalar_state(value: Any) -> Tensor:
    """A float32 0-d state tensor (torch keeps ``eta`` and ``mu`` so)."""
    return value if isinstance(value, Tensor) else tensor(float(value), dtype=dt.float32)


class ASGD(_Algorithm):
    """ASGD (``torch.optim.ASGD``).

    Per parameter and step ``t``: ``p *= 1 - lambd * eta``, ``p -= eta * g``; the average
    ``ax`` follows ``p`` (a copy while ``mu == 1``, else ``ax += mu * (p - ax)``); then ``eta =
    lr / (1 + lambd * lr * t)^alpha`` and ``mu = 1 / max(1, t - t0)``. State: ``step``,
    ``eta`` and ``mu`` (float32 0-d tensors) and ``ax`` (the averaged parameter).

    Args:
        params: tensors or parameter groups.
        lr: learning rate (default 1e-2).
        lambd: decay term (default 1e-4).
        alpha: power of the ``eta`` decay (default 0.75).
        t0: step at which averaging starts (default 1e6).
        weight_decay: L2 penalty (default 0).
        maximize: maximize the objective.

    Raises:
        ValueError: a negative lr or weight_decay.

    Example:
        >>> import ember
        >>> w = ember.zeros(1, requires_grad=True)
        >>> opt = ember.optim.ASGD([w], lr=0.5, lambd=0.0)
        >>> w.grad = ember.tensor([1.0]); opt.step(); w
        tensor([-0.5000], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-2, lambd: float = 1e-4,
                 alpha: float = 0.75, t0: float = 1e6, weight_decay: float = 0,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        check_lr(lr)
        check_nonneg("weight_decay value", weight_decay)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for st in self.state.values():  # old checkpoints keep eta and mu as numbers
            for key in ("eta", "mu"):
                if key in st:
                    st[key] = _scalar_state(st[key])

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, lambd, alpha, t0 = scalar(group["lr"]), group["lambd"], group["alpha"], group["t0"]
        wd, maximize = group["weight_decay"], group["maximize"]
        for p in params:
            state = self._lazy_state(p, eta=lambda t: _scalar_state(lr),
                                     mu=lambda t: _scalar_state(1.0), ax=zeros_like)
            step_t, eta, mu, ax = state["step"], state["eta"], state["mu"], state["ax"]
            step_t += 1
            g = apply_weight_decay(p, descent_grad(p, maximize), lr, wd)
            eta_value = eta.item()
            p.mul_(1 - lambd * eta_value)
            p.add_(g, alpha=-eta_value)
            if mu.item() != 1:
                ax.add_(p.sub(ax).mul_(mu))
            else:
                ax.copy_(p)
            step = step_t.item()
            # both go through float32 first, as torch's do, whatever the state's dtype
            eta.copy_(_scalar_state(lr / ((1 + lambd * lr * step) ** alpha)))
            mu.copy_(_scalar_state(1 / max(1, step - t0)))
