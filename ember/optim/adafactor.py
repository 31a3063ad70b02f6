"""Adafactor (``torch.optim.Adafactor``): second moments kept as a row and a column factor for
parameters of two or more dimensions, relative step sizes and update clipping; see
NOTE [Optimizer updates] in ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.core.dtype import finfo
from ember.ops.creation import zeros_like
from ember.optim.optimizer import _Algorithm, new_step, scalar
from ember.tensor import Tensor

__all__ = ["Adafactor"]


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


class Adafactor(_Algorithm):
    """Adafactor (``torch.optim.Adafactor``).

    Per parameter and step ``t``: ``beta = t^beta2_decay`` (the weight of the new gradient),
    ``rho = min(lr, 1 / sqrt(t))``, ``alpha = max(eps2, rms(p)) * rho``. For a parameter of
    two or more dimensions the running means of ``g * g`` along the last dimension (``row_var``,
    last size 1) and along the one before (``col_var``) are kept and the second moment is
    estimated as ``row_var @ col_var / mean(row_var)``; a vector (or scalar) keeps the full
    ``variance``. Then ``u = g / sqrt(max(estimate, eps1^2))`` and ``p -= alpha / max(1,
    rms(u) / d) * u``. Weight decay multiplies ``p`` by ``1 - lr * weight_decay`` first.
    State: ``step``, then ``row_var`` and ``col_var``, or ``variance``.

    Args:
        params: tensors or parameter groups.
        lr: learning rate, the upper bound of ``rho`` (default 1e-2).
        beta2_decay: decay exponent of the second-moment weight, <= 0 (default -0.8).
        eps: ``(eps1, eps2)``: the floor of the estimate (None: the dtype's machine epsilon)
            and of the parameter's rms (default (None, 1e-3)).
        d: update clipping threshold, >= 1 (default 1.0).
        weight_decay: decoupled weight decay (default 0).
        maximize: maximize the objective.

    Raises:
        ValueError: an option out of range (torch's messages).

    Example:
        >>> import ember
        >>> w = ember.ones(2, 2, requires_grad=True)
        >>> opt = ember.optim.Adafactor([w], lr=0.1)
        >>> w.grad = ember.ones(2, 2); opt.step(); w
        tensor([[0.9000, 0.9000],
                [0.9000, 0.9000]], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        _check(not (isinstance(lr, Tensor) and lr.numel() != 1), "Tensor lr must be 1-element")
        _check(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        _check(eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}")
        _check(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        _check(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        _check(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _state(self, p: Tensor) -> dict[str, Any]:
        state = self.state[p]
        if not state:
            state["step"] = new_step()
            g = p.grad
            if g.dim() > 1:
                state["row_var"] = g.new_zeros([*g.shape[:-1], 1])  # (..., R, C) -> (..., R, 1)
                state["col_var"] = g.new_zeros([*g.shape[:-2], 1, g.shape[-1]])  # (..., 1, C)
            else:
                state["variance"] = zeros_like(g)
        return state

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, decay, wd = scalar(group["lr"]), group["beta2_decay"], group["weight_decay"]
        eps1, eps2 = group["eps"]
        if eps1 is None:  # the first parameter's dtype decides for the whole group, as in torch
            eps1 = finfo(params[0].dtype).eps
        for p in params:
            state = self._state(p)
            g = -p.grad if group["maximize"] else p.grad
            state["step"] += 1
            step = state["step"].item()
            beta = step**decay
            alpha = max(eps2, p.norm(2).item() / p.numel() ** 0.5) * min(lr, 1 / step**0.5)
            if wd != 0:
                p.mul_(1 - lr * wd)
            estimate = self._second_moment(state, g, beta, eps1)
            update = estimate.clamp_(min=eps1 * eps1).rsqrt_().mul_(g)
            denom = max(1.0, update.norm(2).item() / (update.numel() ** 0.5 * group["d"]))
            p.add_(update, alpha=-alpha / denom)

    @staticmethod
    def _second_moment(state: dict[str, Any], g: Tensor, beta: float, eps1: float) -> Tensor:
        """Update the running second moment; return a fresh estimate of it, shaped like g."""
        if g.dim() > 1:
            row, col = state["row_var"], state["col_var"]
            row.lerp_(g.norm(dim=-1, keepdim=True).square_().div_(g.shape[-1]), beta)
            col.lerp_(g.norm(dim=-2, keepdim=True).square_().div_(g.shape[-2]), beta)
            estimate = row @ col  # (..., R, 1) @ (..., 1, C) -> (..., R, C)
            return estimate.div_(row.mean(dim=-2, keepdim=True).clamp_(min=eps1))
        variance = state["variance"]
        variance.lerp_(g * g, beta)
        return variance.clone()
