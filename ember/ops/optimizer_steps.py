"""Fused optimizer steps: ``_fused_adam_``, ``_fused_adamw_``, ``_fused_sgd_`` (torch's
``aten::_fused_*`` operators, what ``torch.optim.Adam(..., fused=True)`` calls).

NOTE [Fused optimizer steps]
A built-in optimizer's update is a handful of array-wide in-place operators per parameter
(NOTE [Optimizer updates] in ember/optim/optimizer.py); with many small parameters the
per-operator cost dominates. A fused step is one operator over the lists of every parameter,
gradient and state tensor of a group: the CPU kernel updates each parameter in one pass over
its elements (generated C, or NumPy when no C compiler is present), so a step costs a pass over
memory instead of ~10 dispatched operators per parameter. The arithmetic is torch's fused
kernel's, in the parameter's dtype (float32 for half types): the results agree with the
single-tensor algorithm to rounding, not bit for bit (as torch's fused and for-loop paths do).
``state_steps`` have been incremented by the caller (torch's contract); ``grad_scale`` divides
the gradients (and the unscaled gradients are written back), a nonzero ``found_inf`` skips the
step, as ``GradScaler`` expects of an optimizer that sets ``_step_supports_amp_scaling``.
"""

from __future__ import annotations

from ember.core import dtype as dt
from ember.ops._define import operator
from ember.ops._promotion import result_type
from ember.ops.pointwise import _TN
from ember.tensor import Tensor

__all__ = ["_fused_adam_", "_fused_adamw_", "_fused_sgd_", "_foreach_add_", "check_fused_lists"]

_ADAM_SCHEMA = ("(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] exp_avgs, "
                "Tensor(d!)[] exp_avg_sqs, Tensor(e!)[] max_exp_avg_sqs, Tensor[] state_steps, *, "
                "float lr, float beta1, float beta2, float weight_decay, float eps, bool amsgrad, "
                "bool maximize, Tensor? grad_scale=None, Tensor? found_inf=None) -> ()")


def check_fused_lists(name: str, params, lists: dict) -> None:
    """torch's checks of a fused step's tensor lists: one entry per parameter in each list
    that must have them, floating dtypes, and the parameter's shape, dtype and device."""
    n = len(params)
    for what, ts in lists.items():
        if len(ts) != n:
            raise RuntimeError(f"Expected {what}.size() == n_tensors to be true, but got false.")
    for i, p in enumerate(params):
        if not isinstance(p, Tensor) or not p._dtype.is_floating_point:
            raise RuntimeError(f"{name}: expected floating point parameters, but parameter {i} "
                               f"is {getattr(p, 'dtype', type(p).__name__)}")
        for what, ts in lists.items():
            t = ts[i]
            if what == "state_steps":
                if t.numel() != 1:
                    raise RuntimeError(f"{name}: state_steps[{i}] must hold one element")
                continue
            if t._shape != p._shape or t._dtype is not p._dtype or t.device != p.device:
                raise RuntimeError(
                    f"{name}: {what}[{i}] must have the parameter's shape, dtype and device "
                    f"({tuple(p._shape)}, {p._dtype.name}, {p.device}), but got "
                    f"({tuple(t._shape)}, {t._dtype.name}, {t.device})")


def _check_scaler(grad_scale, found_inf) -> None:
    for what, t in (("grad_scale", grad_scale), ("found_inf", found_inf)):
        if t is not None and (t.numel() != 1 or t._dtype is not dt.float32):
            raise RuntimeError(f"{what} must be a one-element float32 tensor")


def _adam_rule(name):
    def rule(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1,
             beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
        lists = {"grads": grads, "exp_avgs": exp_avgs, "exp_avg_sqs": exp_avg_sqs,
                 "state_steps": state_steps}
        if amsgrad:
            lists["max_exp_avg_sqs"] = max_exp_avg_sqs
        check_fused_lists(name, self, lists)
        _check_scaler(grad_scale, found_inf)
        return None
    return rule


@operator("_fused_adam_" + _ADAM_SCHEMA, method=False)
def _fused_adam_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1,
                 beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
    """Adam's update of every parameter in ``self``, in place, as one operator
    (``torch._fused_adam_``; NOTE [Fused optimizer steps]).

    Per parameter ``p`` with gradient ``g`` and step ``t`` (already incremented): ``g += wd *
    p``, ``m = lerp(m, g, 1 - beta1)``, ``v = beta2 v + (1 - beta2) g^2`` (AMSGrad: ``v_max =
    max(v_max, v)``, used below), ``p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t)
    + eps)``. All lists hold one tensor per parameter, of its shape, dtype and device
    (``max_exp_avg_sqs`` only with ``amsgrad``; ``state_steps`` one-element tensors).

    Example:
        >>> import ember
        >>> p, g = ember.zeros(2), ember.tensor([1.0, -1.0])
        >>> m, v, step = ember.zeros(2), ember.zeros(2), ember.tensor(1.0)
        >>> ember._fused_adam_([p], [g], [m], [v], [], [step], lr=0.1, beta1=0.9, beta2=0.999,
        ...                    weight_decay=0.0, eps=1e-8, amsgrad=False, maximize=False)
        >>> p
        tensor([-0.1000,  0.1000])
    """
    return _adam_rule("_fused_adam_")(
        self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr=lr, beta1=beta1,
        beta2=beta2, weight_decay=weight_decay, eps=eps, amsgrad=amsgrad, maximize=maximize,
        grad_scale=grad_scale, found_inf=found_inf)


@operator("_fused_adamw_" + _ADAM_SCHEMA, method=False)
def _fused_adamw_(self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, *, lr, beta1,
                  beta2, weight_decay, eps, amsgrad, maximize, grad_scale=None, found_inf=None):
    """AdamW's update of every parameter in ``self``, in place, as one operator
    (``torch._fused_adamw_``): :func:`_fused_adam_` with decoupled weight decay, ``p *= 1 - lr *
    weight_decay`` before the update instead of adding ``weight_decay * p`` to the gradient.

    Example:
        >>> import ember
        >>> p, g = ember.ones(2), ember.zeros(2)
        >>> m, v, step = ember.zeros(2), ember.zeros(2), ember.tensor(1.0)
        >>> ember._fused_adamw_([p], [g], [m], [v], [], [step], lr=0.1, beta1=0.9, beta2=0.999,
        ...                     weight_decay=0.5, eps=1e-8, amsgrad=False, maximize=False)
        >>> p
        tensor([0.9500, 0.9500])
    """
    return _adam_rule("_fused_adamw_")(
        self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr=lr, beta1=beta1,
        beta2=beta2, weight_decay=weight_decay, eps=eps, amsgrad=amsgrad, maximize=maximize,
        grad_scale=grad_scale, found_inf=found_inf)


@operator("_fused_sgd_(Tensor(a!)[] self, Tensor(b!)[] grads, Tensor(c!)[] momentum_buffer_list, "
          "*, float weight_decay, float momentum, float lr, float dampening, bool nesterov, "
          "bool maximize, bool is_first_step, Tensor? grad_scale=None, Tensor? found_inf=None) "
          "-> ()", method=False)
def _fused_sgd_(self, grads, momentum_buffer_list, *, weight_decay, momentum, lr, dampening,
                nesterov, maximize, is_first_step, grad_scale=None, found_inf=None):
    """SGD's update of every parameter in ``self``, in place, as one operator
    (``torch._fused_sgd_``; NOTE [Fused optimizer steps]).

    Per parameter: ``g = -g`` when maximizing, ``g += wd * p``; with momentum, the buffer ``b``
    becomes ``g`` on the first step and ``momentum * b + (1 - dampening) * g`` after, and ``g``
    becomes ``g + momentum * b`` (Nesterov) or ``b``; then ``p -= lr * g``.
    ``momentum_buffer_list`` holds one tensor per parameter when ``momentum != 0`` (their
    contents are ignored on the first step), and may be empty otherwise.

    Example:
        >>> import ember
        >>> p, g = ember.ones(2), ember.tensor([1.0, 2.0])
        >>> ember._fused_sgd_([p], [g], [], weight_decay=0.0, momentum=0.0, lr=0.1,
        ...                   dampening=0.0, nesterov=False, maximize=False, is_first_step=True)
        >>> p
        tensor([0.9000, 0.8000])
    """
    lists = {"grads": grads}
    if momentum != 0:
        lists["momentum_buffer_list"] = momentum_buffer_list
    check_fused_lists("_fused_sgd_", self, lists)
    _check_scaler(grad_scale, found_inf)
    return None


@operator("_foreach_add_.Scalar(Tensor(a!)[] self, Scalar scalar) -> ()", method=False)
def _foreach_add_(self, scalar):
    """Add ``scalar`` to every tensor of ``self`` in place (``torch._foreach_add_``, what the
    optimizers use to count steps); returns ``self`` as torch's binding does.

    Raises:
        RuntimeError: the result type cannot be cast to a tensor's dtype (torch's message).

    Example:
        >>> import ember
        >>> steps = [ember.tensor(0.0), ember.tensor(4.0)]
        >>> ember._foreach_add_(steps, 1)
        [tensor(1.), tensor(5.)]
    """
    for t in self:
        if not isinstance(t, Tensor):
            raise TypeError(f"_foreach_add_(): expected a list of Tensors, but found "
                            f"{type(t).__name__}")
        res = result_type(t, scalar)
        if not dt.can_cast(res, t._dtype):
            raise RuntimeError(f"result type {_TN[res.name]} can't be cast to the desired "
                               f"output type {_TN[t._dtype.name]}")
    return None
