"""The CPU backend: NumPy kernels, registered into the dispatcher on import."""

from ember.backends.cpu import (  # noqa: F401
    conv,
    copy,
    creation,
    linalg,
    nn_ops,
    pointwise,
    random,
    reduction,
    scatter_gather,
    shape,
)
