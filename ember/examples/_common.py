"""Helpers shared by the examples."""

from __future__ import annotations

import contextlib


def limit_blas_threads(n: int):
    """Cap NumPy's BLAS thread pool at ``n`` for a ``with`` block.

    The examples' matrices are small; on a shared or small machine extra BLAS threads mostly
    spin and can make a step several times slower. threadpoolctl comes with scikit-learn (the
    ``examples`` extra); without it this is a no-op (set ``OPENBLAS_NUM_THREADS`` instead).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")
