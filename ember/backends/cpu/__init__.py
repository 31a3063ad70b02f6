"""The CPU backend: NumPy kernels, registered into the dispatcher on import."""

from ember.backends.cpu import (  # noqa: F401
    copy,
    creation,
    linalg,
    pointwise,
    random,
    reduction,
    scatter_gather,
    shape,
)
