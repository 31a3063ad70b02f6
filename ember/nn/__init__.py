"""L8 ``ember.nn``: modules, ``functional``, ``init`` and ``utils`` with torch.nn's API.

Operators that need fused kernels are declared in ``ember.ops.nn_ops``; like every operator
they are complete once declared (NOTE [A declared operator is complete] in
``ember/ops/_define.py``), so this package registers nothing.
"""

from ember.nn import functional, init, utils
from ember.nn.modules import *  # noqa: F403
from ember.nn.modules.module import Module
from ember.nn.parameter import Parameter

__all__ = ["Module", "Parameter", "functional", "init", "utils"]

from ember.nn.parameter import Buffer, UninitializedBuffer, UninitializedParameter  # noqa: E402

__all__ += ["Buffer", "UninitializedBuffer", "UninitializedParameter"]

from ember.nn import parallel  # noqa: E402
from ember.nn.parallel import DataParallel  # noqa: E402

__all__ += ["DataParallel", "parallel"]
