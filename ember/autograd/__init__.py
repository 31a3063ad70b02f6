"""L5: define-by-run autograd: grad modes, graph, engine, Function, saved tensors, hooks.

Derivative formulas live next to each operator in ``ember.ops``; this package owns the
machinery that records them (the Autograd-key kernel) and replays them (the engine).
"""

from ember.autograd import graph
from ember.autograd.anomaly import detect_anomaly, set_detect_anomaly
from ember.autograd.engine import backward, grad
from ember.autograd.function import Function, FunctionCtx, once_differentiable
from ember.autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ember.autograd.tensor_methods import bind as _bind

_bind()

__all__ = ["Function", "FunctionCtx", "backward", "detect_anomaly", "enable_grad", "grad",
           "graph", "inference_mode", "is_grad_enabled", "is_inference_mode_enabled",
           "no_grad", "once_differentiable", "set_detect_anomaly", "set_grad_enabled"]

from ember.autograd import functional  # noqa: E402
from ember.autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck  # noqa: E402

__all__ += ["GradcheckError", "functional", "gradcheck", "gradgradcheck"]

from ember.autograd import forward_ad  # noqa: E402
from ember.autograd.variable import Variable  # noqa: E402

__all__ += ["Variable", "forward_ad"]
