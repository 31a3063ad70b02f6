"""ember.func (``torch.func``): composable function transforms.

``vmap`` runs a per-example function over a batch through the ``Batched`` dispatch key and
batching rules (``_batched.py``, ``_rules.py``); ``grad``, ``vjp``, ``jacrev`` build on the
autograd engine, ``jvp``, ``jacfwd`` on forward-mode AD (``ember.autograd.forward_ad``); they
compose: ``vmap(grad(f))`` gives per-sample gradients. ``functional_call`` and
``stack_module_state`` turn modules into functions of their tensors.
"""

from __future__ import annotations

from ember.dispatch.dispatcher import Kernel, register_fallback
from ember.dispatch.keys import DispatchKey
from ember.func._batched import batched_kernel
from ember.func._module import functional_call, stack_module_state
from ember.func._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ember.func._vmap import vmap

__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian",
           "functional_call", "stack_module_state"]

register_fallback(DispatchKey.Batched, Kernel(batched_kernel, True, "vmap batching rules"))
