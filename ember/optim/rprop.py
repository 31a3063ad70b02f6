"""Rprop (``torch.optim.Rprop``), resilient backpropagation: per-element step sizes that
grow while the gradient keeps its sign and shrink when it flips; see NOTE [Optimizer updates]
in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.ops.creation import full_like, zeros_like
from ember.optim.optimizer import _Algorithm, check_lr, descent_grad, scalar
from ember.tensor import Tensor

__all__ = ["Rprop"]


class Rprop(_Algorithm):
    """Rprop (``torch.optim.Rprop``).

    Per element: ``s = sign(g * g_prev)``; the step size is multiplied by ``etaplus`` where
    ``s > 0``, by ``etaminus`` where ``s < 0`` (and the gradient is then taken as 0, so the
    next step does not shrink it again), and clamped to ``step_sizes``; finally ``p -=
    sign(g) * step_size`` and ``g_prev = g``. State: ``step``, ``prev`` and ``step_size``
    (started at ``lr``; later changes of ``lr`` do not affect it).

    Args:
        params: tensors or parameter groups.
        lr: initial step size (default 1e-2).
        etas: ``(etaminus, etaplus)``, the shrink and growth factors (default (0.5, 1.2)).
        step_sizes: ``(min, max)`` allowed step sizes (default (1e-6, 50)).
        maximize: maximize the objective.

    Raises:
        ValueError: a negative lr, or not ``0 < etaminus < 1 < etaplus``.

    Example:
        >>> import ember
        >>> w = ember.zeros(2, requires_grad=True)
        >>> opt = ember.optim.Rprop([w], lr=0.1)
        >>> w.grad = ember.tensor([1.0, -2.0]); opt.step(); opt.step(); w
        tensor([-0.2200,  0.2200], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-2,
                 etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        check_lr(lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        etaminus, etaplus = group["etas"]
        smin, smax = group["step_sizes"]
        lr = scalar(group["lr"])
        for p in params:
            state = self._lazy_state(p, prev=zeros_like, step_size=lambda t: full_like(t, lr))
            prev, size = state["prev"], state["step_size"]
            state["step"] += 1
            g = descent_grad(p, group["maximize"])
            factor = g.mul(prev).sign()  # -1, 0, 1, then replaced by the factor each stands for
            factor.masked_fill_(factor.gt(0), etaplus)
            factor.masked_fill_(factor.lt(0), etaminus)
            factor.masked_fill_(factor.eq(0), 1)
            size.mul_(factor).clamp_(smin, smax)
            g = g.clone().masked_fill_(factor.eq(etaminus), 0)
            p.addcmul_(g.sign(), size, value=-1)
            prev.copy_(g)
