"""L6: every operator, declared once (schema, Meta rule, docstring), by family.

Importing this package defines the built-in operators and binds them onto ``Tensor``.
``ember.ops.<namespace>.<name>`` reaches any operator, built-in (``aten``) or user-defined
through ``ember.library``.
"""

import importlib
import importlib.util

from ember.ops import (  # noqa: F401
    conv,
    copy,
    creation,
    indexing,
    linalg,
    nn_ops,
    numeric,
    pointwise,
    random,
    reduction,
    scatter_gather,
    shape,
    views,
)
from ember.ops.methods import bind_tensor_methods
from ember.ops.namespaces import namespace_getattr

bind_tensor_methods()


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
