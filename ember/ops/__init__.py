"""L6: every operator, declared once (schema, Meta rule, docstring), by family.

Importing this package defines the built-in operators; each is complete once declared (NOTE
[A declared operator is complete] in ``_define.py``): Meta kernel, autograd, ``Tensor`` method,
and its CPU kernel the first time a CPU tensor reaches it.
``ember.ops.<namespace>.<name>`` reaches any operator, built-in (``aten``) or user-defined
through ``ember.library``.
"""

import importlib
import importlib.util

# NOTE [Operator families]
# The one list of operator families: ``ember.ops.<family>`` declares them and, where it has
# one, ``ember.backends.cpu.<family>`` holds their CPU kernels (imported by the device registry
# on the first CPU dispatch, NOTE [Kernels are found by the registry] in ember/memory/devices.py).
# A family module missing here is caught by tests/dispatch/test_registration.py.
FAMILIES = (
    "composites",
    "conv",
    "copy",
    "creation",
    "fft",
    "indexing",
    "linalg",
    "linalg_composites",
    "linalg_factor",
    "nn_ops",
    "numeric",
    "optimizer_steps",
    "pointwise",
    "pooling",
    "random",
    "random_dists",
    "reduction",
    "scatter_gather",
    "shape",
    "special",
    "tensor_api",
    "toplevel",
    "view_copies",
    "views",
)

for _family in FAMILIES:
    importlib.import_module(f"{__name__}.{_family}")

from ember.ops import methods  # noqa: E402, F401  (Python's operator protocol on Tensor)
from ember.ops.namespaces import namespace_getattr  # noqa: E402

# module-level hooks test runners look up (doctest collection imports this package)
_TEST_RUNNER_HOOKS = frozenset({"setup_module", "setUpModule", "teardown_module",
                                "tearDownModule", "setup", "teardown"})


def __getattr__(name: str):
    if name.startswith(("__", "pytest")) or name in _TEST_RUNNER_HOOKS:
        raise AttributeError(name)
    # a family module not imported yet wins over an operator namespace of the same name
    if importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    return namespace_getattr(name)
