"""``ember.backends.mkl``: whether matrix products run on Intel MKL (``torch.backends.mkl``).

ember's GEMMs go to MKL's CBLAS when the ``mkl`` distribution is installed (``pip install
ember[mkl]``), else to NumPy's BLAS; ``EMBER_BLAS=numpy`` in the environment keeps NumPy's
(NOTE [GEMM provider] in ``ember/backends/cpu/_blas.py``). The choice is made on the first
product, or on the first call here, and holds for the process.
"""

from __future__ import annotations

__all__ = ["is_available", "version"]


def _mkl():
    from ember.backends.cpu import _blas as blas  # loads the CPU backend: only when asked

    g = blas.provider()
    return g if g is not None and g.name == "mkl" else None


def is_available() -> bool:
    """Whether ember's matrix products run on MKL (``torch.backends.mkl.is_available``).

    False without the ``mkl`` package, or with ``EMBER_BLAS=numpy``.

    Example:
        >>> import ember
        >>> isinstance(ember.backends.mkl.is_available(), bool)
        True
    """
    return _mkl() is not None


def version() -> str | None:
    """MKL's version string (``mkl_get_version_string``), or None when it is not in use.

    Example:
        >>> v = ember.backends.mkl.version()
        >>> v is None or "Math Kernel Library" in v
        True
    """
    g = _mkl()
    if g is None:
        return None
    buf = __import__("ctypes").create_string_buffer(256)
    g._lib.mkl_get_version_string(buf, 256)
    return buf.value.decode(errors="replace").strip()
