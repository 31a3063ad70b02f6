"""Adam and AdamW (``torch.optim.Adam``, ``torch.optim.AdamW``), with AMSGrad, maximize and
coupled (L2) or decoupled weight decay; see NOTE [Optimizer updates] in
ember/optim/optimizer.py."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ember.ops.creation import zeros_like
from ember.ops.optimizer_steps import _foreach_add_, _fused_adam_, _fused_adamw_
from ember.ops.pointwise import maximum
from ember.optim.optimizer import (
    _Algorithm,
    adam_moments,
    apply_weight_decay,
    check_betas,
    check_fused_params,
    check_lr,
    check_nonneg,
    descent_grad,
    scalar,
)
from ember.tensor import Tensor

__all__ = ["Adam", "AdamW"]


class Adam(_Algorithm):
    """Adam (``torch.optim.Adam``).

    Per parameter and step ``t``: ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 * v + (1 - beta2)
    * g * g`` (AMSGrad keeps ``v_max = max(v_max, v)`` and uses it), then ``p -= lr / (1 -
    beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``. Weight decay adds ``wd * p`` to the
    gradient, or with ``decoupled_weight_decay`` multiplies ``p`` by ``1 - lr * wd`` first.
    State: ``step`` (float32 0-d), ``exp_avg``, ``exp_avg_sq`` (and ``max_exp_avg_sq``).

    Args:
        params: tensors or parameter groups.
        lr: learning rate (default 1e-3).
        betas: running-average coefficients (default (0.9, 0.999)).
        eps: added to the denominator (default 1e-8).
        weight_decay: weight decay (default 0).
        amsgrad: use the AMSGrad variant.
        maximize: maximize the objective.
        decoupled_weight_decay: decay the weights directly (AdamW).

    Raises:
        ValueError: an option out of range (torch's messages).

    Example:
        >>> import ember
        >>> w = ember.zeros(2, requires_grad=True)
        >>> opt = ember.optim.Adam([w], lr=0.1)
        >>> w.grad = ember.tensor([1.0, -1.0]); opt.step(); w
        tensor([-0.1000,  0.1000], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None,
                 decoupled_weight_decay: bool = False) -> None:
        check_lr(lr)
        check_nonneg("epsilon value", eps)
        check_betas(betas)
        check_nonneg("weight_decay value", weight_decay)
        defaults = {"lr": lr, "betas": tuple(scalar(b) for b in betas), "eps": eps,
                    "weight_decay": weight_decay, "amsgrad": amsgrad, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    _supports_fused = True

    def _update_group(self, group: dict[str, Any], params: list[Tensor]) -> None:
        lr, wd, eps = scalar(group["lr"]), group["weight_decay"], group["eps"]
        beta1, beta2 = (scalar(b) for b in group["betas"])
        amsgrad, maximize = group["amsgrad"], group["maximize"]
        decoupled = group["decoupled_weight_decay"]
        extra = {"max_exp_avg_sq": zeros_like} if amsgrad else {}
        if group.get("fused"):
            self._fused_step(params, lr, wd, eps, beta1, beta2, amsgrad, maximize, decoupled,
                             extra)
            return
        for p in params:
            state = self._lazy_state(p, exp_avg=zeros_like, exp_avg_sq=zeros_like, **extra)
            g = descent_grad(p, maximize)
            m, v, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]
            step_t += 1
            g = apply_weight_decay(p, g, lr, wd, decoupled)
            adam_moments(m, v, g, beta1, beta2)
            step = step_t.item()
            step_size = lr / (1 - beta1**step)
            bias_correction2_sqrt = (1 - beta2**step) ** 0.5
            if amsgrad:
                v = maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            denom = (v.sqrt() / bias_correction2_sqrt).add_(eps)
            p.addcdiv_(m, denom, value=-step_size)

    def _fused_step(self, params, lr, wd, eps, beta1, beta2, amsgrad, maximize, decoupled,
                    extra) -> None:
        """One ``_fused_adam(w)_`` call for the group; a skipped step (GradScaler's
        ``found_inf``) takes its step count back, as torch's fused path does."""
        check_fused_params(params)
        states = [self._lazy_state(p, exp_avg=zeros_like, exp_avg_sq=zeros_like, **extra)
                  for p in params]
        steps = [s["step"] for s in states]
        _foreach_add_(steps, 1)
        grad_scale = getattr(self, "grad_scale", None)
        found_inf = getattr(self, "found_inf", None)
        op = _fused_adamw_ if decoupled else _fused_adam_
        op(params, [p.grad for p in params], [s["exp_avg"] for s in states],
           [s["exp_avg_sq"] for s in states],
           [s["max_exp_avg_sq"] for s in states] if amsgrad else [], steps, lr=lr,
           beta1=beta1, beta2=beta2, weight_decay=wd, eps=eps, amsgrad=amsgrad,
           maximize=maximize, grad_scale=grad_scale, found_inf=found_inf)
        if found_inf is not None:
            for t in steps:
                t -= found_inf


class AdamW(Adam):
    """AdamW (``torch.optim.AdamW``): Adam with decoupled weight decay (default 1e-2).

    Args:
        params, lr, betas, eps, amsgrad, maximize: as :class:`Adam`.
        weight_decay: decoupled weight-decay coefficient (default 1e-2).

    Example:
        >>> import ember
        >>> w = ember.ones(2, requires_grad=True)
        >>> opt = ember.optim.AdamW([w], lr=0.1, weight_decay=0.5)
        >>> w.grad = ember.zeros(2); opt.step(); w
        tensor([0.9500, 0.9500], requires_grad=True)
    """

    def __init__(self, params: Iterable, lr: float | Tensor = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, capturable: bool = False,
                 differentiable: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
