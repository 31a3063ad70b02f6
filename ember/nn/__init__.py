"""L8 ``ember.nn``: modules, ``functional``, ``init`` and ``utils`` with torch.nn's API.

Operators that need fused kernels are declared in ``ember.ops.nn_ops`` (CPU kernels in
``ember.backends.cpu.nn_ops``); importing this package makes sure both are registered, so
``ember.nn`` works whichever order ``ember/__init__.py`` imports things in.
"""

import ember.ops.nn_ops as _nn_ops  # noqa: F401
from ember.backends.cpu import nn_ops as _cpu_nn_ops  # noqa: F401  (registers kernels)


def _register() -> None:
    """Meta kernels, autograd fallbacks and Tensor methods for ops declared after import."""
    from ember.autograd.kernel import install_autograd_fallback
    from ember.backends.meta import register_meta_kernels
    from ember.ops.methods import bind_tensor_methods

    register_meta_kernels()
    install_autograd_fallback()
    bind_tensor_methods()


_register()

from ember.nn import functional, init, utils  # noqa: E402
from ember.nn.modules import *  # noqa: E402, F403
from ember.nn.modules.module import Module  # noqa: E402
from ember.nn.parameter import Parameter  # noqa: E402

__all__ = ["Module", "Parameter", "functional", "init", "utils"]

from ember.nn.parameter import Buffer, UninitializedBuffer, UninitializedParameter  # noqa: E402

__all__ += ["Buffer", "UninitializedBuffer", "UninitializedParameter"]
