"""Intra-op threads: ``set_num_threads``/``get_num_threads`` drive the BLAS under the kernels.

ember's CPU kernels are NumPy: element-wise loops run on the calling thread, and the only
thread pools are the BLAS libraries: the one NumPy links (OpenBLAS, MKL, Accelerate), and MKL
when ember's products run on it (``ember/backends/cpu/_blas.py``). So
``set_num_threads(n)`` sets that pool's size through ``threadpoolctl`` (it finds the loaded
BLAS libraries and calls their own setters, e.g. ``openblas_set_num_threads``), and
``get_num_threads()`` reads NumPy's BLAS back. ember has no inter-op pool; the inter-op
functions keep torch's contract (settable once, before use) so scripts that call them run.
"""

from __future__ import annotations

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads",
           "get_num_interop_threads"]

_interop: list[int | None] = [None]
_intra: list[int | None] = [None]  # the last set_num_threads, for a BLAS loaded later


def _check(fn: str, n) -> int:
    if type(n) is not int:
        raise RuntimeError(f"{fn} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return n


def _blas_pools() -> list[dict]:
    import threadpoolctl

    return threadpoolctl.threadpool_info()


def set_num_threads(n: int) -> None:
    """Use ``n`` threads in the BLAS behind matmul and convolution (``torch.set_num_threads``).

    Raises:
        RuntimeError: ``n`` is not an int, or not positive (torch's messages).

    Example:
        >>> import ember
        >>> before = ember.get_num_threads()
        >>> ember.set_num_threads(1); ember.get_num_threads()
        1
        >>> ember.set_num_threads(before)
    """
    import threadpoolctl

    threadpoolctl.threadpool_limits(limits=_check("set_num_threads", n), user_api="blas")
    _intra[0] = n


def requested() -> int | None:
    """The count of the last ``set_num_threads`` call, or None: a BLAS loaded afterwards
    (MKL, NOTE [GEMM provider] in ember/backends/cpu/_blas.py) starts with it."""
    return _intra[0]


def get_num_threads() -> int:
    """Threads NumPy's BLAS uses (``torch.get_num_threads``); 1 when no BLAS pool is found.

    Example:
        >>> ember.get_num_threads() >= 1
        True
    """
    pools = [p for p in _blas_pools() if p.get("user_api") == "blas"]
    numpy_pools = [p for p in pools if "numpy" in p.get("filepath", "")]
    chosen = (numpy_pools or pools)
    return int(chosen[0]["num_threads"]) if chosen else 1


def set_num_interop_threads(n: int) -> None:
    """Size of the inter-op pool (``torch.set_num_interop_threads``): settable once.

    Raises:
        RuntimeError: ``n`` is not a positive int, or it was already set (torch's message).

    Example:
        >>> try:
        ...     ember.set_num_interop_threads(0)
        ... except RuntimeError as e:
        ...     print(e)
        set_num_interop_threads expects a positive integer
    """
    _check("set_num_interop_threads", n)
    if _interop[0] is not None:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work "
                           "has started or set_num_interop_threads called")
    _interop[0] = n


def get_num_interop_threads() -> int:
    """The inter-op pool size (default: the intra-op thread count).

    Example:
        >>> ember.get_num_interop_threads() >= 1
        True
    """
    return _interop[0] if _interop[0] is not None else get_num_threads()
