"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize
(``torch.optim.SGD``); see NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.ops.creation import empty_like
from ember.ops.optimizer_steps import _fused_sgd_
from ember.optim.optimizer import _Algorithm, check_fused_params, check_lr, check_nonneg, scalar
from ember.tensor import Tensor

__all__ = ["SGD"]


class SGD(_Algorithm):
    """Stochastic gradient descent, optionally with momentum (``torch.optim.SGD``).

    Per parameter: ``g = grad (+ weight_decay * p)``; with momentum ``b = momentum * b +
    (1 - dampening) * g`` (the first step sets ``b = g``), then ``g = b`` or, with Nesterov,
    ``g + momentum * b``; finally ``p -= lr * g`` (``+=`` with ``maximize``). State:
    ``momentum_buffer`` when momentum is non-zero.

    Args:
        params: tensors or parameter groups.
        lr: learning rate (default 1e-3).
        momentum: momentum factor (default 0).
        dampening: dampening of the momentum (default 0).
        weight_decay: L2 penalty (default 0).
        nesterov: use Nesterov momentum (needs momentum > 0 and zero dampening).
        maximize: maximize the objective instead of minimizing it.

    Raises:
        ValueError: a negative lr, momentum or weight_decay, or Nesterov without momentum.

    Example:
        >>> import ember
        >>> w = ember.ones(2, requires_grad=True)
        >>> opt = ember.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> w.grad = ember.ones(2); opt.step(); opt.step(); w
        tensor([0.7100, 0.7100], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-3, momentum: float = 0,
                 dampening: float = 0, weight_decay: float = 0, nesterov: bool = False, *,
                 maximize: bool = False, foreach: bool | None = None,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        check_lr(lr)
        check_nonneg("momentum value", momentum)
        check_nonneg("weight_decay value", weight_decay)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    _supports_fused = True

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, wd = scalar(group["lr"]), group["weight_decay"]
        momentum, dampening = group["momentum"], group["dampening"]
        nesterov, maximize = group["nesterov"], group["maximize"]
        if group.get("fused"):
            self._fused_step(params, lr, wd, momentum, dampening, nesterov, maximize)
            return
        for p in params:
            g = -p.grad if maximize else p.grad
            if wd != 0:
                g = g.add(p, alpha=wd)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = g.detach().clone()
                else:
                    buf.mul_(momentum).add_(g, alpha=1 - dampening)
                g = g.add(buf, alpha=momentum) if nesterov else buf
            p.add_(g, alpha=-lr)

    def _fused_step(self, params, lr, wd, momentum, dampening, nesterov, maximize) -> None:
        """``_fused_sgd_`` for the group: one call for the parameters whose momentum buffer
        exists and one (``is_first_step``, new uninitialised buffers the kernel fills with the
        gradient) for those whose buffer is created now."""
        check_fused_params(params)
        kw = {"weight_decay": wd, "momentum": momentum, "lr": lr, "dampening": dampening,
              "nesterov": nesterov, "maximize": maximize,
              "grad_scale": getattr(self, "grad_scale", None),
              "found_inf": getattr(self, "found_inf", None)}
        if momentum == 0:
            _fused_sgd_(params, [p.grad for p in params], [], is_first_step=False, **kw)
            return
        old, new = [], []
        for p in params:
            state = self.state[p]
            if state.get("momentum_buffer") is None:
                state["momentum_buffer"] = empty_like(p)
                new.append(p)
            else:
                old.append(p)
        for group, first in ((old, False), (new, True)):
            if group:
                _fused_sgd_(group, [p.grad for p in group],
                            [self.state[p]["momentum_buffer"] for p in group],
                            is_first_step=first, **kw)
